/* The GPU device: the volume as a 3D texture of its native type (loaded by gpu_volume.cu), the
 * brick ranges and the tree, per-pixel buffers that grow with the image and never shrink, and the frame: the
 * multi-kernel pipelines (gpu_pipeline.cu), the persistent kernel (persistent.cu) or the single
 * kernel (single_kernel.cu).
 *
 * Frame times come from CUDA events recorded on the renderer's stream at the start of
 * ir_render_frame (before any host work of the frame) and after its last GPU work, so host
 * work, launches and round trips are all inside. Per-stage times come from a second,
 * host-driven pass of the same frame with events between the stages (stage_timing), because
 * those events and the read-backs they need would change the frame they measure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/gpu_internal.cuh"
#include "transfer/transfer.h"

ir_status ir_cuda_fail(char err[IR_ERR_LEN], cudaError_t e, const char *call, const char *file, int line) {
  const char *base = strrchr(file, '/');
  snprintf(err, IR_ERR_LEN, "GPU error at %s:%d in %s: %s (%s)", base ? base + 1 : file, line, call,
           cudaGetErrorString(e), cudaGetErrorName(e));
  return IR_ERR_RUNTIME;
}

static __global__ void iota_kernel(uint32_t *out, uint32_t n) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = i;
}

/* Pixels outside a frame's window (ir_frame_desc.window): background with depth +INF. One
 * thread per outside pixel only, numbered over the rows above the window, the parts of its rows
 * left and right of it, and the rows below, so a small window costs a pass over the rest of the
 * image and no idle threads inside it. The pipelines write every pixel inside. */
static __global__ void fill_outside_kernel(uint32_t *__restrict__ image, float *__restrict__ depth, uint32_t width,
                                           uint32_t x0, uint32_t y0, uint32_t win_w, uint32_t win_h, uint32_t n) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  uint32_t top = y0 * width, side = width - win_w, middle = win_h * side, pixel;
  if (i < top) {
    pixel = i;
  } else if (i - top < middle) {
    uint32_t j = i - top, x = j % side;
    pixel = (y0 + j / side) * width + (x < x0 ? x : x + win_w);
  } else {
    pixel = (y0 + win_h) * width + (i - top - middle);
  }
  image[pixel] = IR_BACKGROUND_RGBA;
  depth[pixel] = INFINITY;
}

static ir_status fill_outside(struct ir_gpu_state *g, const ir_frame_desc *f, const ir_cam_basis *c,
                              char err[IR_ERR_LEN]) {
  uint32_t n = (uint32_t)f->width * (uint32_t)f->height - (uint32_t)c->win_w * (uint32_t)c->win_h;
  if (n == 0) return IR_OK;
  /* An empty window is all outside: its origin row starts the rows below it. */
  uint32_t x0 = c->win_w ? (uint32_t)c->win_x0 : 0, y0 = c->win_w ? (uint32_t)c->win_y0 : 0;
  fill_outside_kernel<<<ir_grid_for(n), IR_BLOCK, 0, g->stream>>>((uint32_t *)g->d_image, g->d_depth,
                                                                  (uint32_t)f->width, x0, y0, (uint32_t)c->win_w,
                                                                  (uint32_t)c->win_h, n);
  IR_CUDA(cudaGetLastError());
  return IR_OK;
}

/* ---- Volume texture ------------------------------------------------------------------------ */
static cudaChannelFormatDesc channel_of(ir_voxel_type t) {
  switch (t) {
  case IR_VOXEL_UINT8: return cudaCreateChannelDesc<uint8_t>();
  case IR_VOXEL_UINT16: return cudaCreateChannelDesc<uint16_t>();
  case IR_VOXEL_INT16: return cudaCreateChannelDesc<int16_t>();
  default: return cudaCreateChannelDesc<float>();
  }
}

/* A volume as a 3D texture of its native type: a linear-filtered object for the march and a
 * point-sampled one on the same array for exact trilinear reads (volume_sample.cuh). */
