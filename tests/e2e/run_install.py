#!/usr/bin/env python3
"""Installed tgc: `tools/install --prefix P` and what a user builds against P.

Checks the installed files, that the two shared libraries export only the C API and carry their
dependencies (no protobuf or LLVM to find at run time), that the C examples build with
pkg-config and with CMake's find_package(tgc), that they compile a bundled model and run it with
correct outputs, and that the installed `tgc` works. Needs the tools/test build (bazel build
//...). Prints PASS/FAIL per check and a last line `install: N passed, N failed`.
"""
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = os.path.join(ROOT, "tests", "data", "models")
TMP = tempfile.mkdtemp(prefix="tgc-install-")
PREFIX = os.path.join(TMP, "prefix")
results = []


def check(name, cond, detail=""):
    results.append(bool(cond))
    print(("PASS " if cond else "FAIL ") + name + ("" if cond else f": {str(detail)[-800:]}"))


def sh(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)


def exported(lib):
    """Names of the symbols `lib` defines for others: GLOBAL or WEAK, defined, in .dynsym (the
    linker keeps LOCAL entries there for TLS relocations; no one can bind to those)."""
    names = []
    for line in sh(["readelf", "--dyn-syms", "-W", lib]).stdout.splitlines():
        f = line.split()
        if len(f) >= 8 and f[4] in ("GLOBAL", "WEAK", "UNIQUE") and f[6] != "UND":
            names.append(f[7])
    return sorted(names)


r = sh([os.path.join(ROOT, "tools", "install")])
check("no --prefix: exit 2 naming it", r.returncode == 2 and "--prefix" in r.stderr, r.stderr)

r = sh([os.path.join(ROOT, "tools", "install"), "--prefix", PREFIX, "--no-build"])
check("tools/install", r.returncode == 0, r.stdout + r.stderr)
want = ["bin/tgc", "lib/libtgc.so", "lib/libtgc_compiler.so", "lib/libtgc_cutlass_sm90.so",
        "bin/libtgc_cutlass_sm90.so", "include/tgc/tgc_runtime.h", "include/tgc/tgc_compiler.h",
        "lib/pkgconfig/tgc.pc", "lib/pkgconfig/tgc-compiler.pc", "lib/cmake/tgc/tgcConfig.cmake",
        "lib/cmake/tgc/tgcConfigVersion.cmake", "share/doc/tgc/examples/c/run_package.c"]
missing = [w for w in want if not os.path.exists(os.path.join(PREFIX, w))]
check("installed files", not missing, missing)
leftovers = [f for _, _, fs in os.walk(PREFIX) for f in fs if ".tmp-" in f]
check("no temporary files left", not leftovers, leftovers)

# Only the C API leaves the libraries; nothing but the C/C++ runtime is needed to load them.
for lib, prefix in [("libtgc.so", "tgc_session_"), ("libtgc_compiler.so", "tgc_compile")]:
    path = os.path.join(PREFIX, "lib", lib)
    syms = exported(path)
    check(f"{lib} exports only tgc_*", syms and all(s.startswith("tgc_") for s in syms) and
          any(s.startswith(prefix) for s in syms), syms[:20])
    deps = sh(["ldd", path]).stdout
    check(f"{lib} needs no protobuf, LLVM or MLIR library",
          "not found" not in deps and not any(k in deps for k in ("protobuf", "LLVM", "MLIR")), deps)

env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(PREFIX, "lib", "pkgconfig"))
examples = os.path.join(PREFIX, "share", "doc", "tgc", "examples")
bins = os.path.join(TMP, "bin")
os.makedirs(bins)


def pkg_flags(name):
    r = sh(["pkg-config", "--cflags", "--libs", name], env=env)
    return r.returncode, r.stdout.split()


for name, src, extra in [("tgc", "run_package.c", ["-lm"]), ("tgc-compiler", "compile_model.c", [])]:
    rc, flags = pkg_flags(name)
    check(f"pkg-config {name}", rc == 0 and f"-I{PREFIX}/include" in flags, flags)
    r = sh(["cc", "-std=c99", "-Wall", "-Werror", os.path.join(examples, "c", src), *flags, *extra,
            "-o", os.path.join(bins, src[:-2])])
    check(f"cc {src} $(pkg-config --cflags --libs {name})", r.returncode == 0, r.stderr)


def compile_and_run(compile_model, run_package, model, label):
    pkg = os.path.join(TMP, f"{label}-{model}.tgpkg")
    r = sh([compile_model, os.path.join(MODELS, model, "model.onnx"), pkg])
    check(f"{label}: compile_model {model}", r.returncode == 0, r.stderr)
    for k in (0, 1):
        r = sh([run_package, pkg, os.path.join(MODELS, model, f"test_data_set_{k}")])
        check(f"{label}: run_package {model} test_data_set_{k}", r.returncode == 0 and " ok" in r.stdout,
              r.stdout + r.stderr)
    return pkg


compile_and_run(os.path.join(bins, "compile_model"), os.path.join(bins, "run_package"),
                "gpt2_tiny", "pkg-config")
r = sh([os.path.join(bins, "compile_model"), os.path.join(TMP, "absent.onnx"), os.path.join(TMP, "x")])
check("compile_model: a missing model is exit 1 naming it",
      r.returncode == 1 and "absent.onnx" in r.stderr and not os.path.exists(os.path.join(TMP, "x")),
      r.stderr)

# CMake: find_package(tgc 0.1) and the imported targets.
build = os.path.join(TMP, "cmake-build")
r = sh(["cmake", "-S", os.path.join(examples, "cmake"), "-B", build, f"-DCMAKE_PREFIX_PATH={PREFIX}"])
check("cmake configure with find_package(tgc)", r.returncode == 0, r.stdout + r.stderr)
r = sh(["cmake", "--build", build])
check("cmake build", r.returncode == 0, r.stdout + r.stderr)
compile_and_run(os.path.join(build, "compile_model"), os.path.join(build, "run_package"),
                "bert_tiny", "cmake")
probe = os.path.join(TMP, "probe")
os.makedirs(probe)
with open(os.path.join(probe, "CMakeLists.txt"), "w") as f:
    f.write("cmake_minimum_required(VERSION 3.16)\nproject(p NONE)\nfind_package(tgc 99 REQUIRED)\n")
r = sh(["cmake", "-S", probe, "-B", os.path.join(probe, "b"), f"-DCMAKE_PREFIX_PATH={PREFIX}"])
check("find_package(tgc 99) refuses version 0.x", r.returncode != 0 and "tgc" in r.stderr, r.stderr)

# The installed command-line tool.
tgc = os.path.join(PREFIX, "bin", "tgc")
r = sh([tgc, "--version"])
check("installed tgc --version", r.returncode == 0 and r.stdout.startswith("tgc "), r.stdout + r.stderr)
pkg = os.path.join(TMP, "cli.tgpkg")
r = sh([tgc, "compile", os.path.join(MODELS, "llama_tiny", "model.onnx"), "-o", pkg, "--no-cache"])
r2 = sh([tgc, "run", pkg, "--test-data", os.path.join(MODELS, "llama_tiny", "test_data_set_0")])
check("installed tgc compiles and runs llama_tiny", r.returncode == 0 and r2.returncode == 0,
      r.stderr + r2.stdout + r2.stderr)

shutil.rmtree(TMP, ignore_errors=True)
print(f"install: {sum(results)} passed, {len(results) - sum(results)} failed")
sys.exit(0 if all(results) else 1)
