// tgc_runtime.cpp — the C API over tgc::Session; every exception stops here.
#include "runtime/tgc_runtime.h"

#include "runtime/Session.h"

#include <string>
#include <vector>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

struct tgc_session {
  std::unique_ptr<tgc::Session> session;
  std::string description;
};

namespace {

void setError(char **err, const std::string &msg) {
  if (!err)
    return;
  *err = static_cast<char *>(std::malloc(msg.size() + 1));
  if (*err)
    std::memcpy(*err, msg.c_str(), msg.size() + 1);
}

std::vector<tgc::TensorRef> refsOf(const tgc_tensor *t, size_t n) {
  std::vector<tgc::TensorRef> r(n);
  for (size_t i = 0; i < n; ++i)
    r[i] = {static_cast<tgc::DType>(t[i].dtype), t[i].dims, t[i].rank, t[i].data, t[i].bytes};
  return r;
}

/// prefill/step's logits into the caller's buffer of `len` floats.
int copyLogits(const std::vector<float> &l, float *out, size_t len, const char *fn, char **err) {
  if (len < l.size()) {
    setError(err, std::string(fn) + ": logits buffer has " + std::to_string(len) +
                      " floats, the vocabulary needs " + std::to_string(l.size()));
    return -1;
  }
  std::copy(l.begin(), l.end(), out);
  return 0;
}

} // namespace

