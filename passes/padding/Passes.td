// Passes.td — padding passes: what a bucketed package needs to serve runs padded to a bucket.
#ifndef TGC_PASSES_PADDING
#define TGC_PASSES_PADDING

include "mlir/Pass/PassBase.td"

def MaskPadding : Pass<"tgc-mask-padding", "mlir::func::FuncOp"> {
  let summary = "Trace padded axes to the outputs, mask padded attention keys, refuse mixing";
  let description = [{
    In a bucketed compile (docs/design.md, "Shape buckets") the arguments carry
    `tg.dim_symbols`: per axis, the varying dim ("symbol") it holds, whose positions past the
    run's length are padding (zeros from the runtime). This pass follows those axes through the
    graph as row-major factors (a reshape may merge a padded axis with others and split it
    back) and checks that no valid position ever reads a padded one: element-wise ops,
    row-wise GEMMs, norms and softmax over other axes, gathers and layout ops keep positions
    apart. Attention over padded keys is made safe by an additive mask built from the run's
    length (a new i64[1] argument with `tg.length_of`, filled by the runtime), except where a
    causal mask already hides them (causal, queries padded along the same dim, S = T). Any
    other op that would mix padded positions into valid ones (a reduction, softmax, GEMM
    contraction, concat, slice or convolution along a padded axis, a reverse cumsum) is
    refused with the op, the axis and the dim named. The results get `tg.dim_symbols` so the
    runtime can cut each output back to the run's sizes. Without `tg.dim_symbols` arguments
    the pass does nothing.
  }];
  let constructor = "tgc::createMaskPaddingPass()";
}

#endif // TGC_PASSES_PADDING
