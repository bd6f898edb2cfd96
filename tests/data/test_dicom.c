/* DICOM series written here with GDCM (dicom_fixtures.cxx): a CT series with shuffled file
 * names on an oblique slice normal, rescale slope/intercept, anisotropic PixelSpacing and a
 * stray non-DICOM file; RLE, JPEG lossless and JPEG 2000 compressed series; an enhanced
 * multi-frame file; two series in one folder (--series); missing and unevenly spaced slices;
 * and the bad cases, each volume checked value for value against the stored values it was
 * written from, through the library and `inkray info`. */
#include <math.h>

#include "tests/data/data_test_util.h"
#ifdef INKRAY_HAVE_GDCM
#include "tests/data/dicom_fixtures.h"
#endif

enum { COLS = 8, ROWS = 5, SLICES = 6, PER = COLS * ROWS };

#ifdef INKRAY_HAVE_GDCM
/* Stored value of voxel i (0 .. 4095, as 12-bit CT data). */
static int stored_value(size_t i) { return (int)((i * 97 + 13) % 4096); }

/* An oblique orientation: rows along x, columns tilted in y-z; the normal is (0, -0.6, 0.8). */
static const double orientation[6] = {1, 0, 0, 0, 0.8, 0.6};
static const double normal[3] = {0, -0.6, 0.8};
static const double base[3] = {-20, 10, 5};

typedef struct series_spec {
  const char *dir;
  const char *uid, *description;
  int slices;
  double slope, intercept;
  double slope_step, intercept_step; /* added per slice: rescaling that differs by slice */
  double gap;                 /* slice distance along the normal */
  int skip;                   /* a slice index not written (-1: none) */
  double jitter;              /* added to slice 3's position along the normal */
  dicom_compression compression;
  size_t first_index;         /* voxel index of slice 0 */
} series_spec;

/* Writes slices under names that sort neither by position nor by anything else (IM<k*7%11>),
 * with instance numbers running backwards: only the positions give the order. */
static void write_series(const series_spec *s) {
  char why[256];
  mkdir(s->dir, 0755);
  uint16_t *pixels = malloc(PER * sizeof *pixels);
  for (int k = 0; k < s->slices; k++) {
    if (k == s->skip) continue;
    for (size_t i = 0; i < PER; i++) pixels[i] = (uint16_t)stored_value(s->first_index + (size_t)k * PER + i);
    double d = k * s->gap + (k == 3 ? s->jitter : 0);
    dicom_image_spec img = {
        .path = fmt_path("%s/IM%02d_%s", s->dir, (k * 7 + 3) % 11, s->uid),
        .rows = ROWS, .cols = COLS, .frames = 1, .bits = 16, .is_signed = 0, .samples = 1,
        .pixels = pixels, .slope = s->slope + k * s->slope_step,
        .intercept = s->intercept + k * s->intercept_step, .instance_number = 100 - k,
        .row_spacing = 0.7, .col_spacing = 0.9,
        .position = {base[0] + d * normal[0], base[1] + d * normal[1], base[2] + d * normal[2]},
        .series_uid = s->uid, .modality = "CT", .description = s->description,
        .compression = s->compression};
    memcpy(img.orientation, orientation, sizeof orientation);
    if (dicom_write_image(&img, why, sizeof why) != 0) {
      fprintf(stderr, "FAIL: %s\n", why);
      exit(1);
    }
  }
  free(pixels);
}

static void check_series_values(const ir_volume *v, int slices, double slope, double intercept,
                                size_t first_index, const char *what) {
  CHECK_EQ_INT(v->dims[0], COLS);
  CHECK_EQ_INT(v->dims[1], ROWS);
  CHECK_EQ_INT(v->dims[2], slices);
  if (ir_volume_voxel_count(v) != (size_t)PER * (size_t)slices) return;
  int bad = 0;
  for (size_t i = 0; i < (size_t)PER * (size_t)slices; i++) {
    double want = stored_value(first_index + i) * slope + intercept;
    if (v->type == IR_VOXEL_FLOAT32) want = (float)want;
    double got = ir_volume_value_at(v, i % COLS, i / COLS % ROWS, i / PER);
    if (got != want && bad++ < 3)
      CHECK_MSG(got == want, "%s: voxel %zu is %.9g, expected %.9g", what, i, got, want);
  }
  CHECK_EQ_INT(bad, 0);
}

