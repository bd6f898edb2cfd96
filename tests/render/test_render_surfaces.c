/* Several surfaces, clipping, colour by a second quantity and exact refinement, checked against
 * geometry on builtin:sphere (the distance field R - |x - c|, so iso s is a sphere of radius
 * R - s about the centre):
 *   - a translucent outer sphere over an opaque inner one shows both colours in the middle and
 *     only the outer colour in the ring between the silhouettes (alpha there: two layers);
 *   - a clip box, or a clip plane, at half height removes the upper cap: seen from above, the
 *     first hit is the bottom of the sphere;
 *   - colouring by a second volume (a ramp along x) follows it: viridis' blue end on the low
 *     side, its yellow end on the high side; by the gradient (1 everywhere) the map's middle;
 *   - exact refinement puts hits within 0.02 voxel (RMS) of the trilinear field's isosurface.
 * Without arguments on the CPU renderer; with --gpu on every GPU pipeline (the multi, paper and
 * persistent pipelines with every compaction method, the single kernel), which must agree bit for bit,
 * and within a few levels of the CPU. --gpu exits 77 (skipped) without a CUDA device. */
#include "tests/render/render_test_util.h"
#include "tests/check.h"

enum { W = 96, H = 96, N = 64 };

static bool g_gpu = false;
static ir_renderer *g_r = NULL;      /* on the sphere volume */
static ir_renderer *g_cpu = NULL;    /* CPU reference for the GPU runs */

typedef struct frame_out {
  uint8_t rgba[W * H * 4];
  float depth[W * H];
} frame_out;

/* Renders f on the renderer; on the GPU, on every pipeline and method, requiring identical bits,
 * and compares with the CPU. */
static bool render_all(ir_renderer *r, ir_renderer *cpu, ir_frame_desc f, frame_out *out) {
  char err[IR_ERR_LEN] = "";
  if (!g_gpu) {
    f.pipeline = IR_PIPELINE_SINGLE;
    bool ok = ir_render_frame(r, &f, NULL, err) == IR_OK && ir_render_read_image(r, out->rgba, err) == IR_OK &&
              ir_render_read_depth(r, out->depth, err) == IR_OK;
    if (!ok) fprintf(stderr, "render failed: %s\n", err);
    /* The CPU's BVH loop (the paper's pipeline) draws the same image. */
    static frame_out other;
    f.pipeline = IR_PIPELINE_PAPER;
    ok = ok && ir_render_frame(r, &f, NULL, err) == IR_OK && ir_render_read_image(r, other.rgba, err) == IR_OK;
    CHECK_MSG(!ok || memcmp(other.rgba, out->rgba, sizeof other.rgba) == 0, "CPU: BVH loop and brick walk differ");
    /* And the walk in the persistent pipeline's steps. */
    f.pipeline = IR_PIPELINE_PERSISTENT;
    f.step_batches = 1;
    ok = ok && ir_render_frame(r, &f, NULL, err) == IR_OK && ir_render_read_image(r, other.rgba, err) == IR_OK &&
         ir_render_read_depth(r, other.depth, err) == IR_OK;
    CHECK_MSG(!ok || (memcmp(other.rgba, out->rgba, sizeof other.rgba) == 0 &&
                      memcmp(other.depth, out->depth, sizeof other.depth) == 0),
              "CPU: steps and brick walk differ");
    return ok;
  }
  static frame_out first, cur;
  bool have_first = false, ok = true;
  const ir_pipeline pipes[] = {IR_PIPELINE_MULTI, IR_PIPELINE_PAPER, IR_PIPELINE_SINGLE, IR_PIPELINE_PERSISTENT};
  for (int pi = 0; pi < 4 && ok; pi++)
    for (int m = 0; m < IR_COMPACT_METHOD_COUNT && ok; m++) {
      if (pipes[pi] == IR_PIPELINE_SINGLE && m > 0) break;
      f.pipeline = pipes[pi];
      f.method = (ir_compact_method)m;
      ok = ir_render_frame(r, &f, NULL, err) == IR_OK && ir_render_read_image(r, cur.rgba, err) == IR_OK &&
           ir_render_read_depth(r, cur.depth, err) == IR_OK;
      if (!ok) {
        fprintf(stderr, "GPU %s/%s failed: %s\n", ir_pipeline_name(f.pipeline), ir_compact_method_get(f.method)->name, err);
        break;
      }
      if (!have_first) {
        first = cur;
        have_first = true;
      } else {
        CHECK_MSG(memcmp(first.rgba, cur.rgba, sizeof cur.rgba) == 0 && memcmp(first.depth, cur.depth, sizeof cur.depth) == 0,
                  "GPU %s/%s differs from multi/%s", ir_pipeline_name(f.pipeline), ir_compact_method_get(f.method)->name,
                  ir_compact_method_get((ir_compact_method)0)->name);
      }
    }
  if (!ok) return false;
  *out = first;
  /* Against the CPU: the texture filter's rounding moves a few edge pixels. */
  static frame_out ref;
  f.pipeline = IR_PIPELINE_SINGLE;
  if (ir_render_frame(cpu, &f, NULL, err) != IR_OK || ir_render_read_image(cpu, ref.rgba, err) != IR_OK) return false;
  size_t off = util_image_diff_of(out->rgba, ref.rgba, sizeof ref.rgba / 4, 8, 8).far;
  CHECK_MSG(off <= sizeof ref.rgba / 100, "GPU and CPU differ by more than 8 levels in %zu of %zu channels", off,
            sizeof ref.rgba);
  return true;
}

