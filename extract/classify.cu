/* The counting half of a surface on the GPU: which bricks can hold it, and in each of those which
 * edges carry a vertex and which cells have triangles.
 *
 * Brick test: one thread per brick (value range, clip box and plane); the active bricks leave by
 * the chosen compaction method in its natural form (gpu_internal.cuh, ir_gx_out).
 *
 * Classification: one block per active brick, the idea of InK-Compact applied to extraction:
 * the block loads the brick's voxels once into shared memory, classifies its 12288 edges and
 * 4096 cells there, and compacts what the generation kernels need before it leaves:
 *   - its edge table (a bit per edge with a vertex, and the vertex count of the earlier 32-edge
 *     words: one ballot per word, one block scan over the 384 words) and vertex count;
 *   - its cell table (each cell's triangle count as a nibble, and the triangles of the earlier
 *     32-cell groups) and triangle count;
 *   - its candidate points (grid points with at least one vertex edge) and candidate cells (cells
 *     with triangles), each as slot * 4096 + local point, emitted in-kernel (InK-Compact's
 *     look-back, InK-Collate's block atomic) or as flags / a removal list for an out-of-kernel
 *     call afterwards.
 * What is compacted decides no number: vertex and triangle numbers come from the tables and the
 * counts scanned in brick order, so every method gives the same mesh.
 *
 * Exact path (EXACT): with clipping or non-finite voxels a cell is drawn only when it passes the
 * clip test and its corners are finite, and an edge carries a vertex only when a drawn cell
 * borders it; the block first marks the drawn cells among the 17^3 whose lowest corner lies in
 * -1..15 (the cells around its edges).
 */
#include "extract/gpu_internal.cuh"

/* ---- Brick test ------------------------------------------------------------------------------------ */
static __device__ __forceinline__ void emit_one(const ir_gx_out &o, bool in_range, bool keep, uint32_t value) {
  switch (o.mode) {
  case IR_GX_INK_COMPACT: ir_ink_compact_emit(in_range && keep, value, o.list, o.count, o.scan); break;
  case IR_GX_INK_COLLATE: ir_ink_collate_emit(in_range && keep, value, o.list, o.count); break;
  case IR_GX_FLAGS:
    if (in_range) o.flags[value] = keep ? 1 : 0;
    break;
  default:
    if (in_range) o.list[value] = value;
    ir_gx_append_removal(in_range && !keep, value, o.remove, o.count);
    break;
  }
}

static __global__ void __launch_bounds__(IR_GX_BRICK_THREADS)
    bricks_kernel(ir_mc_grid g, ir_mc_rules r, float iso, const ir_mc_range *__restrict__ ranges, uint32_t bricks,
                  ir_gx_out out) {
  uint32_t b = blockIdx.x * blockDim.x + threadIdx.x;
  bool in_range = b < bricks, keep = false;
  if (in_range) {
    ir_mc_range range = ranges[b];
    keep = ir_mc_range_active(range.lo, range.hi, iso);
    if (keep && r.exact) {
      uint32_t bx = b % g.bricks[0], by = b / g.bricks[0] % g.bricks[1], bz = b / g.bricks[0] / g.bricks[1];
      keep = ir_mc_clip_keeps_brick(&r, bx, by, bz);
    }
  }
  emit_one(out, in_range, keep, b);
}

cudaError_t ir_gx_launch_bricks(const ir_mc_grid &g, const ir_mc_rules &r, float iso, const ir_mc_range *ranges,
                                size_t bricks, const ir_gx_out &out, cudaStream_t stream) {
  unsigned grid = (unsigned)((bricks + IR_GX_BRICK_THREADS - 1) / IR_GX_BRICK_THREADS);
  bricks_kernel<<<grid, IR_GX_BRICK_THREADS, 0, stream>>>(g, r, iso, ranges, (uint32_t)bricks, out);
  return cudaGetLastError();
}

static __global__ void slots_kernel(const uint32_t *__restrict__ active_list, uint32_t active,
                                    uint32_t *__restrict__ slot_of) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < active) slot_of[active_list[i]] = i;
}

cudaError_t ir_gx_launch_slots(const uint32_t *active_list, uint32_t active, uint32_t *slot_of, cudaStream_t stream) {
  slots_kernel<<<(active + 255) / 256, 256, 0, stream>>>(active_list, active, slot_of);
  return cudaGetLastError();
}

