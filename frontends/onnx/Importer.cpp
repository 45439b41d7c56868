// Importer.cpp — the ONNX import driver: model → validated graph → `func.func @main` in `tg`.
//
// Order of work: parse and validate the whole model first (names, cycles, opset, every
// unsupported op listed at once), then emit initializers as constants, bind inputs (static shapes
// from the model or ImportOptions::inputShapes), import nodes in topological order through the
// op table, and finally drop dead ops (folded shape arithmetic) and verify the module.
#include "frontends/onnx/Importer.h"
#include "frontends/onnx/TensorIO.h"

#include "frontends/onnx/ImportContext.h"
#include "compiler/dialect/DynamicOutputs.h"
#include "frontends/onnx/ModelLoader.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

#include <set>
#include <unordered_map>

namespace tgc {

using namespace mlir;
using namespace onnx_import;

namespace {

llvm::Error err(const std::string &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

const OpTable &opTable() {
  static const OpTable table = [] {
    OpTable t;
    registerElementwiseOps(t);
    registerBitwiseOps(t);
    registerShapeOps(t);
    registerNNOps(t);
    registerResizeOps(t);
    registerQuantizeOps(t);
    registerQLinearOps(t);
    registerOneHotOps(t);
    registerReorderOps(t);
    registerGatherNDOps(t);
    registerEinsumOps(t);
    registerIndexOps(t);
    registerLossOps(t);
    registerSignalOps(t);
    registerConvTransposeOps(t);
    registerSamplingOps(t);
    registerRecurrentOps(t);
    registerControlFlowOps(t);
    registerDynamicOps(t);
    registerMiscOps(t);
    return t;
  }();
  return table;
}

/// What the support table says beside an op: the parts of it the importer refuses (by name,
/// with the node named, when a model uses them).
const std::map<std::string, std::string> &opNotes() {
  static const std::map<std::string, std::string> notes = {
      {"AveragePool", "all attributes"},
      {"BlackmanWindow", "size constant (a constant result); output_datatype, periodic"},
      {"DFT", "opset 17/20; axis and dft_length constant; a MatMul with a constant cos/sin matrix "
              "(O(n^2): no FFT); onesided, inverse, real or complex input"},
      {"GRU", "unrolled over the sequence (up to 4096 steps); every direction, layout, activation, "
              "clip, sequence_lens (a graph input too), linear_before_reset"},
      {"HammingWindow", "size constant (a constant result); output_datatype, periodic"},
      {"HannWindow", "size constant (a constant result); output_datatype, periodic"},
      {"If", "a known condition (folded, or bound with --bind-input) inlines the chosen branch; "
             "a run-time one runs both and selects when they are small, else only the chosen "
             "one on the device (as a loop body; outputs must agree in shape)"},
      {"LSTM", "unrolled over the sequence (up to 4096 steps); every direction, layout, activation, "
               "clip, sequence_lens (a graph input too), peepholes, input_forget"},
      {"Loop", "a known trip count unrolls (up to 4096 iterations; a run-time condition "
               "predicates them); a trip count known only at run time, a while loop or more "
               "iterations run on the device (the body's own package per iteration; on CUDA a "
               "conditional WHILE node in the graph; no scan outputs then)"},
      {"MelWeightMatrix", "every input constant (a constant result)"},
      {"NegativeLogLikelihoodLoss", "opset 12+; weight, ignore_index, every reduction; a target "
                                    "out of range is clamped (by GatherElements)"},
      {"RNN", "unrolled over the sequence (up to 4096 steps); every direction, layout, activation, "
              "clip, sequence_lens (a graph input too)"},
      {"STFT", "frame_step and frame_length constant; window length = frame_length; framed by "
               "Gather, then a MatMul with a constant cos/sin matrix (O(n^2): no FFT)"},
      {"Scan", "unrolled over the scan axis (up to 4096 steps), both directions; opset 8: per "
               "batch element, sequence_lens constant and equal to the length"},
      {"SoftmaxCrossEntropyLoss", "opset 12+; weight, ignore_index, every reduction, log_prob "
                                  "output; by LogSoftmax and GatherElements"},
      {"BatchNormalization", "training_mode=1 (opset 14+): batch statistics, running mean/var "
                             "outputs; before opset 14 inference only"},
      {"BitShift", "unsigned integers; a shift by the bit width or more gives 0"},
      {"BitwiseAnd", "integer types (not bool)"},
      {"BitwiseNot", "integer types (not bool)"},
      {"BitwiseOr", "integer types (not bool)"},
      {"BitwiseXor", "integer types (not bool)"},
      {"Cast", "no strings; to float8 rounds to nearest even (saturate 0/1), to int4/uint4 clips "
               "then rounds half to even, as ONNX's reference"},
      {"CastLike", "as Cast"},
      {"DequantizeLinear", "int4, uint4, int8, uint8, int16, uint16, int32, float8 (zero point "
                           "taken as 0); per tensor, per axis, blocked"},
      {"Dropout", "training_mode=true only with ratio 0 (identity; a random mask is refused)"},
      {"DynamicQuantizeLinear", "float32 input"},
      {"AffineGrid", "opset 20, 2-D and 3-D; size must be constant (by MatMul with a constant "
                     "grid)"},
      {"Col2Im", "1-D to 3-D; image_shape and block_shape constant (by a grouped ConvTranspose "
                 "with a one-hot kernel)"},
      {"ConvTranspose", "1-D to 3-D, every attribute (by zero insertion, Pad and Conv: stride^d "
                        "times the MACs of a native kernel)"},
      {"CumSum", "axis constant (a graph input may be bound); exclusive, reverse"},
      {"Scatter", "opset 9-10, as ScatterElements"},
      {"ScatterElements", "every reduction; an index out of range writes nothing (constant ones "
                          "are refused)"},
      {"ScatterND", "every reduction (by ScatterElements on the data seen as [rows, slice]); an "
                    "index out of range writes nothing (constant ones are refused)"},
      {"Compress", "a condition known at compile time gives a static shape; else a data-dependent "
                   "extent (docs/design.md)"},
      {"NonMaxSuppression", "max_output_boxes_per_class, iou_threshold, score_threshold constant "
                            "(a graph input may be bound); a data-dependent number of rows "
                            "(one-thread kernel)"},
      {"NonZero", "rank >= 1; a data-dependent number of columns (one-thread kernel)"},
      {"Unique", "with or without axis, sorted or not; a data-dependent length (one-thread "
                 "kernel, O(n^2) compares)"},
      {"TopK", "k constant (a graph input may be bound); ties by lower index, NaN largest; "
               "sorted=0 still sorts"},
      {"Einsum", "opset 12+, float inputs; '...', diagonals and sums (by Transpose, Gather, "
                 "ReduceSum, MatMul)"},
      {"GridSample", "4-D (opset 16), 3-D to 5-D (opset 20+); linear, nearest, cubic; zeros, "
                     "border, reflection (by GatherElements over the taps)"},
      {"GatherND", "opset 11+, batch_dims; an index out of range is clamped per axis (by Gather)"},
      {"LayerNormalization", "Mean and InvStdDev outputs in float32 (stash_type 1)"},
      {"GlobalLpPool", "p >= 1 (by Abs, Pow, ReduceSum)"},
      {"MaxRoiPool", "as ONNX Runtime computes it (rounded corners, floor/ceil bins, 0 for an "
                     "empty bin); rois may be a graph input (masked max over rows and columns, "
                     "up to 2^28 elements)"},
      {"LpPool", "p >= 1, the pads counted as zeros"},
      {"MaxPool", "all attributes; the Indices output (storage_order 0/1) by ArgMax over the "
                  "gathered windows"},
      {"DeformConv", "2-D; offset_group, group, mask, bias (bilinear taps by GatherElements, "
                     "then MatMul)"},
      {"ConvInteger", "int8/uint8; x_zero_point per tensor, w_zero_point per tensor or per output "
                      "channel (an exact int32 conv)"},
      {"MatMulInteger", "int8/uint8; zero points per tensor, per row of A, per column of B (an "
                        "exact int32 GEMM)"},
      {"QLinearConv", "int8/uint8; x, y per tensor, w per tensor or per output channel (exact int32 "
                      "conv, requantized in float)"},
      {"QLinearMatMul", "int8/uint8; a, y per tensor or per row, b per tensor or per column "
                        "(exact int32 GEMM, requantized in float; float16 scales)"},
      {"Det", "matrices up to 16x16 (an unrolled LU with partial pivoting)"},
      {"MaxUnpool", "indices into the unpooled shape (N, C included); a larger output_shape pads "
                    "the end (by ScatterElements)"},
      {"Pad", "constant, reflect, edge, wrap"},
      {"QuantizeLinear", "to int4, uint4, int8, uint8, int16, uint16, float8 (saturate; zero "
                         "point taken as 0); per tensor, per axis, blocked"},
      {"RoiAlign", "sampling_ratio 1 to 64 (0, adaptive, refused); avg, max; half_pixel, "
                   "output_half_pixel (by Gather of the bilinear taps)"},
      {"Resize", "opset 11+; nearest, linear, cubic, every coordinate mode; antialias (linear, "
                 "cubic)"},
      {"Upsample", "opset 7-9; nearest, linear; scales constant (as Resize, asymmetric, floor)"},
  };
  return notes;
}

bool isDefaultDomain(const std::string &d) { return d.empty() || d == "ai.onnx"; }

/// The static type of a graph input: model dims, completed by options.inputShapes.
llvm::Expected<RankedTensorType> inputType(MLIRContext &ctx, const onnx::ValueInfoProto &in,
                                           const ImportOptions &opts) {
  const std::string what = "graph input '" + in.name() + "'";
  if (!in.has_type() || !in.type().has_tensor_type())
    return err(what + " is not a tensor");
  const auto &tt = in.type().tensor_type();
  auto dtype = dtypeFromOnnx(tt.elem_type(), what);
  if (!dtype)
    return dtype.takeError();
  auto given = opts.inputShapes.find(in.name());
  Shape shape;
  if (!tt.has_shape()) {
    if (given == opts.inputShapes.end())
      return err(what + " has no shape in the model; give one with --input-shape " + in.name() +
                 "=DxD...");
    shape = given->second;
  } else {
    std::vector<std::string> symbolic;
    for (const auto &d : tt.shape().dim()) {
      if (d.has_dim_value() && d.dim_value() >= 0) {
        shape.push_back(d.dim_value());
      } else {
        shape.push_back(-1);
        symbolic.push_back(d.has_dim_param() ? d.dim_param() : "?");
      }
    }
    if (given != opts.inputShapes.end()) {
      if (given->second.size() != shape.size())
        return err(what + " has rank " + std::to_string(shape.size()) + " but the given shape " +
                   shapeToString(given->second) + " has rank " +
                   std::to_string(given->second.size()));
      for (size_t i = 0; i < shape.size(); ++i)
        if (shape[i] >= 0 && given->second[i] != shape[i])
          return err(what + ": given shape " + shapeToString(given->second) +
                     " differs from the model's static dim " + std::to_string(i) + " = " +
                     std::to_string(shape[i]));
      shape = given->second;
    } else if (!symbolic.empty()) {
      std::string dims;
      for (auto &s : symbolic)
        dims += (dims.empty() ? "" : ", ") + s;
      return err(what + " has symbolic dims (" + dims + "); give its shape with --input-shape " +
                 in.name() + "=DxD...");
    }
  }
  if (shape.size() > kMaxRank)
    return err(what + ": rank " + std::to_string(shape.size()) + " exceeds the limit of " +
               std::to_string(kMaxRank));
  for (int64_t d : shape)
    if (d < 0)
      return err(what + ": negative dim in shape " + shapeToString(shape));
  if (!numElements(shape))
    return err(what + ": shape " + shapeToString(shape) + " overflows");
  return RankedTensorType::get(shape, mlirElementType(*dtype, &ctx));
}

/// Imports the nodes of a graph, in the order checkGraph gave, where the builder stands: the
/// main graph, or (through `subgraph`) an If branch or a Loop/Scan body inlined into it.
struct NodeImporter {
  ImportContext &ic;
  const OpTable &table;
  int64_t opset;
  std::string baseDir;
  /// Every name visible in the graph being imported (enclosing scopes included).
  std::unordered_map<std::string, Value> *scope;

  llvm::Error run(const onnx::GraphProto &g, const std::vector<size_t> &order) {
    OpBuilder &b = ic.b;
    std::unordered_map<std::string, Value> &values = *scope;
    // Which outputs are consumed (by nodes, the subgraphs in them, or the graph's outputs).
    std::set<std::string> consumed;
    for (const auto &n : g.node()) {
      for (const auto &in : n.input())
        consumed.insert(in);
      subgraphReads(n, consumed);
    }
    for (const auto &o : g.output())
      consumed.insert(o.name());
    for (size_t idx : order) {
      const auto &node = g.node((int)idx);
      std::string label = nodeLabel(node, idx);
      Location loc = NameLoc::get(b.getStringAttr(node.name().empty() ? label : node.name()));
      NodeView nv{node, label, loc, {}, {}, opset};
      for (const auto &in : node.input()) {
        if (in.empty()) {
          nv.inputs.push_back(Value());
          continue;
        }
        auto it = values.find(in);
        if (it == values.end())
          return err(label + ": input '" + in + "' is an output its producer does not provide");
        nv.inputs.push_back(it->second);
      }
      for (const auto &out : node.output())
        nv.outputUsed.push_back(!out.empty() && consumed.count(out));
      ic.currentLabel = label;
      // The main graph's ops were checked up front (all listed at once); a subgraph's here.
      auto handler = table.find(node.op_type());
      if (!isDefaultDomain(node.domain()) || handler == table.end())
        return err(label + ": unsupported ONNX op " +
                   (isDefaultDomain(node.domain()) ? "" : node.domain() + ".") + node.op_type() +
                   " (opset " + std::to_string(opset) + ")");
      // float8 values are only converted (tg.cast) or passed on: any other op on one is refused.
      static const std::set<std::string> kFloat8Ops = {"Cast", "CastLike", "Identity",
                                                       "QuantizeLinear", "DequantizeLinear"};
      if (!kFloat8Ops.count(node.op_type()))
        for (Value v : nv.inputs)
          if (v && tg::isFloat8(ic.elemOf(v)))
            return err(label + ": " + node.op_type() +
                       " of a float8 tensor is not supported (float8 is supported by Cast, "
                       "CastLike, QuantizeLinear, DequantizeLinear, Identity)");
      auto outs = handler->second(ic, nv);
      if (!outs)
        return outs.takeError();
      if (auto e = ic.takeError())
        return std::move(e);
      if (auto e = propagateExtents(ic, nv, *outs)) // data-dependent extents
        return std::move(e);
      for (int i = 0; i < node.output_size(); ++i) {
        const std::string &name = node.output(i);
        if (name.empty())
          continue;
        if ((size_t)i < outs->size())
          values[name] = (*outs)[i];
        else if (nv.used(i))
          return err(label + ": output " + std::to_string(i) + " ('" + name + "') is not supported");
      }
    }
    return llvm::Error::success();
  }

  llvm::Expected<std::vector<Value>> subgraph(const onnx::GraphProto &sg,
                                              const std::vector<Value> &args) {
    const std::string what = "subgraph '" + sg.name() + "'";
    if ((size_t)sg.input_size() != args.size())
      return err(what + " has " + std::to_string(sg.input_size()) + " inputs; its node gives " +
                 std::to_string(args.size()));
    std::set<std::string> outerNames;
    for (const auto &kv : *scope)
      outerNames.insert(kv.first);
    auto order = checkGraph(sg, &outerNames);
    if (!order)
      return err(what + ": " + llvm::toString(order.takeError()));
    if (sg.sparse_initializer_size() > 0)
      return err(what + ": sparse initializers are not supported");
    std::unordered_map<std::string, Value> inner = *scope;
    for (int i = 0; i < sg.input_size(); ++i)
      inner[sg.input(i).name()] = args[i];
    for (const auto &t : sg.initializer()) {
      auto h = tensorFromProto(t, baseDir);
      if (!h)
        return h.takeError();
      inner[t.name()] = ic.constant(NameLoc::get(ic.b.getStringAttr(t.name())), *h);
    }
    auto *outerScope = scope;
    const std::string outerLabel = ic.currentLabel;
    scope = &inner;
    llvm::Error e = run(sg, *order);
    scope = outerScope;
    ic.currentLabel = outerLabel;
    if (e)
      return std::move(e);
    std::vector<Value> outs;
    for (const auto &o : sg.output()) {
      auto it = inner.find(o.name());
      if (it == inner.end())
        return err(what + ": output '" + o.name() + "' is not produced");
      outs.push_back(it->second);
    }
    return outs;
  }
};

llvm::Expected<OwningOpRef<ModuleOp>> importModel(MLIRContext &ctx, const onnx::ModelProto &model,
                                                  const std::string &baseDir,
                                                  const ImportOptions &opts) {
  ctx.loadDialect<tg::TGDialect, func::FuncDialect>();
  const onnx::GraphProto &g = model.graph();

  int64_t opset = -1;
  for (const auto &o : model.opset_import())
    if (isDefaultDomain(o.domain()))
      opset = o.version();
  if (opset < 0) {
    std::string domains;
    for (const auto &o : model.opset_import())
      domains += (domains.empty() ? "" : ", ") + o.domain();
    return err("the model imports no version of the default ONNX opset" +
               (domains.empty() ? std::string() : " (only " + domains + ")") +
               "; tgc compiles default-domain ops (ai.onnx)");
  }
  // Ops change meaning between opsets: refuse versions outside what the op table was written
  // against (7 .. ONNX 1.17's opset 22) rather than import them with the wrong semantics.
  constexpr int64_t kMinOpset = kMinOnnxOpset, kMaxOpset = kMaxOnnxOpset;
  // Below opset 7, a model whose every op kept its opset-7 definition imports as opset 7
  // (OldOpsets.cpp); the refusal names the ops that changed.
  if (opset >= 1 && opset < kMinOpset) {
    const std::string blockers = oldOpsetBlockers(model.graph(), opset);
    if (!blockers.empty())
      return err("opset " + std::to_string(opset) + " is too old (tgc supports opsets " +
                 std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset) +
                 "; below 7 only ops defined as at opset 7, and these are not: " + blockers +
                 ")");
    opset = kMinOpset;
  }
  if (opset < kMinOpset || opset > kMaxOpset)
    return err("opset " + std::to_string(opset) + " is " + (opset < kMinOpset ? "too old" : "newer than tgc knows") +
               " (tgc supports opsets " + std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset) + ")");

