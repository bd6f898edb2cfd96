/* Bad input: every failure is IR_ERR_INPUT (IR_ERR_RUNTIME for memory) with one line that
 * names the file and the reason, and leaves the volume empty. */
#include <math.h>

#include "tests/data/data_test_util.h"

/* Loads `source` with `opt`, expects `status` and a one-line message holding every reason. */
static void expect_failure_with(const char *source, const ir_volume_desc *opt, ir_status status,
                                const char *name_part, const char *reason,
                                const char *reason2) {
  ir_volume v;
  char err[IR_ERR_LEN];
  ir_status got = load_with(source, opt, &v, err);
  if (getenv("INKRAY_TEST_VERBOSE")) printf("  %s\n", err);
  CHECK_MSG(got == status, "%s: status %d, expected %d (%s)", source, (int)got, (int)status, err);
  CHECK_STR_CONTAINS(err, name_part);
  CHECK_STR_CONTAINS(err, reason);
  if (reason2) CHECK_STR_CONTAINS(err, reason2);
  CHECK_MSG(strchr(err, '\n') == NULL, "message is more than one line: %s", err);
  CHECK(v.voxels == NULL && v.bytes == 0);
  if (got == IR_OK) ir_volume_free(&v);
}

static void expect_input_error(const char *source, const char *name_part, const char *reason,
                               const char *reason2) {
  expect_failure_with(source, NULL, IR_ERR_INPUT, name_part, reason, reason2);
}

/* A small valid uint8 payload for headers to point at. */
static void write_u8(const char *name, size_t n) {
  unsigned char buf[256] = {0};
  write_bytes(scratch_path(name), buf, n);
}

static void test_missing_directory_and_unreadable_files(void) {
  expect_input_error(scratch_path("missing_4x4x4_uint8.raw"), "missing_4x4x4_uint8.raw",
                     "no such file", NULL);
  /* A folder is a DICOM series or TIFF slices; one with neither says so (or that DICOM was
   * not built in). */
  expect_input_error(scratch_dir(), scratch_dir(), "DICOM", NULL);
  write_u8("locked_4x4x4_uint8.raw", 64);
  chmod(scratch_path("locked_4x4x4_uint8.raw"), 0);
  FILE *f = fopen(scratch_path("locked_4x4x4_uint8.raw"), "rb");
  if (f) {
    fclose(f); /* running as root: permissions do not stop reads */
    SKIP(unreadable_file, "permissions do not apply to this user (root)");
  } else {
    expect_input_error(scratch_path("locked_4x4x4_uint8.raw"), "locked_4x4x4_uint8.raw",
                       "cannot", "ermission denied");
  }
  expect_input_error(scratch_path("missing.nrrd"), "missing.nrrd", "no such file", NULL);
}

static void test_raw_size_mismatch_names_both_sizes(void) {
  write_u8("short_4x4x4_uint8.raw", 60);
  expect_input_error(scratch_path("short_4x4x4_uint8.raw"), "short_4x4x4_uint8.raw",
                     "60 bytes, expected 64 for 4x4x4 uint8", NULL);
  write_u8("long_2x2x2_int16.raw", 20);
  expect_input_error(scratch_path("long_2x2x2_int16.raw"), "long_2x2x2_int16.raw",
                     "20 bytes, expected 16 for 2x2x2 int16", NULL);
  ir_volume_desc opt = {.dims = {3, 3, 3}, .type_given = true, .type = IR_VOXEL_FLOAT32};
  expect_failure_with(scratch_path("short_4x4x4_uint8.raw"), &opt, IR_ERR_INPUT,
                      "short_4x4x4_uint8.raw", "60 bytes, expected 108 for 3x3x3 float32", NULL);
}