/* ---- Classification --------------------------------------------------------------------------------- */
/* Index of local point (x, y, z), each -1 .. 16, in the block's voxel array. */
static __device__ __forceinline__ int halo_index(int x, int y, int z) {
  return (x + 1) + IR_GX_HALO * ((y + 1) + IR_GX_HALO * (z + 1));
}

#define DRAWN_SIDE (IR_MC_BRICK + 1) /* cells -1 .. 15 along each axis */
static __device__ __forceinline__ int drawn_index(int x, int y, int z) {
  return (x + 1) + DRAWN_SIDE * ((y + 1) + DRAWN_SIDE * (z + 1));
}

/* The block's voxels: points -1 .. 16 of the brick, NaN outside the grid. */
template <int TYPE>
static __device__ void load_brick(const ir_mc_grid &g, const void *__restrict__ voxels, const uint32_t o[3],
                                  float *s_v) {
  for (int i = threadIdx.x; i < IR_GX_HALO * IR_GX_HALO * IR_GX_HALO; i += blockDim.x) {
    int x = (int)o[0] + i % IR_GX_HALO - 1, y = (int)o[1] + i / IR_GX_HALO % IR_GX_HALO - 1,
        z = (int)o[2] + i / (IR_GX_HALO * IR_GX_HALO) - 1;
    bool in = x >= 0 && y >= 0 && z >= 0 && x < (int)g.dims[0] && y < (int)g.dims[1] && z < (int)g.dims[2];
    s_v[i] = in ? ir_gx_load<TYPE>(voxels, ir_mc_index(&g, (uint32_t)x, (uint32_t)y, (uint32_t)z)) : __int_as_float(0x7fc00000);
  }
}

static __device__ __forceinline__ bool cell_exists(const ir_mc_grid &g, int x, int y, int z) {
  return x >= 0 && y >= 0 && z >= 0 && x + 1 < (int)g.dims[0] && y + 1 < (int)g.dims[1] && z + 1 < (int)g.dims[2];
}

/* Exact path: marks the drawn cells with lowest corner -1 .. 15 (local). */
static __device__ void mark_drawn(const ir_mc_grid &g, const ir_mc_rules &r, const uint32_t o[3], const float *s_v,
                                  uint8_t *s_drawn) {
  for (int i = threadIdx.x; i < DRAWN_SIDE * DRAWN_SIDE * DRAWN_SIDE; i += blockDim.x) {
    int x = i % DRAWN_SIDE - 1, y = i / DRAWN_SIDE % DRAWN_SIDE - 1, z = i / (DRAWN_SIDE * DRAWN_SIDE) - 1;
    int gx = (int)o[0] + x, gy = (int)o[1] + y, gz = (int)o[2] + z;
    bool drawn = cell_exists(g, gx, gy, gz) && ir_mc_clip_keeps(&r, (uint32_t)gx, (uint32_t)gy, (uint32_t)gz);
    for (int k = 0; k < 8 && drawn; k++) {
      uint32_t c[3];
      ir_mc_corner_offset(k, c);
      drawn = ir_mc_finite(s_v[halo_index(x + (int)c[0], y + (int)c[1], z + (int)c[2])]);
    }
    s_drawn[i] = drawn;
  }
}

/* Bits 0-2: the edges leaving local point (x, y, z) along x, y, z that carry a vertex. */
template <bool EXACT>
static __device__ __forceinline__ unsigned vertex_edges(const ir_mc_grid &g, const uint32_t o[3], int x, int y, int z,
                                                        float iso, const float *s_v, const uint8_t *s_drawn) {
  int p[3] = {x, y, z};
  float f0 = s_v[halo_index(x, y, z)];
  unsigned bits = 0;
  for (int axis = 0; axis < 3; axis++) {
    if (o[axis] + (uint32_t)p[axis] + 1 >= g.dims[axis]) continue;
    int q[3] = {x, y, z};
    q[axis]++;
    if (!ir_mc_crossed(f0, s_v[halo_index(q[0], q[1], q[2])], iso)) continue;
    bool drawn = !EXACT;
    if (EXACT) {
      int b = (axis + 1) % 3, c = (axis + 2) % 3;
      for (int db = 0; db < 2 && !drawn; db++)
        for (int dc = 0; dc < 2 && !drawn; dc++) {
          int cell[3] = {x, y, z};
          cell[b] -= db;
          cell[c] -= dc;
          drawn = s_drawn[drawn_index(cell[0], cell[1], cell[2])] != 0;
        }
    }
    if (drawn) bits |= 1u << axis;
  }
  return bits;
}