  if (auto e = checkModelStructure(model))
    return std::move(e);
  auto order = checkGraph(g);
  if (!order)
    return order.takeError();

  // Every unsupported op, listed at once.
  const OpTable &table = opTable();
  std::vector<std::string> unsupported;
  for (int i = 0; i < g.node_size(); ++i) {
    const auto &n = g.node(i);
    std::string nodeName = n.name().empty() ? "#" + std::to_string(i) : "'" + n.name() + "'";
    if (!isDefaultDomain(n.domain()))
      unsupported.push_back(n.domain() + "." + n.op_type() + " (node " + nodeName + ")");
    else if (!table.count(n.op_type()))
      unsupported.push_back(n.op_type() + " (node " + nodeName + ")");
  }
  if (!unsupported.empty()) {
    std::string msg = "unsupported ONNX ops (opset " + std::to_string(opset) + "):";
    for (auto &u : unsupported)
      msg += "\n  " + u;
    return err(msg);
  }
  if (g.sparse_initializer_size() > 0)
    return err("sparse initializer '" + g.sparse_initializer(0).values().name() +
               "' is not supported");

  // Inputs that are not initializers become arguments.
  std::set<std::string> initNames;
  for (const auto &t : g.initializer())
    initNames.insert(t.name());
  std::set<std::string> inputNames;
  std::vector<Type> argTypes;
  std::vector<std::string> argNames;
  for (const auto &in : g.input()) {
    inputNames.insert(in.name());
    if (initNames.count(in.name()) || opts.boundInputs.count(in.name()))
      continue;
    auto t = inputType(ctx, in, opts);
    if (!t)
      return t.takeError();
    argTypes.push_back(*t);
    argNames.push_back(in.name());
  }
  for (const auto &kv : opts.inputShapes)
    if (!inputNames.count(kv.first) || initNames.count(kv.first))
      return err("--input-shape names '" + kv.first + "', which is not a graph input");
  for (const auto &kv : opts.boundInputs)
    if (!inputNames.count(kv.first) || initNames.count(kv.first))
      return err("--bind-input names '" + kv.first + "', which is not a graph input");

