/* Iso-intersection kernel (InK §3.1.5): each ray pops the leaf on top of its stack and steps
 * through it (trace.cuh: half-voxel steps, crossing refined on the exact field, gradient by
 * central differences); on a miss it peeks the stack and carries on while the next item is a
 * leaf. Two outputs, both compacted: hits to shading (with t, the field's differences and the
 * surface stored per ray), rays with an inner node on top back to traversal. Hits on
 * translucent surfaces that leave the ray short of opaque are composited here and the ray goes
 * on (trace.cuh: ir_march_run_as); only the hit that ends a ray goes to shading. */
#include "render/gpu_internal.cuh"

/* One variant per trace mode (trace.cuh), as in the other pipelines. */
template <int Mode>
static __global__ void intersect_kernel(const ir_gpu_frame *__restrict__ frame, ir_ray_buffers b,
                                        const uint32_t *__restrict__ in, const uint32_t *__restrict__ count,
                                        ir_stage_out to_shade, ir_stage_out to_traverse) {
  uint32_t n = *count, i = blockIdx.x * blockDim.x + threadIdx.x;
  if (ir_block_past_count(n, to_shade)) return;
  bool active = i < n, hit = false, back = false;
  uint32_t ray = 0;
  if (active) {
    ray = in[i];
    const ir_trace_params &p = frame->p;
    ir_ray r = ir_camera_ray(&p.cam, ray);
    int sp = b.sp[ray];
    ir_paint pt;
    float first_t;
    ir_paint_load(p, b, ray, &pt, &first_t);
    float alpha_before = pt.a;
    ir_hit h;
    int32_t k_done = (int32_t)b.seg[ray].x;
    int s = ir_intersect(&p, &r, b.stack + ray, b.stride, &sp, &k_done, &pt, &first_t, &h, Mode);
    b.sp[ray] = (uint8_t)sp;
    b.seg[ray].x = (uint32_t)k_done;
    ir_paint_keep(b, ray, pt, alpha_before, first_t); /* translucent hits; shading adds the last */
    if (s == IR_INTERSECT_HIT) {
      ir_vec3 d = ir_hit_resolve_differences(&p, &r, &h, Mode);
      b.hit[ray] = make_float4(h.t, d.x, d.y, d.z);
      b.hit_surf[ray] = (uint8_t)h.surf;
    }
    hit = s == IR_INTERSECT_HIT;
    back = s == IR_INTERSECT_TRAVERSE;
  }
  ir_stage_emit(to_shade, active, hit, ray, i);
  ir_stage_emit(to_traverse, active, back, ray, i);
}

cudaError_t ir_intersect_launch(const ir_gpu_frame *d_frame, ir_ray_buffers b, const uint32_t *in, const uint32_t *n,
                                ir_stage_out to_shade, ir_stage_out to_traverse, unsigned grid, int mode,
                                cudaStream_t stream, cudaLaunchAttribute *attr, int attr_count) {
  switch (mode) {
  case 0: return ir_launch(intersect_kernel<0>, grid, stream, attr, attr_count, d_frame, b, in, n, to_shade, to_traverse);
  case 1: return ir_launch(intersect_kernel<1>, grid, stream, attr, attr_count, d_frame, b, in, n, to_shade, to_traverse);
  case 2: return ir_launch(intersect_kernel<2>, grid, stream, attr, attr_count, d_frame, b, in, n, to_shade, to_traverse);
  case 3: return ir_launch(intersect_kernel<3>, grid, stream, attr, attr_count, d_frame, b, in, n, to_shade, to_traverse);
  default: return cudaErrorInvalidValue; /* the paper's pipeline refuses lit frames before this */
  }
}
