/* The writing half of a surface on the GPU: the vertices and triangles of the active bricks. Every
 * number comes from the tables classification left, whatever order the compaction method put the
 * work in:
 *
 *   vertex of local edge e of brick B  = vbase[B] + prefix[e / 32] + popc(mask[e / 32] below e)
 *   first triangle of cell c of brick B = tbase[B] + group prefix[c / 32] + nibbles below c
 *
 * (marching.cuh), so the mesh is the same for every method and run, and the CPU reference's. The
 * per-vertex and per-cell math is marching.cuh's, compiled with --fmad=false like the CPU's.
 *
 * Two forms. One block per active brick (InK-Compact: the candidates never leave the block): the
 * block copies the brick's points -1 .. 17 (the gradients at both ends of its edges) into shared
 * memory, expands its edge table into a list of its vertex edges and its cell table into a list of
 * its triangles there, each word by one thread at the word's prefix, and writes them with every
 * thread busy, reading voxels from shared memory. One thread per candidate point and per candidate
 * cell (the methods that hand candidates on in a stream): the same math on the grid in memory.
 */
#include "extract/gpu_internal.cuh"

/* Voxel values at grid points, as float: from the grid in memory, or from the block's copy of its
 * brick. The math below is written once over either. */
template <int TYPE>
struct grid_field {
  const void *voxels;
  size_t dims0, dims01;
  __device__ __forceinline__ float operator()(const uint32_t p[3]) const {
    return ir_gx_load<TYPE>(voxels, p[0] + dims0 * p[1] + dims01 * p[2]);
  }
};

#define BRICK_SIDE (IR_MC_BRICK + 3) /* points -1 .. 17 */
struct brick_field {
  const float *s;
  int o[3];
  __device__ __forceinline__ float operator()(const uint32_t p[3]) const {
    return s[((int)p[0] - o[0] + 1) + BRICK_SIDE * (((int)p[1] - o[1] + 1) + BRICK_SIDE * ((int)p[2] - o[2] + 1))];
  }
};

/* The same derivative as the CPU's derivative_at (cpu_extract.c). */
template <class F>
static __device__ float derivative_at(const ir_mc_grid &g, const F &f, const uint32_t pt[3], int k, float f0) {
  uint32_t m[3] = {pt[0], pt[1], pt[2]}, q[3] = {pt[0], pt[1], pt[2]};
  bool has_m = pt[k] > 0, has_p = pt[k] + 1 < g.dims[k];
  m[k] -= has_m ? 1 : 0;
  q[k] += has_p ? 1 : 0;
  float fm = has_m ? f(m) : 0.0f;
  float fp = has_p ? f(q) : 0.0f;
  return ir_mc_derivative(fm, has_m, f0, fp, has_p, g.spacing[k]);
}

static __device__ float color_voxel(const ir_gx_mesh_out &m, const ir_mc_grid &g, const uint32_t p[3]) {
  size_t i = ir_mc_index(&g, p[0], p[1], p[2]);
  switch (m.color_type) {
  case IR_VOXEL_UINT8: return ir_gx_load<IR_VOXEL_UINT8>(m.color_voxels, i);
  case IR_VOXEL_UINT16: return ir_gx_load<IR_VOXEL_UINT16>(m.color_voxels, i);
  case IR_VOXEL_INT16: return ir_gx_load<IR_VOXEL_INT16>(m.color_voxels, i);
  default: return ir_gx_load<IR_VOXEL_FLOAT32>(m.color_voxels, i);
  }
}

