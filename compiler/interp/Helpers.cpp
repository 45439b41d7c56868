// Helpers.cpp — element conversion and indexing helpers shared by the interpreter's kernels.
//
// Kernels read whole tensors into double (or int64) vectors once and store once, so the per-dtype
// switch runs outside the element loops.
#include "compiler/interp/Kernels.h"

#include <cmath>
#include <limits>

namespace tgc::interp {

std::vector<int64_t> broadcastStrides(const Shape &in, const Shape &out) {
  std::vector<int64_t> s(out.size(), 0), own = stridesOf(in);
  size_t lead = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i)
    s[lead + i] = in[i] == 1 ? 0 : own[i];
  return s;
}

llvm::Error checkBroadcast(const Shape &in, const Shape &out, const char *what) {
  bool ok = in.size() <= out.size();
  for (size_t i = 0; ok && i < in.size(); ++i) {
    int64_t d = in[i], o = out[out.size() - in.size() + i];
    ok = d == o || d == 1;
  }
  if (!ok)
    return kernelError(llvm::Twine(what) + " shape " + shapeToString(in) +
                       " does not broadcast to " + shapeToString(out));
  return llvm::Error::success();
}

int64_t product(const Shape &s, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < s.size() && i < end; ++i)
    n *= s[i];
  return n;
}

llvm::Error kernelError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

bool isIntegerLike(DType t) { return isIntegerDType(t) || t == DType::Bool; }

namespace {

template <typename T, typename R, typename Conv>
void readAll(const HostTensor &t, std::vector<R> &out, Conv conv) {
  const T *p = t.as<T>();
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = conv(p[i]);
}

/// Truncates toward zero and clamps into [lo, hi]; NaN becomes 0 (C++ would be undefined).
int64_t saturate(double v, double lo, double hi) {
  if (std::isnan(v))
    return 0;
  v = std::trunc(v);
  if (v <= lo)
    return static_cast<int64_t>(lo);
  if (v >= hi)
    return v >= 9.2233720368547758e18 ? std::numeric_limits<int64_t>::max()
                                      : static_cast<int64_t>(hi);
  return static_cast<int64_t>(v);
}

} // namespace

std::vector<double> toF64(const HostTensor &t) {
  std::vector<double> v(t.numel());
  auto id = [](auto x) { return static_cast<double>(x); };
  switch (t.dtype) {
  case DType::F32: readAll<float>(t, v, id); break;
  case DType::F64: readAll<double>(t, v, id); break;
  case DType::F16: readAll<uint16_t>(t, v, [](uint16_t h) { return (double)halfToFloat(h); }); break;
  case DType::BF16: readAll<uint16_t>(t, v, [](uint16_t h) { return (double)bf16ToFloat(h); }); break;
  case DType::I64: readAll<int64_t>(t, v, id); break;
  case DType::I32: readAll<int32_t>(t, v, id); break;
  case DType::I8: readAll<int8_t>(t, v, id); break;
  case DType::U8: readAll<uint8_t>(t, v, id); break;
  case DType::I16: readAll<int16_t>(t, v, id); break;
  case DType::U16: readAll<uint16_t>(t, v, id); break;
  case DType::U32: readAll<uint32_t>(t, v, id); break;
  case DType::U64: readAll<uint64_t>(t, v, id); break;
  case DType::Bool: readAll<uint8_t>(t, v, [](uint8_t b) { return b ? 1.0 : 0.0; }); break;
  case DType::I4: readAll<int8_t>(t, v, id); break;
  case DType::U4: readAll<uint8_t>(t, v, id); break;
  case DType::F8E4M3FN: case DType::F8E4M3FNUZ: case DType::F8E5M2: case DType::F8E5M2FNUZ:
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = t.get(static_cast<int64_t>(i)); // decoded (runtime/Float8.h)
    break;
  }
  return v;
}

std::vector<int64_t> toI64(const HostTensor &t) {
  std::vector<int64_t> v(t.numel());
  auto id = [](auto x) { return static_cast<int64_t>(x); };
  switch (t.dtype) {
  case DType::I64: readAll<int64_t>(t, v, id); break;
  case DType::I32: readAll<int32_t>(t, v, id); break;
  case DType::I8: readAll<int8_t>(t, v, id); break;
  case DType::U8: readAll<uint8_t>(t, v, id); break;
  case DType::I16: readAll<int16_t>(t, v, id); break;
  case DType::U16: readAll<uint16_t>(t, v, id); break;
  case DType::U32: readAll<uint32_t>(t, v, id); break;
  case DType::U64: readAll<uint64_t>(t, v, id); break; // the bits: above INT64_MAX negative
  case DType::Bool: readAll<uint8_t>(t, v, [](uint8_t b) { return int64_t(b != 0); }); break;
  case DType::I4: readAll<int8_t>(t, v, id); break;
  case DType::U4: readAll<uint8_t>(t, v, id); break;
  default: {
    std::vector<double> d = toF64(t);
    for (size_t i = 0; i < d.size(); ++i)
      v[i] = saturate(d[i], -9.2233720368547758e18, 9.2233720368547758e18);
  }
  }
  return v;
}

