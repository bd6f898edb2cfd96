/* Intersection stage of the multi pipeline: each ray marches the run of samples traversal found
 * (trace.cuh: ir_march_run_as, a batch of samples in flight). A hit is shaded and written at once: the
 * normal and the colour need nothing another kernel has, so a separate shading stage would only
 * add a launch and a compaction per round. In lit frames the hit that ends a ray is set up for
 * its occlusion and shadow rays instead (a hit record), which the secondary phase traces in
 * rounds of their own and lights (walk_secondary.cu); translucent layers met on the way are
 * still lit where the march meets them, by the ray's thread. A ray that does not end in the run (a miss, or only
 * translucent hits, composited on the way) goes back to traversal while volume is left,
 * resuming at the run's last sample (intersection -> traversal compaction): rays that continue
 * past a hit take the same route as rays that missed, so several surfaces need no extra stage.
 *
 * The tail kernel runs the rest of the walk for the few rays left in one launch, once the rounds
 * would carry fewer rays than their launches cost (ir_frame_desc.tail_rays). */
#include <cooperative_groups.h>

#include "render/gpu_internal.cuh"

namespace cg = cooperative_groups;

/* Adds one per thread with `flag` set, one atomic per warp. Whole warp. */
static __device__ __forceinline__ void count_warp(bool flag, uint32_t *counter) {
  unsigned mask = __ballot_sync(0xffffffffu, flag);
  if (mask && (threadIdx.x & 31u) == (unsigned)__ffs((int)mask) - 1u) atomicAdd(counter, (uint32_t)__popc(mask));
}

/* The hit that ends a ray: shaded and written (unlit frames), or, lit, refined, coloured and set
 * up for its secondary rays (ir_end_at_hit up to the lighting) into the next hit record, one
 * atomic per group of lanes that hit together; the secondary phase writes the pixel. The depth
 * is final either way. */
template <int Mode>
static __device__ __forceinline__ void end_at_hit(const ir_trace_params &p, const ir_ray_buffers &b,
                                                  ir_gpu_counters *counters, uint32_t pixel, const ir_ray &r, ir_hit h,
                                                  ir_paint *pt, float *first_t) {
  if constexpr ((Mode & IR_TRACE_LIGHT) != 0) {
    const ir_vec3 diff = ir_hit_resolve_differences(&p, &r, &h, Mode);
    if (!(*first_t < INFINITY)) *first_t = h.t;
    const ir_vec3 base = ir_hit_base(&p, &r, h.t, h.surf, diff);
    const ir_light_setup L = ir_light_prepare(&p, &r, h.t, h.surf, diff);
    cg::coalesced_group lanes = cg::coalesced_threads();
    uint32_t slot = 0;
    if (lanes.thread_rank() == 0) slot = atomicAdd(&counters->sec_hits, lanes.size());
    slot = lanes.shfl(slot, 0) + lanes.thread_rank();
    ir_sec_store_hit(b, slot, L, base, *pt, pixel, h.surf);
  } else {
    b.image[pixel] = ir_end_at_hit(&p, &r, h, pt, first_t, Mode);
  }
  b.depth[pixel] = *first_t;
}

/* One variant per trace mode (as the single kernel's): only its own code at a hit. */
template <int Mode>
static __device__ __forceinline__ void walk_intersect(const ir_gpu_frame *__restrict__ frame, ir_ray_buffers b,
                                                      const uint32_t *__restrict__ in, const uint32_t *__restrict__ count,
                                                      ir_gpu_counters *counters, ir_stage_out to_traverse) {
  uint32_t n = *count, i = blockIdx.x * blockDim.x + threadIdx.x;
  if (ir_block_past_count(n, to_traverse)) return;
  bool active = i < n, hit = false, back = false;
  uint32_t ray = 0;
  if (active) {
    ray = in[i];
    const ir_trace_params &p = frame->p;
    uint32_t pixel = ir_tiled_pixel(ray, p.cam);
    ir_ray r = ir_camera_ray(&p.cam, pixel);
    ir_span s;
    ir_ray_span(&p, &r, &s);
    uint2 seg = b.seg[ray];
    ir_paint pt;
    float first_t;
    ir_paint_load(p, b, pixel, &pt, &first_t);
    float alpha_before = pt.a;
    ir_hit h;
    int32_t k_last;
    hit = ir_march_run_as(&p, &r, &s, (int32_t)seg.x, (int32_t)seg.y, &k_last, &pt, &first_t, &h, Mode);
    if (hit) {
      end_at_hit<Mode>(p, b, counters, pixel, r, h, &pt, &first_t);
    } else {
      ir_paint_keep(b, pixel, pt, alpha_before, first_t);
      if (k_last < s.k_end) {
        back = true;
        b.seg[ray].x = (uint32_t)k_last;
      }
    }
  }
  count_warp(hit, &counters->shade);
  ir_stage_emit(to_traverse, active, back, ray, i);
}

template <int Mode>
static __global__ void walk_intersect_kernel(const ir_gpu_frame *__restrict__ frame, ir_ray_buffers b,
                                             const uint32_t *__restrict__ in, const uint32_t *__restrict__ count,
                                             ir_gpu_counters *counters, ir_stage_out to_traverse) {
  walk_intersect<Mode>(frame, b, in, count, counters, to_traverse);
}

/* Opaque frames with exact refinement: at most 64 registers (as the single kernel's). */
static __global__ void __launch_bounds__(IR_BLOCK, 4)
    walk_intersect_exact_kernel(const ir_gpu_frame *__restrict__ frame, ir_ray_buffers b,
                                const uint32_t *__restrict__ in, const uint32_t *__restrict__ count,
                                ir_gpu_counters *counters, ir_stage_out to_traverse) {
  walk_intersect<IR_TRACE_EXACT>(frame, b, in, count, counters, to_traverse);
}

