/* Ambient occlusion, shadows and the directional light on the CPU reference renderer
 * (render/secondary.cuh): what they darken and what they leave alone, reproducibility, the
 * accumulation of frames, the sample directions, and the frames refused. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "render/render_internal.h"
#include "tests/check.h"
#include "tests/render/render_test_util.h"

static ir_renderer *make_cpu(const ir_volume *v, int threads) {
  char err[IR_ERR_LEN] = "";
  ir_renderer *r = NULL;
  ir_renderer_desc desc = {.device = IR_DEVICE_CPU, .volume = v, .cpu_threads = threads};
  if (ir_renderer_create(&desc, &r, err) != IR_OK) fprintf(stderr, "create: %s\n", err);
  return r;
}

/* Renders f into rgba (and depth, when not NULL). */
static bool draw(ir_renderer *r, const ir_frame_desc *f, uint8_t *rgba, float *depth) {
  char err[IR_ERR_LEN] = "";
  ir_status st = ir_render_frame(r, f, NULL, err);
  if (st == IR_OK) st = ir_render_read_image(r, rgba, err);
  if (st == IR_OK && depth) st = ir_render_read_depth(r, depth, err);
  if (st != IR_OK) fprintf(stderr, "render: %s\n", err);
  return st == IR_OK;
}

static int luminance(const uint8_t *p) { return p[0] + p[1] + p[2]; }

/* ---- Occlusion ------------------------------------------------------------------------------- */
enum { FW = 96, FH = 96 };

static void test_ao_darkens_the_fractal_without_changing_coverage(void) {
  ir_volume v;
  if (!util_load("builtin:fractal:64", &v)) {
    CHECK(0);
    return;
  }
  ir_renderer *r = make_cpu(&v, 0);
  static uint8_t plain[FW * FH * 4], ao[FW * FH * 4];
  ir_frame_desc f = {.width = FW, .height = FH, .isovalue = 127.5f,
                     .camera = ir_camera_orbit(&v, 30.0f, 25.0f, 1.0f, IR_AXIS_NONE), .pipeline = IR_PIPELINE_SINGLE};
  CHECK(draw(r, &f, plain, NULL));
  f.ao_samples = 8;
  CHECK(draw(r, &f, ao, NULL));
  size_t hit = 0, darker = 0, lighter = 0, cover = 0;
  long drop = 0;
  for (size_t i = 0; i < (size_t)FW * FH; i++) {
    const uint8_t *a = plain + 4 * i, *b = ao + 4 * i;
    cover += a[3] != b[3];
    if (a[3] != 255) continue;
    hit++;
    for (int c = 0; c < 3; c++) lighter += b[c] > a[c];
    darker += luminance(b) < luminance(a);
    drop += luminance(a) - luminance(b);
  }
  /* Occlusion only ever takes light away (it scales the ambient and diffuse terms), and never
   * moves a silhouette. */
  CHECK_EQ_INT(cover, 0);
  CHECK_EQ_INT(lighter, 0);
  CHECK_MSG(hit > 1000, "%zu pixels hit", hit);
  CHECK_MSG(darker * 4 > hit, "%zu of %zu hit pixels darker", darker, hit);
  CHECK_MSG(drop > (long)hit * 6, "mean drop %.1f levels (R+G+B)", (double)drop / (double)hit);
  ir_renderer_destroy(r);
  ir_volume_free(&v);
}

