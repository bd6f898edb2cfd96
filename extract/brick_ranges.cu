/* The value range of every brick (the finite voxels of its 16^3 points and the next point along
 * each axis: the ends of its edges and the corners of its cells), computed once per grid, and
 * whether the grid holds any NaN or infinite voxel (which turns on the exact path of
 * classification). The same ranges as the host's (host_util.c), so the CPU and the GPU skip the
 * same bricks.
 *
 * One pass over the volume at the memory's speed: a block takes a slab of 32 bricks along x at one
 * (y, z) of the brick grid. Lane l of each warp owns the slab's brick l and reads its 17 points of
 * a row (its 16 and the next brick's first), so a warp reads 512 consecutive voxels of
 * a row, and the slab's 17 x 17 rows are dealt round the warps; a lane's range over its rows,
 * then the warps' ranges of each brick reduced in shared memory. Where every row starts on 16
 * bytes and holds whole bricks, a lane reads its 16 points as 16-byte words. */
#include "extract/gpu_internal.cuh"

#define IR_GX_RANGE_WARPS (IR_GX_RANGE_THREADS / 32)

template <int TYPE>
static __device__ __forceinline__ size_t voxel_bytes() {
  return TYPE == IR_VOXEL_UINT8 ? 1 : (TYPE == IR_VOXEL_FLOAT32 ? 4 : 2);
}

/* Adds voxel value v to the range [*lo, *hi] of finite voxels, or marks *bad. */
static __device__ __forceinline__ void range_add(float v, float *lo, float *hi, bool *bad) {
  if (!ir_mc_finite(v)) {
    *bad = true;
    return;
  }
  *lo = fminf(*lo, v);
  *hi = fmaxf(*hi, v);
}

