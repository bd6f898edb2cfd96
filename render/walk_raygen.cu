/* Ray generation of the multi pipeline (InK §3.1.3 with tiled ray ids): one thread per tiled ray
 * id; the ray is tested against the volume box, and rays that meet it go on to traversal with
 * seg.x = 0, the first sample of their grid. Every
 * pixel gets the background here; intersection writes only the hits. */
#include "render/gpu_internal.cuh"

static __global__ void walk_raygen_kernel(const ir_gpu_frame *__restrict__ frame, ir_ray_buffers b,
                                          ir_gpu_counters *counters, ir_stage_out out) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x, n = frame->rays;
  bool active = i < n, keep = false;
  if (active) {
    if (i == 0) counters->pixels = n;
    const ir_trace_params &p = frame->p;
    uint32_t pixel = ir_tiled_pixel(i, p.cam);
    if (pixel != 0xffffffffu) {
      ir_ray r = ir_camera_ray(&p.cam, pixel);
      ir_span s;
      keep = ir_ray_span(&p, &r, &s);
      if (keep) b.seg[i] = make_uint2(0, 0);
      b.image[pixel] = IR_BACKGROUND_RGBA;
      b.depth[pixel] = INFINITY;
      ir_paint_clear(p, b, pixel);
    }
  }
  ir_stage_emit(out, active, keep, i, i);
}

cudaError_t ir_walk_raygen_launch(const ir_gpu_frame *d_frame, ir_ray_buffers b, ir_gpu_counters *counters,
                                  ir_stage_out out, uint32_t rays, cudaStream_t stream) {
  unsigned grid = (rays + IR_RAYGEN_BLOCK - 1) / IR_RAYGEN_BLOCK;
  walk_raygen_kernel<<<grid, IR_RAYGEN_BLOCK, 0, stream>>>(d_frame, b, counters, out);
  return cudaGetLastError();
}
