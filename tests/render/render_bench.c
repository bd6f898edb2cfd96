/* render_bench: frame times of every pipeline variant on one volume, for docs/render.md.
 *
 *   render_bench VOLUME ISO [--size WxH] [--views K] [--frames N] [--warmup N] [--elevation DEG]
 *                [--distance D] [--tail N] [--multi-tail N] [--run-bricks N] [--only NAME[,NAME...]]
 *                [--rounds] [--texture-refine] [--surfaces ISO:OPACITY[,ISO:OPACITY...]]
 *                [--steps N[,N...]] [--walk-cells 8|16] [--ao N[:RADIUS]] [--shadows] [--light AZ,EL]
 *
 * Variants, in this order: the independent caster (independent_caster.cu: a macrocell DDA
 * caster written apart from inkray, with 16^3 and 8^3 macrocells; one surface only), the plain
 * macrocell caster (the baseline every ratio refers to), the single kernel, the persistent
 * pipeline with every compaction method (and InK-Compact with each step of --steps), the
 * default multi-kernel pipeline with every compaction method (CUDA graph,
 * automatic tail; then InK-Collate and InK-Compact without the tail, InK-Compact host-driven and
 * with every round's kernels launched for all rays, fixed_grids),
 * the paper's pipeline with every method (no tail, as published) and with InK-Collate and the
 * tail kernel at N rays (default 65536). --multi-tail N sets the multi pipeline's threshold
 * instead of the automatic one (ir_tail_auto). For each
 * it renders `warmup` frames, then `frames` frames cycling through K orbit views (at distance D,
 * default 1: the volume's bounding sphere fills the image height; smaller is closer), and prints
 * mean, median and p95 of frame_ms (CUDA events around the whole frame, host work included)
 * and the FPS of the mean. Then one diagnostic frame per view (stage_timing: a separate
 * host-driven pass with events between stages) gives the mean per-stage split. --rounds prints
 * the rays and times of every round of the first view's diagnostic frame.
 * x_plain, x_single and x_indep are the baseline's, the single kernel's and the faster independent
 * caster's mean frame time divided by the variant's: above 1 the variant is faster. With --ao,
 * --shadows or --light (ambient occlusion, shadow rays and the light of render/secondary.cuh) only
 * the pipelines that draw them run: single, persistent and multi, and the independent caster
 * with its own occlusion and shadow rays (each hit's rays traced in its pixel's thread, every
 * ray on its macrocell walk: the megakernel way). A benchmark,
 * not a test: nothing here passes or fails.
 */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/render.h"
#include "tests/render/independent_caster.h"
#include "tests/render/render_test_util.h"

/* The independent caster's rows (variant.pipeline): macrocells of 16 and of 8 voxels. */
#define INDEPENDENT_16 ((ir_pipeline)100)
#define INDEPENDENT_8 ((ir_pipeline)101)

typedef struct variant {
  const char *name;
  ir_pipeline pipeline;
  ir_compact_method method;
  bool host_loop, fixed_grids;
  uint32_t tail_rays;
  char label[40];
  uint32_t step_batches;
  int secondary; /* ir_secondary_mode */
} variant;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The independent caster through the same orbit as the variants: mean frame ms (ms[] sorted),
 * and the fraction of pixels it hits in the last frame. */
