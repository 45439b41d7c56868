// PackageUtil.h — package-writing helpers shared by the CPU and CUDA backends: files, hashes,
// constants to weight bytes, interface descriptors, buffer arguments and the package directory.
#ifndef TGC_CODEGEN_COMMON_PACKAGEUTIL_H
#define TGC_CODEGEN_COMMON_PACKAGEUTIL_H

#include "codegen/common/PackageInfo.h"
#include "runtime/schema/plan.pb.h"
#include "compiler/dialect/TgDialect.h"
#include "codegen/planning/PlanBuffers.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <memory>

#include <cstdint>
#include <string>

namespace tgc::codegen {

/// "<backend>: msg" as an error (backend: "CPU backend", "CUDA backend").
llvm::Error backendError(const char *backend, const llvm::Twine &msg);

/// Writes `n` bytes to `path` (replacing it); false on any I/O error.
bool writeFile(const std::string &path, const void *data, size_t n);
/// Reads the whole file; false when it cannot be read.
bool readFile(const std::string &path, std::string &out);
/// 16 lowercase hex digits.
std::string hex64(uint64_t h);

/// Copies constant `c`'s raw little-endian bytes (i1 as one byte per element) into `blob` at
/// `offset` (the caller sized the blob). Errors start with `backend` ("CPU backend", ...).
llvm::Error constantBytes(tg::ConstantOp c, std::string &blob, int64_t offset,
                          const char *backend);

/// Fills a plan interface descriptor (name, ONNX dtype number, shape) for a graph input/output.
llvm::Error fillDesc(plan::TensorDesc &d, const std::string &name, mlir::Type type,
                     const char *backend);

/// Starts a package's plan: magic, format version, `target`, provenance (`info`), alignment, end
/// marker, the weights and kernels file names, and one interface descriptor per argument of `fn`
/// (its `tg.name`, else input_<k>).
llvm::Error initPlan(plan::Plan &p, mlir::func::FuncOp fn, const PackageInfo &info,
                     const std::string &target, const char *kernelsFile, const char *backend);

/// The plan argument for a planned buffer location.
plan::BufferArg toArg(const BufferLoc &loc);

/// Creates `dir`, or empties it when it already holds a package; refuses to replace anything
/// that is not a tgc package.
llvm::Error preparePackageDir(const std::string &dir, const char *backend);

/// A package begun: @main, its buffer plan, and the plan started by initPlan.
struct PackageStart {
  mlir::func::FuncOp fn;
  std::unique_ptr<BufferPlan> buffers;
  plan::Plan plan;
};
/// Finds @main in `module` (an error when it is missing or empty), plans its buffers and starts
/// the plan (initPlan).
llvm::Expected<PackageStart> startPackage(mlir::ModuleOp module, const PackageInfo &info,
                                          const std::string &target, const char *kernelsFile,
                                          const char *backend);

/// Adds every output of `fn` to the plan (its `tg.name`, else output_<i>), calling
/// `source(i, descriptor, where it lies after the last step)` to set where it is read from; an
/// output without a buffer is an error.
llvm::Error addOutputs(
    plan::Plan &p, mlir::func::FuncOp fn, const BufferPlan &buffers, const char *backend,
    const std::function<void(unsigned, plan::TensorDesc &, const BufferLoc &)> &source);

/// Writes `dir`/weights.bin (every weight constant at its planned offset) and records its size
/// and hash in the plan.
llvm::Error writeWeights(plan::Plan &p, const BufferPlan &buffers, const std::string &dir,
                         const char *backend);

/// Writes the finished plan as `dir`/plan.pb and its text form as `dir`/plan.txt.
llvm::Error writePlanFiles(const plan::Plan &p, const std::string &dir, const char *backend);

} // namespace tgc::codegen

#endif // TGC_CODEGEN_COMMON_PACKAGEUTIL_H
