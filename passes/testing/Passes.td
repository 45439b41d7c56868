// Passes.td — passes that exist to test tgc's own debugging tools.
#ifndef TGC_PASSES_TESTING
#define TGC_PASSES_TESTING

include "mlir/Pass/PassBase.td"

def InjectFault : Pass<"tgc-inject-fault", "mlir::func::FuncOp"> {
  let summary = "Testing only: a deliberately wrong rule, for checking bisect and check-each-pass";
  let description = [{
    Runs one rule, `InjectFaultScaleTanh`, that rewrites tanh(x) into 1.01 * tanh(x). It is in
    the pipeline only when `tgc compile/bisect --inject-fault` asks for it, so tests can prove
    that `tgc bisect` names the rule that breaks numerics and that `--check-each-pass` names the
    pass, on real models, without a real bug.
  }];
  let constructor = "tgc::createInjectFaultPass()";
}

#endif // TGC_PASSES_TESTING
