/* Every format on the real datasets of tests/data/real (plus the shared folder's NIfTI when it
 * is there): dims, type, spacing, and the voxels compared with what the files hold, read here
 * without the loader (raw twins, slices concatenated, zlib/gzip decompressed directly). Fails
 * when tests/data/real is missing. */
#include <math.h>

#include "tests/data/data_test_util.h"

/* Loads `source` and checks dims, type and spacing. Returns false (after CHECK failures) if
 * it did not load. */
static bool load_checked(const char *source, ir_volume *v, size_t x, size_t y, size_t z,
                         ir_voxel_type type, float sx, float sy, float sz) {
  char err[IR_ERR_LEN];
  ir_status status = load(source, v, err);
  CHECK_MSG(status == IR_OK, "%s: %s", source, err);
  if (status != IR_OK) return false;
  CHECK_EQ_INT(v->dims[0], x);
  CHECK_EQ_INT(v->dims[1], y);
  CHECK_EQ_INT(v->dims[2], z);
  CHECK_EQ_INT(v->type, type);
  CHECK_NEAR(v->spacing[0], sx, 1e-6);
  CHECK_NEAR(v->spacing[1], sy, 1e-6);
  CHECK_NEAR(v->spacing[2], sz, 1e-6);
  CHECK_EQ_INT(v->bytes, x * y * z * ir_voxel_type_size(type));
  CHECK_EQ_INT(v->nonfinite_count, 0);
  return true;
}

/* The loaded voxels equal `expected` byte for byte (host is little-endian on every machine
 * this project targets; the shared files are little-endian). */
static void check_bytes_equal(const ir_volume *v, const unsigned char *expected, size_t n) {
  CHECK_EQ_INT(v->bytes, n);
  CHECK(expected && v->bytes == n && memcmp(v->voxels, expected, n) == 0);
}

static void test_raw_named_uint8_neghip_matches_file(void) {
  ir_volume v;
  if (!load_checked(data_path("neghip_66x66x66_uint8.raw"), &v, 66, 66, 66, IR_VOXEL_UINT8, 1,
                    1, 1))
    return;
  size_t n = 0;
  unsigned char *raw = check_read_file(data_path("neghip_66x66x66_uint8.raw"), &n);
  check_bytes_equal(&v, raw, n);
  /* x fastest: voxel (x,y,z) is byte x + 66*(y + 66*z). */
  CHECK_EQ_INT(ir_volume_value_at(&v, 5, 7, 9), raw[5 + 66 * (7 + 66 * 9)]);
  CHECK_EQ_INT(ir_volume_value_at(&v, 65, 65, 65), raw[n - 1]);
  unsigned lo = 255, hi = 0;
  for (size_t i = 0; i < n; i++) {
    lo = raw[i] < lo ? raw[i] : lo;
    hi = raw[i] > hi ? raw[i] : hi;
  }
  CHECK_EQ_INT(v.value_min, lo);
  CHECK_EQ_INT(v.value_max, hi);
  CHECK_STR_CONTAINS(v.name, "neghip_66x66x66_uint8.raw");
  free(raw);
  ir_volume_free(&v);
}

static void test_raw_named_uint8_bolt_matches_file(void) {
  ir_volume v;
  if (!load_checked(data_path("bolt_70x123x66_uint8.raw"), &v, 70, 123, 66, IR_VOXEL_UINT8, 1,
                    1, 1))
    return;
  size_t n = 0;
  unsigned char *raw = check_read_file(data_path("bolt_70x123x66_uint8.raw"), &n);
  check_bytes_equal(&v, raw, n);
  free(raw);
  ir_volume_free(&v);
}

static void test_raw_named_int16_headsq_range(void) {
  ir_volume v;
  if (!load_checked(data_path("headsq_64x64x93_int16.raw"), &v, 64, 64, 93, IR_VOXEL_INT16, 1,
                    1, 1))
    return;
  /* The dataset's README: values 0..3926. */
  CHECK_NEAR(v.value_min, 0, 0);
  CHECK_NEAR(v.value_max, 3926, 0);
  size_t n = 0;
  unsigned char *raw = check_read_file(data_path("headsq_64x64x93_int16.raw"), &n);
  check_bytes_equal(&v, raw, n);
  int16_t first;
  memcpy(&first, raw + 2 * (10 + 64 * (20 + 64 * 30)), 2);
  CHECK_EQ_INT(ir_volume_value_at(&v, 10, 20, 30), first);
  free(raw);
  ir_volume_free(&v);
}

