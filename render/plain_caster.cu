/* The plain macrocell caster: a benchmark baseline, not one of inkray's pipelines' designs. It is
 * the single kernel an engineer writes in an afternoon, so that every speed claim about inkray's
 * renderers is a ratio to it measured in the same run: one thread per pixel in 16x8 blocks over
 * the image rows, the ray clipped to the volume box, the 16^3 bricks (min/max with the shared
 * one-voxel border, the same cells as inkray's) walked by 3D-DDA, and inside each cell whose
 * range holds the isovalue, half-voxel steps from the cell's entry with hardware trilinear
 * samples, one at a time; the crossing by linear interpolation, the normal by central
 * differences. Its steps start at each cell's entry rather than on the ray's sample grid, so
 * its image is close to the other renderers' but not bit-identical (docs/render.md). */
#include "render/gpu_internal.cuh"

#define IR_PLAIN_BLOCK_X 16
#define IR_PLAIN_BLOCK_Y 8

static __device__ bool plain_cell_valid(const ir_brick_range *ranges, const ir_trace_params &p, const ir_brick_cursor &q) {
  ir_brick_range r = ranges[q.cx + p.cells[0] * (q.cy + p.cells[1] * q.cz)];
  return r.min <= p.iso.v[0] && p.iso.v[0] <= r.max;
}

/* Marches [t0, t1] in steps of dt from t0; the first crossing, linearly interpolated. */
static __device__ bool plain_march(const ir_trace_params &p, const ir_ray &r, float t0, float t1, float dt,
                                   float *t_hit) {
  float ta = t0, sa = ir_sample(&p.vol, ir_ray_at(&r, ta));
  for (float tb = fminf(t0 + dt, t1);; tb = fminf(tb + dt, t1)) {
    float sb = ir_sample(&p.vol, ir_ray_at(&r, tb));
    if (ir_is_crossing(sa, sb, p.iso.v[0])) {
      *t_hit = ta + (tb - ta) * ((p.iso.v[0] - sa) / (sb - sa));
      return true;
    }
    if (tb >= t1) return false;
    ta = tb;
    sa = sb;
  }
}

static __global__ void __launch_bounds__(IR_PLAIN_BLOCK_X * IR_PLAIN_BLOCK_Y)
    plain_caster_kernel(const ir_gpu_frame *__restrict__ frame, const ir_brick_range *__restrict__ ranges,
                        uint32_t *__restrict__ image, float *__restrict__ depth) {
  const ir_trace_params &p = frame->p;
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= p.cam.win_w || y >= p.cam.win_h) return;
  uint32_t pixel = (uint32_t)(y + p.cam.win_y0) * (uint32_t)p.cam.width + (uint32_t)(x + p.cam.win_x0);
  ir_ray r = ir_camera_ray(&p.cam, pixel);
  uint32_t color = IR_BACKGROUND_RGBA;
  float t, t_end, hit_t = INFINITY;
  if (ir_ray_box(&r, p.box_lo, p.box_hi, &t, &t_end)) {
    float dt = ir_ray_step(&p, &r);
    ir_brick_cursor q = ir_cursor_at(&p, &r, t);
    for (;;) {
      float t_out = fminf(ir_cursor_exit(&q), t_end), t_hit;
      if (plain_cell_valid(ranges, p, q) && plain_march(p, r, t, t_out, dt, &t_hit)) {
        color = ir_shade(ir_gradient_normal(&p.vol, ir_ray_at(&r, t_hit), p.cam.inv_spacing), r.dir_world);
        hit_t = t_hit;
        break;
      }
      if (t_out >= t_end) break;
      ir_cursor_step(&p, &r, &q);
      t = fmaxf(t, t_out);
    }
  }
  image[pixel] = color;
  depth[pixel] = hit_t;
}

cudaError_t ir_plain_caster_launch(const ir_gpu_frame *d_frame, const ir_brick_range *d_ranges, uint32_t *image,
                                   float *depth, int width, int height, cudaStream_t stream) {
  dim3 block(IR_PLAIN_BLOCK_X, IR_PLAIN_BLOCK_Y);
  dim3 grid((unsigned)(width + IR_PLAIN_BLOCK_X - 1) / IR_PLAIN_BLOCK_X,
            (unsigned)(height + IR_PLAIN_BLOCK_Y - 1) / IR_PLAIN_BLOCK_Y);
  plain_caster_kernel<<<grid, block, 0, stream>>>(d_frame, d_ranges, image, depth);
  return cudaGetLastError();
}
