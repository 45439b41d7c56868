// Pipeline.cpp — the pass pipeline, stage by stage (cleanup → kernel formation).
//
// Stages follow DESIGN.md: cleanup (fold constants, canonicalize, CSE) first, so later stages
// see the graph without exporter noise; kernel formation last, since it fixes the kernels
// codegen emits. Recognition, horizontal fusion and precision passes slot in between.
#include "driver/Pipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/Passes.h"
#include "passes/attention/Passes.h"
#include "passes/cleanup/Passes.h"
#include "passes/horizontal/Passes.h"
#include "passes/kernels/Passes.h"
#include "passes/decode/Passes.h"
#include "passes/padding/Passes.h"
#include "passes/precision/Passes.h"
#include "passes/recognition/Passes.h"
#include "passes/testing/Passes.h"

namespace tgc {

namespace {

/// Every stage is a func.func pass.
void addFunctionPasses(mlir::OpPassManager &fn, const PipelineOptions &options) {
  fn.addPass(createFoldConstantsPass());
  fn.addPass(createEliminateIdentitiesPass());
  fn.addPass(createEliminateCastsPass());
  fn.addPass(mlir::createCanonicalizerPass());
  fn.addPass(mlir::createCSEPass());
  // CUDA only, before tgc-fold-linears lowers 1x1 convolutions channels first: convolutional
  // networks channels last; the transposed constants fold at once.
  if (options.cudaTarget) {
    fn.addPass(createCudaChannelsLastPass());
    fn.addPass(createFoldConstantsPass());
  }
  fn.addPass(createFoldLinearsPass());
  fn.addPass(createRecognizeActivationsPass());
  fn.addPass(createRecognizeNormsPass());
  fn.addPass(createRecognizeRotaryPass());
  fn.addPass(createRecognizeAttentionPass());
  // Bucketed compiles only (a no-op otherwise): mask padded keys before fusion hides them.
  fn.addPass(createMaskPaddingPass());
  // Decode compiles only: past/present key-value tensors → the static cache states.
  fn.addPass(createUseStaticKvCachePass());
  if (options.injectFault)
    fn.addPass(createInjectFaultPass());
  // Horizontal fusion, then fold the stacked weights and drop the layout ops that cancel.
  fn.addPass(createMergeParallelLinearsPass());
  // SwiGLU is matched on the merged gate/up form: silu(split#0) * split#1.
  fn.addPass(createRecognizeSwigluPass());
  fn.addPass(createBatchSplitBranchesPass());
  fn.addPass(createEliminateIdentitiesPass());
  fn.addPass(createSinkLayoutOpsPass());
  fn.addPass(createEliminateIdentitiesPass());
  // Precision last among the graph rewrites: the rules above match f32 patterns.
  if (options.precision != Precision::FP32) {
    fn.addPass(createConvertPrecisionPass(precisionName(options.precision).str()));
    fn.addPass(createEliminateCastsPass());
  }
  fn.addPass(createFoldConstantsPass());
  fn.addPass(mlir::createCanonicalizerPass());
  fn.addPass(mlir::createCSEPass());
  // CPU only, after every rule that matches tg.linear: weights as the CPU's GEMM reads them.
  if (options.cpuTarget)
    fn.addPass(createCpuWeightLayoutPass(options.cpuGemmTiles));
  if (options.formKernels)
    fn.addPass(createFormKernelsPass());
}

} // namespace

void buildPipeline(mlir::PassManager &pm, const PipelineOptions &options) {
  addFunctionPasses(pm.nest<mlir::func::FuncOp>(), options);
}

std::vector<PipelinePass> pipelinePasses(const PipelineOptions &options) {
  mlir::OpPassManager fn(mlir::func::FuncOp::getOperationName());
  addFunctionPasses(fn, options);
  std::vector<PipelinePass> passes;
  for (mlir::Pass &p : fn.getPasses())
    passes.push_back({p.getArgument().str(), p.getName().str()});
  return passes;
}

void registerAllPasses() {
  registerCleanupPasses();
  registerHorizontalPasses();
  registerKernelsPasses();
  registerRecognitionPasses();
  registerAttentionPasses();
  registerPaddingPasses();
  registerDecodePasses();
  registerPrecisionPasses();
  registerTestingPasses();
}

} // namespace tgc
