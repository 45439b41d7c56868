// LoopSteps.h — a tg.loop in a package: its LOOP step and its body's own package.
//
// Both backends emit a tg.loop of @main as a LOOP step (plan.proto LoopDesc) whose args are the
// loop's operands and results, and write the body function as a package of its own in the
// subdirectory named after it, compiled by the same backend (a body holding a loop writes its
// own body packages the same way). The runtime runs the body package per iteration (on CUDA
// inside the graph, as a conditional WHILE node).
#ifndef TGC_CODEGEN_COMMON_LOOPSTEPS_H
#define TGC_CODEGEN_COMMON_LOOPSTEPS_H

#include "codegen/common/PackageInfo.h"
#include "codegen/planning/PlanBuffers.h"
#include "mlir/IR/BuiltinOps.h"
#include "runtime/schema/plan.pb.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <string>

namespace tgc::codegen {

/// True for a tg.loop; `addLoopStep` appends its LOOP step to `p`, args from `buffers`.
bool isLoop(mlir::Operation *op);
llvm::Error addLoopStep(mlir::Operation *loop, const BufferPlan &buffers, plan::Plan &p,
                        const char *backend);

/// The backend's package writer (writeCpuPackage / writeCudaPackage).
using PackageWriter = std::function<llvm::Expected<PackageStats>(
    mlir::ModuleOp, const std::string &dir, const PackageInfo &, const std::string &cacheDir)>;

/// Writes the body of every tg.loop in `module`'s @main as a package in `dir`/<body name> with
/// `write` (a copy of `module` whose @main is the body, model name the body's), and adds the
/// bodies' kernels to `stats`.
llvm::Error writeLoopBodies(mlir::ModuleOp module, const std::string &dir, const PackageInfo &info,
                            const std::string &cacheDir, const PackageWriter &write,
                            PackageStats &stats, const char *backend);

} // namespace tgc::codegen

#endif // TGC_CODEGEN_COMMON_LOOPSTEPS_H
