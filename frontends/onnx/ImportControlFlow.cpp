// ImportControlFlow.cpp — ONNX If, Loop and Scan, resolved at compile time.
//
// A static-shape compile usually knows what control flow decides: exporters emit If on shape
// checks and Loop/Scan over a known count. So:
//   If:   a constant condition (after folding, or bound with --bind-input) imports the chosen
//         branch inline (ImportContext::importSubgraph) and drops the other; a condition known
//         only at run time with small branches imports both and selects each output with
//         tg.where (if-conversion: both run, they fuse); large branches run on the device, only
//         the chosen one (ImportDeviceLoop.cpp). The outputs must agree in both cases.
//   Loop: a known trip count: the body is unrolled, carrying the loop-carried values,
//         and the scan outputs are stacked on a new leading axis. A condition (initial, or the
//         body's) known only at run time is predicated: every iteration runs, and the condition
//         so far selects whether it updates the carried values (no scan outputs then: their
//         length would be decided at run time).
//   Scan: (opset 9+) the body is unrolled once per element along each scan input's axis (either
//         direction); state carried, scan outputs stacked on their axis (either direction).
//         Opset 8 (batch axis 0, scan axis 1): the same per batch element, then stacked; its
//         sequence_lens must be constant and equal to the length.
// A loop that cannot be unrolled — a trip count known only at run time, a condition decided at
// run time with no trip count, or more than kMaxIterations iterations — runs on the device
// (ImportDeviceLoop.cpp: tg.loop over a body function; docs/decisions.md).
#include "frontends/onnx/ImportContext.h"

#include "compiler/dialect/TgDialect.h"

using namespace mlir;

