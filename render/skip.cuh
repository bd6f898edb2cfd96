/* Skip distances over the brick walk's cells, shared by the CPU and the GPU.
 *
 * For a set of isovalues, cell c of the walk's grid gets D(c), its distance in cells to the
 * nearest valid cell (one whose range holds an isovalue) in the L-infinity norm, capped at
 * IR_SKIP_MAX: 0 where c is valid, and D >= 1 means that every cell within D - 1 of c (the cube
 * of 2D - 1 cells about it) is invalid. The walk reads one byte per cell instead of a cell's
 * range and the isovalues, and from a cell with D >= 2 it jumps to where the ray leaves that
 * cube in one step instead of stepping through the cells of empty space one by one
 * (ir_next_run). The cube holds no valid cell, so the valid cells the walk meets, and the runs
 * it hands the march, are those of the cell-by-cell walk: the image does not depend on it.
 *
 * The L-infinity distance is separable: D = P_z(P_y(P_x(F))), where F is 0 on valid cells and
 * infinite elsewhere, and one axis's pass is g(i) = min_j max(|i - j|, f(j)) along each line of
 * cells. Each pass looks IR_SKIP_MAX - 1 cells either way and caps its result at IR_SKIP_MAX:
 * a minimum from further away is at least IR_SKIP_MAX, so the capped value never exceeds the
 * true distance (the cube it promises is empty). The map is rebuilt when the isovalues, the
 * walk's cells or the volume change (gpu_renderer.cu, cpu_renderer.c), not every frame.
 */
#ifndef INKRAY_RENDER_SKIP_CUH
#define INKRAY_RENDER_SKIP_CUH

#include <stddef.h>
#include <stdint.h>

#include "render/bvh.cuh"

#define IR_SKIP_MAX 16

/* Whether two sets hold the same isovalues: a map made for one serves the other. */
static inline IR_HD bool ir_iso_set_same(const ir_iso_set *a, const ir_iso_set *b) {
  if (a->n != b->n) return false;
  for (int i = 0; i < a->n; i++)
    if (a->v[i] != b->v[i]) return false;
  return true;
}

/* A cell's distance before the passes: 0 if valid, else "far". */
static inline IR_HD uint8_t ir_skip_seed(ir_brick_range r, const ir_iso_set *iso) {
  return ir_iso_in_range(iso, r.min, r.max) ? 0 : IR_SKIP_MAX;
}

/* One axis's pass at cell i of a line of n cells: in[base + j * stride] is the line's cell j. */
static inline IR_HD uint8_t ir_skip_pass_at(const uint8_t *in, size_t base, size_t stride, int n, int i) {
  int best = in[base + (size_t)i * stride];
  for (int d = 1; d < best; d++) { /* a cell d away gives at least d: stop once d reaches the best */
    int lo = i - d, hi = i + d;
    int a = lo >= 0 ? in[base + (size_t)lo * stride] : IR_SKIP_MAX;
    int b = hi < n ? in[base + (size_t)hi * stride] : IR_SKIP_MAX;
    int m = a < b ? a : b;
    int v = m > d ? m : d;
    if (v < best) best = v;
  }
  return (uint8_t)best;
}

#ifdef __cplusplus
extern "C" {
#endif
/* The map of n = cells[0] * cells[1] * cells[2] bytes (x fastest) from the cells' ranges, on the
 * host; tmp holds n bytes of scratch. */
void ir_skip_map_host(const ir_brick_range *ranges, const uint32_t cells[3], const ir_iso_set *iso, uint8_t *map,
                      uint8_t *tmp);
#ifdef __cplusplus
}
#endif

#endif
