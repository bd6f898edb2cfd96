/* TIFF stacks written here with libtiff: multi-page files of each sample type, a folder of
 * single-page slices (natural name order), a printf pattern, BigTIFF, tiled and compressed
 * pages, ImageJ's description (spacing=, unit=) and resolution tags; each volume checked value
 * for value against the values it was written from, plus the bad cases, through the library
 * and `inkray info`. */
#include <math.h>

#include "tests/data/data_test_util.h"

#ifdef INKRAY_HAVE_TIFF
#include <tiffio.h>

typedef struct tiff_type {
  const char *name;
  int bits;
  int format; /* SAMPLEFORMAT_* */
  ir_voxel_type expect;
} tiff_type;

static const tiff_type types[] = {
    {"uint8", 8, SAMPLEFORMAT_UINT, IR_VOXEL_UINT8},
    {"int8", 8, SAMPLEFORMAT_INT, IR_VOXEL_INT16},
    {"uint16", 16, SAMPLEFORMAT_UINT, IR_VOXEL_UINT16},
    {"int16", 16, SAMPLEFORMAT_INT, IR_VOXEL_INT16},
    {"uint32", 32, SAMPLEFORMAT_UINT, IR_VOXEL_UINT16}, /* values fit uint16 */
    {"int32", 32, SAMPLEFORMAT_INT, IR_VOXEL_FLOAT32},  /* beyond int16, exact in float32 */
    {"float32", 32, SAMPLEFORMAT_IEEEFP, IR_VOXEL_FLOAT32},
    {"float64", 64, SAMPLEFORMAT_IEEEFP, IR_VOXEL_FLOAT32},
};

static double value_for(const tiff_type *t, size_t i) {
  int base = (int)((i * 37) % 61);
  if (strcmp(t->name, "uint8") == 0) return base * 4;
  if (strcmp(t->name, "int8") == 0) return base - 30;
  if (strcmp(t->name, "uint16") == 0) return base * 1000;
  if (strcmp(t->name, "int16") == 0) return (base - 30) * 1000;
  if (strcmp(t->name, "uint32") == 0) return base * 1000;
  if (strcmp(t->name, "int32") == 0) return (base - 30) * 100000;
  if (strcmp(t->name, "float32") == 0) return (base - 30) * 0.25;
  return (base - 30) * 0.1;
}

static void put_value(unsigned char *p, const tiff_type *t, double v) {
  switch (t->bits * 10 + t->format) {
  case 8 * 10 + SAMPLEFORMAT_UINT: *p = (uint8_t)v; break;
  case 8 * 10 + SAMPLEFORMAT_INT: { int8_t x = (int8_t)v; memcpy(p, &x, 1); } break;
  case 16 * 10 + SAMPLEFORMAT_UINT: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); } break;
  case 16 * 10 + SAMPLEFORMAT_INT: { int16_t x = (int16_t)v; memcpy(p, &x, 2); } break;
  case 32 * 10 + SAMPLEFORMAT_UINT: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); } break;
  case 32 * 10 + SAMPLEFORMAT_INT: { int32_t x = (int32_t)v; memcpy(p, &x, 4); } break;
  case 32 * 10 + SAMPLEFORMAT_IEEEFP: { float x = (float)v; memcpy(p, &x, 4); } break;
  default: memcpy(p, &v, 8); break;
  }
}

typedef struct tiff_spec {
  const tiff_type *type;
  uint32_t w, h;
  int pages;
  size_t first_index;   /* voxel index of the first page's first pixel (slice files) */
  bool big;             /* BigTIFF */
  bool msb;             /* big-endian ("MM") file */
  uint32_t tile;        /* tile size, 0 for strips */
  int compression;      /* COMPRESSION_*, 0 for none */
  const char *description;
  float xres, yres;     /* 0: no resolution tags */
  int samples;          /* samples a pixel, default 1 */
} tiff_spec;

