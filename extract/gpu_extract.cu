/* The GPU extractor: device state, buffers that grow and are kept, and the sequence of one
 * extraction (gpu_internal.cuh lists the stages):
 *
 *   per surface: brick test + compaction of the active bricks -> read the active count (1st
 *   host read) -> classification with the candidates' compaction -> scan of the brick counts ->
 *   read the totals (2nd host read) -> size check, buffers grown if needed -> vertices, triangles
 *   then, for host output, the device -> host copies. Into the caller's arrays (IR_MESH_CALLER)
 *   the count phases of all surfaces come first, for the totals the arrays are asked for with.
 *
 * The two host reads size what follows (the classification grid and its tables, the mesh), so no
 * buffer is ever sized for a worst case it cannot hold, and a mesh too large for the GPU is refused
 * before anything is allocated for it. Once the buffers have grown, repeated extractions of similar
 * meshes allocate nothing, and InK-Compact sends classification, scan and generation out before
 * the reads, on the last surface's sizes, checked on the device (one host read, after generation;
 * count_surface). Every CUDA call and launch is checked (IR_GX_CUDA).
 */
#include <stdlib.h>
#include <string.h>

#include <cub/device/device_scan.cuh>

#include "extract/gpu_internal.cuh"
#include "transfer/transfer.h"

ir_status ir_gx_cuda_fail(char err[IR_ERR_LEN], cudaError_t e, const char *call, const char *file, int line) {
  const char *base = strrchr(file, '/');
  snprintf(err, IR_ERR_LEN, "GPU error at %s:%d in %s: %s (%s)", base ? base + 1 : file, line, call,
           cudaGetErrorString(e), cudaGetErrorName(e));
  return IR_ERR_RUNTIME;
}

static double mib(size_t bytes) { return (double)bytes / (1024.0 * 1024.0); }

/* Allocates `bytes` in *ptr after freeing what it held, first checking that the GPU has them, so
 * that a request too large is refused with what it needs instead of a bare out-of-memory. */
static ir_status reallocate(void **ptr, size_t bytes, const char *what, char err[IR_ERR_LEN]) {
  IR_GX_CUDA(cudaFree(*ptr));
  *ptr = NULL;
  if (bytes == 0) return IR_OK;
  size_t free_bytes = 0, total = 0;
  IR_GX_CUDA(cudaMemGetInfo(&free_bytes, &total));
  cudaError_t e = bytes > free_bytes ? cudaErrorMemoryAllocation : cudaMalloc(ptr, bytes);
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    snprintf(err, IR_ERR_LEN, "not enough GPU memory: %s needs %.1f MiB, %.1f MiB of %.1f MiB are free; extract a "
             "region, fewer surfaces, or use --device cpu", what, mib(bytes), mib(free_bytes), mib(total));
    return IR_ERR_RUNTIME;
  }
  IR_GX_CUDA(e);
  return IR_OK;
}
#define IR_GX_GROW(ptr, bytes, what)                                              \
  do {                                                                            \
    ir_status ir_s_ = reallocate((void **)&(ptr), (bytes), (what), err);          \
    if (ir_s_ != IR_OK) return ir_s_;                                             \
  } while (0)

static __global__ void iota_kernel(uint32_t *out, size_t n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = (uint32_t)i;
}

static cudaError_t fill_iota(uint32_t *out, size_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  iota_kernel<<<(unsigned)((n + 255) / 256), 256, 0, stream>>>(out, n);
  return cudaGetLastError();
}

/* ---- Create, destroy ------------------------------------------------------------------------------ */
static ir_status create_state(struct ir_gpu_extract *x, const ir_extractor *ex, char err[IR_ERR_LEN]) {
  IR_GX_CUDA(cudaGetDevice(&x->device));
  IR_GX_CUDA(cudaStreamCreateWithFlags(&x->stream, cudaStreamNonBlocking));
  for (int k = 0; k < 6; k++) IR_GX_CUDA(cudaEventCreate(&x->ev[k]));
  IR_GX_CUDA(cudaMalloc(&x->d_cases, sizeof ex->cases));
  IR_GX_CUDA(cudaMemcpy(x->d_cases, ex->cases, sizeof ex->cases, cudaMemcpyHostToDevice));
  IR_GX_CUDA(cudaMalloc(&x->d_counters, sizeof(ir_gx_counters)));
  IR_GX_CUDA(cudaMallocHost(&x->h_counters, sizeof(ir_gx_counters)));
  IR_GX_CUDA(cudaMalloc(&x->d_nonfinite, sizeof(int)));
  IR_GX_CUDA(ir_compact_ctx_create(&x->cctx, 0));
  return IR_OK;
}

ir_status ir_gpu_extract_create(ir_extractor *ex, char err[IR_ERR_LEN]) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    snprintf(err, IR_ERR_LEN, "no CUDA device available (%s); use --device cpu to extract on the CPU",
             e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    return IR_ERR_RUNTIME;
  }
  struct ir_gpu_extract *x = (struct ir_gpu_extract *)calloc(1, sizeof *x);
  if (!x) {
    snprintf(err, IR_ERR_LEN, "out of host memory creating the GPU extractor");
    return IR_ERR_RUNTIME;
  }
  ex->gpu = x;
  ir_status status = create_state(x, ex, err);
  if (status != IR_OK) ir_gpu_extract_destroy(ex); /* releases what was built */
  return status;
}

