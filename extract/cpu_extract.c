/* The CPU reference extraction, on all cores. It follows the GPU's two passes brick by brick and
 * numbers vertices and triangles the same way (marching.cuh), with the same per-cell and per-edge
 * functions, so that the two meshes are equal byte for byte:
 *
 *   1. per active brick (value range holds the isovalue, not clipped away), in parallel: the
 *      brick's edge table (which of its 12288 edges carry a vertex, and the running count per
 *      32-edge word) and its vertex and triangle counts;
 *   2. bases: the counts summed in brick order;
 *   3. per active brick, in parallel: its vertices (position, normal, value, colour) and its
 *      triangles, whose vertex numbers come from the edge tables of the brick and its neighbours.
 *
 * Surfaces are extracted one after the other and appended; into the caller's arrays
 * (IR_MESH_CALLER) all are counted first, for the totals the arrays are asked for with.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "extract/extract_internal.h"

typedef struct cpu_pass {
  const ir_extractor *ex;
  const ir_mc_job *job;
  const ir_mc_grid *g;
  float iso;
  int surface;
  uint32_t *active;         /* active brick indices, ascending */
  uint32_t *slot_of;        /* brick -> position in `active` */
  uint32_t *edge_mask;      /* per slot: IR_MC_EDGE_WORDS words */
  uint32_t *edge_prefix;
  size_t table_capacity;    /* slots the two tables hold */
  size_t active_count;      /* active bricks of the surface counted last */
  size_t *vcount, *tcount;  /* per slot: vertices, triangles */
  size_t *ccount;           /* per slot: cells with triangles */
  size_t *vbase;            /* per slot: first vertex, numbered within the surface */
  size_t *tbase;            /* per slot: first triangle, mesh-wide */
  ir_mesh *mesh;
} cpu_pass;

static float value_at(const cpu_pass *p, uint32_t x, uint32_t y, uint32_t z) {
  return ir_mc_voxel(p->ex->voxels, p->g->type, ir_mc_index(p->g, x, y, z));
}

static bool cell_exists(const ir_mc_grid *g, int64_t x, int64_t y, int64_t z) {
  return x >= 0 && y >= 0 && z >= 0 && x + 1 < g->dims[0] && y + 1 < g->dims[1] && z + 1 < g->dims[2];
}

/* The cell's corners inside the surface (bit k: corner k), or -1 when it is not drawn. */
static int cell_case(const cpu_pass *p, int64_t x, int64_t y, int64_t z) {
  const ir_mc_grid *g = p->g;
  if (!cell_exists(g, x, y, z)) return -1;
  if (p->job->rules.exact && !ir_mc_clip_keeps(&p->job->rules, (uint32_t)x, (uint32_t)y, (uint32_t)z)) return -1;
  int c = 0;
  for (int k = 0; k < 8; k++) {
    uint32_t o[3];
    ir_mc_corner_offset(k, o);
    float v = value_at(p, (uint32_t)x + o[0], (uint32_t)y + o[1], (uint32_t)z + o[2]);
    if (p->job->rules.exact && !ir_mc_finite(v)) return -1;
    c |= ir_mc_inside(v, p->iso) ? 1 << k : 0;
  }
  return c;
}

/* Whether the edge leaving (x, y, z) along `axis` carries a vertex: it crosses the surface and,
 * outside the fast path, borders a drawn cell. */
static bool edge_has_vertex(const cpu_pass *p, uint32_t x, uint32_t y, uint32_t z, int axis) {
  const ir_mc_grid *g = p->g;
  uint32_t q[3] = {x, y, z};
  if (q[axis] + 1 >= g->dims[axis]) return false;
  q[axis]++;
  if (!ir_mc_crossed(value_at(p, x, y, z), value_at(p, q[0], q[1], q[2]), p->iso)) return false;
  if (!p->job->rules.exact) return true;
  int b = (axis + 1) % 3, c = (axis + 2) % 3;
  for (int db = 0; db < 2; db++)
    for (int dc = 0; dc < 2; dc++) {
      int64_t cell[3] = {x, y, z};
      cell[b] -= db;
      cell[c] -= dc;
      if (cell_case(p, cell[0], cell[1], cell[2]) >= 0) return true;
    }
  return false;
}

static void brick_origin(const ir_mc_grid *g, uint32_t brick, uint32_t o[3]) {
  o[0] = brick % g->bricks[0] * IR_MC_BRICK;
  o[1] = brick / g->bricks[0] % g->bricks[1] * IR_MC_BRICK;
  o[2] = brick / g->bricks[0] / g->bricks[1] * IR_MC_BRICK;
}

