// Npy.h — NumPy .npy files ↔ host tensors, for `tgc run/bench --input NAME=@file.npy` and
// `tgc run --output-dir`.
//
// The format (numpy.lib.format): magic "\x93NUMPY", a version (1.0, 2.0 or 3.0), a header length
// (2 bytes for 1.0, 4 for 2.0/3.0), a header that is a Python dict literal
// `{'descr': '<f4', 'fortran_order': False, 'shape': (1, 32), }`, then the raw C-order data.
// Only little-endian (or one-byte) numeric dtypes are read: f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1.
// Fortran order, big-endian data, object and structured dtypes are refused with a message that
// names the file. No Debian package reads .npy from C++ (docs/decisions.md), hence this small one.
#ifndef TGC_TOOLS_TGC_NPY_H
#define TGC_TOOLS_TGC_NPY_H

#include "runtime/Tensor.h"

#include <cstdint>
#include <string>

namespace tgc::cli {

/// ONNX TensorProto.DataType number of a NumPy type string ("<f4" → 1, "|u1" → 2, ...); 0 when
/// the string is not one of the little-endian numeric types above (`why` says what it is).
int32_t npyDescrToOnnx(const std::string &descr, std::string &why);

/// Parses the bytes of a .npy file (`path` only names it in errors). On failure returns false with
/// `err` naming the file and what is wrong. Element types tgc does not compute with (i2, u2, u4,
/// u8) are refused naming the type.
bool parseNpy(const std::string &bytes, const std::string &path, HostTensor &out, std::string &err);

/// Reads a .npy file (parseNpy).
bool readNpyFile(const std::string &path, HostTensor &out, std::string &err);

/// `t` as .npy bytes (format 1.0; 2.0 only for a header over 64 KiB). bf16 is written as f4
/// (exact; NumPy has no bfloat16).
std::string npyBytes(const HostTensor &t);

} // namespace tgc::cli

#endif // TGC_TOOLS_TGC_NPY_H
