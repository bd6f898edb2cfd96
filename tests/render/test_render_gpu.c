/* GPU renderer: every compaction method and every pipeline (multi, paper, single) give the same
 * image, bit for bit; the plain baseline caster agrees in coverage;
 * the GPU agrees with the CPU reference within the stated tolerance; the CPU tests' scenes.
 *
 *   test_render_gpu           the suite (exit 77 without a CUDA device)
 *   test_render_gpu --small [FILTER]  one small frame per method and pipeline (those whose name
 *                             contains FILTER; "host": the host-driven ones and the single
 *                             kernel, no CUDA graph), for compute-sanitizer
 *   test_render_gpu --probe   exit 0 with a device, 77 without (the sanitizer tests ask first)
 *
 * GPU vs CPU tolerance (docs/render.md, "Tolerance"): the per-ray arithmetic is the same IEEE
 * float operations on both sides (no FMA contraction), but the GPU's trilinear samples come
 * from the texture unit, whose 8-bit weights the CPU emulates while its internal rounding is
 * unspecified. A sample within that rounding of the isovalue can put a crossing one step
 * earlier or later (a shading difference of a few levels) or, at a grazing silhouette, decide
 * hit or miss. So: at most 0.5% of the pixels may differ in coverage, and of the pixels hit on
 * both, at least 99% must be within 4/255 on every channel.
 */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "render/render.h"
#include "tests/check.h"
#include "tests/render/render_test_util.h"

#define MAX_COVER_MISMATCH 0.005
#define MIN_CLOSE_FRACTION 0.99
#define CLOSE_LEVELS 4

typedef struct variant {
  char name[48];
  ir_pipeline pipeline;
  ir_compact_method method;
  bool host_loop;
  uint32_t tail_rays;
  uint32_t run_bricks;
  int group; /* variants of one group run the same rounds: their per-round ray counts must match */
  uint32_t step_batches; /* persistent pipeline: its step (0: the default) */
} variant;

/* Both multi-kernel pipelines with every method in its natural (graph where possible) form and
 * host-driven, without the tail kernel (one group per pipeline) and with it, the multi pipeline
 * with runs cut at two bricks, the single kernel, and the persistent kernel with every method
 * (and steps of one batch and of many). The first is the reference. */
static variant variants[5 * IR_COMPACT_METHOD_COUNT + 8];
static int variant_count;

static void add_variant(const char *label, ir_pipeline p, ir_compact_method m, bool host, uint32_t tail, uint32_t run,
                        int group) {
  variant *v = &variants[variant_count++];
  *v = (variant){"", p, m, host, tail, run, group, 0};
  snprintf(v->name, sizeof v->name, "%s/%s%s%s", ir_pipeline_name(p), label, host ? "/host" : "",
           tail == IR_TAIL_OFF || tail == 0 ? "" : "/tail");
}

static void make_variants(void) {
  const ir_compact_method_info *m = ir_compact_methods();
  for (int host = 0; host < 2; host++)
    for (int i = 0; i < IR_COMPACT_METHOD_COUNT; i++) {
      add_variant(m[i].name, IR_PIPELINE_MULTI, m[i].method, host == 1, IR_TAIL_OFF, 0, 1);
      add_variant(m[i].name, IR_PIPELINE_PAPER, m[i].method, host == 1, 0, 0, 2);
    }
  add_variant("ink-compact", IR_PIPELINE_MULTI, IR_COMPACT_INK_COMPACT, false, 0, 0, 0); /* automatic tail */
  add_variant("ink-collate", IR_PIPELINE_MULTI, IR_COMPACT_INK_COLLATE, false, 3000, 0, 0);
  add_variant("redzone", IR_PIPELINE_MULTI, IR_COMPACT_REDZONE, true, 3000, 2, 0);
  add_variant("jumping-jack/run2", IR_PIPELINE_MULTI, IR_COMPACT_JUMPING_JACK, false, IR_TAIL_OFF, 2, 3);
  add_variant("ink-compact", IR_PIPELINE_PAPER, IR_COMPACT_INK_COMPACT, false, 3000, 0, 0);
  add_variant("kernel", IR_PIPELINE_SINGLE, IR_COMPACT_INK_COMPACT, false, 0, 0, 0);
  for (int i = 0; i < IR_COMPACT_METHOD_COUNT; i++)
    add_variant(m[i].name, IR_PIPELINE_PERSISTENT, m[i].method, false, 0, 0, 0);
  add_variant("ink-compact/step1", IR_PIPELINE_PERSISTENT, IR_COMPACT_INK_COMPACT, false, 0, 0, 0);
  variants[variant_count - 1].step_batches = 1;
  add_variant("redzone/step64", IR_PIPELINE_PERSISTENT, IR_COMPACT_REDZONE, false, 0, 0, 0);
  variants[variant_count - 1].step_batches = 64;
}

