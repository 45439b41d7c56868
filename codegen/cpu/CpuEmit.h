// CpuEmit.h — internal interface between the CPU package writer and the kernel emitter.
#ifndef TGC_CODEGEN_CPU_CPUEMIT_H
#define TGC_CODEGEN_CPU_CPUEMIT_H

#include "codegen/common/EmitUtil.h"
#include "codegen/planning/PlanBuffers.h"

#include "mlir/IR/Operation.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace tgc::cpu {

/// The fixed text at the top of kernels.cpp (helpers, GEMM/conv templates, tgk_set_threads).
const std::string &prelude();

/// The prelude's thread pool and tg_parallel_for (CpuPoolPrelude.cpp), after tgk_nt.
const char *poolPrelude();
/// The prelude's convolution templates (CpuConvPrelude.cpp): im2col + GEMM, depthwise direct.
const char *convPrelude();
/// The prelude's max pooling (CpuMaxPoolPrelude.cpp), after the convolution templates.
const char *maxPoolPrelude();
/// The prelude's attention helpers (CpuAttentionPrelude.cpp), after its GEMM tiles.
const char *attentionPrelude();

/// One emitted kernel: its C symbol, a label naming the ops/ONNX nodes, and its arguments in
/// call order (buffered operands, then results).
struct EmittedKernel {
  std::string symbol;
  std::string label;
  std::vector<mlir::Value> args;
};

/// Emits C++ for the top-level ops of @main, one kernel per op (tg.fused regions become one
/// kernel). Constants the planner marked Inline become literals.
class KernelEmitter {
public:
  explicit KernelEmitter(const BufferPlan &plan) : plan_(plan) {}
  /// Appends the kernel for `op` to `code`. `op` is any tg op but constant/reshape/return.
  llvm::Expected<EmittedKernel> emit(mlir::Operation *op, int index, std::string &code);

private:
  const BufferPlan &plan_;
  int constants_ = 0;
  friend struct KernelBuilder;
};

/// "Add_3, Tanh_4": the names found in a location (NameLoc, FusedLoc, CallSiteLoc).
using codegen::locationNames;

} // namespace tgc::cpu

#endif // TGC_CODEGEN_CPU_CPUEMIT_H