static void test_ao_leaves_an_isolated_ball_unchanged(void) {
  ir_volume v;
  if (!util_load("builtin:sphere:48", &v)) {
    CHECK(0);
    return;
  }
  ir_renderer *r = make_cpu(&v, 0);
  static uint8_t plain[FW * FH * 4], ao[FW * FH * 4];
  const float views[3][2] = {{0.0f, 20.0f}, {45.0f, 60.0f}, {200.0f, -30.0f}};
  for (int k = 0; k < 3; k++) {
    ir_frame_desc f = {.width = FW, .height = FH, .isovalue = 0.0f,
                       .camera = ir_camera_orbit(&v, views[k][0], views[k][1], 1.0f, IR_AXIS_NONE)};
    CHECK(draw(r, &f, plain, NULL));
    f.ao_samples = 16;
    f.ao_radius = 40.0f;
    CHECK(draw(r, &f, ao, NULL));
    CHECK_MSG(util_coverage(plain, FW, FH) > 1000, "view %d: %zu pixels hit", k, util_coverage(plain, FW, FH));
    CHECK_MSG(memcmp(plain, ao, sizeof ao) == 0, "view %d: a convex ball changed under --ao", k);
  }
  ir_renderer_destroy(r);
  ir_volume_free(&v);
}

/* ---- A ball over a slab ------------------------------------------------------------------------ */
enum { BN = 64, SW = 128, SH = 128 };
#define BALL_R 10.0
static const double ball_c[3] = {32.0, 32.0, 42.0};
#define SLAB_TOP 20.0

/* max(ball, slab) as distances in voxels, positive inside: isovalue 0 is both surfaces. */
static bool ball_over_slab(ir_volume *v) {
  memset(v, 0, sizeof *v);
  v->dims[0] = v->dims[1] = v->dims[2] = BN;
  v->type = IR_VOXEL_FLOAT32;
  v->spacing[0] = v->spacing[1] = v->spacing[2] = 1.0f;
  v->bytes = (size_t)BN * BN * BN * sizeof(float);
  float *x = malloc(v->bytes);
  if (!x) return false;
  for (int k = 0; k < BN; k++)
    for (int j = 0; j < BN; j++)
      for (int i = 0; i < BN; i++) {
        double p[3] = {i + 0.5, j + 0.5, k + 0.5}, d2 = 0;
        for (int a = 0; a < 3; a++) d2 += (p[a] - ball_c[a]) * (p[a] - ball_c[a]);
        double ball = BALL_R - sqrt(d2), slab = 4.0 - fabs(p[2] - (SLAB_TOP - 4.0));
        x[((size_t)k * BN + j) * BN + i] = (float)(ball > slab ? ball : slab);
      }
  v->voxels = x;
  v->full_dims[0] = v->full_dims[1] = v->full_dims[2] = BN;
  v->value_min = -100;
  v->value_max = BALL_R;
  snprintf(v->name, sizeof v->name, "ball over slab");
  return true;
}

/* The camera at elevation 50 degrees looks down on the slab; in its frame a light at azimuth 0
 * and elevation 40 shines straight down the volume's z axis. */
static ir_frame_desc slab_frame(const ir_volume *v) {
  ir_frame_desc f = {.width = SW, .height = SH, .isovalue = 0.0f,
                     .camera = ir_camera_orbit(v, 30.0f, 50.0f, 1.0f, IR_AXIS_Z), .light_on = true, .light = {0.0f, 40.0f}};
  return f;
}

/* Where pixel i's hit lies: on the slab's top face, and how far from the ball's axis (along the
 * light); false for other pixels. */
static bool slab_top_point(const ir_camera *c, size_t i, const float *depth, double *axis_distance) {
  if (!(depth[i] < INFINITY)) return false;
  double o[3], d[3], p[3];
  util_pixel_ray(c, SW, SH, (int)(i % SW), (int)(i / SW), o, d);
  for (int k = 0; k < 3; k++) p[k] = o[k] + depth[i] * d[k];
  if (fabs(p[2] - SLAB_TOP) > 0.6 || p[0] < 2 || p[0] > BN - 2 || p[1] < 2 || p[1] > BN - 2) return false;
  *axis_distance = hypot(p[0] - ball_c[0], p[1] - ball_c[1]);
  return true;
}

