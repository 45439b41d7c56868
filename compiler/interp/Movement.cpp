// Movement.cpp — data movement kernels: reshape, transpose, slice, concat, split, gather,
// gather_elements, expand and pad.
//
// These copy elements bit for bit (any dtype), so they are exact. Every index that comes from data
// (gather indices) or from attributes is range-checked before it is used.
#include "compiler/interp/Kernels.h"

#include <algorithm>

namespace tgc::interp {

namespace {

/// Calls f with a default value of the unsigned integer type that has `bytes` bytes.
template <typename F> void withElemType(size_t bytes, F &&f) {
  switch (bytes) {
  case 1: f(uint8_t()); break;
  case 2: f(uint16_t()); break;
  case 4: f(uint32_t()); break;
  default: f(uint64_t()); break;
  }
}

/// dst[i] = src[base + sum idx[d] * strides[d]] for every index i of dst.
void stridedCopy(const HostTensor &src, HostTensor &dst, const std::vector<int64_t> &strides,
                 int64_t base) {
  withElemType(dtypeSize(src.dtype), [&](auto tag) {
    using T = decltype(tag);
    const T *s = src.as<T>();
    T *d = dst.as<T>();
    forEachIndex<1>(dst.shape, {strides}, {base},
                    [&](int64_t i, const std::array<int64_t, 1> &o) { d[i] = s[o[0]]; });
  });
}

llvm::Error checkAxis(int64_t axis, const Shape &shape) {
  if (axis < 0 || axis >= static_cast<int64_t>(shape.size()))
    return kernelError("axis " + std::to_string(axis) + " out of range for shape " +
                       shapeToString(shape));
  return llvm::Error::success();
}

/// Reads integer indices and wraps negative ones; errors name the first one out of [-n, n).
llvm::Expected<std::vector<int64_t>> readIndices(const HostTensor &indices, int64_t n) {
  if (!isIntegerLike(indices.dtype) || indices.dtype == DType::Bool)
    return kernelError(llvm::Twine("indices must be integers, got ") + dtypeName(indices.dtype));
  std::vector<int64_t> idx = toI64(indices);
  for (int64_t &i : idx) {
    if (i < -n || i >= n)
      return kernelError("index " + std::to_string(i) + " out of range [-" + std::to_string(n) +
                         ", " + std::to_string(n) + ")");
    if (i < 0)
      i += n;
  }
  return idx;
}

} // namespace

llvm::Expected<HostTensor> reshape(const HostTensor &x, const Shape &outShape) {
  if (product(outShape) != x.numel())
    return kernelError("cannot reshape " + shapeToString(x.shape) + " to " +
                       shapeToString(outShape));
  HostTensor out = x;
  out.name.clear();
  out.shape = outShape;
  return std::move(out);
}

llvm::Expected<HostTensor> transpose(const HostTensor &x, const std::vector<int64_t> &perm) {
  size_t rank = x.shape.size();
  std::vector<bool> seen(rank, false);
  if (perm.size() != rank)
    return kernelError("perm needs one entry per dim");
  std::vector<int64_t> inStr = stridesOf(x.shape), strides(rank);
  Shape outShape(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t p = perm[i];
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[p])
      return kernelError("perm is not a permutation");
    seen[p] = true;
    outShape[i] = x.shape[p];
    strides[i] = inStr[p];
  }
  HostTensor out = HostTensor::zeros(x.dtype, outShape);
  stridedCopy(x, out, strides, 0);
  return std::move(out);
}

