/* Time series (data/series.c): every source form lists its steps in order and reads each one's
 * voxels exactly (a printf pattern, a glob in natural order, a folder of headers or of raw files,
 * a ParaView collection by timestep, 4-D NRRD attached, per-step files and gzip read out of
 * order, 4-D NIfTI plain and gzip); the bad cases are refused before any voxel is read with a
 * message naming the step (missing, different dims or type, short, a pattern matching nothing,
 * several parts per timestep), and a corrupt step in the middle fails when it is read, naming
 * it, while the others read. */
#include "tests/data/data_test_util.h"

enum { NX = 12, NY = 10, NZ = 6, VOX = NX * NY * NZ };

/* Step k's voxel i: different in every step and voxel, so that a shifted or wrong step shows. */
static uint8_t value8(int k, size_t i) { return (uint8_t)(i * 7u + (unsigned)k * 31u + 1u); }
static uint16_t value16(int k, size_t i) { return (uint16_t)(i * 40503u + (unsigned)k * 977u); }

static void step_bytes8(int k, uint8_t *out) {
  for (size_t i = 0; i < VOX; i++) out[i] = value8(k, i);
}

static const char *folder(const char *name) {
  const char *path = kept_path(name);
  mkdir(path, 0755);
  return path;
}

static ir_series *open_ok(const char *source, const ir_volume_desc *options) {
  ir_volume_desc d = options ? *options : (ir_volume_desc){0};
  d.source = source;
  ir_series *s = NULL;
  char err[IR_ERR_LEN];
  ir_status st = ir_series_open(&d, &s, err);
  CHECK_MSG(st == IR_OK, "%s: %s", source, err);
  return s;
}

static void expect_open_refused(const char *source, const ir_volume_desc *options, const char *part) {
  ir_volume_desc d = options ? *options : (ir_volume_desc){0};
  d.source = source;
  ir_series *s = NULL;
  char err[IR_ERR_LEN] = "";
  ir_status st = ir_series_open(&d, &s, err);
  CHECK_MSG(st == IR_ERR_INPUT, "%s: opened, expected a refusal with '%s'", source, part);
  CHECK_MSG(strstr(err, part) != NULL, "%s: message '%s' lacks '%s'", source, err, part);
  CHECK_MSG(strchr(err, '\n') == NULL, "%s: message on several lines", source);
  ir_series_close(s);
}

/* Reads every step (in `order`, or 0..n-1) and checks uint8 values against value8. */
static void check_steps8(ir_series *s, int n, const int *order) {
  CHECK_EQ_INT(ir_series_length(s), n);
  const ir_volume *h = ir_series_header(s);
  CHECK(h->dims[0] == NX && h->dims[1] == NY && h->dims[2] == NZ && h->type == IR_VOXEL_UINT8);
  ir_volume v = {0};
  for (int j = 0; j < n; j++) {
    int k = order ? order[j] : j;
    ir_volume_desc o = {.recycle = &v};
    ir_volume next;
    char err[IR_ERR_LEN];
    ir_status st = ir_series_read(s, (size_t)k, &o, &next, err);
    CHECK_MSG(st == IR_OK, "step %d: %s", k, err);
    if (st != IR_OK) continue;
    bool same = true;
    for (size_t i = 0; i < VOX && same; i++) same = ((uint8_t *)next.voxels)[i] == value8(k, i);
    CHECK_MSG(same, "step %d (%s): wrong voxels", k, ir_series_step_name(s, (size_t)k));
    v = next;
  }
  ir_volume_free(&v);
}

