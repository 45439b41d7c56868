// Passes.td — precision: run the graph in fp16/bf16 with fp32 at the edges.
#ifndef TGC_PASSES_PRECISION
#define TGC_PASSES_PRECISION

include "mlir/Pass/PassBase.td"

def ConvertPrecision : Pass<"tgc-convert-precision", "mlir::func::FuncOp"> {
  let summary = "Compute in fp16 or bf16: convert f32 values and weights, cast at the edges";
  let description = [{
    Every f32 value inside the function becomes `precision` (f16 or bf16): weights are converted
    at compile time (the constants themselves change type), and casts are inserted only at the
    edges — after each f32 argument and before each f32 result — so the package keeps its f32
    interface. Ops keep their meaning: backends accumulate GEMMs in fp32 and compute
    LayerNorm/RMSNorm/softmax/attention statistics in fp32 (the interpreter in fp64) whatever the
    storage type. Casts between the new type and f32 that the conversion creates back to back are
    removed by tgc-eliminate-casts.
  }];
  let constructor = "tgc::createConvertPrecisionPass()";
  let options = [
    Option<"precision", "precision", "std::string", /*default=*/"\"fp16\"",
           "fp16 or bf16">,
  ];
}

#endif // TGC_PASSES_PRECISION