void ir_gpu_extract_destroy(ir_extractor *ex) {
  struct ir_gpu_extract *x = ex->gpu;
  if (!x) return;
  if (x->stream) cudaStreamSynchronize(x->stream);
  void *buffers[] = {x->d_cases, x->d_counters, x->d_nonfinite, x->d_voxels_owned, x->d_color_owned, x->d_colormap,
                     x->d_ranges, x->d_brick_ids, x->d_brick_flags, x->d_active, x->d_brick_remove, x->d_slot_of,
                     x->d_counts, x->d_brick_scan, x->d_cub_temp, x->d_edge_table, x->d_cell_nibbles,
                     x->d_cell_prefix, x->d_points, x->d_cells, x->d_point_flags, x->d_cell_flags, x->d_identity,
                     x->d_point_remove, x->d_cell_remove, x->d_positions,
                     x->d_normals, x->d_values, x->d_colors, x->d_triangles};
  for (size_t k = 0; k < sizeof buffers / sizeof buffers[0]; k++) cudaFree(buffers[k]);
  if (x->h_counters) cudaFreeHost(x->h_counters);
  for (int k = 0; k < 6; k++)
    if (x->ev[k]) cudaEventDestroy(x->ev[k]);
  if (x->cctx) ir_compact_ctx_destroy(x->cctx);
  if (x->stream) cudaStreamDestroy(x->stream);
  free(x);
  ex->gpu = NULL;
}

cudaStream_t ir_gpu_extract_stream(const ir_extractor *ex) { return ex->gpu ? ex->gpu->stream : NULL; }

ir_status ir_gpu_extract_ranges(const ir_extractor *ex, ir_mc_range *ranges, char err[IR_ERR_LEN]) {
  const struct ir_gpu_extract *x = ex->gpu;
  if (!x || !ex->have_grid) {
    snprintf(err, IR_ERR_LEN, "no grid on the GPU extractor");
    return IR_ERR_INPUT;
  }
  IR_GX_CUDA(cudaMemcpyAsync(ranges, x->d_ranges, ex->brick_count * sizeof(ir_mc_range), cudaMemcpyDeviceToHost,
                             x->stream));
  IR_GX_CUDA(cudaStreamSynchronize(x->stream));
  return IR_OK;
}

/* ---- The grid ------------------------------------------------------------------------------------- */
/* A grid's voxels on the device: the caller's device pointer, or an upload into an owned buffer. */
static ir_status place_voxels(struct ir_gpu_extract *x, const ir_extract_grid *grid, void **owned, size_t *cap,
                              const void **placed, const char *what, char err[IR_ERR_LEN]) {
  size_t bytes = grid->dims[0] * grid->dims[1] * grid->dims[2] * ir_mc_type_size(grid->type);
  if (grid->device_pointer) {
    cudaPointerAttributes attr;
    cudaError_t e = cudaPointerGetAttributes(&attr, grid->voxels);
    if (e != cudaSuccess || (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged)) {
      (void)cudaGetLastError();
      snprintf(err, IR_ERR_LEN, "%s: voxels are marked as a device pointer but CUDA does not know them as device "
               "memory", what);
      return IR_ERR_INPUT;
    }
    *placed = grid->voxels;
    return IR_OK;
  }
  if (bytes > *cap) {
    *cap = 0; /* the old buffer goes first: a failure below leaves nothing stale behind */
    IR_GX_GROW(*owned, bytes, what);
    *cap = bytes;
  }
  /* Through the device's pinned staging buffers (transfer.h): a pageable copy runs at ~1 GB/s. */
  ir_xfer_pool *pool = NULL;
  ir_status st = ir_xfer_pool_of(x->device, &pool, err);
  if (st == IR_OK) st = ir_xfer_upload(pool, *owned, grid->voxels, bytes, x->stream, err);
  if (st != IR_OK) return st;
  *placed = *owned;
  return IR_OK;
}

ir_status ir_gpu_extract_set_grid(ir_extractor *ex, const ir_extract_grid *grid, char err[IR_ERR_LEN]) {
  struct ir_gpu_extract *x = ex->gpu;
  x->d_color = NULL;
  ex->color_voxels = NULL;
  if (ex->brick_count >= ((size_t)1 << 31)) {
    snprintf(err, IR_ERR_LEN, "grid %zux%zux%zu: %zu bricks of 16^3 points, more than the GPU extractor indexes "
             "(2^31); extract a region", grid->dims[0], grid->dims[1], grid->dims[2], ex->brick_count);
    return IR_ERR_INPUT;
  }
  ir_status status = place_voxels(x, grid, &x->d_voxels_owned, &x->voxels_cap, &x->d_voxels, "the grid", err);
  if (status != IR_OK) return status;
  size_t n = ex->brick_count;
  if (n > x->brick_cap) {
    x->brick_cap = 0; /* until every buffer below has grown */
    IR_GX_GROW(x->d_ranges, n * sizeof(ir_mc_range), "the brick ranges");
    IR_GX_GROW(x->d_brick_ids, n * sizeof(uint32_t), "the brick list");
    IR_GX_GROW(x->d_brick_flags, n, "the brick flags");
    IR_GX_GROW(x->d_active, n * sizeof(uint32_t), "the active brick list");
    IR_GX_GROW(x->d_brick_remove, n * sizeof(uint32_t), "the brick removal list");
    IR_GX_GROW(x->d_slot_of, n * sizeof(uint32_t), "the brick slots");
    IR_GX_GROW(x->d_counts, 4 * n * sizeof(unsigned long long), "the brick counts");
    unsigned tiles = (unsigned)((n + IR_GX_BRICK_THREADS - 1) / IR_GX_BRICK_THREADS);
    IR_GX_GROW(x->d_brick_scan, ir_ink_scan_bytes(tiles), "the brick look-back state");
    size_t temp = 0;
    IR_GX_CUDA(cub::DeviceScan::ExclusiveSum(NULL, temp, x->d_counts, x->d_counts, n));
    IR_GX_GROW(x->d_cub_temp, temp, "the scan scratch");
    x->cub_temp_bytes = temp;
    IR_GX_CUDA(fill_iota(x->d_brick_ids, n, x->stream));
    x->brick_cap = n;
  }
  IR_GX_CUDA(cudaMemsetAsync(x->d_nonfinite, 0, sizeof(int), x->stream));
  IR_GX_CUDA(ir_gx_launch_ranges(ex->grid, x->d_voxels, x->d_ranges, x->d_nonfinite, x->stream));
  int nonfinite = 0;
  IR_GX_CUDA(cudaMemcpyAsync(&nonfinite, x->d_nonfinite, sizeof nonfinite, cudaMemcpyDeviceToHost, x->stream));
  IR_GX_CUDA(cudaStreamSynchronize(x->stream));
  ex->all_finite = nonfinite == 0;
  return IR_OK;
}

