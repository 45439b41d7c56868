// ImportContext.h — private to the ONNX importer: the node view handed to op importers, the op
// table, and the emission helpers (static shape inference, constant folding, error collection).
//
// Every op goes through ImportContext::finish: it is verified at once (so a shape mismatch in the
// model becomes an error naming the node, not a crash later), result sizes are overflow-checked,
// and when all operands are `tg.constant` it is evaluated with tgc::evaluateOp and replaced by a
// constant. Failures there are recorded and reported by the driver after the node's importer
// returns; values stay valid so importers never see a null value.
#ifndef TGC_FRONTENDS_ONNX_IMPORTCONTEXT_H
#define TGC_FRONTENDS_ONNX_IMPORTCONTEXT_H

#include "compiler/dialect/Shapes.h"
#include "compiler/dialect/TgDialect.h"
#include "frontends/onnx/onnx.pb.h"
#include "mlir/IR/Builders.h"
#include "runtime/Tensor.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tgc::onnx_import {

/// One ONNX node being imported, with its operands resolved.
struct NodeView {
  const onnx::NodeProto &proto;
  std::string label;               ///< "Reshape 'name'" or "Reshape #3" when unnamed
  mlir::Location loc;              ///< NameLoc of the node name
  std::vector<mlir::Value> inputs; ///< null for absent optional inputs
  std::vector<bool> outputUsed;    ///< output i is consumed or a graph output
  int64_t opset = 0;               ///< default-domain opset of the model

  /// Input i, or a null value when absent.
  mlir::Value input(size_t i) const { return i < inputs.size() ? inputs[i] : mlir::Value(); }
  /// True when output i is consumed by another node or the graph.
  bool used(size_t i) const { return i < outputUsed.size() && outputUsed[i]; }
  /// The attribute, or nullptr.
  const onnx::AttributeProto *attr(const std::string &name) const;
  int64_t attrInt(const std::string &name, int64_t dflt) const;
  float attrFloat(const std::string &name, float dflt) const;
  std::string attrString(const std::string &name, const std::string &dflt) const;
  std::optional<std::vector<int64_t>> attrInts(const std::string &name) const;
  std::optional<std::vector<float>> attrFloats(const std::string &name) const;
};

class ImportContext;

/// An op importer: returns one value per ONNX output it produces (leading outputs; trailing
/// unproduced outputs must be unused).
using OpHandler =
    std::function<llvm::Expected<std::vector<mlir::Value>>(ImportContext &, const NodeView &)>;
using OpTable = std::map<std::string, OpHandler>;

void registerElementwiseOps(OpTable &table);
void registerBitwiseOps(OpTable &table);
/// The ops of `g` (default domain) whose definition at opset 7 is newer than `opset` (below 7):
/// ", "-separated, empty when the model means the same at opset 7 (OldOpsets.cpp).
std::string oldOpsetBlockers(const onnx::GraphProto &g, int64_t opset);
void registerShapeOps(OpTable &table);
void registerNNOps(OpTable &table);
void registerResizeOps(OpTable &table);
void registerQuantizeOps(OpTable &table);
void registerQLinearOps(OpTable &table);
void registerOneHotOps(OpTable &table);
void registerReorderOps(OpTable &table);
void registerGatherNDOps(OpTable &table);
void registerEinsumOps(OpTable &table);
void registerIndexOps(OpTable &table);
void registerLossOps(OpTable &table);
void registerSignalOps(OpTable &table);
void registerConvTransposeOps(OpTable &table);
void registerSamplingOps(OpTable &table);
void registerRecurrentOps(OpTable &table);
void registerControlFlowOps(OpTable &table);
void registerDynamicOps(OpTable &table);
void registerMiscOps(OpTable &table);

/// The MLIR element type of a DType (ui8/ui16/ui32/ui64 are unsigned IntegerTypes, the signed
/// ones signless, bool is i1).
mlir::Type mlirElementType(DType t, mlir::MLIRContext *ctx);

class ImportContext;
/// x converted to `to` as ONNX's Cast does: to int4/uint4 clipped to the range, then rounded half
/// to even; to float8 through f32, `saturate` (Cast-19's attribute) choosing what values beyond the
/// range become; otherwise c.cast (ImportQuantize.cpp).
mlir::Value castOnnx(ImportContext &c, mlir::Location loc, mlir::Value x, mlir::Type to,
                     bool saturate);

