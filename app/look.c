/* The look options: which surfaces are drawn and how (several isosurfaces with colour and
 * opacity, a clip box and a clip plane, colour by a second quantity, the refinement), parsed the
 * same way for headless runs and the window, and put into an ir_frame_desc.
 *
 * Every bad value is refused with one line naming the option, the value and what is accepted.
 * What this file does not do: load the colour volume or resolve an automatic colour range (the
 * caller does, once the volumes are loaded), or write the depth image (depth_image.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "app/app.h"

void app_look_init(app_look *look) {
  memset(look, 0, sizeof *look);
  look->color_by = IR_COLOR_SURFACE;
  look->colormap = IR_COLORMAP_VIRIDIS;
}

/* Splits `text` at commas into exactly `n` finite numbers. */
static bool parse_numbers(const char *text, int n, float *out) {
  char buf[256];
  if (strlen(text) >= sizeof buf) return false;
  strcpy(buf, text);
  char *p = buf;
  for (int k = 0; k < n; k++) {
    char *end = strchr(p, ',');
    if ((end != NULL) != (k + 1 < n)) return false;
    if (end) *end = '\0';
    double value = 0;
    if (!cli_parse_float(p, &value) || !isfinite((float)value)) return false;
    out[k] = (float)value;
    p = end ? end + 1 : p;
  }
  return true;
}

static void list_color_names(char *buf, size_t cap) {
  const char *const *names = ir_color_names();
  buf[0] = '\0';
  for (int k = 0; names[k]; k++) {
    strncat(buf, k ? ", " : "", cap - strlen(buf) - 1);
    strncat(buf, names[k], cap - strlen(buf) - 1);
  }
}

static void list_colormaps(char *buf, size_t cap) {
  buf[0] = '\0';
  for (int m = 0; m < IR_COLORMAP_COUNT; m++) {
    strncat(buf, m ? ", " : "", cap - strlen(buf) - 1);
    strncat(buf, ir_colormap_name((ir_colormap)m), cap - strlen(buf) - 1);
  }
}

/* --surface ISO[:COLOR[:OPACITY]] */
static bool parse_surface(const char *value, app_look *look, char err[IR_ERR_LEN]) {
  if (look->surface_count == IR_MAX_SURFACES) {
    snprintf(err, IR_ERR_LEN, "--surface '%.200s': at most %d surfaces", value, IR_MAX_SURFACES);
    return false;
  }
  char buf[256];
  if (strlen(value) >= sizeof buf) {
    snprintf(err, IR_ERR_LEN, "--surface: value too long; expected ISO[:COLOR[:OPACITY]]");
    return false;
  }
  strcpy(buf, value);
  char *fields[3] = {buf, NULL, NULL};
  for (int k = 1; k < 3; k++) {
    char *colon = fields[k - 1] ? strchr(fields[k - 1], ':') : NULL;
    if (colon) *colon = '\0', fields[k] = colon + 1;
  }
  if (fields[2] && strchr(fields[2], ':')) {
    snprintf(err, IR_ERR_LEN, "--surface '%.200s': expected ISO[:COLOR[:OPACITY]], e.g. 582:#f0c8a0:0.4", value);
    return false;
  }
  ir_surface s = {.opacity = 1.0f};
  double number = 0;
  if (!cli_parse_float(fields[0], &number) || !isfinite((float)number)) {
    snprintf(err, IR_ERR_LEN, "--surface '%.200s': isovalue '%.100s' is not a number; expected ISO[:COLOR[:OPACITY]]",
             value, fields[0]);
    return false;
  }
  s.isovalue = (float)number;
  /* No colour (or an empty one, "ISO::OPACITY"): the palette's, filled in by app_look_apply. */
  s.color[0] = -1.0f;
  if (fields[1] && *fields[1] && !ir_color_parse(fields[1], s.color)) {
    char names[512];
    list_color_names(names, sizeof names);
    snprintf(err, IR_ERR_LEN, "--surface '%.100s': bad colour '%.60s'; use #rrggbb or one of: %.290s", value,
             fields[1], names);
    return false;
  }
  if (fields[2] && (!cli_parse_float(fields[2], &number) || number < 0.0 || number > 1.0)) {
    snprintf(err, IR_ERR_LEN, "--surface '%.200s': opacity '%.60s' must be a number from 0 to 1", value, fields[2]);
    return false;
  }
  if (fields[2]) s.opacity = (float)number;
  look->surfaces[look->surface_count++] = s;
  return true;
}

static bool parse_clip_box(const char *value, app_look *look, char err[IR_ERR_LEN]) {
  float b[6];
  if (!parse_numbers(value, 6, b)) {
    snprintf(err, IR_ERR_LEN, "--clip-box '%.200s': expected six numbers X0,X1,Y0,Y1,Z0,Z1 (fractions 0..1 of "
             "the volume along each axis)", value);
    return false;
  }
  static const char axis[3] = {'x', 'y', 'z'};
  for (int k = 0; k < 3; k++) {
    float lo = b[2 * k], hi = b[2 * k + 1];
    if (lo < 0.0f || hi > 1.0f || lo >= hi) {
      snprintf(err, IR_ERR_LEN, "--clip-box '%.200s': %c range %g..%g must lie in 0..1 with the first below the "
               "second", value, axis[k], (double)lo, (double)hi);
      return false;
    }
  }
  look->clip_box_on = true;
  memcpy(look->clip_box, b, sizeof b);
  return true;
}

