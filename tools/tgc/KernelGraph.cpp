// KernelGraph.cpp — the kernel graph of a plan as DOT, and Graphviz to draw it (KernelGraph.h).
#include "tools/tgc/KernelGraph.h"

#include "runtime/Tensor.h"
#include "runtime/Text.h"
#include "runtime/schema/PlanUtil.h"
#include "tools/tgc/Cli.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Program.h>

#include <algorithm>
#include <cctype>
#include <map>

namespace tgc::cli {

namespace {

/// Model text inside a DOT double-quoted string: escaped to printable ASCII first (names in the
/// plan's interface are raw bytes), then DOT's quoting (`"` and `\`) and `&` as an entity (Graphviz
/// reads entities in labels), so no name can end the string or become markup.
std::string dotText(const std::string &s) {
  std::string out;
  for (char c : safeText(s)) {
    if (c == '"' || c == '\\')
      out += '\\', out += c;
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

std::string bytesText(int64_t b) { return std::to_string(b) + " B"; }

std::string tensorText(const plan::TensorDesc &d) {
  const DType dt = (DType)d.dtype();
  int64_t n = 1;
  for (int64_t x : d.shape())
    n *= x;
  return std::string(isKnownDType(d.dtype()) ? dtypeName(dt) : "?") + " " +
         plan::formatShape({d.shape().begin(), d.shape().end()}) + "\\n" +
         bytesText(n * (int64_t)dtypeSize(dt));
}

/// The part of a step's label before the node names, lower case.
std::string opText(const plan::Step &s) {
  std::string l = s.label();
  size_t arrow = l.find(" <- ");
  std::string head = (arrow == std::string::npos ? l : l.substr(0, arrow)) + " " + s.symbol();
  std::transform(head.begin(), head.end(), head.begin(),
                 [](unsigned char c) { return (char)std::tolower(c); });
  return head;
}

bool hasAny(const std::string &text, std::initializer_list<const char *> words) {
  for (const char *w : words)
    if (text.find(w) != std::string::npos)
      return true;
  return false;
}

/// Which arguments a step writes. CUDA kernels: the non-const pointer parameters of the kernel's
/// signature in kernels.cu (`signatures`; their order is the emitter's, results need not be
/// last). Otherwise results follow operands (one result, or a split's several), a GEMM step
/// writes C, a copy its destination.
std::vector<bool> writtenArgs(const plan::Step &s,
                              const std::map<std::string, std::vector<bool>> &signatures) {
  std::vector<bool> w(s.args_size(), false);
  if (w.empty())
    return w;
  auto sig = signatures.find(s.symbol());
  if (s.kind() == plan::Step::COPY)
    w[0] = true;
  else if (s.kind() == plan::Step::GEMM)
    w[std::min(2, s.args_size() - 1)] = true;
  else if (sig != signatures.end() && sig->second.size() == w.size())
    w = sig->second;
  else if (s.label().rfind("tg.split", 0) == 0)
    std::fill(w.begin() + 1, w.end(), true);
  else
    w.back() = true;
  return w;
}

/// Kernel symbol -> which parameters are written (not `const`), from the one-line signatures
/// `extern "C" __global__ void [__launch_bounds__(N)] sym(const T *a, T *b, ...) {` of a CUDA
/// package's kernels.cu; empty when there is none.
std::map<std::string, std::vector<bool>> cudaSignatures(const std::string &pkg) {
  std::map<std::string, std::vector<bool>> out;
  auto buf = llvm::MemoryBuffer::getFile(pkg + "/kernels.cu");
  if (!buf)
    return out;
  llvm::SmallVector<llvm::StringRef, 0> lines;
  (*buf)->getBuffer().split(lines, '\n');
  for (llvm::StringRef line : lines) {
    if (!line.consume_front("extern \"C\" __global__ void "))
      continue;
    if (line.consume_front("__launch_bounds__("))
      line = line.drop_until([](char c) { return c == ')'; }).drop_front().ltrim();
    const size_t open = line.find('('), close = line.find(')');
    if (open == llvm::StringRef::npos || close == llvm::StringRef::npos || close < open)
      continue;
    std::vector<bool> writes;
    llvm::SmallVector<llvm::StringRef, 8> params;
    line.slice(open + 1, close).split(params, ',', -1, /*KeepEmpty=*/false);
    for (llvm::StringRef p : params)
      writes.push_back(!p.trim().startswith("const "));
    out[line.take_front(open).str()] = std::move(writes);
  }
  return out;
}

/// A byte range some step wrote.
struct Written {
  int kind, index;
  int64_t offset, bytes;
  int step;
};

bool overlaps(const Written &w, const plan::BufferArg &a) {
  return w.kind == (int)a.kind() && w.index == a.index() && w.offset < a.offset() + a.bytes() &&
         a.offset() < w.offset + w.bytes;
}

/// The step that last wrote a range overlapping `a`, or -1.
int writerOf(const std::vector<Written> &writes, const plan::BufferArg &a) {
  for (auto it = writes.rbegin(); it != writes.rend(); ++it)
    if (overlaps(*it, a))
      return it->step;
  return -1;
}

} // namespace

const std::vector<StepKind> &allStepKinds() {
  static const std::vector<StepKind> kinds = {StepKind::Gemm,        StepKind::Attention,
                                              StepKind::Elementwise, StepKind::Norm,
                                              StepKind::Movement,    StepKind::Other};
  return kinds;
}

const char *stepKindName(StepKind k) {
  switch (k) {
  case StepKind::Gemm: return "GEMM";
  case StepKind::Attention: return "attention";
  case StepKind::Elementwise: return "elementwise / fused";
  case StepKind::Norm: return "reduction / norm";
  case StepKind::Movement: return "data movement";
  case StepKind::Other: return "other";
  }
  return "other";
}

const char *stepKindColor(StepKind k) {
  switch (k) {
  case StepKind::Gemm: return "#f4a261";
  case StepKind::Attention: return "#e76f51";
  case StepKind::Elementwise: return "#8ecae6";
  case StepKind::Norm: return "#b5e48c";
  case StepKind::Movement: return "#d9d9d9";
  case StepKind::Other: return "#ffffff";
  }
  return "#ffffff";
}

StepKind stepKind(const plan::Step &s) {
  if (s.kind() == plan::Step::GEMM)
    return StepKind::Gemm;
  if (s.kind() == plan::Step::COPY)
    return StepKind::Movement;
  const std::string t = opText(s);
  if (hasAny(t, {"attention"}))
    return StepKind::Attention;
  if (hasAny(t, {"gemm", "linear", "matmul", "conv"}))
    return StepKind::Gemm;
  if (hasAny(t, {"norm", "softmax", "reduce", "argmax", "pool"}))
    return StepKind::Norm;
  if (hasAny(t, {"reshape", "transpose", "slice", "concat", "split", "gather", "expand", "pad",
                 "copy"}))
    return StepKind::Movement;
  return s.label().empty() && s.symbol().empty() ? StepKind::Other : StepKind::Elementwise;
}

std::vector<std::string> stepNodeNames(const plan::Step &s) {
  // "op <- a, b" or, for a CUDA step of several ops, "op <- a + op2 <- b".
  std::vector<std::string> names;
  llvm::StringRef rest = s.label();
  for (size_t at = rest.find(" <- "); at != llvm::StringRef::npos; at = rest.find(" <- ")) {
    rest = rest.drop_front(at + 4);
    llvm::StringRef part = rest.take_front(std::min(rest.find(" + tg."), rest.find(" <- ")));
    llvm::SmallVector<llvm::StringRef, 4> pieces;
    part.split(pieces, ", ", -1, /*KeepEmpty=*/false);
    for (llvm::StringRef n : pieces)
      names.push_back(safeText(n.str()));
  }
  return names;
}

bool loadPlan(const std::string &pkg, plan::Plan &p, std::string &err) {
  const std::string path = pkg + "/plan.pb";
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buf) {
    err = "cannot read '" + escapeText(path) + "': " + buf.getError().message();
    return false;
  }
  if ((*buf)->getBufferSize() > (size_t)plan::kMaxPlanBytes ||
      !p.ParseFromArray((*buf)->getBufferStart(), (int)(*buf)->getBufferSize()) ||
      !plan::planChecksumMatches(p)) {
    err = "'" + escapeText(path) + "' is not a valid tgc plan";
    return false;
  }
  return true;
}

std::string kernelGraphDot(const plan::Plan &p, const std::string &pkg) {
  const auto signatures = cudaSignatures(pkg);
  std::string dot = "digraph kernels {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", "
                    "fontsize=10];\n  edge [fontname=\"Helvetica\", fontsize=9];\n";
  dot += "  label=\"" + dotText(p.model_name()) + " (" + dotText(p.target()) + ", " +
         dotText(p.precision()) + "): " + std::to_string(p.steps_size()) +
         " steps\";\n  labelloc=t;\n";
  for (int i = 0; i < p.inputs_size(); ++i)
    dot += "  in" + std::to_string(i) + " [shape=ellipse, label=\"" + dotText(p.inputs(i).name()) +
           "\"];\n";
  std::vector<Written> writes;
  // One edge per (from, to), labelled with each buffer it carries ("3 x 16384 B" for three alike).
  std::vector<std::pair<std::string, std::string>> edgeOrder;
  std::map<std::pair<std::string, std::string>, std::vector<std::pair<std::string, int>>> edges;
  auto edge = [&](const std::string &from, const std::string &to, const std::string &label) {
    auto &labels = edges[{from, to}];
    if (labels.empty())
      edgeOrder.push_back({from, to});
    auto it = std::find_if(labels.begin(), labels.end(), [&](auto &l) { return l.first == label; });
    if (it == labels.end())
      labels.push_back({label, 1});
    else
      ++it->second;
  };
  for (int i = 0; i < p.steps_size(); ++i) {
    const plan::Step &s = p.steps(i);
    const std::string id = "s" + std::to_string(i);
    const StepKind kind = stepKind(s);
    std::string label =
        std::to_string(i) + ": " + dotText(s.symbol().empty() ? "copy" : s.symbol());
    std::vector<std::string> names = stepNodeNames(s);
    for (size_t n = 0; n < names.size() && n < 3; ++n)
      label += "\\n" + dotText(names[n].size() > 60 ? names[n].substr(0, 57) + "..." : names[n]);
    if (names.size() > 3)
      label += "\\n(+" + std::to_string(names.size() - 3) + " more)";
    if (names.empty() && !s.label().empty())
      label += "\\n" + dotText(s.label().substr(0, 60));
    const std::vector<bool> w = writtenArgs(s, signatures);
    int64_t weightBytes = 0;
    for (int a = 0; a < s.args_size(); ++a) {
      const plan::BufferArg &arg = s.args(a);
      if (w[a])
        continue;
      if (arg.kind() == plan::WEIGHT) {
        weightBytes += arg.bytes();
      } else if (arg.kind() == plan::INPUT && arg.index() < p.inputs_size()) {
        edge("in" + std::to_string(arg.index()), id, tensorText(p.inputs(arg.index())));
      } else if (int from = writerOf(writes, arg); from >= 0 && from != i) {
        edge("s" + std::to_string(from), id, bytesText(arg.bytes()));
      }
    }
    if (weightBytes > 0)
      label += "\\nweights " + bytesText(weightBytes);
    if (s.skip_if_gemm_fused())
      label += "\\n(skipped when the GEMM before applies it)";
    dot += "  " + id + " [shape=box, style=\"rounded,filled" +
           (s.skip_if_gemm_fused() ? ",dashed" : "") + "\", fillcolor=\"" + stepKindColor(kind) +
           "\", tooltip=\"" + dotText(stepKindName(kind)) + "\", label=\"" + label + "\"];\n";
    for (int a = 0; a < s.args_size(); ++a)
      if (w[a])
        writes.push_back(
            {(int)s.args(a).kind(), s.args(a).index(), s.args(a).offset(), s.args(a).bytes(), i});
  }
  for (int o = 0; o < p.outputs_size(); ++o) {
    const plan::TensorDesc &d = p.outputs(o);
    const std::string id = "out" + std::to_string(o);
    dot += "  " + id + " [shape=ellipse, style=filled, fillcolor=\"#fff3b0\", label=\"" +
           dotText(d.name()) + "\"];\n";
    const plan::BufferArg &src = d.source();
    if (src.kind() == plan::INPUT && src.index() < p.inputs_size())
      edge("in" + std::to_string(src.index()), id, tensorText(d));
    else if (int from = writerOf(writes, src); from >= 0)
      edge("s" + std::to_string(from), id, tensorText(d));
  }
  for (const auto &key : edgeOrder) {
    std::string label;
    for (const auto &[text, n] : edges[key])
      label += (label.empty() ? "" : "\\n") + (n > 1 ? std::to_string(n) + " x " : "") + text;
    dot += "  " + key.first + " -> " + key.second + " [label=\"" + label + "\"];\n";
  }
  // The legend: one swatch per kind.
  dot += "  subgraph cluster_legend {\n    label=\"legend\";\n    fontsize=10;\n";
  std::string prev;
  for (StepKind k : allStepKinds()) {
    const std::string id = "legend" + std::to_string((int)k);
    dot += "    " + id + " [shape=box, style=\"rounded,filled\", fillcolor=\"" + stepKindColor(k) +
           "\", label=\"" + stepKindName(k) + "\"];\n";
    if (!prev.empty())
      dot += "    " + prev + " -> " + id + " [style=invis];\n";
    prev = id;
  }
  dot += "  }\n}\n";
  return dot;
}

bool renderSvg(const std::string &dot, std::string &svg, std::string &why) {
  auto exe = llvm::sys::findProgramByName("dot");
  if (!exe) {
    why = "Graphviz 'dot' is not on PATH";
    return false;
  }
  llvm::SmallString<128> in, out;
  if (llvm::sys::fs::createTemporaryFile("tgc-graph", "dot", in) ||
      llvm::sys::fs::createTemporaryFile("tgc-graph", "svg", out)) {
    why = "cannot create a temporary file";
    return false;
  }
  std::string err;
  bool ok = writeFileAtomic(in.str().str(), dot, err);
  if (ok) {
    const llvm::StringRef args[] = {*exe, "-Tsvg", "-o", out.str(), in.str()};
    std::string msg;
    int rc = llvm::sys::ExecuteAndWait(*exe, args, llvm::None, {}, /*SecondsToWait=*/60, 0, &msg);
    auto buf = llvm::MemoryBuffer::getFile(out);
    if (rc != 0 || !buf) {
      why = "'" + *exe + " -Tsvg' failed" + (msg.empty() ? "" : ": " + msg) +
            (rc > 0 ? " (exit " + std::to_string(rc) + ")" : "");
      ok = false;
    } else {
      svg = (*buf)->getBuffer().str();
    }
  } else {
    why = err;
  }
  llvm::sys::fs::remove(in);
  llvm::sys::fs::remove(out);
  return ok;
}

bool writeKernelGraph(const plan::Plan &p, const std::string &pkg, const std::string &dir,
                      std::string &note, std::string &err) {
  const std::string dot = kernelGraphDot(p, pkg);
  if (!writeFileAtomic(dir + "/graph.dot", dot, err))
    return false;
  std::string svg, why;
  if (!renderSvg(dot, svg, why)) {
    note = "graph.svg skipped: " + why + " (graph.dot was written)";
    return true;
  }
  return writeFileAtomic(dir + "/graph.svg", svg, err);
}

} // namespace tgc::cli
