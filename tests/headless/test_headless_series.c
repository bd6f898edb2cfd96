/* Time series through the program: `inkray --headless` on a moving sphere (a generated series
 * whose sphere moves along y, across the view) renders every step, prints a line for each, and
 * each step's image is, pixel for pixel, the CPU reference renderer's image of that step's
 * volume alone, and not of its neighbours: the right step is drawn at each time. A 4-D NRRD
 * plays the same way. Bad input exits 2 before any step is drawn, naming the step: a pattern
 * matching nothing, a missing step, steps of different dims or types, a short step; a corrupt
 * compressed step in the middle exits 2 when it is reached, naming it. CPU renderer, no GPU.
 * With --gpu: the moving sphere on the GPU (steps streamed into the renderer's slots by the
 * player), each step within the GPU's tolerance of the CPU reference (a few silhouette pixels,
 * as headless --verify allows) and far from its neighbours; skipped (77) without a device. */
#include <math.h>
#include <zlib.h>

#include <cuda_runtime_api.h>

#include "render/render.h"
#include "tests/check.h"
#include "tests/headless/run_inkray.h"

enum { N = 40, STEPS = 5, W = 96, H = 80 };

static char dir[64];
static bool g_gpu = false;

/* Step k: a sphere of radius 9 about (20, 10 + 5k, 20), uint8 128 + 20 (R - d) clamped. */
static void sphere_step(int k, uint8_t *out) {
  for (int z = 0; z < N; z++)
    for (int y = 0; y < N; y++)
      for (int x = 0; x < N; x++) {
        double dx = x - 20.0, dy = y - (10.0 + 5.0 * k), dz = z - 20.0;
        double v = 128.0 + 20.0 * (9.0 - sqrt(dx * dx + dy * dy + dz * dz));
        out[(z * N + y) * N + x] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
      }
}

static const char *path_in(const char *name) {
  static char ring[8][512];
  static int next;
  char *p = ring[next++ % 8];
  snprintf(p, 512, "%s/%s", dir, name);
  return p;
}

static void write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  CHECK(f && fwrite(data, 1, n, f) == n);
  if (f) fclose(f);
}

/* The CPU renderer's image of one step alone, as the headless run frames it (view 0 of the
 * orbit: azimuth 0, elevation 20, distance 1, +z up). */
static void reference(const uint8_t *voxels, uint8_t *rgba) {
  ir_volume v = {.dims = {N, N, N}, .type = IR_VOXEL_UINT8, .spacing = {1, 1, 1}, .voxels = (void *)voxels,
                 .bytes = N * N * N, .full_dims = {N, N, N}};
  ir_renderer *r = NULL;
  char err[IR_ERR_LEN] = "";
  ir_renderer_desc desc = {.device = IR_DEVICE_CPU, .volume = &v};
  CHECK_MSG(ir_renderer_create(&desc, &r, err) == IR_OK, "%s", err);
  ir_frame_desc f = {.width = W, .height = H, .isovalue = 127.5f, .pipeline = IR_PIPELINE_DEFAULT};
  f.camera = ir_camera_orbit(&v, 0.0f, 20.0f, 1.0f, IR_AXIS_Z);
  CHECK(r && ir_render_frame(r, &f, NULL, err) == IR_OK && ir_render_read_image(r, rgba, err) == IR_OK);
  ir_renderer_destroy(r);
}

/* Bytes that differ (CPU), or on the GPU pixels with a channel more than 8 levels off. */
static size_t differing(const uint8_t *a, const unsigned char *png) {
  size_t n = 0;
  for (size_t p = 0; p < (size_t)W * H; p++) {
    int worst = 0;
    for (int c = 0; c < 4; c++) {
      int d = abs((int)a[4 * p + c] - (int)png[4 * p + c]);
      worst = d > worst ? d : worst;
    }
    n += g_gpu ? worst > 8 : worst > 0;
  }
  return n;
}

/* What a step's image may differ from its own reference by: nothing on the CPU, 1% of the
 * pixels on the GPU (the texture unit's filter rounds a few silhouette pixels differently). */
static size_t allowed(void) { return g_gpu ? (size_t)W * H / 100 : 0; }

static int count_step_lines(const char *output) {
  int n = 0;
  char want[16];
  for (int k = 1; k <= STEPS; k++) {
    snprintf(want, sizeof want, "%d/%-4d ", k, STEPS);
    n += strstr(output, want) != NULL;
  }
  return n;
}

