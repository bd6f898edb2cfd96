/* The window as a person would use it, driven by a --script under a display (Xvfb with Mesa on
 * the CI machine) with the CPU renderer: every compaction method, the three pipelines, isovalue
 * steps, orbit, pan, zoom, resizes, overlay and help toggles, screenshots, quit.
 *
 * Each screenshot is checked against what it should show: the size asked for, a picture (not a
 * blank), overlay text where the window says the overlay is, and outside the overlay exactly
 * the frame that the CPU renderer gives for the same camera, isovalue and size (rendered here,
 * through render.h). Without a display the test is skipped (exit 77). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__GNUC__)
#pragma GCC diagnostic push
/* stb_image is third-party code; its warnings are not ours. */
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wpedantic"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wdouble-promotion"
#endif
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#include <stb/stb_image.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#include "app/window/window_internal.h"
#include "extract/extract.h"
#include "render/render.h"
#include "tests/check.h"

#define VOLUME "builtin:fractal:48"
#define MAX_SHOTS 16

static const char *binary;
static char dir[64];

/* What the window printed about one screenshot. */
typedef struct shot {
  char path[256];
  int width, height, render_width, render_height;
  double iso;
  char method[32], pipeline[16], device[8];
  int overlay[4];
  ir_camera camera;
  ir_frame_desc look; /* surfaces, clipping, colour source, map and range as the frame had them */
  int selected;       /* 1-based */
  int colorbar[4];    /* the colour bar's strip; all zero when none */
  long step;          /* a time series: the step drawn (0-based); -1: not a series */
  int slider[4];      /* a time series: the slider's track */
  unsigned ao_frames; /* frames of occlusion rays the picture is the mean of */
} shot;

static int parse_surfaces(const char *list, ir_frame_desc *f) {
  char copy[512];
  snprintf(copy, sizeof copy, "%s", list);
  char *save = NULL;
  f->surface_count = 0;
  for (char *one = strtok_r(copy, ";", &save); one && f->surface_count < IR_MAX_SURFACES;
       one = strtok_r(NULL, ";", &save)) {
    ir_surface *x = &f->surfaces[f->surface_count];
    if (sscanf(one, "%f,%f,%f,%f,%f", &x->isovalue, &x->color[0], &x->color[1], &x->color[2], &x->opacity) != 5) return 0;
    f->surface_count++;
  }
  return f->surface_count > 0;
}

/* The look words of a screenshot line; returns how many were read. */
static int parse_look_word(const char *w, shot *s) {
  ir_frame_desc *f = &s->look;
  char word[32];
  if (strncmp(w, "surfaces=", 9) == 0) return parse_surfaces(w + 9, f);
  if (strncmp(w, "selected=", 9) == 0) return sscanf(w, "selected=%d", &s->selected);
  if (strncmp(w, "clip=", 5) == 0)
    return sscanf(w, "clip=%f,%f,%f,%f,%f,%f", &f->clip_lo[0], &f->clip_lo[1], &f->clip_lo[2], &f->clip_hi[0],
                  &f->clip_hi[1], &f->clip_hi[2]) == 6;
  if (strncmp(w, "plane=", 6) == 0) {
    if (strcmp(w, "plane=off") == 0) return 1;
    f->clip_plane_on = true;
    return sscanf(w, "plane=%f,%f,%f,%f", &f->clip_plane[0], &f->clip_plane[1], &f->clip_plane[2], &f->clip_plane[3]) == 4;
  }
  if (strncmp(w, "color_by=", 9) == 0) {
    for (int k = 0; k < IR_COLOR_SOURCE_COUNT; k++)
      if (strcmp(w + 9, ir_color_source_name((ir_color_source)k)) == 0) {
        f->color_by = (ir_color_source)k;
        return 1;
      }
    return 0;
  }
  if (strncmp(w, "colormap=", 9) == 0) return sscanf(w, "colormap=%31s", word) == 1 && ir_colormap_parse(word, &f->colormap);
  if (strncmp(w, "range=", 6) == 0) return sscanf(w, "range=%f,%f", &f->color_range[0], &f->color_range[1]) == 2;
  if (strncmp(w, "refine=", 7) == 0) {
    f->texture_refine = strcmp(w + 7, "texture") == 0;
    return 1;
  }
  if (strncmp(w, "sample_step=", 12) == 0) return sscanf(w, "sample_step=%f", &f->sample_step) == 1;
  if (strncmp(w, "colorbar=", 9) == 0)
    return sscanf(w, "colorbar=%d,%d,%d,%d", &s->colorbar[0], &s->colorbar[1], &s->colorbar[2], &s->colorbar[3]) == 4;
  if (strncmp(w, "ao=", 3) == 0) return sscanf(w, "ao=%d,%f,%u", &f->ao_samples, &f->ao_radius, &s->ao_frames) == 3;
  if (strncmp(w, "shadows=", 8) == 0) {
    f->shadows = strcmp(w + 8, "1") == 0;
    return 1;
  }
  if (strncmp(w, "light=", 6) == 0) {
    f->light_on = strcmp(w + 6, "off") != 0;
    return !f->light_on || sscanf(w, "light=%f,%f", &f->light[0], &f->light[1]) == 2;
  }
  return 0;
}

static bool parse_shot(const char *line, shot *s) {
  *s = (shot){.step = -1};
  char *copy = strdup(line);
  if (!copy) return false;
  int fields = 0;
  char *save = NULL;
  for (char *w = strtok_r(copy, " \n", &save); w; w = strtok_r(NULL, " \n", &save)) {
    ir_camera *c = &s->camera;
    if (fields == 0 && strchr(w, '.') && !strchr(w, '=')) fields += sscanf(w, "%255s", s->path);
    else if (strncmp(w, "size=", 5) == 0) fields += sscanf(w, "size=%dx%d", &s->width, &s->height) == 2;
    else if (strncmp(w, "render=", 7) == 0) fields += sscanf(w, "render=%dx%d", &s->render_width, &s->render_height) == 2;
    else if (strncmp(w, "iso=", 4) == 0) fields += sscanf(w, "iso=%lf", &s->iso);
    else if (strncmp(w, "method=", 7) == 0) fields += sscanf(w, "method=%31s", s->method);
    else if (strncmp(w, "pipeline=", 9) == 0) fields += sscanf(w, "pipeline=%15s", s->pipeline);
    else if (strncmp(w, "device=", 7) == 0) fields += sscanf(w, "device=%7s", s->device);
    else if (strncmp(w, "overlay=", 8) == 0)
      fields += sscanf(w, "overlay=%d,%d,%d,%d", &s->overlay[0], &s->overlay[1], &s->overlay[2], &s->overlay[3]) == 4;
    else if (strncmp(w, "eye=", 4) == 0) fields += sscanf(w, "eye=%f,%f,%f", &c->eye[0], &c->eye[1], &c->eye[2]) == 3;
    else if (strncmp(w, "target=", 7) == 0)
      fields += sscanf(w, "target=%f,%f,%f", &c->target[0], &c->target[1], &c->target[2]) == 3;
    else if (strncmp(w, "up=", 3) == 0) fields += sscanf(w, "up=%f,%f,%f", &c->up[0], &c->up[1], &c->up[2]) == 3;
    else if (strncmp(w, "fov=", 4) == 0) fields += sscanf(w, "fov=%f", &c->fov_y_degrees);
    else if (strncmp(w, "step=", 5) == 0) sscanf(w, "step=%ld", &s->step);
    else if (strncmp(w, "slider=", 7) == 0)
      sscanf(w, "slider=%d,%d,%d,%d", &s->slider[0], &s->slider[1], &s->slider[2], &s->slider[3]);
    else fields += parse_look_word(w, s);
  }
  free(copy);
  return fields == 25;
}

