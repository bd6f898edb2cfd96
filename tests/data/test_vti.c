/* VTK XML image data (.vti) written here in every encoding: ascii, inline base64 (VTK's
 * separate header and data blocks, and one joint block), raw and base64 appended data, zlib
 * compression (LZ4 and LZMA when built with them), UInt32 and UInt64 headers, both byte
 * orders, every sample type; each volume checked value for value against the values it was
 * written from, plus the bad cases, through the library and `inkray info`. */
#include <math.h>

#include "tests/data/data_test_util.h"
#ifdef INKRAY_HAVE_LZ4
#include <lz4.h>
#endif
#ifdef INKRAY_HAVE_LZMA
#include <lzma.h>
#endif

enum { NX = 5, NY = 4, NZ = 3, NV = NX * NY * NZ };

typedef struct vti_type {
  const char *name;
  int size;
  bool is_float, is_signed;
  ir_voxel_type expect; /* what the loader must make of the values below */
} vti_type;

/* Values chosen so that each type lands on a known voxel type: wide integers whose range fits
 * a narrower type are narrowed, the others become float32 (exact below 2^24). */
static double value_for(const vti_type *t, int i) {
  int base = (i * 37) % 61;
  if (strcmp(t->name, "Int8") == 0) return base - 30;
  if (strcmp(t->name, "UInt8") == 0) return base * 4;
  if (strcmp(t->name, "Int16") == 0) return (base - 30) * 1000;
  if (strcmp(t->name, "UInt16") == 0) return base * 1000;
  if (strcmp(t->name, "Int32") == 0) return (base - 30) * 100000; /* beyond int16: float32 */
  if (strcmp(t->name, "UInt32") == 0) return base * 1000;         /* fits uint16 */
  if (strcmp(t->name, "Int64") == 0) return base - 30;            /* fits int16 */
  if (strcmp(t->name, "UInt64") == 0) return base;                /* fits uint8 */
  if (strcmp(t->name, "Float32") == 0) return (base - 30) * 0.25;
  return (base - 30) * 0.1; /* Float64: rounds to float32 */
}

static const vti_type types[] = {
    {"Int8", 1, false, true, IR_VOXEL_INT16},      {"UInt8", 1, false, false, IR_VOXEL_UINT8},
    {"Int16", 2, false, true, IR_VOXEL_INT16},     {"UInt16", 2, false, false, IR_VOXEL_UINT16},
    {"Int32", 4, false, true, IR_VOXEL_FLOAT32},   {"UInt32", 4, false, false, IR_VOXEL_UINT16},
    {"Int64", 8, false, true, IR_VOXEL_INT16},     {"UInt64", 8, false, false, IR_VOXEL_UINT8},
    {"Float32", 4, true, true, IR_VOXEL_FLOAT32},  {"Float64", 8, true, true, IR_VOXEL_FLOAT32},
};

static void put_uint(unsigned char *p, uint64_t v, int size, bool big) {
  for (int k = 0; k < size; k++) p[big ? size - 1 - k : k] = (unsigned char)(v >> (8 * k));
}

static void put_sample(unsigned char *p, const vti_type *t, double v, bool big) {
  uint64_t bits = 0;
  if (t->is_float && t->size == 4) {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    bits = u;
  } else if (t->is_float) {
    memcpy(&bits, &v, 8);
  } else {
    bits = (uint64_t)(int64_t)v;
  }
  put_uint(p, bits, t->size, big);
}

/* ---- A growable byte buffer ------------------------------------------------------------- */
typedef struct buf {
  unsigned char *p;
  size_t n, cap;
} buf;

static void buf_add(buf *b, const void *data, size_t n) {
  if (n == 0 || n > ((size_t)1 << 30)) return; /* the tests write small files */
  if (b->n + n + 1 > b->cap) {
    b->cap = (b->n + n + 1) * 2;
    b->p = realloc(b->p, b->cap);
  }
  memcpy(b->p + b->n, data, n);
  b->n += n;
  b->p[b->n] = 0;
}

static void buf_text(buf *b, const char *s) { buf_add(b, s, strlen(s)); }

