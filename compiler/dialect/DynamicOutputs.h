// DynamicOutputs.h — how @main marks outputs whose extent along one axis is data-dependent.
//
// The importer appends, after the model's outputs, one i64 scalar result per such output (the
// count of valid entries along its axis) and records `tg.dynamic_outputs = [output, axis, ...]`
// on @main (pairs, in the order of those extra results). Passes keep both as they keep every
// result; the package writer turns them into the plan's TensorDesc.dynamic_axis / count
// (docs/design.md, "Data-dependent shapes").
#ifndef TGC_COMPILER_DIALECT_DYNAMICOUTPUTS_H
#define TGC_COMPILER_DIALECT_DYNAMICOUTPUTS_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"

#include <cstdint>
#include <vector>

namespace tgc {

/// The attribute on @main.
inline constexpr const char *kDynamicOutputsAttr = "tg.dynamic_outputs";

/// One output with a data-dependent extent.
struct DynamicOutput {
  int64_t output = 0;      ///< the model output's index
  int64_t axis = 0;        ///< its data-dependent axis
  int64_t countResult = 0; ///< the @main result holding the count
};

/// The dynamic outputs recorded on `fn` (@main, numResults results); empty when none. Malformed
/// entries (odd length, indices out of range) give an empty list and `ok` = false.
inline std::vector<DynamicOutput> dynamicOutputs(mlir::Operation *fn, int64_t numResults,
                                                 bool &ok) {
  ok = true;
  std::vector<DynamicOutput> out;
  auto a = fn->getAttrOfType<mlir::ArrayAttr>(kDynamicOutputsAttr);
  if (!a)
    return out;
  const int64_t pairs = (int64_t)a.size() / 2, first = numResults - pairs;
  ok = a.size() % 2 == 0 && first >= 0;
  for (int64_t i = 0; ok && i < pairs; ++i) {
    auto o = a[2 * i].dyn_cast<mlir::IntegerAttr>(), x = a[2 * i + 1].dyn_cast<mlir::IntegerAttr>();
    ok = o && x && o.getInt() >= 0 && o.getInt() < first && x.getInt() >= 0;
    if (ok)
      out.push_back({o.getInt(), x.getInt(), first + i});
  }
  if (!ok)
    out.clear();
  return out;
}

} // namespace tgc

#endif // TGC_COMPILER_DIALECT_DYNAMICOUTPUTS_H
