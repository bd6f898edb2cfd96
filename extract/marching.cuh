/* The marching-cubes math of one cell and one edge, shared by the CPU reference (gcc, C11) and
 * the GPU kernels (nvcc): corner and edge numbering, the inside test, the case of a cell, clipping,
 * where a vertex sits on its edge, its normal, value and colour, and the brick layout that numbers
 * vertices and triangles.
 *
 * Every function is `static inline IR_HD` (render/ray_math.cuh), and the extract library compiles
 * CUDA with --fmad=false, so each operation rounds the same way on both sides: the GPU mesh equals
 * the CPU one bit for bit. No transcendental function is called.
 *
 * Numbering (docs/extract.md): the grid is cut into bricks of 16 x 16 x 16 grid points. A brick
 * owns the three edges leaving each of its points in +x, +y and +z, and the cells whose lowest
 * corner is one of its points. Vertices are numbered brick by brick (bricks in x, then y, then z
 * order), within a brick by local edge index e = axis * 4096 + local point (x fastest); triangles
 * brick by brick, within a brick cell by cell (local point order), within a cell in case-table
 * order.
 */
#ifndef INKRAY_EXTRACT_MARCHING_CUH
#define INKRAY_EXTRACT_MARCHING_CUH

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "data/types.h"
#include "render/ray_math.cuh"

#define IR_MC_BRICK 16u                                   /* grid points per brick and axis */
#define IR_MC_BRICK_POINTS (IR_MC_BRICK * IR_MC_BRICK * IR_MC_BRICK) /* 4096: also its cells */
#define IR_MC_BRICK_EDGES (3u * IR_MC_BRICK_POINTS)       /* 12288 local edges */
#define IR_MC_EDGE_WORDS (IR_MC_BRICK_EDGES / 32u)         /* 384 words of a brick's edge mask */
#define IR_MC_CELL_GROUPS (IR_MC_BRICK_POINTS / 32u)       /* 128 groups of 32 cells */
/* A vertex stays at least this fraction of its edge away from either grid point, so that a
 * voxel equal to the isovalue (a tie) gives distinct vertices and no zero-area triangle. */
#define IR_MC_TIE_MARGIN (1.0f / 256.0f)

/* ---- The grid as every stage sees it (plain data: passed to kernels by value) ---------------- */
typedef struct ir_mc_grid {
  uint32_t dims[3];
  uint32_t bricks[3];   /* ceil(dims / 16) */
  float spacing[3];
  float origin[3];
  int type;             /* ir_voxel_type */
} ir_mc_grid;

/* What decides whether a cell is drawn, besides its values: clipping (the renderer's box, in its
 * voxel coordinates, and plane, in its world: extract.h) and whether any voxel may be non-finite.
 * exact == false is the fast path: no clip, every voxel finite, so every existing cell counts. */
typedef struct ir_mc_rules {
  int exact;
  int box_on;
  float box_lo[3], box_hi[3];
  int plane_on;
  float plane[4];
  float spacing[3];
} ir_mc_rules;

static inline IR_HD size_t ir_mc_index(const ir_mc_grid *g, uint32_t x, uint32_t y, uint32_t z) {
  return (size_t)x + (size_t)g->dims[0] * ((size_t)y + (size_t)g->dims[1] * (size_t)z);
}

/* A voxel in data units (8/16-bit integers are exact in float). */
static inline IR_HD float ir_mc_voxel(const void *voxels, int type, size_t i) {
  switch (type) {
  case IR_VOXEL_UINT8: return (float)((const uint8_t *)voxels)[i];
  case IR_VOXEL_UINT16: return (float)((const uint16_t *)voxels)[i];
  case IR_VOXEL_INT16: return (float)((const int16_t *)voxels)[i];
  default: return ((const float *)voxels)[i];
  }
}

/* Finite without <math.h>'s isfinite, the same on both compilers: v - v is 0 for finite v and NaN
 * for NaN and infinities. */
static inline IR_HD bool ir_mc_finite(float v) { return v - v == 0.0f; }