/* ---- Pass 1: edge tables and counts ------------------------------------------------------------ */
static void count_brick(void *ctx, size_t slot) {
  cpu_pass *p = ctx;
  const ir_mc_grid *g = p->g;
  uint32_t o[3];
  brick_origin(g, p->active[slot], o);
  uint32_t *mask = p->edge_mask + slot * IR_MC_EDGE_WORDS, *prefix = p->edge_prefix + slot * IR_MC_EDGE_WORDS;
  memset(mask, 0, IR_MC_EDGE_WORDS * sizeof *mask);
  size_t triangles = 0, cells = 0;
  for (uint32_t l = 0; l < IR_MC_BRICK_POINTS; l++) {
    uint32_t x = o[0] + l % IR_MC_BRICK, y = o[1] + l / IR_MC_BRICK % IR_MC_BRICK, z = o[2] + l / (IR_MC_BRICK * IR_MC_BRICK);
    if (x >= g->dims[0] || y >= g->dims[1] || z >= g->dims[2]) continue;
    for (int axis = 0; axis < 3; axis++)
      if (edge_has_vertex(p, x, y, z, axis)) {
        uint32_t e = ir_mc_local_edge(axis, l);
        mask[e / 32] |= 1u << (e % 32);
      }
    int c = cell_case(p, x, y, z);
    int n = c >= 0 ? ir_mc_case_triangles(p->ex->cases[c]) : 0;
    triangles += (size_t)n;
    cells += n > 0;
  }
  uint32_t running = 0;
  for (uint32_t w = 0; w < IR_MC_EDGE_WORDS; w++) {
    prefix[w] = running;
    running += ir_mc_popc(mask[w]);
  }
  p->vcount[slot] = running;
  p->tcount[slot] = triangles;
  p->ccount[slot] = cells;
}

/* ---- Pass 2: vertices and triangles ------------------------------------------------------------- */
static uint32_t vertex_number(const cpu_pass *p, uint32_t x, uint32_t y, uint32_t z, int axis) {
  const ir_mc_grid *g = p->g;
  uint32_t brick = ir_mc_brick_index(g, x / IR_MC_BRICK, y / IR_MC_BRICK, z / IR_MC_BRICK);
  uint32_t slot = p->slot_of[brick];
  uint32_t e = ir_mc_local_edge(axis, ir_mc_local_point(x % IR_MC_BRICK, y % IR_MC_BRICK, z % IR_MC_BRICK));
  size_t w = (size_t)slot * IR_MC_EDGE_WORDS + e / 32;
  return (uint32_t)(p->vbase[slot] + ir_mc_edge_rank(p->edge_mask[w], p->edge_prefix[w], e % 32));
}

/* The derivative along axis k at grid point (x, y, z) (value f0 there). */
static float derivative_at(const cpu_pass *p, const uint32_t pt[3], int k, float f0) {
  const ir_mc_grid *g = p->g;
  uint32_t m[3] = {pt[0], pt[1], pt[2]}, q[3] = {pt[0], pt[1], pt[2]};
  bool has_m = pt[k] > 0, has_p = pt[k] + 1 < g->dims[k];
  m[k] -= has_m ? 1 : 0;
  q[k] += has_p ? 1 : 0;
  float fm = has_m ? value_at(p, m[0], m[1], m[2]) : 0.0f;
  float fp = has_p ? value_at(p, q[0], q[1], q[2]) : 0.0f;
  return ir_mc_derivative(fm, has_m, f0, fp, has_p, g->spacing[k]);
}

/* IR_EXTRACT_VALUES_LOCAL_RANGE: every cell around a crossed edge uses the edge's vertex, so the
 * largest value range of the cells whose triangles use it is that of the (up to four) cells
 * around the edge from a along `axis`. In float, as the GPU's local_range. */
