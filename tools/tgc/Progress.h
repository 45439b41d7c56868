// Progress.h — `tgc compile`'s progress line on a terminal: `[k/N] stage-name ...` on stderr,
// rewritten in place with `\r` and cleared at the end.
//
// Shown only when stderr is a terminal (tests and scripts capture stderr and never see it) and
// only once the compile has run for a second (quick compiles stay silent). A helper thread draws
// the line, so a long stage (the host compiler, NVRTC) that began before the second is shown too.
#ifndef TGC_TOOLS_TGC_PROGRESS_H
#define TGC_TOOLS_TGC_PROGRESS_H

#include <llvm/ADT/StringRef.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace tgc::cli {

/// The progress line of one compile. Not copyable; finish() (or the destructor) clears it.
class ProgressLine {
public:
  /// `enabled` false: every call is a no-op (stderr is not a terminal, or IR is being printed).
  explicit ProgressLine(bool enabled);
  ~ProgressLine();
  ProgressLine(const ProgressLine &) = delete;
  ProgressLine &operator=(const ProgressLine &) = delete;

  /// Stage `k` of `n` (1-based) named `stage` begins (CompileOptions::onStage).
  void stage(llvm::StringRef stage, int k, int n);
  /// Stops the helper thread and clears the line if one was drawn.
  void finish();

  /// Whether stderr is a terminal.
  static bool stderrIsTerminal();

private:
  void loop();

  bool enabled_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;
  std::string text_; ///< the line to show
  bool changed_ = false, done_ = false;
  size_t drawn_ = 0; ///< width of the line on screen (0: none)
  std::chrono::steady_clock::time_point start_;
};

} // namespace tgc::cli

#endif // TGC_TOOLS_TGC_PROGRESS_H
