/* The overlay as 2D triangles: a translucent panel with text (stb_easy_font, which builds each
 * glyph from quads) and a bar chart of the pipeline's stage times; the key help beside it.
 * Nothing here touches OpenGL: gl_draw.c uploads and draws the mesh. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stb/stb_easy_font.h>

#include "app/window/window_internal.h"

/* stb_easy_font's glyphs are 7 units tall; 10 leaves a readable gap between lines. */
#define LINE_UNITS 10
#define PAD_UNITS 4
#define BAR_UNITS 90
#define PANEL_GAP_UNITS 6

static const uint8_t COLOR_PANEL[4] = {12, 14, 20, 190};
static const uint8_t COLOR_TEXT[4] = {235, 235, 235, 255};
static const uint8_t COLOR_DIM[4] = {150, 160, 175, 255};
static const uint8_t COLOR_WARN[4] = {255, 190, 70, 255};
static const uint8_t COLOR_BAR_BACK[4] = {60, 64, 76, 255};

/* One colour per stage row (wnd_overlay_stage_rows' order). */
static const uint8_t COLOR_STAGE[WND_MAX_STAGE_ROWS][4] = {
    {120, 170, 255, 255}, {110, 220, 200, 255}, {140, 220, 110, 255}, {235, 215, 90, 255},
    {250, 120, 80, 255},  {240, 150, 90, 255},  {230, 100, 150, 255}, {180, 140, 240, 255},
    {170, 170, 170, 255}, {120, 200, 255, 255}, {255, 200, 120, 255}, {200, 200, 120, 255},
};

void wnd_mesh_free(wnd_mesh *mesh) {
  free(mesh->vertices);
  *mesh = (wnd_mesh){0};
}

static bool mesh_reserve(wnd_mesh *mesh, size_t more) {
  if (mesh->count + more <= mesh->capacity) return true;
  size_t capacity = mesh->capacity ? mesh->capacity : 4096;
  while (capacity < mesh->count + more) capacity *= 2;
  wnd_vertex *grown = realloc(mesh->vertices, capacity * sizeof *grown);
  if (!grown) return false;
  mesh->vertices = grown;
  mesh->capacity = capacity;
  return true;
}

static void mesh_quad(wnd_mesh *mesh, float x0, float y0, float x1, float y1, const uint8_t rgba[4]) {
  if (!mesh_reserve(mesh, 6)) return;
  const float corners[6][2] = {{x0, y0}, {x1, y0}, {x1, y1}, {x0, y0}, {x1, y1}, {x0, y1}};
  for (int k = 0; k < 6; k++) {
    wnd_vertex *v = &mesh->vertices[mesh->count++];
    v->x = corners[k][0];
    v->y = corners[k][1];
    memcpy(v->rgba, rgba, 4);
  }
}

/* Writes the text's glyph quads at (x, y) (top left), `scale` pixels per font unit. */
static void mesh_text(wnd_mesh *mesh, float x, float y, float scale, const char *text, const uint8_t rgba[4]) {
  /* stb_easy_font's own estimate is ~270 bytes per character; lines here are short. */
  static char buffer[64 * 1024];
  /* Each quad is 4 vertices of x, y, z (floats) and 4 colour bytes. */
  typedef struct {
    float x, y, z;
    uint8_t c[4];
  } font_vertex;
  char copy[256];
  snprintf(copy, sizeof copy, "%s", text);
  int quads = stb_easy_font_print(0, 0, copy, NULL, buffer, (int)sizeof buffer);
  const font_vertex *fv = (const font_vertex *)buffer;
  for (int q = 0; q < quads; q++) {
    const font_vertex *c = fv + 4 * q;
    mesh_quad(mesh, x + c[0].x * scale, y + c[0].y * scale, x + c[2].x * scale, y + c[2].y * scale, rgba);
  }
}

static int text_units(const char *text) {
  char copy[256];
  snprintf(copy, sizeof copy, "%s", text);
  return stb_easy_font_width(copy);
}

/* Lines of the main panel (wnd_lines); a line starting with '!' is a warning. */
__attribute__((format(printf, 2, 3))) static void add_line(wnd_lines *lines, const char *format, ...) {
  if (lines->count == 16) return;
  va_list args;
  va_start(args, format);
  vsnprintf(lines->text[lines->count++], sizeof lines->text[0], format, args);
  va_end(args);
}