/* Runs inkray in the test's folder; returns the exit status and the output (stdout+stderr). */
static int run_inkray(const char *args, char *output, size_t size) {
  char command[2048];
  snprintf(command, sizeof command, "cd '%s' && '%s' %s 2>&1", dir, binary, args);
  FILE *p = popen(command, "r");
  if (!p) return -1;
  size_t used = fread(output, 1, size - 1, p);
  output[used] = '\0';
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void write_file(const char *name, const char *text) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  if (!f) return;
  fputs(text, f);
  fclose(f);
}

static int collect_shots(const char *output, shot *shots, int max) {
  int count = 0;
  for (const char *p = strstr(output, "inkray: screenshot "); p && count < max;
       p = strstr(p + 1, "inkray: screenshot ")) {
    const char *end = strchr(p, '\n');
    char line[2048];
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n >= sizeof line) n = sizeof line - 1;
    memcpy(line, p + 19, n - 19);
    line[n - 19] = '\0';
    CHECK_MSG(parse_shot(line, &shots[count]), "cannot read the screenshot line '%s'", line);
    count++;
  }
  return count;
}

static bool inside(const int r[4], int x, int y) { return x >= r[0] && y >= r[1] && x < r[0] + r[2] && y < r[1] + r[3]; }

/* The checks every screenshot gets. */
static void check_shot(const shot *s, ir_renderer *reference) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, s->path);
  int w = 0, h = 0, channels = 0;
  uint8_t *png = stbi_load(path, &w, &h, &channels, 4);
  CHECK_MSG(png != NULL, "%s: cannot read the PNG", s->path);
  if (!png) return;
  CHECK_MSG(w == s->width && h == s->height, "%s is %dx%d, expected %dx%d", s->path, w, h, s->width, s->height);

  /* Not a blank: many colours (surface shading) in the picture. */
  size_t varied = 0;
  for (int k = 1; k < w * h; k++) varied += memcmp(png + 4 * k, png + 4 * (k - 1), 3) != 0;
  CHECK_MSG(varied > (size_t)(w * h) / 20, "%s looks blank: only %zu colour changes", s->path, varied);

  if (reference && s->render_width == w && s->render_height == h) {
    char err[IR_ERR_LEN] = {0};
    /* The frame the window printed: its camera, isovalue and look. */
    ir_frame_desc desc = s->look;
    desc.width = w;
    desc.height = h;
    desc.isovalue = (float)s->iso;
    desc.camera = s->camera;
    ir_compact_method_parse(s->method, &desc.method);
    ir_pipeline_parse(s->pipeline, &desc.pipeline);
    uint8_t *want = malloc((size_t)w * h * 4);
    CHECK(want != NULL);
    CHECK_MSG(ir_render_frame(reference, &desc, NULL, err) == IR_OK, "%s", err);
    /* A still view with occlusion rays: the mean of as many frames as the window had drawn. */
    desc.accumulate = desc.ao_samples > 0;
    for (unsigned k = 0; desc.accumulate && k < s->ao_frames; k++) {
      desc.sample_frame = k;
      CHECK_MSG(ir_render_frame(reference, &desc, NULL, err) == IR_OK, "%s", err);
    }
    CHECK_MSG(ir_render_read_image(reference, want, err) == IR_OK, "%s", err);
    size_t outside = 0, outside_differ = 0, overlay = 0, overlay_text = 0;
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) {
        const uint8_t *a = png + 4 * ((size_t)y * w + x), *b = want + 4 * ((size_t)y * w + x);
        int diff = 0;
        for (int c = 0; c < 3; c++) diff = abs(a[c] - b[c]) > diff ? abs(a[c] - b[c]) : diff;
        if (inside(s->overlay, x, y)) {
          overlay++;
          /* Overlay text is light grey or coloured, drawn over a dark translucent panel. */
          overlay_text += diff > 60 && a[0] + a[1] + a[2] > 3 * 140;
        } else {
          outside++;
          outside_differ += diff > 1;
        }
      }
    CHECK_MSG(outside_differ == 0, "%s: %zu of %zu pixels outside the overlay differ from the CPU render of the same view",
              s->path, outside_differ, outside);
    if (s->overlay[2] > 0) {
      CHECK_MSG(overlay_text > overlay / 50, "%s: overlay region %dx%d holds only %zu text pixels", s->path,
                s->overlay[2], s->overlay[3], overlay_text);
    }
    free(want);
  }
  stbi_image_free(png);
}

static const shot *find_shot(const shot *shots, int count, const char *name) {
  for (int k = 0; k < count; k++)
    if (strcmp(shots[k].path, name) == 0) return &shots[k];
  return NULL;
}

static float eye_distance(const ir_camera *a, const ir_camera *b) {
  float d = 0;
  for (int k = 0; k < 3; k++) d += (a->eye[k] - b->eye[k]) * (a->eye[k] - b->eye[k]);
  return sqrtf(d);
}

