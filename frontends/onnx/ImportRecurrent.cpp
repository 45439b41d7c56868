// ImportRecurrent.cpp — ONNX RNN, GRU and LSTM (opsets 7-22) by unrolling over the sequence,
// which a static-shape compile knows, into ops tg already has (so both backends run them):
//   - the input projection of every time step at once: one tg.linear over [T*B, I] with W and
//     the biases that sit outside the recurrence (a GEMM of T*B rows, not T small ones);
//   - per step: the recurrent projection (tg.linear of the state with R), the gates' activations
//     (Sigmoid, Tanh, Relu, or any of the optional ONNX activation functions), peepholes, clip,
//     and the state update — element ops the kernel former fuses;
//   - directions: forward, reverse (the steps taken from the last time to the first) and
//     bidirectional (both, stacked on the num_directions axis); layout 0 ([T, B, ...]) and 1
//     ([B, T, ...]) by a transpose on the way in and out;
//   - sequence_lens (may be a graph input): a step s < len[b] updates the state of batch b and
//     writes its output; later steps keep the state and write zeros, as ONNX specifies. A
//     reverse direction with sequence_lens reads batch b's steps from len[b]-1 down to 0: the
//     projected inputs are permuted per batch by a gather (index len[b]-1-s for s < len[b], s
//     otherwise — its own inverse), and the outputs permuted back the same way. Constant
//     lengths that all equal T are dropped.
// activation_alpha/activation_beta: ONNX says they are "consumed in the order of the activation
// functions"; as ONNX Runtime reads that, an RNN's value i belongs to activation i, while LSTM
// and GRU give the values to the activations that take parameters, in order. LeakyRelu, ThresholdedRelu, HardSigmoid and Elu default to
// their operators' defaults, Affine and ScaledTanh need theirs given. Everything the importer
// cannot honour is refused with the node named.
#include "frontends/onnx/ImportContext.h"

#include "compiler/dialect/TgDialect.h"

#include <algorithm>
#include <cctype>

using namespace mlir;