/* Rays in a short form: 1234, 12.3k, 1.23M. */
static void short_count(uint32_t n, char out[16]) {
  if (n < 10000) snprintf(out, 16, "%u", n);
  else if (n < 1000000) snprintf(out, 16, "%.1fk", n / 1e3);
  else snprintf(out, 16, "%.2fM", n / 1e6);
}

const char *wnd_overlay_stage_title(const wnd_overlay_info *info) {
  /* The CPU renderer marches each ray to the end in one go: it has no stages to time. */
  if (info->device && strcmp(info->device, "cpu") == 0) return "stage times: GPU only (the CPU times whole frames)";
  return info->have_stages ? "stage times (sampled every 0.5 s)" : "stage times: not measured yet";
}

static void main_lines(const wnd_overlay_info *info, wnd_lines *lines) {
  const ir_compact_method_info *methods = ir_compact_methods();
  const ir_volume *v = info->volume;
  add_line(lines, "FPS %.1f   frame %.2f ms", info->fps, info->frame_ms);
  add_line(lines, "render %.2f ms on %s, %s", info->render_ms, info->device, info->display_path);
  if (info->device_note) add_line(lines, "!%s", info->device_note);
  add_line(lines, "method %d/%d %s%s", info->method_index + 1, IR_COMPACT_METHOD_COUNT,
           methods[info->method_index].name,
           ir_pipeline_compacts(info->pipeline) ? "" : " (unused)");
  add_line(lines, "pipeline %s", ir_pipeline_name(info->pipeline));
  if (!info->look) add_line(lines, "iso %.6g", info->isovalue);
  add_line(lines, "%.40s", v->name);
  add_line(lines, "%zux%zux%zu %s", v->dims[0], v->dims[1], v->dims[2], ir_voxel_type_name(v->type));
  if (v->level_count > 1) add_line(lines, "level %d of %d (0 the finest; --level)", v->level, v->level_count);
  add_line(lines, "res %dx%d", info->render_width, info->render_height);
  char generated[16], hit[16];
  short_count(info->last.rays_generated, generated);
  short_count(info->last.rays_hit, hit);
  add_line(lines, "rays %s  hit %s  iter %d", generated, hit, info->last.iterations);
  /* Traversal rays per round show what compaction is working on: how fast the list shrinks. */
  char rounds[96] = "trav";
  int shown = info->last.iterations < 5 ? info->last.iterations : 5;
  for (int k = 0; k < shown; k++) {
    char count[16];
    short_count(info->last.traverse_rays[k], count);
    size_t used = strlen(rounds);
    snprintf(rounds + used, sizeof rounds - used, " %s", count);
  }
  if (info->last.iterations > shown) strncat(rounds, " ..", sizeof rounds - strlen(rounds) - 1);
  add_line(lines, "%s", rounds);
  if (info->mesh_note) add_line(lines, "%s", info->mesh_note);
}

static const char *const FACE_NAMES[6] = {"x0", "x1", "y0", "y1", "z0", "z1"};

void wnd_overlay_look_lines(const wnd_overlay_info *info, wnd_lines *lines) {
  const wnd_look *w = info->look;
  if (!w) return;
  const app_look *l = &w->look;
  for (int k = 0; k < l->surface_count; k++) {
    const ir_surface *s = &l->surfaces[k];
    char color[16];
    add_line(lines, "%s%d  iso %.6g  %s  opacity %.3g", k == w->selected ? "> " : "  ", k + 1, s->isovalue,
             wnd_color_label(s->color, color), s->opacity);
  }
  if (l->clip_box_on) {
    const float *b = l->clip_box;
    add_line(lines, "clip box x %.2f-%.2f y %.2f-%.2f z %.2f-%.2f  drag %s", b[0], b[1], b[2], b[3], b[4], b[5],
             FACE_NAMES[w->clip_face]);
  }
  if (l->clip_plane_on) {
    const float *p = l->clip_plane;
    add_line(lines, "clip plane n %.2f,%.2f,%.2f  d %.4g", p[0], p[1], p[2], p[3]);
  }
  if (l->color_by != IR_COLOR_SURFACE)
    add_line(lines, "colour by %s, %s", ir_color_source_name(l->color_by), ir_colormap_name(l->colormap));
  if (l->sample_step > 0.0f) add_line(lines, "samples every %g voxels", (double)l->sample_step);
  if ((l->ao_samples > 0 || l->shadows || l->light_on) &&
      (info->pipeline == IR_PIPELINE_PAPER || info->pipeline == IR_PIPELINE_PLAIN))
    add_line(lines, "!AO, shadows, light: not drawn by the %s pipeline", ir_pipeline_name(info->pipeline));
  else if (l->ao_samples > 0)
    add_line(lines, "AO %d rays x %u frames = %u samples/pixel", l->ao_samples, info->ao_frames,
             (unsigned)l->ao_samples * info->ao_frames);
  if (l->shadows || l->light_on) {
    char light[64] = "headlight";
    if (l->light_on) snprintf(light, sizeof light, "light az %.0f el %.0f", (double)l->light[0], (double)l->light[1]);
    add_line(lines, "%s%s", l->shadows ? "shadows, " : "", light);
  }
}

