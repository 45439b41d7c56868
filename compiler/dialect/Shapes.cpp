// Shapes.cpp — static-shape arithmetic (broadcast, strides, matmul shapes).
#include "compiler/dialect/Shapes.h"

#include <algorithm>

namespace tgc {

std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::optional<int64_t> numElements(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0)
      return std::nullopt;
    if (d != 0 && n > INT64_MAX / d)
      return std::nullopt;
    n *= d;
  }
  return n;
}

std::vector<int64_t> stridesOf(const Shape &s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int64_t i = static_cast<int64_t>(s.size()) - 2; i >= 0; --i)
    st[i] = st[i + 1] * s[i + 1];
  return st;
}

std::string shapeToString(const Shape &s) {
  if (s.empty())
    return "scalar";
  std::string r;
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? "x" : "") + std::to_string(s[i]);
  return r;
}

std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

std::optional<Shape> matmulShape(const Shape &a0, const Shape &b0) {
  if (a0.empty() || b0.empty())
    return std::nullopt;
  Shape a = a0, b = b0;
  if (a.size() == 1)
    a.insert(a.begin(), 1);
  if (b.size() == 1)
    b.push_back(1);
  if (a.back() != b[b.size() - 2])
    return std::nullopt;
  auto batch = broadcastShapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
  if (!batch)
    return std::nullopt;
  Shape out = *batch;
  if (a0.size() != 1)
    out.push_back(a[a.size() - 2]);
  if (b0.size() != 1)
    out.push_back(b.back());
  return out;
}

} // namespace tgc
