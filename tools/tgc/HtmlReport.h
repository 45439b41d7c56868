// HtmlReport.h — `tgc run --profile report.html`: one self-contained HTML page (no external
// assets) with per-kernel time bars, the total, the kernel graph (inline SVG where Graphviz is
// installed) and the fusions the package records.
//
// The package records no rule hit counts (the plan holds what the runtime needs; `tgc compile
// --stats` prints the counts), so the report lists what the plan does hold: the ops each kernel
// fused, counted by pattern. All model text is escaped for HTML.
#ifndef TGC_TOOLS_TGC_HTMLREPORT_H
#define TGC_TOOLS_TGC_HTMLREPORT_H

#include "runtime/Session.h"
#include "runtime/schema/plan.pb.h"

#include <string>
#include <vector>

namespace tgc::cli {

/// `s` (model text: escaped to printable ASCII first) with & < > " ' as HTML entities.
std::string htmlText(const std::string &s);

/// Writes the report to `path` (atomically). `meanMicros[i]` is step i's mean time over `runs`
/// profiled runs, `steps` the last run's timeline (symbols and labels); `plan` is the package's.
bool writeHtmlReport(const std::string &path, const std::string &pkg, const plan::Plan &plan,
                     const std::vector<StepProfile> &steps, const std::vector<double> &meanMicros,
                     int runs, std::string &err);

} // namespace tgc::cli

#endif // TGC_TOOLS_TGC_HTMLREPORT_H