ir_status ir_gpu_extract_set_color_grid(ir_extractor *ex, const ir_extract_grid *grid, char err[IR_ERR_LEN]) {
  struct ir_gpu_extract *x = ex->gpu;
  x->d_color = NULL;
  ex->color_voxels = NULL;
  if (!grid) return IR_OK;
  ir_status status = place_voxels(x, grid, &x->d_color_owned, &x->color_cap, &x->d_color, "the colour grid", err);
  if (status != IR_OK) return status;
  IR_GX_CUDA(cudaStreamSynchronize(x->stream)); /* the caller may free its host copy now */
  x->color_type = (int)grid->type;
  ex->color_voxels = x->d_color;
  ex->color_type = x->color_type;
  return IR_OK;
}

/* ---- Buffers sized by the active bricks ------------------------------------------------------------- */
/* The compaction context's scratch for out-of-kernel calls on streams of up to n elements. */
static ir_status reserve_compaction(struct ir_gpu_extract *x, size_t n, char err[IR_ERR_LEN]) {
  if (ir_compact_ctx_capacity(x->cctx) >= n) return IR_OK;
  if (ir_compact_ctx_reserve(x->cctx, n) != cudaSuccess) {
    snprintf(err, IR_ERR_LEN, "compaction scratch for %zu elements: %s", n, ir_compact_last_error(x->cctx));
    return IR_ERR_RUNTIME;
  }
  return IR_OK;
}

static ir_status reserve_slots(ir_extractor *ex, size_t active, int mode, char err[IR_ERR_LEN]) {
  struct ir_gpu_extract *x = ex->gpu;
  size_t candidates = active * IR_MC_BRICK_POINTS;
  if (active > x->slot_cap) {
    x->slot_cap = 0; /* until every buffer below has grown */
    IR_GX_GROW(x->d_edge_table, active * IR_MC_EDGE_WORDS * sizeof(uint2), "the edge tables");
    IR_GX_GROW(x->d_cell_nibbles, active * IR_MC_CELL_GROUPS * sizeof(uint4), "the cell tables");
    IR_GX_GROW(x->d_cell_prefix, active * IR_MC_CELL_GROUPS * sizeof(uint32_t), "the cell tables");
    /* The candidate methods' buffers are made again at their first use at this size. */
    IR_GX_GROW(x->d_points, 0, "released");
    IR_GX_GROW(x->d_cells, 0, "released");
    IR_GX_GROW(x->d_point_flags, 0, "released");
    IR_GX_GROW(x->d_cell_flags, 0, "released");
    IR_GX_GROW(x->d_identity, 0, "released");
    IR_GX_GROW(x->d_point_remove, 0, "released");
    IR_GX_GROW(x->d_cell_remove, 0, "released");
    x->slot_cap = active;
  }
  size_t slots = x->slot_cap * IR_MC_BRICK_POINTS;
  if (mode != IR_GX_INK_COMPACT && !x->d_cells) { /* the last one made: both exist */
    /* Candidate lists: every point and cell of every active brick at most. */
    IR_GX_GROW(x->d_points, slots * sizeof(uint32_t), "the candidate points");
    IR_GX_GROW(x->d_cells, slots * sizeof(uint32_t), "the candidate cells");
  }
  if (mode == IR_GX_FLAGS && !x->d_identity) { /* the last one made: all three exist */
    IR_GX_GROW(x->d_point_flags, slots, "the candidate flags");
    IR_GX_GROW(x->d_cell_flags, slots, "the candidate flags");
    IR_GX_GROW(x->d_identity, slots * sizeof(uint32_t), "the candidate stream");
    IR_GX_CUDA(fill_iota(x->d_identity, slots, x->stream));
  }
  if (mode == IR_GX_REMOVE && !x->d_cell_remove) { /* the last one made: both exist */
    IR_GX_GROW(x->d_point_remove, slots * sizeof(uint32_t), "the removal lists");
    IR_GX_GROW(x->d_cell_remove, slots * sizeof(uint32_t), "the removal lists");
  }
  if (mode == IR_GX_FLAGS || mode == IR_GX_REMOVE) return reserve_compaction(x, candidates, err);
  return IR_OK;
}

/* Grows a mesh buffer to `bytes`, keeping its first `kept` bytes (surfaces extracted before). */
static ir_status grow_keep(void **ptr, size_t bytes, size_t kept, cudaStream_t stream, char err[IR_ERR_LEN]) {
  /* Nothing to keep, or no buffer wanted (colours not asked for this time): a plain reallocation. */
  if (!kept || !bytes) return reallocate(ptr, bytes, "the mesh", err);
  void *fresh = NULL;
  IR_GX_CUDA(cudaMalloc(&fresh, bytes));
  cudaError_t e = cudaMemcpyAsync(fresh, *ptr, kept, cudaMemcpyDeviceToDevice, stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess) {
    cudaFree(fresh);
    snprintf(err, IR_ERR_LEN, "GPU error keeping the mesh's earlier surfaces while it grows: %s", cudaGetErrorString(e));
    return IR_ERR_RUNTIME;
  }
  IR_GX_CUDA(cudaFree(*ptr));
  *ptr = fresh;
  return IR_OK;
}

/* The mesh buffers for `vertices` and `triangles` in all, keeping the first `kept_*` (surfaces
 * extracted before). A mesh the GPU cannot hold is refused first, saying how much it needs. */
