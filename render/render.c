/* The public renderer API: argument checks, then the CPU (cpu_renderer.c) or the GPU
 * (gpu_renderer.cu). Every check here gives IR_ERR_INPUT with a message naming the value. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/render_internal.h"

/* Volumes up to 2^20 voxels per axis (the CLI's limit); images up to 16384^2 pixels. */
#define IR_MAX_AXIS ((size_t)1 << 20)
#define IR_MAX_IMAGE_SIDE 16384

static ir_status check_volume(const ir_volume *v, char err[IR_ERR_LEN]) {
  if (!v) {
    snprintf(err, IR_ERR_LEN, "no volume given to the renderer (ir_renderer_desc.volume is NULL)");
    return IR_ERR_INPUT;
  }
  for (int k = 0; k < 3; k++) {
    if (v->dims[k] == 0 || v->dims[k] > IR_MAX_AXIS) {
      snprintf(err, IR_ERR_LEN, "volume '%s': %zux%zux%zu voxels; each axis must have 1 to %zu", v->name,
               v->dims[0], v->dims[1], v->dims[2], IR_MAX_AXIS);
      return IR_ERR_INPUT;
    }
    if (!(v->spacing[k] > 0.0f) || !isfinite(v->spacing[k])) {
      snprintf(err, IR_ERR_LEN, "volume '%s': spacing %g,%g,%g; each must be a positive number", v->name,
               (double)v->spacing[0], (double)v->spacing[1], (double)v->spacing[2]);
      return IR_ERR_INPUT;
    }
  }
  if ((unsigned)v->type >= IR_VOXEL_TYPE_COUNT) {
    snprintf(err, IR_ERR_LEN, "volume '%s': unknown voxel type %d", v->name, (int)v->type);
    return IR_ERR_INPUT;
  }
  size_t need = v->dims[0] * v->dims[1] * v->dims[2] * ir_voxel_type_size(v->type);
  if (!v->voxels || v->bytes < need) {
    snprintf(err, IR_ERR_LEN, "volume '%s': %zu bytes of voxels, expected %zu for %zux%zux%zu %s", v->name,
             v->voxels ? v->bytes : 0, need, v->dims[0], v->dims[1], v->dims[2], ir_voxel_type_name(v->type));
    return IR_ERR_INPUT;
  }
  return IR_OK;
}

ir_status ir_renderer_create(const ir_renderer_desc *desc, ir_renderer **out, char err[IR_ERR_LEN]) {
  if (out) *out = NULL;
  if (!desc || !out) {
    snprintf(err, IR_ERR_LEN, "ir_renderer_create: desc and out must not be NULL");
    return IR_ERR_INPUT;
  }
  if (desc->device != IR_DEVICE_GPU && desc->device != IR_DEVICE_CPU) {
    snprintf(err, IR_ERR_LEN, "unknown render device %d; use gpu or cpu", (int)desc->device);
    return IR_ERR_INPUT;
  }
  if (desc->cpu_threads < 0) {
    snprintf(err, IR_ERR_LEN, "cpu_threads %d: use 0 for all cores or a positive count", desc->cpu_threads);
    return IR_ERR_INPUT;
  }
  if (desc->walk_cells != 0 && desc->walk_cells != IR_WALK_CELLS && desc->walk_cells != IR_BRICK_CELLS) {
    snprintf(err, IR_ERR_LEN, "walk_cells %d: use %d, %d or 0 (automatic)", desc->walk_cells, IR_WALK_CELLS,
             IR_BRICK_CELLS);
    return IR_ERR_INPUT;
  }
  ir_status st = check_volume(desc->volume, err);
  if (st != IR_OK) return st;
  ir_renderer *r = calloc(1, sizeof *r);
  if (!r) {
    snprintf(err, IR_ERR_LEN, "out of host memory creating the renderer");
    return IR_ERR_RUNTIME;
  }
  r->device = desc->device;
  r->volume = desc->volume;
  r->threads = desc->cpu_threads;
  r->walk_cells = desc->walk_cells;
  st = ir_bvh_setup(r, err);
  if (st == IR_OK && r->device == IR_DEVICE_GPU) st = ir_gpu_create(r, err);
  if (st != IR_OK) {
    ir_renderer_destroy(r);
    return st;
  }
  *out = r;
  return IR_OK;
}

void ir_renderer_destroy(ir_renderer *r) {
  if (!r) return;
  if (r->gpu) ir_gpu_destroy(r);
  free(r->ranges);
  free(r->cell_ranges);
  free(r->nodes);
  free(r->image);
  free(r->depth);
  free(r->voxels_clean);
  free(r);
}

