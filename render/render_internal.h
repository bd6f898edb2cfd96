/* Internals of the render module shared by its C and CUDA files; not part of the public API. */
#ifndef INKRAY_RENDER_INTERNAL_H
#define INKRAY_RENDER_INTERNAL_H

#include "render/render.h"
#include "render/trace.cuh"

#ifdef __cplusplus
extern "C" {
#endif

struct ir_gpu_state; /* gpu_renderer.cu */

/* A slot's volume on the CPU device: its ranges and, for float volumes with +-Inf, a copy with
 * NaN in their place (what the GPU's texture holds). */
typedef struct ir_cpu_slot {
  const ir_volume *volume;
  ir_brick_range *ranges, *cell_ranges;
  float *voxels_clean;
} ir_cpu_slot;

struct ir_renderer {
  ir_device device;
  const ir_volume *volume;    /* the slot in use's (a header until a slot is used) */
  ir_volume_view view;       /* CPU: voxels below; GPU: the texture */
  ir_bvh_layout layout;
  ir_brick_range *ranges;    /* CPU device: per brick, the slot in use's */
  ir_brick_range *cell_ranges; /* CPU device: per cell of IR_WALK_CELLS voxels (the walk's finer grid) */
  uint32_t cells[3];         /* that grid */
  int slot_count, slot_in_use; /* ir_renderer_set_slots; -1: none used yet (no frames) */
  ir_cpu_slot cpu_slots[IR_MAX_SLOTS];
  int walk_cells;            /* the cells of frames without a BVH update: IR_WALK_CELLS or
                                IR_BRICK_CELLS, 0: per frame (ir_renderer_desc.walk_cells) */
  ir_bvh_node *nodes;        /* CPU device: this frame's tree */
  uint8_t *skip, *skip_tmp;  /* CPU device: the walk's skip distances (skip.cuh) */
  size_t skip_capacity;      /* bytes of each */
  bool skip_made;            /* for these isovalues, cells and ranges: */
  ir_iso_set skip_iso;
  uint32_t skip_cells[3];
  const ir_brick_range *skip_ranges;
  unsigned skip_ranges_version, ranges_version; /* the latter bumped by every slot switch */
  double skip_ms;            /* the last rebuild's */
  int threads;               /* CPU device */
  uint8_t *image;            /* CPU device: last frame, RGBA8 */
  float *depth;              /* CPU device: last frame's hit distances (INFINITY: none) */
  size_t image_capacity;     /* bytes */
  int width, height;         /* of the last frame */
  float *accum;              /* CPU device: accumulated frames' RGBA sums (ir_frame_desc.accumulate) */
  size_t accum_pixels;       /* its size in pixels */
  int accum_width, accum_height; /* of the frames in it */
  uint32_t accum_count;      /* frames in it (0: the next accumulated frame starts it) */
  const ir_volume *color_volume; /* IR_COLOR_VOLUME frames: the second quantity (CPU: read) */
  ir_volume_view color_view;     /* CPU: its voxels; GPU: its texture */
  struct ir_gpu_state *gpu;
};

/* ---- Setup and per-frame helpers (C) ---------------------------------------------------------- */
/* The implicit BVH layout of the renderer's volume and the walk's cell grid (bvh_setup.c). */
ir_status ir_bvh_setup(ir_renderer *r, char err[IR_ERR_LEN]);
/* CPU device: a slot's brick and cell ranges for volume v (and its NaN copy when it holds +-Inf). */
ir_status ir_cpu_slot_fill(ir_renderer *r, ir_cpu_slot *slot, const ir_volume *v, char err[IR_ERR_LEN]);
void ir_cpu_slot_free(ir_cpu_slot *slot);
/* The explicit tree for a set of isovalues, level by level on the host. */
void ir_bvh_update_host(const ir_bvh_layout *L, const ir_brick_range *ranges, const ir_iso_set *iso,
                        ir_bvh_node *nodes);
/* Root index for ir_trace_params: IR_BVH_NONE when the root is invalid. */
uint32_t ir_bvh_root_or_none(const ir_bvh_node *root, uint32_t root_index);
/* Number of worker threads for `requested` (0 = all cores). */
int ir_cpu_thread_count(int requested);

/* The frame's traced pixels as x0, y0, x1, y1 (ir_frame_desc.window; the whole image without
 * one). */
static inline void ir_frame_window(const ir_frame_desc *f, int win[4]) {
  win[0] = f->window_on ? f->window[0] : 0;
  win[1] = f->window_on ? f->window[1] : 0;
  win[2] = f->window_on ? f->window[2] : f->width;
  win[3] = f->window_on ? f->window[3] : f->height;
}
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
const float *ir_gpu_device_depth(const ir_renderer *r);
/* Uploads r->color_volume (NULL: frees the texture) and sets r->color_view.tex. */
ir_status ir_gpu_set_color_volume(ir_renderer *r, char err[IR_ERR_LEN]);
/* The GPU's slots (gpu_volume.cu); ir_gpu_create makes slot 0. */
ir_status ir_gpu_set_slots(ir_renderer *r, int count, char err[IR_ERR_LEN]);
ir_status ir_gpu_slot_begin(ir_renderer *r, int slot, ir_volume_sink *sink, char err[IR_ERR_LEN]);
/* streamed: every piece of v came through the slot's sink (else v's voxels are uploaded now). */
ir_status ir_gpu_slot_end(ir_renderer *r, int slot, const ir_volume *v, bool streamed, char err[IR_ERR_LEN]);
/* Frames on the renderer's stream wait for the slot; its texture and ranges become the frame's. */
ir_status ir_gpu_use_slot(ir_renderer *r, int slot, char err[IR_ERR_LEN]);
ir_status ir_gpu_slot_times(ir_renderer *r, int slot, ir_slot_times *out, char err[IR_ERR_LEN]);
ir_status ir_gpu_volume_stats(ir_renderer *r, ir_volume_stats *out, char err[IR_ERR_LEN]);
/* The ranges of the slot in use, copied to the host (tests compare them with the CPU's). */
ir_status ir_gpu_read_ranges(ir_renderer *r, ir_brick_range *bricks, ir_brick_range *cells, char err[IR_ERR_LEN]);
/* The walk's skip distances of the last frame that used them (tests compare them with the
 * host's, ir_skip_map_host), `cells` cells; IR_ERR_INPUT before any frame has made them. */
ir_status ir_gpu_read_skip(ir_renderer *r, uint8_t *map, size_t cells, char err[IR_ERR_LEN]);

/* Milliseconds on a monotonic clock. */
double ir_now_ms(void);

#ifdef __cplusplus
}
#endif
#endif
