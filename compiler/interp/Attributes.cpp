// Attributes.cpp — element types and constants: MLIR types/attributes <-> DType/HostTensor.
//
// Dense constants are copied as raw bytes (f16/bf16 keep their exact bit patterns; splats are
// expanded); i1 goes through bools because MLIR bit-packs it. Other ElementsAttr kinds (sparse)
// are read element by element.
#include "compiler/interp/Attributes.h"
#include "compiler/interp/Interpreter.h"
#include "compiler/dialect/Float8Types.h"

#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>
#include <cstring>

using namespace mlir;

namespace tgc {

llvm::Expected<DType> dtypeOf(Type t) {
  if (t.isF32()) return DType::F32;
  if (t.isF64()) return DType::F64;
  if (t.isF16()) return DType::F16;
  if (t.isBF16()) return DType::BF16;
  if (t.isSignlessInteger(64)) return DType::I64;
  if (t.isSignlessInteger(32)) return DType::I32;
  if (t.isSignlessInteger(8)) return DType::I8;
  if (t.isUnsignedInteger(8)) return DType::U8;
  if (t.isSignlessInteger(16)) return DType::I16;
  if (t.isUnsignedInteger(16)) return DType::U16;
  if (t.isUnsignedInteger(32)) return DType::U32;
  if (t.isUnsignedInteger(64)) return DType::U64;
  if (t.isSignlessInteger(1)) return DType::Bool;
  if (t.isSignlessInteger(4)) return DType::I4;
  if (t.isUnsignedInteger(4)) return DType::U4;
  if (int k = tg::float8Kind(t)) return static_cast<DType>(k);
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "unsupported element type " << t;
  return llvm::createStringError(llvm::inconvertibleErrorCode(), os.str());
}

Type elementTypeOf(DType t, MLIRContext *ctx) {
  switch (t) {
  case DType::F32: return FloatType::getF32(ctx);
  case DType::F64: return FloatType::getF64(ctx);
  case DType::F16: return FloatType::getF16(ctx);
  case DType::BF16: return FloatType::getBF16(ctx);
  case DType::I64: return IntegerType::get(ctx, 64);
  case DType::I32: return IntegerType::get(ctx, 32);
  case DType::I8: return IntegerType::get(ctx, 8);
  case DType::U8: return IntegerType::get(ctx, 8, IntegerType::Unsigned);
  case DType::I16: return IntegerType::get(ctx, 16);
  case DType::U16: return IntegerType::get(ctx, 16, IntegerType::Unsigned);
  case DType::U32: return IntegerType::get(ctx, 32, IntegerType::Unsigned);
  case DType::U64: return IntegerType::get(ctx, 64, IntegerType::Unsigned);
  case DType::Bool: return IntegerType::get(ctx, 1);
  case DType::I4: return IntegerType::get(ctx, 4);
  case DType::U4: return IntegerType::get(ctx, 4, IntegerType::Unsigned);
  case DType::F8E4M3FN: case DType::F8E4M3FNUZ: case DType::F8E5M2: case DType::F8E5M2FNUZ:
    return tg::float8Type(ctx, static_cast<int>(t));
  }
  return Type();
}

namespace interp {

llvm::Expected<HostTensor> readConstant(ElementsAttr attr) {
  auto fail = [](const llvm::Twine &msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
  };
  if (!attr)
    return fail("null constant attribute");
  auto type = attr.getType().dyn_cast<RankedTensorType>();
  if (!type || !type.hasStaticShape())
    return fail("constant must be a statically shaped ranked tensor");
  auto dt = dtypeOf(type.getElementType());
  if (!dt)
    return dt.takeError();
  HostTensor t = HostTensor::zeros(*dt, std::vector<int64_t>(type.getShape().begin(),
                                                             type.getShape().end()));
  size_t n = t.numel(), es = dtypeSize(*dt);
  if (n == 0)
    return std::move(t);

  if (auto dense = attr.dyn_cast<DenseElementsAttr>()) {
    if (*dt == DType::Bool) {
      size_t i = 0;
      for (bool b : dense.getValues<bool>())
        if (i < n)
          t.data[i++] = b;
      return std::move(t);
    }
    ArrayRef<char> raw = dense.getRawData();
    if (dense.isSplat() && raw.size() >= es) {
      for (size_t i = 0; i < n; ++i)
        std::memcpy(t.data.data() + i * es, raw.data(), es);
      if (*dt == DType::I4)
        for (uint8_t &b : t.data)
          b = static_cast<uint8_t>(static_cast<int8_t>(static_cast<uint8_t>(b << 4)) >> 4);
      return std::move(t);
    }
    if (raw.size() != n * es)
      return fail("constant holds " + llvm::Twine(raw.size()) + " bytes, expected " +
                  llvm::Twine(n * es));
    std::memcpy(t.data.data(), raw.data(), n * es);
    if (*dt == DType::I4) // MLIR keeps an i4's 4 bits in a byte: sign-extend them
      for (uint8_t &b : t.data)
        b = static_cast<uint8_t>(static_cast<int8_t>(static_cast<uint8_t>(b << 4)) >> 4);
    return std::move(t);
  }

  // Any other ElementsAttr (e.g. sparse): element by element.
  auto values = attr.tryGetValues<Attribute>();
  if (!values)
    return fail("unsupported constant attribute kind");
  size_t i = 0;
  for (Attribute a : *values) {
    if (i >= n)
      break;
    if (auto f = a.dyn_cast<FloatAttr>()) {
      t.set(i, f.getValueAsDouble());
    } else if (auto v = a.dyn_cast<IntegerAttr>()) {
      if (*dt == DType::Bool) {
        t.set(i, v.getValue().isZero() ? 0.0 : 1.0);
      } else { // the value's low bytes, exactly (little-endian host)
        const uint64_t bits = v.getValue().getZExtValue();
        std::memcpy(t.data.data() + i * es, &bits, std::min<size_t>(es, 8));
      }
    } else
      return fail("constant element is neither integer nor float");
    ++i;
  }
  return std::move(t);
}

} // namespace interp

HostTensor tensorFromAttr(ElementsAttr attr) {
  auto t = interp::readConstant(attr);
  if (t)
    return std::move(*t);
  llvm::consumeError(t.takeError());
  // Unreadable constant: an empty tensor (no elements), so no caller can index past its data.
  return HostTensor::zeros(DType::F32, {0});
}

DenseElementsAttr attrFromTensor(const HostTensor &t, RankedTensorType type) {
  if (!type || !type.hasStaticShape())
    return {};
  auto dt = dtypeOf(type.getElementType());
  if (!dt) {
    llvm::consumeError(dt.takeError());
    return {};
  }
  size_t es = dtypeSize(t.dtype);
  if (isFloat8DType(t.dtype)) // no dense attribute holds an opaque element type
    return {};
  if (*dt != t.dtype || type.getNumElements() != t.numel() ||
      t.data.size() != static_cast<size_t>(t.numel()) * es)
    return {};
  if (t.dtype == DType::Bool) {
    llvm::SmallVector<bool> bits(t.data.begin(), t.data.end());
    return DenseElementsAttr::get(type, llvm::makeArrayRef(bits));
  }
  if (t.numel() == 0)
    return DenseElementsAttr::get(type, ArrayRef<Attribute>{});
  // All elements equal: store one element, which MLIR reads as a splat.
  const char *raw = reinterpret_cast<const char *>(t.data.data());
  bool splat = true;
  for (size_t i = es; splat && i < t.data.size(); i += es)
    splat = std::memcmp(raw, raw + i, es) == 0;
  return DenseElementsAttr::getFromRawBuffer(type, ArrayRef<char>(raw, splat ? es : t.data.size()));
}

} // namespace tgc
