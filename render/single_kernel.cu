/* The single-kernel baseline (InK §4, "Single-Kernel"): one thread per pixel runs the same
 * per-ray code as the multi-kernel pipeline (trace.cuh: ir_trace_pixel) with its stack in
 * local memory, so no compaction and no round trips, and an identical image. */
#include "render/gpu_internal.cuh"

static __global__ void single_kernel(const ir_gpu_frame *__restrict__ frame, uint32_t *__restrict__ image) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= frame->pixels) return;
  ir_trace_params p = frame->p;
  ir_bvh_node root = ir_load_node(p.nodes, p.root);
  if (!ir_bvh_valid(&root)) p.root = IR_BVH_NONE;
  uint32_t stack[IR_BVH_MAX_LEVELS];
  image[i] = ir_trace_pixel(&p, i, stack, NULL);
}

cudaError_t ir_single_kernel_launch(const ir_gpu_frame *d_frame, uint32_t *image, uint32_t pixels, cudaStream_t stream) {
  return ir_launch(single_kernel, ir_grid_for(pixels), stream, NULL, 0, d_frame, image);
}