/* Key help: keys in one column, what they do in the next (the font is proportional). */
static const char *const HELP[][2] = {
    {"left drag", "orbit"},          {"right/mid drag", "pan"},    {"wheel", "zoom"},
    {"1-5", "compaction method"},    {"Tab", "next method"},       {"P", "next pipeline"},
    {"Up/Down", "isovalue (selected surface)"}, {"Shift+Up/Down", "coarse"},
    {"N / Del", "add / remove a surface"},      {"Left/Right", "select a surface"},
    {"C / Shift+C", "next / previous colour"},  {"PgUp/PgDn", "opacity +/- 0.1"},
    {"B / Shift+B", "clip box / next face"},    {"Shift+left drag", "move the box face"},
    {"L / Shift+L", "clip plane / face the view"}, {"Shift+right drag", "move the plane"},
    {"K", "colour by surface/gradient/volume"}, {"M / Shift+M", "next / previous colour map"},
    {"O", "ambient occlusion off/4/8/16"}, {"G", "shadows on/off"}, {"Ctrl+left drag", "move the light"},
    {"D", "sample step 0.5/0.25/0.125 voxel"},
    {"R", "reset view"},              {"- / =", "coarser / finer level (OME-Zarr)"},
    {"U", "flip the view (up axis)"}, {"Shift+U", "next up axis"},
    {"S or F12", "screenshot"},      {"E", "surfaces as a mesh"},      {"F", "overlay on/off"},      {"H", "this help"},
    {"Esc or Q", "quit"},
};
#define HELP_COUNT ((int)(sizeof HELP / sizeof HELP[0]))

/* Size in pixels of a padded panel holding these lines. */
static void panel_size(const char *const *text, int count, float scale, float *w, float *h) {
  int widest = 0;
  for (int k = 0; k < count; k++) {
    int units = text_units(text[k]);
    if (units > widest) widest = units;
  }
  *w = (float)(widest + 2 * PAD_UNITS) * scale;
  *h = (float)(count * LINE_UNITS + 2 * PAD_UNITS - 3) * scale;
}

int wnd_overlay_stage_rows(const ir_frame_stats *s, wnd_stage_row rows[WND_MAX_STAGE_ROWS]) {
  /* In the order a frame runs them; a stage that ran took some time, so zero means it did not
   * run (the single kernel has only its kernel; the persistent kernel's phases are shares of
   * it; the multi pipeline's tail, compaction, control and host waits depend on the method).
   * The skip map's row is its last rebuild, whichever frame made it (zero: never made). */
  const wnd_stage_row all[WND_MAX_STAGE_ROWS] = {
      {"bvh", s->bvh_update_ms},  {"raygen", s->raygen_ms},    {"trav", s->traverse_ms},
      {"isect", s->intersect_ms}, {"tail", s->tail_ms},        {"shade", s->shade_ms},
      {"secondary", s->secondary_ms},
      {"compact", s->compact_ms}, {"control", s->control_ms},  {"host wait", s->host_wait_ms},
      {"kernel", s->kernel_ms},   {"skip map", s->skip_ms}, /* its last rebuild (an isovalue changed) */
  };
  int n = 0;
  for (int k = 0; k < WND_MAX_STAGE_ROWS; k++)
    if (all[k].ms > 0) rows[n++] = all[k];
  return n;
}

static int stage_label_units(void) {
  static const char *const names[] = {"bvh", "raygen", "trav", "isect", "tail", "shade", "secondary", "compact",
                                      "control", "host wait", "kernel", "skip map"};
  int widest = 0;
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    int units = text_units(names[k]);
    if (units > widest) widest = units;
  }
  return widest + 4;
}

