// OldOpsets.cpp — which models below opset 7 import as opset 7 (see oldOpsetBlockers).
//
// The op table was written against opsets 7 to 22. Below 7 many ops meant something else
// (binary ops' `broadcast`/`axis` attributes, `consumed_inputs`, BatchNormalization's
// `is_test`), so a whole-model refusal was the safe default. But an op whose definition in
// effect at opset 7 was introduced at or before the model's opset (e.g. Not-1, Transpose-1,
// Reshape-5) means exactly the same there: a model made only of such ops is opset 7 for the
// importer. The table is ONNX's own history (onnx.defs: since_version of each default-domain
// op's definition at opset 7, where that is below 7); those definitions are frozen.
#include "frontends/onnx/ImportContext.h"

#include <map>
#include <set>

namespace tgc::onnx_import {

namespace {

const std::map<std::string, int64_t> &sinceAtOpset7() {
  // clang-format off
  static const std::map<std::string, int64_t> table = {
      {"Abs", 6}, {"ArgMax", 1}, {"ArgMin", 1}, {"Cast", 6}, {"Ceil", 6}, {"Clip", 6},
      {"Concat", 4}, {"Constant", 1}, {"Conv", 1}, {"ConvTranspose", 1}, {"DepthToSpace", 1},
      {"Elu", 6}, {"Exp", 6}, {"Flatten", 1}, {"Floor", 6}, {"Gather", 1},
      {"GlobalAveragePool", 1}, {"GlobalLpPool", 2}, {"GlobalMaxPool", 1}, {"HardSigmoid", 6},
      {"Hardmax", 1}, {"Identity", 1}, {"If", 1}, {"InstanceNormalization", 6}, {"LRN", 1},
      {"LeakyRelu", 6}, {"Log", 6}, {"LogSoftmax", 1}, {"Loop", 1}, {"LpNormalization", 1},
      {"LpPool", 2}, {"MatMul", 1}, {"Max", 6}, {"MaxPool", 1}, {"MaxRoiPool", 1}, {"Mean", 6},
      {"Min", 6}, {"Neg", 6}, {"Not", 1}, {"Pad", 2}, {"RandomNormal", 1},
      {"RandomNormalLike", 1}, {"RandomUniform", 1}, {"RandomUniformLike", 1},
      {"Reciprocal", 6}, {"ReduceL1", 1}, {"ReduceL2", 1}, {"ReduceLogSum", 1},
      {"ReduceLogSumExp", 1}, {"ReduceMax", 1}, {"ReduceMean", 1}, {"ReduceMin", 1},
      {"ReduceProd", 1}, {"ReduceSum", 1}, {"ReduceSumSquare", 1}, {"Relu", 6}, {"Reshape", 5},
      {"Selu", 6}, {"Shape", 1}, {"Sigmoid", 6}, {"Size", 1}, {"Slice", 1}, {"Softmax", 1},
      {"Softplus", 1}, {"Softsign", 1}, {"SpaceToDepth", 1}, {"Split", 2}, {"Sqrt", 6},
      {"Squeeze", 1}, {"Sum", 6}, {"Tanh", 6}, {"Tile", 6}, {"TopK", 1}, {"Transpose", 1},
      {"Unsqueeze", 1}};
  // clang-format on
  return table;
}

} // namespace

std::string oldOpsetBlockers(const onnx::GraphProto &g, int64_t opset) {
  std::set<std::string> blockers;
  for (const auto &n : g.node()) {
    if (n.domain() != "" && n.domain() != "ai.onnx")
      continue; // other domains are refused (or not) on their own
    auto it = sinceAtOpset7().find(n.op_type());
    if (it == sinceAtOpset7().end() || it->second > opset)
      blockers.insert(n.op_type());
  }
  std::string out;
  for (const auto &b : blockers)
    out += (out.empty() ? "" : ", ") + b;
  return out;
}

} // namespace tgc::onnx_import
