/* The up axis a header gives (NRRD space + space directions, MetaImage AnatomicalOrientation /
 * TransformMatrix, NIfTI sform / qform): the index axis toward the patient's superior side, with
 * its sign; none where the header says nothing anatomical. Small files written here. */
#include <math.h>

#include "tests/data/data_test_util.h"

static ir_axis up_of(const char *path) {
  ir_volume v;
  char err[IR_ERR_LEN];
  if (load(path, &v, err) != IR_OK) {
    CHECK_MSG(0, "%s: %s", path, err);
    return (ir_axis)-1;
  }
  ir_axis up = v.up_axis;
  if (up != IR_AXIS_NONE) CHECK_MSG(v.up_source[0] != '\0', "%s: up %s with no source", path, ir_axis_name(up));
  ir_volume_free(&v);
  /* A header-only load (what a distributed run's ranks read first) says the same. */
  ir_volume_desc d = {.source = path, .header_only = true};
  if (ir_volume_load(&d, &v, err) != IR_OK) {
    CHECK_MSG(0, "%s (header only): %s", path, err);
    return (ir_axis)-1;
  }
  CHECK_MSG(v.up_axis == up, "%s: the header-only load's up is %s, the full load's %s", path,
            ir_axis_name(v.up_axis), ir_axis_name(up));
  ir_volume_free(&v);
  return up;
}

#define CHECK_UP(path, want) \
  CHECK_MSG(up_of(path) == (want), "%s: up is not %s", path, ir_axis_name(want))

