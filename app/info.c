/* inkray info [VOLUME OPTIONS] VOLUME: loads a volume and prints what is in it: dims, type,
 * spacing, size, value range, non-finite voxels, a coarse histogram and suggested isovalues.
 * Needs no GPU. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "app/app.h"

#define INFO_HISTOGRAM_ROWS 16
#define INFO_BAR_WIDTH 40

static void print_usage(FILE *to) {
  fputs("Usage: inkray info [VOLUME OPTIONS] VOLUME\n"
        "Loads VOLUME and prints its dims, voxel type, spacing, size in bytes, value range,\n"
        "count of non-finite (NaN/Inf) voxels, the up axis the header gives, a histogram of its\n"
        "values and isovalues likely to show structure (best first). A time series (a %d pattern,\n"
        "a glob, a folder of volumes, a .pvd, a 4-D NRRD or NIfTI): its steps, then its first\n"
        "step. Exit status: 0 done, 2 bad input, 1 runtime failure.\n"
        "\n",
        to);
  cli_print_volume_options(to);
}

static void print_bytes(size_t bytes) {
  const char *units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double value = (double)bytes;
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    unit++;
  }
  if (unit == 0)
    printf("bytes       %zu\n", bytes);
  else
    printf("bytes       %zu (%.1f %s)\n", bytes, value, units[unit]);
}

/* 64 bins folded into 16 rows; bar lengths on a log scale so that small materials show. */
static void print_histogram(const ir_volume_stats *s) {
  enum { per_row = IR_HISTOGRAM_BINS / INFO_HISTOGRAM_ROWS };
  size_t rows[INFO_HISTOGRAM_ROWS] = {0}, top = 0;
  for (int b = 0; b < IR_HISTOGRAM_BINS; b++) rows[b / per_row] += s->histogram[b];
  for (int r = 0; r < INFO_HISTOGRAM_ROWS; r++) top = rows[r] > top ? rows[r] : top;
  printf("histogram   %d bins of %g, log scale\n", INFO_HISTOGRAM_ROWS,
         (s->max - s->min) / INFO_HISTOGRAM_ROWS);
  double width = (s->max - s->min) / INFO_HISTOGRAM_ROWS;
  for (int r = 0; r < INFO_HISTOGRAM_ROWS; r++) {
    int bar = top ? (int)lround(INFO_BAR_WIDTH * log1p((double)rows[r]) / log1p((double)top)) : 0;
    if (rows[r] > 0 && bar == 0) bar = 1;
    char text[INFO_BAR_WIDTH + 1];
    memset(text, '#', (size_t)bar);
    text[bar] = '\0';
    printf("  %12.6g .. %-12.6g %-*s %zu\n", s->min + r * width, s->min + (r + 1) * width,
           INFO_BAR_WIDTH, text, rows[r]);
  }
}

