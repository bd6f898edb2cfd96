/* Each format on files written here, in a scratch folder: big-endian 16-bit and float raw,
 * .raw.gz, attached and detached NRRD (gzip, slices by pattern and LIST, byte/line skip),
 * MetaImage .mha (plain and zlib) and per-slice .mhd, NIfTI-1 (scaled, big-endian, .nii.gz),
 * QVis .dat, and NaN/Inf counting. The voxel values are known by construction. */
#include <math.h>

#include "tests/data/data_test_util.h"

enum { NX = 5, NY = 4, NZ = 3, NV = NX * NY * NZ };

/* The value every generated volume holds at voxel i (fits int16, uint16 and uint8). */
static int value_of_index(int i) { return (i * 37) % 251; }

static void check_volume_values(const ir_volume *v, int scale, int offset) {
  CHECK_EQ_INT(v->dims[0], NX);
  CHECK_EQ_INT(v->dims[1], NY);
  CHECK_EQ_INT(v->dims[2], NZ);
  if (ir_volume_voxel_count(v) != NV) return;
  int bad = 0;
  for (int i = 0; i < NV; i++) {
    double expected = value_of_index(i) * scale + offset;
    double got = ir_volume_value_at(v, (size_t)(i % NX), (size_t)(i / NX % NY), (size_t)(i / (NX * NY)));
    if (got != expected && bad++ < 3) CHECK_NEAR(got, expected, 0);
  }
  CHECK_EQ_INT(bad, 0);
}

/* NV voxels of `type` in the chosen byte order. Values: value_of_index, negated for int16
 * (to test sign), plus 0.25 for float. */
static unsigned char *make_voxels(ir_voxel_type type, bool big, size_t *n) {
  size_t size = ir_voxel_type_size(type);
  unsigned char *buf = malloc(NV * size);
  for (int i = 0; i < NV; i++) {
    int value = value_of_index(i);
    unsigned char *p = buf + (size_t)i * size;
    switch (type) {
    case IR_VOXEL_UINT8: p[0] = (unsigned char)value; break;
    case IR_VOXEL_UINT16:
      (big ? put_be16 : put_le16)(p, (uint16_t)(value * 200));
      break;
    case IR_VOXEL_INT16: (big ? put_be16 : put_le16)(p, (uint16_t)(int16_t)(-value)); break;
    default: (big ? put_be32 : put_le32)(p, float_bits((float)value + 0.25f)); break;
    }
  }
  *n = NV * size;
  return buf;
}

static ir_volume load_ok(const char *path, const ir_volume_desc *opt) {
  ir_volume v;
  char err[IR_ERR_LEN];
  ir_status status = load_with(path, opt, &v, err);
  CHECK_MSG(status == IR_OK, "%s: %s", path, err);
  if (status != IR_OK) memset(&v, 0, sizeof v);
  return v;
}

static void test_raw_big_endian_uint16_with_flags(void) {
  size_t n;
  unsigned char *data = make_voxels(IR_VOXEL_UINT16, true, &n);
  const char *path = scratch_path("be16.bin");
  write_bytes(path, data, n);
  ir_volume_desc opt = {.dims = {NX, NY, NZ}, .type_given = true, .type = IR_VOXEL_UINT16,
                        .endian_given = true, .endian = IR_ENDIAN_BIG};
  ir_volume v = load_ok(path, &opt);
  CHECK_EQ_INT(v.type, IR_VOXEL_UINT16);
  check_volume_values(&v, 200, 0);
  ir_volume_free(&v);
  free(data);
}