static void write_tiff(const char *path, const tiff_spec *s) {
  TIFF *tif = TIFFOpen(path, s->big ? (s->msb ? "w8b" : "w8") : (s->msb ? "wb" : "w"));
  if (!tif) {
    fprintf(stderr, "FAIL: cannot write %s\n", path);
    exit(1);
  }
  const tiff_type *t = s->type;
  size_t sample = (size_t)t->bits / 8, spp = s->samples ? (size_t)s->samples : 1;
  size_t row = s->w * sample * spp;
  unsigned char *page = calloc(s->h, row);
  for (int z = 0; z < s->pages; z++) {
    for (size_t i = 0; i < (size_t)s->w * s->h; i++)
      for (size_t c = 0; c < spp; c++)
        put_value(page + (i * spp + c) * sample, t,
                  value_for(t, s->first_index + (size_t)z * s->w * s->h + i));
    TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, s->w);
    TIFFSetField(tif, TIFFTAG_IMAGELENGTH, s->h);
    TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, t->bits);
    TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, t->format);
    TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, (uint16_t)spp);
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, spp == 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK);
    TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
    TIFFSetField(tif, TIFFTAG_COMPRESSION, s->compression ? s->compression : COMPRESSION_NONE);
    if (s->description && z == 0) TIFFSetField(tif, TIFFTAG_IMAGEDESCRIPTION, s->description);
    if (s->xres > 0) {
      TIFFSetField(tif, TIFFTAG_XRESOLUTION, s->xres);
      TIFFSetField(tif, TIFFTAG_YRESOLUTION, s->yres);
      TIFFSetField(tif, TIFFTAG_RESOLUTIONUNIT, RESUNIT_NONE);
    }
    if (s->pages > 1) {
      TIFFSetField(tif, TIFFTAG_SUBFILETYPE, FILETYPE_PAGE);
      TIFFSetField(tif, TIFFTAG_PAGENUMBER, (uint16_t)z, (uint16_t)s->pages);
    }
    if (s->tile) {
      TIFFSetField(tif, TIFFTAG_TILEWIDTH, s->tile);
      TIFFSetField(tif, TIFFTAG_TILELENGTH, s->tile);
      unsigned char *tilebuf = calloc(1, (size_t)TIFFTileSize(tif));
      for (uint32_t y = 0; y < s->h; y += s->tile)
        for (uint32_t x = 0; x < s->w; x += s->tile) {
          memset(tilebuf, 0, (size_t)TIFFTileSize(tif));
          for (uint32_t r = 0; r < s->tile && y + r < s->h; r++) {
            uint32_t cols = s->w - x < s->tile ? s->w - x : s->tile;
            memcpy(tilebuf + (size_t)r * s->tile * sample * spp, page + (y + r) * row + x * sample * spp,
                   cols * sample * spp);
          }
          TIFFWriteTile(tif, tilebuf, x, y, 0, 0);
        }
      free(tilebuf);
    } else {
      TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, 3);
      for (uint32_t y = 0; y < s->h; y++) TIFFWriteScanline(tif, page + y * row, y, 0);
    }
    TIFFWriteDirectory(tif);
  }
  free(page);
  TIFFClose(tif);
}

static void check_values(const ir_volume *v, const tiff_type *t, size_t w, size_t h, size_t d,
                         const char *what) {
  CHECK_EQ_INT(v->dims[0], w);
  CHECK_EQ_INT(v->dims[1], h);
  CHECK_EQ_INT(v->dims[2], d);
  CHECK_MSG(v->type == t->expect, "%s: type %s, expected %s", what, ir_voxel_type_name(v->type),
            ir_voxel_type_name(t->expect));
  if (v->dims[0] != w || v->dims[1] != h || v->dims[2] != d) return;
  int bad = 0;
  for (size_t i = 0; i < w * h * d; i++) {
    double want = t->expect == IR_VOXEL_FLOAT32 ? (double)(float)value_for(t, i) : value_for(t, i);
    double got = ir_volume_value_at(v, i % w, i / w % h, i / (w * h));
    if (got != want && bad++ < 3)
      CHECK_MSG(got == want, "%s: voxel %zu is %.17g, expected %.17g", what, i, got, want);
  }
  CHECK_EQ_INT(bad, 0);
}