static void print_info(const ir_volume *v, const char *source) {
  ir_volume_stats s;
  ir_volume_compute_stats(v, &s);
  printf("volume      %s\n", source);
  printf("dims        %zu x %zu x %zu (%zu voxels)\n", v->dims[0], v->dims[1], v->dims[2],
         ir_volume_voxel_count(v));
  printf("type        %s\n", ir_voxel_type_name(v->type));
  printf("spacing     %g x %g x %g\n", (double)v->spacing[0], (double)v->spacing[1],
         (double)v->spacing[2]);
  if (v->world_origin[0] != 0 || v->world_origin[1] != 0 || v->world_origin[2] != 0)
    printf("origin      %g, %g, %g\n", (double)v->world_origin[0], (double)v->world_origin[1],
           (double)v->world_origin[2]);
  if (v->modality[0]) printf("modality    %s\n", v->modality);
  if (v->description[0]) printf("description %s\n", v->description);
  for (int l = 0; l < v->level_count && l < IR_MAX_LEVELS; l++)
    printf("level %-5d %zu x %zu x %zu, spacing %g x %g x %g%s\n", l, v->level_dims[l][0], v->level_dims[l][1],
           v->level_dims[l][2], (double)v->level_spacing[l][0], (double)v->level_spacing[l][1],
           (double)v->level_spacing[l][2], l == v->level ? " (shown)" : "");
  if (v->channels) printf("channels    %zu\n", v->channels);
  print_bytes(v->bytes);
  /* A float volume can be NaN/Inf throughout: it has no range and nothing to suggest. */
  bool no_finite = v->nonfinite_count > 0 && v->nonfinite_count == ir_volume_voxel_count(v);
  if (no_finite)
    printf("range       none: every voxel is NaN or Inf\n");
  else
    printf("range       %.9g .. %.9g\n", s.min, s.max);
  if (!no_finite) printf("mean        %.6g\n", s.mean);
  printf("non-finite  %zu%s\n", s.nonfinite_count,
         s.nonfinite_count ? " (NaN/Inf voxels; rendered as empty)" : "");
  if (v->up_axis != IR_AXIS_NONE)
    printf("up          %s (from the %s)\n", ir_axis_name(v->up_axis), v->up_source);
  else
    printf("up          not in the file (the orbit keeps +z up; --up changes it)\n");
  if (s.max > s.min) print_histogram(&s);
  printf("isovalues  ");
  for (int k = 0; k < s.suggested_count; k++) printf(" %.6g", s.suggested_isovalues[k]);
  if (s.suggested_count)
    printf(" (best first)\n");
  else
    printf("%s\n", no_finite ? " none: no finite values" : " none: the volume holds a single value");
}

/* A time series: its steps (every header checked), then the first step as a volume. */
static int series_info(const ir_volume_desc *desc) {
  ir_series *series = NULL;
  char err[IR_ERR_LEN] = "";
  ir_status st = ir_series_open(desc, &series, err);
  if (st != IR_OK) {
    fprintf(stderr, "inkray: %s\n", err);
    return st == IR_ERR_INPUT ? 2 : 1;
  }
  size_t n = ir_series_length(series);
  const ir_volume *h = ir_series_header(series);
  printf("series      %s: %zu steps of %zux%zux%zu %s, %s .. %s, times %g .. %g\n", desc->source, n, h->dims[0],
         h->dims[1], h->dims[2], ir_voxel_type_name(h->type), ir_series_step_name(series, 0),
         ir_series_step_name(series, n - 1), ir_series_step_time(series, 0), ir_series_step_time(series, n - 1));
  ir_volume v;
  st = ir_series_read(series, 0, NULL, &v, err);
  if (st == IR_OK) {
    printf("step 1 of %zu:\n", n);
    print_info(&v, ir_series_step_name(series, 0));
    ir_volume_free(&v);
  } else {
    fprintf(stderr, "inkray: %s\n", err);
  }
  ir_series_close(series);
  return st == IR_OK ? 0 : st == IR_ERR_INPUT ? 2 : 1;
}

int app_info_main(int argc, char **argv) {
  ir_volume_desc desc = {0};
  char err[IR_ERR_LEN] = {0};
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      print_usage(stdout);
      return 0;
    }
    int used = cli_parse_volume_option(argc, argv, &i, &desc, err);
    if (used < 0) {
      fprintf(stderr, "inkray info: %s\n", err);
      return 2;
    }
    if (used > 0) continue;
    if (arg[0] == '-' && arg[1] != '\0') {
      fprintf(stderr, "inkray info: unknown option '%s' (see inkray info --help)\n", arg);
      return 2;
    }
    if (desc.source) {
      fprintf(stderr, "inkray info: one volume at a time ('%s' and '%s' given)\n", desc.source, arg);
      return 2;
    }
    desc.source = arg;
  }
  if (!desc.source) {
    fprintf(stderr, "inkray info: no volume given; e.g. inkray info %s (see inkray info --help)\n",
            IR_DEFAULT_VOLUME);
    return 2;
  }
  ir_volume v;
  if (ir_series_detect(desc.source)) return series_info(&desc);
  int status = cli_load_volume(&desc, &v);
  if (status != 0) return status;
  print_info(&v, desc.source);
  ir_volume_free(&v);
  return 0;
}
