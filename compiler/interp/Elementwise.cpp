// Elementwise.cpp — unary, binary (numpy broadcasting), where and cast kernels.
//
// Floating math runs in double and rounds on store. Integer operands take an exact int64 path for
// the ops where double would lose bits or C++ would be undefined (division by zero is an error,
// INT64_MIN / -1 wraps, multiplication wraps like the hardware does).
#include "compiler/interp/Kernels.h"
#include "runtime/Float8.h"

#include <cmath>
#include <limits>

namespace tgc::interp {

namespace {

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

double unaryF64(Unary k, double x) {
  switch (k) {
  case Unary::Neg: return -x;
  case Unary::Abs: return std::fabs(x);
  case Unary::Sign: return std::isnan(x) ? x : (x > 0) - (x < 0);
  case Unary::Exp: return std::exp(x);
  case Unary::Log: return std::log(x);
  case Unary::Sqrt: return std::sqrt(x);
  case Unary::Rsqrt: return 1.0 / std::sqrt(x);
  case Unary::Reciprocal: return 1.0 / x;
  case Unary::Tanh: return std::tanh(x);
  case Unary::Sigmoid: return sigmoid(x);
  case Unary::Erf: return std::erf(x);
  case Unary::Relu: return x < 0 ? 0.0 : x; // NaN stays NaN
  case Unary::Silu: return x * sigmoid(x);
  case Unary::Sin: return std::sin(x);
  case Unary::Cos: return std::cos(x);
  case Unary::Floor: return std::floor(x);
  case Unary::Ceil: return std::ceil(x);
  case Unary::Round: return std::nearbyint(x); // default rounding mode: half to even
  case Unary::Not: return x == 0.0;
  case Unary::Gelu: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  case Unary::GeluTanh: {
    const double c = 0.79788456080286535588; // sqrt(2 / pi)
    return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
  }
  case Unary::IsNan: return std::isnan(x);
  case Unary::Acos: return std::acos(x);
  case Unary::Asin: return std::asin(x);
  case Unary::Atan: return std::atan(x);
  case Unary::Sinh: return std::sinh(x);
  case Unary::Cosh: return std::cosh(x);
  case Unary::Asinh: return std::asinh(x);
  case Unary::Acosh: return std::acosh(x);
  case Unary::Atanh: return std::atanh(x);
  case Unary::BitNot: break; // integers only (unaryI64)
  }
  return x;
}

/// Exact integer forms; false when `k` has none (the double path then applies).
bool unaryI64(Unary k, int64_t x, int64_t &r) {
  switch (k) {
  case Unary::Neg: r = static_cast<int64_t>(0 - static_cast<uint64_t>(x)); return true;
  case Unary::Abs: r = x < 0 ? static_cast<int64_t>(0 - static_cast<uint64_t>(x)) : x; return true;
  case Unary::Sign: r = (x > 0) - (x < 0); return true;
  case Unary::Relu: r = x < 0 ? 0 : x; return true;
  case Unary::Not: r = x == 0; return true;
  case Unary::Floor: case Unary::Ceil: case Unary::Round: r = x; return true;
  case Unary::IsNan: r = 0; return true;
  case Unary::BitNot: r = ~x; return true; // the low bits are the narrower type's ~x
  default: return false;
  }
}

double binaryF64(Binary k, double a, double b) {
  switch (k) {
  case Binary::Add: return a + b;
  case Binary::Sub: return a - b;
  case Binary::Mul: return a * b;
  case Binary::Div: return a / b;
  case Binary::Pow: return std::pow(a, b);
  case Binary::Max: return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
  case Binary::Min: return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
  case Binary::Mod: return std::fmod(a, b);
  case Binary::Equal: return a == b;
  case Binary::Less: return a < b;
  case Binary::LessEqual: return a <= b;
  case Binary::Greater: return a > b;
  case Binary::GreaterEqual: return a >= b;
  case Binary::And: return a != 0 && b != 0;
  case Binary::Or: return a != 0 || b != 0;
  case Binary::Xor: return (a != 0) != (b != 0);
  default: break; // the bitwise ops: integers only (binaryI64)
  }
  return 0;
}

/// Exact integer binary op (b != 0 for div/mod: the caller checks). Pow has no integer form.
int64_t binaryI64(Binary k, int64_t a, int64_t b) {
  auto wrap = [](uint64_t v) { return static_cast<int64_t>(v); };
  switch (k) {
  case Binary::Add: return wrap(uint64_t(a) + uint64_t(b));
  case Binary::Sub: return wrap(uint64_t(a) - uint64_t(b));
  case Binary::Mul: return wrap(uint64_t(a) * uint64_t(b));
  case Binary::Div:
  case Binary::Mod: {
    if (b == -1) // a / -1 overflows for INT64_MIN; the remainder is always 0
      return k == Binary::Div ? wrap(0 - uint64_t(a)) : 0;
    if (k == Binary::Div)
      return a / b; // C truncation toward zero
    int64_t r = a % b;
    return r != 0 && ((r < 0) != (b < 0)) ? r + b : r; // sign of the divisor, like Python
  }
  case Binary::Max: return std::max(a, b);
  case Binary::Min: return std::min(a, b);
  case Binary::Equal: return a == b;
  case Binary::Less: return a < b;
  case Binary::LessEqual: return a <= b;
  case Binary::Greater: return a > b;
  case Binary::GreaterEqual: return a >= b;
  case Binary::And: return a != 0 && b != 0;
  case Binary::Or: return a != 0 || b != 0;
  case Binary::Xor: return (a != 0) != (b != 0);
  // Bitwise: operands are sign- (signed) or zero-extended (unsigned, u64 as its bits), so the
  // low bits of the int64 result are the narrower type's; the store keeps them. Shifts are on
  // unsigned types only: by 64 or more gives 0, and by the type's width or more leaves 0 in its
  // low bits, as the preludes define it.
  case Binary::BitAnd: return a & b;
  case Binary::BitOr: return a | b;
  case Binary::BitXor: return a ^ b;
  case Binary::ShiftLeft: return uint64_t(b) >= 64 ? 0 : wrap(uint64_t(a) << uint64_t(b));
  case Binary::ShiftRight: return uint64_t(b) >= 64 ? 0 : wrap(uint64_t(a) >> uint64_t(b));
  case Binary::Pow: break;
  }
  return 0;
}

/// The u64 forms of the binary ops where signedness matters (operands are the values' bits);
/// false when `k` has none (the int64 form then gives the same bits).
bool binaryU64(Binary k, uint64_t a, uint64_t b, int64_t &r) {
  switch (k) {
  case Binary::Div: r = static_cast<int64_t>(a / b); return true;
  case Binary::Mod: r = static_cast<int64_t>(a % b); return true;
  case Binary::Max: r = static_cast<int64_t>(std::max(a, b)); return true;
  case Binary::Min: r = static_cast<int64_t>(std::min(a, b)); return true;
  case Binary::Less: r = a < b; return true;
  case Binary::LessEqual: r = a <= b; return true;
  case Binary::Greater: r = a > b; return true;
  case Binary::GreaterEqual: r = a >= b; return true;
  default: return false;
  }
}

} // namespace

HostTensor unary(Unary kind, const HostTensor &x, DType outType) {
  HostTensor out = HostTensor::zeros(outType, x.shape);
  int64_t probe;
  if (isIntegerLike(x.dtype) && unaryI64(kind, 0, probe)) {
    std::vector<int64_t> v = toI64(x);
    const bool u64 = x.dtype == DType::U64; // bits: a value above INT64_MAX reads negative
    for (int64_t &e : v)
      if (u64 && (kind == Unary::Abs || kind == Unary::Relu || kind == Unary::Sign))
        e = kind == Unary::Sign ? e != 0 : e;
      else
        unaryI64(kind, e, e);
    storeI64(out, v);
    return out;
  }
  std::vector<double> v = toF64(x);
  for (double &e : v)
    e = unaryF64(kind, e);
  storeF64(out, v);
  return out;
}

llvm::Expected<HostTensor> binary(Binary kind, const HostTensor &a, const HostTensor &b,
                                  DType outType, const Shape &outShape) {
  if (auto e = checkBroadcast(a.shape, outShape, "lhs"))
    return std::move(e);
  if (auto e = checkBroadcast(b.shape, outShape, "rhs"))
    return std::move(e);
  HostTensor out = HostTensor::zeros(outType, outShape);
  std::array<std::vector<int64_t>, 2> strides{broadcastStrides(a.shape, outShape),
                                              broadcastStrides(b.shape, outShape)};
  size_t n = out.numel();
  if (isIntegerLike(a.dtype) && isIntegerLike(b.dtype) && kind != Binary::Pow) {
    std::vector<int64_t> va = toI64(a), vb = toI64(b), r(n);
    // u64 operands are held as their bits; u8/u16/u32 are zero-extended, so int64 math is exact.
    const bool u64 = a.dtype == DType::U64 || b.dtype == DType::U64;
    bool divByZero = false;
    forEachIndex<2>(outShape, strides, {0, 0}, [&](int64_t i, const std::array<int64_t, 2> &o) {
      int64_t y = vb[o[1]];
      if (y == 0 && (kind == Binary::Div || kind == Binary::Mod)) {
        divByZero = true;
        return;
      }
      if (!u64 || !binaryU64(kind, uint64_t(va[o[0]]), uint64_t(y), r[i]))
        r[i] = binaryI64(kind, va[o[0]], y);
    });
    if (divByZero)
      return kernelError("integer division by zero");
    storeI64(out, r);
    return std::move(out);
  }
  std::vector<double> va = toF64(a), vb = toF64(b), r(n);
  forEachIndex<2>(outShape, strides, {0, 0}, [&](int64_t i, const std::array<int64_t, 2> &o) {
    r[i] = binaryF64(kind, va[o[0]], vb[o[1]]);
  });
  storeF64(out, r);
  return std::move(out);
}

llvm::Expected<HostTensor> where(const HostTensor &cond, const HostTensor &a, const HostTensor &b,
                                 const Shape &outShape) {
  const HostTensor *ins[] = {&cond, &a, &b};
  const char *names[] = {"condition", "lhs", "rhs"};
  for (int k = 0; k < 3; ++k)
    if (auto e = checkBroadcast(ins[k]->shape, outShape, names[k]))
      return std::move(e);
  if (a.dtype != b.dtype)
    return kernelError("branches differ in element type");
  HostTensor out = HostTensor::zeros(a.dtype, outShape);
  std::vector<int64_t> c = toI64(cond);
  size_t es = dtypeSize(a.dtype);
  std::array<std::vector<int64_t>, 3> strides{broadcastStrides(cond.shape, outShape),
                                              broadcastStrides(a.shape, outShape),
                                              broadcastStrides(b.shape, outShape)};
  forEachIndex<3>(outShape, strides, {0, 0, 0}, [&](int64_t i, const std::array<int64_t, 3> &o) {
    const uint8_t *src = c[o[0]] ? a.data.data() + o[1] * es : b.data.data() + o[2] * es;
    std::memcpy(out.data.data() + i * es, src, es);
  });
  return std::move(out);
}

HostTensor cast(const HostTensor &x, DType to, bool saturate) {
  HostTensor out = HostTensor::zeros(to, x.shape);
  if (to == x.dtype) {
    out.data = x.data;
  } else if (isFloat8DType(to)) { // through f32 (as ONNX's reference), rounded to nearest even
    std::vector<double> v = toF64(x);
    for (size_t i = 0; i < v.size(); ++i)
      out.as<uint8_t>()[i] =
          f8::fromFloat(static_cast<float>(v[i]), static_cast<int>(to), saturate);
  } else if (x.dtype == DType::U64 && !isIntegerLike(to)) {
    storeF64(out, toF64(x)); // u64 → float converts the unsigned value
  } else if (to == DType::U64 && !isIntegerLike(x.dtype)) {
    // float → u64: like any float → integer cast (truncate toward zero to int64, wrap), except
    // that [2^63, 2^64) converts exactly and values beyond saturate at UINT64_MAX; NaN is 0.
    std::vector<double> v = toF64(x);
    for (size_t i = 0; i < v.size(); ++i) {
      const double d = std::isnan(v[i]) ? 0.0 : std::trunc(v[i]);
      out.as<uint64_t>()[i] =
          d >= 18446744073709551616.0 ? UINT64_MAX
          : d >= 9223372036854775808.0
              ? static_cast<uint64_t>(d)
              : static_cast<uint64_t>(d < -9223372036854775808.0 ? INT64_MIN
                                                                 : static_cast<int64_t>(d));
    }
  } else if (isIntegerLike(x.dtype) || (isIntegerLike(to) && to != DType::Bool)) {
    storeI64(out, toI64(x)); // int→any exact; float→int truncates toward zero, saturating
  } else {
    storeF64(out, toF64(x)); // float→float rounds; float→bool is != 0 (NaN is true)
  }
  return out;
}

llvm::Expected<HostTensor> rotary(const HostTensor &x, const HostTensor &cos, const HostTensor &sin,
                                  bool interleaved) {
  if (x.shape.empty() || x.shape.back() % 2 != 0)
    return kernelError("rotary input's last dim must be even");
  if (auto e = checkBroadcast(cos.shape, x.shape, "cos"))
    return std::move(e);
  if (auto e = checkBroadcast(sin.shape, x.shape, "sin"))
    return std::move(e);
  const int64_t d = x.shape.back(), h = d / 2;
  std::vector<double> xv = toF64(x), cv = toF64(cos), sv = toF64(sin), y(xv.size());
  std::array<std::vector<int64_t>, 2> strides{broadcastStrides(cos.shape, x.shape),
                                              broadcastStrides(sin.shape, x.shape)};
  forEachIndex<2>(x.shape, strides, {0, 0}, [&](int64_t i, const std::array<int64_t, 2> &o) {
    const int64_t k = i % d, row = i - k;
    double rot;
    if (interleaved)
      rot = k % 2 == 0 ? -xv[i + 1] : xv[i - 1];
    else
      rot = k < h ? -xv[row + k + h] : xv[row + k - h];
    y[i] = xv[i] * cv[o[0]] + rot * sv[o[1]];
  });
  HostTensor out = HostTensor::zeros(x.dtype, x.shape);
  storeF64(out, y);
  return std::move(out);
}

llvm::Expected<HostTensor> swiglu(const HostTensor &x) {
  if (x.shape.empty() || x.shape.back() % 2 != 0)
    return kernelError("swiglu input's last dim must be even");
  const int64_t n = x.shape.back() / 2, rows = product(x.shape) / std::max<int64_t>(2 * n, 1);
  Shape outShape = x.shape;
  outShape.back() = n;
  std::vector<double> xv = toF64(x), y(rows * n);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      const double a = xv[r * 2 * n + j], b = xv[r * 2 * n + n + j];
      y[r * n + j] = a * sigmoid(a) * b;
    }
  HostTensor out = HostTensor::zeros(x.dtype, outShape);
  storeF64(out, y);
  return std::move(out);
}

} // namespace tgc::interp