static void test_zero_and_overflowing_dims(void) {
  write_u8("zero_0x4x4_uint8.raw", 16);
  expect_input_error(scratch_path("zero_0x4x4_uint8.raw"), "zero_0x4x4_uint8.raw", "0x4x4",
                     "at least 1");
  write_u8("huge_1099511627776x1099511627776x16_float32.raw", 16);
  expect_input_error(scratch_path("huge_1099511627776x1099511627776x16_float32.raw"),
                     "huge_1099511627776x1099511627776x16_float32.raw", "overflows size_t", NULL);
  write_text(scratch_path("zero.nhdr"), "NRRD0004\ntype: uchar\ndimension: 3\nsizes: 4 0 4\n"
                                        "encoding: raw\ndata file: z.raw\n");
  write_u8("z.raw", 16);
  expect_input_error(scratch_path("zero.nhdr"), "zero.nhdr", "4x0x4", "at least 1");
  write_text(scratch_path("over.nhdr"), "NRRD0004\ntype: float\ndimension: 3\nendian: little\n"
                                        "sizes: 4294967296 4294967296 4294967296\n"
                                        "encoding: raw\ndata file: z.raw\n");
  expect_input_error(scratch_path("over.nhdr"), "over.nhdr", "overflows size_t", NULL);
}

static void test_unknown_type_words(void) {
  write_u8("t_2x2x2_float64.raw", 64);
  expect_input_error(scratch_path("t_2x2x2_float64.raw"), "t_2x2x2_float64.raw",
                     "unknown voxel type 'float64'", "--type");
  write_text(scratch_path("double.nhdr"), "NRRD0004\ntype: double\ndimension: 3\nsizes: 2 2 2\n"
                                          "endian: little\nencoding: raw\ndata file: z.raw\n");
  expect_input_error(scratch_path("double.nhdr"), "double.nhdr", "line 2", "type 'double'");
  write_text(scratch_path("double.mhd"), "NDims = 3\nDimSize = 2 2 2\nElementType = MET_DOUBLE\n"
                                         "ElementDataFile = z.raw\n");
  expect_input_error(scratch_path("double.mhd"), "double.mhd", "line 3", "MET_DOUBLE");
  write_text(scratch_path("char.dat"), "ObjectFileName: z.raw\nResolution: 2 2 2\nFormat: CHAR\n");
  expect_input_error(scratch_path("char.dat"), "char.dat", "line 3", "Format CHAR");
  unsigned char nii[352] = {0};
  put_le32(nii, 348);
  put_le16(nii + 40, 3);
  for (int k = 1; k <= 3; k++) put_le16(nii + 40 + 2 * k, 2);
  put_le16(nii + 70, 64);
  put_le32(nii + 108, float_bits(352));
  memcpy(nii + 344, "n+1\0", 4);
  write_bytes(scratch_path("double.nii"), nii, sizeof nii);
  expect_input_error(scratch_path("double.nii"), "double.nii", "datatype 64", "FLOAT64");
  put_le16(nii + 70, 2);
  put_le16(nii + 40, 4);
  put_le16(nii + 48, 5);
  write_bytes(scratch_path("series.nii"), nii, sizeof nii);
  /* A 4-D file is a time series: refused where one volume is wanted, saying how to open it. */
  expect_input_error(scratch_path("series.nii"), "series.nii", "a time series of 5 steps", "open it as one");
  write_bytes(scratch_path("stub.nii"), nii, 100);
  expect_input_error(scratch_path("stub.nii"), "stub.nii", "too short", NULL);
}

static void test_unknown_endian_words(void) {
  write_text(scratch_path("middle.nhdr"), "NRRD0004\ntype: short\ndimension: 3\nsizes: 2 2 2\n"
                                          "endian: middle\nencoding: raw\ndata file: z.raw\n");
  expect_input_error(scratch_path("middle.nhdr"), "middle.nhdr", "line 5", "endian 'middle'");
  write_text(scratch_path("maybe.mhd"), "NDims = 3\nDimSize = 2 2 2\nElementType = MET_SHORT\n"
                                        "ElementByteOrderMSB = Maybe\nElementDataFile = z.raw\n");
  expect_input_error(scratch_path("maybe.mhd"), "maybe.mhd", "line 4", "True or False");
  write_text(scratch_path("side.dat"), "ObjectFileName: z.raw\nResolution: 2 2 2\nFormat: USHORT\n"
                                       "Endianess: SIDEWAYS\n");
  expect_input_error(scratch_path("side.dat"), "side.dat", "line 4", "LITTLE or BIG");
  write_text(scratch_path("noendian.nhdr"), "NRRD0004\ntype: short\ndimension: 3\nsizes: 2 2 2\n"
                                            "encoding: raw\ndata file: z.raw\n");
  expect_input_error(scratch_path("noendian.nhdr"), "noendian.nhdr", "endian", "missing");
}