static ir_status upload_texture(const ir_volume *v, const void *voxels, int device, cudaArray_t *array,
                                cudaTextureObject_t *linear, cudaTextureObject_t *point, char err[IR_ERR_LEN]) {
  int max3d = 0;
  IR_CUDA(cudaDeviceGetAttribute(&max3d, cudaDevAttrMaxTexture3DWidth, device));
  for (int k = 0; k < 3; k++)
    if (v->dims[k] > (size_t)max3d) {
      snprintf(err, IR_ERR_LEN, "%s: %zux%zux%zu voxels exceed the GPU's 3D texture limit of %d per axis; use --device cpu",
               v->name, v->dims[0], v->dims[1], v->dims[2], max3d);
      return IR_ERR_INPUT;
    }
  cudaChannelFormatDesc ch = channel_of(v->type);
  cudaExtent extent = make_cudaExtent(v->dims[0], v->dims[1], v->dims[2]);
  cudaError_t e = cudaMalloc3DArray(array, &ch, extent);
  if (e == cudaErrorMemoryAllocation) {
    snprintf(err, IR_ERR_LEN, "%s: not enough GPU memory for the %zu-byte volume texture; use --device cpu", v->name,
             v->bytes);
    return IR_ERR_RUNTIME;
  }
  IR_CUDA(e);
  cudaMemcpy3DParms copy;
  memset(&copy, 0, sizeof copy);
  size_t elem = ir_voxel_type_size(v->type);
  copy.srcPtr = make_cudaPitchedPtr((void *)voxels, v->dims[0] * elem, v->dims[0], v->dims[1]);
  copy.dstArray = *array;
  copy.extent = extent;
  copy.kind = cudaMemcpyHostToDevice;
  IR_CUDA(cudaMemcpy3D(&copy));

  cudaResourceDesc res;
  memset(&res, 0, sizeof res);
  res.resType = cudaResourceTypeArray;
  res.res.array.array = *array;
  cudaTextureDesc td;
  memset(&td, 0, sizeof td);
  td.addressMode[0] = td.addressMode[1] = td.addressMode[2] = cudaAddressModeClamp;
  td.filterMode = cudaFilterModeLinear;
  /* Linear filtering of integer textures needs normalized reads; volume_sample.cuh scales back. */
  td.readMode = v->type == IR_VOXEL_FLOAT32 ? cudaReadModeElementType : cudaReadModeNormalizedFloat;
  td.normalizedCoords = 0;
  IR_CUDA(cudaCreateTextureObject(linear, &res, &td, NULL));
  if (point) {
    td.filterMode = cudaFilterModePoint;
    IR_CUDA(cudaCreateTextureObject(point, &res, &td, NULL));
  }
  return IR_OK;
}

static void free_color_texture(struct ir_gpu_state *g) {
  if (g->color_tex) cudaDestroyTextureObject(g->color_tex);
  if (g->color_array) cudaFreeArray(g->color_array);
  g->color_tex = 0;
  g->color_array = NULL;
}

ir_status ir_gpu_set_color_volume(ir_renderer *r, char err[IR_ERR_LEN]) {
  struct ir_gpu_state *g = r->gpu;
  /* A frame still running reads the old texture: let it finish before the array goes. */
  IR_CUDA(cudaStreamSynchronize(g->stream));
  free_color_texture(g);
  if (!r->color_volume) return IR_OK;
  ir_status st = upload_texture(r->color_volume, r->color_volume->voxels, g->device, &g->color_array, &g->color_tex,
                                NULL, err);
  if (st != IR_OK) {
    free_color_texture(g);
    r->color_volume = NULL;
    return st;
  }
  r->color_view.tex = (unsigned long long)g->color_tex;
  return IR_OK;
}

/* ---- Create / destroy ------------------------------------------------------------------------ */
ir_status ir_gpu_create(ir_renderer *r, char err[IR_ERR_LEN]) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    snprintf(err, IR_ERR_LEN, "no CUDA device available (%s); use --device cpu to render on the CPU",
             e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    return IR_ERR_RUNTIME;
  }
  struct ir_gpu_state *g = (struct ir_gpu_state *)calloc(1, sizeof *g);
  if (!g) {
    snprintf(err, IR_ERR_LEN, "out of host memory creating the GPU renderer");
    return IR_ERR_RUNTIME;
  }
  r->gpu = g;
  IR_CUDA(cudaGetDevice(&g->device));
  /* A blocking stream: work on the legacy default stream (e.g. CUDA-GL interop in the window)
   * is ordered after the frame without extra synchronisation. */
  IR_CUDA(cudaStreamCreate(&g->stream));
  IR_CUDA(cudaEventCreate(&g->ev_start));
  IR_CUDA(cudaEventCreate(&g->ev_stop));
  for (; g->timeline_created < IR_TIMELINE_EVENTS; g->timeline_created++)
    IR_CUDA(cudaEventCreate(&g->timeline[g->timeline_created]));
  for (; g->skip_ev_created < 2; g->skip_ev_created++) IR_CUDA(cudaEventCreate(&g->skip_ev[g->skip_ev_created]));
  /* The brick and cell ranges frames read: the slot in use's, copied here when it is chosen
   * (gpu_volume.cu), so that captured graphs keep pointing at the same buffers. */
  const ir_bvh_layout *L = &r->layout;
  size_t bricks = (size_t)L->dims[0][0] * L->dims[0][1] * L->dims[0][2];
  IR_CUDA(cudaMalloc(&g->d_ranges, bricks * sizeof(ir_brick_range)));
  size_t cells = (size_t)r->cells[0] * r->cells[1] * r->cells[2];
  IR_CUDA(cudaMalloc(&g->d_cell_ranges, cells * sizeof(ir_brick_range)));
  IR_CUDA(cudaMalloc(&g->d_skip, cells));
  IR_CUDA(cudaMalloc(&g->d_skip_tmp, cells));
  ir_status st = ir_gpu_volumes_create(r, err);
  if (st != IR_OK) return st;
  IR_CUDA(cudaMalloc(&g->d_nodes, (size_t)L->node_count * sizeof(ir_bvh_node)));
  size_t map_floats = (size_t)IR_COLORMAP_SIZE * 3;
  IR_CUDA(cudaMalloc(&g->d_colormaps, IR_COLORMAP_COUNT * map_floats * sizeof(float)));
  for (int m = 0; m < IR_COLORMAP_COUNT; m++)
    IR_CUDA(cudaMemcpy(g->d_colormaps + m * map_floats, ir_colormap_table((ir_colormap)m), map_floats * sizeof(float),
                       cudaMemcpyHostToDevice));
  IR_CUDA(cudaMalloc(&g->d_frame, sizeof(ir_gpu_frame)));
  IR_CUDA(cudaMalloc(&g->d_counters, sizeof(ir_gpu_counters)));
  IR_CUDA(cudaMallocHost(&g->h_counters, sizeof(ir_gpu_counters)));
  IR_CUDA(cudaMalloc(&g->d_persist, 2 * sizeof(ir_persist_counters)));
  IR_CUDA(cudaMemset(g->d_persist, 0, 2 * sizeof(ir_persist_counters)));
  IR_CUDA(cudaMallocHost(&g->h_persist, sizeof(ir_persist_counters)));
  IR_CUDA(cudaMalloc(&g->d_phase_cycles, IR_PERSIST_PHASES * sizeof(unsigned long long)));
  IR_CUDA(cudaMalloc(&g->d_resize, IR_GRAPH_SLOTS * IR_RESIZE_SLOT));
  IR_CUDA(cudaMemset(g->d_resize, 0, IR_GRAPH_SLOTS * IR_RESIZE_SLOT));
  e = ir_compact_ctx_create(&g->cctx, 1024);
  if (e != cudaSuccess) return ir_cuda_fail(err, e, "ir_compact_ctx_create", __FILE__, __LINE__);
  return IR_OK;
}

