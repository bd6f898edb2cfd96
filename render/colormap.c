/* Colours: the colour map tables and their lookup, surface colours by name or #rrggbb, the
 * default surface palette, and automatic colour ranges (render.h, "Surfaces and colour").
 *
 * The perceptual maps are matplotlib's tables, value for value (colormap_tables.h says where they
 * come from and under which licence), so that a picture coloured here reads like one made with
 * matplotlib's viridis. The renderers read the same tables: the CPU through
 * ir_colormap_lookup, the GPU from a copy of ir_colormap_table.
 *
 * What this file does not do: colour anything during a frame (the renderers do), or load the
 * second volume (the app does).
 */
#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "render/colormap_tables.h"
#include "render/ray_math.cuh"
#include "render/render.h"

/* ---- Colour maps --------------------------------------------------------------------------------- */

static const struct {
  const char *name;
  const float *table;
} colormaps[IR_COLORMAP_COUNT] = {
    [IR_COLORMAP_VIRIDIS] = {"viridis", viridis_table}, [IR_COLORMAP_MAGMA] = {"magma", magma_table},
    [IR_COLORMAP_INFERNO] = {"inferno", inferno_table}, [IR_COLORMAP_PLASMA] = {"plasma", plasma_table},
    [IR_COLORMAP_CIVIDIS] = {"cividis", cividis_table}, [IR_COLORMAP_GREY] = {"grey", grey_table},
};

const float *ir_colormap_table(ir_colormap m) {
  return colormaps[(unsigned)m < IR_COLORMAP_COUNT ? m : IR_COLORMAP_VIRIDIS].table;
}

const char *ir_colormap_name(ir_colormap m) {
  return (unsigned)m < IR_COLORMAP_COUNT ? colormaps[m].name : "unknown";
}

bool ir_colormap_parse(const char *word, ir_colormap *out) {
  if (!word) return false;
  if (strcmp(word, "gray") == 0) word = "grey";
  for (int m = 0; m < IR_COLORMAP_COUNT; m++)
    if (strcmp(word, colormaps[m].name) == 0) return (*out = (ir_colormap)m), true;
  return false;
}

void ir_colormap_lookup(ir_colormap m, float v, float lo, float hi, float rgb[3]) {
  /* The renderers' read (ray_math.cuh): clamped, NaN (a NaN value or range) at the low end. */
  ir_vec3 c = ir_colormap_at(ir_colormap_table(m), IR_COLORMAP_SIZE, lo == hi ? 0.5f : (v - lo) / (hi - lo));
  rgb[0] = c.x;
  rgb[1] = c.y;
  rgb[2] = c.z;
}

const char *ir_color_source_name(ir_color_source s) {
  switch (s) {
  case IR_COLOR_SURFACE: return "surface";
  case IR_COLOR_GRADIENT: return "gradient";
  case IR_COLOR_VOLUME: return "volume";
  default: return "unknown";
  }
}

/* ---- Named colours and the surface palette ------------------------------------------------------- */

/* Plain names take their CSS values; bone, skin and blood are for anatomy (bone is the default
 * surface colour). Two parallel tables so that ir_color_names hands out the first as it is. */
static const char *const color_names[] = {"white", "grey", "gray", "black", "red", "green", "blue",
                                          "yellow", "orange", "cyan", "magenta", "purple", "pink",
                                          "brown", "gold", "teal", "bone", "skin", "blood", NULL};
static const float color_values[][3] = {
    {1.0f, 1.0f, 1.0f},    {0.5f, 0.5f, 0.5f},     {0.5f, 0.5f, 0.5f},     {0.0f, 0.0f, 0.0f},
    {1.0f, 0.0f, 0.0f},    {0.0f, 0.5f, 0.0f},     {0.0f, 0.0f, 1.0f},     {1.0f, 1.0f, 0.0f},
    {1.0f, 0.647f, 0.0f},  {0.0f, 1.0f, 1.0f},     {1.0f, 0.0f, 1.0f},     {0.5f, 0.0f, 0.5f},
    {1.0f, 0.753f, 0.796f}, {0.647f, 0.165f, 0.165f}, {1.0f, 0.843f, 0.0f}, {0.0f, 0.5f, 0.5f},
    {0.93f, 0.84f, 0.66f}, {0.94f, 0.72f, 0.6f},   {0.6f, 0.05f, 0.05f},
};
#define NAMED_COUNT (sizeof color_values / sizeof color_values[0])
_Static_assert(sizeof color_names / sizeof color_names[0] == NAMED_COUNT + 1, "one colour per name");

const char *const *ir_color_names(void) { return color_names; }

static int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = (char)tolower((unsigned char)c);
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static bool same_word(const char *a, const char *b) {
  for (; *a && *b; a++, b++)
    if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return false;
  return *a == *b;
}

