/* inkray --headless through the built binary on the CPU renderer: the files it writes (PNG of the
 * asked size, CSV with fixed columns and one row per frame), option errors (exit 2, one line),
 * output paths checked before any work, the fallback to the CPU without a GPU, and every
 * compaction method name of the table accepted; the look options (several surfaces, clipping,
 * colour by a second quantity, depth images): their errors, what a run says it draws, the files. */
#include <math.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "compaction/compaction.h"
#include "tests/check.h"
#include "tests/headless/run_inkray.h"

static const char *const expected_columns[] = {
    "config", "device", "volume", "width", "height", "isovalue", "pipeline", "method", "pass",
    "frame", "view", "azimuth", "elevation", "frame_ms", "bvh_update_ms", "raygen_ms",
    "traverse_ms", "intersect_ms", "shade_ms", "compact_ms", "iterations", "rays_generated",
    "rays_hit", "traverse_rays", "intersect_rays", "traverse_iter_ms", "intersect_iter_ms", "secondary_ms", NULL};

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
  /* 2 isovalues x (5 methods x the persistent, multi and paper pipelines + the single kernel) x
   * (2 timed + 3 per-stage frames). */
  int per_config = 2 + 3, configs = 3 * IR_COMPACT_METHOD_COUNT + 1;
  CHECK_EQ_INT(t.rows, 2 * configs * per_config);
  CHECK(!t.ragged);
  const ir_compact_method_info *methods = ir_compact_methods();
  for (int m = 0; m < IR_COMPACT_METHOD_COUNT; m++)
    CHECK_MSG(csv_count(&t, "method", methods[m].name) == 2 * 3 * per_config, "method %s", methods[m].name);
  CHECK_EQ_INT(csv_count(&t, "pipeline", "single"), 2 * per_config);
  CHECK_EQ_INT(csv_count(&t, "pipeline", "multi"), 2 * IR_COMPACT_METHOD_COUNT * per_config);
  CHECK_EQ_INT(csv_count(&t, "pipeline", "paper"), 2 * IR_COMPACT_METHOD_COUNT * per_config);
  CHECK_EQ_INT(csv_count(&t, "pipeline", "persistent"), 2 * IR_COMPACT_METHOD_COUNT * per_config);
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
      /* Spacing and isovalues must be finite, and the spacing positive, as the floats the
       * renderer takes: 1e39 is infinite there and 1e-50 zero. */
      {"--spacing", "0,1,1"},    {"--spacing", "1,-2,1"},   {"--spacing", "nan,1,1"},
      {"--spacing", "1,1,inf"},  {"--spacing", "1e39,1,1"}, {"--spacing", "1,1e-50,1"},
      {"--iso", "nan"},          {"--iso", "inf"},          {"--iso", "1,-inf"},
      {"--iso", "1e39"},         {"--surface", "1e39"},
      /* A stray comma is a typo, never a value left out. */
      {"--iso", ","},            {"--iso", "100,,120"},     {"--iso", "100,"},
      {"--method", ","},         {"--method", "ink-compact,"}, {"--method", ",thrust"},
      {"--pipeline", "single,"}, {"--spacing", "1,,1,1"},   {"--spacing", "1,1,1,"},
      {"--clip-box", "0,1,0,1,,0,1"}, {"--color-range", ",1,2"},
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
                           "--iso", "--csv", "--png", "--device", "--surface", "--clip-box", "--clip-plane",
                           "--color-by", "--colormap", "--color-range", "--refine", "--depth", NULL};
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

/* ---- Look options: several surfaces, clipping, colour by a second quantity, depth -------------- */

