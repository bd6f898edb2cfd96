/* BVH setup (InK §3.1.1): the implicit balanced BVH layout over the grid of 16^3 bricks; on the
 * CPU device, the min/max of every brick, with the one-voxel shared border, and of the brick
 * walk's finer cells (IR_WALK_CELLS), for each slot's volume; plus the host version of the
 * per-frame update (§3.1.2), which the CPU renderer runs and the GPU tests compare against. (The
 * GPU computes its ranges from its texture: gpu_volume.cu.)
 *
 * Ranges are computed once per volume on all cores. Only finite values count, so a brick or
 * cell of NaN/Inf voxels has min > max and is never valid.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "render/render_internal.h"

double ir_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

int ir_cpu_thread_count(int requested) {
  if (requested > 0) return requested > 256 ? 256 : requested;
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : (n > 256 ? 256 : (int)n);
}

/* ---- Layout -------------------------------------------------------------------------------- */
static uint32_t bricks_along(size_t dim) {
  size_t cells = dim > 1 ? dim - 1 : 1;
  return (uint32_t)((cells + IR_BRICK_CELLS - 1) / IR_BRICK_CELLS);
}

static void layout_build(const ir_volume *v, ir_bvh_layout *L) {
  memset(L, 0, sizeof *L);
  for (int k = 0; k < 3; k++) {
    L->vol_dims[k] = (uint32_t)v->dims[k];
    L->dims[0][k] = bricks_along(v->dims[k]);
  }
  int l = 0;
  uint32_t total = L->dims[0][0] * L->dims[0][1] * L->dims[0][2];
  while (L->dims[l][0] > 1 || L->dims[l][1] > 1 || L->dims[l][2] > 1) {
    /* Median split on the axis with the most nodes (the first such axis on ties). */
    int axis = 0;
    for (int k = 1; k < 3; k++)
      if (L->dims[l][k] > L->dims[l][axis]) axis = k;
    memcpy(L->dims[l + 1], L->dims[l], sizeof L->dims[l]);
    L->dims[l + 1][axis] = (L->dims[l][axis] + 1) / 2;
    L->axis[l + 1] = (uint8_t)axis;
    L->offset[l + 1] = total;
    l++;
    total += L->dims[l][0] * L->dims[l][1] * L->dims[l][2];
  }
  L->levels = l + 1;
  L->node_count = total;
}

/* ---- Ranges ----------------------------------------------------------------------------------
 * Cells of IR_WALK_CELLS voxels (the walk's finer grid) from the voxels, then each brick as the
 * union of its cells: cell c along an axis holds voxels W c .. W c + W (its shared border), so
 * cells 2b and 2b + 1 hold exactly brick b's voxels 16 b .. 16 b + 16. One pass over the volume. */
_Static_assert(IR_BRICK_CELLS == 2 * IR_WALK_CELLS, "a brick is 2x2x2 walk cells");

static uint32_t cells_along(size_t dim, uint32_t size) {
  size_t cells = dim > 1 ? dim - 1 : 1;
  return (uint32_t)((cells + size - 1) / size);
}

typedef struct range_job {
  const ir_volume *v;
  const uint32_t *cells; /* the walk's grid */
  ir_brick_range *cell_ranges;
  atomic_uint next_row; /* rows of cells (y, z) handed out to threads */
  atomic_size_t infinities;
} range_job;

static double voxel_at(const void *voxels, ir_voxel_type t, size_t i) {
  switch (t) {
  case IR_VOXEL_UINT8: return ((const uint8_t *)voxels)[i];
  case IR_VOXEL_UINT16: return ((const uint16_t *)voxels)[i];
  case IR_VOXEL_INT16: {
    int16_t s = ((const int16_t *)voxels)[i];
    return s < -32767 ? -32767 : s; /* as the normalized texture read sees it */
  }
  default: return ((const float *)voxels)[i];
  }
}

static void cell_range(range_job *job, uint32_t cx, uint32_t cy, uint32_t cz) {
  const ir_volume *v = job->v;
  size_t lo[3], hi[3], c[3] = {cx, cy, cz};
  for (int k = 0; k < 3; k++) {
    lo[k] = c[k] * IR_WALK_CELLS;
    hi[k] = lo[k] + IR_WALK_CELLS;
    if (hi[k] > v->dims[k] - 1) hi[k] = v->dims[k] - 1;
  }
  double mn = INFINITY, mx = -INFINITY;
  size_t infinities = 0;
  for (size_t z = lo[2]; z <= hi[2]; z++)
    for (size_t y = lo[1]; y <= hi[1]; y++) {
      size_t row = (z * v->dims[1] + y) * v->dims[0];
      for (size_t x = lo[0]; x <= hi[0]; x++) {
        double s = voxel_at(v->voxels, v->type, row + x);
        if (!isfinite(s)) {
          infinities += isinf(s) ? 1 : 0;
          continue;
        }
        mn = s < mn ? s : mn;
        mx = s > mx ? s : mx;
      }
    }
  ir_brick_range *r = &job->cell_ranges[cx + job->cells[0] * ((size_t)cy + job->cells[1] * (size_t)cz)];
  r->min = (float)mn;
  r->max = (float)mx;
  /* A voxel on a shared border is counted by each cell holding it; only zero or not matters. */
  if (infinities) atomic_fetch_add(&job->infinities, infinities);
}

static void *range_worker(void *arg) {
  range_job *job = arg;
  const uint32_t *d = job->cells;
  for (;;) {
    unsigned row = atomic_fetch_add(&job->next_row, 1u);
    if (row >= d[1] * d[2]) break;
    for (uint32_t cx = 0; cx < d[0]; cx++) cell_range(job, cx, row % d[1], row / d[1]);
  }
  return NULL;
}

