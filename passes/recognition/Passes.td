// Passes.td — recognition passes: decomposed exporter forms back into single tg ops.
#ifndef TGC_PASSES_RECOGNITION
#define TGC_PASSES_RECOGNITION

include "mlir/Pass/PassBase.td"

def FoldLinears : Pass<"tgc-fold-linears", "mlir::func::FuncOp"> {
  let summary = "Turn MatMul-by-weight (+ bias Add) into tg.linear";
  let description = [{
    The TorchScript exporter writes `nn.Linear` as MatMul(x, Wᵀ) followed by Add(b), the
    dynamo exporter often as Gemm (→ tg.linear) followed by a Reshape and then the bias Add.
    Rules: `FoldMatmulWeightToLinear` (matmul by a constant [K, N] weight → linear with the
    weight transposed at compile time), `FoldBiasIntoLinear` (add of a constant [N] bias to a
    single-use bias-free linear), `FoldBiasIntoLinearThroughReshape` (the same across a
    reshape that keeps the last dim), `LowerPatchConvToLinear` (a 2-D convolution whose kernel
    equals its strides, unpadded, undilated, one group — a ViT patch embedding — becomes
    patches (reshape, transpose, reshape) → tg.linear → reshape, transpose; not a 1x1 kernel),
    `LowerPointwiseConvToMatmul` (a convolution with a window and stride of 1, unpadded, one
    group — a 1x1 layer — becomes tg.matmul of the [M, C] weight by the [N, C, P] image, plus
    the bias as [M, 1]: channels-first in and out, no transposes).
  }];
  let constructor = "tgc::createFoldLinearsPass()";
}

def RecognizeActivations : Pass<"tgc-recognize-activations", "mlir::func::FuncOp"> {
  let summary = "Recognize GELU (erf and tanh forms) and SiLU";
  let description = [{
    Rules: `RecognizeGeluErf` (x·0.5·(1 + erf(x/√2)) in any association order, with x/√2
    written as a Div or a Mul by 1/√2) → tg.gelu; `RecognizeGeluTanh`
    (0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), cube as Pow or products) → tg.gelu
    {tanh_approx}; `RecognizeSilu` (x·sigmoid(x)) → tg.silu. Constants are compared with a
    relative tolerance of 1e-4.
  }];
  let constructor = "tgc::createRecognizeActivationsPass()";
}

def RecognizeNorms : Pass<"tgc-recognize-norms", "mlir::func::FuncOp"> {
  let summary = "Recognize RMSNorm, LayerNorm and softmax from their decomposed forms";
  let description = [{
    Rules: `RecognizeRmsNorm` (x · 1/sqrt(mean(x²) + eps) [· w], the inverse written as
    Reciprocal(Sqrt), Div(1, Sqrt), Rsqrt or Pow(-0.5)) and `RecognizeRmsNormDiv`
    (x / sqrt(mean(x²) + eps)) → tg.rms_norm; `FoldScaleIntoRmsNorm`;
    `RecognizeLayerNorm` ((x - mean) / sqrt(mean((x - mean)²) + eps)) and
    `RecognizeLayerNormMul` (the same with a multiplied inverse) → tg.layer_norm;
    `FoldScaleIntoLayerNorm`, `FoldBiasIntoLayerNorm`; `RecognizeSoftmax`
    (exp(x - max(x)) / sum(exp(x - max(x)))) → tg.softmax. Reductions must run over the
    trailing dims with keepdims, so the result is exactly the fused op.
  }];
  let constructor = "tgc::createRecognizeNormsPass()";
}

def RecognizeRotary : Pass<"tgc-recognize-rotary", "mlir::func::FuncOp"> {
  let summary = "Recognize rotary position embedding (rotate_half form) as tg.rotary";
  let description = [{
    Rule: `RecognizeRotaryEmbedding` (x·cos + concat(-x[..., H:], x[..., :H])·sin on the last
    axis → tg.rotary {interleaved = false}). Sum operands and factors may come in any order;
    the halves may be unit-step Slices that keep every other dim, or the two results of one
    even Split on the last axis; the negation may be Neg or a product with a scalar -1.
    cos and sin must broadcast to x without growing it, and the sum must have x's type.
  }];
  let constructor = "tgc::createRecognizeRotaryPass()";
}

def RecognizeSwiglu : Pass<"tgc-recognize-swiglu", "mlir::func::FuncOp"> {
  let summary = "Recognize silu(x[..., :N]) * x[..., N:] as tg.swiglu";
  let description = [{
    Rule: `RecognizeSwiglu` (silu of the lower half of x's last dim times the upper half, the
    halves written as one even two-way Split or two unit-step Slices → tg.swiglu(x)). Runs
    after `tgc-merge-parallel-linears`, which stacks LLaMA's gate and up projections into one
    linear plus a split: the swiglu then reads the GEMM result directly and the split's copy
    is gone.
  }];
  let constructor = "tgc::createRecognizeSwigluPass()";
}

#endif // TGC_PASSES_RECOGNITION
