/* The renderer's first crossings against an exact reference of another kind: each pixel's ray
 * walked voxel cell by voxel cell, the trilinear field along it in each cell written as a cubic
 * in t (Parker et al. 1998; Marmitt et al. 2004, "Fast and Accurate Ray-Voxel Intersection
 * Techniques for Iso-Surface Ray Tracing"), its first root isolated between the cubic's extrema
 * and bisected, in double precision, on the voxels themselves (clamped at the faces as the
 * texture is). The CPU renderer (the GPU's per-ray code) samples every half voxel, finds a
 * crossing between two samples and refines it on the exact field (docs/render.md, "Crossings").
 *
 * Per scene it counts, over the hits:
 *   - same crossing: both within half a voxel, and the RMS of their distance (refinement);
 *   - stepped over: the exact first crossing lies before the march's, or the march missed the
 *     surface (a thin sliver between two samples, which half-voxel steps can cross unseen);
 *   - false: the march's crossing lies before the exact first one (a crossing the field lacks);
 * and what a cell-by-cell method would do per ray: the voxel cells it visits inside valid 8^3
 * cells before its hit, and the cubics it solves (cells whose values hold the isovalue).
 *
 * Without arguments, the test: three builtin volumes with bounds on each count, and one with a
 * quarter-voxel step. With `SOURCE WIDTH HEIGHT DISTANCE [VIEWS [STRIDE [ISO [STEP]]]]` it prints
 * the counts for that scene (every STRIDE-th pixel of each row and column, VIEWS views of the
 * orbit at 25 degrees; ISO nan: the builtin's; STEP: the sample step in voxels), the figures
 * docs/render.md gives. `--gpu` first: the same with the GPU renderer's depth (its default
 * pipeline; the others draw the same bits, test_render_gpu), exit 77 without a device. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check.h"
#include "tests/render/render_test_util.h"

static ir_device g_device = IR_DEVICE_CPU; /* --gpu: the GPU renderer's depth instead */

typedef struct field {
  int n[3];
  float *v;           /* the voxels as float */
  unsigned char *ok;  /* per 8^3 cell (voxels 8c .. 8c + 8, the walk's shared border): holds iso */
  int m[3];
  double iso;
} field;

static float field_at(const field *f, int x, int y, int z) {
  x = x < 0 ? 0 : (x >= f->n[0] ? f->n[0] - 1 : x);
  y = y < 0 ? 0 : (y >= f->n[1] ? f->n[1] - 1 : y);
  z = z < 0 ? 0 : (z >= f->n[2] ? f->n[2] - 1 : z);
  return f->v[(size_t)x + (size_t)f->n[0] * ((size_t)y + (size_t)f->n[1] * (size_t)z)];
}

static bool field_make(const ir_volume *vol, double iso, field *f) {
  for (int k = 0; k < 3; k++) {
    f->n[k] = (int)vol->dims[k];
    f->m[k] = (f->n[k] + 7) / 8;
  }
  f->iso = iso;
  size_t count = vol->dims[0] * vol->dims[1] * vol->dims[2];
  f->v = malloc(count * sizeof *f->v);
  f->ok = calloc((size_t)f->m[0] * f->m[1] * f->m[2], 1);
  if (!f->v || !f->ok) return false;
  float *next = f->v;
  for (size_t z = 0; z < vol->dims[2]; z++)
    for (size_t y = 0; y < vol->dims[1]; y++)
      for (size_t x = 0; x < vol->dims[0]; x++) *next++ = (float)ir_volume_value_at(vol, x, y, z);
  for (int z = 0; z < f->m[2]; z++)
    for (int y = 0; y < f->m[1]; y++)
      for (int x = 0; x < f->m[0]; x++) {
        float lo = INFINITY, hi = -INFINITY;
        for (int k = 8 * z; k <= 8 * z + 8; k++)
          for (int j = 8 * y; j <= 8 * y + 8; j++)
            for (int i = 8 * x; i <= 8 * x + 8; i++) {
              float s = field_at(f, i, j, k);
              lo = fminf(lo, s);
              hi = fmaxf(hi, s);
            }
        f->ok[x + f->m[0] * (y + f->m[1] * z)] = lo <= iso && iso <= hi;
      }
  return true;
}