/* The 16 voxels of one brick row, from 16 / sizeof(voxel) 16-byte words at p (aligned). */
template <int TYPE>
static __device__ __forceinline__ void range_add_words(const void *p, float *lo, float *hi, bool *bad) {
  const uint4 *w = (const uint4 *)p;
  if (TYPE == IR_VOXEL_UINT8) {
    uint4 a = __ldg(w);
    uint32_t u[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
      for (int b = 0; b < 4; b++) range_add((float)(u[i] >> (8 * b) & 0xffu), lo, hi, bad);
  } else if (TYPE == IR_VOXEL_UINT16 || TYPE == IR_VOXEL_INT16) {
#pragma unroll
    for (int q = 0; q < 2; q++) {
      uint4 a = __ldg(w + q);
      uint32_t u[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
      for (int i = 0; i < 4; i++)
#pragma unroll
        for (int b = 0; b < 2; b++) {
          uint32_t h = u[i] >> (16 * b) & 0xffffu;
          range_add(TYPE == IR_VOXEL_UINT16 ? (float)h : (float)(int16_t)h, lo, hi, bad);
        }
    }
  } else {
#pragma unroll
    for (int q = 0; q < 4; q++) {
      uint4 a = __ldg(w + q);
      range_add(__uint_as_float(a.x), lo, hi, bad);
      range_add(__uint_as_float(a.y), lo, hi, bad);
      range_add(__uint_as_float(a.z), lo, hi, bad);
      range_add(__uint_as_float(a.w), lo, hi, bad);
    }
  }
}

template <int TYPE, bool WORDS>
static __global__ void __launch_bounds__(IR_GX_RANGE_THREADS)
    brick_ranges_kernel(ir_mc_grid g, const void *__restrict__ voxels, ir_mc_range *__restrict__ ranges,
                        int *nonfinite) {
  __shared__ float s_lo[IR_GX_RANGE_WARPS][32], s_hi[IR_GX_RANGE_WARPS][32];
  __shared__ int s_bad;
  const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  /* Block b: slab b % slabs along x, brick row b / slabs of the (y, z) brick grid. */
  const uint32_t slabs = (g.bricks[0] + 31u) / 32u, yz = blockIdx.x / slabs;
  const uint32_t bx = blockIdx.x % slabs * 32u + lane, by = yz % g.bricks[1], bz = yz / g.bricks[1];
  /* Each axis: the brick's first point and its count of points (to the next brick's first, or
   * the grid's last). */
  const uint32_t x0 = bx * IR_MC_BRICK, y0 = by * IR_MC_BRICK, z0 = bz * IR_MC_BRICK;
  const uint32_t ny = min(y0 + IR_MC_BRICK, g.dims[1] - 1) - y0 + 1, nz = min(z0 + IR_MC_BRICK, g.dims[2] - 1) - z0 + 1;
  if (threadIdx.x == 0) s_bad = 0;
  __syncthreads();
  float lo = INFINITY, hi = -INFINITY;
  bool bad = false;
  if (bx < g.bricks[0]) {
    const uint32_t x_last = min(x0 + IR_MC_BRICK, g.dims[0] - 1);
    const uint32_t rows = ny * nz;
#pragma unroll 2
    for (uint32_t r = warp; r < rows; r += IR_GX_RANGE_WARPS) {
      const size_t row = ir_mc_index(&g, 0, y0 + r % ny, z0 + r / ny);
      if (WORDS) {
        /* Whole bricks along x (dims[0] a multiple of 16): 16 points as words, then the next
         * brick's first, if any. */
        range_add_words<TYPE>((const char *)voxels + (row + x0) * voxel_bytes<TYPE>(), &lo, &hi, &bad);
        if (x_last > x0 + IR_MC_BRICK - 1) range_add(ir_gx_load<TYPE>(voxels, row + x_last), &lo, &hi, &bad);
      } else {
        for (uint32_t x = x0; x <= x_last; x++) range_add(ir_gx_load<TYPE>(voxels, row + x), &lo, &hi, &bad);
      }
    }
  }
  if (bad) s_bad = 1;
  s_lo[warp][lane] = lo;
  s_hi[warp][lane] = hi;
  __syncthreads();
  if (warp == 0 && bx < g.bricks[0]) {
    for (uint32_t w = 1; w < IR_GX_RANGE_WARPS; w++) lo = fminf(lo, s_lo[w][lane]), hi = fmaxf(hi, s_hi[w][lane]);
    ranges[bx + (size_t)g.bricks[0] * (by + (size_t)g.bricks[1] * bz)] = ir_mc_range{lo, hi};
  }
  if (threadIdx.x == 0 && s_bad) atomicOr(nonfinite, 1);
}

template <int TYPE>
static void launch_typed(const ir_mc_grid &g, const void *voxels, ir_mc_range *ranges, int *nonfinite, unsigned grid,
                         cudaStream_t stream) {
  /* 16-byte words: every row starts on 16 bytes (the base aligned, a row a multiple of 16 bytes)
   * and holds whole bricks (dims[0] a multiple of 16, so no brick's 16 points run past it). */
  const bool words = (uintptr_t)voxels % 16 == 0 && g.dims[0] % IR_MC_BRICK == 0;
  dim3 block(IR_GX_RANGE_THREADS);
  if (words) brick_ranges_kernel<TYPE, true><<<grid, block, 0, stream>>>(g, voxels, ranges, nonfinite);
  else brick_ranges_kernel<TYPE, false><<<grid, block, 0, stream>>>(g, voxels, ranges, nonfinite);
}

cudaError_t ir_gx_launch_ranges(const ir_mc_grid &g, const void *voxels, ir_mc_range *ranges, int *nonfinite,
                                cudaStream_t stream) {
  /* A block per slab: at most one per brick, and set_grid refuses 2^31 bricks. */
  unsigned grid = (unsigned)(((size_t)g.bricks[0] + 31u) / 32u * g.bricks[1] * g.bricks[2]);
  switch (g.type) {
  case IR_VOXEL_UINT8: launch_typed<IR_VOXEL_UINT8>(g, voxels, ranges, nonfinite, grid, stream); break;
  case IR_VOXEL_UINT16: launch_typed<IR_VOXEL_UINT16>(g, voxels, ranges, nonfinite, grid, stream); break;
  case IR_VOXEL_INT16: launch_typed<IR_VOXEL_INT16>(g, voxels, ranges, nonfinite, grid, stream); break;
  default: launch_typed<IR_VOXEL_FLOAT32>(g, voxels, ranges, nonfinite, grid, stream); break;
  }
  return cudaGetLastError();
}
