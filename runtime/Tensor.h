// Tensor.h — host tensors and element types shared by the runtime, the CLI and the interpreter.
//
// DType values equal ONNX's TensorProto.DataType so conversion at the edges is a cast. This header
// has no MLIR or protobuf dependency: the runtime library stays small.
#ifndef TGC_RUNTIME_TENSOR_H
#define TGC_RUNTIME_TENSOR_H

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace tgc {

/// Element types tgc handles (numbering from onnx.proto's TensorProto.DataType).
enum class DType : int32_t {
  F32 = 1,
  U8 = 2,
  I8 = 3,
  U16 = 4,
  I16 = 5,
  I32 = 6,
  I64 = 7,
  Bool = 9,
  F16 = 10,
  F64 = 11,
  U32 = 12,
  U64 = 13,
  BF16 = 16,
  // One byte per element in memory (runtime/Float8.h); int4/uint4 are packed two per byte only
  // in ONNX tensors.
  F8E4M3FN = 17,
  F8E4M3FNUZ = 18,
  F8E5M2 = 19,
  F8E5M2FNUZ = 20,
  U4 = 21,
  I4 = 22,
};

/// Bytes per element; 0 for an unknown value.
size_t dtypeSize(DType t);
/// "f32", "i64", ... ; "unknown" for an unknown value.
const char *dtypeName(DType t);
/// True when `v` is one of the DType enumerators.
bool isKnownDType(int32_t v);
/// True for the integer dtypes (signed and unsigned, 4 to 64 bits; not bool).
bool isIntegerDType(DType t);
/// True for the unsigned integer dtypes (u4, u8, u16, u32, u64).
bool isUnsignedDType(DType t);
/// True for the four float8 dtypes (17..20).
bool isFloat8DType(DType t);

/// A dense row-major tensor in host memory.
struct HostTensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data; ///< numel() * dtypeSize(dtype) bytes

  /// Product of the dims (1 for a scalar).
  int64_t numel() const;
  /// Typed view of the bytes; T must match dtype's size.
  template <typename T> T *as() { return reinterpret_cast<T *>(data.data()); }
  template <typename T> const T *as() const { return reinterpret_cast<const T *>(data.data()); }
  /// Element i converted to double (f16/bf16 decoded; 64-bit integers beyond 2^53 round).
  double get(int64_t i) const;
  /// Element i of an integer or bool tensor, exactly: sign-extended for signed types,
  /// zero-extended for unsigned ones (a u64 above INT64_MAX keeps its bits). 0 for floats.
  int64_t getInt(int64_t i) const;
  /// Stores v at i, converted (rounded) to dtype.
  void set(int64_t i, double v);
  /// A zero-filled tensor of this dtype and shape.
  static HostTensor zeros(DType t, std::vector<int64_t> shape, std::string name = "");
};

/// Relative L2 error ||got - want|| / ||want|| (||got - want|| when want is all zero).
/// NaN in one but not the other gives +inf; matching NaNs and equal infinities count as equal.
/// Element counts must match (else +inf). Two integer tensors of one dtype are subtracted
/// exactly (64-bit values beyond 2^53 differ by their true difference, not by rounding).
double relativeL2(const HostTensor &got, const HostTensor &want);

/// Elements of two integer or bool tensors of one dtype that differ (exact comparison); -1 when
/// either is not an integer/bool tensor, the dtypes differ or the element counts differ.
int64_t integerMismatches(const HostTensor &got, const HostTensor &want);

/// The largest relative L2 error an output may have against its reference (the brief's bounds):
/// 1e-2 for an f16/bf16 output or any output of a package computed at f16/bf16
/// (`lowPrecision`: its f32 edges are casts of f16/bf16 values), else 1e-5.
double relL2Tolerance(DType output, bool lowPrecision);

/// IEEE half / bfloat16 conversions (round to nearest even).
float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f);
float bf16ToFloat(uint16_t h);
uint16_t floatToBf16(float f);

} // namespace tgc

#endif // TGC_RUNTIME_TENSOR_H