static void test_a_pattern_lists_every_number_between_the_first_and_last(void) {
  const char *dir = folder("pattern");
  uint8_t data[VOX];
  for (int k = 0; k < 5; k++) {
    step_bytes8(k, data);
    write_bytes(fmt_path("%s/moving_%04d.raw", dir, k + 3), data, VOX); /* numbers 3..7 */
  }
  write_bytes(fmt_path("%s/other_0001.raw", dir), data, VOX);
  const char *pattern = fmt_path("%s/moving_%%04d.raw", dir);
  CHECK(ir_series_detect(pattern));
  ir_volume_desc opts = {.dims = {NX, NY, NZ}, .type_given = true, .type = IR_VOXEL_UINT8};
  ir_series *s = open_ok(pattern, &opts);
  if (!s) return;
  check_steps8(s, 5, NULL);
  CHECK(strcmp(ir_series_step_name(s, 0), "moving_0003.raw") == 0);
  CHECK_NEAR(ir_series_step_time(s, 4), 4.0, 0);
  ir_series_close(s);
  /* Number 5 gone: a missing step, named. */
  remove(fmt_path("%s/moving_0005.raw", dir));
  expect_open_refused(pattern, &opts, "step 3 of 5 is missing: no file moving_0005.raw");
  expect_open_refused(fmt_path("%s/nothing_%%03d.raw", dir), &opts, "matches no file");
}

static void test_a_glob_sorts_steps_naturally(void) {
  const char *dir = folder("glob");
  uint8_t data[VOX];
  const int numbers[3] = {10, 2, 1};
  for (int j = 0; j < 3; j++) {
    step_bytes8(j, data);
    write_bytes(fmt_path("%s/g_%d.raw", dir, numbers[j]), data, VOX);
    write_text(fmt_path("%s/g_%d.nhdr", dir, numbers[j]),
               fmt_path("NRRD0004\ntype: uchar\ndimension: 3\nsizes: %d %d %d\nencoding: raw\ndata file: g_%d.raw\n\n", NX,
                        NY, NZ, numbers[j]));
  }
  ir_series *s = open_ok(fmt_path("%s/g_*.nhdr", dir), NULL);
  if (!s) return;
  /* Natural order: g_1, g_2, g_10 hold steps 2, 1, 0 of the writing loop. */
  const int order[3] = {2, 1, 0};
  CHECK_EQ_INT(ir_series_length(s), 3);
  ir_volume v;
  char err[IR_ERR_LEN];
  for (int j = 0; j < 3; j++) {
    CHECK(ir_series_read(s, (size_t)j, NULL, &v, err) == IR_OK);
    CHECK(((uint8_t *)v.voxels)[5] == value8(order[j], 5));
    ir_volume_free(&v);
  }
  CHECK(strcmp(ir_series_step_name(s, 2), "g_10.nhdr") == 0);
  ir_series_close(s);
  expect_open_refused(fmt_path("%s/none_*.nrrd", dir), NULL, "matches no file");
}

static void test_a_folder_plays_its_headers_or_its_raw_files(void) {
  const char *headers = folder("folder_headers"), *raws = folder("folder_raw");
  uint8_t data[VOX];
  for (int k = 0; k < 4; k++) {
    step_bytes8(k, data);
    write_bytes(fmt_path("%s/d%d.raw", headers, k), data, VOX);
    write_text(fmt_path("%s/s%d.mhd", headers, k),
               fmt_path("NDims = 3\nDimSize = %d %d %d\nElementType = MET_UCHAR\nElementDataFile = d%d.raw\n", NX, NY, NZ, k));
    write_bytes(fmt_path("%s/t_%d_%dx%dx%d_uint8.raw", raws, k, NX, NY, NZ), data, VOX);
  }
  CHECK(ir_series_detect(headers) && ir_series_detect(raws));
  ir_series *s = open_ok(headers, NULL);
  if (s) check_steps8(s, 4, NULL);
  ir_series_close(s);
  s = open_ok(raws, NULL);
  if (s) check_steps8(s, 4, NULL);
  ir_series_close(s);
}