static void load_and_check(const char *source, const tiff_type *t, size_t w, size_t h, size_t d,
                           const char *what) {
  ir_volume v;
  char err[IR_ERR_LEN];
  ir_status status = load(source, &v, err);
  CHECK_MSG(status == IR_OK, "%s: %s", what, err);
  if (status != IR_OK) return;
  check_values(&v, t, w, h, d, what);
  ir_volume_free(&v);
}

static void test_multipage_stacks_of_each_type(void) {
  for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
    tiff_spec s = {.type = &types[k], .w = 7, .h = 5, .pages = 4};
    const char *path = scratch_path(fmt_path("stack_%s.tif", types[k].name));
    write_tiff(path, &s);
    load_and_check(path, &types[k], 7, 5, 4, path);
  }
}

static void test_bigtiff_big_endian_tiled_and_compressed(void) {
  for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
    tiff_spec s = {.type = &types[k], .w = 40, .h = 21, .pages = 3, .big = true, .tile = 16,
                   .compression = COMPRESSION_ADOBE_DEFLATE};
    const char *path = scratch_path(fmt_path("big_tiled_%s.tiff", types[k].name));
    write_tiff(path, &s);
    load_and_check(path, &types[k], 40, 21, 3, path);
    tiff_spec lzw = {.type = &types[k], .w = 9, .h = 8, .pages = 2, .compression = COMPRESSION_LZW};
    path = scratch_path(fmt_path("lzw_%s.tif", types[k].name));
    write_tiff(path, &lzw);
    load_and_check(path, &types[k], 9, 8, 2, path);
    tiff_spec msb = {.type = &types[k], .w = 9, .h = 8, .pages = 2, .msb = true, .big = k % 2};
    path = scratch_path(fmt_path("msb_%s.tif", types[k].name));
    write_tiff(path, &msb);
    load_and_check(path, &types[k], 9, 8, 2, path);
    tiff_spec tiled = {.type = &types[k], .w = 33, .h = 17, .pages = 2, .tile = 16};
    path = scratch_path(fmt_path("tiled_%s.tif", types[k].name));
    write_tiff(path, &tiled);
    load_and_check(path, &types[k], 33, 17, 2, path);
  }
}

/* Slices slice_0 .. slice_11: natural order puts slice_10 after slice_9, where plain string
 * order would not. */
static void test_slice_folder_in_natural_name_order(void) {
  for (size_t k = 0; k < sizeof types / sizeof types[0]; k += 2) {
    const char *dir = kept_path(fmt_path("folder_%s", types[k].name));
    mkdir(dir, 0755);
    for (int z = 0; z < 12; z++) {
      tiff_spec s = {.type = &types[k], .w = 6, .h = 4, .pages = 1, .first_index = (size_t)z * 24};
      write_tiff(fmt_path("%s/slice_%d.tif", dir, z), &s);
    }
    write_text(fmt_path("%s/README.txt", dir), "not a slice");
    load_and_check(dir, &types[k], 6, 4, 12, dir);
  }
}

static void test_printf_pattern(void) {
  const tiff_type *t = &types[3];
  for (int z = 1; z <= 5; z++) {
    tiff_spec s = {.type = t, .w = 6, .h = 4, .pages = 1, .first_index = (size_t)(z - 1) * 24};
    write_tiff(scratch_path(fmt_path("p_%03d.tif", z)), &s);
  }
  load_and_check(scratch_path("p_%03d.tif"), t, 6, 4, 5, "pattern from 1");
  /* From 0 when there is a 0. */
  for (int z = 0; z < 3; z++) {
    tiff_spec s = {.type = t, .w = 6, .h = 4, .pages = 1, .first_index = (size_t)z * 24};
    write_tiff(scratch_path(fmt_path("q%d.tiff", z)), &s);
  }
  load_and_check(scratch_path("q%d.tiff"), t, 6, 4, 3, "pattern from 0");
}