static ir_status reserve_mesh(struct ir_gpu_extract *x, size_t vertices, size_t triangles, bool colors,
                              size_t kept_vertices, size_t kept_triangles, bool *grew, char err[IR_ERR_LEN]) {
  bool grow_v = vertices > x->vertex_cap || (colors && !x->mesh_colors), grow_t = triangles > x->triangle_cap;
  if (!grow_v && !grow_t) return IR_OK;
  *grew = true;
  const size_t vertex_bytes = 7 * sizeof(float) + (colors ? 4 : 0), triangle_bytes = 3 * sizeof(uint32_t);
  size_t want = (grow_v ? vertices * vertex_bytes : 0) + (grow_t ? triangles * triangle_bytes : 0);
  /* Without kept surfaces the old buffers go before the new ones come; with them, both live at once. */
  size_t released = kept_vertices || kept_triangles ? 0
                                                    : (grow_v ? x->vertex_cap * (7 * sizeof(float) + (x->mesh_colors ? 4 : 0)) : 0) +
                                                          (grow_t ? x->triangle_cap * triangle_bytes : 0);
  size_t free_bytes = 0, total = 0;
  IR_GX_CUDA(cudaMemGetInfo(&free_bytes, &total));
  if (want > free_bytes + released) {
    snprintf(err, IR_ERR_LEN, "the mesh of %zu vertices and %zu triangles needs %.1f MiB of GPU memory, %.1f MiB of "
             "%.1f MiB are free; extract a region, fewer surfaces, or use --device cpu", vertices, triangles,
             mib(vertices * vertex_bytes + triangles * triangle_bytes), mib(free_bytes + released), mib(total));
    return IR_ERR_RUNTIME;
  }
  ir_status st = IR_OK;
  if (grow_v) {
    /* Whether the kept surfaces have colours to keep: read before the flag is cleared below. */
    const bool kept_colors = x->mesh_colors;
    x->vertex_cap = 0, x->mesh_colors = false; /* until every buffer below has grown */
    if ((st = grow_keep((void **)&x->d_positions, vertices * 12, kept_vertices * 12, x->stream, err)) != IR_OK ||
        (st = grow_keep((void **)&x->d_normals, vertices * 12, kept_vertices * 12, x->stream, err)) != IR_OK ||
        (st = grow_keep((void **)&x->d_values, vertices * 4, kept_vertices * 4, x->stream, err)) != IR_OK ||
        (st = grow_keep((void **)&x->d_colors, colors ? vertices * 4 : 0, kept_colors ? kept_vertices * 4 : 0,
                        x->stream, err)) != IR_OK)
      return st;
    x->vertex_cap = vertices;
    x->mesh_colors = colors;
  }
  if (grow_t) {
    x->triangle_cap = 0;
    if ((st = grow_keep((void **)&x->d_triangles, triangles * 12, kept_triangles * 12, x->stream, err)) != IR_OK) return st;
    x->triangle_cap = triangles;
  }
  return IR_OK;
}

/* ---- One surface ---------------------------------------------------------------------------------- */
static ir_gx_out stage_out(int mode, uint32_t *list, uint32_t *count, uint8_t *flags, uint32_t *remove, void *scan,
                           unsigned tiles) { /* scan: the look-back state of an InK-Compact emit, or NULL */
  ir_gx_out o;
  memset(&o, 0, sizeof o);
  o.mode = mode;
  o.list = list;
  o.count = count;
  o.flags = flags;
  o.remove = remove;
  if (mode == IR_GX_INK_COMPACT && scan) o.scan = ir_ink_scan_bind(scan, tiles);
  return o;
}

/* The out-of-kernel half of a stage: the flagged call, or Redzone's in-place removal. */
static ir_status compact_after(struct ir_gpu_extract *x, ir_compact_method method, int mode, const uint32_t *identity,
                               const uint8_t *flags, uint32_t *list, uint32_t *count, const uint32_t *d_n, size_t n,
                               const uint32_t *remove, const uint32_t *d_k, char err[IR_ERR_LEN]) {
  cudaError_t e = cudaSuccess;
  if (mode == IR_GX_FLAGS) e = ir_compact_flagged(x->cctx, method, identity, flags, list, count, n, x->stream);
  else if (mode == IR_GX_REMOVE) e = ir_compact_remove_indices_dn(x->cctx, method, list, d_n, n, remove, d_k, n, count, x->stream);
  if (e != cudaSuccess) {
    snprintf(err, IR_ERR_LEN, "compaction (%s) failed: %s", ir_compact_method_get(method)->name,
             ir_compact_last_error(x->cctx));
    return IR_ERR_RUNTIME;
  }
  return IR_OK;
}

static __global__ void totals_kernel(const unsigned long long *vcount, const unsigned long long *vbase,
                                     const unsigned long long *tcount, const unsigned long long *tbase, size_t n,
                                     ir_gx_counters *c) {
  c->vertices = vbase[n - 1] + vcount[n - 1];
  c->triangles = tbase[n - 1] + tcount[n - 1];
}

static __global__ void set_lengths_kernel(ir_gx_counters *c, uint32_t bricks, uint32_t candidates) {
  c->n_bricks = bricks;
  c->n_candidates = candidates;
}

static ir_status read_counters(struct ir_gpu_extract *x, char err[IR_ERR_LEN]) {
  IR_GX_CUDA(cudaMemcpyAsync(x->h_counters, x->d_counters, sizeof(ir_gx_counters), cudaMemcpyDeviceToHost, x->stream));
  IR_GX_CUDA(cudaStreamSynchronize(x->stream));
  return IR_OK;
}

static float elapsed(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0.0f;
  return cudaEventElapsedTime(&ms, a, b) == cudaSuccess ? ms : 0.0f;
}

/* The per-brick counts summed in brick order (each brick's first vertex and triangle) and the
 * surface's totals into the counters. */
static ir_status scan_counts(struct ir_gpu_extract *x, const ir_gx_tables &t, size_t n, char err[IR_ERR_LEN]) {
  size_t temp = x->cub_temp_bytes; /* CUB takes the size by reference: a fresh copy for each call */
  IR_GX_CUDA(cub::DeviceScan::ExclusiveSum(x->d_cub_temp, temp, t.vcount, t.vbase, n, x->stream));
  temp = x->cub_temp_bytes;
  IR_GX_CUDA(cub::DeviceScan::ExclusiveSum(x->d_cub_temp, temp, t.tcount, t.tbase, n, x->stream));
  totals_kernel<<<1, 1, 0, x->stream>>>(t.vcount, t.vbase, t.tcount, t.tbase, n, x->d_counters);
  IR_GX_CUDA(cudaGetLastError());
  return IR_OK;
}

