/* Tail finish (an option beyond the paper, off by default: ir_frame_desc.tail_rays): once no
 * more than tail_rays rays are left to traverse, one kernel runs the rest of each ray's
 * traversal/intersection loop and shades its hit (the per-ray code of trace.cuh, so the image
 * does not change). The last rounds of the multi-kernel loop carry few rays each, and every one
 * costs a full set of launches: this trades them for one kernel. */
#include "render/gpu_internal.cuh"

static __global__ void tail_finish_kernel(const ir_gpu_frame *__restrict__ frame, ir_ray_buffers b,
                                          const uint32_t *__restrict__ in, ir_gpu_counters *counters) {
  uint32_t n = counters->trav_in, hits = 0;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    uint32_t ray = in[i];
    const ir_trace_params &p = frame->p;
    const int mode = ir_trace_mode(&p) & ~IR_TRACE_LIGHT; /* the paper's pipeline draws no lit frames */
    ir_ray r = ir_camera_ray(&p.cam, ray);
    int sp = b.sp[ray];
    ir_paint pt;
    float first_t;
    ir_paint_load(p, b, ray, &pt, &first_t);
    float alpha_before = pt.a;
    bool ended = false;
    int32_t k_done = (int32_t)b.seg[ray].x;
    while (ir_traverse(&p, &r, b.stack + ray, b.stride, &sp) == IR_TRAVERSE_LEAF) {
      ir_hit h;
      int s = ir_intersect(&p, &r, b.stack + ray, b.stride, &sp, &k_done, &pt, &first_t, &h, mode);
      if (s == IR_INTERSECT_HIT) {
        b.image[ray] = ir_end_at_hit(&p, &r, h, &pt, &first_t, mode);
        b.depth[ray] = first_t;
        ended = true;
        hits++;
      }
      if (s != IR_INTERSECT_TRAVERSE) break;
    }
    if (!ended) ir_paint_keep(b, ray, pt, alpha_before, first_t);
  }
  if (hits) atomicAdd(&counters->hits, hits);
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    counters->tail = n;
    if (counters->round == 0) counters->generated = n; /* no loop round ran to record it */
  }
}

cudaError_t ir_tail_finish_launch(const ir_gpu_frame *d_frame, ir_ray_buffers b, const uint32_t *in,
                                  ir_gpu_counters *counters, uint32_t max_rays, cudaStream_t stream) {
  /* Grid-stride over the count on the device: sized for max_rays, at least one block. */
  return ir_launch(tail_finish_kernel, ir_grid_for(max_rays), stream, NULL, 0, d_frame, b, in, counters);
}