static void test_steps_that_differ_are_refused_naming_the_step(void) {
  const char *dir = folder("differ");
  uint8_t data[VOX * 2] = {0};
  write_bytes(fmt_path("%s/a_0_%dx%dx%d_uint8.raw", dir, NX, NY, NZ), data, VOX);
  write_bytes(fmt_path("%s/a_1_%dx%dx%d_uint8.raw", dir, NX, NY, NZ + 1), data, NX * NY * (NZ + 1));
  expect_open_refused(fmt_path("%s/a_*", dir), NULL, "step 2 of 2");
  expect_open_refused(fmt_path("%s/a_*", dir), NULL, "every step must have the same dims and type");
  const char *types = folder("types");
  write_bytes(fmt_path("%s/b_0_%dx%dx%d_uint8.raw", types, NX, NY, NZ), data, VOX);
  write_bytes(fmt_path("%s/b_1_%dx%dx%d_uint16.raw", types, NX, NY, NZ), data, VOX * 2);
  expect_open_refused(types, NULL, "uint16, but");
  /* A short step in the middle: refused before any voxel is read. */
  const char *shortdir = folder("short");
  for (int k = 0; k < 5; k++)
    write_bytes(fmt_path("%s/c_%d_%dx%dx%d_uint8.raw", shortdir, k, NX, NY, NZ), data, k == 2 ? VOX - 3 : VOX);
  expect_open_refused(shortdir, NULL, "step 3 of 5");
  expect_open_refused(shortdir, NULL, "expected 720");
}

static void test_kept_bad_steps_fail_when_read_and_the_others_read(void) {
  const char *dir = folder("keep");
  uint8_t data[VOX];
  for (int k = 0; k < 6; k++) {
    if (k == 2) continue; /* missing */
    step_bytes8(k, data);
    size_t n = k == 3 ? VOX - 5 : VOX; /* short */
    write_bytes(fmt_path("%s/k_%02d.raw", dir, k), data, n);
  }
  write_bytes(fmt_path("%s/k_04.raw", dir), data, 10); /* short too */
  ir_volume_desc opts = {.dims = {NX, NY, NZ}, .type_given = true, .type = IR_VOXEL_UINT8, .keep_bad_steps = true};
  const char *pattern = fmt_path("%s/k_%%02d.raw", dir);
  ir_series *s = open_ok(pattern, &opts);
  if (!s) return;
  CHECK_EQ_INT(ir_series_length(s), 6);
  CHECK_EQ_INT(ir_series_bad_steps(s), 3);
  const int bad[] = {2, 3, 4};
  const char *parts[] = {"step 3 of 6", "step 4 of 6", "step 5 of 6"};
  for (int j = 0; j < 3; j++) {
    ir_volume v;
    char err[IR_ERR_LEN];
    CHECK(ir_series_read(s, (size_t)bad[j], NULL, &v, err) == IR_ERR_INPUT);
    CHECK_MSG(strstr(err, parts[j]) != NULL, "%s", err);
  }
  const int good[] = {0, 1, 5};
  for (int j = 0; j < 3; j++) {
    ir_volume v;
    char err[IR_ERR_LEN];
    CHECK_MSG(ir_series_read(s, (size_t)good[j], NULL, &v, err) == IR_OK, "%s", err);
    CHECK(v.voxels && ((uint8_t *)v.voxels)[3] == value8(good[j], 3));
    ir_volume_free(&v);
  }
  ir_series_close(s);
  /* Without the switch the same series is refused; a bad first step always is. */
  opts.keep_bad_steps = false;
  expect_open_refused(pattern, &opts, "step 3 of 6 is missing");
  opts.keep_bad_steps = true;
  write_bytes(fmt_path("%s/k_00.raw", dir), data, 7);
  expect_open_refused(pattern, &opts, "step 1 of 6");
}

