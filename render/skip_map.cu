/* The walk's skip distances on the GPU (skip.cuh): a seed kernel from the cells' ranges and one
 * kernel per axis, each cell a thread. Rebuilt only when the isovalues, the walk's cells or the
 * volume change (gpu_renderer.cu), so its cost is not paid per frame. */
#include "render/gpu_internal.cuh"

#define SKIP_BLOCK 256

static __global__ void skip_seed_kernel(const ir_brick_range *__restrict__ ranges, size_t n, ir_iso_set iso,
                                        uint8_t *__restrict__ out) {
  size_t c = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (c < n) out[c] = ir_skip_seed(ranges[c], &iso);
}

static __global__ void skip_pass_kernel(const uint8_t *__restrict__ in, uint8_t *__restrict__ out, uint3 cells,
                                        int axis) {
  size_t n = (size_t)cells.x * cells.y * cells.z;
  size_t c = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= n) return;
  uint32_t x = (uint32_t)(c % cells.x), y = (uint32_t)(c / cells.x % cells.y), z = (uint32_t)(c / ((size_t)cells.x * cells.y));
  size_t stride = axis == 0 ? 1 : axis == 1 ? cells.x : (size_t)cells.x * cells.y;
  int i = (int)(axis == 0 ? x : axis == 1 ? y : z), len = (int)(axis == 0 ? cells.x : axis == 1 ? cells.y : cells.z);
  out[c] = ir_skip_pass_at(in, c - (size_t)i * stride, stride, len, i);
}

cudaError_t ir_skip_map_launch(const ir_brick_range *d_ranges, const uint32_t cells[3], const ir_iso_set *iso,
                               uint8_t *d_map, uint8_t *d_tmp, cudaStream_t stream) {
  size_t n = (size_t)cells[0] * cells[1] * cells[2];
  if (n == 0) return cudaSuccess;
  unsigned blocks = (unsigned)((n + SKIP_BLOCK - 1) / SKIP_BLOCK);
  uint3 c3 = make_uint3(cells[0], cells[1], cells[2]);
  /* seed -> tmp, x -> map, y -> tmp, z -> map */
  skip_seed_kernel<<<blocks, SKIP_BLOCK, 0, stream>>>(d_ranges, n, *iso, d_tmp);
  skip_pass_kernel<<<blocks, SKIP_BLOCK, 0, stream>>>(d_tmp, d_map, c3, 0);
  skip_pass_kernel<<<blocks, SKIP_BLOCK, 0, stream>>>(d_map, d_tmp, c3, 1);
  skip_pass_kernel<<<blocks, SKIP_BLOCK, 0, stream>>>(d_tmp, d_map, c3, 2);
  return cudaGetLastError();
}
