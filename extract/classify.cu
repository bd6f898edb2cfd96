/* The counting half of a surface on the GPU: which bricks can hold it, and in each of those which
 * edges carry a vertex and which cells have triangles.
 *
 * Brick test: one thread per brick (value range, clip box and plane); the active bricks leave by
 * the chosen compaction method in its natural form (gpu_internal.cuh, ir_gx_out).
 *
 * Classification: one block per active brick reads the brick's voxels once, as bit rows (below),
 * classifies its 12288 edges and 4096 cells with bitwise operations on whole rows, and leaves:
 *   - its edge table (a bit per edge with a vertex, and the vertex count of the earlier 32-edge
 *     words) and vertex count;
 *   - its cell table (each cell's triangle count as a nibble, and the triangles of the earlier
 *     32-cell groups) and triangle count (one block scan gives both prefixes);
 *   - its slot in the brick -> slot map;
 *   - for the methods that generate from candidate streams: its candidate points (grid points
 *     with at least one vertex edge) and candidate cells (cells with triangles), each as
 *     slot * 4096 + local point, emitted in-kernel (InK-Collate's block atomic) or as flags / a
 *     removal list for an out-of-kernel call afterwards. InK-Compact's generation works per brick
 *     from the tables, so nothing is emitted for it.
 * What is compacted decides no number: vertex and triangle numbers come from the tables and the
 * counts scanned in brick order, so every method gives the same mesh.
 *
 * Exact path (EXACT): with clipping or non-finite voxels a cell is drawn only when it passes the
 * clip test and its corners are finite, and an edge carries a vertex only when a drawn cell
 * borders it; the block first marks the drawn cells among the 17^3 whose lowest corner lies in
 * -1..15 (the cells around its edges), as rows.
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

/* Inactive bricks also get their vertex and triangle counts zeroed here (classification writes
 * the active ones'), for the scan in brick order. */
static __global__ void __launch_bounds__(IR_GX_BRICK_THREADS)
    bricks_kernel(ir_mc_grid g, ir_mc_rules r, float iso, const ir_mc_range *__restrict__ ranges, uint32_t bricks,
                  ir_gx_out out, unsigned long long *__restrict__ vcount, unsigned long long *__restrict__ tcount) {
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
  if (in_range && !keep) vcount[b] = 0, tcount[b] = 0;
  emit_one(out, in_range, keep, b);
}

cudaError_t ir_gx_launch_bricks(const ir_mc_grid &g, const ir_mc_rules &r, float iso, const ir_mc_range *ranges,
                                size_t bricks, const ir_gx_out &out, const ir_gx_tables &t, cudaStream_t stream) {
  unsigned grid = (unsigned)((bricks + IR_GX_BRICK_THREADS - 1) / IR_GX_BRICK_THREADS);
  bricks_kernel<<<grid, IR_GX_BRICK_THREADS, 0, stream>>>(g, r, iso, ranges, (uint32_t)bricks, out, t.vcount, t.tcount);
  return cudaGetLastError();
}

/* ---- Classification --------------------------------------------------------------------------------- */
/* The block sees the brick's points -1 .. 16 along each axis as bit rows: for each row (y, z), a
 * word whose bit x + 1 is point x of the row. `inside` holds the tie rule, `valid` whether the point
 * lies in the grid and is finite. Everything classification decides is a few bitwise operations on
 * these rows: an edge is crossed where two valid neighbours differ in `inside`, a cell's case is
 * eight bits of four rows, a cell exists (fast path) where its eight corners are valid. So the
 * block reads every voxel once, straight into a ballot, and keeps 2.6 KB of rows instead of its
 * voxels as floats. */
#define ROWS (IR_GX_HALO * IR_GX_HALO)
static __device__ __forceinline__ int row_index(int y, int z) { return (y + 1) + IR_GX_HALO * (z + 1); }

#define DRAWN_SIDE (IR_MC_BRICK + 1) /* cells -1 .. 15 along each axis */
static __device__ __forceinline__ int drawn_index(int y, int z) { return (y + 1) + DRAWN_SIDE * (z + 1); }

/* Warp w takes rows w, w + 16, ...: lane x + 1 reads point x of the row. All of a thread's loads
 * are issued before the first ballot, so a block waits for memory once. The fast path reads no
 * point -1 (only the exact path's cells below the brick use them): 17 rows a side instead of 18,
 * and rows that start on the brick's first point, one 32-byte sector fewer each. */
