// GraphCheck.cpp — structural validation of an ONNX graph before import.
//
// ONNX requires nodes in topological order, but models in the wild (hand-edited, merged) do not
// always comply, and a cycle would make a naive importer loop or read undefined values; so the
// importer schedules nodes itself (Kahn's algorithm, stable in file order) and refuses cycles,
// undefined names and names defined twice, naming the node at fault.
#include "frontends/onnx/ImportContext.h"

#include <deque>
#include <set>
#include <unordered_map>

namespace tgc::onnx_import {

namespace {
llvm::Error err(const std::string &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}
} // namespace

std::string nodeLabel(const onnx::NodeProto &n, size_t index) {
  if (!n.name().empty())
    return n.op_type() + " '" + n.name() + "'";
  return n.op_type() + " #" + std::to_string(index);
}

llvm::Expected<std::vector<size_t>> checkGraph(const onnx::GraphProto &g) {
  // Where each name is defined: -1 for graph inputs and initializers, else the node index.
  std::unordered_map<std::string, int64_t> producer;
  for (const auto &t : g.initializer()) {
    if (t.name().empty())
      return err("an initializer has no name");
    if (!producer.emplace(t.name(), -1).second)
      return err("initializer '" + t.name() + "' is defined twice");
  }
  std::set<std::string> inputNames;
  for (const auto &in : g.input()) {
    if (in.name().empty())
      return err("a graph input has no name");
    if (!inputNames.insert(in.name()).second)
      return err("graph input '" + in.name() + "' is listed twice");
    producer.emplace(in.name(), -1); // an input may also be an initializer (a default)
  }
  size_t n = (size_t)g.node_size();
  for (size_t i = 0; i < n; ++i) {
    const auto &node = g.node((int)i);
    for (const auto &out : node.output()) {
      if (out.empty())
        continue;
      auto [it, fresh] = producer.emplace(out, (int64_t)i);
      if (!fresh) {
        std::string where = it->second < 0 ? std::string("a graph input or initializer")
                                           : nodeLabel(g.node((int)it->second), it->second);
        return err(nodeLabel(node, i) + ": output '" + out + "' is already defined by " + where);
      }
    }
  }
  // Edges and in-degrees; inputs must be defined somewhere.
  std::vector<std::vector<size_t>> users(n);
  std::vector<size_t> indegree(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const auto &node = g.node((int)i);
    std::set<int64_t> preds;
    for (const auto &in : node.input()) {
      if (in.empty())
        continue; // absent optional input
      auto it = producer.find(in);
      if (it == producer.end())
        return err(nodeLabel(node, i) + ": input '" + in + "' is not defined");
      if (it->second >= 0)
        preds.insert(it->second);
    }
    for (int64_t p : preds) {
      users[(size_t)p].push_back(i);
      ++indegree[i];
    }
  }
  for (const auto &out : g.output()) {
    if (out.name().empty())
      return err("a graph output has no name");
    if (!producer.count(out.name()))
      return err("graph output '" + out.name() + "' is not defined");
  }
  // Kahn's algorithm, taking ready nodes in file order.
  std::set<size_t> ready;
  for (size_t i = 0; i < n; ++i)
    if (indegree[i] == 0)
      ready.insert(i);
  std::vector<size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    size_t i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(i);
    for (size_t u : users[i])
      if (--indegree[u] == 0)
        ready.insert(u);
  }
  if (order.size() != n) {
    std::string names;
    int listed = 0;
    for (size_t i = 0; i < n && listed < 8; ++i)
      if (indegree[i] > 0) {
        names += (listed++ ? ", " : "") + nodeLabel(g.node((int)i), i);
      }
    return err("the graph has a cycle; nodes on or after it: " + names);
  }
  return order;
}

} // namespace tgc::onnx_import