static void test_raw_named_float32_carotid_range(void) {
  ir_volume v;
  if (!load_checked(data_path("carotid_76x49x45_float32.raw"), &v, 76, 49, 45,
                    IR_VOXEL_FLOAT32, 1, 1, 1))
    return;
  size_t n = 0;
  unsigned char *raw = check_read_file(data_path("carotid_76x49x45_float32.raw"), &n);
  check_bytes_equal(&v, raw, n);
  /* README: speeds 0..580. */
  CHECK(v.value_min >= 0 && v.value_min < 1);
  CHECK(v.value_max > 500 && v.value_max <= 581);
  free(raw);
  ir_volume_free(&v);
}

static void test_raw_flags_override_name(void) {
  ir_volume v;
  char err[IR_ERR_LEN];
  ir_volume_desc opt = {.dims = {66, 70, 123}, .spacing_given = true, .spacing = {0.5f, 1, 2}};
  ir_status status = load_with(data_path("bolt_70x123x66_uint8.raw"), &opt, &v, err);
  CHECK_MSG(status == IR_OK, "%s", err);
  if (status != IR_OK) return;
  CHECK_EQ_INT(v.dims[0], 66);
  CHECK_EQ_INT(v.dims[1], 70);
  CHECK_EQ_INT(v.dims[2], 123);
  CHECK_NEAR(v.spacing[0], 0.5, 0);
  CHECK_NEAR(v.spacing[2], 2, 0);
  ir_volume_free(&v);
  /* --type uint16 doubles the expected size: the file no longer fits. */
  opt = (ir_volume_desc){.type_given = true, .type = IR_VOXEL_UINT16};
  status = load_with(data_path("bolt_70x123x66_uint8.raw"), &opt, &v, err);
  CHECK_EQ_INT(status, IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "bolt_70x123x66_uint8.raw: 568260 bytes, expected 1136520 for 70x123x66 uint16");
}

static void test_nrrd_detached_slices_headsq_equal_raw_twin(void) {
  ir_volume v;
  if (!load_checked(data_path("headsq/quarter.nhdr"), &v, 64, 64, 93, IR_VOXEL_INT16, 3.2f,
                    3.2f, 1.5f))
    return;
  size_t n = 0;
  unsigned char *twin = check_read_file(data_path("headsq_64x64x93_int16.raw"), &n);
  check_bytes_equal(&v, twin, n);
  /* And slice by slice against quarter.1 .. quarter.93 (8192 bytes each). */
  for (int k = 1; k <= 93; k++) {
    size_t m = 0;
    unsigned char *slice = check_read_file(data_path(fmt_path("headsq/quarter.%d", k)), &m);
    CHECK_MSG(slice && m == 8192, "quarter.%d", k);
    if (slice && m == 8192)
      CHECK_MSG(memcmp((unsigned char *)v.voxels + (size_t)(k - 1) * 8192, slice, 8192) == 0,
                "slice %d differs", k);
    free(slice);
  }
  free(twin);
  ir_volume_free(&v);
}

static void test_metaimage_mhd_headmr_equal_raw(void) {
  ir_volume v;
  if (!load_checked(data_path("HeadMRVolume.mhd"), &v, 48, 62, 42, IR_VOXEL_UINT8, 4, 4, 4))
    return;
  size_t n = 0;
  unsigned char *raw = check_read_file(data_path("HeadMRVolume.raw"), &n);
  check_bytes_equal(&v, raw, n);
  free(raw);
  ir_volume_free(&v);
}

static void test_metaimage_zlib_frog_labels_equal_uncompress(void) {
  ir_volume v;
  if (!load_checked(data_path("frog/frogtissue.mhd"), &v, 500, 470, 136, IR_VOXEL_UINT8, 1, 1,
                    1.5f))
    return;
  CHECK_EQ_INT(ir_volume_voxel_count(&v), 31960000);
  size_t zn = 0;
  unsigned char *z = check_read_file(data_path("frog/frogtissue.zraw"), &zn);
  uLongf n = 500ul * 470ul * 136ul;
  unsigned char *expected = malloc(n + 1);
  int rc = z && expected ? uncompress(expected, &n, z, (uLong)zn) : Z_MEM_ERROR;
  CHECK_EQ_INT(rc, Z_OK);
  if (rc == Z_OK) {
    check_bytes_equal(&v, expected, n);
    unsigned hi = 0;
    size_t labelled = 0;
    for (size_t i = 0; i < n; i++) {
      hi = expected[i] > hi ? expected[i] : hi;
      labelled += expected[i] != 0;
    }
    CHECK_EQ_INT(v.value_min, 0);
    CHECK_EQ_INT(v.value_max, hi);
    CHECK(hi > 1 && hi < 64); /* a handful of tissue labels */
    CHECK(labelled > 0 && labelled < n);
  }
  free(z);
  free(expected);
  ir_volume_free(&v);
}

