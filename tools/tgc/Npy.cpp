// Npy.cpp — NumPy .npy reader and writer (see Npy.h for the format and what is refused).
#include "tools/tgc/Npy.h"

#include "runtime/Text.h"

#include <llvm/Support/MemoryBuffer.h>

#include <cctype>
#include <cstring>
#include <limits>

namespace tgc::cli {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

/// The header dict: only the three keys the format defines.
struct NpyHeader {
  std::string descr;
  bool descrIsList = false; ///< a structured dtype: [('a', '<f4'), ...]
  bool fortranOrder = false;
  std::vector<int64_t> shape;
};

/// A recursive-descent reader of the header's Python literal (strings, True/False, tuples of
/// integers, and lists skipped with balanced brackets).
class HeaderParser {
public:
  explicit HeaderParser(const std::string &s) : s(s) {}

  bool parse(NpyHeader &h, std::string &why) {
    bool sawDescr = false, sawOrder = false, sawShape = false;
    if (!eat('{'))
      return fail(why, "the header is not a dict");
    while (true) {
      if (eat('}'))
        break;
      std::string key;
      if (!str(key) || !eat(':'))
        return fail(why, "the header dict is malformed");
      if (key == "descr") {
        sawDescr = true;
        skipSpace();
        if (peek() == '[') {
          h.descrIsList = true;
          if (!skipBrackets())
            return fail(why, "the header's descr list is malformed");
        } else if (!str(h.descr)) {
          return fail(why, "the header's descr is not a string");
        }
      } else if (key == "fortran_order") {
        sawOrder = true;
        if (!boolean(h.fortranOrder))
          return fail(why, "the header's fortran_order is not True or False");
      } else if (key == "shape") {
        sawShape = true;
        if (!tuple(h.shape))
          return fail(why, "the header's shape is not a tuple of non-negative integers");
      } else {
        return fail(why, "the header has an unknown key '" + escapeText(key) + "'");
      }
      if (!eat(',')) {
        if (!eat('}'))
          return fail(why, "the header dict is malformed");
        break;
      }
    }
    if (!sawDescr || !sawOrder || !sawShape)
      return fail(why, "the header lacks descr, fortran_order or shape");
    return true;
  }

private:
  static bool fail(std::string &why, std::string msg) {
    why = std::move(msg);
    return false;
  }
  void skipSpace() {
    while (i < s.size() && std::isspace((unsigned char)s[i]))
      ++i;
  }
  char peek() { return i < s.size() ? s[i] : '\0'; }
  bool eat(char c) {
    skipSpace();
    if (peek() != c)
      return false;
    ++i;
    return true;
  }
  bool str(std::string &out) {
    skipSpace();
    const char q = peek();
    if (q != '\'' && q != '"')
      return false;
    size_t end = s.find(q, i + 1);
    if (end == std::string::npos)
      return false;
    out = s.substr(i + 1, end - i - 1);
    i = end + 1;
    return true;
  }
  bool boolean(bool &out) {
    skipSpace();
    for (const char *w : {"True", "False"})
      if (s.compare(i, std::strlen(w), w) == 0) {
        out = w[0] == 'T';
        i += std::strlen(w);
        return true;
      }
    return false;
  }
  bool tuple(std::vector<int64_t> &out) {
    if (!eat('('))
      return false;
    while (!eat(')')) {
      skipSpace();
      if (!std::isdigit((unsigned char)peek()))
        return false;
      int64_t v = 0;
      while (std::isdigit((unsigned char)peek())) {
        if (v > (std::numeric_limits<int64_t>::max() - 9) / 10)
          return false;
        v = v * 10 + (s[i++] - '0');
      }
      if (peek() == 'L') // Python 2 longs
        ++i;
      out.push_back(v);
      if (!eat(',')) {
        if (!eat(')'))
          return false;
        break;
      }
    }
    return true;
  }
  bool skipBrackets() {
    int depth = 0;
    for (; i < s.size(); ++i) {
      depth += s[i] == '[' ? 1 : s[i] == ']' ? -1 : 0;
      if (depth == 0) {
        ++i;
        return true;
      }
    }
    return false;
  }

  const std::string &s;
  size_t i = 0;
};

const char *onnxTypeName(int32_t t) {
  switch (t) {
  case 4: return "UINT16";
  case 5: return "INT16";
  case 12: return "UINT32";
  case 13: return "UINT64";
  default: return "?";
  }
}

/// NumPy's type string for a dtype tgc handles.
std::string descrOf(DType t) {
  switch (t) {
  case DType::F32:
  case DType::BF16: return "<f4";
  case DType::F64: return "<f8";
  case DType::F16: return "<f2";
  case DType::I8: return "|i1";
  case DType::U8: return "|u1";
  case DType::I16: return "<i2";
  case DType::U16: return "<u2";
  case DType::U32: return "<u4";
  case DType::U64: return "<u8";
  case DType::I32: return "<i4";
  case DType::I64: return "<i8";
  case DType::Bool: return "|b1";
  // NumPy has no float8 or 4-bit types: float8 as its bits, int4/uint4 one a byte.
  case DType::F8E4M3FN: case DType::F8E4M3FNUZ: case DType::F8E5M2: case DType::F8E5M2FNUZ:
  case DType::U4: return "|u1";
  case DType::I4: return "|i1";
  }
  return "<f4";
}

void putLE(std::string &out, uint64_t v, int bytes) {
  for (int b = 0; b < bytes; ++b)
    out += (char)((v >> (8 * b)) & 0xff);
}

} // namespace

