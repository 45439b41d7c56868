// PackageFiles.cpp — bounded file reads and plan header checks for the runtime sessions.
#include "runtime/PackageFiles.h"
#include "runtime/Text.h"

#include "runtime/schema/PlanUtil.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>

namespace tgc {

bool plainFileName(const std::string &s) {
  return !s.empty() && s != "." && s != ".." && s.find('/') == std::string::npos &&
         s.find('\0') == std::string::npos;
}

int64_t bytesOf(DType t, const std::vector<int64_t> &shape) {
  int64_t n = (int64_t)dtypeSize(t);
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && n > kMaxBufferBytes / d))
      return -1;
    n *= d;
  }
  return n;
}

Status readWhole(const std::string &path, int64_t limit, std::string &out, const char *what) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return Status::error(std::string(what) + " '" + path + "' cannot be read: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return Status::error(std::string(what) + " '" + path + "' is not a regular file");
  if (st.st_size > limit)
    return Status::error(std::string(what) + " '" + path + "' is too large (" +
                         std::to_string((long long)st.st_size) + " bytes, limit " +
                         std::to_string((long long)limit) + ")");
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return Status::error(std::string(what) + " '" + path + "' cannot be opened: " + std::strerror(errno));
  out.resize((size_t)st.st_size);
  size_t got = out.empty() ? 0 : std::fread(&out[0], 1, out.size(), f);
  std::fclose(f);
  if (got != out.size())
    return Status::error(std::string(what) + " '" + path + "' could not be read completely");
  return Status::success();
}

Status readPlan(const std::string &dir, plan::Plan &p) {
  std::string bytes;
  Status st = readWhole(dir + "/plan.pb", plan::kMaxPlanBytes, bytes, "plan");
  if (!st.ok)
    return st;
  if (!p.ParseFromString(bytes))
    return Status::error("plan.pb is corrupt or truncated (" + std::to_string(bytes.size()) +
                         " bytes do not parse)");
  if (p.magic() != plan::kPlanMagic) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%08x", p.magic());
    return Status::error(std::string("plan.pb has bad magic ") + hex + " (not a tgc plan)");
  }
  const uint32_t v = p.format_version();
  // Bucketed (4) and decode (5) packages hold buckets; single-shape ones (3) none.
  const bool bucketed = v == plan::kPlanFormatVersionBucketed ||
                        v == plan::kPlanFormatVersionDecode;
  if (v != plan::kPlanFormatVersion && !bucketed)
    return Status::error("plan.pb is package format " + std::to_string(v) +
                         ", this runtime reads " + std::to_string(plan::kPlanFormatVersion) +
                         ": recompile the model with this tgc");
  if (bucketed && p.buckets_size() == 0)
    return Status::error("plan.pb is package format " + std::to_string(v) +
                         (v == plan::kPlanFormatVersionDecode ? " (decode)" : " (bucketed)") +
                         " but holds no buckets (file is corrupt)");
  if (!bucketed && p.buckets_size() > 0)
    return Status::error("plan.pb is package format " + std::to_string(v) +
                         " but holds " + std::to_string(p.buckets_size()) +
                         " buckets (bucketed packages are format " +
                         std::to_string(plan::kPlanFormatVersionBucketed) + ")");
  if (!bucketed && (p.states_size() > 0 || p.has_decode_step() || p.has_decode()))
    return Status::error("plan.pb is package format " + std::to_string(v) +
                         " but holds states or a step plan (decode packages are format " +
                         std::to_string(plan::kPlanFormatVersionDecode) + ")");
  if (p.end_marker() != plan::kPlanMagic)
    return Status::error("plan.pb is truncated (end marker missing)");
  if (!plan::planChecksumMatches(p))
    return Status::error("plan.pb checksum mismatch (file is corrupt)");
  return Status::success();
}

bool peekBucketedPlan(const std::string &dir, plan::Plan &top) {
  std::string bytes;
  if (!readWhole(dir + "/plan.pb", plan::kMaxPlanBytes, bytes, "plan").ok ||
      !top.ParseFromString(bytes))
    return false;
  return top.buckets_size() > 0 || top.format_version() == plan::kPlanFormatVersionBucketed ||
         top.format_version() == plan::kPlanFormatVersionDecode;
}

Status checkOutputSources(
    const plan::Plan &p, const std::vector<int64_t> &outBytes, const std::string &pre,
    const std::function<Status(const plan::BufferArg &, const std::string &)> &checkArg) {
  for (int i = 0; i < p.outputs_size(); ++i) {
    const plan::BufferArg &src = p.outputs(i).source();
    const std::string where = pre + "output '" + escapeText(p.outputs(i).name()) + "'";
    Status st = checkArg(src, where);
    if (!st.ok)
      return st;
    if (src.bytes() != outBytes[(size_t)i])
      return Status::error(where + ": source has " + std::to_string(src.bytes()) +
                           " bytes, the output needs " + std::to_string(outBytes[(size_t)i]));
    if (src.kind() == plan::OUTPUT && src.index() != i)
      return Status::error(where + ": source is another output");
    if (p.outputs(i).has_count()) { // a data-dependent extent: an i64 count in the arena
      const plan::BufferArg &c = p.outputs(i).count();
      const int32_t axis = p.outputs(i).dynamic_axis();
      if (c.kind() != plan::ARENA || c.bytes() != 8 || axis < 0 ||
          axis >= p.outputs(i).shape_size())
        return Status::error(where + ": its count is not 8 bytes in the arena for an axis of it");
      if (!(st = checkArg(c, where + " count")).ok)
        return st;
    }
  }
  return Status::success();
}

} // namespace tgc
