/* The per-isovalue BVH over 16^3 bricks (InK §3.1.1-3.1.2), shared by the CPU and the GPU.
 *
 * Setup (once per volume, bvh_setup.c): the volume is cut into bricks of 16 cells; neighbouring
 * bricks share their border voxels (brick b spans voxels 16b .. 16b+16), so the field inside a
 * brick's region depends only on the brick's own voxels and its min/max bounds every sample
 * there: no crossing between bricks can be missed. Over the brick grid sits an implicit
 * balanced BVH: level 0 is the brick grid, and each level above halves (rounding up) the axis
 * with the most nodes, so a node at level l, position p, has the children 2p and 2p+1 along
 * that axis at level l-1 (the second may not exist when the count was odd).
 *
 * Update (every frame, bvh_update.cu on the GPU, bvh_setup.c on the CPU): a leaf is valid where
 * min <= iso <= max; going up level by level, a node with no valid child is invalid, a node
 * with one valid child becomes a copy of that child (condensation: the paper's
 * "tree-compaction"), and a node with two takes the union of their bounds. Because every node
 * is rewritten from its children, the explicit tree of a frame never points at invalid nodes
 * below the root.
 */
#ifndef INKRAY_RENDER_BVH_CUH
#define INKRAY_RENDER_BVH_CUH

#include <stddef.h>
#include <stdint.h>

#include "render/ray_math.cuh"

#define IR_BRICK_CELLS 16
/* The brick walk's finer cells in frames without a BVH update (ir_trace_params.cells): the
 * octants of the bricks, so a brick's range is the union of its cells' ranges. */
#define IR_WALK_CELLS 8
/* Most cells of such a walk's run (ir_trace_params.run_cells). */
#ifndef IR_WALK_RUN_CELLS
#define IR_WALK_RUN_CELLS 4
#endif
/* Bricks per axis are at most 2^16 (dims <= 2^20), so 3 * 16 + 1 levels suffice; the
 * traversal stack never holds more entries than there are levels. */
#define IR_BVH_MAX_LEVELS 50
#define IR_BVH_NONE 0xffffffffu /* in .a: an invalid (empty) node */
#define IR_BVH_LEAF 0xfffffffeu /* in .b: a leaf; .a is then its brick index */

/* 32 bytes: two 16-byte loads on the GPU. Interior: .a/.b are child node indices. */
typedef struct ir_bvh_node {
  float lo[3];
  uint32_t a;
  float hi[3];
  uint32_t b;
} ir_bvh_node;

typedef struct ir_brick_range {
  float min, max; /* finite voxel values of the brick, data units; min > max if none */
} ir_brick_range;

typedef struct ir_bvh_layout {
  int levels;                               /* level 0: bricks; levels - 1: the root */
  uint32_t vol_dims[3];
  uint32_t dims[IR_BVH_MAX_LEVELS][3];      /* nodes per axis at each level */
  uint32_t offset[IR_BVH_MAX_LEVELS];       /* index of the level's first node */
  uint8_t axis[IR_BVH_MAX_LEVELS];          /* axis halved going from level l-1 to l */
  uint32_t node_count;
} ir_bvh_layout;

static inline IR_HD uint32_t ir_bvh_root(const ir_bvh_layout *L) { return L->node_count - 1; }

static inline IR_HD uint32_t ir_bvh_index(const ir_bvh_layout *L, int level, uint32_t x, uint32_t y,
                                          uint32_t z) {
  return L->offset[level] + x + L->dims[level][0] * (y + L->dims[level][1] * z);
}

/* Region of brick coordinate b along axis k, in voxel coordinates: the cells between voxel
 * centres 16b and 16b+16, widened to the volume's faces for the first and last brick (the
 * clamp-to-edge half voxel). */
