/* The bricks' occupancy masks for a frame's isovalues (trace.cuh's two-level walk): one thread per
 * sub-cell, 64 to a brick, each testing its sub-cell's range; a warp's ballot gives 32 bits of the
 * mask, so a 64-thread brick writes its mask with two 32-bit stores and no atomics. Run when the
 * isovalues, the walk's kind or the volume change (gpu_renderer.cu), not every frame: 2M
 * sub-cells (16 MB of ranges) at 512^3, read once. The same masks as ir_brick_mask on the CPU. */
#include "render/gpu_internal.cuh"

#define IR_MASK_BLOCK 128 /* two bricks */

static __global__ void __launch_bounds__(IR_MASK_BLOCK)
    brick_masks_kernel(const ir_brick_range *__restrict__ cell_ranges, uint3 cells, uint3 bricks, ir_iso_set iso,
                       bool whole, uint32_t *__restrict__ masks) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  size_t brick = i / 64, total = (size_t)bricks.x * bricks.y * bricks.z;
  bool in = brick < total; /* no early return: the block meets at a barrier below */
  uint32_t local = (uint32_t)(i % 64);
  uint32_t bx = (uint32_t)(brick % bricks.x), by = (uint32_t)(brick / bricks.x % bricks.y),
           bz = (uint32_t)(brick / ((size_t)bricks.x * bricks.y));
  uint32_t x = bx * IR_SUBS_PER_BRICK + local % IR_SUBS_PER_BRICK,
           y = by * IR_SUBS_PER_BRICK + local / IR_SUBS_PER_BRICK % IR_SUBS_PER_BRICK,
           z = bz * IR_SUBS_PER_BRICK + local / (IR_SUBS_PER_BRICK * IR_SUBS_PER_BRICK);
  bool exists = in && x < cells.x && y < cells.y && z < cells.z, occupied = false;
  if (exists) {
    ir_brick_range r = cell_ranges[x + cells.x * ((size_t)y + cells.y * (size_t)z)];
    occupied = ir_iso_in_range(&iso, r.min, r.max);
  }
  /* `local` is the bit ir_sub_bit gives (x fastest, then y, then z): warp 2b of the block holds
   * bits 0-31 of its brick, warp 2b + 1 bits 32-63. */
  unsigned occ = __ballot_sync(0xffffffffu, occupied), ex = __ballot_sync(0xffffffffu, exists);
  unsigned warp = threadIdx.x / 32;
  if (whole) { /* the bricks alone: every existing sub-cell when any one is occupied */
    __shared__ unsigned warp_any[IR_MASK_BLOCK / 32];
    if (threadIdx.x % 32 == 0) warp_any[warp] = occ != 0u;
    __syncthreads();
    occ = (warp_any[warp] | warp_any[warp ^ 1u]) ? ex : 0u;
  }
  if (in && threadIdx.x % 32 == 0) masks[i / 32] = occ;
}

cudaError_t ir_brick_masks_launch(const ir_brick_range *d_cell_ranges, const uint32_t cells[3], const uint32_t bricks[3],
                                  const ir_iso_set *iso, bool whole, uint64_t *d_masks, cudaStream_t stream) {
  size_t threads = (size_t)bricks[0] * bricks[1] * bricks[2] * 64;
  unsigned grid = (unsigned)((threads + IR_MASK_BLOCK - 1) / IR_MASK_BLOCK);
  brick_masks_kernel<<<grid, IR_MASK_BLOCK, 0, stream>>>(d_cell_ranges, make_uint3(cells[0], cells[1], cells[2]),
                                                         make_uint3(bricks[0], bricks[1], bricks[2]), *iso, whole,
                                                         (uint32_t *)d_masks);
  return cudaGetLastError();
}
