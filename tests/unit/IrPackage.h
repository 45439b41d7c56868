// IrPackage.h — unit-test helper: a CPU package written straight from tg IR text (no ONNX, no
// pipeline), for tests that need exact plans (bucket and decode packages assembled by hand).
// Header-only; the tests that use it depend on //codegen/cpu, //compiler/dialect and @llvm//:mlir.
#ifndef TGC_TESTS_UNIT_IRPACKAGE_H
#define TGC_TESTS_UNIT_IRPACKAGE_H

#include "codegen/cpu/CpuBackend.h"
#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <string>

namespace tgc::test {

/// Parses `ir` and writes it as a CPU package at `dir` (model name `model`, kernel cache
/// `cacheDir`): `dir`, or "" with a test failure when the IR does not parse or compile.
inline std::string writeCpuPackageFromIr(const std::string &ir, const std::string &dir,
                                         const std::string &model, const std::string &cacheDir) {
  mlir::MLIRContext ctx;
  ctx.loadDialect<tg::TGDialect, mlir::func::FuncDialect>();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(ir, &ctx);
  EXPECT_TRUE(module) << "IR does not parse:\n" << ir;
  if (!module)
    return "";
  PackageInfo info;
  info.tgcVersion = "test";
  info.modelName = model;
  auto stats = writeCpuPackage(*module, dir, info, cacheDir);
  EXPECT_TRUE(bool(stats)) << llvm::toString(stats.takeError());
  return stats ? dir : "";
}

} // namespace tgc::test

#endif // TGC_TESTS_UNIT_IRPACKAGE_H