static bool is_multi_kernel(ir_pipeline p) { return p == IR_PIPELINE_MULTI || p == IR_PIPELINE_PAPER; }

static uint8_t *render(ir_device device, const ir_volume *v, ir_frame_desc f, const variant *var, ir_frame_stats *s) {
  char err[IR_ERR_LEN] = "";
  ir_renderer *r = NULL;
  ir_renderer_desc desc = {.device = device, .volume = v};
  if (ir_renderer_create(&desc, &r, err) != IR_OK) {
    fprintf(stderr, "create (%s): %s\n", ir_device_name(device), err);
    return NULL;
  }
  if (var) {
    f.pipeline = var->pipeline;
    f.method = var->method;
    f.host_loop = var->host_loop;
    f.tail_rays = var->tail_rays;
    f.run_bricks = var->run_bricks;
    f.step_batches = var->step_batches;
  }
  uint8_t *img = malloc((size_t)f.width * f.height * 4);
  ir_status st = ir_render_frame(r, &f, s, err);
  if (st == IR_OK) st = ir_render_read_image(r, img, err);
  if (st != IR_OK) {
    fprintf(stderr, "render (%s %s): %s\n", ir_device_name(device), var ? var->name : "", err);
    free(img);
    img = NULL;
  }
  ir_renderer_destroy(r);
  return img;
}

/* GPU vs CPU within the tolerance above; prints the measured agreement. */
static void check_close_to_cpu(const char *what, const uint8_t *gpu, const uint8_t *cpu, int w, int h) {
  size_t n = (size_t)w * h;
  util_image_diff d = util_image_diff_of(gpu, cpu, n, CLOSE_LEVELS, 255);
  double cover_frac = (double)d.cover_diff / (double)n;
  double close_frac = d.both ? (double)d.close / (double)d.both : 1.0;
  printf("  %s: coverage differs on %zu of %zu pixels (%.4f%%); of %zu hit on both, %.4f%% identical, "
         "%.4f%% within %d, worst %d\n",
         what, d.cover_diff, n, 100.0 * cover_frac, d.both, d.both ? 100.0 * d.exact / d.both : 100.0,
         100.0 * close_frac, CLOSE_LEVELS, d.worst);
  CHECK_MSG(cover_frac <= MAX_COVER_MISMATCH, "%s: coverage mismatch %.4f%%", what, 100.0 * cover_frac);
  CHECK_MSG(close_frac >= MIN_CLOSE_FRACTION, "%s: only %.4f%% of common hits within %d levels", what,
            100.0 * close_frac, CLOSE_LEVELS);
}

/* Renders one scene with every variant; all must equal the first bit for bit (and report the
 * same ray counts), and the first must be close to the CPU. Returns the CPU image. */
