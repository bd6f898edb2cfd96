/* Procedural volumes: the sphere's distances, the Marschner-Lobb formula at known points
 * (computed here from the published definition), the fractal's determinism, range and
 * coverage, and the names table. */
#include <math.h>

#include "tests/data/data_test_util.h"

static const double pi = 3.14159265358979323846;

static ir_volume load_builtin(const char *source) {
  ir_volume v;
  char err[IR_ERR_LEN];
  ir_status status = load(source, &v, err);
  CHECK_MSG(status == IR_OK, "%s: %s", source, err);
  if (status != IR_OK) memset(&v, 0, sizeof v);
  return v;
}

static void test_names_listed_and_loadable_at_small_sizes(void) {
  const char *const *names = ir_builtin_names();
  int count = 0;
  bool sphere = false, ml = false, fractal = false;
  for (; names && names[count]; count++) {
    sphere |= strcmp(names[count], "sphere") == 0;
    ml |= strcmp(names[count], "marschner-lobb") == 0;
    fractal |= strcmp(names[count], "fractal") == 0;
    for (int n = 2; n <= 17; n += 15) {
      ir_volume v = load_builtin(fmt_path("builtin:%s:%d", names[count], n));
      CHECK_EQ_INT(v.dims[0], n);
      CHECK_EQ_INT(v.dims[2], n);
      CHECK_STR_CONTAINS(v.name, names[count]);
      CHECK(isfinite(ir_builtin_isovalue(fmt_path("builtin:%s:%d", names[count], n))));
      ir_volume_free(&v);
    }
  }
  CHECK(sphere && ml && fractal);
  CHECK(count >= 3);
  CHECK(isnan(ir_builtin_isovalue("builtin:cube")));
  CHECK(isnan(ir_builtin_isovalue("bonsai.raw")));
}

static void test_default_size_is_128(void) {
  ir_volume v = load_builtin("builtin:sphere");
  CHECK_EQ_INT(v.dims[0], 128);
  CHECK_EQ_INT(v.dims[1], 128);
  CHECK_STR_CONTAINS(v.name, "builtin:sphere:128");
  ir_volume_free(&v);
}

static void test_sphere_is_signed_distance_in_voxels(void) {
  ir_volume v = load_builtin("builtin:sphere:64");
  if (!v.voxels) return;
  CHECK_EQ_INT(v.type, IR_VOXEL_FLOAT32);
  CHECK_NEAR(ir_builtin_isovalue("builtin:sphere:64"), 0, 0);
  /* Centre (31.5)^3, radius 0.35*64 = 22.4. */
  double c = 31.5, r = 22.4;
  CHECK_NEAR(ir_volume_value_at(&v, 31, 31, 31), r - sqrt(3 * 0.25), 1e-5);
  CHECK_NEAR(ir_volume_value_at(&v, 0, 0, 0), r - sqrt(3 * c * c), 1e-4);
  CHECK_NEAR(ir_volume_value_at(&v, 50, 31, 40), r - sqrt(18.5 * 18.5 + 0.25 + 8.5 * 8.5), 1e-5);
  /* The zero crossing along the x axis through the centre is at |x - c| = r. */
  for (size_t x = 1; x < 64; x++) {
    double a = ir_volume_value_at(&v, x - 1, 31, 31), b = ir_volume_value_at(&v, x, 31, 31);
    if ((a < 0) != (b < 0)) {
      double crossing = (double)(x - 1) + a / (a - b);
      double distance = sqrt((crossing - c) * (crossing - c) + 0.25 + 0.25);
      CHECK_NEAR(distance, r, 1e-4);
    }
  }
  CHECK(v.value_max > 21 && v.value_max < r);
  ir_volume_free(&v);
}

static double marschner_lobb(double x, double y, double z) {
  const double alpha = 0.25, fm = 6.0;
  double r = sqrt(x * x + y * y);
  return (1 - sin(pi * z / 2) + alpha * (1 + cos(2 * pi * fm * cos(pi * r / 2)))) / (2 * (1 + alpha));
}