static void free_pixel_buffers(struct ir_gpu_state *g) {
  void *bufs[] = {g->d_image, g->d_depth, g->d_identity, g->d_list_t, g->d_list_i, g->d_list_s, g->d_flags_a, g->d_flags_b,
                  g->d_remove_a, g->d_remove_b, g->d_remove_c, g->d_sp, g->d_stack, g->d_hit, g->d_sections,
                  g->d_seg, g->d_paint, g->d_hit_surf};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) cudaFree(bufs[i]);
  g->d_depth = NULL;
  g->d_image = g->d_identity = g->d_list_t = g->d_list_i = g->d_list_s = NULL;
  g->d_remove_a = g->d_remove_b = g->d_remove_c = g->d_stack = NULL;
  g->d_flags_a = g->d_flags_b = g->d_sp = NULL;
  g->d_hit = NULL;
  g->d_seg = NULL;
  g->d_paint = NULL;
  g->d_hit_surf = NULL;
  g->d_sections = NULL;
  g->capacity = 0;
}

static void free_sec_buffers(struct ir_gpu_state *g) {
  void *bufs[] = {g->d_sec_hit, g->d_sec_state, g->d_sec_light, g->d_sec_list_a, g->d_sec_list_b, g->d_sec_flags,
                  g->d_sec_remove, g->d_sec_sections};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) cudaFree(bufs[i]);
  g->d_sec_hit = NULL;
  g->d_sec_state = NULL;
  g->d_sec_light = NULL;
  g->d_sec_list_a = g->d_sec_list_b = g->d_sec_remove = NULL;
  g->d_sec_flags = NULL;
  g->d_sec_sections = NULL;
  g->sec_hit_cap = g->sec_ray_cap = 0;
}