/// A value whose extent along `axis` is known only at run time: `count` (tensor<i64>) entries
/// are valid, the rest padding; `origin` names the node that decided it ("NonZero 'nz'").
/// See DynamicExtent.cpp and docs/design.md, "Data-dependent shapes".
struct DynamicExtent {
  int64_t axis = 0;
  mlir::Value count;
  std::string origin;
};

/// Emission helpers shared by the op importers.
class ImportContext {
public:
  ImportContext(mlir::MLIRContext &ctx, mlir::OpBuilder &b) : ctx(&ctx), b(b) {}

  mlir::MLIRContext *ctx;
  mlir::OpBuilder &b;
  /// Imports a subgraph (an If branch, a Loop or Scan body) inline where the builder stands:
  /// its inputs bound to `args` in order, the names of the enclosing scopes visible; returns
  /// its outputs. Set by the import driver.
  std::function<llvm::Expected<std::vector<mlir::Value>>(const onnx::GraphProto &,
                                                         const std::vector<mlir::Value> &)>
      importSubgraph;
  /// Label of the node being imported, used in recorded errors.
  std::string currentLabel;
  /// Diagnostics captured while verifying emitted ops.
  std::string diagnostics;
  /// The values with a data-dependent extent (DynamicExtent.cpp).
  llvm::DenseMap<mlir::Value, DynamicExtent> extents;

  /// "label: msg" as an error.
  static llvm::Error error(const NodeView &n, const llvm::Twine &msg);
  /// When `v` is a graph input: " (graph input 'x': bind its value at compile time with
  /// --bind-input x=FILE.pb)", the way out of a "must be constant" refusal; when it is computed
  /// from graph inputs, the same naming each of them; else "".
  static std::string bindHint(mlir::Value v);
  /// The node's `axes` attribute normalized to [0, rank) (every axis, in order, when absent);
  /// an axis out of range is refused.
  static llvm::Expected<std::vector<int64_t>> axesAttr(const NodeView &n, int64_t rank);
  /// Input i, which must be present.
  static llvm::Expected<mlir::Value> need(const NodeView &n, size_t i);

  // --- types ---
  static Shape shapeOf(mlir::Value v);
  static mlir::Type elemOf(mlir::Value v);
  static int64_t rankOf(mlir::Value v) { return (int64_t)shapeOf(v).size(); }
  mlir::RankedTensorType type(const Shape &s, mlir::Type elem) {
    return mlir::RankedTensorType::get(s, elem);
  }
  mlir::Type i1() { return b.getI1Type(); }
  mlir::Type i64() { return b.getI64Type(); }
  static bool isFloat(mlir::Type t) { return t.isa<mlir::FloatType>(); }

  // --- emission ---
  /// Creates an op, verifies it, folds it when all operands are constant; returns result 0.
  template <typename OpT, typename... Args> mlir::Value emit(mlir::Location loc, Args &&...args) {
    auto op = b.create<OpT>(loc, std::forward<Args>(args)...);
    return finish(op.getOperation()).front();
  }
  /// Like emit, returning every result.
  template <typename OpT, typename... Args>
  std::vector<mlir::Value> emitAll(mlir::Location loc, Args &&...args) {
    auto op = b.create<OpT>(loc, std::forward<Args>(args)...);
    return finish(op.getOperation());
  }
  /// Verify, size-check and fold `op`; returns its (possibly folded) results.
  std::vector<mlir::Value> finish(mlir::Operation *op);

  /// Broadcasting binary op; compare ops (boolResult) give i1. Records an error when the
  /// shapes do not broadcast.
  template <typename OpT>
  mlir::Value binary(mlir::Location loc, mlir::Value a, mlir::Value c, bool boolResult = false) {
    auto s = broadcastShapes(shapeOf(a), shapeOf(c));
    if (!s) {
      record("operand shapes " + shapeToString(shapeOf(a)) + " and " + shapeToString(shapeOf(c)) +
             " do not broadcast");
      s = shapeOf(a);
    }
    return emit<OpT>(loc, type(*s, boolResult ? i1() : elemOf(a)), a, c);
  }
  /// Unary op of the same type.
  template <typename OpT> mlir::Value unary(mlir::Location loc, mlir::Value a) {
    return emit<OpT>(loc, a.getType(), a);
  }
  /// tg.reshape (no-op when the shape already matches).
  mlir::Value reshape(mlir::Location loc, mlir::Value v, const Shape &s);
  /// tg.cast (no-op when the element type already matches).
  mlir::Value cast(mlir::Location loc, mlir::Value v, mlir::Type elem);
  /// tg.expand (no-op when the shape already matches).
  mlir::Value expand(mlir::Location loc, mlir::Value v, const Shape &s);
  /// tg.transpose.
  mlir::Value transpose(mlir::Location loc, mlir::Value v, const std::vector<int64_t> &perm);