static float local_range(const cpu_pass *p, const uint32_t a[3], int axis) {
  const ir_mc_grid *g = p->g;
  int b = (axis + 1) % 3, c = (axis + 2) % 3;
  float largest = 0.0f;
  for (int ob = -1; ob <= 0; ob++)
    for (int oc = -1; oc <= 0; oc++) {
      if ((ob < 0 && a[b] == 0) || (oc < 0 && a[c] == 0)) continue;
      uint32_t cell[3] = {a[0], a[1], a[2]};
      cell[b] = (uint32_t)((int64_t)a[b] + ob), cell[c] = (uint32_t)((int64_t)a[c] + oc);
      if (cell[0] + 1 >= g->dims[0] || cell[1] + 1 >= g->dims[1] || cell[2] + 1 >= g->dims[2]) continue;
      float lo = p->iso, hi = p->iso;
      for (int corner = 0; corner < 8; corner++) {
        float v = value_at(p, cell[0] + (corner & 1), cell[1] + ((corner >> 1) & 1), cell[2] + ((corner >> 2) & 1));
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
      }
      largest = hi - lo > largest ? hi - lo : largest;
    }
  return largest;
}

static void write_vertex(const cpu_pass *p, size_t id, uint32_t x, uint32_t y, uint32_t z, int axis) {
  const ir_mc_grid *g = p->g;
  const ir_mc_job *job = p->job;
  uint32_t a[3] = {x, y, z}, b[3] = {x, y, z};
  b[axis]++;
  float fa = value_at(p, a[0], a[1], a[2]), fb = value_at(p, b[0], b[1], b[2]);
  float t = ir_mc_edge_t(fa, fb, p->iso);
  ir_vec3 ga = ir_v3(derivative_at(p, a, 0, fa), derivative_at(p, a, 1, fa), derivative_at(p, a, 2, fa));
  ir_vec3 gb = ir_v3(derivative_at(p, b, 0, fb), derivative_at(p, b, 1, fb), derivative_at(p, b, 2, fb));
  ir_vec3 grad = ir_mc_lerp3(ga, gb, t);
  ir_vec3 pos = ir_mc_position(g, x, y, z, axis, t), n = ir_mc_normal(grad);
  ir_mesh *m = p->mesh;
  const int first = job->axes_zyx ? 2 : 0, last = 2 - first; /* where x and z go */
  m->positions[3 * id + first] = pos.x, m->positions[3 * id + 1] = pos.y, m->positions[3 * id + last] = pos.z;
  m->normals[3 * id + first] = n.x, m->normals[3 * id + 1] = n.y, m->normals[3 * id + last] = n.z;
  float value = p->iso;
  if (job->values == IR_EXTRACT_VALUES_GRADIENT) {
    value = sqrtf(ir_dot(grad, grad));
  } else if (job->values == IR_EXTRACT_VALUES_COLOR_GRID) {
    float ca = ir_mc_voxel(p->ex->color_voxels, p->ex->color_type, ir_mc_index(g, a[0], a[1], a[2]));
    float cb = ir_mc_voxel(p->ex->color_voxels, p->ex->color_type, ir_mc_index(g, b[0], b[1], b[2]));
    value = ca + t * (cb - ca);
  } else if (job->values == IR_EXTRACT_VALUES_LOCAL_RANGE) {
    value = local_range(p, a, axis);
  }
  m->values[id] = value;
  if (job->colors != IR_EXTRACT_COLORS_NONE) {
    uint32_t rgba = job->colors == IR_EXTRACT_COLORS_MAP
                        ? ir_mc_map_color(job->colormap, job->colormap_size, value, job->color_range[0], job->color_range[1])
                        : job->surface_rgba[p->surface];
    memcpy(m->colors + 4 * id, &rgba, 4); /* little-endian hosts: r in the low byte, as on the GPU */
  }
}

