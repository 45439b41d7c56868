// ElementPrelude.cpp — the shared element functions of the preludes (see ElementPrelude.h).
#include "codegen/common/ElementPrelude.h"

namespace tgc::codegen {

namespace {

// @fn, @float, @signed, @pow and @fmod stand for the target's spellings.
const char *kElementFunctions = R"PRELUDE(template <class T> @fn uint8_t tg_isnan(T a) { return a != a; }
template <class T> @fn uint8_t tg_not(T a) { return !a; }
template <class T> @fn T tg_add(T a, T b) { return (T)(a + b); }
template <class T> @fn T tg_sub(T a, T b) { return (T)(a - b); }
template <class T> @fn T tg_mul(T a, T b) { return (T)(a * b); }
template <class T> @fn T tg_pow(T a, T b) {
  if constexpr (@float) return @pow(a, b);
  else {
    if (b < 0) return (T)(a == 1 ? 1 : (a == (T)-1 ? ((b & 1) ? -1 : 1) : 0));
    uint64_t e = (uint64_t)b;
    T r = 1, x = a;
    while (e) { if (e & 1) r = (T)(r * x); x = (T)(x * x); e >>= 1; }
    return r;
  }
}
template <class T> @fn T tg_max(T a, T b) {
  if constexpr (@float) return (a != a || a > b) ? a : b;
  else return a > b ? a : b;
}
template <class T> @fn T tg_min(T a, T b) {
  if constexpr (@float) return (a != a || a < b) ? a : b;
  else return a < b ? a : b;
}
template <class T> @fn T tg_mod(T a, T b) {
  if constexpr (@float) return @fmod(a, b);
  else {
    if (b == 0) return 0;
    if constexpr (@signed) {
      if (b == (T)-1) return 0;
      T r = (T)(a % b);
      if (r != 0 && ((r < 0) != (b < 0))) r = (T)(r + b);
      return r;
    } else return (T)(a % b);
  }
}
template <class T> @fn uint8_t tg_equal(T a, T b) { return a == b; }
template <class T> @fn uint8_t tg_less(T a, T b) { return a < b; }
template <class T> @fn uint8_t tg_less_equal(T a, T b) { return a <= b; }
template <class T> @fn uint8_t tg_greater(T a, T b) { return a > b; }
template <class T> @fn uint8_t tg_greater_equal(T a, T b) { return a >= b; }
template <class T> @fn uint8_t tg_and(T a, T b) { return (a != 0) && (b != 0); }
template <class T> @fn uint8_t tg_or(T a, T b) { return (a != 0) || (b != 0); }
template <class T> @fn uint8_t tg_xor(T a, T b) { return (a != 0) != (b != 0); }
template <class T> @fn T tg_where(uint8_t c, T a, T b) { return c ? a : b; }
template <class T> @fn T tg_bitwise_and(T a, T b) { return (T)(a & b); }
template <class T> @fn T tg_bitwise_or(T a, T b) { return (T)(a | b); }
template <class T> @fn T tg_bitwise_xor(T a, T b) { return (T)(a ^ b); }
template <class T> @fn T tg_bitwise_not(T a) { return (T)(~a); }
template <class T> @fn T tg_bitwise_shift_left(T a, T b) { // unsigned T; by >= its width: 0
  return (uint64_t)b >= sizeof(T) * 8 ? (T)0 : (T)((uint64_t)a << (uint64_t)b);
}
template <class T> @fn T tg_bitwise_shift_right(T a, T b) {
  return (uint64_t)b >= sizeof(T) * 8 ? (T)0 : (T)((uint64_t)a >> (uint64_t)b);
}
/// float8 (ONNX type k: 17 E4M3FN, 18 E4M3FNUZ, 19 E5M2, 20 E5M2FNUZ) <-> float, bit for bit as
/// ONNX's reference (onnx.helper.float32_to_float8e4m3/e5m2; runtime/Float8.h is the host twin).
@fn uint32_t tg_f8_bits(float x) { union { float f; uint32_t u; } c; c.f = x; return c.u; }
@fn float tg_f8_float(uint32_t u) { union { float f; uint32_t u; } c; c.u = u; return c.f; }
@fn bool tg_f8_round_up(uint32_t m, uint32_t mask, uint32_t r) {
  return (m & mask) &&
         ((r & 1) || (m & (mask - 1)) > 0 || ((m & (mask << 1)) && (m & (mask - 1)) == 0));
}
@fn uint8_t tg_f8_from_float(float x, int k, bool sat) {
  const uint32_t b = tg_f8_bits(x), e = (b & 0x7F800000u) >> 23, m = b & 0x007FFFFFu;
  uint32_t r = (b & 0x80000000u) >> 24;
  const bool uz = k == 18 || k == 20, nan = (b & 0x7FFFFFFFu) > 0x7F800000u;
  const bool inf = (b & 0x7FFFFFFFu) == 0x7F800000u;
  if (k <= 18) { // e4m3
    if (uz) {
      if (nan) return 0x80;
      if (inf) return sat ? (uint8_t)(r | 0x7F) : 0x80;
      if (e < 116) return 0;
      if (e < 120) {
        const int ex = (int)e - 119;
        if (ex >= -2) r |= (1u << (2 + ex)) | (m >> (21 - ex));
        else if (m > 0) r |= 1;
        else r = 0;
        if (tg_f8_round_up(m, 1u << (20 - ex), r)) r += 1;
      } else if (e < 135) {
        r |= ((e - 119) << 3) | (m >> 20);
        if ((m & 0x80000u) && ((m & 0x100000u) || (m & 0x7FFFFu))) {
          if ((r & 0x7F) < 0x7F) r += 1;
          else if (!sat) return 0x80;
        }
      } else r = sat ? r | 0x7F : 0x80;
      return (uint8_t)r;
    }
    if (nan) return (uint8_t)(r | 0x7F);
    if (inf) return (uint8_t)(sat ? r | 0x7E : r | 0x7F);
    if (e == 0 || e < 117) return (uint8_t)r;
    if (e < 121) {
      const int ex = (int)e - 120;
      if (ex >= -2) r |= (1u << (2 + ex)) | (m >> (21 - ex));
      else if (m > 0) r |= 1;
      if (tg_f8_round_up(m, 1u << (20 - ex), r)) r += 1;
    } else if (e < 136) {
      r |= ((e - 120) << 3) | (m >> 20);
      if ((r & 0x7F) == 0x7F) r &= 0xFE;
      if ((m & 0x80000u) && ((m & 0x100000u) || (m & 0x7FFFFu))) {
        if ((r & 0x7F) < 0x7E) r += 1;
        else if (!sat) r |= 0x7F;
      }
    } else r |= sat ? 0x7E : 0x7F;
    return (uint8_t)r;
  }
  if (uz) { // e5m2fnuz
    if (nan) return 0x80;
    if (inf) return sat ? (uint8_t)(r | 0x7F) : 0x80;
    if (e < 109) return 0;
    if (e < 112) {
      const int ex = (int)e - 111;
      if (ex >= -1) r |= (1u << (1 + ex)) | (m >> (22 - ex));
      else if (m > 0) r |= 1;
      else r = 0;
      if (tg_f8_round_up(m, 1u << (21 - ex), r)) r += 1;
    } else if (e < 143) {
      r |= ((e - 111) << 2) | (m >> 21);
      if ((m & 0x100000u) && ((m & 0xFFFFFu) || (m & 0x200000u))) {
        if ((r & 0x7F) < 0x7F) r += 1;
        else if (!sat) r = 0x80;
      }
    } else r = sat ? r | 0x7F : 0x80;
    return (uint8_t)r;
  }
  if (nan) return (uint8_t)(r | 0x7F); // e5m2
  if (inf) return (uint8_t)(sat ? r | 0x7B : r | 0x7C);
  if (e == 0 || e < 110) return (uint8_t)r;
  if (e < 113) {
    const int ex = (int)e - 112;
    if (ex >= -1) r |= (1u << (1 + ex)) | (m >> (22 - ex));
    else if (m > 0) r |= 1;
    if (tg_f8_round_up(m, 1u << (21 - ex), r)) r += 1;
  } else if (e < 143) {
    r |= ((e - 112) << 2) | (m >> 21);
    if ((m & 0x100000u) && ((m & 0xFFFFFu) || (m & 0x200000u))) {
      if ((r & 0x7F) < 0x7B) r += 1;
      else r |= sat ? 0x7B : 0x7C;
    }
  } else r |= sat ? 0x7B : 0x7C;
  return (uint8_t)r;
}
@fn float tg_f8_to_float(uint8_t v, int k) {
  const uint32_t sign = (uint32_t)(v & 0x80) << 24;
  if ((k == 18 || k == 20) && v == 0x80) return tg_f8_float(0x7FC00000u);
  if (k == 17 && (v & 0x7F) == 0x7F) return tg_f8_float(sign | 0x7FC00000u);
  if (k == 19 && (v & 0x7F) >= 0x7C)
    return tg_f8_float(sign | ((v & 0x7F) == 0x7C ? 0x7F800000u : 0x7FC00000u));
  const int mb = k <= 18 ? 3 : 2, bias = k == 17 ? 7 : k == 18 ? 8 : k == 19 ? 15 : 16;
  const uint32_t ex = (uint32_t)(v & 0x7F) >> mb, mant = v & ((1u << mb) - 1);
  const float mag = ex == 0 ? (float)mant * tg_f8_float((uint32_t)(127 + 1 - bias - mb) << 23)
                            : tg_f8_float(((ex + 127 - bias) << 23) | (mant << (23 - mb)));
  return tg_f8_float(sign | tg_f8_bits(mag));
}
)PRELUDE";

} // namespace

std::string elementFunctions(const PreludeSpelling &s) {
  const std::pair<const char *, const char *> subs[] = {
      {"@fn", s.fn}, {"@float", s.isFloat}, {"@signed", s.isSigned}, {"@pow", s.pow},
      {"@fmod", s.fmod}};
  std::string out;
  for (const char *p = kElementFunctions; *p;) {
    bool replaced = false;
    for (const auto &[token, text] : subs) {
      const std::string tok = token;
      if (std::string(p, std::min(tok.size(), std::char_traits<char>::length(p))) == tok) {
        out += text;
        p += tok.size();
        replaced = true;
        break;
      }
    }
    if (!replaced)
      out += *p++;
  }
  return out;
}

std::string assemblePrelude(const char *head, const PreludeSpelling &s, const char *tail) {
  return head + elementFunctions(s) + tail;
}

} // namespace tgc::codegen
