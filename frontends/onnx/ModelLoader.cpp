// ModelLoader.cpp — safe reading of ONNX ModelProto / TensorProto and external data.
//
// External data is the one place a model names files: every path is resolved component by
// component under the model folder with lstat, so neither `..`, absolute paths nor symlinks can
// make the compiler read outside it, and the opened file is checked to be the one inspected.
#include "frontends/onnx/ModelLoader.h"

#include "compiler/dialect/Shapes.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

namespace tgc::onnx_import {

namespace {

llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// Closes a file descriptor on scope exit.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0)
      ::close(fd);
  }
};

/// Reads exactly `n` bytes at `offset`.
llvm::Error preadAll(int fd, char *dst, size_t n, uint64_t offset, const std::string &path) {
  while (n > 0) {
    ssize_t got = ::pread(fd, dst, n, (off_t)offset);
    if (got < 0) {
      if (errno == EINTR)
        continue;
      return err("cannot read '" + path + "': " + std::strerror(errno));
    }
    if (got == 0)
      return err("'" + path + "' is shorter than expected");
    dst += got;
    n -= (size_t)got;
    offset += (uint64_t)got;
  }
  return llvm::Error::success();
}

/// Strict non-negative decimal: digits only, no sign, no spaces, no overflow.
bool parseU64(const std::string &s, uint64_t &out) {
  if (s.empty() || s.size() > 19)
    return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9')
      return false;
    v = v * 10 + (uint64_t)(c - '0');
  }
  out = v;
  return true;
}

} // namespace

std::string dirOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  if (slash == 0)
    return "/";
  return path.substr(0, slash);
}

llvm::Expected<std::string> readFileBytes(const std::string &path, size_t maxBytes) {
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd < 0)
    return err("cannot open '" + path + "': " + std::strerror(errno));
  struct stat st;
  if (::fstat(f.fd, &st) != 0)
    return err("cannot stat '" + path + "': " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return err("'" + path + "' is not a regular file");
  if ((uint64_t)st.st_size > maxBytes)
    return err("'" + path + "' is " + llvm::Twine((uint64_t)st.st_size) + " bytes; the limit is " +
               llvm::Twine((uint64_t)maxBytes) +
               " (protobuf files must be under 2 GiB; store weights as external data)");
  std::string bytes((size_t)st.st_size, '\0');
  if (auto e = preadAll(f.fd, bytes.data(), bytes.size(), 0, path))
    return std::move(e);
  return bytes;
}

llvm::Expected<onnx::ModelProto> parseModel(const std::string &bytes) {
  if (bytes.size() > kMaxProtoBytes)
    return err("model is " + llvm::Twine((uint64_t)bytes.size()) +
               " bytes; serialized ONNX models must be under 2 GiB (use external data)");
  onnx::ModelProto model;
  if (!model.ParseFromArray(bytes.data(), (int)bytes.size()))
    return err("malformed ONNX model: the bytes do not parse as a ModelProto");
  if (!model.has_graph())
    return err("malformed ONNX model: it has no graph");
  return model;
}