static void test_raw_big_endian_float32_named(void) {
  size_t n;
  unsigned char *data = make_voxels(IR_VOXEL_FLOAT32, true, &n);
  const char *path = scratch_path("bef_5x4x3_float32.raw");
  write_bytes(path, data, n);
  ir_volume_desc opt = {.endian_given = true, .endian = IR_ENDIAN_BIG};
  ir_volume v = load_ok(path, &opt);
  CHECK_EQ_INT(v.type, IR_VOXEL_FLOAT32);
  if (v.voxels) {
    CHECK_NEAR(ir_volume_value_at(&v, 1, 0, 0), value_of_index(1) + 0.25, 0);
    CHECK_NEAR(ir_volume_value_at(&v, 4, 3, 2), value_of_index(NV - 1) + 0.25, 0);
  }
  ir_volume_free(&v);
  free(data);
}

static void test_raw_named_int16_negative_values(void) {
  size_t n;
  unsigned char *data = make_voxels(IR_VOXEL_INT16, false, &n);
  const char *path = scratch_path("neg_5x4x3_int16.raw");
  write_bytes(path, data, n);
  ir_volume v = load_ok(path, NULL);
  check_volume_values(&v, -1, 0);
  CHECK_NEAR(v.value_max, 0, 0);
  CHECK(v.value_min < -200);
  ir_volume_free(&v);
  free(data);
}

static void test_raw_gz_named_and_flagged(void) {
  size_t n, zn;
  unsigned char *data = make_voxels(IR_VOXEL_UINT16, false, &n);
  unsigned char *gz = deflate_bytes(data, n, 31, &zn);
  CHECK(gz != NULL);
  if (!gz) return;
  write_bytes(scratch_path("packed_5x4x3_uint16.raw.gz"), gz, zn);
  ir_volume v = load_ok(scratch_path("packed_5x4x3_uint16.raw.gz"), NULL);
  check_volume_values(&v, 200, 0);
  ir_volume_free(&v);
  write_bytes(scratch_path("anon.raw.gz"), gz, zn);
  ir_volume_desc opt = {.dims = {NX, NY, NZ}, .type_given = true, .type = IR_VOXEL_UINT16};
  v = load_ok(scratch_path("anon.raw.gz"), &opt);
  check_volume_values(&v, 200, 0);
  ir_volume_free(&v);
  free(gz);
  free(data);
}

static void test_nrrd_attached_gzip_big_endian_short(void) {
  size_t n, zn;
  unsigned char *data = make_voxels(IR_VOXEL_INT16, true, &n);
  unsigned char *gz = deflate_bytes(data, n, 31, &zn);
  const char *path = scratch_path("attached.nrrd");
  write_text(path, "NRRD0004\n"
                   "# written by the test\n"
                   "type: signed short\n"
                   "dimension: 3\n"
                   "sizes: 5 4 3\n"
                   "space directions: (0.5,0,0) (0,2,0) (0,0,3)\n"
                   "endian: big\n"
                   "encoding: gzip\n"
                   "content:=anything at all: here\n"
                   "\n");
  append_bytes(path, gz, zn);
  ir_volume v = load_ok(path, NULL);
  check_volume_values(&v, -1, 0);
  CHECK_NEAR(v.spacing[0], 0.5, 1e-6);
  CHECK_NEAR(v.spacing[1], 2, 1e-6);
  CHECK_NEAR(v.spacing[2], 3, 1e-6);
  ir_volume_free(&v);
  free(gz);
  free(data);
}

static void test_nrrd_attached_raw_float_little(void) {
  size_t n;
  unsigned char *data = make_voxels(IR_VOXEL_FLOAT32, false, &n);
  const char *path = scratch_path("plain.nrrd");
  write_text(path, "NRRD0005\r\ntype: float\r\ndimension: 3\r\nsizes: 5 4 3\r\nspacings: 1 1 NaN\r\n"
                   "endian: little\r\nencoding: raw\r\n\r\n");
  append_bytes(path, data, n);
  ir_volume v = load_ok(path, NULL);
  CHECK_EQ_INT(v.type, IR_VOXEL_FLOAT32);
  if (v.voxels) CHECK_NEAR(ir_volume_value_at(&v, 2, 1, 1), value_of_index(2 + 5 + 20) + 0.25, 0);
  CHECK_NEAR(v.spacing[2], 1, 0);
  ir_volume_free(&v);
  free(data);
}

