/* Parsing the command line's values (options.h): pure functions that fill a struct or a value,
 * or one line of message. Every bad value is refused with one line naming the option, the value
 * and what is accepted. What this file does not do: print, exit, load volumes or check that
 * output files can be written (cli.c and the subcommands do). */
#include "app/options.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- Numbers and volume options ------------------------------------------------------------- */

bool cli_parse_int(const char *text, long min, long max, long *out) {
  if (!text || !*text) return false;
  errno = 0;
  char *end = NULL;
  long value = strtol(text, &end, 10);
  if (errno || *end || value < min || value > max) return false;
  *out = value;
  return true;
}

bool cli_parse_float(const char *text, double *out) {
  if (!text || !*text) return false;
  errno = 0;
  char *end = NULL;
  double value = strtod(text, &end);
  if (errno || *end || !isfinite(value)) return false;
  *out = value;
  return true;
}

/* The next item of a comma-separated list, copied into item (cap bytes); *cursor moves past it
 * (to NULL after the last item). 1: an item; 0: the list is done; -1: an empty item ("",
 * "a,,b", ",a", "a,") or one of cap bytes or more, which every list here refuses: a stray comma
 * is a typo, never a value left out. */
static int next_item(const char **cursor, char *item, size_t cap) {
  const char *p = *cursor;
  if (!p) return 0;
  const char *comma = strchr(p, ',');
  size_t len = comma ? (size_t)(comma - p) : strlen(p);
  if (len == 0 || len >= cap) return -1;
  memcpy(item, p, len);
  item[len] = '\0';
  *cursor = comma ? comma + 1 : NULL;
  return 1;
}

/* Exactly `n` comma-separated numbers, each finite as a float. */
static bool parse_numbers(const char *text, int n, float *out) {
  const char *cursor = text;
  char item[256];
  for (int k = 0; k < n; k++) {
    double value = 0;
    if (next_item(&cursor, item, sizeof item) != 1 || !cli_parse_float(item, &value) ||
        !isfinite((float)value))
      return false;
    out[k] = (float)value;
  }
  return cursor == NULL;
}

bool cli_parse_size2(const char *text, int *w, int *h) {
  long a = 0, b = 0;
  char buf[64];
  if (!text || strlen(text) >= sizeof buf) return false;
  strcpy(buf, text);
  char *x = strchr(buf, 'x');
  if (!x) return false;
  *x = '\0';
  if (!cli_parse_int(buf, 1, 16384, &a) || !cli_parse_int(x + 1, 1, 16384, &b)) return false;
  *w = (int)a;
  *h = (int)b;
  return true;
}

static bool parse_dims3(const char *text, size_t dims[3]) {
  char buf[96];
  if (strlen(text) >= sizeof buf) return false;
  strcpy(buf, text);
  char *parts[3] = {buf, NULL, NULL};
  for (int k = 1; k < 3; k++) {
    char *x = strchr(parts[k - 1], 'x');
    if (!x) return false;
    *x = '\0';
    parts[k] = x + 1;
  }
  for (int k = 0; k < 3; k++) {
    long value = 0;
    /* 2^20 per axis is far beyond any real volume; larger is certainly a typo. */
    if (!cli_parse_int(parts[k], 1, 1L << 20, &value)) return false;
    dims[k] = (size_t)value;
  }
  return true;
}

/* spacing is left as it was unless all three are good. */
static bool parse_spacing3(const char *text, float spacing[3]) {
  float s[3];
  if (!parse_numbers(text, 3, s)) return false;
  /* Positive as a float: 1e-50 would be zero there. */
  for (int k = 0; k < 3; k++)
    if (!(s[k] > 0.0f)) return false;
  memcpy(spacing, s, sizeof s);
  return true;
}