/* Every bad value of a look option: exit 2, one line naming the option (and what is wrong). */
static void test_bad_look_options_exit_2_with_one_line_naming_the_option(void) {
  static const char *const cases[][4] = {
      {"--surface", "582:#zz0000", "bad colour '#zz0000'"},
      {"--surface", "582:reddish", "#rrggbb or one of: white"},
      {"--surface", "abc", "isovalue 'abc' is not a number"},
      {"--surface", "1:red:1.5", "opacity '1.5' must be a number from 0 to 1"},
      {"--surface", "1:red:-0.1", "opacity"},
      {"--surface", "1:red:x", "opacity"},
      {"--surface", "1:red:0.5:2", "ISO[:COLOR[:OPACITY]]"},
      {"--surface", NULL, "needs a value"},
      {"--clip-box", "0,1,0,1,0", "six numbers"},
      {"--clip-box", "0,1.5,0,1,0,1", "x range 0..1.5"},
      {"--clip-box", "0,1,0.5,0.5,0,1", "y range 0.5..0.5"},
      {"--clip-box", "0,1,0,1,-0.1,1", "z range -0.1..1"},
      {"--clip-box", "0,1,0,1,0,1,", "six numbers"},
      {"--clip-plane", "0,0,0,1", "normal"},
      {"--clip-plane", "1,0,0", "four numbers"},
      {"--clip-plane", "1,0,0,nan", "four numbers"},
      {"--colormap", "jet", "viridis, magma, inferno, plasma, cividis, grey"},
      {"--color-range", "5,5", "LO < HI"},
      {"--color-range", "3,1", "LO < HI"},
      {"--color-range", "1,inf", "finite"},
      {"--color-range", "1", "LO,HI"},
      {"--refine", "bilinear", "exact"},
      {"--depth", "d.png", ".pfm"},
      {"--depth", "depth", ".nrrd"},
      {"--color-by", "", "gradient"},
      {"--ao", "0", "N[:RADIUS]"},
      {"--ao", "8:-1", "radius in voxels above 0"},
      {"--ao", "8:0", "radius"},
      {"--ao", "x", "N[:RADIUS]"},
      {"--ao", "257", "from 1 to 256"},
      {"--ao", "8:", "N[:RADIUS]"},
      {"--light", "0,100", "elevation -90..90"},
      {"--light", "200,0", "azimuth -180..180"},
      {"--light", "30", "AZ,EL"},
      {"--light", "nan,0", "AZ,EL"},
      {"--step", "0", "from 0.01 to 1"},
      {"--step", "1.5", "from 0.01 to 1"},
      {"--step", "x", "voxels between samples"},
      {"--step", "nan", "from 0.01 to 1"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const char *args[] = {"--headless", "--device", "cpu", cases[k][0], cases[k][1], NULL};
    run_inkray(NULL, args, &result);
    CHECK_MSG(result.status == 2, "%s %s: exit %d, expected 2", cases[k][0], cases[k][1] ? cases[k][1] : "",
              result.status);
    CHECK_MSG(strncmp(result.output, "inkray: ", 8) == 0 && line_count(result.output) == 1,
              "%s: expected one line starting 'inkray: ', got: %s", cases[k][0], result.output);
    CHECK_STR_CONTAINS(result.output, cases[k][0]);
    CHECK_STR_CONTAINS(result.output, cases[k][2]);
  }
  /* A fifth surface. */
  const char *five[] = {"--headless", "--device", "cpu", "--surface", "1", "--surface", "2", "--surface", "3",
                        "--surface", "4", "--surface", "5", "builtin:sphere:8", NULL};
  run_inkray(NULL, five, &result);
  CHECK_EQ_INT(result.status, 2);
  CHECK_STR_CONTAINS(result.output, "--surface '5': at most 4 surfaces");
  CHECK_EQ_INT(line_count(result.output), 1);
  /* --surface replaces --iso: both is a mistake, in either order. */
  const char *both[][6] = {{"--surface", "1", "--iso", "2"}, {"--iso", "2", "--surface", "1"}};
  for (int k = 0; k < 2; k++) {
    const char *args[] = {"--headless", "--device", "cpu", both[k][0], both[k][1], both[k][2], both[k][3],
                          "builtin:sphere:8", NULL};
    run_inkray(NULL, args, &result);
    CHECK_EQ_INT(result.status, 2);
    CHECK_STR_CONTAINS(result.output, "--surface and --iso both given");
    CHECK_EQ_INT(line_count(result.output), 1);
  }
}

/* A frame with two surfaces (one without a colour: the palette's second), a clip box, a clip plane
 * and gradient colours: the run says what it draws, in voxel coordinates for the box, with the
 * gradient range measured on the volume (the builtin sphere is a distance field: |gradient| 1). */
static void test_look_options_run_and_say_what_is_drawn(void) {
  const char *args[] = {"--headless", "--device", "cpu", "--frames", "1", "--warmup", "0", "--orbit", "1",
                        "--size", "24x24", "--no-stages", "--surface", "0:red", "--surface", "-4::0.5",
                        "--clip-box", "0,0.5,0,1,0.25,0.75", "--clip-plane", "1,0,0,-8", "--color-by", "gradient",
                        "--colormap", "gray", "--refine", "texture", "builtin:sphere:32", NULL};
  run_inkray(NULL, args, &result);
  CHECK_MSG(result.status == 0, "exit %d: %s", result.status, result.output);
  CHECK_STR_CONTAINS(result.output, "drawn: surface iso 0 colour #ff0000 opacity 1, surface iso -4 colour #5999e6 "
                                    "opacity 0.5; clip box x 0..16 y 0..32 z 8..24 voxels; clip plane 1,0,0,-8");
  CHECK_STR_CONTAINS(result.output, "coloured by gradient, grey over 0..");
  CHECK_STR_CONTAINS(result.output, "(automatic); texture refinement");
  const char *range = strstr(result.output, "grey over 0..");
  double hi = range ? atof(range + strlen("grey over 0..")) : 0.0;
  CHECK_MSG(hi > 0.95 && hi < 1.05, "gradient range 0..%g, expected about 1", hi);
  /* The summary is labelled with the first surface's isovalue. */
  CHECK_STR_CONTAINS(result.output, "\n0          single");
  /* An isovalue outside the volume's values is named. */
  const char *outside[] = {"--headless", "--device", "cpu", "--frames", "1", "--warmup", "0", "--orbit", "1",
                           "--size", "8x8", "--no-stages", "--surface", "0", "--surface", "500",
                           "builtin:sphere:16", NULL};
  run_inkray(NULL, outside, &result);
  CHECK_MSG(result.status == 0, "exit %d: %s", result.status, result.output);
  CHECK_STR_CONTAINS(result.output, "--surface isovalue 500 is outside");
  /* Looks that draw nothing whatever the isovalue are named too: every surface transparent, a
   * clip plane beyond the volume, a plane that keeps nothing of the clip box. */
  static const struct {
    const char *options[6], *expect;
  } empty[] = {
      {{"--surface", "0:white:0", "--surface", "-4:red:0", NULL}, "every --surface has opacity 0"},
      {{"--clip-plane", "1,0,0,-40", NULL}, "--clip-plane 1,0,0,-40 keeps no part of the volume (it spans"},
      {{"--clip-box", "0,0.25,0,1,0,1", "--clip-plane", "1,0,0,-8", NULL},
       "--clip-plane 1,0,0,-8 keeps no part of the volume inside --clip-box"},
  };
  for (size_t k = 0; k < sizeof empty / sizeof empty[0]; k++) {
    const char *empty_args[24] = {"--headless", "--device", "cpu", "--frames", "1", "--warmup", "0", "--orbit", "1",
                                  "--size", "8x8", "--no-stages"};
    int n = 12;
    for (int j = 0; empty[k].options[j]; j++) empty_args[n++] = empty[k].options[j];
    empty_args[n++] = "builtin:sphere:16";
    empty_args[n] = NULL;
    run_inkray(NULL, empty_args, &result);
    CHECK_MSG(result.status == 0, "exit %d: %s", result.status, result.output);
    CHECK_STR_CONTAINS(result.output, empty[k].expect);
  }
  /* A plane that keeps part of the volume, and one transparent surface among others: no warning. */
  const char *kept[] = {"--headless", "--device", "cpu", "--frames", "1", "--warmup", "0", "--orbit", "1", "--size",
                        "8x8", "--no-stages", "--surface", "0:white:0", "--surface", "-4", "--clip-plane", "1,0,0,-8",
                        "builtin:sphere:16", NULL};
  run_inkray(NULL, kept, &result);
  CHECK_MSG(result.status == 0, "exit %d: %s", result.status, result.output);
  CHECK(strstr(result.output, "nothing will be drawn") == NULL);
}

/* Writes n float32 voxels f(i) = i / plane (the z index of an n^3 cube with planes of `plane`). */
static void write_z_ramp(const char *path, size_t side) {
  FILE *f = fopen(path, "wb");
  CHECK_MSG(f != NULL, "cannot write %s", path);
  if (!f) return;
  for (size_t i = 0; i < side * side * side; i++) {
    float v = (float)(i / (side * side));
    CHECK(fwrite(&v, sizeof v, 1, f) == 1);
  }
  fclose(f);
}

/* --color-by FILE: a second volume of the same dims, read with the same volume options, its range
 * taken from its values unless given; other dims, or a missing file, exit 2 naming them. */
static void test_color_by_a_second_volume(void) {
  char dir[64], same[128], other[128];
  make_scratch(dir);
  join(same, sizeof same, dir, "temp_32x32x32_float32.raw");
  join(other, sizeof other, dir, "temp_16x16x16_float32.raw");
  write_z_ramp(same, 32);
  write_z_ramp(other, 16);
  const char *args[] = {"--headless", "--device", "cpu", "--frames", "1", "--warmup", "0", "--orbit", "1",
                        "--size", "16x16", "--no-stages", "--color-by", same, "--colormap", "magma",
                        "builtin:sphere:32", NULL};
  run_inkray(NULL, args, &result);
  CHECK_MSG(result.status == 0, "exit %d: %s", result.status, result.output);
  CHECK_STR_CONTAINS(result.output, "coloured by volume temp_32x32x32_float32.raw, magma over 0..31 (automatic)");

  const char *given[] = {"--headless", "--device", "cpu", "--frames", "1", "--warmup", "0", "--orbit", "1",
                         "--size", "16x16", "--no-stages", "--color-by", same, "--color-range", "5,10.5",
                         "builtin:sphere:32", NULL};
  run_inkray(NULL, given, &result);
  CHECK_MSG(result.status == 0, "exit %d: %s", result.status, result.output);
  CHECK_STR_CONTAINS(result.output, "viridis over 5..10.5; exact refinement");

  const char *wrong[] = {"--headless", "--device", "cpu", "--frames", "1", "--warmup", "0", "--orbit", "1",
                         "--size", "16x16", "--color-by", other, "builtin:sphere:32", NULL};
  run_inkray(NULL, wrong, &result);
  CHECK_EQ_INT(result.status, 2);
  CHECK_STR_CONTAINS(result.output, "inkray: --color-by: colour volume temp_16x16x16_float32.raw is 16x16x16");
  CHECK_STR_CONTAINS(result.output, "32x32x32");

  char missing[128];
  join(missing, sizeof missing, dir, "absent_32x32x32_float32.raw");
  const char *absent[] = {"--headless", "--device", "cpu", "--color-by", missing, "builtin:sphere:32", NULL};
  run_inkray(NULL, absent, &result);
  CHECK_EQ_INT(result.status, 2);
  CHECK_STR_CONTAINS(result.output, "absent_32x32x32_float32.raw");
  remove_scratch(dir);
}

/* A uint8 volume whose block sits in the upper part (z up): the image's top rows are covered,
 * its bottom rows are not, so a depth image upside down disagrees with the PNG. */
static void write_upper_block(const char *path) {
  unsigned char v[24 * 24 * 24];
  for (int z = 0, i = 0; z < 24; z++)
    for (int y = 0; y < 24; y++)
      for (int x = 0; x < 24; x++, i++) v[i] = (z >= 14 && z < 22 && x >= 4 && x < 20 && y >= 4 && y < 20) ? 200 : 0;
  FILE *f = fopen(path, "wb");
  CHECK_MSG(f != NULL, "cannot write %s", path);
  if (f) {
    CHECK(fwrite(v, 1, sizeof v, f) == sizeof v);
    fclose(f);
  }
}

/* Reads a whole file; returns its size (0 if unreadable). */
static size_t read_all(const char *path, unsigned char *buf, size_t cap) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  size_t n = fread(buf, 1, cap, f);
  fclose(f);
  return n;
}