  OpBuilder b(&ctx);
  Location unknown = UnknownLoc::get(&ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(unknown);
  auto fn = func::FuncOp::create(unknown, "main", b.getFunctionType(argTypes, {}));
  module->push_back(fn);
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);

  ImportContext ic(ctx, b);
  ScopedDiagnosticHandler diagHandler(&ctx, [&](Diagnostic &d) {
    ic.diagnostics += (ic.diagnostics.empty() ? "" : "; ") + d.str();
    return success();
  });

  std::unordered_map<std::string, Value> values;
  if (!opts.symbolNames.empty()) {
    std::vector<mlir::Attribute> names;
    for (const std::string &n : opts.symbolNames)
      names.push_back(b.getStringAttr(n));
    fn->setAttr("tg.symbol_names", b.getArrayAttr(names));
  }
  for (size_t i = 0; i < argNames.size(); ++i) {
    values[argNames[i]] = entry->getArgument(i);
    fn.setArgAttr(i, "tg.name", b.getStringAttr(argNames[i]));
    if (auto it = opts.dimSymbols.find(argNames[i]); it != opts.dimSymbols.end())
      fn.setArgAttr(i, "tg.dim_symbols", b.getI64ArrayAttr(it->second));
    if (auto it = opts.states.find(argNames[i]); it != opts.states.end())
      fn.setArgAttr(i, "tg.state", b.getI64IntegerAttr(it->second));
  }
  for (const auto &t : g.initializer()) {
    auto h = tensorFromProto(t, baseDir);
    if (!h)
      return h.takeError();
    values[t.name()] = ic.constant(NameLoc::get(b.getStringAttr(t.name())), *h);
  }
  for (const auto &in : g.input()) {
    auto bound = opts.boundInputs.find(in.name());
    if (bound == opts.boundInputs.end())
      continue;
    auto h = readTensorProtoFile(bound->second);
    if (!h)
      return err("--bind-input " + in.name() + ": " + llvm::toString(h.takeError()));
    // The value must fit the input's declared type (dims the model leaves open take its dims).
    bool fits = in.has_type() && in.type().has_tensor_type();
    if (fits) {
      const auto &tt = in.type().tensor_type();
      auto dtype = dtypeFromOnnx(tt.elem_type(), "graph input '" + in.name() + "'");
      if (!dtype)
        return dtype.takeError();
      fits = *dtype == h->dtype;
      if (fits && tt.has_shape()) {
        fits = tt.shape().dim_size() == (int)h->shape.size();
        for (int d = 0; fits && d < tt.shape().dim_size(); ++d)
          fits = !tt.shape().dim(d).has_dim_value() || tt.shape().dim(d).dim_value() == h->shape[d];
      }
    }
    if (!fits)
      return err("--bind-input " + in.name() + ": the value's dtype or shape does not match the " +
                 "graph input's");
    values[in.name()] = ic.constant(NameLoc::get(b.getStringAttr(in.name())), *h);
  }