static void nrrd(const char *name, const char *fields) {
  char text[1024];
  snprintf(text, sizeof text, "NRRD0004\ntype: uchar\ndimension: 3\nsizes: 2 2 2\nencoding: raw\n%s\n", fields);
  write_text(scratch_path(name), text);
  unsigned char voxels[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  append_bytes(scratch_path(name), voxels, sizeof voxels);
}

static void test_nrrd_patient_space_directions(void) {
  /* LPS, index axes: x along world z (superior), y along x, z against y. */
  nrrd("lps_x.nrrd", "space: left-posterior-superior\nspace directions: (0,0,1.5) (1,0,0) (0,-1,0)\n");
  CHECK_UP(scratch_path("lps_x.nrrd"), IR_AXIS_X);
  /* RAS with the slice axis running from head to feet: -z is up. */
  nrrd("ras_negz.nrrd", "space: RAS\nspace directions: (1,0,0) (0,1,0) (0,0,-2)\n");
  CHECK_UP(scratch_path("ras_negz.nrrd"), IR_AXIS_NEG_Z);
  nrrd("ras_negy.nrrd", "space: right-anterior-superior\nspace directions: (1,0,0) (0,0.1,-0.9) (0,1,0.1)\n");
  CHECK_UP(scratch_path("ras_negy.nrrd"), IR_AXIS_NEG_Y);
  /* A patient space without directions: the index axes are the world axes. */
  nrrd("lps_plain.nrrd", "space: LPS\n");
  CHECK_UP(scratch_path("lps_plain.nrrd"), IR_AXIS_Z);
  /* Not anatomical, or no space at all: nothing to say. */
  nrrd("handed.nrrd", "space: 3D-left-handed\nspace directions: (0,0,1) (1,0,0) (0,1,0)\n");
  CHECK_UP(scratch_path("handed.nrrd"), IR_AXIS_NONE);
  nrrd("plain.nrrd", "spacings: 1 1 1\n");
  CHECK_UP(scratch_path("plain.nrrd"), IR_AXIS_NONE);
  /* Every axis more than 60 degrees away from superior: no clear up. */
  nrrd("oblique.nrrd", "space: LPS\nspace directions: (1,0,0.5) (0,1,0.5) (1,1,-0.5)\n");
  CHECK_UP(scratch_path("oblique.nrrd"), IR_AXIS_NONE);
}

static void mha(const char *name, const char *fields) {
  char text[1024];
  snprintf(text, sizeof text, "ObjectType = Image\nNDims = 3\nDimSize = 2 2 2\nElementType = MET_UCHAR\n%s"
                              "ElementDataFile = LOCAL\n", fields);
  write_text(scratch_path(name), text);
  unsigned char voxels[8] = {0};
  append_bytes(scratch_path(name), voxels, sizeof voxels);
}

static void test_metaimage_orientation_and_transform(void) {
  /* ITK letters name the side an axis comes from: I (inferior to superior) points up. */
  mha("rai.mha", "AnatomicalOrientation = RAI\n");
  CHECK_UP(scratch_path("rai.mha"), IR_AXIS_Z);
  mha("rsa.mha", "AnatomicalOrientation = RSA\n");
  CHECK_UP(scratch_path("rsa.mha"), IR_AXIS_NEG_Y);
  mha("irp.mha", "AnatomicalOrientation = irp\n");
  CHECK_UP(scratch_path("irp.mha"), IR_AXIS_X);
  /* Rows are the index axes' directions in LPS: axis y along +z. */
  mha("tm.mha", "TransformMatrix = 1 0 0 0 0 1 0 -1 0\n");
  CHECK_UP(scratch_path("tm.mha"), IR_AXIS_Y);
  /* The orientation letters win over the matrix. */
  mha("both.mha", "TransformMatrix = 1 0 0 0 0 1 0 -1 0\nAnatomicalOrientation = RAS\n");
  CHECK_UP(scratch_path("both.mha"), IR_AXIS_NEG_Z);
  mha("none.mha", "");
  CHECK_UP(scratch_path("none.mha"), IR_AXIS_NONE);
  mha("odd.mha", "AnatomicalOrientation = RRI\n");
  CHECK_UP(scratch_path("odd.mha"), IR_AXIS_NONE);
}

/* A 2x2x2 uint8 NIfTI-1 file (little-endian) with the given form codes. */
static void nifti(const char *name, int qform, int sform, const float quatern[3], float qfac,
                  const float srow[12]) {
  unsigned char file[352 + 8] = {0};
  put_le32(file, 348);
  put_le16(file + 40, 3);
  for (int k = 1; k <= 3; k++) put_le16(file + 40 + 2 * k, 2);
  put_le16(file + 70, 2);
  put_le16(file + 72, 8);
  put_le32(file + 76, float_bits(qfac));
  for (int k = 1; k <= 3; k++) put_le32(file + 76 + 4 * k, float_bits(1.0f));
  put_le32(file + 108, float_bits(352.0f));
  put_le16(file + 252, (uint16_t)qform);
  put_le16(file + 254, (uint16_t)sform);
  for (int k = 0; k < 3; k++) put_le32(file + 256 + 4 * k, float_bits(quatern[k]));
  for (int k = 0; k < 12; k++) put_le32(file + 280 + 4 * k, float_bits(srow[k]));
  memcpy(file + 344, "n+1\0", 4);
  write_bytes(scratch_path(name), file, sizeof file);
}

static void test_nifti_sform_then_qform(void) {
  const float identity_q[3] = {0, 0, 0};
  const float no_srow[12] = {0};
  /* qform identity: +z up; qfac -1 flips the third axis: -z up. */
  nifti("q_id.nii", 1, 0, identity_q, 1.0f, no_srow);
  CHECK_UP(scratch_path("q_id.nii"), IR_AXIS_Z);
  nifti("q_flip.nii", 1, 0, identity_q, -1.0f, no_srow);
  CHECK_UP(scratch_path("q_flip.nii"), IR_AXIS_NEG_Z);
  /* 90 degrees about x (b = sin 45): index y maps to world +z. */
  const float about_x[3] = {(float)sqrt(0.5), 0, 0};
  nifti("q_rot.nii", 1, 0, about_x, 1.0f, no_srow);
  CHECK_UP(scratch_path("q_rot.nii"), IR_AXIS_Y);
  /* sform rows: world z = -2 * i, so index x points down, -x up; the sform wins over the qform. */
  const float srow[12] = {0, 2, 0, 0, 0, 0, 2, 0, -2, 0, 0, 0};
  nifti("s.nii", 1, 2, identity_q, 1.0f, srow);
  CHECK_UP(scratch_path("s.nii"), IR_AXIS_NEG_X);
  /* Neither form set: nothing known. */
  nifti("none.nii", 0, 0, identity_q, 1.0f, no_srow);
  CHECK_UP(scratch_path("none.nii"), IR_AXIS_NONE);
}

static void test_axis_names_round_trip(void) {
  for (int a = IR_AXIS_X; a <= IR_AXIS_NEG_Z; a++) {
    ir_axis back = IR_AXIS_NONE;
    CHECK(ir_axis_parse(ir_axis_name((ir_axis)a), &back) && back == (ir_axis)a);
  }
  ir_axis out = IR_AXIS_NONE;
  CHECK(ir_axis_parse("+y", &out) && out == IR_AXIS_Y);
  CHECK(!ir_axis_parse("w", &out) && !ir_axis_parse("", &out) && !ir_axis_parse("+-x", &out) &&
        !ir_axis_parse("none", &out));
  CHECK_EQ_INT(ir_axis_index(IR_AXIS_NEG_Y), 1);
  CHECK_EQ_INT(ir_axis_sign(IR_AXIS_NEG_Y), -1);
  CHECK_EQ_INT(ir_axis_sign(IR_AXIS_Z), 1);
}

int main(void) {
  RUN(test_nrrd_patient_space_directions);
  RUN(test_metaimage_orientation_and_transform);
  RUN(test_nifti_sform_then_qform);
  RUN(test_axis_names_round_trip);
  return check_summary();
}