static void test_malformed_header_lines_give_line_numbers(void) {
  write_text(scratch_path("bad.nhdr"), "NRRD0004\ntype: uchar\n# fine comment\n"
                                       "this line has no colon\nsizes: 2 2 2\n");
  expect_input_error(scratch_path("bad.nhdr"), "bad.nhdr", "line 4", "expected 'field: value'");
  write_text(scratch_path("sizes.nhdr"), "NRRD0004\ntype: uchar\ndimension: 3\nsizes: 2 two 2\n");
  expect_input_error(scratch_path("sizes.nhdr"), "sizes.nhdr", "line 4", "sizes");
  write_text(scratch_path("bad.mhd"), "NDims = 3\n\nDimSize 2 2 2\n");
  expect_input_error(scratch_path("bad.mhd"), "bad.mhd", "line 3", "Key = Value");
  write_text(scratch_path("bad.dat"), "ObjectFileName: z.raw\nResolution 2 2 2\n");
  expect_input_error(scratch_path("bad.dat"), "bad.dat", "line 2", "Key: value");
  write_text(scratch_path("magic.nrrd"), "NRRX0004\ntype: uchar\n");
  expect_input_error(scratch_path("magic.nrrd"), "magic.nrrd", "not a NRRD file", NULL);
  write_text(scratch_path("nofield.nhdr"), "NRRD0004\ntype: uchar\ndimension: 3\nencoding: raw\n"
                                           "data file: z.raw\n");
  expect_input_error(scratch_path("nofield.nhdr"), "nofield.nhdr", "missing", "sizes");
  write_text(scratch_path("bzip.nhdr"), "NRRD0004\ntype: uchar\ndimension: 3\nsizes: 2 2 2\n"
                                        "encoding: bzip2\ndata file: z.raw\n");
  expect_input_error(scratch_path("bzip.nhdr"), "bzip.nhdr", "line 5", "encoding 'bzip2'");
  write_text(scratch_path("pattern.nhdr"), "NRRD0004\ntype: uchar\ndimension: 3\nsizes: 2 2 2\n"
                                           "encoding: raw\ndata file: s%d%d 1 2 1\n");
  expect_input_error(scratch_path("pattern.nhdr"), "pattern.nhdr", "line 6", "%d");
}

static void test_header_pointing_at_missing_data_file(void) {
  write_text(scratch_path("lost.nhdr"), "NRRD0004\ntype: uchar\ndimension: 3\nsizes: 2 2 2\n"
                                        "encoding: raw\ndata file: nothere.raw\n");
  expect_input_error(scratch_path("lost.nhdr"), "lost.nhdr", "nothere.raw", "no such file");
  write_text(scratch_path("lost.mhd"), "NDims = 3\nDimSize = 2 2 2\nElementType = MET_UCHAR\n"
                                       "ElementDataFile = gone.raw\n");
  expect_input_error(scratch_path("lost.mhd"), "lost.mhd", "gone.raw", "no such file");
  write_text(scratch_path("lost.dat"), "ObjectFileName: vanished.raw\nResolution: 2 2 2\n"
                                       "Format: UCHAR\n");
  expect_input_error(scratch_path("lost.dat"), "lost.dat", "vanished.raw", "no such file");
  write_u8("sl1.raw", 4);
  write_text(scratch_path("gap.nhdr"), "NRRD0004\ntype: uchar\ndimension: 3\nsizes: 2 2 2\n"
                                       "encoding: raw\ndata file: sl%d.raw 1 2 1\n");
  expect_input_error(scratch_path("gap.nhdr"), "gap.nhdr", "sl2.raw", "no such file");
}