static void test_scripted_session_switches_everything(void) {
  /* One event per frame at least; the times only order them. */
  write_file("session.txt",
             "0    screenshot default.png\n"
             "0    key 2\n"
             "0    screenshot method2.png\n"
             "0.05 key 3\n"
             "0.05 key 4\n"
             "0.05 key 5\n"
             "0.05 screenshot method5.png\n"
             "0.1  key Tab\n"
             "0.1  key P\n"
             "0.1  key Up\n"
             "0.1  key shift+Up\n"
             "0.1  screenshot iso.png\n"
             "0.1  drag left 100 100 160 110\n"
             "0.1  wheel 2\n"
             "0.1  drag right 200 150 215 140\n"
             "0.1  key P\n"
             "0.1  screenshot moved.png\n"
             "0.1  key F\n"
             "0.1  key P\n"
             "0.1  screenshot plain.png\n"
             "0.1  resize 240 200\n"
             "0.1  screenshot resized.png\n"
             "0.1  key R\n"
             "0.1  key F\n"
             "0.1  key H\n"
             "0.1  key shift+Tab\n"
             "0.1  screenshot help.png\n"
             "0.1  key Q\n");
  static char output[1 << 16];
  int rc = run_inkray("--device cpu --window 320x240 --script session.txt " VOLUME, output, sizeof output);
  CHECK_MSG(rc == 0, "inkray exited with %d:\n%s", rc, output);
  CHECK_STR_CONTAINS(output, "median frame");
  for (int k = 0; k < IR_COMPACT_METHOD_COUNT; k++) {
    char line[64];
    snprintf(line, sizeof line, "inkray: method %s\n", ir_compact_methods()[k].name);
    CHECK_STR_CONTAINS(output, line);
  }
  /* A method key on the single kernel switches to the persistent pipeline; P cycles single ->
   * persistent -> multi -> paper -> single. */
  CHECK_STR_CONTAINS(output, "inkray: pipeline persistent");
  CHECK_STR_CONTAINS(output, "inkray: pipeline multi");
  CHECK_STR_CONTAINS(output, "inkray: pipeline paper");
  CHECK_STR_CONTAINS(output, "inkray: pipeline single");

  shot shots[MAX_SHOTS];
  int count = collect_shots(output, shots, MAX_SHOTS);
  CHECK_EQ_INT(count, 8);

  ir_volume volume = {0};
  char err[IR_ERR_LEN] = {0};
  ir_volume_desc vdesc = {.source = VOLUME};
  CHECK_MSG(ir_volume_load(&vdesc, &volume, err) == IR_OK, "%s", err);
  ir_renderer *reference = NULL;
  ir_renderer_desc rdesc = {.device = IR_DEVICE_CPU, .volume = &volume};
  CHECK_MSG(ir_renderer_create(&rdesc, &reference, err) == IR_OK, "%s", err);
  if (!reference) return;
  for (int k = 0; k < count; k++) {
    CHECK_STR_CONTAINS(shots[k].device, "cpu");
    check_shot(&shots[k], reference);
  }

  const shot *first = find_shot(shots, count, "default.png"), *m2 = find_shot(shots, count, "method2.png"),
             *m5 = find_shot(shots, count, "method5.png"), *iso = find_shot(shots, count, "iso.png"),
             *moved = find_shot(shots, count, "moved.png"), *plain = find_shot(shots, count, "plain.png"),
             *resized = find_shot(shots, count, "resized.png"), *help = find_shot(shots, count, "help.png");
  CHECK(first && m2 && m5 && iso && moved && plain && resized && help);
  if (first && m2 && m5 && iso && moved && plain && resized && help) {
    ir_camera orbit = ir_camera_orbit(&volume, WND_VIEW_AZIMUTH, WND_VIEW_ELEVATION, WND_VIEW_DISTANCE, IR_AXIS_NONE);
    CHECK_NEAR(eye_distance(&first->camera, &orbit), 0, 1e-3);
    CHECK(first->width == 320 && first->height == 240 && first->render_width == 320);
    CHECK_STR_CONTAINS(first->method, ir_compact_methods()[0].name);
    CHECK_STR_CONTAINS(first->pipeline, "single");
    CHECK(first->overlay[2] > 50 && first->overlay[3] > 50);
    CHECK_STR_CONTAINS(m2->method, ir_compact_methods()[1].name);
    CHECK_STR_CONTAINS(m2->pipeline, "persistent");
    CHECK_STR_CONTAINS(m5->method, ir_compact_methods()[4].name);
    CHECK_STR_CONTAINS(iso->method, ir_compact_methods()[0].name); /* Tab wraps around */
    CHECK_STR_CONTAINS(iso->pipeline, "multi");
    CHECK_STR_CONTAINS(moved->pipeline, "paper");
    CHECK_STR_CONTAINS(plain->pipeline, "single");
    /* Up and Shift+Up: one fine and one coarse step (ten fine ones) of 1/100 of the value range. */
    double step = (volume.value_max - volume.value_min) / 100.0;
    CHECK_NEAR(iso->iso - first->iso, 11 * step, step * 1e-3);
    CHECK(eye_distance(&moved->camera, &first->camera) > 1.0f);
    CHECK_EQ_INT(plain->overlay[2], 0); /* F hid the overlay: the whole image is the render */
    CHECK(resized->width == 240 && resized->height == 200);
    CHECK(resized->render_width == 240 && resized->render_height == 200);
    CHECK_NEAR(eye_distance(&help->camera, &orbit), 0, 1e-3); /* R reset the view */
    CHECK(help->overlay[2] > first->overlay[2]);               /* the help panel beside it */
    CHECK_STR_CONTAINS(help->method, ir_compact_methods()[IR_COMPACT_METHOD_COUNT - 1].name);
  }
  ir_renderer_destroy(reference);
  ir_volume_free(&volume);
}

/* The colour bar's strip in a screenshot: each of its steps in the colour the map gives the
 * middle of its part of the range (the strip is opaque, so exactly that colour, to rounding),
 * the low end left. */
static void check_colorbar(const shot *s) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, s->path);
  int w = 0, h = 0, channels = 0;
  uint8_t *png = stbi_load(path, &w, &h, &channels, 4);
  CHECK_MSG(png != NULL, "%s: cannot read the PNG", s->path);
  if (!png) return;
  const int *b = s->colorbar;
  CHECK_MSG(b[2] >= WND_COLORBAR_STEPS / 2 && b[3] > 2 && b[0] + b[2] <= w && b[1] + b[3] <= h,
            "%s: colour bar %d,%d,%d,%d", s->path, b[0], b[1], b[2], b[3]);
  int y = b[1] + b[3] / 2, wrong = 0, checked = 0;
  float lo = s->look.color_range[0], hi = s->look.color_range[1];
  for (int x = b[0]; x < b[0] + b[2]; x += 3) {
    /* A pixel shows the step whose quad covers its centre (steps are narrower than a pixel
     * when the bar is; centres on a boundary could go either way and are left out). */
    double at = ((double)x + 0.5 - b[0]) * WND_COLORBAR_STEPS / b[2];
    int k = (int)at;
    if (at - k < 0.01 || at - k > 0.99) continue;
    float rgb[3];
    ir_colormap_lookup(s->look.colormap, lo + (hi - lo) * ((float)k + 0.5f) / WND_COLORBAR_STEPS, lo, hi, rgb);
    const uint8_t *p = png + 4 * ((size_t)y * w + x);
    for (int c = 0; c < 3; c++)
      if (abs((int)p[c] - (int)lroundf(rgb[c] * 255.0f)) > 3) {
        wrong++;
        fprintf(stderr, "%s: colour bar step %d at %d,%d is %d,%d,%d, expected %.0f,%.0f,%.0f\n", s->path, k, x, y,
                p[0], p[1], p[2], rgb[0] * 255, rgb[1] * 255, rgb[2] * 255);
        break;
      }
    checked++;
  }
  CHECK_MSG(wrong == 0, "%s: %d of %d colour bar steps differ from the map", s->path, wrong, checked);
  stbi_image_free(png);
}

/* How many pixels of the rectangle differ between two screenshots of the same size. */
static size_t pixels_differing(const shot *a, const shot *b, const int r[4]) {
  char pa[512], pb[512];
  snprintf(pa, sizeof pa, "%s/%s", dir, a->path);
  snprintf(pb, sizeof pb, "%s/%s", dir, b->path);
  int w = 0, h = 0, w2 = 0, h2 = 0, ch = 0;
  uint8_t *ia = stbi_load(pa, &w, &h, &ch, 4), *ib = stbi_load(pb, &w2, &h2, &ch, 4);
  size_t differ = 0;
  if (ia && ib && w == w2 && h == h2)
    for (int y = r[1]; y < r[1] + r[3] && y < h; y++)
      for (int x = r[0]; x < r[0] + r[2] && x < w; x++) differ += memcmp(ia + 4 * ((size_t)y * w + x), ib + 4 * ((size_t)y * w + x), 3) != 0;
  stbi_image_free(ia);
  stbi_image_free(ib);
  return differ;
}

/* The look keys and drags as a person would use them: a second, translucent surface with
 * another colour, a clip box dragged down from the top, colour by the gradient with the next
 * map, a surface removed (never the last), a clip plane. What the window says it drew is
 * checked, and every screenshot is the CPU renderer's frame for that look outside the overlay. */