int32_t npyDescrToOnnx(const std::string &descr, std::string &why) {
  if (descr.size() < 2) {
    why = "dtype '" + escapeText(descr) + "' is not a NumPy type string";
    return 0;
  }
  const char order = descr[0];
  const std::string code = descr.substr(1);
  if (order == '>') {
    why = "dtype '" + escapeText(descr) +
          "' is big-endian (save it little-endian: "
          "a.astype(a.dtype.newbyteorder('<')))";
    return 0;
  }
  if (code == "O" || code.rfind("O", 0) == 0) {
    why = "dtype '" + escapeText(descr) + "' holds Python objects";
    return 0;
  }
  static const struct {
    const char *code;
    int32_t onnx;
  } kTypes[] = {{"f4", 1}, {"u1", 2}, {"i1", 3},  {"u2", 4},  {"i2", 5},  {"i4", 6},
                {"i8", 7}, {"b1", 9}, {"f2", 10}, {"f8", 11}, {"u4", 12}, {"u8", 13}};
  if (order == '<' || order == '|' || order == '=')
    for (const auto &t : kTypes)
      if (code == t.code) {
        // '|' (no byte order) is what NumPy writes for one-byte types only.
        if (order == '|' && code.back() != '1')
          break;
        return t.onnx;
      }
  why = "dtype '" + escapeText(descr) +
        "' is not one of the little-endian numeric types f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1";
  return 0;
}

bool parseNpy(const std::string &bytes, const std::string &path, HostTensor &out,
              std::string &err) {
  const std::string where = "'" + escapeText(path) + "'";
  auto bad = [&](const std::string &why) {
    err = where + " is not a usable .npy file: " + why;
    return false;
  };
  if (bytes.size() < kMagicLen + 4 || bytes.compare(0, kMagicLen, kMagic, kMagicLen) != 0)
    return bad("it does not start with the NumPy magic \\x93NUMPY");
  const int major = (unsigned char)bytes[6];
  size_t lenBytes = major == 1 ? 2 : (major == 2 || major == 3) ? 4 : 0;
  if (lenBytes == 0)
    return bad("format version " + std::to_string(major) + "." +
               std::to_string((unsigned char)bytes[7]) + " (1.0, 2.0 and 3.0 are read)");
  if (bytes.size() < 8 + lenBytes)
    return bad("it is truncated inside its header");
  uint64_t headerLen = 0;
  for (size_t b = 0; b < lenBytes; ++b)
    headerLen |= uint64_t((unsigned char)bytes[8 + b]) << (8 * b);
  const size_t dataStart = 8 + lenBytes + headerLen;
  if (headerLen > bytes.size() || dataStart > bytes.size())
    return bad("it is truncated inside its header");
  NpyHeader h;
  std::string why;
  if (!HeaderParser(bytes.substr(8 + lenBytes, headerLen)).parse(h, why))
    return bad(why);
  if (h.descrIsList)
    return bad("it holds a structured dtype (a record per element); save a plain array");
  if (h.fortranOrder)
    return bad("fortran_order is True (save it in C order: np.ascontiguousarray(a))");
  const int32_t onnx = npyDescrToOnnx(h.descr, why);
  if (onnx == 0)
    return bad(why);
  if (!isKnownDType(onnx))
    return bad("dtype '" + h.descr + "' (ONNX " + onnxTypeName(onnx) +
               ") is not an element type tgc packages take");
  const DType dt = (DType)onnx;
  uint64_t numel = 1;
  for (int64_t d : h.shape) {
    if (d != 0 && numel > std::numeric_limits<uint64_t>::max() / 16 / (uint64_t)d)
      return bad("its shape's element count overflows");
    numel *= (uint64_t)d;
  }
  const uint64_t want = numel * dtypeSize(dt);
  const uint64_t have = bytes.size() - dataStart;
  if (have != want)
    return bad("the header promises " + std::to_string(want) + " data bytes (" + dtypeName(dt) +
               " " + std::to_string(numel) + " elements), the file holds " + std::to_string(have) +
               (have < want ? " (truncated)" : ""));
  out.dtype = dt;
  out.shape = h.shape;
  out.data.assign(bytes.begin() + dataStart, bytes.end());
  return true;
}

bool readNpyFile(const std::string &path, HostTensor &out, std::string &err) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buf) {
    err = "cannot read '" + escapeText(path) + "': " + buf.getError().message();
    return false;
  }
  return parseNpy((*buf)->getBuffer().str(), path, out, err);
}

std::string npyBytes(const HostTensor &t) {
  std::string shape = "(";
  for (size_t i = 0; i < t.shape.size(); ++i)
    shape += std::to_string(t.shape[i]) + (t.shape.size() == 1      ? ","
                                           : i + 1 < t.shape.size() ? ", "
                                                                    : "");
  shape += ")";
  std::string header =
      "{'descr': '" + descrOf(t.dtype) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Magic, version, length, header and its '\n' padded with spaces to a multiple of 64 bytes.
  const bool v2 = header.size() + 1 + 10 > 65535;
  const size_t prefix = kMagicLen + 2 + (v2 ? 4 : 2);
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string out(kMagic, kMagicLen);
  out += (char)(v2 ? 2 : 1);
  out += (char)0;
  putLE(out, header.size(), v2 ? 4 : 2);
  out += header;
  if (t.dtype == DType::BF16) {
    for (int64_t i = 0; i < t.numel(); ++i) {
      float f = (float)t.get(i);
      uint32_t u;
      std::memcpy(&u, &f, 4);
      putLE(out, u, 4);
    }
  } else {
    out.append(reinterpret_cast<const char *>(t.data.data()), t.data.size());
  }
  return out;
}

} // namespace tgc::cli