/* The extractor's mesh buffers as they are now. */
static ir_mesh_arrays own_arrays(const struct ir_gpu_extract *x) {
  ir_mesh_arrays a = {x->d_positions, x->d_normals, x->d_values, (uint8_t *)x->d_colors, x->d_triangles};
  return a;
}

/* What generation writes: surface s into `dest` from vertex v0 and triangle t0. */
static ir_gx_mesh_out mesh_out_of(const struct ir_gpu_extract *x, const ir_mc_job *job, int s,
                                  const ir_mesh_arrays &dest, size_t v0, size_t t0) {
  ir_gx_mesh_out m;
  memset(&m, 0, sizeof m);
  m.positions = dest.positions, m.normals = dest.normals, m.values = dest.values;
  m.colors = job->colors != IR_EXTRACT_COLORS_NONE ? (uint32_t *)dest.colors : NULL;
  m.triangles = dest.triangles;
  m.vertex_offset = (uint32_t)v0, m.triangle_offset = (uint32_t)t0;
  m.surface = s;
  m.values_from = job->values, m.colors_from = job->colors, m.surface_rgba = job->surface_rgba[s];
  m.axes_zyx = job->axes_zyx, m.flip_winding = job->flip_winding;
  m.colormap = x->d_colormap, m.colormap_size = job->colormap_size;
  m.color_range[0] = job->color_range[0], m.color_range[1] = job->color_range[1];
  m.color_voxels = x->d_color, m.color_type = x->color_type;
  return m;
}

/* The mesh of v vertices and t triangles in all: more than the 32-bit indices number is refused. */
static ir_status check_totals(size_t v, size_t t, char err[IR_ERR_LEN]) {
  if (v < ((size_t)1 << 31) && t < ((size_t)1 << 31)) return IR_OK;
  snprintf(err, IR_ERR_LEN, "the mesh has %zu vertices and %zu triangles: more than 2^31 - 1, the most the "
           "32-bit indices allow; extract a region or fewer surfaces", v, t);
  return IR_ERR_INPUT;
}

/* What a surface's count phase found; its tables stay in the buffers for its generation. */
typedef struct surface_counts {
  size_t active;              /* active bricks */
  size_t vertices, triangles; /* of this surface */
  uint32_t points, cells;     /* candidates (the methods that generate one thread per candidate) */
  bool generated;             /* InK-Compact's speculative generation already wrote the surface */
} surface_counts;

/* How far InK-Compact's count phase goes before the host reads the counts, once a surface has
 * sized the buffers: not at all, classification and the scan, or generation into the
 * extractor's buffers too. */
typedef enum count_ahead { AHEAD_NONE, AHEAD_CLASSIFY, AHEAD_GENERATE } count_ahead;

/* The count phase of surface s (brick test, classification, the scan of the brick counts) into
 * *k. `ahead`: AHEAD_GENERATE also generates into the extractor's buffers from vertex v0 and
 * triangle t0 before the host knows the counts. */
