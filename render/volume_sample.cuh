/* Sampling the volume: trilinear reads and gradient normals, shared by the CPU and the GPU.
 *
 * On the GPU a sample is one hardware-filtered tex3D read of a texture of the native voxel
 * type (8/16-bit textures read as normalized floats, scaled back to data units by `scale`).
 * On the host the same filter is emulated: the texture unit quantizes each interpolation
 * weight to 8 fractional bits (CUDA Programming Guide, "Linear Filtering"), and so does
 * ir_sample below, so CPU and GPU samples agree up to the filter's internal rounding (which
 * NVIDIA does not specify). docs/render.md states the resulting image tolerance.
 *
 * Coordinates are voxel (texture) coordinates: voxel i has its centre at i + 0.5, and reads
 * outside [0.5, dims - 0.5] clamp to the edge voxels, as the texture's clamp address mode does.
 * NaN voxels make every sample that touches them NaN, and a NaN sample never counts as a
 * crossing (trace.cuh); the renderer turns +-Inf into NaN when it copies a volume.
 */
#ifndef INKRAY_RENDER_VOLUME_SAMPLE_CUH
#define INKRAY_RENDER_VOLUME_SAMPLE_CUH

#include <stddef.h>
#include <string.h>

#include "data/volume.h"
#include "render/ray_math.cuh"

typedef struct ir_volume_view {
  unsigned long long tex; /* cudaTextureObject_t (GPU), linear filtering */
  unsigned long long tex_point; /* the same texture with point reads (GPU), for exact reads (ir_texel) */
  const void *voxels;     /* native voxels, x fastest (CPU) */
  int type;               /* ir_voxel_type */
  int dims[3];
  float scale;            /* GPU: normalized texture value -> data units */
} ir_volume_view;

/* The factor a normalized-float texture read of this type must be multiplied by. */
static inline IR_HD float ir_texture_scale(int type) {
  switch (type) {
  case IR_VOXEL_UINT8: return 255.0f;
  case IR_VOXEL_UINT16: return 65535.0f;
  case IR_VOXEL_INT16: return 32767.0f;
  default: return 1.0f;
  }
}

/* A view of a volume's voxels on the host (the GPU adds its texture objects). */
static inline ir_volume_view ir_volume_view_of(const ir_volume *v) {
  ir_volume_view view;
  memset(&view, 0, sizeof view);
  view.voxels = v->voxels;
  view.type = (int)v->type;
  for (int k = 0; k < 3; k++) view.dims[k] = (int)v->dims[k];
  view.scale = ir_texture_scale((int)v->type);
  return view;
}

/* One voxel in data units, as the texture unit reads it (signed 16-bit normalizes to
 * max(v / 32767, -1), so -32768 reads as -32767). */
static inline IR_HD float ir_voxel_value(const ir_volume_view *v, size_t i) {
  switch (v->type) {
  case IR_VOXEL_UINT8: return (float)((const uint8_t *)v->voxels)[i];
  case IR_VOXEL_UINT16: return (float)((const uint16_t *)v->voxels)[i];
  case IR_VOXEL_INT16: {
    int16_t s = ((const int16_t *)v->voxels)[i];
    return (float)(s < -32767 ? -32767 : s);
  }
  default: return ((const float *)v->voxels)[i];
  }
}

/* 8-bit fixed-point interpolation weight, as the texture unit uses. */
static inline IR_HD float ir_filter_weight(float frac) { return floorf(frac * 256.0f + 0.5f) * (1.0f / 256.0f); }

static inline IR_HD int ir_clampi(int i, int lo, int hi) { return i < lo ? lo : (i > hi ? hi : i); }

static inline IR_HD float ir_lerp(float a, float b, float w) { return (1.0f - w) * a + w * b; }

