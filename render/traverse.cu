/* BVH traversal kernel (InK §3.1.4): each ray of the input list walks the tree from the stack
 * it carries (global memory, between kernels) until a leaf is on top (the ray goes on to the
 * intersection list: traversal -> intersection compaction) or the stack is empty (the ray
 * leaves the volume and keeps the background). */
#include "render/gpu_internal.cuh"

static __global__ void traverse_kernel(const ir_gpu_frame *__restrict__ frame, ir_ray_buffers b,
                                       const uint32_t *__restrict__ in, const uint32_t *__restrict__ count,
                                       ir_stage_out out) {
  uint32_t n = *count, i = blockIdx.x * blockDim.x + threadIdx.x;
  if (ir_block_past_count(n, out)) return;
  bool active = i < n, keep = false;
  uint32_t ray = 0;
  if (active) {
    ray = in[i];
    const ir_trace_params &p = frame->p;
    ir_ray r = ir_camera_ray(&p.cam, ray);
    int sp = b.sp[ray];
    keep = ir_traverse(&p, &r, b.stack + ray, b.stride, &sp) == IR_TRAVERSE_LEAF;
    b.sp[ray] = (uint8_t)sp;
  }
  ir_stage_emit(out, active, keep, ray, i);
}

cudaError_t ir_traverse_launch(const ir_gpu_frame *d_frame, ir_ray_buffers b, const uint32_t *in, const uint32_t *n,
                               ir_stage_out out, unsigned grid, cudaStream_t stream, cudaLaunchAttribute *attr,
                               int attr_count) {
  return ir_launch(traverse_kernel, grid, stream, attr, attr_count, d_frame, b, in, n, out);
}
