/* BVH update kernel (InK §3.1.2): the explicit tree for this frame's isovalue, rebuilt every
 * frame from the brick ranges, bottom-up, with condensation (bvh.cuh has the rules).
 *
 * Departure from the paper: the paper runs one pass per level. Here a block owns a whole
 * subtree and walks its levels with __syncthreads() between them, so the update is two
 * launches instead of one per level (12 at 256^3, 15 at 512^3): the first launch builds every
 * subtree up to the level `split` (at most IR_SPLIT_NODES nodes, one block each), the second
 * builds the levels above it in a single block.
 */
#include "render/gpu_internal.cuh"

/* Nodes at the level where the work passes from many blocks to one: few enough that one block
 * does the levels above quickly, many enough to spread the lower levels over the GPU. */
#define IR_SPLIT_NODES 512u

static __device__ void update_level(const ir_bvh_layout &L, const ir_brick_range *ranges, ir_bvh_node *nodes,
                                    const ir_iso_set &iso, int level, const uint32_t lo[3], const uint32_t hi[3]) {
  uint32_t nx = hi[0] - lo[0], ny = hi[1] - lo[1], count = nx * ny * (hi[2] - lo[2]);
  for (uint32_t i = threadIdx.x; i < count; i += blockDim.x) {
    uint32_t x = lo[0] + i % nx, y = lo[1] + i / nx % ny, z = lo[2] + i / (nx * ny);
    nodes[ir_bvh_index(&L, level, x, y, z)] = level == 0 ? ir_bvh_leaf_update(&L, ranges, x, y, z, &iso)
                                                         : ir_bvh_inner_update(&L, nodes, level, x, y, z);
  }
}

/* Block b updates the subtree of node b of level `top`, levels `bottom` .. `top`. */
static __global__ void bvh_update_kernel(ir_bvh_layout L, const ir_brick_range *__restrict__ ranges,
                                         ir_bvh_node *nodes, const ir_gpu_frame *__restrict__ frame,
                                         int bottom, int top) {
  const ir_iso_set iso = frame->p.iso;
  uint32_t q[3] = {blockIdx.x % L.dims[top][0], blockIdx.x / L.dims[top][0] % L.dims[top][1],
                   blockIdx.x / (L.dims[top][0] * L.dims[top][1])};
  for (int level = bottom; level <= top; level++) {
    uint32_t shift[3] = {0, 0, 0}, lo[3], hi[3];
    for (int j = level + 1; j <= top; j++) shift[L.axis[j]]++;
    for (int k = 0; k < 3; k++) {
      lo[k] = q[k] << shift[k];
      hi[k] = min((q[k] + 1) << shift[k], L.dims[level][k]);
    }
    update_level(L, ranges, nodes, iso, level, lo, hi);
    __syncthreads(); /* the next level reads this one's nodes */
  }
}

cudaError_t ir_bvh_update_launch(const ir_bvh_layout *L, const ir_brick_range *d_ranges, ir_bvh_node *d_nodes,
                                 const ir_gpu_frame *d_frame, cudaStream_t stream) {
  int top = L->levels - 1, split = 0;
  while (split < top && L->dims[split][0] * L->dims[split][1] * L->dims[split][2] > IR_SPLIT_NODES) split++;
  unsigned blocks = L->dims[split][0] * L->dims[split][1] * L->dims[split][2];
  bvh_update_kernel<<<blocks, 128, 0, stream>>>(*L, d_ranges, d_nodes, d_frame, 0, split);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess || split == top) return e;
  bvh_update_kernel<<<1, 512, 0, stream>>>(*L, d_ranges, d_nodes, d_frame, split + 1, top);
  return cudaGetLastError();
}