#define ROW_WARPS (IR_GX_CLASSIFY_THREADS / 32)
template <int TYPE, bool EXACT>
static __device__ __forceinline__ void load_rows(const ir_mc_grid &g, const void *__restrict__ voxels,
                                                 const uint32_t o[3], float iso, uint32_t *s_inside,
                                                 uint32_t *s_valid) {
  constexpr int side = EXACT ? IR_GX_HALO : IR_GX_HALO - 1, first = EXACT ? -1 : 0, rows = side * side;
  constexpr int per_warp = (rows + ROW_WARPS - 1) / ROW_WARPS;
  static_assert(ROW_WARPS < side, "one wrap of the row per step at most");
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const int x = (int)o[0] + (int)lane - 1;
  const bool x_in = lane < IR_GX_HALO && (EXACT || lane > 0) && x >= 0 && x < (int)g.dims[0];
  float v[per_warp]; /* NaN where the point is not read: neither inside nor valid */
  int ly = (int)warp, lz = 0; /* row r = warp + 16 k = ly + side lz, stepped without a division */
#pragma unroll
  for (int k = 0; k < per_warp; k++) {
    const int y = (int)o[1] + first + ly, z = (int)o[2] + first + lz;
    const bool in = lz < side && x_in && y >= 0 && z >= 0 && y < (int)g.dims[1] && z < (int)g.dims[2];
    v[k] = in ? ir_gx_load<TYPE>(voxels, ir_mc_index(&g, (uint32_t)x, (uint32_t)y, (uint32_t)z)) : __int_as_float(0x7fc00000);
    ly += ROW_WARPS;
    if (ly >= side) ly -= side, lz++;
  }
  ly = (int)warp, lz = 0;
#pragma unroll
  for (int k = 0; k < per_warp; k++) {
    const unsigned inside = __ballot_sync(0xffffffffu, ir_mc_inside(v[k], iso));
    const unsigned valid = __ballot_sync(0xffffffffu, ir_mc_finite(v[k]));
    if (lane == 0 && lz < side) {
      const int at = row_index(first + ly, first + lz);
      s_inside[at] = inside, s_valid[at] = valid;
    }
    ly += ROW_WARPS;
    if (ly >= side) ly -= side, lz++;
  }
}

/* Exact path: the drawn cells with lowest corner -1 .. 15 (local), as rows (y, z) with bit x + 1
 * for cell x: the eight corners valid (in the grid and finite) and the centre kept by the clip. */
static __device__ void mark_drawn(const ir_mc_rules &r, const uint32_t o[3], const uint32_t *s_valid,
                                  uint32_t *s_drawn) {
  for (int i = threadIdx.x; i < DRAWN_SIDE * DRAWN_SIDE; i += blockDim.x) {
    const int y = i % DRAWN_SIDE - 1, z = i / DRAWN_SIDE - 1;
    const uint32_t corners = s_valid[row_index(y, z)] & s_valid[row_index(y + 1, z)] & s_valid[row_index(y, z + 1)] &
                             s_valid[row_index(y + 1, z + 1)];
    uint32_t drawn = corners & (corners >> 1) & ((1u << DRAWN_SIDE) - 1u), left = drawn;
    while (left) { /* a valid corner lies in the grid, so the cell's coordinates are not negative */
      const int bit = __ffs((int)left) - 1;
      left &= left - 1u;
      if (!ir_mc_clip_keeps(&r, o[0] + (uint32_t)bit - 1u, o[1] + (uint32_t)y, o[2] + (uint32_t)z)) drawn &= ~(1u << bit);
    }
    s_drawn[i] = drawn;
  }
}