ir_status ir_gpu_sec_reserve(struct ir_gpu_state *g, size_t hits, size_t rays, char err[IR_ERR_LEN]) {
  if (hits <= g->sec_hit_cap && rays <= g->sec_ray_cap) return IR_OK;
  if (hits < g->sec_hit_cap) hits = g->sec_hit_cap;
  if (rays < g->sec_ray_cap) rays = g->sec_ray_cap;
  IR_CUDA(cudaStreamSynchronize(g->stream));
  ir_gpu_graphs_destroy(g);
  free_sec_buffers(g);
  g->sec_generation++;
  const size_t stride = ((ir_ink_sections_bytes(ir_grid_for(rays), IR_BLOCK)) + 255) & ~(size_t)255;
  const size_t bytes = hits * IR_SEC_HIT_WORDS * sizeof(float4) + rays * (sizeof(uint4) + sizeof(float) + 4 + 4 + 1 + 4) +
                       2 * stride;
  cudaError_t e = cudaMalloc(&g->d_sec_hit, hits * IR_SEC_HIT_WORDS * sizeof(float4));
  if (e == cudaSuccess) e = cudaMalloc(&g->d_sec_state, rays * sizeof(uint4));
  if (e == cudaSuccess) e = cudaMalloc(&g->d_sec_light, rays * sizeof(float));
  if (e == cudaSuccess) e = cudaMalloc(&g->d_sec_list_a, rays * 4);
  if (e == cudaSuccess) e = cudaMalloc(&g->d_sec_list_b, rays * 4);
  if (e == cudaSuccess) e = cudaMalloc(&g->d_sec_flags, rays);
  if (e == cudaSuccess) e = cudaMalloc(&g->d_sec_remove, rays * 4);
  if (e == cudaSuccess) e = cudaMalloc(&g->d_sec_sections, 2 * stride);
  /* Zeroed once, as the primary stages' section state (ensure_capacity says why). */
  if (e == cudaSuccess) e = cudaMemsetAsync(g->d_sec_sections, 0, 2 * stride, g->stream);
  if (e == cudaSuccess) e = ir_compact_ctx_reserve(g->cctx, rays);
  if (e == cudaSuccess) e = cudaStreamSynchronize(g->stream);
  if (e != cudaSuccess) {
    free_sec_buffers(g);
    (void)cudaGetLastError();
    snprintf(err, IR_ERR_LEN,
             "the multi pipeline's secondary rays need %zu MiB of GPU memory (%zu hits, %zu rays a chunk) and could "
             "not have it: %s; a smaller image needs less",
             (bytes + (1u << 20) - 1) >> 20, hits, rays, cudaGetErrorString(e));
    return IR_ERR_RUNTIME;
  }
  g->sec_hit_cap = hits;
  g->sec_ray_cap = rays;
  g->sec_sections_stride = stride;
  return IR_OK;
}

void ir_gpu_destroy(ir_renderer *r) {
  struct ir_gpu_state *g = r->gpu;
  if (!g) return;
  if (g->stream) cudaStreamSynchronize(g->stream);
  ir_gpu_graphs_destroy(g);
  free_pixel_buffers(g);
  free_sec_buffers(g);
  ir_gpu_volumes_destroy(g);
  free_color_texture(g);
  cudaFree(g->d_colormaps);
  cudaFree(g->d_ranges);
  cudaFree(g->d_cell_ranges);
  cudaFree(g->d_skip);
  cudaFree(g->d_skip_tmp);
  cudaFree(g->d_nodes);
  cudaFree(g->d_frame);
  cudaFree(g->d_counters);
  cudaFree(g->d_resize);
  cudaFree(g->d_persist);
  cudaFree(g->d_phase_cycles);
  cudaFree(g->d_accum);
  if (g->h_counters) cudaFreeHost(g->h_counters);
  if (g->h_persist) cudaFreeHost(g->h_persist);
  if (g->cctx) ir_compact_ctx_destroy(g->cctx);
  for (int i = 0; i < g->timeline_created; i++) cudaEventDestroy(g->timeline[i]);
  for (int i = 0; i < g->skip_ev_created; i++) cudaEventDestroy(g->skip_ev[i]);
  if (g->ev_start) cudaEventDestroy(g->ev_start);
  if (g->ev_stop) cudaEventDestroy(g->ev_stop);
  if (g->stream) cudaStreamDestroy(g->stream);
  free(g);
  r->gpu = NULL;
}