int cli_parse_volume_option(int argc, char **argv, int *i, ir_volume_desc *desc, char err[IR_ERR_LEN]) {
  const char *opt = argv[*i];
  const char *names[] = {"--dims", "--type", "--endian", "--spacing", "--series", "--array", "--level", "--channel"};
  int which = -1;
  for (int k = 0; k < 8; k++)
    if (strcmp(opt, names[k]) == 0) which = k;
  if (which < 0) return 0;
  if (*i + 1 >= argc) {
    snprintf(err, IR_ERR_LEN, "%s needs a value", opt);
    return -1;
  }
  const char *value = argv[++*i];
  switch (which) {
  case 0:
    if (!parse_dims3(value, desc->dims)) {
      snprintf(err, IR_ERR_LEN, "--dims '%s': expected XxYxZ with each between 1 and 1048576, e.g. 256x256x128", value);
      return -1;
    }
    break;
  case 1:
    if (!ir_voxel_type_parse(value, &desc->type)) {
      snprintf(err, IR_ERR_LEN, "--type '%s': unknown voxel type; use uint8, uint16, int16 or float32", value);
      return -1;
    }
    desc->type_given = true;
    break;
  case 2:
    if (!ir_endian_parse(value, &desc->endian)) {
      snprintf(err, IR_ERR_LEN, "--endian '%s': use little or big", value);
      return -1;
    }
    desc->endian_given = true;
    break;
  case 4:
  case 5:
    if (!*value) {
      snprintf(err, IR_ERR_LEN, "%s needs a non-empty value", opt);
      return -1;
    }
    if (which == 4) desc->series = value;
    else desc->array = value;
    break;
  case 6: {
    long level = 0;
    if (strcmp(value, "auto") == 0) {
      desc->level = IR_LEVEL_AUTO;
    } else if (cli_parse_int(value, 0, IR_MAX_LEVELS - 1, &level)) {
      desc->level = (int)level;
    } else {
      snprintf(err, IR_ERR_LEN, "--level '%s': expected auto or a level from 0 (the finest) to %d", value, IR_MAX_LEVELS - 1);
      return -1;
    }
    break;
  }
  case 7: {
    long channel = 0;
    if (!cli_parse_int(value, 0, 1 << 20, &channel)) {
      snprintf(err, IR_ERR_LEN, "--channel '%s': expected a channel index from 0", value);
      return -1;
    }
    desc->channel = (size_t)channel;
    break;
  }
  default:
    if (!parse_spacing3(value, desc->spacing)) {
      snprintf(err, IR_ERR_LEN, "--spacing '%s': expected three positive numbers sx,sy,sz", value);
      return -1;
    }
    desc->spacing_given = true;
    break;
  }
  return 1;
}


/* ---- Look options --------------------------------------------------------------------------- */

void app_look_init(app_look *look) {
  memset(look, 0, sizeof *look);
  look->color_by = IR_COLOR_SURFACE;
  look->colormap = IR_COLORMAP_VIRIDIS;
  look->color_channel = -1;
}

void app_list_color_names(char *buf, size_t cap) {
  const char *const *names = ir_color_names();
  buf[0] = '\0';
  for (int k = 0; names[k]; k++) {
    strncat(buf, k ? ", " : "", cap - strlen(buf) - 1);
    strncat(buf, names[k], cap - strlen(buf) - 1);
  }
}