/* A sub-box (a distributed brick) of a stack, a tiled LZW file and a slice folder holds exactly
 * the whole volume's voxels there, with origin and full_dims; a header-only load of a type that
 * needs no values has the dims and no voxels. */
static void test_boxes_and_header_only_loads(void) {
  const tiff_type *t = &types[2]; /* uint16 */
  enum { W = 13, H = 9, D = 7 };
  const char *stack = scratch_path("box_stack.tif"), *tiled = scratch_path("box_tiled.tif");
  tiff_spec s = {.type = t, .w = W, .h = H, .pages = D};
  write_tiff(stack, &s);
  tiff_spec st = {.type = t, .w = W, .h = H, .pages = D, .tile = 16, .compression = COMPRESSION_LZW};
  write_tiff(tiled, &st);
  const char *dir = kept_path("box_folder");
  mkdir(dir, 0755);
  for (int z = 0; z < D; z++) {
    tiff_spec one = {.type = t, .w = W, .h = H, .pages = 1, .first_index = (size_t)z * W * H};
    write_tiff(fmt_path("%s/slice_%d.tif", dir, z), &one);
  }
  const char *sources[] = {stack, tiled, dir};
  const size_t boxes[][2][3] = {{{2, 1, 3}, {5, 6, 2}}, {{0, 0, 4}, {W, H, 3}}, {{12, 8, 6}, {1, 1, 1}}};
  for (int k = 0; k < 3; k++)
    for (int b = 0; b < 3; b++) {
      ir_volume_desc d = {0};
      memcpy(d.region_offset, boxes[b][0], sizeof d.region_offset);
      memcpy(d.region_size, boxes[b][1], sizeof d.region_size);
      ir_volume v;
      char err[IR_ERR_LEN];
      ir_status st2 = load_with(sources[k], &d, &v, err);
      CHECK_MSG(st2 == IR_OK, "%s box %d: %s", sources[k], b, err);
      if (st2 != IR_OK) continue;
      const size_t *o = boxes[b][0], *n = boxes[b][1];
      CHECK(v.dims[0] == n[0] && v.dims[1] == n[1] && v.dims[2] == n[2]);
      CHECK(v.origin[0] == o[0] && v.origin[1] == o[1] && v.origin[2] == o[2]);
      CHECK(v.full_dims[0] == W && v.full_dims[1] == H && v.full_dims[2] == D);
      size_t wrong = 0;
      for (size_t z = 0; z < n[2]; z++)
        for (size_t y = 0; y < n[1]; y++)
          for (size_t x = 0; x < n[0]; x++)
            wrong += ir_volume_value_at(&v, x, y, z) !=
                     value_for(t, ((o[2] + z) * H + o[1] + y) * W + o[0] + x);
      CHECK_MSG(wrong == 0, "%s box %d: %zu voxels differ", sources[k], b, wrong);
      ir_volume_free(&v);
    }
  ir_volume_desc h = {.header_only = true};
  ir_volume v;
  char err[IR_ERR_LEN];
  CHECK_MSG(load_with(stack, &h, &v, err) == IR_OK, "%s", err);
  CHECK(v.voxels == NULL && v.bytes == 0 && v.type == IR_VOXEL_UINT16);
  CHECK(v.dims[0] == W && v.dims[1] == H && v.dims[2] == D);
  ir_volume_free(&v);
}