static void test_scripted_look_surfaces_clipping_and_colour(void) {
  write_file("look.txt",
             "0 screenshot look0.png\n"
             "0 key N\n"               /* surface 2 at the same isovalue */
             "0 key shift+Up\n"        /* ... moved up a coarse step */
             "0 key PageDown\n"
             "0 key PageDown\n"
             "0 key PageDown\n"        /* opacity 0.7 */
             "0 key C\n"               /* the first named colour */
             "0 screenshot look1.png\n"
             "0 key B\n"               /* clip box on; the top face (z1) is the one dragged */
             "0 drag shift+left 150 100 150 160\n"
             "0 screenshot clip.png\n"
             "0 key K\n"               /* colour by the gradient */
             "0 screenshot colorby.png\n"
             "0 key M\n"               /* the next colour map */
             "0 screenshot colormap.png\n"
             "0 key Left\n"
             "0 key Delete\n"          /* surface 1 goes; surface 2 is the only one left */
             "0 key Delete\n"          /* refused: the last surface stays */
             "0 key L\n"               /* clip plane through the centre, facing the view */
             "0 drag shift+right 150 100 150 124\n"
             "0 key K\n"
             "0 screenshot final.png\n"
             "0 quit\n");
  static char output[1 << 16];
  int rc = run_inkray("--device cpu --window 320x240 --script look.txt " VOLUME, output, sizeof output);
  CHECK_MSG(rc == 0, "inkray exited with %d:\n%s", rc, output);

  ir_volume volume = {0};
  char err[IR_ERR_LEN] = {0};
  ir_volume_desc vdesc = {.source = VOLUME};
  CHECK_MSG(ir_volume_load(&vdesc, &volume, err) == IR_OK, "%s", err);
  double step = (volume.value_max - volume.value_min) / 100.0;
  char color[16];
  snprintf(color, sizeof color, "colour %s ", ir_color_names()[0]);
  CHECK_STR_CONTAINS(output, "inkray: surface 2/2 iso");
  CHECK_STR_CONTAINS(output, "opacity 0.7\n");
  CHECK_STR_CONTAINS(output, color);
  CHECK_STR_CONTAINS(output, "inkray: clip box on x 0,1 y 0,1 z 0,1 face z1\n");
  CHECK_STR_CONTAINS(output, "inkray: colour by gradient colormap");
  CHECK_STR_CONTAINS(output, "inkray: the last surface stays");
  CHECK_STR_CONTAINS(output, "inkray: clip plane on n ");

  shot shots[MAX_SHOTS];
  int count = collect_shots(output, shots, MAX_SHOTS);
  CHECK_EQ_INT(count, 6);
  ir_renderer *reference = NULL;
  ir_renderer_desc rdesc = {.device = IR_DEVICE_CPU, .volume = &volume};
  CHECK_MSG(ir_renderer_create(&rdesc, &reference, err) == IR_OK, "%s", err);
  for (int k = 0; k < count; k++) check_shot(&shots[k], reference);
  const shot *s0 = find_shot(shots, count, "look0.png"), *s1 = find_shot(shots, count, "look1.png"),
             *clip = find_shot(shots, count, "clip.png"), *by = find_shot(shots, count, "colorby.png"),
             *map = find_shot(shots, count, "colormap.png"), *last = find_shot(shots, count, "final.png");
  CHECK(s0 && s1 && clip && by && map && last);
  if (s0 && s1 && clip && by && map && last) {
    /* Without --surface: one opaque surface at the volume's isovalue, in the default colour. */
    float default_color[3];
    ir_surface_default_color(0, default_color);
    CHECK_EQ_INT(s0->look.surface_count, 1);
    CHECK_NEAR(s0->look.surfaces[0].isovalue, s0->iso, 1e-6);
    CHECK_NEAR(s0->look.surfaces[0].opacity, 1, 0);
    for (int c = 0; c < 3; c++) CHECK_NEAR(s0->look.surfaces[0].color[c], default_color[c], 1e-6);
    CHECK(s0->look.clip_hi[2] == 0 && !s0->look.clip_plane_on && s0->look.color_by == IR_COLOR_SURFACE);
    CHECK(s0->colorbar[2] == 0);

    CHECK_EQ_INT(s1->look.surface_count, 2);
    CHECK_EQ_INT(s1->selected, 2);
    CHECK_NEAR(s1->look.surfaces[1].isovalue, s0->iso + 10 * step, step * 1e-3);
    CHECK_NEAR(s1->look.surfaces[1].opacity, 0.7, 1e-6);
    float named[3];
    CHECK(ir_color_parse(ir_color_names()[0], named));
    for (int c = 0; c < 3; c++) CHECK_NEAR(s1->look.surfaces[1].color[c], named[c], 1e-6);
    CHECK_NEAR(s1->look.surfaces[0].opacity, 1, 0); /* the first one is as it was */

    /* A 60-pixel drag down a 240-pixel window: the top face a quarter of the way down. */
    for (int k = 0; k < 3; k++) {
      CHECK_NEAR(clip->look.clip_lo[k], 0, 1e-6);
      CHECK_NEAR(clip->look.clip_hi[k], (k == 2 ? 0.75 : 1.0) * (double)volume.dims[k], 1e-3);
    }

    CHECK(by->look.color_by == IR_COLOR_GRADIENT);
    CHECK(by->look.color_range[1] > by->look.color_range[0]);
    check_colorbar(by);
    CHECK(map->look.colormap == (ir_colormap)((by->look.colormap + 1) % IR_COLORMAP_COUNT));
    check_colorbar(map);
    /* The bar is in the overlay only while colouring by a quantity. */
    CHECK(pixels_differing(s1, by, by->colorbar) > (size_t)(by->colorbar[2] * by->colorbar[3]) / 2);

    CHECK_EQ_INT(last->look.surface_count, 1);
    CHECK_NEAR(last->look.surfaces[0].isovalue, s1->look.surfaces[1].isovalue, 0);
    CHECK(last->look.clip_plane_on);
    const float *p = last->look.clip_plane;
    float n2 = p[0] * p[0] + p[1] * p[1] + p[2] * p[2];
    CHECK_NEAR(n2, 1, 1e-4);
    /* Through the centre, then 24 pixels down a 240-pixel window: a tenth of the diagonal back
     * toward the eye. */
    float extent[3], centre_side = p[3], diagonal = 0;
    for (int k = 0; k < 3; k++) {
      extent[k] = (float)volume.dims[k] * volume.spacing[k];
      centre_side += p[k] * 0.5f * extent[k];
      diagonal += extent[k] * extent[k];
    }
    CHECK_NEAR(centre_side, 0.1f * sqrtf(diagonal), 1e-2);
    CHECK(last->look.color_by == IR_COLOR_SURFACE); /* no colour volume: K went back */
    CHECK(last->colorbar[2] == 0);
  }
  if (reference) ir_renderer_destroy(reference);
  ir_volume_free(&volume);
}

/* Each screenshot against the CPU reference's render of the look it printed (check_shot), on
 * VOLUME. */
static void check_shots_on_cpu(const shot *const *shots, int n) {
  ir_volume volume = {0};
  char err[IR_ERR_LEN] = {0};
  ir_volume_desc vdesc = {.source = VOLUME};
  CHECK_MSG(ir_volume_load(&vdesc, &volume, err) == IR_OK, "%s", err);
  ir_renderer *reference = NULL;
  ir_renderer_desc rdesc = {.device = IR_DEVICE_CPU, .volume = &volume};
  CHECK_MSG(ir_renderer_create(&rdesc, &reference, err) == IR_OK, "%s", err);
  for (int k = 0; k < n; k++) check_shot(shots[k], reference);
  if (reference) ir_renderer_destroy(reference);
  ir_volume_free(&volume);
}

/* O cycles ambient occlusion (off, 4, 8, 16 rays), G toggles shadows, --light sets the light; a
 * still view accumulates frames of new occlusion rays, and its screenshot is the CPU reference's
 * mean of as many frames, lit the same way. */