static void test_light_in_the_camera_frame(void) {
  ir_volume v;
  if (!ball_over_slab(&v)) {
    CHECK(0);
    return;
  }
  ir_renderer *r = make_cpu(&v, 0);
  ir_frame_desc f = slab_frame(&v);
  ir_trace_params p;
  ir_trace_params_fill(r, &f, &p);
  CHECK_MSG(fabsf(p.light_dir.x) < 1e-3f && fabsf(p.light_dir.y) < 1e-3f && fabsf(p.light_dir.z - 1.0f) < 1e-3f,
            "light %g %g %g", (double)p.light_dir.x, (double)p.light_dir.y, (double)p.light_dir.z);
  /* 0,0 shines from the eye; positive azimuth from the camera's right. */
  f.light[0] = f.light[1] = 0.0f;
  ir_trace_params_fill(r, &f, &p);
  ir_vec3 back = ir_scale(p.cam.forward, -1.0f);
  CHECK(ir_dot(p.light_dir, back) > 0.9999f);
  f.light[0] = 90.0f;
  ir_trace_params_fill(r, &f, &p);
  CHECK(ir_dot(p.light_dir, ir_normalize(p.cam.right)) > 0.9999f);
  ir_renderer_destroy(r);
  free(v.voxels);
}

static void test_ball_casts_a_shadow_on_the_slab(void) {
  ir_volume v;
  if (!ball_over_slab(&v)) {
    CHECK(0);
    return;
  }
  ir_renderer *r = make_cpu(&v, 0);
  static uint8_t lit[SW * SH * 4], shadowed[SW * SH * 4], clipped_lit[SW * SH * 4], clipped[SW * SH * 4],
      glass[SW * SH * 4];
  static float depth[SW * SH];
  ir_frame_desc f = slab_frame(&v);
  CHECK(draw(r, &f, lit, depth));
  f.shadows = true;
  CHECK(draw(r, &f, shadowed, NULL));
  size_t inside = 0, outside = 0, bad_inside = 0, bad_outside = 0;
  for (size_t i = 0; i < (size_t)SW * SH; i++) {
    double d;
    if (!slab_top_point(&f.camera, i, depth, &d)) continue;
    if (d < BALL_R - 2.0) { /* under the ball: only the ambient term is left */
      inside++;
      bad_inside += !(luminance(shadowed + 4 * i) * 3 < luminance(lit + 4 * i));
    } else if (d > BALL_R + 2.0) {
      outside++;
      bad_outside += memcmp(shadowed + 4 * i, lit + 4 * i, 4) != 0;
    }
  }
  CHECK_MSG(inside > 50 && outside > 500, "%zu slab pixels in the shadow, %zu outside", inside, outside);
  CHECK_MSG(bad_inside == 0, "%zu of %zu pixels under the ball are not in its shadow", bad_inside, inside);
  CHECK_MSG(bad_outside == 0, "%zu of %zu pixels away from the ball are shadowed", bad_outside, outside);

  /* Shadow rays see only what is drawn: with the ball clipped away the slab is lit everywhere. */
  f.clip_lo[0] = f.clip_lo[1] = f.clip_lo[2] = 0.0f;
  f.clip_hi[0] = f.clip_hi[1] = (float)BN;
  f.clip_hi[2] = 28.0f;
  f.shadows = false;
  static float clip_depth[SW * SH];
  CHECK(draw(r, &f, clipped_lit, clip_depth));
  f.shadows = true;
  CHECK(draw(r, &f, clipped, NULL));
  size_t top = 0, changed = 0;
  for (size_t i = 0; i < (size_t)SW * SH; i++) {
    double d;
    if (!slab_top_point(&f.camera, i, clip_depth, &d)) continue;
    top++;
    changed += memcmp(clipped + 4 * i, clipped_lit + 4 * i, 4) != 0;
  }
  CHECK_MSG(top > 1000 && changed == 0, "a clipped-away ball still shadows %zu of %zu pixels", changed, top);

  /* A translucent ball lets 1 - opacity of the light through. */
  memset(f.clip_hi, 0, sizeof f.clip_hi);
  f.surface_count = 1;
  f.surfaces[0] = (ir_surface){.isovalue = 0.0f, .color = {0.9f, 0.9f, 0.9f}, .opacity = 0.5f};
  ir_frame_desc g = f;
  g.shadows = false;
  static uint8_t glass_lit[SW * SH * 4];
  CHECK(draw(r, &g, glass_lit, NULL));
  CHECK(draw(r, &f, glass, NULL));
  size_t half = 0, bad_half = 0;
  for (size_t i = 0; i < (size_t)SW * SH; i++) {
    double d;
    if (!slab_top_point(&f.camera, i, depth, &d) || d > BALL_R - 3.0) continue;
    /* Ball and slab are both half transparent now: the slab's top under the ball gets a quarter
     * of the direct light (it crosses the ball's surface twice), its bottom face an eighth; with
     * an opaque ball both would get none. */
    half++;
    int a = luminance(glass_lit + 4 * i), b = luminance(glass + 4 * i);
    bad_half += !(b < a && b > a / 6);
  }
  CHECK_MSG(half > 50 && bad_half * 20 <= half, "%zu of %zu pixels under a translucent ball are not half-lit",
            bad_half, half);
  ir_renderer_destroy(r);
  free(v.voxels);
}

