/* run_package.c — load a tgc package, run it on an ONNX test_data_set folder, check the outputs.
 *
 *   cc run_package.c $(pkg-config --cflags --libs tgc) -lm -o run_package
 *   ./run_package model.tgpkg test_data_set_0 [tolerance]
 *
 * The folder holds input_<i>.pb and output_<i>.pb (one ONNX TensorProto each), as the ONNX model
 * zoo and `tgc run --test-data` use. Inputs are matched to the package's by name (by position when
 * a file has no name); each output's relative L2 error against the expected one is printed and
 * the exit code is 1 when one exceeds the tolerance (default 1e-5), 2 on any other error.
 * Plain C99 and the C API (tgc/tgc_runtime.h) only: the few TensorProto fields a test set uses are
 * read by the small wire-format reader below. */
#include <tgc/tgc_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- A TensorProto file: name, dtype, dims and the element bytes. ---- */

typedef struct {
  char name[256];
  int32_t dtype;
  int32_t rank;
  int64_t dims[16];
  unsigned char *data;
  size_t bytes;
} test_tensor;

static size_t dtype_size(int32_t dtype) {
  switch (dtype) {
  case 1: case 6: case 12: return 4;  /* float, int32, uint32 */
  case 2: case 3: case 9: return 1;   /* uint8, int8, bool */
  case 4: case 5: case 10: case 16: return 2; /* uint16, int16, float16, bfloat16 */
  case 7: case 11: case 13: return 8; /* int64, double, uint64 */
  default: return 0;
  }
}

static int read_varint(const unsigned char **p, const unsigned char *end, uint64_t *v) {
  *v = 0;
  for (int shift = 0; shift < 64 && *p < end; shift += 7) {
    unsigned char b = *(*p)++;
    *v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80))
      return 0;
  }
  return -1;
}

/* Appends one element (of `size` bytes, little-endian `v`) to t->data. */
static int append(test_tensor *t, size_t *cap, uint64_t v, size_t size) {
  if (t->bytes + size > *cap) {
    size_t ncap = *cap ? *cap * 2 : 64;
    unsigned char *n = realloc(t->data, ncap);
    if (!n)
      return -1;
    t->data = n;
    *cap = ncap;
  }
  for (size_t i = 0; i < size; ++i)
    t->data[t->bytes++] = (unsigned char)(v >> (8 * i));
  return 0;
}