static bool bench_independent(const ir_volume *v, int macro, float iso, const ic_lighting *lit, int w, int h, int views,
                              int frames, int warmup, float elevation, float distance, double *ms, double *mean,
                              double *cover) {
  ic_caster *c = NULL;
  uint32_t *d_image = NULL;
  if (ic_create(v, macro, &c) != 0 || cudaMalloc((void **)&d_image, (size_t)w * h * 4) != cudaSuccess) {
    fprintf(stderr, "render_bench: the independent caster could not start\n");
    return false;
  }
  for (int i = -warmup; i < frames; i++) {
    ir_camera cam = ir_camera_orbit(v, 360.0f * (float)((i + warmup) % views) / (float)views, elevation, distance,
                                    IR_AXIS_NONE);
    double t = 0;
    if (ic_render(c, &cam, iso, lit, w, h, d_image, &t) != 0) return false;
    if (i >= 0) ms[i] = t;
  }
  uint8_t *img = malloc((size_t)w * h * 4);
  cudaMemcpy(img, d_image, (size_t)w * h * 4, cudaMemcpyDeviceToHost);
  *cover = (double)util_coverage(img, w, h) / ((double)w * h);
  free(img);
  *mean = 0;
  for (int i = 0; i < frames; i++) *mean += ms[i];
  *mean /= frames;
  qsort(ms, (size_t)frames, sizeof *ms, cmp_double);
  cudaFree(d_image);
  ic_destroy(c);
  return true;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: render_bench VOLUME ISO [--size WxH] [--views K] [--frames N] [--warmup N] "
                    "[--elevation DEG] [--distance D] [--tail N] [--multi-tail N] [--run-bricks N] "
                    "[--only NAME[,NAME...]] "
                    "[--rounds] [--texture-refine] [--surfaces ISO:OPACITY[,...]] [--steps N[,N...]] "
                    "[--walk-cells 8|16] [--ao N[:RADIUS]] [--shadows] [--light AZ,EL]\n");
    return 2;
  }
  int w = 1024, h = 1024, views = 8, frames = 100, warmup = 10, rounds = 0, walk_cells = 0;
  uint32_t tail = 65536, run_bricks = 0, multi_tail = 0;
  const char *only = NULL;
  float elevation = 25.0f, distance = 1.0f, iso = (float)atof(argv[2]);
  bool texture_refine = false, shadows = false, light_on = false;
  int ao = 0;
  float ao_radius = 0.0f, light[2] = {0.0f, 0.0f};
  const char *surfaces_arg = NULL, *steps_arg = NULL;
  for (int i = 3; i < argc; i += 2) {
    if (!strcmp(argv[i], "--texture-refine")) {
      texture_refine = true, i--;
      continue;
    }
    if (!strcmp(argv[i], "--rounds")) {
      rounds = 1, i--;
      continue;
    }
    if (!strcmp(argv[i], "--shadows")) {
      shadows = true, i--;
      continue;
    }
    if (i + 1 >= argc) break;
    if (!strcmp(argv[i], "--size")) sscanf(argv[i + 1], "%dx%d", &w, &h);
    else if (!strcmp(argv[i], "--views")) views = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--frames")) frames = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--warmup")) warmup = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--elevation")) elevation = (float)atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--distance")) distance = (float)atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--tail")) tail = (uint32_t)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--run-bricks")) run_bricks = (uint32_t)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--multi-tail")) multi_tail = (uint32_t)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--only")) only = argv[i + 1];
    else if (!strcmp(argv[i], "--surfaces")) surfaces_arg = argv[i + 1];
    else if (!strcmp(argv[i], "--steps")) steps_arg = argv[i + 1];
    else if (!strcmp(argv[i], "--walk-cells")) walk_cells = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--ao")) sscanf(argv[i + 1], "%d:%f", &ao, &ao_radius);
    else if (!strcmp(argv[i], "--light")) light_on = sscanf(argv[i + 1], "%f,%f", &light[0], &light[1]) == 2;
  }
  bool lit = ao > 0 || shadows || light_on;
  struct cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    fprintf(stderr, "render_bench: no CUDA device\n");
    return 1;
  }
  ir_volume v;
  if (!util_load(argv[1], &v)) return 1;
  char err[IR_ERR_LEN];
  ir_renderer *r = NULL;
  ir_renderer_desc desc = {.device = IR_DEVICE_GPU, .volume = &v, .walk_cells = walk_cells};
  if (ir_renderer_create(&desc, &r, err) != IR_OK) {
    fprintf(stderr, "render_bench: %s\n", err);
    return 1;
  }
  variant vars[5 * IR_COMPACT_METHOD_COUNT + 32];
  int nv = 0;
  vars[nv++] = (variant){"independent", INDEPENDENT_16, IR_COMPACT_INK_COMPACT, false, false, 0, "independent/m16", 0, 0};
  vars[nv++] = (variant){"independent", INDEPENDENT_8, IR_COMPACT_INK_COMPACT, false, false, 0, "independent/m8", 0, 0};
  vars[nv++] = (variant){"plain", IR_PIPELINE_PLAIN, IR_COMPACT_INK_COMPACT, false, false, 0, "plain", 0, 0};
  vars[nv++] = (variant){"single", IR_PIPELINE_SINGLE, IR_COMPACT_INK_COMPACT, false, false, 0, "single", 0, 0};
  for (int m = 0; m < IR_COMPACT_METHOD_COUNT; m++) {
    vars[nv] = (variant){ir_compact_methods()[m].name, IR_PIPELINE_PERSISTENT, (ir_compact_method)m, false, false, 0,
                         "", 0, 0};
    snprintf(vars[nv].label, sizeof vars[nv].label, "persistent/%s", vars[nv].name);
    nv++;
  }
  /* Lit frames: the persistent pipeline with each method again, its blocks' secondary rays spread
   * over all their threads, then as a pool compacted by the method (ir_frame_desc.secondary). */
  const int spread_count = (ao > 0 || shadows) ? IR_COMPACT_METHOD_COUNT : 0;
  for (int mode = IR_SECONDARY_SPREAD; spread_count && mode <= IR_SECONDARY_POOL; mode++)
    for (int m = 0; m < spread_count; m++) {
      vars[nv] = (variant){ir_compact_methods()[m].name, IR_PIPELINE_PERSISTENT, (ir_compact_method)m, false, false,
                           0, "", 0, 0};
      vars[nv].secondary = mode;
      snprintf(vars[nv].label, sizeof vars[nv].label, "persistent/%s/%s", vars[nv].name,
               ir_secondary_name((ir_secondary_mode)mode));
      nv++;
    }
  for (const char *q = steps_arg; q && *q && nv < (int)(sizeof vars / sizeof vars[0]) - 24;) {
    unsigned step = (unsigned)atoi(q);
    vars[nv] = (variant){"ink-compact", IR_PIPELINE_PERSISTENT, IR_COMPACT_INK_COMPACT, false, false, 0, "", step, 0};
    snprintf(vars[nv].label, sizeof vars[nv].label, "persistent/ink-compact/step%u", step);
    nv++;
    q = strchr(q, ',');
    q = q ? q + 1 : NULL;
  }
  for (int m = 0; m < IR_COMPACT_METHOD_COUNT; m++) {
    vars[nv] = (variant){ir_compact_methods()[m].name, IR_PIPELINE_MULTI, (ir_compact_method)m, false, false,
                         multi_tail, "", 0, 0};
    snprintf(vars[nv].label, sizeof vars[nv].label, "multi/%s", vars[nv].name);
    nv++;
  }
  vars[nv++] = (variant){"ink-collate", IR_PIPELINE_MULTI, IR_COMPACT_INK_COLLATE, false, false, IR_TAIL_OFF,
                         "multi/ink-collate/no-tail", 0, 0};
  vars[nv++] = (variant){"ink-compact", IR_PIPELINE_MULTI, IR_COMPACT_INK_COMPACT, false, false, IR_TAIL_OFF,
                         "multi/ink-compact/no-tail", 0, 0};
  vars[nv++] = (variant){"ink-compact", IR_PIPELINE_MULTI, IR_COMPACT_INK_COMPACT, true, false, multi_tail,
                         "multi/ink-compact/host-loop", 0, 0};
  vars[nv++] = (variant){"ink-compact", IR_PIPELINE_MULTI, IR_COMPACT_INK_COMPACT, false, true, multi_tail,
                         "multi/ink-compact/fixed-grids", 0, 0};
  for (int m = 0; m < IR_COMPACT_METHOD_COUNT; m++) {
    vars[nv] = (variant){ir_compact_methods()[m].name, IR_PIPELINE_PAPER, (ir_compact_method)m, false, false, 0, "", 0, 0};
    snprintf(vars[nv].label, sizeof vars[nv].label, "paper/%s", vars[nv].name);
    nv++;
  }
  vars[nv++] = (variant){"ink-collate", IR_PIPELINE_PAPER, IR_COMPACT_INK_COLLATE, false, false, tail,
                         "paper/ink-collate/tail", 0, 0};

  printf("# refinement %s%s%s\n", texture_refine ? "texture" : "exact", surfaces_arg ? ", surfaces " : "",
         surfaces_arg ? surfaces_arg : "");
  if (lit)
    printf("# ambient occlusion %d rays of %g voxels, shadows %s, light %s %g,%g (the independent caster, single, "
           "persistent and multi only)\n",
           ao, (double)(ao_radius > 0.0f ? ao_radius : IR_AO_RADIUS_DEFAULT), shadows ? "on" : "off",
           light_on ? "at" : "headlight", (double)light[0], (double)light[1]);
  printf("# %s, %s %zux%zux%zu, iso %g, %dx%d, %d views at elevation %g distance %g, %d frames after %d warm-up, "
         "paper tail %u, multi tail %u, run bricks %u\n",
         prop.name, v.name, v.dims[0], v.dims[1], v.dims[2], (double)iso, w, h, views, (double)elevation,
         (double)distance, frames, warmup, tail, multi_tail ? multi_tail : ir_tail_auto((uint32_t)w * (uint32_t)h),
         run_bricks);
  printf("%-34s %8s %8s %8s %7s %7s %8s %7s | %6s %6s %6s %6s %6s %6s %6s %6s %6s %6s %4s %5s | %8s %8s %6s %s\n",
         "variant", "mean_ms", "median", "p95", "FPS", "x_plain", "x_single", "x_indep", "bvh", "raygen", "trav", "isect", "shade", "second", "tail", "compac", "wait", "ctl",
         "rb", "it", "gen", "hit", "cover", "loop");
  double *ms = malloc(sizeof(double) * (size_t)frames);
  double plain_ms = 0, single_ms = 0, indep_ms = 0;
  for (int k = 0; k < nv; k++) {
    if (only && !util_in_list(only, vars[k].label)) continue;
    if (lit && vars[k].pipeline != IR_PIPELINE_SINGLE && vars[k].pipeline != IR_PIPELINE_PERSISTENT &&
        vars[k].pipeline != IR_PIPELINE_MULTI && vars[k].pipeline != INDEPENDENT_16 &&
        vars[k].pipeline != INDEPENDENT_8)
      continue;
    if (vars[k].pipeline == INDEPENDENT_16 || vars[k].pipeline == INDEPENDENT_8) {
      if (surfaces_arg) continue; /* it draws one surface */
      double mean = 0, cover = 0;
      ic_lighting ic_lit = {.ao_n = ao, .shadows = shadows, .light_on = light_on, .ao_radius = ao_radius,
                            .light = {light[0], light[1]}};
      if (!bench_independent(&v, vars[k].pipeline == INDEPENDENT_16 ? 16 : 8, iso, &ic_lit, w, h, views, frames,
                             warmup, elevation, distance, ms, &mean, &cover))
        return 1;
      if (indep_ms == 0 || mean < indep_ms) indep_ms = mean;
      printf("%-34s %8.4f %8.4f %8.4f %7.1f %7s %8s %7.3f | %s | %8s %8.0f %6.3f %s\n", vars[k].label, mean,
             ms[frames / 2], ms[(int)(frames * 0.95)], 1000.0 / mean, "-", "-", indep_ms / mean,
             "     -      -      -      -      -      -      -      -      -      -    -     -", "-", cover * w * h, cover,
             "-");
      fflush(stdout);
      continue;
    }
    ir_frame_desc f = {.width = w, .height = h, .isovalue = iso, .method = vars[k].method,
                       .pipeline = vars[k].pipeline, .host_loop = vars[k].host_loop,
                       .fixed_grids = vars[k].fixed_grids, .tail_rays = vars[k].tail_rays,
                       .run_bricks = run_bricks, .texture_refine = texture_refine,
                       .step_batches = vars[k].step_batches, .ao_samples = ao, .ao_radius = ao_radius,
                       .shadows = shadows, .light_on = light_on, .light = {light[0], light[1]},
                       .secondary = vars[k].secondary};
    /* --surfaces ISO:OPACITY,...: several surfaces (colours from the default palette). */
    for (const char *q = surfaces_arg; q && *q && f.surface_count < IR_MAX_SURFACES;) {
      ir_surface *sf = &f.surfaces[f.surface_count];
      sf->opacity = 1.0f;
      if (sscanf(q, "%f:%f", &sf->isovalue, &sf->opacity) < 1) break;
      ir_surface_default_color(f.surface_count++, sf->color);
      q = strchr(q, ',');
      q = q ? q + 1 : NULL;
    }
    ir_frame_stats s, sum;
    memset(&sum, 0, sizeof sum);
    int ok = 1;
    for (int i = -warmup; i < frames && ok; i++) {
      f.camera = ir_camera_orbit(&v, 360.0f * (float)((i + warmup) % views) / (float)views, elevation, distance, IR_AXIS_NONE);
      ok = ir_render_frame(r, &f, &s, err) == IR_OK;
      if (i >= 0) ms[i] = s.frame_ms;
    }
    f.stage_timing = true;
    for (int i = 0; i < views && ok; i++) {
      f.camera = ir_camera_orbit(&v, 360.0f * (float)i / (float)views, elevation, distance, IR_AXIS_NONE);
      ok = ir_render_frame(r, &f, &s, err) == IR_OK;
      if (ok && rounds && i == 0 && (f.pipeline == IR_PIPELINE_MULTI || f.pipeline == IR_PIPELINE_PAPER)) {
        printf("## %s view 0: round traverse_rays intersect_rays traverse_ms intersect_ms (tail %u rays, %.3f ms)\n",
               vars[k].label, s.tail_rays, s.tail_ms);
        for (int q = 0; q < s.iterations && q < IR_MAX_ITERATIONS; q++)
          printf("##   %2d %8u %8u %7.4f %7.4f\n", q, s.traverse_rays[q], s.intersect_rays[q], s.traverse_iter_ms[q],
                 s.intersect_iter_ms[q]);
      }
      sum.tail_ms += s.tail_ms;
      sum.bvh_update_ms += s.bvh_update_ms, sum.raygen_ms += s.raygen_ms, sum.traverse_ms += s.traverse_ms;
      sum.intersect_ms += s.intersect_ms, sum.shade_ms += s.shade_ms + s.kernel_ms, sum.compact_ms += s.compact_ms;
      sum.secondary_ms += s.secondary_ms;
      sum.host_wait_ms += s.host_wait_ms, sum.control_ms += s.control_ms, sum.readbacks += s.readbacks;
      sum.iterations += s.iterations, sum.rays_generated += s.rays_generated, sum.rays_hit += s.rays_hit;
    }
    if (!ok) {
      fprintf(stderr, "render_bench: %s: %s\n", vars[k].label, err);
      return 1;
    }
    double mean = 0;
    for (int i = 0; i < frames; i++) mean += ms[i];
    mean /= frames;
    qsort(ms, (size_t)frames, sizeof *ms, cmp_double);
    if (vars[k].pipeline == IR_PIPELINE_PLAIN) plain_ms = mean;
    if (vars[k].pipeline == IR_PIPELINE_SINGLE) single_ms = mean;
    double d = views;
    printf("%-34s %8.4f %8.4f %8.4f %7.1f %7.3f %8.3f %7.3f | %6.3f %6.3f %6.3f %6.3f %6.3f %6.3f %6.3f %6.3f %6.3f %6.3f %4.0f %5.1f | %8.0f %8.0f %6.3f %s\n",
           vars[k].label, mean, ms[frames / 2], ms[(int)(frames * 0.95)], 1000.0 / mean, plain_ms / mean,
           single_ms / mean, indep_ms / mean, sum.bvh_update_ms / d,
           sum.raygen_ms / d, sum.traverse_ms / d, sum.intersect_ms / d, sum.shade_ms / d, sum.secondary_ms / d,
           sum.tail_ms / d,
           sum.compact_ms / d,
           sum.host_wait_ms / d, sum.control_ms / d, sum.readbacks / d, sum.iterations / d, sum.rays_generated / d,
           sum.rays_hit / d, sum.rays_hit / d / ((double)w * h),
           vars[k].pipeline == IR_PIPELINE_MULTI || vars[k].pipeline == IR_PIPELINE_PAPER
               ? (s.graph ? (s.graph_resized ? "graph+resize" : "graph") : "host")
               : "-");
    fflush(stdout);
  }
  /* The walk's skip distances, which a change of isovalue costs once (not inside the frames
   * above, whose isovalue stays): single-kernel frames alternating between two isovalues, at
   * the benchmark's size (which sets the walk's cells). */
  double skip_sum = 0;
  int rebuilds = 0;
  for (int i = 0; i < 20; i++) {
    ir_frame_desc f = {.width = w, .height = h, .isovalue = i % 2 ? nextafterf(iso, INFINITY) : iso,
                       .pipeline = IR_PIPELINE_SINGLE,
                       .camera = ir_camera_orbit(&v, 0.0f, elevation, distance, IR_AXIS_NONE)};
    ir_frame_stats s;
    if (ir_render_frame(r, &f, &s, err) != IR_OK) break;
    if (s.skip_rebuilt) skip_sum += s.skip_ms, rebuilds++;
  }
  if (rebuilds) printf("# skip distances: rebuilt in %.4f ms (mean of %d rebuilds)\n", skip_sum / rebuilds, rebuilds);
  free(ms);
  ir_renderer_destroy(r);
  ir_volume_free(&v);
  return 0;
}