static void test_ct_series_sorted_by_position_with_rescale(void) {
  series_spec s = {.dir = kept_path("ct"), .uid = "1.2.826.0.1.1", .description = "HEAD 1.0",
                   .slices = SLICES, .slope = 1, .intercept = -1024, .gap = 2.5, .skip = -1};
  write_series(&s);
  write_text(fmt_path("%s/notes.txt", s.dir), "a stray file that is not DICOM");
  write_text(fmt_path("%s/DICOMDIR_not", s.dir), "");
  ir_volume v;
  char err[IR_ERR_LEN];
  ir_status status = load(s.dir, &v, err);
  CHECK_MSG(status == IR_OK, "%s", err);
  if (status != IR_OK) return;
  /* HU -1024 .. 3071 hold in int16. */
  CHECK_EQ_INT(v.type, IR_VOXEL_INT16);
  check_series_values(&v, SLICES, 1, -1024, 0, "ct");
  /* PixelSpacing is row spacing (y), then column spacing (x). */
  CHECK_NEAR(v.spacing[0], 0.9, 1e-6);
  CHECK_NEAR(v.spacing[1], 0.7, 1e-6);
  CHECK_NEAR(v.spacing[2], 2.5, 1e-4);
  CHECK_NEAR(v.world_origin[0], base[0], 1e-4);
  CHECK_NEAR(v.world_origin[1], base[1], 1e-4);
  CHECK_STR_CONTAINS(v.modality, "CT");
  CHECK_STR_CONTAINS(v.description, "HEAD 1.0");
  CHECK_EQ_INT(strlen(v.note), 0);
  ir_volume_free(&v);
  /* One file of the series loads the whole series. */
  status = load(fmt_path("%s/IM%02d_%s", s.dir, 3, s.uid), &v, err);
  CHECK_MSG(status == IR_OK, "%s", err);
  if (status == IR_OK) check_series_values(&v, SLICES, 1, -1024, 0, "one file");
  ir_volume_free(&v);
  info_run r = run_inkray_info(fmt_path("'%s'", s.dir));
  CHECK_MSG(r.status == 0, "%s", r.err);
  CHECK_STR_CONTAINS(r.out, "dims        8 x 5 x 6");
  CHECK_STR_CONTAINS(r.out, "type        int16");
  CHECK_STR_CONTAINS(r.out, "spacing     0.9 x 0.7 x 2.5");
  CHECK_STR_CONTAINS(r.out, "modality    CT");
  CHECK_STR_CONTAINS(r.out, "description HEAD 1.0");
  int lo = 4096, hi = -1;
  for (size_t i = 0; i < (size_t)PER * SLICES; i++) {
    lo = stored_value(i) < lo ? stored_value(i) : lo;
    hi = stored_value(i) > hi ? stored_value(i) : hi;
  }
  CHECK_STR_CONTAINS(r.out, fmt_path("range       %d .. %d", lo - 1024, hi - 1024));
  info_run_free(&r);
  CHECK_HEADLESS_RENDERS(fmt_path("'%s'", s.dir));
}

static void test_non_integer_slope_gives_float32(void) {
  series_spec s = {.dir = kept_path("pet"), .uid = "1.2.826.0.1.2", .slices = 4, .slope = 0.25,
                   .intercept = -3.5, .gap = 3, .skip = -1};
  write_series(&s);
  ir_volume v;
  char err[IR_ERR_LEN];
  CHECK_MSG(load(s.dir, &v, err) == IR_OK, "%s", err);
  CHECK_EQ_INT(v.type, IR_VOXEL_FLOAT32);
  check_series_values(&v, 4, 0.25, -3.5, 0, "slope 0.25");
  ir_volume_free(&v);
  /* No rescale: the stored uint16 values as they are. */
  series_spec plain = {.dir = kept_path("plain"), .uid = "1.2.826.0.1.3", .slices = 3, .slope = 1,
                       .gap = 1, .skip = -1};
  write_series(&plain);
  CHECK_MSG(load(plain.dir, &v, err) == IR_OK, "%s", err);
  CHECK_EQ_INT(v.type, IR_VOXEL_UINT16);
  check_series_values(&v, 3, 1, 0, 0, "no rescale");
  ir_volume_free(&v);
}

