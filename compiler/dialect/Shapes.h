// Shapes.h — static-shape arithmetic shared by the verifiers, the frontend and the interpreter.
//
// Kept free of MLIR headers so the interpreter and runtime-side code can use it too.
#ifndef TGC_COMPILER_DIALECT_SHAPES_H
#define TGC_COMPILER_DIALECT_SHAPES_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tgc {

using Shape = std::vector<int64_t>;

/// Numpy broadcast of two shapes; nullopt when they are incompatible.
std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b);

/// Product of dims; nullopt on overflow of int64 or a negative dim.
std::optional<int64_t> numElements(const Shape &s);

/// Row-major strides of a shape.
std::vector<int64_t> stridesOf(const Shape &s);

/// "1x128x64" (or "scalar" for rank 0), for messages.
std::string shapeToString(const Shape &s);

/// Normalizes a possibly negative axis against rank; nullopt when out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

/// Result shape of numpy matmul; nullopt when the operands do not contract.
std::optional<Shape> matmulShape(const Shape &a, const Shape &b);

} // namespace tgc

#endif // TGC_COMPILER_DIALECT_SHAPES_H
