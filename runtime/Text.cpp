// Text.cpp — escaping of model text for display and generated source (see Text.h).
#include "runtime/Text.h"

namespace tgc {

namespace {

bool plain(unsigned char c) { return c >= 0x20 && c <= 0x7e && c != '%' && c != '\\' && c != '"'; }

void hex(std::string &out, unsigned char c) {
  static const char *digits = "0123456789ABCDEF";
  out += '%';
  out += digits[c >> 4];
  out += digits[c & 15];
}

} // namespace

std::string escapeText(std::string_view s, size_t maxBytes) {
  const size_t n = s.size() > maxBytes ? maxBytes : s.size();
  std::string out;
  out.reserve(n + 16);
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = (unsigned char)s[i];
    const char prev = out.empty() ? '\0' : out.back();
    if (!plain(c) || (c == '/' && prev == '*') || (c == '?' && prev == '?'))
      hex(out, c);
    else
      out += (char)c;
  }
  if (n < s.size())
    out += "...(+" + std::to_string(s.size() - n) + " bytes)";
  return out;
}

bool isSafeText(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = (unsigned char)s[i];
    if (c < 0x20 || c > 0x7e || c == '\\')
      return false;
    if (i > 0 && ((s[i - 1] == '*' && c == '/') || (s[i - 1] == '?' && c == '?')))
      return false;
  }
  return true;
}

std::string safeText(std::string_view s) { return isSafeText(s) ? std::string(s) : escapeText(s, s.size()); }

} // namespace tgc
