/* TEMPORARY stand-ins for the look options and colour maps (app/look.c, render/colormap.c on
 * another branch), so that the window links and its tests run before those land. Deleted
 * before merging. Grey ramps only; no auto range beyond the volume's own values. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/app.h"

static float stub_tables[IR_COLORMAP_COUNT][IR_COLORMAP_SIZE * 3];
static bool stub_tables_ready;

const float *ir_colormap_table(ir_colormap m) {
  if (!stub_tables_ready) {
    for (int t = 0; t < IR_COLORMAP_COUNT; t++)
      for (int k = 0; k < IR_COLORMAP_SIZE; k++) {
        float x = (float)k / (IR_COLORMAP_SIZE - 1);
        stub_tables[t][3 * k + 0] = t == IR_COLORMAP_GREY ? x : x * 0.9f;
        stub_tables[t][3 * k + 1] = t == IR_COLORMAP_GREY ? x : (float)t / IR_COLORMAP_COUNT;
        stub_tables[t][3 * k + 2] = t == IR_COLORMAP_GREY ? x : 1.0f - x;
      }
    stub_tables_ready = true;
  }
  return stub_tables[m];
}

static const char *const MAP_NAMES[IR_COLORMAP_COUNT] = {"viridis", "magma", "inferno", "plasma", "cividis", "grey"};
const char *ir_colormap_name(ir_colormap m) { return MAP_NAMES[m]; }
bool ir_colormap_parse(const char *word, ir_colormap *out) {
  for (int k = 0; k < IR_COLORMAP_COUNT; k++)
    if (strcmp(word, MAP_NAMES[k]) == 0) {
      *out = (ir_colormap)k;
      return true;
    }
  return false;
}

void ir_colormap_lookup(ir_colormap m, float v, float lo, float hi, float rgb[3]) {
  const float *t = ir_colormap_table(m);
  float x = hi > lo ? (v - lo) / (hi - lo) : 0.5f;
  x = fmaxf(0.0f, fminf(1.0f, x)) * (IR_COLORMAP_SIZE - 1);
  int i = (int)x;
  if (i > IR_COLORMAP_SIZE - 2) i = IR_COLORMAP_SIZE - 2;
  float f = x - (float)i;
  for (int c = 0; c < 3; c++) rgb[c] = t[3 * i + c] * (1 - f) + t[3 * (i + 1) + c] * f;
}

const char *ir_color_source_name(ir_color_source s) {
  return s == IR_COLOR_GRADIENT ? "gradient" : s == IR_COLOR_VOLUME ? "volume" : "surface";
}

static const char *const COLOR_NAMES[] = {"white", "red", "green", "blue", "orange", NULL};
static const float COLOR_RGB[][3] = {{1, 1, 1}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 0.5f, 0}};
const char *const *ir_color_names(void) { return COLOR_NAMES; }
bool ir_color_parse(const char *word, float rgb[3]) {
  for (int k = 0; COLOR_NAMES[k]; k++)
    if (strcmp(word, COLOR_NAMES[k]) == 0) {
      memcpy(rgb, COLOR_RGB[k], sizeof COLOR_RGB[k]);
      return true;
    }
  unsigned r, g, b;
  if (word[0] == '#' && strlen(word) == 7 && sscanf(word + 1, "%2x%2x%2x", &r, &g, &b) == 3) {
    rgb[0] = (float)r / 255.0f;
    rgb[1] = (float)g / 255.0f;
    rgb[2] = (float)b / 255.0f;
    return true;
  }
  return false;
}

void ir_surface_default_color(int i, float rgb[3]) {
  static const float palette[IR_MAX_SURFACES][3] = {{0.84f, 0.84f, 0.84f}, {1, 0.5f, 0}, {0, 0.6f, 1}, {0.9f, 0.2f, 0.3f}};
  memcpy(rgb, palette[((i % IR_MAX_SURFACES) + IR_MAX_SURFACES) % IR_MAX_SURFACES], 3 * sizeof(float));
}

void ir_color_range_auto(const ir_volume *field, const ir_volume *color_volume, ir_color_source source,
                         float range[2]) {
  const ir_volume *v = source == IR_COLOR_VOLUME && color_volume ? color_volume : field;
  range[0] = source == IR_COLOR_GRADIENT ? 0.0f : (float)v->value_min;
  range[1] = (float)v->value_max;
}

void app_look_init(app_look *look) { *look = (app_look){.colormap = IR_COLORMAP_VIRIDIS}; }

static bool parse_floats(const char *text, float *out, int n) {
  char *end = NULL;
  for (int k = 0; k < n; k++) {
    out[k] = strtof(text, &end);
    if (end == text) return false;
    text = end + (*end == ',');
  }
  return *end == '\0';
}

int cli_parse_look_option(int argc, char **argv, int *i, app_look *look, char err[IR_ERR_LEN]) {
  const char *opt = argv[*i];
  static const char *const names[] = {"--surface", "--clip-box", "--clip-plane", "--color-by", "--colormap",
                                      "--color-range", "--refine", "--depth", NULL};
  bool known = false;
  for (int k = 0; names[k]; k++) known |= strcmp(opt, names[k]) == 0;
  if (!known) return 0;
  if (*i + 1 >= argc) {
    snprintf(err, IR_ERR_LEN, "%s needs a value", opt);
    return -1;
  }
  const char *value = argv[++*i];
  bool ok = true;
  if (strcmp(opt, "--surface") == 0) {
    if (look->surface_count == IR_MAX_SURFACES) ok = false;
    else {
      ir_surface *s = &look->surfaces[look->surface_count];
      char copy[128];
      snprintf(copy, sizeof copy, "%s", value);
      char *color = strchr(copy, ':'), *opacity = NULL;
      if (color) *color++ = '\0';
      if (color && (opacity = strchr(color, ':'))) *opacity++ = '\0';
      ok = parse_floats(copy, &s->isovalue, 1);
      ir_surface_default_color(look->surface_count, s->color);
      if (ok && color) ok = ir_color_parse(color, s->color);
      s->opacity = 1;
      if (ok && opacity) ok = parse_floats(opacity, &s->opacity, 1);
      if (ok) look->surface_count++;
    }
  } else if (strcmp(opt, "--clip-box") == 0) {
    ok = parse_floats(value, look->clip_box, 6);
    look->clip_box_on = ok;
  } else if (strcmp(opt, "--clip-plane") == 0) {
    ok = parse_floats(value, look->clip_plane, 4);
    look->clip_plane_on = ok;
  } else if (strcmp(opt, "--color-by") == 0) {
    if (strcmp(value, "gradient") == 0) look->color_by = IR_COLOR_GRADIENT;
    else {
      look->color_by = IR_COLOR_VOLUME;
      look->color_file = value;
    }
  } else if (strcmp(opt, "--colormap") == 0) {
    ok = ir_colormap_parse(value, &look->colormap);
  } else if (strcmp(opt, "--color-range") == 0) {
    ok = parse_floats(value, look->color_range, 2);
    look->color_range_given = ok;
  } else if (strcmp(opt, "--refine") == 0) {
    look->texture_refine = strcmp(value, "texture") == 0;
  } else {
    look->depth_path = value;
  }
  if (!ok) {
    snprintf(err, IR_ERR_LEN, "%s '%s': bad value", opt, value);
    return -1;
  }
  return 1;
}

void cli_print_look_options(FILE *to) { fputs("Look options: --surface --clip-box --clip-plane --color-by --colormap --color-range --refine\n", to); }

void app_look_apply(const app_look *look, const ir_volume *v, ir_frame_desc *f) {
  f->surface_count = look->surface_count;
  memcpy(f->surfaces, look->surfaces, sizeof f->surfaces);
  if (look->clip_box_on)
    for (int k = 0; k < 3; k++) {
      f->clip_lo[k] = look->clip_box[2 * k] * (float)v->dims[k];
      f->clip_hi[k] = look->clip_box[2 * k + 1] * (float)v->dims[k];
    }
  f->clip_plane_on = look->clip_plane_on;
  memcpy(f->clip_plane, look->clip_plane, sizeof f->clip_plane);
  f->color_by = look->color_by;
  f->colormap = look->colormap;
  memcpy(f->color_range, look->color_range, sizeof f->color_range);
  f->texture_refine = look->texture_refine;
}
