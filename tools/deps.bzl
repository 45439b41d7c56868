"""tgc_dependencies(): the external repositories tgc's BUILD files name, for a WORKSPACE.

tgc's own WORKSPACE calls it, and so does a workspace that uses tgc (docs/embedding.md):

    local_repository(name = "tgc", path = "/src/tgc")   # or http_archive(name = "tgc", ...)
    load("@tgc//tools:deps.bzl", "tgc_dependencies")
    tgc_dependencies(path = "/src/tgc")                 # where tgc's tree is (absolute, or
                                                        # relative to the calling workspace)

Every repository is local: the Debian packages that tgc's tools/setup installs (LLVM/MLIR 15, the
CUDA toolkit, onnx.proto) and, inside tgc's tree, the CUTLASS headers and the small rule
repositories Bazel 4 needs. Run tgc's tools/setup once before the first build (it unpacks
CUTLASS and builds the position-independent protobuf archive into that tree). A repository the
calling WORKSPACE already declared (same name) is left as it is.
"""

def _maybe(rule, name, **kwargs):
    if not native.existing_rule(name):
        rule(name = name, **kwargs)

def tgc_dependencies(path = "."):
    """Declares tgc's external repositories; `path` is tgc's tree ("." inside tgc itself)."""
    root = "" if path in ("", ".") else path.rstrip("/") + "/"
    _maybe(native.local_repository, "rules_java", path = "/usr/share/bazel/rules/java")
    _maybe(native.local_repository, "rules_cc", path = root + "third_party/rules_cc")
    _maybe(
        native.local_repository,
        "remote_coverage_tools",
        path = root + "third_party/remote_coverage_tools",
    )
    _maybe(
        native.new_local_repository,
        "llvm",
        path = "/usr/lib/llvm-15",
        build_file = str(Label("//third_party:llvm.BUILD")),
    )
    _maybe(
        native.new_local_repository,
        "onnx_proto_src",
        path = "/usr/include/onnx",
        build_file = str(Label("//third_party:onnx_proto_src.BUILD")),
    )
    _maybe(
        native.new_local_repository,
        "cuda",
        path = "/usr/local/cuda",
        build_file = str(Label("//third_party:cuda.BUILD")),
    )

    # CUTLASS headers (PyPI nvidia-cutlass, pinned; unpacked by tools/setup) for the sm_90 GEMM
    # plug-in.
    _maybe(
        native.new_local_repository,
        "cutlass",
        path = root + "third_party/cutlass/dist",
        build_file = str(Label("//third_party:cutlass.BUILD")),
    )

    # cuDNN frontend headers (PyPI nvidia-cudnn-frontend, pinned; unpacked by tools/setup) for
    # the CUDA runtime's fused attention through cuDNN.
    _maybe(
        native.new_local_repository,
        "cudnn_frontend",
        path = root + "third_party/cudnn_frontend/dist",
        build_file = str(Label("//third_party:cudnn_frontend.BUILD")),
    )
