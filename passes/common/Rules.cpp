// Rules.cpp — rule registry (switches, hit counters) and the fixed-point driver call.
#include "passes/common/Rules.h"

#include "mlir/Rewrite/FrozenRewritePatternSet.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <algorithm>
#include <mutex>
#include <set>

namespace tgc {

struct RuleRegistry::State {
  mutable std::mutex mu;
  std::vector<std::string> disabled, enabled;
  std::map<std::string, int64_t> hits;
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

void RuleRegistry::setDisabled(std::vector<std::string> labels) {
  std::lock_guard<std::mutex> lock(state().mu);
  state().disabled = std::move(labels);
}

void RuleRegistry::setEnabled(std::vector<std::string> labels) {
  std::lock_guard<std::mutex> lock(state().mu);
  state().enabled = std::move(labels);
}

std::vector<std::string> RuleRegistry::disabled() const {
  std::lock_guard<std::mutex> lock(state().mu);
  return state().disabled;
}

std::vector<std::string> RuleRegistry::enabled() const {
  std::lock_guard<std::mutex> lock(state().mu);
  return state().enabled;
}

void RuleRegistry::hit(llvm::StringRef name) {
  std::lock_guard<std::mutex> lock(state().mu);
  ++state().hits[name.str()];
}

std::map<std::string, int64_t> RuleRegistry::hits() const {
  std::lock_guard<std::mutex> lock(state().mu);
  return state().hits;
}

void RuleRegistry::resetHits() {
  std::lock_guard<std::mutex> lock(state().mu);
  state().hits.clear();
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
  std::vector<std::string> disabled = r.disabled(), enabled = r.enabled();
  mlir::FrozenRewritePatternSet frozen(std::move(patterns), disabled, enabled);
  mlir::GreedyRewriteConfig config;
  config.maxIterations = 32;
  // Not converging within the limit is not an error for us: the IR is valid at every step.
  (void)mlir::applyPatternsAndFoldGreedily(op, frozen, config);
  return mlir::success();
}

} // namespace tgc