/* Each slice its own rescale pair: integral pairs stay integers (int16 here), others float32. */
static void test_rescaling_that_differs_by_slice(void) {
  series_spec s = {.dir = kept_path("perslice"), .uid = "1.2.826.0.1.16", .slices = 4, .slope = 1,
                   .intercept = -1024, .intercept_step = 10, .gap = 1, .skip = -1};
  write_series(&s);
  ir_volume v;
  char err[IR_ERR_LEN];
  CHECK_MSG(load(s.dir, &v, err) == IR_OK, "%s", err);
  CHECK_EQ_INT(v.type, IR_VOXEL_INT16);
  for (int k = 0; k < 4 && v.dims[2] == 4; k++)
    for (size_t i = 0; i < PER; i++) {
      double want = stored_value((size_t)k * PER + i) - 1024 + 10 * k;
      double got = ir_volume_value_at(&v, i % COLS, i / COLS, (size_t)k);
      if (got != want) {
        CHECK_MSG(got == want, "slice %d voxel %zu: %g, expected %g", k, i, got, want);
        k = 4;
        break;
      }
    }
  ir_volume_free(&v);
  series_spec f = {.dir = kept_path("perslice_float"), .uid = "1.2.826.0.1.17", .slices = 3,
                   .slope = 0.5, .slope_step = 0.25, .gap = 1, .skip = -1};
  write_series(&f);
  CHECK_MSG(load(f.dir, &v, err) == IR_OK, "%s", err);
  CHECK_EQ_INT(v.type, IR_VOXEL_FLOAT32);
  for (int k = 0; k < 3 && v.dims[2] == 3; k++) {
    double want = stored_value((size_t)k * PER + 7) * (0.5 + 0.25 * k);
    CHECK_NEAR(ir_volume_value_at(&v, 7, 0, (size_t)k), want, 0);
  }
  ir_volume_free(&v);
}

static void test_compressed_transfer_syntaxes(void) {
  static const struct {
    dicom_compression c;
    const char *name;
  } kinds[] = {{DICOM_RLE, "rle"}, {DICOM_JPEG_LOSSLESS, "jpegll"}};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    series_spec s = {.dir = kept_path(kinds[k].name), .uid = "1.2.826.0.1.4", .slices = 3,
                     .slope = 1, .intercept = -1024, .gap = 1.25, .skip = -1,
                     .compression = kinds[k].c};
    write_series(&s);
    ir_volume v;
    char err[IR_ERR_LEN];
    ir_status status = load(s.dir, &v, err);
    CHECK_MSG(status == IR_OK, "%s: %s", kinds[k].name, err);
    if (status != IR_OK) continue;
    check_series_values(&v, 3, 1, -1024, 0, kinds[k].name);
    CHECK_NEAR(v.spacing[2], 1.25, 1e-4);
    ir_volume_free(&v);
  }
}

/* JPEG 2000 and JPEG-LS, as multi-frame files of 64x64 frames (GDCM's JPEG 2000 encoder fails
 * on tiny images). */
static void test_jpeg2000_and_jpegls_multiframe(void) {
  enum { N = 64, FRAMES = 3 };
  static const struct {
    dicom_compression c;
    const char *name;
  } kinds[] = {{DICOM_J2K_LOSSLESS, "j2k.dcm"}, {DICOM_JPEGLS_LOSSLESS, "jpegls.dcm"}};
  uint16_t *pixels = malloc((size_t)N * N * FRAMES * sizeof *pixels);
  for (size_t i = 0; i < (size_t)N * N * FRAMES; i++) pixels[i] = (uint16_t)stored_value(i);
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    const char *path = kept_path(kinds[k].name);
    dicom_image_spec img = {.path = path, .rows = N, .cols = N, .frames = FRAMES, .bits = 16,
                            .samples = 1, .pixels = pixels, .slope = 1, .intercept = -1024,
                            .row_spacing = 1, .col_spacing = 1, .slice_spacing = 2,
                            .orientation = {1, 0, 0, 0, 1, 0}, .series_uid = "1.2.826.0.1.14",
                            .compression = kinds[k].c};
    char werr[256];
    CHECK_MSG(dicom_write_image(&img, werr, sizeof werr) == 0, "%s: %s", kinds[k].name, werr);
    ir_volume v;
    char err[IR_ERR_LEN];
    ir_status status = load(path, &v, err);
    CHECK_MSG(status == IR_OK, "%s: %s", kinds[k].name, err);
    if (status != IR_OK) continue;
    CHECK_EQ_INT(v.dims[0], N);
    CHECK_EQ_INT(v.dims[2], FRAMES);
    CHECK_EQ_INT(v.type, IR_VOXEL_INT16);
    int bad = 0;
    for (size_t i = 0; i < (size_t)N * N * FRAMES && v.dims[0] == N && v.dims[2] == FRAMES; i++) {
      double got = ir_volume_value_at(&v, i % N, i / N % N, i / (N * N));
      if (got != stored_value(i) - 1024 && bad++ < 3)
        CHECK_MSG(0, "%s: voxel %zu is %g, expected %d", kinds[k].name, i, got, stored_value(i) - 1024);
    }
    CHECK_EQ_INT(bad, 0);
    ir_volume_free(&v);
  }
  free(pixels);
}