/* The tie rule: inside is value >= isovalue (NaN is never inside). */
static inline IR_HD bool ir_mc_inside(float v, float iso) { return v >= iso; }

/* An edge crosses the surface when both ends are finite and exactly one is inside. */
static inline IR_HD bool ir_mc_crossed(float a, float b, float iso) {
  return ir_mc_finite(a) && ir_mc_finite(b) && ir_mc_inside(a, iso) != ir_mc_inside(b, iso);
}

/* ---- Corners and edges of a cell (Bourke's numbering) ------------------------------------------
 * Corner k sits at (x, y, z) = ((k ^ k >> 1) & 1, k >> 1 & 1, k >> 2 & 1): 0 (0,0,0), 1 (1,0,0),
 * 2 (1,1,0), 3 (0,1,0), 4..7 the same at z = 1. Edges: 0 0-1, 1 1-2, 2 3-2, 3 0-3, 4 4-5, 5 5-6,
 * 6 7-6, 7 4-7, 8 0-4, 9 1-5, 10 2-6, 11 3-7, each as (its lower corner's offset, its axis),
 * packed 5 bits an edge: dx | dy << 1 | dz << 2 | axis << 3. */
#define IR_MC_EDGE_CODES                                                                                  \
  (0x00ull | 0x09ull << 5 | 0x02ull << 10 | 0x08ull << 15 | 0x04ull << 20 | 0x0dull << 25 | 0x06ull << 30 | \
   0x0cull << 35 | 0x10ull << 40 | 0x11ull << 45 | 0x13ull << 50 | 0x12ull << 55)

static inline IR_HD void ir_mc_corner_offset(int k, uint32_t o[3]) {
  o[0] = (uint32_t)((k ^ (k >> 1)) & 1);
  o[1] = (uint32_t)((k >> 1) & 1);
  o[2] = (uint32_t)((k >> 2) & 1);
}

/* Edge `edge` of a cell: the offset of its lower end from the cell's lowest corner, and its axis. */
static inline IR_HD int ir_mc_edge(int edge, uint32_t o[3]) {
  unsigned code = (unsigned)(IR_MC_EDGE_CODES >> (5 * edge)) & 31u;
  o[0] = code & 1u;
  o[1] = (code >> 1) & 1u;
  o[2] = (code >> 2) & 1u;
  return (int)(code >> 3);
}

/* ---- Case table -------------------------------------------------------------------------------
 * One 64-bit word per case (bit k of the case: corner k inside): bits 0-3 the triangle count
 * (0..5), then 4 bits per cell edge, three per triangle, wound counter-clockwise seen from outside.
 * Built from one face rule by ir_mc_build_cases (case_table.c). */
static inline IR_HD int ir_mc_case_triangles(uint64_t entry) { return (int)(entry & 15u); }
static inline IR_HD int ir_mc_case_edge(uint64_t entry, int i) { return (int)((entry >> (4 + 4 * i)) & 15u); }

/* ---- Bricks ----------------------------------------------------------------------------------- */
static inline IR_HD uint32_t ir_mc_brick_index(const ir_mc_grid *g, uint32_t bx, uint32_t by, uint32_t bz) {
  return bx + g->bricks[0] * (by + g->bricks[1] * bz);
}

/* Local edge index of the edge leaving local point l along `axis`, and back. */
static inline IR_HD uint32_t ir_mc_local_edge(int axis, uint32_t l) { return (uint32_t)axis * IR_MC_BRICK_POINTS + l; }
static inline IR_HD uint32_t ir_mc_local_point(uint32_t lx, uint32_t ly, uint32_t lz) {
  return lx + IR_MC_BRICK * (ly + IR_MC_BRICK * lz);
}

/* Whether a brick's value range [lo, hi] (finite voxels only; lo > hi when none) can hold a
 * crossing: some finite voxel inside and some outside. */
static inline IR_HD bool ir_mc_range_active(float lo, float hi, float iso) { return lo < iso && hi >= iso; }

/* ---- Clipping ---------------------------------------------------------------------------------- */
/* A cell is kept when its centre (the renderer's voxel coordinates p + 1 for the cell whose lowest
 * grid point is p) lies in the box and on the kept side of the plane (renderer world: times the
 * spacing). */