static ir_status count_surface(ir_extractor *ex, const ir_mc_job *job, int s, count_ahead ahead, size_t v0, size_t t0,
                               surface_counts *k, ir_extract_stats *stats, char err[IR_ERR_LEN]) {
  struct ir_gpu_extract *x = ex->gpu;
  const ir_mc_grid &g = ex->grid;
  const float iso = job->isovalues[s];
  const int mode = ir_gx_mode(job->method);
  const size_t n = ex->brick_count;
  ir_gx_counters *c = x->d_counters;
  const bool colors = job->colors != IR_EXTRACT_COLORS_NONE;
  memset(k, 0, sizeof *k);

  IR_GX_CUDA(cudaEventRecord(x->ev[0], x->stream));
  IR_GX_CUDA(cudaMemsetAsync(c, 0, sizeof *c, x->stream));
  unsigned brick_tiles = (unsigned)((n + IR_GX_BRICK_THREADS - 1) / IR_GX_BRICK_THREADS);
  ir_gx_out bricks = stage_out(mode, x->d_active,
                               mode == IR_GX_REMOVE ? &c->k_bricks : &c->active, x->d_brick_flags, x->d_brick_remove,
                               x->d_brick_scan, brick_tiles);
  if (mode == IR_GX_INK_COMPACT) IR_GX_CUDA(ir_ink_scan_reset(&bricks.scan, brick_tiles, x->stream));
  if (mode == IR_GX_REMOVE) {
    set_lengths_kernel<<<1, 1, 0, x->stream>>>(c, (uint32_t)n, 0);
    IR_GX_CUDA(cudaGetLastError());
  }
  ir_status st = mode == IR_GX_FLAGS || mode == IR_GX_REMOVE ? reserve_compaction(x, n, err) : IR_OK;
  if (st != IR_OK) return st;
  ir_gx_tables t = {x->d_edge_table, x->d_cell_nibbles, x->d_cell_prefix, x->d_counts, x->d_counts + n,
                    x->d_counts + 2 * n, x->d_counts + 3 * n, x->d_active, x->d_slot_of};
  IR_GX_CUDA(ir_gx_launch_bricks(g, job->rules, iso, x->d_ranges, n, bricks, t, x->stream));
  st = compact_after(x, job->method, mode, x->d_brick_ids, x->d_brick_flags, x->d_active, &c->active,
                               &c->n_bricks, n, x->d_brick_remove, &c->k_bricks, err);
  if (st != IR_OK) return st;
  /* InK-Compact hands no candidates on (its generation works per brick); its classification only
   * counts the cells with triangles into c->cells. */
  ir_gx_out points = stage_out(mode, x->d_points, mode == IR_GX_REMOVE ? &c->k_points : &c->points, x->d_point_flags,
                               x->d_point_remove, NULL, 0);
  ir_gx_out cells = stage_out(mode, x->d_cells, mode == IR_GX_REMOVE ? &c->k_cells : &c->cells, x->d_cell_flags,
                              x->d_cell_remove, NULL, 0);

  /* InK-Compact, once a surface has sized the buffers: classification, the scan and generation go
   * out before the host knows the active count, on a grid a little larger than the last surface's.
   * Their blocks check on the device that every active brick has a slot in the grid and, to
   * generate, that the mesh fits the buffers; one host read then says whether they ran, and the
   * stages run again at the sizes it gave where they did not (a larger surface). So the steady
   * state reads the counts once, after generation, instead of twice between the stages. Into the
   * caller's arrays only classification and the scan go ahead (AHEAD_CLASSIFY): the arrays' size
   * comes from the counts, which one host read then gives instead of two. */
  bool classified = false;
  if (ahead != AHEAD_NONE && mode == IR_GX_INK_COMPACT && x->last_active > 0 && x->slot_cap > 0) {
    const size_t want = x->last_active + x->last_active / 8 + 32;
    const uint32_t grid = (uint32_t)(want < x->slot_cap ? want : x->slot_cap);
    ir_gx_spec spec = {c, 0, 0};
    if (x->vertex_cap > v0 && (!colors || x->mesh_colors)) spec.room_vertices = x->vertex_cap - v0;
    if (x->triangle_cap > t0) spec.room_triangles = x->triangle_cap - t0;
    IR_GX_CUDA(ir_gx_launch_classify(g, job->rules, iso, x->d_voxels, x->d_cases, t, grid, &c->active, points, cells,
                                     x->stream));
    if ((st = scan_counts(x, t, n, err)) != IR_OK) return st;
    IR_GX_CUDA(cudaEventRecord(x->ev[1], x->stream));
    if (ahead == AHEAD_GENERATE) {
      IR_GX_CUDA(cudaEventRecord(x->ev[2], x->stream));
      IR_GX_CUDA(ir_gx_launch_bricks_generate(g, iso, x->d_voxels, x->d_cases, t, grid,
                                              mesh_out_of(x, job, s, own_arrays(x), v0, t0), spec, x->stream));
      IR_GX_CUDA(cudaEventRecord(x->ev[3], x->stream));
    }
    if ((st = read_counters(x, err)) != IR_OK) return st;
    const ir_gx_counters &h = *x->h_counters;
    classified = h.active <= grid;
    k->generated = ahead == AHEAD_GENERATE && classified && h.vertices <= spec.room_vertices &&
                   h.triangles <= spec.room_triangles;
  } else if ((st = read_counters(x, err)) != IR_OK) {
    return st;
  }
  size_t active = x->h_counters->active;
  if (stats) stats->active_bricks += active;
  if (active == 0) return IR_OK;
  if (active >= IR_GX_MAX_ACTIVE_BRICKS) { /* candidates (active * 4096) must stay below 2^32 */
    snprintf(err, IR_ERR_LEN, "isovalue %g: %zu active bricks; the GPU extractor numbers fewer than %zu in 32 "
             "bits; extract a region or use --device cpu", (double)iso, active, IR_GX_MAX_ACTIVE_BRICKS);
    return IR_ERR_INPUT;
  }
  x->last_active = active;

  if (!classified) { /* classification and the candidates' compaction, the scan, the totals read */
    if ((st = reserve_slots(ex, active, mode, err)) != IR_OK) return st;
    size_t candidates = active * IR_MC_BRICK_POINTS;
    t.edges = x->d_edge_table, t.cell_nibbles = x->d_cell_nibbles, t.cell_prefix = x->d_cell_prefix;
    points.list = x->d_points, points.flags = x->d_point_flags, points.remove = x->d_point_remove;
    cells.list = x->d_cells, cells.flags = x->d_cell_flags, cells.remove = x->d_cell_remove;
    if (mode == IR_GX_REMOVE) {
      set_lengths_kernel<<<1, 1, 0, x->stream>>>(c, (uint32_t)n, (uint32_t)candidates);
      IR_GX_CUDA(cudaGetLastError());
    }
    IR_GX_CUDA(ir_gx_launch_classify(g, job->rules, iso, x->d_voxels, x->d_cases, t, (uint32_t)active, NULL, points,
                                     cells, x->stream));
    st = compact_after(x, job->method, mode, x->d_identity, x->d_point_flags, x->d_points, &c->points,
                       &c->n_candidates, candidates, x->d_point_remove, &c->k_points, err);
    if (st == IR_OK)
      st = compact_after(x, job->method, mode, x->d_identity, x->d_cell_flags, x->d_cells, &c->cells,
                         &c->n_candidates, candidates, x->d_cell_remove, &c->k_cells, err);
    if (st != IR_OK || (st = scan_counts(x, t, n, err)) != IR_OK) return st;
    IR_GX_CUDA(cudaEventRecord(x->ev[1], x->stream));
    if ((st = read_counters(x, err)) != IR_OK) return st;
  }
  const ir_gx_counters h = *x->h_counters;
  k->active = active;
  k->vertices = (size_t)h.vertices, k->triangles = (size_t)h.triangles;
  k->points = h.points, k->cells = h.cells;
  if (stats) stats->cells_with_triangles += h.cells;
  return check_totals(v0 + k->vertices, t0 + k->triangles, err);
}

/* The generation of surface s from the tables of its count phase (just before) into `dest` from
 * vertex v0 and triangle t0 (unless the count's speculation did it), and the surface's times:
 * device_ms from its count phase's start, the host's work in between included. */