static void test_multiframe_file(void) {
  enum { FRAMES = 4 };
  int16_t *pixels = malloc(PER * FRAMES * sizeof *pixels);
  for (size_t i = 0; i < PER * FRAMES; i++) pixels[i] = (int16_t)(stored_value(i) - 2000);
  const char *path = scratch_path("enhanced.dcm");
  dicom_image_spec img = {.path = path, .rows = ROWS, .cols = COLS, .frames = FRAMES, .bits = 16,
                          .is_signed = 1, .samples = 1, .pixels = pixels, .slope = 1,
                          .intercept = 0, .row_spacing = 0.5, .col_spacing = 0.6,
                          .slice_spacing = 1.5, .position = {1, 2, 3},
                          .orientation = {1, 0, 0, 0, 1, 0}, .series_uid = "1.2.826.0.1.5",
                          .modality = "CT", .description = "enhanced"};
  char werr[256];
  CHECK_MSG(dicom_write_image(&img, werr, sizeof werr) == 0, "%s", werr);
  free(pixels);
  ir_volume v;
  char err[IR_ERR_LEN];
  ir_status status = load(path, &v, err);
  CHECK_MSG(status == IR_OK, "%s", err);
  if (status != IR_OK) return;
  CHECK_EQ_INT(v.type, IR_VOXEL_INT16);
  check_series_values(&v, FRAMES, 1, -2000, 0, "multi-frame");
  CHECK_NEAR(v.spacing[0], 0.6, 1e-6);
  CHECK_NEAR(v.spacing[1], 0.5, 1e-6);
  ir_volume_free(&v);
}

static void test_two_series_in_one_folder(void) {
  const char *dir = kept_path("two");
  series_spec a = {.dir = dir, .uid = "1.2.826.0.1.6", .description = "big", .slices = 5,
                   .slope = 1, .intercept = -1024, .gap = 2, .skip = -1};
  series_spec b = {.dir = dir, .uid = "1.2.826.0.1.7", .description = "small", .slices = 3,
                   .slope = 1, .intercept = 0, .gap = 1, .skip = -1, .first_index = 1000};
  write_series(&a);
  write_series(&b);
  ir_volume v;
  char err[IR_ERR_LEN];
  CHECK_MSG(load(dir, &v, err) == IR_OK, "%s", err);
  check_series_values(&v, 5, 1, -1024, 0, "the largest series");
  CHECK_STR_CONTAINS(v.note, "1.2.826.0.1.7");
  CHECK_STR_CONTAINS(v.note, "--series UID");
  ir_volume_free(&v);
  ir_volume_desc opt = {.series = "1.2.826.0.1.7"};
  CHECK_MSG(load_with(dir, &opt, &v, err) == IR_OK, "%s", err);
  check_series_values(&v, 3, 1, 0, 1000, "--series");
  CHECK_STR_CONTAINS(v.description, "small");
  ir_volume_free(&v);
  opt.series = "9.9.9";
  CHECK_EQ_INT(load_with(dir, &opt, &v, err), IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "no series 9.9.9 here");
  CHECK_STR_CONTAINS(err, "1.2.826.0.1.6");
  /* Through the program: the note on stderr, --series picks. */
  info_run r = run_inkray_info(fmt_path("'%s'", dir));
  CHECK_MSG(r.status == 0, "%s", r.err);
  CHECK_STR_CONTAINS(r.err, "1.2.826.0.1.7 (3 slices, CT 'small')");
  CHECK_STR_CONTAINS(r.out, "dims        8 x 5 x 5");
  info_run_free(&r);
  r = run_inkray_info(fmt_path("--series 1.2.826.0.1.7 '%s'", dir));
  CHECK_MSG(r.status == 0, "%s", r.err);
  CHECK_STR_CONTAINS(r.out, "dims        8 x 5 x 3");
  CHECK_STR_CONTAINS(r.out, "description small");
  info_run_free(&r);
  CHECK_INFO_REFUSES(fmt_path("--series 9.9.9 '%s'", dir), "no series 9.9.9 here");
}