/* IR_EXTRACT_VALUES_LOCAL_RANGE: the CPU's local_range (cpu_extract.c), operation for operation. */
template <class F>
static __device__ float local_range(const ir_mc_grid &g, float iso, const F &f, const uint32_t a[3], int axis) {
  int b = (axis + 1) % 3, c = (axis + 2) % 3;
  float largest = 0.0f;
  for (int ob = -1; ob <= 0; ob++)
    for (int oc = -1; oc <= 0; oc++) {
      if ((ob < 0 && a[b] == 0) || (oc < 0 && a[c] == 0)) continue;
      uint32_t cell[3] = {a[0], a[1], a[2]};
      cell[b] = (uint32_t)((int64_t)a[b] + ob), cell[c] = (uint32_t)((int64_t)a[c] + oc);
      if (cell[0] + 1 >= g.dims[0] || cell[1] + 1 >= g.dims[1] || cell[2] + 1 >= g.dims[2]) continue;
      float lo = iso, hi = iso;
      for (int corner = 0; corner < 8; corner++) {
        const uint32_t q[3] = {cell[0] + (corner & 1), cell[1] + ((corner >> 1) & 1), cell[2] + ((corner >> 2) & 1)};
        float v = f(q);
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
      }
      largest = hi - lo > largest ? hi - lo : largest;
    }
  return largest;
}

/* The vertex on the edge leaving grid point a along `axis`: the CPU's write_vertex. */
template <class F>
static __device__ void write_vertex(const ir_mc_grid &g, float iso, const F &f, const ir_gx_mesh_out &m, uint32_t id,
                                    const uint32_t a[3], int axis) {
  const uint32_t b[3] = {a[0] + (axis == 0), a[1] + (axis == 1), a[2] + (axis == 2)}; /* no indexing by a variable: registers */
  float fa = f(a), fb = f(b);
  float t = ir_mc_edge_t(fa, fb, iso);
  ir_vec3 ga = ir_v3(derivative_at(g, f, a, 0, fa), derivative_at(g, f, a, 1, fa), derivative_at(g, f, a, 2, fa));
  ir_vec3 gb = ir_v3(derivative_at(g, f, b, 0, fb), derivative_at(g, f, b, 1, fb), derivative_at(g, f, b, 2, fb));
  ir_vec3 grad = ir_mc_lerp3(ga, gb, t);
  ir_vec3 pos = ir_mc_position(&g, a[0], a[1], a[2], axis, t), n = ir_mc_normal(grad);
  size_t i = (size_t)id;
  const int first = m.axes_zyx ? 2 : 0, last = 2 - first; /* where x and z go */
  m.positions[3 * i + first] = pos.x, m.positions[3 * i + 1] = pos.y, m.positions[3 * i + last] = pos.z;
  m.normals[3 * i + first] = n.x, m.normals[3 * i + 1] = n.y, m.normals[3 * i + last] = n.z;
  float value = iso;
  if (m.values_from == IR_EXTRACT_VALUES_GRADIENT) {
    value = sqrtf(ir_dot(grad, grad));
  } else if (m.values_from == IR_EXTRACT_VALUES_COLOR_GRID) {
    float ca = color_voxel(m, g, a), cb = color_voxel(m, g, b);
    value = ca + t * (cb - ca);
  } else if (m.values_from == IR_EXTRACT_VALUES_LOCAL_RANGE) {
    value = local_range(g, iso, f, a, axis);
  }
  m.values[i] = value;
  if (m.colors)
    m.colors[i] = m.colors_from == IR_EXTRACT_COLORS_MAP
                      ? ir_mc_map_color(m.colormap, m.colormap_size, value, m.color_range[0], m.color_range[1])
                      : m.surface_rgba;
}

/* The case of the cell whose lowest corner is grid point p. */
template <class F>
static __device__ __forceinline__ int cell_case(const F &f, const uint32_t p[3], float iso) {
  int c = 0;
  for (int k = 0; k < 8; k++) {
    uint32_t d[3], q[3];
    ir_mc_corner_offset(k, d);
    for (int j = 0; j < 3; j++) q[j] = p[j] + d[j];
    c |= ir_mc_inside(f(q), iso) ? 1 << k : 0;
  }
  return c;
}