static void buf_base64(buf *b, const unsigned char *data, size_t n) {
  static const char table[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (size_t i = 0; i < n; i += 3) {
    unsigned v = (unsigned)data[i] << 16 | (i + 1 < n ? (unsigned)data[i + 1] << 8 : 0) |
                 (i + 2 < n ? data[i + 2] : 0);
    char q[4] = {table[v >> 18 & 63], table[v >> 12 & 63], i + 1 < n ? table[v >> 6 & 63] : '=',
                 i + 2 < n ? table[v & 63] : '='};
    buf_add(b, q, 4);
  }
}

typedef enum { ENC_ASCII, ENC_BINARY, ENC_BINARY_JOINT, ENC_APPENDED_RAW, ENC_APPENDED_B64 } encoding;
typedef enum { COMP_NONE, COMP_ZLIB, COMP_LZ4, COMP_LZMA } compressor;

static const char *compressor_attr(compressor c) {
  switch (c) {
  case COMP_ZLIB: return " compressor=\"vtkZLibDataCompressor\"";
  case COMP_LZ4: return " compressor=\"vtkLZ4DataCompressor\"";
  case COMP_LZMA: return " compressor=\"vtkLZMADataCompressor\"";
  default: return "";
  }
}

static unsigned char *compress_block(compressor c, const unsigned char *in, size_t n, size_t *out_n) {
  if (c == COMP_ZLIB) return deflate_bytes(in, n, 15, out_n);
#ifdef INKRAY_HAVE_LZ4
  if (c == COMP_LZ4) {
    unsigned char *out = malloc((size_t)LZ4_compressBound((int)n));
    *out_n = (size_t)LZ4_compress_default((const char *)in, (char *)out, (int)n, LZ4_compressBound((int)n));
    return out;
  }
#endif
#ifdef INKRAY_HAVE_LZMA
  if (c == COMP_LZMA) {
    size_t cap = lzma_stream_buffer_bound(n);
    unsigned char *out = malloc(cap);
    size_t pos = 0;
    if (lzma_easy_buffer_encode(6, LZMA_CHECK_CRC64, NULL, in, n, out, &pos, cap) != LZMA_OK) {
      free(out);
      return NULL;
    }
    *out_n = pos;
    return out;
  }
#endif
  (void)in;
  (void)n;
  *out_n = 0;
  return NULL;
}

/* Header and data blocks of one binary array as VTK lays them out. */
static void binary_blocks(const unsigned char *data, size_t n, int hs, bool big, compressor c,
                          buf *header, buf *body) {
  unsigned char word[8];
  if (c == COMP_NONE) {
    put_uint(word, n, hs, big);
    buf_add(header, word, (size_t)hs);
    buf_add(body, data, n);
    return;
  }
  /* Small blocks so that there are several, the last one partial. */
  size_t block = 64, blocks = (n + block - 1) / block, last = n - (blocks - 1) * block;
  put_uint(word, blocks, hs, big);
  buf_add(header, word, (size_t)hs);
  put_uint(word, block, hs, big);
  buf_add(header, word, (size_t)hs);
  put_uint(word, last == block ? 0 : last, hs, big);
  buf_add(header, word, (size_t)hs);
  for (size_t b = 0; b < blocks; b++) {
    size_t size = b + 1 == blocks ? last : block, out_n = 0;
    unsigned char *z = compress_block(c, data + b * block, size, &out_n);
    CHECK(z != NULL);
    put_uint(word, out_n, hs, big);
    buf_add(header, word, (size_t)hs);
    if (z) buf_add(body, z, out_n);
    free(z);
  }
}

typedef struct vti_spec {
  const vti_type *type;
  encoding enc;
  compressor comp;
  int header_size;
  bool big;
  double spacing[3], origin[3];
  const char *extent;       /* default "0 4 0 3 0 2" */
  const char *extra_arrays; /* more DataArray elements in PointData, before ours */
  const char *scalars;      /* PointData Scalars=..., default "density" */
} vti_spec;

/* Writes the file and returns its path. */
static const char *write_vti(const char *name, const vti_spec *s) {
  const vti_type *t = s->type;
  unsigned char *data = malloc(NV * (size_t)t->size);
  for (int i = 0; i < NV; i++) put_sample(data + (size_t)i * t->size, t, value_for(t, i), s->big);
  buf header = {0}, body = {0}, f = {0};
  bool appended = s->enc == ENC_APPENDED_RAW || s->enc == ENC_APPENDED_B64;
  char line[1024];
  snprintf(line, sizeof line,
           "<?xml version=\"1.0\"?>\n<VTKFile type=\"ImageData\" version=\"1.0\" "
           "byte_order=\"%s\" header_type=\"%s\"%s>\n",
           s->big ? "BigEndian" : "LittleEndian", s->header_size == 8 ? "UInt64" : "UInt32",
           compressor_attr(s->comp));
  buf_text(&f, line);
  const char *extent = s->extent ? s->extent : "0 4 0 3 0 2";
  snprintf(line, sizeof line,
           "  <ImageData WholeExtent=\"%s\" Origin=\"%g %g %g\" Spacing=\"%g %g %g\" "
           "Direction=\"1 0 0 0 1 0 0 0 1\">\n    <Piece Extent=\"%s\">\n"
           "      <PointData Scalars=\"%s\">\n%s",
           extent, s->origin[0], s->origin[1], s->origin[2], s->spacing[0], s->spacing[1],
           s->spacing[2], extent, s->scalars ? s->scalars : "density",
           s->extra_arrays ? s->extra_arrays : "");
  buf_text(&f, line);
  static const char *formats[] = {"ascii", "binary", "binary", "appended", "appended"};
  snprintf(line, sizeof line,
           "        <DataArray type=\"%s\" Name=\"density\" NumberOfComponents=\"1\" "
           "format=\"%s\"%s>",
           t->name, formats[s->enc], appended ? " offset=\"0\"" : "");
  buf_text(&f, line);
  if (s->enc == ENC_ASCII) {
    for (int i = 0; i < NV; i++) {
      snprintf(line, sizeof line, "%s%.17g", i % 10 ? " " : "\n          ", value_for(t, i));
      buf_text(&f, line);
    }
    buf_text(&f, "\n        ");
  } else {
    binary_blocks(data, NV * (size_t)t->size, s->header_size, s->big, s->comp, &header, &body);
  }
  if (s->enc == ENC_BINARY) {
    buf_text(&f, "\n          ");
    buf_base64(&f, header.p, header.n);
    buf_base64(&f, body.p, body.n);
    buf_text(&f, "\n        ");
  } else if (s->enc == ENC_BINARY_JOINT) {
    buf joint = {0};
    buf_add(&joint, header.p, header.n);
    buf_add(&joint, body.p, body.n);
    buf_base64(&f, joint.p, joint.n);
    free(joint.p);
  }
  buf_text(&f, appended ? "" : "</DataArray>\n");
  if (appended) buf_text(&f, "</DataArray>\n");
  buf_text(&f, "      </PointData>\n      <CellData>\n      </CellData>\n    </Piece>\n  </ImageData>\n");
  if (appended) {
    buf_text(&f, s->enc == ENC_APPENDED_RAW ? "  <AppendedData encoding=\"raw\">\n   _"
                                            : "  <AppendedData encoding=\"base64\">\n   _");
    if (s->enc == ENC_APPENDED_RAW) {
      buf_add(&f, header.p, header.n);
      buf_add(&f, body.p, body.n);
    } else {
      buf_base64(&f, header.p, header.n);
      buf_base64(&f, body.p, body.n);
    }
    buf_text(&f, "\n  </AppendedData>\n");
  }
  buf_text(&f, "</VTKFile>\n");
  const char *path = scratch_path(name);
  write_bytes(path, f.p, f.n);
  free(f.p);
  free(header.p);
  free(body.p);
  free(data);
  return path;
}

#ifdef INKRAY_HAVE_EXPAT
static void check_values(const ir_volume *v, const vti_type *t, const char *what) {
  CHECK_EQ_INT(v->dims[0], NX);
  CHECK_EQ_INT(v->dims[1], NY);
  CHECK_EQ_INT(v->dims[2], NZ);
  CHECK_MSG(v->type == t->expect, "%s: type %s, expected %s", what, ir_voxel_type_name(v->type),
            ir_voxel_type_name(t->expect));
  if (ir_volume_voxel_count(v) != NV) return;
  int bad = 0;
  for (int i = 0; i < NV; i++) {
    double want = t->expect == IR_VOXEL_FLOAT32 ? (double)(float)value_for(t, i) : value_for(t, i);
    double got = ir_volume_value_at(v, (size_t)(i % NX), (size_t)(i / NX % NY), (size_t)(i / (NX * NY)));
    if (got != want && bad++ < 3) CHECK_MSG(got == want, "%s: voxel %d is %.17g, expected %.17g", what, i, got, want);
  }
  CHECK_EQ_INT(bad, 0);
}

static const char *encoding_name(encoding e) {
  static const char *names[] = {"ascii", "binary", "binary-joint", "appended-raw", "appended-base64"};
  return names[e];
}

static void load_and_check(const vti_spec *s, const char *what) {
  const char *path = write_vti(fmt_path("%s.vti", what), s);
  ir_volume v;
  char err[IR_ERR_LEN];
  ir_status status = load(path, &v, err);
  CHECK_MSG(status == IR_OK, "%s: %s", what, err);
  if (status != IR_OK) return;
  check_values(&v, s->type, what);
  ir_volume_free(&v);
}

static void test_every_type_in_every_encoding(void) {
  for (size_t k = 0; k < sizeof types / sizeof types[0]; k++)
    for (int e = ENC_ASCII; e <= ENC_APPENDED_B64; e++) {
      vti_spec s = {.type = &types[k], .enc = (encoding)e, .header_size = 4};
      load_and_check(&s, fmt_path("%s_%s", types[k].name, encoding_name((encoding)e)));
    }
}

static void test_uint64_headers_and_big_endian(void) {
  for (size_t k = 0; k < sizeof types / sizeof types[0]; k++)
    for (int e = ENC_BINARY; e <= ENC_APPENDED_B64; e++)
      for (int big = 0; big < 2; big++) {
        vti_spec s = {.type = &types[k], .enc = (encoding)e, .header_size = 8, .big = big};
        load_and_check(&s, fmt_path("%s_%s_u64_%s", types[k].name, encoding_name((encoding)e),
                                    big ? "be" : "le"));
      }
}

static void test_compressed_blocks(void) {
  compressor comps[] = {COMP_ZLIB,
#ifdef INKRAY_HAVE_LZ4
                        COMP_LZ4,
#endif
#ifdef INKRAY_HAVE_LZMA
                        COMP_LZMA,
#endif
  };
  for (size_t c = 0; c < sizeof comps / sizeof comps[0]; c++)
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++)
      for (int e = ENC_BINARY; e <= ENC_APPENDED_B64; e++)
        for (int hs = 4; hs <= 8; hs += 4) {
          vti_spec s = {.type = &types[k], .enc = (encoding)e, .comp = comps[c], .header_size = hs,
                        .big = k % 2 == 1};
          load_and_check(&s, fmt_path("%s_%s_c%d_h%d", types[k].name, encoding_name((encoding)e),
                                      (int)comps[c], hs));
        }
}

