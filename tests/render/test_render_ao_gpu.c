/* Ambient occlusion, shadows and the light on the GPU (render/secondary.cuh): every pipeline that
 * draws them (single; persistent and multi with every method, the multi pipeline in its graph and
 * host-driven, with and without its tail kernel; persistent with steps of 1 and the default, and
 * so the multi pipeline's secondary rays) draws the same lit frame bit for bit, within the
 * tolerance below of the CPU reference, also where the multi pipeline runs its hits' secondary
 * rays in several chunks (counted: every ray of every hit);
 * accumulated frames are the mean of the frames, also with the diagnostic pass; the paper's
 * pipeline refuses them.
 *
 *   test_render_ao_gpu            the full run (exit 77 without a CUDA device)
 *   test_render_ao_gpu --small    small frames, for compute-sanitizer
 *   test_render_ao_gpu --small host   the same without CUDA graphs (racecheck cannot run them)
 *   test_render_ao_gpu --probe    exit 0 with a device, 77 without */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "tests/check.h"
#include "tests/render/render_test_util.h"

/* Against the CPU: coverage as for every frame (at most 0.5 % of the pixels); of the channels, at
 * most 5 % off by more than 8 levels (a secondary ray grazing a surface may find its crossing on
 * one side and not the other, which moves its pixel by 1/N of the occlusion or a whole shadow). */
#define MAX_COVER_MISMATCH 0.005
#define MAX_FAR_FRACTION 0.05

static bool g_small, g_host_only;
static int g_w, g_h;

typedef struct scene_look {
  const char *name;
  ir_frame_desc f;
} scene_look;

static bool draw(ir_renderer *r, const ir_frame_desc *f, uint8_t *rgba, float *depth, const char *what) {
  char err[IR_ERR_LEN] = "";
  ir_status st = ir_render_frame(r, f, NULL, err);
  if (st == IR_OK) st = ir_render_read_image(r, rgba, err);
  if (st == IR_OK && depth) st = ir_render_read_depth(r, depth, err);
  if (st != IR_OK) fprintf(stderr, "%s: %s\n", what, err);
  return st == IR_OK;
}

static void check_every_variant(ir_renderer *gpu, ir_renderer *cpu, const scene_look *s) {
  size_t n = (size_t)g_w * (size_t)g_h;
  uint8_t *first = malloc(n * 4), *cur = malloc(n * 4), *ref = malloc(n * 4);
  float *first_depth = malloc(n * sizeof(float)), *cur_depth = malloc(n * sizeof(float));
  bool have = false;
  int variants = 0;
  const ir_pipeline pipes[] = {IR_PIPELINE_SINGLE, IR_PIPELINE_PERSISTENT, IR_PIPELINE_MULTI};
  for (int pi = 0; pi < 3; pi++)
    for (int m = 0; m < IR_COMPACT_METHOD_COUNT; m++)
      for (int v = 0; v < 4; v++) {
        if (pipes[pi] == IR_PIPELINE_SINGLE && (m > 0 || v > 0)) continue;
        ir_frame_desc f = s->f;
        f.pipeline = pipes[pi];
        f.method = (ir_compact_method)m;
        if (pipes[pi] == IR_PIPELINE_PERSISTENT) {
          /* inline; steps of 1 batch (secondary rays too, in the pool); spread; pool */
          f.step_batches = v == 1 ? 1 : 0;
          f.secondary = v == 0 ? IR_SECONDARY_INLINE : v == 2 ? IR_SECONDARY_SPREAD : IR_SECONDARY_POOL;
        } else if (pipes[pi] == IR_PIPELINE_MULTI) {
          /* graph; host loop; no tail kernel; secondary rays stepped one batch at a time */
          f.host_loop = g_host_only || v == 1;
          f.tail_rays = v == 2 ? IR_TAIL_OFF : 0;
          f.step_batches = v == 3 ? 1 : 0;
        }
        char what[160];
        snprintf(what, sizeof what, "%s: %s/%s variant %d", s->name, ir_pipeline_name(f.pipeline),
                 ir_compact_method_get(f.method)->name, v);
        if (!draw(gpu, &f, cur, cur_depth, what)) {
          CHECK_MSG(0, "%s failed", what);
          continue;
        }
        variants++;
        if (!have) {
          memcpy(first, cur, n * 4);
          memcpy(first_depth, cur_depth, n * sizeof(float));
          have = true;
          continue;
        }
        CHECK_MSG(memcmp(first, cur, n * 4) == 0 && memcmp(first_depth, cur_depth, n * sizeof(float)) == 0,
                  "%s differs from the single kernel", what);
      }
  ir_frame_desc f = s->f;
  f.pipeline = IR_PIPELINE_SINGLE;
  if (have && draw(cpu, &f, ref, NULL, "CPU")) {
    util_image_diff d = util_image_diff_of(first, ref, n, 4, 8);
    double mean = 0;
    for (size_t i = 0; i < n * 4; i++) mean += abs((int)first[i] - (int)ref[i]);
    printf("%s: %d variants equal; against the CPU: coverage differs on %zu of %zu pixels, %zu of %zu common hits "
           "within 4 levels (%zu identical), %zu channels off by more than 8, mean difference %.3f levels\n",
           s->name, variants, d.cover_diff, n, d.close, d.both, d.exact, d.far, mean / (double)(n * 4));
    CHECK_MSG((double)d.cover_diff <= MAX_COVER_MISMATCH * (double)n + 2.0, "%s: coverage differs on %zu pixels",
              s->name, d.cover_diff);
    CHECK_MSG((double)d.far <= MAX_FAR_FRACTION * 4.0 * (double)n + 8.0, "%s: %zu channels off by more than 8",
              s->name, d.far);
    CHECK_MSG(d.both > n / 10, "%s: %zu pixels hit", s->name, d.both);
  }
  free(first);
  free(cur);
  free(ref);
  free(first_depth);
  free(cur_depth);
}

