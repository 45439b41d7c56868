// CompileDecode.cpp — `tgc compile --decode --max-seq N` (docs/design.md, "Generation").
//
// The model is a decoder exported "with past" (Hugging Face / Optimum naming): input_ids,
// attention_mask, position_ids, past_key_values.<i>.key/value in; logits and
// present.<i>.key/value out. It is compiled twice over: once per prompt-length bucket with an
// empty past (prefill: the prompt's keys and values are written into the cache at slots
// 0..S-1), and once for one new token with a past of N-1 positions (the step: the token's key
// and value go to slot = its position, and attention reads the whole cache under the
// attention mask). passes/decode turns each past/present pair into a state; the merge puts the
// prefill buckets, the step plan, the shared weights and the states into one package.
#include "driver/CompileDecode.h"

#include "codegen/common/MergeBuckets.h"
#include "codegen/common/StagedDir.h"
#include "driver/CompileBuckets.h"
#include "frontends/onnx/Importer.h"
#include "runtime/schema/PlanUtil.h"
#include "runtime/Text.h"

namespace tgc {

namespace {

llvm::Error fail(const std::string &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "--decode: %s", msg.c_str());
}

/// The graph's decoder inputs: roles by name, and each past cache with its state index.
struct DecoderInputs {
  std::string ids, mask, positions;
  struct Cache {
    std::string past, present;
    int64_t heads = 0, dim = 0;
  };
  std::vector<Cache> caches;
};

llvm::Expected<DecoderInputs> findInputs(const std::vector<GraphInputDims> &inputs) {
  DecoderInputs d;
  const std::string prefix = "past_key_values.";
  for (const GraphInputDims &in : inputs) {
    if (in.name == "input_ids")
      d.ids = in.name;
    else if (in.name == "attention_mask")
      d.mask = in.name;
    else if (in.name == "position_ids")
      d.positions = in.name;
    else if (in.name.rfind(prefix, 0) == 0) {
      if (!in.hasShape || in.dims.size() != 4 || in.dims[1] < 1 || in.dims[3] < 1)
        return fail("input '" + escapeText(in.name) +
                    "' is not [batch, kv_heads, past_seq, head_dim] with fixed heads and head_dim");
      d.caches.push_back({in.name, "present." + in.name.substr(prefix.size()), in.dims[1],
                          in.dims[3]});
    } else {
      return fail("input '" + escapeText(in.name) +
                  "' is not one a decoder takes (input_ids, attention_mask, position_ids, "
                  "past_key_values.<i>.key/value)");
    }
  }
  if (d.ids.empty() || d.positions.empty() || d.caches.empty())
    return fail("the model needs input_ids, position_ids and past_key_values.<i>.key/value "
                "inputs (a decoder exported with past key/values)");
  return d;
}

} // namespace

llvm::Expected<CompileResult> compileDecode(const CompileOptions &options,
                                            llvm::raw_ostream &log) {
  const int64_t N = options.maxSeq;
  if (N < 2)
    return fail("needs --max-seq N (at least 2): the cache's positions");
  if (!options.inputShapes.empty() || !options.inputRanges.empty())
    return fail("the input shapes follow from --max-seq; drop --input-shape");
  auto declared = graphInputDims(options.modelPath);
  if (!declared)
    return declared.takeError();
  auto dec = findInputs(*declared);
  if (!dec)
    return dec.takeError();
  auto stage = codegen::StagedDir::create(options.outputPath);
  if (!stage)
    return stage.takeError();

  CompileOptions base = options;
  base.decode = false;
  base.maxSeq = N;
  for (size_t k = 0; k < dec->caches.size(); ++k) {
    base.states[dec->caches[k].past] = (int64_t)k;
    base.states[dec->caches[k].present] = (int64_t)k;
  }

  // Prefill: batch 1, prompts of 1..N tokens in buckets, an empty past.
  CompileOptions pre = base;
  pre.decodeMode = "prefill";
  for (const std::string &in : {dec->ids, dec->mask, dec->positions})
    if (!in.empty()) {
      pre.inputRanges[in] = {{1, 1}, {1, N}};
      pre.dimNames[in] = {"", "seq"};
    }
  for (const auto &c : dec->caches)
    pre.inputShapes[c.past] = {1, c.heads, 0, c.dim};
  auto prefill = compileBucketPackages(pre, (*stage)->path(), log);
  if (!prefill)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "prefill: %s",
                                   llvm::toString(prefill.takeError()).c_str());

  // The step: one token, a past of N - 1 positions (the cache, once the pass has run).
  CompileOptions st = base;
  st.decodeMode = "step";
  st.bucketValues.clear();
  st.inputShapes[dec->ids] = {1, 1};
  st.inputShapes[dec->positions] = {1, 1};
  if (!dec->mask.empty())
    st.inputShapes[dec->mask] = {1, N};
  for (const auto &c : dec->caches)
    st.inputShapes[c.past] = {1, c.heads, N - 1, c.dim};
  st.outputPath = (*stage)->path() + "/step";
  if (!options.dumpDir.empty())
    st.dumpDir = options.dumpDir + "/step";
  auto step = compile(st, log);
  if (!step)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "step: %s",
                                   llvm::toString(step.takeError()).c_str());

  codegen::BucketPackage stepPackage{st.outputPath, {}};
  std::string why;
  auto stats = codegen::mergeBuckets(
      (*stage)->path(), prefill->packages, prefill->symbols, &stepPackage, [&](plan::Plan &top) {
        top.set_format_version(plan::kPlanFormatVersionDecode);
        plan::DecodeInfo &info = *top.mutable_decode();
        info.set_max_seq(N);
        auto indexOf = [&](const std::string &name) {
          for (int i = 0; i < top.inputs_size(); ++i)
            if (!name.empty() && top.inputs(i).name() == name)
              return i;
          return -1;
        };
        info.set_input_ids(indexOf(dec->ids));
        info.set_attention_mask(indexOf(dec->mask));
        info.set_position_ids(indexOf(dec->positions));
        info.set_logits(-1);
        for (int i = 0; i < top.outputs_size(); ++i)
          if (top.outputs(i).name() == "logits" ||
              (info.logits() < 0 && top.outputs(i).shape_size() == 3))
            info.set_logits(i);
        if (info.logits() >= 0)
          info.set_vocab(top.outputs(info.logits()).shape(2));
        else
          why = "the model has no logits output [batch, seq, vocab]";
      });
  if (!stats)
    return stats.takeError();
  if (!why.empty())
    return fail(why);
  if (auto e = (*stage)->publish())
    return std::move(e);
  CompileResult result = std::move(prefill->result);
  result.package = *stats;
  log << "decode: " << dec->caches.size() << " cache states of " << N
      << " positions, a step plan of " << step->package.kernels << " kernels\n";
  return result;
}

} // namespace tgc
