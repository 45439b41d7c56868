// fuzz_onnx_import.cpp — libFuzzer harness: arbitrary bytes → ModelProto parse → validation →
// import to `tg` (with constant folding) → verifier; the same bytes as a TensorProto file.
//
// Every input must end in an llvm::Error or a module that verifies; ASan/UBSan turn any
// out-of-bounds access, overflow or crash into a finding. External data is read from
// $TGC_FUZZ_BASEDIR (tools/fuzz fills it with the weights of the seed models) or from an empty
// folder. See docs/hardening.md.
#include "frontends/onnx/Importer.h"
#include "frontends/onnx/ModelLoader.h"
#include "frontends/onnx/onnx.pb.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <unistd.h>

namespace {

std::string &baseDir() {
  static std::string dir = [] {
    if (const char *d = std::getenv("TGC_FUZZ_BASEDIR"))
      return std::string(d);
    char tmpl[] = "/tmp/tgc_fuzz_onnx_XXXXXX";
    const char *d = ::mkdtemp(tmpl);
    return std::string(d ? d : "/nonexistent");
  }();
  return dir;
}

/// One context reused across inputs (creating one per input dominates the run time), replaced
/// every so often so that uniqued types and attributes do not accumulate.
mlir::MLIRContext &context() {
  static std::unique_ptr<mlir::MLIRContext> ctx;
  static int uses = 0;
  if (!ctx || ++uses % 2000 == 0) {
    ctx = std::make_unique<mlir::MLIRContext>(mlir::MLIRContext::Threading::DISABLED);
  }
  return *ctx;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string bytes(reinterpret_cast<const char *>(data), size);
  {
    auto module = tgc::importOnnxBytes(context(), bytes, baseDir(), {});
    if (module) {
      if (mlir::failed(mlir::verify(**module)))
        __builtin_trap(); // the importer promised a verified module
    } else {
      std::string msg = llvm::toString(module.takeError());
      if (msg.empty())
        __builtin_trap(); // every refusal says why
    }
  }
  // The same bytes as a TensorProto (what `tgc run --inputs` reads).
  onnx::TensorProto t;
  if (t.ParseFromArray(bytes.data(), (int)bytes.size())) {
    auto h = tgc::onnx_import::tensorFromProto(t, baseDir());
    if (h) {
      if ((int64_t)h->data.size() != h->numel() * (int64_t)tgc::dtypeSize(h->dtype))
        __builtin_trap();
    } else {
      llvm::consumeError(h.takeError());
    }
  }
  return 0;
}