/* Edge word w of the brick's edge mask (axis w / 128; points 32 (w % 128) .. + 31: two rows). */
template <bool EXACT>
static __device__ __forceinline__ uint32_t edge_word(unsigned w, const uint32_t *s_inside, const uint32_t *s_valid,
                                                     const uint32_t *s_drawn) {
  const int axis = (int)(w / IR_MC_CELL_GROUPS), q = (int)(w % IR_MC_CELL_GROUPS);
  const int z = q / 8, y0 = 2 * (q % 8);
  uint32_t word = 0;
#pragma unroll
  for (int h = 0; h < 2; h++) {
    const int y = y0 + h, at = row_index(y, z);
    const uint32_t a = s_inside[at], av = s_valid[at];
    uint32_t b, bv; /* the rows of the edges' far ends, bit x + 1 for point x */
    if (axis == 0) b = a >> 1, bv = av >> 1;
    else if (axis == 1) b = s_inside[row_index(y + 1, z)], bv = s_valid[row_index(y + 1, z)];
    else b = s_inside[row_index(y, z + 1)], bv = s_valid[row_index(y, z + 1)];
    uint32_t crossed = (a ^ b) & av & bv;
    if (EXACT) { /* and borders a drawn cell: the four cells around the edge */
      if (axis == 0) {
        crossed &= s_drawn[drawn_index(y, z)] | s_drawn[drawn_index(y - 1, z)] | s_drawn[drawn_index(y, z - 1)] |
                   s_drawn[drawn_index(y - 1, z - 1)];
      } else {
        const uint32_t around = s_drawn[drawn_index(y, z)] |
                                (axis == 1 ? s_drawn[drawn_index(y, z - 1)] : s_drawn[drawn_index(y - 1, z)]);
        crossed &= around | (around << 1); /* cells x and x - 1 */
      }
    }
    word |= ((crossed >> 1) & 0xffffu) << (16 * h);
  }
  return word;
}

/* Triangle counts of cells 8 i .. 8 i + 7 (of the brick's 4096, x fastest) as eight nibbles. */
template <bool EXACT>
static __device__ __forceinline__ uint32_t cell_word(unsigned i, const uint32_t *s_inside, const uint32_t *s_valid,
                                                     const uint32_t *s_drawn, const uint8_t *s_triangles) {
  const int z = (int)(i / 32), y = (int)(i / 2 % IR_MC_BRICK), shift = 8 * (int)(i % 2) + 1;
  const uint32_t a = s_inside[row_index(y, z)] >> shift, b = s_inside[row_index(y + 1, z)] >> shift,
                 c = s_inside[row_index(y, z + 1)] >> shift, d = s_inside[row_index(y + 1, z + 1)] >> shift;
  uint32_t drawn;
  if (EXACT) {
    drawn = s_drawn[drawn_index(y, z)] >> shift;
  } else { /* the cell exists: its eight corners lie in the grid */
    const uint32_t corners = s_valid[row_index(y, z)] & s_valid[row_index(y + 1, z)] & s_valid[row_index(y, z + 1)] &
                             s_valid[row_index(y + 1, z + 1)];
    drawn = (corners & (corners >> 1)) >> shift;
  }
  uint32_t word = 0;
#pragma unroll
  for (int k = 0; k < 8; k++) {
    /* Bourke's corners: 0 (0,0,0) 1 (1,0,0) 2 (1,1,0) 3 (0,1,0), 4..7 the same at z + 1. */
    const uint32_t c0 = (a >> k & 1u) | (a >> k & 2u) | (b >> k & 2u) << 1 | (b >> k & 1u) << 3 | (c >> k & 1u) << 4 |
                        (c >> k & 2u) << 4 | (d >> k & 2u) << 5 | (d >> k & 1u) << 7;
    const uint32_t n = (drawn >> k & 1u) ? s_triangles[c0] : 0u;
    word |= n << (4 * k);
  }
  return word;
}

/* Exclusive prefix over the block (thread order) of values whose total fits 32 bits; returns the
 * total. Ends synchronised. */
static __device__ __forceinline__ unsigned block_exclusive_sum(unsigned v, unsigned *s_warp, unsigned *total) {
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  unsigned inclusive = v;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const unsigned n = __shfl_up_sync(0xffffffffu, inclusive, d);
    if ((int)lane >= d) inclusive += n;
  }
  if (lane == 31) s_warp[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {
    unsigned w = lane < warps ? s_warp[lane] : 0u;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const unsigned n = __shfl_up_sync(0xffffffffu, w, d);
      if ((int)lane >= d) w += n;
    }
    s_warp[lane] = w;
  }
  __syncthreads();
  *total = s_warp[warps - 1];
  return (warp ? s_warp[warp - 1] : 0u) + inclusive - v;
}

