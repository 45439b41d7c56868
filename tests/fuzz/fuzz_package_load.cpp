// fuzz_package_load.cpp — libFuzzer harness: arbitrary plan.pb bytes inside an otherwise valid
// CPU package → tgc::Session::load (parse, magic, version, checksums, symbols, every argument
// range) → describe().
//
// At start-up the harness compiles a small package (linear + bias + tanh + softmax, an output
// that aliases an input) into a temporary folder; each input replaces its plan.pb. Loading must
// end in a Status error or a session; it never runs the plan, because a plan is trusted to agree
// with its kernels' compiled-in sizes (docs/hardening.md, "What remains"). With
// TGC_FUZZ_SEED_DIR set, the valid plan.pb is written there as a seed.
#include "codegen/cpu/CpuBackend.h"
#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "runtime/Session.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

namespace {

const char *kIR = R"(
func.func @main(%x: tensor<2x8xf32> {tg.name = "x"}, %k: tensor<3xi64> {tg.name = "ids"}) -> (tensor<2x8xf32> {tg.name = "y"}, tensor<3xi64> {tg.name = "ids_out"}) {
  %w = tg.constant dense<0.25> : tensor<8x8xf32>
  %b = tg.constant dense<0.5> : tensor<8xf32>
  %0 = tg.linear %x, %w : tensor<2x8xf32>, tensor<8x8xf32> -> tensor<2x8xf32>
  %1 = tg.add %0, %b : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  %2 = tg.tanh %1 : tensor<2x8xf32>
  %3 = tg.softmax %2 {axis = 1 : i64} : tensor<2x8xf32>
  return %3, %k : tensor<2x8xf32>, tensor<3xi64>
}
)";

std::string makePackage() {
  char tmpl[] = "/tmp/tgc_fuzz_pkg_XXXXXX";
  const char *root = ::mkdtemp(tmpl);
  if (!root)
    std::abort();
  mlir::MLIRContext ctx(mlir::MLIRContext::Threading::DISABLED);
  ctx.loadDialect<tgc::tg::TGDialect, mlir::func::FuncDialect>();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(kIR, &ctx);
  if (!module)
    std::abort();
  std::string dir = std::string(root) + "/pkg";
  tgc::PackageInfo info;
  info.tgcVersion = "fuzz";
  info.modelName = "fuzz";
  auto stats = tgc::writeCpuPackage(*module, dir, info, "");
  if (!stats) {
    std::fprintf(stderr, "fuzz_package_load: %s\n", llvm::toString(stats.takeError()).c_str());
    std::abort();
  }
  tgc::Status st;
  if (!tgc::Session::load(dir, st)) {
    std::fprintf(stderr, "fuzz_package_load: the seed package does not load: %s\n",
                 st.message.c_str());
    std::abort();
  }
  if (const char *seeds = std::getenv("TGC_FUZZ_SEED_DIR")) {
    std::ifstream in(dir + "/plan.pb", std::ios::binary);
    std::ofstream(std::string(seeds) + "/valid_plan.pb", std::ios::binary) << in.rdbuf();
  }
  return dir;
}

const std::string &packageDir() {
  static const std::string dir = makePackage();
  return dir;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  (void)packageDir();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &dir = packageDir();
  {
    std::ofstream out(dir + "/plan.pb", std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char *>(data), (std::streamsize)size);
  }
  tgc::Status st;
  auto s = tgc::Session::load(dir, st);
  if (s) {
    if (!st.ok)
      __builtin_trap();
    (void)s->describe();
  } else if (st.ok || st.message.empty()) {
    __builtin_trap(); // a refusal must say why
  }
  return 0;
}