static void test_scripted_ambient_occlusion_and_shadows(void) {
  write_file("ao.txt",
             "0 key O\n"   /* 4 rays per hit */
             "0 key G\n"   /* shadows on */
             "1.0 screenshot ao.png\n"
             "1.0 key O\n" /* 8 */
             "1.0 key O\n" /* 16 */
             "1.0 key O\n" /* off */
             "1.0 key G\n" /* shadows off */
             "1.3 screenshot off.png\n"
             "1.3 quit\n");
  static char output[1 << 16];
  int rc = run_inkray("--device cpu --window 320x240 --light 30,45 --script ao.txt " VOLUME, output, sizeof output);
  CHECK_MSG(rc == 0, "inkray exited with %d:\n%s", rc, output);
  CHECK_STR_CONTAINS(output, "inkray: ambient occlusion 4 rays per hit\n");
  CHECK_STR_CONTAINS(output, "inkray: ambient occlusion 16 rays per hit\n");
  CHECK_STR_CONTAINS(output, "inkray: ambient occlusion off\n");
  CHECK_STR_CONTAINS(output, "inkray: shadows on\n");
  shot shots[MAX_SHOTS];
  int count = collect_shots(output, shots, MAX_SHOTS);
  const shot *ao = find_shot(shots, count, "ao.png"), *off = find_shot(shots, count, "off.png");
  CHECK(ao && off);
  if (!ao || !off) return;
  CHECK_EQ_INT(ao->look.ao_samples, 4);
  CHECK(ao->look.shadows && ao->look.light_on && ao->look.light[0] == 30.0f && ao->look.light[1] == 45.0f);
  CHECK_MSG(ao->ao_frames >= 2, "the still view accumulated %u frames", ao->ao_frames);
  CHECK(off->look.ao_samples == 0 && !off->look.shadows && off->look.light_on);
  const shot *both[] = {ao, off};
  check_shots_on_cpu(both, 2);
}

/* D cycles the sample step (0.5, the default; 0.25; 0.125) and the screenshots are the CPU
 * reference's images at those steps. */
static void test_scripted_sample_step(void) {
  write_file("step.txt",
             "0 key D\n" /* 0.25 */
             "0.3 screenshot fine.png\n"
             "0.3 key D\n" /* 0.125 */
             "0.3 key D\n" /* back to the default */
             "0.6 screenshot default.png\n"
             "0.6 quit\n");
  static char output[1 << 16];
  int rc = run_inkray("--device cpu --window 320x240 --script step.txt " VOLUME, output, sizeof output);
  CHECK_MSG(rc == 0, "inkray exited with %d:\n%s", rc, output);
  CHECK_STR_CONTAINS(output, "inkray: samples every 0.25 voxels\n");
  CHECK_STR_CONTAINS(output, "inkray: samples every 0.125 voxels\n");
  CHECK_STR_CONTAINS(output, "inkray: samples every 0.5 voxels (the default)\n");
  shot shots[MAX_SHOTS];
  int count = collect_shots(output, shots, MAX_SHOTS);
  const shot *fine = find_shot(shots, count, "fine.png"), *plain = find_shot(shots, count, "default.png");
  CHECK(fine && plain);
  if (!fine || !plain) return;
  CHECK(fine->look.sample_step == 0.25f);
  CHECK(plain->look.sample_step == 0.0f);
  const shot *both[] = {fine, plain};
  check_shots_on_cpu(both, 2);
}

/* The look options start the window with what they say; --color-by FILE loads a second volume
 * that K then cycles through (surface -> gradient -> volume). */
static void test_look_options_set_the_start(void) {
  write_file("start.txt", "0 screenshot start.png\n0 key K\n0 key K\n0 screenshot cycled.png\n0 quit\n");
  static char output[1 << 16];
  int rc = run_inkray("--device cpu --window 320x240 --script start.txt --surface 60 --surface 140:#ff8000:0.5 "
                      "--clip-box 0,1,0,0.5,0,1 --color-by builtin:sphere:48 --colormap grey --iso 9 " VOLUME,
                      output, sizeof output);
  CHECK_MSG(rc == 0, "inkray exited with %d:\n%s", rc, output);
  CHECK_STR_CONTAINS(output, "--iso 9 is not used");
  CHECK_STR_CONTAINS(output, "inkray: colour by volume colormap grey range ");
  shot shots[2];
  CHECK_EQ_INT(collect_shots(output, shots, 2), 2);
  const shot *s = &shots[0], *cycled = &shots[1];
  CHECK_EQ_INT(s->look.surface_count, 2);
  CHECK_NEAR(s->look.surfaces[0].isovalue, 60, 0);
  float palette[3]; /* no colour given: the palette's first */
  ir_surface_default_color(0, palette);
  for (int c = 0; c < 3; c++) CHECK_NEAR(s->look.surfaces[0].color[c], palette[c], 1e-6);
  CHECK_NEAR(s->look.surfaces[1].isovalue, 140, 0);
  CHECK_NEAR(s->look.surfaces[1].opacity, 0.5, 1e-6);
  CHECK_NEAR(s->look.surfaces[1].color[0], 1, 1e-6);
  CHECK_NEAR(s->look.surfaces[1].color[1], 128.0 / 255.0, 1e-6);
  CHECK_NEAR(s->look.clip_hi[1], 24, 1e-4); /* half of 48 voxels */
  CHECK_NEAR(s->look.clip_hi[0], 48, 1e-4);
  CHECK(s->look.color_by == IR_COLOR_VOLUME && s->look.colormap == IR_COLORMAP_GREY);
  /* The sphere's own values span the map (no --color-range). */
  ir_volume sphere = {0};
  char err[IR_ERR_LEN] = {0};
  ir_volume_desc vdesc = {.source = "builtin:sphere:48"};
  CHECK_MSG(ir_volume_load(&vdesc, &sphere, err) == IR_OK, "%s", err);
  float want[2];
  ir_color_range_auto(&sphere, &sphere, IR_COLOR_VOLUME, want);
  CHECK_NEAR(s->look.color_range[0], want[0], 1e-6);
  CHECK_NEAR(s->look.color_range[1], want[1], 1e-6);
  ir_volume_free(&sphere);
  check_colorbar(s);
  CHECK(cycled->look.color_by == IR_COLOR_GRADIENT);
  check_colorbar(cycled);
}

/* --size fixes the render resolution: a bigger window shows the same frame scaled up. */
static void test_fixed_size_keeps_the_render_resolution(void) {
  write_file("fixed.txt", "0 resize 300 200\n0 screenshot fixed.png\n0 quit\n");
  static char output[1 << 14];
  int rc = run_inkray("--device cpu --size 150x100 --script fixed.txt " VOLUME, output, sizeof output);
  CHECK_MSG(rc == 0, "inkray exited with %d:\n%s", rc, output);
  shot s;
  CHECK_EQ_INT(collect_shots(output, &s, 1), 1);
  CHECK(s.width == 300 && s.height == 200);
  CHECK(s.render_width == 150 && s.render_height == 100);
  check_shot(&s, NULL);
}

/* Without a GPU the default device falls back to the CPU renderer and says so. */
static void test_gpu_request_without_a_device_falls_back(void) {
  write_file("quit.txt", "0 quit\n");
  static char output[1 << 14];
  int rc = run_inkray("--window 160x120 --script quit.txt " VOLUME, output, sizeof output);
  CHECK_EQ_INT(rc, 0);
  if (strstr(output, "gpu renderer")) return; /* a machine with a CUDA device */
  CHECK_STR_CONTAINS(output, "no CUDA device");
  CHECK_STR_CONTAINS(output, "cpu renderer, frames shown through host-copy");
}

/* The image formats open in the window: small files kept in the repository (a generated
 * enhanced CT, the fuzzer's TIFF and VTI seeds), each format where it was built. */
static void test_window_opens_dicom_tiff_and_vti(void) {
  const char *files[] = {
#ifdef INKRAY_HAVE_GDCM
      INKRAY_TEST_DATA_DIR "/samples/sphere_enhanced_ct.dcm",
#endif
#ifdef INKRAY_HAVE_TIFF
      INKRAY_TEST_DATA_DIR "/fuzz_corpus/tiff_two_pages.tif",
#endif
#ifdef INKRAY_HAVE_EXPAT
      INKRAY_TEST_DATA_DIR "/fuzz_corpus/vti_appended_zlib.vti",
#endif
      NULL};
  write_file("quit.txt", "0 quit\n");
  for (int k = 0; files[k]; k++) {
    static char output[1 << 14];
    char args[1024];
    snprintf(args, sizeof args, "--device cpu --window 160x120 --script quit.txt '%s'", files[k]);
    int rc = run_inkray(args, output, sizeof output);
    CHECK_MSG(rc == 0, "inkray %s exited with %d:\n%s", args, rc, output);
    CHECK_STR_CONTAINS(output, "1 frames");
  }
}

