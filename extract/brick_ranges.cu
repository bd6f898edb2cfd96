/* The value range of every brick (the finite voxels of its 16^3 points and the next point along
 * each axis: the ends of its edges and the corners of its cells), computed once per grid, and
 * whether the grid holds any NaN or infinite voxel (which turns on the exact path of
 * classification). One block per brick, a warp per row of it, a block reduction; the same ranges as the host's
 * (host_util.c), so the CPU and the GPU skip the same bricks. */
#include "extract/gpu_internal.cuh"

template <int TYPE>
static __global__ void __launch_bounds__(IR_GX_RANGE_THREADS)
    brick_ranges_kernel(ir_mc_grid g, const void *__restrict__ voxels, ir_mc_range *__restrict__ ranges,
                        int *nonfinite) {
  __shared__ float s_lo[IR_GX_RANGE_THREADS / 32], s_hi[IR_GX_RANGE_THREADS / 32];
  __shared__ int s_bad;
  uint32_t brick = blockIdx.x, o[3], n[3];
  ir_gx_brick_origin(g, brick, o);
  for (int k = 0; k < 3; k++) {
    uint32_t hi = o[k] + IR_MC_BRICK;
    if (hi > g.dims[k] - 1) hi = g.dims[k] - 1;
    n[k] = hi - o[k] + 1;
  }
  if (threadIdx.x == 0) s_bad = 0;
  __syncthreads();
  float lo = INFINITY, hi = -INFINITY;
  bool bad = false;
  /* A warp per row of the brick (up to 17 points along x, one a lane: consecutive addresses),
   * the rows (y, z) dealt round the warps: one division a row instead of two a voxel. */
  const uint32_t lane = threadIdx.x & 31u, rows = n[1] * n[2];
  if (lane < n[0])
    for (uint32_t r = threadIdx.x >> 5; r < rows; r += blockDim.x >> 5) {
      float v = ir_gx_load<TYPE>(voxels, ir_mc_index(&g, o[0] + lane, o[1] + r % n[1], o[2] + r / n[1]));
      if (!ir_mc_finite(v)) {
        bad = true;
        continue;
      }
      lo = fminf(lo, v);
      hi = fmaxf(hi, v);
    }
  for (int d = 16; d > 0; d >>= 1) {
    lo = fminf(lo, __shfl_xor_sync(0xffffffffu, lo, d));
    hi = fmaxf(hi, __shfl_xor_sync(0xffffffffu, hi, d));
  }
  if (bad) s_bad = 1;
  if ((threadIdx.x & 31u) == 0) s_lo[threadIdx.x >> 5] = lo, s_hi[threadIdx.x >> 5] = hi;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (unsigned w = 1; w < blockDim.x / 32; w++) lo = fminf(lo, s_lo[w]), hi = fmaxf(hi, s_hi[w]);
    ranges[brick] = ir_mc_range{lo, hi};
    if (s_bad) atomicOr(nonfinite, 1);
  }
}

cudaError_t ir_gx_launch_ranges(const ir_mc_grid &g, const void *voxels, ir_mc_range *ranges, int *nonfinite,
                                size_t bricks, cudaStream_t stream) {
  dim3 grid((unsigned)bricks), block(IR_GX_RANGE_THREADS);
  switch (g.type) {
  case IR_VOXEL_UINT8: brick_ranges_kernel<IR_VOXEL_UINT8><<<grid, block, 0, stream>>>(g, voxels, ranges, nonfinite); break;
  case IR_VOXEL_UINT16: brick_ranges_kernel<IR_VOXEL_UINT16><<<grid, block, 0, stream>>>(g, voxels, ranges, nonfinite); break;
  case IR_VOXEL_INT16: brick_ranges_kernel<IR_VOXEL_INT16><<<grid, block, 0, stream>>>(g, voxels, ranges, nonfinite); break;
  default: brick_ranges_kernel<IR_VOXEL_FLOAT32><<<grid, block, 0, stream>>>(g, voxels, ranges, nonfinite); break;
  }
  return cudaGetLastError();
}