static void test_imagej_spacing_and_resolution(void) {
  tiff_spec s = {.type = &types[2], .w = 6, .h = 4, .pages = 3, .xres = 2, .yres = 4,
                 .description = "ImageJ=1.54f\nimages=3\nslices=3\nunit=micron\nspacing=2.5\nloop=false\n"};
  const char *path = scratch_path("imagej.tif");
  write_tiff(path, &s);
  ir_volume v;
  char err[IR_ERR_LEN];
  CHECK_MSG(load(path, &v, err) == IR_OK, "%s", err);
  CHECK_NEAR(v.spacing[0], 0.5, 1e-7);
  CHECK_NEAR(v.spacing[1], 0.25, 1e-7);
  CHECK_NEAR(v.spacing[2], 2.5, 1e-7);
  CHECK_STR_CONTAINS(v.description, "micron");
  check_values(&v, &types[2], 6, 4, 3, "imagej");
  ir_volume_free(&v);
  /* Resolution tags alone: z takes the x spacing. */
  tiff_spec r = {.type = &types[0], .w = 6, .h = 4, .pages = 2, .xres = 4, .yres = 4};
  path = scratch_path("resolution.tif");
  write_tiff(path, &r);
  CHECK_MSG(load(path, &v, err) == IR_OK, "%s", err);
  CHECK_NEAR(v.spacing[0], 0.25, 1e-7);
  CHECK_NEAR(v.spacing[2], 0.25, 1e-7);
  ir_volume_free(&v);
  info_run run = run_inkray_info(fmt_path("'%s'", scratch_path("imagej.tif")));
  CHECK_MSG(run.status == 0, "%s", run.err);
  CHECK_STR_CONTAINS(run.out, "dims        6 x 4 x 3");
  CHECK_STR_CONTAINS(run.out, "type        uint16");
  CHECK_STR_CONTAINS(run.out, "spacing     0.5 x 0.25 x 2.5");
  CHECK_STR_CONTAINS(run.out, "range       0 .. 60000");
  info_run_free(&run);
  CHECK_HEADLESS_RENDERS(fmt_path("'%s'", scratch_path("imagej.tif")));
}

static void expect_refused(const char *source, const char *reason) {
  ir_volume v;
  char err[IR_ERR_LEN];
  ir_status status = load(source, &v, err);
  CHECK_MSG(status == IR_ERR_INPUT, "%s: status %d (%s), expected a refusal with '%s'", source,
            (int)status, err, reason);
  CHECK_STR_CONTAINS(err, reason);
  CHECK(strchr(err, '\n') == NULL);
  CHECK(v.voxels == NULL);
  CHECK_INFO_REFUSES(fmt_path("'%s'", source), reason);
}

/* A classic little-endian TIFF of one page claiming w x h 16-bit pixels in one strip of
 * `strip_bytes` bytes at offset 8 + 12 * entries + 6 (after the IFD). */
static void write_raw_tiff(const char *path, uint32_t w, uint32_t h, uint32_t strip_bytes,
                           size_t file_bytes, uint16_t compression) {
  unsigned char b[1024] = {'I', 'I', 42, 0, 8, 0, 0, 0};
  const uint16_t n = 8;
  uint32_t data_at = 8 + 2 + 12u * n + 4;
  struct { uint16_t tag, type; uint32_t count, value; } e[8] = {
      {256, 4, 1, w}, {257, 4, 1, h}, {258, 3, 1, 16}, {259, 3, 1, compression},
      {262, 3, 1, 1}, {273, 4, 1, data_at}, {278, 4, 1, h}, {279, 4, 1, strip_bytes}};
  put_le16(b + 8, n);
  for (size_t k = data_at; k < sizeof b; k++) b[k] = (unsigned char)(k * 7);
  for (int k = 0; k < n; k++) {
    unsigned char *p = b + 10 + 12 * k;
    put_le16(p, e[k].tag);
    put_le16(p + 2, e[k].type);
    put_le32(p + 4, e[k].count);
    if (e[k].type == 3) put_le16(p + 8, (uint16_t)e[k].value);
    else put_le32(p + 8, e[k].value);
  }
  write_bytes(path, b, file_bytes);
}