static inline IR_HD void ir_brick_extent(const ir_bvh_layout *L, int k, uint32_t b, float *lo, float *hi) {
  *lo = b == 0 ? 0.0f : (float)(b * IR_BRICK_CELLS) + 0.5f;
  *hi = b + 1 == L->dims[0][k] ? (float)L->vol_dims[k] : (float)((b + 1) * IR_BRICK_CELLS) + 0.5f;
}

static inline IR_HD ir_bvh_node ir_bvh_invalid_node(void) {
  ir_bvh_node n;
  n.lo[0] = n.lo[1] = n.lo[2] = 0.0f;
  n.hi[0] = n.hi[1] = n.hi[2] = 0.0f;
  n.a = IR_BVH_NONE;
  n.b = IR_BVH_NONE;
  return n;
}

static inline IR_HD bool ir_bvh_valid(const ir_bvh_node *n) { return n->a != IR_BVH_NONE; }
static inline IR_HD bool ir_bvh_is_leaf(const ir_bvh_node *n) { return n->b == IR_BVH_LEAF; }

/* The isovalues of a frame's surfaces, ascending (n = 1 .. IR_ISO_SET_MAX). */
#define IR_ISO_SET_MAX 4
typedef struct ir_iso_set {
  float v[IR_ISO_SET_MAX];
  int n;
} ir_iso_set;

/* Whether some isovalue lies in [lo, hi]: a brick with that range may hold a crossing. */
static inline IR_HD bool ir_iso_in_range(const ir_iso_set *iso, float lo, float hi) {
  if (iso->n == 1) return lo <= iso->v[0] && iso->v[0] <= hi; /* one surface: no loop per cell */
  for (int i = 0; i < iso->n; i++)
    if (lo <= iso->v[i] && iso->v[i] <= hi) return true;
  return false;
}

/* Level 0: brick (x, y, z) for these isovalues. */
static inline IR_HD ir_bvh_node ir_bvh_leaf_update(const ir_bvh_layout *L, const ir_brick_range *ranges,
                                                   uint32_t x, uint32_t y, uint32_t z, const ir_iso_set *iso) {
  uint32_t brick = ir_bvh_index(L, 0, x, y, z);
  ir_brick_range r = ranges[brick];
  if (!ir_iso_in_range(iso, r.min, r.max)) return ir_bvh_invalid_node();
  ir_bvh_node n;
  ir_brick_extent(L, 0, x, &n.lo[0], &n.hi[0]);
  ir_brick_extent(L, 1, y, &n.lo[1], &n.hi[1]);
  ir_brick_extent(L, 2, z, &n.lo[2], &n.hi[2]);
  n.a = brick;
  n.b = IR_BVH_LEAF;
  return n;
}

/* Level >= 1: node (x, y, z) from its children at level - 1 (already updated). */
static inline IR_HD ir_bvh_node ir_bvh_inner_update(const ir_bvh_layout *L, const ir_bvh_node *nodes,
                                                    int level, uint32_t x, uint32_t y, uint32_t z) {
  uint32_t p[3] = {x, y, z};
  int k = L->axis[level];
  p[k] *= 2;
  uint32_t i0 = ir_bvh_index(L, level - 1, p[0], p[1], p[2]);
  ir_bvh_node c0 = nodes[i0];
  bool has1 = p[k] + 1 < L->dims[level - 1][k];
  p[k] += 1;
  uint32_t i1 = has1 ? ir_bvh_index(L, level - 1, p[0], p[1], p[2]) : IR_BVH_NONE;
  ir_bvh_node c1 = has1 ? nodes[i1] : ir_bvh_invalid_node();
  bool v0 = ir_bvh_valid(&c0), v1 = ir_bvh_valid(&c1);
  if (!v0) return c1; /* invalid too, or the one valid child taking the parent's place */
  if (!v1) return c0;
  ir_bvh_node n;
  for (int j = 0; j < 3; j++) {
    n.lo[j] = fminf(c0.lo[j], c1.lo[j]);
    n.hi[j] = fmaxf(c0.hi[j], c1.hi[j]);
  }
  n.a = i0;
  n.b = i1;
  return n;
}

#endif