void app_list_colormaps(char *buf, size_t cap) {
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
    app_list_color_names(names, sizeof names);
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

ir_volume_desc app_look_color_desc(const app_look *look, const ir_volume_desc *volume) {
  ir_volume_desc d = *volume;
  if (look->color_channel >= 0) d.channel = (size_t)look->color_channel;
  else d.source = look->color_file;
  return d;
}

static bool parse_color_by(const char *value, app_look *look, char err[IR_ERR_LEN]) {
  if (!*value) {
    snprintf(err, IR_ERR_LEN, "--color-by: expected gradient, surface or a volume file");
    return false;
  }
  look->color_file = NULL;
  look->color_channel = -1;
  if (strcmp(value, "gradient") == 0) look->color_by = IR_COLOR_GRADIENT;
  else if (strcmp(value, "surface") == 0) look->color_by = IR_COLOR_SURFACE;
  else if (strncmp(value, "channel:", 8) == 0) {
    long channel = 0;
    if (!cli_parse_int(value + 8, 0, 1 << 20, &channel)) {
      snprintf(err, IR_ERR_LEN, "--color-by '%s': expected channel:N with N a channel index from 0", value);
      return false;
    }
    look->color_by = IR_COLOR_VOLUME, look->color_file = value, look->color_channel = (int)channel;
  } else look->color_by = IR_COLOR_VOLUME, look->color_file = value;
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

/* --ao N[:RADIUS] */
static bool parse_ao(const char *value, app_look *look, char err[IR_ERR_LEN]) {
  char buf[64];
  long n = 0;
  double radius = IR_AO_RADIUS_DEFAULT;
  bool ok = strlen(value) < sizeof buf;
  if (ok) {
    strcpy(buf, value);
    char *colon = strchr(buf, ':');
    if (colon) *colon = '\0';
    ok = cli_parse_int(buf, 1, IR_AO_MAX_SAMPLES, &n) &&
         (!colon || (cli_parse_float(colon + 1, &radius) && radius > 0.0 && radius <= 1e6));
  }
  if (!ok) {
    snprintf(err, IR_ERR_LEN, "--ao '%.100s': expected N[:RADIUS], N occlusion rays per hit from 1 to %d and a "
             "radius in voxels above 0 (default %g)", value, IR_AO_MAX_SAMPLES, (double)IR_AO_RADIUS_DEFAULT);
    return false;
  }
  look->ao_samples = (int)n;
  look->ao_radius = (float)radius;
  return true;
}

/* --light AZ,EL */
static bool parse_light(const char *value, app_look *look, char err[IR_ERR_LEN]) {
  float a[2];
  if (!parse_numbers(value, 2, a) || !(a[0] >= -180.0f && a[0] <= 180.0f) || !(a[1] >= -90.0f && a[1] <= 90.0f)) {
    snprintf(err, IR_ERR_LEN, "--light '%.100s': expected AZ,EL in degrees, azimuth -180..180 and elevation "
             "-90..90 (the camera's frame: 0,0 shines from the eye)", value);
    return false;
  }
  look->light_on = true;
  look->light[0] = a[0];
  look->light[1] = a[1];
  return true;
}

/* --step VOXELS: the distance between a ray's samples (ir_frame_desc.sample_step). */
static bool parse_sample_step(const char *value, app_look *look, char err[IR_ERR_LEN]) {
  double v = 0;
  if (!cli_parse_float(value, &v) || !(v >= IR_SAMPLE_STEP_MIN && v <= IR_SAMPLE_STEP_MAX)) {
    snprintf(err, IR_ERR_LEN, "--step '%.100s': expected voxels between samples from %g to %g (default %g)", value,
             (double)IR_SAMPLE_STEP_MIN, (double)IR_SAMPLE_STEP_MAX, (double)IR_SAMPLE_STEP_DEFAULT);
    return false;
  }
  look->sample_step = (float)v;
  return true;
}

int cli_parse_look_option(int argc, char **argv, int *i, app_look *look, char err[IR_ERR_LEN]) {
  static const char *const names[] = {"--surface", "--clip-box", "--clip-plane", "--color-by", "--colormap",
                                      "--color-range", "--refine", "--depth", "--ao", "--light", "--step", NULL};
  const char *opt = argv[*i];
  if (strcmp(opt, "--shadows") == 0) { /* the one look option without a value */
    look->shadows = true;
    return 1;
  }
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
      app_list_colormaps(maps, sizeof maps);
      snprintf(err, IR_ERR_LEN, "--colormap '%.100s': unknown colour map; use one of: %s", value, maps);
      ok = false;
    }
    break;
  case 5: ok = parse_color_range(value, look, err); break;
  case 8: ok = parse_ao(value, look, err); break;
  case 9: ok = parse_light(value, look, err); break;
  case 10: ok = parse_sample_step(value, look, err); break;
  case 6:
    if (strcmp(value, "exact") == 0 || strcmp(value, "texture") == 0) {
      look->texture_refine = strcmp(value, "texture") == 0;
    } else {
      snprintf(err, IR_ERR_LEN, "--refine '%.100s': use exact (float trilinear, the default) or texture", value);
      ok = false;
    }
    break;
  case 7:
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


/* ---- Values of the subcommands' own options -------------------------------------------------- */

bool app_parse_isovalue(const char *text, double *out) {
  double v = 0;
  if (!cli_parse_float(text, &v) || !isfinite((float)v)) return false;
  *out = v;
  return true;
}

bool app_parse_count(const char *opt, const char *value, long min, long max, int *out, char err[IR_ERR_LEN]) {
  long n = 0;
  if (!cli_parse_int(value, min, max, &n)) {
    snprintf(err, IR_ERR_LEN, "%s '%.200s': expected a whole number from %ld to %ld", opt, value, min, max);
    return false;
  }
  *out = (int)n;
  return true;
}

bool app_parse_real(const char *opt, const char *value, double min, double max, float *out, char err[IR_ERR_LEN]) {
  double x = 0;
  if (!cli_parse_float(value, &x) || x < min || x > max) {
    snprintf(err, IR_ERR_LEN, "%s '%.200s': expected a number from %g to %g", opt, value, min, max);
    return false;
  }
  *out = (float)x;
  return true;
}

static void list_methods(char *buf, size_t cap) {
  const ir_compact_method_info *methods = ir_compact_methods();
  buf[0] = '\0';
  for (int m = 0; m < IR_COMPACT_METHOD_COUNT; m++) {
    strncat(buf, methods[m].name, cap - strlen(buf) - 1);
    strncat(buf, ", ", cap - strlen(buf) - 1);
  }
  strncat(buf, "all", cap - strlen(buf) - 1);
}

bool app_parse_methods(const char *text, bool use[IR_COMPACT_METHOD_COUNT], char err[IR_ERR_LEN]) {
  memset(use, 0, IR_COMPACT_METHOD_COUNT * sizeof *use);
  if (strcmp(text, "all") == 0) {
    for (int m = 0; m < IR_COMPACT_METHOD_COUNT; m++) use[m] = true;
    return true;
  }
  const char *cursor = text;
  char name[64];
  int got;
  while ((got = next_item(&cursor, name, sizeof name)) > 0) {
    ir_compact_method m;
    if (!ir_compact_method_parse(name, &m)) {
      char valid[256];
      list_methods(valid, sizeof valid);
      snprintf(err, IR_ERR_LEN, "--method: unknown method '%.100s'; valid: %.200s", name, valid);
      return false;
    }
    use[m] = true;
  }
  if (got < 0) {
    char valid[256];
    list_methods(valid, sizeof valid);
    snprintf(err, IR_ERR_LEN, "--method '%.100s': expected NAME[,NAME...] with no empty name; valid: %.200s",
             text, valid);
    return false;
  }
  return true;
}

bool app_parse_pipelines(const char *text, bool use[IR_PIPELINE_COUNT], char err[IR_ERR_LEN]) {
  memset(use, 0, IR_PIPELINE_COUNT * sizeof *use);
  if (strcmp(text, "all") == 0) {
    use[IR_PIPELINE_MULTI] = use[IR_PIPELINE_PAPER] = use[IR_PIPELINE_SINGLE] = true;
    use[IR_PIPELINE_PERSISTENT] = true;
    return true;
  }
  if (strcmp(text, "both") == 0) { /* the two of earlier versions */
    use[IR_PIPELINE_MULTI] = use[IR_PIPELINE_SINGLE] = true;
    return true;
  }
  const char *cursor = text;
  char word[64];
  int got;
  ir_pipeline pl;
  while ((got = next_item(&cursor, word, sizeof word)) > 0 && ir_pipeline_parse(word, &pl)) use[pl] = true;
  if (got != 0) {
    snprintf(err, IR_ERR_LEN,
             "--pipeline '%.200s': use persistent, multi, paper, single, plain (comma-separated) or all", text);
    return false;
  }
  return true;
}

bool app_parse_isovalues(const char *text, int max, double *values, int *count, int *suggested,
                         char err[IR_ERR_LEN]) {
  *count = 0;
  *suggested = 0;
  if (strcmp(text, "suggested") == 0) {
    *suggested = -1;
    return true;
  }
  if (strncmp(text, "suggested:", 10) == 0) {
    long n = 0;
    if (!cli_parse_int(text + 10, 1, max, &n)) {
      snprintf(err, IR_ERR_LEN, "--iso '%.200s': expected suggested:N with N from 1 to %d", text, max);
      return false;
    }
    *suggested = (int)n;
    return true;
  }
  const char *cursor = text;
  char item[256];
  int got;
  while ((got = next_item(&cursor, item, sizeof item)) > 0) {
    if (*count == max) {
      snprintf(err, IR_ERR_LEN, "--iso '%.200s': at most %d isovalues", text, max);
      return false;
    }
    if (!app_parse_isovalue(item, &values[*count])) {
      snprintf(err, IR_ERR_LEN, "--iso: '%.200s' is not a number; expected V[,V...] or suggested[:N]", item);
      return false;
    }
    (*count)++;
  }
  if (got < 0) {
    snprintf(err, IR_ERR_LEN, "--iso '%.200s': expected numbers V[,V...] with no empty value, or suggested[:N]",
             text);
    return false;
  }
  return true;
}

bool app_parse_tail_rays(const char *text, uint32_t *out, char err[IR_ERR_LEN]) {
  int tail = 0;
  if (strcmp(text, "auto") == 0) *out = 0;
  else if (strcmp(text, "off") == 0) *out = IR_TAIL_OFF;
  else if (app_parse_count("--tail-rays", text, 1, 1 << 28, &tail, err)) *out = (uint32_t)tail;
  else return false;
  return true;
}
