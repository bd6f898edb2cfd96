/* Shading kernel (InK §3.1.6): Blinn-Phong with a headlight (ray_math.cuh) for each hit of the
 * compacted hit list, in its surface's colour (or the colour map's), composited behind the
 * translucent surfaces the ray passed and written as RGBA8. */
#include "render/gpu_internal.cuh"

static __global__ void shade_kernel(const ir_gpu_frame *__restrict__ frame, ir_ray_buffers b,
                                    const uint32_t *__restrict__ in, const uint32_t *__restrict__ count) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= *count) return;
  uint32_t ray = in[i];
  const ir_trace_params &p = frame->p;
  ir_ray r = ir_camera_ray(&p.cam, ray);
  float4 h = b.hit[ray];
  ir_paint pt;
  float first_t;
  ir_paint_load(p, b, ray, &pt, &first_t);
  ir_hit hit;
  hit.t = h.x;
  hit.surf = b.hit_surf[ray];
  b.image[ray] = ir_finish_hit(&p, &r, hit, ir_v3(h.y, h.z, h.w), &pt, 0); /* no lit frames here (render.c) */
  b.depth[ray] = first_t < INFINITY ? first_t : h.x;
}

cudaError_t ir_shade_launch(const ir_gpu_frame *d_frame, ir_ray_buffers b, const uint32_t *in, const uint32_t *n,
                            unsigned grid, cudaStream_t stream, cudaLaunchAttribute *attr, int attr_count) {
  return ir_launch(shade_kernel, grid, stream, attr, attr_count, d_frame, b, in, n);
}