  // --- constants ---
  mlir::Value constant(mlir::Location loc, const HostTensor &t);
  /// A constant of `shape` filled with v (converted to elem).
  mlir::Value splat(mlir::Location loc, double v, mlir::Type elem, const Shape &shape = {});
  /// A 1-D i64 constant.
  mlir::Value constI64(mlir::Location loc, const std::vector<int64_t> &v);
  /// The tg.constant defining v, if any.
  static bool isConstant(mlir::Value v);
  /// Integer values of a constant (any integer/bool type; floats are truncated).
  static std::optional<std::vector<int64_t>> constInts(mlir::Value v);
  /// Values of a constant as doubles.
  static std::optional<std::vector<double>> constDoubles(mlir::Value v);
  /// Integer values of input `i`, which must be constant: errors "<label>: <what> input must be
  /// constant" otherwise.
  llvm::Expected<std::vector<int64_t>> requireInts(const NodeView &n, size_t i, const char *what);

  // --- errors ---
  /// Records the first error of the current node (reported after its importer returns).
  void record(const std::string &msg);
  /// The recorded error, if any (and clears it).
  llvm::Error takeError();

private:
  std::optional<std::string> recorded;
};

/// `v` (a result of data-dependent op node `n`) has `count` valid entries along `axis`: recorded
/// in c.extents, or, when `count` folded to a constant, `v` sliced to them (DynamicExtent.cpp).
mlir::Value markDynamic(ImportContext &c, const NodeView &n, mlir::Value v, int64_t axis,
                        mlir::Value count);
/// After node `n` produced `outs`: the extents its outputs inherit from its inputs, or an error
/// naming the node when it would mix or reduce along a data-dependent axis.
llvm::Error propagateExtents(ImportContext &c, const NodeView &n,
                             const std::vector<mlir::Value> &outs);
/// Appends to `results` (and `types`) the count of every output with a data-dependent extent;
/// returns the [output, axis] pairs for @main's tg.dynamic_outputs (empty: none).
std::vector<int64_t> appendOutputCounts(ImportContext &c, std::vector<mlir::Value> &results,
                                        std::vector<mlir::Type> &types);
/// Compress of `x` by a condition known only at run time (ImportDynamic.cpp); `axis` < 0: flat.
llvm::Expected<mlir::Value> compressDynamic(ImportContext &c, const NodeView &n, mlir::Value x,
                                            mlir::Value cond, int64_t axis);

/// Label of node `index` in messages: "Op 'name'", or "Op #index" when unnamed.
std::string nodeLabel(const onnx::NodeProto &n, size_t index);

/// Checks the graph's names (inputs of nodes and graph outputs defined, every name defined
/// once) and returns the nodes in a topological order; a cycle is an error naming its nodes.
/// A subgraph's check passes the names its enclosing scopes define as `outer`. Names a node's
/// own subgraphs read from this scope count as inputs of the node.
llvm::Expected<std::vector<size_t>> checkGraph(const onnx::GraphProto &g,
                                               const std::set<std::string> *outer = nullptr);

/// Adds the names the subgraphs of `node` read from the scope the node is in.
void subgraphReads(const onnx::NodeProto &node, std::set<std::string> &out);

/// Checks what lies around the main graph: subgraphs (If/Loop/Scan bodies, graph attributes)
/// nested at most kMaxSubgraphDepth deep, and model-local functions that do not call themselves
/// (directly or through each other).
llvm::Error checkModelStructure(const onnx::ModelProto &model);

/// Normalizes axis against rank or returns an error naming the node.
llvm::Expected<int64_t> checkAxis(const NodeView &n, int64_t axis, int64_t rank);

} // namespace tgc::onnx_import

/// Propagates an llvm::Expected: `TGC_ASSIGN(x, expr)` declares x or returns the error.
#define TGC_ASSIGN(var, expr)                                                                      \
  auto var##OrErr = (expr);                                                                        \
  if (!var##OrErr)                                                                                 \
    return var##OrErr.takeError();                                                                 \
  auto var = std::move(*var##OrErr)

#endif // TGC_FRONTENDS_ONNX_IMPORTCONTEXT_H
