// FormKernels.cpp — `tgc-form-kernels`: pointwise chains and GEMM / convolution epilogues →
// tg.fused.
//
// Kernels are formed greedily in program order (see Passes.td for the rule). Every kernel has a
// single result, so codegen emits one loop nest per kernel and the buffer planner sees one
// output per step. Chains across multi-use values stay separate kernels, except a convolution's
// output read only by elementwise ops that all join its kernel (hardswish): recomputing shared
// producers is a later, measured decision.
#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BlockAndValueMapping.h"
#include "mlir/IR/Builders.h"
#include "passes/kernels/Passes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

#include <optional>

namespace tgc {
namespace {
#define GEN_PASS_CLASSES
#include "passes/kernels/Passes.h.inc"

struct Group {
  llvm::SmallVector<mlir::Operation *> ops; ///< in program order; back() is the output
  const char *kind = "pointwise"; ///< "gemm" / "conv": seeded by a linear or matmul / a conv
};

bool isSplatConstant(mlir::Value v) {
  auto c = v.getDefiningOp<tg::ConstantOp>();
  auto dense = c ? c.getValue().dyn_cast<mlir::DenseElementsAttr>() : nullptr;
  return dense && dense.isSplat();
}

/// True when operand `v` of `user` is written into the kernel as a literal: splat constants,
/// except GEMM and convolution operands (a splat bias or weight still needs a buffer for the
/// library call).
bool isInlinedOperand(mlir::Operation *user, mlir::Value v) {
  return isSplatConstant(v) && !llvm::isa<tg::LinearOp, tg::MatmulOp, tg::ConvOp>(user);
}

mlir::Type resultType(mlir::Operation *op) { return op->getResult(0).getType(); }

/// Builds the tg.fused op for `g` right before its output op and erases the members.
void materialize(Group &g) {
  mlir::Operation *out = g.ops.back();
  llvm::SmallPtrSet<mlir::Operation *, 8> members(g.ops.begin(), g.ops.end());
  llvm::SetVector<mlir::Value> inputs;
  for (mlir::Operation *op : g.ops)
    for (mlir::Value v : op->getOperands())
      if (!members.contains(v.getDefiningOp()) && !isInlinedOperand(op, v))
        inputs.insert(v);

  mlir::OpBuilder b(out);
  llvm::SmallVector<mlir::Location> locs;
  for (mlir::Operation *op : g.ops)
    locs.push_back(op->getLoc());
  auto fused = b.create<tg::FusedOp>(b.getFusedLoc(locs), resultType(out),
                                     inputs.getArrayRef(), g.kind);
  mlir::Block *body = new mlir::Block();
  fused.getBody().push_back(body);
  mlir::BlockAndValueMapping map;
  for (mlir::Value v : inputs)
    map.map(v, body->addArgument(v.getType(), v.getLoc()));
  mlir::OpBuilder inner = mlir::OpBuilder::atBlockEnd(body);
  for (mlir::Operation *op : g.ops) {
    for (mlir::Value v : op->getOperands())
      if (isInlinedOperand(op, v) && !map.contains(v))
        map.map(v, inner.clone(*v.getDefiningOp())->getResult(0));
    inner.clone(*op, map);
  }
  inner.create<tg::YieldOp>(out->getLoc(), mlir::ValueRange{map.lookup<mlir::Value>(out->getResult(0))});
  out->getResult(0).replaceAllUsesWith(fused.getResult());
  for (mlir::Operation *op : llvm::reverse(g.ops))
    op->erase();
}

/// True when every reader of `v` is an elementwise op of `v`'s shape: candidates to join the
/// kernel `v` is the output of, all of them.
bool readersAllPointwise(mlir::Value v) {
  return llvm::all_of(v.getUsers(), [&](mlir::Operation *u) {
    return isPointwiseOp(u) && resultType(u).cast<mlir::ShapedType>().getShape() ==
                                   v.getType().cast<mlir::ShapedType>().getShape();
  });
}

/// The kernels of `block`, in program order. The output of a convolution's kernel read by
/// several elementwise ops (hardswish reads x twice: x * min(max(x / 6 + 1/2, 0), 1)) lets
/// the first of them join, unless `noShared` holds the convolution: the others must then join
/// too, which the caller checks.
std::vector<Group> formGroups(mlir::Block &block,
                              const llvm::SmallPtrSetImpl<mlir::Operation *> &noShared) {
  std::vector<Group> groups;
  llvm::DenseMap<mlir::Operation *, size_t> groupOf; // current output op → group index
  for (mlir::Operation &opRef : block) {
    mlir::Operation *op = &opRef;
    if (llvm::isa<tg::LinearOp, tg::MatmulOp, tg::ConvOp>(op)) {
      groups.push_back({{op}, llvm::isa<tg::ConvOp>(op) ? "conv" : "gemm"});
      groupOf[op] = groups.size() - 1;
      continue;
    }
    if (!isPointwiseOp(op))
      continue;
    // Join the group whose output feeds this op, if the rule allows.
    std::optional<size_t> joined;
    for (mlir::Value v : op->getOperands()) {
      mlir::Operation *def = v.getDefiningOp();
      auto it = def ? groupOf.find(def) : groupOf.end();
      if (it == groupOf.end() ||
          resultType(def).cast<mlir::ShapedType>().getShape() !=
              resultType(op).cast<mlir::ShapedType>().getShape())
        continue;
      const Group &g = groups[it->second];
      const bool shared = !def->getResult(0).hasOneUse();
      if (shared && !(llvm::StringRef(g.kind) == "conv" && g.ops.size() == 1 &&
                      !noShared.contains(def) && readersAllPointwise(v)))
        continue;
      joined = it->second;
      groupOf.erase(it);
      break;
    }
    if (!joined) {
      groups.push_back({{}, "pointwise"});
      joined = groups.size() - 1;
    }
    groups[*joined].ops.push_back(op);
    groupOf[op] = *joined;
  }
  return groups;
}

/// The first op of a group whose value, other than the group's output, is read outside it.
mlir::Operation *leaksValue(const Group &g) {
  llvm::SmallPtrSet<mlir::Operation *, 8> members(g.ops.begin(), g.ops.end());
  for (mlir::Operation *op : g.ops)
    if (op != g.ops.back() &&
        llvm::any_of(op->getUsers(), [&](mlir::Operation *u) { return !members.contains(u); }))
      return g.ops.front();
  return nullptr;
}

struct FormKernelsPass : public FormKernelsBase<FormKernelsPass> {
  void runOnOperation() override {
    mlir::Block &block = getOperation().getBody().front();
    // A convolution whose shared output's readers did not all join its kernel is grouped
    // again without sharing (each round adds one, so this ends).
    llvm::SmallPtrSet<mlir::Operation *, 8> noShared;
    std::vector<Group> groups;
    for (bool again = true; again;) {
      again = false;
      groups = formGroups(block, noShared);
      for (const Group &g : groups)
        if (g.ops.size() >= 2)
          if (mlir::Operation *seed = leaksValue(g); seed && noShared.insert(seed).second)
            again = true;
    }
    for (Group &g : groups)
      if (g.ops.size() >= 2)
        materialize(g);
  }
};
} // namespace

bool isPointwiseOp(mlir::Operation *op) {
  if (op->getNumResults() != 1)
    return false;
  return llvm::isa<tg::NegOp, tg::AbsOp, tg::SignOp, tg::ExpOp, tg::LogOp, tg::SqrtOp,
                   tg::RsqrtOp, tg::ReciprocalOp, tg::TanhOp, tg::SigmoidOp, tg::ErfOp,
                   tg::ReluOp, tg::SiluOp, tg::SinOp, tg::CosOp, tg::FloorOp, tg::CeilOp,
                   tg::RoundOp, tg::NotOp, tg::GeluOp, tg::MathOp, tg::IsNanOp, tg::CastOp, tg::AddOp,
                   tg::SubOp, tg::MulOp, tg::DivOp, tg::PowOp, tg::MaxOp, tg::MinOp, tg::ModOp,
                   tg::EqualOp, tg::LessOp, tg::LessEqualOp, tg::GreaterOp, tg::GreaterEqualOp,
                   tg::AndOp, tg::OrOp, tg::XorOp, tg::WhereOp, tg::ExpandOp, tg::BitwiseOp,
                   tg::BitwiseNotOp>(op);
}

std::unique_ptr<mlir::Pass> createFormKernelsPass() {
  return std::make_unique<FormKernelsPass>();
}

} // namespace tgc