/* Overwrites strip `strip` of page `page` (0-based) with bytes that no decoder takes. */
static void spoil_strip(const char *path, tdir_t page, uint32_t strip) {
  TIFF *tif = TIFFOpen(path, "r");
  uint64_t *offsets = NULL, *counts = NULL;
  CHECK(tif && TIFFSetDirectory(tif, page));
  CHECK(TIFFGetField(tif, TIFFTAG_STRIPOFFSETS, &offsets) && TIFFGetField(tif, TIFFTAG_STRIPBYTECOUNTS, &counts));
  uint64_t at = offsets[strip], len = counts[strip];
  TIFFClose(tif);
  size_t n = 0;
  unsigned char *bytes = check_read_file(path, &n);
  for (uint64_t k = 0; k < len && at + k < n; k++) bytes[at + k] = (unsigned char)(0xff - k);
  write_bytes(path, bytes, n);
  free(bytes);
}

/* A strip that cannot be decoded in the middle of a stack (page 3 of 4, rows 6 to 8) and of a
 * folder of slices: refused with the file, the page and the row, never read as far as it goes. */
static void test_bad_strip_in_the_middle_of_a_stack(void) {
  tiff_spec s = {.type = &types[2], .w = 16, .h = 16, .pages = 4, .compression = COMPRESSION_ADOBE_DEFLATE};
  const char *path = scratch_path("bad_strip_page3.tif");
  write_tiff(path, &s);
  spoil_strip(path, 2, 2);
  expect_refused(path, "bad_strip_page3.tif: page 3: cannot read the strip at row 6");
  const char *dir = kept_path("bad_strip_slices");
  mkdir(dir, 0755);
  tiff_spec one = {.type = &types[2], .w = 16, .h = 16, .pages = 1, .compression = COMPRESSION_ADOBE_DEFLATE};
  for (int k = 0; k < 3; k++) {
    one.first_index = (size_t)k * 256;
    write_tiff(fmt_path("%s/slice_%d.tif", dir, k), &one);
  }
  spoil_strip(fmt_path("%s/slice_1.tif", dir), 0, 4);
  expect_refused(dir, "slice_1.tif: page 1: cannot read the strip at row 12");
}

