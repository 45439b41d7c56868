// Text.h — model text (names, doc strings) made safe to print and to place in generated source.
//
// Names in an ONNX model are arbitrary bytes: a newline, a carriage return, `*/`, a backslash at
// a line's end, a trigraph or a NUL would end a comment or a string literal in generated C++ or
// CUDA source (and so become code), and control bytes would drive a terminal. Every place tgc
// shows model text, or writes it into source, goes through escapeText(): its output is printable
// ASCII with no backslash and no double quote, and no `*/` or `??`, so it stays inside a `//` or
// `/* */` comment, a string literal, a JSON string or a terminal line whatever the input was.
#ifndef TGC_RUNTIME_TEXT_H
#define TGC_RUNTIME_TEXT_H

#include <cstddef>
#include <string>
#include <string_view>

namespace tgc {

/// Names longer than this many bytes are shown by their first bytes and their length.
constexpr size_t kMaxShownTextBytes = 200;

/// `s` as printable ASCII: bytes outside 0x20..0x7e, `%`, `\` and `"` as `%XX` (hex), the `/` of
/// `*/` as `%2F` and the second `?` of `??` as `%3F`; beyond `maxBytes` of input, the rest is
/// replaced by `...(+N bytes)`. Plain names (letters, digits, `_.:/-#` and spaces) come out
/// unchanged.
std::string escapeText(std::string_view s, size_t maxBytes = kMaxShownTextBytes);

/// Whether `s` is safe in a comment of generated source and on a terminal: printable ASCII, no
/// `\`, no `*/`, no `??` (a `"` is allowed: tgc's own labels hold quotes, and no model text is
/// placed in a string literal). escapeText's output always is.
bool isSafeText(std::string_view s);

/// `s` if it is safe, else escapeText(s): for text that may already be escaped (labels built
/// from escaped names), so that it is never escaped twice.
std::string safeText(std::string_view s);

} // namespace tgc

#endif // TGC_RUNTIME_TEXT_H