/* The multi pipeline's secondary phase traces every ray of every hit that ends a ray (an opaque
 * look: every hit), in at least `min_chunks` chunks of hits. */
static void check_secondary_counts(ir_renderer *gpu, const scene_look *s, int min_chunks) {
  for (int host = 0; host < 2; host++) {
    ir_frame_desc f = s->f;
    f.pipeline = IR_PIPELINE_MULTI;
    f.host_loop = g_host_only || host;
    ir_frame_stats st;
    char err[IR_ERR_LEN] = "";
    CHECK_MSG(ir_render_frame(gpu, &f, &st, err) == IR_OK, "%s: %s", s->name, err);
    uint32_t per_hit = (uint32_t)f.ao_samples + (f.shadows ? 1u : 0u);
    printf("%s, multi%s: %u hits, %u secondary rays in %d chunks\n", s->name, f.host_loop ? " (host loop)" : "",
           st.rays_hit, st.secondary_rays, st.secondary_chunks);
    CHECK_MSG(st.rays_hit > 0 && st.secondary_rays == st.rays_hit * per_hit, "%s: %u secondary rays for %u hits",
              s->name, st.secondary_rays, st.rays_hit);
    CHECK_MSG(st.secondary_chunks >= min_chunks, "%s: %d chunks", s->name, st.secondary_chunks);
  }
}

/* K frames accumulated: the mean of the same K frames drawn alone, on every pipeline that draws
 * them, with and without the diagnostic pass (which draws the frame again). */
static void check_accumulation(ir_renderer *gpu, const scene_look *s) {
  enum { K = 3 };
  size_t n = (size_t)g_w * (size_t)g_h;
  uint8_t *frames = malloc(K * n * 4), *mean = malloc(n * 4);
  const ir_pipeline pipes[] = {IR_PIPELINE_SINGLE, IR_PIPELINE_PERSISTENT, IR_PIPELINE_MULTI};
  for (int pi = 0; pi < 3; pi++)
    for (int timing = 0; timing < 2; timing++) {
      ir_frame_desc f = s->f;
      f.pipeline = pipes[pi];
      f.host_loop = g_host_only;
      bool ok = true;
      for (int k = 0; k < K && ok; k++) {
        f.sample_frame = (uint32_t)k;
        ok = draw(gpu, &f, frames + (size_t)k * n * 4, NULL, "alone");
      }
      f.accumulate = true;
      f.stage_timing = timing == 1;
      for (int k = 0; k < K && ok; k++) {
        f.sample_frame = (uint32_t)k;
        ok = draw(gpu, &f, mean, NULL, "accumulated");
      }
      CHECK(ok);
      size_t wrong = 0;
      for (size_t i = 0; ok && i < n * 4; i++) {
        float sum = 0;
        for (int k = 0; k < K; k++) sum += frames[(size_t)k * n * 4 + i];
        wrong += mean[i] != (uint8_t)(sum / (float)K + 0.5f);
      }
      CHECK_MSG(wrong == 0, "%s, %s%s: %zu channels are not the mean of the frames", s->name,
                ir_pipeline_name(pipes[pi]), timing ? " with stage timing" : "", wrong);
    }
  free(frames);
  free(mean);
}