/* Grows the per-pixel buffers to `pixels` (never shrinks); the graphs point at them, so they go. */
static ir_status ensure_capacity(ir_renderer *r, size_t pixels, char err[IR_ERR_LEN]) {
  struct ir_gpu_state *g = r->gpu;
  if (pixels <= g->capacity) return IR_OK;
  IR_CUDA(cudaStreamSynchronize(g->stream));
  ir_gpu_graphs_destroy(g);
  free_pixel_buffers(g);
  size_t n = pixels, levels = (size_t)r->layout.levels;
  unsigned grid = ir_grid_for(n);
  /* Scratch per in-kernel stage, for the larger of ray generation's launch and the others'. */
  size_t raygen_bytes = ir_ink_sections_bytes((unsigned)((n + IR_RAYGEN_BLOCK - 1) / IR_RAYGEN_BLOCK), IR_RAYGEN_BLOCK);
  size_t stage_bytes = ir_ink_sections_bytes(grid, IR_BLOCK);
  g->sections_stride = ((raygen_bytes > stage_bytes ? raygen_bytes : stage_bytes) + 255) & ~(size_t)255;
  IR_CUDA(cudaMalloc(&g->d_image, n * 4));
  IR_CUDA(cudaMalloc(&g->d_depth, n * sizeof(float)));
  IR_CUDA(cudaMalloc(&g->d_identity, n * 4));
  IR_CUDA(cudaMalloc(&g->d_list_t, n * 4));
  IR_CUDA(cudaMalloc(&g->d_list_i, n * 4));
  IR_CUDA(cudaMalloc(&g->d_list_s, n * 4));
  IR_CUDA(cudaMalloc(&g->d_flags_a, n));
  IR_CUDA(cudaMalloc(&g->d_flags_b, n));
  IR_CUDA(cudaMalloc(&g->d_remove_a, n * 4));
  IR_CUDA(cudaMalloc(&g->d_remove_b, n * 4));
  IR_CUDA(cudaMalloc(&g->d_remove_c, n * 4));
  IR_CUDA(cudaMalloc(&g->d_sp, n));
  IR_CUDA(cudaMalloc(&g->d_stack, n * levels * 4));
  IR_CUDA(cudaMalloc(&g->d_hit, n * sizeof(float4)));
  IR_CUDA(cudaMalloc(&g->d_seg, n * sizeof(uint2)));
  IR_CUDA(cudaMalloc(&g->d_paint, n * sizeof(float4)));
  IR_CUDA(cudaMalloc(&g->d_hit_surf, n));
  IR_CUDA(cudaMalloc(&g->d_sections, 4 * g->sections_stride));
  /* Zeroed once: the InK-Compact section form moves each block's staged survivors in whole
   * 16-byte chunks, reading up to three staged words past the block's count (never stored).
   * Those words may never have been written; zeroed, compute-sanitizer's initcheck does not
   * report the read (test_render_stress_initcheck). The frames reset the section state
   * themselves, as before. */
  IR_CUDA(cudaMemsetAsync(g->d_sections, 0, 4 * g->sections_stride, g->stream));
  iota_kernel<<<grid, IR_BLOCK, 0, g->stream>>>(g->d_identity, (uint32_t)n);
  IR_CUDA(cudaGetLastError());
  cudaError_t e = ir_compact_ctx_reserve(g->cctx, n);
  if (e != cudaSuccess) return ir_cuda_fail(err, e, "ir_compact_ctx_reserve", __FILE__, __LINE__);
  IR_CUDA(cudaStreamSynchronize(g->stream));
  g->capacity = n;
  return IR_OK;
}

/* ---- Frames ------------------------------------------------------------------------------------ */
ir_status ir_gpu_read_skip(ir_renderer *r, uint8_t *map, size_t cells, char err[IR_ERR_LEN]) {
  struct ir_gpu_state *g = r->gpu;
  if (!g->skip_made) {
    snprintf(err, IR_ERR_LEN, "ir_gpu_read_skip: no frame has made the skip distances yet");
    return IR_ERR_INPUT;
  }
  if (cells > (size_t)r->cells[0] * r->cells[1] * r->cells[2]) {
    snprintf(err, IR_ERR_LEN, "ir_gpu_read_skip: %zu cells asked for, the map holds at most %zu", cells,
             (size_t)r->cells[0] * r->cells[1] * r->cells[2]);
    return IR_ERR_INPUT;
  }
  IR_CUDA(cudaMemcpyAsync(map, g->d_skip, cells, cudaMemcpyDeviceToHost, g->stream));
  IR_CUDA(cudaStreamSynchronize(g->stream));
  return IR_OK;
}

/* The walk's skip distances for the frame's cells and isovalues (skip.cuh), rebuilt on the
 * renderer's stream only when the isovalues, the cell size or the ranges changed since the last
 * build; its time (CUDA events) is kept for the frame statistics. */
static ir_status skip_map(struct ir_gpu_state *g, const ir_brick_range *d_ranges, ir_trace_params *p,
                          char err[IR_ERR_LEN]) {
#ifdef IR_NO_SKIP_MAP /* measuring what the map saves: the walk tests every cell's range */
  (void)g, (void)d_ranges, (void)p, (void)err;
#else
  int cell = (int)p->cell;
  bool same = g->skip_made && g->skip_cell == cell && g->skip_ranges_version == g->ranges_version &&
              ir_iso_set_same(&g->skip_iso, &p->iso);
  if (!same) {
    g->skip_made = false;
    IR_CUDA(cudaEventRecord(g->skip_ev[0], g->stream));
    IR_CUDA(ir_skip_map_launch(d_ranges, p->cells, &p->iso, g->d_skip, g->d_skip_tmp, g->stream));
    IR_CUDA(cudaEventRecord(g->skip_ev[1], g->stream));
    g->skip_made = true;
    g->skip_timed = true;
    g->skip_rebuilt = true;
    g->skip_cell = cell;
    g->skip_ranges_version = g->ranges_version;
    g->skip_iso = p->iso;
  }
  p->skip = g->d_skip;
#endif
  return IR_OK;
}

/* The frame's parameters. The multi-kernel pipelines (CUDA graphs) and the plain caster read them
 * from the device copy; the single kernel and the persistent one take them by value. */