static void test_truncated_and_corrupt_compressed_data(void) {
  unsigned char data[4096];
  for (size_t i = 0; i < sizeof data; i++) data[i] = (unsigned char)(i * 7 + i / 13);
  size_t gz_n = 0, z_n = 0;
  unsigned char *gz = deflate_bytes(data, sizeof data, 31, &gz_n);
  unsigned char *z = deflate_bytes(data, sizeof data, 15, &z_n);
  CHECK(gz && z);
  if (!gz || !z) return;
  write_bytes(scratch_path("cut_16x16x16_uint8.raw.gz"), gz, gz_n / 2);
  expect_input_error(scratch_path("cut_16x16x16_uint8.raw.gz"), "cut_16x16x16_uint8.raw.gz",
                     "gzip", "truncated");
  unsigned char *bad = malloc(gz_n);
  memcpy(bad, gz, gz_n);
  for (size_t i = 20; i < 60 && i < gz_n; i++) bad[i] ^= 0x5a;
  write_bytes(scratch_path("flip_16x16x16_uint8.raw.gz"), bad, gz_n);
  expect_input_error(scratch_path("flip_16x16x16_uint8.raw.gz"), "flip_16x16x16_uint8.raw.gz",
                     "corrupt gzip", NULL);
  write_bytes(scratch_path("plain_16x16x16_uint8.raw.gz"), data, sizeof data);
  expect_input_error(scratch_path("plain_16x16x16_uint8.raw.gz"), "plain_16x16x16_uint8.raw.gz",
                     "not a gzip file", NULL);
  write_bytes(scratch_path("small_8x8x8_uint8.raw.gz"), gz, gz_n);
  expect_input_error(scratch_path("small_8x8x8_uint8.raw.gz"), "small_8x8x8_uint8.raw.gz",
                     "more than 512 bytes", NULL);

  const char *nrrd_header = "NRRD0004\ntype: uchar\ndimension: 3\nsizes: 16 16 16\nencoding: gzip\n\n";
  write_text(scratch_path("cut.nrrd"), nrrd_header);
  append_bytes(scratch_path("cut.nrrd"), gz, gz_n - 12);
  expect_input_error(scratch_path("cut.nrrd"), "cut.nrrd", "truncated gzip", NULL);
  write_text(scratch_path("flip.nrrd"), nrrd_header);
  append_bytes(scratch_path("flip.nrrd"), bad, gz_n);
  expect_input_error(scratch_path("flip.nrrd"), "flip.nrrd", "corrupt gzip", NULL);

  const char *mha_header = "NDims = 3\nDimSize = 16 16 16\nElementType = MET_UCHAR\n"
                           "CompressedData = True\nElementDataFile = LOCAL\n";
  memcpy(bad, z, z_n);
  for (size_t i = 10; i < 40 && i < z_n; i++) bad[i] ^= 0xa5;
  write_text(scratch_path("flip.mha"), mha_header);
  append_bytes(scratch_path("flip.mha"), bad, z_n);
  expect_input_error(scratch_path("flip.mha"), "flip.mha", "corrupt zlib", NULL);
  write_text(scratch_path("cut.mha"), mha_header);
  append_bytes(scratch_path("cut.mha"), z, z_n / 3);
  expect_input_error(scratch_path("cut.mha"), "cut.mha", "truncated zlib", NULL);
  free(bad);
  free(gz);
  free(z);
}

static void test_raw_without_dims_says_how_to_give_them(void) {
  write_u8("mystery.raw", 64);
  expect_input_error(scratch_path("mystery.raw"), "mystery.raw", "no dims", "--dims XxYxZ");
  ir_volume_desc opt = {.dims = {4, 4, 4}};
  expect_failure_with(scratch_path("mystery.raw"), &opt, IR_ERR_INPUT, "mystery.raw",
                      "no voxel type", "--type");
}