extern "C" {

tgc_session *tgc_session_load(const char *path, int threads, char **err) {
  if (err)
    *err = nullptr;
  if (!path) {
    setError(err, "tgc_session_load: path is NULL");
    return nullptr;
  }
  try {
    tgc::Status st;
    auto s = tgc::Session::load(path, st, threads);
    if (!s) {
      setError(err, st.message);
      return nullptr;
    }
    auto *h = new tgc_session;
    h->session = std::move(s);
    return h;
  } catch (const std::exception &e) {
    setError(err, std::string("tgc_session_load: ") + e.what());
  } catch (...) {
    setError(err, "tgc_session_load: unknown error");
  }
  return nullptr;
}

int tgc_session_run(tgc_session *s, const tgc_tensor *inputs, size_t num_inputs,
                    const tgc_tensor *outputs, size_t num_outputs, char **err) {
  if (err)
    *err = nullptr;
  if (!s || (num_inputs && !inputs) || (num_outputs && !outputs)) {
    setError(err, "tgc_session_run: NULL session or tensor array");
    return -1;
  }
  try {
    for (size_t i = 0; i < num_inputs + num_outputs; ++i) {
      const tgc_tensor &t = i < num_inputs ? inputs[i] : outputs[i - num_inputs];
      if (!tgc::isKnownDType(t.dtype)) {
        setError(err, std::string(i < num_inputs ? "input " : "output ") +
                          std::to_string(i < num_inputs ? i : i - num_inputs) +
                          ": unknown dtype " + std::to_string(t.dtype));
        return -1;
      }
    }
    auto in = refsOf(inputs, num_inputs), out = refsOf(outputs, num_outputs);
    tgc::Status st = s->session->runRefs(in.data(), in.size(), out.data(), out.size());
    if (!st.ok) {
      setError(err, st.message);
      return -1;
    }
    return 0;
  } catch (const std::exception &e) {
    setError(err, std::string("tgc_session_run: ") + e.what());
  } catch (...) {
    setError(err, "tgc_session_run: unknown error");
  }
  return -1;
}

size_t tgc_session_num_io(const tgc_session *s, int is_output) {
  if (!s)
    return 0;
  return is_output ? s->session->outputs().size() : s->session->inputs().size();
}

int tgc_session_io(const tgc_session *s, int is_output, size_t index, const char **name,
                   int32_t *dtype, int32_t *rank, const int64_t **dims) {
  if (!s)
    return -1;
  const auto &specs = is_output ? s->session->outputs() : s->session->inputs();
  if (index >= specs.size())
    return -1;
  const tgc::TensorSpec &t = specs[index];
  if (name)
    *name = t.name.c_str();
  if (dtype)
    *dtype = static_cast<int32_t>(t.dtype);
  if (rank)
    *rank = static_cast<int32_t>(t.shape.size());
  if (dims)
    *dims = t.shape.data();
  return 0;
}

int tgc_session_output_shape(const tgc_session *s, size_t index, int64_t *dims, int32_t *axis) {
  if (!s || index >= s->session->outputs().size())
    return -1;
  const std::vector<int64_t> shape = s->session->outputShape(index);
  if (dims)
    std::copy(shape.begin(), shape.end(), dims);
  const int32_t a = s->session->outputs()[index].dynamicAxis;
  if (axis)
    *axis = a;
  return a >= 0 ? 1 : 0;
}

int tgc_session_input_range(const tgc_session *s, size_t index, int64_t *lo, int64_t *hi) {
  if (!s || index >= s->session->inputs().size())
    return -1;
  const tgc::TensorSpec &t = s->session->inputs()[index];
  if (!t.indexBounded)
    return 0;
  if (lo)
    *lo = t.indexLo;
  if (hi)
    *hi = t.indexHi;
  return 1;
}

int tgc_session_input_dims_range(const tgc_session *s, size_t index, int64_t *min,
                                 int64_t *max) {
  if (!s || index >= s->session->inputs().size())
    return -1;
  const tgc::TensorSpec &t = s->session->inputs()[index];
  const std::vector<int64_t> &lo = t.minShape.size() == t.shape.size() ? t.minShape : t.shape;
  if (min)
    std::copy(lo.begin(), lo.end(), min);
  if (max)
    std::copy(t.shape.begin(), t.shape.end(), max);
  return lo != t.shape ? 1 : 0;
}

int tgc_session_dim_symbol(const tgc_session *s, int is_output, size_t index, int32_t axis,
                           const char **name) {
  if (!s)
    return -1;
  const auto &specs = is_output ? s->session->outputs() : s->session->inputs();
  if (index >= specs.size() || axis < 0 || (size_t)axis >= specs[index].shape.size())
    return -1;
  const tgc::TensorSpec &t = specs[index];
  if ((size_t)axis >= t.dimSymbols.size() || t.dimSymbols[(size_t)axis].empty())
    return 0;
  if (name)
    *name = t.dimSymbols[(size_t)axis].c_str();
  return 1;
}

void tgc_generate_options_init(tgc_generate_options *options) {
  if (!options)
    return;
  std::memset(options, 0, sizeof *options);
  options->struct_size = sizeof *options;
  options->eos_id = -1;
}

int tgc_session_decode_info(const tgc_session *s, int64_t *max_seq, int64_t *max_prompt,
                            int64_t *vocab) {
  if (!s)
    return -1;
  const tgc::Session &x = *s->session;
  if (x.maxSeq() <= 0)
    return 0;
  if (max_seq)
    *max_seq = x.maxSeq();
  if (max_prompt)
    *max_prompt = x.maxPromptTokens();
  if (vocab)
    *vocab = x.vocab();
  return 1;
}

int tgc_session_generate(tgc_session *s, const int64_t *prompt, size_t n, int max_new,
                         const tgc_generate_options *opt, int64_t *out_ids, size_t *num_out,
                         double *prefill_ms, double *decode_tokens_per_s, char **err) {
  if (err)
    *err = nullptr;
  if (!s || (n && !prompt) || !out_ids || !num_out) {
    setError(err, "tgc_session_generate: NULL session, prompt, out_ids or num_out");
    return -1;
  }
  if (opt && opt->struct_size != sizeof(tgc_generate_options)) {
    setError(err, "tgc_session_generate: options.struct_size is " +
                      std::to_string(opt->struct_size) + ", expected " +
                      std::to_string(sizeof(tgc_generate_options)) +
                      " (set it up with tgc_generate_options_init)");
    return -1;
  }
  try {
    tgc::GenerateOptions o;
    if (opt) {
      o.temperature = opt->temperature;
      o.topK = opt->top_k;
      o.seed = opt->seed;
      o.eosId = opt->eos_id;
    }
    std::vector<int64_t> ids;
    tgc::GenerateStats stats;
    tgc::Status st = s->session->generate(std::vector<int64_t>(prompt, prompt + n), max_new, o,
                                          ids, stats);
    if (!st.ok) {
      setError(err, st.message);
      return -1;
    }
    std::copy(ids.begin(), ids.end(), out_ids); // at most max_new
    *num_out = ids.size();
    if (prefill_ms)
      *prefill_ms = stats.prefillMs;
    if (decode_tokens_per_s)
      *decode_tokens_per_s = stats.decodeTokensPerS;
    return 0;
  } catch (const std::exception &e) {
    setError(err, std::string("tgc_session_generate: ") + e.what());
  } catch (...) {
    setError(err, "tgc_session_generate: unknown error");
  }
  return -1;
}

int tgc_session_prefill(tgc_session *s, const int64_t *prompt, size_t n, float *logits,
                        size_t logits_len, char **err) {
  if (err)
    *err = nullptr;
  if (!s || (n && !prompt) || !logits) {
    setError(err, "tgc_session_prefill: NULL session, prompt or logits");
    return -1;
  }
  try {
    std::vector<float> l;
    tgc::Status st = s->session->prefill(std::vector<int64_t>(prompt, prompt + n), l);
    if (!st.ok) {
      setError(err, st.message);
      return -1;
    }
    return copyLogits(l, logits, logits_len, "tgc_session_prefill", err);
  } catch (const std::exception &e) {
    setError(err, std::string("tgc_session_prefill: ") + e.what());
  } catch (...) {
    setError(err, "tgc_session_prefill: unknown error");
  }
  return -1;
}

int tgc_session_step(tgc_session *s, int64_t token, int64_t position, float *logits,
                     size_t logits_len, char **err) {
  if (err)
    *err = nullptr;
  if (!s || !logits) {
    setError(err, "tgc_session_step: NULL session or logits");
    return -1;
  }
  try {
    std::vector<float> l;
    tgc::Status st = s->session->step(token, position, l);
    if (!st.ok) {
      setError(err, st.message);
      return -1;
    }
    return copyLogits(l, logits, logits_len, "tgc_session_step", err);
  } catch (const std::exception &e) {
    setError(err, std::string("tgc_session_step: ") + e.what());
  } catch (...) {
    setError(err, "tgc_session_step: unknown error");
  }
  return -1;
}

const char *tgc_session_describe(tgc_session *s) {
  if (!s)
    return "";
  try {
    s->description = s->session->describe();
  } catch (...) {
    s->description.clear();
  }
  return s->description.c_str();
}

void tgc_session_free(tgc_session *s) { delete s; }

} // extern "C"