/* Slice files for detached headers: slice k (0-based) of a uint8 volume. */
static void write_slices(const char *fmt, int first) {
  size_t n;
  unsigned char *data = make_voxels(IR_VOXEL_UINT8, false, &n);
  for (int k = 0; k < NZ; k++)
    write_bytes(scratch_path(fmt_path(fmt, first + k)), data + (size_t)k * NX * NY, NX * NY);
  free(data);
}

static void test_nrrd_detached_pattern_list_and_skips(void) {
  write_slices("sl%03d.u8", 7);
  write_text(scratch_path("pattern.nhdr"), "NRRD0004\ntype: uchar\ndimension: 3\nsizes: 5 4 3\n"
                                           "encoding: raw\ndata file: sl%03d.u8 7 9 1\n");
  ir_volume v = load_ok(scratch_path("pattern.nhdr"), NULL);
  check_volume_values(&v, 1, 0);
  ir_volume_free(&v);

  write_text(scratch_path("list.nhdr"), "NRRD0004\ntype: uint8\ndimension: 3\nsizes: 5 4 3\n"
                                        "encoding: raw\ndata file: LIST\nsl007.u8\nsl008.u8\nsl009.u8\n");
  v = load_ok(scratch_path("list.nhdr"), NULL);
  check_volume_values(&v, 1, 0);
  ir_volume_free(&v);

  /* One data file with two text lines and 3 bytes before the voxels. */
  size_t n;
  unsigned char *data = make_voxels(IR_VOXEL_UINT8, false, &n);
  write_text(scratch_path("skipped.bin"), "junk line\nmore junk\nXYZ");
  append_bytes(scratch_path("skipped.bin"), data, n);
  write_text(scratch_path("skip.nhdr"), "NRRD0004\ntype: uchar\ndimension: 3\nsizes: 5 4 3\n"
                                        "encoding: raw\nline skip: 2\nbyte skip: 3\ndata file: skipped.bin\n");
  v = load_ok(scratch_path("skip.nhdr"), NULL);
  check_volume_values(&v, 1, 0);
  ir_volume_free(&v);

  /* byte skip -1: the voxels are the last bytes of the file. */
  write_text(scratch_path("tail.nhdr"), "NRRD0004\ntype: uchar\ndimension: 3\nsizes: 5 4 3\n"
                                        "encoding: raw\nbyte skip: -1\ndata file: skipped.bin\n");
  v = load_ok(scratch_path("tail.nhdr"), NULL);
  check_volume_values(&v, 1, 0);
  ir_volume_free(&v);
  free(data);
}

static void test_metaimage_mha_attached_plain_and_zlib(void) {
  size_t n, zn;
  unsigned char *data = make_voxels(IR_VOXEL_UINT16, true, &n);
  const char *path = scratch_path("local.mha");
  write_text(path, "ObjectType = Image\nNDims = 3\nDimSize = 5 4 3\nElementType = MET_USHORT\n"
                   "ElementByteOrderMSB = True\nElementSpacing = 0.25 0.5 4\n"
                   "ElementDataFile = LOCAL\n");
  append_bytes(path, data, n);
  ir_volume v = load_ok(path, NULL);
  check_volume_values(&v, 200, 0);
  CHECK_NEAR(v.spacing[0], 0.25, 0);
  CHECK_NEAR(v.spacing[2], 4, 0);
  ir_volume_free(&v);

  unsigned char *z = deflate_bytes(data, n, 15, &zn);
  path = scratch_path("packed.mha");
  write_text(path, "ObjectType = Image\nNDims = 3\nBinaryData = True\nBinaryDataByteOrderMSB = True\n"
                   "CompressedData = True\nDimSize = 5 4 3\nElementType = MET_USHORT\n"
                   "ElementDataFile = LOCAL\n");
  append_bytes(path, z, zn);
  v = load_ok(path, NULL);
  check_volume_values(&v, 200, 0);
  ir_volume_free(&v);
  free(z);
  free(data);
}