static void test_marschner_lobb_matches_formula(void) {
  ir_volume v = load_builtin("builtin:marschner-lobb:41");
  if (!v.voxels) return;
  CHECK_EQ_INT(v.type, IR_VOXEL_FLOAT32);
  /* Index i maps to -1 + 2i/40: 0 -> -1, 20 -> 0, 40 -> 1. */
  CHECK_NEAR(ir_volume_value_at(&v, 20, 20, 20), marschner_lobb(0, 0, 0), 1e-6);
  /* At the origin: (1 - 0 + 0.25 (1 + cos(12 pi))) / 2.5 = 1.5 / 2.5. */
  CHECK_NEAR(ir_volume_value_at(&v, 20, 20, 20), 0.6, 1e-6);
  /* Top face centre, z = 1: (1 - 1 + 0.25 * 2) / 2.5 = 0.2. */
  CHECK_NEAR(ir_volume_value_at(&v, 20, 20, 40), 0.2, 1e-6);
  const size_t points[][3] = {{0, 0, 0}, {3, 7, 11}, {40, 0, 25}, {13, 29, 5}, {33, 33, 33}};
  for (size_t k = 0; k < sizeof points / sizeof points[0]; k++) {
    double x = -1 + 2.0 * (double)points[k][0] / 40, y = -1 + 2.0 * (double)points[k][1] / 40,
           z = -1 + 2.0 * (double)points[k][2] / 40;
    CHECK_NEAR(ir_volume_value_at(&v, points[k][0], points[k][1], points[k][2]),
               marschner_lobb(x, y, z), 1e-6);
  }
  CHECK(v.value_min >= 0 && v.value_max <= 1);
  CHECK_NEAR(ir_builtin_isovalue("builtin:marschner-lobb"), 0.5, 0);
  ir_volume_free(&v);
}

static void test_fractal_deterministic_with_range_and_coverage(void) {
  ir_volume a = load_builtin("builtin:fractal:96"), b = load_builtin("builtin:fractal:96");
  if (!a.voxels || !b.voxels) return;
  CHECK_EQ_INT(a.type, IR_VOXEL_UINT8);
  CHECK(a.bytes == b.bytes && memcmp(a.voxels, b.voxels, a.bytes) == 0);
  CHECK(a.value_min <= 5);
  CHECK(a.value_max >= 250);
  double iso = ir_builtin_isovalue("builtin:fractal:96");
  CHECK_NEAR(iso, 127.5, 0);
  /* Thin walls: a minority of voxels above the isovalue, but most columns seen along z
   * cross it (the surface covers most of the image), and it is closed at the faces. */
  const unsigned char *p = a.voxels;
  size_t n = 96, above = 0, columns_hit = 0, face_above = 0;
  for (size_t i = 0; i < n * n * n; i++) above += p[i] > iso;
  for (size_t y = 0; y < n; y++)
    for (size_t x = 0; x < n; x++) {
      bool hit = false;
      for (size_t z = 0; z < n && !hit; z++) hit = p[x + n * (y + n * z)] > iso;
      columns_hit += hit;
      face_above += p[x + n * y] > iso;
    }
  double fraction = (double)above / (double)(n * n * n);
  CHECK_MSG(fraction > 0.03 && fraction < 0.4, "fraction above isovalue %g", fraction);
  CHECK_MSG(columns_hit > n * n * 7 / 10, "columns hit %zu of %zu", columns_hit, n * n);
  CHECK_EQ_INT(face_above, 0);
  ir_volume_free(&a);
  ir_volume_free(&b);
}