static void test_missing_and_uneven_slices(void) {
  series_spec missing = {.dir = kept_path("missing"), .uid = "1.2.826.0.1.8", .slices = 6,
                         .slope = 1, .gap = 2, .skip = 2};
  write_series(&missing);
  ir_volume v;
  char err[IR_ERR_LEN];
  CHECK_EQ_INT(load(missing.dir, &v, err), IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "a missing slice?");
  CHECK_INFO_REFUSES(fmt_path("'%s'", missing.dir), "uneven slice spacing: 4 between");
  /* A small deviation loads, with a note giving the spacing used. */
  series_spec jitter = {.dir = kept_path("jitter"), .uid = "1.2.826.0.1.9", .slices = 6,
                        .slope = 1, .gap = 2, .skip = -1, .jitter = 0.1};
  write_series(&jitter);
  CHECK_MSG(load(jitter.dir, &v, err) == IR_OK, "%s", err);
  CHECK_STR_CONTAINS(v.note, "using their mean, 2");
  CHECK_NEAR(v.spacing[2], 2, 1e-4);
  ir_volume_free(&v);
  /* Two slices at one position. */
  series_spec dup = {.dir = kept_path("dup"), .uid = "1.2.826.0.1.10", .slices = 4, .slope = 1,
                     .gap = 2, .skip = -1, .jitter = -2};
  write_series(&dup);
  CHECK_EQ_INT(load(dup.dir, &v, err), IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "a duplicate?");
}

