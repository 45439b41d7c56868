// TensorIO.h — ONNX TensorProto files (test_data_set_N/input_K.pb) ↔ host tensors.
#ifndef TGC_FRONTENDS_ONNX_TENSORIO_H
#define TGC_FRONTENDS_ONNX_TENSORIO_H

#include "runtime/Tensor.h"
#include "llvm/Support/Error.h"

#include <string>

namespace tgc {

/// Reads one serialized TensorProto; raw_data and typed fields are checked against the shape.
llvm::Expected<HostTensor> readTensorProtoFile(const std::string &path);

/// Writes `t` as a serialized TensorProto with raw_data.
llvm::Error writeTensorProtoFile(const HostTensor &t, const std::string &path);

} // namespace tgc

#endif // TGC_FRONTENDS_ONNX_TENSORIO_H
