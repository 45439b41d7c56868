// BatchIndependentLinears.cpp — `tgc-batch-independent-linears`: independent same-shape linears
// on different inputs become one batched matmul.
//
// The seed's two-step greedy search. Step 1 buckets the linears by a rule key (input type, weight
// type, bias type, result type; constant weights). Step 2 splits each bucket into sets whose
// members do not depend on one another: a breadth-first search over the def-use graph (bounded
// by `search-depth`) from each member must not reach another. A set is rewritten as
//   stack the inputs [S, rows, K] -> matmul with stacked Wᵀ [S, K, M] (+ bias) -> split -> reshape,
// inserted after the last input's definition and before the first use of any member's result,
// so the rewrite never creates a cycle. Stacking the inputs is a copy, so the rule pays off only
// where launches dominate (many small linears); it is not in the default pipeline.
#include "compiler/dialect/TgDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "passes/common/Rules.h"
#include "passes/horizontal/Passes.h"
#include "passes/horizontal/Stacking.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

#include <deque>

namespace tgc {
namespace {
#define GEN_PASS_CLASSES
#include "passes/horizontal/Passes.h.inc"

constexpr const char *kRuleName = "BatchIndependentLinears";

mlir::RankedTensorType typeOf(mlir::Value v) {
  return v.getType().cast<mlir::RankedTensorType>();
}

/// The op of `block` that holds `op` (itself, or the ancestor for ops in nested regions).
mlir::Operation *inBlock(mlir::Operation *op, mlir::Block *block) {
  return block->findAncestorOpInBlock(*op);
}

/// Ops reachable from `from` along def-use edges within `depth` steps, ignoring ops after
/// `limit` (they cannot lead back to an op before them). `truncated` is set when the depth bound
/// cut the search short, in which case reachability beyond it is unknown.
llvm::DenseSet<mlir::Operation *> reachable(mlir::Operation *from, mlir::Operation *limit,
                                            int64_t depth, bool &truncated) {
  mlir::Block *block = from->getBlock();
  llvm::DenseSet<mlir::Operation *> seen;
  std::deque<std::pair<mlir::Operation *, int64_t>> queue{{from, 0}};
  truncated = false;
  while (!queue.empty()) {
    auto [op, d] = queue.front();
    queue.pop_front();
    for (mlir::Value r : op->getResults())
      for (mlir::Operation *user : r.getUsers()) {
        mlir::Operation *u = inBlock(user, block);
        if (!u || (u != limit && limit->isBeforeInBlock(u)) || !seen.insert(u).second)
          continue;
        if (d + 1 >= depth) {
          truncated = true;
          continue;
        }
        queue.push_back({u, d + 1});
      }
  }
  return seen;
}

/// The rule key of step 1: linears with equal keys can share one batched matmul.
using Key = std::tuple<mlir::Type, mlir::Type, mlir::Type, mlir::Type>;

struct Candidate {
  tg::LinearOp op;
  mlir::Operation *lastDef; ///< the input's defining op in the block, or null for an argument
  mlir::Operation *firstUse; ///< the first op in the block using the result
};

/// Where a set may be rewritten: after every input's definition, before every result's use.
bool placeable(llvm::ArrayRef<Candidate> set) {
  mlir::Operation *lastDef = nullptr, *firstUse = nullptr;
  for (const Candidate &c : set) {
    if (c.lastDef && (!lastDef || lastDef->isBeforeInBlock(c.lastDef)))
      lastDef = c.lastDef;
    if (c.firstUse && (!firstUse || c.firstUse->isBeforeInBlock(firstUse)))
      firstUse = c.firstUse;
  }
  return !lastDef || !firstUse || lastDef->isBeforeInBlock(firstUse);
}

struct BatchIndependentLinearsPass
    : public BatchIndependentLinearsBase<BatchIndependentLinearsPass> {
  BatchIndependentLinearsPass() { RuleRegistry::get().declare(kRuleName); }

  bool ruleEnabled() { return RuleRegistry::get().allowed(&getContext(), kRuleName); }

  Candidate describe(tg::LinearOp lin) {
    mlir::Block *block = lin->getBlock();
    Candidate c{lin, nullptr, nullptr};
    if (mlir::Operation *def = lin.getInput().getDefiningOp())
      c.lastDef = inBlock(def, block);
    for (mlir::Operation *user : lin.getResult().getUsers()) {
      mlir::Operation *u = inBlock(user, block);
      if (u && (!c.firstUse || u->isBeforeInBlock(c.firstUse)))
        c.firstUse = u;
    }
    return c;
  }

  /// Step 2: greedy sets of mutually independent members, in program order.
  std::vector<std::vector<Candidate>> independentSets(llvm::MutableArrayRef<tg::LinearOp> group) {
    mlir::Operation *last = group.back();
    std::vector<llvm::DenseSet<mlir::Operation *>> reach;
    std::vector<bool> truncated;
    for (tg::LinearOp lin : group) {
      bool t = false;
      reach.push_back(reachable(lin, last, searchDepth, t));
      truncated.push_back(t);
    }
    std::vector<std::vector<Candidate>> sets;
    std::vector<std::vector<size_t>> members;
    for (size_t i = 0; i < group.size(); ++i) {
      Candidate c = describe(group[i]);
      bool placed = false;
      for (size_t s = 0; s < sets.size() && !placed; ++s) {
        if ((int64_t)sets[s].size() >= maxSetSize)
          continue;
        // Members come earlier in program order: only they can reach the candidate.
        bool independent = llvm::all_of(members[s], [&](size_t m) {
          return !truncated[m] && !reach[m].contains(group[i]) &&
                 group[m].getInput() != group[i].getInput();
        });
        if (!independent)
          continue;
        sets[s].push_back(c);
        if (!placeable(sets[s])) {
          sets[s].pop_back();
          continue;
        }
        members[s].push_back(i);
        placed = true;
      }
      if (!placed) {
        sets.push_back({c});
        members.push_back({i});
      }
    }
    return sets;
  }

  // linear(x_1, W_1, b_1), ..., linear(x_S, W_S, b_S), independent, equal shapes
  //   ==> split(matmul(concat(x_i[1, rows, K]), stack(W_iᵀ)) + stack(b_i), 0) reshaped back
  bool rewrite(llvm::ArrayRef<Candidate> planned) {
    // Earlier rewrites moved uses around: describe the members afresh.
    std::vector<Candidate> set;
    for (const Candidate &c : planned)
      set.push_back(describe(c.op));
    if (!placeable(set))
      return false;
    tg::LinearOp first = set[0].op;
    auto xt = typeOf(first.getInput()), wt = typeOf(first.getWeight());
    mlir::Type elem = xt.getElementType();
    int64_t S = set.size(), K = xt.getShape().back(), M = wt.getShape()[0];
    int64_t rows = xt.getNumElements() / std::max<int64_t>(K, 1);
    llvm::SmallVector<mlir::ElementsAttr> weights, biases;
    llvm::SmallVector<mlir::Location> locs;
    mlir::Operation *lastDef = nullptr;
    for (Candidate &c : set) {
      weights.push_back(*constantOf(c.op.getWeight()));
      if (c.op.getBias())
        biases.push_back(*constantOf(c.op.getBias()));
      locs.push_back(c.op.getLoc());
      if (c.lastDef && (!lastDef || lastDef->isBeforeInBlock(c.lastDef)))
        lastDef = c.lastDef;
    }
    auto wType = mlir::RankedTensorType::get({S, K, M}, elem);
    auto bType = mlir::RankedTensorType::get({S, 1, M}, elem);
    mlir::DenseElementsAttr w = stackTransposed(weights, wType), b;
    if (!w || (!biases.empty() && !(b = concatConstants(biases, bType))))
      return false;

    mlir::OpBuilder builder(&getContext());
    mlir::Block *block = first->getBlock();
    if (lastDef)
      builder.setInsertionPointAfter(lastDef);
    else
      builder.setInsertionPointToStart(block);
    mlir::Location loc = builder.getFusedLoc(locs);
    auto rowType = mlir::RankedTensorType::get({1, rows, K}, elem);
    llvm::SmallVector<mlir::Value> stacked;
    for (Candidate &c : set)
      stacked.push_back(builder.create<tg::ReshapeOp>(loc, rowType, c.op.getInput()));
    mlir::Value v = builder.create<tg::ConcatOp>(
        loc, mlir::RankedTensorType::get({S, rows, K}, elem), stacked,
        builder.getI64IntegerAttr(0));
    auto outType = mlir::RankedTensorType::get({S, rows, M}, elem);
    mlir::Value wv = builder.create<tg::ConstantOp>(loc, wType, w);
    v = builder.create<tg::MatmulOp>(loc, outType, v, wv);
    if (b) {
      mlir::Value bv = builder.create<tg::ConstantOp>(loc, bType, b);
      v = builder.create<tg::AddOp>(loc, outType, v, bv);
    }
    llvm::SmallVector<mlir::Type> parts(S, mlir::RankedTensorType::get({1, rows, M}, elem));
    auto split = builder.create<tg::SplitOp>(loc, parts, v, builder.getI64IntegerAttr(0));
    for (auto [c, r] : llvm::zip(set, split.getResults()))
      c.op.getResult().replaceAllUsesWith(
          builder.create<tg::ReshapeOp>(loc, c.op.getType(), r).getResult());
    // Erased last: the insertion point may sit right before one of them.
    for (Candidate &c : set)
      c.op->erase();
    return true;
  }

  void runOnOperation() override {
    if (!ruleEnabled())
      return;
    if (minSetSize < 2 || maxSetSize < minSetSize || searchDepth < 1) {
      getOperation().emitError() << "tgc-batch-independent-linears: need 2 <= min-set-size <= "
                                    "max-set-size and search-depth >= 1";
      return signalPassFailure();
    }
    for (mlir::Block &block : getOperation().getBody()) {
      // Step 1: candidates by rule key, in program order.
      llvm::MapVector<Key, llvm::SmallVector<tg::LinearOp>> groups;
      for (mlir::Operation &op : block) {
        auto lin = llvm::dyn_cast<tg::LinearOp>(op);
        if (!lin || !constantOf(lin.getWeight()) ||
            (lin.getBias() && !constantOf(lin.getBias())) ||
            typeOf(lin.getWeight()).getElementType() != typeOf(lin.getInput()).getElementType())
          continue;
        mlir::Type bias = lin.getBias() ? lin.getBias().getType() : mlir::Type();
        groups[{lin.getInput().getType(), lin.getWeight().getType(), bias, lin.getType()}]
            .push_back(lin);
      }
      for (auto &entry : groups) {
        if ((int64_t)entry.second.size() < minSetSize)
          continue;
        for (const auto &set : independentSets(entry.second))
          if ((int64_t)set.size() >= minSetSize && rewrite(set))
            RuleRegistry::get().hit(&getContext(), kRuleName);
      }
    }
  }
};
} // namespace

std::unique_ptr<mlir::Pass> createBatchIndependentLinearsPass() {
  return std::make_unique<BatchIndependentLinearsPass>();
}

} // namespace tgc