static void test_a_corrupt_step_fails_when_read_and_the_others_read(void) {
  const char *dir = folder("corrupt");
  uint8_t data[VOX];
  for (int k = 0; k < 3; k++) {
    step_bytes8(k, data);
    size_t zn = 0;
    unsigned char *z = deflate_bytes(data, VOX, 31, &zn);
    if (k == 1) z[zn / 2] ^= 0x5a; /* inside the deflate stream */
    write_bytes(fmt_path("%s/z_%d_%dx%dx%d_uint8.raw.gz", dir, k, NX, NY, NZ), z, zn);
    free(z);
  }
  ir_series *s = open_ok(dir, NULL);
  if (!s) return;
  ir_volume v;
  char err[IR_ERR_LEN];
  CHECK(ir_series_read(s, 0, NULL, &v, err) == IR_OK);
  ir_volume_free(&v);
  CHECK(ir_series_read(s, 1, NULL, &v, err) == IR_ERR_INPUT);
  CHECK_MSG(strstr(err, "step 2 of 3") && strstr(err, "z_1_"), "%s", err);
  CHECK(ir_series_read(s, 2, NULL, &v, err) == IR_OK && ((uint8_t *)v.voxels)[9] == value8(2, 9));
  ir_volume_free(&v);
  ir_series_close(s);
}

/* ---- 4-D files ------------------------------------------------------------------------------------ */
static void test_4d_nrrd_attached_per_step_files_and_gzip(void) {
  enum { T = 4 };
  size_t bytes = VOX * 2 * T;
  unsigned char *all = malloc(bytes), *be = malloc(bytes);
  for (int k = 0; k < T; k++)
    for (size_t i = 0; i < VOX; i++) {
      uint16_t x = value16(k, i);
      memcpy(all + ((size_t)k * VOX + i) * 2, &x, 2);
      put_be16(be + ((size_t)k * VOX + i) * 2, x);
    }
  /* Attached, big-endian, with the time axis's spacing and direction as teem writes them. */
  const char *attached = scratch_path("run.nrrd");
  write_text(attached, fmt_path("NRRD0005\ntype: ushort\ndimension: 4\nsizes: %d %d %d %d\nendian: big\nencoding: raw\n"
                                "space: right-anterior-superior-time\nspace directions: (1,0,0) (0,2,0) (0,0,3) none\n"
                                "kinds: domain domain domain time\n\n",
                                NX, NY, NZ, T));
  append_bytes(attached, be, bytes);
  /* One file per step. */
  for (int k = 0; k < T; k++) write_bytes(scratch_path(fmt_path("step%d.raw", k)), all + (size_t)k * VOX * 2, VOX * 2);
  write_text(scratch_path("steps.nhdr"), fmt_path("NRRD0004\ntype: ushort\ndimension: 4\nsizes: %d %d %d %d\nendian: little\n"
                                                  "encoding: raw\ndata file: step%%d.raw 0 %d 1\n\n",
                                                  NX, NY, NZ, T, T - 1));
  /* gzip, one stream for all steps. */
  size_t zn = 0;
  unsigned char *z = deflate_bytes(all, bytes, 31, &zn);
  write_bytes(scratch_path("steps.raw.gz"), z, zn);
  free(z);
  write_text(scratch_path("gz.nhdr"), fmt_path("NRRD0004\ntype: ushort\ndimension: 4\nsizes: %d %d %d %d\nendian: little\n"
                                               "encoding: gzip\ndata file: steps.raw.gz\n\n",
                                               NX, NY, NZ, T));
  const char *sources[3] = {kept_path("run.nrrd"), kept_path("steps.nhdr"), kept_path("gz.nhdr")};
  const int order[T] = {2, 0, 3, 1}; /* back and forth: the gzip stream starts again */
  for (int f = 0; f < 3; f++) {
    const char *src = sources[f];
    CHECK_MSG(ir_series_detect(src), "%s", src);
    ir_series *s = open_ok(src, NULL);
    if (!s) continue;
    CHECK_EQ_INT(ir_series_length(s), T);
    const ir_volume *h = ir_series_header(s);
    CHECK(h->type == IR_VOXEL_UINT16 && h->dims[2] == NZ);
    if (f == 0) CHECK(h->spacing[1] == 2.0f && h->spacing[2] == 3.0f && h->up_axis == IR_AXIS_Z);
    for (int j = 0; j < T; j++) {
      ir_volume v;
      char err[IR_ERR_LEN];
      CHECK_MSG(ir_series_read(s, (size_t)order[j], NULL, &v, err) == IR_OK, "%s step %d: %s", src, order[j], err);
      bool same = v.voxels != NULL;
      for (size_t i = 0; i < VOX && same; i++) same = ((uint16_t *)v.voxels)[i] == value16(order[j], i);
      CHECK_MSG(same, "%s step %d: wrong voxels", src, order[j]);
      ir_volume_free(&v);
    }
    ir_series_close(s);
    /* Where one volume is wanted, a line saying what to do. */
    ir_volume v;
    char err[IR_ERR_LEN];
    CHECK(load(src, &v, err) == IR_ERR_INPUT);
    CHECK_MSG(strstr(err, "a time series of 4 steps") != NULL, "%s", err);
  }
  free(all);
  free(be);
}

