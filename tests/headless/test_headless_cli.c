/* inkray --headless through the built binary on the CPU renderer: the files it writes (PNG of the
 * asked size, CSV with fixed columns and one row per frame), option errors (exit 2, one line),
 * output paths checked before any work, the fallback to the CPU without a GPU, and every
 * compaction method name of the table accepted. */
#include <cuda_runtime_api.h>

#include "compaction/compaction.h"
#include "tests/check.h"
#include "tests/headless/run_inkray.h"

static const char *const expected_columns[] = {
    "config", "device", "volume", "width", "height", "isovalue", "pipeline", "method", "pass",
    "frame", "view", "azimuth", "elevation", "frame_ms", "bvh_update_ms", "raygen_ms",
    "traverse_ms", "intersect_ms", "shade_ms", "compact_ms", "iterations", "rays_generated",
    "rays_hit", "traverse_rays", "intersect_rays", "traverse_iter_ms", "intersect_iter_ms", NULL};

static run_result result;

static bool gpu_present(void) {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

static void join(char *out, size_t cap, const char *dir, const char *name) { snprintf(out, cap, "%s/%s", dir, name); }

static int line_count(const char *text) {
  int n = 0;
  for (const char *c = text; *c; c++) n += *c == '\n';
  return n;
}

static void test_cpu_run_writes_png_of_the_requested_size_and_csv_rows(void) {
  char dir[64], csv[128], png[128];
  make_scratch(dir);
  join(csv, sizeof csv, dir, "frames.csv");
  join(png, sizeof png, dir, "last.png");
  const char *args[] = {"--headless", "--device", "cpu", "--frames", "3", "--warmup", "1", "--size", "64x48",
                        "--orbit", "2", "--csv", csv, "--png", png, "--quiet", "builtin:sphere:32", NULL};
  run_inkray(dir, args, &result);
  CHECK_MSG(result.status == 0, "exit %d: %s", result.status, result.output);
  CHECK_STR_CONTAINS(result.output, "median");
  CHECK_STR_CONTAINS(result.output, "FPS");

  int w = 0, h = 0, channels = 0;
  unsigned char *pixels = read_png(png, &w, &h, &channels);
  CHECK_MSG(pixels != NULL, "cannot read %s", png);
  if (pixels) {
    CHECK_EQ_INT(w, 64);
    CHECK_EQ_INT(h, 48);
    CHECK_EQ_INT(channels, 4);
    CHECK_MSG(image_has_contrast(pixels, w, h, channels), "the image is one flat colour: nothing drawn");
    stbi_image_free(pixels);
  }

  csv_table t;
  CHECK_MSG(csv_read(csv, &t), "cannot read %s", csv);
  int expected = 0;
  while (expected_columns[expected]) expected++;
  CHECK_EQ_INT(t.columns, expected);
  for (int k = 0; k < expected && k < t.columns; k++) CHECK_MSG(strcmp(t.header[k], expected_columns[k]) == 0,
                                                                 "column %d is '%s', expected '%s'", k, t.header[k], expected_columns[k]);
  CHECK(!t.ragged);
  /* 3 timed frames, then the per-stage diagnostic pass: one frame per view of the orbit. */
  CHECK_EQ_INT(t.rows, 3 + 2);
  CHECK_EQ_INT(csv_count(&t, "pass", "timed"), 3);
  CHECK_EQ_INT(csv_count(&t, "pass", "stages"), 2);
  CHECK_EQ_INT(csv_count(&t, "width", "64"), 5);
  CHECK_EQ_INT(csv_count(&t, "height", "48"), 5);
  CHECK_EQ_INT(csv_count(&t, "device", "cpu"), 5);
  int ms = csv_column(&t, "frame_ms");
  for (int r = 0; r < t.rows && ms >= 0; r++) {
    char field[64];
    CHECK(csv_field(t.lines[r], ms, field, sizeof field));
    CHECK_MSG(atof(field) > 0.0, "row %d: frame_ms '%s' is not positive", r, field);
  }
  csv_free(&t);
  remove_scratch(dir);
}

static void test_all_methods_and_pipelines_give_a_row_per_frame_and_configuration(void) {
  char dir[64], csv[128];
  make_scratch(dir);
  join(csv, sizeof csv, dir, "all.csv");
  const char *args[] = {"--headless", "--device", "cpu", "--method", "all", "--pipeline", "all", "--frames", "2",
                        "--warmup", "0", "--orbit", "3", "--size", "24x24", "--iso", "100,150", "--csv", csv,
                        "builtin:fractal:24", NULL};
  run_inkray(dir, args, &result);
  CHECK_MSG(result.status == 0, "exit %d: %s", result.status, result.output);
  csv_table t;
  CHECK(csv_read(csv, &t));
  /* 2 isovalues x (5 methods x the multi and paper pipelines + the single kernel) x (2 timed + 3
   * per-stage frames). */
  int per_config = 2 + 3, configs = 2 * IR_COMPACT_METHOD_COUNT + 1;
  CHECK_EQ_INT(t.rows, 2 * configs * per_config);
  CHECK(!t.ragged);
  const ir_compact_method_info *methods = ir_compact_methods();
  for (int m = 0; m < IR_COMPACT_METHOD_COUNT; m++)
    CHECK_MSG(csv_count(&t, "method", methods[m].name) == 2 * 2 * per_config, "method %s", methods[m].name);
  CHECK_EQ_INT(csv_count(&t, "pipeline", "single"), 2 * per_config);
  CHECK_EQ_INT(csv_count(&t, "pipeline", "multi"), 2 * IR_COMPACT_METHOD_COUNT * per_config);
  CHECK_EQ_INT(csv_count(&t, "pipeline", "paper"), 2 * IR_COMPACT_METHOD_COUNT * per_config);
  CHECK_EQ_INT(csv_count(&t, "isovalue", "100"), configs * per_config);
  CHECK_EQ_INT(csv_count(&t, "isovalue", "150"), configs * per_config);
  CHECK_STR_CONTAINS(result.output, "check: every configuration of each isovalue rendered the same last frame");
  csv_free(&t);
  /* One summary line per configuration. */
  for (int m = 0; m < IR_COMPACT_METHOD_COUNT; m++) CHECK_STR_CONTAINS(result.output, methods[m].name);
  remove_scratch(dir);
}

static void test_no_stages_leaves_only_timed_rows(void) {
  char dir[64], csv[128];
  make_scratch(dir);
  join(csv, sizeof csv, dir, "timed.csv");
  const char *args[] = {"--headless", "--device", "cpu", "--frames", "4", "--warmup", "0", "--orbit", "2",
                        "--size", "16x16", "--no-stages", "--csv", csv, "builtin:sphere:16", NULL};
  run_inkray(dir, args, &result);
  CHECK_MSG(result.status == 0, "exit %d: %s", result.status, result.output);
  csv_table t;
  CHECK(csv_read(csv, &t));
  CHECK_EQ_INT(t.rows, 4);
  CHECK_EQ_INT(csv_count(&t, "pass", "timed"), 4);
  /* Frame i uses view i mod K. */
  CHECK_EQ_INT(csv_count(&t, "view", "0"), 2);
  CHECK_EQ_INT(csv_count(&t, "view", "1"), 2);
  csv_free(&t);
  remove_scratch(dir);
}

static void test_every_method_name_of_the_table_is_accepted(void) {
  const ir_compact_method_info *methods = ir_compact_methods();
  for (int m = 0; m < IR_COMPACT_METHOD_COUNT; m++) {
    const char *args[] = {"--headless", "--device", "cpu", "--method", methods[m].name, "--frames", "1",
                          "--warmup", "0", "--orbit", "1", "--size", "16x16", "--no-stages",
                          "builtin:sphere:16", NULL};
    run_inkray(NULL, args, &result);
    CHECK_MSG(result.status == 0, "--method %s: exit %d: %s", methods[m].name, result.status, result.output);
    CHECK_STR_CONTAINS(result.output, methods[m].name);
  }
}

static void test_bad_options_exit_2_with_one_line(void) {
  static const char *const cases[][6] = {
      {"--frames", "0"},         {"--frames", "ten"},       {"--frames"},
      {"--warmup", "-1"},        {"--size", "1024"},        {"--size", "0x10"},
      {"--orbit", "0"},          {"--pipeline", "triple"},  {"--pipeline", "multi,,single"},  {"--device", "tpu"},
      {"--iso", "abc"},          {"--iso", "suggested:0"},  {"--elevation", "95"},
      {"--distance", "0"},       {"--no-such-option"},      {"--verify", "--device", "cpu"},
      {"--dims", "1x2"},         {"--type", "complex"},     {"one.raw", "two.raw"},
      {"--tail-rays", "-5"},     {"--tail-rays", "many"},    {"--up", "w"},
      {"--up", "zz"},            {"--up"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const char *args[8] = {"--headless"};
    int n = 1;
    for (int a = 0; a < 6 && cases[k][a]; a++) args[n++] = cases[k][a];
    args[n] = NULL;
    run_inkray(NULL, args, &result);
    CHECK_MSG(result.status == 2, "%s %s: exit %d, expected 2", cases[k][0], cases[k][1] ? cases[k][1] : "",
              result.status);
    CHECK_MSG(strncmp(result.output, "inkray: ", 8) == 0 && line_count(result.output) == 1,
              "%s: expected one line starting 'inkray: ', got: %s", cases[k][0], result.output);
  }
}

static void test_unknown_method_lists_the_valid_ones(void) {
  const char *args[] = {"--headless", "--device", "cpu", "--method", "ink-compact,quicksort", NULL};
  run_inkray(NULL, args, &result);
  CHECK_EQ_INT(result.status, 2);
  CHECK_STR_CONTAINS(result.output, "quicksort");
  const ir_compact_method_info *methods = ir_compact_methods();
  for (int m = 0; m < IR_COMPACT_METHOD_COUNT; m++) CHECK_STR_CONTAINS(result.output, methods[m].name);
  CHECK_EQ_INT(line_count(result.output), 1);
}

static void test_missing_volume_file_exits_2(void) {
  const char *args[] = {"--headless", "--device", "cpu", "/nonexistent/volume_8x8x8_uint8.raw", NULL};
  run_inkray(NULL, args, &result);
  CHECK_EQ_INT(result.status, 2);
  CHECK_STR_CONTAINS(result.output, "/nonexistent/volume_8x8x8_uint8.raw");
}

/* Output paths are checked before anything is loaded or rendered: the volume named here does not
 * exist, so a message about the output proves the check came first. */
static void test_unwritable_outputs_are_refused_before_any_work(void) {
  static const char *const cases[][2] = {{"--png", "/nonexistent-folder/x.png"},
                                         {"--csv", "/nonexistent-folder/x.csv"},
                                         {"--png", "/"}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const char *args[] = {"--headless", "--device", "cpu", "--frames", "1", "--warmup", "0", "--orbit", "1",
                          "--size", "8x8", cases[k][0], cases[k][1], "/nonexistent/volume_8x8x8_uint8.raw", NULL};
    run_inkray(NULL, args, &result);
    CHECK_MSG(result.status == 2, "%s %s: exit %d, expected 2", cases[k][0], cases[k][1], result.status);
    CHECK_STR_CONTAINS(result.output, cases[k][0]);
    CHECK_STR_CONTAINS(result.output, cases[k][1]);
    CHECK_MSG(line_count(result.output) == 1, "expected one line, got: %s", result.output);
  }
}

/* The CPU renderer has no stages to time: the summary says so instead of a table of zeros, and
 * still reports the rounds and ray counts of the diagnostic pass. */
static void test_cpu_run_says_the_stage_split_is_gpu_only(void) {
  const char *args[] = {"--headless", "--device", "cpu", "--frames", "1", "--warmup", "0", "--orbit", "2",
                        "--size", "24x24", "builtin:sphere:16", NULL};
  run_inkray(NULL, args, &result);
  CHECK_MSG(result.status == 0, "exit %d: %s", result.status, result.output);
  CHECK_STR_CONTAINS(result.output, "per-stage split: GPU only");
  CHECK_MSG(strstr(result.output, "intersect") == NULL && strstr(result.output, "bvh") == NULL,
            "stage columns printed for a CPU run: %s", result.output);
  CHECK_STR_CONTAINS(result.output, "rounds");
}

/* An explicit --device gpu means GPU timings: without a device it stops (one line pointing to
 * --device cpu) instead of falling back. */
static void test_explicit_gpu_without_a_device_is_not_replaced(void) {
  if (gpu_present()) {
    printf("  (a CUDA device is present: nothing to check)\n");
    return;
  }
  const char *args[] = {"--headless", "--device", "gpu", "--frames", "1", "builtin:sphere:8", NULL};
  run_inkray(NULL, args, &result);
  CHECK_EQ_INT(result.status, 1);
  CHECK_STR_CONTAINS(result.output, "--device cpu");
  CHECK_EQ_INT(line_count(result.output), 1);
}

static void test_help_lists_the_options_and_exits_0(void) {
  const char *args[] = {"--headless", "--help", NULL};
  run_inkray(NULL, args, &result);
  CHECK_EQ_INT(result.status, 0);
  const char *options[] = {"--frames", "--warmup", "--size", "--method", "--pipeline", "--orbit",
                           "--iso", "--csv", "--png", "--device", NULL};
  for (int k = 0; options[k]; k++) CHECK_STR_CONTAINS(result.output, options[k]);
}

/* The no-display fallback with no options: a quick GPU run that writes inkray.png, or, with no
 * GPU, the same run on the CPU renderer (its defaults: 256x256) after a one-line note. */
static void test_no_options_renders_on_the_gpu_or_falls_back_to_the_cpu(void) {
  char dir[64], png[128];
  make_scratch(dir);
  join(png, sizeof png, dir, "inkray.png");
  const char *args[] = {"--headless", NULL};
  run_inkray(dir, args, &result);
  CHECK_MSG(result.status == 0, "exit %d: %s", result.status, result.output);
  bool gpu = gpu_present();
  if (!gpu) {
    CHECK_STR_CONTAINS(result.output, "no CUDA device");
    CHECK_STR_CONTAINS(result.output, "using the CPU reference renderer");
    CHECK_STR_CONTAINS(result.output, "inkray headless: CPU reference renderer");
  }
  int w = 0, h = 0, channels = 0;
  unsigned char *pixels = read_png(png, &w, &h, &channels);
  CHECK_MSG(pixels != NULL, "no inkray.png after a run with no options");
  if (pixels) {
    CHECK_EQ_INT(w, gpu ? 512 : 256);
    CHECK_EQ_INT(h, gpu ? 512 : 256);
    stbi_image_free(pixels);
  }
  remove_scratch(dir);
}

/* --up turns the orbit around the axis given; without it the file's header decides (a NRRD in
 * a patient space here), else +z. The choice and where it came from head the report, and the
 * image changes with it. */
static void test_up_axis_from_option_header_or_default(void) {
  char dir[64], nhdr[128], raw[128], png_z[128], png_y[128];
  make_scratch(dir);
  join(nhdr, sizeof nhdr, dir, "up.nhdr");
  join(raw, sizeof raw, dir, "up.raw");
  join(png_z, sizeof png_z, dir, "z.png");
  join(png_y, sizeof png_y, dir, "y.png");
  FILE *f = fopen(nhdr, "w");
  if (f) {
    fputs("NRRD0004\ntype: uchar\ndimension: 3\nsizes: 8 8 8\nencoding: raw\nspace: RAS\n"
          "space directions: (1,0,0) (0,0,-1) (0,1,0)\ndata file: up.raw\n", f);
    fclose(f);
  }
  unsigned char voxels[512];
  for (int k = 0; k < 512; k++) voxels[k] = (unsigned char)(k % 8 < 4 && k / 64 < 6 ? 200 : 0);
  f = fopen(raw, "wb");
  if (f) {
    fwrite(voxels, 1, sizeof voxels, f);
    fclose(f);
  }
  const char *from_header[] = {"--headless", "--device", "cpu", "--frames", "1", "--warmup", "0", "--orbit", "1",
                               "--size", "32x32", "--no-stages", "--iso", "100", "--png", png_y, nhdr, NULL};
  run_inkray(dir, from_header, &result);
  CHECK_MSG(result.status == 0, "exit %d: %s", result.status, result.output);
  CHECK_STR_CONTAINS(result.output, "up -y (NRRD space directions)");
  const char *given[] = {"--headless", "--device", "cpu", "--frames", "1", "--warmup", "0", "--orbit", "1",
                         "--size", "32x32", "--no-stages", "--iso", "100", "--up", "z", "--png", png_z, nhdr, NULL};
  run_inkray(dir, given, &result);
  CHECK_MSG(result.status == 0, "exit %d: %s", result.status, result.output);
  CHECK_STR_CONTAINS(result.output, "up z (--up)");
  const char *plain[] = {"--headless", "--device", "cpu", "--frames", "1", "--warmup", "0", "--orbit", "1",
                         "--size", "16x16", "--no-stages", "builtin:sphere:16", NULL};
  run_inkray(dir, plain, &result);
  CHECK_STR_CONTAINS(result.output, "up z (default)");
  int w = 0, h = 0, c = 0, w2 = 0, h2 = 0, c2 = 0;
  unsigned char *a = read_png(png_y, &w, &h, &c), *b = read_png(png_z, &w2, &h2, &c2);
  CHECK(a && b && w == w2 && h == h2 && c == c2);
  if (a && b && w == w2 && h == h2 && c == c2) CHECK_MSG(memcmp(a, b, (size_t)w * h * c) != 0, "--up did not change the image");
  if (a) stbi_image_free(a);
  if (b) stbi_image_free(b);
  remove_scratch(dir);
}

int main(void) {
  RUN(test_up_axis_from_option_header_or_default);
  RUN(test_cpu_run_writes_png_of_the_requested_size_and_csv_rows);
  RUN(test_all_methods_and_pipelines_give_a_row_per_frame_and_configuration);
  RUN(test_no_stages_leaves_only_timed_rows);
  RUN(test_every_method_name_of_the_table_is_accepted);
  RUN(test_bad_options_exit_2_with_one_line);
  RUN(test_unknown_method_lists_the_valid_ones);
  RUN(test_missing_volume_file_exits_2);
  RUN(test_unwritable_outputs_are_refused_before_any_work);
  RUN(test_cpu_run_says_the_stage_split_is_gpu_only);
  RUN(test_explicit_gpu_without_a_device_is_not_replaced);
  RUN(test_help_lists_the_options_and_exits_0);
  RUN(test_no_options_renders_on_the_gpu_or_falls_back_to_the_cpu);
  return check_summary();
}