llvm::Expected<DType> dtypeFromOnnx(int32_t dataType, const std::string &what) {
  switch (dataType) {
  case onnx::TensorProto::FLOAT:
    return DType::F32;
  case onnx::TensorProto::UINT8:
    return DType::U8;
  case onnx::TensorProto::INT8:
    return DType::I8;
  case onnx::TensorProto::UINT16:
    return DType::U16;
  case onnx::TensorProto::INT16:
    return DType::I16;
  case onnx::TensorProto::UINT32:
    return DType::U32;
  case onnx::TensorProto::UINT64:
    return DType::U64;
  case onnx::TensorProto::INT32:
    return DType::I32;
  case onnx::TensorProto::INT64:
    return DType::I64;
  case onnx::TensorProto::BOOL:
    return DType::Bool;
  case onnx::TensorProto::FLOAT16:
    return DType::F16;
  case onnx::TensorProto::DOUBLE:
    return DType::F64;
  case onnx::TensorProto::BFLOAT16:
    return DType::BF16;
  // (onnx.proto of this build predates these: FLOAT8E4M3FN .. FLOAT8E5M2FNUZ, UINT4, INT4)
  case 17:
    return DType::F8E4M3FN;
  case 18:
    return DType::F8E4M3FNUZ;
  case 19:
    return DType::F8E5M2;
  case 20:
    return DType::F8E5M2FNUZ;
  case 21:
    return DType::U4;
  case 22:
    return DType::I4;
  default:
    break;
  }
  std::string name = onnx::TensorProto::DataType_IsValid(dataType)
                         ? onnx::TensorProto::DataType_Name((onnx::TensorProto::DataType)dataType)
                         : "unknown (" + std::to_string(dataType) + ")";
  return err(what + ": unsupported element type " + name +
             " (supported: float, double, float16, bfloat16, float8e4m3fn, float8e4m3fnuz, "
             "float8e5m2, float8e5m2fnuz, int64, int32, int16, int8, int4, uint64, uint32, uint16, "
             "uint8, uint4, bool)");
}

llvm::Expected<std::string> readExternalData(const onnx::TensorProto &t, const std::string &baseDir,
                                             size_t expectedBytes) {
  const std::string what = "tensor '" + t.name() + "'";
  std::string location;
  uint64_t offset = 0, length = 0;
  bool hasLocation = false, hasOffset = false, hasLength = false;
  std::set<std::string> seen;
  for (const auto &kv : t.external_data()) {
    const std::string &k = kv.key();
    if (!seen.insert(k).second)
      return err(what + ": external_data key '" + k + "' appears twice");
    if (k == "location") {
      location = kv.value();
      hasLocation = true;
    } else if (k == "offset") {
      if (!parseU64(kv.value(), offset))
        return err(what + ": external_data offset '" + kv.value() +
                   "' is not a non-negative integer");
      hasOffset = true;
    } else if (k == "length") {
      if (!parseU64(kv.value(), length))
        return err(what + ": external_data length '" + kv.value() +
                   "' is not a non-negative integer");
      hasLength = true;
    } else if (k == "checksum") {
      // Informational (SHA-1 of the data); not verified.
    } else {
      return err(what + ": unknown external_data key '" + k + "'");
    }
  }
  (void)hasOffset;
  if (!hasLocation || location.empty())
    return err(what + ": external data without a location");
  if (baseDir.empty())
    return err(what + ": external data '" + location +
               "' cannot be read: the model was not loaded from a folder");
  if (location.find('\0') != std::string::npos)
    return err(what + ": external data location contains a NUL byte");
  if (location[0] == '/' || location[0] == '\\')
    return err(what + ": external data location '" + location +
               "' is an absolute path; it must be relative to the model's folder");
  if (location.size() >= 2 && location[1] == ':' &&
      ((location[0] >= 'A' && location[0] <= 'Z') || (location[0] >= 'a' && location[0] <= 'z')))
    return err(what + ": external data location '" + location +
               "' is a drive path; it must be relative to the model's folder");
  // Split on both separators; refuse any `..` component.
  std::vector<std::string> parts;
  {
    std::string cur;
    for (char c : location + "/") {
      if (c == '/' || c == '\\') {
        if (cur == "..")
          return err(what + ": external data location '" + location +
                     "' leaves the model's folder ('..')");
        if (!cur.empty() && cur != ".")
          parts.push_back(cur);
        cur.clear();
      } else {
        cur += c;
      }
    }
  }
  if (parts.empty())
    return err(what + ": external data location '" + location + "' names no file");
  // lstat every component under the base: no symlinks, directories then one regular file.
  std::string path = baseDir;
  struct stat st;
  for (size_t i = 0; i < parts.size(); ++i) {
    path += "/" + parts[i];
    if (::lstat(path.c_str(), &st) != 0)
      return err(what + ": external data file '" + location + "': cannot stat '" + path +
                 "': " + std::strerror(errno));
    if (S_ISLNK(st.st_mode))
      return err(what + ": external data location '" + location + "' goes through a symlink ('" +
                 path + "')");
    bool last = i + 1 == parts.size();
    if (!last && !S_ISDIR(st.st_mode))
      return err(what + ": external data location '" + location + "': '" + path +
                 "' is not a directory");
    if (last && !S_ISREG(st.st_mode))
      return err(what + ": external data location '" + location + "' is not a regular file");
  }
  if (st.st_nlink > 1)
    return err(what + ": external data file '" + location +
               "' has several hard links; refusing it (it may alias a file outside the folder)");
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (f.fd < 0)
    return err(what + ": cannot open external data '" + path + "': " + std::strerror(errno));
  struct stat fst;
  if (::fstat(f.fd, &fst) != 0 || fst.st_dev != st.st_dev || fst.st_ino != st.st_ino)
    return err(what + ": external data file '" + path + "' changed while it was opened");
  uint64_t fileSize = (uint64_t)fst.st_size;
  if (offset > fileSize)
    return err(what + ": external data offset " + llvm::Twine(offset) + " is beyond the end of '" +
               location + "' (" + llvm::Twine(fileSize) + " bytes)");
  if (hasLength && length != (uint64_t)expectedBytes)
    return err(what + ": external data length " + llvm::Twine(length) + " differs from the " +
               llvm::Twine((uint64_t)expectedBytes) + " bytes its dims and type declare");
  uint64_t n = (uint64_t)expectedBytes;
  if (n > fileSize - offset)
    return err(what + ": external data range [" + llvm::Twine(offset) + ", " + llvm::Twine(offset) +
               " + " + llvm::Twine(n) + ") is beyond the end of '" + location + "' (" +
               llvm::Twine(fileSize) + " bytes)");
  std::string data((size_t)n, '\0');
  if (auto e = preadAll(f.fd, data.data(), data.size(), offset, path))
    return std::move(e);
  return data;
}