static void nifti_4d_header(unsigned char *h, int t, int dim5) {
  memset(h, 0, 352);
  put_le32(h, 348);
  const int16_t dim[8] = {dim5 > 1 ? 5 : 4, NX, NY, NZ, (int16_t)t, (int16_t)dim5, 1, 1};
  for (int k = 0; k < 8; k++) put_le16(h + 40 + 2 * k, (uint16_t)dim[k]);
  put_le16(h + 70, 2); /* UINT8 */
  put_le16(h + 72, 8);
  float one = 1.0f, offset = 352.0f;
  uint32_t bits;
  for (int k = 0; k < 8; k++) {
    memcpy(&bits, &one, 4);
    put_le32(h + 76 + 4 * k, bits);
  }
  memcpy(&bits, &offset, 4);
  put_le32(h + 108, bits);
  memcpy(h + 344, "n+1\0", 4);
}

static void test_4d_nifti_plain_and_gzip(void) {
  enum { T = 3 };
  unsigned char *file = malloc(352 + VOX * T);
  nifti_4d_header(file, T, 1);
  for (int k = 0; k < T; k++) step_bytes8(k, file + 352 + (size_t)k * VOX);
  write_bytes(scratch_path("fmri.nii"), file, 352 + VOX * T);
  size_t zn = 0;
  unsigned char *z = deflate_bytes(file, 352 + VOX * T, 31, &zn);
  write_bytes(scratch_path("fmri.nii.gz"), z, zn);
  free(z);
  const int order[T] = {1, 2, 0};
  ir_series *s = open_ok(kept_path("fmri.nii"), NULL);
  if (s) check_steps8(s, T, order);
  ir_series_close(s);
  s = open_ok(kept_path("fmri.nii.gz"), NULL);
  if (s) check_steps8(s, T, order);
  ir_series_close(s);
  nifti_4d_header(file, T, 2);
  write_bytes(scratch_path("five.nii"), file, 352 + VOX * T);
  ir_volume v;
  char err[IR_ERR_LEN];
  CHECK(load(scratch_path("five.nii"), &v, err) == IR_ERR_INPUT && strstr(err, "dim[5] = 2"));
  free(file);
}

/* ---- ParaView collections ------------------------------------------------------------------------ */
static void write_vti8(const char *path, int k) {
  char *text = malloc(VOX * 4 + 1024);
  int n = sprintf(text, "<?xml version=\"1.0\"?>\n<VTKFile type=\"ImageData\" version=\"1.0\">\n"
                        "<ImageData WholeExtent=\"0 %d 0 %d 0 %d\" Origin=\"0 0 0\" Spacing=\"1 1 1\">\n"
                        "<Piece Extent=\"0 %d 0 %d 0 %d\"><PointData Scalars=\"f\">\n"
                        "<DataArray type=\"UInt8\" Name=\"f\" format=\"ascii\">",
                  NX - 1, NY - 1, NZ - 1, NX - 1, NY - 1, NZ - 1);
  for (size_t i = 0; i < VOX; i++) n += sprintf(text + n, "%u ", value8(k, i));
  sprintf(text + n, "</DataArray>\n</PointData></Piece></ImageData></VTKFile>\n");
  write_text(path, text);
  free(text);
}