/* Host emulation of a linear-filtered, clamp-addressed tex3D read. */
static inline IR_HD float ir_sample_emulated(const ir_volume_view *v, float x, float y, float z) {
  float xb = fminf(fmaxf(x - 0.5f, -1.0f), (float)v->dims[0]);
  float yb = fminf(fmaxf(y - 0.5f, -1.0f), (float)v->dims[1]);
  float zb = fminf(fmaxf(z - 0.5f, -1.0f), (float)v->dims[2]);
  float fx = floorf(xb), fy = floorf(yb), fz = floorf(zb);
  float ax = ir_filter_weight(xb - fx), ay = ir_filter_weight(yb - fy), az = ir_filter_weight(zb - fz);
  int ix = (int)fx, iy = (int)fy, iz = (int)fz;
  size_t x0 = (size_t)ir_clampi(ix, 0, v->dims[0] - 1), x1 = (size_t)ir_clampi(ix + 1, 0, v->dims[0] - 1);
  size_t y0 = (size_t)ir_clampi(iy, 0, v->dims[1] - 1), y1 = (size_t)ir_clampi(iy + 1, 0, v->dims[1] - 1);
  size_t z0 = (size_t)ir_clampi(iz, 0, v->dims[2] - 1), z1 = (size_t)ir_clampi(iz + 1, 0, v->dims[2] - 1);
  size_t sy = (size_t)v->dims[0], sz = (size_t)v->dims[0] * (size_t)v->dims[1];
  float c000 = ir_voxel_value(v, x0 + y0 * sy + z0 * sz), c100 = ir_voxel_value(v, x1 + y0 * sy + z0 * sz);
  float c010 = ir_voxel_value(v, x0 + y1 * sy + z0 * sz), c110 = ir_voxel_value(v, x1 + y1 * sy + z0 * sz);
  float c001 = ir_voxel_value(v, x0 + y0 * sy + z1 * sz), c101 = ir_voxel_value(v, x1 + y0 * sy + z1 * sz);
  float c011 = ir_voxel_value(v, x0 + y1 * sy + z1 * sz), c111 = ir_voxel_value(v, x1 + y1 * sy + z1 * sz);
  float c00 = ir_lerp(c000, c100, ax), c10 = ir_lerp(c010, c110, ax);
  float c01 = ir_lerp(c001, c101, ax), c11 = ir_lerp(c011, c111, ax);
  return ir_lerp(ir_lerp(c00, c10, ay), ir_lerp(c01, c11, ay), az);
}

/* The field at a point, in data units. */
static inline IR_HD float ir_sample(const ir_volume_view *v, ir_vec3 p) {
#ifdef __CUDA_ARCH__
  return tex3D<float>((cudaTextureObject_t)v->tex, p.x, p.y, p.z) * v->scale;
#else
  return ir_sample_emulated(v, p.x, p.y, p.z);
#endif
}

/* ---- Exact trilinear reads --------------------------------------------------------------------
 * The texture unit's 8-bit weights make the filtered field a staircase at 1/256 of a voxel; on
 * steep 16-bit data the crossings found with it snap to terraces. Refinement and normals use the
 * exact trilinear interpolant instead: texels read one by one (a point-sampled texture object on
 * the same array on the GPU) and weighted in float. */

/* Voxel (i, j, k), clamped to the volume as the texture's clamp mode does, in data units. */
static inline IR_HD float ir_texel(const ir_volume_view *v, int i, int j, int k) {
#ifdef __CUDA_ARCH__
  return tex3D<float>((cudaTextureObject_t)v->tex_point, (float)i + 0.5f, (float)j + 0.5f, (float)k + 0.5f) *
         v->scale;
#else
  size_t x = (size_t)ir_clampi(i, 0, v->dims[0] - 1), y = (size_t)ir_clampi(j, 0, v->dims[1] - 1),
         z = (size_t)ir_clampi(k, 0, v->dims[2] - 1);
  return ir_voxel_value(v, x + (size_t)v->dims[0] * (y + (size_t)v->dims[1] * z));
#endif
}

/* The cell below p along one axis: its first voxel and the weight, in full precision. */
static inline IR_HD int ir_cell_axis(float x, int n, float *w) {
  float b = fminf(fmaxf(x - 0.5f, -1.0f), (float)n), f = floorf(b);
  *w = b - f;
  return (int)f;
}

/* The eight texels of the cell from voxel (i, j, k) to (i + 1, j + 1, k + 1), t[z][y][x], kept
 * between the exact reads at a hit: the Newton steps and the differences at the refined crossing
 * nearly always fall in one cell, and then read its texels once instead of three times (the same
 * values, so the same results bit for bit). */
typedef struct ir_exact_cell {
  int i, j, k; /* i == INT_MIN: none read yet */
  float t[2][2][2];
} ir_exact_cell;

static inline IR_HD ir_exact_cell ir_exact_cell_none(void) {
  ir_exact_cell c;
  memset(&c, 0, sizeof c);
  c.i = c.j = c.k = -2147483647 - 1;
  return c;
}

/* Cell (i, j, k)'s texels into *c, unless they are there already. */
static inline IR_HD void ir_exact_cell_read(const ir_volume_view *v, int i, int j, int k, ir_exact_cell *c) {
  if (i == c->i && j == c->j && k == c->k) return;
  c->i = i;
  c->j = j;
  c->k = k;
  for (int z = 0; z < 2; z++)
    for (int y = 0; y < 2; y++)
      for (int x = 0; x < 2; x++) c->t[z][y][x] = ir_texel(v, i + x, j + y, k + z);
}

/* The exact field at p and its derivative along d (voxel space): the trilinear interpolant of
 * p's cell and its gradient there, from the same eight texels (read into *cell unless it holds
 * them). */