static void test_spacing_origin_and_description(void) {
  vti_spec s = {.type = &types[3], .enc = ENC_APPENDED_RAW, .header_size = 8,
                .spacing = {0.5, 0.25, 2}, .origin = {-10, 5, 1.5}};
  const char *path = write_vti("spaced.vti", &s);
  ir_volume v;
  char err[IR_ERR_LEN];
  CHECK_MSG(load(path, &v, err) == IR_OK, "%s", err);
  CHECK_NEAR(v.spacing[0], 0.5, 0);
  CHECK_NEAR(v.spacing[1], 0.25, 0);
  CHECK_NEAR(v.spacing[2], 2, 0);
  CHECK_NEAR(v.world_origin[0], -10, 0);
  CHECK_NEAR(v.world_origin[1], 5, 0);
  CHECK_NEAR(v.world_origin[2], 1.5, 0);
  CHECK_STR_CONTAINS(v.description, "density");
  ir_volume_free(&v);
  /* --spacing overrides the file. */
  ir_volume_desc opt = {.spacing_given = true, .spacing = {3, 3, 3}};
  CHECK_MSG(load_with(path, &opt, &v, err) == IR_OK, "%s", err);
  CHECK_NEAR(v.spacing[1], 3, 0);
  ir_volume_free(&v);
  /* A WholeExtent not starting at 0. */
  vti_spec shifted = {.type = &types[1], .enc = ENC_ASCII, .header_size = 4,
                      .extent = "10 14 -2 1 5 7"};
  path = write_vti("shifted.vti", &shifted);
  CHECK_MSG(load(path, &v, err) == IR_OK, "%s", err);
  check_values(&v, &types[1], "shifted extent");
  ir_volume_free(&v);
}