static inline IR_HD bool ir_mc_clip_keeps(const ir_mc_rules *r, uint32_t x, uint32_t y, uint32_t z) {
  float c[3] = {(float)x + 1.0f, (float)y + 1.0f, (float)z + 1.0f};
  if (r->box_on)
    for (int k = 0; k < 3; k++)
      if (!(c[k] >= r->box_lo[k] && c[k] <= r->box_hi[k])) return false;
  if (r->plane_on) {
    float s = r->plane[0] * (c[0] * r->spacing[0]) + r->plane[1] * (c[1] * r->spacing[1]) +
              r->plane[2] * (c[2] * r->spacing[2]) + r->plane[3];
    if (!(s >= 0.0f)) return false;
  }
  return true;
}

/* Whether a brick may hold a kept cell or an edge of one: the centres of the cells whose lowest
 * point lies within one point of the brick (its edges border cells of the bricks below), widened
 * by a voxel against rounding. Conservative: a brick that fails has nothing to draw. */
static inline IR_HD bool ir_mc_clip_keeps_brick(const ir_mc_rules *r, uint32_t bx, uint32_t by, uint32_t bz) {
  uint32_t b[3] = {bx, by, bz};
  float lo[3], hi[3];
  for (int k = 0; k < 3; k++) {
    lo[k] = (float)(b[k] * IR_MC_BRICK) - 1.0f;                 /* centre of cell 16b - 1, minus a voxel */
    hi[k] = (float)(b[k] * IR_MC_BRICK + IR_MC_BRICK) + 1.0f;   /* centre of cell 16b + 15, plus a voxel */
    if (r->box_on && (hi[k] < r->box_lo[k] || lo[k] > r->box_hi[k])) return false;
  }
  if (r->plane_on) {
    float best = -INFINITY;
    for (int corner = 0; corner < 8; corner++) {
      float s = r->plane[3];
      for (int k = 0; k < 3; k++) s += r->plane[k] * (((corner >> k) & 1 ? hi[k] : lo[k]) * r->spacing[k]);
      best = s > best ? s : best;
    }
    if (best < 0.0f) return false;
  }
  return true;
}

/* ---- Vertices --------------------------------------------------------------------------------- */
/* Where on the edge from value a (its lower end) to value b the surface crosses, as a fraction of
 * the edge, kept IR_MC_TIE_MARGIN away from both ends. a and b are finite and on different sides,
 * so b - a is not 0. */
static inline IR_HD float ir_mc_edge_t(float a, float b, float iso) {
  float t = (iso - a) / (b - a);
  t = t > IR_MC_TIE_MARGIN ? t : IR_MC_TIE_MARGIN;
  return t < 1.0f - IR_MC_TIE_MARGIN ? t : 1.0f - IR_MC_TIE_MARGIN;
}

/* d/dx_axis at a grid point, data units per world unit: central difference where both neighbours
 * exist and are finite, one-sided where one does, 0 where neither. f0 is finite. */
static inline IR_HD float ir_mc_derivative(float fm, bool has_m, float f0, float fp, bool has_p, float spacing) {
  has_m = has_m && ir_mc_finite(fm);
  has_p = has_p && ir_mc_finite(fp);
  if (has_m && has_p) return (fp - fm) / (2.0f * spacing);
  if (has_p) return (fp - f0) / spacing;
  if (has_m) return (f0 - fm) / spacing;
  return 0.0f;
}

/* The gradient interpolated along the edge, from the gradients g0, g1 at its ends. */
static inline IR_HD ir_vec3 ir_mc_lerp3(ir_vec3 g0, ir_vec3 g1, float t) {
  return ir_v3(g0.x + t * (g1.x - g0.x), g0.y + t * (g1.y - g0.y), g0.z + t * (g1.z - g0.z));
}

/* Unit normal pointing out of the inside (down the gradient); (0,0,0) for a zero gradient. */
static inline IR_HD ir_vec3 ir_mc_normal(ir_vec3 g) {
  float len = sqrtf(ir_dot(g, g));
  if (!(len > 0.0f)) return ir_v3(0.0f, 0.0f, 0.0f);
  return ir_v3(-g.x / len, -g.y / len, -g.z / len);
}