/* Triangles of the cell whose lowest corner is local point (x, y, z); 0 when it is not drawn. */
template <bool EXACT>
static __device__ __forceinline__ int cell_triangles(const ir_mc_grid &g, const uint32_t o[3], int x, int y, int z,
                                                     float iso, const uint64_t *__restrict__ cases, const float *s_v,
                                                     const uint8_t *s_drawn) {
  if (EXACT ? !s_drawn[drawn_index(x, y, z)] : !cell_exists(g, (int)o[0] + x, (int)o[1] + y, (int)o[2] + z)) return 0;
  int c = 0;
  for (int k = 0; k < 8; k++) {
    uint32_t d[3];
    ir_mc_corner_offset(k, d);
    c |= ir_mc_inside(s_v[halo_index(x + (int)d[0], y + (int)d[1], z + (int)d[2])], iso) ? 1 << k : 0;
  }
  return ir_mc_case_triangles(__ldg(cases + c));
}

/* Hands on the brick's candidates: items j of thread t are local point t + 512 j. */
static __device__ __forceinline__ void emit_items(const ir_gx_out &o, const bool (&keep)[IR_GX_POINTS_PER_THREAD],
                                                  const uint32_t (&value)[IR_GX_POINTS_PER_THREAD]) {
  switch (o.mode) {
  case IR_GX_INK_COMPACT:
    ir_ink_compact_emit_items<IR_GX_POINTS_PER_THREAD>(keep, value, blockIdx.x, o.list, o.count, o.scan);
    break;
  case IR_GX_INK_COLLATE:
#pragma unroll
    for (int j = 0; j < IR_GX_POINTS_PER_THREAD; j++) ir_ink_collate_emit(keep[j], value[j], o.list, o.count);
    break;
  case IR_GX_FLAGS:
#pragma unroll
    for (int j = 0; j < IR_GX_POINTS_PER_THREAD; j++) o.flags[value[j]] = keep[j] ? 1 : 0;
    break;
  default:
#pragma unroll
    for (int j = 0; j < IR_GX_POINTS_PER_THREAD; j++) {
      o.list[value[j]] = value[j];
      ir_gx_append_removal(!keep[j], value[j], o.remove, o.count);
    }
    break;
  }
}

/* Packs a warp's 32 triangle counts (lane i: cell i of the group) into four nibble words, in lane
 * 0, and returns their sum in every lane. */
static __device__ __forceinline__ unsigned pack_nibbles(unsigned count, uint4 *words) {
  unsigned lane = threadIdx.x & 31u;
  unsigned w = count << (4 * (lane & 7u));
  for (int d = 1; d < 8; d <<= 1) w |= __shfl_xor_sync(0xffffffffu, w, d);
  words->x = __shfl_sync(0xffffffffu, w, 0);
  words->y = __shfl_sync(0xffffffffu, w, 8);
  words->z = __shfl_sync(0xffffffffu, w, 16);
  words->w = __shfl_sync(0xffffffffu, w, 24);
  unsigned sum = count;
  for (int d = 16; d > 0; d >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, d);
  return sum;
}