/* A sub-box and a header-only load, as distributed runs ask for them. */
static void test_sub_box_and_header_only(void) {
  vti_spec s = {.type = &types[5], .enc = ENC_APPENDED_RAW, .header_size = 8, .comp = COMP_ZLIB};
  const char *path = write_vti("box.vti", &s);
  ir_volume v;
  char err[IR_ERR_LEN];
  ir_volume_desc opt = {.region_offset = {1, 2, 1}, .region_size = {3, 2, 2}};
  CHECK_MSG(load_with(path, &opt, &v, err) == IR_OK, "%s", err);
  CHECK_EQ_INT(v.dims[0], 3);
  CHECK_EQ_INT(v.dims[1], 2);
  CHECK_EQ_INT(v.dims[2], 2);
  CHECK_EQ_INT(v.full_dims[0], NX);
  CHECK_EQ_INT(v.full_dims[2], NZ);
  CHECK_EQ_INT(v.origin[1], 2);
  for (size_t z = 0; z < 2 && v.dims[2] == 2; z++)
    for (size_t y = 0; y < 2; y++)
      for (size_t x = 0; x < 3; x++) {
        int i = (int)((x + 1) + NX * ((y + 2) + NY * (z + 1)));
        CHECK_NEAR(ir_volume_value_at(&v, x, y, z), value_for(&types[5], i), 0);
      }
  ir_volume_free(&v);
  opt.region_size[0] = NX;
  CHECK_EQ_INT(load_with(path, &opt, &v, err), IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "reaches outside");
  ir_volume_desc head = {.header_only = true};
  CHECK_MSG(load_with(path, &head, &v, err) == IR_OK, "%s", err);
  CHECK_EQ_INT(v.dims[0], NX);
  CHECK_EQ_INT(v.dims[2], NZ);
  CHECK(v.voxels == NULL);
  CHECK_EQ_INT(v.bytes, 0);
  ir_volume_free(&v);
}

