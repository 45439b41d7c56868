// Interpreter.cpp — the `tg` reference interpreter: op dispatch, blocks, functions.
//
// Each op is mapped onto one kernel in Kernels.h (plain C++, no MLIR). Operands are checked
// against the op's operand types and results against its result types, so a kernel never sees a
// tensor whose shape disagrees with the IR, and a caller never gets one back. Values are freed
// after their last use, so whole models run in bounded memory.
#include "compiler/interp/Interpreter.h"

#include "compiler/dialect/TgDialect.h"
#include "compiler/interp/Attributes.h"
#include "compiler/interp/Kernels.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>

using namespace mlir;
namespace tg = tgc::tg;

namespace tgc {

namespace {

using interp::Binary;
using interp::Reduce;
using interp::Unary;
using Operands = llvm::ArrayRef<const HostTensor *>;
using Results = std::vector<HostTensor>;

llvm::Error error(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

std::string describe(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << op->getName() << " at " << op->getLoc();
  return os.str();
}

/// Prefixes an error with the op's name and location.
llvm::Error atOp(Operation *op, llvm::Error e) {
  return error(describe(op) + ": " + llvm::toString(std::move(e)));
}

Shape shapeOf(Type t) {
  auto r = t.cast<RankedTensorType>();
  return Shape(r.getShape().begin(), r.getShape().end());
}
Shape shapeOf(Value v) { return shapeOf(v.getType()); }

/// Checks that `t` is a well-formed tensor of `type`; `what` names it in the message.
llvm::Error checkTensor(const HostTensor &t, Type type, const llvm::Twine &what) {
  auto r = type.dyn_cast<RankedTensorType>();
  if (!r || !r.hasStaticShape())
    return error(what + " must be a statically shaped ranked tensor");
  auto dt = dtypeOf(r.getElementType());
  if (!dt)
    return error(what + ": " + llvm::toString(dt.takeError()));
  Shape want = shapeOf(type);
  if (t.dtype != *dt || t.shape != want)
    return error(what + ": expected " + dtypeName(*dt) + " " + shapeToString(want) + ", got " +
                 dtypeName(t.dtype) + " " + shapeToString(t.shape));
  auto n = numElements(t.shape);
  if (!n || t.data.size() != static_cast<size_t>(*n) * dtypeSize(t.dtype))
    return error(what + ": holds " + llvm::Twine(t.data.size()) + " bytes, expected " +
                 llvm::Twine(n ? *n * dtypeSize(t.dtype) : 0));
  return llvm::Error::success();
}

std::vector<int64_t> ints(ArrayAttr a) {
  std::vector<int64_t> r;
  for (Attribute x : a)
    r.push_back(x.cast<IntegerAttr>().getInt());
  return r;
}

llvm::Expected<int64_t> axisOf(IntegerAttr attr, int64_t rank) {
  auto a = normalizeAxis(attr.getInt(), rank);
  if (!a)
    return error("axis " + llvm::Twine(attr.getInt()) + " out of range for rank " +
                 llvm::Twine(rank));
  return *a;
}

/// A conv weight blocked by `block` output channels ([ceil(M/b), C/group, k..., b], tg.conv's
/// weight_block) as the plain [M, C/group, k...] it stands for.
HostTensor unblockConvWeight(const HostTensor &wb, int64_t M, int64_t block) {
  std::vector<int64_t> shape(wb.shape.begin(), wb.shape.end() - 1);
  shape[0] = M;
  HostTensor w = HostTensor::zeros(wb.dtype, shape);
  const int64_t inner = w.numel() / std::max<int64_t>(M, 1), esize = (int64_t)dtypeSize(wb.dtype);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t t = 0; t < inner; ++t)
      std::memcpy(w.data.data() + (m * inner + t) * esize,
                  wb.data.data() + (((m / block) * inner + t) * block + m % block) * esize, esize);
  return w;
}

/// A matmul weight in strips of `block` columns ([ceil(N/b), K, b], tg.matmul's weight_block)
/// as the plain [K, N] it stands for.
HostTensor unstripMatmulWeight(const HostTensor &ws, int64_t N, int64_t block) {
  const int64_t K = ws.shape[1], esize = (int64_t)dtypeSize(ws.dtype);
  HostTensor w = HostTensor::zeros(ws.dtype, {K, N});
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n)
      std::memcpy(w.data.data() + (k * N + n) * esize,
                  ws.data.data() + (((n / block) * K + k) * block + n % block) * esize, esize);
  return w;
}

/// [0, r-1, 1, .., r-2]: channels last to channels first (an `nhwc` op's operands to NC[D]HW).
std::vector<int64_t> toChannelsFirst(int64_t r) {
  std::vector<int64_t> p{0, r - 1};
  for (int64_t d = 1; d + 1 < r; ++d)
    p.push_back(d);
  return p;
}

/// [0, 2, .., r-1, 1]: channels first to channels last.
std::vector<int64_t> toChannelsLast(int64_t r) {
  std::vector<int64_t> p{0};
  for (int64_t d = 2; d < r; ++d)
    p.push_back(d);
  p.push_back(1);
  return p;
}

llvm::Expected<Results> one(llvm::Expected<HostTensor> r) {
  if (!r)
    return r.takeError();
  Results v;
  v.push_back(std::move(*r));
  return std::move(v);
}

DType resultDType(Operation *op) {
  auto dt = dtypeOf(op->getResult(0).getType().cast<RankedTensorType>().getElementType());
  if (dt)
    return *dt;
  llvm::consumeError(dt.takeError());
  return DType::F32; // unreachable: result types are checked before dispatch
}

std::optional<Unary> unaryKind(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<Unary>>(op)
      .Case([](tg::NegOp) { return Unary::Neg; })
      .Case([](tg::AbsOp) { return Unary::Abs; })
      .Case([](tg::SignOp) { return Unary::Sign; })
      .Case([](tg::ExpOp) { return Unary::Exp; })
      .Case([](tg::LogOp) { return Unary::Log; })
      .Case([](tg::SqrtOp) { return Unary::Sqrt; })
      .Case([](tg::RsqrtOp) { return Unary::Rsqrt; })
      .Case([](tg::ReciprocalOp) { return Unary::Reciprocal; })
      .Case([](tg::TanhOp) { return Unary::Tanh; })
      .Case([](tg::SigmoidOp) { return Unary::Sigmoid; })
      .Case([](tg::ErfOp) { return Unary::Erf; })
      .Case([](tg::ReluOp) { return Unary::Relu; })
      .Case([](tg::SiluOp) { return Unary::Silu; })
      .Case([](tg::SinOp) { return Unary::Sin; })
      .Case([](tg::CosOp) { return Unary::Cos; })
      .Case([](tg::FloorOp) { return Unary::Floor; })
      .Case([](tg::CeilOp) { return Unary::Ceil; })
      .Case([](tg::RoundOp) { return Unary::Round; })
      .Case([](tg::NotOp) { return Unary::Not; })
      .Case([](tg::IsNanOp) { return Unary::IsNan; })
      .Case([](tg::GeluOp g) { return g.getTanhApprox() ? Unary::GeluTanh : Unary::Gelu; })
      .Case([](tg::MathOp m) -> std::optional<Unary> {
        return llvm::StringSwitch<std::optional<Unary>>(m.getFn())
            .Case("acos", Unary::Acos).Case("asin", Unary::Asin).Case("atan", Unary::Atan)
            .Case("sinh", Unary::Sinh).Case("cosh", Unary::Cosh).Case("asinh", Unary::Asinh)
            .Case("acosh", Unary::Acosh).Case("atanh", Unary::Atanh)
            .Default(std::nullopt);
      })
      .Case([](tg::BitwiseNotOp) { return Unary::BitNot; })
      .Default([](Operation *) { return std::nullopt; });
}

std::optional<Binary> binaryKind(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<Binary>>(op)
      .Case([](tg::AddOp) { return Binary::Add; })
      .Case([](tg::SubOp) { return Binary::Sub; })
      .Case([](tg::MulOp) { return Binary::Mul; })
      .Case([](tg::DivOp) { return Binary::Div; })
      .Case([](tg::PowOp) { return Binary::Pow; })
      .Case([](tg::MaxOp) { return Binary::Max; })
      .Case([](tg::MinOp) { return Binary::Min; })
      .Case([](tg::ModOp) { return Binary::Mod; })
      .Case([](tg::EqualOp) { return Binary::Equal; })
      .Case([](tg::LessOp) { return Binary::Less; })
      .Case([](tg::LessEqualOp) { return Binary::LessEqual; })
      .Case([](tg::GreaterOp) { return Binary::Greater; })
      .Case([](tg::GreaterEqualOp) { return Binary::GreaterEqual; })
      .Case([](tg::AndOp) { return Binary::And; })
      .Case([](tg::OrOp) { return Binary::Or; })
      .Case([](tg::XorOp) { return Binary::Xor; })
      .Case([](tg::BitwiseOp b) -> std::optional<Binary> {
        return llvm::StringSwitch<std::optional<Binary>>(b.getFn())
            .Case("and", Binary::BitAnd).Case("or", Binary::BitOr).Case("xor", Binary::BitXor)
            .Case("shift_left", Binary::ShiftLeft).Case("shift_right", Binary::ShiftRight)
            .Default(std::nullopt);
      })
      .Default([](Operation *) { return std::nullopt; });
}

std::optional<Reduce> reduceKind(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<Reduce>>(op)
      .Case([](tg::ReduceSumOp) { return Reduce::Sum; })
      .Case([](tg::ReduceMeanOp) { return Reduce::Mean; })
      .Case([](tg::ReduceMaxOp) { return Reduce::Max; })
      .Case([](tg::ReduceMinOp) { return Reduce::Min; })
      .Case([](tg::ReduceProdOp) { return Reduce::Prod; })
      .Default([](Operation *) { return std::nullopt; });
}

llvm::Expected<Results> runBlock(Block &block, Operands args);

/// tg.loop: the body function run while i < M and the condition holds (TgOps.td).
llvm::Expected<Results> runLoop(tg::LoopOp loop, Operands in) {
  auto fn = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(loop, loop.getBodyAttr());
  if (!fn || fn.isExternal())
    return error("loop body '" + loop.getBody() + "' not found");
  size_t k = 0;
  int64_t trips = INT64_MAX;
  bool cond = true;
  if (loop.getHasTripCount())
    std::memcpy(&trips, in[k++]->data.data(), sizeof trips); // exact (a double is not)
  if (loop.getHasCond())
    cond = in[k++]->get(0) != 0;
  const size_t carried = (size_t)loop.getNumCarried();
  Results state;
  for (size_t i = 0; i < carried; ++i)
    state.push_back(*in[k + i]);
  for (int64_t i = 0; i < trips && cond; ++i) {
    HostTensor iter = HostTensor::zeros(DType::I64, {}), c = HostTensor::zeros(DType::Bool, {});
    iter.set(0, (double)i);
    c.set(0, 1.0);
    std::vector<const HostTensor *> args{&iter, &c};
    for (const HostTensor &t : state)
      args.push_back(&t);
    args.insert(args.end(), in.begin() + k + carried, in.end());
    auto out = runBlock(fn.getBody().front(), args);
    if (!out)
      return out.takeError();
    cond = (*out)[0].get(0) != 0;
    for (size_t j = 0; j < carried; ++j)
      state[j] = std::move((*out)[1 + j]);
  }
  return std::move(state);
}

/// Evaluates one op whose operands have been checked; errors are not yet prefixed with the op.
llvm::Expected<Results> dispatch(Operation *op, Operands in) {
  Shape outShape = op->getNumResults() ? shapeOf(op->getResult(0)) : Shape{};
  if (auto k = unaryKind(op))
    return one(interp::unary(*k, *in[0], resultDType(op)));
  if (auto k = binaryKind(op))
    return one(interp::binary(*k, *in[0], *in[1], resultDType(op), outShape));
  if (auto k = reduceKind(op)) {
    int64_t rank = in[0]->shape.size();
    std::vector<int64_t> axes;
    for (int64_t a : ints(op->getAttrOfType<ArrayAttr>("axes"))) {
      auto n = normalizeAxis(a, rank);
      if (!n)
        return error("axis " + llvm::Twine(a) + " out of range for rank " + llvm::Twine(rank));
      axes.push_back(*n);
    }
    return one(interp::reduce(*k, *in[0], axes, outShape));
  }
  int64_t rank0 = in.empty() ? 0 : in[0]->shape.size();
  return llvm::TypeSwitch<Operation *, llvm::Expected<Results>>(op)
      .Case([&](tg::ConstantOp c) { return one(interp::readConstant(c.getValue())); })
      .Case([&](tg::CastOp c) {
        return one(interp::cast(*in[0], resultDType(op), c.getSaturate().value_or(true)));
      })
      .Case([&](tg::WhereOp) { return one(interp::where(*in[0], *in[1], *in[2], outShape)); })
      .Case([&](tg::MatmulOp m) {
        if (auto b = m.getWeightBlock()) // read a weight in strips as the [K, N] it is
          return one(interp::matmul(
              *in[0], unstripMatmulWeight(*in[1], outShape.back(), (int64_t)*b), outShape));
        return one(interp::matmul(*in[0], *in[1], outShape));
      })
      .Case([&](tg::LinearOp) {
        return one(interp::linear(*in[0], *in[1], in.size() > 2 ? in[2] : nullptr, outShape));
      })
      .Case([&](tg::ConvOp c) -> llvm::Expected<Results> {
        interp::ConvParams p{ints(c.getStrides()), ints(c.getPads()), ints(c.getDilations()),
                             c.getGroupAttr().getInt()};
        // channels_last: computed as NC[D]HW, then transposed to [N, spatial..., M]; nhwc: the
        // input and weight transposed to NC[D]HW first.
        const bool last = c.getChannelsLast() || c.getNhwc();
        Shape shape = outShape;
        if (last)
          std::rotate(shape.begin() + 1, shape.end() - 1, shape.end());
        const int64_t r = (int64_t)shape.size();
        const HostTensor *bias = in.size() > 2 ? in[2] : nullptr;
        auto compute = [&]() -> llvm::Expected<HostTensor> {
          if (c.getNhwc()) {
            auto x = interp::transpose(*in[0], toChannelsFirst(r));
            if (!x)
              return x.takeError();
            auto w = interp::transpose(*in[1], toChannelsFirst(r));
            if (!w)
              return w.takeError();
            return interp::conv(*x, *w, bias, p, shape);
          }
          if (c.getWeightBlock()) // read a blocked weight as the [M, C/group, k...] it is
            return interp::conv(
                *in[0], unblockConvWeight(*in[1], shape[1], (int64_t)*c.getWeightBlock()), bias,
                p, shape);
          return interp::conv(*in[0], *in[1], bias, p, shape);
        };
        auto y = compute();
        if (!y || !last)
          return one(std::move(y));
        return one(interp::transpose(*y, toChannelsLast(r)));
      })
      .Case([&](tg::PoolOp pl) -> llvm::Expected<Results> {
        interp::PoolParams p{pl.getKind() == "max", ints(pl.getKernel()), ints(pl.getStrides()),
                             ints(pl.getPads()), ints(pl.getDilations()),
                             pl.getCountIncludePad()};
        if (!pl.getNhwc())
          return one(interp::pool(*in[0], p, outShape));
        // nhwc: pooled as NC[D]HW between two transposes.
        const int64_t r = (int64_t)outShape.size();
        Shape shape = outShape;
        std::rotate(shape.begin() + 1, shape.end() - 1, shape.end());
        auto x = interp::transpose(*in[0], toChannelsFirst(r));
        if (!x)
          return x.takeError();
        auto y = interp::pool(*x, p, shape);
        if (!y)
          return y.takeError();
        return one(interp::transpose(*y, toChannelsLast(r)));
      })
      .Case([&](tg::LayerNormOp ln) -> llvm::Expected<Results> {
        auto axis = axisOf(ln.getAxisAttr(), rank0);
        if (!axis)
          return axis.takeError();
        const HostTensor *scale = ln.getScale() ? in[1] : nullptr;
        const HostTensor *bias = ln.getBias() ? in[ln.getScale() ? 2 : 1] : nullptr;
        return one(interp::layerNorm(*in[0], scale, bias, *axis,
                                     ln.getEpsilonAttr().getValueAsDouble()));
      })
      .Case([&](tg::RmsNormOp rn) -> llvm::Expected<Results> {
        auto axis = axisOf(rn.getAxisAttr(), rank0);
        if (!axis)
          return axis.takeError();
        return one(interp::rmsNorm(*in[0], rn.getScale() ? in[1] : nullptr, *axis,
                                   rn.getEpsilonAttr().getValueAsDouble()));
      })
      .Case([&](tg::SoftmaxOp s) -> llvm::Expected<Results> {
        auto axis = axisOf(s.getAxisAttr(), rank0);
        if (!axis)
          return axis.takeError();
        return one(interp::softmax(*in[0], *axis, s.getLog()));
      })
      .Case([&](tg::RotaryOp r) {
        return one(interp::rotary(*in[0], *in[1], *in[2], r.getInterleaved()));
      })
      .Case([&](tg::SwigluOp) { return one(interp::swiglu(*in[0])); })
      .Case([&](tg::AttentionOp a) {
        return one(interp::attention(*in[0], *in[1], *in[2], a.getMask() ? in[3] : nullptr,
                                     a.getScaleAttr().getValueAsDouble(), a.getCausal(),
                                     a.getLayout() == "bshd"));
      })
      .Case([&](tg::ArgMaxOp a) -> llvm::Expected<Results> {
        auto axis = axisOf(a.getAxisAttr(), rank0);
        if (!axis)
          return axis.takeError();
        return one(interp::argmax(*in[0], *axis, a.getSelectLast(), outShape));
      })
      .Case([&](tg::ReshapeOp) { return one(interp::reshape(*in[0], outShape)); })
      .Case([&](tg::TransposeOp t) { return one(interp::transpose(*in[0], ints(t.getPerm()))); })
      .Case([&](tg::SliceOp s) {
        return one(interp::slice(*in[0], ints(s.getStarts()), ints(s.getSteps()), outShape));
      })
      .Case([&](tg::ConcatOp c) -> llvm::Expected<Results> {
        auto axis = axisOf(c.getAxisAttr(), outShape.size());
        if (!axis)
          return axis.takeError();
        return one(interp::concat(std::vector<const HostTensor *>(in.begin(), in.end()), *axis,
                                  outShape));
      })
      .Case([&](tg::SplitOp s) -> llvm::Expected<Results> {
        auto axis = axisOf(s.getAxisAttr(), rank0);
        if (!axis)
          return axis.takeError();
        std::vector<Shape> shapes;
        for (Value r : s.getResults())
          shapes.push_back(shapeOf(r));
        return interp::split(*in[0], *axis, shapes);
      })
      .Case([&](tg::GatherOp g) -> llvm::Expected<Results> {
        auto axis = axisOf(g.getAxisAttr(), rank0);
        if (!axis)
          return axis.takeError();
        return one(interp::gather(*in[0], *in[1], *axis));
      })
      .Case([&](tg::GatherElementsOp g) -> llvm::Expected<Results> {
        auto axis = axisOf(g.getAxisAttr(), rank0);
        if (!axis)
          return axis.takeError();
        return one(interp::gatherElements(*in[0], *in[1], *axis));
      })
      .Case([&](tg::CumsumOp cs) -> llvm::Expected<Results> {
        auto axis = axisOf(cs.getAxisAttr(), rank0);
        if (!axis)
          return axis.takeError();
        return one(interp::cumsum(*in[0], *axis, cs.getExclusive(), cs.getReverse()));
      })
      .Case([&](tg::ScatterElementsOp se) -> llvm::Expected<Results> {
        auto axis = axisOf(se.getAxisAttr(), rank0);
        if (!axis)
          return axis.takeError();
        auto red = llvm::StringSwitch<std::optional<interp::Scatter>>(se.getReduction())
                       .Case("none", interp::Scatter::None).Case("add", interp::Scatter::Add)
                       .Case("mul", interp::Scatter::Mul).Case("max", interp::Scatter::Max)
                       .Case("min", interp::Scatter::Min).Default(std::nullopt);
        if (!red)
          return error("unknown reduction '" + se.getReduction() + "'");
        return one(interp::scatterElements(*in[0], *in[1], *in[2], *axis, *red));
      })
      .Case([&](tg::TopkOp tk) -> llvm::Expected<Results> {
        auto axis = axisOf(tk.getAxisAttr(), rank0);
        if (!axis)
          return axis.takeError();
        return interp::topk(*in[0], *axis, outShape[*axis], tk.getLargest());
      })
      .Case([&](tg::NonzeroOp) { return interp::nonzero(*in[0]); })
      .Case([&](tg::UniqueOp u) -> llvm::Expected<Results> {
        auto axis = axisOf(u.getAxisAttr(), rank0);
        if (!axis)
          return axis.takeError();
        return interp::unique(*in[0], *axis, u.getSorted());
      })
      .Case([&](tg::NmsOp n) {
        interp::NmsParams p{n.getMaxPerClassAttr().getInt(), n.getIouThreshold().convertToDouble(),
                            n.getScoreThreshold().convertToDouble(), n.getHasScoreThreshold(),
                            n.getCenterPointBox()};
        return interp::nms(*in[0], *in[1], p);
      })
      .Case([&](tg::ExpandOp) { return one(interp::expand(*in[0], outShape)); })
      .Case([&](tg::PadOp p) {
        return one(interp::pad(*in[0], ints(p.getPads()), p.getValueAttr().getValueAsDouble(),
                               outShape));
      })
      .Case([&](tg::FusedOp f) { return runBlock(f.getBody().front(), in); })
      .Case([&](tg::LoopOp l) { return runLoop(l, in); })
      .Case<tg::YieldOp, func::ReturnOp>([&](Operation *) -> llvm::Expected<Results> {
        Results r;
        for (const HostTensor *t : in)
          r.push_back(*t);
        return std::move(r);
      })
      .Default([&](Operation *) -> llvm::Expected<Results> {
        return error("unsupported op (the interpreter knows the tg dialect only)");
      });
}

/// Checks operands, evaluates, checks results; every error names the op and its location.
llvm::Expected<Results> evaluate(Operation *op, Operands in) {
  if (in.size() != op->getNumOperands())
    return atOp(op, error("expected " + llvm::Twine(op->getNumOperands()) + " operands, got " +
                          llvm::Twine(in.size())));
  for (unsigned i = 0; i < in.size(); ++i)
    if (auto e = checkTensor(*in[i], op->getOperand(i).getType(), "operand #" + llvm::Twine(i)))
      return atOp(op, std::move(e));
  for (OpResult r : op->getResults()) {
    auto t = r.getType().dyn_cast<RankedTensorType>();
    if (!t || !t.hasStaticShape())
      return atOp(op, error("results must be statically shaped ranked tensors"));
    auto dt = dtypeOf(t.getElementType());
    if (!dt)
      return atOp(op, dt.takeError());
  }
  auto results = dispatch(op, in);
  if (!results)
    return atOp(op, results.takeError());
  if (op->getNumResults() && results->size() != op->getNumResults())
    return atOp(op, error("produced " + llvm::Twine(results->size()) + " results, expected " +
                          llvm::Twine(op->getNumResults())));
  for (unsigned i = 0; i < op->getNumResults(); ++i)
    if (auto e = checkTensor((*results)[i], op->getResult(i).getType(),
                             "result #" + llvm::Twine(i)))
      return atOp(op, std::move(e));
  return results;
}

/// Runs a block with its arguments bound to `args`; the terminator's operands are the results.
llvm::Expected<Results> runBlock(Block &block, Operands args) {
  if (args.size() != block.getNumArguments())
    return error("block expects " + llvm::Twine(block.getNumArguments()) + " arguments, got " +
                 llvm::Twine(args.size()));
  llvm::DenseMap<Value, const HostTensor *> bound;
  for (auto [arg, t] : llvm::zip(block.getArguments(), args))
    bound[arg] = t;
  llvm::DenseMap<Value, Operation *> lastUser;
  for (Operation &op : block)
    for (Value v : op.getOperands())
      lastUser[v] = &op;

  llvm::DenseMap<Value, std::unique_ptr<HostTensor>> owned;
  for (Operation &op : block) {
    std::vector<const HostTensor *> in;
    for (Value v : op.getOperands()) {
      auto it = owned.find(v);
      const HostTensor *t = it != owned.end() ? it->second.get() : bound.lookup(v);
      if (!t)
        return atOp(&op, error("operand defined outside this block or not yet computed"));
      in.push_back(t);
    }
    auto results = evaluate(&op, in);
    if (!results)
      return results.takeError();
    if (op.hasTrait<OpTrait::IsTerminator>())
      return results;
    for (Value v : op.getOperands())
      if (lastUser.lookup(v) == &op)
        owned.erase(v);
    for (auto [r, t] : llvm::zip(op.getResults(), *results))
      if (!r.use_empty())
        owned[r] = std::make_unique<HostTensor>(std::move(t));
  }
  return error("block has no terminator");
}

} // namespace

