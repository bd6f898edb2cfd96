/* Sub-box reads (ir_volume_desc.region_*) and header-only loads: for raw, gzip raw, NRRD (attached,
 * detached gzip, one data file per slice, big-endian), MetaImage (attached, zlib) and the builtin
 * volumes, a box loads exactly the voxels of the whole volume it covers, with origin and
 * full_dims set; boxes outside the volume are input errors; header-only loads read no voxels. */
#include <math.h>

#include "tests/data/data_test_util.h"

enum { NX = 23, NY = 17, NZ = 11 };

static uint16_t value_at(size_t x, size_t y, size_t z) { return (uint16_t)(x + 13 * y + 101 * z); }

/* The test volume in little- or big-endian bytes. */
static unsigned char *volume_bytes(bool big) {
  unsigned char *p = malloc((size_t)NX * NY * NZ * 2);
  for (size_t z = 0; z < NZ; z++)
    for (size_t y = 0; y < NY; y++)
      for (size_t x = 0; x < NX; x++) {
        unsigned char *q = p + 2 * ((z * NY + y) * NX + x);
        if (big)
          put_be16(q, value_at(x, y, z));
        else
          put_le16(q, value_at(x, y, z));
      }
  return p;
}

static const size_t boxes[][2][3] = {
    {{3, 2, 1}, {7, 9, 5}},    /* inside on every axis: one run per row */
    {{0, 4, 2}, {NX, 5, 6}},   /* full rows: runs of whole row blocks */
    {{0, 0, 3}, {NX, NY, 8}},  /* full slices: one run, across data files */
    {{22, 16, 10}, {1, 1, 1}}, /* the last voxel */
};

static void check_box(const char *source, const ir_volume_desc *options) {
  for (size_t b = 0; b < sizeof boxes / sizeof boxes[0]; b++) {
    ir_volume_desc d = options ? *options : (ir_volume_desc){0};
    memcpy(d.region_offset, boxes[b][0], sizeof d.region_offset);
    memcpy(d.region_size, boxes[b][1], sizeof d.region_size);
    ir_volume v;
    char err[IR_ERR_LEN];
    ir_status st = load_with(source, &d, &v, err);
    CHECK_MSG(st == IR_OK, "%s box %zu: %s", source, b, err);
    if (st != IR_OK) continue;
    const size_t *o = boxes[b][0], *s = boxes[b][1];
    CHECK(v.dims[0] == s[0] && v.dims[1] == s[1] && v.dims[2] == s[2]);
    CHECK(v.origin[0] == o[0] && v.origin[1] == o[1] && v.origin[2] == o[2]);
    CHECK(v.full_dims[0] == NX && v.full_dims[1] == NY && v.full_dims[2] == NZ);
    CHECK_EQ_INT(v.bytes, s[0] * s[1] * s[2] * 2);
    size_t wrong = 0;
    for (size_t z = 0; z < s[2]; z++)
      for (size_t y = 0; y < s[1]; y++)
        for (size_t x = 0; x < s[0]; x++)
          wrong += ir_volume_value_at(&v, x, y, z) != value_at(o[0] + x, o[1] + y, o[2] + z);
    CHECK_MSG(wrong == 0, "%s box %zu: %zu voxels differ from the whole volume's", source, b, wrong);
    ir_volume_free(&v);
  }
}

static void test_raw_and_gzip_raw_boxes(void) {
  unsigned char *le = volume_bytes(false);
  size_t n = (size_t)NX * NY * NZ * 2, gz_n = 0;
  write_bytes(scratch_path("r_23x17x11_uint16.raw"), le, n);
  unsigned char *gz = deflate_bytes(le, n, 31, &gz_n);
  write_bytes(scratch_path("r_23x17x11_uint16.raw.gz"), gz, gz_n);
  check_box(scratch_path("r_23x17x11_uint16.raw"), NULL);
  check_box(scratch_path("r_23x17x11_uint16.raw.gz"), NULL);
  free(le);
  free(gz);
}

static void test_nrrd_boxes_attached_detached_gzip_and_per_slice_files(void) {
  unsigned char *be = volume_bytes(true), *le = volume_bytes(false);
  size_t n = (size_t)NX * NY * NZ * 2, gz_n = 0;
  const char *head = "NRRD0004\ntype: uint16\ndimension: 3\nsizes: 23 17 11\nendian: big\nencoding: raw\n\n";
  write_text(scratch_path("attached.nrrd"), head);
  append_bytes(scratch_path("attached.nrrd"), be, n);
  check_box(scratch_path("attached.nrrd"), NULL);

  unsigned char *gz = deflate_bytes(le, n, 31, &gz_n);
  write_bytes(scratch_path("detached.raw.gz"), gz, gz_n);
  write_text(scratch_path("detached.nhdr"), "NRRD0004\ntype: uint16\ndimension: 3\nsizes: 23 17 11\nendian: little\n"
                                            "encoding: gzip\ndata file: detached.raw.gz\n");
  check_box(scratch_path("detached.nhdr"), NULL);

  /* One file per slice, each with an 8-byte preamble skipped by "byte skip". */
  for (int z = 0; z < NZ; z++) {
    const char *name = scratch_path(fmt_path("slice%02d.raw", z));
    write_text(name, "PREAMBLE");
    append_bytes(name, le + (size_t)z * NX * NY * 2, (size_t)NX * NY * 2);
  }
  write_text(scratch_path("slices.nhdr"), "NRRD0004\ntype: uint16\ndimension: 3\nsizes: 23 17 11\nendian: little\n"
                                          "encoding: raw\nbyte skip: 8\ndata file: slice%02d.raw 0 10 1\n");
  check_box(scratch_path("slices.nhdr"), NULL);
  free(be);
  free(le);
  free(gz);
}