static const char other_array[] =
    "        <DataArray type=\"Float32\" Name=\"other\" format=\"ascii\">"
    "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 "
    "31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60"
    "</DataArray>\n";

static void test_active_scalars_and_array_option(void) {
  ir_volume v;
  char err[IR_ERR_LEN];
  /* The active scalars are "density", written after "other". */
  vti_spec s = {.type = &types[1], .enc = ENC_BINARY, .header_size = 4, .extra_arrays = other_array};
  const char *path = write_vti("two_arrays.vti", &s);
  CHECK_MSG(load(path, &v, err) == IR_OK, "%s", err);
  check_values(&v, &types[1], "active scalars");
  ir_volume_free(&v);
  /* --array picks the other one. */
  ir_volume_desc opt = {.array = "other"};
  CHECK_MSG(load_with(path, &opt, &v, err) == IR_OK, "%s", err);
  CHECK_EQ_INT(v.type, IR_VOXEL_FLOAT32);
  CHECK_NEAR(ir_volume_value_at(&v, 0, 0, 0), 1, 0);
  CHECK_NEAR(ir_volume_value_at(&v, 4, 3, 2), 60, 0);
  ir_volume_free(&v);
  opt.array = "nothere";
  CHECK_EQ_INT(load_with(path, &opt, &v, err), IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "no point data array 'nothere' (point data arrays: other, density)");
  /* No Scalars attribute and two arrays: the message says to pick one. */
  vti_spec none = s;
  none.scalars = "";
  path = write_vti("no_active.vti", &none);
  CHECK_EQ_INT(load(path, &v, err), IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "--array NAME");
  CHECK_INFO_REFUSES(fmt_path("'%s'", path), "--array NAME");
  /* Through the program: --array works in info. */
  info_run r = run_inkray_info(fmt_path("--array other '%s'", scratch_path("two_arrays.vti")));
  CHECK_MSG(r.status == 0, "%s", r.err);
  CHECK_STR_CONTAINS(r.out, "range       1 .. 60");
  CHECK_STR_CONTAINS(r.out, "description point data 'other' (Float32)");
  info_run_free(&r);
  /* --array is refused for other formats. */
  CHECK_INFO_REFUSES("--array x builtin:sphere:8", "--array");
}

