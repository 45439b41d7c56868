// TgOps.td — the `tg` dialect: tensor ops at the level tgc's graph rewrites work on.
//
// Every value is a statically shaped ranked tensor (symbolic dims are bound before import), so each
// op's verifier can check shapes exactly and later stages (kernel formation, buffer planning,
// codegen) never meet a dynamic dim. Elementwise ops broadcast numpy-style. Weights are
// `tg.constant` ops; the printer elides large ones (see compiler/Dump.h), so dumps stay readable.
#ifndef TG_OPS
#define TG_OPS

include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def TG_Dialect : Dialect {
  let name = "tg";
  let summary = "tensor graph dialect of tgc";
  let cppNamespace = "::tgc::tg";
  let emitAccessorPrefix = kEmitAccessorPrefix_Prefixed;
  let hasConstantMaterializer = 1;
  // Parses the float8 element types `!tg.f8e4m3fn` ... (opaque types: Float8Types.h).
  let extraClassDeclaration = [{
    ::mlir::Type parseType(::mlir::DialectAsmParser &parser) const override;
    void printType(::mlir::Type type, ::mlir::DialectAsmPrinter &printer) const override;
  }];
}

class TG_Op<string mnemonic, list<Trait> traits = []> :
    Op<TG_Dialect, mnemonic, !listconcat(traits, [NoSideEffect])>;

// Every tg value is a statically shaped tensor: symbolic dims are bound before import.
def TG_Tensor : StaticShapeTensorOf<[AnyType]>;

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