static void field_free(field *f) {
  free(f->v);
  free(f->ok);
}

/* A cubic c0 + c1 t + c2 t^2 + c3 t^3 times the linear a0 + a1 t (the product's cubic term; the
 * caller never multiplies more than three linear factors). */
typedef struct cubic {
  double c[4];
} cubic;

static cubic cubic_times(cubic p, double a0, double a1) {
  cubic q = {{0, 0, 0, 0}};
  for (int i = 0; i < 3; i++) {
    q.c[i] += p.c[i] * a0;
    q.c[i + 1] += p.c[i] * a1;
  }
  return q;
}

static double cubic_at(const cubic *p, double t) { return ((p->c[3] * t + p->c[2]) * t + p->c[1]) * t + p->c[0]; }

typedef struct walk_counts {
  long rays, cells, cubics;
} walk_counts;

/* The first root of f - iso along cell (cx, cy, cz) of the dual grid (corners at voxel centres)
 * for t in [ta, tb], or INFINITY: the trilinear interpolant along the ray, a cubic in t, split
 * at its extrema into monotone pieces; the first piece whose ends differ in sign (>= iso against
 * < iso, the renderer's rule) is bisected. */
static double cell_root(const field *f, const double q[3], const double d[3], const int c[3], double ta, double tb,
                        walk_counts *wc) {
  double v[8], lo = INFINITY, hi = -INFINITY;
  for (int i = 0; i < 8; i++) {
    v[i] = field_at(f, c[0] + (i & 1), c[1] + (i >> 1 & 1), c[2] + (i >> 2 & 1));
    lo = fmin(lo, v[i]);
    hi = fmax(hi, v[i]);
  }
  if (!(lo <= f->iso && f->iso <= hi)) return INFINITY;
  wc->cubics++;
  cubic g = {{0, 0, 0, 0}};
  for (int i = 0; i < 8; i++) {
    cubic p = {{v[i], 0, 0, 0}};
    for (int k = 0; k < 3; k++) {
      double u0 = q[k] - c[k], u1 = d[k]; /* the cell's local coordinate along axis k */
      p = (i >> k & 1) ? cubic_times(p, u0, u1) : cubic_times(p, 1.0 - u0, -u1);
    }
    for (int j = 0; j < 4; j++) g.c[j] += p.c[j];
  }
  g.c[0] -= f->iso;
  double split[4] = {ta, 0, 0, 0}, r[2];
  int ns = 1, nr = 0;
  double a = 3 * g.c[3], b = 2 * g.c[2], cc = g.c[1]; /* the derivative */
  if (a != 0) {
    double disc = b * b - 4 * a * cc;
    if (disc >= 0) {
      double h = -0.5 * (b + (b >= 0 ? sqrt(disc) : -sqrt(disc)));
      r[nr++] = h / a;
      if (h != 0) r[nr++] = cc / h;
    }
  } else if (b != 0) {
    r[nr++] = -cc / b;
  }
  if (nr == 2 && r[0] > r[1]) {
    double t = r[0];
    r[0] = r[1];
    r[1] = t;
  }
  for (int i = 0; i < nr; i++)
    if (r[i] > ta && r[i] < tb) split[ns++] = r[i];
  split[ns++] = tb;
  for (int i = 0; i + 1 < ns; i++) {
    double s0 = split[i], s1 = split[i + 1], g0 = cubic_at(&g, s0);
    if ((g0 >= 0) == (cubic_at(&g, s1) >= 0)) continue;
    for (int it = 0; it < 64; it++) {
      double m = 0.5 * (s0 + s1), gm = cubic_at(&g, m);
      if ((gm >= 0) == (g0 >= 0)) s0 = m;
      else s1 = m;
    }
    return 0.5 * (s0 + s1);
  }
  return INFINITY;
}