static void stage_chart(const wnd_stage_row *rows, int count, wnd_mesh *mesh, float x, float y, float scale) {
  double largest = 1e-6;
  for (int k = 0; k < count; k++)
    if (rows[k].ms > largest) largest = rows[k].ms;
  for (int k = 0; k < count; k++) {
    float row = y + (float)(k * LINE_UNITS) * scale;
    mesh_text(mesh, x, row, scale, rows[k].name, COLOR_DIM);
    float bar_x = x + (float)stage_label_units() * scale, bar_w = BAR_UNITS * scale;
    mesh_quad(mesh, bar_x, row, bar_x + bar_w, row + 7 * scale, COLOR_BAR_BACK);
    mesh_quad(mesh, bar_x, row, bar_x + bar_w * (float)(rows[k].ms / largest), row + 7 * scale, COLOR_STAGE[k]);
    char value[32];
    snprintf(value, sizeof value, "%.3f ms", rows[k].ms);
    mesh_text(mesh, bar_x + bar_w + 4 * scale, row, scale, value, COLOR_TEXT);
  }
}

/* The colour bar: a strip of the map over the range, the range's ends under it. */
#define SWATCH_UNITS 9
static void color_bar(const wnd_overlay_info *info, wnd_mesh *mesh, float x, float y, float scale, int bar[4]) {
  const app_look *l = &info->look->look;
  float lo = info->color_range[0], hi = info->color_range[1];
  float w = BAR_UNITS * scale, step = w / WND_COLORBAR_STEPS;
  for (int k = 0; k < WND_COLORBAR_STEPS; k++) {
    float rgb[3];
    ir_colormap_lookup(l->colormap, lo + (hi - lo) * ((float)k + 0.5f) / WND_COLORBAR_STEPS, lo, hi, rgb);
    uint8_t rgba[4] = {0, 0, 0, 255};
    for (int c = 0; c < 3; c++) rgba[c] = (uint8_t)lroundf(fmaxf(0.0f, fminf(1.0f, rgb[c])) * 255.0f);
    mesh_quad(mesh, x + step * (float)k, y, x + step * (float)(k + 1), y + 7 * scale, rgba);
  }
  bar[0] = (int)x;
  bar[1] = (int)y;
  bar[2] = (int)w;
  bar[3] = (int)(7 * scale);
  char low[32], high[32];
  snprintf(low, sizeof low, "%.4g", lo);
  snprintf(high, sizeof high, "%.4g", hi);
  float row = y + LINE_UNITS * scale;
  mesh_text(mesh, x, row, scale, low, COLOR_TEXT);
  mesh_text(mesh, x + w - (float)text_units(high) * scale, row, scale, high, COLOR_TEXT);
}

void wnd_overlay_timeline_lines(const wnd_timeline *t, wnd_lines *lines) {
  add_line(lines, "step %zu/%zu  t %.6g  %.60s", t->step + 1, t->steps, t->time, t->name ? t->name : "");
  if (t->playing)
    add_line(lines, "playing %.3g steps/s%s   space pause", t->rate, t->waiting ? ", waiting for the disk" : "");
  else
    add_line(lines, "paused (%.3g steps/s)   space play  Shift+Left/Right step", t->rate);
  if (t->message) add_line(lines, "!%.90s", t->message);
}

/* The slider: a track over the whole series, filled up to the step drawn, a marker there. */
static void timeline_slider(wnd_timeline *t, wnd_mesh *mesh, float x, float y, float scale) {
  float w = BAR_UNITS * 2 * scale, h = 5 * scale;
  float at = t->steps > 1 ? (float)t->step / (float)(t->steps - 1) : 1.0f;
  mesh_quad(mesh, x, y + scale, x + w, y + scale + h, COLOR_BAR_BACK);
  mesh_quad(mesh, x, y + scale, x + w * at, y + scale + h, COLOR_STAGE[0]);
  float m = x + w * at;
  mesh_quad(mesh, m - scale, y, m + 2 * scale, y + h + 2 * scale, COLOR_TEXT);
  t->slider[0] = (int)x;
  t->slider[1] = (int)(y + scale);
  t->slider[2] = (int)w;
  t->slider[3] = (int)h;
}