static void generate_brick(void *ctx, size_t slot) {
  cpu_pass *p = ctx;
  const ir_mc_grid *g = p->g;
  uint32_t o[3];
  brick_origin(g, p->active[slot], o);
  const uint32_t *mask = p->edge_mask + slot * IR_MC_EDGE_WORDS;
  size_t vid = p->mesh->surface_vertex_start[p->surface] + p->vbase[slot];
  for (uint32_t e = 0; e < IR_MC_BRICK_EDGES; e++) {
    if (!(mask[e / 32] >> (e % 32) & 1u)) continue;
    uint32_t l = e % IR_MC_BRICK_POINTS;
    write_vertex(p, vid++, o[0] + l % IR_MC_BRICK, o[1] + l / IR_MC_BRICK % IR_MC_BRICK,
                 o[2] + l / (IR_MC_BRICK * IR_MC_BRICK), (int)(e / IR_MC_BRICK_POINTS));
  }
  size_t tid = p->tbase[slot];
  uint32_t *tri = p->mesh->triangles;
  size_t vertex_offset = p->mesh->surface_vertex_start[p->surface];
  for (uint32_t l = 0; l < IR_MC_BRICK_POINTS; l++) {
    uint32_t x = o[0] + l % IR_MC_BRICK, y = o[1] + l / IR_MC_BRICK % IR_MC_BRICK, z = o[2] + l / (IR_MC_BRICK * IR_MC_BRICK);
    int c = cell_case(p, x, y, z);
    if (c < 0) continue;
    uint64_t entry = p->ex->cases[c];
    for (int i = 0; i < 3 * ir_mc_case_triangles(entry); i++) {
      uint32_t off[3];
      int axis = ir_mc_edge(ir_mc_case_edge(entry, i), off);
      /* flip_winding: each triangle's corners in reverse order (c, b, a). */
      int at = p->job->flip_winding ? i - i % 3 + 2 - i % 3 : i;
      tri[3 * tid + (size_t)at] = (uint32_t)(vertex_offset + vertex_number(p, x + off[0], y + off[1], z + off[2], axis));
    }
    tid += (size_t)ir_mc_case_triangles(entry);
  }
}

/* ---- Driver --------------------------------------------------------------------------------------- */
static bool grow(void **ptr, size_t count, size_t elem) {
  if (count == 0) return true;
  void *q = realloc(*ptr, count * elem);
  if (!q) return false;
  *ptr = q;
  return true;
}

/* The count phase of surface p->surface: its active bricks, their edge tables and counts, and the
 * bases in brick order (triangles numbered from t0, mesh-wide). Its totals in *vertices and
 * *triangles; `stats` (may be NULL) tallies the bricks and cells. */
static ir_status count_surface(cpu_pass *p, size_t t0, size_t *vertices, size_t *triangles, ir_extract_stats *stats,
                               char err[IR_ERR_LEN]) {
  const ir_extractor *ex = p->ex;
  const ir_mc_grid *g = p->g;
  size_t active = 0;
  for (uint32_t b = 0; b < ex->brick_count; b++) {
    uint32_t bx = b % g->bricks[0], by = b / g->bricks[0] % g->bricks[1], bz = b / g->bricks[0] / g->bricks[1];
    if (!ir_mc_range_active(ex->ranges[b].lo, ex->ranges[b].hi, p->iso)) continue;
    if (p->job->rules.exact && !ir_mc_clip_keeps_brick(&p->job->rules, bx, by, bz)) continue;
    p->slot_of[b] = (uint32_t)active;
    p->active[active++] = b;
  }
  if (active > p->table_capacity) {
    if (!grow((void **)&p->edge_mask, active * IR_MC_EDGE_WORDS, sizeof *p->edge_mask) ||
        !grow((void **)&p->edge_prefix, active * IR_MC_EDGE_WORDS, sizeof *p->edge_prefix)) {
      snprintf(err, IR_ERR_LEN, "out of host memory for the edge tables of %zu bricks", active);
      return IR_ERR_RUNTIME;
    }
    p->table_capacity = active;
  }
  p->active_count = active;
  ir_mc_parallel(active, ex->threads, count_brick, p);
  size_t vsum = 0, tsum = 0, cells = 0;
  for (size_t s = 0; s < active; s++) {
    p->vbase[s] = vsum, vsum += p->vcount[s]; /* numbers within the surface */
    p->tbase[s] = t0 + tsum, tsum += p->tcount[s];
    cells += p->ccount[s];
  }
  if (stats) stats->active_bricks += active, stats->cells_with_triangles += cells;
  *vertices = vsum;
  *triangles = tsum;
  return IR_OK;
}

/* The mesh of v vertices and t triangles in all: more than the 32-bit indices number is refused. */
static ir_status check_totals(size_t v, size_t t, char err[IR_ERR_LEN]) {
  if (v < ((size_t)1 << 31) && t < ((size_t)1 << 31)) return IR_OK;
  snprintf(err, IR_ERR_LEN, "the mesh has %zu vertices and %zu triangles: more than 2^31 - 1, the most the "
           "32-bit indices allow; extract a region or fewer surfaces", v, t);
  return IR_ERR_INPUT;
}

