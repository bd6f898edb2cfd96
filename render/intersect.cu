/* Iso-intersection kernel (InK §3.1.5): each ray pops the leaf on top of its stack and steps
 * through it (trace.cuh: half-voxel steps, crossing refined by linear interpolation plus one
 * regula falsi step, gradient normal); on a miss it peeks the stack and carries on while the
 * next item is a leaf. Two outputs, both compacted: hits to shading (with t and the normal
 * stored per ray), rays with an inner node on top back to traversal. */
#include "render/gpu_internal.cuh"

static __global__ void intersect_kernel(const ir_gpu_frame *__restrict__ frame, ir_ray_buffers b,
                                        const uint32_t *__restrict__ in, const uint32_t *__restrict__ count,
                                        ir_stage_out to_shade, ir_stage_out to_traverse) {
  uint32_t n = *count, i = blockIdx.x * blockDim.x + threadIdx.x;
  if (ir_block_past_count(n, to_shade)) return;
  bool active = i < n, hit = false, back = false;
  uint32_t ray = 0;
  if (active) {
    ray = in[i];
    ir_trace_params p = frame->p;
    ir_ray r = ir_camera_ray(&p.cam, ray);
    int sp = b.sp[ray];
    float t = 0.0f;
    int s = ir_intersect(&p, &r, b.stack + ray, b.stride, &sp, &t);
    b.sp[ray] = (uint8_t)sp;
    if (s == IR_INTERSECT_HIT) {
      ir_vec3 nrm = ir_hit_normal(&p, &r, t);
      b.hit[ray] = make_float4(t, nrm.x, nrm.y, nrm.z);
    }
    hit = s == IR_INTERSECT_HIT;
    back = s == IR_INTERSECT_TRAVERSE;
  }
  ir_stage_emit(to_shade, active, hit, ray, i);
  ir_stage_emit(to_traverse, active, back, ray, i);
}

cudaError_t ir_intersect_launch(const ir_gpu_frame *d_frame, ir_ray_buffers b, const uint32_t *in, const uint32_t *n,
                                ir_stage_out to_shade, ir_stage_out to_traverse, unsigned grid, cudaStream_t stream,
                                cudaLaunchAttribute *attr, int attr_count) {
  return ir_launch(intersect_kernel, grid, stream, attr, attr_count, d_frame, b, in, n, to_shade, to_traverse);
}