void wnd_overlay_progress(wnd_mesh *mesh, int window_width, int window_height, const char *name, size_t done,
                          size_t total, double seconds, int bar[4], int track[4]) {
  float scale = window_height >= 1100 ? 2.0f : 1.0f;
  const double gib = 1024.0 * 1024.0 * 1024.0;
  char title[160], amount[128];
  snprintf(title, sizeof title, "loading %.120s", name ? name : "");
  if (total > 0)
    snprintf(amount, sizeof amount, "%.2f of %.2f GiB (%.0f%%)  %.2f GB/s  %.1f s", (double)done / gib,
             (double)total / gib, 100.0 * (double)done / (double)total, seconds > 0 ? (double)done / seconds / 1e9 : 0.0,
             seconds);
  else
    snprintf(amount, sizeof amount, "reading the header  %.1f s", seconds);
  const char *rows[2] = {title, amount};
  float w, h;
  panel_size(rows, 2, scale, &w, &h);
  float bar_w = 2 * BAR_UNITS * scale;
  if (bar_w + 2 * PAD_UNITS * scale > w) w = bar_w + 2 * PAD_UNITS * scale;
  h += (float)LINE_UNITS * scale;
  float x = ((float)window_width - w) / 2, y = ((float)window_height - h) / 2;
  if (x < 0) x = 0;
  if (y < 0) y = 0;
  mesh_quad(mesh, x, y, x + w, y + h, COLOR_PANEL);
  float tx = x + PAD_UNITS * scale, ty = y + PAD_UNITS * scale;
  mesh_text(mesh, tx, ty, scale, title, COLOR_TEXT);
  mesh_text(mesh, tx, ty + LINE_UNITS * scale, scale, amount, COLOR_DIM);
  float by = ty + 2 * LINE_UNITS * scale;
  float fill = total > 0 ? bar_w * (float)((double)(done < total ? done : total) / (double)total) : 0.0f;
  mesh_quad(mesh, tx, by, tx + bar_w, by + 7 * scale, COLOR_BAR_BACK);
  if (fill > 0) mesh_quad(mesh, tx, by, tx + fill, by + 7 * scale, COLOR_STAGE[0]);
  int b[4] = {(int)tx, (int)by, (int)lroundf(fill), (int)(7 * scale)};
  int t[4] = {(int)tx, (int)by, (int)bar_w, (int)(7 * scale)};
  memcpy(bar, b, sizeof b);
  memcpy(track, t, sizeof t);
}