static void test_every_step_is_drawn_from_its_own_volume(void) {
  static uint8_t steps[STEPS][N * N * N];
  for (int k = 0; k < STEPS; k++) {
    sphere_step(k, steps[k]);
    char name[64];
    snprintf(name, sizeof name, "ball_%04d.raw", k);
    write_file(path_in(name), steps[k], sizeof steps[k]);
  }
  run_result *r = malloc(sizeof *r);
  const char *args[] = {"--headless", "--device", g_gpu ? "gpu" : "cpu", "--size", "96x80", "--iso", "127.5", "--dims",
                        "40x40x40", "--type", "uint8", "--png", "shot_%d.png", "--csv", "steps.csv", "ball_%04d.raw", NULL};
  run_inkray(dir, args, r);
  CHECK_MSG(r->status == 0, "exit %d:\n%s", r->status, r->output);
  CHECK_MSG(count_step_lines(r->output) == STEPS, "a line per step expected:\n%s", r->output);
  CHECK_MSG(strstr(r->output, "steps/s") != NULL, "no rate:\n%s", r->output);
  static uint8_t ref[STEPS][W * H * 4];
  for (int k = 0; k < STEPS; k++) reference(steps[k], ref[k]);
  for (int k = 0; k < STEPS; k++) {
    char name[64];
    snprintf(name, sizeof name, "shot_%d.png", k);
    int w = 0, h = 0, ch = 0;
    unsigned char *png = read_png(path_in(name), &w, &h, &ch);
    CHECK_MSG(png && w == W && h == H && ch == 4, "%s missing or not %dx%d RGBA", name, W, H);
    if (!png) continue;
    CHECK_MSG(differing(ref[k], png) <= allowed(), "step %d: the image is not step %d's own (%zu pixels differ)", k, k,
              differing(ref[k], png));
    /* Not a neighbour's: the sphere moved by 5 voxels between steps. */
    if (k > 0) CHECK_MSG(differing(ref[k - 1], png) > 100, "step %d looks like step %d", k, k - 1);
    if (k + 1 < STEPS) CHECK_MSG(differing(ref[k + 1], png) > 100, "step %d looks like step %d", k, k + 1);
    stbi_image_free(png);
  }
  csv_table t;
  CHECK(csv_read(path_in("steps.csv"), &t) && !t.ragged);
  int pass = csv_column(&t, "pass");
  int rows = 0;
  char field[32];
  for (int i = 0; i < t.rows; i++) rows += csv_field(t.lines[i], pass, field, sizeof field) && strcmp(field, "step") == 0;
  CHECK_EQ_INT(rows, STEPS);
  csv_free(&t);
  free(r);
}

static void test_a_4d_nrrd_plays_every_step(void) {
  static uint8_t step[N * N * N];
  char header[256];
  snprintf(header, sizeof header, "NRRD0004\ntype: uchar\ndimension: 4\nsizes: %d %d %d 3\nencoding: raw\n\n", N, N, N);
  FILE *f = fopen(path_in("run.nrrd"), "wb");
  CHECK(f && fputs(header, f) >= 0);
  for (int k = 0; f && k < 3; k++) {
    sphere_step(k, step);
    CHECK(fwrite(step, 1, sizeof step, f) == sizeof step);
  }
  if (f) fclose(f);
  run_result *r = malloc(sizeof *r);
  const char *args[] = {"--headless", "--device", "cpu", "--size", "96x80", "--iso", "127.5", "--png", "nrrd.png",
                        "run.nrrd", NULL};
  run_inkray(dir, args, r);
  CHECK_MSG(r->status == 0 && strstr(r->output, "3/3"), "exit %d:\n%s", r->status, r->output);
  /* --png without a number: the last step. */
  static uint8_t ref[W * H * 4];
  reference(step, ref);
  int w = 0, h = 0, ch = 0;
  unsigned char *png = read_png(path_in("nrrd.png"), &w, &h, &ch);
  CHECK(png && w == W && ch == 4 && differing(ref, png) == 0);
  stbi_image_free(png);
  free(r);
}

/* Runs on `source` and expects exit 2, the parts in the output, and no step drawn (unless
 * `drawn` steps are expected before the failure). */
static void expect_refused(const char *source, const char *part1, const char *part2, int drawn) {
  run_result *r = malloc(sizeof *r);
  const char *args[] = {"--headless", "--device", "cpu", "--size", "32x32", "--iso", "127.5", "--dims", "40x40x40",
                        "--type", "uint8", source, NULL};
  run_inkray(dir, args, r);
  CHECK_MSG(r->status == 2, "%s: exit %d, expected 2:\n%s", source, r->status, r->output);
  CHECK_MSG(strstr(r->output, part1) && (!part2 || strstr(r->output, part2)), "%s: expected '%s' / '%s' in:\n%s", source,
            part1, part2 ? part2 : "", r->output);
  CHECK_MSG(count_step_lines(r->output) == drawn, "%s: %d step lines expected:\n%s", source, drawn, r->output);
  free(r);
}

