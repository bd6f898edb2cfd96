/* Colours (render/colormap.c): the colour map tables against matplotlib's values, the lookup's
 * interpolation, clamping and NaN handling, colour names and #rrggbb, the surface palette, and
 * the automatic colour ranges on small generated volumes of every voxel type. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "render/render.h"
#include "tests/check.h"

static void check_entry(ir_colormap m, int i, float r, float g, float b) {
  const float *t = ir_colormap_table(m);
  CHECK_MSG(fabsf(t[3 * i] - r) < 1e-7f && fabsf(t[3 * i + 1] - g) < 1e-7f && fabsf(t[3 * i + 2] - b) < 1e-7f,
            "%s[%d] = (%.6f, %.6f, %.6f), expected (%.6f, %.6f, %.6f)", ir_colormap_name(m), i, (double)t[3 * i],
            (double)t[3 * i + 1], (double)t[3 * i + 2], (double)r, (double)g, (double)b);
}

/* Values read off matplotlib's _cm_listed.py: the ends and the middle entry of each map. */
static void test_tables_hold_matplotlibs_values(void) {
  check_entry(IR_COLORMAP_VIRIDIS, 0, 0.267004f, 0.004874f, 0.329415f);
  check_entry(IR_COLORMAP_VIRIDIS, 128, 0.127568f, 0.566949f, 0.550556f);
  check_entry(IR_COLORMAP_VIRIDIS, 255, 0.993248f, 0.906157f, 0.143936f);
  check_entry(IR_COLORMAP_MAGMA, 0, 0.001462f, 0.000466f, 0.013866f);
  check_entry(IR_COLORMAP_MAGMA, 128, 0.716387f, 0.214982f, 0.475290f);
  check_entry(IR_COLORMAP_MAGMA, 255, 0.987053f, 0.991438f, 0.749504f);
  check_entry(IR_COLORMAP_INFERNO, 128, 0.735683f, 0.215906f, 0.330245f);
  check_entry(IR_COLORMAP_INFERNO, 255, 0.988362f, 0.998364f, 0.644924f);
  check_entry(IR_COLORMAP_PLASMA, 0, 0.050383f, 0.029803f, 0.527975f);
  check_entry(IR_COLORMAP_PLASMA, 255, 0.940015f, 0.975158f, 0.131326f);
  check_entry(IR_COLORMAP_CIVIDIS, 0, 0.0f, 0.135112f, 0.304751f);
  check_entry(IR_COLORMAP_CIVIDIS, 128, 0.488697f, 0.485318f, 0.471008f);
  check_entry(IR_COLORMAP_CIVIDIS, 255, 0.995737f, 0.909344f, 0.217772f);
  for (int i = 0; i < IR_COLORMAP_SIZE; i++) {
    float g = (float)i / 255.0f;
    check_entry(IR_COLORMAP_GREY, i, g, g, g);
  }
  /* Every entry of every map is a colour; the perceptual maps rise in lightness overall. */
  for (int m = 0; m < IR_COLORMAP_COUNT; m++) {
    const float *t = ir_colormap_table((ir_colormap)m);
    for (int k = 0; k < 3 * IR_COLORMAP_SIZE; k++) CHECK(t[k] >= 0.0f && t[k] <= 1.0f);
    float first = t[0] + t[1] + t[2], last = t[765] + t[766] + t[767];
    CHECK_MSG(last > first, "%s: last entry not lighter than the first", ir_colormap_name((ir_colormap)m));
  }
}

static void test_colormap_names_round_trip(void) {
  for (int m = 0; m < IR_COLORMAP_COUNT; m++) {
    ir_colormap out = IR_COLORMAP_COUNT;
    CHECK_MSG(ir_colormap_parse(ir_colormap_name((ir_colormap)m), &out) && out == (ir_colormap)m, "%s",
              ir_colormap_name((ir_colormap)m));
  }
  ir_colormap out = IR_COLORMAP_VIRIDIS;
  CHECK(ir_colormap_parse("gray", &out) && out == IR_COLORMAP_GREY);
  CHECK(!ir_colormap_parse("jet", &out));
  CHECK(!ir_colormap_parse("", &out));
  CHECK(!ir_colormap_parse(NULL, &out));
  CHECK(strcmp(ir_colormap_name(IR_COLORMAP_VIRIDIS), "viridis") == 0);
  CHECK(strcmp(ir_color_source_name(IR_COLOR_SURFACE), "surface") == 0);
  CHECK(strcmp(ir_color_source_name(IR_COLOR_GRADIENT), "gradient") == 0);
  CHECK(strcmp(ir_color_source_name(IR_COLOR_VOLUME), "volume") == 0);
}

