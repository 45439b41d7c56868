/* tgc_runtime.h — the C API of the tgc runtime: load a package, run it, read its interface.
 *
 * Every function reports failure by return value (NULL or -1) and, where an `err` pointer is
 * given, a malloc'ed message the caller releases with tgc_free_error. Nothing aborts, exits or
 * throws. A session is not thread-safe: use one per thread. */
#ifndef TGC_RUNTIME_TGC_RUNTIME_H
#define TGC_RUNTIME_TGC_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A loaded package with its own arena. */
typedef struct tgc_session tgc_session;

/** A caller-owned tensor. dtype uses ONNX TensorProto.DataType numbers (1 = f32, 7 = i64, ...). */
typedef struct tgc_tensor {
  int32_t dtype;
  int32_t rank;
  const int64_t *dims; /**< rank dims */
  void *data;          /**< read for inputs, written for outputs */
  size_t bytes;        /**< size of data */
} tgc_tensor;

/** Loads the package directory `path`; `threads` <= 0 keeps the default. NULL on error. */
tgc_session *tgc_session_load(const char *path, int threads, char **err);

/** Runs once. Inputs and outputs are matched by position; their dtype and shape must equal the
 *  package's (see tgc_session_io) and buffers must hold the bytes. 0 on success, -1 on error.
 *  An output of data-dependent extent is then read at tgc_session_output_shape's shape.
 *  A bucketed package (compiled with --input-shape ranges) takes inputs of any shape in range
 *  (tgc_session_input_dims_range); each output's dims may be given at this run's shape (an axis
 *  that follows a symbol has the value the inputs gave it) or at the declared maxima
 *  (tgc_session_io), and it is written row-major at tgc_session_output_shape's shape from the
 *  start of its buffer. */
int tgc_session_run(tgc_session *s, const tgc_tensor *inputs, size_t num_inputs,
                    const tgc_tensor *outputs, size_t num_outputs, char **err);

/** Number of inputs (is_output = 0) or outputs (is_output = 1); 0 for a NULL session. */
size_t tgc_session_num_io(const tgc_session *s, int is_output);

/** Name, dtype, rank and dims of input/output `index`; pointers stay valid while `s` lives.
 *  0 on success, -1 when `index` is out of range. Any out-pointer may be NULL. */
int tgc_session_io(const tgc_session *s, int is_output, size_t index, const char **name,
                   int32_t *dtype, int32_t *rank, const int64_t **dims);

/** Shape of output `index` after the last tgc_session_run. An output whose extent along one
 *  axis depends on the data (NonZero, Unique, NonMaxSuppression, Compress by a computed
 *  condition) is declared (tgc_session_io) at its upper bound; a run writes its valid part
 *  packed row-major at the start of the output buffer, and this gives that dim cut to the run's
 *  count (before any run: the upper bound). Writes the output's rank dims to `dims` (room for the
 *  rank tgc_session_io gives; may be NULL) and that axis to `*axis` (-1 when none; may be NULL).
 *  1 for such an output, 0 for one of static shape (dims as declared; in a bucketed package,
 *  each axis that follows a symbol at the last run's value of it), -1 for a NULL session or an
 *  `index` out of range. */
int tgc_session_output_shape(const tgc_session *s, size_t index, int64_t *dims, int32_t *axis);

/** The values input `index` may hold when it indexes a Gather or GatherElements (tgc_session_run
 *  refuses any other): 1 with [*lo, *hi] set; 0 when the input has no such range; -1 for a NULL
 *  session or an `index` out of range. *lo and *hi are written only when 1 is returned; either
 *  pointer may be NULL. */
int tgc_session_input_range(const tgc_session *s, size_t index, int64_t *lo, int64_t *hi);

/** The range of each axis of input `index`: writes its rank (tgc_session_io) least values to
 *  `min` and most to `max` (either may be NULL). In a bucketed package an axis that follows a
 *  symbol (tgc_session_dim_symbol) takes any value in [min, max], the same wherever that symbol
 *  appears; a fixed axis, and every axis of a single-shape package, has min = max. 1 when some
 *  axis varies, 0 when none does, -1 for a NULL session or an `index` out of range. */
