// RecognizeActivations.cpp — `tgc-recognize-activations`: GELU (erf, tanh) and SiLU.
//
// Exporters decompose activations into 5–9 elementwise ops whose order depends on how the
// model's Python wrote the formula. One tg.gelu / tg.silu is cheaper to fuse, to lower to
// fast math, and to read in dumps. Every rule matches the root product as a multiset of
// factors (Match.h), so association order and operand order do not matter; formula constants
// are compared with a 1e-4 relative tolerance.
#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "passes/common/Rules.h"
#include "passes/recognition/Match.h"
#include "passes/recognition/Passes.h"

namespace tgc {
namespace {
#define GEN_PASS_CLASSES
#include "passes/recognition/Passes.h.inc"

using namespace tgc::recognition;
using mlir::LogicalResult;
using mlir::PatternRewriter;
using mlir::success;
using mlir::Value;

/// When `t` is `1 + f(z)` (either order, f = OpT), returns z.
template <typename OpT> Value onePlus(Value t) {
  auto add = t.getDefiningOp<tg::AddOp>();
  if (!add)
    return {};
  for (auto [a, b] : {std::pair{add.getLhs(), add.getRhs()}, {add.getRhs(), add.getLhs()}})
    if (auto f = a.getDefiningOp<OpT>(); f && isSplatNear(b, 1.0) && isScalarShaped(b))
      return f.getInput();
  return {};
}

/// True when `z` is x/√2 (Div by √2, or a product of x with constants totalling 1/√2).
bool isXOverSqrt2(Value z, Value x) {
  if (auto div = z.getDefiningOp<tg::DivOp>())
    return div.getLhs() == x && isSplatNear(div.getRhs(), std::sqrt(2.0)) &&
           isScalarShaped(div.getRhs());
  Product p = splitProduct(z);
  return p.others.size() == 1 && p.others[0] == x && near(p.constant, 1.0 / std::sqrt(2.0));
}

/// True when `v` is x³ written as pow(x, 3), x·x·x or x·pow(x, 2), times constants ≈ `coeff`.
bool isScaledCube(Value v, Value x, double coeff) {
  Product p = splitProduct(v);
  if (!near(p.constant, coeff))
    return false;
  int power = 0;
  for (Value f : p.others) {
    if (f == x) {
      ++power;
      continue;
    }
    auto pow = f.getDefiningOp<tg::PowOp>();
    auto e = pow ? splatValue(pow.getRhs()) : std::nullopt;
    if (!pow || pow.getLhs() != x || !e || (*e != 2.0 && *e != 3.0) ||
        !isScalarShaped(pow.getRhs()))
      return false;
    power += (int)*e;
  }
  return power == 3;
}

/// Matches root = 0.5 · x · t over any association order; returns x when `isTerm(t, x)`.
template <typename F> Value matchHalfXTimes(tg::MulOp root, F isTerm) {
  Product p = splitProduct(root.getResult());
  if (p.others.size() != 2 || !near(p.constant, 0.5))
    return {};
  for (int i = 0; i < 2; ++i) {
    Value x = p.others[i], t = p.others[1 - i];
    if (x.getType() == root.getType() && isTerm(t, x))
      return x;
  }
  return {};
}

// x * 0.5 * (1 + erf(x / √2)) -> gelu(x)
struct RecognizeGeluErf : public Rule<tg::MulOp> {
  explicit RecognizeGeluErf(mlir::MLIRContext *ctx) : Rule(ctx, "RecognizeGeluErf") {}

  LogicalResult apply(tg::MulOp op, PatternRewriter &rewriter) const override {
    Value x = matchHalfXTimes(op, [](Value t, Value x) {
      Value z = onePlus<tg::ErfOp>(t);
      return z && isXOverSqrt2(z, x);
    });
    if (!x)
      return rewriter.notifyMatchFailure(op, "not 0.5 * x * (1 + erf(x / sqrt(2)))");
    rewriter.replaceOpWithNewOp<tg::GeluOp>(op, op.getType(), x, false);
    return success();
  }
};

// 0.5 * x * (1 + tanh(√(2/π) * (x + 0.044715 * x³))) -> gelu(x) {tanh_approx}
struct RecognizeGeluTanh : public Rule<tg::MulOp> {
  explicit RecognizeGeluTanh(mlir::MLIRContext *ctx) : Rule(ctx, "RecognizeGeluTanh") {}

  LogicalResult apply(tg::MulOp op, PatternRewriter &rewriter) const override {
    Value x = matchHalfXTimes(op, [](Value t, Value x) {
      Value u = onePlus<tg::TanhOp>(t);
      if (!u)
        return false;
      Product inner = splitProduct(u);
      if (inner.others.size() != 1 || !near(inner.constant, std::sqrt(2.0 / M_PI)))
        return false;
      auto sum = inner.others[0].getDefiningOp<tg::AddOp>();
      if (!sum)
        return false;
      Value cube = otherOperand(sum, x);
      return cube && isScaledCube(cube, x, 0.044715);
    });
    if (!x)
      return rewriter.notifyMatchFailure(
          op, "not 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))");
    rewriter.replaceOpWithNewOp<tg::GeluOp>(op, op.getType(), x, true);
    return success();
  }
};

// x * sigmoid(x) -> silu(x)
struct RecognizeSilu : public Rule<tg::MulOp> {
  explicit RecognizeSilu(mlir::MLIRContext *ctx) : Rule(ctx, "RecognizeSilu") {}

  LogicalResult apply(tg::MulOp op, PatternRewriter &rewriter) const override {
    for (auto [x, s] : {std::pair{op.getLhs(), op.getRhs()}, {op.getRhs(), op.getLhs()}}) {
      auto sig = s.getDefiningOp<tg::SigmoidOp>();
      if (sig && sig.getInput() == x && x.getType() == op.getType()) {
        rewriter.replaceOpWithNewOp<tg::SiluOp>(op, op.getType(), x);
        return success();
      }
    }
    return rewriter.notifyMatchFailure(op, "not x * sigmoid(x) of one x");
  }
};

struct RecognizeActivationsPass : public RecognizeActivationsBase<RecognizeActivationsPass> {
  void runOnOperation() override {
    mlir::RewritePatternSet patterns(&getContext());
    patterns.add<RecognizeGeluErf, RecognizeGeluTanh, RecognizeSilu>(&getContext());
    if (mlir::failed(applyRules(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

std::unique_ptr<mlir::Pass> createRecognizeActivationsPass() {
  return std::make_unique<RecognizeActivationsPass>();
}

} // namespace tgc