static void test_metaimage_boxes_attached_and_zlib(void) {
  unsigned char *le = volume_bytes(false);
  size_t n = (size_t)NX * NY * NZ * 2, z_n = 0;
  write_text(scratch_path("local.mha"), "ObjectType = Image\nNDims = 3\nDimSize = 23 17 11\nElementType = MET_USHORT\n"
                                        "ElementDataFile = LOCAL\n");
  append_bytes(scratch_path("local.mha"), le, n);
  check_box(scratch_path("local.mha"), NULL);
  unsigned char *z = deflate_bytes(le, n, 15, &z_n);
  write_bytes(scratch_path("packed.zraw"), z, z_n);
  write_text(scratch_path("packed.mhd"), "ObjectType = Image\nNDims = 3\nDimSize = 23 17 11\nElementType = MET_USHORT\n"
                                         "CompressedData = True\nElementDataFile = packed.zraw\n");
  check_box(scratch_path("packed.mhd"), NULL);
  free(le);
  free(z);
}

static void test_builtin_boxes_equal_the_whole_volume_there(void) {
  const char *names[] = {"builtin:sphere:40", "builtin:marschner-lobb:40", "builtin:fractal:40",
                         "builtin:sphere:40x30x56", "builtin:marschner-lobb:40x64x32", "builtin:fractal:40x48x33"};
  const size_t off[3] = {5, 17, 9}, size[3] = {30, 11, 20};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    ir_volume whole, box;
    char err[IR_ERR_LEN];
    CHECK(load(names[k], &whole, err) == IR_OK);
    ir_volume_desc d = {0};
    memcpy(d.region_offset, off, sizeof off);
    memcpy(d.region_size, size, sizeof size);
    CHECK_MSG(load_with(names[k], &d, &box, err) == IR_OK, "%s", err);
    CHECK(box.dims[0] == 30 && box.dims[1] == 11 && box.dims[2] == 20 && box.origin[1] == 17);
    CHECK(box.full_dims[0] == 40);
    size_t wrong = 0;
    for (size_t z = 0; z < size[2]; z++)
      for (size_t y = 0; y < size[1]; y++)
        for (size_t x = 0; x < size[0]; x++)
          wrong += ir_volume_value_at(&box, x, y, z) != ir_volume_value_at(&whole, off[0] + x, off[1] + y, off[2] + z);
    CHECK_MSG(wrong == 0, "%s: %zu voxels differ", names[k], wrong);
    ir_volume_free(&whole);
    ir_volume_free(&box);
  }
}

/* The fractal computes a row only over its box's part: every start along x, on volumes whose
 * noise cells are a fraction of a voxel off whole widths at every octave (the start may fall on
 * any voxel of a cell, its first or last included), gives the whole row's values there. */
static void test_fractal_rows_from_any_start_equal_the_whole_rows(void) {
  const char *names[] = {"builtin:fractal:97x3x2", "builtin:fractal:1000x2x2", "builtin:fractal:2051x2x3",
                         "builtin:fractal:4099x2x2"};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    ir_volume whole;
    char err[IR_ERR_LEN];
    CHECK_MSG(load(names[k], &whole, err) == IR_OK, "%s", err);
    size_t n = whole.dims[0], wrong = 0, starts = 0;
    for (size_t x0 = 0; x0 < n; x0 += n > 2100 ? 3 : 1, starts++) {
      ir_volume_desc d = {0};
      d.region_offset[0] = x0;
      d.region_offset[1] = 1;
      d.region_size[0] = x0 % 2 ? n - x0 : (n - x0 < 9 ? n - x0 : 9);
      d.region_size[1] = d.region_size[2] = 1;
      ir_volume part;
      if (load_with(names[k], &d, &part, err) != IR_OK) {
        CHECK_MSG(false, "%s at x %zu: %s", names[k], x0, err);
        break;
      }
      for (size_t x = 0; x < d.region_size[0]; x++)
        wrong += ir_volume_value_at(&part, x, 0, 0) != ir_volume_value_at(&whole, x0 + x, 1, 0);
      ir_volume_free(&part);
    }
    CHECK_MSG(wrong == 0, "%s: %zu voxels differ over %zu starts", names[k], wrong, starts);
    ir_volume_free(&whole);
  }
}

