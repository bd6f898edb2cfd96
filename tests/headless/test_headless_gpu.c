/* inkray --headless on the GPU through the built binary: every method in every pipeline renders,
 * writes a PNG of the asked size and a CSV with a row per frame, all configurations of one
 * isovalue give the same image, the per-stage pass fills stage times (compaction inside them), and --verify finds the
 * GPU image in agreement with the CPU reference renderer. Skipped where there is no CUDA device. */
#include <cuda_runtime_api.h>

#include "compaction/compaction.h"
#include "tests/check.h"
#include "tests/headless/run_inkray.h"

static run_result result;

static void run_and_check(const char *volume, const char *size, int w, int h) {
  char dir[64], csv[128], png[128];
  make_scratch(dir);
  snprintf(csv, sizeof csv, "%s/frames.csv", dir);
  snprintf(png, sizeof png, "%s/last.png", dir);
  const char *args[] = {"--headless", "--device", "gpu", "--method", "all", "--pipeline", "all", "--frames", "6",
                        "--warmup", "2", "--orbit", "3", "--size", size, "--iso", "suggested:2", "--csv", csv,
                        "--png", png, "--verify", "--quiet", volume, NULL};
  run_inkray(dir, args, &result);
  CHECK_MSG(result.status == 0, "%s: exit %d: %s", volume, result.status, result.output);
  CHECK_STR_CONTAINS(result.output, "inkray headless: GPU ");
  CHECK_STR_CONTAINS(result.output, "check: every configuration of each isovalue rendered the same last frame");
  CHECK_STR_CONTAINS(result.output, ": ok");

  int iw = 0, ih = 0, channels = 0;
  unsigned char *pixels = read_png(png, &iw, &ih, &channels);
  CHECK_MSG(pixels != NULL, "cannot read %s", png);
  if (pixels) {
    CHECK_EQ_INT(iw, w);
    CHECK_EQ_INT(ih, h);
    CHECK_EQ_INT(channels, 4);
    stbi_image_free(pixels);
  }

  csv_table t;
  CHECK(csv_read(csv, &t));
  CHECK(!t.ragged);
  int configs_per_iso = 3 * IR_COMPACT_METHOD_COUNT + 1; /* persistent, multi, paper with each method; single */
  int timed = csv_count(&t, "pass", "timed"), stages = csv_count(&t, "pass", "stages");
  CHECK_MSG(timed > 0 && timed % (6 * configs_per_iso) == 0, "%d timed rows", timed);
  CHECK_MSG(stages * 6 == timed * 3, "%d per-stage rows for %d timed rows", stages, timed);
  CHECK_EQ_INT(csv_count(&t, "device", "gpu"), t.rows);

  /* The diagnostic pass times the stages; out-of-kernel compaction time lies inside them. */
  int pass = csv_column(&t, "pass"), compact = csv_column(&t, "compact_ms");
  const char *stage_names[] = {"bvh_update_ms", "raygen_ms", "traverse_ms", "intersect_ms", "shade_ms"};
  for (int r = 0; r < t.rows; r++) {
    char field[64];
    csv_field(t.lines[r], pass, field, sizeof field);
    if (strcmp(field, "stages") != 0) continue;
    double sum = 0;
    for (int s = 0; s < 5; s++) {
      csv_field(t.lines[r], csv_column(&t, stage_names[s]), field, sizeof field);
      CHECK_MSG(atof(field) >= 0.0, "row %d: %s is negative", r, stage_names[s]);
      sum += atof(field);
    }
    csv_field(t.lines[r], compact, field, sizeof field);
    CHECK_MSG(sum > 0.0, "row %d: per-stage pass with no stage times", r);
    CHECK_MSG(atof(field) <= sum + 0.01, "row %d: %s ms compacting within %.3f ms of stages", r, field, sum);
  }
  csv_free(&t);
  remove_scratch(dir);
}

static void test_builtin_volume_every_method_every_pipeline(void) { run_and_check("builtin:sphere:64", "160x120", 160, 120); }

static void test_real_volume_every_method_every_pipeline(void) {
  const char *data = getenv("INKRAY_TEST_DATA");
  char path[512];
  snprintf(path, sizeof path, "%s/neghip_66x66x66_uint8.raw", data ? data : "tests/data/real");
  if (!file_exists(path)) {
    CHECK_MSG(0, "%s not found (INKRAY_TEST_DATA is tests/data/real)", path);
    return;
  }
  run_and_check(path, "128x128", 128, 128);
}

/* The tail kernel changes when rays finish, not what they see: every configuration still gives
 * the same image, and the CPU reference agrees. */
static void test_tail_kernel_same_image(void) {
  char dir[64];
  make_scratch(dir);
  const char *args[] = {"--headless", "--device", "gpu", "--method", "all", "--pipeline", "all", "--frames", "3",
                        "--warmup", "1", "--orbit", "2", "--size", "200x150", "--tail-rays", "2000", "--verify",
                        "--quiet", "builtin:fractal:64", NULL};
  run_inkray(dir, args, &result);
  CHECK_MSG(result.status == 0, "exit %d: %s", result.status, result.output);
  CHECK_STR_CONTAINS(result.output, "multi 2000 rays, paper 2000 rays");
  CHECK_STR_CONTAINS(result.output, "check: every configuration of each isovalue rendered the same last frame");
  CHECK_STR_CONTAINS(result.output, ": ok");
  remove_scratch(dir);
}