llvm::Expected<HostTensor> slice(const HostTensor &x, const std::vector<int64_t> &starts,
                                 const std::vector<int64_t> &steps, const Shape &outShape) {
  size_t rank = x.shape.size();
  if (starts.size() != rank || steps.size() != rank || outShape.size() != rank)
    return kernelError("slice needs one start, step and result dim per input dim");
  std::vector<int64_t> inStr = stridesOf(x.shape), strides(rank);
  int64_t base = 0;
  for (size_t d = 0; d < rank; ++d) {
    strides[d] = inStr[d] * steps[d];
    if (outShape[d] == 0)
      continue;
    int64_t last = starts[d] + (outShape[d] - 1) * steps[d];
    if (starts[d] < 0 || starts[d] >= x.shape[d] || last < 0 || last >= x.shape[d])
      return kernelError("slice dim " + std::to_string(d) + " reads outside the input");
    base += starts[d] * inStr[d];
  }
  HostTensor out = HostTensor::zeros(x.dtype, outShape);
  stridedCopy(x, out, strides, base);
  return std::move(out);
}

llvm::Expected<HostTensor> concat(const std::vector<const HostTensor *> &xs, int64_t axis,
                                  const Shape &outShape) {
  if (auto e = checkAxis(axis, outShape))
    return std::move(e);
  int64_t total = 0;
  for (const HostTensor *x : xs) {
    bool ok = x->shape.size() == outShape.size() && x->dtype == xs.front()->dtype;
    for (size_t d = 0; ok && d < outShape.size(); ++d)
      ok = d == static_cast<size_t>(axis) || x->shape[d] == outShape[d];
    if (!ok)
      return kernelError("concat input " + shapeToString(x->shape) + " does not fit result " +
                         shapeToString(outShape));
    total += x->shape[axis];
  }
  if (xs.empty() || total != outShape[axis])
    return kernelError("concat inputs do not add up to the result shape");
  HostTensor out = HostTensor::zeros(xs.front()->dtype, outShape);
  size_t es = dtypeSize(out.dtype);
  int64_t outer = product(outShape, 0, axis), outRow = product(outShape, axis) * es, col = 0;
  for (const HostTensor *x : xs) {
    int64_t row = product(x->shape, axis) * es;
    for (int64_t o = 0; o < outer; ++o)
      std::copy_n(x->data.data() + o * row, row, out.data.data() + o * outRow + col);
    col += row;
  }
  return std::move(out);
}

llvm::Expected<std::vector<HostTensor>> split(const HostTensor &x, int64_t axis,
                                              const std::vector<Shape> &outShapes) {
  if (auto e = checkAxis(axis, x.shape))
    return std::move(e);
  int64_t total = 0;
  for (const Shape &s : outShapes) {
    bool ok = s.size() == x.shape.size();
    for (size_t d = 0; ok && d < s.size(); ++d)
      ok = d == static_cast<size_t>(axis) || x.shape[d] == s[d];
    if (!ok)
      return kernelError("split result " + shapeToString(s) + " does not fit input " +
                         shapeToString(x.shape));
    total += s[axis];
  }
  if (total != x.shape[axis])
    return kernelError("split results do not add up to the input shape");
  size_t es = dtypeSize(x.dtype);
  int64_t outer = product(x.shape, 0, axis), inRow = product(x.shape, axis) * es, col = 0;
  std::vector<HostTensor> outs;
  for (const Shape &s : outShapes) {
    HostTensor out = HostTensor::zeros(x.dtype, s);
    int64_t row = product(s, axis) * es;
    for (int64_t o = 0; o < outer; ++o)
      std::copy_n(x.data.data() + o * inRow + col, row, out.data.data() + o * row);
    col += row;
    outs.push_back(std::move(out));
  }
  return std::move(outs);
}

llvm::Expected<HostTensor> gather(const HostTensor &data, const HostTensor &indices, int64_t axis) {
  if (auto e = checkAxis(axis, data.shape))
    return std::move(e);
  int64_t n = data.shape[axis], outer = product(data.shape, 0, axis);
  size_t es = dtypeSize(data.dtype);
  int64_t row = product(data.shape, axis + 1) * es;
  auto idx = readIndices(indices, n);
  if (!idx)
    return idx.takeError();
  Shape outShape(data.shape.begin(), data.shape.begin() + axis);
  outShape.insert(outShape.end(), indices.shape.begin(), indices.shape.end());
  outShape.insert(outShape.end(), data.shape.begin() + axis + 1, data.shape.end());
  HostTensor out = HostTensor::zeros(data.dtype, outShape);
  uint8_t *dst = out.data.data();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j : *idx) {
      std::copy_n(data.data.data() + (o * n + j) * row, row, dst);
      dst += row;
    }
  return std::move(out);
}