  NodeImporter importer{ic, table, opset, baseDir, &values};
  ic.importSubgraph = [&](const onnx::GraphProto &sg, const std::vector<Value> &args) {
    return importer.subgraph(sg, args);
  };
  if (auto e = importer.run(g, *order))
    return std::move(e);

  std::vector<Value> results;
  std::vector<Type> resultTypes;
  for (const auto &o : g.output()) {
    auto it = values.find(o.name());
    if (it == values.end())
      return err("graph output '" + o.name() + "' is not produced");
    results.push_back(it->second);
    resultTypes.push_back(it->second.getType());
  }
  // Outputs with a data-dependent extent: their counts as extra results (DynamicExtent.cpp).
  const std::vector<int64_t> dynamicOutputs = appendOutputCounts(ic, results, resultTypes);
  b.setInsertionPointToEnd(entry);
  b.create<func::ReturnOp>(unknown, results);
  fn.setType(b.getFunctionType(argTypes, resultTypes));
  for (int i = 0; i < g.output_size(); ++i) {
    fn.setResultAttr(i, "tg.name", b.getStringAttr(g.output(i).name()));
    if (auto it = opts.states.find(g.output(i).name()); it != opts.states.end())
      fn.setResultAttr(i, "tg.state", b.getI64IntegerAttr(it->second));
  }
  if (!opts.decodeMode.empty()) {
    fn->setAttr("tg.decode", b.getStringAttr(opts.decodeMode));
    fn->setAttr("tg.max_seq", b.getI64IntegerAttr(opts.maxSeq));
  }
  if (!dynamicOutputs.empty())
    fn->setAttr(kDynamicOutputsAttr, b.getI64ArrayAttr(dynamicOutputs));

