// MaskPadding.cpp — `tgc-mask-padding`: serving a run padded up to its shape bucket.
//
// A bucketed package runs a request of batch 3 × length 20 on the plan compiled for, say,
// 4 × 32: the runtime pads every input with zeros and cuts the outputs back. That is only right
// if no valid position ever reads a padded one. This pass proves it, op by op, or refuses.
//
// Each value's axes are tracked as row-major *factors* (symbol, size): an axis holding the
// padded dim "seq" is [(seq, 32)]; after reshape [B, S, H] → [B·S, H] the first axis is
// [(batch, 4), (seq, 32)] — rows of a padded grid, still row-independent. Element-wise ops,
// linears over the last axis, norms and softmax over other axes, gathers, transposes and
// reshapes that keep padded factors whole pass the factors on. Attention whose keys are padded
// gets an additive mask from the run's length (a new argument the runtime fills), unless its
// causal mask already hides them. Everything else that touches a padded axis is refused.
#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "passes/kernels/Passes.h"
#include "passes/padding/Passes.h"

#include "llvm/ADT/DenseMap.h"

#include <limits>
#include <optional>

namespace tgc {
namespace {
#define GEN_PASS_CLASSES
#include "passes/padding/Passes.h.inc"

using mlir::Operation;
using mlir::Value;

/// `size` positions of an axis; padded along `symbol` (>= 0) or not (-1).
struct Factor {
  int64_t symbol = -1, size = 1;
  bool operator==(const Factor &o) const { return symbol == o.symbol && size == o.size; }
};
/// An axis as row-major factors; empty when nothing on it is padded.
using Axis = llvm::SmallVector<Factor, 2>;
/// Per axis of a value.
using Axes = llvm::SmallVector<Axis, 4>;

bool padded(const Axis &a) {
  return llvm::any_of(a, [](const Factor &f) { return f.symbol >= 0; });
}

/// Same positions: equal factors, ignoring those of size 1 (a padded dim whose bucket is 1).
bool same(const Axis &x, const Axis &y) {
  auto sized = [](const Axis &a) {
    Axis out;
    for (const Factor &f : a)
      if (f.size != 1)
        out.push_back(f);
    return out;
  };
  return sized(x) == sized(y);
}

llvm::SmallVector<int64_t, 4> shapeOf(Value v) {
  auto t = v.getType().cast<mlir::RankedTensorType>();
  return {t.getShape().begin(), t.getShape().end()};
}

class MaskPaddingPass : public MaskPaddingBase<MaskPaddingPass> {
public:
  void runOnOperation() override;

private:
  /// Why `op` cannot keep padded positions apart ("" when it can); sets its results' axes.
  std::string visit(Operation *op);
  std::string elementwise(Operation *op);
  std::string attention(tg::AttentionOp op);
  std::string reshape(Value in, Value out);

  Axes axesOf(Value v) {
    auto it = axes.find(v);
    return it != axes.end() ? it->second : Axes(shapeOf(v).size());
  }
  bool anyPadded(Value v) {
    auto it = axes.find(v);
    return it != axes.end() && llvm::any_of(it->second, padded);
  }
  void set(Value v, Axes a) {
    if (llvm::any_of(a, padded))
      axes[v] = std::move(a);
  }
  std::string symbolName(int64_t s) {
    auto names = getOperation()->getAttrOfType<mlir::ArrayAttr>("tg.symbol_names");
    if (names && s >= 0 && s < (int64_t)names.size())
      if (auto n = names[(size_t)s].dyn_cast<mlir::StringAttr>())
        return "'" + n.str() + "'";
    return "#" + std::to_string(s);
  }
  std::string axisSymbols(const Axis &a) {
    std::string s;
    for (const Factor &f : a)
      if (f.symbol >= 0)
        s += (s.empty() ? "" : " and ") + symbolName(f.symbol);
    return s;
  }
  /// "along axis 2 (padded 'seq')".
  std::string mixes(const char *what, int64_t axis, const Axis &a) {
    return std::string(what) + " along axis " + std::to_string(axis) + " mixes the padded " +
           axisSymbols(a) + " positions into valid ones";
  }
  /// The run's length of symbol `s`: an i64[1] argument the runtime fills (tg.length_of).
  Value lengthOf(int64_t s);