/* A box that is not a cube: its dims and name, the cube's features where the cube and the box
 * share a corner region's scale (the fractal's noise is in units of the longest side, so a
 * 64x64x32 box is the 64 cube's noise with the walls faded at its own faces), and values that
 * stay in range. */
static void test_builtin_volumes_take_three_dims(void) {
  ir_volume box, cube;
  char err[IR_ERR_LEN];
  CHECK_MSG(load("builtin:fractal:64x64x32", &box, err) == IR_OK, "%s", err);
  CHECK_MSG(load("builtin:fractal:64", &cube, err) == IR_OK, "%s", err);
  CHECK(box.dims[0] == 64 && box.dims[1] == 64 && box.dims[2] == 32);
  CHECK(strcmp(box.name, "builtin:fractal:64x64x32") == 0);
  /* Away from the faces, where neither fades, the box is the cube's lower half. */
  size_t wrong = 0, inner = 0;
  for (size_t z = 4; z < 28; z++)
    for (size_t y = 4; y < 60; y++)
      for (size_t x = 4; x < 60; x++, inner++)
        wrong += ir_volume_value_at(&box, x, y, z) != ir_volume_value_at(&cube, x, y, z);
  CHECK_MSG(wrong == 0, "%zu of %zu inner voxels differ from the cube's", wrong, inner);
  ir_volume_free(&box);
  ir_volume_free(&cube);
  CHECK_MSG(load("builtin:sphere:32x16x8", &box, err) == IR_OK, "%s", err);
  /* The sphere's radius is 0.35 of the shortest side about the box's centre. */
  CHECK(fabs(ir_volume_value_at(&box, 16, 8, 4) - (0.35 * 8 - sqrt(0.25 + 0.25 + 0.25))) < 1e-5);
  ir_volume_free(&box);
}

static void test_boxes_outside_the_volume_are_input_errors(void) {
  unsigned char *le = volume_bytes(false);
  write_bytes(scratch_path("e_23x17x11_uint16.raw"), le, (size_t)NX * NY * NZ * 2);
  free(le);
  const size_t bad[][2][3] = {{{20, 0, 0}, {4, 1, 1}}, {{0, 0, 0}, {0, 5, 5}}, {{0, 0, 16}, {1, 1, 1}}};
  const char *sources[] = {scratch_path("e_23x17x11_uint16.raw"), "builtin:sphere:16"};
  for (size_t s = 0; s < 2; s++)
    for (size_t b = 0; b < 3; b++) {
      ir_volume_desc d = {0};
      memcpy(d.region_offset, bad[b][0], sizeof d.region_offset);
      memcpy(d.region_size, bad[b][1], sizeof d.region_size);
      ir_volume v;
      char err[IR_ERR_LEN];
      CHECK(load_with(sources[s], &d, &v, err) == IR_ERR_INPUT);
      CHECK_STR_CONTAINS(err, "region");
      CHECK(v.voxels == NULL);
    }
}

static void test_header_only_reads_no_voxels(void) {
  unsigned char *le = volume_bytes(false);
  write_bytes(scratch_path("h_23x17x11_uint16.raw"), le, (size_t)NX * NY * NZ * 2);
  free(le);
  const char *sources[] = {scratch_path("h_23x17x11_uint16.raw"), "builtin:fractal:2048"};
  const size_t dims[2][3] = {{NX, NY, NZ}, {2048, 2048, 2048}};
  for (int s = 0; s < 2; s++) {
    ir_volume_desc d = {.header_only = true, .spacing_given = true, .spacing = {1, 2, 3}};
    ir_volume v;
    char err[IR_ERR_LEN];
    CHECK_MSG(load_with(sources[s], &d, &v, err) == IR_OK, "%s", err);
    CHECK(v.voxels == NULL && v.bytes == 0);
    CHECK(v.dims[0] == dims[s][0] && v.dims[1] == dims[s][1] && v.dims[2] == dims[s][2]);
    CHECK(v.spacing[2] == 3.0f);
    ir_volume_free(&v);
  }
}

int main(void) {
  RUN(test_raw_and_gzip_raw_boxes);
  RUN(test_nrrd_boxes_attached_detached_gzip_and_per_slice_files);
  RUN(test_metaimage_boxes_attached_and_zlib);
  RUN(test_builtin_boxes_equal_the_whole_volume_there);
  RUN(test_fractal_rows_from_any_start_equal_the_whole_rows);
  RUN(test_builtin_volumes_take_three_dims);
  RUN(test_boxes_outside_the_volume_are_input_errors);
  RUN(test_header_only_reads_no_voxels);
  return check_summary();
}
