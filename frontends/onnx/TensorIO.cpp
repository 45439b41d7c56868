// TensorIO.cpp — ONNX TensorProto files ↔ host tensors (test_data_set_N/*.pb, `tgc run` inputs).
//
// Reading goes through the same validation as model initializers (ModelLoader.cpp); external
// data, if any, is read from beside the file only.
#include "frontends/onnx/TensorIO.h"

#include "frontends/onnx/ModelLoader.h"

#include <fstream>

namespace tgc {

llvm::Expected<HostTensor> readTensorProtoFile(const std::string &path) {
  auto bytes = onnx_import::readFileBytes(path);
  if (!bytes)
    return bytes.takeError();
  onnx::TensorProto proto;
  if (!proto.ParseFromArray(bytes->data(), (int)bytes->size()))
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "'%s': malformed TensorProto",
                                   path.c_str());
  auto t = onnx_import::tensorFromProto(proto, onnx_import::dirOf(path));
  if (!t)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "'%s': %s", path.c_str(),
                                   llvm::toString(t.takeError()).c_str());
  return t;
}

llvm::Error writeTensorProtoFile(const HostTensor &t, const std::string &path) {
  if (!isKnownDType((int32_t)t.dtype))
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "tensor '%s': unknown dtype",
                                   t.name.c_str());
  if ((int64_t)t.data.size() != t.numel() * (int64_t)dtypeSize(t.dtype))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "tensor '%s': %zu bytes do not match its shape", t.name.c_str(),
                                   t.data.size());
  onnx::TensorProto proto;
  proto.set_name(t.name);
  proto.set_data_type((int32_t)t.dtype);
  for (int64_t d : t.shape)
    proto.add_dims(d);
  if (t.dtype == DType::I4 || t.dtype == DType::U4) { // packed two a byte, low nibble first
    std::string packed((t.data.size() + 1) / 2, '\0');
    for (size_t i = 0; i < t.data.size(); ++i)
      packed[i / 2] = (char)(packed[i / 2] | (t.data[i] & 0xF) << (4 * (i % 2)));
    proto.set_raw_data(packed);
  } else {
    proto.set_raw_data(std::string(t.data.begin(), t.data.end()));
  }
  std::string bytes;
  if (!proto.SerializeToString(&bytes))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "tensor '%s': cannot serialize (over 2 GiB?)", t.name.c_str());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), (std::streamsize)bytes.size());
  out.close();
  if (!out)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "cannot write '%s'",
                                   path.c_str());
  return llvm::Error::success();
}

} // namespace tgc