static ir_camera camera_from(double azimuth, double elevation) {
  ir_volume v = {.dims = {N, N, N}, .spacing = {1, 1, 1}};
  return ir_camera_orbit(&v, (float)azimuth, (float)elevation, 1.0f, IR_AXIS_NONE);
}

/* Closest approach of pixel (px, py)'s ray to the sphere's centre, in voxels. */
static double centre_distance(const ir_camera *c, int px, int py) {
  double o[3], d[3], centre[3] = {N / 2.0, N / 2.0, N / 2.0};
  util_pixel_ray(c, W, H, px, py, o, d);
  return util_ray_point_distance(o, d, centre);
}

static void test_translucent_outer_over_opaque_inner(void) {
  ir_camera c = camera_from(30, 20);
  const double r_outer = 0.35 * N, r_inner = r_outer - 10.0;
  ir_frame_desc f = {.width = W, .height = H, .camera = c, .surface_count = 2};
  f.surfaces[0] = (ir_surface){.isovalue = 0.0f, .color = {1, 0, 0}, .opacity = 0.5f};  /* outer, red */
  f.surfaces[1] = (ir_surface){.isovalue = 10.0f, .color = {0, 1, 0}, .opacity = 1.0f}; /* inner, green */
  static frame_out o;
  if (!render_all(g_r, g_cpu, f, &o)) {
    CHECK(false);
    return;
  }
  size_t centre = 0, ring = 0, bad_centre = 0, bad_ring = 0, bad_background = 0;
  for (int py = 0; py < H; py++)
    for (int px = 0; px < W; px++) {
      const uint8_t *p = o.rgba + 4 * ((size_t)py * W + (size_t)px);
      double dist = centre_distance(&c, px, py);
      if (dist < r_inner - 2.0) { /* through both surfaces: red over green, opaque */
        centre++;
        bad_centre += !(p[3] == 255 && p[0] > p[2] + 40 && p[1] > p[2] + 40);
      } else if (dist > r_inner + 1.5 && dist < r_outer - 1.5) { /* outer only: in and out, 0.75 */
        ring++;
        bad_ring += !(p[3] > 175 && p[3] < 205 && p[0] > 40 && p[1] * 4 < p[0] && p[2] * 4 < p[0]);
      } else if (dist > r_outer + 1.5) {
        bad_background += p[3] != 0;
      }
    }
  CHECK_MSG(centre > 100 && ring > 100, "%zu centre and %zu ring pixels", centre, ring);
  CHECK_MSG(bad_centre == 0, "%zu of %zu centre pixels lack the red or the green", bad_centre, centre);
  CHECK_MSG(bad_ring == 0, "%zu of %zu ring pixels are not two layers of red", bad_ring, ring);
  CHECK_EQ_INT(bad_background, 0);
  /* Depth is the first (outer) surface's. */
  size_t mid = (size_t)(H / 2) * W + W / 2;
  double o3[3], d3[3];
  util_pixel_ray(&c, W, H, W / 2, H / 2, o3, d3);
  double dc = util_ray_point_distance(o3, d3, (double[3]){N / 2.0, N / 2.0, N / 2.0});
  double along = 0;
  for (int k = 0; k < 3; k++) along += (N / 2.0 - o3[k]) * d3[k];
  double expected = along - sqrt(r_outer * r_outer - dc * dc);
  CHECK_MSG(fabs(o.depth[mid] - expected) < 0.1, "centre depth %.3f, expected the outer sphere at %.3f",
            (double)o.depth[mid], expected);
}