/* Vertex numbers for the triangles of a brick's cells: the vertex on the edge leaving grid point p
 * along `axis` is numbered from the edge table of the brick that owns p, the cell's own brick or a
 * neighbour across its upper faces. */

/* Looked up per edge in the tables in memory (one thread per candidate cell). */
struct table_numbers {
  const ir_mc_grid &g;
  const ir_gx_tables &t;
  uint32_t brick, slot, vbase; /* the cell's own brick */
  __device__ __forceinline__ uint32_t operator()(const uint32_t p[3], int axis) const {
    const uint32_t owner = ir_mc_brick_index(&g, p[0] / IR_MC_BRICK, p[1] / IR_MC_BRICK, p[2] / IR_MC_BRICK);
    const uint32_t e = ir_mc_local_edge(axis, ir_mc_local_point(p[0] % IR_MC_BRICK, p[1] % IR_MC_BRICK, p[2] % IR_MC_BRICK));
    const bool own = owner == brick;
    const uint2 word = t.edges[(size_t)(own ? slot : t.slot_of[owner]) * IR_MC_EDGE_WORDS + e / 32];
    return (own ? vbase : (uint32_t)t.vbase[owner]) + ir_mc_edge_rank(word.x, word.y, e % 32);
  }
};

/* The block's brick and its seven upper neighbours (index dx | dy << 1 | dz << 2), found once per
 * block: their edge tables (the brick's own copied to shared memory) and first vertices. */
typedef struct brick_hood {
  const uint2 *edges[8];
  uint32_t vbase[8];
} brick_hood;

struct hood_numbers {
  const brick_hood &h;
  uint32_t o[3];
  __device__ __forceinline__ uint32_t operator()(const uint32_t p[3], int axis) const {
    const uint32_t x = p[0] - o[0], y = p[1] - o[1], z = p[2] - o[2]; /* 0 .. 16 */
    const uint32_t nb = x / IR_MC_BRICK | (y / IR_MC_BRICK) << 1 | (z / IR_MC_BRICK) << 2;
    const uint32_t e = ir_mc_local_edge(axis, ir_mc_local_point(x % IR_MC_BRICK, y % IR_MC_BRICK, z % IR_MC_BRICK));
    const uint2 word = h.edges[nb][e / 32];
    return h.vbase[nb] + ir_mc_edge_rank(word.x, word.y, e % 32);
  }
};

/* Triangle `tri` (case-table order) of the cell whose lowest corner is p, as triangle `id`. */
template <class N>
static __device__ __forceinline__ void write_triangle(const ir_gx_mesh_out &m, const N &number, const uint32_t p[3],
                                                      uint64_t entry, int tri, uint32_t id) {
  uint32_t *out = m.triangles + 3 * (size_t)id;
  for (int k = 0; k < 3; k++) {
    uint32_t off[3], q[3];
    int axis = ir_mc_edge(ir_mc_case_edge(entry, 3 * tri + k), off);
    for (int j = 0; j < 3; j++) q[j] = p[j] + off[j];
    /* flip_winding: each triangle's corners in reverse order (c, b, a). */
    out[m.flip_winding ? 2 - k : k] = m.vertex_offset + number(q, axis);
  }
}

static __device__ __forceinline__ void local_to_grid(const uint32_t o[3], uint32_t l, uint32_t p[3]) {
  p[0] = o[0] + l % IR_MC_BRICK, p[1] = o[1] + l / IR_MC_BRICK % IR_MC_BRICK, p[2] = o[2] + l / (IR_MC_BRICK * IR_MC_BRICK);
}

/* ---- One block per brick ------------------------------------------------------------------------- */
/* The lists are built and used in chunks of BRICK_LIST entries: one chunk almost always (a brick of
 * the 512^3 fractal has some 460 vertices and 920 triangles on average), more for noise. */