static void test_header_formats_reject_raw_options(void) {
  ir_volume_desc opt = {.type_given = true, .type = IR_VOXEL_UINT8};
  write_text(scratch_path("ok.nhdr"), "NRRD0004\ntype: uchar\ndimension: 3\nsizes: 2 2 2\n"
                                      "encoding: raw\ndata file: z.raw\n");
  expect_failure_with(scratch_path("ok.nhdr"), &opt, IR_ERR_INPUT, "ok.nhdr", "--type",
                      "raw files");
}

static void test_builtin_bad_names_and_sizes(void) {
  expect_input_error("builtin:cube", "builtin:cube", "unknown builtin volume 'cube'", "sphere");
  expect_input_error("builtin:", "builtin:", "unknown builtin", NULL);
  const char *sizes[] = {"builtin:sphere:0", "builtin:sphere:1", "builtin:sphere:16385",
                         "builtin:fractal:99999999999999999999", "builtin:sphere:abc",
                         "builtin:sphere:64x", "builtin:sphere:", "builtin:sphere:-8",
                         "builtin:sphere:64x64", "builtin:sphere:64x64x64x64", "builtin:sphere:8x1x8",
                         "builtin:fractal:4096x16385x8", "builtin:sphere:8x8x", "builtin:sphere:8xx8x8"};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
    expect_input_error(sizes[k], sizes[k], "from 2 to 16384", NULL);
}

/* A NIfTI-1 header (352 bytes with the extension flag) for dims x y z of int16, little-endian. */
static void nifti_int16_header(unsigned char *nii, int x, int y, int z, float slope, float inter) {
  memset(nii, 0, 352);
  put_le32(nii, 348);
  put_le16(nii + 40, 3);
  put_le16(nii + 42, (uint16_t)x);
  put_le16(nii + 44, (uint16_t)y);
  put_le16(nii + 46, (uint16_t)z);
  put_le16(nii + 70, 4);
  put_le16(nii + 72, 16);
  put_le32(nii + 108, float_bits(352));
  put_le32(nii + 112, float_bits(slope));
  put_le32(nii + 116, float_bits(inter));
  memcpy(nii + 344, "n+1\0", 4);
}

/* Headers and names that promise far more voxels than their files hold fail on the sizes, with
 * both numbers, before any allocation (which would fail first as "out of host memory"). */
static void test_sizes_are_checked_before_allocating(void) {
  write_bytes(scratch_path("x_4096x4096x4096_uint8.raw"), "abc", 3);
  expect_input_error(scratch_path("x_4096x4096x4096_uint8.raw"), "x_4096x4096x4096_uint8.raw",
                     "3 bytes, expected 68719476736", NULL);
  /* 2^50 bytes promised by 8 bytes of gzip data: deflate cannot pack that tight. */
  write_text(scratch_path("vast.nhdr"), "NRRD0004\ntype: uchar\ndimension: 3\n"
                                        "sizes: 1048576 1048576 1024\nencoding: gzip\n"
                                        "data file: vz.raw\n");
  write_u8("vz.raw", 8);
  expect_input_error(scratch_path("vast.nhdr"), "vz.raw", "8 bytes of compressed data cannot hold",
                     "1125899906842624 bytes");
  write_text(scratch_path("vast_raw.nhdr"), "NRRD0004\ntype: uchar\ndimension: 3\n"
                                            "sizes: 1048576 1048576 1024\nencoding: raw\n"
                                            "line skip: 2\ndata file: vz.raw\n");
  expect_input_error(scratch_path("vast_raw.nhdr"), "vz.raw", "8 bytes, expected at least 1125899906842624",
                     NULL);
  unsigned char nii[352];
  nifti_int16_header(nii, 32767, 32767, 32767, 0, 0);
  write_bytes(scratch_path("vast.nii"), nii, sizeof nii);
  expect_input_error(scratch_path("vast.nii"), "vast.nii", "352 bytes, expected 70362301923678 (352 header + 70362301923326 data", NULL);
  size_t zn = 0;
  unsigned char *z = deflate_bytes(nii, sizeof nii, 31, &zn);
  write_bytes(scratch_path("vast.nii.gz"), z, zn);
  free(z);
  expect_input_error(scratch_path("vast.nii.gz"), "vast.nii.gz", "of compressed data cannot hold",
                     "70362301923326 bytes of 32767x32767x32767 int16");
}