static uint8_t *check_scene(const char *what, const ir_volume *v, ir_frame_desc f) {
  size_t bytes = (size_t)f.width * f.height * 4;
  ir_frame_stats ref_stats, s, group_stats[8];
  bool group_seen[8] = {false};
  uint8_t *ref = render(IR_DEVICE_GPU, v, f, &variants[0], &ref_stats);
  CHECK_MSG(ref != NULL, "%s: %s", what, variants[0].name);
  if (!ref) return NULL;
  group_stats[variants[0].group] = ref_stats;
  group_seen[variants[0].group] = true;
  for (int i = 1; i < variant_count; i++) {
    uint8_t *img = render(IR_DEVICE_GPU, v, f, &variants[i], &s);
    CHECK_MSG(img != NULL, "%s: %s", what, variants[i].name);
    if (!img) continue;
    size_t differ = 0;
    for (size_t b = 0; b < bytes; b += 4) differ += memcmp(img + b, ref + b, 4) != 0;
    CHECK_MSG(differ == 0, "%s: %s%s differs from %s on %zu pixels", what, variants[i].name,
              variants[i].host_loop ? " (host loop)" : "", variants[0].name, differ);
    if (variants[i].pipeline == IR_PIPELINE_PERSISTENT) /* every ray in the pool until it hits or leaves */
      CHECK_MSG(s.rays_generated == ref_stats.rays_generated && s.rays_hit == ref_stats.rays_hit,
                "%s: %s: %u generated, %u hit; %s: %u, %u", what, variants[i].name, s.rays_generated, s.rays_hit,
                variants[0].name, ref_stats.rays_generated, ref_stats.rays_hit);
    if (is_multi_kernel(variants[i].pipeline)) {
      CHECK_MSG(s.rays_generated == ref_stats.rays_generated && s.rays_hit == ref_stats.rays_hit,
                "%s: %s: %u generated, %u hit; %s: %u, %u", what, variants[i].name, s.rays_generated, s.rays_hit,
                variants[0].name, ref_stats.rays_generated, ref_stats.rays_hit);
      int g = variants[i].group;
      if (g > 0 && group_seen[g]) {
        const ir_frame_stats *gs = &group_stats[g];
        CHECK_MSG(s.iterations == gs->iterations, "%s: %s: %d rounds, its group's first %d", what, variants[i].name,
                  s.iterations, gs->iterations);
        CHECK(memcmp(s.traverse_rays, gs->traverse_rays, sizeof s.traverse_rays) == 0);
        CHECK(memcmp(s.intersect_rays, gs->intersect_rays, sizeof s.intersect_rays) == 0);
      } else if (g > 0) {
        group_stats[g] = s;
        group_seen[g] = true;
      }
    }
    free(img);
  }
  /* The plain baseline caster steps from each brick's entry, not on the ray's sample grid: its
   * crossings move by up to a step, so only the coverage is held to the CPU tolerance. */
  variant plain = {"plain", IR_PIPELINE_PLAIN, IR_COMPACT_INK_COMPACT, false, 0, 0, 0, 0};
  uint8_t *pimg = render(IR_DEVICE_GPU, v, f, &plain, NULL);
  CHECK(pimg != NULL);
  if (pimg) {
    size_t cover_diff = 0, n = (size_t)f.width * f.height;
    for (size_t b = 0; b < n; b++) cover_diff += (pimg[4 * b + 3] == 255) != (ref[4 * b + 3] == 255);
    printf("  %s: plain caster coverage differs on %zu of %zu pixels\n", what, cover_diff, n);
    CHECK_MSG((double)cover_diff <= MAX_COVER_MISMATCH * (double)n, "%s: plain caster coverage differs on %zu pixels",
              what, cover_diff);
    free(pimg);
  }
  CHECK_EQ_INT(ref_stats.rays_hit, util_coverage(ref, f.width, f.height));
  CHECK_EQ_INT(ref_stats.traverse_rays[0], ref_stats.rays_generated);
  ir_frame_stats cs;
  uint8_t *cpu = render(IR_DEVICE_CPU, v, f, NULL, &cs);
  CHECK(cpu != NULL);
  if (cpu) {
    check_close_to_cpu(what, ref, cpu, f.width, f.height);
    CHECK_EQ_INT(ref_stats.rays_generated, cs.rays_generated); /* no texture involved */
  }
  free(ref);
  return cpu;
}

static ir_frame_desc frame_of(const ir_volume *v, int w, int h, float iso, float az, float el) {
  ir_frame_desc f = {.width = w, .height = h, .isovalue = iso, .camera = ir_camera_orbit(v, az, el, 1.0f, IR_AXIS_NONE)};
  return f;
}

