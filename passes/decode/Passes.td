// Passes.td — decode passes: a static KV cache kept across the runs of a decode package.
#ifndef TGC_PASSES_DECODE
#define TGC_PASSES_DECODE

include "mlir/Pass/PassBase.td"

def UseStaticKvCache : Pass<"tgc-use-static-kv-cache", "mlir::func::FuncOp"> {
  let summary = "Turn a decoder's past/present key-value tensors into a static cache state";
  let description = [{
    For a decode compile (@main has `tg.decode` = "prefill" or "step" and `tg.max_seq` = N;
    docs/design.md, "Generation"): each past key/value argument and its present result
    (`tg.state` = k on both) become one *state*, a [B, H, N, D] buffer the runtime keeps across
    runs. The argument is replaced by the state (an argument with `tg.state`, after all
    others), and the present result by the state with the new positions written:
    scatter_elements along the sequence axis at slots 0..S-1 in prefill (the prompt; its padded
    positions land after it, where later steps overwrite them) and at the position_ids value in
    a step. A step's Concat(past, new) is that write, so attention reads the whole cache — its
    attention_mask (1 up to the position) hides the unwritten and stale slots, and softmax
    attention does not care where in the cache a key sits. The result keeps `tg.state`: the
    plan copies it back into the state instead of returning it.
  }];
  let constructor = "tgc::createUseStaticKvCachePass()";
}

#endif // TGC_PASSES_DECODE