/* More than the memory available: refused at once with both numbers (exit 2 in the app). */
static void test_volume_larger_than_available_memory_names_both_sizes(void) {
  write_u8("mem_16x16x16_uint8.raw", 0);
  unsigned char buf[4096] = {0};
  write_bytes(scratch_path("mem_16x16x16_uint8.raw"), buf, sizeof buf);
  ir_volume_desc opt = {.available_bytes_override = 4000};
  expect_failure_with(scratch_path("mem_16x16x16_uint8.raw"), &opt, IR_ERR_INPUT, "mem_16x16x16_uint8.raw",
                      "needs 4096 bytes", "only 4000 bytes");
  opt.available_bytes_override = 4096;
  ir_volume v;
  char err[IR_ERR_LEN];
  CHECK_MSG(load_with(scratch_path("mem_16x16x16_uint8.raw"), &opt, &v, err) == IR_OK, "%s", err);
  ir_volume_free(&v);
  opt.available_bytes_override = 1000;
  expect_failure_with("builtin:sphere:16", &opt, IR_ERR_INPUT, "builtin:sphere:16", "needs 16384 bytes",
                      "only 1000 bytes");
  /* NIfTI scaling of int16 holds the voxels and their float32 copy at once: 16 + 32 bytes. */
  unsigned char file[352 + 16] = {0};
  nifti_int16_header(file, 2, 2, 2, 2.0f, 1.0f);
  write_bytes(scratch_path("scaled.nii"), file, sizeof file);
  opt.available_bytes_override = 47;
  expect_failure_with(scratch_path("scaled.nii"), &opt, IR_ERR_INPUT, "scaled.nii", "needs 48 bytes",
                      "only 47 bytes");
  opt.available_bytes_override = 48;
  CHECK_MSG(load_with(scratch_path("scaled.nii"), &opt, &v, err) == IR_OK, "%s", err);
  CHECK_EQ_INT(v.type, IR_VOXEL_FLOAT32);
  ir_volume_free(&v);
}

/* NaN or infinite NIfTI scaling would make every voxel NaN: refused, naming the field. A slope of
 * 0 means no scaling, so its intercept is not looked at. */
static void test_nifti_nonfinite_scaling_is_refused(void) {
  unsigned char file[352 + 8 * 2] = {0};
  nifti_int16_header(file, 2, 2, 2, 2.0f, NAN);
  write_bytes(scratch_path("nan_inter.nii"), file, sizeof file);
  expect_input_error(scratch_path("nan_inter.nii"), "nan_inter.nii", "scl_inter is nan", NULL);
  nifti_int16_header(file, 2, 2, 2, INFINITY, 0.0f);
  write_bytes(scratch_path("inf_slope.nii"), file, sizeof file);
  expect_input_error(scratch_path("inf_slope.nii"), "inf_slope.nii", "scl_slope is inf", NULL);
  nifti_int16_header(file, 2, 2, 2, 0.0f, NAN);
  write_bytes(scratch_path("unscaled.nii"), file, sizeof file);
  ir_volume v;
  char err[IR_ERR_LEN];
  CHECK_MSG(load(scratch_path("unscaled.nii"), &v, err) == IR_OK, "%s", err);
  CHECK_EQ_INT(v.type, IR_VOXEL_INT16);
  ir_volume_free(&v);
}

/* A NIfTI pixdim of 0 loads with spacing 1, and the volume's note says so naming the fields;
 * --spacing replaces the guess (no note); a real pixdim gives no note. */
