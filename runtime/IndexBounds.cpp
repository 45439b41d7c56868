// IndexBounds.cpp — see IndexBounds.h.
#include "runtime/IndexBounds.h"
#include "runtime/Text.h"

#include <cstdint>
#include <cstring>
#include <string>

namespace tgc {
namespace {

/// "[1, 0]": the position of flat element `flat` in a row-major tensor of `rank` dims.
std::string position(int64_t flat, const int64_t *dims, int32_t rank) {
  std::string s;
  for (int32_t d = rank - 1; d >= 0; --d) {
    const int64_t n = dims[d] > 0 ? dims[d] : 1;
    s = std::to_string(flat % n) + (s.empty() ? "" : ", ") + s;
    flat /= n;
  }
  return "[" + s + "]";
}

} // namespace

Status checkIndexBounds(const std::vector<TensorSpec> &specs, const TensorRef *refs, size_t n) {
  for (size_t i = 0; i < n && i < specs.size(); ++i) {
    const TensorSpec &s = specs[i];
    const TensorRef &r = refs[i];
    if (!s.indexBounded || (r.dtype != DType::I64 && r.dtype != DType::I32) || !r.data)
      continue;
    int64_t count = 1;
    for (int32_t k = 0; k < r.rank; ++k)
      count *= r.dims[k];
    const size_t esize = r.dtype == DType::I64 ? 8 : 4;
    if (count < 0 || (size_t)count > r.bytes / esize)
      continue; // the spec check refuses such a buffer first
    const auto *bytes = static_cast<const uint8_t *>(r.data);
    for (int64_t e = 0; e < count; ++e) {
      int64_t v;
      if (esize == 8) {
        std::memcpy(&v, bytes + e * 8, 8);
      } else {
        int32_t w;
        std::memcpy(&w, bytes + e * 4, 4);
        v = w;
      }
      if (v < s.indexLo || v > s.indexHi)
        return Status::error("input '" + escapeText(s.name) + "': " +
                             (r.rank > 0 ? "element " + position(e, r.dims, r.rank) + " is " +
                                               std::to_string(v) + ","
                                         : std::to_string(v) + " is") +
                             " outside [" + std::to_string(s.indexLo) + ", " +
                             std::to_string(s.indexHi) + "] (indices of " + s.indexNode + ")");
    }
  }
  return Status::success();
}

std::string takeIndexBound(const plan::TensorDesc &d, TensorSpec &s) {
  if (!d.has_index_bound())
    return "";
  const plan::IndexBound &b = d.index_bound();
  if (s.dtype != DType::I32 && s.dtype != DType::I64)
    return "has an index range but is " + std::string(dtypeName(s.dtype)) +
           " (only i32 and i64 inputs)";
  if (b.lo() > b.hi())
    return "has an empty index range [" + std::to_string(b.lo()) + ", " + std::to_string(b.hi()) +
           "]";
  s.indexBounded = true, s.indexLo = b.lo(), s.indexHi = b.hi(), s.indexNode = b.node();
  return "";
}

} // namespace tgc
