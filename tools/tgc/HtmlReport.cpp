// HtmlReport.cpp — the self-contained HTML profile report (HtmlReport.h).
#include "tools/tgc/HtmlReport.h"

#include "runtime/Text.h"
#include "tools/tgc/Cli.h"
#include "tools/tgc/KernelGraph.h"

#include <llvm/Support/FormatVariadic.h>

#include <algorithm>
#include <map>

namespace tgc::cli {

namespace {

const char *kStyle = R"(<style>
body { font-family: Helvetica, Arial, sans-serif; margin: 24px; color: #222; }
table { border-collapse: collapse; }
td, th { padding: 2px 8px; text-align: left; font-size: 13px; vertical-align: top; }
th { border-bottom: 1px solid #888; }
td.num { text-align: right; font-family: monospace; }
td.sym { font-family: monospace; }
td.track { width: 360px; }
div.bar { height: 12px; min-width: 1px; }
span.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 4px; }
.nodes { color: #555; font-size: 12px; }
.graph svg { max-width: 100%; height: auto; }
</style>
)";

/// The plan step that profile entry `i` timed (same index when the profile has one per step).
plan::Step stepOf(const plan::Plan &p, const std::vector<StepProfile> &prof, size_t i) {
  if ((int)prof.size() == p.steps_size())
    return p.steps((int)i);
  plan::Step s;
  s.set_symbol(prof[i].symbol);
  s.set_label(prof[i].label);
  if (prof[i].symbol == "copy")
    s.set_kind(plan::Step::COPY);
  return s;
}

std::string swatch(StepKind k) {
  return std::string("<span class=\"swatch\" style=\"background:") + stepKindColor(k) +
         "\"></span>" + htmlText(stepKindName(k));
}

} // namespace

std::string htmlText(const std::string &s) {
  std::string out;
  for (char c : safeText(s)) {
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    case '\'': out += "&#39;"; break;
    default: out += c;
    }
  }
  return out;
}

bool writeHtmlReport(const std::string &path, const std::string &pkg, const plan::Plan &plan,
                     const std::vector<StepProfile> &steps, const std::vector<double> &meanMicros,
                     int runs, std::string &err) {
  double total = 0, most = 0;
  for (double t : meanMicros)
    total += t, most = std::max(most, t);
  std::string h = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n<title>tgc profile: " +
                  htmlText(plan.model_name()) + "</title>\n" + kStyle + "</head><body>\n";
  h += "<h1>tgc profile: " + htmlText(plan.model_name()) + "</h1>\n<p>Package <code>" +
       htmlText(pkg) + "</code>: target " + htmlText(plan.target()) + ", precision " +
       htmlText(plan.precision()) + ", " + std::to_string(plan.steps_size()) + " steps.</p>\n";
  h += llvm::formatv("<p class=\"total\">Total: <b>{0:f1} us</b> per run (sum of step times, mean "
                     "of {1} profiled runs).</p>\n",
                     total, runs)
           .str();

  // Per-kernel bars, in plan order.
  std::map<StepKind, double> byKind;
  h += "<h2>Time per kernel</h2>\n<table class=\"kernels\">\n<tr><th>#</th><th>kernel</th>"
       "<th>kind</th><th>time</th><th>us</th><th>%</th><th>ONNX nodes</th></tr>\n";
  for (size_t i = 0; i < steps.size() && i < meanMicros.size(); ++i) {
    const plan::Step s = stepOf(plan, steps, i);
    const StepKind k = stepKind(s);
    byKind[k] += meanMicros[i];
    std::string nodes;
    for (const std::string &n : stepNodeNames(s))
      nodes += (nodes.empty() ? "" : ", ") + htmlText(n);
    h += llvm::formatv("<tr><td class=\"num\">{0}</td><td class=\"sym\">{1}</td><td>{2}</td>"
                       "<td class=\"track\"><div class=\"bar\" style=\"width:{3:f1}%;"
                       "background:{4}\"></div></td><td class=\"num\">{5:f1}</td>"
                       "<td class=\"num\">{6:f1}</td><td class=\"nodes\">{7}</td></tr>\n",
                       i, htmlText(steps[i].symbol), swatch(k),
                       most > 0 ? 100.0 * meanMicros[i] / most : 0.0, stepKindColor(k),
                       meanMicros[i], total > 0 ? 100.0 * meanMicros[i] / total : 0.0, nodes)
             .str();
  }
  h += "</table>\n<h2>Time per kind</h2>\n<table>\n";
  for (StepKind k : allStepKinds())
    if (byKind.count(k))
      h += llvm::formatv("<tr><td>{0}</td><td class=\"num\">{1:f1} us</td><td class=\"num\">"
                         "{2:f1}%</td></tr>\n",
                         swatch(k), byKind[k], total > 0 ? 100.0 * byKind[k] / total : 0.0)
               .str();
  h += "</table>\n";

  // The graph.
  h += "<h2>Kernel graph</h2>\n";
  std::string svg, why;
  if (renderSvg(kernelGraphDot(plan, pkg), svg, why)) {
    size_t at = svg.find("<svg");
    h += "<div class=\"graph\">\n" + (at == std::string::npos ? std::string() : svg.substr(at)) +
         "</div>\n";
  } else {
    h += "<p class=\"note\">No graph: " + htmlText(why) +
         " (install Graphviz to draw it; <code>tgc compile --dump-dir</code> writes graph.dot "
         "either way).</p>\n";
  }

  // What the compile did, as far as the package records it.
  std::map<std::string, int> fusions;
  for (const plan::Step &s : plan.steps()) {
    const std::string &l = s.label();
    const size_t arrow = l.find(" <- ");
    fusions[safeText(arrow == std::string::npos ? l : l.substr(0, arrow))]++;
  }
  h += "<h2>Rules applied</h2>\n";
  if (plan.rule_hits().empty()) {
    h += "<p>No rewrite rule applied (or the package predates the record; <code>tgc compile "
         "--stats</code> prints them).</p>\n";
  } else {
    h += "<table class=\"rules\">\n<tr><th>rule</th><th>times</th></tr>\n";
    for (const plan::RuleHit &r : plan.rule_hits())
      h += "<tr><td class=\"sym\">" + htmlText(r.rule()) + "</td><td class=\"num\">" +
           std::to_string(r.count()) + "</td></tr>\n";
    h += "</table>\n";
  }
  h += "<h2>Fusions</h2>\n<p>The kernels the package holds, by the ops each fuses:</p>\n"
       "<table class=\"fusions\">\n<tr><th>kernel ops</th><th>kernels</th></tr>\n";
  for (const auto &[ops, n] : fusions)
    h += "<tr><td class=\"sym\">" + htmlText(ops) + "</td><td class=\"num\">" + std::to_string(n) +
         "</td></tr>\n";
  h += "</table>\n</body></html>\n";
  return writeFileAtomic(path, h, err);
}

} // namespace tgc::cli
