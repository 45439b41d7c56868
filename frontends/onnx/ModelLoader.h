// ModelLoader.h — reading ONNX protobufs safely: ModelProto bytes, TensorProto → HostTensor,
// external data confined to the model's folder.
//
// Everything here treats its input as hostile (see DESIGN.md, *Bad input*): sizes are checked
// against dims before any copy, dims products are overflow-checked, and external-data paths may
// not leave the model folder (no `..`, absolute or drive paths, symlinks or hard links).
#ifndef TGC_FRONTENDS_ONNX_MODELLOADER_H
#define TGC_FRONTENDS_ONNX_MODELLOADER_H

#include "frontends/onnx/onnx.pb.h"
#include "runtime/Tensor.h"
#include "llvm/Support/Error.h"

#include <string>

namespace tgc::onnx_import {

/// Largest serialized protobuf accepted (protobuf's own limit: 2 GiB - 1).
constexpr size_t kMaxProtoBytes = 0x7fffffff;

/// Largest tensor rank accepted anywhere in a model (initializers, inputs, op results).
constexpr size_t kMaxRank = 64;

/// Deepest nesting of subgraphs (If/Loop/Scan bodies, graph attributes) accepted.
constexpr int kMaxSubgraphDepth = 16;

/// Reads a whole file (at most kMaxProtoBytes, or `maxBytes` when smaller).
llvm::Expected<std::string> readFileBytes(const std::string &path,
                                          size_t maxBytes = kMaxProtoBytes);

/// Parses serialized ModelProto bytes; refuses > 2 GiB and malformed input.
llvm::Expected<onnx::ModelProto> parseModel(const std::string &bytes);

/// The DType of an ONNX TensorProto.DataType; errors name `what` for unsupported types.
llvm::Expected<DType> dtypeFromOnnx(int32_t dataType, const std::string &what);

/// Converts a TensorProto (raw_data, typed fields or external data under `baseDir`) to a host
/// tensor, validating dims, dtype and byte counts. `baseDir` "" refuses external data.
llvm::Expected<HostTensor> tensorFromProto(const onnx::TensorProto &t, const std::string &baseDir);

/// Reads the external data of `t` (location/offset/length keys) from under `baseDir`;
/// `expectedBytes` is the size the dims and dtype declare.
llvm::Expected<std::string> readExternalData(const onnx::TensorProto &t, const std::string &baseDir,
                                             size_t expectedBytes);

/// Directory part of a path ("." when it has none).
std::string dirOf(const std::string &path);

} // namespace tgc::onnx_import

#endif // TGC_FRONTENDS_ONNX_MODELLOADER_H