/* The exact first crossing of the ray o + t d (voxel space, |d| = 1) in [t0, t1]: a 3D-DDA over
 * the dual grid's cells (-1 .. n - 1 along each axis: the outer half voxels, where the clamped
 * field is constant across the face), cells of invalid 8^3 cells passed without a read. */
static double exact_first_crossing(const field *f, const double o[3], const double d[3], double t0, double t1,
                                   walk_counts *wc) {
  double q[3], next[3], delta[3];
  int c[3], step[3];
  for (int k = 0; k < 3; k++) {
    q[k] = o[k] - 0.5;
    c[k] = (int)floor(q[k] + t0 * d[k]);
    c[k] = c[k] < -1 ? -1 : (c[k] > f->n[k] - 1 ? f->n[k] - 1 : c[k]);
    step[k] = d[k] > 0 ? 1 : (d[k] < 0 ? -1 : 0);
    next[k] = step[k] ? ((step[k] > 0 ? c[k] + 1 : c[k]) - q[k]) / d[k] : INFINITY;
    delta[k] = step[k] ? fabs(1.0 / d[k]) : INFINITY;
  }
  for (double t = t0;;) {
    double t_out = fmin(fmin(next[0], next[1]), fmin(next[2], t1));
    int mc[3];
    for (int k = 0; k < 3; k++) {
      mc[k] = c[k] < 0 ? 0 : c[k] >> 3;
      if (mc[k] >= f->m[k]) mc[k] = f->m[k] - 1;
    }
    if (f->ok[mc[0] + f->m[0] * (mc[1] + f->m[1] * mc[2])] && t_out > t) {
      wc->cells++;
      double root = cell_root(f, q, d, c, t, t_out, wc);
      if (root < INFINITY) return root;
    }
    if (t_out >= t1) return INFINITY;
    int ax = next[0] <= next[1] && next[0] <= next[2] ? 0 : (next[1] <= next[2] ? 1 : 2);
    c[ax] += step[ax];
    if (c[ax] < -1 || c[ax] > f->n[ax] - 1) return INFINITY;
    t = t_out;
    next[ax] += delta[ax];
  }
}

typedef struct crossing_counts {
  long hits, same, stepped_over, missed, march_only, false_crossing;
  double same_sq;
  walk_counts walk;
} crossing_counts;

/* Renders the scene (on the CPU, or the GPU with --gpu; samples every `step` voxels, 0: the
 * default) and compares every stride-th pixel's depth with the exact first crossing. False when
 * the volume or the renderer fails. */