namespace tgc::onnx_import {

namespace {

using Result = llvm::Expected<std::vector<Value>>;
using Values = std::vector<Value>;

enum class Cell { RNN, GRU, LSTM };

/// The longest sequence unrolled (each step is a handful of ops).
constexpr int64_t kMaxSteps = 4096;

int gates(Cell k) { return k == Cell::RNN ? 1 : k == Cell::GRU ? 3 : 4; }
int activationsPerDirection(Cell k) { return k == Cell::RNN ? 1 : k == Cell::GRU ? 2 : 3; }

struct Activation {
  std::string name; ///< lower case
  double alpha = 0, beta = 0;
};

/// One recurrent node, checked.
struct Spec {
  Cell cell;
  int64_t T = 0, B = 0, I = 0, H = 0, D = 1;
  bool layout1 = false, reverse = false;
  std::vector<Activation> acts; ///< activationsPerDirection * D
  std::optional<double> clip;
  bool inputForget = false, linearBeforeReset = false;
};

std::string lower(std::string s) {
  for (char &ch : s)
    ch = (char)std::tolower((unsigned char)ch);
  return s;
}

bool takesAlpha(const std::string &a) {
  return a == "affine" || a == "leakyrelu" || a == "thresholdedrelu" || a == "scaledtanh" ||
         a == "hardsigmoid" || a == "elu";
}
bool takesBeta(const std::string &a) {
  return a == "affine" || a == "scaledtanh" || a == "hardsigmoid";
}

llvm::Expected<std::vector<Activation>> activations(const NodeView &n, Cell cell, int64_t D) {
  const int per = activationsPerDirection(cell);
  std::vector<std::string> names;
  if (const auto *a = n.attr("activations"))
    for (const auto &s : a->strings())
      names.push_back(lower(s));
  if (names.empty()) {
    for (int64_t d = 0; d < D; ++d) {
      if (cell == Cell::RNN)
        names.push_back("tanh");
      else
        names.push_back("sigmoid"), names.push_back("tanh");
      if (cell == Cell::LSTM)
        names.push_back("tanh");
    }
  } else if ((int64_t)names.size() == per && D == 2) {
    names.insert(names.end(), names.begin(), names.end());
  } else if ((int64_t)names.size() != per * D) {
    return ImportContext::error(n, "activations lists " + std::to_string(names.size()) +
                                       " functions; expected " + std::to_string(per * D) + " (" +
                                       std::to_string(per) + " per direction)");
  }
  std::vector<float> alphas = n.attrFloats("activation_alpha").value_or(std::vector<float>{});
  std::vector<float> betas = n.attrFloats("activation_beta").value_or(std::vector<float>{});
  // RNN: value i belongs to activation i (one per direction); LSTM/GRU: values are taken by
  // the activations that use them, in order (both as ONNX Runtime reads them).
  const bool aligned = cell == Cell::RNN;
  size_t ai = 0, bi = 0;
  std::vector<Activation> out;
  for (const auto &name : names) {
    if (aligned)
      ai = bi = out.size();
    static const char *known[] = {"relu",       "tanh",        "sigmoid", "affine",
                                  "leakyrelu",  "thresholdedrelu", "scaledtanh", "hardsigmoid",
                                  "elu",        "softsign",    "softplus"};
    if (std::find(std::begin(known), std::end(known), name) == std::end(known))
      return ImportContext::error(n, "unsupported activation function '" + name + "'");
    Activation a{name};
    a.alpha = name == "leakyrelu" ? 0.01 : name == "hardsigmoid" ? 0.2 : 1.0;
    a.beta = name == "hardsigmoid" ? 0.5 : 0.0;
    if (takesAlpha(name)) {
      if (ai < alphas.size())
        a.alpha = alphas[ai++];
      else if (name == "affine" || name == "scaledtanh")
        return ImportContext::error(n, "activation '" + name + "' needs an activation_alpha value");
    }
    if (takesBeta(name)) {
      if (bi < betas.size())
        a.beta = betas[bi++];
      else if (name == "affine" || name == "scaledtanh")
        return ImportContext::error(n, "activation '" + name + "' needs an activation_beta value");
    }
    out.push_back(a);
  }
  if (!aligned && (ai < alphas.size() || bi < betas.size()))
    return ImportContext::error(n, "activation_alpha/activation_beta give more values than the "
                                   "activations use");
  return out;
}

/// Checks the node's inputs and attributes against ONNX's shapes.
llvm::Expected<Spec> checkSpec(ImportContext &c, const NodeView &n, Cell cell) {
  Spec s;
  s.cell = cell;
  TGC_ASSIGN(x, c.need(n, 0));
  TGC_ASSIGN(w, c.need(n, 1));
  TGC_ASSIGN(r, c.need(n, 2));
  if (!c.isFloat(c.elemOf(x)))
    return c.error(n, "X must be a float tensor");
  for (Value v : {w, r})
    if (c.elemOf(v) != c.elemOf(x))
      return c.error(n, "W and R must have X's element type");
  const int64_t layout = n.opset >= 14 ? n.attrInt("layout", 0) : 0;
  if (layout != 0 && layout != 1)
    return c.error(n, "layout must be 0 or 1, got " + std::to_string(layout));
  s.layout1 = layout == 1;
  const Shape xs = c.shapeOf(x), ws = c.shapeOf(w), rs = c.shapeOf(r);
  if (xs.size() != 3 || ws.size() != 3 || rs.size() != 3)
    return c.error(n, "X, W and R must have rank 3 (X " + shapeToString(xs) + ", W " +
                          shapeToString(ws) + ", R " + shapeToString(rs) + ")");
  s.T = s.layout1 ? xs[1] : xs[0];
  s.B = s.layout1 ? xs[0] : xs[1];
  s.I = xs[2];
  const std::string dir = n.attrString("direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
    return c.error(n, "direction must be forward, reverse or bidirectional, got '" + dir + "'");
  s.D = dir == "bidirectional" ? 2 : 1;
  s.reverse = dir == "reverse";
  s.H = rs[2];
  const int64_t G = gates(cell);
  if (ws != Shape{s.D, G * s.H, s.I} || rs != Shape{s.D, G * s.H, s.H})
    return c.error(n, "W " + shapeToString(ws) + " and R " + shapeToString(rs) +
                          " must be [num_directions " + std::to_string(s.D) + ", " +
                          std::to_string(G) + "*hidden, input " + std::to_string(s.I) +
                          "] and [num_directions, " + std::to_string(G) + "*hidden, hidden]");
  if (const auto *hs = n.attr("hidden_size"); hs && hs->i() != s.H)
    return c.error(n, "hidden_size " + std::to_string(hs->i()) + " differs from R's " +
                          std::to_string(s.H));
  if (s.T < 1 || s.T > kMaxSteps)
    return c.error(n, "sequence length " + std::to_string(s.T) + " outside [1, " +
                          std::to_string(kMaxSteps) + "] (the sequence is unrolled)");
  if (Value b = n.input(3); b && c.shapeOf(b) != Shape{s.D, 2 * G * s.H})
    return c.error(n, "B " + shapeToString(c.shapeOf(b)) + " must be [" + std::to_string(s.D) +
                          ", " + std::to_string(2 * G * s.H) + "]");
  if (Value l = n.input(4)) {
    if (!c.elemOf(l).isSignlessInteger() || c.elemOf(l).isInteger(1) ||
        c.shapeOf(l) != Shape{s.B})
      return c.error(n, "sequence_lens must be an int32 tensor of shape [" + std::to_string(s.B) +
                            "]");
    if (auto v = c.constInts(l))
      for (int64_t len : *v)
        if (len < 0 || len > s.T)
          return c.error(n, "sequence_lens value " + std::to_string(len) + " outside [0, " +
                                std::to_string(s.T) + "]");
  }
  const Shape stateShape = s.layout1 ? Shape{s.B, s.D, s.H} : Shape{s.D, s.B, s.H};
  for (size_t i : {size_t(5), size_t(6)}) {
    if (i == 6 && cell != Cell::LSTM)
      break;
    if (Value v = n.input(i); v && c.shapeOf(v) != stateShape)
      return c.error(n, std::string(i == 5 ? "initial_h " : "initial_c ") +
                            shapeToString(c.shapeOf(v)) + " must be " + shapeToString(stateShape));
  }
  if (cell == Cell::LSTM)
    if (Value p = n.input(7); p && c.shapeOf(p) != Shape{s.D, 3 * s.H})
      return c.error(n, "P " + shapeToString(c.shapeOf(p)) + " must be [" + std::to_string(s.D) +
                            ", " + std::to_string(3 * s.H) + "]");
  for (size_t i = 3; i < n.inputs.size(); ++i)
    if (n.inputs[i] && i != 4 && c.elemOf(n.inputs[i]) != c.elemOf(x))
      return c.error(n, "input " + std::to_string(i) + " must have X's element type");
  if (const auto *cl = n.attr("clip")) {
    if (!(cl->f() > 0))
      return c.error(n, "clip must be positive, got " + std::to_string(cl->f()));
    s.clip = cl->f();
  }
  const int64_t forget = cell == Cell::LSTM ? n.attrInt("input_forget", 0) : 0;
  const int64_t lbr = cell == Cell::GRU ? n.attrInt("linear_before_reset", 0) : 0;
  if ((forget != 0 && forget != 1) || (lbr != 0 && lbr != 1))
    return c.error(n, "input_forget and linear_before_reset must be 0 or 1");
  s.inputForget = forget == 1;
  s.linearBeforeReset = lbr == 1;
  TGC_ASSIGN(acts, activations(n, cell, s.D));
  s.acts = std::move(acts);
  return s;
}

/// Emits the step functions of one node.
struct Emitter {
  ImportContext &c;
  Location loc;
  const Spec &s;
  Type elem;

  Value scalar(double v) { return c.splat(loc, v, elem); }
  Value add(Value a, Value b) { return c.binary<tg::AddOp>(loc, a, b); }
  Value sub(Value a, Value b) { return c.binary<tg::SubOp>(loc, a, b); }
  Value mul(Value a, Value b) { return c.binary<tg::MulOp>(loc, a, b); }

  /// v[start : start+count] along axis.
  Value slice(Value v, int64_t axis, int64_t start, int64_t count) {
    Shape in = c.shapeOf(v), out = in;
    if (start == 0 && count == in[axis])
      return v;
    out[axis] = count;
    std::vector<int64_t> st(in.size(), 0), sp(in.size(), 1);
    st[axis] = start;
    return c.emit<tg::SliceOp>(loc, c.type(out, c.elemOf(v)), v, c.b.getI64ArrayAttr(st),
                               c.b.getI64ArrayAttr(sp));
  }
  /// Row d of a [D, ...] tensor as [...].
  Value row(Value v, int64_t d) {
    Shape s = c.shapeOf(v);
    Value r = slice(v, 0, d, 1);
    return c.reshape(loc, r, Shape(s.begin() + 1, s.end()));
  }
  Value where(Value cond, Value a, Value b) {
    auto shape = broadcastShapes(c.shapeOf(cond), c.shapeOf(a));
    if (shape)
      shape = broadcastShapes(*shape, c.shapeOf(b));
    return c.emit<tg::WhereOp>(loc, c.type(shape.value_or(c.shapeOf(a)), elem), cond, a, b);
  }
  Value linear(Value x, Value w, Value bias = {}) {
    Shape out = c.shapeOf(x);
    out.back() = c.shapeOf(w)[0];
    return c.emit<tg::LinearOp>(loc, c.type(out, elem), x, w, bias); // bias may be null
  }

  Value clip(Value x) {
    if (!s.clip)
      return x;
    x = c.binary<tg::MaxOp>(loc, x, scalar(-*s.clip));
    return c.binary<tg::MinOp>(loc, x, scalar(*s.clip));
  }

  Value act(Value x, const Activation &a) {
    const std::string &f = a.name;
    if (f == "relu")
      return c.unary<tg::ReluOp>(loc, x);
    if (f == "tanh")
      return c.unary<tg::TanhOp>(loc, x);
    if (f == "sigmoid")
      return c.unary<tg::SigmoidOp>(loc, x);
    if (f == "affine")
      return add(mul(x, scalar(a.alpha)), scalar(a.beta));
    if (f == "scaledtanh")
      return mul(c.unary<tg::TanhOp>(loc, mul(x, scalar(a.beta))), scalar(a.alpha));
    if (f == "hardsigmoid") {
      Value y = add(mul(x, scalar(a.alpha)), scalar(a.beta));
      y = c.binary<tg::MinOp>(loc, y, scalar(1.0));
      return c.binary<tg::MaxOp>(loc, y, scalar(0.0));
    }
    if (f == "softsign")
      return c.binary<tg::DivOp>(loc, x, add(c.unary<tg::AbsOp>(loc, x), scalar(1.0)));
    if (f == "softplus") { // max(x, 0) + log(1 + exp(-|x|))
      Value e = c.unary<tg::ExpOp>(loc, c.unary<tg::NegOp>(loc, c.unary<tg::AbsOp>(loc, x)));
      return add(c.unary<tg::ReluOp>(loc, x), c.unary<tg::LogOp>(loc, add(e, scalar(1.0))));
    }
    Value negative = c.binary<tg::LessOp>(loc, x, scalar(0.0), true);
    if (f == "leakyrelu")
      return where(negative, mul(x, scalar(a.alpha)), x);
    if (f == "elu")
      return where(negative, mul(sub(c.unary<tg::ExpOp>(loc, x), scalar(1.0)), scalar(a.alpha)),
                   x);
    // thresholdedrelu
    return where(c.binary<tg::GreaterOp>(loc, x, scalar(a.alpha), true), x, scalar(0.0));
  }

  /// [T, B, K] → the same, each batch column's first len[b] steps reversed (the rest in place).
  Value permutePerBatch(Value v, Value lens) {
    const Shape vs = c.shapeOf(v);
    std::vector<int64_t> steps(s.T);
    for (int64_t t = 0; t < s.T; ++t)
      steps[t] = t;
    Value sIdx = c.reshape(loc, c.constI64(loc, steps), {s.T, 1});
    Value lt = c.binary<tg::LessOp>(loc, sIdx, lens, true);
    Value rev = c.binary<tg::SubOp>(loc, c.binary<tg::SubOp>(loc, lens, c.splat(loc, 1, c.i64())),
                                    sIdx);
    Value idx = c.emit<tg::WhereOp>(loc, c.type({s.T, s.B}, c.i64()), lt, rev, sIdx);
    idx = c.expand(loc, c.reshape(loc, idx, {s.T, s.B, 1}), vs);
    return c.emit<tg::GatherElementsOp>(loc, v.getType(), v, idx, (uint64_t)0);
  }
};

/// One direction: its Y [T, B, H], last H [B, H] and (LSTM) last C [B, H].
struct DirectionOut {
  Value y, h, cState;
};

DirectionOut runDirection(Emitter &e, const NodeView &n, Value x, Value lens, int64_t d,
                          bool reverse) {
  ImportContext &c = e.c;
  const Spec &s = e.s;
  const int64_t H = s.H, G = gates(s.cell), per = activationsPerDirection(s.cell);
  const Activation *act = &s.acts[d * per];
  Value w = e.row(n.input(1), d), r = e.row(n.input(2), d);
  // Biases: those outside the recurrence join the input projection; GRU's recurrent bias of the
  // candidate gate stays with R (inside the reset gate when linear_before_reset).
  Value bias, rbh;
  if (Value b = n.input(3)) {
    Value wb = e.slice(e.row(b, d), 0, 0, G * H), rb = e.slice(e.row(b, d), 0, G * H, G * H);
    if (s.cell == Cell::GRU) {
      rbh = e.slice(rb, 0, 2 * H, H);
      Value rzr = c.emit<tg::ConcatOp>(e.loc, c.type({G * H}, e.elem),
                                       ValueRange{e.slice(rb, 0, 0, 2 * H), c.splat(e.loc, 0.0, e.elem, {H})},
                                       (uint64_t)0);
      bias = e.add(wb, rzr);
    } else {
      bias = e.add(wb, rb);
    }
  }
  Value xw = e.linear(c.reshape(e.loc, x, {s.T * s.B, s.I}), w, bias);
  xw = c.reshape(e.loc, xw, {s.T, s.B, G * H});
  const bool permute = reverse && lens;
  if (permute)
    xw = e.permutePerBatch(xw, lens);

  auto state = [&](size_t input) -> Value {
    if (Value v = n.input(input)) {
      if (s.layout1)
        v = c.transpose(e.loc, v, {1, 0, 2});
      return e.row(v, d);
    }
    return c.splat(e.loc, 0.0, e.elem, {s.B, H});
  };
  Value h = state(5), cs = s.cell == Cell::LSTM ? state(6) : Value();
  Value p = s.cell == Cell::LSTM && n.input(7) ? e.row(n.input(7), d) : Value();
  Value rzr, rh;
  if (s.cell == Cell::GRU) {
    rzr = e.slice(r, 0, 0, 2 * H);
    rh = e.slice(r, 0, 2 * H, H);
  }
  Value lensCol = lens ? c.reshape(e.loc, lens, {s.B, 1}) : Value();

  std::vector<Value> ys(s.T);
  for (int64_t step = 0; step < s.T; ++step) {
    const int64_t t = reverse && !permute ? s.T - 1 - step : step;
    Value xt = c.reshape(e.loc, e.slice(xw, 0, t, 1), {s.B, G * H});
    Value hNew, cNew;
    if (s.cell == Cell::RNN) {
      hNew = e.act(e.clip(e.add(xt, e.linear(h, r))), act[0]);
    } else if (s.cell == Cell::LSTM) {
      Value g = e.add(xt, e.linear(h, r));
      Value gi = e.slice(g, 1, 0, H), go = e.slice(g, 1, H, H), gf = e.slice(g, 1, 2 * H, H),
            gc = e.slice(g, 1, 3 * H, H);
      if (p) {
        gi = e.add(gi, e.mul(e.slice(p, 0, 0, H), cs));
        gf = e.add(gf, e.mul(e.slice(p, 0, 2 * H, H), cs));
      }
      Value i = e.act(e.clip(gi), act[0]);
      Value f = s.inputForget ? e.sub(e.scalar(1.0), i) : e.act(e.clip(gf), act[0]);
      Value cand = e.act(e.clip(gc), act[1]);
      cNew = e.add(e.mul(f, cs), e.mul(i, cand));
      if (p)
        go = e.add(go, e.mul(e.slice(p, 0, H, H), cNew));
      Value o = e.act(e.clip(go), act[0]);
      hNew = e.mul(o, e.act(cNew, act[2]));
    } else { // GRU
      Value zr = e.act(e.clip(e.add(e.slice(xt, 1, 0, 2 * H), e.linear(h, rzr))), act[0]);
      Value z = e.slice(zr, 1, 0, H), rg = e.slice(zr, 1, H, H);
      Value rec = s.linearBeforeReset ? e.mul(rg, e.linear(h, rh, rbh))
                                      : e.linear(e.mul(rg, h), rh, rbh);
      Value cand = e.act(e.clip(e.add(e.slice(xt, 1, 2 * H, H), rec)), act[1]);
      hNew = e.add(e.mul(e.sub(e.scalar(1.0), z), cand), e.mul(z, h));
    }
    Value y = hNew;
    if (lensCol) {
      Value live = c.binary<tg::LessOp>(e.loc, c.splat(e.loc, (double)step, c.i64()), lensCol, true);
      y = e.where(live, hNew, e.scalar(0.0));
      hNew = e.where(live, hNew, h);
      if (cNew)
        cNew = e.where(live, cNew, cs);
    }
    h = hNew;
    cs = cNew;
    ys[t] = c.reshape(e.loc, y, {1, s.B, H});
  }
  Value y = s.T == 1 ? ys[0]
                     : c.emit<tg::ConcatOp>(e.loc, c.type({s.T, s.B, H}, e.elem), ValueRange(ys),
                                            (uint64_t)0);
  if (permute)
    y = e.permutePerBatch(y, lens);
  return {y, h, cs};
}

Result importRecurrent(ImportContext &c, const NodeView &n, Cell cell) {
  TGC_ASSIGN(s, checkSpec(c, n, cell));
  Emitter e{c, n.loc, s, c.elemOf(n.inputs[0])};
  Value x = n.inputs[0];
  if (s.layout1)
    x = c.transpose(n.loc, x, {1, 0, 2});
  Value lens;
  if (Value l = n.input(4)) {
    auto v = c.constInts(l);
    bool full = v && std::all_of(v->begin(), v->end(), [&](int64_t len) { return len == s.T; });
    if (!full)
      lens = c.reshape(n.loc, c.cast(n.loc, l, c.i64()), {1, s.B});
  }
  std::vector<Value> ys, hs, cs;
  for (int64_t d = 0; d < s.D; ++d) {
    DirectionOut o = runDirection(e, n, x, lens, d, s.reverse || d == 1);
    ys.push_back(c.reshape(n.loc, o.y, {s.T, 1, s.B, s.H}));
    hs.push_back(c.reshape(n.loc, o.h, {1, s.B, s.H}));
    if (o.cState)
      cs.push_back(c.reshape(n.loc, o.cState, {1, s.B, s.H}));
  }
  auto stack = [&](std::vector<Value> &v, int64_t axis, Shape shape) {
    return v.size() == 1 ? v[0]
                         : c.emit<tg::ConcatOp>(n.loc, c.type(shape, e.elem), ValueRange(v),
                                                (uint64_t)axis);
  };
  Value y = stack(ys, 1, {s.T, s.D, s.B, s.H});
  Value yh = stack(hs, 0, {s.D, s.B, s.H});
  Value yc = cs.empty() ? Value() : stack(cs, 0, {s.D, s.B, s.H});
  if (s.layout1) {
    y = c.transpose(n.loc, y, {2, 0, 1, 3});
    yh = c.transpose(n.loc, yh, {1, 0, 2});
    if (yc)
      yc = c.transpose(n.loc, yc, {1, 0, 2});
  }
  if (cell == Cell::LSTM)
    return Values{y, yh, yc};
  return Values{y, yh};
}

} // namespace

void registerRecurrentOps(OpTable &t) {
  t["RNN"] = [](ImportContext &c, const NodeView &n) { return importRecurrent(c, n, Cell::RNN); };
  t["GRU"] = [](ImportContext &c, const NodeView &n) { return importRecurrent(c, n, Cell::GRU); };
  t["LSTM"] = [](ImportContext &c, const NodeView &n) {
    return importRecurrent(c, n, Cell::LSTM);
  };
}

} // namespace tgc::onnx_import
