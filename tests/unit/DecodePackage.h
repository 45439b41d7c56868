// DecodePackage.h — unit-test helper: a decode package (docs/runtime.md, "Decode packages")
// hand-assembled from single-shape CPU packages the way the compiler's --decode writes one: the
// prefill plans as buckets over the prompt length, the one-token step plan, and one persistent
// state replacing the graph's `past` input and `present` output (every argument into either
// becomes a STATE range; the present is computed into the arena and a last COPY step writes it
// into the state, as a cache write would).
//
// The model ("counter"): vocab 8, state s f32 [1, 8]; every plan adds its own increment to the
// state (prefill w_p, step w_s) and returns logits[t] = E[ids[t]] + s, with E[i][v] = 10 where
// v = (i + 1) % 8, else 0. A run's logits thus tell which plan ran and what the state held.
#ifndef TGC_TESTS_UNIT_DECODEPACKAGE_H
#define TGC_TESTS_UNIT_DECODEPACKAGE_H

#include "tests/unit/BucketPackage.h"

#include <string>
#include <vector>

namespace tgc::test {

inline constexpr int64_t kVocab = 8, kMaxSeq = 16;

inline float tableOf(int64_t i, int64_t v) { return v == (i + 1) % kVocab ? 10.f : 0.f; }
inline float prefillInc(int64_t v) { return 0.25f * float(v); }
inline float stepInc(int64_t v) { return v == 3 ? 1.f : 0.f; }

/// The counter model at prompt length `s` (mask length `t`), adding `inc` to the state.
/// `stateInLogits` false: logits = E[ids] alone (the state is still written), for in-place
/// packages (assembleDecode's inPlace) whose kernels' order against the write is not known.
inline std::string counterIr(int64_t s, int64_t t, float (*inc)(int64_t),
                             bool stateInLogits = true) {
  std::string e = "[", w = "[";
  for (int64_t i = 0; i < kVocab; ++i) {
    e += std::string(i ? ", " : "") + "[";
    for (int64_t v = 0; v < kVocab; ++v)
      e += (v ? ", " : "") + std::to_string(tableOf(i, v));
    e += "]";
    w += (i ? ", " : "") + std::to_string(inc(i));
  }
  e += "]", w += "]";
  const std::string V = std::to_string(kVocab), S = std::to_string(s);
  const std::string ids = "tensor<1x" + S + "xi64>", mask = "tensor<1x" + std::to_string(t) + "xi64>";
  const std::string st = "tensor<1x" + V + "xf32>", lg = "tensor<1x" + S + "x" + V + "xf32>";
  return "func.func @main(%ids: " + ids + " {tg.name = \"input_ids\"}, %mask: " + mask +
         " {tg.name = \"attention_mask\"}, %pos: " + ids + " {tg.name = \"position_ids\"}, %past: " +
         st + " {tg.name = \"past\"}) -> (" + lg + " {tg.name = \"logits\"}, " + st +
         " {tg.name = \"present\"}) {\n"
         "  %e = tg.constant dense<" + e + "> : tensor<" + V + "x" + V + "xf32>\n"
         "  %w = tg.constant dense<" + w + "> : tensor<" + V + "xf32>\n"
         "  %p = tg.add %past, %w : " + st + ", tensor<" + V + "xf32> -> " + st + "\n"
         "  %g = tg.gather %e, %ids {axis = 0 : i64} : tensor<" + V + "x" + V + "xf32>, " + ids +
         " -> " + lg + "\n" +
         (stateInLogits ? "  %l = tg.add %g, %p : " + lg + ", " + st + " -> " + lg + "\n"
                        : "  %l = tg.mul %g, %g : " + lg + ", " + lg + " -> " + lg + "\n") +
         "  return %l, %p : " + lg + ", " + st + "\n}\n";
}

/// Plan `p`'s last input (past) and last output (present) become state 0: arguments into the
/// past read the state, those into the present write a new arena range, which a final COPY
/// step writes into the state. `inPlace` (CUDA packages, which have no COPY steps): arguments
/// into the present write the state directly (fine for load checks; which kernel reads the
/// state before or after the write is then the compiler's choice).
inline void useState(plan::Plan &p, bool inPlace = false) {
  const int past = p.inputs_size() - 1, present = p.outputs_size() - 1;
  const int64_t bytes = kVocab * 4;
  const int64_t scratch = (p.arena_bytes() + 63) / 64 * 64;
  p.set_arena_bytes(scratch + bytes);
  auto redirect = [&](plan::BufferArg &a) {
    if ((a.kind() == plan::INPUT && a.index() == past) ||
        (inPlace && a.kind() == plan::OUTPUT && a.index() == present))
      a.set_kind(plan::STATE), a.set_index(0);
    else if (a.kind() == plan::OUTPUT && a.index() == present)
      a.set_kind(plan::ARENA), a.set_index(0), a.set_offset(scratch + a.offset());
  };
  for (plan::Step &s : *p.mutable_steps())
    for (plan::BufferArg &a : *s.mutable_args())
      redirect(a);
  for (plan::TensorDesc &d : *p.mutable_outputs())
    if (d.has_source())
      redirect(*d.mutable_source());
  if (inPlace) {
    p.set_arena_bytes(scratch);
    p.mutable_inputs()->RemoveLast();
    p.mutable_outputs()->RemoveLast();
    return;
  }
  plan::Step &copy = *p.add_steps();
  copy.set_kind(plan::Step::COPY);
  copy.set_label("cache write");
  plan::BufferArg &dst = *copy.add_args();
  dst.set_kind(plan::STATE), dst.set_bytes(bytes);
  *copy.add_args() = p.outputs(present).source();
  p.mutable_inputs()->RemoveLast();
  p.mutable_outputs()->RemoveLast();
}

/// Writes into `dir` the decode package of the prefill packages `prefillDirs` (at prompt
/// lengths `lengths`, the last the longest) and the step package `stepDir`.
inline void assembleDecode(const std::string &dir, const std::vector<std::string> &prefillDirs,
                           const std::vector<int64_t> &lengths, const std::string &stepDir,
                           bool inPlace = false) {
  BucketSpec spec;
  plan::Symbol seq;
  seq.set_name("seq"), seq.set_min(1), seq.set_max(lengths.back());
  spec.symbols = {seq};
  spec.dimSymbols = {{"input_ids", {-1, 0}}, {"attention_mask", {-1, 0}},
                     {"position_ids", {-1, 0}}, {"logits", {-1, 0, -1}}};
  // The step package rides along as bucket 0 (its weights join the blob), then moves out.
  std::vector<std::string> dirs = {stepDir};
  std::vector<std::vector<int64_t>> values = {{1}};
  for (size_t k = 0; k < prefillDirs.size(); ++k)
    dirs.push_back(prefillDirs[k]), values.push_back({lengths[k]});
  assembleBucketed(dir, dirs, values, spec);
  plan::Plan top = readPlanFile(dir);
  plan::Plan step = top.buckets(0);
  top.mutable_buckets()->DeleteSubrange(0, 1);
  step.clear_bucket_values();
  for (plan::TensorDesc &d : *step.mutable_inputs())
    d.clear_dim_symbols();
  for (plan::TensorDesc &d : *step.mutable_outputs())
    d.clear_dim_symbols();
  useState(step, inPlace);
  int64_t arena = step.arena_bytes();
  for (plan::Plan &b : *top.mutable_buckets()) {
    useState(b, inPlace);
    arena = std::max(arena, b.arena_bytes());
  }
  top.set_arena_bytes(arena);
  top.mutable_inputs()->RemoveLast();
  top.mutable_outputs()->RemoveLast();
  *top.mutable_decode_step() = step;
  plan::StateDesc &st = *top.add_states();
  st.set_name("past"), st.set_dtype(1);
  st.add_shape(1), st.add_shape(kVocab);
  plan::DecodeInfo &di = *top.mutable_decode();
  di.set_max_seq(kMaxSeq), di.set_vocab(kVocab);
  di.set_input_ids(0), di.set_attention_mask(1), di.set_position_ids(2), di.set_logits(0);
  top.set_format_version(plan::kPlanFormatVersionDecode);
  writePlanFile(dir, top);
}

} // namespace tgc::test

#endif // TGC_TESTS_UNIT_DECODEPACKAGE_H
