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

static ir_status check_volume(const ir_volume *v, bool header_only, char err[IR_ERR_LEN]) {
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
  if (!header_only && (!v->voxels || v->bytes < need)) {
    snprintf(err, IR_ERR_LEN, "volume '%s': %zu bytes of voxels, expected %zu for %zux%zux%zu %s", v->name,
             v->voxels ? v->bytes : 0, need, v->dims[0], v->dims[1], v->dims[2], ir_voxel_type_name(v->type));
    return IR_ERR_INPUT;
  }
  return IR_OK;
}

static ir_status slot_end(ir_renderer *r, int slot, const ir_volume *v, bool streamed, char err[IR_ERR_LEN]);

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
  ir_status st = check_volume(desc->volume, desc->voxels_later, err);
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
  r->slot_count = 1;
  r->slot_in_use = -1;
  r->view = ir_volume_view_of(r->volume);
  st = ir_bvh_setup(r, err);
  if (st == IR_OK && r->device == IR_DEVICE_GPU) st = ir_gpu_create(r, err);
  /* The volume given now is slot 0's; a header's voxels come later through the slot calls. */
  if (st == IR_OK && !desc->voxels_later) {
    ir_volume_sink unused;
    st = ir_renderer_slot_begin(r, 0, &unused, err);
    if (st == IR_OK) st = slot_end(r, 0, desc->volume, false, err);
    if (st == IR_OK) st = ir_renderer_use_slot(r, 0, err);
  }
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
  for (int k = 0; k < IR_MAX_SLOTS; k++) ir_cpu_slot_free(&r->cpu_slots[k]);
  free(r->nodes);
  free(r->skip);
  free(r->skip_tmp);
  free(r->image);
  free(r->depth);
  free(r->accum);
  free(r);
}

/* ---- Slots ------------------------------------------------------------------------------------ */
static ir_status check_slot(const ir_renderer *r, int slot, const char *what, char err[IR_ERR_LEN]) {
  if (!r) {
    snprintf(err, IR_ERR_LEN, "%s: renderer must not be NULL", what);
    return IR_ERR_INPUT;
  }
  if (slot < 0 || slot >= r->slot_count) {
    snprintf(err, IR_ERR_LEN, "%s: slot %d; the renderer has slots 0 to %d (ir_renderer_set_slots)", what, slot,
             r->slot_count - 1);
    return IR_ERR_INPUT;
  }
  return IR_OK;
}

ir_status ir_renderer_set_slots(ir_renderer *r, int count, char err[IR_ERR_LEN]) {
  if (!r || count < 1 || count > IR_MAX_SLOTS) {
    snprintf(err, IR_ERR_LEN, "ir_renderer_set_slots: %d slots; use 1 to %d", count, IR_MAX_SLOTS);
    return IR_ERR_INPUT;
  }
  if (r->slot_in_use >= count) {
    snprintf(err, IR_ERR_LEN, "ir_renderer_set_slots: slot %d is in use; keep at least %d slots", r->slot_in_use,
             r->slot_in_use + 1);
    return IR_ERR_INPUT;
  }
  if (r->device == IR_DEVICE_GPU) {
    ir_status st = ir_gpu_set_slots(r, count, err);
    if (st != IR_OK) return st;
  }
  for (int k = count; k < IR_MAX_SLOTS; k++) ir_cpu_slot_free(&r->cpu_slots[k]);
  r->slot_count = count;
  return IR_OK;
}

ir_status ir_renderer_slot_begin(ir_renderer *r, int slot, ir_volume_sink *sink, char err[IR_ERR_LEN]) {
  ir_status st = check_slot(r, slot, "ir_renderer_slot_begin", err);
  if (st != IR_OK) return st;
  if (!sink) {
    snprintf(err, IR_ERR_LEN, "ir_renderer_slot_begin: sink must not be NULL");
    return IR_ERR_INPUT;
  }
  if (slot == r->slot_in_use) {
    snprintf(err, IR_ERR_LEN, "ir_renderer_slot_begin: slot %d is the one frames draw; fill another", slot);
    return IR_ERR_INPUT;
  }
  *sink = (ir_volume_sink){0};
  return r->device == IR_DEVICE_GPU ? ir_gpu_slot_begin(r, slot, sink, err) : IR_OK;
}