/* Parses a TensorProto; 0 on success, else -1 with `why` set. */
static int parse_tensor(const unsigned char *p, const unsigned char *end, test_tensor *t,
                        const char **why) {
  size_t cap = 0;
  memset(t, 0, sizeof *t);
  while (p < end) {
    uint64_t key, v, len;
    if (read_varint(&p, end, &key)) { *why = "truncated field key"; return -1; }
    const unsigned field = (unsigned)(key >> 3), wire = (unsigned)(key & 7);
    if (wire == 0) { /* varint: dims, data_type, or an unpacked repeated value */
      if (read_varint(&p, end, &v)) { *why = "truncated varint"; return -1; }
      if (field == 1) {
        if (t->rank == 16) { *why = "more than 16 dims"; return -1; }
        t->dims[t->rank++] = (int64_t)v;
      } else if (field == 2) {
        t->dtype = (int32_t)v;
      } else if (field == 5 || field == 7 || field == 11) {
        if (append(t, &cap, v, dtype_size(t->dtype))) { *why = "out of memory"; return -1; }
      }
    } else if (wire == 2) { /* length-delimited: name, raw_data, packed repeated fields */
      if (read_varint(&p, end, &len) || len > (uint64_t)(end - p)) { *why = "truncated field"; return -1; }
      const unsigned char *q = p, *qend = p + len;
      p = qend;
      if (field == 8) {
        size_t n = len < sizeof t->name - 1 ? (size_t)len : sizeof t->name - 1;
        memcpy(t->name, q, n);
        t->name[n] = 0;
      } else if (field == 9) { /* raw_data: the elements, little-endian */
        free(t->data);
        t->data = malloc(len ? len : 1);
        if (!t->data) { *why = "out of memory"; return -1; }
        memcpy(t->data, q, len);
        t->bytes = cap = len;
      } else if (field == 1) { /* packed dims */
        while (q < qend) {
          if (read_varint(&q, qend, &v) || t->rank == 16) { *why = "bad dims"; return -1; }
          t->dims[t->rank++] = (int64_t)v;
        }
      } else if (field == 5 || field == 7 || field == 11) { /* packed int32/int64/uint64 data */
        while (q < qend) {
          if (read_varint(&q, qend, &v)) { *why = "bad packed data"; return -1; }
          if (append(t, &cap, v, field == 7 ? 8 : dtype_size(t->dtype))) { *why = "out of memory"; return -1; }
        }
      } else if (field == 4 || field == 10) { /* packed float / double data */
        const size_t size = field == 4 ? 4 : 8;
        for (; q + size <= qend; q += size) {
          uint64_t bits = 0;
          memcpy(&bits, q, size);
          if (append(t, &cap, bits, size)) { *why = "out of memory"; return -1; }
        }
      } else if (field == 13) {
        *why = "external data is not supported by this example";
        return -1;
      }
    } else if (wire == 5 || wire == 1) { /* fixed32 / fixed64: unpacked float / double data */
      const size_t size = wire == 5 ? 4 : 8;
      if ((size_t)(end - p) < size) { *why = "truncated fixed field"; return -1; }
      uint64_t bits = 0;
      memcpy(&bits, p, size);
      p += size;
      if ((field == 4 || field == 10) && append(t, &cap, bits, size)) { *why = "out of memory"; return -1; }
    } else {
      *why = "unsupported wire type";
      return -1;
    }
  }
  if (!dtype_size(t->dtype)) { *why = "unsupported data_type"; return -1; }
  return 0;
}

static int load_tensor(const char *path, test_tensor *t) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return 1; /* absent: the caller decides */
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *buf = malloc(n > 0 ? (size_t)n : 1);
  const char *why = "cannot read";
  int rc = -1;
  if (buf && n >= 0 && fread(buf, 1, (size_t)n, f) == (size_t)n)
    rc = parse_tensor(buf, buf + n, t, &why);
  fclose(f);
  free(buf);
  if (rc) {
    fprintf(stderr, "run_package: %s: %s\n", path, why);
    free(t->data);
    t->data = NULL;
  }
  return rc;
}

/* ---- Comparing an output with the expected one. ---- */

static double half_to_double(uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
  return (h & 0x8000) ? -v : v;
}

static double element(const unsigned char *d, int32_t dtype, size_t i) {
  switch (dtype) {
  case 1: { float v; memcpy(&v, d + 4 * i, 4); return v; }
  case 11: { double v; memcpy(&v, d + 8 * i, 8); return v; }
  case 10: { uint16_t v; memcpy(&v, d + 2 * i, 2); return half_to_double(v); }
  case 16: { uint16_t v; memcpy(&v, d + 2 * i, 2); uint32_t b = (uint32_t)v << 16; float f; memcpy(&f, &b, 4); return f; }
  case 6: { int32_t v; memcpy(&v, d + 4 * i, 4); return v; }
  case 7: { int64_t v; memcpy(&v, d + 8 * i, 8); return (double)v; }
  case 3: return (int8_t)d[i];
  case 4: { uint16_t v; memcpy(&v, d + 2 * i, 2); return v; }
  case 5: { int16_t v; memcpy(&v, d + 2 * i, 2); return v; }
  case 12: { uint32_t v; memcpy(&v, d + 4 * i, 4); return v; }
  case 13: { uint64_t v; memcpy(&v, d + 8 * i, 8); return (double)v; }
  default: return d[i]; /* uint8, bool */
  }
}