static void test_clip_box_and_plane_remove_the_upper_cap(void) {
  ir_camera top = camera_from(0, 89.5);
  const double r = 0.35 * N;
  ir_frame_desc f = {.width = W, .height = H, .camera = top, .isovalue = 0.0f};
  static frame_out whole, boxed, planed;
  bool ok = render_all(g_r, g_cpu, f, &whole);
  f.clip_lo[0] = f.clip_lo[1] = f.clip_lo[2] = 0.0f;
  f.clip_hi[0] = f.clip_hi[1] = (float)N;
  f.clip_hi[2] = N / 2.0f;
  ok = ok && render_all(g_r, g_cpu, f, &boxed);
  memset(f.clip_lo, 0, sizeof f.clip_lo);
  memset(f.clip_hi, 0, sizeof f.clip_hi);
  f.clip_plane_on = true; /* keeps z <= N/2: -z + N/2 >= 0 */
  f.clip_plane[0] = 0;
  f.clip_plane[1] = 0;
  f.clip_plane[2] = -1;
  f.clip_plane[3] = N / 2.0f;
  ok = ok && render_all(g_r, g_cpu, f, &planed);
  CHECK(ok);
  if (!ok) return;
  size_t mid = (size_t)(H / 2) * W + W / 2;
  double o[3], d[3];
  util_pixel_ray(&top, W, H, W / 2, H / 2, o, d);
  double along = 0;
  for (int k = 0; k < 3; k++) along += (N / 2.0 - o[k]) * d[k];
  double dc = util_ray_point_distance(o, d, (double[3]){N / 2.0, N / 2.0, N / 2.0});
  double half_chord = sqrt(r * r - dc * dc);
  CHECK_MSG(fabs(whole.depth[mid] - (along - half_chord)) < 0.1, "unclipped: depth %.3f, top at %.3f",
            (double)whole.depth[mid], along - half_chord);
  CHECK_MSG(fabs(boxed.depth[mid] - (along + half_chord)) < 0.1, "clip box: depth %.3f, bottom at %.3f",
            (double)boxed.depth[mid], along + half_chord);
  CHECK_MSG(fabs(planed.depth[mid] - (along + half_chord)) < 0.1, "clip plane: depth %.3f, bottom at %.3f",
            (double)planed.depth[mid], along + half_chord);
  /* From the side, nothing is drawn above the cut. */
  ir_camera side = camera_from(0, 0);
  f.camera = side;
  static frame_out s;
  if (!render_all(g_r, g_cpu, f, &s)) return;
  size_t above = 0, below = 0;
  for (int py = 0; py < H; py++)
    for (int px = 0; px < W; px++) {
      double o2[3], d2[3];
      util_pixel_ray(&side, W, H, px, py, o2, d2);
      /* the height where the ray passes the centre's vertical plane through the volume */
      double t = 0;
      for (int k = 0; k < 2; k++) t += (N / 2.0 - o2[k]) * d2[k];
      double len2 = d2[0] * d2[0] + d2[1] * d2[1];
      double z = o2[2] + d2[2] * t / len2;
      bool hit = s.rgba[4 * ((size_t)py * W + (size_t)px) + 3] != 0;
      if (z > N / 2.0 + 1.5) above += hit;
      if (z < N / 2.0 - 1.5 && centre_distance(&side, px, py) < r - 2.0) below += !hit;
    }
  CHECK_MSG(above == 0, "%zu pixels drawn above the clip plane", above);
  CHECK_MSG(below == 0, "%zu pixels below the cut not drawn", below);
}