void wnd_overlay_build(const wnd_overlay_info *info, wnd_mesh *mesh, int rect[4], int colorbar[4]) {
  /* Doubled only on tall windows (high-DPI screens), so that the panel never hides much of the
   * picture; whole-pixel scales keep the glyphs' strokes even. */
  float scale = info->window_height >= 1100 ? 2.0f : 1.0f;
  memset(colorbar, 0, 4 * sizeof *colorbar);
  wnd_lines lines = {0}, look = {0};
  main_lines(info, &lines);
  int timeline_first = lines.count;
  if (info->timeline) {
    memset(info->timeline->slider, 0, sizeof info->timeline->slider);
    wnd_overlay_timeline_lines(info->timeline, &lines);
  }
  wnd_overlay_look_lines(info, &look);
  int surfaces = info->look ? info->look->look.surface_count : 0;
  bool bar = info->look && info->look->look.color_by != IR_COLOR_SURFACE;
  const char *rows[40];
  for (int k = 0; k < lines.count; k++) rows[k] = lines.text[k] + (lines.text[k][0] == '!');
  int row_count = lines.count;
  for (int k = 0; k < look.count; k++) rows[row_count++] = look.text[k];
  const char *stage_title = wnd_overlay_stage_title(info);
  rows[row_count++] = stage_title;
  rows[row_count++] = "H help   F hide overlay";
  float w, h;
  panel_size(rows, row_count, scale, &w, &h);
  /* Surface lines start after their colour swatch. */
  for (int k = 0; k < surfaces; k++) {
    float sw = (float)(text_units(look.text[k]) + SWATCH_UNITS + 2 * PAD_UNITS) * scale;
    if (sw > w) w = sw;
  }
  float chart_w = (float)(stage_label_units() + BAR_UNITS + 4 + text_units("00.000 ms") + 2 * PAD_UNITS) * scale;
  if (chart_w > w) w = chart_w;
  wnd_stage_row stage_rows[WND_MAX_STAGE_ROWS];
  int stage_count = info->have_stages ? wnd_overlay_stage_rows(&info->stages, stage_rows) : 0;
  float chart_h = (float)(stage_count * LINE_UNITS) * scale;
  float bar_h = bar ? (float)(2 * LINE_UNITS) * scale : 0;
  float slider_h = info->timeline ? (float)LINE_UNITS * scale : 0;
  float slider_w = (float)(2 * BAR_UNITS + 2 * PAD_UNITS) * scale;
  if (info->timeline && slider_w > w) w = slider_w;
  h += chart_h + bar_h + slider_h;

  float x = PAD_UNITS * scale, y = PAD_UNITS * scale;
  mesh_quad(mesh, x, y, x + w, y + h, COLOR_PANEL);
  float tx = x + PAD_UNITS * scale, ty = y + PAD_UNITS * scale;
  for (int k = 0; k < lines.count; k++, ty += LINE_UNITS * scale) {
    mesh_text(mesh, tx, ty, scale, rows[k], lines.text[k][0] == '!' ? COLOR_WARN : COLOR_TEXT);
    /* The slider under the time line's last line. */
    if (info->timeline && k == lines.count - 1 && k >= timeline_first) {
      ty += LINE_UNITS * scale;
      timeline_slider(info->timeline, mesh, tx, ty, scale);
    }
  }
  for (int k = 0; k < look.count; k++, ty += LINE_UNITS * scale) {
    if (k < surfaces) {
      const ir_surface *s = &info->look->look.surfaces[k];
      /* The swatch shows the colour at the surface's opacity over the panel. */
      uint8_t rgba[4] = {0, 0, 0, (uint8_t)lroundf(fmaxf(0.15f, fminf(1.0f, s->opacity)) * 255.0f)};
      for (int c = 0; c < 3; c++) rgba[c] = (uint8_t)lroundf(fmaxf(0.0f, fminf(1.0f, s->color[c])) * 255.0f);
      mesh_quad(mesh, tx, ty, tx + 7 * scale, ty + 7 * scale, rgba);
      mesh_text(mesh, tx + SWATCH_UNITS * scale, ty, scale, look.text[k], k == info->look->selected ? COLOR_TEXT : COLOR_DIM);
    } else {
      mesh_text(mesh, tx, ty, scale, look.text[k], COLOR_TEXT);
    }
  }
  if (bar) {
    color_bar(info, mesh, tx, ty, scale, colorbar);
    ty += bar_h;
  }
  mesh_text(mesh, tx, ty, scale, stage_title, COLOR_DIM);
  ty += LINE_UNITS * scale;
  if (stage_count > 0) {
    stage_chart(stage_rows, stage_count, mesh, tx, ty, scale);
    ty += chart_h;
  }
  mesh_text(mesh, tx, ty, scale, "H help   F hide overlay", COLOR_DIM);

  float right = x + w, bottom = y + h;
  if (info->show_help) {
    const char *keys[HELP_COUNT], *what[HELP_COUNT];
    for (int k = 0; k < HELP_COUNT; k++) {
      keys[k] = HELP[k][0];
      what[k] = HELP[k][1];
    }
    float key_w, what_w, hh;
    panel_size(keys, HELP_COUNT, scale, &key_w, &hh);
    panel_size(what, HELP_COUNT, scale, &what_w, &hh);
    key_w += (float)PAD_UNITS * scale; /* a gap between the columns */
    float hw = key_w + what_w - (float)PAD_UNITS * scale;
    float hx = x + w + PANEL_GAP_UNITS * scale, hy = y;
    mesh_quad(mesh, hx, hy, hx + hw, hy + hh, COLOR_PANEL);
    for (int k = 0; k < HELP_COUNT; k++) {
      float row = hy + (float)(PAD_UNITS + k * LINE_UNITS) * scale;
      mesh_text(mesh, hx + PAD_UNITS * scale, row, scale, keys[k], COLOR_DIM);
      mesh_text(mesh, hx + key_w, row, scale, what[k], COLOR_TEXT);
    }
    right = hx + hw;
    if (hy + hh > bottom) bottom = hy + hh;
  }
  rect[0] = 0;
  rect[1] = 0;
  rect[2] = (int)(right + 1.0f);
  rect[3] = (int)(bottom + 1.0f);
}