/* Brick ranges: the union of each brick's (up to) eight cells. */
static void bricks_from_cells(const ir_bvh_layout *L, const uint32_t *cells, const ir_brick_range *cell_ranges,
                              ir_brick_range *ranges) {
  const uint32_t *bd = L->dims[0];
  for (uint32_t bz = 0; bz < bd[2]; bz++)
    for (uint32_t by = 0; by < bd[1]; by++)
      for (uint32_t bx = 0; bx < bd[0]; bx++) {
        float mn = INFINITY, mx = -INFINITY;
        for (uint32_t z = 2 * bz; z < 2 * bz + 2 && z < cells[2]; z++)
          for (uint32_t y = 2 * by; y < 2 * by + 2 && y < cells[1]; y++)
            for (uint32_t x = 2 * bx; x < 2 * bx + 2 && x < cells[0]; x++) {
              const ir_brick_range *c = &cell_ranges[x + cells[0] * ((size_t)y + cells[1] * (size_t)z)];
              mn = c->min < mn ? c->min : mn;
              mx = c->max > mx ? c->max : mx;
            }
        ir_brick_range *r = &ranges[ir_bvh_index(L, 0, bx, by, bz)];
        r->min = mn;
        r->max = mx;
      }
}

static bool run_workers(int threads, void *(*fn)(void *), void *arg) {
  pthread_t tids[256];
  int started = 0;
  for (; started < threads - 1; started++)
    if (pthread_create(&tids[started], NULL, fn, arg) != 0) break;
  fn(arg); /* the calling thread works too, so that a failed pthread_create only slows things down */
  for (int i = 0; i < started; i++) pthread_join(tids[i], NULL);
  return true;
}

ir_status ir_bvh_setup(ir_renderer *r, char err[IR_ERR_LEN]) {
  const ir_volume *v = r->volume;
  layout_build(v, &r->layout);
  if (r->layout.levels > IR_BVH_MAX_LEVELS) {
    snprintf(err, IR_ERR_LEN, "%s: %zux%zux%zu voxels need a BVH deeper than %d levels", v->name,
             v->dims[0], v->dims[1], v->dims[2], IR_BVH_MAX_LEVELS);
    return IR_ERR_INPUT;
  }
  for (int k = 0; k < 3; k++) r->cells[k] = cells_along(v->dims[k], IR_WALK_CELLS);
  return IR_OK;
}

void ir_cpu_slot_free(ir_cpu_slot *s) {
  free(s->ranges);
  free(s->cell_ranges);
  free(s->voxels_clean);
  memset(s, 0, sizeof *s);
}

ir_status ir_cpu_slot_fill(ir_renderer *r, ir_cpu_slot *slot, const ir_volume *v, char err[IR_ERR_LEN]) {
  const uint32_t *bd = r->layout.dims[0];
  size_t bricks = (size_t)bd[0] * bd[1] * bd[2];
  size_t cells = (size_t)r->cells[0] * r->cells[1] * r->cells[2];
  if (!slot->ranges) slot->ranges = malloc(bricks * sizeof *slot->ranges);
  if (!slot->cell_ranges) slot->cell_ranges = malloc(cells * sizeof *slot->cell_ranges);
  if (!slot->ranges || !slot->cell_ranges) {
    snprintf(err, IR_ERR_LEN, "%s: out of host memory for %zu brick and %zu cell ranges", v->name, bricks, cells);
    return IR_ERR_RUNTIME;
  }
  range_job job = {.v = v, .cells = r->cells, .cell_ranges = slot->cell_ranges};
  atomic_init(&job.next_row, 0u);
  atomic_init(&job.infinities, (size_t)0);
  run_workers(ir_cpu_thread_count(r->threads), range_worker, &job);
  bricks_from_cells(&r->layout, r->cells, slot->cell_ranges, slot->ranges);
  slot->volume = v;
  free(slot->voxels_clean);
  slot->voxels_clean = NULL;
  if (atomic_load(&job.infinities) > 0) {
    size_t n = v->dims[0] * v->dims[1] * v->dims[2];
    slot->voxels_clean = malloc(n * sizeof(float));
    if (!slot->voxels_clean) {
      snprintf(err, IR_ERR_LEN, "%s: out of host memory copying %zu voxels", v->name, n);
      return IR_ERR_RUNTIME;
    }
    const float *src = v->voxels;
    for (size_t i = 0; i < n; i++) slot->voxels_clean[i] = isinf(src[i]) ? NAN : src[i];
  }
  return IR_OK;
}

/* ---- Per-frame update on the host ---------------------------------------------------------- */
void ir_bvh_update_host(const ir_bvh_layout *L, const ir_brick_range *ranges, const ir_iso_set *iso, ir_bvh_node *nodes) {
  for (uint32_t z = 0; z < L->dims[0][2]; z++)
    for (uint32_t y = 0; y < L->dims[0][1]; y++)
      for (uint32_t x = 0; x < L->dims[0][0]; x++)
        nodes[ir_bvh_index(L, 0, x, y, z)] = ir_bvh_leaf_update(L, ranges, x, y, z, iso);
  for (int l = 1; l < L->levels; l++)
    for (uint32_t z = 0; z < L->dims[l][2]; z++)
      for (uint32_t y = 0; y < L->dims[l][1]; y++)
        for (uint32_t x = 0; x < L->dims[l][0]; x++)
          nodes[ir_bvh_index(L, l, x, y, z)] = ir_bvh_inner_update(L, nodes, l, x, y, z);
}

uint32_t ir_bvh_root_or_none(const ir_bvh_node *root, uint32_t root_index) {
  return ir_bvh_valid(root) ? root_index : IR_BVH_NONE;
}