static void test_colour_follows_the_second_volume(void) {
  ir_volume ramp;
  memset(&ramp, 0, sizeof ramp);
  for (int k = 0; k < 3; k++) {
    ramp.dims[k] = N;
    ramp.spacing[k] = 1.0f;
  }
  ramp.type = IR_VOXEL_FLOAT32;
  ramp.bytes = (size_t)N * N * N * sizeof(float);
  ramp.voxels = malloc(ramp.bytes);
  snprintf(ramp.name, sizeof ramp.name, "ramp");
  for (size_t i = 0; i < (size_t)N * N * N; i++) ((float *)ramp.voxels)[i] = (float)(i % N);
  char err[IR_ERR_LEN] = "";
  CHECK(ir_renderer_set_color_volume(g_r, &ramp, err) == IR_OK);
  if (g_cpu) CHECK(ir_renderer_set_color_volume(g_cpu, &ramp, err) == IR_OK);
  /* Looking along +y (azimuth -90: eye on the -y side) x grows to the right of the image. */
  ir_camera c = camera_from(-90, 0);
  double o[3], d[3], ol[3], dl[3];
  util_pixel_ray(&c, W, H, W - 1, H / 2, o, d);
  util_pixel_ray(&c, W, H, 0, H / 2, ol, dl);
  bool x_grows_right = d[0] > dl[0];
  ir_frame_desc f = {.width = W, .height = H, .camera = c, .isovalue = 0.0f, .color_by = IR_COLOR_VOLUME,
                     .colormap = IR_COLORMAP_VIRIDIS,
                     .color_range = {(float)(N / 2.0 - 0.2 * N), (float)(N / 2.0 + 0.2 * N)}};
  static frame_out img;
  if (render_all(g_r, g_cpu, f, &img)) {
    size_t low = 0, high = 0, bad = 0;
    for (int py = 0; py < H; py++)
      for (int px = 0; px < W; px++) {
        const uint8_t *p = img.rgba + 4 * ((size_t)py * W + (size_t)px);
        if (p[3] != 255) continue;
        double o2[3], d2[3];
        util_pixel_ray(&c, W, H, px, py, o2, d2);
        double x = o2[0] + d2[0] * img.depth[(size_t)py * W + px];
        bool off = false;
        double u = (x - f.color_range[0]) / (f.color_range[1] - f.color_range[0]);
        if (u < 0.25) {
          low++;
          off = !(p[2] > p[0]); /* viridis' low end: blue over red */
        } else if (u > 0.85) { /* viridis is red over blue above 0.76 */
          high++;
          off = !(p[0] > p[2]); /* its high end: yellow */
        }
        if (off && bad++ < 5)
          fprintf(stderr, "  pixel (%d,%d) at x %.2f: rgb %d %d %d\n", px, py, x, p[0], p[1], p[2]);
      }
    CHECK_MSG(low > 100 && high > 100, "%zu low and %zu high pixels", low, high);
    CHECK_MSG(bad == 0, "%zu pixels off the colour map's end for their x", bad);
  }
  (void)x_grows_right;
  /* The gradient of a distance field is 1: the range [0, 2] reads viridis' middle (green-teal). */
  f.color_by = IR_COLOR_GRADIENT;
  f.color_range[0] = 0.0f;
  f.color_range[1] = 2.0f;
  if (render_all(g_r, g_cpu, f, &img)) {
    size_t hits = 0, bad = 0;
    for (size_t i = 0; i < (size_t)W * H; i++) {
      const uint8_t *p = img.rgba + 4 * i;
      if (p[3] != 255) continue;
      hits++;
      bad += !(p[1] > p[0] + 20);
    }
    CHECK(hits > 1000);
    CHECK_MSG(bad <= hits / 100, "%zu of %zu pixels not the map's middle", bad, hits);
  }
  /* Dims must match. */
  ir_volume small = ramp;
  small.dims[0] = N / 2;
  CHECK(ir_renderer_set_color_volume(g_r, &small, err) == IR_ERR_INPUT);
  CHECK(strstr(err, "must match") != NULL);
  CHECK(ir_renderer_set_color_volume(g_r, NULL, err) == IR_OK);
  if (g_cpu) CHECK(ir_renderer_set_color_volume(g_cpu, NULL, err) == IR_OK);
  ir_frame_desc needs = f;
  needs.color_by = IR_COLOR_VOLUME;
  CHECK(ir_render_frame(g_r, &needs, NULL, err) == IR_ERR_INPUT);
  ir_volume_free(&ramp);
}

