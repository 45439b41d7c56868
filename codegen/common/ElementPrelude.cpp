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