/* The file as written, then edited (every occurrence of `from`): each bad case is one line
 * and exit 2. */
static const char *write_edited(const char *name, const char *from, const char *to, const vti_spec *s) {
  const char *path = write_vti(name, s);
  size_t n = 0;
  unsigned char *text = check_read_file(path, &n);
  buf b = {0};
  size_t at = 0, from_len = strlen(from), hits = 0;
  while (at < n) {
    if (at + from_len <= n && memcmp(text + at, from, from_len) == 0) {
      buf_text(&b, to);
      at += from_len;
      hits++;
    } else {
      buf_add(&b, text + at, 1);
      at++;
    }
  }
  CHECK_MSG(hits > 0, "'%s' not in the file", from);
  write_bytes(path, b.p, b.n);
  free(b.p);
  free(text);
  return path;
}

static void expect_refused(const char *path, const char *reason) {
  ir_volume v;
  char err[IR_ERR_LEN];
  ir_status status = load(path, &v, err);
  CHECK_MSG(status == IR_ERR_INPUT, "%s: status %d, expected a refusal with '%s'", path,
            (int)status, reason);
  CHECK_STR_CONTAINS(err, reason);
  CHECK_STR_CONTAINS(err, path);
  CHECK(strchr(err, '\n') == NULL);
  CHECK(v.voxels == NULL);
  CHECK_INFO_REFUSES(fmt_path("'%s'", path), reason);
}

/* A character that is not base64 in the middle of a binary DataArray: refused with the array
 * and the place, never decoded as far as it goes. */
static void test_bad_base64_in_the_middle_of_an_array(void) {
  vti_spec b64 = {.type = &types[3], .enc = ENC_BINARY, .header_size = 4};
  const char *path = write_vti("bad_b64_middle.vti", &b64);
  size_t n = 0;
  unsigned char *bytes = check_read_file(path, &n);
  char *data = strstr((char *)bytes, "format=\"binary\"");
  CHECK(data != NULL);
  if (!data) return;
  data = strchr(data, '>') + 1; /* the array's text, counted from here, spaces and all */
  char *end = strstr(data, "</DataArray>");
  size_t middle = (size_t)(end - data) / 2;
  while (data[middle] == ' ' || data[middle] == '\n') middle++;
  data[middle] = '*';
  write_bytes(path, bytes, n);
  free(bytes);
  expect_refused(path, fmt_path("array 'density': bad base64 data at character %zu", middle));
}