bool ir_color_parse(const char *word, float rgb[3]) {
  if (!word) return false;
  if (word[0] == '#') {
    size_t n = strlen(word + 1);
    if (n != 3 && n != 6) return false;
    int d[6];
    for (size_t k = 0; k < n; k++)
      if ((d[k] = hex_digit(word[1 + k])) < 0) return false;
    for (int c = 0; c < 3; c++) {
      /* #rgb is #rrggbb with each digit doubled, as in CSS. */
      int v = n == 3 ? d[c] * 17 : d[2 * c] * 16 + d[2 * c + 1];
      rgb[c] = (float)v / 255.0f;
    }
    return true;
  }
  for (size_t k = 0; k < NAMED_COUNT; k++) {
    if (same_word(word, color_names[k])) {
      memcpy(rgb, color_values[k], sizeof color_values[k]);
      return true;
    }
  }
  return false;
}

void ir_surface_default_color(int i, float rgb[3]) {
  /* The first is the one-surface colour (IR_SURFACE_R/G/B in ray_math.cuh); the others are far
   * from it and from each other in hue, so nested surfaces tell apart. */
  static const float palette[4][3] = {
      {0.93f, 0.84f, 0.66f}, {0.35f, 0.6f, 0.9f}, {0.85f, 0.3f, 0.25f}, {0.45f, 0.75f, 0.4f}};
  memcpy(rgb, palette[i < 0 ? 0 : i % 4], sizeof palette[0]);
}

/* ---- Automatic ranges ---------------------------------------------------------------------------- */

/* At most this many voxels are visited for the gradient range: enough for its maximum on any
 * volume, quick on the largest. */
#define RANGE_MAX_VISITED ((size_t)1 << 24)

static void finite_min_max(const ir_volume *v, float range[2]) {
  double lo = INFINITY, hi = -INFINITY;
  size_t n = ir_volume_voxel_count(v);
  switch (v->type) {
  case IR_VOXEL_UINT8:
    for (size_t i = 0; i < n; i++) {
      double x = ((const uint8_t *)v->voxels)[i];
      lo = x < lo ? x : lo;
      hi = x > hi ? x : hi;
    }
    break;
  case IR_VOXEL_UINT16:
    for (size_t i = 0; i < n; i++) {
      double x = ((const uint16_t *)v->voxels)[i];
      lo = x < lo ? x : lo;
      hi = x > hi ? x : hi;
    }
    break;
  case IR_VOXEL_INT16:
    for (size_t i = 0; i < n; i++) {
      double x = ((const int16_t *)v->voxels)[i];
      lo = x < lo ? x : lo;
      hi = x > hi ? x : hi;
    }
    break;
  default:
    for (size_t i = 0; i < n; i++) {
      float x = ((const float *)v->voxels)[i];
      if (!isfinite(x)) continue;
      lo = x < lo ? x : lo;
      hi = x > hi ? x : hi;
    }
    break;
  }
  if (lo > hi) lo = hi = 0.0; /* no finite voxel */
  range[0] = (float)lo;
  range[1] = (float)hi;
}

/* d/d(axis) at integer voxel p, in data units per world unit: central difference one voxel
 * either side, one-sided at the faces, NaN where a neighbour is not finite. */
static double axis_derivative(const ir_volume *v, const size_t p[3], int axis) {
  size_t a[3] = {p[0], p[1], p[2]}, b[3] = {p[0], p[1], p[2]};
  if (p[axis] > 0) a[axis]--;
  if (p[axis] + 1 < v->dims[axis]) b[axis]++;
  size_t steps = b[axis] - a[axis];
  if (steps == 0) return 0.0; /* one voxel thick: no change along this axis */
  double fa = ir_volume_value_at(v, a[0], a[1], a[2]), fb = ir_volume_value_at(v, b[0], b[1], b[2]);
  return (fb - fa) / ((double)steps * (double)v->spacing[axis]);
}

static void gradient_max(const ir_volume *v, float range[2]) {
  size_t n = ir_volume_voxel_count(v), stride = 1;
  /* The same stride on every axis, so that the subsample is a regular grid. */
  if (n > RANGE_MAX_VISITED) stride = (size_t)cbrt((double)n / (double)RANGE_MAX_VISITED);
  if (stride < 1) stride = 1;
  for (;; stride++) {
    size_t visited = 1;
    for (int k = 0; k < 3; k++) visited *= (v->dims[k] + stride - 1) / stride;
    if (visited <= RANGE_MAX_VISITED) break;
  }
  double best = 0.0;
  size_t p[3];
  for (p[2] = 0; p[2] < v->dims[2]; p[2] += stride)
    for (p[1] = 0; p[1] < v->dims[1]; p[1] += stride)
      for (p[0] = 0; p[0] < v->dims[0]; p[0] += stride) {
        double gx = axis_derivative(v, p, 0), gy = axis_derivative(v, p, 1), gz = axis_derivative(v, p, 2);
        double m = sqrt(gx * gx + gy * gy + gz * gz);
        if (isfinite(m) && m > best) best = m;
      }
  range[0] = 0.0f;
  range[1] = (float)best;
}

void ir_color_range_auto(const ir_volume *field, const ir_volume *color_volume, ir_color_source source,
                         float range[2]) {
  range[0] = 0.0f;
  range[1] = 1.0f;
  if (source == IR_COLOR_VOLUME && color_volume && color_volume->voxels) finite_min_max(color_volume, range);
  else if (source == IR_COLOR_GRADIENT && field && field->voxels) gradient_max(field, range);
}
