/* Traversal stage of the multi pipeline: each ray of the input list walks the brick grid from
 * the sample where it stopped (seg.x) to its next run of valid bricks, which it hands to
 * intersection as a range of samples (seg); a ray that leaves the volume first keeps the
 * background and is dropped (traversal -> intersection compaction). The walk reads the bricks'
 * skip distances (skip.cuh), a byte per brick, and no voxel. */
#include "render/gpu_internal.cuh"

static __global__ void walk_traverse_kernel(const ir_gpu_frame *__restrict__ frame, ir_ray_buffers b,
                                            const uint32_t *__restrict__ in, const uint32_t *__restrict__ count,
                                            ir_stage_out out) {
  uint32_t n = *count, i = blockIdx.x * blockDim.x + threadIdx.x;
  if (ir_block_past_count(n, out)) return;
  bool active = i < n, keep = false;
  uint32_t ray = 0;
  if (active) {
    ray = in[i];
    const ir_trace_params &p = frame->p;
    ir_ray r = ir_camera_ray(&p.cam, ir_tiled_pixel(ray, p.cam));
    ir_span s;
    ir_ray_span(&p, &r, &s);
    int32_t ka, kb;
    keep = ir_next_run(&p, &r, &s, (int32_t)b.seg[ray].x, (int)frame->run_bricks, &ka, &kb);
    if (keep) b.seg[ray] = make_uint2((uint32_t)ka, (uint32_t)kb);
  }
  ir_stage_emit(out, active, keep, ray, i);
}

cudaError_t ir_walk_traverse_launch(const ir_gpu_frame *d_frame, ir_ray_buffers b, const uint32_t *in,
                                    const uint32_t *n, ir_stage_out out, unsigned grid, cudaStream_t stream,
                                    cudaLaunchAttribute *attr, int attr_count) {
  return ir_launch(walk_traverse_kernel, grid, stream, attr, attr_count, d_frame, b, in, n, out);
}