cudaError_t ir_walk_intersect_launch(const ir_gpu_frame *d_frame, ir_ray_buffers b, const uint32_t *in,
                                     const uint32_t *n, ir_gpu_counters *counters, ir_stage_out to_traverse,
                                     unsigned grid, int mode, cudaStream_t stream, cudaLaunchAttribute *attr,
                                     int attr_count) {
  switch (mode) {
  case 0: return ir_launch(walk_intersect_kernel<0>, grid, stream, attr, attr_count, d_frame, b, in, n, counters, to_traverse);
  case 1: return ir_launch(walk_intersect_kernel<1>, grid, stream, attr, attr_count, d_frame, b, in, n, counters, to_traverse);
  case 2: return ir_launch(walk_intersect_exact_kernel, grid, stream, attr, attr_count, d_frame, b, in, n, counters, to_traverse);
  case 3: return ir_launch(walk_intersect_kernel<3>, grid, stream, attr, attr_count, d_frame, b, in, n, counters, to_traverse);
  /* Lit frames (secondary.cuh): the hits that end rays go to the hit records. */
  case IR_TRACE_LIGHT | IR_TRACE_COMPOSITE:
    return ir_launch(walk_intersect_kernel<IR_TRACE_LIGHT | IR_TRACE_COMPOSITE>, grid, stream, attr, attr_count, d_frame, b, in, n, counters,
                     to_traverse);
  case IR_TRACE_LIGHT | IR_TRACE_COMPOSITE | IR_TRACE_EXACT:
    return ir_launch(walk_intersect_kernel<IR_TRACE_LIGHT | IR_TRACE_COMPOSITE | IR_TRACE_EXACT>, grid, stream, attr, attr_count, d_frame, b, in, n, counters,
                     to_traverse);
  default: return cudaErrorInvalidValue;
  }
}

template <int Mode>
static __device__ __forceinline__ void walk_tail(const ir_gpu_frame *__restrict__ frame, ir_ray_buffers b,
                                                 const uint32_t *__restrict__ in, ir_gpu_counters *counters) {
  uint32_t n = counters->trav_in, hits = 0;
  const ir_trace_params &p = frame->p;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    uint32_t ray = in[i], pixel = ir_tiled_pixel(ray, p.cam);
    ir_ray r = ir_camera_ray(&p.cam, pixel);
    ir_span s;
    ir_ray_span(&p, &r, &s);
    ir_paint pt;
    float first_t;
    ir_paint_load(p, b, pixel, &pt, &first_t);
    float alpha_before = pt.a;
    ir_hit h;
    if (ir_walk_and_march_as(&p, &r, &s, (int32_t)b.seg[ray].x, NULL, &pt, &first_t, &h, Mode)) {
      end_at_hit<Mode>(p, b, counters, pixel, r, h, &pt, &first_t);
      hits++;
    } else {
      ir_paint_keep(b, pixel, pt, alpha_before, first_t);
    }
  }
  if (hits) atomicAdd(&counters->hits, hits);
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    counters->tail = n;
    if (counters->round == 0) counters->generated = n; /* no loop round ran to record it */
  }
}

template <int Mode>
static __global__ void walk_tail_kernel(const ir_gpu_frame *__restrict__ frame, ir_ray_buffers b,
                                        const uint32_t *__restrict__ in, ir_gpu_counters *counters) {
  walk_tail<Mode>(frame, b, in, counters);
}

/* Opaque frames with exact refinement: at most 64 registers, as the intersection kernel's
 * (measured on the H100: 1.22x -> 1.14x the frame before exact refinement at 4K; the same cap on
 * texture refinement's variant helped at 4K and cost 3 % at 1024^2, so that one has none). */
template <int Mode>
static __global__ void __launch_bounds__(IR_BLOCK, 4)
    walk_tail_opaque_kernel(const ir_gpu_frame *__restrict__ frame, ir_ray_buffers b, const uint32_t *__restrict__ in,
                            ir_gpu_counters *counters) {
  walk_tail<Mode>(frame, b, in, counters);
}


cudaError_t ir_walk_tail_launch(const ir_gpu_frame *d_frame, ir_ray_buffers b, const uint32_t *in,
                                ir_gpu_counters *counters, uint32_t max_rays, int mode, cudaStream_t stream) {
  /* Grid-stride over the count on the device: sized for max_rays, at least one block. */
  unsigned grid = ir_grid_for(max_rays);
  switch (mode) {
  case 0: return ir_launch(walk_tail_kernel<0>, grid, stream, NULL, 0, d_frame, b, in, counters);
  case 1: return ir_launch(walk_tail_kernel<1>, grid, stream, NULL, 0, d_frame, b, in, counters);
  case 2: return ir_launch(walk_tail_opaque_kernel<2>, grid, stream, NULL, 0, d_frame, b, in, counters);
  case 3: return ir_launch(walk_tail_kernel<3>, grid, stream, NULL, 0, d_frame, b, in, counters);
  case IR_TRACE_LIGHT | IR_TRACE_COMPOSITE: return ir_launch(walk_tail_kernel<IR_TRACE_LIGHT | IR_TRACE_COMPOSITE>, grid, stream, NULL, 0, d_frame, b, in, counters);
  case IR_TRACE_LIGHT | IR_TRACE_COMPOSITE | IR_TRACE_EXACT:
    return ir_launch(walk_tail_kernel<IR_TRACE_LIGHT | IR_TRACE_COMPOSITE | IR_TRACE_EXACT>, grid, stream, NULL, 0, d_frame, b, in, counters);
  default: return cudaErrorInvalidValue;
  }
}