static void check_rgb(const float got[3], const float want[3], float tol, const char *what) {
  CHECK_MSG(fabsf(got[0] - want[0]) <= tol && fabsf(got[1] - want[1]) <= tol && fabsf(got[2] - want[2]) <= tol,
            "%s: got (%.7f, %.7f, %.7f), expected (%.7f, %.7f, %.7f)", what, (double)got[0], (double)got[1],
            (double)got[2], (double)want[0], (double)want[1], (double)want[2]);
}

static void test_lookup_interpolates_between_entries_and_clamps(void) {
  const float *t = ir_colormap_table(IR_COLORMAP_VIRIDIS);
  float rgb[3], want[3];
  /* Range 10..265: value 10 + i lands exactly on entry i. */
  for (int i = 0; i < IR_COLORMAP_SIZE; i += 51) {
    ir_colormap_lookup(IR_COLORMAP_VIRIDIS, 10.0f + (float)i, 10.0f, 265.0f, rgb);
    check_rgb(rgb, &t[3 * i], 1e-6f, "on an entry");
  }
  /* A quarter of the way from entry 100 to 101. */
  ir_colormap_lookup(IR_COLORMAP_VIRIDIS, 110.25f, 10.0f, 265.0f, rgb);
  for (int c = 0; c < 3; c++) want[c] = 0.75f * t[300 + c] + 0.25f * t[303 + c];
  check_rgb(rgb, want, 1e-6f, "between entries");
  /* Outside the range: the ends; NaN: the low end; a range of one value: the middle. */
  ir_colormap_lookup(IR_COLORMAP_VIRIDIS, -1e30f, 10.0f, 265.0f, rgb);
  check_rgb(rgb, &t[0], 0.0f, "below the range");
  ir_colormap_lookup(IR_COLORMAP_VIRIDIS, 1e30f, 10.0f, 265.0f, rgb);
  check_rgb(rgb, &t[765], 0.0f, "above the range");
  ir_colormap_lookup(IR_COLORMAP_VIRIDIS, INFINITY, 10.0f, 265.0f, rgb);
  check_rgb(rgb, &t[765], 0.0f, "+inf");
  ir_colormap_lookup(IR_COLORMAP_VIRIDIS, NAN, 10.0f, 265.0f, rgb);
  check_rgb(rgb, &t[0], 0.0f, "NaN");
  ir_colormap_lookup(IR_COLORMAP_VIRIDIS, 3.0f, 5.0f, 5.0f, rgb);
  for (int c = 0; c < 3; c++) want[c] = 0.5f * t[3 * 127 + c] + 0.5f * t[3 * 128 + c];
  check_rgb(rgb, want, 1e-6f, "lo == hi");
  /* grey is linear: the value's fraction of the range. */
  ir_colormap_lookup(IR_COLORMAP_GREY, 0.3f, 0.0f, 1.0f, rgb);
  check_rgb(rgb, (const float[3]){0.3f, 0.3f, 0.3f}, 1e-6f, "grey 0.3");
  /* A reversed range maps hi to the first entry. */
  ir_colormap_lookup(IR_COLORMAP_GREY, 0.0f, 1.0f, 0.0f, rgb);
  check_rgb(rgb, (const float[3]){1.0f, 1.0f, 1.0f}, 1e-6f, "reversed range");
}

static void test_colours_parse_from_hex_and_names(void) {
  float rgb[3];
  CHECK(ir_color_parse("#ff8000", rgb));
  check_rgb(rgb, (const float[3]){1.0f, 128.0f / 255.0f, 0.0f}, 1e-7f, "#ff8000");
  CHECK(ir_color_parse("#0A0b0C", rgb));
  check_rgb(rgb, (const float[3]){10.0f / 255.0f, 11.0f / 255.0f, 12.0f / 255.0f}, 1e-7f, "#0A0b0C");
  CHECK(ir_color_parse("#f80", rgb));
  check_rgb(rgb, (const float[3]){1.0f, 136.0f / 255.0f, 0.0f}, 1e-7f, "#f80");
  CHECK(ir_color_parse("red", rgb));
  check_rgb(rgb, (const float[3]){1.0f, 0.0f, 0.0f}, 0.0f, "red");
  CHECK(ir_color_parse("White", rgb));
  check_rgb(rgb, (const float[3]){1.0f, 1.0f, 1.0f}, 0.0f, "White");
  float grey[3], gray[3];
  CHECK(ir_color_parse("grey", grey) && ir_color_parse("gray", gray));
  check_rgb(grey, gray, 0.0f, "grey and gray");
  /* Every listed name parses; there are enough for several surfaces. */
  const char *const *names = ir_color_names();
  int count = 0;
  for (; names[count]; count++) CHECK_MSG(ir_color_parse(names[count], rgb), "listed name '%s'", names[count]);
  CHECK(count >= 16);
  static const char *const bad[] = {"#zz0000", "#12345", "#1234567", "#", "", "ff0000", "reddish", "#ff 000", "#-10"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) CHECK_MSG(!ir_color_parse(bad[k], rgb), "'%s'", bad[k]);
  CHECK(!ir_color_parse(NULL, rgb));
}