static double rel_l2(const unsigned char *got, const test_tensor *want, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    const double g = element(got, want->dtype, i), w = element(want->data, want->dtype, i);
    num += (g - w) * (g - w);
    den += w * w;
  }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s PACKAGE TEST_DATA_DIR [TOLERANCE]\n", argv[0]);
    return 2;
  }
  const double tol = argc > 3 ? atof(argv[3]) : 1e-5;
  char *err = NULL;
  tgc_session *s = tgc_session_load(argv[1], 0, &err);
  if (!s) {
    fprintf(stderr, "run_package: %s\n", err);
    tgc_free_error(err);
    return 2;
  }
  const size_t ni = tgc_session_num_io(s, 0), no = tgc_session_num_io(s, 1);
  tgc_tensor *in = calloc(ni + 1, sizeof *in), *out = calloc(no + 1, sizeof *out);
  test_tensor *files = calloc(ni + 1, sizeof *files);
  int status = 0;
  char path[4096];

  /* Inputs: each input_<k>.pb goes to the package input of its name (or position k). */
  for (size_t k = 0;; ++k) {
    test_tensor t;
    snprintf(path, sizeof path, "%s/input_%zu.pb", argv[2], k);
    int rc = load_tensor(path, &t);
    if (rc > 0)
      break;
    if (rc < 0) { status = 2; goto done; }
    size_t slot = t.name[0] ? ni : k; /* a named tensor goes to the input of that name only */
    for (size_t i = 0; i < ni && t.name[0]; ++i) {
      const char *name;
      tgc_session_io(s, 0, i, &name, NULL, NULL, NULL);
      if (!strcmp(name, t.name))
        slot = i;
    }
    if (slot >= ni || files[slot].data) {
      fprintf(stderr, "run_package: %s ('%s'): the package has no input left for it\n", path,
              t.name);
      free(t.data);
      status = 2;
      goto done;
    }
    files[slot] = t;
  }
  for (size_t i = 0; i < ni; ++i) {
    const char *name;
    tgc_session_io(s, 0, i, &name, NULL, NULL, NULL);
    if (!files[i].data) {
      fprintf(stderr, "run_package: %s has no tensor for input '%s'\n", argv[2], name);
      status = 2;
      goto done;
    }
    in[i] = (tgc_tensor){files[i].dtype, files[i].rank, files[i].dims, files[i].data, files[i].bytes};
  }

  /* Outputs: buffers of the package's shapes. */
  for (size_t i = 0; i < no; ++i) {
    int32_t dtype, rank;
    const int64_t *dims;
    tgc_session_io(s, 1, i, NULL, &dtype, &rank, &dims);
    size_t n = 1;
    for (int32_t d = 0; d < rank; ++d)
      n *= (size_t)dims[d];
    out[i] = (tgc_tensor){dtype, rank, dims, malloc(n * dtype_size(dtype) + 1), n * dtype_size(dtype)};
  }
  if (tgc_session_run(s, in, ni, out, no, &err)) {
    fprintf(stderr, "run_package: %s\n", err);
    tgc_free_error(err);
    status = 2;
    goto done;
  }
  for (size_t i = 0; i < no; ++i) {
    const char *name;
    tgc_session_io(s, 1, i, &name, NULL, NULL, NULL);
    test_tensor want;
    snprintf(path, sizeof path, "%s/output_%zu.pb", argv[2], i);
    if (load_tensor(path, &want)) {
      fprintf(stderr, "run_package: no expected output %s\n", path);
      status = 2;
      continue;
    }
    const size_t n = out[i].bytes / (dtype_size(out[i].dtype) ? dtype_size(out[i].dtype) : 1);
    if (want.dtype != out[i].dtype || want.bytes != out[i].bytes) {
      printf("%s: expected %zu bytes of dtype %d, got %zu of dtype %d: FAIL\n", name, want.bytes,
             (int)want.dtype, out[i].bytes, (int)out[i].dtype);
      status = status ? status : 1;
    } else {
      const double e = rel_l2(out[i].data, &want, n);
      printf("%s: rel_l2 %.3g %s\n", name, e, e <= tol ? "ok" : "FAIL");
      if (!(e <= tol))
        status = status ? status : 1;
    }
    free(want.data);
  }
done:
  for (size_t i = 0; i < ni; ++i)
    free(files[i].data);
  for (size_t i = 0; i < no; ++i)
    free(out[i].data);
  free(files);
  free(in);
  free(out);
  tgc_session_free(s);
  return status;
}