/* ---- Reproducibility, pipelines, accumulation ------------------------------------------------- */
static void test_lit_frames_are_reproducible_and_equal_in_every_pipeline(void) {
  ir_volume v;
  if (!util_load("builtin:fractal:64", &v)) {
    CHECK(0);
    return;
  }
  ir_renderer *one = make_cpu(&v, 1), *many = make_cpu(&v, 3);
  static uint8_t a[FW * FH * 4], b[FW * FH * 4];
  ir_frame_desc f = {.width = FW, .height = FH, .isovalue = 127.5f,
                     .camera = ir_camera_orbit(&v, 60.0f, 30.0f, 0.8f, IR_AXIS_NONE), .pipeline = IR_PIPELINE_SINGLE,
                     .ao_samples = 8, .shadows = true, .light_on = true, .light = {30.0f, 45.0f}};
  f.surface_count = 2;
  f.surfaces[0] = (ir_surface){.isovalue = 100.0f, .color = {0.2f, 0.6f, 0.9f}, .opacity = 0.4f};
  f.surfaces[1] = (ir_surface){.isovalue = 160.0f, .color = {0.9f, 0.8f, 0.6f}, .opacity = 1.0f};
  f.clip_plane_on = true;
  f.clip_plane[0] = 1.0f;
  f.clip_plane[3] = -20.0f;
  CHECK(draw(one, &f, a, NULL));
  CHECK_MSG(util_coverage(a, FW, FH) > 500, "%zu pixels hit", util_coverage(a, FW, FH));
  CHECK(draw(one, &f, b, NULL));
  CHECK_MSG(memcmp(a, b, sizeof a) == 0, "two runs of the same lit frame differ");
  CHECK(draw(many, &f, b, NULL));
  CHECK_MSG(memcmp(a, b, sizeof a) == 0, "one thread and three draw different lit frames");
  const ir_pipeline others[] = {IR_PIPELINE_MULTI, IR_PIPELINE_PERSISTENT};
  const uint32_t steps[] = {1, 0};
  for (int k = 0; k < 2; k++)
    for (int s = 0; s < 2; s++) {
      ir_frame_desc g = f;
      g.pipeline = others[k];
      g.step_batches = steps[s];
      CHECK(draw(many, &g, b, NULL));
      CHECK_MSG(memcmp(a, b, sizeof a) == 0, "the %s pipeline (steps %u) draws another lit frame",
                ir_pipeline_name(others[k]), steps[s]);
    }
  /* Another frame of the sequence takes other directions. */
  f.sample_frame = 1;
  CHECK(draw(one, &f, b, NULL));
  CHECK_MSG(memcmp(a, b, sizeof a) != 0, "frame 1 of the sequence drew frame 0's occlusion");
  ir_renderer_destroy(one);
  ir_renderer_destroy(many);
  ir_volume_free(&v);
}