static bool parse_clip_plane(const char *value, app_look *look, char err[IR_ERR_LEN]) {
  float p[4];
  if (!parse_numbers(value, 4, p)) {
    snprintf(err, IR_ERR_LEN, "--clip-plane '%.200s': expected four numbers NX,NY,NZ,D (keeps world points x "
             "with n.x + D >= 0)", value);
    return false;
  }
  if (p[0] == 0.0f && p[1] == 0.0f && p[2] == 0.0f) {
    snprintf(err, IR_ERR_LEN, "--clip-plane '%.200s': the normal NX,NY,NZ must not be zero", value);
    return false;
  }
  look->clip_plane_on = true;
  memcpy(look->clip_plane, p, sizeof p);
  return true;
}

static bool parse_color_by(const char *value, app_look *look, char err[IR_ERR_LEN]) {
  if (!*value) {
    snprintf(err, IR_ERR_LEN, "--color-by: expected gradient, surface or a volume file");
    return false;
  }
  look->color_file = NULL;
  if (strcmp(value, "gradient") == 0) look->color_by = IR_COLOR_GRADIENT;
  else if (strcmp(value, "surface") == 0) look->color_by = IR_COLOR_SURFACE;
  else look->color_by = IR_COLOR_VOLUME, look->color_file = value;
  return true;
}

static bool parse_color_range(const char *value, app_look *look, char err[IR_ERR_LEN]) {
  float r[2];
  if (!parse_numbers(value, 2, r) || r[0] >= r[1]) {
    snprintf(err, IR_ERR_LEN, "--color-range '%.200s': expected LO,HI, two finite numbers with LO < HI", value);
    return false;
  }
  look->color_range_given = true;
  memcpy(look->color_range, r, sizeof r);
  return true;
}

app_depth_format app_depth_format_of(const char *path) {
  const char *dot = path ? strrchr(path, '.') : NULL;
  if (!dot || strchr(dot, '/')) return APP_DEPTH_UNKNOWN;
  if (strcasecmp(dot, ".pfm") == 0) return APP_DEPTH_PFM;
  if (strcasecmp(dot, ".nrrd") == 0) return APP_DEPTH_NRRD;
  return APP_DEPTH_UNKNOWN;
}

int cli_parse_look_option(int argc, char **argv, int *i, app_look *look, char err[IR_ERR_LEN]) {
  static const char *const names[] = {"--surface", "--clip-box", "--clip-plane", "--color-by",
                                      "--colormap", "--color-range", "--refine", "--depth", NULL};
  const char *opt = argv[*i];
  int which = -1;
  for (int k = 0; names[k]; k++)
    if (strcmp(opt, names[k]) == 0) which = k;
  if (which < 0) return 0;
  if (*i + 1 >= argc) {
    snprintf(err, IR_ERR_LEN, "%s needs a value", opt);
    return -1;
  }
  const char *value = argv[++*i];
  bool ok = true;
  switch (which) {
  case 0: ok = parse_surface(value, look, err); break;
  case 1: ok = parse_clip_box(value, look, err); break;
  case 2: ok = parse_clip_plane(value, look, err); break;
  case 3: ok = parse_color_by(value, look, err); break;
  case 4:
    if (!ir_colormap_parse(value, &look->colormap)) {
      char maps[256];
      list_colormaps(maps, sizeof maps);
      snprintf(err, IR_ERR_LEN, "--colormap '%.100s': unknown colour map; use one of: %s", value, maps);
      ok = false;
    }
    break;
  case 5: ok = parse_color_range(value, look, err); break;
  case 6:
    if (strcmp(value, "exact") == 0 || strcmp(value, "texture") == 0) {
      look->texture_refine = strcmp(value, "texture") == 0;
    } else {
      snprintf(err, IR_ERR_LEN, "--refine '%.100s': use exact (float trilinear, the default) or texture", value);
      ok = false;
    }
    break;
  default:
    if (app_depth_format_of(value) == APP_DEPTH_UNKNOWN) {
      snprintf(err, IR_ERR_LEN, "--depth '%.200s': unknown format; name a .pfm (Portable FloatMap) or .nrrd file",
               value);
      ok = false;
    } else {
      look->depth_path = value;
    }
    break;
  }
  return ok ? 1 : -1;
}

/* Prints the words of `list` (", "-separated) indented, wrapped at about 96 columns. */
static void print_wrapped(FILE *to, const char *list, int indent) {
  int column = indent;
  fprintf(to, "%*s", indent, "");
  for (const char *p = list; *p;) {
    const char *end = strstr(p, ", ");
    int len = end ? (int)(end - p) + 1 : (int)strlen(p);
    if (column > indent && column + len + 1 > 96) {
      fprintf(to, "\n%*s", indent, "");
      column = indent;
    } else if (column > indent) {
      fputc(' ', to);
      column++;
    }
    fprintf(to, "%.*s", len, p);
    column += len;
    p = end ? end + 2 : p + len;
  }
  fputc('\n', to);
}