static void test_bad_files_are_one_line_and_exit_2(void) {
  /* Truncated: the second half of a stack cut off. */
  tiff_spec s = {.type = &types[2], .w = 64, .h = 64, .pages = 4};
  const char *path = scratch_path("truncated.tif");
  write_tiff(path, &s);
  size_t n = 0;
  unsigned char *bytes = check_read_file(path, &n);
  write_bytes(path, bytes, n / 2);
  free(bytes);
  expect_refused(path, "truncated or corrupt");
  /* Huge claimed dims in a small file: refused before allocation. */
  path = scratch_path("huge.tif");
  write_raw_tiff(path, 1000000, 1000000, 64, 256, COMPRESSION_NONE);
  expect_refused(path, "more than the files can hold");
  path = scratch_path("huge_deflate.tif");
  write_raw_tiff(path, 1000000, 1000000, 64, 256, COMPRESSION_ADOBE_DEFLATE);
  expect_refused(path, "more than the files can hold");
  /* Corrupt compressed data. */
  path = scratch_path("corrupt_strip.tif");
  write_raw_tiff(path, 16, 16, 200, 400, COMPRESSION_ADOBE_DEFLATE);
  expect_refused(path, "page 1: cannot read the strip at row 0");
  /* RGB. */
  tiff_spec rgb = {.type = &types[0], .w = 6, .h = 4, .pages = 1, .samples = 3};
  path = scratch_path("rgb.tif");
  write_tiff(path, &rgb);
  expect_refused(path, "3 samples a pixel");
  /* Pages that differ. */
  const char *dir = kept_path("mixed");
  mkdir(dir, 0755);
  tiff_spec a = {.type = &types[0], .w = 6, .h = 4, .pages = 1};
  tiff_spec b = {.type = &types[0], .w = 6, .h = 5, .pages = 1};
  write_tiff(fmt_path("%s/a.tif", dir), &a);
  write_tiff(fmt_path("%s/b.tif", dir), &b);
  expect_refused(dir, "every slice must match");
  /* An ImageJ hyperstack of two channels. */
  tiff_spec hyper = {.type = &types[0], .w = 6, .h = 4, .pages = 4,
                     .description = "ImageJ=1.54f\nimages=4\nchannels=2\nslices=2\nhyperstack=true\n"};
  path = scratch_path("hyper.tif");
  write_tiff(path, &hyper);
  expect_refused(path, "only one channel and one time point");
  /* ImageJ says more images than there are pages (its raw stacks over 4 GiB, or a cut file). */
  tiff_spec more = {.type = &types[0], .w = 6, .h = 4, .pages = 3,
                    .description = "ImageJ=1.54f\nimages=5\nslices=5\n"};
  path = scratch_path("imagej_more.tif");
  write_tiff(path, &more);
  expect_refused(path, "says 5 images, the file has 3 pages");
  /* Unsupported: 64-bit integers... are supported; 1-bit pixels are not. */
  path = scratch_path("bilevel.tif");
  TIFF *tif = TIFFOpen(path, "w");
  TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, 8);
  TIFFSetField(tif, TIFFTAG_IMAGELENGTH, 2);
  TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, 1);
  TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, 1);
  TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
  unsigned char row = 0xa5;
  TIFFWriteScanline(tif, &row, 0, 0);
  TIFFWriteScanline(tif, &row, 1, 0);
  TIFFClose(tif);
  expect_refused(path, "1-bit samples");
  /* A 1x1 page in tiles of millions of pixels (found by the fuzzer): refused before the tile
   * buffer is allocated. */
  expect_refused(INKRAY_TEST_DATA_DIR "/fuzz_corpus/tiff_tile_larger_than_page.tif", "do not fit");
  /* Not a TIFF; a pattern matching nothing; a bad pattern. */
  path = scratch_path("text.tif");
  write_text(path, "hello");
  expect_refused(path, "not a TIFF file");
  expect_refused(scratch_path("none_%04d.tif"), "no file matches the pattern");
  expect_refused(scratch_path("bad_%s.tif"), "one %d-style conversion");
  expect_refused(scratch_path("missing.tif"), "no such file");
}
#else
static void test_refused_without_libtiff(void) {
  const char *path = scratch_path("any.tif");
  write_text(path, "II*");
  ir_volume v;
  char err[IR_ERR_LEN];
  CHECK_EQ_INT(load(path, &v, err), IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "inkray was built without TIFF support (install libtiff-dev and rebuild)");
  CHECK_INFO_REFUSES(fmt_path("'%s'", path), "built without TIFF support");
}
#endif

int main(void) {
#ifdef INKRAY_HAVE_TIFF
  /* libtiff's own messages would go to stderr; the loader's message is what counts. */
  TIFFSetWarningHandler(NULL);
  RUN(test_multipage_stacks_of_each_type);
  RUN(test_bigtiff_big_endian_tiled_and_compressed);
  RUN(test_slice_folder_in_natural_name_order);
  RUN(test_printf_pattern);
  RUN(test_boxes_and_header_only_loads);
  RUN(test_imagej_spacing_and_resolution);
  RUN(test_bad_files_are_one_line_and_exit_2);
  RUN(test_bad_strip_in_the_middle_of_a_stack);
#else
  RUN(test_refused_without_libtiff);
#endif
  return check_summary();
}
