# lit configuration for tgc's FileCheck tests. Run: lit tests/lit (after bazel build //tools:all).
import os
import lit.formats

config.name = "tgc"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
root = os.path.abspath(os.path.join(config.test_source_root, "..", ".."))
bin_dir = os.environ.get("TGC_BIN_DIR", os.path.join(root, "bazel-bin", "tools"))
llvm_bin = "/usr/lib/llvm-15/bin"
config.environment["PATH"] = os.pathsep.join([bin_dir, llvm_bin, config.environment.get("PATH", os.environ["PATH"])])
config.substitutions.append(("%tgc-opt", os.path.join(bin_dir, "tgc-opt")))
config.substitutions.append(("%tgc-src", root))