/* ---- Tests ------------------------------------------------------------------------------------ */
static void test_sphere_all_methods_identical_and_geometric(void) {
  ir_volume v;
  if (!util_load("builtin:sphere:96", &v)) {
    CHECK(0);
    return;
  }
  ir_frame_desc f = frame_of(&v, 320, 240, 0.0f, 30, 20);
  uint8_t *cpu = check_scene("sphere", &v, f);
  /* The GPU image itself against the geometry (the reference variant, rendered again). */
  uint8_t *gpu = render(IR_DEVICE_GPU, &v, f, &variants[0], NULL);
  if (gpu) CHECK_EQ_INT(util_sphere_violations(&v, &f.camera, 320, 240, gpu, 1.0), 0);
  free(gpu);
  free(cpu);
  ir_volume_free(&v);
}

static void test_fractal_all_methods_identical(void) {
  ir_volume v;
  if (!util_load("builtin:fractal:128", &v)) {
    CHECK(0);
    return;
  }
  float views[][2] = {{0, 0}, {135, 35}};
  for (int i = 0; i < 2; i++) free(check_scene("fractal", &v, frame_of(&v, 256, 256, 127.5f, views[i][0], views[i][1])));
  ir_volume_free(&v);
}

static void test_real_datasets_all_methods_identical(void) {
  const char *root = getenv("INKRAY_TEST_DATA");
  if (!root || !*root) {
    CHECK_MSG(0, "INKRAY_TEST_DATA is not set (ctest sets it to tests/data/real)");
    return;
  }
  struct {
    const char *file;
    float iso;
  } sets[] = {{"frog/frogtissue.mhd", 0.5f},         {"headsq_64x64x93_int16.raw", 500.0f},
              {"carotid_76x49x45_float32.raw", 200.0f}, {"neghip_66x66x66_uint8.raw", 100.0f},
              {"HeadMRVolume.mhd", 60.0f}};
  for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", root, sets[i].file);
    ir_volume v;
    if (!util_load(path, &v)) {
      CHECK_MSG(0, "%s did not load", path);
      continue;
    }
    uint8_t *cpu = check_scene(sets[i].file, &v, frame_of(&v, 256, 192, sets[i].iso, 30, 20));
    CHECK(cpu && util_coverage(cpu, 256, 192) > 256 * 192 / 100);
    free(cpu);
    ir_volume_free(&v);
  }
}

static void test_empty_isovalues_and_single_brick(void) {
  ir_volume v;
  if (!util_load("builtin:sphere:48", &v)) {
    CHECK(0);
    return;
  }
  float isos[] = {(float)v.value_min - 1.0f, (float)v.value_max + 1.0f};
  for (int i = 0; i < 2; i++) {
    for (int k = 0; k < variant_count; k++) {
      ir_frame_stats s;
      uint8_t *img = render(IR_DEVICE_GPU, &v, frame_of(&v, 64, 48, isos[i], 30, 30), &variants[k], &s);
      CHECK(img && util_coverage(img, 64, 48) == 0);
      if (img && is_multi_kernel(variants[k].pipeline)) CHECK_EQ_INT(s.rays_hit, 0);
      free(img);
    }
  }
  ir_volume_free(&v);
  ir_volume blob;
  util_blob_volume(&blob, 64, 22, 26, 200);
  uint8_t *cpu = check_scene("single brick", &blob, frame_of(&blob, 200, 200, 100.0f, 30, 25));
  CHECK(cpu && util_coverage(cpu, 200, 200) > 20);
  free(cpu);
  ir_volume_free(&blob);
}