#define BRICK_LIST 1024
#define BRICK_VOXELS (BRICK_SIDE * BRICK_SIDE * BRICK_SIDE)
#define BRICK_VOXELS_PER_THREAD ((BRICK_VOXELS + IR_GX_GENERATE_THREADS - 1) / IR_GX_GENERATE_THREADS)
static_assert(2 * IR_GX_GENERATE_THREADS * 8 == IR_MC_BRICK_POINTS, "two nibble words of the cell table a thread");

/* Points -1 .. 17 of the brick as float (0 outside the grid, where nothing reads). Thread t takes
 * point t % 19 of rows t / 19, + 13, + 26, ... (a pass of 256 threads covers 13 rows of 19; 9
 * threads idle), stepping the row without a division; every load issued before the first store. */
#define BRICK_ROWS (BRICK_SIDE * BRICK_SIDE)
#define ROWS_PER_PASS (IR_GX_GENERATE_THREADS / BRICK_SIDE)
#define BRICK_PASSES ((BRICK_ROWS + ROWS_PER_PASS - 1) / ROWS_PER_PASS)
template <int TYPE>
static __device__ __forceinline__ void load_brick(const ir_mc_grid &g, const void *__restrict__ voxels,
                                                  const uint32_t o[3], float *s_v) {
  const int lx = (int)threadIdx.x % BRICK_SIDE, r0 = (int)threadIdx.x / BRICK_SIDE;
  const int x = (int)o[0] + lx - 1;
  const bool x_in = r0 < ROWS_PER_PASS && x >= 0 && x < (int)g.dims[0];
  float v[BRICK_PASSES];
  int ly = r0, lz = 0; /* row r = ly + 19 lz, point (lx - 1, ly - 1, lz - 1) of the brick */
#pragma unroll
  for (int k = 0; k < BRICK_PASSES; k++) {
    const int y = (int)o[1] + ly - 1, z = (int)o[2] + lz - 1;
    const bool in = x_in && lz < BRICK_SIDE && y >= 0 && z >= 0 && y < (int)g.dims[1] && z < (int)g.dims[2];
    v[k] = in ? ir_gx_load<TYPE>(voxels, ir_mc_index(&g, (uint32_t)x, (uint32_t)y, (uint32_t)z)) : 0.0f;
    ly += ROWS_PER_PASS;
    if (ly >= BRICK_SIDE) ly -= BRICK_SIDE, lz++;
  }
#pragma unroll
  for (int k = 0; k < BRICK_PASSES; k++) {
    const int r = r0 + ROWS_PER_PASS * k;
    if (r0 < ROWS_PER_PASS && r < BRICK_ROWS) s_v[lx + BRICK_SIDE * r] = v[k];
  }
}
static_assert(ROWS_PER_PASS < BRICK_SIDE, "one wrap of the row per pass at most");

/* Puts the entries of ranks [c0, c0 + BRICK_LIST) of one table word into the list: the word's
 * entries have ranks `rank`, `rank` + 1, ... (its prefix), one per set bit. */
static __device__ __forceinline__ void list_edges(uint32_t mask, uint32_t rank, uint32_t first_edge, uint32_t c0,
                                                  uint32_t *s_list) {
  if (rank >= c0 + BRICK_LIST || rank + (uint32_t)__popc(mask) <= c0) return;
  for (; mask; mask &= mask - 1u, rank++)
    if (rank >= c0 && rank < c0 + BRICK_LIST) s_list[rank - c0] = first_edge + (uint32_t)__ffs((int)mask) - 1u;
}

/* The same for a nibble word of the cell table (cells first_cell .. + 7), entries
 * cell | triangle << 12 | case << 15. */