static void test_metaimage_slices_pattern_and_list(void) {
  write_slices("mslice%03d.raw", 1);
  write_text(scratch_path("slices.mhd"), "NDims = 3\nDimSize = 5 4 3\nElementType = MET_UCHAR\n"
                                         "ElementSize = 2 2 2\n"
                                         "ElementDataFile = mslice%03d.raw 1 3 1\n");
  ir_volume v = load_ok(scratch_path("slices.mhd"), NULL);
  check_volume_values(&v, 1, 0);
  CHECK_NEAR(v.spacing[1], 2, 0);
  ir_volume_free(&v);
  write_text(scratch_path("slist.mhd"), "NDims = 3\nDimSize = 5 4 3\nElementType = MET_UCHAR\n"
                                        "ElementDataFile = LIST 2D\nmslice001.raw\nmslice002.raw\n"
                                        "mslice003.raw\n");
  v = load_ok(scratch_path("slist.mhd"), NULL);
  check_volume_values(&v, 1, 0);
  ir_volume_free(&v);
}

/* A NIfTI-1 header of 348 bytes plus 4 bytes of extension flag; the values in `big` order. */
static void nifti_header(unsigned char *h, bool big, int datatype, int bitpix, float slope,
                         float inter) {
  void (*p16)(unsigned char *, uint16_t) = big ? put_be16 : put_le16;
  void (*p32)(unsigned char *, uint32_t) = big ? put_be32 : put_le32;
  memset(h, 0, 352);
  p32(h, 348);
  const int16_t dim[8] = {3, NX, NY, NZ, 1, 1, 1, 1};
  for (int k = 0; k < 8; k++) p16(h + 40 + 2 * k, (uint16_t)dim[k]);
  p16(h + 70, (uint16_t)datatype);
  p16(h + 72, (uint16_t)bitpix);
  const float pixdim[8] = {1, 1.5f, 2.5f, 3.5f, 1, 1, 1, 1};
  for (int k = 0; k < 8; k++) p32(h + 76 + 4 * k, float_bits(pixdim[k]));
  p32(h + 108, float_bits(352.0f));
  p32(h + 112, float_bits(slope));
  p32(h + 116, float_bits(inter));
  memcpy(h + 344, "n+1\0", 4);
}

static void test_nifti_slope_intercept_to_float(void) {
  size_t n;
  unsigned char *data = make_voxels(IR_VOXEL_INT16, false, &n);
  unsigned char header[352];
  nifti_header(header, false, 4, 16, 2.0f, -5.0f);
  const char *path = scratch_path("scaled.nii");
  write_bytes(path, header, sizeof header);
  append_bytes(path, data, n);
  ir_volume v = load_ok(path, NULL);
  CHECK_EQ_INT(v.type, IR_VOXEL_FLOAT32);
  check_volume_values(&v, -2, -5);
  CHECK_NEAR(v.spacing[0], 1.5, 0);
  CHECK_NEAR(v.spacing[2], 3.5, 0);
  ir_volume_free(&v);

  /* slope 1, intercept 0 and slope 0 both mean "no scaling": the type stays int16. */
  nifti_header(header, false, 4, 16, 1.0f, 0.0f);
  write_bytes(path, header, sizeof header);
  append_bytes(path, data, n);
  v = load_ok(path, NULL);
  CHECK_EQ_INT(v.type, IR_VOXEL_INT16);
  check_volume_values(&v, -1, 0);
  ir_volume_free(&v);
  free(data);
}