/* World position of the vertex at fraction t along the edge leaving point p along `axis`. */
static inline IR_HD ir_vec3 ir_mc_position(const ir_mc_grid *g, uint32_t x, uint32_t y, uint32_t z, int axis, float t) {
  const float cx = axis == 0 ? (float)x + t : (float)x, cy = axis == 1 ? (float)y + t : (float)y,
              cz = axis == 2 ? (float)z + t : (float)z; /* selects, not c[axis]: the GPU keeps them in registers */
  return ir_v3(g->origin[0] + cx * g->spacing[0], g->origin[1] + cy * g->spacing[1], g->origin[2] + cz * g->spacing[2]);
}

/* ---- Colours -------------------------------------------------------------------------------------- */
static inline IR_HD uint8_t ir_mc_unorm8(float c) {
  c = c == c ? (c < 0.0f ? 0.0f : (c > 1.0f ? 1.0f : c)) : 0.0f;
  return (uint8_t)(c * 255.0f + 0.5f);
}

/* RGBA8 packed little-endian (r in the low byte): a colour map read at v over [lo, hi], alpha 255. */
static inline IR_HD uint32_t ir_mc_map_color(const float *table, int size, float v, float lo, float hi) {
  ir_vec3 c = ir_colormap_at(table, size, lo == hi ? 0.5f : (v - lo) / (hi - lo));
  return (uint32_t)ir_mc_unorm8(c.x) | (uint32_t)ir_mc_unorm8(c.y) << 8 | (uint32_t)ir_mc_unorm8(c.z) << 16 |
         0xff000000u;
}

static inline IR_HD uint32_t ir_mc_rgba(const float rgba[4]) {
  return (uint32_t)ir_mc_unorm8(rgba[0]) | (uint32_t)ir_mc_unorm8(rgba[1]) << 8 |
         (uint32_t)ir_mc_unorm8(rgba[2]) << 16 | (uint32_t)ir_mc_unorm8(rgba[3]) << 24;
}

/* ---- Triangle ranks within a brick --------------------------------------------------------------
 * A brick's cell table keeps, per group of 32 cells, the triangles of the groups before it and
 * the triangle count of each of its cells as 4-bit nibbles (cell i of the group in nibble i of the
 * 128-bit word: words[i / 8] >> 4 * (i % 8)). The rank of cell i's first triangle in its brick is
 * the group's prefix plus the nibbles below i. */
static inline IR_HD uint32_t ir_mc_nibbles_below(const uint32_t words[4], uint32_t i) {
  uint32_t sum = 0;
  for (uint32_t w = 0; w < 4; w++) {
    uint32_t word = words[w];
    uint32_t take = i >= 8 * (w + 1) ? 8u : (i > 8 * w ? i - 8 * w : 0u);
    if (take < 8) word &= take ? (1u << (4 * take)) - 1u : 0u;
    /* Sum of the eight nibbles (each <= 5, so no carry leaves a byte). */
    word = (word & 0x0f0f0f0fu) + ((word >> 4) & 0x0f0f0f0fu);
    word = word + (word >> 8);
    word = word + (word >> 16);
    sum += word & 0xffu;
  }
  return sum;
}

/* A brick's edge table keeps, per 32-edge word, the mask of its vertices' edges and the count of
 * vertices in the words before it; the vertex of local edge e is number
 * prefix[e / 32] + popcount(mask[e / 32] below bit e % 32) of its brick. */
static inline IR_HD uint32_t ir_mc_popc(uint32_t v) {
#ifdef __CUDA_ARCH__
  return (uint32_t)__popc(v);
#else
  return (uint32_t)__builtin_popcount(v);
#endif
}

static inline IR_HD uint32_t ir_mc_edge_rank(uint32_t mask, uint32_t prefix, uint32_t bit) {
  return prefix + ir_mc_popc(mask & ((1u << bit) - 1u));
}

#endif