ir_status ir_renderer_set_color_volume(ir_renderer *r, const ir_volume *color_volume, char err[IR_ERR_LEN]) {
  if (!r) {
    snprintf(err, IR_ERR_LEN, "ir_renderer_set_color_volume: renderer must not be NULL");
    return IR_ERR_INPUT;
  }
  if (color_volume) {
    const ir_volume *v = r->volume;
    if (color_volume->dims[0] != v->dims[0] || color_volume->dims[1] != v->dims[1] ||
        color_volume->dims[2] != v->dims[2]) {
      snprintf(err, IR_ERR_LEN, "colour volume %.160s is %zux%zux%zu, but the volume is %zux%zux%zu: they must match",
               color_volume->name, color_volume->dims[0], color_volume->dims[1], color_volume->dims[2], v->dims[0],
               v->dims[1], v->dims[2]);
      return IR_ERR_INPUT;
    }
  }
  r->color_volume = color_volume;
  memset(&r->color_view, 0, sizeof r->color_view);
  if (color_volume) r->color_view = ir_volume_view_of(color_volume);
  return r->device == IR_DEVICE_GPU ? ir_gpu_set_color_volume(r, err) : IR_OK;
}

static ir_status check_frame(const ir_renderer *r, const ir_frame_desc *f, char err[IR_ERR_LEN]) {
  if (f->width < 1 || f->height < 1 || f->width > IR_MAX_IMAGE_SIDE || f->height > IR_MAX_IMAGE_SIDE) {
    snprintf(err, IR_ERR_LEN, "image size %dx%d: width and height must be between 1 and %d", f->width,
             f->height, IR_MAX_IMAGE_SIDE);
    return IR_ERR_INPUT;
  }
  if (!isfinite(f->isovalue)) {
    snprintf(err, IR_ERR_LEN, "isovalue %g: must be a finite number", (double)f->isovalue);
    return IR_ERR_INPUT;
  }
  if (f->surface_count < 0 || f->surface_count > IR_MAX_SURFACES) {
    snprintf(err, IR_ERR_LEN, "%d surfaces: a frame draws 0 to %d", f->surface_count, IR_MAX_SURFACES);
    return IR_ERR_INPUT;
  }
  for (int i = 0; i < f->surface_count; i++) {
    const ir_surface *s = &f->surfaces[i];
    bool ok = isfinite(s->isovalue) && s->opacity >= 0.0f && s->opacity <= 1.0f;
    for (int c = 0; c < 3; c++) ok = ok && s->color[c] >= 0.0f && s->color[c] <= 1.0f;
    if (!ok) {
      snprintf(err, IR_ERR_LEN, "surface %d: isovalue must be finite, colour and opacity between 0 and 1", i + 1);
      return IR_ERR_INPUT;
    }
  }
  if (f->clip_plane_on) {
    bool finite = true;
    for (int k = 0; k < 4; k++) finite = finite && isfinite(f->clip_plane[k]);
    if (!finite || (f->clip_plane[0] == 0.0f && f->clip_plane[1] == 0.0f && f->clip_plane[2] == 0.0f)) {
      snprintf(err, IR_ERR_LEN, "clip plane: needs a nonzero normal and finite numbers");
      return IR_ERR_INPUT;
    }
  }
  if ((unsigned)f->color_by >= IR_COLOR_SOURCE_COUNT || (unsigned)f->colormap >= IR_COLORMAP_COUNT ||
      !isfinite(f->color_range[0]) || !isfinite(f->color_range[1])) {
    snprintf(err, IR_ERR_LEN, "colouring: unknown source or colour map, or a range that is not finite");
    return IR_ERR_INPUT;
  }
  if (f->color_by == IR_COLOR_VOLUME && !r->color_volume) {
    snprintf(err, IR_ERR_LEN, "colour by volume: no colour volume was set (ir_renderer_set_color_volume)");
    return IR_ERR_INPUT;
  }
  for (int k = 0; k < 3; k++)
    if (!isfinite(f->clip_lo[k]) || !isfinite(f->clip_hi[k])) {
      snprintf(err, IR_ERR_LEN, "clip box: its corners must be finite numbers");
      return IR_ERR_INPUT;
    }
  for (int k = 0; k < 3; k++)
    if (!isfinite(f->camera.eye[k]) || !isfinite(f->camera.target[k]) || !isfinite(f->camera.up[k])) {
      snprintf(err, IR_ERR_LEN, "camera: eye, target and up must be finite numbers");
      return IR_ERR_INPUT;
    }
  if ((unsigned)f->method >= IR_COMPACT_METHOD_COUNT) {
    snprintf(err, IR_ERR_LEN, "unknown compaction method %d", (int)f->method);
    return IR_ERR_INPUT;
  }
  if ((unsigned)f->pipeline >= IR_PIPELINE_COUNT) {
    snprintf(err, IR_ERR_LEN, "unknown pipeline %d; use multi, single, paper, plain or persistent", (int)f->pipeline);
    return IR_ERR_INPUT;
  }
  if (f->step_batches > IR_STEP_BATCHES_MAX) {
    snprintf(err, IR_ERR_LEN, "step batches %u: at most %d (0 for the default, %d)", f->step_batches,
             IR_STEP_BATCHES_MAX, IR_STEP_BATCHES_AUTO);
    return IR_ERR_INPUT;
  }
  return IR_OK;
}