static void test_nifti_zero_pixdim_is_named(void) {
  unsigned char file[352 + 8 * 2] = {0};
  nifti_int16_header(file, 2, 2, 2, 0.0f, 0.0f);
  put_le32(file + 76 + 4 * 2, float_bits(0.5f)); /* pixdim[2]: y given */
  write_bytes(scratch_path("pixdim0.nii"), file, sizeof file);
  ir_volume v;
  char err[IR_ERR_LEN];
  CHECK_MSG(load(scratch_path("pixdim0.nii"), &v, err) == IR_OK, "%s", err);
  CHECK_STR_CONTAINS(v.note, "warning: pixdim[1] = 0, pixdim[3] = 0 in the header: spacing 1 assumed there");
  CHECK(v.spacing[0] == 1.0f && v.spacing[1] == 0.5f && v.spacing[2] == 1.0f);
  ir_volume_free(&v);
  ir_volume_desc given = {.spacing_given = true, .spacing = {2, 3, 4}};
  CHECK_MSG(load_with(scratch_path("pixdim0.nii"), &given, &v, err) == IR_OK, "%s", err);
  CHECK(v.note[0] == '\0' && v.spacing[0] == 2.0f && v.spacing[2] == 4.0f);
  ir_volume_free(&v);
  for (int k = 1; k <= 3; k++) put_le32(file + 76 + 4 * k, float_bits(0.8f));
  write_bytes(scratch_path("pixdim_ok.nii"), file, sizeof file);
  CHECK_MSG(load(scratch_path("pixdim_ok.nii"), &v, err) == IR_OK, "%s", err);
  CHECK(v.note[0] == '\0' && v.spacing[0] == 0.8f);
  ir_volume_free(&v);
}

/* A NUL byte in a text header is binary data, not a long field: the message says so. */
static void test_nul_byte_in_a_header_is_named(void) {
  static const char nrrd[] = "NRRD0004\ntype: uc\0har\ndimension: 3\nsizes: 2 2 2\nencoding: raw\n"
                             "data file: z.raw\n";
  write_bytes(scratch_path("nul.nhdr"), nrrd, sizeof nrrd - 1);
  expect_input_error(scratch_path("nul.nhdr"), "nul.nhdr", "line 2", "NUL byte");
  static const char meta[] = "NDims = 3\nDimSize = 2 2\0 2\nElementType = MET_UCHAR\nElementDataFile = z.raw\n";
  write_bytes(scratch_path("nul.mhd"), meta, sizeof meta - 1);
  expect_input_error(scratch_path("nul.mhd"), "nul.mhd", "line 2", "NUL byte");
}

/* A file name whose dims part is malformed says what is wrong with it, not "no dims". */
static void test_bad_dims_in_a_file_name_are_named(void) {
  static const char *const names[][2] = {{"x_-5x4x4_uint8.raw", "'-5x4x4'"},
                                         {"x_4x4_uint8.raw", "'4x4'"},
                                         {"x_4x4x4x4_uint8.raw", "'4x4x4x4'"},
                                         {"x_4x4x99999999999999_uint8.raw", "'4x4x99999999999999'"}};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    write_u8(names[k][0], 16);
    expect_input_error(scratch_path(names[k][0]), names[k][0], names[k][1], "in the file name");
  }
}

int main(void) {
  write_u8("z.raw", 8);
  RUN(test_missing_directory_and_unreadable_files);
  RUN(test_raw_size_mismatch_names_both_sizes);
  RUN(test_zero_and_overflowing_dims);
  RUN(test_unknown_type_words);
  RUN(test_unknown_endian_words);
  RUN(test_malformed_header_lines_give_line_numbers);
  RUN(test_header_pointing_at_missing_data_file);
  RUN(test_truncated_and_corrupt_compressed_data);
  RUN(test_raw_without_dims_says_how_to_give_them);
  RUN(test_header_formats_reject_raw_options);
  RUN(test_builtin_bad_names_and_sizes);
  RUN(test_sizes_are_checked_before_allocating);
  RUN(test_volume_larger_than_available_memory_names_both_sizes);
  RUN(test_nifti_nonfinite_scaling_is_refused);
  RUN(test_nifti_zero_pixdim_is_named);
  RUN(test_nul_byte_in_a_header_is_named);
  RUN(test_bad_dims_in_a_file_name_are_named);
  return check_summary();
}