def TG_ConstantOp : TG_Op<"constant", [ConstantLike]> {
  let summary = "a constant tensor (weights, folded shapes, scalars)";
  let arguments = (ins ElementsAttr:$value);
  let results = (outs TG_Tensor:$result);
  let hasCustomAssemblyFormat = 1;
  let hasFolder = 1;
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class TG_UnaryOp<string mnemonic, string doc> :
    TG_Op<mnemonic, [SameOperandsAndResultType]> {
  let summary = doc;
  let arguments = (ins TG_Tensor:$input);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def TG_NegOp : TG_UnaryOp<"neg", "-x">;
def TG_AbsOp : TG_UnaryOp<"abs", "|x|">;
def TG_SignOp : TG_UnaryOp<"sign", "sign(x)">;
def TG_ExpOp : TG_UnaryOp<"exp", "e^x">;
def TG_LogOp : TG_UnaryOp<"log", "ln x">;
def TG_SqrtOp : TG_UnaryOp<"sqrt", "sqrt x">;
def TG_RsqrtOp : TG_UnaryOp<"rsqrt", "1 / sqrt x">;
def TG_ReciprocalOp : TG_UnaryOp<"reciprocal", "1 / x">;
def TG_TanhOp : TG_UnaryOp<"tanh", "tanh x">;
def TG_SigmoidOp : TG_UnaryOp<"sigmoid", "1 / (1 + e^-x)">;
def TG_ErfOp : TG_UnaryOp<"erf", "erf x">;
def TG_ReluOp : TG_UnaryOp<"relu", "max(x, 0)">;
def TG_SiluOp : TG_UnaryOp<"silu", "x * sigmoid(x)">;
def TG_SinOp : TG_UnaryOp<"sin", "sin x">;
def TG_CosOp : TG_UnaryOp<"cos", "cos x">;
def TG_FloorOp : TG_UnaryOp<"floor", "floor x">;
def TG_CeilOp : TG_UnaryOp<"ceil", "ceil x">;
def TG_RoundOp : TG_UnaryOp<"round", "round half to even">;
def TG_NotOp : TG_UnaryOp<"not", "logical not (i1)">;

def TG_MathOp : TG_Op<"math", [SameOperandsAndResultType]> {
  let summary = "a float math function no rewrite rule looks at, named by `fn`";
  let description = [{
    Inverse trigonometric and hyperbolic functions (acos, asin, atan, sinh, cosh, asinh, acosh,
    atanh): one op with the function as an attribute rather than an op each, since no rule
    matches them; every backend maps the name to its math library (tg_<fn> in the preludes).
  }];
  let arguments = (ins TG_Tensor:$input, StrAttr:$fn);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$fn $input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def TG_GeluOp : TG_Op<"gelu", [SameOperandsAndResultType]> {
  let summary = "GELU: x * Phi(x), exact (erf) or tanh approximation";
  let arguments = (ins TG_Tensor:$input, DefaultValuedAttr<BoolAttr, "false">:$tanh_approx);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def TG_IsNanOp : TG_Op<"isnan"> {
  let summary = "x != x, as i1";
  let arguments = (ins TG_Tensor:$input);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def TG_CastOp : TG_Op<"cast"> {
  let summary = "element type conversion (same shape)";
  // `saturate` (float8 results only; absent means true): values beyond the format's largest
  // finite one, infinities included, become it; false: inf or NaN as the format allows (ONNX
  // Cast-19). Float8 conversions go through f32 (compiler/dialect/Float8Types.h).
  let arguments = (ins TG_Tensor:$input, OptionalAttr<BoolAttr>:$saturate);
  let results = (outs TG_Tensor:$result);
  let builders = [OpBuilder<(ins "::mlir::Type":$result, "::mlir::Value":$input), [{
    build($_builder, $_state, result, input, ::mlir::BoolAttr());
  }]>];
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

// Binary ops broadcast numpy-style; operands share one element type.
class TG_BinaryOp<string mnemonic, string doc> : TG_Op<mnemonic> {
  let summary = doc;
  let arguments = (ins TG_Tensor:$lhs, TG_Tensor:$rhs);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)";
  let hasVerifier = 1;
}

def TG_AddOp : TG_BinaryOp<"add", "a + b">;
def TG_SubOp : TG_BinaryOp<"sub", "a - b">;
def TG_MulOp : TG_BinaryOp<"mul", "a * b">;
def TG_DivOp : TG_BinaryOp<"div", "a / b (integer: truncating)">;
def TG_PowOp : TG_BinaryOp<"pow", "a ^ b">;
def TG_MaxOp : TG_BinaryOp<"max", "max(a, b)">;
def TG_MinOp : TG_BinaryOp<"min", "min(a, b)">;
def TG_ModOp : TG_BinaryOp<"mod", "a mod b (sign of b for integers, fmod for floats)">;
def TG_EqualOp : TG_BinaryOp<"equal", "a == b (i1)">;
def TG_LessOp : TG_BinaryOp<"less", "a < b (i1)">;
def TG_LessEqualOp : TG_BinaryOp<"less_equal", "a <= b (i1)">;
def TG_GreaterOp : TG_BinaryOp<"greater", "a > b (i1)">;
def TG_GreaterEqualOp : TG_BinaryOp<"greater_equal", "a >= b (i1)">;
def TG_AndOp : TG_BinaryOp<"and", "a && b (i1)">;
def TG_OrOp : TG_BinaryOp<"or", "a || b (i1)">;
def TG_XorOp : TG_BinaryOp<"xor", "a != b (i1)">;

def TG_BitwiseOp : TG_Op<"bitwise"> {
  let summary = "bitwise and, or, xor, shift_left or shift_right of integers, named by `fn`";
  let description = [{
    One op for the five bitwise functions (as tg.math: no rewrite rule looks at them). Operands
    broadcast numpy-style and share one integer element type (not i1); the shifts need an
    unsigned one (ONNX BitShift's domain) and shift by the rhs element: a shift by the bit width
    or more gives 0 (both directions), in the interpreter and both preludes alike.
  }];
  let arguments = (ins TG_Tensor:$lhs, TG_Tensor:$rhs, StrAttr:$fn);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat =
      "$fn $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)";
  let hasVerifier = 1;
}

def TG_BitwiseNotOp : TG_Op<"bitwise_not", [SameOperandsAndResultType]> {
  let summary = "~x of an integer tensor (not i1)";
  let arguments = (ins TG_Tensor:$input);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def TG_WhereOp : TG_Op<"where"> {
  let summary = "cond ? a : b, broadcasting all three";
  let arguments = (ins TG_Tensor:$cond, TG_Tensor:$lhs, TG_Tensor:$rhs);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$cond `,` $lhs `,` $rhs attr-dict `:` type($cond) `,` type($lhs) `,` type($rhs) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

def TG_MatmulOp : TG_Op<"matmul"> {
  let summary = "numpy matmul: batched, broadcasting batch dims; rank-1 operands promoted";
  let description = [{
    With `weight_block` = b the rhs is a [K, N] matrix stored in strips of b columns:
    [ceil(N/b), K, b], element [n / b, k, n % b] holding rhs[k, n] and zeros past N (N is the
    result's last dim; the lhs has rank >= 2). tgc-cpu-weight-layout writes constant weights so
    for the CPU's GEMM tiles, which read one strip a tile; other targets refuse it.
  }];
  let arguments = (ins TG_Tensor:$lhs, TG_Tensor:$rhs, OptionalAttr<I64Attr>:$weight_block);
  let results = (outs TG_Tensor:$result);
  let builders = [OpBuilder<(ins "mlir::Type":$result, "mlir::Value":$lhs, "mlir::Value":$rhs), [{
    build($_builder, $_state, result, lhs, rhs, mlir::IntegerAttr());
  }]>];
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)";
  let hasVerifier = 1;
}

def TG_LinearOp : TG_Op<"linear"> {
  let summary = "y = x · wᵀ + bias, with w [N, K] and x [..., K]";
  let arguments = (ins TG_Tensor:$input, TG_Tensor:$weight, Optional<TG_Tensor>:$bias);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input `,` $weight (`,` $bias^)? attr-dict `:` type(operands) `->` type($result)";
  let hasVerifier = 1;
}

def TG_ConvOp : TG_Op<"conv"> {
  let summary = "N-d convolution, NC[D]HW layout, weight [M, C/group, k...]";
  let description = [{
    With `weight_block` = b the weight is stored blocked by output channels: [ceil(M/b), C/group,
    k..., b], element [m / b, c, k..., m % b] holding w[m, c, k...] and zeros past M (M is the
    result's channel dim). tgc-cpu-weight-layout writes it so for the CPU's direct convolution,
    which loads b output channels per vector; other targets refuse it.
    With `channels_last` the result is stored [N, spatial..., M]: the NC[D]HW result transposed
    to channels last (tgc-cpu-weight-layout folds such a transpose into a blocked convolution,
    whose kernel then stores its channel vectors as they are); other targets refuse it.
    With `nhwc` every operand is channels last: input [N, spatial..., C], weight
    [M, k..., C/group], result [N, spatial..., M] (tgc-cuda-channels-last writes it so for cuDNN's
    and the tensor cores' native layout; the CPU refuses it). It excludes `weight_block` and
    `channels_last`.
  }];
  let arguments = (ins TG_Tensor:$input, TG_Tensor:$weight, Optional<TG_Tensor>:$bias,
                       I64ArrayAttr:$strides, I64ArrayAttr:$pads, I64ArrayAttr:$dilations,
                       I64Attr:$group, OptionalAttr<I64Attr>:$weight_block,
                       UnitAttr:$channels_last, UnitAttr:$nhwc);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input `,` $weight (`,` $bias^)? attr-dict `:` type(operands) `->` type($result)";
  let hasVerifier = 1;
}

def TG_PoolOp : TG_Op<"pool"> {
  let summary = "N-d max or average pooling, NC[D]HW layout";
  let description = [{
    Each output element y[n, c, o...] reduces the taps x[n, c, o·stride - pad_begin + k·dilation]
    (k over `kernel`) that lie inside the input: "max" takes their maximum (NaN propagates),
    "avg" their sum divided by their count, or by the kernel's whole size with
    `count_include_pad` (padded taps count as zeros). `pads` is [begins..., ends...]; the result
    shape (floor or ceil mode) is the importer's to choose, so a window may overhang the end pad.
    With `nhwc` the input and result are channels last, [N, spatial..., C]
    (tgc-cuda-channels-last).
  }];
  let arguments = (ins TG_Tensor:$input, StrAttr:$kind, I64ArrayAttr:$kernel,
                       I64ArrayAttr:$strides, I64ArrayAttr:$pads, I64ArrayAttr:$dilations,
                       DefaultValuedAttr<BoolAttr, "false">:$count_include_pad, UnitAttr:$nhwc);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

def TG_AttentionOp : TG_Op<"attention"> {
  let summary = "scaled dot-product attention (optional additive mask, causal, GQA/MQA)";
  let description = [{
    q [B, Hq, S, D], k [B, Hkv, T, D], v [B, Hkv, T, Dv] with Hq % Hkv == 0; the optional
    float `mask` broadcasts to [B, Hq, S, T]. With g = Hq / Hkv:
      scores[b,h,s,t] = scale * Σ_d q[b,h,s,d] k[b,h/g,t,d] + mask[b,h,s,t]
                        (+ -inf where causal and t > s + T - S: bottom-right aligned)
      out[b,h,s,:] = Σ_t softmax_t(scores[b,h,s,:]) v[b,h/g,t,:]
    A row whose softmax is undefined (every score -inf, or any score NaN or +inf) gives 0,
    matching the IsNaN → Where(0) guard PyTorch exports after the softmax.
    `layout` names the dim order of q, k, v and the result: "bhsd" (the default, above) or
    "bshd", where q is [B, S, Hq, D], k [B, T, Hkv, D], v [B, T, Hkv, Dv] and the result
    [B, S, Hq, Dv] (the projections' own layout, so no transposes around the op); the mask
    still broadcasts to [B, Hq, S, T] either way.
  }];
  let arguments = (ins TG_Tensor:$q, TG_Tensor:$k, TG_Tensor:$v, Optional<TG_Tensor>:$mask,
                       F32Attr:$scale, DefaultValuedAttr<BoolAttr, "false">:$causal,
                       DefaultValuedAttr<StrAttr, "\"bhsd\"">:$layout);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$q `,` $k `,` $v (`,` $mask^)? attr-dict `:` type(operands) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Rotary position embedding and gated activations
//===----------------------------------------------------------------------===//

def TG_RotaryOp : TG_Op<"rotary"> {
  let summary = "rotary position embedding: x * cos + rotate(x) * sin over the last dim";
  let description = [{
    x [..., D] with D even; `cos` and `sin` broadcast to x's shape (numpy rules, without
    growing it). With h = D / 2:
      interleaved = false (rotate_half, GPT-NeoX / LLaMA in HF):
        rotate(x)[..., d] = -x[..., d + h]  for d < h,   x[..., d - h]  for d >= h
      interleaved = true (GPT-J, the original RoFormer):
        rotate(x)[..., 2i] = -x[..., 2i + 1],            rotate(x)[..., 2i + 1] = x[..., 2i]
      y = x * cos + rotate(x) * sin
    Formed by `tgc-recognize-rotary` from the Slice/Neg/Concat/Mul/Add chain exporters emit.
  }];
  let arguments = (ins TG_Tensor:$input, TG_Tensor:$cos, TG_Tensor:$sin,
                       DefaultValuedAttr<BoolAttr, "false">:$interleaved);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input `,` $cos `,` $sin attr-dict `:` type(operands) `->` type($result)";
  let hasVerifier = 1;
}

def TG_SwigluOp : TG_Op<"swiglu"> {
  let summary = "SwiGLU: silu(first half) * second half of the last dim, [..., 2N] -> [..., N]";
  let description = [{
    y[..., n] = silu(x[..., n]) * x[..., N + n]. Formed by `tgc-recognize-swiglu` from
    silu(a) * b where a and b are the two halves of one split (the gate/up projections that
    `tgc-merge-parallel-linears` stacked into one linear), so the split's copy disappears.
  }];
  let arguments = (ins TG_Tensor:$input);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Normalizations and reductions
//===----------------------------------------------------------------------===//

def TG_LayerNormOp : TG_Op<"layer_norm", [AttrSizedOperandSegments]> {
  let summary = "(x - mean) / sqrt(var + eps) * scale + bias over dims [axis, rank)";
  let description = [{
    Printed `tg.layer_norm %x`, `%x, %scale`, `%x, %scale, %bias` or `%x, bias %bias`: a bias
    without a scale is named, so it does not read back as a scale.
  }];
  let arguments = (ins TG_Tensor:$input, Optional<TG_Tensor>:$scale, Optional<TG_Tensor>:$bias,
                       I64Attr:$axis, F32Attr:$epsilon);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input `` custom<NormParams>($scale, $bias) attr-dict `:` type(operands) `->` type($result)";
  let hasVerifier = 1;
}

def TG_RmsNormOp : TG_Op<"rms_norm"> {
  let summary = "x / sqrt(mean(x²) + eps) * scale over dims [axis, rank)";
  let description = [{
    Root-mean-square normalization (LLaMA, T5). The mean of squares runs over the trailing dims
    [axis, rank); the optional `scale` broadcasts to those dims. Formed by
    `tgc-recognize-norms` from the Pow/ReduceMean/Add/Sqrt/Reciprocal chain exporters emit.
  }];
  let arguments = (ins TG_Tensor:$input, Optional<TG_Tensor>:$scale, I64Attr:$axis,
                       F32Attr:$epsilon);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input (`,` $scale^)? attr-dict `:` type(operands) `->` type($result)";
  let hasVerifier = 1;
}

def TG_SoftmaxOp : TG_Op<"softmax", [SameOperandsAndResultType]> {
  let summary = "softmax along one axis";
  let arguments = (ins TG_Tensor:$input, I64Attr:$axis, DefaultValuedAttr<BoolAttr, "false">:$log);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

class TG_ReduceOp<string mnemonic, string doc> : TG_Op<mnemonic> {
  let summary = doc;
  let arguments = (ins TG_Tensor:$input, I64ArrayAttr:$axes, BoolAttr:$keepdims);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def TG_ReduceSumOp : TG_ReduceOp<"reduce_sum", "sum over axes">;
def TG_ReduceMeanOp : TG_ReduceOp<"reduce_mean", "mean over axes">;
def TG_ReduceMaxOp : TG_ReduceOp<"reduce_max", "max over axes">;
def TG_ReduceMinOp : TG_ReduceOp<"reduce_min", "min over axes">;
def TG_ReduceProdOp : TG_ReduceOp<"reduce_prod", "product over axes">;

def TG_ArgMaxOp : TG_Op<"argmax"> {
  let summary = "index of the first (or last) maximum along axis, as i64";
  let arguments = (ins TG_Tensor:$input, I64Attr:$axis, BoolAttr:$keepdims,
                       DefaultValuedAttr<BoolAttr, "false">:$select_last);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def TG_ReshapeOp : TG_Op<"reshape"> {
  let summary = "same elements, new static shape (a view: no data moves)";
  let arguments = (ins TG_Tensor:$input);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def TG_TransposeOp : TG_Op<"transpose"> {
  let summary = "permute dims: result dim i is input dim perm[i]";
  let arguments = (ins TG_Tensor:$input, I64ArrayAttr:$perm);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def TG_SliceOp : TG_Op<"slice"> {
  let summary = "strided slice: result[i...] = input[starts + i * steps], one start/step per dim";
  let arguments = (ins TG_Tensor:$input, I64ArrayAttr:$starts, I64ArrayAttr:$steps);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def TG_ConcatOp : TG_Op<"concat"> {
  let summary = "concatenate along axis";
  let arguments = (ins Variadic<TG_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs) `->` type($result)";
  let hasVerifier = 1;
}

def TG_SplitOp : TG_Op<"split"> {
  let summary = "split along axis into the results' sizes";
  let arguments = (ins TG_Tensor:$input, I64Attr:$axis);
  let results = (outs Variadic<TG_Tensor>:$results);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($results)";
  let hasVerifier = 1;
}

def TG_GatherOp : TG_Op<"gather"> {
  let summary = "ONNX Gather: take slices of data along axis at integer indices (negative wrap)";
  let arguments = (ins TG_Tensor:$data, TG_Tensor:$indices, I64Attr:$axis);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$data `,` $indices attr-dict `:` type($data) `,` type($indices) `->` type($result)";
  let hasVerifier = 1;
}

def TG_GatherElementsOp : TG_Op<"gather_elements"> {
  let summary = "ONNX GatherElements: result[i] = data[i with axis replaced by indices[i]]";
  let arguments = (ins TG_Tensor:$data, TG_Tensor:$indices, I64Attr:$axis);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$data `,` $indices attr-dict `:` type($data) `,` type($indices) `->` type($result)";
  let hasVerifier = 1;
}

// Indexing ops (codegen/common/IndexEmit writes each once for both backends).
def TG_CumsumOp : TG_Op<"cumsum", [SameOperandsAndResultType]> {
  let summary = "ONNX CumSum: running sum along axis (exclusive: before the element; reverse: from the end)";
  let description = [{
    result[..., j, ...] = sum of input[..., i, ...] over i <= j (i < j with `exclusive`; i >= j,
    or i > j, with `reverse`). Floats accumulate in double, integers in int64 (stored wrapped).
  }];
  let arguments = (ins TG_Tensor:$input, I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$exclusive,
                       DefaultValuedAttr<BoolAttr, "false">:$reverse);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def TG_ScatterElementsOp : TG_Op<"scatter_elements"> {
  let summary = "ONNX ScatterElements: data with updates[i] combined into the element at i with axis replaced by indices[i]";
  let description = [{
    result = data, then for each element i of `indices` in row-major order the element at i's
    coordinates with the `axis` coordinate replaced by indices[i] (negative: + dim) becomes
    updates[i] ("none"), or that element combined with updates[i] ("add", "mul", "max", "min").
    An index outside [-dim, dim) writes nothing. With "none" and duplicate indices the last
    update wins. `indices` and `updates` have one shape, of the data's rank, no larger than the
    data off the axis. ScatterND is imported as this op on the data seen as [rows, slice].
  }];
  let arguments = (ins TG_Tensor:$data, TG_Tensor:$indices, TG_Tensor:$updates, I64Attr:$axis,
                       DefaultValuedAttr<StrAttr, "\"none\"">:$reduction);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$data `,` $indices `,` $updates attr-dict `:` type($data) `,` type($indices) `,` type($updates) `->` type($result)";
  let hasVerifier = 1;
}

def TG_TopkOp : TG_Op<"topk"> {
  let summary = "ONNX TopK: the k largest (or smallest) elements along axis and their i64 indices";
  let description = [{
    k is the results' size along `axis`. Values come in order (largest first, or smallest first
    without `largest`); equal values by lower index first; NaN counts as larger than every
    number. `sorted` = false allows any order (the kernels sort anyway).
  }];
  let arguments = (ins TG_Tensor:$input, I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "true">:$largest,
                       DefaultValuedAttr<BoolAttr, "true">:$sorted);
  let results = (outs TG_Tensor:$values, TG_Tensor:$indices);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($values) `,` type($indices)";
  let hasVerifier = 1;
}

// Data-dependent results (docs/design.md "Data-dependent shapes"): each op writes results of an
// upper-bound shape, padded with zeros, and a last i64 scalar result `count`: how many entries
// along the result's data-dependent axis are valid (the rest are padding).
def TG_NonzeroOp : TG_Op<"nonzero"> {
  let summary = "ONNX NonZero: the [rank, numel] coordinates of the nonzero elements, padded";
  let description = [{
    Column j < count holds the coordinates of the j-th nonzero element in row-major order;
    columns from count on are 0. The input has rank >= 1.
  }];
  let arguments = (ins TG_Tensor:$input);
  let results = (outs TG_Tensor:$indices, TG_Tensor:$count);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($indices) `,` type($count)";
  let hasVerifier = 1;
}

def TG_UniqueOp : TG_Op<"unique"> {
  let summary = "ONNX Unique along `axis` (a rank-1 input: its elements), padded to the input's size";
  let description = [{
    The input's slices along `axis` (elements when it is 1-D), deduplicated: y holds the count
    distinct slices (sorted ascending, lexicographically, with `sorted`; else in order of first
    occurrence) then zeros; indices the first occurrence of each, inverse (static: one per input
    slice) the unique slice each equals, counts how often each occurs (indices and counts 0
    past count). Equal means == element by element (so a NaN is unique).
  }];
  let arguments = (ins TG_Tensor:$input, I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "true">:$sorted);
  let results = (outs TG_Tensor:$y, TG_Tensor:$indices, TG_Tensor:$inverse, TG_Tensor:$counts,
                      TG_Tensor:$count);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($y) `,` type($indices) `,` "
                       "type($inverse) `,` type($counts) `,` type($count)";
  let hasVerifier = 1;
}

def TG_NmsOp : TG_Op<"nms"> {
  let summary = "ONNX NonMaxSuppression: selected [batch, class, box] triples, padded";
  let description = [{
    boxes [B, N, 4], scores [B, C, N]. Per batch and class, the boxes whose score exceeds
    `score_threshold` (all with `has_score_threshold` false) in decreasing score (lower index
    first among equals) are taken greedily, each unless its IoU with one taken before exceeds
    `iou_threshold`, at most `max_per_class` of them. Rows in (batch, class, order) hold the
    triples; rows from count on are 0. The result has B·C·min(max_per_class, N) rows.
  }];
  let arguments = (ins TG_Tensor:$boxes, TG_Tensor:$scores, I64Attr:$max_per_class,
                       F64Attr:$iou_threshold, F64Attr:$score_threshold,
                       BoolAttr:$has_score_threshold, BoolAttr:$center_point_box);
  let results = (outs TG_Tensor:$selected, TG_Tensor:$count);
  let assemblyFormat = "$boxes `,` $scores attr-dict `:` type($boxes) `,` type($scores) `->` "
                       "type($selected) `,` type($count)";
  let hasVerifier = 1;
}

def TG_ExpandOp : TG_Op<"expand"> {
  let summary = "broadcast to the result shape";
  let arguments = (ins TG_Tensor:$input);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def TG_PadOp : TG_Op<"pad"> {
  let summary = "constant padding: pads = [begin_0.., end_0..] (may be negative)";
  let arguments = (ins TG_Tensor:$input, I64ArrayAttr:$pads, F64Attr:$value);
  let results = (outs TG_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Control flow
//===----------------------------------------------------------------------===//

def TG_LoopOp : TG_Op<"loop"> {
  let summary = "ONNX Loop run on the device: the body function repeated while i < M and cond";
  let description = [{
    Operands: the trip count M (i64, one element) when `has_trip_count`, the initial
    condition (i1, one element) when `has_cond`, then `num_carried` loop-carried initial values,
    then the values the body reads from outside (captures). The private function `body` takes
    (iteration number i64 [], condition i1 [], carried..., captures...) and returns (condition
    i1 [], carried...). Iteration i = 0, 1, ... runs while (no M or i < M) and (no cond or the
    condition so far); the results are the carried values after the last iteration (the
    initial values when none runs). Built by the ONNX importer for a Loop whose trip count is
    known only at run time (docs/decisions.md); the backends emit a LOOP step that runs the
    body's own package (on CUDA: a conditional WHILE node in the graph).
  }];
  let arguments = (ins Variadic<TG_Tensor>:$operands, FlatSymbolRefAttr:$body,
                       BoolAttr:$has_trip_count, BoolAttr:$has_cond, I64Attr:$num_carried);
  let results = (outs Variadic<TG_Tensor>:$results);
  let assemblyFormat = "$body `(` $operands `)` attr-dict `:` functional-type($operands, $results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Kernel formation
//===----------------------------------------------------------------------===//

def TG_FusedOp : TG_Op<"fused", [IsolatedFromAbove, SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "one kernel: the ops in its region run as one fused loop nest";
  let description = [{
    Formed by `tgc-form-kernels`. The region's block arguments are the operands; `tg.yield`
    returns the single result. `kind` is "pointwise" (a chain of elementwise ops), "gemm"
    (a tg.linear / tg.matmul whose result feeds an elementwise epilogue) or "conv" (a tg.conv
    whose result feeds an elementwise epilogue).
  }];
  let arguments = (ins Variadic<TG_Tensor>:$inputs, StrAttr:$kind);
  let results = (outs TG_Tensor:$result);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$kind `(` $inputs `)` attr-dict `:` functional-type($inputs, $result) $body";
  let hasVerifier = 1;
}

def TG_YieldOp : TG_Op<"yield", [Terminator, HasParent<"FusedOp">]> {
  let summary = "the result of a tg.fused region";
  let arguments = (ins Variadic<TG_Tensor>:$values);
  let assemblyFormat = "$values attr-dict `:` type($values)";
  let builders = [OpBuilder<(ins), [{ /* empty yield for the implicit terminator */ }]>];
}

#endif // TG_OPS
