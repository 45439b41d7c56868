"""Bazel rules for using tgc in a build: `tgc_package` compiles an ONNX model at build time.

    load("@tgc//tools:defs.bzl", "tgc_package")   # "//tools:defs.bzl" inside tgc itself

    tgc_package(
        name = "bert",                         # the package directory is bert.tgpkg
        model = "bert.onnx",
        target = "cpu",                        # or "cuda:sm_90"
        precision = "fp32",                    # "fp16", "bf16"
        input_shapes = {"input_ids": "1x128"}, # dims of inputs the model leaves open
    )

A range (`input_shapes = {"input_ids": "1..8x1..128"}`) makes one package serving every shape in
it (shape buckets, docs/design.md); `buckets = {"seq": "32,128"}` chooses the bucket sizes.

The target's output is the package directory (a tree artifact): put it in a test's or binary's
`data` and pass `$(rootpath :bert)` to it; the program loads it with the runtime
(`//runtime` for C++ `tgc::Session`, `//runtime:c_api` + `//runtime` for <tgc/tgc_runtime.h>).
The compile runs `tgc compile --no-cache` (hermetic: no kernel cache outside the sandbox) with
the host C++ compiler found on PATH for CPU packages. How another workspace pulls tgc in:
tools/deps.bzl (`tgc_dependencies`) and docs/embedding.md.
"""

def _tgc_package_impl(ctx):
    pkg = ctx.actions.declare_directory(ctx.label.name + ".tgpkg")
    args = ctx.actions.args()
    args.add("compile")
    args.add(ctx.file.model)
    args.add("-o", pkg.path)
    args.add("--target=" + ctx.attr.target)
    args.add("--precision=" + ctx.attr.precision)
    args.add("--no-cache")
    for name, dims in sorted(ctx.attr.input_shapes.items()):
        args.add("--input-shape=%s=%s" % (name, dims))
    for symbol, values in sorted(ctx.attr.buckets.items()):
        args.add("--buckets=%s=%s" % (symbol, values))
    bound = []
    for tensor, name in ctx.attr.bind_inputs.items():
        files = tensor.files.to_list()
        if len(files) != 1:
            fail("bind_inputs: %s must be one TensorProto file" % tensor.label)
        bound.append(files[0])
        args.add("--bind-input=%s=%s" % (name, files[0].path))
    ctx.actions.run(
        executable = ctx.executable._tgc,
        arguments = [args],
        inputs = [ctx.file.model] + ctx.files.data + bound,
        outputs = [pkg],
        mnemonic = "TgcCompile",
        progress_message = "tgc: compiling %s for %s (%s)" % (
            ctx.file.model.short_path,
            ctx.attr.target,
            ctx.attr.precision,
        ),
        use_default_shell_env = True,  # PATH: the host C++ compiler builds CPU kernels
    )
    return [DefaultInfo(files = depset([pkg]), runfiles = ctx.runfiles(files = [pkg]))]

tgc_package = rule(
    implementation = _tgc_package_impl,
    doc = "Compiles an ONNX model into a tgc package directory (<name>.tgpkg) at build time.",
    attrs = {
        "model": attr.label(
            allow_single_file = [".onnx"],
            mandatory = True,
            doc = "The ONNX model.",
        ),
        "target": attr.string(default = "cpu", doc = "cpu | cuda:sm_90 | cuda:sm_80"),
        "precision": attr.string(
            default = "fp32",
            values = ["fp32", "fp16", "bf16"],
            doc = "Arithmetic precision of the package.",
        ),
        "input_shapes": attr.string_dict(
            doc = "Dims of graph inputs the model leaves open: {\"input_ids\": \"1x128\"}, " +
                  "or ranges for a bucketed package: {\"input_ids\": \"1..8x1..128\"}.",
        ),
        "buckets": attr.string_dict(
            doc = "Bucket sizes of a varying dim (with a range in input_shapes): {\"seq\": \"32,128\"}.",
        ),
        "bind_inputs": attr.label_keyed_string_dict(
            allow_files = [".pb"],
            doc = "Graph inputs bound to a value at compile time: {\":axes.pb\": \"axes\"}.",
        ),
        "data": attr.label_list(
            allow_files = True,
            doc = "Files the model reads (external data beside the .onnx file).",
        ),
        "_tgc": attr.label(
            default = Label("//tools:tgc"),
            executable = True,
            # The tgc that `bazel build //tools:tgc` builds (no second, exec-configuration
            # build of the compiler): packages are compiled on the machine that builds.
            cfg = "target",
        ),
    },
)
