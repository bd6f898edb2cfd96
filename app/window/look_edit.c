/* What the window's keys and drags change in the look (surfaces, clip box and plane, colour
 * source and map), on an app_look that the frame then gets through app_look_apply. Plain C:
 * no SDL, no OpenGL, so that the tests drive it without a display. Printing what changed is the
 * window's job (window.c). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "app/window/window_internal.h"

#define OPACITY_STEPS 10 /* opacity moves in tenths */
/* The box never closes: an empty box (all faces at 0) would read as "no clip box" to the
 * renderer, and --clip-box refuses a face on its opposite too. */
#define CLIP_MIN_WIDTH 0.01f

void wnd_look_start(wnd_look *w, const app_look *given, double iso) {
  *w = (wnd_look){.look = *given};
  app_look *l = &w->look;
  if (l->surface_count <= 0) {
    l->surface_count = 1;
    l->surfaces[0] = (ir_surface){.isovalue = (float)iso, .opacity = 1.0f};
    ir_surface_default_color(0, l->surfaces[0].color);
  }
  /* --surface without a colour leaves a negative red for "the palette's" (app_look_apply's
   * rule); the window shows and cycles real colours, so it resolves them now. */
  for (int k = 0; k < l->surface_count; k++)
    if (l->surfaces[k].color[0] < 0.0f) ir_surface_default_color(k, l->surfaces[k].color);
  if (!l->clip_box_on)
    for (int k = 0; k < 3; k++) {
      l->clip_box[2 * k] = 0.0f;
      l->clip_box[2 * k + 1] = 1.0f;
    }
  /* The face a drag moves first is the top one: z1 cuts a cap off the usual view. */
  w->clip_face = 5;
}

static ir_surface *selected(wnd_look *w) { return &w->look.surfaces[w->selected]; }

bool wnd_look_add_surface(wnd_look *w) {
  app_look *l = &w->look;
  if (l->surface_count >= IR_MAX_SURFACES) return false;
  ir_surface *s = &l->surfaces[l->surface_count];
  *s = (ir_surface){.isovalue = selected(w)->isovalue, .opacity = 1.0f};
  ir_surface_default_color(l->surface_count, s->color);
  w->selected = l->surface_count++;
  return true;
}

bool wnd_look_remove_surface(wnd_look *w) {
  app_look *l = &w->look;
  if (l->surface_count <= 1) return false;
  memmove(&l->surfaces[w->selected], &l->surfaces[w->selected + 1],
          (size_t)(l->surface_count - w->selected - 1) * sizeof l->surfaces[0]);
  l->surface_count--;
  if (w->selected >= l->surface_count) w->selected = l->surface_count - 1;
  return true;
}

void wnd_look_select(wnd_look *w, int step) {
  int n = w->look.surface_count;
  w->selected = ((w->selected + step) % n + n) % n;
}

void wnd_look_set_iso(wnd_look *w, double iso) { selected(w)->isovalue = (float)iso; }

/* Index of the named colour equal to rgb (to a byte), or -1. */
static int named_color_index(const float rgb[3]) {
  const char *const *names = ir_color_names();
  for (int k = 0; names[k]; k++) {
    float named[3];
    if (!ir_color_parse(names[k], named)) continue;
    bool same = true;
    for (int c = 0; c < 3; c++) same = same && lroundf(named[c] * 255.0f) == lroundf(rgb[c] * 255.0f);
    if (same) return k;
  }
  return -1;
}

void wnd_look_cycle_color(wnd_look *w, int step) {
  const char *const *names = ir_color_names();
  int count = 0;
  while (names[count]) count++;
  if (count == 0) return;
  int at = named_color_index(selected(w)->color);
  /* A colour off the list (a default or #rrggbb) goes to the list's first or last name. */
  int next = at < 0 ? (step > 0 ? 0 : count - 1) : ((at + step) % count + count) % count;
  ir_color_parse(names[next], selected(w)->color);
}

void wnd_look_step_opacity(wnd_look *w, int steps) {
  /* Whole tenths, so that repeated steps land on 0.1, 0.2, ... exactly as printed. */
  float tenths = roundf(selected(w)->opacity * OPACITY_STEPS) + (float)steps;
  selected(w)->opacity = fmaxf(0.0f, fminf((float)OPACITY_STEPS, tenths)) / OPACITY_STEPS;
}

