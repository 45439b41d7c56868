// GraphCheck.cpp — structural validation of an ONNX graph before import.
//
// ONNX requires nodes in topological order, but models in the wild (hand-edited, merged) do not
// always comply, and a cycle would make a naive importer loop or read undefined values; so the
// importer schedules nodes itself (Kahn's algorithm, stable in file order) and refuses cycles,
// undefined names and names defined twice, naming the node at fault.
#include "frontends/onnx/ImportContext.h"
#include "frontends/onnx/ModelLoader.h"

#include <deque>
#include <map>
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

namespace {
/// Adds the names a graph reads from enclosing scopes: inputs of its nodes (and of nodes of
/// graphs nested in them) and its outputs that it does not define itself.
void outerReads(const onnx::GraphProto &g, std::set<std::string> &out) {
  std::set<std::string> defined;
  for (const auto &t : g.initializer())
    defined.insert(t.name());
  for (const auto &in : g.input())
    defined.insert(in.name());
  for (const auto &node : g.node())
    for (const auto &o : node.output())
      defined.insert(o);
  std::set<std::string> reads;
  for (const auto &node : g.node()) {
    for (const auto &in : node.input())
      if (!in.empty())
        reads.insert(in);
    subgraphReads(node, reads);
  }
  for (const auto &o : g.output())
    reads.insert(o.name());
  for (const auto &r : reads)
    if (!defined.count(r))
      out.insert(r);
}
} // namespace

void subgraphReads(const onnx::NodeProto &node, std::set<std::string> &out) {
  for (const auto &a : node.attribute()) {
    if (a.has_g())
      outerReads(a.g(), out);
    for (const auto &sg : a.graphs())
      outerReads(sg, out);
  }
}

llvm::Expected<std::vector<size_t>> checkGraph(const onnx::GraphProto &g,
                                               const std::set<std::string> *outer) {
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
    // A node's subgraphs (If branches, Loop/Scan bodies) may read names of this scope: those
    // are inputs of the node too.
    std::set<std::string> implicit;
    subgraphReads(node, implicit);
    std::vector<std::string> ins(node.input().begin(), node.input().end());
    ins.insert(ins.end(), implicit.begin(), implicit.end());
    for (const auto &in : ins) {
      if (in.empty())
        continue; // absent optional input
      auto it = producer.find(in);
      if (it == producer.end()) {
        if (outer && outer->count(in))
          continue; // defined in an enclosing graph
        return err(nodeLabel(node, i) + ": input '" + in + "' is not defined");
      }
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
    if (!producer.count(out.name()) && !(outer && outer->count(out.name())))
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

namespace {

using Nodes = google::protobuf::RepeatedPtrField<onnx::NodeProto>;

/// Refuses subgraphs nested deeper than kMaxSubgraphDepth below `nodes` (at `depth`); `path`
/// names where the walk is, for the message.
llvm::Error checkSubgraphDepth(const Nodes &nodes, int depth, const std::string &path) {
  for (int i = 0; i < nodes.size(); ++i) {
    const auto &n = nodes[i];
    for (const auto &a : n.attribute()) {
      auto visit = [&](const onnx::GraphProto &sub) -> llvm::Error {
        std::string here = path + " > " + nodeLabel(n, (size_t)i) + " attribute '" + a.name() + "'";
        if (depth + 1 > kMaxSubgraphDepth)
          return err("subgraphs are nested more than " + std::to_string(kMaxSubgraphDepth) +
                     " levels deep (at " + here + ")");
        return checkSubgraphDepth(sub.node(), depth + 1, here);
      };
      if (a.has_g())
        if (auto e = visit(a.g()))
          return e;
      for (const auto &sub : a.graphs())
        if (auto e = visit(sub))
          return e;
    }
  }
  return llvm::Error::success();
}

/// Calls `f` on every node of `nodes` and of the subgraphs below them.
template <typename F> void forEachNode(const Nodes &nodes, F &&f) {
  for (const auto &n : nodes) {
    f(n);
    for (const auto &a : n.attribute()) {
      if (a.has_g())
        forEachNode(a.g().node(), f);
      for (const auto &sub : a.graphs())
        forEachNode(sub.node(), f);
    }
  }
}

std::string functionKey(const std::string &domain, const std::string &name) {
  return domain.empty() ? name : domain + "." + name;
}

} // namespace

llvm::Error checkModelStructure(const onnx::ModelProto &model) {
  if (auto e = checkSubgraphDepth(model.graph().node(), 0, "graph"))
    return e;
  // Model-local functions: each defined once, nesting bounded, and no recursion.
  std::map<std::string, int> index;
  for (int i = 0; i < model.functions_size(); ++i) {
    const auto &f = model.functions(i);
    std::string key = functionKey(f.domain(), f.name());
    if (f.name().empty())
      return err("a model-local function has no name");
    if (!index.emplace(key, i).second)
      return err("model-local function '" + key + "' is defined twice");
    if (auto e = checkSubgraphDepth(f.node(), 0, "function '" + key + "'"))
      return e;
  }
  if (index.empty())
    return llvm::Error::success();
  std::vector<std::vector<int>> calls(index.size());
  for (int i = 0; i < model.functions_size(); ++i)
    forEachNode(model.functions(i).node(), [&](const onnx::NodeProto &n) {
      auto it = index.find(functionKey(n.domain(), n.op_type()));
      if (it != index.end())
        calls[(size_t)i].push_back(it->second);
    });
  // Depth-first search with an explicit stack; a back edge is a recursion.
  std::vector<int> state(calls.size(), 0); // 0 new, 1 on the stack, 2 done
  for (size_t root = 0; root < calls.size(); ++root) {
    if (state[root])
      continue;
    std::vector<std::pair<int, size_t>> stack{{(int)root, 0}};
    state[root] = 1;
    while (!stack.empty()) {
      auto &[fn, next] = stack.back();
      if (next == calls[(size_t)fn].size()) {
        state[(size_t)fn] = 2;
        stack.pop_back();
        continue;
      }
      int callee = calls[(size_t)fn][next++];
      if (state[(size_t)callee] == 1) {
        std::string cycle;
        bool on = false;
        for (auto &fr : stack) {
          on = on || fr.first == callee;
          if (on)
            cycle += functionKey(model.functions(fr.first).domain(),
                                 model.functions(fr.first).name()) + " -> ";
        }
        const auto &c = model.functions(callee);
        cycle += functionKey(c.domain(), c.name());
        return err("model-local function '" + functionKey(c.domain(), c.name()) +
                   "' is recursive (" + cycle + ")");
      }
      if (state[(size_t)callee] == 0) {
        state[(size_t)callee] = 1;
        stack.push_back({callee, 0});
      }
    }
  }
  return llvm::Error::success();
}

} // namespace tgc::onnx_import
