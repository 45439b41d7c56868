// Generate.h — token choice for generation with a decode package (Session::generate, `tgc
// generate`): the greedy argmax and temperature / top-k sampling over one row of logits.
//
// Session.h declares the generation API itself (GenerateOptions, GenerateStats, prefill, step,
// generate); Generate.cpp implements generate's loop over prefill and step.
#ifndef TGC_RUNTIME_GENERATE_H
#define TGC_RUNTIME_GENERATE_H

#include "runtime/Session.h"

#include <cstdint>
#include <random>
#include <vector>

namespace tgc {

/// The index of the largest logit, the lowest index on ties (as torch.argmax); NaNs never win
/// unless every value is NaN (then 0). -1 for an empty row.
int64_t argmaxToken(const std::vector<float> &logits);

/// The next id for `options`: argmaxToken when temperature <= 0, else a draw from
/// softmax(logits / temperature) over the topK largest logits (all when topK <= 0) with `rng`.
int64_t pickToken(const std::vector<float> &logits, const GenerateOptions &options,
                  std::mt19937_64 &rng);

} // namespace tgc

#endif // TGC_RUNTIME_GENERATE_H