static void test_accumulation_is_the_mean_of_the_frames(void) {
  ir_volume v;
  if (!util_load("builtin:fractal:64", &v)) {
    CHECK(0);
    return;
  }
  ir_renderer *r = make_cpu(&v, 0);
  enum { K = 4, N = FW * FH };
  static uint8_t frames[K][N * 4], mean[N * 4], many[N * 4];
  ir_frame_desc f = {.width = FW, .height = FH, .isovalue = 127.5f,
                     .camera = ir_camera_orbit(&v, 10.0f, 35.0f, 1.0f, IR_AXIS_NONE), .ao_samples = 4};
  for (int k = 0; k < K; k++) {
    f.sample_frame = (uint32_t)k;
    CHECK(draw(r, &f, frames[k], NULL));
  }
  /* The same frames accumulated, after a frame of another view that the first one resets. */
  ir_frame_desc other = f;
  other.camera = ir_camera_orbit(&v, 100.0f, 0.0f, 1.0f, IR_AXIS_NONE);
  other.accumulate = true;
  CHECK(draw(r, &other, mean, NULL));
  f.accumulate = true;
  for (int k = 0; k < K; k++) {
    f.sample_frame = (uint32_t)k;
    CHECK(draw(r, &f, mean, NULL));
  }
  size_t wrong = 0;
  for (size_t i = 0; i < (size_t)N * 4; i++) {
    float sum = 0;
    for (int k = 0; k < K; k++) sum += frames[k][i];
    wrong += mean[i] != (uint8_t)(sum / (float)K + 0.5f);
  }
  CHECK_MSG(wrong == 0, "%zu channels are not the mean of the %d frames", wrong, K);
  /* K frames of N rays come close to one frame of K N rays (the same directions, averaged after
   * shading instead of before). */
  f.accumulate = false;
  f.sample_frame = 0;
  f.ao_samples = 4 * K;
  CHECK(draw(r, &f, many, NULL));
  util_image_diff d = util_image_diff_of(mean, many, N, 6, 24);
  CHECK_EQ_INT(d.cover_diff, 0);
  CHECK_MSG(d.close * 100 >= d.both * 97, "%zu of %zu pixels within 6 levels of one frame of %d rays", d.close,
            d.both, 4 * K);
  ir_renderer_destroy(r);
  ir_volume_free(&v);
}

/* ---- Sampling and refusals ---------------------------------------------------------------------- */
static void test_ao_directions_are_cosine_weighted_and_stratified(void) {
  const ir_vec3 normals[3] = {{0.0f, 0.0f, 1.0f}, {0.0f, 0.0f, -1.0f}, {0.48f, -0.6f, 0.64f}};
  for (int k = 0; k < 3; k++) {
    ir_vec3 n = normals[k];
    double mean_cos = 0;
    int bad = 0;
    enum { M = 4096 };
    for (uint32_t j = 0; j < M; j++) {
      ir_vec3 d = ir_ao_direction(n, j, 0x1234567u * (uint32_t)(k + 1), 0x89abcdefu);
      float len = sqrtf(ir_dot(d, d)), c = ir_dot(d, n);
      bad += fabsf(len - 1.0f) > 1e-5f || c < -1e-6f;
      mean_cos += c;
    }
    /* Cosine-weighted: E[cos] = 2/3 (uniform over the hemisphere would give 1/2). */
    mean_cos /= M;
    CHECK_EQ_INT(bad, 0);
    CHECK_MSG(fabs(mean_cos - 2.0 / 3.0) < 0.005, "normal %d: mean cosine %g", k, mean_cos);
  }
  /* The first 16 points, scrambled or not, put one in each sixteenth of both coordinates. */
  for (uint32_t scramble = 0; scramble < 3; scramble++) {
    int a[16] = {0}, b[16] = {0};
    uint32_t s0 = ir_hash32(scramble), s1 = ir_hash32(scramble + 7u);
    for (uint32_t j = 0; j < 16; j++) {
      a[(int)(ir_unit_float(ir_bit_reverse(j) ^ s0) * 16.0f)]++;
      b[(int)(ir_unit_float(ir_sobol_dim1(j) ^ s1) * 16.0f)]++;
    }
    for (int i = 0; i < 16; i++) CHECK(a[i] == 1 && b[i] == 1);
  }
  /* The quarter-turn polynomial against libm. */
  double worst = 0;
  for (int i = 0; i < 4096; i++) {
    float c, s, u = (float)i / 4096.0f;
    ir_turn_cos_sin(u, &c, &s);
    worst = fmax(worst, fmax(fabs(c - cos(6.283185307179586 * u)), fabs(s - sin(6.283185307179586 * u))));
  }
  CHECK_MSG(worst < 1e-6, "cos/sin off by %g", worst);
}

