/* libFuzzer target for the command-line value parsers (app/options.c): the volume and look
 * options every subcommand shares, and the values of the headless and window options (counts,
 * numbers, sizes, isovalues, methods, pipelines, --tail-rays, axes, devices).
 * An input is an argv: words separated by NUL bytes or newlines (at most 64). It is parsed
 * once as a command line, option by option as the subcommands do, and each word is also given
 * to every value parser. A parser must accept (leaving values that hold: finite, in range) or
 * refuse with one non-empty line; never crash, read out of bounds, leak or hit undefined
 * behaviour. Built with clang -fsanitize=fuzzer,address,undefined from tests/app/CMakeLists.txt. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "app/options.h"

enum { MAX_WORDS = 64, MAX_ISO = 16 };

static void check_err(const char *err) {
  if (!err[0] || strchr(err, '\n')) __builtin_trap();
}

/* What an accepted volume option must leave. */
static void check_volume(const ir_volume_desc *d) {
  if (d->spacing_given)
    for (int k = 0; k < 3; k++)
      if (!(d->spacing[k] > 0.0f) || !isfinite(d->spacing[k])) __builtin_trap();
  for (int k = 0; k < 3; k++)
    if (d->dims[k] > (1u << 20)) __builtin_trap();
  if (d->type_given && d->type >= IR_VOXEL_TYPE_COUNT) __builtin_trap();
}

/* What an accepted look option must leave. */
static void check_look(const app_look *look) {
  if (look->surface_count < 0 || look->surface_count > IR_MAX_SURFACES) __builtin_trap();
  for (int k = 0; k < look->surface_count; k++) {
    const ir_surface *s = &look->surfaces[k];
    if (!isfinite(s->isovalue) || !(s->opacity >= 0.0f && s->opacity <= 1.0f)) __builtin_trap();
  }
  if (look->clip_box_on)
    for (int k = 0; k < 3; k++)
      if (!(look->clip_box[2 * k] >= 0.0f && look->clip_box[2 * k] < look->clip_box[2 * k + 1] &&
            look->clip_box[2 * k + 1] <= 1.0f))
        __builtin_trap();
  if (look->clip_plane_on)
    for (int k = 0; k < 4; k++)
      if (!isfinite(look->clip_plane[k])) __builtin_trap();
  if (look->color_range_given && !(look->color_range[0] < look->color_range[1])) __builtin_trap();
  if (look->colormap >= IR_COLORMAP_COUNT) __builtin_trap();
}

/* The command line, as headless.c and window.c walk it: shared options first. */
static void parse_command_line(int argc, char **argv) {
  ir_volume_desc desc;
  memset(&desc, 0, sizeof desc);
  app_look look;
  app_look_init(&look);
  for (int i = 0; i < argc; i++) {
    char err[IR_ERR_LEN] = "";
    int used = cli_parse_volume_option(argc, argv, &i, &desc, err);
    if (used < 0) check_err(err);
    if (used != 0) {
      if (used > 0) check_volume(&desc);
      continue;
    }
    used = cli_parse_look_option(argc, argv, &i, &look, err);
    if (used < 0) check_err(err);
    if (used > 0) check_look(&look);
    if (i >= argc) __builtin_trap(); /* a parser stepped past the last word */
  }
}

/* One word through every value parser. */
static void parse_values(const char *word) {
  char err[IR_ERR_LEN] = "";
  double iso[MAX_ISO];
  int count = 0, suggested = 0;
  if (app_parse_isovalues(word, MAX_ISO, iso, &count, &suggested, err)) {
    if (count < 0 || count > MAX_ISO || suggested < -1 || suggested > MAX_ISO) __builtin_trap();
    for (int k = 0; k < count; k++)
      if (!isfinite((float)iso[k])) __builtin_trap();
  } else {
    check_err(err);
  }
  double one = 0;
  if (app_parse_isovalue(word, &one) && !isfinite((float)one)) __builtin_trap();

  bool methods[IR_COMPACT_METHOD_COUNT];
  err[0] = '\0';
  if (!app_parse_methods(word, methods, err)) check_err(err);
  bool pipelines[IR_PIPELINE_COUNT];
  err[0] = '\0';
  if (!app_parse_pipelines(word, pipelines, err)) check_err(err);
  uint32_t tail = 0;
  err[0] = '\0';
  if (!app_parse_tail_rays(word, &tail, err)) check_err(err);
  else if (tail != IR_TAIL_OFF && tail > (1u << 28)) __builtin_trap();

  int n = 0;
  err[0] = '\0';
  if (app_parse_count("--frames", word, 1, 1000000, &n, err)) {
    if (n < 1 || n > 1000000) __builtin_trap();
  } else {
    check_err(err);
  }
  float x = 0;
  err[0] = '\0';
  if (app_parse_real("--elevation", word, -89.0, 89.0, &x, err)) {
    if (!(x >= -89.0f && x <= 89.0f)) __builtin_trap();
  } else {
    check_err(err);
  }
  int w = 0, h = 0;
  if (cli_parse_size2(word, &w, &h) && (w < 1 || h < 1 || w > 16384 || h > 16384)) __builtin_trap();
  ir_axis axis;
  ir_device device;
  (void)ir_axis_parse(word, &axis);
  (void)ir_device_parse(word, &device);
  (void)app_depth_format_of(word);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* A copy with a NUL after each word; the words point into it. */
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  char *argv[MAX_WORDS + 1];
  int argc = 0;
  char *start = text;
  for (size_t k = 0; k <= size && argc < MAX_WORDS; k++) {
    if (k < size && text[k] != '\0' && text[k] != '\n') continue;
    text[k] = '\0';
    argv[argc++] = start;
    start = text + k + 1;
  }
  argv[argc] = NULL;
  parse_command_line(argc, argv);
  for (int k = 0; k < argc; k++) parse_values(argv[k]);
  free(text);
  return 0;
}