void wnd_look_toggle_clip_box(wnd_look *w) { w->look.clip_box_on = !w->look.clip_box_on; }

void wnd_look_next_face(wnd_look *w) { w->clip_face = (w->clip_face + 1) % 6; }

void wnd_look_drag_face(wnd_look *w, float dx, float dy, int viewport_height) {
  if (viewport_height <= 0) return;
  float *box = w->look.clip_box;
  int face = w->clip_face, axis = face / 2;
  float v = box[face] + (dx - dy) / (float)viewport_height;
  /* A low face stays below its high face and the other way round. */
  if (face % 2 == 0) v = fmaxf(0.0f, fminf(box[2 * axis + 1] - CLIP_MIN_WIDTH, v));
  else v = fmaxf(box[2 * axis] + CLIP_MIN_WIDTH, fminf(1.0f, v));
  box[face] = v;
}

static void volume_extent(const ir_volume *v, float extent[3]) {
  for (int k = 0; k < 3; k++) extent[k] = (float)v->dims[k] * (v->spacing[k] > 0 ? v->spacing[k] : 1.0f);
}

void wnd_look_plane_to_view(wnd_look *w, const ir_camera *camera, const ir_volume *v) {
  float n[3], extent[3], length = 0;
  for (int k = 0; k < 3; k++) {
    n[k] = camera->target[k] - camera->eye[k];
    length += n[k] * n[k];
  }
  length = sqrtf(length);
  if (length <= 0) return;
  volume_extent(v, extent);
  float *plane = w->look.clip_plane, d = 0;
  for (int k = 0; k < 3; k++) {
    plane[k] = n[k] / length;
    d -= plane[k] * 0.5f * extent[k];
  }
  plane[3] = d;
  w->look.clip_plane_on = true;
}

void wnd_look_toggle_clip_plane(wnd_look *w, const ir_camera *camera, const ir_volume *v) {
  const float *p = w->look.clip_plane;
  bool never_set = p[0] == 0 && p[1] == 0 && p[2] == 0;
  if (!w->look.clip_plane_on && never_set) wnd_look_plane_to_view(w, camera, v);
  else w->look.clip_plane_on = !w->look.clip_plane_on;
}

void wnd_look_drag_plane(wnd_look *w, const ir_volume *v, float dx, float dy, int viewport_height) {
  if (viewport_height <= 0) return;
  float extent[3];
  volume_extent(v, extent);
  float diagonal = sqrtf(extent[0] * extent[0] + extent[1] * extent[1] + extent[2] * extent[2]);
  float *p = w->look.clip_plane;
  float norm = sqrtf(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]);
  if (norm <= 0) return;
  /* Kept points satisfy n.x + d >= 0: moving the plane by s along n lowers d by s|n|. */
  p[3] -= (dx - dy) / (float)viewport_height * diagonal * norm;
}

void wnd_look_cycle_color_by(wnd_look *w, bool have_color_volume) {
  ir_color_source s = w->look.color_by;
  s = s == IR_COLOR_SURFACE ? IR_COLOR_GRADIENT
      : s == IR_COLOR_GRADIENT && have_color_volume ? IR_COLOR_VOLUME : IR_COLOR_SURFACE;
  w->look.color_by = s;
}

void wnd_look_cycle_colormap(wnd_look *w, int step) {
  int m = ((int)w->look.colormap + step) % IR_COLORMAP_COUNT;
  w->look.colormap = (ir_colormap)(m < 0 ? m + IR_COLORMAP_COUNT : m);
}

const char *wnd_color_label(const float rgb[3], char out[16]) {
  int k = named_color_index(rgb);
  if (k >= 0) {
    snprintf(out, 16, "%.15s", ir_color_names()[k]);
  } else {
    int c[3];
    for (int i = 0; i < 3; i++) c[i] = (int)lroundf(fmaxf(0.0f, fminf(1.0f, rgb[i])) * 255.0f);
    snprintf(out, 16, "#%02x%02x%02x", c[0], c[1], c[2]);
  }
  return out;
}
