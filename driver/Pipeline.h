// Pipeline.h — the compile pipeline: every stage, in order, in one function.
#ifndef TGC_DRIVER_PIPELINE_H
#define TGC_DRIVER_PIPELINE_H

#include "driver/Target.h"
#include "mlir/Pass/PassManager.h"

#include <string>
#include <vector>

namespace tgc {

/// Pipeline knobs (set from the tgc CLI).
struct PipelineOptions {
  bool formKernels = true;
  bool injectFault = false;        ///< testing only: add tgc-inject-fault (a wrong rule)
  Precision precision = Precision::FP32; ///< fp16/bf16: run tgc-convert-precision
  bool cpuTarget = false;          ///< run tgc-cpu-weight-layout (the CPU GEMM's weight layout)
  bool cpuGemmTiles = true;        ///< the CPU target has the AVX-512 GEMM tiles (x86-64-v4)
  bool cudaTarget = false;         ///< run tgc-cuda-channels-last (NHWC convolutions)
};

/// Adds tgc's passes, in pipeline order, to `pm` (which runs on the module).
void buildPipeline(mlir::PassManager &pm, const PipelineOptions &options);

/// One pass of the pipeline: its flag (`tgc-fold-constants`, `cse`: what --print-ir-after and
/// --stats name it by) and its class name (`FoldConstants`, `CSE`: what MLIR's pass timing names
/// it by).
struct PipelinePass {
  std::string argument, name;
};
/// The passes buildPipeline adds for `options`, in run order, read back from an MLIR pass
/// manager built the same way (so the list cannot drift from the pipeline).
std::vector<PipelinePass> pipelinePasses(const PipelineOptions &options);

/// Registers every tgc pass with MLIR's registry (tgc-opt).
void registerAllPasses();

} // namespace tgc

#endif // TGC_DRIVER_PIPELINE_H
