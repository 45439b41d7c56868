// tgc-opt.cpp — runs tgc passes on .mlir files (the driver of the lit tests).
//
// MLIR's standard opt driver with the tg and func dialects and every tgc pass registered, e.g.
//   tgc-opt in.mlir --split-input-file --tgc-form-kernels | FileCheck in.mlir
#include "driver/Pipeline.h"
#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  tgc::registerAllPasses();
  mlir::DialectRegistry registry;
  registry.insert<tgc::tg::TGDialect, mlir::func::FuncDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "tgc pass driver\n", registry));
}
