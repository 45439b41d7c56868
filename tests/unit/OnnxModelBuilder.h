// OnnxModelBuilder.h — builds small ONNX ModelProtos in C++ for the frontend and bad-input
// tests: inputs (static or symbolic dims), nodes, initializers, attributes.
#ifndef TGC_TESTS_UNIT_ONNXMODELBUILDER_H
#define TGC_TESTS_UNIT_ONNXMODELBUILDER_H

#include "frontends/onnx/onnx.pb.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tgc::test {

/// A ModelProto under construction (default opset 17, IR version 8).
struct OnnxModel {
  onnx::ModelProto model;
  onnx::GraphProto *g;

  explicit OnnxModel(int opset = 17) {
    model.set_ir_version(8);
    auto *o = model.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    g = model.mutable_graph();
    g->set_name("test");
  }
  /// A graph input with static `dims` followed by symbolic `params`.
  onnx::ValueInfoProto *input(const std::string &name, int elem, const std::vector<int64_t> &dims,
                              const std::vector<std::string> &params = {}) {
    auto *v = g->add_input();
    v->set_name(name);
    auto *tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    auto *shape = tt->mutable_shape();
    for (int64_t d : dims)
      shape->add_dim()->set_dim_value(d);
    for (auto &p : params)
      shape->add_dim()->set_dim_param(p);
    return v;
  }
  void output(const std::string &name) { g->add_output()->set_name(name); }
  onnx::NodeProto *node(const std::string &op, const std::vector<std::string> &ins,
                        const std::vector<std::string> &outs, const std::string &name = "") {
    auto *n = g->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (auto &i : ins)
      n->add_input(i);
    for (auto &o : outs)
      n->add_output(o);
    return n;
  }
  /// An f32 initializer holding `vals` as raw_data (zeros when `vals` is empty).
  onnx::TensorProto *initF32(const std::string &name, const std::vector<int64_t> &dims,
                             std::vector<float> vals = {}) {
    auto *t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    int64_t n = 1;
    for (int64_t d : dims) {
      t->add_dims(d);
      n *= d;
    }
    if (vals.empty())
      vals.assign((size_t)n, 0.0f);
    t->set_raw_data(std::string(reinterpret_cast<const char *>(vals.data()), vals.size() * 4));
    return t;
  }
  onnx::TensorProto *initI64(const std::string &name, const std::vector<int64_t> &vals) {
    auto *t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims((int64_t)vals.size());
    for (int64_t v : vals)
      t->add_int64_data(v);
    return t;
  }
  std::string bytes() const { return model.SerializeAsString(); }
};

inline void attrInt(onnx::NodeProto *n, const std::string &name, int64_t v) {
  auto *a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

inline void attrFloat(onnx::NodeProto *n, const std::string &name, float v) {
  auto *a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

inline void attrString(onnx::NodeProto *n, const std::string &name, const std::string &v) {
  auto *a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

inline void attrInts(onnx::NodeProto *n, const std::string &name, const std::vector<int64_t> &v) {
  auto *a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v)
    a->add_ints(x);
}

} // namespace tgc::test

#endif // TGC_TESTS_UNIT_ONNXMODELBUILDER_H