/* An OME-Zarr image at --level auto: the coarsest level first, the finest that fits loaded behind
 * the frames and swapped in; - and = step a level coarser and finer, each swapped in when read. */
static void test_window_opens_ome_zarr_coarsest_first_and_steps_levels(void) {
  write_file("levels.txt", "1.0 key -\n2.5 key =\n4.0 quit\n");
  static char output[1 << 15];
  const char *args = "--device cpu --window 160x120 --iso 1500 --script levels.txt '" INKRAY_TEST_DATA_DIR
                     "/zarr/ome_05_zyx.zarr'";
  int rc = run_inkray(args, output, sizeof output);
  CHECK_MSG(rc == 0, "inkray %s exited with %d:\n%s", args, rc, output);
  CHECK_STR_CONTAINS(output, "level 1 of 2 (7x6x5) first");
  const char *fine = strstr(output, "level 0 of 2 (14x12x10) drawn");
  CHECK_MSG(fine != NULL, "level 0 never drawn:\n%s", output);
  const char *coarse = fine ? strstr(fine, "level 1 of 2 (7x6x5) drawn") : NULL;
  CHECK_MSG(coarse != NULL, "- did not draw level 1:\n%s", output);
  CHECK_MSG(coarse && strstr(coarse, "level 0 of 2 (14x12x10) drawn"), "= did not draw level 0 again:\n%s", output);
}

/* E writes the surfaces as the frame draws them: a second surface and the clip box reach the mesh,
 * which equals the library's extraction of the same look (the CPU extractor); the overlay says so. */
static void test_e_writes_the_surfaces_as_a_mesh(void) {
  write_file("mesh.txt", "0 key n\n0 key Up\n0 key b\n0 key e\n0 key e\n0 screenshot mesh.png\n0 quit\n");
  static char output[1 << 15];
  char args[512];
  snprintf(args, sizeof args, "--device cpu --size 200x150 --mesh-dir '%s' --script mesh.txt " VOLUME, dir);
  int rc = run_inkray(args, output, sizeof output);
  CHECK_MSG(rc == 0, "inkray exited with %d:\n%s", rc, output);
  const char *line = strstr(output, "inkray: mesh ");
  char path[512] = {0};
  int surfaces = 0;
  size_t vertices = 0, triangles = 0;
  CHECK(line && sscanf(line, "inkray: mesh %511s surfaces=%d vertices=%zu triangles=%zu", path, &surfaces, &vertices,
                       &triangles) == 4);
  CHECK_EQ_INT(surfaces, 2);
  CHECK_STR_CONTAINS(path, "builtin-fractal-48-mesh-1.ply");
  CHECK(line && strstr(line + 1, "builtin-fractal-48-mesh-2.ply")); /* the second E: the next name */
  /* The file holds the counts printed. */
  FILE *f = fopen(path, "rb");
  char header[1024] = {0};
  if (f) {
    CHECK(fread(header, 1, sizeof header - 1, f) > 0);
    fclose(f);
  }
  size_t file_vertices = 0, file_faces = 0;
  const char *v = strstr(header, "element vertex "), *t = strstr(header, "element face ");
  CHECK(v && t && sscanf(v, "element vertex %zu", &file_vertices) == 1 && sscanf(t, "element face %zu", &file_faces) == 1);
  CHECK_EQ_INT(file_vertices, vertices);
  CHECK_EQ_INT(file_faces, triangles);
  CHECK_STR_CONTAINS(header, "property uchar red"); /* the window's surface colours */
  /* The same surfaces and box through the library. */
  shot sh;
  CHECK_EQ_INT(collect_shots(output, &sh, 1), 1);
  char err[IR_ERR_LEN];
  ir_volume vol;
  ir_volume_desc vd = {.source = VOLUME};
  CHECK(ir_volume_load(&vd, &vol, err) == IR_OK);
  ir_extract_desc d = {.surface_count = sh.look.surface_count, .clip_box_on = true};
  for (int k = 0; k < sh.look.surface_count; k++) d.isovalues[k] = sh.look.surfaces[k].isovalue;
  for (int k = 0; k < 3; k++) d.clip_lo[k] = sh.look.clip_lo[k], d.clip_hi[k] = sh.look.clip_hi[k];
  ir_extractor *ex = NULL;
  ir_extractor_desc xd = {.device = IR_EXTRACT_CPU};
  ir_mesh m;
  CHECK(ir_extractor_create(&xd, &ex, err) == IR_OK && ir_extractor_set_volume(ex, &vol, err) == IR_OK);
  CHECK(ir_extract(ex, &d, &m, NULL, err) == IR_OK);
  CHECK_EQ_INT(m.vertex_count, vertices);
  CHECK_EQ_INT(m.triangle_count, triangles);
  CHECK(triangles > 0);
  ir_mesh_free(&m);
  ir_extractor_destroy(ex);
  ir_volume_free(&vol);
}

/* --bench-window: one line per pipeline of the P cycle with both FPS and their ratio, figures
 * that agree with each other, and a summary; --pipeline narrows it to one. */
static void test_bench_window_prints_both_fps_and_their_ratio(void) {
  char output[8192];
  int rc = run_inkray("--device cpu --bench-window --bench-frames 10 --window 64x48 builtin:sphere:24", output,
                      sizeof output);
  CHECK_MSG(rc == 0, "exit %d:\n%s", rc, output);
  CHECK_STR_CONTAINS(output, "vsync off");
  int lines = 0;
  for (const char *p = strstr(output, "bench-window pipeline="); p; p = strstr(p + 1, "bench-window pipeline=")) {
    char pipeline[32] = "", display[32] = "";
    int w = 0, h = 0;
    double headless_fps = 0, headless_ms = 0, b2b = 0, window_fps = 0, window_ms = 0, ratio = 0, overhead = 0;
    int n = sscanf(p, "bench-window pipeline=%31s method=%*s size=%dx%d display=%31s headless_fps=%lf headless_ms=%lf "
                      "back_to_back_ms=%lf window_fps=%lf window_ms=%lf ratio=%lf overhead_ms=%lf",
                   pipeline, &w, &h, display, &headless_fps, &headless_ms, &b2b, &window_fps, &window_ms, &ratio, &overhead);
    CHECK_MSG(n == 11, "line %d does not parse (%d fields): %.200s", lines, n, p);
    if (n != 11) break;
    CHECK_EQ_INT(w, 64);
    CHECK_EQ_INT(h, 48);
    CHECK(strcmp(display, "host-copy") == 0);
    CHECK(headless_ms > 0 && window_ms > 0 && b2b > 0);
    CHECK_NEAR(headless_fps, 1000.0 / headless_ms, 0.1 + 1e-3 * headless_fps);
    CHECK_NEAR(ratio, headless_ms / window_ms, 2e-3);
    CHECK_NEAR(overhead, window_ms - headless_ms, 1e-3);
    lines++;
  }
  /* The P cycle: single, persistent, multi, paper. */
  CHECK_EQ_INT(lines, 4);
  CHECK_STR_CONTAINS(output, "bench-window done: lowest window/headless ratio");
  rc = run_inkray("--device cpu --bench-window --bench-frames 10 --window 64x48 --pipeline multi builtin:sphere:24",
                  output, sizeof output);
  CHECK_EQ_INT(rc, 0);
  CHECK_STR_CONTAINS(output, "bench-window pipeline=multi");
  CHECK(strstr(output, "pipeline=single") == NULL);
}