int tgc_session_input_dims_range(const tgc_session *s, size_t index, int64_t *min, int64_t *max);

/** The symbol axis `axis` of input (is_output = 0) or output (1) `index` follows in a bucketed
 *  package ("batch", "seq"; valid while `s` lives): 1 with *name set (name may be NULL); 0 for
 *  a fixed axis; -1 for a NULL session or an index or axis out of range. After a run, such an
 *  output axis has the value the inputs gave that symbol. */
int tgc_session_dim_symbol(const tgc_session *s, int is_output, size_t index, int32_t axis,
                           const char **name);

/* ---- Generation with a decode package (`tgc compile --decode --max-seq N`; docs/runtime.md,
 * "Decode packages"). Any other package refuses these calls (-1, the error says why). */

/** How tgc_session_generate picks each new id. Set it up with tgc_generate_options_init, then
 *  change fields; later versions may append fields (struct_size tells which the caller knows). */
typedef struct tgc_generate_options {
  size_t struct_size; /**< sizeof(tgc_generate_options), set by tgc_generate_options_init */
  float temperature;  /**< 0 (default): greedy argmax, lowest id on ties; > 0: sampling */
  int32_t top_k;      /**< sampling only: draw among the top_k most likely ids (0: all) */
  uint64_t seed;      /**< sampling only: the generator's seed (equal seeds, equal ids) */
  int64_t eos_id;     /**< >= 0: stop after this id (it is returned); -1 (default): never */
} tgc_generate_options;

/** Sets every field of `*options` to its default (greedy, no EOS) and struct_size. NULL is
 *  ignored. */
void tgc_generate_options_init(tgc_generate_options *options);

/** 1 for a decode package, with its cache positions (`*max_seq`: prompt + new ids <= it), the
 *  longest prompt (`*max_prompt`) and the logits' length (`*vocab`) written (each pointer may be
 *  NULL); 0 for any other package; -1 for a NULL session. */
int tgc_session_decode_info(const tgc_session *s, int64_t *max_seq, int64_t *max_prompt,
                            int64_t *vocab);

/** Generates up to `max_new` ids after the prompt `prompt` (`n` ids): one prefill, then one step
 *  per new id but the last. `opt` may be NULL (greedy). Writes the new ids to `out_ids` (room
 *  for `max_new`) and their number to `*num_out` (fewer than max_new only when opt->eos_id
 *  came), and, when not NULL, the prefill's wall time in ms and the decode steps per second (0
 *  when max_new is 1). A prompt + max_new beyond max_seq, or a prompt longer than max_prompt, is
 *  refused before anything runs. 0 on success, -1 on error. */
int tgc_session_generate(tgc_session *s, const int64_t *prompt, size_t n, int max_new,
                         const tgc_generate_options *opt, int64_t *out_ids, size_t *num_out,
                         double *prefill_ms, double *decode_tokens_per_s, char **err);

/** Starts a sequence: zeroes the caches and runs the prompt (`n` ids, 1..max_prompt) through
 *  the smallest prefill bucket that fits; writes the last prompt position's logits as f32 to
 *  `logits` (`logits_len` >= vocab floats). 0 on success, -1 on error. */
int tgc_session_prefill(tgc_session *s, const int64_t *prompt, size_t n, float *logits,
                        size_t logits_len, char **err);

/** One new token `token` at cache slot `position` (0 <= position < max_seq; the mask covers
 *  slots 0..position): runs the step plan (on CUDA its one graph) and writes its logits as f32
 *  to `logits` (`logits_len` >= vocab floats). 0 on success, -1 on error. */
int tgc_session_step(tgc_session *s, int64_t token, int64_t position, float *logits,
                     size_t logits_len, char **err);

/** Human-readable summary of the package; valid while `s` lives. */
const char *tgc_session_describe(tgc_session *s);

/** Frees a session (NULL is ignored). */
void tgc_session_free(tgc_session *s);

#ifndef TGC_FREE_ERROR_DECLARED
#define TGC_FREE_ERROR_DECLARED
/** Frees an error message returned through `err` (NULL is ignored). */
void tgc_free_error(char *err);
#endif

#ifdef __cplusplus
}
#endif

#endif /* TGC_RUNTIME_TGC_RUNTIME_H */