static void test_bad_files_are_one_line_and_exit_2(void) {
  /* Truncated pixel data in one slice. */
  series_spec s = {.dir = kept_path("truncated"), .uid = "1.2.826.0.1.11", .slices = 3,
                   .slope = 1, .gap = 1, .skip = -1};
  write_series(&s);
  const char *victim = fmt_path("%s/IM%02d_%s", s.dir, 3, s.uid);
  size_t n = 0;
  unsigned char *bytes = check_read_file(victim, &n);
  write_bytes(victim, bytes, n - 30);
  free(bytes);
  CHECK_INFO_REFUSES(fmt_path("'%s'", s.dir), "IM03_1.2.826.0.1.11: truncated");
  /* Huge claimed dims: refused before allocation. */
  series_spec h = {.dir = kept_path("huge"), .uid = "1.2.826.0.1.12", .slices = 2, .slope = 1,
                   .gap = 1, .skip = -1};
  write_series(&h);
  for (int k = 0; k < 2; k++) {
    const char *p = fmt_path("%s/IM%02d_%s", h.dir, (k * 7 + 3) % 11, h.uid);
    CHECK(dicom_patch_us(p, 0x0028, 0x0010, 65000) == 0);
    CHECK(dicom_patch_us(p, 0x0028, 0x0011, 65000) == 0);
  }
  CHECK_INFO_REFUSES(fmt_path("'%s'", h.dir), "more than the files can hold");
  /* A PixelRepresentation that is neither 0 nor 1, or bits that are not 8, 16 or 32: refused
   * with one line (GDCM's pixel format asserted on the first; found by the fuzzer). */
  series_spec pr = {.dir = kept_path("representation"), .uid = "1.2.826.0.1.20", .slices = 2,
                    .slope = 1, .gap = 1, .skip = -1};
  write_series(&pr);
  for (int k = 0; k < 2; k++)
    CHECK(dicom_patch_us(fmt_path("%s/IM%02d_%s", pr.dir, (k * 7 + 3) % 11, pr.uid), 0x0028, 0x0103, 7) == 0);
  CHECK_INFO_REFUSES(fmt_path("'%s'", pr.dir), "16-bit pixels of PixelRepresentation 7 are not supported");
  series_spec b12 = {.dir = kept_path("bits12"), .uid = "1.2.826.0.1.21", .slices = 2, .slope = 1,
                     .gap = 1, .skip = -1};
  write_series(&b12);
  for (int k = 0; k < 2; k++)
    CHECK(dicom_patch_us(fmt_path("%s/IM%02d_%s", b12.dir, (k * 7 + 3) % 11, b12.uid), 0x0028, 0x0100, 13) == 0);
  CHECK_INFO_REFUSES(fmt_path("'%s'", b12.dir), "13-bit pixels of PixelRepresentation 0");
  /* JPEG 2000 frames larger than the header's rows: refused before GDCM decodes them into a
   * buffer of the header's size (a heap overrun the fuzzer found). */
  {
    enum { N = 64, FRAMES = 2 };
    uint16_t *px = calloc((size_t)N * N * FRAMES, sizeof *px);
    const char *j2k = kept_path("j2k_rows.dcm");
    dicom_image_spec jimg = {.path = j2k, .rows = N, .cols = N, .frames = FRAMES, .bits = 16,
                             .samples = 1, .pixels = px, .slope = 1, .row_spacing = 1,
                             .col_spacing = 1, .slice_spacing = 1, .orientation = {1, 0, 0, 0, 1, 0},
                             .series_uid = "1.2.826.0.1.22", .compression = DICOM_J2K_LOSSLESS};
    char jerr[256];
    CHECK_MSG(dicom_write_image(&jimg, jerr, sizeof jerr) == 0, "%s", jerr);
    free(px);
    CHECK(dicom_patch_us(j2k, 0x0028, 0x0010, N / 2) == 0);
    CHECK_INFO_REFUSES(fmt_path("'%s'", j2k), "frame 1: a JPEG 2000 image of 64x64 in a 64x32 frame");
  }
  /* One slice of another size. */
  series_spec m = {.dir = kept_path("mismatch"), .uid = "1.2.826.0.1.15", .slices = 3, .slope = 1,
                   .gap = 1, .skip = -1};
  write_series(&m);
  CHECK(dicom_patch_us(fmt_path("%s/IM%02d_%s", m.dir, (1 * 7 + 3) % 11, m.uid), 0x0028, 0x0010, 4) == 0);
  CHECK_INFO_REFUSES(fmt_path("'%s'", m.dir), "the slices of a series must match");
  /* Colour. */
  unsigned char rgb[PER * 3];
  for (size_t i = 0; i < sizeof rgb; i++) rgb[i] = (unsigned char)i;
  const char *cdir = kept_path("colour");
  mkdir(cdir, 0755);
  dicom_image_spec img = {.path = fmt_path("%s/rgb.dcm", cdir), .rows = ROWS, .cols = COLS,
                          .frames = 1, .bits = 8, .samples = 3, .pixels = rgb, .slope = 1,
                          .row_spacing = 1, .col_spacing = 1, .orientation = {1, 0, 0, 0, 1, 0},
                          .series_uid = "1.2.826.0.1.13"};
  char werr[256];
  CHECK_MSG(dicom_write_image(&img, werr, sizeof werr) == 0, "%s", werr);
  CHECK_INFO_REFUSES(fmt_path("'%s'", cdir), "3 samples a pixel");
  /* A folder with no DICOM in it; a .dcm that is not DICOM; a missing file. */
  const char *empty = kept_path("nodicom");
  mkdir(empty, 0755);
  write_text(fmt_path("%s/a.txt", empty), "hello");
  CHECK_INFO_REFUSES(fmt_path("'%s'", empty), "no DICOM image files in the folder");
  write_text(scratch_path("fake.dcm"), "not dicom at all");
  CHECK_INFO_REFUSES(fmt_path("'%s'", scratch_path("fake.dcm")), "not a DICOM image file");
  CHECK_INFO_REFUSES(fmt_path("'%s'", scratch_path("gone.dcm")), "no such file");
  /* --series is refused for other formats. */
  CHECK_INFO_REFUSES("--series 1.2 builtin:sphere:8", "--series");
}
/* A slice that goes bad partway through a series is refused with its name and the place, never
 * skipped (the series would load without it) or read as far as it goes. */
static void test_corrupt_slice_in_a_series_is_named(void) {
  /* Compressed: the last fragment of the middle slice cut short. */
  series_spec s = {.dir = kept_path("cut_rle"), .uid = "1.2.826.0.1.18", .slices = 3, .slope = 1,
                   .gap = 1, .skip = -1, .compression = DICOM_RLE};
  write_series(&s);
  const char *victim = fmt_path("%s/IM%02d_%s", s.dir, (1 * 7 + 3) % 11, s.uid);
  size_t n = 0;
  unsigned char *bytes = check_read_file(victim, &n);
  write_bytes(victim, bytes, n - 10);
  free(bytes);
  ir_volume v;
  char err[IR_ERR_LEN];
  CHECK_EQ_INT(load(s.dir, &v, err), IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "IM10_1.2.826.0.1.18: truncated: a pixel data fragment claims");
  CHECK_STR_CONTAINS(err, "(at byte ");
  CHECK(strchr(err, '\n') == NULL);
  /* Uncompressed: the Pixel Data element claims more than the file holds. */
  series_spec u = {.dir = kept_path("cut_raw"), .uid = "1.2.826.0.1.19", .slices = 3, .slope = 1,
                   .gap = 1, .skip = -1};
  write_series(&u);
  victim = fmt_path("%s/IM%02d_%s", u.dir, (2 * 7 + 3) % 11, u.uid);
  bytes = check_read_file(victim, &n);
  write_bytes(victim, bytes, n - 7);
  free(bytes);
  CHECK_EQ_INT(load(u.dir, &v, err), IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "IM06_1.2.826.0.1.19: truncated: element (7FE0,0010) claims 80 bytes, 73 are left");
  /* The file named alone says the same. */
  CHECK_EQ_INT(load(victim, &v, err), IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "truncated: element (7FE0,0010) claims 80 bytes");
  CHECK_INFO_REFUSES(fmt_path("'%s'", u.dir), "IM06_1.2.826.0.1.19: truncated: element (7FE0,0010)");
}
/* The frame header of a JPEG or JPEG-LS slice must give the slice's size: GDCM's decoder
 * allocates what it says. A 2 KB JPEG-LS slice of 16x16 claiming 15056x65535 took 2 GB and 3 s
 * before it was checked (found by fuzz_dicom); now it is refused before decoding. */