/* ---- Time series ---------------------------------------------------------------------------- */
#define SERIES_STEPS 6
#define SERIES_N 32

/* Step k of a moving ball: uint8, 128 + 40 (R - d) clamped, R = 0.25 N, its centre moving along x
 * from 0.3 N to 0.7 N; isovalue 128 is the sphere. */
static void write_ball_step(int k, const char *name) {
  size_t n = SERIES_N, bytes = n * n * n;
  uint8_t *v = malloc(bytes);
  CHECK(v != NULL);
  if (!v) return;
  double cx = n * (0.3 + 0.4 * k / (SERIES_STEPS - 1)), c = 0.5 * (double)(n - 1), r = 0.25 * (double)n;
  for (size_t z = 0; z < n; z++)
    for (size_t y = 0; y < n; y++)
      for (size_t x = 0; x < n; x++) {
        double d = sqrt((x - cx) * (x - cx) + (y - c) * (y - c) + (z - c) * (z - c));
        double q = 128.0 + 40.0 * (r - d);
        v[(z * n + y) * n + x] = (uint8_t)(q < 0 ? 0 : q > 255 ? 255 : q);
      }
  char path[256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (f) {
    CHECK(fwrite(v, 1, bytes, f) == bytes);
    fclose(f);
  }
  free(v);
}

/* The CPU renderer of step k, read back from its file as the window reads it. */
static ir_renderer *step_renderer(int k, ir_volume *v) {
  char path[256];
  snprintf(path, sizeof path, "%s/ball_%02d.raw", dir, k);
  ir_volume_desc d = {.source = path, .dims = {SERIES_N, SERIES_N, SERIES_N}, .type_given = true,
                      .type = IR_VOXEL_UINT8};
  char err[IR_ERR_LEN] = {0};
  if (ir_volume_load(&d, v, err) != IR_OK) {
    CHECK_MSG(0, "%s", err);
    return NULL;
  }
  ir_renderer *r = NULL;
  ir_renderer_desc rd = {.device = IR_DEVICE_CPU, .volume = v};
  CHECK_MSG(ir_renderer_create(&rd, &r, err) == IR_OK, "%s", err);
  return r;
}

/* A time series in the window: Shift+Right, End, '.', ',', Home step and jump (wrapping at the
 * ends), Space plays and pauses. Each screenshot says which step it drew, and outside the
 * overlay it is exactly the CPU render of that step's file; the slider sits in the overlay. */
static void test_window_steps_and_plays_a_time_series(void) {
  for (int k = 0; k < SERIES_STEPS; k++) {
    char name[32];
    snprintf(name, sizeof name, "ball_%02d.raw", k);
    write_ball_step(k, name);
  }
  write_file("series.txt", "0.2 screenshot t0.png\n"
                           "0.3 key shift+Right\n"
                           "0.4 screenshot t1.png\n"
                           "0.5 key End\n"
                           "0.6 screenshot t5.png\n"
                           "0.7 key .\n"
                           "0.8 screenshot t0b.png\n"
                           "0.9 key ,\n"
                           "1.0 key Home\n"
                           "1.1 key Space\n"
                           "2.6 key Space\n"
                           "2.7 screenshot tp.png\n"
                           "2.8 quit\n");
  char output[16384];
  int rc = run_inkray("--device cpu --window 480x360 --rate 20 --iso 128 --dims 32x32x32 --type uint8 "
                      "--script series.txt ball_%02d.raw",
                      output, sizeof output);
  CHECK_MSG(rc == 0, "exit %d:\n%s", rc, output);
  CHECK_STR_CONTAINS(output, "time series of 6 steps");
  CHECK_STR_CONTAINS(output, "at step 2/6 ball_01.raw");
  CHECK_STR_CONTAINS(output, "at step 6/6 ball_05.raw");
  CHECK_STR_CONTAINS(output, "play from step 1/6 at 20 steps/s");
  shot shots[MAX_SHOTS];
  int count = collect_shots(output, shots, MAX_SHOTS);
  CHECK_EQ_INT(count, 5);
  static const struct {
    const char *name;
    long step;
  } want[] = {{"t0.png", 0}, {"t1.png", 1}, {"t5.png", 5}, {"t0b.png", 0}};
  for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
    const shot *s = find_shot(shots, count, want[k].name);
    CHECK_MSG(s != NULL, "no screenshot %s", want[k].name);
    if (s) CHECK_MSG(s->step == want[k].step, "%s drew step %ld, expected %ld", s->path, s->step, want[k].step);
  }
  /* After 1.5 s of play at 20 steps a second: somewhere past step 0, as the pause line says. */
  const shot *played = find_shot(shots, count, "tp.png");
  const char *pause = strstr(output, "pause at step ");
  long paused = -1;
  CHECK(pause != NULL && sscanf(pause, "pause at step %ld/", &paused) == 1);
  if (played) {
    CHECK_MSG(played->step == paused - 1, "the paused screenshot drew step %ld, the pause line says %ld", played->step,
              paused);
  }
  /* 1.5 s at 20 steps a second on a small volume: many steps, whatever step it ended on. */
  long played_steps = -1;
  const char *p = strstr(output, "inkray: ");
  for (; p; p = strstr(p + 1, "inkray: "))
    if (sscanf(p, "inkray: %ld steps played", &played_steps) == 1) break;
  CHECK_MSG(played_steps >= 5, "only %ld steps played in 1.5 s at 20 steps/s", played_steps);
  for (int k = 0; k < count; k++) {
    const shot *s = &shots[k];
    /* The overlay leaves most of the picture, where the ball is, to compare. */
    CHECK(s->overlay[2] * s->overlay[3] < s->width * s->height / 2);
    if (s->step < 0 || s->step >= SERIES_STEPS) {
      CHECK_MSG(0, "%s: no step in its line", s->path);
      continue;
    }
    CHECK(s->slider[2] > 0 && inside(s->overlay, s->slider[0], s->slider[1]));
    ir_volume v;
    ir_renderer *r = step_renderer((int)s->step, &v);
    if (!r) continue;
    check_shot(s, r);
    ir_renderer_destroy(r);
    ir_volume_free(&v);
  }
}

/* A step that cannot be read (its compressed data corrupt in the middle, which only the read
 * finds): skipped with a message naming the step, the window going on drawing the step before
 * it; stepping past it and playing over it go on. */
