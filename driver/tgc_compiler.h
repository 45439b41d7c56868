/* tgc_compiler.h — the C API of the tgc compiler: an ONNX model (a file or bytes in memory) into a
 * package directory that the runtime (tgc_runtime.h, libtgc.so) loads.
 *
 * Linked as libtgc_compiler.so (`pkg-config --libs tgc-compiler`). Failure is reported by
 * return value and, where an `err` pointer is given, a malloc'ed message naming what is wrong
 * (the node, tensor or option), which the caller releases with tgc_free_error. Errors in the
 * input (model, options, files) never exit, abort or throw; a failed compile leaves `out_dir` as
 * it was (the package is written to a staging directory beside it and renamed into place).
 * Compiles may run concurrently from several threads when each writes its own `out_dir`.
 * The library installs LLVM's SIGINT/SIGTERM handler once (it removes a compile's staging
 * directory when the process is interrupted, then lets the signal proceed). */
#ifndef TGC_DRIVER_TGC_COMPILER_H
#define TGC_DRIVER_TGC_COMPILER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A graph input's dims fixed at compile time (`tgc compile --input-shape NAME=1x128`). */
typedef struct tgc_input_shape {
  const char *name;
  int32_t rank;
  const int64_t *dims; /**< rank dims, each >= 1 */
} tgc_input_shape;

/** A graph input whose dims vary between runs (`--input-shape NAME=1..8x1..128`): the compile
 *  writes a bucketed package serving every shape from min_dims to max_dims (docs/design.md,
 *  "Shape buckets"). A dim with min == max is fixed. */
typedef struct tgc_input_range {
  const char *name;
  int32_t rank;
  const int64_t *min_dims; /**< rank dims, each >= 1 */
  const int64_t *max_dims; /**< rank dims, each >= its min */
} tgc_input_range;

/** A varying dim's bucket sizes (`--buckets SYMBOL=1,2,4,8`): ascending, ending at its max. */
typedef struct tgc_bucket_values {
  const char *symbol; /**< the dim's name in the model ("batch"), or "<input>.<axis>" */
  size_t count;
  const int64_t *values;
} tgc_bucket_values;

/** A graph input bound to a value at compile time (`--bind-input NAME=FILE.pb`): the file holds
 *  one ONNX TensorProto. */
typedef struct tgc_bound_input {
  const char *name;
  const char *tensor_path;
} tgc_bound_input;

/** What `tgc compile` can be told. Fill with tgc_compile_options_init, then set fields: a later
 *  version may append fields, and `struct_size` tells the library which ones the caller knows. */
typedef struct tgc_compile_options {
  size_t struct_size;        /**< sizeof(tgc_compile_options), set by tgc_compile_options_init */
  const char *target;        /**< "cpu" (the default, when NULL), "cuda:sm_90", "cuda:sm_80" */
  const char *precision;     /**< "fp32" (the default, when NULL), "fp16", "bf16" */
  const tgc_input_shape *input_shapes;
  size_t num_input_shapes;
  const tgc_bound_input *bound_inputs;
  size_t num_bound_inputs;
  const char *cache_dir;     /**< kernel cache; NULL: $TGC_CACHE_DIR or ~/.cache/tgc; "": none */
  const char *dump_dir;      /**< NULL: none; else per-stage IR, kernels and plan are written here */
  int verbose;               /**< non-zero: the compiler's messages and IR dumps go to stderr */
  /* Since 0.2 (read only when struct_size covers them): shape buckets. */
  const tgc_input_range *input_ranges;
  size_t num_input_ranges;
  const tgc_bucket_values *buckets; /**< NULL: the default bucket sizes */
  size_t num_buckets;
} tgc_compile_options;

/** Sets every field of `*options` to its default (and struct_size). NULL is ignored. */
void tgc_compile_options_init(tgc_compile_options *options);

/** Compiles the ONNX model into a package at `out_dir` (created; an existing package there is
 *  replaced only when the compile succeeds). `model` is a NUL-terminated path when `model_size`
 *  is 0, else `model_size` bytes of a serialized ModelProto, compiled from a private temporary
 *  directory (external data is then not found: pass a path for such models) and recorded as
 *  "model". `options` may be NULL for every default; otherwise it must have been filled by
 *  tgc_compile_options_init (struct_size is checked). 0 on success, -1 on error. */
int tgc_compile(const char *model, size_t model_size, const tgc_compile_options *options,
                const char *out_dir, char **err);

/** The compiler's version, as recorded in the packages it writes (static storage). */
const char *tgc_compiler_version(void);

#ifndef TGC_FREE_ERROR_DECLARED
#define TGC_FREE_ERROR_DECLARED
/** Frees an error message returned through `err` (NULL is ignored). */
void tgc_free_error(char *err);
#endif

#ifdef __cplusplus
}
#endif

#endif /* TGC_DRIVER_TGC_COMPILER_H */