static void test_default_palette_starts_with_the_surface_colour(void) {
  float c[4][3];
  for (int i = 0; i < 4; i++) ir_surface_default_color(i, c[i]);
  check_rgb(c[0], (const float[3]){0.93f, 0.84f, 0.66f}, 0.0f, "first default colour");
  for (int i = 0; i < 4; i++)
    for (int j = i + 1; j < 4; j++)
      CHECK_MSG(fabsf(c[i][0] - c[j][0]) + fabsf(c[i][1] - c[j][1]) + fabsf(c[i][2] - c[j][2]) > 0.3f,
                "default colours %d and %d are too close", i, j);
  float again[3];
  ir_surface_default_color(4, again);
  check_rgb(again, c[0], 0.0f, "the palette repeats");
}

/* A volume of `type` with f(x,y,z) = a x + b y + c z + d (in data units) at voxel (x,y,z). */
static ir_volume ramp_volume(ir_voxel_type type, size_t nx, size_t ny, size_t nz, double a, double b, double c,
                             double d, const float spacing[3]) {
  ir_volume v;
  memset(&v, 0, sizeof v);
  v.dims[0] = nx, v.dims[1] = ny, v.dims[2] = nz;
  v.type = type;
  memcpy(v.spacing, spacing, sizeof v.spacing);
  size_t n = nx * ny * nz;
  v.bytes = n * ir_voxel_type_size(type);
  v.voxels = malloc(v.bytes);
  for (size_t z = 0, i = 0; z < nz; z++)
    for (size_t y = 0; y < ny; y++)
      for (size_t x = 0; x < nx; x++, i++) {
        double f = a * (double)x + b * (double)y + c * (double)z + d;
        switch (type) {
        case IR_VOXEL_UINT8: ((uint8_t *)v.voxels)[i] = (uint8_t)f; break;
        case IR_VOXEL_UINT16: ((uint16_t *)v.voxels)[i] = (uint16_t)f; break;
        case IR_VOXEL_INT16: ((int16_t *)v.voxels)[i] = (int16_t)f; break;
        default: ((float *)v.voxels)[i] = (float)f; break;
        }
      }
  strcpy(v.name, "ramp");
  return v;
}

static void test_volume_range_is_the_exact_finite_min_and_max(void) {
  const float unit[3] = {1, 1, 1};
  float range[2];
  ir_volume u16 = ramp_volume(IR_VOXEL_UINT16, 8, 6, 5, 3, 2, 5, 7, unit);
  ir_color_range_auto(NULL, &u16, IR_COLOR_VOLUME, range);
  CHECK_EQ_INT((long)range[0], 7);
  CHECK_EQ_INT((long)range[1], 3 * 7 + 2 * 5 + 5 * 4 + 7);
  free(u16.voxels);

  ir_volume i16 = ramp_volume(IR_VOXEL_INT16, 4, 4, 4, -100, 1, 1, 50, unit);
  ir_color_range_auto(NULL, &i16, IR_COLOR_VOLUME, range);
  CHECK_NEAR(range[0], -250.0, 0.0);
  CHECK_NEAR(range[1], 56.0, 0.0);
  free(i16.voxels);

  ir_volume u8 = ramp_volume(IR_VOXEL_UINT8, 5, 5, 5, 1, 10, 40, 3, unit);
  ir_color_range_auto(NULL, &u8, IR_COLOR_VOLUME, range);
  CHECK_NEAR(range[0], 3.0, 0.0);
  CHECK_NEAR(range[1], 4.0 + 40.0 + 160.0 + 3.0, 0.0);
  free(u8.voxels);

  /* float32: NaN and Inf voxels are left out. */
  ir_volume f32 = ramp_volume(IR_VOXEL_FLOAT32, 4, 4, 4, 0.5, 0.25, 1, -2, unit);
  float *p = (float *)f32.voxels;
  p[0] = NAN, p[5] = INFINITY, p[63] = -INFINITY;
  ir_color_range_auto(NULL, &f32, IR_COLOR_VOLUME, range);
  CHECK_NEAR(range[0], 0.25 - 2.0, 0.0);             /* voxel (0,1,0): (0,0,0) is NaN */
  CHECK_NEAR(range[1], 1.5 + 0.5 + 3.0 - 2.0, 0.0);  /* voxel (3,2,3): (3,3,3) is -Inf */
  free(f32.voxels);

  /* Without a colour volume, and for surface colours: the whole map over 0..1. */
  ir_color_range_auto(NULL, NULL, IR_COLOR_VOLUME, range);
  CHECK(range[0] == 0.0f && range[1] == 1.0f);
  ir_color_range_auto(NULL, NULL, IR_COLOR_SURFACE, range);
  CHECK(range[0] == 0.0f && range[1] == 1.0f);
}

