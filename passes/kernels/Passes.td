// Passes.td — kernel formation: grouping ops into the kernels codegen emits.
#ifndef TGC_PASSES_KERNELS
#define TGC_PASSES_KERNELS

include "mlir/Pass/PassBase.td"

def FormKernels : Pass<"tgc-form-kernels", "mlir::func::FuncOp"> {
  let summary = "Group pointwise chains and GEMM / convolution epilogues into tg.fused kernels";
  let description = [{
    Vertical fusion. Walking the function in order, an elementwise op joins the kernel that
    produces one of its operands when that producer is the kernel's current output, has no other
    use, and has the same shape as the op's result (so the kernel still iterates over one output
    space). A kernel seeded by `tg.linear` or `tg.matmul` is a "gemm" kernel: the elementwise ops
    it absorbs run as the GEMM's epilogue; one seeded by `tg.conv` is a "conv" kernel (the
    convolution's epilogue: bias, activation, residual add, which a library may apply). Splat constants are cloned into the kernel as
    literals. Every kernel has exactly one result; single-op pointwise groups and GEMMs without an
    epilogue are left as plain ops.
  }];
  let constructor = "tgc::createFormKernelsPass()";
}

def CpuWeightLayout : Pass<"tgc-cpu-weight-layout", "mlir::func::FuncOp"> {
  let summary = "CPU targets: linear(x, W[N,K]) -> matmul(x, W^T[K,N]) with the weight transposed at compile time";
  let description = [{
    The CPU's GEMM reads B row by row (AVX-512 tiles loading 32 consecutive columns per step of
    k; OpenBLAS without a transposed operand), so after every rule that matches tg.linear each
    f32 linear whose constant weight only linears read becomes a matmul by the [K, N] transpose
    written at compile time, plus its bias as an add (the GEMM's epilogue).
  }];
  let constructor = "tgc::createCpuWeightLayoutPass()";
}

#endif // TGC_PASSES_KERNELS
