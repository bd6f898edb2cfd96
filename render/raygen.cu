/* Ray generation kernel (InK §3.1.3): one ray per pixel of the frame's window (row-major; the
 * whole image without one), tested against the volume bounds;
 * rays that miss are compacted away (generation -> traversal, the first compaction stage).
 * Every pixel gets the background here, so the shading stage only writes hits. */
#include "render/gpu_internal.cuh"

static __global__ void raygen_kernel(const ir_gpu_frame *__restrict__ frame, ir_ray_buffers b,
                                     ir_gpu_counters *counters, ir_stage_out out) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x, n = frame->pixels;
  bool active = i < n, keep = false;
  uint32_t pixel = 0;
  if (active) {
    if (i == 0) counters->pixels = n;
    const ir_trace_params &p = frame->p;
    pixel = ir_window_pixel(i, p.cam);
    ir_bvh_node root = ir_load_node(p.nodes, p.root);
    int sp = 0;
    keep = ir_ray_start(&p, pixel, b.stack + pixel, b.stride, &sp);
    if (!ir_bvh_valid(&root)) sp = 0; /* no valid brick: the stack starts empty */
    if (keep) {
      b.sp[pixel] = (uint8_t)sp;
      b.seg[pixel].x = 0; /* the last sample marched (ir_intersect) */
    }
    b.image[pixel] = IR_BACKGROUND_RGBA;
    b.depth[pixel] = INFINITY;
    ir_paint_clear(p, b, pixel);
  }
  /* The ray's id is its pixel; the generation list is over the window's pixels. */
  ir_stage_emit(out, active, keep, pixel, i);
}

cudaError_t ir_raygen_launch(const ir_gpu_frame *d_frame, ir_ray_buffers b, ir_gpu_counters *counters,
                             ir_stage_out out, uint32_t pixels, cudaStream_t stream) {
  unsigned grid = (pixels + IR_RAYGEN_BLOCK - 1) / IR_RAYGEN_BLOCK;
  raygen_kernel<<<grid, IR_RAYGEN_BLOCK, 0, stream>>>(d_frame, b, counters, out);
  return cudaGetLastError();
}
