// CudaEmit.h — internal interface between the CUDA package writer and the kernel emitter.
#ifndef TGC_CODEGEN_CUDA_CUDAEMIT_H
#define TGC_CODEGEN_CUDA_CUDAEMIT_H

#include "codegen/common/EmitUtil.h"
#include "runtime/schema/plan.pb.h"
#include "codegen/planning/PlanBuffers.h"

#include "mlir/IR/Operation.h"
#include "llvm/Support/Error.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace tgc::cuda {

/// The fixed text at the top of kernels.cu (typedefs, element math, reductions, fallback GEMM).
const std::string &prelude();
/// With f16/bf16 tensors: `kHalfHeaders` goes before the prelude (the cuda_fp16.h/cuda_bf16.h
/// includes), `kHalfPrelude` right after it (tg_ld/tg_st conversions, f16/bf16 fallback GEMMs).
extern const char *kHalfHeaders;
extern const char *kHalfPrelude;

/// Threads per block of elementwise and row kernels.
constexpr int64_t kBlock = 256;

/// One argument of an emitted step: (a byte range of) a planned value's buffer, or of the
/// scratch area the package writer appends to the arena (for GEMM results an epilogue reshapes
/// or converts).
struct StepArg {
  mlir::Value value;     ///< null for scratch
  int64_t offset = 0;    ///< bytes into the value's buffer / the scratch area
  int64_t bytes = -1;    ///< -1: the whole value
};

/// One plan step: a kernel launch (1-D grid of 1-D blocks) or a GEMM (cuBLASLt at run time).
struct EmittedStep {
  bool gemm = false;
  std::string symbol;
  std::string label;
  std::vector<StepArg> args;
  int64_t grid = 1, block = 1;
  int64_t sharedBytes = 0; ///< dynamic shared memory per block (the kernel's `tg_dsm`)
  bool oneBlockPerSm = false; ///< plan.proto Step.one_block_per_sm
  plan::GemmDesc desc;
  /// The activation kernel after a GEMM step that carries the same activation (see plan.proto).
  bool skipIfGemmFused = false;
  /// A norm kernel a GEMM might apply (plan.proto Step.norm): f16/bf16 rows normalized as they
  /// are read, stored in the same type; the package writer keeps it only right after a GEMM
  /// step writing its input (plan::gemmNormProblem).
  plan::NormDesc norm;
  /// A CONV step (plan.proto ConvDesc): this kernel is its fallback; cuDNN may run it instead.
  bool isConv = false;
  plan::ConvDesc conv;
  /// A tg.attention kernel's shape (plan.proto AttentionDesc; batch 0: none): cuDNN may run it.
  plan::AttentionDesc attention;
  /// A tg.loop: a LOOP step (codegen/common/LoopSteps.h) in this place; nothing else is set.
  mlir::Operation *loop = nullptr;
};

/// Emits CUDA C++ for the top-level ops of @main: each op becomes one kernel, except GEMMs,
/// which become GEMM steps (plus an epilogue kernel for tg.fused "gemm" epilogues that are not
/// just a bias). Constants the planner marked Inline become literals.
class KernelEmitter {
public:
  explicit KernelEmitter(const BufferPlan &plan) : plan_(plan) {}
  /// The target's compute capability × 10 (90 for cuda:sm_90): what its kernels may use
  /// (thread-block clusters from 90 on).
  int sm = 80;
  /// Appends the kernels for `op` to `code` and returns its steps in order.
  llvm::Expected<std::vector<EmittedStep>> emit(mlir::Operation *op, int index, std::string &code);
  /// Largest scratch area any step needs (bytes, aligned).
  int64_t scratchBytes() const { return scratch_; }

private:
  const BufferPlan &plan_;
  int constants_ = 0;
  int64_t scratch_ = 0;
  std::map<std::string, std::string> kernelBySource_; ///< kernel text (sans name) -> symbol
  /// Transposes whose copy the GEMM before them does by writing in their layout (see
  /// KernelBuilder::foldOutputTranspose): they emit nothing.
  std::set<mlir::Operation *> writtenByGemm_;
  /// Elementwise ops a normalization kernel applies before its store (normEpilogue).
  std::set<mlir::Operation *> appliedByNorm_;
  /// Rotary ops the kernel emitted for the split before them applies (splitRotaries).
  std::set<mlir::Operation *> appliedBySplit_;
  /// Row gathers the kernel of the op right after them reads through (gatherReadable): they emit
  /// nothing.
  std::set<mlir::Operation *> readThrough_;
  friend struct KernelBuilder;
};

/// "Add_3, Tanh_4": the names found in a location (NameLoc, FusedLoc, CallSiteLoc).
using codegen::locationNames;

} // namespace tgc::cuda

#endif // TGC_CODEGEN_CUDA_CUDAEMIT_H
