/* Internals of the render module shared by its C and CUDA files; not part of the public API. */
#ifndef INKRAY_RENDER_INTERNAL_H
#define INKRAY_RENDER_INTERNAL_H

#include "render/render.h"
#include "render/trace.cuh"

#ifdef __cplusplus
extern "C" {
#endif

struct ir_gpu_state; /* gpu_renderer.cu */

struct ir_renderer {
  ir_device device;
  const ir_volume *volume;
  ir_volume_view view;       /* CPU: voxels below; GPU: the texture */
  float *voxels_clean;       /* float volumes with +-Inf: a copy with NaN in their place */
  ir_bvh_layout layout;
  ir_brick_range *ranges;    /* per brick, host */
  ir_brick_range *cell_ranges; /* per cell of IR_WALK_CELLS voxels (the walk's finer grid), host */
  uint32_t cells[3];         /* that grid */
  int walk_cells;            /* the cells of frames without a BVH update: IR_WALK_CELLS or
                                IR_BRICK_CELLS, 0: per frame (ir_renderer_desc.walk_cells) */
  ir_bvh_node *nodes;        /* CPU device: this frame's tree */
  int threads;               /* CPU device */
  uint8_t *image;            /* CPU device: last frame, RGBA8 */
  float *depth;              /* CPU device: last frame's hit distances (INFINITY: none) */
  size_t image_capacity;     /* bytes */
  int width, height;         /* of the last frame */
  const ir_volume *color_volume; /* IR_COLOR_VOLUME frames: the second quantity (CPU: read) */
  ir_volume_view color_view;     /* CPU: its voxels; GPU: its texture */
  struct ir_gpu_state *gpu;
};

/* ---- Setup and per-frame helpers (C) ---------------------------------------------------------- */
/* Brick ranges and the implicit BVH layout of a volume (bvh_setup.c). Also replaces +-Inf by
 * NaN in a copy of float volumes (r->voxels_clean). */
ir_status ir_bvh_setup(ir_renderer *r, char err[IR_ERR_LEN]);
/* The explicit tree for a set of isovalues, level by level on the host. */
void ir_bvh_update_host(const ir_bvh_layout *L, const ir_brick_range *ranges, const ir_iso_set *iso,
                        ir_bvh_node *nodes);
/* Root index for ir_trace_params: IR_BVH_NONE when the root is invalid. */
uint32_t ir_bvh_root_or_none(const ir_bvh_node *root, uint32_t root_index);
/* Number of worker threads for `requested` (0 = all cores). */
int ir_cpu_thread_count(int requested);

/* Per-frame camera basis (camera.c). */
void ir_camera_prepare(const ir_camera *cam, const ir_volume *v, int width, int height, ir_cam_basis *out);
/* The parts of ir_trace_params that do not depend on the device. The walk's grid is the bricks,
 * valid by the BVH's leaves (p->nodes). */
void ir_trace_params_fill(const ir_renderer *r, const ir_frame_desc *f, ir_trace_params *p);
/* For frames without a BVH update: the walk's grid becomes the renderer's walk cells (the
 * bricks, or the cells of IR_WALK_CELLS voxels), valid where their ranges hold an isovalue
 * (brick_ranges or cell_ranges: the host's arrays or device copies), in runs of at most
 * f->run_bricks cells (0: IR_WALK_RUN_CELLS). */
void ir_trace_params_walk(const ir_renderer *r, const ir_frame_desc *f, const ir_brick_range *brick_ranges,
                          const ir_brick_range *cell_ranges, ir_trace_params *p);

/* ---- Devices ------------------------------------------------------------------------------------ */
ir_status ir_cpu_render_frame(ir_renderer *r, const ir_frame_desc *f, ir_frame_stats *stats, char err[IR_ERR_LEN]);

ir_status ir_gpu_create(ir_renderer *r, char err[IR_ERR_LEN]);
void ir_gpu_destroy(ir_renderer *r);
ir_status ir_gpu_render_frame(ir_renderer *r, const ir_frame_desc *f, ir_frame_stats *stats, char err[IR_ERR_LEN]);
ir_status ir_gpu_read_image(ir_renderer *r, uint8_t *rgba, char err[IR_ERR_LEN]);
ir_status ir_gpu_read_depth(ir_renderer *r, float *depth, char err[IR_ERR_LEN]);
const void *ir_gpu_device_image(const ir_renderer *r);
/* Uploads r->color_volume (NULL: frees the texture) and sets r->color_view.tex. */
ir_status ir_gpu_set_color_volume(ir_renderer *r, char err[IR_ERR_LEN]);

/* Milliseconds on a monotonic clock. */
double ir_now_ms(void);

#ifdef __cplusplus
}
#endif
#endif
