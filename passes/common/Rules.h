// Rules.h — atomic rewrite rules: a labelled OpRewritePattern base, hit counters, and the
// switchboard behind --disable-rules / --enable-rules.
//
// Every graph rewrite in passes/ is one `Rule<OpT>`: it has a name (its label), counts its hits,
// and can be switched off by name. Passes collect their rules into a RewritePatternSet and call
// `applyRules`, which runs MLIR's greedy driver to a fixed point with the switched-off labels
// filtered out.
#ifndef TGC_PASSES_COMMON_RULES_H
#define TGC_PASSES_COMMON_RULES_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/PatternMatch.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tgc {

/// The integers of an I64ArrayAttr (perm, strides, pads, ...), for rules that inspect them.
inline std::vector<int64_t> intsOf(mlir::ArrayAttr a) {
  std::vector<int64_t> r;
  for (mlir::Attribute v : a)
    r.push_back(v.cast<mlir::IntegerAttr>().getInt());
  return r;
}

/// Rule switches and hit counters, kept per MLIRContext (one compile's context), so compiles on
/// several threads of one process (the C and Python APIs) neither share switches nor mix counts;
/// the set of known rule names is process-wide. Thread-safe.
class RuleRegistry {
public:
  static RuleRegistry &get();

  /// Labels of rules that must not run in `ctx` (--disable-rules).
  void setDisabled(mlir::MLIRContext *ctx, std::vector<std::string> labels);
  /// When non-empty, only rules with these labels run in `ctx` (--enable-rules).
  void setEnabled(mlir::MLIRContext *ctx, std::vector<std::string> labels);
  std::vector<std::string> disabled(mlir::MLIRContext *ctx) const;
  std::vector<std::string> enabled(mlir::MLIRContext *ctx) const;
  /// True when the rule labelled `name` may run in `ctx`.
  bool allowed(mlir::MLIRContext *ctx, llvm::StringRef name) const;

  /// Records that rule `name` applied once in `ctx` (counted only when `ctx` was registered by
  /// setDisabled, setEnabled or resetHits; forget() drops it).
  void hit(mlir::MLIRContext *ctx, llvm::StringRef name);
  /// Rule name → times applied in `ctx` since its last reset.
  std::map<std::string, int64_t> hits(mlir::MLIRContext *ctx) const;
  void resetHits(mlir::MLIRContext *ctx);
  /// Drops everything kept for `ctx` (call before the context is destroyed: a later context
  /// at the same address must start with no switches).
  void forget(mlir::MLIRContext *ctx);

  /// Registers a rule name as known (for --list-rules and validating --disable-rules).
  void declare(llvm::StringRef name);
  std::vector<std::string> known() const;

private:
  RuleRegistry() = default;
  struct State;
  State &state() const;
};

/// One atomic rule: a labelled pattern on `OpT` that counts its hits. Subclasses implement
/// `apply` and bail out with `rewriter.notifyMatchFailure(op, "reason")`.
template <typename OpT> class Rule : public mlir::OpRewritePattern<OpT> {
public:
  Rule(mlir::MLIRContext *ctx, llvm::StringRef name, mlir::PatternBenefit benefit = 1)
      : mlir::OpRewritePattern<OpT>(ctx, benefit) {
    this->setDebugName(name);
    RuleRegistry::get().declare(name);
  }

  mlir::LogicalResult matchAndRewrite(OpT op, mlir::PatternRewriter &rewriter) const final {
    if (mlir::failed(apply(op, rewriter)))
      return mlir::failure();
    RuleRegistry::get().hit(op->getContext(), this->getDebugName());
    return mlir::success();
  }

protected:
  virtual mlir::LogicalResult apply(OpT op, mlir::PatternRewriter &rewriter) const = 0;
};

/// A rule on any op (a family no single op type names, e.g. every elementwise op): the same
/// label, switch and hit count as `Rule<OpT>`.
class AnyOpRule : public mlir::RewritePattern {
public:
  AnyOpRule(mlir::MLIRContext *ctx, llvm::StringRef name, mlir::PatternBenefit benefit = 1)
      : mlir::RewritePattern(mlir::Pattern::MatchAnyOpTypeTag(), benefit, ctx) {
    this->setDebugName(name);
    RuleRegistry::get().declare(name);
  }

  mlir::LogicalResult matchAndRewrite(mlir::Operation *op,
                                      mlir::PatternRewriter &rewriter) const final {
    if (mlir::failed(apply(op, rewriter)))
      return mlir::failure();
    RuleRegistry::get().hit(op->getContext(), this->getDebugName());
    return mlir::success();
  }

protected:
  virtual mlir::LogicalResult apply(mlir::Operation *op, mlir::PatternRewriter &rewriter) const = 0;
};

/// Runs `patterns` on `op` to a fixed point, honoring the registry's enabled/disabled labels.
mlir::LogicalResult applyRules(mlir::Operation *op, mlir::RewritePatternSet &&patterns);

} // namespace tgc

#endif // TGC_PASSES_COMMON_RULES_H