/* streamed: every piece of v went through the slot's sink (ir_volume.streamed of its load). */
static ir_status slot_end(ir_renderer *r, int slot, const ir_volume *v, bool streamed, char err[IR_ERR_LEN]) {
  ir_status st = check_slot(r, slot, "ir_renderer_slot_end", err);
  if (st != IR_OK) return st;
  if ((st = check_volume(v, false, err)) != IR_OK) return st;
  const ir_volume *first = r->volume;
  if (v->dims[0] != first->dims[0] || v->dims[1] != first->dims[1] || v->dims[2] != first->dims[2] ||
      v->type != first->type) {
    snprintf(err, IR_ERR_LEN, "%.200s is %zux%zux%zu %s, but the renderer's volumes are %zux%zux%zu %s: they must match",
             v->name, v->dims[0], v->dims[1], v->dims[2], ir_voxel_type_name(v->type), first->dims[0], first->dims[1],
             first->dims[2], ir_voxel_type_name(first->type));
    return IR_ERR_INPUT;
  }
  if (r->device == IR_DEVICE_GPU) {
    r->cpu_slots[slot].volume = v;
    return ir_gpu_slot_end(r, slot, v, streamed, err);
  }
  r->ranges_version++; /* the CPU's ranges are filled in place: the skip map of this slot goes */
  return ir_cpu_slot_fill(r, &r->cpu_slots[slot], v, err);
}

ir_status ir_renderer_slot_end(ir_renderer *r, int slot, const ir_volume *v, char err[IR_ERR_LEN]) {
  return slot_end(r, slot, v, v && v->streamed, err);
}

ir_status ir_renderer_use_slot(ir_renderer *r, int slot, char err[IR_ERR_LEN]) {
  ir_status st = check_slot(r, slot, "ir_renderer_use_slot", err);
  if (st != IR_OK) return st;
  const ir_cpu_slot *s = &r->cpu_slots[slot];
  if (!s->volume) {
    snprintf(err, IR_ERR_LEN, "ir_renderer_use_slot: slot %d holds no volume yet (ir_renderer_slot_end)", slot);
    return IR_ERR_INPUT;
  }
  if (r->device == IR_DEVICE_GPU && (st = ir_gpu_use_slot(r, slot, err)) != IR_OK) return st;
  ir_volume_view view = ir_volume_view_of(s->volume);
  view.tex = r->view.tex;
  view.tex_point = r->view.tex_point;
  if (s->voxels_clean) view.voxels = s->voxels_clean;
  r->view = view;
  r->volume = s->volume;
  r->ranges = s->ranges;
  r->cell_ranges = s->cell_ranges;
  r->slot_in_use = slot;
  r->ranges_version++; /* a slot's arrays may hold another volume than when last used */
  return IR_OK;
}

ir_status ir_renderer_slot_times(ir_renderer *r, int slot, ir_slot_times *out, char err[IR_ERR_LEN]) {
  ir_status st = check_slot(r, slot, "ir_renderer_slot_times", err);
  if (st != IR_OK) return st;
  *out = (ir_slot_times){0};
  return r->device == IR_DEVICE_GPU ? ir_gpu_slot_times(r, slot, out, err) : IR_OK;
}