static void test_nifti_gz_avg152_equal_gunzip(void) {
  /* Not in the repository (its licence is not the VTK one): only with the shared folder. */
  const char *path = shared_file("avg152T1_RL_nifti.nii.gz");
  if (!path) return;
  ir_volume v;
  if (!load_checked(path, &v, 91, 109, 91, IR_VOXEL_UINT8, 2,
                    2, 2))
    return;
  gzFile gz = gzopen(path, "rb");
  size_t cap = 2u << 20;
  unsigned char *all = malloc(cap);
  int got = gz && all ? gzread(gz, all, (unsigned)cap) : -1;
  if (gz) gzclose(gz);
  CHECK(got > 348);
  if (got > 348) {
    /* This file's header is big-endian: sizeof_hdr reads 348 most significant byte first. */
    uint32_t sizeof_hdr = (uint32_t)all[0] << 24 | (uint32_t)all[1] << 16 | all[2] << 8 | all[3];
    CHECK_EQ_INT(sizeof_hdr, 348);
    uint32_t bits = (uint32_t)all[108] << 24 | (uint32_t)all[109] << 16 | all[110] << 8 | all[111];
    float vox_offset;
    memcpy(&vox_offset, &bits, 4);
    size_t offset = (size_t)vox_offset;
    CHECK_EQ_INT((size_t)got - offset, 91 * 109 * 91);
    check_bytes_equal(&v, all + offset, (size_t)got - offset);
  }
  free(all);
  ir_volume_free(&v);
}

static void test_spacing_option_overrides_header(void) {
  ir_volume v;
  char err[IR_ERR_LEN];
  ir_volume_desc opt = {.spacing_given = true, .spacing = {1, 2, 3}};
  ir_status status = load_with(data_path("HeadMRVolume.mhd"), &opt, &v, err);
  CHECK_MSG(status == IR_OK, "%s", err);
  if (status != IR_OK) return;
  CHECK_NEAR(v.spacing[0], 1, 0);
  CHECK_NEAR(v.spacing[1], 2, 0);
  CHECK_NEAR(v.spacing[2], 3, 0);
  ir_volume_free(&v);
}

static void test_stats_headsq_suggests_skin_and_bone(void) {
  ir_volume v;
  char err[IR_ERR_LEN];
  if (load(data_path("headsq/quarter.nhdr"), &v, err) != IR_OK) {
    CHECK_MSG(false, "%s", err);
    return;
  }
  ir_volume_stats s;
  ir_volume_compute_stats(&v, &s);
  /* The dataset's README: skin near 500, bone near 1150. */
  bool skin = false, bone = false;
  for (int k = 0; k < s.suggested_count; k++) {
    skin |= s.suggested_isovalues[k] > 400 && s.suggested_isovalues[k] < 700;
    bone |= s.suggested_isovalues[k] > 1000 && s.suggested_isovalues[k] < 1400;
  }
  CHECK(skin);
  CHECK(bone);
  size_t total = 0;
  for (int b = 0; b < IR_HISTOGRAM_BINS; b++) total += s.histogram[b];
  CHECK_EQ_INT(total, 64 * 64 * 93);
  ir_volume_free(&v);
}

static void test_stats_frog_labels_suggest_half_steps(void) {
  ir_volume v;
  char err[IR_ERR_LEN];
  if (load(data_path("frog/frogtissue.mhd"), &v, err) != IR_OK) {
    CHECK_MSG(false, "%s", err);
    return;
  }
  ir_volume_stats s;
  ir_volume_compute_stats(&v, &s);
  CHECK(s.suggested_count >= 2);
  for (int k = 0; k < s.suggested_count; k++) {
    double frac = s.suggested_isovalues[k] - floor(s.suggested_isovalues[k]);
    CHECK_NEAR(frac, 0.5, 1e-9);
    CHECK(s.suggested_isovalues[k] > 0 && s.suggested_isovalues[k] < v.value_max);
  }
  ir_volume_free(&v);
}

int main(void) {
  test_data_dir();
  RUN(test_raw_named_uint8_neghip_matches_file);
  RUN(test_raw_named_uint8_bolt_matches_file);
  RUN(test_raw_named_int16_headsq_range);
  RUN(test_raw_named_float32_carotid_range);
  RUN(test_raw_flags_override_name);
  RUN(test_nrrd_detached_slices_headsq_equal_raw_twin);
  RUN(test_metaimage_mhd_headmr_equal_raw);
  RUN(test_metaimage_zlib_frog_labels_equal_uncompress);
  RUN(test_nifti_gz_avg152_equal_gunzip);
  RUN(test_spacing_option_overrides_header);
  RUN(test_stats_headsq_suggests_skin_and_bone);
  RUN(test_stats_frog_labels_suggest_half_steps);
  return check_summary();
}
