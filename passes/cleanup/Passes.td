// Passes.td — cleanup passes: constant folding and friends.
#ifndef TGC_PASSES_CLEANUP
#define TGC_PASSES_CLEANUP

include "mlir/Pass/PassBase.td"

def FoldConstants : Pass<"tgc-fold-constants", "mlir::func::FuncOp"> {
  let summary = "Evaluate ops whose operands are all constants";
  let description = [{
    Runs the reference interpreter on every `tg` op whose operands are all `tg.constant` and
    replaces it by a constant. This folds exporter shape arithmetic that survived import and
    compile-time work on weights (transposes, reshapes, casts of constants). Results larger than
    `max-elements` are left alone so that a fold never inflates the package.
  }];
  let constructor = "tgc::createFoldConstantsPass()";
  let options = [
    Option<"maxElements", "max-elements", "int64_t", /*default=*/"1 << 24",
           "largest result (elements) that is folded">,
  ];
}

def EliminateIdentities : Pass<"tgc-eliminate-identities", "mlir::func::FuncOp"> {
  let summary = "Remove ops that return their input (reshape/transpose chains, x + 0, ...)";
  let description = [{
    Atomic rules: `FoldReshapeChain` (reshape(reshape(x)) -> reshape(x)), `FoldIdentityReshape`,
    `FoldTransposePair` (two transposes -> one, or none), `FoldIdentityTranspose`,
    `FoldLayoutChainToReshape` (a single-use chain of reshapes and transposes that leaves every
    element in place -> one reshape; checked exactly on an index array),
    `FoldIdentityExpand`, `FoldFullSlice`, `FoldWhereConstantCondition` (a constant all-true or
    all-false condition picks one branch), `FoldNoOpArithmetic` (x + 0, x - 0, x * 1, x / 1
    with a constant splat that does not broadcast x), `DropUnitLayerNormAffine` (a layer norm's
    constant shift of zeros, and its scale of ones where no shift stays) and
    `DropUnitRmsNormScale` (an RMS norm's constant scale of ones). Runs in the cleanup stage so later stages
    see only ops that compute something.
  }];
  let constructor = "tgc::createEliminateIdentitiesPass()";
}

def EliminateCasts : Pass<"tgc-eliminate-casts", "mlir::func::FuncOp"> {
  let summary = "Remove casts that change nothing: same type, exact round trips, duplicates";
  let description = [{
    Atomic rules: `FoldCastToSameType` (cast to the input's own type), `FoldCastRoundTrip`
    (cast(cast(x:A):B):A -> x only when A -> B is exact: f16/bf16 -> f32, i32 -> i64, ...;
    never f32 -> f16 -> f32, which rounds) and `MergeDuplicateCasts` (two casts of one value to
    one type become the first of them).
  }];
  let constructor = "tgc::createEliminateCastsPass()";
}

def SinkLayoutOps : Pass<"tgc-sink-layout-ops", "mlir::func::FuncOp"> {
  let summary = "Move reshapes/transposes below elementwise ops and layer norms";
  let description = [{
    Atomic rules: `SinkReshapeBelowUnary` (f(reshape(x)) -> reshape(f(x)) for an elementwise
    unary f), `SinkTransposeBelowUnary` (the same for a transpose) and
    `SinkTransposeBelowLayerNorm` (a transpose that keeps the normalized dims in place moves
    below a layer norm whose scale/bias span only those dims), and `FoldReshapesAroundLinear`
    (reshape(linear(reshape(x))) -> linear(x) when the reshapes only flatten and restore x's
    leading dims, as around every ONNX Gemm). The moved layout op must have no
    other user, so no op is added. Batched ops from horizontal fusion are wrapped in layout ops;
    sinking brings a "transpose back" next to the following "transpose into", and
    tgc-eliminate-identities cancels the pair.
  }];
  let constructor = "tgc::createSinkLayoutOpsPass()";
}

#endif // TGC_PASSES_CLEANUP