static ir_status generate_surface(ir_extractor *ex, const ir_mc_job *job, int s, const surface_counts &k,
                                  const ir_mesh_arrays &dest, size_t v0, size_t t0, ir_extract_stats *stats,
                                  char err[IR_ERR_LEN]) {
  struct ir_gpu_extract *x = ex->gpu;
  if (k.active == 0) return IR_OK;
  const ir_mc_grid &g = ex->grid;
  const float iso = job->isovalues[s];
  const size_t n = ex->brick_count;
  ir_gx_tables t = {x->d_edge_table, x->d_cell_nibbles, x->d_cell_prefix, x->d_counts, x->d_counts + n,
                    x->d_counts + 2 * n, x->d_counts + 3 * n, x->d_active, x->d_slot_of};
  if (!k.generated) {
    IR_GX_CUDA(cudaEventRecord(x->ev[2], x->stream));
    const ir_gx_mesh_out m = mesh_out_of(x, job, s, dest, v0, t0);
    if (ir_gx_mode(job->method) == IR_GX_INK_COMPACT) {
      const ir_gx_spec exact = {NULL, 0, 0};
      IR_GX_CUDA(ir_gx_launch_bricks_generate(g, iso, x->d_voxels, x->d_cases, t, (uint32_t)k.active, m, exact,
                                              x->stream));
    } else {
      IR_GX_CUDA(ir_gx_launch_vertices(g, iso, x->d_voxels, t, x->d_points, k.points, m, x->stream));
      IR_GX_CUDA(ir_gx_launch_triangles(g, iso, x->d_voxels, x->d_cases, t, x->d_cells, k.cells, m, x->stream));
    }
    IR_GX_CUDA(cudaEventRecord(x->ev[3], x->stream));
  }
  IR_GX_CUDA(cudaEventSynchronize(x->ev[3]));
  if (stats) {
    stats->count_ms += elapsed(x->ev[0], x->ev[1]);
    stats->generate_ms += elapsed(x->ev[2], x->ev[3]);
    stats->device_ms += elapsed(x->ev[0], x->ev[3]);
  }
  return IR_OK;
}

/* Host and device output: each surface counted, the extractor's mesh buffers grown to hold it
 * (keeping the surfaces before), then generated. */
static ir_status extract_appending(ir_extractor *ex, const ir_mc_job *job, ir_mesh *mesh, ir_extract_stats *stats,
                                   char err[IR_ERR_LEN]) {
  struct ir_gpu_extract *x = ex->gpu;
  const bool colors = job->colors != IR_EXTRACT_COLORS_NONE;
  for (int s = 0; s < job->surface_count; s++) {
    surface_counts k;
    size_t v0 = mesh->vertex_count, t0 = mesh->triangle_count;
    mesh->surface_vertex_start[s] = v0;
    mesh->surface_triangle_start[s] = t0;
    ir_status st = count_surface(ex, job, s, AHEAD_GENERATE, v0, t0, &k, stats, err);
    if (st != IR_OK) return st;
    if (k.active == 0) continue;
    size_t vn = v0 + k.vertices, tn = t0 + k.triangles;
    if (!k.generated) {
      bool grew = false;
      if ((st = reserve_mesh(x, vn, tn, colors, v0, t0, &grew, err)) != IR_OK) return st;
      if (stats && grew) stats->grew = true;
    }
    if ((st = generate_surface(ex, job, s, k, own_arrays(x), v0, t0, stats, err)) != IR_OK) return st;
    mesh->vertex_count = vn;
    mesh->triangle_count = tn;
  }
  return IR_OK;
}

/* Whether p is memory the extractor's device can write (device or managed, on that device). */
static bool device_writable(const void *p, int device) {
  if (!p) return true;
  cudaPointerAttributes attr;
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return (attr.type == cudaMemoryTypeDevice && attr.device == device) || attr.type == cudaMemoryTypeManaged;
}

/* Caller output: every surface counted first for the totals, the caller's arrays asked for, then
 * the last surface generated from the tables its count left, and the others counted again and
 * generated (one surface's tables at a time). */
static ir_status extract_into_caller(ir_extractor *ex, const ir_mc_job *job, ir_mesh *mesh, ir_extract_stats *stats,
                                     char err[IR_ERR_LEN]) {
  struct ir_gpu_extract *x = ex->gpu;
  const int last = job->surface_count - 1;
  surface_counts k;
  size_t v = 0, t = 0;
  for (int s = 0; s <= last; s++) {
    ir_status st = count_surface(ex, job, s, AHEAD_CLASSIFY, v, t, &k, stats, err);
    if (st != IR_OK) return st;
    /* A surface counted only for the totals: its count phase is device time of its own. */
    if (stats && s != last && k.active) {
      stats->count_ms += elapsed(x->ev[0], x->ev[1]);
      stats->device_ms += elapsed(x->ev[0], x->ev[1]);
    }
    mesh->surface_vertex_start[s] = v;
    mesh->surface_triangle_start[s] = t;
    v += k.vertices, t += k.triangles;
  }
  ir_status st = ir_mc_caller_arrays(job, v, t, mesh, err);
  if (st != IR_OK) return st;
  ir_mesh_arrays dest = {mesh->positions, mesh->normals, mesh->values, mesh->colors, mesh->triangles};
  const void *given[5] = {dest.positions, dest.normals, dest.values, dest.colors, dest.triangles};
  static const char *const names[5] = {"positions", "normals", "values", "colors", "triangles"};
  for (int a = 0; a < 5; a++) {
    if (!device_writable(given[a], x->device)) {
      snprintf(err, IR_ERR_LEN, "the allocate function gave %s array %p, which is not device memory of CUDA device %d "
               "(the GPU extractor's)", names[a], given[a], x->device);
      return IR_ERR_INPUT;
    }
    /* The kernels store 4-byte words: a misaligned array would fault and end the CUDA context. */
    if ((uintptr_t)given[a] % 4 != 0) {
      snprintf(err, IR_ERR_LEN, "the allocate function gave %s array %p, not aligned to 4 bytes", names[a], given[a]);
      return IR_ERR_INPUT;
    }
  }
  for (int j = 0; j <= last; j++) {
    int s = j == 0 ? last : j - 1;
    const size_t span_v = (s == last ? v : mesh->surface_vertex_start[s + 1]) - mesh->surface_vertex_start[s];
    const size_t span_t = (s == last ? t : mesh->surface_triangle_start[s + 1]) - mesh->surface_triangle_start[s];
    if (s != last) {
      if (span_v == 0 && span_t == 0) continue; /* an empty surface: nothing to generate */
      ir_extract_stats again; /* counted twice: the tally of bricks and cells once */
      memset(&again, 0, sizeof again);
      st = count_surface(ex, job, s, AHEAD_CLASSIFY, mesh->surface_vertex_start[s], mesh->surface_triangle_start[s], &k,
                         &again, err);
      if (st != IR_OK) return st;
    }
    /* The arrays were sized from the first count: a surface that counts otherwise now (its grid
     * changed under the allocate callback) would be written past them. */
    if (k.vertices != span_v || k.triangles != span_t) {
      snprintf(err, IR_ERR_LEN, "surface %d counted %zu vertices and %zu triangles, then %zu and %zu: the grid "
               "changed during the extraction", s, span_v, span_t, k.vertices, k.triangles);
      return IR_ERR_RUNTIME;
    }
    st = generate_surface(ex, job, s, k, dest, mesh->surface_vertex_start[s], mesh->surface_triangle_start[s], stats,
                          err);
    if (st != IR_OK) return st;
  }
  return IR_OK;
}