void storeF64(HostTensor &t, const std::vector<double> &v) {
  size_t n = std::min<size_t>(v.size(), t.numel());
  switch (t.dtype) {
  case DType::F32: for (size_t i = 0; i < n; ++i) t.as<float>()[i] = static_cast<float>(v[i]); break;
  case DType::F64: for (size_t i = 0; i < n; ++i) t.as<double>()[i] = v[i]; break;
  case DType::F16: for (size_t i = 0; i < n; ++i) t.as<uint16_t>()[i] = floatToHalf(float(v[i])); break;
  case DType::BF16: for (size_t i = 0; i < n; ++i) t.as<uint16_t>()[i] = floatToBf16(float(v[i])); break;
  case DType::I64:
    for (size_t i = 0; i < n; ++i)
      t.as<int64_t>()[i] = saturate(v[i], -9.2233720368547758e18, 9.2233720368547758e18);
    break;
  case DType::I32: for (size_t i = 0; i < n; ++i) t.as<int32_t>()[i] = saturate(v[i], INT32_MIN, INT32_MAX); break;
  case DType::I8: for (size_t i = 0; i < n; ++i) t.as<int8_t>()[i] = saturate(v[i], INT8_MIN, INT8_MAX); break;
  case DType::U8: for (size_t i = 0; i < n; ++i) t.as<uint8_t>()[i] = saturate(v[i], 0, UINT8_MAX); break;
  case DType::I16: for (size_t i = 0; i < n; ++i) t.as<int16_t>()[i] = saturate(v[i], INT16_MIN, INT16_MAX); break;
  case DType::U16: for (size_t i = 0; i < n; ++i) t.as<uint16_t>()[i] = saturate(v[i], 0, UINT16_MAX); break;
  case DType::U32: for (size_t i = 0; i < n; ++i) t.as<uint32_t>()[i] = saturate(v[i], 0, UINT32_MAX); break;
  case DType::U64:
    for (size_t i = 0; i < n; ++i)
      t.as<uint64_t>()[i] = std::isnan(v[i]) || v[i] <= 0 ? 0
                            : v[i] >= 18446744073709551616.0 ? UINT64_MAX
                                                              : static_cast<uint64_t>(v[i]);
    break;
  case DType::Bool: for (size_t i = 0; i < n; ++i) t.as<uint8_t>()[i] = v[i] != 0.0; break;
  case DType::I4: for (size_t i = 0; i < n; ++i) t.as<int8_t>()[i] = saturate(v[i], -8, 7); break;
  case DType::U4: for (size_t i = 0; i < n; ++i) t.as<uint8_t>()[i] = saturate(v[i], 0, 15); break;
  default: // float8: through f32, saturating (tg.cast's own path honours saturate=false)
    for (size_t i = 0; i < n; ++i)
      t.set(static_cast<int64_t>(i), v[i]);
  }
}

void storeI64(HostTensor &t, const std::vector<int64_t> &v) {
  size_t n = std::min<size_t>(v.size(), t.numel());
  switch (t.dtype) {
  case DType::I64: for (size_t i = 0; i < n; ++i) t.as<int64_t>()[i] = v[i]; break;
  case DType::I32: for (size_t i = 0; i < n; ++i) t.as<int32_t>()[i] = static_cast<int32_t>(v[i]); break;
  case DType::I8: for (size_t i = 0; i < n; ++i) t.as<int8_t>()[i] = static_cast<int8_t>(v[i]); break;
  case DType::U8: for (size_t i = 0; i < n; ++i) t.as<uint8_t>()[i] = static_cast<uint8_t>(v[i]); break;
  case DType::I16: for (size_t i = 0; i < n; ++i) t.as<int16_t>()[i] = static_cast<int16_t>(v[i]); break;
  case DType::U16: for (size_t i = 0; i < n; ++i) t.as<uint16_t>()[i] = static_cast<uint16_t>(v[i]); break;
  case DType::U32: for (size_t i = 0; i < n; ++i) t.as<uint32_t>()[i] = static_cast<uint32_t>(v[i]); break;
  case DType::U64: for (size_t i = 0; i < n; ++i) t.as<uint64_t>()[i] = static_cast<uint64_t>(v[i]); break;
  case DType::Bool: for (size_t i = 0; i < n; ++i) t.as<uint8_t>()[i] = v[i] != 0; break;
  default:
    for (size_t i = 0; i < n; ++i)
      t.set(static_cast<int64_t>(i), static_cast<double>(v[i]));
  }
}

} // namespace tgc::interp