/* ---- Exact refinement: distance of hits from the trilinear field's isosurface ------------------ */
static double voxel_at(const ir_volume *v, long i, long j, long k) {
  long n[3] = {(long)v->dims[0], (long)v->dims[1], (long)v->dims[2]};
  i = i < 0 ? 0 : (i >= n[0] ? n[0] - 1 : i);
  j = j < 0 ? 0 : (j >= n[1] ? n[1] - 1 : j);
  k = k < 0 ? 0 : (k >= n[2] ? n[2] - 1 : k);
  return ((const float *)v->voxels)[(size_t)i + (size_t)n[0] * ((size_t)j + (size_t)n[1] * (size_t)k)];
}

/* The trilinear interpolant (voxel centres at i + 0.5), in double. */
static double trilinear(const ir_volume *v, const double p[3]) {
  double b[3], w[3];
  long c[3];
  for (int k = 0; k < 3; k++) {
    b[k] = p[k] - 0.5;
    c[k] = (long)floor(b[k]);
    w[k] = b[k] - (double)c[k];
  }
  double s = 0;
  for (int dz = 0; dz < 2; dz++)
    for (int dy = 0; dy < 2; dy++)
      for (int dx = 0; dx < 2; dx++)
        s += (dx ? w[0] : 1 - w[0]) * (dy ? w[1] : 1 - w[1]) * (dz ? w[2] : 1 - w[2]) *
             voxel_at(v, c[0] + dx, c[1] + dy, c[2] + dz);
  return s;
}

/* RMS of |f(x) - iso| / |grad f(x)| over the hit points of a frame: the first-order distance of
 * the hits from the isosurface of the trilinear field, in voxels. */