namespace {

/// Copies typed-field values into the tensor's bytes, converting each with `store`.
template <typename Field, typename Store>
llvm::Error fromField(const Field &field, HostTensor &h, const std::string &what,
                      const char *fieldName, Store store) {
  int64_t n = h.numel();
  if ((int64_t)field.size() != n)
    return err(what + ": " + fieldName + " has " + llvm::Twine((int64_t)field.size()) +
               " values but the dims " + shapeToString(h.shape) + " declare " + llvm::Twine(n));
  for (int64_t i = 0; i < n; ++i)
    store(h, i, field.Get((int)i));
  return llvm::Error::success();
}

/// An int4/uint4 tensor: ONNX packs two elements a byte, the first in the low nibble (an odd
/// count leaves the last high nibble unused), in raw_data, external data or int32_data (one
/// packed byte per value); tgc holds one element a byte (int4 sign-extended).
llvm::Expected<HostTensor> readPacked4(const onnx::TensorProto &t, const std::string &baseDir,
                                       HostTensor h, int64_t numel, const std::string &what) {
  const size_t packed = (size_t)(numel + 1) / 2;
  std::vector<uint8_t> bytes;
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    if (t.has_raw_data())
      return err(what + ": has both raw_data and external data");
    auto data = readExternalData(t, baseDir, packed);
    if (!data)
      return data.takeError();
    bytes.assign(data->begin(), data->end());
  } else if (t.has_raw_data()) {
    const std::string &raw = t.raw_data();
    if (raw.size() != packed)
      return err(what + ": raw_data is " + llvm::Twine((uint64_t)raw.size()) + " bytes but " +
                 dtypeName(h.dtype) + " " + shapeToString(h.shape) + " needs " +
                 llvm::Twine((uint64_t)packed) + " (two elements a byte)");
    bytes.assign(raw.begin(), raw.end());
  } else {
    if ((size_t)t.int32_data_size() != packed)
      return err(what + ": int32_data has " + llvm::Twine(t.int32_data_size()) +
                 " values but the dims " + shapeToString(h.shape) + " need " +
                 llvm::Twine((uint64_t)packed) + " (two elements a value)");
    for (int32_t v : t.int32_data())
      bytes.push_back((uint8_t)v);
  }
  h.data.assign((size_t)numel, 0);
  for (int64_t i = 0; i < numel; ++i) {
    const uint8_t nib = (bytes[i / 2] >> (4 * (i % 2))) & 0xF;
    h.data[i] = h.dtype == DType::I4 ? (uint8_t)(nib >= 8 ? nib - 16 : nib) : nib;
  }
  return h;
}

} // namespace