static inline IR_HD float ir_sample_exact_along(const ir_volume_view *v, ir_vec3 p, ir_vec3 d, float *derivative,
                                                ir_exact_cell *cell) {
  float wx, wy, wz;
  int i = ir_cell_axis(p.x, v->dims[0], &wx), j = ir_cell_axis(p.y, v->dims[1], &wy),
      k = ir_cell_axis(p.z, v->dims[2], &wz);
  ir_exact_cell_read(v, i, j, k, cell);
  float t000 = cell->t[0][0][0], t100 = cell->t[0][0][1];
  float t010 = cell->t[0][1][0], t110 = cell->t[0][1][1];
  float t001 = cell->t[1][0][0], t101 = cell->t[1][0][1];
  float t011 = cell->t[1][1][0], t111 = cell->t[1][1][1];
  float c00 = ir_lerp(t000, t100, wx), c10 = ir_lerp(t010, t110, wx);
  float c01 = ir_lerp(t001, t101, wx), c11 = ir_lerp(t011, t111, wx);
  float c0 = ir_lerp(c00, c10, wy), c1 = ir_lerp(c01, c11, wy);
  float gx = ir_lerp(ir_lerp(t100 - t000, t110 - t010, wy), ir_lerp(t101 - t001, t111 - t011, wy), wz);
  float gy = ir_lerp(c10 - c00, c11 - c01, wz);
  float gz = c1 - c0;
  *derivative = gx * d.x + gy * d.y + gz * d.z;
  return ir_lerp(c0, c1, wz);
}

/* Along a line of four texels m1, a0, a1, p2 (one behind the cell, its two, one ahead): the
 * exact field one voxel ahead minus one voxel behind, f(x + 1) - f(x - 1), at weight w between
 * a0 and a1. */
static inline IR_HD float ir_line_difference(float m1, float a0, float a1, float p2, float w) {
  return ir_lerp(a1, p2, w) - ir_lerp(m1, a0, w);
}

/* Central differences one voxel apart of the exact field, f(p + e) - f(p - e) per axis, in
 * voxel space: on each axis, the four lines of texels through p's cell along it, interpolated
 * across the other two axes. The lines share the cell's eight texels, so the 48 texels of the
 * twelve lines are 32 reads: the cell's, and one before and one after it on each line. */
static inline IR_HD ir_vec3 ir_exact_differences(const ir_volume_view *v, ir_vec3 p, ir_exact_cell *cell) {
  float wx, wy, wz;
  int i = ir_cell_axis(p.x, v->dims[0], &wx), j = ir_cell_axis(p.y, v->dims[1], &wy),
      k = ir_cell_axis(p.z, v->dims[2], &wz);
  ir_exact_cell_read(v, i, j, k, cell);
  float(*c)[2][2] = cell->t; /* c[z][y][x]: texel (i + x, j + y, k + z) */
  float l[2][2];
  for (int z = 0; z < 2; z++)
    for (int y = 0; y < 2; y++)
      l[z][y] = ir_line_difference(ir_texel(v, i - 1, j + y, k + z), c[z][y][0], c[z][y][1], ir_texel(v, i + 2, j + y, k + z), wx);
  float gx = ir_lerp(ir_lerp(l[0][0], l[0][1], wy), ir_lerp(l[1][0], l[1][1], wy), wz);
  for (int z = 0; z < 2; z++)
    for (int x = 0; x < 2; x++)
      l[z][x] = ir_line_difference(ir_texel(v, i + x, j - 1, k + z), c[z][0][x], c[z][1][x], ir_texel(v, i + x, j + 2, k + z), wy);
  float gy = ir_lerp(ir_lerp(l[0][0], l[0][1], wx), ir_lerp(l[1][0], l[1][1], wx), wz);
  for (int y = 0; y < 2; y++)
    for (int x = 0; x < 2; x++)
      l[y][x] = ir_line_difference(ir_texel(v, i + x, j + y, k - 1), c[0][y][x], c[1][y][x], ir_texel(v, i + x, j + y, k + 2), wz);
  float gz = ir_lerp(ir_lerp(l[0][0], l[0][1], wx), ir_lerp(l[1][0], l[1][1], wx), wy);
  return ir_v3(gx, gy, gz);
}

/* Central differences one voxel apart with the texture unit's samples. */
static inline IR_HD ir_vec3 ir_filtered_differences(const ir_volume_view *v, ir_vec3 p) {
  float gx = ir_sample(v, ir_v3(p.x + 1.0f, p.y, p.z)) - ir_sample(v, ir_v3(p.x - 1.0f, p.y, p.z));
  float gy = ir_sample(v, ir_v3(p.x, p.y + 1.0f, p.z)) - ir_sample(v, ir_v3(p.x, p.y - 1.0f, p.z));
  float gz = ir_sample(v, ir_v3(p.x, p.y, p.z + 1.0f)) - ir_sample(v, ir_v3(p.x, p.y, p.z - 1.0f));
  return ir_v3(gx, gy, gz);
}

/* Unit world-space normal from central differences one voxel apart (pointing towards larger
 * values); the gradient is taken in voxel space and divided by the spacing. */
static inline IR_HD ir_vec3 ir_gradient_normal(const ir_volume_view *v, ir_vec3 p, ir_vec3 inv_spacing) {
  return ir_normalize(ir_mul(ir_filtered_differences(v, p), inv_spacing));
}

#endif
