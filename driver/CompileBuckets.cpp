// CompileBuckets.cpp — a bucketed compile (docs/design.md, "Shape buckets").
//
// Each bucket is an ordinary compile with every symbol bound to the bucket's value, so every
// kernel is specialised to its bucket's shapes (static shapes are what the passes and emitters
// are built on). The importer marks the varying axes of the inputs (`tg.dim_symbols`); the
// padding pass (passes/padding) traces them to the outputs, masks padded keys in attention and
// refuses what padding would change. The bucket packages are then merged into one: shared
// weights, one arena (the largest bucket's), the bucket plans nested in one plan.
#include "driver/CompileBuckets.h"

#include "codegen/common/MergeBuckets.h"
#include "codegen/common/StagedDir.h"
#include "driver/Buckets.h"
#include "frontends/onnx/Importer.h"

#include "llvm/ADT/Twine.h"

#include <algorithm>

namespace tgc {

namespace {

std::string bucketName(const BucketPlan &plan, size_t k) {
  std::string s;
  for (size_t i = 0; i < plan.symbols.size(); ++i)
    s += (s.empty() ? "" : " ") + plan.symbols[i].name + "=" + std::to_string(plan.buckets[k][i]);
  return s;
}

} // namespace

llvm::Expected<BucketPackages> compileBucketPackages(const CompileOptions &options,
                                                     const std::string &stageDir,
                                                     llvm::raw_ostream &log) {
  auto inputs = graphInputDims(options.modelPath);
  if (!inputs)
    return inputs.takeError();
  auto plan = planBuckets(options, *inputs);
  if (!plan)
    return plan.takeError();
  BucketPackages out;
  CompileResult &result = out.result;
  const size_t n = plan->buckets.size();
  for (size_t k = 0; k < n; ++k) {
    const std::string name = bucketName(*plan, k);
    CompileOptions o = options;
    o.inputRanges.clear();
    o.bucketValues.clear();
    o.dimNames.clear();
    o.inputShapes = plan->shapesOf(k, options.inputShapes);
    o.dimSymbols = plan->dimSymbols;
    o.symbolNames.clear();
    for (const BucketSymbol &s : plan->symbols)
      o.symbolNames.push_back(s.name);
    o.outputPath = stageDir + "/bucket" + std::to_string(k);
    if (!options.dumpDir.empty())
      o.dumpDir = options.dumpDir + "/bucket" + std::to_string(k);
    if (options.onStage)
      o.onStage = [&, k](llvm::StringRef stage, int i, int m) {
        options.onStage(("bucket " + std::to_string(k + 1) + "/" + std::to_string(n) + " (" +
                         name + "): " + stage).str(),
                        i, m);
      };
    auto r = compile(o, log);
    if (!r)
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "bucket %s: %s",
                                     name.c_str(), llvm::toString(r.takeError()).c_str());
    out.packages.push_back({o.outputPath, plan->buckets[k]});
    result.opsBefore = r->opsBefore;
    result.opsAfter = r->opsAfter;
    result.opsAfterByKind = r->opsAfterByKind;
    result.ruleHits = r->ruleHits;
    for (const auto &stageTime : r->passSeconds) {
      auto it = std::find_if(result.passSeconds.begin(), result.passSeconds.end(),
                             [&](const auto &p) { return p.first == stageTime.first; });
      if (it == result.passSeconds.end())
        result.passSeconds.push_back(stageTime);
      else
        it->second += stageTime.second;
    }
  }
  for (const BucketSymbol &s : plan->symbols) {
    plan::Symbol &p = out.symbols.emplace_back();
    p.set_name(s.name);
    p.set_min(s.min);
    p.set_max(s.max);
  }
  log << "buckets:";
  for (size_t k = 0; k < n; ++k)
    log << (k ? "," : "") << " [" << bucketName(*plan, k) << "]";
  log << "\n";
  return out;
}

llvm::Expected<CompileResult> compileBucketed(const CompileOptions &options,
                                              llvm::raw_ostream &log) {
  auto stage = codegen::StagedDir::create(options.outputPath);
  if (!stage)
    return stage.takeError();
  auto built = compileBucketPackages(options, (*stage)->path(), log);
  if (!built)
    return built.takeError();
  auto stats = codegen::mergeBuckets((*stage)->path(), built->packages, built->symbols);
  if (!stats)
    return stats.takeError();
  if (auto e = (*stage)->publish())
    return std::move(e);
  built->result.package = *stats;
  return std::move(built->result);
}

} // namespace tgc