static void test_bad_series_exit_2_naming_the_step(void) {
  static uint8_t step[N * N * N];
  sphere_step(0, step);
  expect_refused("none_%03d.raw", "matches no file", NULL, 0);
  for (int k = 0; k < STEPS; k++)
    if (k != 2) {
      char name[64];
      snprintf(name, sizeof name, "gap_%d.raw", k);
      write_file(path_in(name), step, sizeof step);
    }
  expect_refused("gap_%d.raw", "step 3 of 5 is missing", "gap_2.raw", 0);
  mkdir(path_in("sizes"), 0755);
  write_file(path_in("sizes/a_0_40x40x40_uint8.raw"), step, sizeof step);
  write_file(path_in("sizes/a_1_40x40x39_uint8.raw"), step, N * N * 39);
  /* The folder's raw files name their own dims: no --dims for them. */
  run_result *r = malloc(sizeof *r);
  const char *args[] = {"--headless", "--device", "cpu", "--size", "32x32", "sizes", NULL};
  run_inkray(dir, args, r);
  CHECK_MSG(r->status == 2 && strstr(r->output, "step 2 of 2") && strstr(r->output, "same dims and type"), "exit %d:\n%s",
            r->status, r->output);
  write_file(path_in("sizes/a_1_40x40x39_uint8.raw"), step, 10);
  mkdir(path_in("short"), 0755);
  for (int k = 0; k < 3; k++) {
    char name[64];
    snprintf(name, sizeof name, "short/s_%d_40x40x40_uint8.raw", k);
    write_file(path_in(name), step, k == 1 ? 1000 : sizeof step);
  }
  const char *short_args[] = {"--headless", "--device", "cpu", "--size", "32x32", "short", NULL};
  run_inkray(dir, short_args, r);
  CHECK_MSG(r->status == 2 && strstr(r->output, "step 2 of 3") && strstr(r->output, "1000 bytes"), "exit %d:\n%s",
            r->status, r->output);
  CHECK(count_step_lines(r->output) == 0);
  /* A corrupt gzip step in the middle: found when it is read. */
  mkdir(path_in("corrupt"), 0755);
  for (int k = 0; k < 3; k++) {
    uLongf zn = compressBound(sizeof step) + 64;
    unsigned char *z = malloc(zn);
    z_stream s;
    memset(&s, 0, sizeof s);
    deflateInit2(&s, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY);
    s.next_in = step;
    s.avail_in = sizeof step;
    s.next_out = z;
    s.avail_out = (uInt)zn;
    deflate(&s, Z_FINISH);
    zn = s.total_out;
    deflateEnd(&s);
    if (k == 1) z[zn / 2] ^= 0x55;
    char name[64];
    snprintf(name, sizeof name, "corrupt/c_%d_40x40x40_uint8.raw.gz", k);
    write_file(path_in(name), z, zn);
    free(z);
  }
  const char *corrupt_args[] = {"--headless", "--device", "cpu", "--size", "32x32", "--iso", "127.5", "corrupt", NULL};
  run_inkray(dir, corrupt_args, r);
  CHECK_MSG(r->status == 2 && strstr(r->output, "step 2 of 3") && strstr(r->output, "c_1_"), "exit %d:\n%s", r->status,
            r->output);
  free(r);
}

/* GPU: one raw volume, streamed to the GPU while it is read (the renderer started beside the
 * read), draws what the CPU reference draws (--verify). */
static void test_a_raw_volume_streams_to_the_gpu(void) {
  static uint8_t step[N * N * N];
  sphere_step(2, step);
  write_file(path_in("alone_40x40x40_uint8.raw"), step, sizeof step);
  run_result *r = malloc(sizeof *r);
  const char *args[] = {"--headless", "--device", "gpu", "--verify", "--size", "96x80", "--iso", "127.5",
                        "--frames", "2", "alone_40x40x40_uint8.raw", NULL};
  run_inkray(dir, args, r);
  CHECK_MSG(r->status == 0, "exit %d:\n%s", r->status, r->output);
  CHECK_MSG(strstr(r->output, "streamed to the GPU while read") != NULL, "not streamed:\n%s", r->output);
  CHECK_MSG(strstr(r->output, ": ok") != NULL, "no verify line:\n%s", r->output);
  free(r);
}

int main(int argc, char **argv) {
  g_gpu = argc > 1 && strcmp(argv[1], "--gpu") == 0;
  int devices = 0;
  if (g_gpu && (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)) check_skip_all("no CUDA device");
  make_scratch(dir);
  RUN(test_every_step_is_drawn_from_its_own_volume);
  if (g_gpu) {
    RUN(test_a_raw_volume_streams_to_the_gpu);
    remove_scratch(dir);
    return check_summary();
  }
  RUN(test_a_4d_nrrd_plays_every_step);
  RUN(test_bad_series_exit_2_naming_the_step);
  remove_scratch(dir);
  return check_summary();
}