static void test_camera_inside_the_volume(void) {
  ir_volume v;
  if (!util_load("builtin:sphere:64", &v)) {
    CHECK(0);
    return;
  }
  ir_frame_desc f = frame_of(&v, 64, 64, 0.0f, 0, 0);
  for (int k = 0; k < 3; k++) f.camera.eye[k] = 31.0f;
  f.camera.target[0] = 64.0f;
  uint8_t *cpu = check_scene("inside the sphere", &v, f);
  free(cpu);
  uint8_t *gpu = render(IR_DEVICE_GPU, &v, f, &variants[0], NULL);
  CHECK(gpu && util_coverage(gpu, 64, 64) == 64 * 64);
  free(gpu);
  ir_frame_desc g = frame_of(&v, 96, 96, 0.0f, 0, 0);
  for (int k = 0; k < 3; k++) {
    g.camera.eye[k] = 3.0f;
    g.camera.target[k] = 32.0f;
  }
  g.camera.fov_y_degrees = 90.0f;
  free(check_scene("corner of the volume", &v, g));
  gpu = render(IR_DEVICE_GPU, &v, g, &variants[0], NULL);
  CHECK(gpu && util_sphere_violations(&v, &g.camera, 96, 96, gpu, 1.0) == 0);
  free(gpu);
  ir_volume_free(&v);
}

static void test_tiny_odd_and_large_sizes_on_one_renderer(void) {
  ir_volume v;
  if (!util_load("builtin:sphere:64", &v)) {
    CHECK(0);
    return;
  }
  /* One renderer through sizes that grow, shrink and grow: buffers and graphs follow. */
  char err[IR_ERR_LEN];
  ir_renderer *r = NULL;
  ir_renderer_desc desc = {.device = IR_DEVICE_GPU, .volume = &v};
  CHECK(ir_renderer_create(&desc, &r, err) == IR_OK);
  if (!r) return;
  int sizes[][2] = {{1, 1}, {7, 5}, {1920, 1080}, {5, 7}, {64, 64}};
  for (int i = 0; i < 5; i++)
    for (int k = 0; k < variant_count; k++) {
      int w = sizes[i][0], h = sizes[i][1];
      ir_frame_desc f = frame_of(&v, w, h, 0.0f, 45, 30);
      f.method = variants[k].method;
      f.pipeline = variants[k].pipeline;
      f.host_loop = variants[k].host_loop;
      f.tail_rays = variants[k].tail_rays;
      f.run_bricks = variants[k].run_bricks;
      f.step_batches = variants[k].step_batches;
      uint8_t *img = malloc((size_t)w * h * 4);
      CHECK(ir_render_frame(r, &f, NULL, err) == IR_OK && ir_render_read_image(r, img, err) == IR_OK);
      CHECK_MSG(util_sphere_violations(&v, &f.camera, w, h, img, 1.0) == 0, "%dx%d %s", w, h, variants[k].name);
      if (w * h == 1) CHECK_EQ_INT(util_coverage(img, 1, 1), 1);
      free(img);
    }
  CHECK(ir_render_device_image(r) != NULL);
  ir_renderer_destroy(r);
  ir_volume_free(&v);
}

static void test_stage_timing_pass_fills_the_stages(void) {
  ir_volume v;
  if (!util_load("builtin:fractal:64", &v)) {
    CHECK(0);
    return;
  }
  for (int k = 0; k < variant_count; k++) {
    ir_frame_desc f = frame_of(&v, 128, 128, 127.5f, 20, 20);
    f.stage_timing = true;
    ir_frame_stats s;
    uint8_t *img = render(IR_DEVICE_GPU, &v, f, &variants[k], &s);
    CHECK(img != NULL);
    CHECK(s.frame_ms > 0);
    if (is_multi_kernel(variants[k].pipeline)) {
      CHECK(s.bvh_update_ms > 0 && s.raygen_ms > 0 && s.traverse_ms > 0 && s.intersect_ms > 0);
      /* The multi pipeline shades inside intersection; the paper's has a shading stage. */
      CHECK(variants[k].pipeline == IR_PIPELINE_MULTI || s.shade_ms > 0);
      if (s.tail_rays == 0) CHECK(s.readbacks >= 1 + s.iterations);
      CHECK(s.traverse_iter_ms[0] > 0 || s.tail_rays > 0);
    } else {
      CHECK(s.kernel_ms > 0);
    }
    free(img);
  }
  ir_volume_free(&v);
}

