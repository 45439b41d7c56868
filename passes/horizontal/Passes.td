// Passes.td — horizontal fusion: parallel or independent ops of one kind become one batched op.
#ifndef TGC_PASSES_HORIZONTAL
#define TGC_PASSES_HORIZONTAL

include "mlir/Pass/PassBase.td"

def MergeParallelLinears : Pass<"tgc-merge-parallel-linears", "mlir::func::FuncOp"> {
  let summary = "Merge linears that read one input into one linear followed by a split";
  let description = [{
    Rule `MergeParallelLinears`: two or more `tg.linear` ops on the same input with constant
    weights (and constant or absent biases; an absent one contributes zeros) become one linear
    with the weights concatenated to [ΣN, K], followed by `tg.split` on the last axis. This is
    the QKV merge of attention (and the gate/up merge of a SwiGLU MLP): one GEMM reads the
    activation once instead of three times.
  }];
  let constructor = "tgc::createMergeParallelLinearsPass()";
}

def BatchSplitBranches : Pass<"tgc-batch-split-branches", "mlir::func::FuncOp"> {
  let summary = "Batch the parallel branches that hang off one split";
  let description = [{
    Atomic rules from the seed's horizontal fusion, run to a fixed point:
    `BatchLinearsOnSplit` (equal chunks of a last-axis split, each into a linear with same-shaped
    constant weights -> one batched matmul with stacked transposed weights between layout
    reshapes/transposes), `BatchLayerNormsOnSplit` (chunks each into a last-axis layer norm ->
    one layer norm over [.., N, M] with stacked [N, M] scale/bias), `BatchUnaryOnSplit` (every
    chunk into the same elementwise op -> that op before the split) and `EliminateSplitConcat`
    (concat of all split results in order on the split axis -> the split's input). Chained, they
    turn N parallel MLP branches into one batched MLP.
  }];
  let constructor = "tgc::createBatchSplitBranchesPass()";
}

def BatchIndependentLinears : Pass<"tgc-batch-independent-linears", "mlir::func::FuncOp"> {
  let summary = "Batch independent same-shape linears on different inputs into one matmul";
  let description = [{
    Rule `BatchIndependentLinears`, the seed's two-step greedy search: step 1 buckets linears by
    (input type, weight type, bias type, result type) with constant weights; step 2 splits each
    bucket, in program order, into sets whose members do not reach one another in the def-use
    graph (breadth-first, at most `search-depth` steps; a search cut short counts as a
    dependency). A set of `min-set-size` to `max-set-size` members becomes: inputs reshaped to
    [1, rows, K] and concatenated -> matmul with stacked Wᵀ [S, K, M] (+ bias [S, 1, M]) ->
    split on axis 0 -> reshapes back. It is inserted after the last input's definition and only
    where that comes before the first use of any member's result, so no cycle can form.
  }];
  let constructor = "tgc::createBatchIndependentLinearsPass()";
  let options = [
    Option<"minSetSize", "min-set-size", "int64_t", /*default=*/"2",
           "smallest set of independent linears that is batched">,
    Option<"maxSetSize", "max-set-size", "int64_t", /*default=*/"16",
           "largest set of independent linears batched into one matmul">,
    Option<"searchDepth", "search-depth", "int64_t", /*default=*/"64",
           "bound on the def-use BFS that proves two linears independent">,
  ];
}

#endif // TGC_PASSES_HORIZONTAL