static ir_status prepare_frame(ir_renderer *r, const ir_frame_desc *f, ir_gpu_frame *hf, char err[IR_ERR_LEN]) {
  struct ir_gpu_state *g = r->gpu;
  memset(hf, 0, sizeof *hf);
  ir_trace_params_fill(r, f, &hf->p);
  hf->p.nodes = g->d_nodes;
  hf->p.root = ir_bvh_root(&r->layout);
  hf->p.cmap = g->d_colormaps + (size_t)f->colormap * IR_COLORMAP_SIZE * 3;
  g->trace_mode = ir_trace_mode(&hf->p);
  hf->pixels = (uint32_t)hf->p.cam.win_w * (uint32_t)hf->p.cam.win_h;
  hf->rays = ir_tiled_ray_count(hf->p.cam.win_w, hf->p.cam.win_h);
  hf->run_bricks = f->run_bricks;
  hf->step_batches = ir_frame_step_batches(f);
  /* The single and persistent kernels walk the fine cells and test them against the isovalues
   * themselves, the plain caster the bricks (no BVH update in their frames); the multi-kernel
   * pipelines read this frame's tree. */
  if (f->pipeline == IR_PIPELINE_SINGLE || f->pipeline == IR_PIPELINE_PERSISTENT) {
    ir_trace_params_walk(r, f, g->d_ranges, g->d_cell_ranges, &hf->p);
    return skip_map(g, hf->p.ranges, &hf->p, err);
  }
  /* The multi pipeline's traversal walks the bricks: their skip distances from the brick ranges
   * say what this frame's leaves say (a leaf is valid where its range holds an isovalue). */
  if (f->pipeline == IR_PIPELINE_MULTI) {
    ir_status st = skip_map(g, g->d_ranges, &hf->p, err);
    if (st != IR_OK) return st;
  }
  if (f->pipeline == IR_PIPELINE_PLAIN) hf->p.ranges = g->d_ranges;
  /* From pageable memory: the copy is staged before the call returns, so `hf` may go. */
  IR_CUDA(cudaMemcpyAsync(g->d_frame, hf, sizeof *hf, cudaMemcpyHostToDevice, g->stream));
  return IR_OK;
}

static ir_status single_frame(ir_renderer *r, const ir_frame_desc *f, const ir_gpu_frame *hf, bool timed,
                              ir_frame_stats *stats, char err[IR_ERR_LEN]) {
  struct ir_gpu_state *g = r->gpu;
  if (timed) IR_CUDA(cudaEventRecord(g->timeline[0], g->stream));
  IR_CUDA(f->pipeline == IR_PIPELINE_PLAIN
              ? ir_plain_caster_launch(g->d_frame, g->d_ranges, g->d_image, g->d_depth, hf->p.cam.win_w,
                                       hf->p.cam.win_h, g->stream)
              : ir_single_kernel_launch(*hf, g->d_image, g->d_depth, hf->p.cam.win_w, hf->p.cam.win_h,
                                        g->trace_mode, g->stream));
  if (!timed) return IR_OK;
  IR_CUDA(cudaEventRecord(g->timeline[1], g->stream));
  IR_CUDA(cudaEventSynchronize(g->timeline[1]));
  float b = 0;
  IR_CUDA(cudaEventElapsedTime(&b, g->timeline[0], g->timeline[1]));
  stats->kernel_ms = b;
  return IR_OK;
}

/* One launch of the persistent kernel; its counters are those of frame parity `epoch`. */
static ir_status persistent_frame(ir_renderer *r, const ir_frame_desc *f, const ir_gpu_frame *hf, bool timed,
                                  ir_frame_stats *stats, char err[IR_ERR_LEN]) {
  struct ir_gpu_state *g = r->gpu;
  int mode = g->trace_mode;
  if (!g->persist_blocks[mode]) IR_CUDA(ir_persistent_blocks(mode, &g->persist_blocks[mode]));
  ir_persist_args a;
  a.image = g->d_image;
  a.depth = g->d_depth;
  a.counters = g->d_persist;
  a.epoch = ++g->persist_epoch;
  a.tiles = ir_persist_tiles(hf->p.cam.win_w, hf->p.cam.win_h);
  a.step_batches = ir_frame_step_batches(f);
  a.method = f->method;
  a.blocks = g->persist_blocks[mode];
  a.phase_cycles = NULL;
  a.secondary = f->secondary;
  if (timed) {
    a.phase_cycles = g->d_phase_cycles;
    IR_CUDA(cudaMemsetAsync(g->d_phase_cycles, 0, IR_PERSIST_PHASES * sizeof(unsigned long long), g->stream));
    IR_CUDA(cudaEventRecord(g->timeline[0], g->stream));
  }
  IR_CUDA(ir_persistent_launch(*hf, a, mode, g->stream));
  if (!timed) return IR_OK;
  IR_CUDA(cudaEventRecord(g->timeline[1], g->stream));
  IR_CUDA(cudaEventSynchronize(g->timeline[1]));
  float b = 0;
  IR_CUDA(cudaEventElapsedTime(&b, g->timeline[0], g->timeline[1]));
  stats->kernel_ms = b;
  /* The kernel's time split by the blocks' cycles in each phase (the pass's barriers included). */
  unsigned long long cycles[IR_PERSIST_PHASES], total = 0;
  IR_CUDA(cudaMemcpy(cycles, g->d_phase_cycles, sizeof cycles, cudaMemcpyDeviceToHost));
  for (int i = 0; i < IR_PERSIST_PHASES; i++) total += cycles[i];
  if (total) {
    stats->intersect_ms = b * (double)cycles[IR_PHASE_STEP] / (double)total;
    stats->compact_ms = b * (double)cycles[IR_PHASE_COMPACT] / (double)total;
    stats->shade_ms = b * (double)cycles[IR_PHASE_SHADE] / (double)total;
    stats->raygen_ms = b * (double)cycles[IR_PHASE_GENERATE] / (double)total;
    stats->secondary_ms = b * (double)cycles[IR_PHASE_SECONDARY] / (double)total;
  }
  return IR_OK;
}

