"""mlir_tblgen: runs mlir-tblgen-15 on a .td file in a genrule."""

def mlir_tblgen(name, td, out, flag, deps = []):
    native.genrule(
        name = name,
        srcs = [td, "@llvm//:mlir_td_files"] + deps,
        outs = [out],
        tools = ["@llvm//:bin/mlir-tblgen"],
        cmd = "$(location @llvm//:bin/mlir-tblgen) %s -I external/llvm/include -I . $(location %s) -o $@" % (flag, td),
    )
