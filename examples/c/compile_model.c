/* compile_model.c — compile an ONNX model into a tgc package with the C compile API.
 *
 *   cc compile_model.c $(pkg-config --cflags --libs tgc-compiler) -o compile_model
 *   ./compile_model model.onnx model.tgpkg [--target cuda:sm_90] [--precision fp16] \
 *       [--input-shape input_ids=1x128]...
 *
 * Exit code 0 when the package was written, 1 with the compiler's message otherwise. */
#include <tgc/tgc_compiler.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "name=1x128" into a tgc_input_shape (dims stored in `dims`); 0 on success. */
static int parse_shape(char *spec, tgc_input_shape *shape, int64_t *dims) {
  char *eq = strchr(spec, '=');
  if (!eq || eq == spec)
    return -1;
  *eq = 0;
  shape->name = spec;
  shape->rank = 0;
  shape->dims = dims;
  for (char *p = eq + 1; *p; ++p) {
    char *end;
    long long d = strtoll(p, &end, 10);
    if (end == p || shape->rank == 16 || (*end && *end != 'x'))
      return -1;
    dims[shape->rank++] = d;
    p = *end ? end : end - 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr,
            "usage: %s MODEL.onnx OUT_PACKAGE [--target T] [--precision P] [--input-shape N=AxB]...\n",
            argv[0]);
    return 1;
  }
  tgc_compile_options options;
  tgc_compile_options_init(&options);
  tgc_input_shape shapes[16];
  int64_t dims[16][16];
  size_t num_shapes = 0;
  for (int i = 3; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--target"))
      options.target = argv[i + 1];
    else if (!strcmp(argv[i], "--precision"))
      options.precision = argv[i + 1];
    else if (!strcmp(argv[i], "--input-shape") && num_shapes < 16 &&
             !parse_shape(argv[i + 1], &shapes[num_shapes], dims[num_shapes]))
      ++num_shapes;
    else {
      fprintf(stderr, "compile_model: cannot use '%s %s'\n", argv[i], argv[i + 1]);
      return 1;
    }
  }
  options.input_shapes = shapes;
  options.num_input_shapes = num_shapes;
  char *err = NULL;
  if (tgc_compile(argv[1], 0, &options, argv[2], &err)) {
    fprintf(stderr, "compile_model: %s\n", err);
    tgc_free_error(err);
    return 1;
  }
  printf("wrote %s (tgc %s)\n", argv[2], tgc_compiler_version());
  return 0;
}