static bool compare_scene(const char *source, int w, int h, double distance, int views, int stride, double iso,
                          float step, crossing_counts *out) {
  memset(out, 0, sizeof *out);
  ir_volume vol;
  if (!util_load(source, &vol)) return false;
  if (!(iso == iso)) iso = ir_builtin_isovalue(source);
  if (vol.spacing[0] != 1.0f || vol.spacing[1] != 1.0f || vol.spacing[2] != 1.0f)
    fprintf(stderr, "note: %s has anisotropic spacing; the comparison assumes 1\n", source);
  field f = {.v = NULL, .ok = NULL};
  char err[IR_ERR_LEN] = "";
  ir_renderer *r = NULL;
  float *depth = malloc((size_t)w * h * sizeof *depth);
  ir_renderer_desc rd = {.device = g_device, .volume = &vol};
  bool ok = depth && field_make(&vol, iso, &f) && ir_renderer_create(&rd, &r, err) == IR_OK;
  for (int view = 0; ok && view < views; view++) {
    ir_camera cam = ir_camera_orbit(&vol, 360.0f * (float)view / 8.0f, 25.0f, (float)distance, IR_AXIS_NONE);
    ir_frame_desc fd = {.width = w, .height = h, .isovalue = (float)iso, .camera = cam, .sample_step = step};
    ok = ir_render_frame(r, &fd, NULL, err) == IR_OK && ir_render_read_depth(r, depth, err) == IR_OK;
    for (int py = 0; ok && py < h; py += stride)
      for (int px = 0; px < w; px += stride) {
        double o[3], d[3], t0 = 0.0, t1 = INFINITY;
        util_pixel_ray(&cam, w, h, px, py, o, d);
        for (int k = 0; k < 3; k++) {
          if (d[k] == 0.0) {
            if (o[k] < 0.0 || o[k] > f.n[k]) t1 = -1.0;
            continue;
          }
          double a = -o[k] / d[k], b = (f.n[k] - o[k]) / d[k];
          t0 = fmax(t0, fmin(a, b));
          t1 = fmin(t1, fmax(a, b));
        }
        double exact = INFINITY, march = depth[(size_t)py * w + px];
        if (t0 < t1) {
          out->walk.rays++;
          exact = exact_first_crossing(&f, o, d, t0, t1, &out->walk);
        }
        if (!(exact < INFINITY)) {
          out->march_only += march < INFINITY;
          continue;
        }
        out->hits++;
        if (!(march < INFINITY)) out->missed++;
        else if (fabs(march - exact) <= 0.5) {
          out->same++;
          out->same_sq += (march - exact) * (march - exact);
        } else if (march > exact) out->stepped_over++;
        else out->false_crossing++;
      }
  }
  if (!ok) fprintf(stderr, "%s: %s\n", source, err[0] ? err : "out of memory");
  if (r) ir_renderer_destroy(r);
  field_free(&f);
  free(depth);
  ir_volume_free(&vol);
  return ok;
}

static double percent(long part, long whole) { return whole ? 100.0 * (double)part / (double)whole : 0.0; }
static double same_rms(const crossing_counts *c) { return c->same ? sqrt(c->same_sq / (double)c->same) : 0.0; }

static void print_counts(const char *source, int w, int h, double distance, float step, const crossing_counts *c) {
  printf("%s at %dx%d, distance %.2f, samples every %g voxels: %ld rays in the box, %ld exact hits\n", source, w, h,
         distance, (double)(step > 0.0f ? step : IR_SAMPLE_STEP_DEFAULT), c->walk.rays, c->hits);
  printf("  same crossing (within half a voxel): %.3f %% of hits, RMS %.5f voxel\n", percent(c->same, c->hits),
         same_rms(c));
  printf("  stepped over by the march: %.3f %% of hits (a later crossing %.3f %%, none %.3f %%); false: %ld; "
         "march-only hits: %ld\n",
         percent(c->stepped_over + c->missed, c->hits), percent(c->stepped_over, c->hits), percent(c->missed, c->hits),
         c->false_crossing, c->march_only);
  printf("  cell by cell: %.1f voxel cells a ray inside valid 8^3 cells, %.2f cubics a ray\n",
         c->walk.rays ? (double)c->walk.cells / (double)c->walk.rays : 0.0,
         c->walk.rays ? (double)c->walk.cubics / (double)c->walk.rays : 0.0);
}