ir_status ir_render_frame(ir_renderer *r, const ir_frame_desc *frame, ir_frame_stats *stats, char err[IR_ERR_LEN]) {
  if (!r || !frame) {
    snprintf(err, IR_ERR_LEN, "ir_render_frame: renderer and frame must not be NULL");
    return IR_ERR_INPUT;
  }
  ir_status st = check_frame(r, frame, err);
  if (st != IR_OK) return st;
  return r->device == IR_DEVICE_CPU ? ir_cpu_render_frame(r, frame, stats, err)
                                    : ir_gpu_render_frame(r, frame, stats, err);
}

ir_status ir_render_read_image(ir_renderer *r, uint8_t *rgba, char err[IR_ERR_LEN]) {
  if (!r || !rgba) {
    snprintf(err, IR_ERR_LEN, "ir_render_read_image: renderer and rgba must not be NULL");
    return IR_ERR_INPUT;
  }
  if (r->width == 0) {
    snprintf(err, IR_ERR_LEN, "no frame rendered yet: call ir_render_frame first");
    return IR_ERR_INPUT;
  }
  if (r->device == IR_DEVICE_GPU) return ir_gpu_read_image(r, rgba, err);
  memcpy(rgba, r->image, (size_t)r->width * (size_t)r->height * 4);
  return IR_OK;
}

ir_status ir_render_read_depth(ir_renderer *r, float *depth, char err[IR_ERR_LEN]) {
  if (!r || !depth) {
    snprintf(err, IR_ERR_LEN, "ir_render_read_depth: renderer and depth must not be NULL");
    return IR_ERR_INPUT;
  }
  if (r->width == 0) {
    snprintf(err, IR_ERR_LEN, "no frame rendered yet: call ir_render_frame first");
    return IR_ERR_INPUT;
  }
  if (r->device == IR_DEVICE_GPU) return ir_gpu_read_depth(r, depth, err);
  memcpy(depth, r->depth, (size_t)r->width * (size_t)r->height * sizeof(float));
  return IR_OK;
}

const void *ir_render_device_image(const ir_renderer *r) {
  return r && r->device == IR_DEVICE_GPU ? ir_gpu_device_image(r) : NULL;
}

/* The tail kernel pays off once a round's launches and the latency of its slowest ray cost more
 * than the rays it carries. Measured on an H100 (docs/render.md): after the first round about a
 * fifth of the rays are left, and finishing all of them in the tail kernel beats a second round
 * at 1024x1024 and at 3840x2160; so the threshold is a quarter of the image. */
uint32_t ir_tail_auto(uint32_t rays) {
  uint32_t t = rays / 4;
  return t < 1024 ? 1024 : t;
}

int ir_walk_cells_auto(const size_t dims[3], size_t pixels) {
  size_t m = dims[0];
  for (int k = 1; k < 3; k++) m = dims[k] > m ? dims[k] : m;
  return (double)pixels >= 24.0 * (double)m * (double)m ? IR_WALK_CELLS : IR_BRICK_CELLS;
}

int ir_frame_step_batches(const ir_frame_desc *f) {
  return f->step_batches ? (int)f->step_batches : IR_STEP_BATCHES_AUTO;
}

uint32_t ir_frame_tail_rays(const ir_frame_desc *f) {
  if (f->tail_rays == IR_TAIL_OFF) return 0;
  if (f->tail_rays != 0 || f->pipeline != IR_PIPELINE_MULTI) return f->tail_rays;
  return ir_tail_auto((uint32_t)f->width * (uint32_t)f->height);
}
