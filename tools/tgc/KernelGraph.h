// KernelGraph.h — a package's kernel graph, read from its launch plan, as Graphviz DOT and SVG
// (`tgc compile --dump-dir` writes graph.dot and graph.svg; `tgc run --profile x.html` inlines
// the SVG).
//
// The plan is the final word on what runs: one box per step (kernel, GEMM or copy), named by its
// symbol and the ONNX nodes it came from (the step label), coloured by kind. Edges are the
// buffers between steps, found from the byte ranges the steps read and write (a step's results
// are its last arguments: operands come first; a GEMM step writes C, a copy its destination; a
// CUDA kernel the non-const pointers of its signature in kernels.cu).
// Graph inputs and outputs are ellipses labelled with name, dtype, shape and bytes; the plan
// records only the size of an intermediate buffer, so inner edges carry bytes alone. Every piece
// of model text is escaped (escapeText, then DOT's own quoting), so hostile names stay labels.
#ifndef TGC_TOOLS_TGC_KERNELGRAPH_H
#define TGC_TOOLS_TGC_KERNELGRAPH_H

#include "runtime/schema/plan.pb.h"

#include <string>
#include <vector>

namespace tgc::cli {

/// What a step computes, for colours and the profile's grouping.
enum class StepKind { Gemm, Attention, Elementwise, Norm, Movement, Other };

/// The kinds in legend order.
const std::vector<StepKind> &allStepKinds();
/// "GEMM", "attention", "elementwise / fused", "reduction / norm", "data movement", "other".
const char *stepKindName(StepKind k);
/// A fill colour for the kind ("#rrggbb").
const char *stepKindColor(StepKind k);
/// The kind of a plan step, from its kind, symbol and label.
StepKind stepKind(const plan::Step &s);
/// The ONNX node names a step came from (its label after " <- "), escaped.
std::vector<std::string> stepNodeNames(const plan::Step &s);

/// Reads and parses `pkg`/plan.pb; false with `err` naming the file.
bool loadPlan(const std::string &pkg, plan::Plan &p, std::string &err);

/// The plan of the package at `pkg` as a DOT digraph (kernels as boxes, inputs/outputs as
/// ellipses, a legend). A CUDA package's kernels.cu says which kernel arguments are written.
std::string kernelGraphDot(const plan::Plan &p, const std::string &pkg);

/// Runs Graphviz `dot -Tsvg` on `dot`. False with `why` when `dot` is not on PATH or fails.
bool renderSvg(const std::string &dot, std::string &svg, std::string &why);

/// Writes `dir`/graph.dot and, where Graphviz is installed, `dir`/graph.svg, of the package at
/// `pkg`. A missing or failing
/// `dot` is not an error: `note` says why graph.svg was skipped. False with `err` when a file
/// cannot be written.
bool writeKernelGraph(const plan::Plan &p, const std::string &pkg, const std::string &dir,
                      std::string &note, std::string &err);

} // namespace tgc::cli

#endif // TGC_TOOLS_TGC_KERNELGRAPH_H