static void test_jpeg_frame_larger_than_the_slice_is_refused(void) {
  static const dicom_compression kinds[] = {DICOM_JPEGLS_LOSSLESS, DICOM_JPEG_LOSSLESS};
  static const unsigned char sof[] = {0xf7, 0xc3}; /* SOF55 (JPEG-LS), SOF3 (lossless) */
  for (int k = 0; k < 2; k++) {
    series_spec s = {.dir = kept_path(k ? "big_jpeg" : "big_jpegls"), .uid = k ? "1.2.826.0.1.23" : "1.2.826.0.1.22",
                     .slices = 3, .slope = 1, .gap = 1, .skip = -1, .compression = kinds[k]};
    write_series(&s);
    const char *victim = fmt_path("%s/IM%02d_%s", s.dir, (2 * 7 + 3) % 11, s.uid);
    size_t n = 0;
    unsigned char *bytes = check_read_file(victim, &n);
    size_t at = 0;
    for (size_t i = 0; i + 9 < n && !at; i++)
      if (bytes[i] == 0xff && bytes[i + 1] == sof[k]) at = i;
    CHECK_MSG(at > 0, "no frame header in %s", victim);
    if (!at) {
      free(bytes);
      continue;
    }
    /* Y (lines) and X (columns) follow the length and the precision. */
    bytes[at + 5] = 0xff, bytes[at + 6] = 0xff, bytes[at + 7] = 0x3a, bytes[at + 8] = 0xd0;
    write_bytes(victim, bytes, n);
    free(bytes);
    ir_volume v;
    char err[IR_ERR_LEN];
    CHECK_EQ_INT(load(s.dir, &v, err), IR_ERR_INPUT);
    CHECK_STR_CONTAINS(err, fmt_path("IM06_%s: frame 1: a JPEG image of 15056x65535 in a 8x5 frame", s.uid));
  }
}

/* GDCM runs in child processes (data/dicom.cxx): when it aborts on a file, as it does on some
 * malformed input, or asks for far more memory than the file can need, that file is refused with
 * its name and the program goes on. No real file
 * is known to make it abort past the structure walk, so INKRAY_DICOM_FAULT has the child abort
 * as GDCM does, on the file it names. */