/* The persistent kernel may trace a hit's secondary rays on other threads than the one that
 * shades it (ir_light_prepare, ir_light_ray, ir_light_combine), and in steps (ir_secondary_step):
 * the parts give the colour the one call gives, bit for bit, for every hit of a frame with
 * occlusion, shadows and translucency. */
static void test_light_in_parts_equals_the_whole(void) {
  ir_volume v;
  if (!util_load("builtin:fractal:48", &v)) {
    CHECK(0);
    return;
  }
  ir_renderer *r = make_cpu(&v, 1);
  ir_frame_desc f = {.width = 64, .height = 48, .camera = ir_camera_orbit(&v, 40.0f, 30.0f, 0.9f, IR_AXIS_NONE),
                     .ao_samples = 6, .ao_radius = 10.0f, .shadows = true, .light_on = true, .light = {-40.0f, 30.0f}};
  f.surface_count = 2;
  f.surfaces[0] = (ir_surface){.isovalue = 100.0f, .color = {0.3f, 0.6f, 1.0f}, .opacity = 0.4f};
  f.surfaces[1] = (ir_surface){.isovalue = 160.0f, .color = {1.0f, 0.9f, 0.7f}, .opacity = 1.0f};
  ir_trace_params p;
  ir_trace_params_fill(r, &f, &p);
  ir_bvh_node *nodes = malloc((size_t)r->layout.node_count * sizeof *nodes);
  if (!nodes) {
    CHECK(0);
    return;
  }
  ir_bvh_update_host(&r->layout, r->ranges, &p.iso, nodes);
  p.nodes = nodes;
  p.root = ir_bvh_root_or_none(&nodes[ir_bvh_root(&r->layout)], ir_bvh_root(&r->layout));
  ir_trace_params_walk(r, &f, r->ranges, r->cell_ranges, &p);
  int mode = ir_trace_mode(&p), hits = 0, differ = 0;
  long steps = 0;
  CHECK(mode & IR_TRACE_LIGHT);
  for (uint32_t pixel = 0; pixel < (uint32_t)(f.width * f.height); pixel++) {
    ir_ray ray = ir_camera_ray(&p.cam, pixel);
    ir_span sp;
    if (!ir_ray_span(&p, &ray, &sp)) continue;
    ir_paint pt = {0.0f, 0.0f, 0.0f, 0.0f};
    float first = INFINITY;
    ir_hit h;
    if (!ir_walk_and_march_as(&p, &ray, &sp, 0, NULL, &pt, &first, &h, mode)) continue;
    ir_vec3 diff = ir_hit_resolve_differences(&p, &ray, &h, mode);
    ir_vec3 base = ir_hit_base(&p, &ray, h.t, h.surf, diff);
    ir_vec3 whole = ir_light_color(&p, &ray, h.t, h.surf, diff, base);
    ir_light_setup L = ir_light_prepare(&p, &ray, h.t, h.surf, diff);
    float light[IR_AO_MAX_SAMPLES + 1];
    for (int i = 0; i < ir_light_ray_count(&p); i++) {
      ir_ray sr;
      float t_max;
      light[i] = ir_light_ray(&p, &L, i, &sr, &t_max) ? ir_transmittance(&p, &sr, t_max) : 1.0f;
      /* In steps of 1 and 3 batches (the persistent kernel's pool of secondary rays): the same light. */
      ir_span span;
      for (int budget = 1; budget <= 3 && ir_light_ray(&p, &L, i, &sr, &t_max); budget += 2) {
        float stepped = 1.0f;
        if (ir_secondary_span(&p, &sr, t_max, &span)) {
          ir_secondary_state m = ir_secondary_start();
          int guard = 0;
          while (!ir_secondary_step(&p, &sr, &span, &m, true, budget) && guard < 100000) guard++;
          stepped = m.light;
          steps += guard;
        }
        differ += memcmp(&stepped, &light[i], sizeof stepped) != 0;
      }
    }
    ir_vec3 parts = ir_light_combine(&p, &L, base, light);
    hits++;
    differ += memcmp(&whole, &parts, sizeof whole) != 0;
  }
  CHECK_MSG(hits > 500, "%d hits", hits);
  CHECK_MSG(steps > hits, "%ld pauses of stepped rays over %d hits", steps, hits);
  CHECK_EQ_INT(differ, 0);
  free(nodes);
  ir_renderer_destroy(r);
  ir_volume_free(&v);
}