/* ---- The call ---------------------------------------------------------------------------------------- */
/* The mesh into host arrays: plain ones (huge pages for big arrays: fewer faults on the first touch)
 * through the device's staging buffers (several threads copy out of them while the next chunks
 * download), or blocks of the pinned cache, written by the DMA directly (transfer.h). */
static ir_status download(struct ir_gpu_extract *x, ir_mesh *mesh, bool colors, bool pinned, char err[IR_ERR_LEN]) {
  size_t v = mesh->vertex_count, t = mesh->triangle_count;
  for (int attempt = pinned ? 0 : 1; attempt < 2; attempt++) {
    /* Pinned blocks where asked for; where the system has no more to pin, plain pages (slower
     * to download into, but the mesh comes). */
    void *(*alloc)(size_t) = attempt == 0 ? ir_xfer_host_alloc : ir_xfer_host_pages;
    mesh->pinned = attempt == 0;
    mesh->positions = (float *)alloc((v ? v : 1) * 3 * sizeof(float));
    mesh->normals = (float *)alloc((v ? v : 1) * 3 * sizeof(float));
    mesh->values = (float *)alloc((v ? v : 1) * sizeof(float));
    mesh->triangles = (uint32_t *)alloc((t ? t : 1) * 3 * sizeof(uint32_t));
    mesh->colors = colors ? (uint8_t *)alloc((v ? v : 1) * 4) : NULL;
    if (mesh->positions && mesh->normals && mesh->values && mesh->triangles && (!colors || mesh->colors)) break;
    void *arrays[5] = {mesh->positions, mesh->normals, mesh->values, mesh->colors, mesh->triangles};
    for (int k = 0; k < 5; k++) attempt == 0 ? ir_xfer_host_free(arrays[k]) : free(arrays[k]);
    mesh->positions = mesh->normals = mesh->values = NULL, mesh->colors = NULL, mesh->triangles = NULL;
    mesh->pinned = false;
    if (attempt == 1) {
      snprintf(err, IR_ERR_LEN, "out of host memory for a mesh of %zu vertices and %zu triangles", v, t);
      return IR_ERR_RUNTIME;
    }
  }
  ir_xfer_pool *pool = NULL;
  ir_status st = ir_xfer_pool_of(x->device, &pool, err);
  struct {
    void *host;
    const void *device;
    size_t bytes;
  } arrays[5] = {{mesh->positions, x->d_positions, v * 3 * sizeof(float)},
                 {mesh->normals, x->d_normals, v * 3 * sizeof(float)},
                 {mesh->values, x->d_values, v * sizeof(float)},
                 {mesh->colors, x->d_colors, colors ? v * 4 : 0},
                 {mesh->triangles, x->d_triangles, t * 3 * sizeof(uint32_t)}};
  for (int k = 0; k < 5 && st == IR_OK; k++)
    st = ir_xfer_download(pool, arrays[k].host, arrays[k].device, arrays[k].bytes, x->stream, err);
  return st;
}

ir_status ir_gpu_extract(ir_extractor *ex, const ir_mc_job *job, ir_mesh *mesh, ir_extract_stats *stats,
                         char err[IR_ERR_LEN]) {
  struct ir_gpu_extract *x = ex->gpu;
  IR_GX_CUDA(cudaSetDevice(x->device));
  if (job->colors == IR_EXTRACT_COLORS_MAP) {
    size_t floats = (size_t)job->colormap_size * 3;
    if (floats > x->colormap_cap) {
      x->colormap_cap = 0;
      IR_GX_GROW(x->d_colormap, floats * sizeof(float), "the colour map");
      x->colormap_cap = floats;
    }
    IR_GX_CUDA(cudaMemcpyAsync(x->d_colormap, job->colormap, floats * sizeof(float), cudaMemcpyHostToDevice, x->stream));
  }
  ir_status status = job->output == IR_MESH_CALLER ? extract_into_caller(ex, job, mesh, stats, err)
                                                   : extract_appending(ex, job, mesh, stats, err);
  if (status != IR_OK) return status;
  mesh->surface_vertex_start[job->surface_count] = mesh->vertex_count;
  mesh->surface_triangle_start[job->surface_count] = mesh->triangle_count;
  bool colors = job->colors != IR_EXTRACT_COLORS_NONE;
  if (job->output == IR_MESH_CALLER) return IR_OK;
  if (job->output == IR_MESH_DEVICE) {
    mesh->positions = x->d_positions, mesh->normals = x->d_normals, mesh->values = x->d_values;
    mesh->colors = colors ? (uint8_t *)x->d_colors : NULL;
    mesh->triangles = x->d_triangles;
    return IR_OK;
  }
  double t0 = ir_mc_now_ms();
  ir_status st = download(x, mesh, colors, ex->pinned_mesh, err);
  if (stats) stats->download_ms = ir_mc_now_ms() - t0;
  return st;
}