static void test_gradient_range_of_a_linear_ramp_is_its_slope(void) {
  /* Slopes 3, 2, 5 data units per voxel over spacings 0.5, 2, 1: (6, 1, 5) per world unit. */
  const float spacing[3] = {0.5f, 2.0f, 1.0f};
  float range[2];
  ir_volume u16 = ramp_volume(IR_VOXEL_UINT16, 8, 6, 5, 3, 2, 5, 7, spacing);
  ir_color_range_auto(&u16, NULL, IR_COLOR_GRADIENT, range);
  CHECK_NEAR(range[0], 0.0, 0.0);
  CHECK_NEAR(range[1], sqrt(62.0), 1e-5);
  free(u16.voxels);

  /* NaN and Inf voxels give no gradient; the others still do. */
  ir_volume f32 = ramp_volume(IR_VOXEL_FLOAT32, 6, 6, 6, 1, 2, 2, 0, spacing);
  float *p = (float *)f32.voxels;
  p[0] = NAN, p[100] = INFINITY, p[215] = NAN;
  ir_color_range_auto(&f32, NULL, IR_COLOR_GRADIENT, range);
  CHECK_NEAR(range[1], sqrt(4.0 + 1.0 + 4.0), 1e-5);
  free(f32.voxels);

  /* A flat volume: no gradient anywhere. */
  ir_volume flat = ramp_volume(IR_VOXEL_UINT8, 4, 4, 4, 0, 0, 0, 9, spacing);
  ir_color_range_auto(&flat, NULL, IR_COLOR_GRADIENT, range);
  CHECK(range[0] == 0.0f && range[1] == 0.0f);
  free(flat.voxels);
}

/* A volume over 2^24 voxels is subsampled on a regular grid (here every second voxel): the slope
 * of a ramp is the same on the subsample; a spike at odd x, y and z is no neighbour of any grid
 * voxel and goes unseen, one at odd x next to grid voxels is seen. */
static void test_gradient_range_subsamples_large_volumes(void) {
  const float spacing[3] = {1.0f, 1.0f, 0.25f};
  size_t nx = 320, ny = 300, nz = 200; /* 19.2 M voxels */
  ir_volume v = ramp_volume(IR_VOXEL_UINT8, nx, ny, nz, 0, 0, 1, 0, spacing);
  float range[2];
  ir_color_range_auto(&v, NULL, IR_COLOR_GRADIENT, range);
  CHECK_NEAR(range[1], 4.0, 1e-6);
  uint8_t *p = (uint8_t *)v.voxels;
  p[(101 * ny + 101) * nx + 101] = 255;
  ir_color_range_auto(&v, NULL, IR_COLOR_GRADIENT, range);
  CHECK_MSG(range[1] == 4.0f, "a spike off the subsample was visited: %g", (double)range[1]);
  p[(100 * ny + 100) * nx + 101] = 255;
  ir_color_range_auto(&v, NULL, IR_COLOR_GRADIENT, range);
  /* Seen from grid voxel (100,100,100): x difference (255 - 100) / 2, z slope 4. */
  CHECK_NEAR(range[1], sqrt(77.5 * 77.5 + 16.0), 1e-3);
  free(v.voxels);
}

int main(void) {
  RUN(test_tables_hold_matplotlibs_values);
  RUN(test_colormap_names_round_trip);
  RUN(test_lookup_interpolates_between_entries_and_clamps);
  RUN(test_colours_parse_from_hex_and_names);
  RUN(test_default_palette_starts_with_the_surface_colour);
  RUN(test_volume_range_is_the_exact_finite_min_and_max);
  RUN(test_gradient_range_of_a_linear_ramp_is_its_slope);
  RUN(test_gradient_range_subsamples_large_volumes);
  return check_summary();
}
