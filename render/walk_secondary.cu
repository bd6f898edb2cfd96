/* The multi pipeline's secondary rays (lit frames): InK's rounds for occlusion and shadow rays.
 *
 * The primary rounds leave a hit record for every hit that ends a ray (walk_intersect.cu: its
 * ir_light_setup, base colour, paint before it, pixel and surface). Then, a chunk of hits at a
 * time (as many as the buffers hold rays for, R = ir_light_ray_count a hit):
 *
 *   seed     the chunk's rays k = (hit - h0) R + i go into list A, each at the start of its
 *            march (ir_secondary_start);
 *   step     every ray of the list marches on by up to `step_batches` batches
 *            (ir_secondary_step, bounded): a ray that is done leaves its light at light[k], the
 *            others go on, compacted by the frame's method in its natural form, as the primary
 *            rounds compact rays (ir_stage_out: emitted in the kernel, flags and a compaction
 *            call, or a removal list and an in-place removal). A round has two steps, A -> B
 *            and B -> A (a captured graph cannot swap the lists);
 *   combine  once no ray of the chunk is left: each hit adds its rays' light in order
 *            (ir_light_combine), composites the lit colour behind its paint and writes the pixel.
 *
 * A ray's origin and direction come again from its hit's record at every step instead of being
 * stored (8 of its 16 bytes of state would be the direction). The same operations as
 * ir_light_color in one thread, cut into steps that change no sample (secondary.cuh), so the
 * same image bit for bit whatever the step and the chunk.
 */
/* The rays of a step are compacted, so that warps march with their lanes full: eight samples in
 * flight per ray pay there, as in the persistent kernel's pool (docs/PERFORMANCE.md). The batch
 * changes no result (secondary.cuh). */
#define IR_SECONDARY_BATCH 8
#include "render/gpu_internal.cuh"

static __device__ __forceinline__ uint4 pack_state(const ir_secondary_state &m) {
  return make_uint4((uint32_t)m.k, (uint32_t)m.kb, __float_as_uint(m.sa), __float_as_uint(m.light));
}

/* One thread per ray of the new chunk (counters->sec_seed of them). */
static __global__ void walk_sec_seed_kernel(ir_sec_buffers s, const ir_gpu_counters *__restrict__ counters) {
  const uint32_t n = counters->sec_seed, k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= n) return;
  s.list_a[k] = k;
  s.state[k] = pack_state(ir_secondary_start());
}

/* Four blocks per SM: at 64 registers, without spills (ptxas' own choice was 65, three blocks). */
static __global__ void __launch_bounds__(IR_BLOCK, 4) walk_sec_step_kernel(const ir_gpu_frame *__restrict__ frame, ir_sec_buffers s,
                                            const uint32_t *__restrict__ in, const uint32_t *__restrict__ count,
                                            const ir_gpu_counters *__restrict__ counters, ir_stage_out out) {
  const uint32_t n = *count, i = blockIdx.x * blockDim.x + threadIdx.x;
  if (ir_block_past_count(n, out)) return;
  const bool active = i < n;
  bool going = false;
  uint32_t k = 0;
  if (active) {
    const ir_trace_params &p = frame->p;
    k = in[i];
    const uint32_t R = (uint32_t)ir_light_ray_count(&p);
    const ir_light_setup L = ir_sec_load_setup(s.hit, s.stride, counters->sec_h0 + k / R);
    const uint4 w = s.state[k];
    ir_secondary_state m;
    m.k = (int32_t)w.x;
    m.kb = (int32_t)w.y;
    m.sa = __uint_as_float(w.z);
    m.light = __uint_as_float(w.w);
    ir_ray ray;
    ir_span span;
    float t_max;
    /* A ray the hit does not have, or with nothing to march, is done with all its light. */
    if (ir_light_ray(&p, &L, (int)(k % R), &ray, &t_max) && ir_secondary_span(&p, &ray, t_max, &span))
      going = !ir_secondary_step(&p, &ray, &span, &m, true, frame->step_batches);
    if (going) s.state[k] = pack_state(m);
    else s.light[k] = m.light;
  }
  ir_stage_emit(out, active, going, k, i);
}

/* One thread per hit of the finished chunk (counters->sec_combine of them, from sec_combine_h0). */
static __global__ void walk_sec_combine_kernel(const ir_gpu_frame *__restrict__ frame, ir_sec_buffers s,
                                               const ir_gpu_counters *__restrict__ counters,
                                               uint32_t *__restrict__ image) {
  const uint32_t n = counters->sec_combine, j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= n) return;
  const ir_trace_params &p = frame->p;
  const uint32_t h = counters->sec_combine_h0 + j, R = (uint32_t)ir_light_ray_count(&p);
  const ir_light_setup L = ir_sec_load_setup(s.hit, s.stride, h);
  const float4 base = s.hit[IR_SEC_BASE * s.stride + h], q = s.hit[IR_SEC_PAINT * s.stride + h],
               px = s.hit[IR_SEC_PIXEL * s.stride + h];
  ir_paint pt = {q.x, q.y, q.z, q.w};
  const int surf = (int)__float_as_uint(px.y);
  ir_paint_add(&pt, ir_light_combine(&p, &L, ir_v3(base.x, base.y, base.z), s.light + (size_t)j * R),
               p.surf_alpha[surf]);
  image[__float_as_uint(px.x)] = ir_paint_pixel(&pt);
}

cudaError_t ir_walk_sec_seed_launch(ir_sec_buffers s, const ir_gpu_counters *counters, unsigned grid,
                                    cudaStream_t stream, cudaLaunchAttribute *attr, int attr_count) {
  return ir_launch(walk_sec_seed_kernel, grid, stream, attr, attr_count, s, counters);
}

cudaError_t ir_walk_sec_step_launch(const ir_gpu_frame *d_frame, ir_sec_buffers s, const uint32_t *in,
                                    const uint32_t *n, const ir_gpu_counters *counters, ir_stage_out out, unsigned grid,
                                    cudaStream_t stream, cudaLaunchAttribute *attr, int attr_count) {
  return ir_launch(walk_sec_step_kernel, grid, stream, attr, attr_count, d_frame, s, in, n, counters, out);
}

cudaError_t ir_walk_sec_combine_launch(const ir_gpu_frame *d_frame, ir_sec_buffers s, const ir_gpu_counters *counters,
                                       uint32_t *image, unsigned grid, cudaStream_t stream,
                                       cudaLaunchAttribute *attr, int attr_count) {
  return ir_launch(walk_sec_combine_kernel, grid, stream, attr, attr_count, d_frame, s, counters, image);
}