  llvm::DenseMap<Value, Axes> axes;
  llvm::DenseMap<int64_t, Value> lengths;
};

Value MaskPaddingPass::lengthOf(int64_t s) {
  if (Value v = lengths.lookup(s))
    return v;
  mlir::func::FuncOp fn = getOperation();
  mlir::Builder b(fn.getContext());
  auto type = mlir::RankedTensorType::get({1}, b.getI64Type());
  std::string name = symbolName(s);
  name = "tgc.length." + (name.size() > 2 && name[0] == '\'' ? name.substr(1, name.size() - 2)
                                                             : std::to_string(s));
  mlir::NamedAttribute attrs[] = {b.getNamedAttr("tg.name", b.getStringAttr(name)),
                                  b.getNamedAttr("tg.length_of", b.getI64IntegerAttr(s + 1))};
  const unsigned index = fn.getNumArguments();
  fn.insertArgument(index, type, b.getDictionaryAttr(attrs), fn.getLoc());
  return lengths[s] = fn.getArgument(index);
}

std::string MaskPaddingPass::elementwise(Operation *op) {
  Value r = op->getResult(0);
  const auto rs = shapeOf(r);
  Axes out(rs.size());
  for (size_t a = 0; a < rs.size(); ++a)
    for (Value o : op->getOperands()) {
      const auto os = shapeOf(o);
      const int64_t oa = (int64_t)a - (int64_t)(rs.size() - os.size());
      if (oa < 0 || (os[(size_t)oa] == 1 && rs[a] != 1))
        continue; // broadcast: one value for every position
      Axis t = axesOf(o)[(size_t)oa];
      if (!padded(t))
        continue;
      if (padded(out[a]) && !same(out[a], t))
        return "it combines differently padded positions along axis " + std::to_string(a);
      out[a] = t;
    }
  set(r, std::move(out));
  return "";
}

std::string MaskPaddingPass::reshape(Value in, Value out) {
  // The input's factors in row-major order: padded ones (even of size 1, which keep their
  // label), and each unpadded axis of size > 1 as one plain factor.
  llvm::SmallVector<Factor, 8> flat;
  const auto is = shapeOf(in);
  const Axes ia = axesOf(in);
  for (size_t a = 0; a < is.size(); ++a) {
    if (padded(ia[a]))
      flat.append(ia[a].begin(), ia[a].end());
    else if (is[a] != 1)
      flat.push_back({-1, is[a]});
  }
  Axes result;
  size_t next = 0;
  for (int64_t dim : shapeOf(out)) {
    Axis axis;
    if (dim == 1 && next < flat.size() && flat[next].size == 1)
      axis.push_back(flat[next++]); // a padded dim of size 1 keeps its place
    int64_t have = 1;
    while (have < dim) {
      if (next >= flat.size() || dim % have != 0)
        return "it regroups a padded axis";
      Factor &f = flat[next];
      if (dim % (have * f.size) == 0) {
        axis.push_back(f);
        have *= f.size;
        ++next;
        continue;
      }
      // The axis ends inside factor f: split it, which only an unpadded factor allows.
      const int64_t part = dim / have;
      if (f.symbol >= 0)
        return "it splits the padded " + symbolName(f.symbol) + " axis";
      if (f.size % part != 0)
        return "it regroups a padded axis";
      axis.push_back({-1, part});
      f.size /= part;
      have *= part;
    }
    result.push_back(padded(axis) ? axis : Axis());
  }
  set(out, std::move(result));
  return "";
}

std::string MaskPaddingPass::attention(tg::AttentionOp op) {
  const bool bshd = op.getLayout() == "bshd";
  const size_t seqAxis = bshd ? 1 : 2, headAxis = bshd ? 2 : 1;
  const Axes q = axesOf(op.getQ()), k = axesOf(op.getK()), v = axesOf(op.getV());
  for (const Axes *x : {&q, &k, &v})
    if (padded((*x)[3]) || padded((*x)[headAxis]))
      return "its head or feature axis is padded";
  if (padded(k[0]) || padded(v[0]) || padded(q[0])) {
    // Batch rows never meet: fine, as long as q, k and v agree.
    if (!same(q[0], k[0]) || !same(k[0], v[0]))
      return "its batch axis is padded differently in q, k and v";
  }
  Axis keys = padded(k[seqAxis]) ? k[seqAxis] : v[seqAxis];
  Axes out = q;
  out[3] = Axis();
  set(op.getResult(), out);
  if (!padded(keys))
    return "";
  Axis keyFactors;
  for (const Factor &f : keys)
    if (f.size != 1)
      keyFactors.push_back(f);
  if (keyFactors.empty())
    return ""; // a bucket of one position: nothing is ever padded
  if (keyFactors.size() != 1 || keyFactors[0].symbol < 0)
    return "its key axis merges a padded dim with others";
  const int64_t s = keyFactors[0].symbol, T = keyFactors[0].size;
  if (padded(k[seqAxis]) && padded(v[seqAxis]) && !same(k[seqAxis], v[seqAxis]))
    return "its keys and values are padded differently";
  // Causal with S = T: a valid query i < L sees keys t <= i, all valid.
  if (op.getCausal() && same(q[seqAxis], keys) && shapeOf(op.getQ())[seqAxis] == T)
    return "";
  // mask' = mask + (t < length ? 0 : -inf), broadcast over [B, H, S, T].
  mlir::OpBuilder b(op);
  const mlir::Location loc = op.getLoc();
  // The mask's element type: the scores' (q's), f32 before the precision pass.
  auto f32 = op.getQ().getType().cast<mlir::RankedTensorType>().getElementType();
  auto i64 = b.getI64Type();
  llvm::SmallVector<int64_t> iota(T);
  for (int64_t t = 0; t < T; ++t)
    iota[(size_t)t] = t;
  auto iotaType = mlir::RankedTensorType::get({T}, i64);
  Value positions =
      b.create<tg::ConstantOp>(loc, iotaType, mlir::DenseElementsAttr::get(iotaType, llvm::ArrayRef<int64_t>(iota)));
  Value valid = b.create<tg::LessOp>(loc, mlir::RankedTensorType::get({T}, b.getI1Type()),
                                     positions, lengthOf(s));
  auto scalar = mlir::RankedTensorType::get({1}, f32);
  auto floatAttr = [&](double x) {
    return mlir::DenseElementsAttr::get(scalar, mlir::FloatAttr::get(f32, x).getValue());
  };
  Value zero = b.create<tg::ConstantOp>(loc, scalar, floatAttr(0.0));
  Value ninf = b.create<tg::ConstantOp>(loc, scalar,
                                        floatAttr(-std::numeric_limits<double>::infinity()));
  Value row = b.create<tg::WhereOp>(loc, mlir::RankedTensorType::get({T}, f32), valid, zero, ninf);
  Value mask = b.create<tg::ReshapeOp>(loc, mlir::RankedTensorType::get({1, 1, 1, T}, f32), row);
  if (Value old = op.getMask()) {
    llvm::SmallVector<int64_t, 4> ms = shapeOf(old);
    while (ms.size() < 4)
      ms.insert(ms.begin(), 1);
    ms[3] = std::max<int64_t>(ms[3], T);
    mask = b.create<tg::AddOp>(loc, mlir::RankedTensorType::get(ms, f32), old, mask);
  }
  auto masked = b.create<tg::AttentionOp>(loc, op.getType(), op.getQ(), op.getK(), op.getV(), mask,
                                          op.getScaleAttr(), op.getCausalAttr(),
                                          op.getLayoutAttr());
  masked->setAttrs(op->getAttrs());
  op.getResult().replaceAllUsesWith(masked.getResult());
  axes[masked.getResult()] = axes.lookup(op.getResult());
  op->erase();
  return "";
}

/// Normalizes a possibly negative axis.
int64_t axisOf(int64_t axis, size_t rank) { return axis < 0 ? axis + (int64_t)rank : axis; }

std::string MaskPaddingPass::visit(Operation *op) {
  if (llvm::isa<tg::ConstantOp>(op) || llvm::none_of(op->getOperands(), [&](Value v) {
        return anyPadded(v);
      }))
    return ""; // nothing padded flows in
  if (isPointwiseOp(op))
    return elementwise(op);
  if (auto a = llvm::dyn_cast<tg::AttentionOp>(op))
    return attention(a);
  if (auto r = llvm::dyn_cast<tg::ReshapeOp>(op))
    return reshape(r.getInput(), r.getResult());
  const Axes in = axesOf(op->getOperand(0));
  const size_t rank = in.size();
  if (auto l = llvm::dyn_cast<tg::LinearOp>(op)) {
    if (anyPadded(l.getWeight()) || (l.getBias() && anyPadded(l.getBias())))
      return "its weight is padded";
    if (padded(in.back()))
      return mixes("the GEMM contraction", (int64_t)rank - 1, in.back());
    Axes out = in;
    out.back() = Axis();
    set(l.getResult(), out);
    return "";
  }
  if (auto m = llvm::dyn_cast<tg::MatmulOp>(op)) {
    const Axes b = axesOf(m.getRhs());
    if (rank < 2 || b.size() < 2)
      return "a padded vector product";
    if (padded(in.back()) || padded(b[b.size() - 2]))
      return mixes("the GEMM contraction", (int64_t)rank - 1,
                   padded(in.back()) ? in.back() : b[b.size() - 2]);
    const auto rs = shapeOf(m.getResult());
    Axes out(rs.size());
    for (size_t i = 0; i + 2 < rs.size(); ++i) // batch axes broadcast like element-wise ops
      for (const Axes *x : {&in, &b}) {
        const int64_t xa = (int64_t)i - (int64_t)(rs.size() - x->size());
        if (xa >= 0 && padded((*x)[(size_t)xa])) {
          if (padded(out[i]) && !same(out[i], (*x)[(size_t)xa]))
            return "its batch axes are padded differently";
          out[i] = (*x)[(size_t)xa];
        }
      }
    out[rs.size() - 2] = in[rank - 2];
    out[rs.size() - 1] = b.back();
    set(m.getResult(), out);
    return "";
  }
  auto rowWise = [&](int64_t from, const char *what) -> std::string {
    for (size_t a = (size_t)axisOf(from, rank); a < rank; ++a)
      if (padded(in[a]))
        return mixes(what, (int64_t)a, in[a]);
    set(op->getResult(0), in);
    return "";
  };
  if (auto n = llvm::dyn_cast<tg::LayerNormOp>(op))
    return rowWise(n.getAxis(), "the normalization");
  if (auto n = llvm::dyn_cast<tg::RmsNormOp>(op))
    return rowWise(n.getAxis(), "the normalization");
  if (auto s = llvm::dyn_cast<tg::SwigluOp>(op))
    return rowWise(-1, "the gated activation");
  if (auto s = llvm::dyn_cast<tg::SoftmaxOp>(op)) {
    const int64_t a = axisOf(s.getAxis(), rank);
    if (padded(in[(size_t)a]))
      return mixes("softmax", a, in[(size_t)a]);
    set(s.getResult(), in);
    return "";
  }
  if (llvm::isa<tg::RotaryOp>(op))
    return elementwise(op);
  if (auto t = llvm::dyn_cast<tg::TransposeOp>(op)) {
    Axes out;
    for (mlir::Attribute p : t.getPerm())
      out.push_back(in[(size_t)p.cast<mlir::IntegerAttr>().getInt()]);
    set(t.getResult(), out);
    return "";
  }
  if (auto s = llvm::dyn_cast<tg::SliceOp>(op)) {
    const auto is = shapeOf(s.getInput()), rs = shapeOf(s.getResult());
    for (size_t a = 0; a < rank; ++a) {
      const int64_t start = s.getStarts()[a].cast<mlir::IntegerAttr>().getInt();
      const int64_t step = s.getSteps()[a].cast<mlir::IntegerAttr>().getInt();
      if (padded(in[a]) && (start != 0 || step != 1 || rs[a] != is[a]))
        return "it slices along axis " + std::to_string(a) + ", whose padded " +
               axisSymbols(in[a]) + " positions it would keep or shift";
    }
    set(s.getResult(), in);
    return "";
  }
  if (auto c = llvm::dyn_cast<tg::ConcatOp>(op)) {
    const size_t a = (size_t)axisOf(c.getAxis(), rank);
    // Operands empty along the axis (an empty past cache) add nothing: the one left passes.
    llvm::SmallVector<Value> nonEmpty;
    for (Value x : c.getInputs())
      if (shapeOf(x)[a] != 0)
        nonEmpty.push_back(x);
    if (nonEmpty.size() == 1) {
      set(c.getResult(), axesOf(nonEmpty[0]));
      return "";
    }
    for (Value x : c.getInputs())
      if (padded(axesOf(x)[a]))
        return mixes("the concatenation", (int64_t)a, axesOf(x)[a]);
    return elementwise(op);
  }
  if (auto s = llvm::dyn_cast<tg::SplitOp>(op)) {
    const int64_t a = axisOf(s.getAxis(), rank);
    if (padded(in[(size_t)a]))
      return "it splits along axis " + std::to_string(a) + ", which is padded";
    for (Value r : s.getResults())
      set(r, in);
    return "";
  }
  if (auto g = llvm::dyn_cast<tg::GatherOp>(op)) {
    const size_t a = (size_t)axisOf(g.getAxis(), rank);
    if (padded(in[a])) {
      // Constant indices 0, 1, ..., n-1 along one axis of theirs (position i reads position
      // i: an exporter's per-position lookup) keep the positions where they were.
      const auto is = shapeOf(g.getIndices());
      mlir::DenseElementsAttr idx;
      int64_t along = -1, count = 0;
      for (size_t d = 0; d < is.size(); ++d)
        if (is[d] != 1)
          along = (int64_t)d, ++count;
      bool iota = count == 1 && is[(size_t)along] == shapeOf(g.getData())[a] &&
                  mlir::matchPattern(g.getIndices(), mlir::m_Constant(&idx)) &&
                  !anyPadded(g.getIndices());
      if (iota) {
        int64_t i = 0;
        for (const llvm::APInt &v : idx.getValues<llvm::APInt>())
          iota &= v.getSExtValue() == i++;
      }
      if (!iota)
        return "it gathers along axis " + std::to_string(a) + ", which is padded";
      Axes out(in.begin(), in.begin() + a);
      for (size_t d = 0; d < is.size(); ++d)
        out.push_back((int64_t)d == along ? in[a] : Axis());
      out.append(in.begin() + a + 1, in.end());
      set(g.getResult(), out);
      return "";
    }
    Axes out(in.begin(), in.begin() + a);
    Axes idx = axesOf(g.getIndices());
    out.append(idx.begin(), idx.end());
    out.append(in.begin() + a + 1, in.end());
    set(g.getResult(), out);
    return "";
  }
  if (auto c = llvm::dyn_cast<tg::CumsumOp>(op)) {
    const int64_t a = axisOf(c.getAxis(), rank);
    if (padded(in[(size_t)a]) && c.getReverse())
      return mixes("the reverse cumulative sum", a, in[(size_t)a]);
    set(c.getResult(), in); // forward: position i sums positions <= i only
    return "";
  }
  if (llvm::isa<tg::ConvOp, tg::PoolOp>(op)) {
    for (size_t a = 1; a < rank; ++a)
      if (padded(in[a]))
        return mixes("the window", (int64_t)a, in[a]);
    for (Value x : op->getOperands().drop_front())
      if (anyPadded(x))
        return "its weights are padded";
    Axes out(shapeOf(op->getResult(0)).size());
    out[0] = in[0];
    set(op->getResult(0), out);
    return "";
  }
  auto reduce = [&](llvm::ArrayRef<int64_t> reduced, bool keep) -> std::string {
    Axes out;
    for (size_t a = 0; a < rank; ++a) {
      const bool r = llvm::is_contained(reduced, (int64_t)a);
      if (r && padded(in[a]))
        return mixes("the reduction", (int64_t)a, in[a]);
      if (!r || keep)
        out.push_back(r ? Axis() : in[a]);
    }
    set(op->getResult(0), out);
    return "";
  };
  if (llvm::isa<tg::ReduceSumOp, tg::ReduceMeanOp, tg::ReduceMaxOp, tg::ReduceMinOp,
                tg::ReduceProdOp>(op)) {
    llvm::SmallVector<int64_t> reduced;
    for (mlir::Attribute x : op->getAttrOfType<mlir::ArrayAttr>("axes"))
      reduced.push_back(axisOf(x.cast<mlir::IntegerAttr>().getInt(), rank));
    return reduce(reduced, op->getAttrOfType<mlir::BoolAttr>("keepdims").getValue());
  }
  if (auto m = llvm::dyn_cast<tg::ArgMaxOp>(op))
    return reduce({axisOf(m.getAxis(), rank)}, m.getKeepdims());
  return "it is not known to keep padded positions apart";
}

void MaskPaddingPass::runOnOperation() {
  mlir::func::FuncOp fn = getOperation();
  bool bucketed = false;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    auto syms = fn.getArgAttrOfType<mlir::ArrayAttr>(i, "tg.dim_symbols");
    if (!syms)
      continue;
    bucketed = true;
    const auto shape = shapeOf(fn.getArgument(i));
    Axes a(shape.size());
    for (size_t d = 0; d < syms.size() && d < shape.size(); ++d)
      if (int64_t s = syms[d].cast<mlir::IntegerAttr>().getInt(); s >= 0)
        a[d] = Axis{Factor{s, shape[d]}};
    set(fn.getArgument(i), a);
  }
  if (!bucketed)
    return;
  llvm::SmallVector<Operation *> ops;
  for (Operation &op : fn.getBody().front().without_terminator())
    ops.push_back(&op);
  for (Operation *op : ops) {
    const std::string name = op->getName().getStringRef().str();
    std::string why = visit(op);
    if (!why.empty()) {
      mlir::emitError(op->getLoc())
          << "a bucketed package cannot pad this: " << name << " (" << why
          << "); compile those dims at fixed sizes instead (--input-shape NAME=DxD)";
      return signalPassFailure();
    }
  }
  Operation *ret = fn.getBody().front().getTerminator();
  mlir::Builder b(fn.getContext());
  for (unsigned i = 0; i < ret->getNumOperands(); ++i) {
    llvm::SmallVector<int64_t> syms;
    const Axes out = axesOf(ret->getOperand(i));
    for (const Axis &a : out) {
      int64_t s = -1, sized = 0;
      for (const Factor &f : a) // the padded factor of size > 1, else any padded one
        sized += f.size != 1;
      for (const Factor &f : a)
        if (f.symbol >= 0 && (s < 0 || f.size != 1))
          s = f.symbol;
      if (s >= 0 && sized > 1) {
        mlir::emitError(ret->getLoc()) << "a bucketed package cannot cut output " << i
                                       << " back: one of its axes merges the padded "
                                       << axisSymbols(a) << " with other dims";
        return signalPassFailure();
      }
      syms.push_back(s);
    }
    if (i < fn.getNumResults())
      fn.setResultAttr(i, "tg.dim_symbols", b.getI64ArrayAttr(syms));
  }
}

} // namespace

std::unique_ptr<mlir::Pass> createMaskPaddingPass() { return std::make_unique<MaskPaddingPass>(); }

} // namespace tgc