static void test_bad_lit_frames_are_refused(void) {
  ir_volume v;
  if (!util_load("builtin:sphere:16", &v)) {
    CHECK(0);
    return;
  }
  ir_renderer *r = make_cpu(&v, 1);
  char err[IR_ERR_LEN];
  ir_frame_desc ok = {.width = 8, .height = 8, .camera = ir_camera_orbit(&v, 0, 0, 1, IR_AXIS_NONE), .ao_samples = 2};
  CHECK(ir_render_frame(r, &ok, NULL, err) == IR_OK);
  ir_frame_desc f = ok;
  f.pipeline = IR_PIPELINE_PAPER;
  CHECK(ir_render_frame(r, &f, NULL, err) == IR_ERR_INPUT && strstr(err, "paper"));
  f = ok;
  f.pipeline = IR_PIPELINE_PLAIN;
  f.ao_samples = 0;
  f.shadows = true;
  CHECK(ir_render_frame(r, &f, NULL, err) == IR_ERR_INPUT);
  f = ok;
  f.ao_samples = IR_AO_MAX_SAMPLES + 1;
  CHECK(ir_render_frame(r, &f, NULL, err) == IR_ERR_INPUT);
  f = ok;
  f.ao_radius = -1.0f;
  CHECK(ir_render_frame(r, &f, NULL, err) == IR_ERR_INPUT);
  f = ok;
  f.ao_radius = NAN;
  CHECK(ir_render_frame(r, &f, NULL, err) == IR_ERR_INPUT);
  f = ok;
  f.light_on = true;
  f.light[0] = 200.0f;
  CHECK(ir_render_frame(r, &f, NULL, err) == IR_ERR_INPUT && strstr(err, "azimuth"));
  f.light[0] = 0.0f;
  f.light[1] = 100.0f;
  CHECK(ir_render_frame(r, &f, NULL, err) == IR_ERR_INPUT);
  ir_renderer_destroy(r);
  ir_volume_free(&v);
}

int main(void) {
  RUN(test_ao_darkens_the_fractal_without_changing_coverage);
  RUN(test_ao_leaves_an_isolated_ball_unchanged);
  RUN(test_light_in_the_camera_frame);
  RUN(test_ball_casts_a_shadow_on_the_slab);
  RUN(test_lit_frames_are_reproducible_and_equal_in_every_pipeline);
  RUN(test_accumulation_is_the_mean_of_the_frames);
  RUN(test_ao_directions_are_cosine_weighted_and_stratified);
  RUN(test_light_in_parts_equals_the_whole);
  RUN(test_bad_lit_frames_are_refused);
  return check_summary();
}
