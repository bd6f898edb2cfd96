/* TEMPORARY stand-ins for the look options (app/look.c, on another branch), so that the window
 * links and its tests run before it lands. Deleted before merging. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/app.h"

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
      s->color[0] = -1.0f;
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
  for (int k = 0; k < look->surface_count; k++)
    if (f->surfaces[k].color[0] < 0.0f) ir_surface_default_color(k, f->surfaces[k].color);
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