/* Hands on the brick's candidates: items j of thread t are local point t + 512 j. */
static __device__ __forceinline__ void emit_items(const ir_gx_out &o, const bool (&keep)[IR_GX_POINTS_PER_THREAD],
                                                  const uint32_t (&value)[IR_GX_POINTS_PER_THREAD]) {
  switch (o.mode) {
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

/* EMIT: hand on the candidate points and cells (the generation kernels of one thread per
 * candidate); without it (InK-Compact, whose generation works per brick from the tables) the
 * block only adds its count of cells with triangles to cells_out.count, for the statistics. */
template <int TYPE, bool EXACT, bool EMIT>
static __global__ void __launch_bounds__(IR_GX_CLASSIFY_THREADS)
    classify_kernel(ir_mc_grid g, ir_mc_rules r, float iso, const void *__restrict__ voxels,
                    const uint64_t *__restrict__ cases, ir_gx_tables t, const uint32_t *active_count,
                    ir_gx_out points_out, ir_gx_out cells_out) {
  __shared__ uint32_t s_inside[ROWS], s_valid[ROWS];
  __shared__ uint32_t s_drawn[EXACT ? DRAWN_SIDE * DRAWN_SIDE : 1];
  __shared__ uint8_t s_triangles[256];
  __shared__ uint32_t s_mask[IR_MC_EDGE_WORDS];
  __shared__ uint32_t s_nibbles[IR_MC_BRICK_POINTS / 8];
  __shared__ uint32_t s_group[IR_MC_CELL_GROUPS];
  __shared__ unsigned s_warp[33];
  static_assert(IR_MC_BRICK_POINTS / 8 == IR_GX_CLASSIFY_THREADS, "one nibble word per thread");
  const uint32_t slot = blockIdx.x;
  if (active_count) { /* launched before the count was known: all of it or nothing */
    const uint32_t active = *active_count;
    if (active > gridDim.x || slot >= active) return;
  }
  const uint32_t brick = t.active[slot];
  uint32_t o[3];
  ir_gx_brick_origin(g, brick, o);
  if (threadIdx.x < 256) s_triangles[threadIdx.x] = (uint8_t)ir_mc_case_triangles(__ldg(cases + threadIdx.x));
  load_rows<TYPE, EXACT>(g, voxels, o, iso, s_inside, s_valid);
  __syncthreads();
  if (EXACT) {
    mark_drawn(r, o, s_valid, s_drawn);
    __syncthreads();
  }
  /* Cell table: thread i's nibble word is word i % 4 of group i / 4. */
  const uint32_t nibbles = cell_word<EXACT>(threadIdx.x, s_inside, s_valid, s_drawn, s_triangles);
  ((uint32_t *)t.cell_nibbles)[(size_t)slot * (IR_MC_BRICK_POINTS / 8) + threadIdx.x] = nibbles;
  s_nibbles[threadIdx.x] = nibbles;
  uint32_t sum = (nibbles & 0x0f0f0f0fu) + ((nibbles >> 4) & 0x0f0f0f0fu); /* bytes <= 10 */
  sum = (sum * 0x01010101u) >> 24;
  sum += __shfl_xor_sync(0xffffffffu, sum, 1);
  sum += __shfl_xor_sync(0xffffffffu, sum, 2);
  if (threadIdx.x % 4 == 0) s_group[threadIdx.x / 4] = sum;
  if (threadIdx.x < IR_MC_EDGE_WORDS) s_mask[threadIdx.x] = edge_word<EXACT>(threadIdx.x, s_inside, s_valid, s_drawn);
  __syncthreads();
  /* One scan for both tables: a word's vertices (<= 32, 12288 a brick) in the low half, a group's
   * triangles (<= 160, 20480 a brick) in the high half, so neither half carries into the other. */
  const unsigned w = threadIdx.x;
  const uint32_t mask = w < IR_MC_EDGE_WORDS ? s_mask[w] : 0u;
  unsigned totals;
  const unsigned prefix = block_exclusive_sum((unsigned)__popc(mask) | (w < IR_MC_CELL_GROUPS ? s_group[w] << 16 : 0u),
                                              s_warp, &totals);
  if (w < IR_MC_EDGE_WORDS) t.edges[(size_t)slot * IR_MC_EDGE_WORDS + w] = make_uint2(mask, prefix & 0xffffu);
  if (w < IR_MC_CELL_GROUPS) t.cell_prefix[(size_t)slot * IR_MC_CELL_GROUPS + w] = prefix >> 16;
  if (w == 0) {
    t.slot_of[brick] = slot; /* the brick -> slot map, read by generation */
    t.vcount[brick] = totals & 0xffffu;
    t.tcount[brick] = totals >> 16;
  }
  if constexpr (EMIT) {
    bool point_keep[IR_GX_POINTS_PER_THREAD], cell_keep[IR_GX_POINTS_PER_THREAD];
    uint32_t value[IR_GX_POINTS_PER_THREAD];
#pragma unroll
    for (int j = 0; j < IR_GX_POINTS_PER_THREAD; j++) {
      const uint32_t l = threadIdx.x + IR_GX_CLASSIFY_THREADS * j, q = l / 32;
      point_keep[j] = ((s_mask[q] | s_mask[IR_MC_CELL_GROUPS + q] | s_mask[2 * IR_MC_CELL_GROUPS + q]) >> (l % 32)) & 1u;
      cell_keep[j] = ((s_nibbles[l / 8] >> (4 * (l % 8))) & 15u) != 0;
      value[j] = slot * IR_MC_BRICK_POINTS + l;
    }
    emit_items(points_out, point_keep, value);
    emit_items(cells_out, cell_keep, value);
  } else { /* cells with triangles: nonzero nibbles */
    unsigned warp_cells = (unsigned)__popc((nibbles | nibbles >> 1 | nibbles >> 2 | nibbles >> 3) & 0x11111111u);
    for (int d = 16; d > 0; d >>= 1) warp_cells += __shfl_xor_sync(0xffffffffu, warp_cells, d);
    if ((threadIdx.x & 31u) == 0 && warp_cells) atomicAdd(cells_out.count, warp_cells);
  }
}

template <int TYPE, bool EXACT>
static void launch_classify_exact(bool emit, dim3 grid, cudaStream_t stream, const ir_mc_grid &g, const ir_mc_rules &r,
                                  float iso, const void *voxels, const uint64_t *cases, const ir_gx_tables &t,
                                  const uint32_t *active_count, const ir_gx_out &points, const ir_gx_out &cells) {
  if (emit)
    classify_kernel<TYPE, EXACT, true>
        <<<grid, IR_GX_CLASSIFY_THREADS, 0, stream>>>(g, r, iso, voxels, cases, t, active_count, points, cells);
  else
    classify_kernel<TYPE, EXACT, false>
        <<<grid, IR_GX_CLASSIFY_THREADS, 0, stream>>>(g, r, iso, voxels, cases, t, active_count, points, cells);
}

template <int TYPE>
static void launch_classify_typed(bool exact, bool emit, dim3 grid, cudaStream_t stream, const ir_mc_grid &g,
                                  const ir_mc_rules &r, float iso, const void *voxels, const uint64_t *cases,
                                  const ir_gx_tables &t, const uint32_t *active_count, const ir_gx_out &points,
                                  const ir_gx_out &cells) {
  if (exact) launch_classify_exact<TYPE, true>(emit, grid, stream, g, r, iso, voxels, cases, t, active_count, points, cells);
  else launch_classify_exact<TYPE, false>(emit, grid, stream, g, r, iso, voxels, cases, t, active_count, points, cells);
}

cudaError_t ir_gx_launch_classify(const ir_mc_grid &g, const ir_mc_rules &r, float iso, const void *voxels,
                                  const uint64_t *cases, const ir_gx_tables &t, uint32_t blocks,
                                  const uint32_t *active_count, const ir_gx_out &points, const ir_gx_out &cells,
                                  cudaStream_t stream) {
  dim3 grid(blocks);
  const bool exact = r.exact != 0, emit = points.mode != IR_GX_INK_COMPACT;
  switch (g.type) {
  case IR_VOXEL_UINT8: launch_classify_typed<IR_VOXEL_UINT8>(exact, emit, grid, stream, g, r, iso, voxels, cases, t, active_count, points, cells); break;
  case IR_VOXEL_UINT16: launch_classify_typed<IR_VOXEL_UINT16>(exact, emit, grid, stream, g, r, iso, voxels, cases, t, active_count, points, cells); break;
  case IR_VOXEL_INT16: launch_classify_typed<IR_VOXEL_INT16>(exact, emit, grid, stream, g, r, iso, voxels, cases, t, active_count, points, cells); break;
  default: launch_classify_typed<IR_VOXEL_FLOAT32>(exact, emit, grid, stream, g, r, iso, voxels, cases, t, active_count, points, cells); break;
  }
  return cudaGetLastError();
}