static __device__ __forceinline__ void list_triangles(uint32_t nibbles, uint32_t rank, uint32_t first_cell, uint32_t c0,
                                                      const brick_field &f, const uint32_t o[3], float iso,
                                                      uint32_t *s_list) {
  for (int k = 0; k < 8 && rank < c0 + BRICK_LIST; k++) {
    const uint32_t n = (nibbles >> (4 * k)) & 15u;
    if (n && rank + n > c0) {
      uint32_t l = first_cell + (uint32_t)k, p[3];
      local_to_grid(o, l, p);
      const uint32_t entry = l | (uint32_t)cell_case(f, p, iso) << 15;
      for (uint32_t j = 0; j < n; j++)
        if (rank + j >= c0 && rank + j < c0 + BRICK_LIST) s_list[rank + j - c0] = entry | j << 12;
    }
    rank += n;
  }
}

/* On Hopper five blocks of 38.8 KB of shared memory fit an SM, and the register cap that asks
 * for five (48) lets all five run. Elsewhere shared memory fits fewer (Turing one, Ampere and
 * Ada two to four), so no cap: the registers the code wants. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define IR_GX_GENERATE_BLOCKS_PER_SM 5
#else
#define IR_GX_GENERATE_BLOCKS_PER_SM 1
#endif
template <int TYPE>
static __global__ void __launch_bounds__(IR_GX_GENERATE_THREADS, IR_GX_GENERATE_BLOCKS_PER_SM)
    brick_kernel(ir_mc_grid g, float iso, const void *__restrict__ voxels, const uint64_t *__restrict__ cases,
                 ir_gx_tables t, ir_gx_mesh_out m, ir_gx_spec spec) {
  __shared__ float s_v[BRICK_VOXELS];
  __shared__ uint2 s_edges[IR_MC_EDGE_WORDS];
  __shared__ uint32_t s_vlist[BRICK_LIST], s_tlist[BRICK_LIST];
  __shared__ brick_hood s_hood;
  const uint32_t slot = blockIdx.x;
  if (spec.counters) { /* launched before the counts were known: all of it or nothing */
    const ir_gx_counters *c = spec.counters;
    const uint32_t active = c->active;
    if (active > gridDim.x || slot >= active || c->vertices > spec.room_vertices || c->triangles > spec.room_triangles)
      return;
  }
  const uint32_t brick = t.active[slot];
  uint32_t o[3];
  ir_gx_brick_origin(g, brick, o);
  /* Everything the block reads from memory is asked for before the first barrier. */
  if (threadIdx.x < 8) {
    const uint32_t nb = threadIdx.x, d[3] = {nb & 1u, nb >> 1 & 1u, nb >> 2 & 1u};
    const uint32_t bx = o[0] / IR_MC_BRICK + d[0], by = o[1] / IR_MC_BRICK + d[1], bz = o[2] / IR_MC_BRICK + d[2];
    if (bx < g.bricks[0] && by < g.bricks[1] && bz < g.bricks[2]) { /* inactive ones are never used */
      const uint32_t b = ir_mc_brick_index(&g, bx, by, bz);
      s_hood.edges[nb] = nb ? t.edges + (size_t)t.slot_of[b] * IR_MC_EDGE_WORDS : s_edges;
      s_hood.vbase[nb] = (uint32_t)t.vbase[b];
    }
  }
  const uint32_t vertices = (uint32_t)t.vcount[brick], triangles = (uint32_t)t.tcount[brick];
  const uint32_t tfirst = m.triangle_offset + (uint32_t)t.tbase[brick];
  uint32_t nibbles[2], rank[2]; /* two nibble words of the cell table (8 cells each) and their prefixes */
