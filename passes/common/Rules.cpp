// Rules.cpp — rule registry (switches, hit counters) and the fixed-point driver call.
#include "passes/common/Rules.h"

#include "mlir/Rewrite/FrozenRewritePatternSet.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <algorithm>
#include <mutex>
#include <set>

namespace tgc {

struct RuleRegistry::State {
  struct Settings {
    std::vector<std::string> disabled, enabled;
    std::map<std::string, int64_t> hits;
  };
  mutable std::mutex mu;
  std::map<const mlir::MLIRContext *, Settings> perContext;
  std::set<std::string> known;
};

RuleRegistry &RuleRegistry::get() {
  static RuleRegistry registry;
  return registry;
}

RuleRegistry::State &RuleRegistry::state() const {
  static State s;
  return s;
}

void RuleRegistry::setDisabled(mlir::MLIRContext *ctx, std::vector<std::string> labels) {
  std::lock_guard<std::mutex> lock(state().mu);
  state().perContext[ctx].disabled = std::move(labels);
}

void RuleRegistry::setEnabled(mlir::MLIRContext *ctx, std::vector<std::string> labels) {
  std::lock_guard<std::mutex> lock(state().mu);
  state().perContext[ctx].enabled = std::move(labels);
}

std::vector<std::string> RuleRegistry::disabled(mlir::MLIRContext *ctx) const {
  std::lock_guard<std::mutex> lock(state().mu);
  auto it = state().perContext.find(ctx);
  return it == state().perContext.end() ? std::vector<std::string>{} : it->second.disabled;
}

std::vector<std::string> RuleRegistry::enabled(mlir::MLIRContext *ctx) const {
  std::lock_guard<std::mutex> lock(state().mu);
  auto it = state().perContext.find(ctx);
  return it == state().perContext.end() ? std::vector<std::string>{} : it->second.enabled;
}

bool RuleRegistry::allowed(mlir::MLIRContext *ctx, llvm::StringRef name) const {
  const std::vector<std::string> off = disabled(ctx), on = enabled(ctx);
  if (std::find(off.begin(), off.end(), name) != off.end())
    return false;
  return on.empty() || std::find(on.begin(), on.end(), name) != on.end();
}

void RuleRegistry::hit(mlir::MLIRContext *ctx, llvm::StringRef name) {
  std::lock_guard<std::mutex> lock(state().mu);
  // Counted for contexts a compile registered (setDisabled/setEnabled/resetHits) and forgets;
  // another context (tgc-opt, a test) would otherwise leave an entry behind.
  if (auto it = state().perContext.find(ctx); it != state().perContext.end())
    ++it->second.hits[name.str()];
}

std::map<std::string, int64_t> RuleRegistry::hits(mlir::MLIRContext *ctx) const {
  std::lock_guard<std::mutex> lock(state().mu);
  auto it = state().perContext.find(ctx);
  return it == state().perContext.end() ? std::map<std::string, int64_t>{} : it->second.hits;
}

void RuleRegistry::resetHits(mlir::MLIRContext *ctx) {
  std::lock_guard<std::mutex> lock(state().mu);
  state().perContext[ctx].hits.clear();
}

void RuleRegistry::forget(mlir::MLIRContext *ctx) {
  std::lock_guard<std::mutex> lock(state().mu);
  state().perContext.erase(ctx);
}

void RuleRegistry::declare(llvm::StringRef name) {
  std::lock_guard<std::mutex> lock(state().mu);
  state().known.insert(name.str());
}

std::vector<std::string> RuleRegistry::known() const {
  std::lock_guard<std::mutex> lock(state().mu);
  return {state().known.begin(), state().known.end()};
}

mlir::LogicalResult applyRules(mlir::Operation *op, mlir::RewritePatternSet &&patterns) {
  RuleRegistry &r = RuleRegistry::get();
  mlir::MLIRContext *ctx = op->getContext();
  std::vector<std::string> disabled = r.disabled(ctx), enabled = r.enabled(ctx);
  mlir::FrozenRewritePatternSet frozen(std::move(patterns), disabled, enabled);
  mlir::GreedyRewriteConfig config;
  config.maxIterations = 32;
  // Not converging within the limit is not an error for us: the IR is valid at every step.
  (void)mlir::applyPatternsAndFoldGreedily(op, frozen, config);
  return mlir::success();
}

} // namespace tgc
