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
    space). A convolution's result read by several elementwise ops of its shape (hardswish reads
    x twice) lets them join its kernel when all of them do; where one would not, the convolution
    is grouped again without that exception. A kernel seeded by `tg.linear` or `tg.matmul` is a "gemm" kernel: the elementwise ops
    it absorbs run as the GEMM's epilogue; one seeded by `tg.conv` is a "conv" kernel (the
    convolution's epilogue: bias, activation, residual add, which a library may apply). Splat constants are cloned into the kernel as
    literals. Every kernel has exactly one result; single-op pointwise groups and GEMMs without an
    epilogue are left as plain ops.
  }];
  let constructor = "tgc::createFormKernelsPass()";
}

def CpuWeightLayout : Pass<"tgc-cpu-weight-layout", "mlir::func::FuncOp"> {
  let summary = "CPU targets: weights stored as the CPU's kernels read them (linear W^T in 32-column strips, conv blocked by 16 output channels)";
  let description = [{
    The CPU's GEMM reads B row by row (AVX-512 tiles loading 32 consecutive columns per step of
    k; OpenBLAS without a transposed operand), so after every rule that matches tg.linear each
    f32 linear whose constant weight only linears read becomes a matmul by the [K, N] transpose
    written at compile time, plus its bias as an add (the GEMM's epilogue).
    An f32 matmul by a constant [K, N] weight of N >= 32 (only matmuls reading it) gets it
    stored in the AVX-512 tiles' 32-column strips, [ceil(N/32), K, 32] (tg.matmul's
    weight_block), so no call copies a strip out of it; not with gemm-tiles=false (a target
    without AVX-512, whose GEMMs are OpenBLAS calls, which would take one call a strip).
    An f32 1-D/2-D convolution of group 1 with at least 13 output channels (and a window the
    direct kernel unrolls) gets its constant weight blocked by 16 output channels, [ceil(M/16), C, k..., 16] (tg.conv's
    weight_block): the CPU's direct convolution loads 16 output channels of one tap per vector.
    A transpose that moves such a convolution's channels last ([0, 2, .., 1], its only reader)
    folds into it (tg.conv's channels_last): the kernel stores each position's channel vector
    as it holds it, instead of transposing it to NCHW for the transpose to undo.
  }];
  let constructor = "tgc::createCpuWeightLayoutPass()";
  let options = [
    Option<"gemmTiles", "gemm-tiles", "bool", /*default=*/"true",
           "the target has the AVX-512 GEMM tiles (x86-64-v4, or native on such a host)">
  ];
}

def CudaChannelsLast : Pass<"tgc-cuda-channels-last", "mlir::func::FuncOp"> {
  let summary = "CUDA targets: convolutional networks channels last (NHWC), as cuDNN's tensor-core convolutions read them";
  let description = [{
    Each float 1-D/2-D convolution of group 1 with a window or stride above 1 and a constant
    weight (not a ViT patch grid, which tgc-fold-linears makes one GEMM) becomes an `nhwc`
    tg.conv between a transpose into channels last and one back (its weight transposed at
    compile time). The transposes back (only the ones this pass writes, and only when every
    reader moves with them) sink below the elementwise ops that read them (their
    other operands transposed too, or constants rearranged, or broadcast scalars) and below a
    reduction over every spatial dim (global pooling); where a transpose back meets a transpose
    into channels last both go. A 1x1 convolution reading a transpose back joins the region, and
    inside it (stride 1, unpadded) it is a linear over [N, spatial..., C]. Runs before
    tgc-fold-linears, so those linears take part in horizontal fusion. Without it cuDNN converts
    every NCHW input and filter to NHWC and every result back, on each call.
  }];
  let constructor = "tgc::createCudaChannelsLastPass()";
}

#endif // TGC_PASSES_KERNELS
