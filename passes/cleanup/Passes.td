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

#endif // TGC_PASSES_CLEANUP