static void test_lit_frames(void) {
  ir_volume v;
  if (!util_load(g_small ? "builtin:fractal:40" : "builtin:fractal:96", &v)) {
    CHECK(0);
    return;
  }
  char err[IR_ERR_LEN] = "";
  ir_renderer *gpu = NULL, *cpu = NULL;
  ir_renderer_desc gd = {.device = IR_DEVICE_GPU, .volume = &v}, cd = {.device = IR_DEVICE_CPU, .volume = &v};
  if (ir_renderer_create(&gd, &gpu, err) != IR_OK || ir_renderer_create(&cd, &cpu, err) != IR_OK) {
    CHECK_MSG(0, "renderers: %s", err);
    ir_renderer_destroy(gpu);
    ir_volume_free(&v);
    return;
  }
  scene_look looks[6];
  memset(looks, 0, sizeof looks);
  ir_camera cam = ir_camera_orbit(&v, 30.0f, 25.0f, 0.9f, IR_AXIS_NONE);
  looks[0].name = "AO 8 + shadows + light 30,45";
  looks[0].f = (ir_frame_desc){.width = g_w, .height = g_h, .isovalue = 127.5f, .camera = cam, .ao_samples = 8,
                               .shadows = true, .light_on = true, .light = {30.0f, 45.0f}};
  looks[1].name = "two surfaces, AO 4 of 12 voxels, headlight shadows, clip box and plane";
  looks[1].f = looks[0].f;
  looks[1].f.ao_samples = 4;
  looks[1].f.ao_radius = 12.0f;
  looks[1].f.light_on = false;
  looks[1].f.surface_count = 2;
  looks[1].f.surfaces[0] = (ir_surface){.isovalue = 100.0f, .color = {0.3f, 0.6f, 1.0f}, .opacity = 0.35f};
  looks[1].f.surfaces[1] = (ir_surface){.isovalue = 160.0f, .color = {1.0f, 0.9f, 0.7f}, .opacity = 1.0f};
  for (int k = 0; k < 3; k++) {
    looks[1].f.clip_lo[k] = 0.1f * (float)v.dims[k];
    looks[1].f.clip_hi[k] = 0.9f * (float)v.dims[k];
  }
  looks[1].f.clip_plane_on = true;
  looks[1].f.clip_plane[0] = 1.0f;
  looks[1].f.clip_plane[1] = 0.5f;
  looks[1].f.clip_plane[3] = -0.3f * (float)v.dims[0];
  looks[2].name = "AO 16, texture refinement, gradient colours, light -60,10";
  looks[2].f = looks[0].f;
  looks[2].f.ao_samples = 16;
  looks[2].f.shadows = false;
  looks[2].f.light[0] = -60.0f;
  looks[2].f.light[1] = 10.0f;
  looks[2].f.texture_refine = true;
  looks[2].f.color_by = IR_COLOR_GRADIENT;
  looks[2].f.color_range[1] = 60.0f;
  looks[3].name = "inside the volume, shadows only, light 0,-80";
  looks[3].f = looks[0].f;
  looks[3].f.camera = ir_camera_orbit(&v, 200.0f, -10.0f, 0.3f, IR_AXIS_NONE);
  looks[3].f.ao_samples = 0;
  looks[3].f.light[0] = 0.0f;
  looks[3].f.light[1] = -80.0f;
  looks[4].name = "AO 40 + shadows: the multi pipeline's secondary rays in several chunks of hits";
  looks[4].f = looks[0].f;
  looks[4].f.ao_samples = 40;
  looks[5].name = "a light without occlusion or shadow rays: the multi pipeline combines hits with no rays";
  looks[5].f = looks[0].f;
  looks[5].f.ao_samples = 0;
  looks[5].f.shadows = false;
  for (int k = 0; k < 6; k++) check_every_variant(gpu, cpu, &looks[k]);
  check_secondary_counts(gpu, &looks[0], 1);
  check_secondary_counts(gpu, &looks[4], 2);
  check_secondary_counts(gpu, &looks[5], 1);
  check_accumulation(gpu, &looks[1]);

  ir_frame_desc paper = looks[0].f;
  paper.pipeline = IR_PIPELINE_PAPER;
  CHECK(ir_render_frame(gpu, &paper, NULL, err) == IR_ERR_INPUT && strstr(err, "paper"));
  ir_renderer_destroy(gpu);
  ir_renderer_destroy(cpu);
  ir_volume_free(&v);
}

int main(int argc, char **argv) {
  int devices = 0;
  bool have_device = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
  if (argc > 1 && strcmp(argv[1], "--probe") == 0) return have_device ? 0 : 77;
  if (!have_device) {
    printf("skipped: no CUDA device\n");
    return 77;
  }
  g_small = argc > 1 && strcmp(argv[1], "--small") == 0;
  g_host_only = argc > 2 && strcmp(argv[2], "host") == 0;
  g_w = g_small ? 40 : 256;
  g_h = g_small ? 33 : 192;
  RUN(test_lit_frames);
  return check_summary();
}