static void test_bad_files_are_one_line_and_exit_2(void) {
  vti_spec raw = {.type = &types[3], .enc = ENC_APPENDED_RAW, .header_size = 4};
  vti_spec zip = {.type = &types[3], .enc = ENC_APPENDED_RAW, .header_size = 8, .comp = COMP_ZLIB};
  vti_spec asc = {.type = &types[1], .enc = ENC_ASCII, .header_size = 4};
  vti_spec b64 = {.type = &types[3], .enc = ENC_BINARY, .header_size = 4};
  /* Truncated: the appended data cut short. */
  const char *path = write_vti("truncated.vti", &raw);
  size_t n = 0;
  unsigned char *bytes = check_read_file(path, &n);
  char *underscore = strstr((char *)bytes, "\n   _") + 4;
  write_bytes(path, bytes, (size_t)((unsigned char *)underscore - bytes) + 1 + 4 + 50);
  free(bytes);
  expect_refused(path, "needs 120 bytes");
  /* Truncated compressed data. */
  path = write_vti("truncated_zlib.vti", &zip);
  bytes = check_read_file(path, &n);
  write_bytes(path, bytes, n - 60);
  free(bytes);
  expect_refused(path, "array 'density'");
  /* Wrong sizes: an extent larger than the data, in each encoding. */
  expect_refused(write_edited("short_ascii.vti", "0 4 0 3 0 2", "0 4 0 3 0 3", &asc), "values");
  expect_refused(write_edited("short_raw.vti", "0 4 0 3 0 2", "0 4 0 3 0 3", &raw), "needs 160 bytes");
  expect_refused(write_edited("long_raw.vti", "0 4 0 3 0 2", "0 4 0 3 0 1", &raw),
                 "holds 120 bytes, expected 80");
  expect_refused(write_edited("short_zlib.vti", "0 4 0 3 0 2", "0 4 0 3 0 3", &zip),
                 "compression header");
  expect_refused(write_edited("short_b64.vti", "0 4 0 3 0 2", "0 4 0 3 0 3", &b64), "needs 160 bytes");
  expect_refused(write_edited("long_b64.vti", "0 4 0 3 0 2", "0 4 0 3 0 1", &b64),
                 "holds 120 bytes, expected 80");
  /* More ascii values than the extent holds. */
  expect_refused(write_edited("long_ascii.vti", "0 4 0 3 0 2", "0 4 0 3 0 1", &asc),
                 "more than the 40 values");
  /* Huge claimed dims fail before anything is allocated (the message is about sizes, not
   * memory). */
  expect_refused(write_edited("huge.vti", "0 4 0 3 0 2", "0 99999 0 99999 0 999", &raw),
                 "more than the");
  expect_refused(write_edited("huge_zlib.vti", "0 4 0 3 0 2", "0 99999 0 99999 0 999", &zip),
                 "more than the");
  expect_refused(write_edited("overflow.vti", "0 4 0 3 0 2",
                              "0 9223372036854775806 0 9223372036854775806 0 3", &raw),
                 "overflows");
  /* Unsupported: types, components, dataset types, pieces, compressors, encodings. */
  expect_refused(write_edited("bit.vti", "type=\"UInt16\"", "type=\"Bit\"", &raw),
                 "type Bit is not supported");
  expect_refused(write_edited("vector.vti", "NumberOfComponents=\"1\"", "NumberOfComponents=\"3\"", &raw),
                 "has 3 components");
  expect_refused(write_edited("poly.vti", "type=\"ImageData\"", "type=\"PolyData\"", &raw),
                 "only ImageData");
  expect_refused(write_edited("piece.vti", "<Piece Extent=\"0 4 0 3 0 2\"", "<Piece Extent=\"0 4 0 3 0 1\"", &raw),
                 "single piece");
  expect_refused(write_edited("bzip.vti", "compressor=\"vtkZLibDataCompressor\"",
                              "compressor=\"vtkBZip2Compressor\"", &zip),
                 "compressor 'vtkBZip2Compressor' is not supported");
  expect_refused(write_edited("hex.vti", "format=\"ascii\"", "format=\"hex\"", &asc), "format 'hex'");
  expect_refused(write_edited("notxml.vti", "<ImageData", "<ImageData <", &raw), "not valid XML");
  expect_refused(write_edited("nonumber.vti", "\n          ", "\n          x", &asc), "not a number");
  expect_refused(write_edited("badb64.vti", "\n          ", "\n          !!!!", &b64), "base64");
  /* Cell data only. */
  write_text(scratch_path("cells.vti"),
             "<VTKFile type=\"ImageData\"><ImageData WholeExtent=\"0 1 0 0 0 0\"><Piece Extent=\"0 1 0 0 0 0\">"
             "<CellData><DataArray type=\"UInt8\" Name=\"a\" format=\"ascii\">1 2</DataArray>"
             "</CellData></Piece></ImageData></VTKFile>");
  expect_refused(scratch_path("cells.vti"), "no point data arrays (cell data are not read)");
  /* Values beyond float32's exact integers have no voxel type. */
  write_text(scratch_path("big_uint32.vti"),
             "<VTKFile type=\"ImageData\"><ImageData WholeExtent=\"0 1 0 0 0 0\"><Piece Extent=\"0 1 0 0 0 0\">"
             "<PointData><DataArray type=\"UInt32\" Name=\"a\" format=\"ascii\">1 4000000000</DataArray>"
             "</PointData></Piece></ImageData></VTKFile>");
  expect_refused(scratch_path("big_uint32.vti"), "do not fit any voxel type exactly");
  /* A name holding a line break (an XML character reference) still gives one line. */
  write_text(scratch_path("newline_name.vti"),
             "<VTKFile type=\"ImageData\"><ImageData WholeExtent=\"0 1 0 0 0 0\"><Piece Extent=\"0 1 0 0 0 0\">"
             "<PointData><DataArray type=\"UInt8\" Name=\"x&#10;y\" format=\"ascii\">1 2</DataArray>"
             "<DataArray type=\"UInt8\" Name=\"z\" format=\"ascii\">1 2</DataArray>"
             "</PointData></Piece></ImageData></VTKFile>");
  expect_refused(scratch_path("newline_name.vti"), "(x y, z)");
  /* Missing file. */
  expect_refused(scratch_path("nothere.vti"), "no such file");
}

