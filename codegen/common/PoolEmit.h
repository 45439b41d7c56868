// PoolEmit.h — the body of one pooling output element (tg.pool), written once for both backends:
// C-family code that the CPU emitter wraps in an OpenMP loop and the CUDA emitter in a grid-stride
// loop, each passing its own spelling of types, loads, stores and the lowest value.
#ifndef TGC_CODEGEN_COMMON_POOLEMIT_H
#define TGC_CODEGEN_COMMON_POOLEMIT_H

#include "codegen/common/EmitUtil.h"

#include <functional>
#include <string>

namespace tgc::tg {
class PoolOp;
} // namespace tgc::tg

namespace tgc::codegen {

/// How a backend spells what the pooling body needs.
struct PoolSpelling {
  std::string index;  ///< the index type ("int64_t", or "int" when every tensor fits)
  std::string acc;    ///< accumulator type (the element type; float for f16/bf16)
  std::string lowest; ///< `acc`'s lowest value (-infinity for floats), the max's start
  std::function<std::string(const std::string &)> load;  ///< element read -> `acc` value
  std::function<std::string(const std::string &)> store; ///< `acc` value -> stored element
};

/// Lines that compute output element `i` (an `s.index` variable already declared) of `op`,
/// reading the input through pointer `in` and writing `out[i]`: the taps inside the input are
/// reduced (max: tg_max, which propagates NaN; avg: summed, then divided by their count or, with
/// count_include_pad, by the kernel's size).
void emitPoolElement(Code &c, tg::PoolOp op, const PoolSpelling &s, const std::string &in,
                     const std::string &out);

/// Taps per window (the kernel's size) times output elements: the op's work, for parallelism.
int64_t poolWork(tg::PoolOp op);

} // namespace tgc::codegen

#endif // TGC_CODEGEN_COMMON_POOLEMIT_H