llvm::Expected<HostTensor> gatherElements(const HostTensor &data, const HostTensor &indices,
                                          int64_t axis) {
  if (auto e = checkAxis(axis, data.shape))
    return std::move(e);
  size_t rank = data.shape.size();
  bool ok = indices.shape.size() == rank;
  for (size_t d = 0; ok && d < rank; ++d)
    ok = d == static_cast<size_t>(axis) || indices.shape[d] <= data.shape[d];
  if (!ok)
    return kernelError("indices shape " + shapeToString(indices.shape) +
                       " does not fit data shape " + shapeToString(data.shape));
  auto idx = readIndices(indices, data.shape[axis]);
  if (!idx)
    return idx.takeError();
  std::vector<int64_t> strides = stridesOf(data.shape);
  int64_t axisStride = strides[axis];
  strides[axis] = 0;
  HostTensor out = HostTensor::zeros(data.dtype, indices.shape);
  withElemType(dtypeSize(data.dtype), [&](auto tag) {
    using T = decltype(tag);
    const T *s = data.as<T>();
    T *d = out.as<T>();
    forEachIndex<1>(indices.shape, {strides}, {0}, [&](int64_t i, const std::array<int64_t, 1> &o) {
      d[i] = s[o[0] + (*idx)[i] * axisStride];
    });
  });
  return std::move(out);
}

llvm::Expected<HostTensor> expand(const HostTensor &x, const Shape &outShape) {
  if (auto e = checkBroadcast(x.shape, outShape, "input"))
    return std::move(e);
  HostTensor out = HostTensor::zeros(x.dtype, outShape);
  stridedCopy(x, out, broadcastStrides(x.shape, outShape), 0);
  return std::move(out);
}

llvm::Expected<HostTensor> pad(const HostTensor &x, const std::vector<int64_t> &pads, double value,
                               const Shape &outShape) {
  size_t rank = x.shape.size();
  if (pads.size() != 2 * rank || outShape.size() != rank)
    return kernelError("pad needs two pads per dim");
  for (size_t d = 0; d < rank; ++d)
    if (outShape[d] != x.shape[d] + pads[d] + pads[d + rank])
      return kernelError("pad result shape " + shapeToString(outShape) + " does not match pads");
  HostTensor out = HostTensor::zeros(x.dtype, outShape);
  size_t es = dtypeSize(x.dtype);
  if (out.numel() == 0)
    return std::move(out);
  HostTensor fill = HostTensor::zeros(x.dtype, {});
  storeF64(fill, {value}); // rounded (or saturated) to the dtype like any stored value
  for (int64_t i = 0; i < out.numel(); ++i)
    std::copy_n(fill.data.data(), es, out.data.data() + i * es);

  // Copy the box of input elements that land inside the output (negative pads crop).
  std::vector<int64_t> inStr = stridesOf(x.shape), outStr = stridesOf(outShape);
  Shape box(rank);
  int64_t inBase = 0, outBase = 0;
  for (size_t d = 0; d < rank; ++d) {
    int64_t inStart = std::max<int64_t>(0, -pads[d]), outStart = std::max<int64_t>(0, pads[d]);
    box[d] = std::max<int64_t>(0, std::min(x.shape[d] - inStart, outShape[d] - outStart));
    inBase += inStart * inStr[d];
    outBase += outStart * outStr[d];
  }
  withElemType(es, [&](auto tag) {
    using T = decltype(tag);
    const T *s = x.as<T>();
    T *d = out.as<T>();
    forEachIndex<2>(box, {outStr, inStr}, {outBase, inBase},
                    [&](int64_t, const std::array<int64_t, 2> &o) { d[o[0]] = s[o[1]]; });
  });
  return std::move(out);
}

} // namespace tgc::interp
