// Tensor.cpp — host tensor helpers: element access, conversions and the rel-L2 metric.
#include "runtime/Tensor.h"

#include "runtime/Float8.h"

#include <cmath>
#include <limits>

namespace tgc {

size_t dtypeSize(DType t) {
  switch (t) {
  case DType::F32: case DType::I32: case DType::U32: return 4;
  case DType::U8: case DType::I8: case DType::Bool: return 1;
  case DType::F8E4M3FN: case DType::F8E4M3FNUZ: case DType::F8E5M2: case DType::F8E5M2FNUZ:
  case DType::U4: case DType::I4: return 1;
  case DType::I64: case DType::F64: case DType::U64: return 8;
  case DType::F16: case DType::BF16: case DType::I16: case DType::U16: return 2;
  }
  return 0;
}

const char *dtypeName(DType t) {
  switch (t) {
  case DType::F32: return "f32";
  case DType::U8: return "u8";
  case DType::I8: return "i8";
  case DType::U16: return "u16";
  case DType::I16: return "i16";
  case DType::U32: return "u32";
  case DType::U64: return "u64";
  case DType::I32: return "i32";
  case DType::I64: return "i64";
  case DType::Bool: return "bool";
  case DType::F16: return "f16";
  case DType::F64: return "f64";
  case DType::BF16: return "bf16";
  case DType::F8E4M3FN: return "f8e4m3fn";
  case DType::F8E4M3FNUZ: return "f8e4m3fnuz";
  case DType::F8E5M2: return "f8e5m2";
  case DType::F8E5M2FNUZ: return "f8e5m2fnuz";
  case DType::U4: return "u4";
  case DType::I4: return "i4";
  }
  return "unknown";
}

bool isKnownDType(int32_t v) { return dtypeSize(static_cast<DType>(v)) != 0; }

bool isUnsignedDType(DType t) {
  return t == DType::U4 || t == DType::U8 || t == DType::U16 || t == DType::U32 ||
         t == DType::U64;
}

bool isIntegerDType(DType t) {
  return isUnsignedDType(t) || t == DType::I4 || t == DType::I8 || t == DType::I16 ||
         t == DType::I32 || t == DType::I64;
}

bool isFloat8DType(DType t) {
  return t == DType::F8E4M3FN || t == DType::F8E4M3FNUZ || t == DType::F8E5M2 ||
         t == DType::F8E5M2FNUZ;
}

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

float halfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else { // subnormal: renormalize
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) {
        mant <<= 1;
        --exp;
      }
      bits = sign | (exp << 23) | ((mant & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  int32_t exp = ((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (((x >> 23) & 0xff) == 0xff)
    return sign | 0x7c00u | (mant ? 0x200u : 0u);
  if (exp >= 31)
    return sign | 0x7c00u;
  if (exp <= 0) {
    if (exp < -10)
      return sign;
    mant |= 0x800000u;
    uint32_t shift = 14 - exp;
    uint32_t half = mant >> shift, rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1)))
      ++half;
    return sign | half;
  }
  uint32_t half = sign | (exp << 10) | (mant >> 13), rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1)))
    ++half;
  return half;
}

float bf16ToFloat(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu))
    return (x >> 16) | 0x40u;
  x += 0x7fffu + ((x >> 16) & 1);
  return x >> 16;
}

double HostTensor::get(int64_t i) const {
  switch (dtype) {
  case DType::F32: return as<float>()[i];
  case DType::F64: return as<double>()[i];
  case DType::F16: return halfToFloat(as<uint16_t>()[i]);
  case DType::BF16: return bf16ToFloat(as<uint16_t>()[i]);
  case DType::I64: return static_cast<double>(as<int64_t>()[i]);
  case DType::I32: return as<int32_t>()[i];
  case DType::I8: return as<int8_t>()[i];
  case DType::U8: return as<uint8_t>()[i];
  case DType::I16: return as<int16_t>()[i];
  case DType::U16: return as<uint16_t>()[i];
  case DType::U32: return as<uint32_t>()[i];
  case DType::U64: return static_cast<double>(as<uint64_t>()[i]);
  case DType::Bool: return as<uint8_t>()[i] ? 1.0 : 0.0;
  case DType::F8E4M3FN: case DType::F8E4M3FNUZ: case DType::F8E5M2: case DType::F8E5M2FNUZ:
    return f8::toFloat(as<uint8_t>()[i], static_cast<int>(dtype));
  case DType::U4: return as<uint8_t>()[i];
  case DType::I4: return as<int8_t>()[i];
  }
  return 0;
}

int64_t HostTensor::getInt(int64_t i) const {
  switch (dtype) {
  case DType::I64: return as<int64_t>()[i];
  case DType::I32: return as<int32_t>()[i];
  case DType::I16: return as<int16_t>()[i];
  case DType::I8: return as<int8_t>()[i];
  case DType::U8: return as<uint8_t>()[i];
  case DType::U16: return as<uint16_t>()[i];
  case DType::U32: return as<uint32_t>()[i];
  case DType::U64: return static_cast<int64_t>(as<uint64_t>()[i]);
  case DType::Bool: return as<uint8_t>()[i] != 0;
  case DType::U4: return as<uint8_t>()[i];
  case DType::I4: return as<int8_t>()[i];
  default: return 0;
  }
}

