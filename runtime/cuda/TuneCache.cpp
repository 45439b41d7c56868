// TuneCache.cpp — see TuneCache.h.
#include "runtime/cuda/TuneCache.h"
#include "runtime/Env.h"

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

constexpr const char *kHeader = "tgc tune cache v1";

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
  std::string s = std::string(kHeader) + "\nkey " + hex16(r.key) + "\n";
  for (const auto &[i, c] : r.choices)
    s += "step " + std::to_string(i) + " " + c + "\n";
  return s;
}

bool parseTuneRecord(const std::string &text, TuneRecord &r, std::string &why) {
  std::istringstream in(text);
  std::string line;
  int n = 0;
  r = TuneRecord{};
  bool keyed = false;
  while (std::getline(in, line)) {
    ++n;
    const std::string at = "line " + std::to_string(n) + ": ";
    if (n == 1) {
      if (line != kHeader)
        return why = at + "not a tgc tune cache v1 file", false;
      continue;
    }
    std::istringstream ls(line);
    std::string word, rest;
    ls >> word;
    if (word == "key" && !keyed) {
      std::string h;
      ls >> h >> rest;
      if (h.size() != 16 || h.find_first_not_of("0123456789abcdef") != std::string::npos ||
          !rest.empty())
        return why = at + "the key must be 16 lowercase hex digits", false;
      r.key = std::strtoull(h.c_str(), nullptr, 16), keyed = true;
    } else if (word == "step" && keyed) {
      long long i = -1;
      std::string c;
      if (!(ls >> i >> c) || (ls >> rest) || i < 0 || i > 1000000 || !validChoice(c))
        return why = at + "expected 'step <index> <choice>'", false;
      if (!r.choices.empty() && i <= r.choices.back().first)
        return why = at + "step " + std::to_string(i) + " out of order", false;
      r.choices.push_back({(int)i, c});
    } else {
      return why = at + (keyed ? "expected a step line" : "expected the key line"), false;
    }
  }
  if (n == 0)
    return why = "empty", false;
  if (!keyed)
    return why = "no key line", false;
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