static void test_a_pvd_collection_plays_by_timestep(void) {
  const char *dir = folder("pvd");
  for (int k = 0; k < 3; k++) write_vti8(fmt_path("%s/f%d.vti", dir, k), k);
  /* Listed out of order; the timesteps give the order. */
  write_text(fmt_path("%s/run.pvd", dir),
             "<?xml version=\"1.0\"?>\n<VTKFile type=\"Collection\" version=\"0.1\">\n<Collection>\n"
             "<DataSet timestep=\"0.5\" group=\"\" part=\"0\" file=\"f1.vti\"/>\n"
             "<DataSet timestep=\"0.25\" group=\"\" part=\"0\" file=\"f0.vti\"/>\n"
             "<DataSet timestep=\"2\" group=\"\" part=\"0\" file=\"f2.vti\"/>\n</Collection>\n</VTKFile>\n");
  const char *pvd = kept_path("pvd/run.pvd");
  CHECK(ir_series_detect(pvd));
  ir_series *s = open_ok(pvd, NULL);
  if (s) {
    check_steps8(s, 3, NULL);
    CHECK_NEAR(ir_series_step_time(s, 0), 0.25, 0);
    CHECK_NEAR(ir_series_step_time(s, 2), 2.0, 0);
  }
  ir_series_close(s);
  write_text(fmt_path("%s/parts.pvd", dir),
             "<VTKFile type=\"Collection\"><Collection><DataSet timestep=\"0\" part=\"0\" file=\"f0.vti\"/>"
             "<DataSet timestep=\"0\" part=\"1\" file=\"f1.vti\"/></Collection></VTKFile>");
  expect_open_refused(fmt_path("%s/parts.pvd", dir), NULL, "several parts");
  write_text(fmt_path("%s/lost.pvd", dir),
             "<VTKFile type=\"Collection\"><Collection><DataSet timestep=\"0\" file=\"f0.vti\"/>"
             "<DataSet timestep=\"1\" file=\"gone.vti\"/></Collection></VTKFile>");
  expect_open_refused(fmt_path("%s/lost.pvd", dir), NULL, "step 2 of 2");
}

static void test_single_volumes_are_not_series(void) {
  uint8_t data[VOX] = {0};
  write_bytes(scratch_path("one_12x10x6_uint8.raw"), data, VOX);
  CHECK(!ir_series_detect(scratch_path("one_12x10x6_uint8.raw")));
  CHECK(!ir_series_detect("builtin:sphere:16"));
  CHECK(!ir_series_detect(scratch_path("slice_%03d.tif")));
  CHECK(!ir_series_detect(data_path("headsq/quarter.nhdr")));
  CHECK(!ir_series_detect(data_path("headsq")));
}

int main(void) {
  RUN(test_a_pattern_lists_every_number_between_the_first_and_last);
  RUN(test_a_glob_sorts_steps_naturally);
  RUN(test_a_folder_plays_its_headers_or_its_raw_files);
  RUN(test_steps_that_differ_are_refused_naming_the_step);
  RUN(test_kept_bad_steps_fail_when_read_and_the_others_read);
  RUN(test_a_corrupt_step_fails_when_read_and_the_others_read);
  RUN(test_4d_nrrd_attached_per_step_files_and_gzip);
  RUN(test_4d_nifti_plain_and_gzip);
  RUN(test_a_pvd_collection_plays_by_timestep);
  RUN(test_single_volumes_are_not_series);
  return check_summary();
}