static void test_info_prints_vti(void) {
  vti_spec s = {.type = &types[9], .enc = ENC_APPENDED_B64, .header_size = 8, .comp = COMP_ZLIB,
                .spacing = {0.5, 0.5, 2}, .origin = {1, 2, 3}};
  const char *path = write_vti("info.vti", &s);
  info_run r = run_inkray_info(fmt_path("'%s'", path));
  CHECK_MSG(r.status == 0, "%s", r.err);
  CHECK_STR_CONTAINS(r.out, "dims        5 x 4 x 3");
  CHECK_STR_CONTAINS(r.out, "type        float32");
  CHECK_STR_CONTAINS(r.out, "spacing     0.5 x 0.5 x 2");
  CHECK_STR_CONTAINS(r.out, "origin      1, 2, 3");
  CHECK_STR_CONTAINS(r.out, "range       -3 .. 3");
  /* Float64 becomes float32, and the program says so. */
  CHECK_STR_CONTAINS(r.err, "Float64 values are kept as float32");
  info_run_free(&r);
  CHECK_HEADLESS_RENDERS(fmt_path("'%s'", path));
}
#else
static void test_refused_without_expat(void) {
  vti_spec s = {.type = &types[1], .enc = ENC_ASCII, .header_size = 4};
  const char *path = write_vti("any.vti", &s);
  ir_volume v;
  char err[IR_ERR_LEN];
  CHECK_EQ_INT(load(path, &v, err), IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "inkray was built without VTK image data support (install libexpat1-dev and rebuild)");
  CHECK_INFO_REFUSES(fmt_path("'%s'", path), "built without VTK image data support");
}
#endif

int main(void) {
#ifdef INKRAY_HAVE_EXPAT
  RUN(test_every_type_in_every_encoding);
  RUN(test_uint64_headers_and_big_endian);
  RUN(test_compressed_blocks);
  RUN(test_spacing_origin_and_description);
  RUN(test_sub_box_and_header_only);
  RUN(test_active_scalars_and_array_option);
  RUN(test_bad_files_are_one_line_and_exit_2);
  RUN(test_bad_base64_in_the_middle_of_an_array);
  RUN(test_info_prints_vti);
#else
  RUN(test_refused_without_expat);
#endif
  return check_summary();
}