static ir_status run_frame(ir_renderer *r, const ir_frame_desc *f, bool host_loop, bool timed, ir_frame_stats *stats,
                           char err[IR_ERR_LEN]) {
  ir_gpu_frame hf;
  ir_status st = prepare_frame(r, f, &hf, err);
  if (st == IR_OK && f->window_on) st = fill_outside(r->gpu, f, &hf.p.cam, err);
  if (st != IR_OK || hf.pixels == 0) return st; /* an empty window: no rays */
  switch (f->pipeline) {
  case IR_PIPELINE_MULTI:
  case IR_PIPELINE_PAPER: return ir_gpu_multi_frame(r, f, host_loop, timed, stats, err);
  case IR_PIPELINE_PERSISTENT: return persistent_frame(r, f, &hf, timed, stats, err);
  default: return single_frame(r, f, &hf, timed, stats, err);
  }
}

/* The running mean of accumulated frames (ir_frame_desc.accumulate): adds the frame's pixels to
 * the sums (when `add`; `first`: they replace them) and writes the mean, rounded as the CPU
 * renderer rounds it (ir_accumulate_pixel). */
static __global__ void accumulate_kernel(uint32_t *__restrict__ image, float4 *__restrict__ sums, uint32_t n,
                                         bool add, bool first, float count) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float4 s = sums[i];
  float q[4] = {s.x, s.y, s.z, s.w};
  image[i] = ir_accumulate_pixel(image[i], q, add, first, count);
  sums[i] = make_float4(q[0], q[1], q[2], q[3]);
}

/* After the frame's pixels are written: the accumulation the frame asks for. `again`: the
 * diagnostic pass redrew the frame; its mean is written without adding it twice. */
static ir_status accumulate_frame(ir_renderer *r, const ir_frame_desc *f, bool again, char err[IR_ERR_LEN]) {
  struct ir_gpu_state *g = r->gpu;
  size_t n = (size_t)f->width * (size_t)f->height;
  if (!f->accumulate) {
    g->accum_count = 0;
    return IR_OK;
  }
  if (!again) {
    if (n > g->accum_pixels) {
      IR_CUDA(cudaFree(g->d_accum)); /* waits for the frames that still add into it */
      g->d_accum = NULL;
      g->accum_pixels = 0;
      IR_CUDA(cudaMalloc(&g->d_accum, n * sizeof(float4)));
      g->accum_pixels = n;
      g->accum_count = 0;
    }
    if (f->sample_frame == 0 || f->width != g->accum_width || f->height != g->accum_height) g->accum_count = 0;
  }
  bool add = !again && g->accum_count < IR_ACCUMULATE_MAX, first = add && g->accum_count == 0;
  if (add) g->accum_count++;
  accumulate_kernel<<<ir_grid_for(n), IR_BLOCK, 0, g->stream>>>(g->d_image, g->d_accum, (uint32_t)n, add, first,
                                                                (float)g->accum_count);
  IR_CUDA(cudaGetLastError());
  g->accum_width = f->width;
  g->accum_height = f->height;
  return IR_OK;
}

