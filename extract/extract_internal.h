/* Internals of the extract module shared by its C and CUDA files; not part of the public API. */
#ifndef INKRAY_EXTRACT_INTERNAL_H
#define INKRAY_EXTRACT_INTERNAL_H

#include <stdio.h>

#include "extract/extract.h"
#include "extract/marching.cuh"

#ifdef __cplusplus
extern "C" {
#endif

/* A brick's value range: finite voxels of its points and the next point along each axis. */
typedef struct ir_mc_range {
  float lo, hi;
} ir_mc_range;

/* One extraction as the devices see it: what ir_extract resolved from its desc. */
typedef struct ir_mc_job {
  ir_mc_rules rules;
  int surface_count;
  float isovalues[IR_EXTRACT_MAX_SURFACES];
  ir_extract_values values;
  ir_extract_colors colors;
  uint32_t surface_rgba[IR_EXTRACT_MAX_SURFACES]; /* packed RGBA8 (ir_mc_rgba) */
  const float *colormap;
  int colormap_size;
  float color_range[2];
  ir_compact_method method;
  ir_mesh_output output;
  ir_mesh_allocate_fn allocate; /* IR_MESH_CALLER */
  void *allocate_user;
  bool axes_zyx, flip_winding; /* ir_extract_desc's */
} ir_mc_job;

struct ir_gpu_extract; /* gpu_extract.cu */

struct ir_extractor {
  ir_extract_device device;
  int threads;                 /* CPU */
  bool pinned_mesh;            /* GPU: host meshes from the pinned cache (ir_extractor_desc) */
  uint64_t cases[256];         /* ir_mc_build_cases */
  bool have_grid;
  ir_mc_grid grid;
  bool all_finite;             /* no NaN or infinite voxel (integer grids always) */
  const void *voxels;          /* CPU: the caller's; GPU: see gpu */
  const void *color_voxels;    /* the colour grid (CPU: the caller's; GPU: its device copy), or NULL */
  int color_type;
  ir_mc_range *ranges;         /* CPU: per brick */
  size_t brick_count;
  struct ir_gpu_extract *gpu;
};

/* The table of ir_mc_case_* entries, from the face rule (case_table.c); false if a case could not
 * be triangulated (a defect the tests would catch). */
bool ir_mc_build_cases(uint64_t cases[256]);

/* Bytes per voxel of a type (the data library's ir_voxel_type_size, without linking it). */
size_t ir_mc_type_size(int type);
/* The grid description of a plain array (spacing 0 -> 1; bricks from dims). */
void ir_mc_grid_of(const ir_extract_grid *in, ir_mc_grid *out);
/* Host-side brick ranges of a grid; returns whether every voxel is finite. Multithreaded. */
bool ir_mc_ranges_host(const ir_mc_grid *g, const void *voxels, ir_mc_range *ranges, int threads);
/* Runs fn(ctx, item) for item in [0, n) on `threads` threads (work handed out one item at a time). */
void ir_mc_parallel(size_t n, int threads, void (*fn)(void *ctx, size_t item), void *ctx);
int ir_mc_thread_count(int requested);
double ir_mc_now_ms(void);
/* ir_mesh_write of a host mesh through the writer of device meshes, its arrays cut into chunks of
 * `items_per_chunk` vertices or faces as the download would hand them over (mesh_io.c): the same
 * bytes as ir_mesh_write, for the tests of that writer without a GPU. */
ir_status ir_mesh_write_chunked(const ir_mesh *m, const char *path, size_t items_per_chunk, char err[IR_ERR_LEN]);

/* IR_MESH_CALLER: asks the caller for the arrays of a mesh of these totals, checks that each one
 * needed was given, and points the mesh at them (borrowed, with the totals as its counts). */
ir_status ir_mc_caller_arrays(const ir_mc_job *job, size_t vertices, size_t triangles, ir_mesh *mesh,
                              char err[IR_ERR_LEN]);

/* ---- Devices --------------------------------------------------------------------------------- */
ir_status ir_cpu_extract(ir_extractor *ex, const ir_mc_job *job, ir_mesh *mesh, ir_extract_stats *stats,
                         char err[IR_ERR_LEN]);

ir_status ir_gpu_extract_create(ir_extractor *ex, char err[IR_ERR_LEN]);
void ir_gpu_extract_destroy(ir_extractor *ex);
ir_status ir_gpu_extract_set_grid(ir_extractor *ex, const ir_extract_grid *grid, char err[IR_ERR_LEN]);
ir_status ir_gpu_extract_set_color_grid(ir_extractor *ex, const ir_extract_grid *grid, char err[IR_ERR_LEN]);
ir_status ir_gpu_extract(ir_extractor *ex, const ir_mc_job *job, ir_mesh *mesh, ir_extract_stats *stats,
                         char err[IR_ERR_LEN]);
cudaStream_t ir_gpu_extract_stream(const ir_extractor *ex);
/* The brick ranges of the grid set last, copied to ranges[brick_count] on the host (for the tests:
 * the GPU's against ir_mc_ranges_host). */
ir_status ir_gpu_extract_ranges(const ir_extractor *ex, ir_mc_range *ranges, char err[IR_ERR_LEN]);

#ifdef __cplusplus
}
#endif
#endif