template <int TYPE, bool EXACT>
static __global__ void __launch_bounds__(IR_GX_CLASSIFY_THREADS)
    classify_kernel(ir_mc_grid g, ir_mc_rules r, float iso, const void *__restrict__ voxels,
                    const uint64_t *__restrict__ cases, ir_gx_tables t, ir_gx_out points_out, ir_gx_out cells_out) {
  __shared__ float s_v[IR_GX_HALO * IR_GX_HALO * IR_GX_HALO];
  __shared__ uint8_t s_drawn[EXACT ? DRAWN_SIDE * DRAWN_SIDE * DRAWN_SIDE : 1];
  __shared__ uint32_t s_mask[IR_MC_EDGE_WORDS];
  __shared__ uint32_t s_group[IR_MC_CELL_GROUPS];
  __shared__ unsigned s_scan[33];
  const uint32_t slot = blockIdx.x, brick = t.active[slot];
  uint32_t o[3];
  ir_gx_brick_origin(g, brick, o);
  load_brick<TYPE>(g, voxels, o, s_v);
  __syncthreads();
  if (EXACT) {
    mark_drawn(g, r, o, s_v, s_drawn);
    __syncthreads();
  }
  const unsigned lane = threadIdx.x & 31u;
  bool point_keep[IR_GX_POINTS_PER_THREAD], cell_keep[IR_GX_POINTS_PER_THREAD];
  uint32_t value[IR_GX_POINTS_PER_THREAD];
#pragma unroll
  for (int j = 0; j < IR_GX_POINTS_PER_THREAD; j++) {
    uint32_t l = threadIdx.x + IR_GX_CLASSIFY_THREADS * j, q = l / 32;
    int x = (int)(l % IR_MC_BRICK), y = (int)(l / IR_MC_BRICK % IR_MC_BRICK), z = (int)(l / (IR_MC_BRICK * IR_MC_BRICK));
    bool in = o[0] + x < g.dims[0] && o[1] + y < g.dims[1] && o[2] + z < g.dims[2];
    unsigned bits = in ? vertex_edges<EXACT>(g, o, x, y, z, iso, s_v, s_drawn) : 0u;
    unsigned tris = in ? (unsigned)cell_triangles<EXACT>(g, o, x, y, z, iso, cases, s_v, s_drawn) : 0u;
    for (int axis = 0; axis < 3; axis++) {
      unsigned word = __ballot_sync(0xffffffffu, (bits >> axis) & 1u);
      if (lane == 0) s_mask[axis * IR_MC_CELL_GROUPS + q] = word;
    }
    uint4 nibbles;
    unsigned sum = pack_nibbles(tris, &nibbles);
    if (lane == 0) {
      t.cell_nibbles[(size_t)slot * IR_MC_CELL_GROUPS + q] = nibbles;
      s_group[q] = sum;
    }
    point_keep[j] = bits != 0;
    cell_keep[j] = tris != 0;
    value[j] = slot * IR_MC_BRICK_POINTS + l;
  }
  __syncthreads();
  /* Edge table: vertices in the earlier words of the brick. */
  unsigned mask = threadIdx.x < IR_MC_EDGE_WORDS ? s_mask[threadIdx.x] : 0u, prefix;
  unsigned vertices = ir_block_scan(__popc(mask), 6, s_scan, &prefix);
  if (threadIdx.x < IR_MC_EDGE_WORDS) t.edges[(size_t)slot * IR_MC_EDGE_WORDS + threadIdx.x] = make_uint2(mask, prefix);
  __syncthreads(); /* s_scan is reused */
  unsigned group = threadIdx.x < IR_MC_CELL_GROUPS ? s_group[threadIdx.x] : 0u;
  unsigned triangles = ir_block_scan(group, 8, s_scan, &prefix);
  if (threadIdx.x < IR_MC_CELL_GROUPS) t.cell_prefix[(size_t)slot * IR_MC_CELL_GROUPS + threadIdx.x] = prefix;
  if (threadIdx.x == 0) {
    t.vcount[brick] = vertices;
    t.tcount[brick] = triangles;
  }
  emit_items(points_out, point_keep, value);
  emit_items(cells_out, cell_keep, value);
}

template <int TYPE>
static void launch_classify_typed(bool exact, dim3 grid, cudaStream_t stream, const ir_mc_grid &g,
                                  const ir_mc_rules &r, float iso, const void *voxels, const uint64_t *cases,
                                  const ir_gx_tables &t, const ir_gx_out &points, const ir_gx_out &cells) {
  if (exact)
    classify_kernel<TYPE, true><<<grid, IR_GX_CLASSIFY_THREADS, 0, stream>>>(g, r, iso, voxels, cases, t, points, cells);
  else
    classify_kernel<TYPE, false><<<grid, IR_GX_CLASSIFY_THREADS, 0, stream>>>(g, r, iso, voxels, cases, t, points, cells);
}

cudaError_t ir_gx_launch_classify(const ir_mc_grid &g, const ir_mc_rules &r, float iso, const void *voxels,
                                  const uint64_t *cases, const ir_gx_tables &t, uint32_t active,
                                  const ir_gx_out &points, const ir_gx_out &cells, cudaStream_t stream) {
  dim3 grid(active);
  bool exact = r.exact != 0;
  switch (g.type) {
  case IR_VOXEL_UINT8: launch_classify_typed<IR_VOXEL_UINT8>(exact, grid, stream, g, r, iso, voxels, cases, t, points, cells); break;
  case IR_VOXEL_UINT16: launch_classify_typed<IR_VOXEL_UINT16>(exact, grid, stream, g, r, iso, voxels, cases, t, points, cells); break;
  case IR_VOXEL_INT16: launch_classify_typed<IR_VOXEL_INT16>(exact, grid, stream, g, r, iso, voxels, cases, t, points, cells); break;
  default: launch_classify_typed<IR_VOXEL_FLOAT32>(exact, grid, stream, g, r, iso, voxels, cases, t, points, cells); break;
  }
  return cudaGetLastError();
}