ir_status ir_renderer_volume_stats(ir_renderer *r, ir_volume_stats *out, char err[IR_ERR_LEN]) {
  if (!r || !out || r->slot_in_use < 0) {
    snprintf(err, IR_ERR_LEN, "ir_renderer_volume_stats: no renderer, or no volume in use yet");
    return IR_ERR_INPUT;
  }
  if (r->device == IR_DEVICE_GPU) return ir_gpu_volume_stats(r, out, err);
  ir_volume_compute_stats(r->volume, out);
  return IR_OK;
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
  if (f->window_on) {
    const int *w = f->window;
    if (w[0] < 0 || w[1] < 0 || w[0] > w[2] || w[1] > w[3] || w[2] > f->width || w[3] > f->height) {
      snprintf(err, IR_ERR_LEN, "window %d,%d,%d,%d: needs 0 <= x0 <= x1 <= %d and 0 <= y0 <= y1 <= %d (the image)",
               w[0], w[1], w[2], w[3], f->width, f->height);
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
  if (f->ao_samples < 0 || f->ao_samples > IR_AO_MAX_SAMPLES) {
    snprintf(err, IR_ERR_LEN, "ambient occlusion: %d rays per hit; use 1 to %d (0: off)", f->ao_samples,
             IR_AO_MAX_SAMPLES);
    return IR_ERR_INPUT;
  }
  /* The frame's first sample index (sample_frame * ao_samples) must not wrap: a wrapped index
   * would draw earlier frames' directions again. */
  if (f->ao_samples > 0 && f->sample_frame > UINT32_MAX / IR_AO_MAX_SAMPLES) {
    snprintf(err, IR_ERR_LEN, "sample_frame %u: at most %u", f->sample_frame, UINT32_MAX / IR_AO_MAX_SAMPLES);
    return IR_ERR_INPUT;
  }
  if (!(f->sample_step == 0.0f || (f->sample_step >= IR_SAMPLE_STEP_MIN && f->sample_step <= IR_SAMPLE_STEP_MAX))) {
    snprintf(err, IR_ERR_LEN, "sample step %g voxels: must be between %g and %g (0: the default, %g)",
             (double)f->sample_step, (double)IR_SAMPLE_STEP_MIN, (double)IR_SAMPLE_STEP_MAX,
             (double)IR_SAMPLE_STEP_DEFAULT);
    return IR_ERR_INPUT;
  }
  if (!(f->ao_radius >= 0.0f) || !isfinite(f->ao_radius)) {
    snprintf(err, IR_ERR_LEN, "ambient occlusion: radius %g voxels; must be a positive number (0: the default, %g)",
             (double)f->ao_radius, (double)IR_AO_RADIUS_DEFAULT);
    return IR_ERR_INPUT;
  }
  if (f->light_on && !(f->light[0] >= -180.0f && f->light[0] <= 180.0f && f->light[1] >= -90.0f &&
                       f->light[1] <= 90.0f)) {
    snprintf(err, IR_ERR_LEN, "light %g,%g: azimuth must be -180..180 and elevation -90..90 degrees",
             (double)f->light[0], (double)f->light[1]);
    return IR_ERR_INPUT;
  }
  if ((f->ao_samples > 0 || f->shadows || f->light_on) &&
      (f->pipeline == IR_PIPELINE_PAPER || f->pipeline == IR_PIPELINE_PLAIN)) {
    snprintf(err, IR_ERR_LEN, "the %s pipeline draws no ambient occlusion, shadows or light; use single, "
             "persistent or multi", ir_pipeline_name(f->pipeline));
    return IR_ERR_INPUT;
  }
  if (f->secondary < 0 || f->secondary >= IR_SECONDARY_MODE_COUNT) {
    snprintf(err, IR_ERR_LEN, "secondary %d: use IR_SECONDARY_INLINE, _SPREAD or _POOL", f->secondary);
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
  if (r->slot_in_use < 0) {
    snprintf(err, IR_ERR_LEN, "no voxels yet: the renderer was made from a header; fill a slot and use it "
             "(ir_renderer_slot_begin, slot_end, use_slot)");
    return IR_ERR_INPUT;
  }
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

const float *ir_render_device_depth(const ir_renderer *r) {
  return r && r->device == IR_DEVICE_GPU ? ir_gpu_device_depth(r) : NULL;
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
  return (double)pixels >= 2.0 * (double)m * (double)m ? IR_WALK_CELLS : IR_BRICK_CELLS;
}

int ir_frame_step_batches(const ir_frame_desc *f) {
  return f->step_batches ? (int)f->step_batches : IR_STEP_BATCHES_AUTO;
}

uint32_t ir_frame_tail_rays(const ir_frame_desc *f) {
  if (f->tail_rays == IR_TAIL_OFF) return 0;
  if (f->tail_rays != 0 || f->pipeline != IR_PIPELINE_MULTI) return f->tail_rays;
  return ir_tail_auto((uint32_t)f->width * (uint32_t)f->height);
}