ir_status ir_gpu_render_frame(ir_renderer *r, const ir_frame_desc *f, ir_frame_stats *stats, char err[IR_ERR_LEN]) {
  struct ir_gpu_state *g = r->gpu;
  /* Per-ray buffers hold the tiled ray ids, a few more than the pixels. */
  size_t rays = ir_tiled_ray_count(f->width, f->height);
  ir_status st = ensure_capacity(r, rays, err);
  if (st != IR_OK) return st;
  bool multi = f->pipeline == IR_PIPELINE_MULTI || f->pipeline == IR_PIPELINE_PAPER;
  /* Lit multi frames: a hit record per ray, and chunks of up to IR_SEC_RAYS_PER_PIXEL secondary
   * rays per pixel (more rays a hit run in more chunks). */
  if (f->pipeline == IR_PIPELINE_MULTI && (f->ao_samples > 0 || f->shadows || f->light_on)) {
    size_t per_pixel = (size_t)f->ao_samples + (f->shadows ? 1u : 0u);
    if (per_pixel < 1) per_pixel = 1;
    if (per_pixel > IR_SEC_RAYS_PER_PIXEL) per_pixel = IR_SEC_RAYS_PER_PIXEL;
    if ((st = ir_gpu_sec_reserve(g, g->capacity, g->capacity * per_pixel, err)) != IR_OK) return st;
  }
  bool host_loop = f->host_loop || !ir_compact_supports_device_n(f->method);

  g->skip_rebuilt = false;
  IR_CUDA(cudaEventRecord(g->ev_start, g->stream));
  if ((st = run_frame(r, f, host_loop, false, NULL, err)) != IR_OK) return st;
  if ((st = accumulate_frame(r, f, false, err)) != IR_OK) return st;
  IR_CUDA(cudaEventRecord(g->ev_stop, g->stream));
  r->width = f->width;
  r->height = f->height;
  if (!stats) return IR_OK;

  memset(stats, 0, sizeof *stats);
  IR_CUDA(cudaEventSynchronize(g->ev_stop));
  float ms = 0.0f;
  IR_CUDA(cudaEventElapsedTime(&ms, g->ev_start, g->ev_stop));
  stats->frame_ms = ms;
  if (g->skip_timed) { /* the map's last rebuild, done by now: read its time once */
    float skip = 0.0f;
    IR_CUDA(cudaEventElapsedTime(&skip, g->skip_ev[0], g->skip_ev[1]));
    g->skip_ms = skip;
    g->skip_timed = false;
  }
  stats->skip_ms = g->skip_ms;
  stats->skip_rebuilt = g->skip_rebuilt;
  int win[4];
  ir_frame_window(f, win);
  bool traced = win[2] > win[0] && win[3] > win[1]; /* an empty window runs no pipeline */
  if (multi && traced) {
    IR_CUDA(cudaMemcpy(g->h_counters, g->d_counters, sizeof(ir_gpu_counters), cudaMemcpyDeviceToHost));
    const ir_gpu_counters *c = g->h_counters;
    if (c->sec_capped) {
      snprintf(err, IR_ERR_LEN,
               "the multi pipeline's occlusion and shadow rays did not finish within the rounds they can take "
               "(%u): an internal error, and the frame is incomplete; the single or persistent pipeline draws it",
               c->sec_rounds);
      return IR_ERR_RUNTIME;
    }
    stats->rays_generated = c->generated;
    stats->rays_hit = c->hits;
    stats->iterations = c->generated ? (int)c->round : 0;
    stats->tail_rays = c->tail;
    stats->secondary_rays = c->sec_rays;
    stats->secondary_chunks = (int)c->sec_chunks;
    memcpy(stats->traverse_rays, c->trav_hist, sizeof stats->traverse_rays);
    memcpy(stats->intersect_rays, c->isect_hist, sizeof stats->intersect_rays);
    stats->graph = g->last_graph;
    stats->graph_resized =
        g->last_graph && g->graph_sized[ir_graph_slot(f->pipeline == IR_PIPELINE_PAPER, f->method)] && c->resize_errors == 0;
  } else if (f->pipeline == IR_PIPELINE_PERSISTENT && traced) {
    IR_CUDA(cudaMemcpy(g->h_persist, g->d_persist + (g->persist_epoch & 1u), sizeof(ir_persist_counters),
                       cudaMemcpyDeviceToHost));
    stats->rays_generated = g->h_persist->generated;
    stats->rays_hit = g->h_persist->hits;
    stats->iterations = (int)g->h_persist->rounds;
  }
  if (!f->stage_timing) return IR_OK;
  /* The diagnostic pass: the same frame again, host-driven, with events between stages. */
  if ((st = run_frame(r, f, true, true, stats, err)) != IR_OK) return st;
  return accumulate_frame(r, f, true, err);
}

/* Frames come back through the device's pinned staging buffers (transfer/transfer.h): a pageable
 * copy of a 1024^2 frame would cost more than drawing it. */
static ir_status read_back(struct ir_gpu_state *g, void *host, const void *device, size_t bytes, char err[IR_ERR_LEN]) {
  ir_xfer_pool *pool = NULL;
  ir_status st = ir_xfer_pool_of(g->device, &pool, err);
  return st == IR_OK ? ir_xfer_download(pool, host, device, bytes, g->stream, err) : st;
}

ir_status ir_gpu_read_image(ir_renderer *r, uint8_t *rgba, char err[IR_ERR_LEN]) {
  return read_back(r->gpu, rgba, r->gpu->d_image, (size_t)r->width * (size_t)r->height * 4, err);
}

ir_status ir_gpu_read_depth(ir_renderer *r, float *depth, char err[IR_ERR_LEN]) {
  return read_back(r->gpu, depth, r->gpu->d_depth, (size_t)r->width * (size_t)r->height * sizeof(float), err);
}

const void *ir_gpu_device_image(const ir_renderer *r) { return r->gpu ? r->gpu->d_image : NULL; }
const float *ir_gpu_device_depth(const ir_renderer *r) { return r->gpu ? r->gpu->d_depth : NULL; }