static void test_bad_frames_are_input_errors(void) {
  ir_volume v;
  if (!util_load("builtin:sphere:16", &v)) {
    CHECK(0);
    return;
  }
  char err[IR_ERR_LEN];
  ir_renderer *r = NULL;
  ir_renderer_desc desc = {.device = IR_DEVICE_GPU, .volume = &v};
  CHECK(ir_renderer_create(&desc, &r, err) == IR_OK);
  if (!r) return;
  ir_frame_desc f = frame_of(&v, 0, 0, 0.0f, 0, 0);
  CHECK(ir_render_frame(r, &f, NULL, err) == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "0x0");
  ir_renderer_destroy(r);
  ir_volume_free(&v);
}

/* compute-sanitizer mode: small frames through every variant whose name contains `filter` (all
 * when NULL): a dense opaque surface, then a translucent surface over an opaque one, clipped by
 * a box and a plane and coloured by the gradient (the compositing kernels and their records). */
static int small_mode(const char *filter) {
  ir_volume v;
  if (!util_load("builtin:fractal:40", &v)) return 1;
  int bad = 0;
  for (int look = 0; look < 2; look++) {
    ir_frame_desc f = frame_of(&v, 48, 40, 127.5f, 30, 20);
    if (look == 1) {
      f.surface_count = 2;
      f.surfaces[0] = (ir_surface){100.0f, {0.9f, 0.3f, 0.2f}, 0.4f};
      f.surfaces[1] = (ir_surface){160.0f, {0.3f, 0.8f, 0.3f}, 1.0f};
      f.clip_hi[0] = 40.0f, f.clip_hi[1] = 30.0f, f.clip_hi[2] = 40.0f;
      f.clip_plane_on = true;
      f.clip_plane[0] = 1.0f, f.clip_plane[3] = -6.0f;
      f.color_by = IR_COLOR_GRADIENT;
      f.color_range[1] = 40.0f;
    }
    uint8_t *ref = NULL;
    int done = 0;
    for (int k = 0; k < variant_count; k++) {
      bool host_driven = variants[k].host_loop || variants[k].pipeline == IR_PIPELINE_SINGLE ||
                         variants[k].pipeline == IR_PIPELINE_PERSISTENT;
      if (filter && !strstr(variants[k].name, filter) && !(strcmp(filter, "host") == 0 && host_driven)) continue;
      printf("  %s%s%s\n", variants[k].name, variants[k].host_loop ? " (host loop)" : "",
             look ? " (translucent, clipped, gradient colours)" : "");
      fflush(stdout);
      uint8_t *img = render(IR_DEVICE_GPU, &v, f, &variants[k], NULL);
      if (!img) return 1;
      done++;
      if (ref && memcmp(ref, img, 48 * 40 * 4) != 0) {
        fprintf(stderr, "%s differs\n", variants[k].name);
        bad = 1;
      }
      if (!ref)
        ref = img;
      else
        free(img);
    }
    if (!ref) return 1;
    printf("small frame %d: %d variants, %zu pixels drawn, %s\n", look, done, util_coverage(ref, 48, 40),
           bad ? "DIFFERENT" : "identical");
    free(ref);
  }
  ir_volume_free(&v);
  return bad;
}

int main(int argc, char **argv) {
  int devices = 0;
  cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) check_skip_all("no CUDA device: GPU render tests need one");
  if (argc > 1 && strcmp(argv[1], "--probe") == 0) return 0;
  make_variants();
  if (argc > 1 && strcmp(argv[1], "--small") == 0) return small_mode(argc > 2 ? argv[2] : NULL);
  RUN(test_sphere_all_methods_identical_and_geometric);
  RUN(test_fractal_all_methods_identical);
  RUN(test_real_datasets_all_methods_identical);
  RUN(test_empty_isovalues_and_single_brick);
  RUN(test_camera_inside_the_volume);
  RUN(test_tiny_odd_and_large_sizes_on_one_renderer);
  RUN(test_stage_timing_pass_fills_the_stages);
  RUN(test_bad_frames_are_input_errors);
  return check_summary();
}