static void test_gdcm_abort_refuses_the_file(void) {
  series_spec s = {.dir = kept_path("abort"), .uid = "1.2.826.0.1.20", .slices = 3, .slope = 1,
                   .gap = 1, .skip = -1};
  write_series(&s);
  series_spec c = {.dir = kept_path("abort_rle"), .uid = "1.2.826.0.1.21", .slices = 3, .slope = 1,
                   .gap = 1, .skip = -1, .compression = DICOM_RLE};
  write_series(&c);
  char middle[64], rle_middle[64];
  snprintf(middle, sizeof middle, "IM%02d_%s", (1 * 7 + 3) % 11, s.uid);
  snprintf(rle_middle, sizeof rle_middle, "IM%02d_%s", (1 * 7 + 3) % 11, c.uid);
  ir_volume v;
  char err[IR_ERR_LEN];
  /* In the header: the folder and the file named alone. */
  setenv("INKRAY_DICOM_FAULT", middle, 1);
  CHECK_EQ_INT(load(s.dir, &v, err), IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, fmt_path("%s: GDCM failed reading its header (signal 6): the file is corrupt", middle));
  CHECK(strchr(err, '\n') == NULL);
  CHECK_EQ_INT(load(fmt_path("%s/%s", s.dir, middle), &v, err), IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "GDCM failed reading its header (signal 6)");
  CHECK_INFO_REFUSES(fmt_path("'%s'", s.dir), "GDCM failed reading its header (signal 6)");
  /* In the pixels, uncompressed and compressed. */
  setenv("INKRAY_DICOM_FAULT", fmt_path("%s:pixels", middle), 1);
  CHECK_EQ_INT(load(s.dir, &v, err), IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, fmt_path("%s: GDCM failed reading its pixel data (signal 6): the file is corrupt", middle));
  setenv("INKRAY_DICOM_FAULT", fmt_path("%s:pixels", rle_middle), 1);
  CHECK_EQ_INT(load(c.dir, &v, err), IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, fmt_path("%s: GDCM failed decoding its compressed pixel data (signal 6): the file is corrupt",
                                    rle_middle));
  CHECK_INFO_REFUSES(fmt_path("'%s'", c.dir), "GDCM failed decoding its compressed pixel data");
  /* A child that hangs is stopped at its deadline (INKRAY_DICOM_TIMEOUT seconds a file, plus a
   * second a MB of pixels), and the file refused. */
  setenv("INKRAY_DICOM_TIMEOUT", "1", 1);
  setenv("INKRAY_DICOM_FAULT", fmt_path("%s:hang", middle), 1);
  CHECK_EQ_INT(load(s.dir, &v, err), IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, fmt_path("%s: GDCM did not finish reading its header in 1 s and was stopped", middle));
  setenv("INKRAY_DICOM_FAULT", fmt_path("%s:pixels-hang", middle), 1);
  CHECK_EQ_INT(load(s.dir, &v, err), IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, fmt_path("%s: GDCM did not finish reading its pixel data in 1 s", middle));
  unsetenv("INKRAY_DICOM_TIMEOUT");
  /* A child may not allocate gigabytes for a slice of bytes: it gets bad_alloc. Not under
   * AddressSanitizer, where the child has no cap (data/dicom.cxx, limit_memory: ASan's shadow
   * memory counts as data). */
#if defined(__SANITIZE_ADDRESS__)
  printf("  (the child's memory cap is off under AddressSanitizer: its case is not run)\n");
#else
  setenv("INKRAY_DICOM_FAULT", fmt_path("%s:pixels-1GiB", middle), 1);
  CHECK_EQ_INT(load(s.dir, &v, err), IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, fmt_path("%s: GDCM asked for more memory than a 80-byte slice can need", middle));
#endif
  /* The same loads, GDCM not aborting, read every value: the children hand over all of it. */
  unsetenv("INKRAY_DICOM_FAULT");
  CHECK_MSG(load(s.dir, &v, err) == IR_OK, "%s", err);
  check_series_values(&v, 3, 1, 0, 0, "after the aborts");
  ir_volume_free(&v);
  CHECK_MSG(load(c.dir, &v, err) == IR_OK, "%s", err);
  check_series_values(&v, 3, 1, 0, 0, "rle after the aborts");
  ir_volume_free(&v);
}
#else
static void test_refused_without_gdcm(void) {
  const char *dir = kept_path("series");
  mkdir(dir, 0755);
  write_text(fmt_path("%s/IM0001", dir), "anything");
  ir_volume v;
  char err[IR_ERR_LEN];
  CHECK_EQ_INT(load(dir, &v, err), IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "inkray was built without DICOM support (install libgdcm-dev and rebuild)");
  CHECK_INFO_REFUSES(fmt_path("'%s'", dir), "built without DICOM support");
}
#endif

int main(void) {
#ifdef INKRAY_HAVE_GDCM
  RUN(test_ct_series_sorted_by_position_with_rescale);
  RUN(test_non_integer_slope_gives_float32);
  RUN(test_rescaling_that_differs_by_slice);
  RUN(test_compressed_transfer_syntaxes);
  RUN(test_jpeg2000_and_jpegls_multiframe);
  RUN(test_multiframe_file);
  RUN(test_two_series_in_one_folder);
  RUN(test_missing_and_uneven_slices);
  RUN(test_bad_files_are_one_line_and_exit_2);
  RUN(test_corrupt_slice_in_a_series_is_named);
  RUN(test_jpeg_frame_larger_than_the_slice_is_refused);
  RUN(test_gdcm_abort_refuses_the_file);
#else
  RUN(test_refused_without_gdcm);
#endif
  return check_summary();
}