llvm::Expected<HostTensor> tensorFromProto(const onnx::TensorProto &t, const std::string &baseDir) {
  const std::string what = "tensor '" + t.name() + "'";
  if (!t.has_data_type() || t.data_type() == onnx::TensorProto::UNDEFINED)
    return err(what + ": no element type");
  auto dtype = dtypeFromOnnx(t.data_type(), what);
  if (!dtype)
    return dtype.takeError();
  if (t.has_segment())
    return err(what + ": segmented tensors are not supported");
  if ((size_t)t.dims_size() > kMaxRank)
    return err(what + ": rank " + llvm::Twine(t.dims_size()) + " exceeds the limit of " +
               llvm::Twine((uint64_t)kMaxRank));
  HostTensor h;
  h.name = t.name();
  h.dtype = *dtype;
  for (int64_t d : t.dims()) {
    if (d < 0)
      return err(what + ": negative dim " + llvm::Twine(d));
    h.shape.push_back(d);
  }
  auto numel = numElements(h.shape);
  size_t esize = dtypeSize(h.dtype);
  if (!numel || (uint64_t)*numel > (uint64_t)INT64_MAX / esize ||
      (uint64_t)*numel * esize > (uint64_t)SIZE_MAX / 2)
    return err(what + ": dims " + shapeToString(h.shape) + " overflow");
  size_t bytes = (size_t)*numel * esize;
  if (h.dtype == DType::I4 || h.dtype == DType::U4)
    return readPacked4(t, baseDir, std::move(h), *numel, what);

  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    if (t.has_raw_data())
      return err(what + ": has both raw_data and external data");
    auto data = readExternalData(t, baseDir, bytes);
    if (!data)
      return data.takeError();
    h.data.assign(data->begin(), data->end());
    return h;
  }
  if (t.external_data_size() > 0)
    return err(what + ": external_data keys on a tensor whose data_location is not EXTERNAL");

  if (t.has_raw_data()) {
    const std::string &raw = t.raw_data();
    if (raw.size() != bytes)
      return err(what + ": raw_data is " + llvm::Twine((uint64_t)raw.size()) + " bytes but " +
                 dtypeName(h.dtype) + " " + shapeToString(h.shape) + " needs " +
                 llvm::Twine((uint64_t)bytes) +
                 (raw.size() < bytes ? " (too short)" : " (too long)"));
    h.data.assign(raw.begin(), raw.end());
    if (h.dtype == DType::Bool)
      for (auto &b : h.data)
        b = b != 0;
    return h;
  }

  // Typed fields. The storage of each type follows onnx.proto's comments. The value count is
  // checked before allocating, so dims that claim terabytes fail fast.
  int64_t fieldSize = 0;
  const char *fieldName = "";
  switch (h.dtype) {
  case DType::F32:
    fieldSize = t.float_data_size(), fieldName = "float_data";
    break;
  case DType::F64:
    fieldSize = t.double_data_size(), fieldName = "double_data";
    break;
  case DType::I64:
    fieldSize = t.int64_data_size(), fieldName = "int64_data";
    break;
  case DType::U32:
  case DType::U64:
    fieldSize = t.uint64_data_size(), fieldName = "uint64_data";
    break;
  default:
    fieldSize = t.int32_data_size(), fieldName = "int32_data";
    break;
  }
  if (fieldSize != *numel)
    return err(what + ": " + fieldName + " has " + llvm::Twine(fieldSize) +
               " values but the dims " + shapeToString(h.shape) + " declare " +
               llvm::Twine(*numel));
  h.data.assign(bytes, 0);
  if (*numel == 0)
    return h;
  switch (h.dtype) {
  case DType::F32:
    if (auto e = fromField(t.float_data(), h, what, "float_data",
                           [](HostTensor &h, int64_t i, float v) { h.as<float>()[i] = v; }))
      return std::move(e);
    break;
  case DType::F64:
    if (auto e = fromField(t.double_data(), h, what, "double_data",
                           [](HostTensor &h, int64_t i, double v) { h.as<double>()[i] = v; }))
      return std::move(e);
    break;
  case DType::I64:
    if (auto e = fromField(t.int64_data(), h, what, "int64_data",
                           [](HostTensor &h, int64_t i, int64_t v) { h.as<int64_t>()[i] = v; }))
      return std::move(e);
    break;
  case DType::I32:
    if (auto e = fromField(t.int32_data(), h, what, "int32_data",
                           [](HostTensor &h, int64_t i, int32_t v) { h.as<int32_t>()[i] = v; }))
      return std::move(e);
    break;
  case DType::I8:
    if (auto e =
            fromField(t.int32_data(), h, what, "int32_data",
                      [](HostTensor &h, int64_t i, int32_t v) { h.as<int8_t>()[i] = (int8_t)v; }))
      return std::move(e);
    break;
  case DType::U8:
    if (auto e =
            fromField(t.int32_data(), h, what, "int32_data",
                      [](HostTensor &h, int64_t i, int32_t v) { h.as<uint8_t>()[i] = (uint8_t)v; }))
      return std::move(e);
    break;
  case DType::Bool:
    if (auto e =
            fromField(t.int32_data(), h, what, "int32_data",
                      [](HostTensor &h, int64_t i, int32_t v) { h.as<uint8_t>()[i] = v != 0; }))
      return std::move(e);
    break;
  case DType::I16:
    if (auto e =
            fromField(t.int32_data(), h, what, "int32_data",
                      [](HostTensor &h, int64_t i, int32_t v) { h.as<int16_t>()[i] = (int16_t)v; }))
      return std::move(e);
    break;
  case DType::U16:
    if (auto e = fromField(
            t.int32_data(), h, what, "int32_data",
            [](HostTensor &h, int64_t i, int32_t v) { h.as<uint16_t>()[i] = (uint16_t)v; }))
      return std::move(e);
    break;
  case DType::U32:
    if (auto e = fromField(
            t.uint64_data(), h, what, "uint64_data",
            [](HostTensor &h, int64_t i, uint64_t v) { h.as<uint32_t>()[i] = (uint32_t)v; }))
      return std::move(e);
    break;
  case DType::U64:
    if (auto e = fromField(t.uint64_data(), h, what, "uint64_data",
                           [](HostTensor &h, int64_t i, uint64_t v) { h.as<uint64_t>()[i] = v; }))
      return std::move(e);
    break;
  case DType::F8E4M3FN:
  case DType::F8E4M3FNUZ:
  case DType::F8E5M2:
  case DType::F8E5M2FNUZ:
    // float8s are stored as their bit patterns in int32_data, one a value.
    if (auto e = fromField(
            t.int32_data(), h, what, "int32_data",
            [](HostTensor &h, int64_t i, int32_t v) { h.as<uint8_t>()[i] = (uint8_t)v; }))
      return std::move(e);
    break;
  case DType::I4:
  case DType::U4:
    break; // (readPacked4)
  case DType::F16:
  case DType::BF16:
    // 16-bit floats are stored as their bit patterns in int32_data.
    if (auto e = fromField(
            t.int32_data(), h, what, "int32_data",
            [](HostTensor &h, int64_t i, int32_t v) { h.as<uint16_t>()[i] = (uint16_t)v; }))
      return std::move(e);
    break;
  }
  return h;
}

} // namespace tgc::onnx_import