static float le_float(const unsigned char *p) {
  uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

/* --depth FILE.pfm and FILE.nrrd: the header each format wants, w*h little-endian floats, +inf
 * exactly on the background pixels of the PNG (alpha 0) and finite positive depths where a surface
 * was hit (alpha 255); PFM rows bottom to top, NRRD rows top to bottom: the same depths. */
static void test_depth_written_as_pfm_and_nrrd(void) {
  enum { W = 40, H = 30 };
  char dir[64], volume[128], png[128], pfm[128], nrrd[128];
  make_scratch(dir);
  join(volume, sizeof volume, dir, "block_24x24x24_uint8.raw");
  join(png, sizeof png, dir, "last.png");
  join(pfm, sizeof pfm, dir, "depth.pfm");
  join(nrrd, sizeof nrrd, dir, "depth.NRRD");
  write_upper_block(volume);
  const char *as_pfm[] = {"--headless", "--device", "cpu", "--frames", "2", "--warmup", "0", "--orbit", "2",
                          "--size", "40x30", "--elevation", "10", "--iso", "100", "--png", png, "--depth", pfm,
                          volume, NULL};
  run_inkray(NULL, as_pfm, &result);
  CHECK_MSG(result.status == 0, "exit %d: %s", result.status, result.output);
  CHECK_STR_CONTAINS(result.output, "last frame's depth: ");
  const char *as_nrrd[] = {"--headless", "--device", "cpu", "--frames", "2", "--warmup", "0", "--orbit", "2",
                           "--size", "40x30", "--elevation", "10", "--iso", "100", "--depth", nrrd, volume, NULL};
  run_inkray(NULL, as_nrrd, &result);
  CHECK_MSG(result.status == 0, "exit %d: %s", result.status, result.output);

  static unsigned char file[W * H * 4 + 1024];
  static float from_pfm[W * H], from_nrrd[W * H];
  size_t n = read_all(pfm, file, sizeof file);
  const char pfm_header[] = "Pf\n40 30\n-1.0\n";
  size_t hl = strlen(pfm_header);
  CHECK_MSG(n == hl + (size_t)W * H * 4, "%s: %zu bytes", pfm, n);
  CHECK(n >= hl && memcmp(file, pfm_header, hl) == 0);
  for (int y = 0; y < H && n == hl + (size_t)W * H * 4; y++)
    for (int x = 0; x < W; x++) from_pfm[y * W + x] = le_float(file + hl + 4 * ((size_t)(H - 1 - y) * W + x));

  n = read_all(nrrd, file, sizeof file);
  file[n < sizeof file ? n : sizeof file - 1] = '\0';
  const char *end = strstr((const char *)file, "\n\n");
  CHECK_MSG(n > 0 && strncmp((const char *)file, "NRRD000", 7) == 0 && end, "%s: not a NRRD header", nrrd);
  if (end) {
    size_t header = (size_t)(end - (const char *)file) + 2;
    char head[1024];
    snprintf(head, sizeof head, "%.*s", (int)header, (const char *)file);
    CHECK_STR_CONTAINS(head, "\ntype: float\n");
    CHECK_STR_CONTAINS(head, "\ndimension: 2\n");
    CHECK_STR_CONTAINS(head, "\nsizes: 40 30\n");
    CHECK_STR_CONTAINS(head, "\nendian: little\n");
    CHECK_STR_CONTAINS(head, "\nencoding: raw\n");
    CHECK_STR_CONTAINS(head, "\ncontent: depth");
    CHECK_MSG(n == header + (size_t)W * H * 4, "%s: %zu bytes after a %zu-byte header", nrrd, n - header, header);
    for (size_t i = 0; i < (size_t)W * H && n == header + (size_t)W * H * 4; i++)
      from_nrrd[i] = le_float(file + header + 4 * i);
  }

  int w = 0, h = 0, c = 0;
  unsigned char *pixels = read_png(png, &w, &h, &c);
  CHECK(pixels && w == W && h == H && c == 4);
  size_t hits = 0, background = 0, top_hits = 0, bottom_hits = 0;
  for (int i = 0; pixels && w == W && h == H && c == 4 && i < W * H; i++) {
    unsigned char alpha = pixels[4 * i + 3];
    float d = from_pfm[i];
    CHECK_MSG(memcmp(&from_pfm[i], &from_nrrd[i], sizeof d) == 0, "pixel %d: PFM %g, NRRD %g", i, (double)d,
              (double)from_nrrd[i]);
    if (alpha == 255) {
      CHECK_MSG(isfinite(d) && d > 0.0f, "pixel (%d,%d) hit but depth %g", i % W, i / W, (double)d);
      hits++;
      top_hits += i / W < H / 2;
      bottom_hits += i / W >= H / 2;
    } else if (alpha == 0) {
      CHECK_MSG(isinf(d) && d > 0.0f, "pixel (%d,%d) background but depth %g", i % W, i / W, (double)d);
      background++;
    }
  }
  CHECK_MSG(hits > 20 && background > 20, "%zu hits, %zu background pixels", hits, background);
  CHECK_MSG(top_hits > bottom_hits, "the block is in the upper half: %zu hits in the top rows, %zu below",
            top_hits, bottom_hits);
  if (pixels) stbi_image_free(pixels);
  remove_scratch(dir);
}

/* The depth path is checked with the other outputs, before the volume is loaded. */
static void test_unwritable_depth_is_refused_before_any_work(void) {
  const char *args[] = {"--headless", "--device", "cpu", "--depth", "/nonexistent-folder/d.pfm",
                        "/nonexistent/volume_8x8x8_uint8.raw", NULL};
  run_inkray(NULL, args, &result);
  CHECK_EQ_INT(result.status, 2);
  CHECK_STR_CONTAINS(result.output, "--depth '/nonexistent-folder/d.pfm': folder /nonexistent-folder does not exist");
  CHECK_EQ_INT(line_count(result.output), 1);
}

/* Mean colour of the hit pixels (alpha 255) of a PNG, and how many there are. */
static size_t hit_mean(const char *png, double rgb[3]) {
  int w = 0, h = 0, c = 0;
  unsigned char *p = read_png(png, &w, &h, &c);
  size_t hits = 0;
  rgb[0] = rgb[1] = rgb[2] = 0.0;
  for (long i = 0; p && c == 4 && i < (long)w * h; i++) {
    if (p[4 * i + 3] != 255) continue;
    hits++;
    for (int k = 0; k < 3; k++) rgb[k] += p[4 * i + k];
  }
  for (int k = 0; k < 3 && hits; k++) rgb[k] /= (double)hits;
  if (p) stbi_image_free(p);
  return hits;
}

/* The options reach the frame the renderer draws: a surface's colour shows in the image, the clip
 * box and plane remove part of the sphere, a grey colour map over a second volume turns the
 * default warm surface colour grey. */
static void test_look_options_reach_the_image(void) {
  char dir[64], png[128], ramp[128];
  make_scratch(dir);
  join(png, sizeof png, dir, "look.png");
  join(ramp, sizeof ramp, dir, "z_32x32x32_float32.raw");
  write_z_ramp(ramp, 32);
  static const char *const looks[][4] = {
      {"--surface", "0:#ff0000"},  {"--surface", "0:#00ff00"},
      {"--clip-box", "0,1,0,1,0,0.5"}, {"--clip-plane", "0,0,-1,16"},
      {"--color-by", NULL, "--colormap", "grey"}, {NULL},
  };
  double rgb[6][3];
  size_t hits[6];
  for (int k = 0; k < 6; k++) {
    const char *args[24] = {"--headless", "--device", "cpu", "--frames", "1", "--warmup", "0", "--orbit", "1",
                            "--size", "32x32", "--no-stages", "--quiet", "--png", png};
    int n = 15;
    for (int a = 0; a < 4 && (looks[k][a] || (k == 4 && a == 1)); a++) args[n++] = looks[k][a] ? looks[k][a] : ramp;
    args[n++] = "builtin:sphere:32";
    args[n] = NULL;
    run_inkray(NULL, args, &result);
    CHECK_MSG(result.status == 0, "look %d: exit %d: %s", k, result.status, result.output);
    hits[k] = hit_mean(png, rgb[k]);
  }
  size_t whole = hits[5];
  CHECK_MSG(whole > 50, "the sphere covers %zu pixels", whole);
  CHECK_MSG(rgb[0][0] > 3 * rgb[0][1] && rgb[0][0] > 3 * rgb[0][2], "red surface drawn %.0f,%.0f,%.0f", rgb[0][0],
            rgb[0][1], rgb[0][2]);
  CHECK_MSG(rgb[1][1] > 3 * rgb[1][0] && rgb[1][1] > 3 * rgb[1][2], "green surface drawn %.0f,%.0f,%.0f",
            rgb[1][0], rgb[1][1], rgb[1][2]);
  CHECK_MSG(hits[2] > 0 && hits[2] < whole * 9 / 10, "clip box: %zu of %zu pixels", hits[2], whole);
  CHECK_MSG(hits[3] > 0 && hits[3] < whole * 9 / 10, "clip plane: %zu of %zu pixels", hits[3], whole);
  CHECK_MSG(rgb[5][0] - rgb[5][2] > 30.0, "default colour %.0f,%.0f,%.0f is not warm", rgb[5][0], rgb[5][1],
            rgb[5][2]);
  CHECK_MSG(fabs(rgb[4][0] - rgb[4][2]) < 3.0 && fabs(rgb[4][0] - rgb[4][1]) < 3.0,
            "grey map over the second volume drawn %.0f,%.0f,%.0f", rgb[4][0], rgb[4][1], rgb[4][2]);
  remove_scratch(dir);
}

/* --ao, --shadows, --light and --accumulate: the same PNG from two runs, byte for byte; the
 * occlusion changes the picture, not its coverage; the pipelines that draw none, and
 * --accumulate without --ao, are refused with one line. */
static void test_lit_runs_are_reproducible(void) {
  char dir[64], png[2][128], plain[128];
  make_scratch(dir);
  join(png[0], sizeof png[0], dir, "lit0.png");
  join(png[1], sizeof png[1], dir, "lit1.png");
  join(plain, sizeof plain, dir, "plain.png");
  for (int k = 0; k < 3; k++) {
    /* The third run keeps the light and the shadows and leaves out the occlusion alone. */
    const char *args[] = {"--headless", "--device", "cpu", "--frames", "1", "--warmup", "0", "--orbit", "1", "--size",
                          "48x48", "--no-stages", "--quiet", "--png", k < 2 ? png[k] : plain, "builtin:fractal:48",
                          "--shadows", "--light", "30,45", k < 2 ? "--ao" : NULL, "8:12", "--accumulate", "3", NULL};
    run_inkray(NULL, args, &result);
    CHECK_MSG(result.status == 0, "run %d: exit %d: %s", k, result.status, result.output);
  }
  int w[3] = {0}, h[3] = {0}, c = 0;
  unsigned char *img[3];
  for (int k = 0; k < 3; k++) img[k] = stbi_load(k < 2 ? png[k] : plain, &w[k], &h[k], &c, 4);
  if (img[0] && img[1] && img[2] && w[0] == 48 && h[0] == 48 && w[1] == 48 && w[2] == 48) {
    CHECK_MSG(memcmp(img[0], img[1], 48 * 48 * 4) == 0, "two lit runs wrote different pictures");
    CHECK_MSG(memcmp(img[0], img[2], 48 * 48 * 4) != 0, "--ao changed nothing");
    size_t cover = 0;
    for (int i = 0; i < 48 * 48; i++) cover += (img[0][4 * i + 3] == 255) != (img[2][4 * i + 3] == 255);
    CHECK_EQ_INT(cover, 0);
  } else {
    CHECK_MSG(0, "lit pictures not written or not 48x48");
  }
  for (int k = 0; k < 3; k++) stbi_image_free(img[k]);
  remove_scratch(dir);
  static const char *const refused[][4] = {
      {"--ao", "4", "--pipeline", "paper"},
      {"--shadows", "--pipeline", "plain", NULL},
      {"--light", "0,0", "--pipeline", "all"},
      {"--accumulate", "4", NULL},
      {"--secondary", "pooled", NULL},
  };
  for (int k = 0; k < 5; k++) {
    const char *args[] = {"--headless", "--device", "cpu", refused[k][0], refused[k][1], refused[k][2], refused[k][3],
                          NULL};
    run_inkray(NULL, args, &result);
    CHECK_MSG(result.status == 2 && line_count(result.output) == 1, "%s %s: exit %d: %s", refused[k][0],
              refused[k][1], result.status, result.output);
  }
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
  RUN(test_bad_look_options_exit_2_with_one_line_naming_the_option);
  RUN(test_look_options_run_and_say_what_is_drawn);
  RUN(test_color_by_a_second_volume);
  RUN(test_depth_written_as_pfm_and_nrrd);
  RUN(test_unwritable_depth_is_refused_before_any_work);
  RUN(test_look_options_reach_the_image);
  RUN(test_lit_runs_are_reproducible);
  return check_summary();
}
