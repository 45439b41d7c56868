// Float8.h — the four ONNX float8 formats and int4/uint4, element by element, on the host:
// decoding to float and encoding from float exactly as ONNX's reference does
// (onnx.helper.float32_to_float8e4m3 / float32_to_float8e5m2, onnx.numpy_helper
// float8e4m3_to_float32 / float8e5m2_to_float32: round to nearest even; `saturate` clamps values
// beyond the largest finite one, infinities included, to it; without it they become inf (E5M2) or
// NaN). The generated kernels carry the same functions in their prelude
// (codegen/common/ElementPrelude.cpp, tg_f8_to_float / tg_f8_from_float); tests hold both to the
// reference's values.
//
// Formats (ONNX TensorProto numbers): FLOAT8E4M3FN 17 (bias 7, NaN 0x7F/0xFF, no inf),
// FLOAT8E4M3FNUZ 18 (bias 8, NaN 0x80, no inf, no -0), FLOAT8E5M2 19 (bias 15, IEEE-like inf and
// NaN), FLOAT8E5M2FNUZ 20 (bias 16, NaN 0x80, no inf, no -0). Each is one byte in memory; int4 and
// uint4 (22, 21) are one byte per element in memory too (sign-extended / zero-extended) and packed
// two per byte (low nibble first) only in ONNX tensors.
#ifndef TGC_RUNTIME_FLOAT8_H
#define TGC_RUNTIME_FLOAT8_H

#include <cstdint>
#include <cstring>

namespace tgc::f8 {

inline uint32_t bitsOf(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}

inline float floatOf(uint32_t b) {
  float x;
  std::memcpy(&x, &b, 4);
  return x;
}

/// True when `r` m's rounding bit (mask) asks for rounding up (the reference's test, verbatim).
inline bool roundUp(uint32_t m, uint32_t mask, uint32_t ret) {
  return (m & mask) && ((ret & 1) || (m & (mask - 1)) > 0 ||
                        ((m & mask) && (m & (mask << 1)) && (m & (mask - 1)) == 0));
}

/// float -> E4M3FN (uz false) or E4M3FNUZ (uz true), as onnx.helper.float32_to_float8e4m3.
inline uint8_t fromFloatE4M3(float x, bool uz, bool saturate) {
  const uint32_t b = bitsOf(x);
  uint32_t ret = (b & 0x80000000u) >> 24;
  const uint32_t e = (b & 0x7F800000u) >> 23, m = b & 0x007FFFFFu;
  const bool isInf = (b & 0x7FFFFFFFu) == 0x7F800000u;
  if (uz) {
    if ((b & 0x7FFFFFFFu) > 0x7F800000u) // NaN (the reference divides first, quieting it)
      return 0x80;
    if (isInf)
      return saturate ? (uint8_t)(ret | 127) : 0x80;
    if (e < 116) {
      ret = 0;
    } else if (e < 120) { // subnormal
      const int ex = (int)e - 119;
      if (ex >= -2) {
        ret |= 1u << (2 + ex);
        ret |= m >> (21 - ex);
      } else if (m > 0) {
        ret |= 1;
      } else {
        ret = 0;
      }
      if (roundUp(m, 1u << (20 - ex), ret))
        ret += 1;
    } else if (e < 135) { // normal
      const int ex = (int)e - 119;
      ret |= (uint32_t)ex << 3;
      ret |= m >> 20;
      if ((m & 0x80000u) && ((m & 0x100000u) || (m & 0x7FFFFu))) {
        if ((ret & 0x7F) < 0x7F)
          ret += 1;
        else if (!saturate)
          return 0x80;
      }
    } else if (saturate) {
      ret |= 0x7F;
    } else {
      ret = 0x80;
    }
    return (uint8_t)ret;
  }
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) // NaN (the reference divides first, quieting it)
    return (uint8_t)(0x7F | ret);
  if (isInf)
    return (uint8_t)(saturate ? ret | 126 : ret | 0x7F);
  if (e != 0) {
    if (e < 117) {
    } else if (e < 121) { // subnormal
      const int ex = (int)e - 120;
      if (ex >= -2) {
        ret |= 1u << (2 + ex);
        ret |= m >> (21 - ex);
      } else if (m > 0) {
        ret |= 1;
      }
      if (roundUp(m, 1u << (20 - ex), ret))
        ret += 1;
    } else if (e < 136) { // normal
      const int ex = (int)e - 120;
      ret |= (uint32_t)ex << 3;
      ret |= m >> 20;
      if ((ret & 0x7F) == 0x7F)
        ret &= 0xFE;
      if ((m & 0x80000u) && ((m & 0x100000u) || (m & 0x7FFFFu))) {
        if ((ret & 0x7F) < 0x7E)
          ret += 1;
        else if (!saturate)
          ret |= 0x7F;
      }
    } else if (saturate) {
      ret |= 126;
    } else {
      ret |= 0x7F;
    }
  }
  return (uint8_t)ret;
}

