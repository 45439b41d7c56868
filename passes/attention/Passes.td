// Passes.td — attention passes: recognition of scaled dot-product attention.
#ifndef TGC_PASSES_ATTENTION
#define TGC_PASSES_ATTENTION

include "mlir/Pass/PassBase.td"

def RecognizeAttention : Pass<"tgc-recognize-attention", "mlir::func::FuncOp"> {
  let summary = "Recognize decomposed scaled dot-product attention as tg.attention";
  let description = [{
    Rewrites the op chain PyTorch's exporters emit for SDPA and Hugging Face attention,
      matmul(where(isnan(P), 0, P) | P, v),  P = softmax(matmul(q, kT) [* c] [+ mask], axis = -1),
    into one `tg.attention`, then simplifies its operands with small rules: scalar scales on q
    and k fold into `scale`, transposes of k (also the reshape → transpose(0,2,1) → reshape form
    of the dynamo exporter) compose away, the unsqueeze → expand → reshape head repeat of GQA/MQA
    folds into the op's key/value head count, an all-zero mask is dropped and a constant causal
    mask becomes `causal = true`; [0,2,1,3] transposes on q, k, v and the result fold into
    `layout = "bshd"`. Every rule is atomic and can be switched off by name.
  }];
  let constructor = "tgc::createRecognizeAttentionPass()";
}

#endif // TGC_PASSES_ATTENTION
