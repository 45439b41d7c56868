// Pipeline.h — the compile pipeline: every stage, in order, in one function.
#ifndef TGC_DRIVER_PIPELINE_H
#define TGC_DRIVER_PIPELINE_H

#include "driver/Target.h"
#include "mlir/Pass/PassManager.h"

#include <string>

namespace tgc {

/// Pipeline knobs (set from the tgc CLI).
struct PipelineOptions {
  bool formKernels = true;
  bool injectFault = false;        ///< testing only: add tgc-inject-fault (a wrong rule)
  Precision precision = Precision::FP32; ///< fp16/bf16: run tgc-convert-precision
};

/// Adds tgc's passes, in pipeline order, to `pm` (which runs on the module).
void buildPipeline(mlir::PassManager &pm, const PipelineOptions &options);

/// Registers every tgc pass with MLIR's registry (tgc-opt).
void registerAllPasses();

} // namespace tgc

#endif // TGC_DRIVER_PIPELINE_H
