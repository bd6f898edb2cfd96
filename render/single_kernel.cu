/* The single kernel: one thread per pixel walks the brick grid (3D-DDA over the leaves of this
 * frame's BVH update) and marches each run of valid bricks on the ray's sample grid
 * (trace.cuh: ir_trace_pixel_runs), so no compaction and no round trips, and the same image as
 * the multi-kernel pipelines. Threads are numbered over 8x8 pixel tiles (gpu_internal.cuh):
 * a warp's rays are an 8x4 block of pixels. */
#include "render/gpu_internal.cuh"

/* 128 threads: two 8x8 tiles per block, small enough that a 1024x1024 frame has 8192 blocks to
 * spread the uneven per-ray work over the GPU, big enough to fill it with resident warps. */
#define IR_SINGLE_BLOCK 128

/* One variant per trace mode (trace.cuh: compositing, exact refinement): each is compiled with
 * only its own code at a hit, so an opaque frame does not pay the registers of compositing, nor
 * texture refinement those of exact reads (docs/render.md). */
template <int Mode>
static __device__ __forceinline__ void single_pixel(const ir_gpu_frame &frame, uint32_t *__restrict__ image,
                                                    float *__restrict__ depth) {
  /* p.ranges is set: bricks are tested against the isovalue as the walk meets them. The frame is
   * a kernel parameter: its fields are read from the constant bank, with no registers held for
   * them and no loads in the loop. */
  const ir_trace_params &p = frame.p;
  uint32_t pixel = ir_tiled_pixel(blockIdx.x * blockDim.x + threadIdx.x, p.cam);
  if (pixel == 0xffffffffu) return;
  float t;
  image[pixel] = ir_trace_pixel_runs_as(&p, pixel, NULL, &t, Mode);
  depth[pixel] = t;
}

template <int Mode>
static __global__ void __launch_bounds__(IR_SINGLE_BLOCK)
    single_kernel(const __grid_constant__ ir_gpu_frame frame, uint32_t *__restrict__ image, float *__restrict__ depth) {
  single_pixel<Mode>(frame, image, depth);
}

/* Opaque frames with exact refinement: at least 8 blocks per SM, at most 64 registers (the exact
 * hit code would take 80, a third of the occupancy, for code that runs once per ray). */
static __global__ void __launch_bounds__(IR_SINGLE_BLOCK, 8)
    single_kernel_exact(const __grid_constant__ ir_gpu_frame frame, uint32_t *__restrict__ image,
                        float *__restrict__ depth) {
  single_pixel<IR_TRACE_EXACT>(frame, image, depth);
}

/* Lit frames: a thread traces its pixel's occlusion and shadow rays after its hit. Left to itself
 * ptxas gives them 128 registers (four blocks per SM); capped at 96 (five blocks) they spill a
 * little and run 6-10 % faster on the H100 (docs/PERFORMANCE.md). */
template <int Mode>
static __global__ void __launch_bounds__(IR_SINGLE_BLOCK, 5)
    single_lit_kernel(const __grid_constant__ ir_gpu_frame frame, uint32_t *__restrict__ image,
                      float *__restrict__ depth) {
  single_pixel<Mode>(frame, image, depth);
}

cudaError_t ir_single_kernel_launch(const ir_gpu_frame &frame, uint32_t *image, float *depth, int width,
                                    int height, int mode, cudaStream_t stream) {
  unsigned grid = (ir_tiled_ray_count(width, height) + IR_SINGLE_BLOCK - 1) / IR_SINGLE_BLOCK;
  switch (mode) {
  case 0: single_kernel<0><<<grid, IR_SINGLE_BLOCK, 0, stream>>>(frame, image, depth); break;
  case 1: single_kernel<1><<<grid, IR_SINGLE_BLOCK, 0, stream>>>(frame, image, depth); break;
  case 2: single_kernel_exact<<<grid, IR_SINGLE_BLOCK, 0, stream>>>(frame, image, depth); break;
  case 3: single_kernel<3><<<grid, IR_SINGLE_BLOCK, 0, stream>>>(frame, image, depth); break;
  /* Lit frames (secondary.cuh): each thread traces its pixel's occlusion and shadow rays. */
  case IR_TRACE_LIGHT | IR_TRACE_COMPOSITE: single_lit_kernel<IR_TRACE_LIGHT | IR_TRACE_COMPOSITE><<<grid, IR_SINGLE_BLOCK, 0, stream>>>(frame, image, depth); break;
  case IR_TRACE_LIGHT | IR_TRACE_COMPOSITE | IR_TRACE_EXACT: single_lit_kernel<IR_TRACE_LIGHT | IR_TRACE_COMPOSITE | IR_TRACE_EXACT><<<grid, IR_SINGLE_BLOCK, 0, stream>>>(frame, image, depth); break;
  default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}