namespace {

/// The two's-complement bits of v truncated toward zero (NaN 0, saturated outside
/// [-2^63, 2^64)): stored to an unsigned type of N bits, the value wraps modulo 2^N.
uint64_t wrappedBits(double v) {
  if (std::isnan(v))
    return 0;
  v = std::trunc(v);
  if (v >= 18446744073709551616.0)
    return UINT64_MAX;
  if (v >= 9223372036854775808.0)
    return static_cast<uint64_t>(v);
  if (v < -9223372036854775808.0)
    return static_cast<uint64_t>(INT64_MIN);
  return static_cast<uint64_t>(static_cast<int64_t>(v));
}

} // namespace

void HostTensor::set(int64_t i, double v) {
  switch (dtype) {
  case DType::F32: as<float>()[i] = static_cast<float>(v); return;
  case DType::F64: as<double>()[i] = v; return;
  case DType::F16: as<uint16_t>()[i] = floatToHalf(static_cast<float>(v)); return;
  case DType::BF16: as<uint16_t>()[i] = floatToBf16(static_cast<float>(v)); return;
  case DType::I64: as<int64_t>()[i] = static_cast<int64_t>(v); return;
  case DType::I32: as<int32_t>()[i] = static_cast<int32_t>(v); return;
  case DType::I8: as<int8_t>()[i] = static_cast<int8_t>(v); return;
  case DType::U8: as<uint8_t>()[i] = static_cast<uint8_t>(v); return;
  case DType::I16: as<int16_t>()[i] = static_cast<int16_t>(wrappedBits(v)); return;
  case DType::U16: as<uint16_t>()[i] = static_cast<uint16_t>(wrappedBits(v)); return;
  case DType::U32: as<uint32_t>()[i] = static_cast<uint32_t>(wrappedBits(v)); return;
  case DType::U64: as<uint64_t>()[i] = wrappedBits(v); return;
  case DType::Bool: as<uint8_t>()[i] = v != 0.0; return;
  // float8: through f32, rounded to nearest even, saturating (Cast's default).
  case DType::F8E4M3FN: case DType::F8E4M3FNUZ: case DType::F8E5M2: case DType::F8E5M2FNUZ:
    as<uint8_t>()[i] = f8::fromFloat(static_cast<float>(v), static_cast<int>(dtype), true);
    return;
  // 4-bit: the low 4 bits (wrapping), sign-extended for i4.
  case DType::U4: as<uint8_t>()[i] = static_cast<uint8_t>(wrappedBits(v) & 0xF); return;
  case DType::I4:
    as<int8_t>()[i] = static_cast<int8_t>(static_cast<uint8_t>(wrappedBits(v) << 4)) >> 4;
    return;
  }
}

HostTensor HostTensor::zeros(DType t, std::vector<int64_t> shape, std::string name) {
  HostTensor h;
  h.name = std::move(name);
  h.dtype = t;
  h.shape = std::move(shape);
  h.data.assign(static_cast<size_t>(h.numel()) * dtypeSize(t), 0);
  return h;
}

double relL2Tolerance(DType output, bool lowPrecision) {
  return lowPrecision || output == DType::F16 || output == DType::BF16 ? 1e-2 : 1e-5;
}

int64_t integerMismatches(const HostTensor &got, const HostTensor &want) {
  const bool intLike = isIntegerDType(want.dtype) || want.dtype == DType::Bool;
  if (!intLike || got.dtype != want.dtype || got.numel() != want.numel())
    return -1;
  int64_t n = 0;
  for (int64_t i = 0; i < want.numel(); ++i)
    n += got.getInt(i) != want.getInt(i);
  return n;
}

double relativeL2(const HostTensor &got, const HostTensor &want) {
  if (got.numel() != want.numel())
    return std::numeric_limits<double>::infinity();
  double num = 0, den = 0;
  if (got.dtype == want.dtype && isIntegerDType(want.dtype)) {
    const bool u = isUnsignedDType(want.dtype);
    for (int64_t i = 0; i < want.numel(); ++i) {
      const uint64_t g = static_cast<uint64_t>(got.getInt(i)),
                     w = static_cast<uint64_t>(want.getInt(i));
      // |g - w| exactly (as unsigned when the type is, as signed otherwise), then in double.
      const bool gBigger = u ? g > w : static_cast<int64_t>(g) > static_cast<int64_t>(w);
      const double d = static_cast<double>(gBigger ? g - w : w - g);
      const double wv = u ? static_cast<double>(w) : static_cast<double>(static_cast<int64_t>(w));
      num += d * d;
      den += wv * wv;
    }
    return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  }
  for (int64_t i = 0; i < want.numel(); ++i) {
    double g = got.get(i), w = want.get(i);
    if (std::isnan(g) != std::isnan(w))
      return std::numeric_limits<double>::infinity();
    if (std::isnan(g) || (std::isinf(g) && g == w))
      continue; // NaN where the reference has NaN, or equal infinities: no error
    num += (g - w) * (g - w);
    den += w * w;
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

} // namespace tgc