/// float -> E5M2 (uz false) or E5M2FNUZ (uz true), as onnx.helper.float32_to_float8e5m2.
inline uint8_t fromFloatE5M2(float x, bool uz, bool saturate) {
  const uint32_t b = bitsOf(x);
  uint32_t ret = (b & 0x80000000u) >> 24;
  const uint32_t e = (b & 0x7F800000u) >> 23, m = b & 0x007FFFFFu;
  const bool isInf = (b & 0x7FFFFFFFu) == 0x7F800000u;
  if (uz) {
    if ((b & 0x7FFFFFFFu) > 0x7F800000u) // NaN (the reference divides first, quieting it)
      return 0x80;
    if (isInf)
      return saturate ? (uint8_t)(ret | 0x7F) : 0x80;
    if (e < 109) {
      ret = 0;
    } else if (e < 112) { // subnormal
      const int ex = (int)e - 111;
      if (ex >= -1) {
        ret |= 1u << (1 + ex);
        ret |= m >> (22 - ex);
      } else if (m > 0) {
        ret |= 1;
      } else {
        ret = 0;
      }
      if (roundUp(m, 1u << (21 - ex), ret))
        ret += 1;
    } else if (e < 143) { // normal
      const int ex = (int)e - 111;
      ret |= (uint32_t)ex << 2;
      ret |= m >> 21;
      if ((m & 0x100000u) && ((m & 0xFFFFFu) || (m & 0x200000u))) {
        if ((ret & 0x7F) < 0x7F)
          ret += 1;
        else if (!saturate)
          ret = 0x80;
      }
    } else if (saturate) {
      ret |= 0x7F;
    } else {
      ret = 0x80;
    }
    return (uint8_t)ret;
  }
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) // NaN (the reference divides first, quieting it)
    return (uint8_t)(0x7F | ret);
  if (isInf)
    return (uint8_t)(saturate ? ret | 0x7B : ret | 0x7C);
  if (e != 0) {
    if (e < 110) {
    } else if (e < 113) { // subnormal
      const int ex = (int)e - 112;
      if (ex >= -1) {
        ret |= 1u << (1 + ex);
        ret |= m >> (22 - ex);
      } else if (m > 0) {
        ret |= 1;
      }
      if (roundUp(m, 1u << (21 - ex), ret))
        ret += 1;
    } else if (e < 143) { // normal
      const int ex = (int)e - 112;
      ret |= (uint32_t)ex << 2;
      ret |= m >> 21;
      if ((m & 0x100000u) && ((m & 0xFFFFFu) || (m & 0x200000u))) {
        if ((ret & 0x7F) < 0x7B)
          ret += 1;
        else
          ret |= saturate ? 0x7B : 0x7C;
      }
    } else {
      ret |= saturate ? 0x7B : 0x7C;
    }
  }
  return (uint8_t)ret;
}

/// float -> float8 of ONNX type `kind` (17..20).
inline uint8_t fromFloat(float x, int kind, bool saturate) {
  switch (kind) {
  case 17:
    return fromFloatE4M3(x, false, saturate);
  case 18:
    return fromFloatE4M3(x, true, saturate);
  case 19:
    return fromFloatE5M2(x, false, saturate);
  default:
    return fromFloatE5M2(x, true, saturate);
  }
}

/// float8 of ONNX type `kind` (17..20) -> float (exact).
inline float toFloat(uint8_t v, int kind) {
  const bool e4 = kind == 17 || kind == 18, uz = kind == 18 || kind == 20;
  const uint32_t sign = (uint32_t)(v & 0x80) << 24;
  if (uz && v == 0x80)
    return floatOf(0x7FC00000u);
  if (kind == 17 && (v & 0x7F) == 0x7F)
    return floatOf(sign | 0x7FC00000u);
  if (kind == 19 && (v & 0x7F) > 0x7C)
    return floatOf(sign | 0x7FC00000u);
  if (kind == 19 && (v & 0x7F) == 0x7C)
    return floatOf(sign | 0x7F800000u);
  const int mbits = e4 ? 3 : 2;
  const int bias = kind == 17 ? 7 : kind == 18 ? 8 : kind == 19 ? 15 : 16;
  const uint32_t ex = (uint32_t)(v & 0x7F) >> mbits, mant = v & ((1u << mbits) - 1);
  float mag;
  if (ex == 0) // mant * 2^(1 - bias - mbits), exact
    mag = (float)mant * floatOf((uint32_t)(127 + 1 - bias - mbits) << 23);
  else
    mag = floatOf((uint32_t)(ex + 127 - bias) << 23 | mant << (23 - mbits));
  return floatOf(sign | bitsOf(mag));
}

} // namespace tgc::f8

#endif // TGC_RUNTIME_FLOAT8_H