namespace tgc::onnx_import {

/// ImportDeviceLoop.cpp: a Loop, and an If's branches, run on the device (tg.loop).
llvm::Expected<std::vector<Value>> importDeviceLoop(ImportContext &c, const NodeView &n,
                                                    const onnx::GraphProto &body, Value trip,
                                                    Value cond,
                                                    const std::vector<Value> &initial);
llvm::Expected<std::vector<Value>> importDeviceIf(ImportContext &c, const NodeView &n,
                                                  const onnx::GraphProto &thenG,
                                                  const onnx::GraphProto &elseG, Value cond);

namespace {

using Result = llvm::Expected<std::vector<Value>>;
using Values = std::vector<Value>;

constexpr int64_t kMaxIterations = 4096;
/// Nested Ifs with run-time conditions import both branches at each level.
constexpr int kMaxRunTimeIfNesting = 8;

const onnx::GraphProto *graphAttr(const NodeView &n, const char *name) {
  const auto *a = n.attr(name);
  return a && a->has_g() ? &a->g() : nullptr;
}

/// A constant one-element value as an integer, or an error naming what must be constant.
llvm::Expected<int64_t> constScalar(ImportContext &c, const NodeView &n, Value v,
                                    const std::string &what) {
  auto ints = c.constInts(v);
  if (!ints)
    return c.error(n, what + " must be known at compile time" + c.bindHint(v));
  if (ints->size() != 1)
    return c.error(n, what + " must have one element, not " + std::to_string(ints->size()));
  return ints->front();
}

/// `v` with a size-1 axis inserted at `axis`.
Value unsqueeze(ImportContext &c, Location loc, Value v, int64_t axis) {
  Shape s = c.shapeOf(v);
  s.insert(s.begin() + axis, 1);
  return c.reshape(loc, v, s);
}

/// The values stacked along a new axis (each gets a size-1 axis there, then one concat).
llvm::Expected<Value> stack(ImportContext &c, const NodeView &n, const std::vector<Value> &vs,
                            int64_t axis, const std::string &what) {
  std::vector<Value> parts;
  for (Value v : vs) {
    if (c.shapeOf(v) != c.shapeOf(vs[0]) || c.elemOf(v) != c.elemOf(vs[0]))
      return c.error(n, what + " changes shape or type between iterations (" +
                            shapeToString(c.shapeOf(vs[0])) + " then " +
                            shapeToString(c.shapeOf(v)) + ")");
    parts.push_back(unsqueeze(c, n.loc, v, axis));
  }
  if (parts.size() == 1)
    return parts[0];
  Shape s = c.shapeOf(parts[0]);
  s[axis] = (int64_t)parts.size();
  return c.emit<tg::ConcatOp>(n.loc, c.type(s, c.elemOf(parts[0])), ValueRange(parts),
                              (uint64_t)axis);
}

/// One If branch, imported inline: its outputs (as many as the node has).
Result importBranch(ImportContext &c, const NodeView &n, const char *name) {
  const onnx::GraphProto *branch = graphAttr(n, name);
  if (!branch)
    return c.error(n, std::string("has no ") + name + " graph");
  if (branch->input_size() != 0)
    return c.error(n, std::string(name) + " must take no inputs");
  TGC_ASSIGN(outs, c.importSubgraph(*branch, {}));
  if (outs.size() != (size_t)n.proto.output_size())
    return c.error(n, std::string(name) + " has " + std::to_string(outs.size()) +
                          " outputs; the node has " + std::to_string(n.proto.output_size()));
  return outs;
}

/// Nodes (counting those of nested subgraphs) above which a run-time If's branches run on the
/// device instead of both running (if-conversion).
constexpr int kMaxIfConvertedNodes = 16;

/// Whether a branch is worth running alone: it holds a contraction, a convolution, a recurrent op
/// or control flow, or more than kMaxIfConvertedNodes nodes.
bool isLargeBranch(const onnx::GraphProto &g, int *count = nullptr) {
  int local = 0;
  int &nodes = count ? *count : local;
  static const char *const heavy[] = {"MatMul", "Gemm", "Conv", "ConvTranspose", "LSTM", "GRU",
                                      "RNN", "Loop", "Scan", "If", "Attention", "Einsum",
                                      "MatMulInteger", "QLinearMatMul", "QLinearConv",
                                      "ConvInteger"};
  for (const onnx::NodeProto &node : g.node()) {
    if (++nodes > kMaxIfConvertedNodes)
      return true;
    for (const char *h : heavy)
      if (node.op_type() == h)
        return true;
    for (const onnx::AttributeProto &a : node.attribute())
      if (a.has_g() && isLargeBranch(a.g(), &nodes))
        return true;
  }
  return false;
}

Result importIf(ImportContext &c, const NodeView &n) {
  TGC_ASSIGN(cond, c.need(n, 0));
  if (c.constInts(cond)) {
    TGC_ASSIGN(taken, constScalar(c, n, cond, "the condition"));
    return importBranch(c, n, taken ? "then_branch" : "else_branch");
  }
  // A condition known only at run time: both branches run and a select picks each output
  // (if-conversion; one CUDA graph, no host round trip). Branch outputs must then agree in
  // shape and type, which a static-shape plan needs anyway.
  if (numElements(c.shapeOf(cond)).value_or(0) != 1 || !c.elemOf(cond).isInteger(1))
    return c.error(n, "the condition must be one bool, got " + shapeToString(c.shapeOf(cond)));
  // Large branches (a contraction, a convolution, a recurrent op or control flow, or more than
  // kMaxIfConvertedNodes nodes) run on the device, only the chosen one (ImportDeviceLoop.cpp).
  const onnx::GraphProto *thenG = graphAttr(n, "then_branch"), *elseG = graphAttr(n, "else_branch");
  if (thenG && elseG && thenG->input_size() == 0 && elseG->input_size() == 0 &&
      (isLargeBranch(*thenG) || isLargeBranch(*elseG)))
    return importDeviceIf(c, n, *thenG, *elseG, cond);
  // Each level imports both branches: nested run-time Ifs double the work, so their nesting is
  // capped (a hostile model must not make the compile exponential).
  static thread_local int depth = 0;
  if (depth >= kMaxRunTimeIfNesting)
    return c.error(n, "Ifs whose conditions are known only at run time nest more than " +
                          std::to_string(kMaxRunTimeIfNesting) + " deep");
  struct Nest {
    Nest() { ++depth; }
    ~Nest() { --depth; }
  } nest;
  TGC_ASSIGN(thenOuts, importBranch(c, n, "then_branch"));
  TGC_ASSIGN(elseOuts, importBranch(c, n, "else_branch"));
  Value pick = c.reshape(n.loc, cond, {});
  Values result;
  for (size_t i = 0; i < thenOuts.size(); ++i) {
    Value a = thenOuts[i], b = elseOuts[i];
    if (a.getType() != b.getType())
      return c.error(n, "output " + std::to_string(i) + " differs between the branches (" +
                            shapeToString(c.shapeOf(a)) + " and " + shapeToString(c.shapeOf(b)) +
                            ", or the element type): with a condition known only at run time "
                            "both must agree" + c.bindHint(cond));
    result.push_back(c.emit<tg::WhereOp>(n.loc, a.getType(), pick, a, b));
  }
  return result;
}

Result importLoop(ImportContext &c, const NodeView &n) {
  const onnx::GraphProto *body = graphAttr(n, "body");
  if (!body)
    return c.error(n, "has no body graph");
  int64_t trips = -1; // none given
  const size_t carried = n.inputs.size() > 2 ? n.inputs.size() - 2 : 0;
  if (body->input_size() != (int)carried + 2 || body->output_size() < (int)carried + 1)
    return c.error(n, "the body takes " + std::to_string(body->input_size()) + " inputs and gives " +
                          std::to_string(body->output_size()) + " outputs; with " +
                          std::to_string(carried) +
                          " loop-carried values it must take 2 + that and give 1 + that + scan "
                          "outputs");
  std::vector<Value> state(n.inputs.begin() + 2, n.inputs.end());
  for (size_t i = 0; i < state.size(); ++i)
    if (!state[i])
      return c.error(n, "loop-carried input " + std::to_string(i) + " is absent");
  // A loop that cannot be unrolled runs on the device (ImportDeviceLoop.cpp): a trip count known
  // only at run time, more iterations than an unroll may take, or no trip count and a condition
  // known only at run time. A constant initial condition is dropped (true) or ends the loop.
  Value m = n.input(0), k0 = n.input(1);
  std::optional<int64_t> initialCond;
  if (k0 && c.constInts(k0)) {
    TGC_ASSIGN(v, constScalar(c, n, k0, "the initial condition"));
    initialCond = v != 0;
  }
  if (m && c.constInts(m)) {
    TGC_ASSIGN(v, constScalar(c, n, m, "the trip count M"));
    trips = std::max<int64_t>(v, 0);
  }
  const bool deviceLoop = (m && !c.constInts(m)) || trips > kMaxIterations ||
                          (!m && k0 && !initialCond);
  if (deviceLoop) {
    if (initialCond && !*initialCond) { // runs no iteration
      Values result = state;
      for (size_t j = carried; j + 1 < (size_t)body->output_size(); ++j) {
        if (n.used(j))
          return c.error(n, "scan output " + std::to_string(j - carried) +
                                " of a loop that runs no iteration");
        result.push_back(c.splat(n.loc, 0.0, c.i64(), {0}));
      }
      return result;
    }
    return importDeviceLoop(c, n, *body, m, initialCond ? Value() : k0, state);
  }
  // A condition known only at run time (initially, or from the body) with a known trip count
  // is predicated: every iteration runs, and `active` (the condition so far) selects whether it
  // updates the carried values.
  int64_t cond = 1;
  Value active, runTimeCond;
  auto predicate = [&](Value v, const std::string &what) -> llvm::Error {
    if (trips < 0)
      return c.error(n, what + " is known only at run time and the loop has no trip count" +
                            c.bindHint(v));
    if (numElements(c.shapeOf(v)).value_or(0) != 1 || !c.elemOf(v).isInteger(1))
      return c.error(n, what + " must be one bool");
    active = active ? c.binary<tg::AndOp>(n.loc, active, c.reshape(n.loc, v, {}))
                    : c.reshape(n.loc, v, {});
    runTimeCond = v;
    return llvm::Error::success();
  };
  if (Value k = n.input(1)) {
    if (c.constInts(k)) {
      TGC_ASSIGN(v, constScalar(c, n, k, "the initial condition"));
      cond = v != 0;
    } else if (auto e = predicate(k, "the initial condition")) {
      return std::move(e);
    }
  }
  if (trips < 0 && !n.input(1))
    return c.error(n, "has neither a trip count nor a condition (an infinite loop)");
  const size_t scans = (size_t)body->output_size() - 1 - carried;
  std::vector<std::vector<Value>> scanned(scans);
  const std::vector<Value> initialState = state;
  int64_t it = 0;
  for (; cond && (trips < 0 || it < trips); ++it) {
    if (it >= kMaxIterations) // too long to unroll (the unrolled iterations are left dead)
      return importDeviceLoop(c, n, *body, m, Value(), initialState);
    std::vector<Value> args{c.splat(n.loc, (double)it, c.i64()),
                            active ? active : c.splat(n.loc, 1.0, c.i1())};
    args.insert(args.end(), state.begin(), state.end());
    TGC_ASSIGN(outs, c.importSubgraph(*body, args));
    const std::string what = "the body's condition (iteration " + std::to_string(it) + ")";
    const Value wasActive = active;
    if (trips < 0 && !active && !c.constInts(outs[0])) // a while loop decided at run time
      return importDeviceLoop(c, n, *body, Value(), Value(), initialState);
    if (!active && c.constInts(outs[0])) {
      TGC_ASSIGN(next, constScalar(c, n, outs[0], what));
      cond = next != 0;
    } else if (auto e = predicate(outs[0], what)) {
      return std::move(e);
    }
    if (active && scans > 0)
      return c.error(n, "has scan outputs and a condition known only at run time: how many "
                        "iterations run (the scan outputs' length) is decided at run time" +
                            c.bindHint(runTimeCond));
    for (size_t i = 0; i < carried; ++i) {
      if (wasActive && outs[1 + i].getType() != state[i].getType())
        return c.error(n, "loop-carried value " + std::to_string(i) + " changes shape or type "
                          "under a condition known only at run time");
      state[i] = wasActive ? c.emit<tg::WhereOp>(n.loc, state[i].getType(), wasActive,
                                                 outs[1 + i], state[i])
                           : outs[1 + i];
    }
    for (size_t k = 0; k < scans; ++k)
      scanned[k].push_back(outs[1 + carried + k]);
  }
  Values result = state;
  for (size_t k = 0; k < scans; ++k) {
    if (scanned[k].empty()) {
      if (n.used(carried + k))
        return c.error(n, "scan output " + std::to_string(k) + " of a loop that runs no iteration");
      result.push_back(c.splat(n.loc, 0.0, c.i64(), {0}));
      continue;
    }
    TGC_ASSIGN(v, stack(c, n, scanned[k], 0, "scan output " + std::to_string(k)));
    result.push_back(v);
  }
  return result;
}

/// Scan at opset 8: input 0 is the optional sequence_lens, every state and scan input has a
/// leading batch axis and the scan runs along axis 1 (`directions` per scan input). Per batch
/// element the opset-9 unroll runs on that element's slices; the final states and the scan
/// outputs (stacked on axis 0 of the element, axis 1 of the result) are stacked over the batch.
/// sequence_lens must be constant and equal to the scan length (shorter sequences refused).
Result importScan8(ImportContext &c, const NodeView &n) {
  const onnx::GraphProto *body = graphAttr(n, "body");
  if (!body)
    return c.error(n, "has no body graph");
  const int64_t m = n.attrInt("num_scan_inputs", -1);
  const int64_t total = (int64_t)n.inputs.size() - 1;
  if (m < 1 || m > total)
    return c.error(n, "num_scan_inputs " + std::to_string(m) + " must lie in [1, " +
                          std::to_string(std::max<int64_t>(total, 0)) + "]");
  const int64_t stateN = total - m;
  const int64_t k = body->output_size() - stateN;
  if (body->input_size() != total || k < 0)
    return c.error(n, "the body takes " + std::to_string(body->input_size()) +
                          " inputs and gives " + std::to_string(body->output_size()) +
                          " outputs; the node has " + std::to_string(stateN) + " state and " +
                          std::to_string(m) + " scan inputs");
  auto dirs = n.attrInts("directions").value_or(std::vector<int64_t>{});
  dirs.resize((size_t)m, 0);
  for (int64_t d : dirs)
    if (d != 0 && d != 1)
      return c.error(n, "directions values must be 0 or 1");
  int64_t batch = -1, steps = -1;
  for (int64_t j = 0; j < total; ++j) {
    Value x = n.input(1 + j);
    if (!x)
      return c.error(n, "input " + std::to_string(1 + j) + " is absent");
    const Shape s = c.shapeOf(x);
    if (s.empty() || (j >= stateN && s.size() < 2))
      return c.error(n, "states need a batch axis and scan inputs [batch, sequence, ...]; got " +
                            shapeToString(s));
    if (batch >= 0 && s[0] != batch)
      return c.error(n, "inputs differ in batch size (" + std::to_string(batch) + " and " +
                            std::to_string(s[0]) + ")");
    batch = s[0];
    if (j >= stateN) {
      if (steps >= 0 && s[1] != steps)
        return c.error(n, "scan inputs differ in length (" + std::to_string(steps) + " and " +
                              std::to_string(s[1]) + ")");
      steps = s[1];
    }
  }
  if (steps < 1 || batch < 1 || steps * batch > kMaxIterations)
    return c.error(n, "scan length " + std::to_string(steps) + " times batch " +
                          std::to_string(batch) + " outside [1, " +
                          std::to_string(kMaxIterations) + "] (the body is unrolled)");
  if (Value lens = n.input(0)) {
    auto v = c.constInts(lens);
    if (!v)
      return c.error(n, "sequence_lens must be known at compile time" + c.bindHint(lens));
    for (int64_t l : *v)
      if (l != steps)
        return c.error(n, "sequence_lens " + std::to_string(l) +
                              " differs from the scan length " + std::to_string(steps) +
                              " (shorter sequences are not supported)");
  }
  // Element b of x along axis 0, or (axis 1 too) element (b, t), without those axes.
  auto take = [&](Value x, int64_t b, int64_t t) {
    Shape in = c.shapeOf(x), out = in;
    std::vector<int64_t> st(in.size(), 0), sp(in.size(), 1);
    st[0] = b;
    out[0] = 1;
    if (t >= 0) {
      st[1] = t;
      out[1] = 1;
    }
    Value sl = c.emit<tg::SliceOp>(n.loc, c.type(out, c.elemOf(x)), x, c.b.getI64ArrayAttr(st),
                                   c.b.getI64ArrayAttr(sp));
    out.erase(out.begin(), out.begin() + (t >= 0 ? 2 : 1));
    return c.reshape(n.loc, sl, out);
  };
  std::vector<std::vector<Value>> finals((size_t)stateN), scans((size_t)k);
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Value> state;
    for (int64_t i = 0; i < stateN; ++i)
      state.push_back(take(n.input(1 + i), b, -1));
    std::vector<std::vector<Value>> scanned((size_t)k);
    for (int64_t t = 0; t < steps; ++t) {
      std::vector<Value> args = state;
      for (int64_t j = 0; j < m; ++j)
        args.push_back(take(n.input(1 + stateN + j), b, dirs[j] ? steps - 1 - t : t));
      TGC_ASSIGN(outs, c.importSubgraph(*body, args));
      for (int64_t i = 0; i < stateN; ++i)
        state[i] = outs[i];
      for (int64_t i = 0; i < k; ++i)
        scanned[i].push_back(outs[stateN + i]);
    }
    for (int64_t i = 0; i < stateN; ++i)
      finals[i].push_back(state[i]);
    for (int64_t i = 0; i < k; ++i) {
      TGC_ASSIGN(v, stack(c, n, scanned[i], 0, "scan output " + std::to_string(i)));
      scans[i].push_back(v);
    }
  }
  Values result;
  for (int64_t i = 0; i < stateN; ++i) {
    TGC_ASSIGN(v, stack(c, n, finals[i], 0, "state " + std::to_string(i)));
    result.push_back(v);
  }
  for (int64_t i = 0; i < k; ++i) {
    TGC_ASSIGN(v, stack(c, n, scans[i], 0, "scan output " + std::to_string(i)));
    result.push_back(v);
  }
  return result;
}

Result importScan(ImportContext &c, const NodeView &n) {
  if (n.opset < 9)
    return importScan8(c, n);
  const onnx::GraphProto *body = graphAttr(n, "body");
  if (!body)
    return c.error(n, "has no body graph");
  const int64_t m = n.attrInt("num_scan_inputs", -1);
  const int64_t total = (int64_t)n.inputs.size();
  if (m < 1 || m > total)
    return c.error(n, "num_scan_inputs " + std::to_string(m) + " must lie in [1, " +
                          std::to_string(total) + "]");
  const int64_t stateN = total - m;
  const int64_t k = body->output_size() - stateN;
  if (body->input_size() != total || k < 0)
    return c.error(n, "the body takes " + std::to_string(body->input_size()) +
                          " inputs and gives " + std::to_string(body->output_size()) +
                          " outputs; the node has " + std::to_string(stateN) + " state and " +
                          std::to_string(m) + " scan inputs");
  auto listAttr = [&](const char *name, int64_t count) -> std::vector<int64_t> {
    auto v = n.attrInts(name).value_or(std::vector<int64_t>{});
    v.resize((size_t)count, 0);
    return v;
  };
  const auto inDirs = listAttr("scan_input_directions", m);
  auto inAxes = listAttr("scan_input_axes", m);
  const auto outDirs = listAttr("scan_output_directions", k);
  auto outAxes = listAttr("scan_output_axes", k);
  int64_t steps = -1;
  for (int64_t j = 0; j < m; ++j) {
    Value x = n.input(stateN + j);
    if (!x)
      return c.error(n, "scan input " + std::to_string(j) + " is absent");
    TGC_ASSIGN(axis, checkAxis(n, inAxes[j], c.rankOf(x)));
    inAxes[j] = axis;
    if (inDirs[j] != 0 && inDirs[j] != 1)
      return c.error(n, "scan_input_directions values must be 0 or 1");
    const int64_t len = c.shapeOf(x)[axis];
    if (steps >= 0 && len != steps)
      return c.error(n, "scan inputs differ in length (" + std::to_string(steps) + " and " +
                            std::to_string(len) + ")");
    steps = len;
  }
  if (steps < 1 || steps > kMaxIterations)
    return c.error(n, "scan length " + std::to_string(steps) + " outside [1, " +
                          std::to_string(kMaxIterations) + "] (the body is unrolled)");
  for (int64_t d : outDirs)
    if (d != 0 && d != 1)
      return c.error(n, "scan_output_directions values must be 0 or 1");
  std::vector<Value> state(n.inputs.begin(), n.inputs.begin() + stateN);
  std::vector<std::vector<Value>> scanned((size_t)k);
  for (int64_t t = 0; t < steps; ++t) {
    std::vector<Value> args = state;
    for (int64_t j = 0; j < m; ++j) {
      Value x = n.input(stateN + j);
      const int64_t axis = inAxes[j], at = inDirs[j] ? steps - 1 - t : t;
      Shape in = c.shapeOf(x), out = in;
      out[axis] = 1;
      std::vector<int64_t> st(in.size(), 0), sp(in.size(), 1);
      st[axis] = at;
      Value slice = c.emit<tg::SliceOp>(n.loc, c.type(out, c.elemOf(x)), x,
                                        c.b.getI64ArrayAttr(st), c.b.getI64ArrayAttr(sp));
      out.erase(out.begin() + axis);
      args.push_back(c.reshape(n.loc, slice, out));
    }
    TGC_ASSIGN(outs, c.importSubgraph(*body, args));
    for (int64_t i = 0; i < stateN; ++i)
      state[i] = outs[i];
    for (int64_t i = 0; i < k; ++i)
      scanned[i].push_back(outs[stateN + i]);
  }
  Values result = state;
  for (int64_t i = 0; i < k; ++i) {
    if (outDirs[i])
      std::reverse(scanned[i].begin(), scanned[i].end());
    const int64_t r = c.rankOf(scanned[i][0]) + 1;
    TGC_ASSIGN(axis, checkAxis(n, outAxes[i], r));
    TGC_ASSIGN(v, stack(c, n, scanned[i], axis, "scan output " + std::to_string(i)));
    result.push_back(v);
  }
  return result;
}

} // namespace

void registerControlFlowOps(OpTable &t) {
  t["If"] = importIf;
  t["Loop"] = importLoop;
  t["Scan"] = importScan;
}

} // namespace tgc::onnx_import