static void test_spacing_option_applies_to_builtins(void) {
  ir_volume v;
  char err[IR_ERR_LEN];
  ir_volume_desc opt = {.spacing_given = true, .spacing = {1, 1, 2}};
  CHECK(load_with("builtin:sphere:8", &opt, &v, err) == IR_OK);
  CHECK_NEAR(v.spacing[2], 2, 0);
  ir_volume_free(&v);
}

static void test_stats_builtin_isovalue_first_and_labels(void) {
  ir_volume v = load_builtin("builtin:sphere:32");
  ir_volume_stats s;
  if (v.voxels) {
    ir_volume_compute_stats(&v, &s);
    CHECK(s.suggested_count >= 1);
    CHECK_NEAR(s.suggested_isovalues[0], 0, 0);
    CHECK_NEAR(s.min, v.value_min, 0);
    CHECK_NEAR(s.max, v.value_max, 0);
  }
  ir_volume_free(&v);

  /* A label volume 0, 1, 2, 5 written by hand: suggestions between neighbouring labels. */
  unsigned char labels[4 * 4 * 4];
  for (int i = 0; i < 64; i++) labels[i] = (unsigned char)(i < 30 ? 0 : i < 40 ? 1 : i < 60 ? 2 : 5);
  write_bytes(scratch_path("labels_4x4x4_uint8.raw"), labels, sizeof labels);
  char err[IR_ERR_LEN];
  if (load(scratch_path("labels_4x4x4_uint8.raw"), &v, err) != IR_OK) {
    CHECK_MSG(false, "%s", err);
    return;
  }
  ir_volume_compute_stats(&v, &s);
  CHECK_EQ_INT(s.suggested_count, 3);
  bool half = false, one_half = false, mid = false;
  for (int k = 0; k < s.suggested_count; k++) {
    half |= s.suggested_isovalues[k] == 0.5;
    one_half |= s.suggested_isovalues[k] == 1.5;
    mid |= s.suggested_isovalues[k] == 3.5;
  }
  CHECK(half && one_half && mid);
  CHECK_NEAR(s.mean, (10 * 1 + 20 * 2 + 4 * 5) / 64.0, 1e-12);
  CHECK_EQ_INT(s.histogram[0], 30);
  CHECK_EQ_INT(s.histogram[IR_HISTOGRAM_BINS - 1], 4);
  ir_volume_free(&v);
}

static void test_stats_two_materials_boundary_between(void) {
  /* A ball of 220 in a background of 20 with a blurred boundary, float data. */
  enum { N = 32 };
  static float values[N * N * N];
  for (int i = 0; i < N * N * N; i++) {
    double x = i % N - 15.5, y = i / N % N - 15.5, z = i / (N * N) - 15.5;
    double r = sqrt(x * x + y * y + z * z);
    values[i] = (float)(20 + 200 / (1 + exp((r - 11) / 0.8)));
  }
  write_bytes(scratch_path("step_32x32x32_float32.raw"), values, sizeof values);
  ir_volume v;
  char err[IR_ERR_LEN];
  if (load(scratch_path("step_32x32x32_float32.raw"), &v, err) != IR_OK) {
    CHECK_MSG(false, "%s", err);
    return;
  }
  ir_volume_stats s;
  ir_volume_compute_stats(&v, &s);
  CHECK(s.suggested_count >= 1);
  CHECK_MSG(s.suggested_isovalues[0] > 60 && s.suggested_isovalues[0] < 180, "first suggestion %g",
            s.suggested_isovalues[0]);
  ir_volume_free(&v);
}

int main(void) {
  RUN(test_names_listed_and_loadable_at_small_sizes);
  RUN(test_default_size_is_128);
  RUN(test_sphere_is_signed_distance_in_voxels);
  RUN(test_marschner_lobb_matches_formula);
  RUN(test_fractal_deterministic_with_range_and_coverage);
  RUN(test_spacing_option_applies_to_builtins);
  RUN(test_stats_builtin_isovalue_first_and_labels);
  RUN(test_stats_two_materials_boundary_between);
  return check_summary();
}
