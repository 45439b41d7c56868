// TuneCache.cpp — see TuneCache.h. The record is a protobuf message (tgc.plan.TuneCacheRecord)
// in text format, read and written by google::protobuf::TextFormat; this file adds what the
// schema cannot say (a known version, choices the runtime could have written, steps in order).
// The temporary file is POSIX mkstemp: the runtime links no LLVM (docs/decisions.md, issue 27).
#include "runtime/cuda/TuneCache.h"
#include "runtime/Env.h"
#include "runtime/schema/plan.pb.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace tgc::cuda {

namespace {

/// Bumped when a record's meaning changes (1: the hand-written "tgc tune cache v1" lines).
constexpr uint32_t kTuneCacheVersion = 2;
constexpr const char *kHeader =
    "# tgc GEMM tuning cache (runtime/cuda/TuneCache.h): tgc.plan.TuneCacheRecord, text format\n";

/// Keeps the parser's first error, with its line (1-based).
class FirstError : public google::protobuf::io::ErrorCollector {
public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string &message) override {
    if (text.empty())
      text = "line " + std::to_string(line + 1) + ": " + message;
  }
  std::string text;
};

std::string hex16(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", (unsigned long long)v);
  return b;
}

/// A choice as the runtime writes it: cutlass:/mma: and a config name of [A-Za-z0-9/_.-],
/// lt: and 128 hex digits, or none.
bool validChoice(const std::string &c) {
  auto nameOk = [](const std::string &s) {
    if (s.empty() || s.size() > 64)
      return false;
    for (char ch : s)
      if (!(std::isalnum((unsigned char)ch) || ch == '/' || ch == '_' || ch == '.' || ch == '-'))
        return false;
    return true;
  };
  if (c == "none")
    return true;
  if (c.rfind("cutlass:", 0) == 0)
    return nameOk(c.substr(8));
  if (c.rfind("mma:", 0) == 0)
    return nameOk(c.substr(4));
  if (c.rfind("lt:", 0) == 0) {
    if (c.size() != 3 + 128)
      return false;
    for (size_t i = 3; i < c.size(); ++i)
      if (!std::isxdigit((unsigned char)c[i]))
        return false;
    return true;
  }
  return false;
}

} // namespace

std::string formatTuneRecord(const TuneRecord &r) {
  plan::TuneCacheRecord m;
  m.set_version(kTuneCacheVersion);
  m.set_key(r.key);
  for (const auto &[i, c] : r.choices) {
    plan::TuneCacheRecord::Choice *s = m.add_steps();
    s->set_index(i);
    s->set_choice(c);
  }
  std::string text;
  google::protobuf::TextFormat::PrintToString(m, &text);
  return kHeader + text;
}

bool parseTuneRecord(const std::string &text, TuneRecord &r, std::string &why) {
  r = TuneRecord{};
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    return why = "empty", false;
  plan::TuneCacheRecord m;
  google::protobuf::TextFormat::Parser parser;
  FirstError errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, &m))
    return why = errors.text.empty() ? "does not parse" : errors.text, false;
  if (m.version() != kTuneCacheVersion)
    return why = "version " + std::to_string(m.version()) + ", this runtime reads " +
                 std::to_string(kTuneCacheVersion),
           false;
  if (!m.has_key())
    return why = "no key", false;
  for (int q = 0; q < m.steps_size(); ++q) {
    const plan::TuneCacheRecord::Choice &s = m.steps(q);
    const std::string at = "steps[" + std::to_string(q) + "]: ";
    if (s.index() < 0 || s.index() > 1000000)
      return why = at + "step index " + std::to_string(s.index()) + " is invalid", false;
    if (!r.choices.empty() && s.index() <= r.choices.back().first)
      return why = at + "step " + std::to_string(s.index()) + " out of order", false;
    if (!validChoice(s.choice()))
      return why = at + "'" + s.choice().substr(0, 80) + "' is not a choice", false;
    r.choices.push_back({s.index(), s.choice()});
  }
  r.key = m.key();
  return true;
}

std::string tuneCachePath(uint64_t key, std::string &why) {
  std::string dir;
  if (const char *t = tgc::envValue(tgc::Env::TuneCache); t && *t) {
    if (std::string(t) == "off")
      return why = "off ($TGC_TUNE_CACHE=off)", "";
    dir = t;
  } else if (const char *c = tgc::envValue(tgc::Env::CacheDir); c && *c) {
    dir = std::string(c) + "/tune";
  } else if (const char *h = std::getenv("HOME"); h && *h) {
    dir = std::string(h) + "/.cache/tgc/tune";
  } else {
    return why = "no cache directory ($TGC_TUNE_CACHE, $TGC_CACHE_DIR and $HOME unset)", "";
  }
  return dir + "/" + hex16(key) + ".txt";
}

bool readTuneRecord(const std::string &path, uint64_t key, TuneRecord &r, std::string &why) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return why = "none", false;
  if (!S_ISREG(st.st_mode))
    return why = "not a regular file", false;
  if (st.st_size > (1 << 20))
    return why = "larger than 1 MiB", false;
  std::ifstream f(path, std::ios::binary);
  if (!f)
    return why = "cannot be read", false;
  std::ostringstream ss;
  ss << f.rdbuf();
  if (!parseTuneRecord(ss.str(), r, why))
    return false;
  if (r.key != key)
    return why = "its key " + hex16(r.key) + " is not this package's " + hex16(key), false;
  return true;
}

bool writeTuneRecord(const std::string &path, const TuneRecord &r, std::string &why) {
  const size_t slash = path.rfind('/');
  std::error_code ec;
  if (slash != std::string::npos)
    std::filesystem::create_directories(path.substr(0, slash), ec);
  if (ec)
    return why = "cannot create " + path.substr(0, slash) + ": " + ec.message(), false;
  // A unique temporary file (two sessions may write the same record at once), then a rename.
  std::string tmp = path + ".XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0)
    return why = "cannot create " + tmp + ": " + std::strerror(errno), false;
  const std::string text = formatTuneRecord(r);
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) {
      why = "cannot write " + tmp + ": " + std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return false;
    }
    done += (size_t)n;
  }
  ::fchmod(fd, 0644);
  if (::close(fd) != 0) {
    why = "cannot write " + tmp + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    why = "cannot rename " + tmp + " to " + path + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

} // namespace tgc::cuda
