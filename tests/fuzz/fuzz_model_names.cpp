// fuzz_model_names.cpp — libFuzzer harness: the fuzzer's bytes become every name and string of a
// small valid model (node, tensor, input, output, initializer and graph names, doc strings, the
// model's domain, producer and metadata); the model is imported, optimized and lowered to CPU
// kernel source (emitCpuSource: nothing compiled), and the source is checked (issue 23):
//   - it is printable ASCII and newlines only (no CR, NUL, U+2028, control bytes);
//   - no line of it, other than a `//` comment, begins with text that followed a line break
//     inside a string of the model (a planted line), unless the line is also one of the source
//     the model yields when all its strings are plain (then it is tgc's own line).
// Any other failure (a refusal of the valid model, a crash) is a finding too: names never make a
// legal model illegal. Built by tools/fuzz (--config=fuzz) and, without libFuzzer, as the CI test
// //tests/fuzz:fuzz_model_names_smoke with a driver of seeded random inputs (FuzzSmokeMain.cpp).
#include "codegen/common/PackageInfo.h"
#include "codegen/cpu/CpuBackend.h"
#include "driver/Pipeline.h"
#include "compiler/dialect/TgDialect.h"
#include "frontends/onnx/Importer.h"
#include "frontends/onnx/onnx.pb.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace {

mlir::MLIRContext &context() {
  static std::unique_ptr<mlir::MLIRContext> ctx;
  static int uses = 0;
  if (!ctx || ++uses % 500 == 0) {
    ctx = std::make_unique<mlir::MLIRContext>(mlir::MLIRContext::Threading::DISABLED);
    ctx->loadDialect<tgc::tg::TGDialect, mlir::func::FuncDialect>();
  }
  return *ctx;
}

void addInit(onnx::GraphProto &g, const std::string &name, std::vector<int64_t> dims, float v) {
  onnx::TensorProto *t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  int64_t n = 1;
  for (int64_t d : dims)
    t->add_dims(d), n *= d;
  for (int64_t i = 0; i < n; ++i)
    t->add_float_data(v + 0.01f * (float)(i % 7));
}

void addValue(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> *list,
              const std::string &name, std::vector<int64_t> dims, const std::string &doc) {
  onnx::ValueInfoProto *v = list->Add();
  v->set_name(name);
  v->set_doc_string(doc);
  auto *tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims)
    tt->mutable_shape()->add_dim()->set_dim_value(d);
}

/// x [2,4] · W [4,8] + b → Relu → · y [2,8] → Softmax (out0); Relu's result transposed (out1).
std::string buildModel(const std::vector<std::string> &f) {
  // Fewer fields than slots: they repeat, so every slot holds the fuzzer's text.
  auto s = [&](size_t i) { return f.empty() ? std::string() : f[i % f.size()]; };
  // Graph names must be distinct and non-empty: each gets its slot number.
  auto n = [&](size_t i) { return s(i) + "#" + std::to_string(i); };
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name(s(0));
  m.set_domain(s(1));
  m.set_doc_string(s(2));
  auto *prop = m.add_metadata_props();
  prop->set_key(s(3));
  prop->set_value(s(4));
  m.add_opset_import()->set_version(17);
  onnx::GraphProto *g = m.mutable_graph();
  g->set_name(s(5));
  g->set_doc_string(s(6));
  const std::string X = n(7), Y = n(8), W = n(9), B = n(10), T1 = n(11), T2 = n(12), T3 = n(13),
                    T4 = n(14), O0 = n(15), O1 = n(16);
  addValue(g->mutable_input(), X, {2, 4}, s(17));
  addValue(g->mutable_input(), Y, {2, 8}, s(18));
  addValue(g->mutable_output(), O0, {2, 8}, s(19));
  addValue(g->mutable_output(), O1, {8, 2}, s(20));
  addValue(g->mutable_value_info(), T2, {2, 8}, s(21));
  addInit(*g, W, {4, 8}, 0.1f);
  addInit(*g, B, {8}, -0.05f);
  struct N {
    const char *op;
    std::vector<std::string> in, out;
  };
  const std::vector<N> nodes = {{"MatMul", {X, W}, {T1}}, {"Add", {T1, B}, {T2}},
                                {"Relu", {T2}, {T3}},     {"Mul", {T3, Y}, {T4}},
                                {"Softmax", {T4}, {O0}},  {"Transpose", {T3}, {O1}}};
  for (size_t i = 0; i < nodes.size(); ++i) {
    onnx::NodeProto *node = g->add_node();
    node->set_op_type(nodes[i].op);
    node->set_name(s(22 + i)); // node names need not be unique, nor non-empty
    node->set_doc_string(s(28 + i));
    for (const auto &x : nodes[i].in)
      node->add_input(x);
    for (const auto &x : nodes[i].out)
      node->add_output(x);
    if (std::string(nodes[i].op) == "Transpose") {
      onnx::AttributeProto *a = node->add_attribute();
      a->set_name("perm");
      a->set_type(onnx::AttributeProto::INTS);
      a->add_ints(1), a->add_ints(0);
      a->set_doc_string(s(34));
    }
  }
  std::string bytes;
  m.SerializeToString(&bytes);
  return bytes;
}