static double rms_distance(ir_renderer *r, const ir_volume *v, float iso, bool texture_refine, size_t *hits) {
  ir_camera c = ir_camera_orbit(v, 35.0f, 25.0f, 1.0f, IR_AXIS_NONE);
  ir_frame_desc f = {.width = 192, .height = 192, .camera = c, .isovalue = iso, .pipeline = IR_PIPELINE_SINGLE,
                     .texture_refine = texture_refine};
  char err[IR_ERR_LEN] = "";
  uint8_t *rgba = malloc((size_t)f.width * f.height * 4);
  float *depth = malloc((size_t)f.width * f.height * sizeof(float));
  double sum = 0;
  *hits = 0;
  if (ir_render_frame(r, &f, NULL, err) == IR_OK && ir_render_read_depth(r, depth, err) == IR_OK) {
    for (int py = 0; py < f.height; py++)
      for (int px = 0; px < f.width; px++) {
        float t = depth[(size_t)py * f.width + px];
        if (!isfinite(t)) continue;
        double o3[3], d3[3], x[3];
        util_pixel_ray(&c, f.width, f.height, px, py, o3, d3);
        for (int k = 0; k < 3; k++) x[k] = o3[k] + d3[k] * t;
        double g2 = 0, h = 1e-3;
        for (int k = 0; k < 3; k++) {
          double a[3] = {x[0], x[1], x[2]}, b[3] = {x[0], x[1], x[2]};
          a[k] += h;
          b[k] -= h;
          double gk = (trilinear(v, a) - trilinear(v, b)) / (2 * h);
          g2 += gk * gk;
        }
        if (g2 < 1e-12) continue;
        double dist = fabs(trilinear(v, x) - iso) / sqrt(g2);
        sum += dist * dist;
        (*hits)++;
      }
  } else {
    fprintf(stderr, "render failed: %s\n", err);
  }
  free(rgba);
  free(depth);
  return *hits ? sqrt(sum / (double)*hits) : INFINITY;
}

static void test_exact_refinement_quality(void) {
  const char *sources[] = {"builtin:sphere:128", "builtin:marschner-lobb:64"};
  for (int i = 0; i < 2; i++) {
    ir_volume v;
    if (!util_load(sources[i], &v)) {
      CHECK(false);
      continue;
    }
    ir_renderer *r = NULL;
    char err[IR_ERR_LEN];
    ir_renderer_desc rd = {.device = g_gpu ? IR_DEVICE_GPU : IR_DEVICE_CPU, .volume = &v};
    CHECK(ir_renderer_create(&rd, &r, err) == IR_OK);
    if (r) {
      float iso = (float)ir_builtin_isovalue(sources[i]);
      size_t n_tex = 0, n_exact = 0;
      double tex = rms_distance(r, &v, iso, true, &n_tex), exact = rms_distance(r, &v, iso, false, &n_exact);
      printf("%s %s: RMS distance of hits from the trilinear isosurface: texture refinement %.4f voxel "
             "(%zu hits), exact %.4f voxel (%zu hits)\n",
             g_gpu ? "GPU" : "CPU", sources[i], tex, n_tex, exact, n_exact);
      CHECK(n_exact > 2000);
      CHECK_MSG(exact <= 0.02, "%s: exact refinement RMS %.4f voxel > 0.02", sources[i], exact);
      CHECK_MSG(exact < tex, "%s: exact refinement (%.4f) not better than texture (%.4f)", sources[i], exact, tex);
    }
    ir_renderer_destroy(r);
    ir_volume_free(&v);
  }
}

int main(int argc, char **argv) {
  g_gpu = argc > 1 && strcmp(argv[1], "--gpu") == 0;
  ir_volume v;
  char src[64];
  snprintf(src, sizeof src, "builtin:sphere:%d", N);
  if (!util_load(src, &v)) return 1;
  char err[IR_ERR_LEN] = "";
  ir_renderer_desc rd = {.device = g_gpu ? IR_DEVICE_GPU : IR_DEVICE_CPU, .volume = &v};
  if (ir_renderer_create(&rd, &g_r, err) != IR_OK) {
    if (g_gpu && strstr(err, "no CUDA device")) {
      printf("skipped: %s\n", err);
      ir_volume_free(&v);
      return 77;
    }
    fprintf(stderr, "renderer: %s\n", err);
    return 1;
  }
  if (g_gpu) {
    ir_renderer_desc cd = {.device = IR_DEVICE_CPU, .volume = &v};
    CHECK(ir_renderer_create(&cd, &g_cpu, err) == IR_OK);
  }
  RUN(test_translucent_outer_over_opaque_inner);
  RUN(test_clip_box_and_plane_remove_the_upper_cap);
  RUN(test_colour_follows_the_second_volume);
  RUN(test_exact_refinement_quality);
  ir_renderer_destroy(g_r);
  ir_renderer_destroy(g_cpu);
  ir_volume_free(&v);
  return check_summary();
}