/* Host output: each surface counted, the mesh grown to hold it, then generated after the others. */
static ir_status extract_appending(cpu_pass *p, ir_extract_stats *stats, char err[IR_ERR_LEN]) {
  ir_mesh *m = p->mesh;
  for (int s = 0; s < p->job->surface_count; s++) {
    p->iso = p->job->isovalues[s];
    p->surface = s;
    size_t v0 = m->vertex_count, t0 = m->triangle_count, vn = 0, tn = 0;
    ir_status status = count_surface(p, t0, &vn, &tn, stats, err);
    if (status == IR_OK) status = check_totals(v0 + vn, t0 + tn, err);
    if (status != IR_OK) return status;
    vn += v0, tn += t0;
    if (!grow((void **)&m->positions, 3 * vn, sizeof(float)) || !grow((void **)&m->normals, 3 * vn, sizeof(float)) ||
        !grow((void **)&m->values, vn, sizeof(float)) || !grow((void **)&m->triangles, 3 * tn, sizeof(uint32_t)) ||
        (p->job->colors != IR_EXTRACT_COLORS_NONE && !grow((void **)&m->colors, 4 * vn, 1))) {
      snprintf(err, IR_ERR_LEN, "out of host memory for a mesh of %zu vertices and %zu triangles", vn, tn);
      return IR_ERR_RUNTIME;
    }
    m->surface_vertex_start[s] = v0;
    m->surface_triangle_start[s] = t0;
    m->vertex_count = vn;
    m->triangle_count = tn;
    ir_mc_parallel(p->active_count, p->ex->threads, generate_brick, p);
  }
  return IR_OK;
}

/* Caller output: every surface counted first for the totals, the caller's arrays asked for, then
 * the last surface generated from the tables its count left, and the others counted again and
 * generated (one surface's tables at a time). */
static ir_status extract_into_caller(cpu_pass *p, ir_extract_stats *stats, char err[IR_ERR_LEN]) {
  const ir_mc_job *job = p->job;
  ir_mesh *m = p->mesh;
  const int last = job->surface_count - 1;
  size_t v = 0, t = 0;
  for (int s = 0; s <= last; s++) {
    p->iso = job->isovalues[s];
    p->surface = s;
    size_t vn = 0, tn = 0;
    m->surface_vertex_start[s] = v;
    m->surface_triangle_start[s] = t;
    ir_status status = count_surface(p, t, &vn, &tn, stats, err);
    if (status == IR_OK) status = check_totals(v + vn, t + tn, err);
    if (status != IR_OK) return status;
    v += vn, t += tn;
  }
  ir_status status = ir_mc_caller_arrays(job, v, t, m, err);
  for (int k = 0; k <= last && status == IR_OK; k++) {
    int s = k == 0 ? last : k - 1;
    p->iso = job->isovalues[s];
    p->surface = s;
    size_t vn = 0, tn = 0;
    if (s != last) status = count_surface(p, m->surface_triangle_start[s], &vn, &tn, NULL, err);
    if (status == IR_OK) ir_mc_parallel(p->active_count, p->ex->threads, generate_brick, p);
  }
  return status;
}

ir_status ir_cpu_extract(ir_extractor *ex, const ir_mc_job *job, ir_mesh *mesh, ir_extract_stats *stats,
                         char err[IR_ERR_LEN]) {
  size_t n = ex->brick_count;
  cpu_pass p = {.ex = ex, .job = job, .g = &ex->grid, .mesh = mesh};
  p.active = malloc(n * sizeof *p.active);
  p.slot_of = malloc(n * sizeof *p.slot_of);
  p.vcount = malloc(n * sizeof *p.vcount);
  p.tcount = malloc(n * sizeof *p.tcount);
  p.ccount = malloc(n * sizeof *p.ccount);
  p.vbase = malloc(n * sizeof *p.vbase);
  p.tbase = malloc(n * sizeof *p.tbase);
  ir_status status = IR_OK;
  if (!p.active || !p.slot_of || !p.vcount || !p.tcount || !p.ccount || !p.vbase || !p.tbase) {
    snprintf(err, IR_ERR_LEN, "out of host memory for the tables of %zu bricks", n);
    status = IR_ERR_RUNTIME;
  }
  if (status == IR_OK)
    status = job->output == IR_MESH_CALLER ? extract_into_caller(&p, stats, err) : extract_appending(&p, stats, err);
  mesh->surface_vertex_start[job->surface_count] = mesh->vertex_count;
  mesh->surface_triangle_start[job->surface_count] = mesh->triangle_count;
  free(p.active), free(p.slot_of), free(p.edge_mask), free(p.edge_prefix);
  free(p.vcount), free(p.tcount), free(p.ccount), free(p.vbase), free(p.tbase);
  return status;
}