#pragma unroll
  for (int h = 0; h < 2; h++) {
    const uint32_t word = threadIdx.x + IR_GX_GENERATE_THREADS * h, group = word / 4;
    const uint4 nib = t.cell_nibbles[(size_t)slot * IR_MC_CELL_GROUPS + group];
    const uint32_t words[4] = {nib.x, nib.y, nib.z, nib.w};
    nibbles[h] = words[word % 4];
    rank[h] = t.cell_prefix[(size_t)slot * IR_MC_CELL_GROUPS + group] + ir_mc_nibbles_below(words, 8 * (word % 4));
  }
  load_brick<TYPE>(g, voxels, o, s_v);
  for (unsigned w = threadIdx.x; w < IR_MC_EDGE_WORDS; w += blockDim.x)
    s_edges[w] = t.edges[(size_t)slot * IR_MC_EDGE_WORDS + w];
  __syncthreads();
  const brick_field f = {s_v, {(int)o[0], (int)o[1], (int)o[2]}};

  /* Both lists, a chunk of each per step (one step almost always): vertex entries are local edges
   * in edge order, triangle entries cell | triangle << 12 | case << 15; every thread then takes
   * entries of both, so that no barrier separates the vertices from the triangles. */
  const uint32_t vfirst = m.vertex_offset + s_hood.vbase[0];
  const hood_numbers number = {s_hood, {o[0], o[1], o[2]}};
  for (uint32_t c0 = 0; c0 < vertices || c0 < triangles; c0 += BRICK_LIST) {
    for (unsigned w = threadIdx.x; w < IR_MC_EDGE_WORDS; w += blockDim.x)
      list_edges(s_edges[w].x, s_edges[w].y, 32u * w, c0, s_vlist);
#pragma unroll
    for (int h = 0; h < 2; h++)
      list_triangles(nibbles[h], rank[h], 8u * (threadIdx.x + IR_GX_GENERATE_THREADS * h), c0, f, o, iso, s_tlist);
    __syncthreads();
    const uint32_t nv = vertices > c0 ? (vertices - c0 < BRICK_LIST ? vertices - c0 : BRICK_LIST) : 0u;
    const uint32_t nt = triangles > c0 ? (triangles - c0 < BRICK_LIST ? triangles - c0 : BRICK_LIST) : 0u;
    for (uint32_t i = threadIdx.x; i < nv + nt; i += blockDim.x) {
      if (i < nv) {
        const uint32_t e = s_vlist[i];
        uint32_t a[3];
        local_to_grid(o, e % IR_MC_BRICK_POINTS, a);
        write_vertex(g, iso, f, m, vfirst + c0 + i, a, (int)(e / IR_MC_BRICK_POINTS));
      } else {
        const uint32_t entry = s_tlist[i - nv];
        uint32_t p[3];
        local_to_grid(o, entry % IR_MC_BRICK_POINTS, p);
        write_triangle(m, number, p, __ldg(cases + (entry >> 15)), (int)(entry >> 12 & 7u), tfirst + c0 + i - nv);
      }
    }
    __syncthreads();
  }
}

/* ---- One thread per candidate -------------------------------------------------------------------- */
template <int TYPE>
static __global__ void __launch_bounds__(IR_GX_GENERATE_THREADS)
    vertices_kernel(ir_mc_grid g, float iso, const void *__restrict__ voxels, ir_gx_tables t,
                    const uint32_t *__restrict__ points, uint32_t count, ir_gx_mesh_out m) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  uint32_t v = points[i], slot = v / IR_MC_BRICK_POINTS, l = v % IR_MC_BRICK_POINTS;
  uint32_t brick = t.active[slot], o[3], a[3];
  ir_gx_brick_origin(g, brick, o);
  local_to_grid(o, l, a);
  const grid_field<TYPE> f = {voxels, g.dims[0], (size_t)g.dims[0] * g.dims[1]};
  uint32_t base = m.vertex_offset + (uint32_t)t.vbase[brick];
  for (int axis = 0; axis < 3; axis++) {
    uint32_t e = ir_mc_local_edge(axis, l);
    uint2 word = t.edges[(size_t)slot * IR_MC_EDGE_WORDS + e / 32];
    if (!((word.x >> (e % 32)) & 1u)) continue;
    write_vertex(g, iso, f, m, base + ir_mc_edge_rank(word.x, word.y, e % 32), a, axis);
  }
}