/// The CPU kernel source of `modelBytes`; traps on any failure (the model is valid).
std::string sourceOf(const std::string &modelBytes) {
  mlir::MLIRContext &ctx = context();
  auto module = tgc::importOnnxBytes(ctx, modelBytes, "/nonexistent", {});
  if (!module) {
    std::fprintf(stderr, "import refused a valid model: %s\n",
                 llvm::toString(module.takeError()).c_str());
    __builtin_trap();
  }
  mlir::PassManager pm(&ctx);
  tgc::buildPipeline(pm, tgc::PipelineOptions{});
  if (mlir::failed(pm.run(**module)))
    __builtin_trap();
  tgc::PackageInfo info;
  info.target = "cpu";
  auto src = tgc::emitCpuSource(**module, info);
  if (!src) {
    std::fprintf(stderr, "emit failed: %s\n", llvm::toString(src.takeError()).c_str());
    __builtin_trap();
  }
  return *src;
}

std::vector<std::string> lines(const std::string &s) {
  std::vector<std::string> out;
  size_t b = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == '\n') {
      std::string l = s.substr(b, i - b);
      size_t k = l.find_first_not_of(" \t");
      out.push_back(k == std::string::npos ? "" : l.substr(k));
      b = i + 1;
    }
  return out;
}

/// tgc's own lines: those of the source of the model with plain names.
const std::set<std::string> &ownLines() {
  static const std::set<std::string> own = [] {
    auto ls = lines(sourceOf(buildModel({})));
    return std::set<std::string>(ls.begin(), ls.end());
  }();
  return own;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // Fields separated by 0xFF bytes (a byte never inside UTF-8), at most 40.
  std::vector<std::string> fields(1);
  for (size_t i = 0; i < size && fields.size() <= 40; ++i) {
    if (data[i] == 0xFF)
      fields.emplace_back();
    else
      fields.back() += (char)data[i];
  }
  const std::string src = sourceOf(buildModel(fields));
  for (size_t i = 0; i < src.size(); ++i) {
    const unsigned char c = (unsigned char)src[i];
    if (c != '\n' && (c < 0x20 || c > 0x7e)) {
      std::fprintf(stderr, "byte 0x%02x at %zu of the source\n", c, i);
      __builtin_trap();
    }
  }
  // Planted lines: the text after each line break (\n, \r, \v, \f) in a field.
  std::set<std::string> planted;
  for (const std::string &f : fields)
    for (size_t i = 0; i < f.size(); ++i)
      if (f[i] == '\n' || f[i] == '\r' || f[i] == '\v' || f[i] == '\f') {
        size_t e = f.find_first_of("\n\r\v\f", i + 1);
        std::string p = f.substr(i + 1, e == std::string::npos ? std::string::npos : e - i - 1);
        size_t k = p.find_first_not_of(" \t");
        if (k != std::string::npos && p.size() - k >= 3)
          planted.insert(p.substr(k));
      }
  if (planted.empty())
    return 0;
  const std::set<std::string> &own = ownLines();
  for (const std::string &l : lines(src)) {
    if (l.compare(0, 2, "//") == 0) // a comment to its end: harmless whatever follows
      continue;
    for (const std::string &p : planted)
      if (l.compare(0, p.size(), p) == 0 && !own.count(l)) {
        std::fprintf(stderr, "planted line in the source: %s\n", l.c_str());
        __builtin_trap();
      }
  }
  return 0;
}
