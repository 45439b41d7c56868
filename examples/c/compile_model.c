/* compile_model.c — compile an ONNX model into a tgc package with the C compile API.
 *
 *   cc compile_model.c $(pkg-config --cflags --libs tgc-compiler) -o compile_model
 *   ./compile_model model.onnx model.tgpkg [--target cuda:sm_90] [--precision fp16] \
 *       [--input-shape input_ids=1x128]... [--from-memory yes]
 *
 * --from-memory yes reads the model into memory and hands tgc_compile its bytes.
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
  for (char *p = eq + 1;; p = p + 1) { /* dims separated by 'x', none empty */
    char *end;
    long long d = strtoll(p, &end, 10);
    if (end == p || shape->rank == 16 || (*end && *end != 'x'))
      return -1;
    dims[shape->rank++] = d;
    if (!*end)
      return 0;
    p = end;
  }
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
  const char *from_memory = "no";
  tgc_input_shape shapes[16];
  int64_t dims[16][16];
  size_t num_shapes = 0;
  if ((argc - 3) % 2) {
    fprintf(stderr, "compile_model: option '%s' needs a value\n", argv[argc - 1]);
    return 1;
  }
  for (int i = 3; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--target"))
      options.target = argv[i + 1];
    else if (!strcmp(argv[i], "--precision"))
      options.precision = argv[i + 1];
    else if (!strcmp(argv[i], "--from-memory"))
      from_memory = argv[i + 1];
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
  char *bytes = NULL;
  size_t size = 0;
  if (!strcmp(from_memory, "yes")) {
    FILE *f = fopen(argv[1], "rb");
    long n = -1;
    if (f && !fseek(f, 0, SEEK_END) && (n = ftell(f)) > 0 && !fseek(f, 0, SEEK_SET) &&
        (bytes = malloc((size_t)n)) && fread(bytes, 1, (size_t)n, f) == (size_t)n)
      size = (size_t)n;
    if (f)
      fclose(f);
    if (!size) {
      fprintf(stderr, "compile_model: cannot read %s\n", argv[1]);
      free(bytes);
      return 1;
    }
  }
  const int rc = tgc_compile(size ? bytes : argv[1], size, &options, argv[2], &err);
  free(bytes);
  if (rc) {
    fprintf(stderr, "compile_model: %s\n", err);
    tgc_free_error(err);
    return 1;
  }
  printf("wrote %s (tgc %s)\n", argv[2], tgc_compiler_version());
  return 0;
}
