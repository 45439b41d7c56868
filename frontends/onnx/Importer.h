// Importer.h — ONNX ModelProto (incl. external data) → `tg` dialect.
//
// The importer validates everything it reads (see DESIGN.md, *Bad input*), infers static shapes
// itself (it does not depend on libonnx's shape inference, which stops at opset 17), folds exporter
// shape arithmetic by evaluating ops whose operands are all constant, and emits one
// `func.func @main` whose arguments and results carry their ONNX names in `tg.name`.
#ifndef TGC_FRONTENDS_ONNX_IMPORTER_H
#define TGC_FRONTENDS_ONNX_IMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tgc {

/// Options of the ONNX import.
struct ImportOptions {
  /// Concrete shapes for graph inputs with symbolic or unknown dims ("--input-shape name=1x128").
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// Graph inputs bound to a value at compile time ("--bind-input name=FILE.pb", a TensorProto):
  /// each becomes a constant, and the package has no such input. For inputs that decide shapes
  /// (Reshape's shape, a reduction's axes, Slice's starts, ...), which an ahead-of-time compiler
  /// of static shapes must know.
  std::map<std::string, std::string> boundInputs;
  /// Bucketed compiles (docs/design.md, "Shape buckets"): per graph input, the symbol each axis
  /// carries (-1 for a fixed dim), set on its @main argument as `tg.dim_symbols` for the
  /// padding pass (passes/padding).
  std::map<std::string, std::vector<int64_t>> dimSymbols;
  /// The symbols' names, by index (@main's `tg.symbol_names`, for messages).
  std::vector<std::string> symbolNames;
  /// Decode compiles (docs/design.md, "Generation"): graph inputs and outputs that are one
  /// layer's key/value cache (past_key_values.* and present.*), by name → the state index, set
  /// as `tg.state` on the argument / result; `decodeMode` ("prefill" or "step") and `maxSeq`
  /// become @main's `tg.decode` and `tg.max_seq` for the static-cache pass (passes/decode).
  std::map<std::string, int64_t> states;
  std::string decodeMode;
  int64_t maxSeq = 0;
};

/// A graph input's declared dims: each its value, or -1 with its dim_param ("" when unnamed).
struct GraphInputDims {
  std::string name;
  std::vector<int64_t> dims;
  std::vector<std::string> params;
  bool hasShape = false;
};
/// The graph inputs (initializers excluded) of an ONNX model file, as declared.
llvm::Expected<std::vector<GraphInputDims>> graphInputDims(const std::string &path);

/// Reads and imports an ONNX model file. External data is read from beside the file only.
/// Errors name the node and tensor at fault; every unsupported op is listed in one error.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
importOnnxFile(mlir::MLIRContext &ctx, const std::string &path, const ImportOptions &options);

/// Imports an in-memory serialized ModelProto; `baseDir` is where external data lives ("" for none).
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
importOnnxBytes(mlir::MLIRContext &ctx, const std::string &bytes, const std::string &baseDir,
                const ImportOptions &options);

/// One row of the support table (`tgc ops`, docs/ops.md): an ONNX op (default domain) the
/// importer takes, and what it does not take of it ("" when nothing is known to be missing).
/// The importer lowers each op onto tg ops both backends emit (for the element types each takes).
struct SupportedOp {
  std::string name, note;
};
/// The importer's registry, by name.
std::vector<SupportedOp> supportedOps();
/// The default-domain opsets the importer reads (models outside are refused).
constexpr int64_t kMinOnnxOpset = 7, kMaxOnnxOpset = 22;

} // namespace tgc

#endif // TGC_FRONTENDS_ONNX_IMPORTER_H