void cli_print_look_options(FILE *to) {
  char names[512], maps[256];
  list_color_names(names, sizeof names);
  list_colormaps(maps, sizeof maps);
  fprintf(to,
          "Look options (what is drawn):\n"
          "  --surface ISO[:COLOR[:OPACITY]]  an isosurface; repeat for up to %d, drawn together (they\n"
          "                       replace --iso). OPACITY 0..1 (default 1: opaque). COLOR (default: a\n"
          "                       palette by position) is #rrggbb, #rgb or one of:\n",
          IR_MAX_SURFACES);
  print_wrapped(to, names, 23);
  fprintf(to,
          "  --clip-box X0,X1,Y0,Y1,Z0,Z1  draw only inside this box, in fractions 0..1 of the volume\n"
          "                       along each axis\n"
          "  --clip-plane NX,NY,NZ,D  draw only the world points x with n.x + D >= 0 (world units: the\n"
          "                       volume spans 0..dims*spacing)\n"
          "  --color-by gradient|FILE  colour the surfaces by the gradient magnitude, or by a second\n"
          "                       volume FILE of the same dims (read with the volume options)\n"
          "  --colormap NAME      %s (default viridis)\n"
          "  --color-range LO,HI  values at the colour map's ends (default: the gradient's 0..max, or\n"
          "                       the colour volume's min..max)\n"
          "  --refine exact|texture  refine crossings in float trilinear (default) or with the\n"
          "                       texture unit's 8-bit weights (terraced; for comparison)\n",
          maps);
}

void app_look_apply(const app_look *look, const ir_volume *v, ir_frame_desc *f) {
  f->surface_count = look->surface_count;
  for (int k = 0; k < look->surface_count && k < IR_MAX_SURFACES; k++) {
    f->surfaces[k] = look->surfaces[k];
    if (look->surfaces[k].color[0] < 0.0f) ir_surface_default_color(k, f->surfaces[k].color);
  }
  for (int k = 0; k < 3; k++) {
    f->clip_lo[k] = look->clip_box_on ? look->clip_box[2 * k] * (float)v->dims[k] : 0.0f;
    f->clip_hi[k] = look->clip_box_on ? look->clip_box[2 * k + 1] * (float)v->dims[k] : 0.0f;
  }
  f->clip_plane_on = look->clip_plane_on;
  memcpy(f->clip_plane, look->clip_plane, sizeof f->clip_plane);
  f->color_by = look->color_by;
  f->colormap = look->colormap;
  f->color_range[0] = look->color_range[0];
  f->color_range[1] = look->color_range[1];
  f->texture_refine = look->texture_refine;
}

/* A look that hides everything renders an empty picture that looks like a fault: say why, as the
 * out-of-range isovalue warning does. The plane is tested at the corners of what the box keeps
 * (or of the whole volume): n.x + d is linear, so it is negative everywhere inside exactly when
 * it is negative at every corner. */
int app_look_warn_empty(const app_look *look, const ir_volume *v, FILE *to) {
  int warnings = 0;
  if (look->surface_count > 0) {
    int hidden = 0;
    for (int k = 0; k < look->surface_count; k++) hidden += look->surfaces[k].opacity <= 0.0f;
    if (hidden == look->surface_count) {
      fprintf(to, "inkray: warning: every --surface has opacity 0; nothing will be drawn\n");
      warnings++;
    }
  }
  if (look->clip_plane_on) {
    float lo[3], hi[3];
    for (int k = 0; k < 3; k++) {
      float extent = (float)v->dims[k] * (v->spacing[k] > 0.0f ? v->spacing[k] : 1.0f);
      lo[k] = look->clip_box_on ? look->clip_box[2 * k] * extent : 0.0f;
      hi[k] = look->clip_box_on ? look->clip_box[2 * k + 1] * extent : extent;
    }
    bool kept = false;
    for (int c = 0; c < 8 && !kept; c++) {
      float p[3] = {c & 1 ? hi[0] : lo[0], c & 2 ? hi[1] : lo[1], c & 4 ? hi[2] : lo[2]};
      const float *n = look->clip_plane;
      kept = n[0] * p[0] + n[1] * p[1] + n[2] * p[2] + n[3] >= 0.0f;
    }
    if (!kept) {
      fprintf(to, "inkray: warning: --clip-plane %g,%g,%g,%g keeps no part of the volume%s (it spans 0..%g, 0..%g, "
              "0..%g in world units); nothing will be drawn\n",
              look->clip_plane[0], look->clip_plane[1], look->clip_plane[2], look->clip_plane[3],
              look->clip_box_on ? " inside --clip-box" : "", (double)v->dims[0] * v->spacing[0],
              (double)v->dims[1] * v->spacing[1], (double)v->dims[2] * v->spacing[2]);
      warnings++;
    }
  }
  return warnings;
}