/* One scene of the test: the bounds each count must keep. */
static void check_scene(const char *source, int size, double distance, int views, float step,
                        double max_stepped_percent, double max_rms) {
  crossing_counts c;
  bool ok = compare_scene(source, size, size, distance, views, 1, NAN, step, &c);
  CHECK(ok);
  if (!ok) return;
  print_counts(source, size, size, distance, step, &c);
  CHECK_MSG(c.hits > 1000, "%s: only %ld hits", source, c.hits);
  CHECK_MSG(same_rms(&c) <= max_rms, "%s: refined crossings %.5f voxel RMS from the exact ones (at most %.3f)", source,
            same_rms(&c), max_rms);
  CHECK_MSG(percent(c.stepped_over + c.missed, c.hits) <= max_stepped_percent,
            "%s: the march stepped over %.3f %% of the first crossings (at most %.2f %%)", source,
            percent(c.stepped_over + c.missed, c.hits), max_stepped_percent);
  /* A crossing the field does not have, or a hit where it has none: at most a grazing ray's
   * worth, where the texture unit's 8-bit weights decide a tangent touch. */
  CHECK_MSG(c.false_crossing + c.march_only <= c.hits / 2000, "%s: %ld false crossings, %ld march-only hits", source,
            c.false_crossing, c.march_only);
}

/* A smooth surface: every first crossing found, to a thousandth of a voxel. */
static void test_sphere(void) { check_scene("builtin:sphere:64", 192, 1.5, 2, 0.0f, 0.0, 0.0025); }
/* A busy one: a few slivers thinner than half a voxel along the ray are stepped over. */
static void test_fractal(void) { check_scene("builtin:fractal:128", 256, 1.0, 4, 0.0f, 1.0, 0.01); }
/* Marschner-Lobb's signal near the grid's limit: many thin slivers. */
static void test_marschner_lobb(void) { check_scene("builtin:marschner-lobb:64", 256, 1.5, 4, 0.0f, 10.0, 0.02); }
/* A quarter-voxel step (ir_frame_desc.sample_step) steps over about half as many slivers. */
static void test_finer_step_finds_more_slivers(void) {
  check_scene("builtin:marschner-lobb:64", 256, 1.5, 4, 0.25f, 5.0, 0.02);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--gpu") == 0) {
    g_device = IR_DEVICE_GPU;
    argv[1] = argv[0];
    argv++;
    argc--;
    ir_volume probe;
    char err[IR_ERR_LEN] = "";
    ir_renderer *r = NULL;
    if (!util_load("builtin:sphere:8", &probe)) return 1;
    ir_renderer_desc rd = {.device = IR_DEVICE_GPU, .volume = &probe};
    ir_status st = ir_renderer_create(&rd, &r, err);
    if (r) ir_renderer_destroy(r);
    ir_volume_free(&probe);
    if (st != IR_OK) {
      if (strstr(err, "no CUDA device")) {
        printf("skipped: %s\n", err);
        return 77;
      }
      fprintf(stderr, "GPU renderer: %s\n", err);
      return 1;
    }
  }
  if (argc >= 5) {
    crossing_counts c;
    int w = atoi(argv[2]), h = atoi(argv[3]), views = argc > 5 ? atoi(argv[5]) : 1, stride = argc > 6 ? atoi(argv[6]) : 1;
    double distance = atof(argv[4]), iso = argc > 7 ? atof(argv[7]) : NAN;
    float step = argc > 8 ? (float)atof(argv[8]) : 0.0f;
    if (w < 1 || h < 1 || !(distance > 0) || views < 1 || stride < 1) {
      fprintf(stderr, "usage: %s [--gpu] [SOURCE WIDTH HEIGHT DISTANCE [VIEWS [STRIDE [ISO [STEP]]]]]\n", argv[0]);
      return 2;
    }
    if (!compare_scene(argv[1], w, h, distance, views, stride, iso, step, &c)) return 1;
    print_counts(argv[1], w, h, distance, step, &c);
    return 0;
  }
  if (argc > 1) {
    fprintf(stderr, "usage: %s [--gpu] [SOURCE WIDTH HEIGHT DISTANCE [VIEWS [STRIDE [ISO [STEP]]]]]\n", argv[0]);
    return 2;
  }
  RUN(test_sphere);
  RUN(test_fractal);
  RUN(test_marschner_lobb);
  RUN(test_finer_step_finds_more_slivers);
  return check_summary();
}