static void test_nifti_big_endian_and_gz(void) {
  size_t n, zn;
  unsigned char *data = make_voxels(IR_VOXEL_FLOAT32, true, &n);
  unsigned char file[352 + NV * 4];
  nifti_header(file, true, 16, 32, 0.0f, 0.0f);
  memcpy(file + 352, data, n);
  write_bytes(scratch_path("big.nii"), file, sizeof file);
  ir_volume v = load_ok(scratch_path("big.nii"), NULL);
  CHECK_EQ_INT(v.type, IR_VOXEL_FLOAT32);
  if (v.voxels) CHECK_NEAR(ir_volume_value_at(&v, 3, 2, 1), value_of_index(3 + 10 + 20) + 0.25, 0);
  ir_volume_free(&v);

  unsigned char *gz = deflate_bytes(file, sizeof file, 31, &zn);
  write_bytes(scratch_path("big.nii.gz"), gz, zn);
  v = load_ok(scratch_path("big.nii.gz"), NULL);
  if (v.voxels) CHECK_NEAR(ir_volume_value_at(&v, 4, 3, 2), value_of_index(NV - 1) + 0.25, 0);
  CHECK_NEAR(v.spacing[1], 2.5, 0);
  ir_volume_free(&v);
  free(gz);
  free(data);
}

static void test_qvis_dat_ushort(void) {
  size_t n;
  unsigned char *data = make_voxels(IR_VOXEL_UINT16, false, &n);
  write_bytes(scratch_path("q.raw"), data, n);
  write_text(scratch_path("q.dat"), "ObjectFileName: q.raw\nTaggedFileName: ---\n"
                                    "Resolution:     5 4 3\nSliceThickness: 1 1 2.5\n"
                                    "Format:         USHORT\nNbrTags:        0\n"
                                    "ObjectType:     TEXTURE_VOLUME_OBJECT\n");
  ir_volume v = load_ok(scratch_path("q.dat"), NULL);
  CHECK_EQ_INT(v.type, IR_VOXEL_UINT16);
  check_volume_values(&v, 200, 0);
  CHECK_NEAR(v.spacing[2], 2.5, 0);
  ir_volume_free(&v);
  free(data);
}

static void test_float_nan_inf_counted_not_in_range(void) {
  float values[NV];
  for (int i = 0; i < NV; i++) values[i] = (float)i;
  values[3] = NAN;
  values[10] = INFINITY;
  values[11] = -INFINITY;
  write_bytes(scratch_path("holes_5x4x3_float32.raw"), values, sizeof values);
  ir_volume v = load_ok(scratch_path("holes_5x4x3_float32.raw"), NULL);
  CHECK_EQ_INT(v.nonfinite_count, 3);
  CHECK_NEAR(v.value_min, 0, 0);
  CHECK_NEAR(v.value_max, NV - 1, 0);
  ir_volume_stats s;
  if (v.voxels) {
    ir_volume_compute_stats(&v, &s);
    CHECK_EQ_INT(s.nonfinite_count, 3);
    size_t total = 0;
    for (int b = 0; b < IR_HISTOGRAM_BINS; b++) total += s.histogram[b];
    CHECK_EQ_INT(total, NV - 3);
    CHECK(isfinite(s.mean));
  }
  ir_volume_free(&v);
}

int main(void) {
  RUN(test_raw_big_endian_uint16_with_flags);
  RUN(test_raw_big_endian_float32_named);
  RUN(test_raw_named_int16_negative_values);
  RUN(test_raw_gz_named_and_flagged);
  RUN(test_nrrd_attached_gzip_big_endian_short);
  RUN(test_nrrd_attached_raw_float_little);
  RUN(test_nrrd_detached_pattern_list_and_skips);
  RUN(test_metaimage_mha_attached_plain_and_zlib);
  RUN(test_metaimage_slices_pattern_and_list);
  RUN(test_nifti_slope_intercept_to_float);
  RUN(test_nifti_big_endian_and_gz);
  RUN(test_qvis_dat_ushort);
  RUN(test_float_nan_inf_counted_not_in_range);
  return check_summary();
}