template <int TYPE>
static __global__ void __launch_bounds__(IR_GX_GENERATE_THREADS)
    triangles_kernel(ir_mc_grid g, float iso, const void *__restrict__ voxels, const uint64_t *__restrict__ cases,
                     ir_gx_tables t, const uint32_t *__restrict__ cells, uint32_t count, ir_gx_mesh_out m) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  uint32_t v = cells[i], slot = v / IR_MC_BRICK_POINTS, l = v % IR_MC_BRICK_POINTS;
  uint32_t brick = t.active[slot], o[3], p[3];
  ir_gx_brick_origin(g, brick, o);
  local_to_grid(o, l, p);
  const grid_field<TYPE> f = {voxels, g.dims[0], (size_t)g.dims[0] * g.dims[1]};
  uint64_t entry = __ldg(cases + cell_case(f, p, iso));
  size_t group = (size_t)slot * IR_MC_CELL_GROUPS + l / 32;
  uint4 nib = t.cell_nibbles[group];
  const uint32_t words[4] = {nib.x, nib.y, nib.z, nib.w};
  uint32_t first = m.triangle_offset + (uint32_t)t.tbase[brick] + t.cell_prefix[group] + ir_mc_nibbles_below(words, l % 32);
  const table_numbers number = {g, t, brick, slot, (uint32_t)t.vbase[brick]};
  for (int k = 0; k < ir_mc_case_triangles(entry); k++) write_triangle(m, number, p, entry, k, first + k);
}

#define GX_DISPATCH(kernel, grid, ...)                                                                   \
  switch (g.type) {                                                                                      \
  case IR_VOXEL_UINT8: kernel<IR_VOXEL_UINT8><<<grid, IR_GX_GENERATE_THREADS, 0, stream>>>(__VA_ARGS__); break;   \
  case IR_VOXEL_UINT16: kernel<IR_VOXEL_UINT16><<<grid, IR_GX_GENERATE_THREADS, 0, stream>>>(__VA_ARGS__); break; \
  case IR_VOXEL_INT16: kernel<IR_VOXEL_INT16><<<grid, IR_GX_GENERATE_THREADS, 0, stream>>>(__VA_ARGS__); break;   \
  default: kernel<IR_VOXEL_FLOAT32><<<grid, IR_GX_GENERATE_THREADS, 0, stream>>>(__VA_ARGS__); break;             \
  }

cudaError_t ir_gx_launch_bricks_generate(const ir_mc_grid &g, float iso, const void *voxels, const uint64_t *cases,
                                         const ir_gx_tables &t, uint32_t blocks, const ir_gx_mesh_out &m,
                                         const ir_gx_spec &spec, cudaStream_t stream) {
  if (blocks == 0) return cudaSuccess;
  GX_DISPATCH(brick_kernel, blocks, g, iso, voxels, cases, t, m, spec)
  return cudaGetLastError();
}

cudaError_t ir_gx_launch_vertices(const ir_mc_grid &g, float iso, const void *voxels, const ir_gx_tables &t,
                                  const uint32_t *points, uint32_t count, const ir_gx_mesh_out &m,
                                  cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  unsigned grid = (count + IR_GX_GENERATE_THREADS - 1) / IR_GX_GENERATE_THREADS;
  GX_DISPATCH(vertices_kernel, grid, g, iso, voxels, t, points, count, m)
  return cudaGetLastError();
}

cudaError_t ir_gx_launch_triangles(const ir_mc_grid &g, float iso, const void *voxels, const uint64_t *cases,
                                   const ir_gx_tables &t, const uint32_t *cells, uint32_t count,
                                   const ir_gx_mesh_out &m, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  unsigned grid = (count + IR_GX_GENERATE_THREADS - 1) / IR_GX_GENERATE_THREADS;
  GX_DISPATCH(triangles_kernel, grid, g, iso, voxels, cases, t, cells, count, m)
  return cudaGetLastError();
}