  // Drop ops left dead by folding and aliasing (users precede producers in reverse order).
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*entry)))
    if (!op.hasTrait<OpTrait::IsTerminator>() && op.use_empty())
      op.erase();

  ic.diagnostics.clear();
  if (failed(mlir::verify(*module)))
    return err("internal error: the imported module does not verify: " + ic.diagnostics);
  return module;
}

} // namespace

llvm::Expected<OwningOpRef<ModuleOp>> importOnnxBytes(MLIRContext &ctx, const std::string &bytes,
                                                      const std::string &baseDir,
                                                      const ImportOptions &options) {
  auto model = parseModel(bytes);
  if (!model)
    return model.takeError();
  return importModel(ctx, *model, baseDir, options);
}

llvm::Expected<OwningOpRef<ModuleOp>> importOnnxFile(MLIRContext &ctx, const std::string &path,
                                                     const ImportOptions &options) {
  auto bytes = readFileBytes(path);
  if (!bytes)
    return bytes.takeError();
  auto module = importOnnxBytes(ctx, *bytes, dirOf(path), options);
  if (!module)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: %s", path.c_str(),
                                   llvm::toString(module.takeError()).c_str());
  return module;
}

llvm::Expected<std::vector<GraphInputDims>> graphInputDims(const std::string &path) {
  auto bytes = readFileBytes(path);
  if (!bytes)
    return bytes.takeError();
  auto model = parseModel(*bytes);
  if (!model)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: %s", path.c_str(),
                                   llvm::toString(model.takeError()).c_str());
  std::set<std::string> inits;
  for (const auto &t : model->graph().initializer())
    inits.insert(t.name());
  std::vector<GraphInputDims> out;
  for (const auto &in : model->graph().input()) {
    if (inits.count(in.name()))
      continue;
    GraphInputDims d;
    d.name = in.name();
    if (in.has_type() && in.type().has_tensor_type() && in.type().tensor_type().has_shape()) {
      d.hasShape = true;
      for (const auto &dim : in.type().tensor_type().shape().dim()) {
        const bool known = dim.has_dim_value() && dim.dim_value() >= 0;
        d.dims.push_back(known ? dim.dim_value() : -1);
        d.params.push_back(!known && dim.has_dim_param() ? dim.dim_param() : "");
      }
    }
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<SupportedOp> supportedOps() {
  std::vector<SupportedOp> out;
  for (const auto &kv : opTable()) {
    auto note = opNotes().find(kv.first);
    out.push_back({kv.first, note == opNotes().end() ? "" : note->second});
  }
  return out;
}

} // namespace tgc