static void test_window_skips_a_bad_step(void) {
  char command[512];
  for (int k = 0; k < SERIES_STEPS; k++) {
    char name[32];
    snprintf(name, sizeof name, "bad_%02d.raw", k);
    write_ball_step(k, name);
    snprintf(command, sizeof command, "gzip -f '%s/%s'", dir, name);
    CHECK_EQ_INT(system(command), 0);
  }
  /* Step 3's deflate stream damaged a third of the way in; its gzip trailer left whole. */
  char path[256];
  snprintf(path, sizeof path, "%s/bad_02.raw.gz", dir);
  FILE *f = fopen(path, "r+b");
  CHECK(f != NULL);
  if (!f) return;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, size / 3, SEEK_SET);
  unsigned char junk[40];
  for (int k = 0; k < 40; k++) junk[k] = (unsigned char)(0x5a ^ (k * 37));
  CHECK(fwrite(junk, 1, sizeof junk, f) == sizeof junk);
  fclose(f);
  write_file("bad.txt", "0.2 key .\n"
                        "0.3 key .\n"
                        "0.4 screenshot skipped.png\n"
                        "0.5 key .\n"
                        "0.6 screenshot after.png\n"
                        "0.7 key Space\n"
                        "2.2 key Space\n"
                        "2.3 quit\n");
  char output[16384];
  int rc = run_inkray("--device cpu --window 480x360 --rate 20 --iso 128 --dims 32x32x32 --type uint8 "
                      "--script bad.txt bad_%02d.raw.gz",
                      output, sizeof output);
  CHECK_MSG(rc == 0, "exit %d:\n%s", rc, output);
  CHECK_STR_CONTAINS(output, "step 3 of 6: bad_02.raw.gz: corrupt gzip data");
  CHECK_STR_CONTAINS(output, "; skipped");
  CHECK_STR_CONTAINS(output, "at step 4/6 bad_03.raw.gz");
  long played_steps = -1;
  for (const char *p = strstr(output, "inkray: "); p; p = strstr(p + 1, "inkray: "))
    if (sscanf(p, "inkray: %ld steps played", &played_steps) == 1) break;
  CHECK_MSG(played_steps >= 5, "playback stopped at the bad step: %ld steps played", played_steps);
  shot shots[MAX_SHOTS];
  int count = collect_shots(output, shots, MAX_SHOTS);
  const shot *skipped = find_shot(shots, count, "skipped.png"), *after = find_shot(shots, count, "after.png");
  CHECK(skipped != NULL && after != NULL);
  if (!skipped || !after) return;
  CHECK_EQ_INT(skipped->step, 2);
  CHECK_EQ_INT(after->step, 3);
  /* Bad steps the series' opening finds (a missing file, a short one): kept, each skipped with
   * its message when reached; a headless run refuses such a series (tests/headless). */
  for (int k = 0; k < SERIES_STEPS; k++) {
    char name[32];
    snprintf(name, sizeof name, "gap_%02d.raw", k);
    if (k != 2) write_ball_step(k, name);
  }
  snprintf(path, sizeof path, "%s/gap_04.raw", dir);
  CHECK_EQ_INT(truncate(path, 1000), 0);
  write_file("gap.txt", "0.2 key Space\n"
                        "1.7 key Space\n"
                        "1.8 quit\n");
  char gap_output[16384];
  rc = run_inkray("--device cpu --window 240x180 --rate 20 --iso 128 --dims 32x32x32 --type uint8 "
                  "--script gap.txt gap_%02d.raw",
                  gap_output, sizeof gap_output);
  CHECK_MSG(rc == 0, "exit %d:\n%s", rc, gap_output);
  CHECK_STR_CONTAINS(gap_output, "2 of the 6 steps cannot be read");
  CHECK_STR_CONTAINS(gap_output, "step 3 of 6: gap_02.raw");
  CHECK_STR_CONTAINS(gap_output, "step 5 of 6: gap_04.raw");
  played_steps = -1;
  for (const char *p = strstr(gap_output, "inkray: "); p; p = strstr(p + 1, "inkray: "))
    if (sscanf(p, "inkray: %ld steps played", &played_steps) == 1) break;
  CHECK_MSG(played_steps >= 6, "playback stopped at a bad step: %ld steps played", played_steps);

  /* At the bad step the picture is still step 2's (index 1); after it, step 4's (index 3). */
  const shot *shown[2] = {skipped, after};
  const int drawn[2] = {1, 3};
  for (int k = 0; k < 2; k++) {
    char name[32];
    snprintf(name, sizeof name, "ball_%02d.raw", drawn[k]);
    write_ball_step(drawn[k], name); /* the reference's file, as the other test writes it */
    ir_volume v;
    ir_renderer *r = step_renderer(drawn[k], &v);
    if (!r) continue;
    check_shot(shown[k], r);
    ir_renderer_destroy(r);
    ir_volume_free(&v);
  }
}

static void test_bad_input_exits_2_with_a_message(void) {
  static const struct {
    const char *args, *expect;
  } cases[] = {
      {"--bogus", "unknown option '--bogus'"},
      {"--size 0x100", "--size '0x100'"},
      {"--window 100", "--window '100'"},
      {"--method nope", "--method 'nope'"},
      {"--pipeline triple", "--pipeline 'triple'"},
      {"--device tpu", "--device 'tpu'"},
      {"--iso abc", "--iso 'abc'"},
      {"--script", "--script needs a value"},
      {"--script missing.txt", "missing.txt"},
      {"--script badline.txt", "badline.txt:2:"},
      {"--script badkey.txt", "badkey.txt:1: unknown key 'Nokey'"},
      {"a.raw b.raw", "two volumes"},
      {"--device cpu --script quit.txt /nonexistent/volume.raw", "/nonexistent/volume.raw"},
      {"--device cpu --script quit.txt --color-by /nonexistent/color.raw " VOLUME, "/nonexistent/color.raw"},
      {"--device cpu --script quit.txt --color-by builtin:sphere:32 " VOLUME, "--color-by builtin:sphere:32 is 32x32x32"},
      {"--surface", "--surface needs a value"},
      {"--depth d.raw", "--depth"},
      {"--mesh-dir /nonexistent/folder", "--mesh-dir '/nonexistent/folder'"},
      {"--present fast", "--present 'fast'"},
      {"--vsync maybe", "--vsync 'maybe'"},
      {"--bench-frames 3", "--bench-frames '3'"},
      {"--bench-window --script quit.txt", "--bench-window runs its own frames"},
  };
  write_file("badline.txt", "0 key Tab\n0 hop\n");
  write_file("badkey.txt", "0 key Nokey\n");
  write_file("quit.txt", "0 quit\n");
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char output[4096];
    int rc = run_inkray(cases[k].args, output, sizeof output);
    CHECK_MSG(rc == 2, "inkray %s exited with %d, expected 2:\n%s", cases[k].args, rc, output);
    CHECK_STR_CONTAINS(output, cases[k].expect);
  }
  char output[8192];
  /* A bare --help is the program's; with other options it is the window's. */
  CHECK_EQ_INT(run_inkray("--device cpu --help", output, sizeof output), 0);
  CHECK_STR_CONTAINS(output, "--script FILE");
}

int main(void) {
  const char *display = getenv("DISPLAY");
  if (!display || !*display) check_skip_all("no display (DISPLAY is not set); scripts/test.sh runs this under Xvfb");
  binary = getenv("INKRAY_BINARY");
  if (!binary || !*binary) {
    fprintf(stderr, "INKRAY_BINARY is not set (CTest sets it to the built inkray)\n");
    return 1;
  }
  snprintf(dir, sizeof dir, "/tmp/inkray-window-XXXXXX");
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  RUN(test_scripted_session_switches_everything);
  RUN(test_scripted_look_surfaces_clipping_and_colour);
  RUN(test_scripted_ambient_occlusion_and_shadows);
  RUN(test_scripted_sample_step);
  RUN(test_look_options_set_the_start);
  RUN(test_fixed_size_keeps_the_render_resolution);
  RUN(test_gpu_request_without_a_device_falls_back);
  RUN(test_e_writes_the_surfaces_as_a_mesh);
  RUN(test_bad_input_exits_2_with_a_message);
  RUN(test_bench_window_prints_both_fps_and_their_ratio);
  RUN(test_window_steps_and_plays_a_time_series);
  RUN(test_window_skips_a_bad_step);
  RUN(test_window_opens_dicom_tiff_and_vti);
#if defined(INKRAY_HAVE_CJSON) && defined(INKRAY_HAVE_ZSTD)
  RUN(test_window_opens_ome_zarr_coarsest_first_and_steps_levels);
#endif
  int rc = check_summary();
  if (rc == 0) {
    char command[128];
    snprintf(command, sizeof command, "rm -rf '%s'", dir);
    if (system(command) != 0) fprintf(stderr, "note: could not remove %s\n", dir);
  } else {
    printf("screenshots and scripts kept in %s\n", dir);
  }
  return rc;
}