llvm::Expected<std::vector<HostTensor>> evaluateOp(Operation *op,
                                                   const std::vector<HostTensor> &operands) {
  std::vector<const HostTensor *> in;
  for (const HostTensor &t : operands)
    in.push_back(&t);
  return evaluate(op, in);
}

llvm::Expected<std::vector<HostTensor>> interpret(func::FuncOp fn,
                                                  const std::vector<HostTensor> &inputs) {
  if (fn.isExternal())
    return error("function @" + fn.getName() + " has no body");
  auto argTypes = fn.getFunctionType().getInputs();
  if (inputs.size() != argTypes.size())
    return error("function @" + fn.getName() + " takes " + llvm::Twine(argTypes.size()) +
                 " inputs, got " + llvm::Twine(inputs.size()));
  std::vector<const HostTensor *> in;
  for (unsigned i = 0; i < inputs.size(); ++i) {
    std::string what = "input #" + std::to_string(i);
    if (auto name = fn.getArgAttrOfType<StringAttr>(i, "tg.name"))
      what = "input '" + name.getValue().str() + "' (#" + std::to_string(i) + ")";
    if (auto e = checkTensor(inputs[i], argTypes[i], what))
      return std::move(e);
    in.push_back(&inputs[i]);
  }
  auto results = runBlock(fn.getBody().front(), in);
  if (!results)
    return results.takeError();
  for (unsigned i = 0; i < results->size(); ++i) {
    auto name = i < fn.getNumResults() ? fn.getResultAttrOfType<StringAttr>(i, "tg.name")
                                       : StringAttr();
    (*results)[i].name = name ? name.getValue().str() : "output_" + std::to_string(i);
  }
  return results;
}

} // namespace tgc
