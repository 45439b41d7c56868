// ElementPrelude.h — the element functions both preludes define alike (tg_isnan through
// tg_where: logic, arithmetic with the interpreter's integer rules, pow, max/min propagating
// NaN, mod, comparisons, select; then the bitwise functions), written once and spelled for
// each target.
#ifndef TGC_CODEGEN_COMMON_ELEMENTPRELUDE_H
#define TGC_CODEGEN_COMMON_ELEMENTPRELUDE_H

#include <string>

namespace tgc::codegen {

/// How a prelude spells what the shared element functions need.
struct PreludeSpelling {
  const char *fn;       ///< a function's qualifiers ("inline")
  const char *isFloat;  ///< the test that T is a float type
  const char *isSigned; ///< the test that T is signed
  const char *pow;      ///< float pow
  const char *fmod;     ///< float fmod
};

/// The shared element functions in `s`'s spelling (one template per line or block).
std::string elementFunctions(const PreludeSpelling &s);

/// A prelude: `head`, the shared element functions in `s`'s spelling, then `tail`.
std::string assemblePrelude(const char *head, const PreludeSpelling &s, const char *tail);

} // namespace tgc::codegen

#endif // TGC_CODEGEN_COMMON_ELEMENTPRELUDE_H
