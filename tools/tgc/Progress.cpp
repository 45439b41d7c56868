// Progress.cpp — the progress line of `tgc compile` (Progress.h).
#include "tools/tgc/Progress.h"

#include "runtime/Text.h"

#include <cstdio>
#include <unistd.h>

namespace tgc::cli {

namespace {
/// Quiet for the first second: most compiles of small models end before it.
constexpr std::chrono::milliseconds kDelay(1000);
/// Stage names are cut to keep the line on one 80-column row.
constexpr size_t kMaxWidth = 78;
} // namespace

bool ProgressLine::stderrIsTerminal() { return ::isatty(STDERR_FILENO) == 1; }

ProgressLine::ProgressLine(bool enabled)
    : enabled_(enabled), start_(std::chrono::steady_clock::now()) {
  if (enabled_)
    thread_ = std::thread([this] { loop(); });
}

ProgressLine::~ProgressLine() { finish(); }

void ProgressLine::stage(llvm::StringRef stage, int k, int n) {
  if (!enabled_)
    return;
  std::string line =
      "[" + std::to_string(k) + "/" + std::to_string(n) + "] " + escapeText(stage.str()) + " ...";
  if (line.size() > kMaxWidth)
    line = line.substr(0, kMaxWidth - 3) + "...";
  std::lock_guard<std::mutex> lock(mu_);
  text_ = std::move(line);
  changed_ = true;
  cv_.notify_one();
}

void ProgressLine::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_until(lock, start_ + kDelay, [this] { return done_; });
  while (!done_) {
    if (changed_ && !text_.empty()) {
      // Pad with spaces over a longer line drawn before.
      std::string pad(drawn_ > text_.size() ? drawn_ - text_.size() : 0, ' ');
      std::fprintf(stderr, "\r%s%s", text_.c_str(), pad.c_str());
      std::fflush(stderr);
      drawn_ = text_.size();
      changed_ = false;
    }
    cv_.wait(lock, [this] { return done_ || changed_; });
  }
  if (drawn_ > 0) {
    std::fprintf(stderr, "\r%s\r", std::string(drawn_, ' ').c_str());
    std::fflush(stderr);
  }
}

void ProgressLine::finish() {
  if (!enabled_)
    return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    cv_.notify_one();
  }
  if (thread_.joinable())
    thread_.join();
  enabled_ = false;
}

} // namespace tgc::cli