/* The look options on the GPU: a translucent surface over an opaque one, a clip box and plane,
 * colours from a second volume (uploaded by the CLI) and the depth image; every configuration
 * draws the same image and the CPU reference agrees. */
static void test_look_options_every_pipeline_and_the_cpu_agree(void) {
  char dir[64], ramp[128], depth[128];
  make_scratch(dir);
  snprintf(ramp, sizeof ramp, "%s/z_64x64x64_float32.raw", dir);
  snprintf(depth, sizeof depth, "%s/depth.pfm", dir);
  FILE *f = fopen(ramp, "wb");
  CHECK(f != NULL);
  for (int i = 0; f && i < 64 * 64 * 64; i++) {
    float v = (float)(i / (64 * 64));
    CHECK(fwrite(&v, sizeof v, 1, f) == 1);
  }
  if (f) fclose(f);
  const char *args[] = {"--headless", "--device", "gpu", "--method", "all", "--pipeline", "all", "--frames", "3",
                        "--warmup", "1", "--orbit", "2", "--size", "160x120", "--surface", "0:#4080ff:0.4",
                        "--surface", "8", "--clip-box", "0,1,0,0.8,0,1", "--clip-plane", "0.2,1,0,-10",
                        "--color-by", ramp, "--colormap", "inferno", "--depth", depth, "--verify", "--quiet",
                        "builtin:sphere:64", NULL};
  run_inkray(dir, args, &result);
  CHECK_MSG(result.status == 0, "exit %d: %s", result.status, result.output);
  CHECK_STR_CONTAINS(result.output, "coloured by volume z_64x64x64_float32.raw, inferno over 0..63 (automatic)");
  CHECK_STR_CONTAINS(result.output, "check: every configuration of each isovalue rendered the same last frame");
  CHECK_STR_CONTAINS(result.output, ": ok");
  struct stat st;
  CHECK_MSG(stat(depth, &st) == 0 && st.st_size == (off_t)(strlen("Pf\n160 120\n-1.0\n") + 160 * 120 * 4),
            "%s missing or of the wrong size", depth);
  remove_scratch(dir);
}

/* Ambient occlusion, shadows and a light, accumulated over frames: every pipeline that draws them
 * and every method give the same picture, and the CPU reference's mean of the same frames agrees. */
static void test_ao_and_shadows_every_pipeline_and_the_cpu_agree(void) {
  char dir[64];
  make_scratch(dir);
  const char *args[] = {"--headless", "--device", "gpu", "--method", "all", "--pipeline", "single,persistent,multi",
                        "--frames", "3", "--warmup", "1", "--orbit", "2", "--size", "160x120", "--ao", "8:12",
                        "--shadows", "--light", "30,45", "--accumulate", "3", "--surface", "100:#4080ff:0.4",
                        "--surface", "160", "--verify", "--quiet", "builtin:fractal:64", NULL};
  run_inkray(dir, args, &result);
  CHECK_MSG(result.status == 0, "exit %d: %s", result.status, result.output);
  CHECK_STR_CONTAINS(result.output, "ambient occlusion 8 rays of 12 voxels");
  CHECK_STR_CONTAINS(result.output, "check: every configuration of each isovalue rendered the same last frame");
  CHECK_STR_CONTAINS(result.output, ": ok");
  /* The persistent pipeline's secondary rays spread over its blocks, and as a compacted pool. */
  for (int k = 0; k < 2; k++) {
    const char *modes[] = {"spread", "pool"};
    const char *again[] = {"--headless", "--device", "gpu", "--method", "all", "--pipeline", "persistent",
                           "--secondary", modes[k], "--frames", "2", "--warmup", "1", "--orbit", "2", "--size",
                           "160x120", "--ao", "8:12", "--shadows", "--light", "30,45", "--surface", "100:#4080ff:0.4",
                           "--surface", "160", "--verify", "--quiet", "builtin:fractal:64", NULL};
    run_inkray(dir, again, &result);
    CHECK_MSG(result.status == 0, "--secondary %s: exit %d: %s", modes[k], result.status, result.output);
    CHECK_STR_CONTAINS(result.output, "check: every configuration of each isovalue rendered the same last frame");
    CHECK_STR_CONTAINS(result.output, ": ok");
  }
  remove_scratch(dir);
}

int main(void) {
  int devices = 0;
  cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) check_skip_all("no CUDA device: the GPU headless tests need one");
  RUN(test_builtin_volume_every_method_every_pipeline);
  RUN(test_real_volume_every_method_every_pipeline);
  RUN(test_tail_kernel_same_image);
  RUN(test_look_options_every_pipeline_and_the_cpu_agree);
  RUN(test_ao_and_shadows_every_pipeline_and_the_cpu_agree);
  return check_summary();
}
