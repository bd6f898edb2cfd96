/* Helpers shared by the render tests (CPU and GPU): volumes, geometry checks, image measures.
 * Header-only, for C and CUDA test files. */
#ifndef INKRAY_TESTS_RENDER_UTIL_H
#define INKRAY_TESTS_RENDER_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/volume.h"
#include "render/render.h"

/* Whether `word` is one of the comma-separated names in `list`. */
static inline int util_in_list(const char *list, const char *word) {
  size_t n = strlen(word);
  for (const char *p = list; p && *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n && strncmp(p, word, n) == 0) return 1;
    p = end ? end + 1 : NULL;
  }
  return 0;
}

/* How far a GPU image is from the CPU reference's (or any two RGBA8 images of n pixels): the
 * counts each render test holds to its own tolerance. */
typedef struct util_image_diff {
  size_t cover_diff; /* pixels hit (alpha 255) in one image only */
  size_t both;       /* pixels hit in both */
  size_t close;      /* of those, every RGB channel within close_levels */
  size_t exact;      /* of those, RGB identical */
  size_t far;        /* channels (RGBA, of every pixel) off by more than far_levels */
  int worst;         /* the largest RGB difference of a pixel hit in both */
} util_image_diff;

static inline util_image_diff util_image_diff_of(const uint8_t *a, const uint8_t *b, size_t n, int close_levels,
                                                 int far_levels) {
  util_image_diff d = {0, 0, 0, 0, 0, 0};
  for (size_t i = 0; i < n; i++) {
    for (int c = 0; c < 4; c++) d.far += abs((int)a[4 * i + c] - (int)b[4 * i + c]) > far_levels;
    int ha = a[4 * i + 3] == 255, hb = b[4 * i + 3] == 255;
    if (ha != hb) {
      d.cover_diff++;
      continue;
    }
    if (!ha) continue;
    d.both++;
    int worst = 0;
    for (int c = 0; c < 3; c++) {
      int e = abs((int)a[4 * i + c] - (int)b[4 * i + c]);
      worst = e > worst ? e : worst;
    }
    d.worst = worst > d.worst ? worst : d.worst;
    d.close += worst <= close_levels;
    d.exact += worst == 0;
  }
  return d;
}

/* Background pixels have alpha 0, surface pixels alpha 255 (render.h). */
static inline size_t util_coverage(const uint8_t *rgba, int w, int h) {
  size_t n = 0;
  for (size_t i = 0; i < (size_t)w * (size_t)h; i++) n += rgba[4 * i + 3] == 255;
  return n;
}

static inline int util_load(const char *source, ir_volume *v) {
  ir_volume_desc d;
  memset(&d, 0, sizeof d);
  d.source = source;
  char err[IR_ERR_LEN] = "";
  if (ir_volume_load(&d, v, err) != IR_OK) {
    fprintf(stderr, "cannot load %s: %s\n", source, err);
    return 0;
  }
  return 1;
}

/* A uint8 volume of zeros with a cube of `value` voxels [lo, hi] on every axis. */
static inline void util_blob_volume(ir_volume *v, size_t n, size_t lo, size_t hi, uint8_t value) {
  memset(v, 0, sizeof *v);
  for (int k = 0; k < 3; k++) {
    v->dims[k] = n;
    v->spacing[k] = 1.0f;
  }
  v->type = IR_VOXEL_UINT8;
  v->bytes = n * n * n;
  v->voxels = calloc(v->bytes, 1);
  uint8_t *p = (uint8_t *)v->voxels;
  for (size_t z = lo; z <= hi; z++)
    for (size_t y = lo; y <= hi; y++)
      for (size_t x = lo; x <= hi; x++) p[(z * n + y) * n + x] = value;
  snprintf(v->name, sizeof v->name, "blob:%zu", n);
  v->value_min = 0;
  v->value_max = value;
}

/* The primary ray of pixel (px, py) in world space, in double precision and written
 * independently of render/camera.c. */
static inline void util_pixel_ray(const ir_camera *c, int w, int h, int px, int py, double o[3], double d[3]) {
  double f[3], r[3], u[3];
  for (int k = 0; k < 3; k++) f[k] = (double)c->target[k] - c->eye[k];
  double fl = sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2]);
  for (int k = 0; k < 3; k++) f[k] /= fl;
  r[0] = f[1] * c->up[2] - f[2] * c->up[1];
  r[1] = f[2] * c->up[0] - f[0] * c->up[2];
  r[2] = f[0] * c->up[1] - f[1] * c->up[0];
  double rl = sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
  for (int k = 0; k < 3; k++) r[k] /= rl;
  u[0] = r[1] * f[2] - r[2] * f[1];
  u[1] = r[2] * f[0] - r[0] * f[2];
  u[2] = r[0] * f[1] - r[1] * f[0];
  double fov = c->fov_y_degrees > 0 ? c->fov_y_degrees : 45.0;
  double t = tan(0.5 * fov * 3.14159265358979323846 / 180.0);
  double sx = (2.0 * (px + 0.5) / w - 1.0) * t * w / h, sy = (1.0 - 2.0 * (py + 0.5) / h) * t;
  double len = 0;
  for (int k = 0; k < 3; k++) {
    d[k] = f[k] + sx * r[k] + sy * u[k];
    len += d[k] * d[k];
    o[k] = c->eye[k];
  }
  len = sqrt(len);
  for (int k = 0; k < 3; k++) d[k] /= len;
}

/* Distance from point p to the ray's line, and whether p is in front of the eye. */
static inline double util_ray_point_distance(const double o[3], const double d[3], const double p[3]) {
  double v[3] = {p[0] - o[0], p[1] - o[1], p[2] - o[2]};
  double t = v[0] * d[0] + v[1] * d[1] + v[2] * d[2];
  double q[3] = {v[0] - t * d[0], v[1] - t * d[1], v[2] - t * d[2]};
  return t > 0 ? sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2]) : INFINITY;
}

/* Checks the image of builtin:sphere:n (radius 0.35 n about the volume's centre) pixel by
 * pixel: rays passing closer than R - margin to the centre must hit, rays farther than
 * R + margin must not. Returns the number of violations (and prints the first few). */
static inline size_t util_sphere_violations(const ir_volume *v, const ir_camera *c, int w, int h,
                                            const uint8_t *rgba, double margin) {
  double n = (double)v->dims[0];
  double centre[3] = {n / 2 * v->spacing[0], n / 2 * v->spacing[1], n / 2 * v->spacing[2]};
  double radius = 0.35 * n * v->spacing[0];
  size_t bad = 0;
  for (int py = 0; py < h; py++)
    for (int px = 0; px < w; px++) {
      double o[3], d[3];
      util_pixel_ray(c, w, h, px, py, o, d);
      double dist = util_ray_point_distance(o, d, centre);
      int hit = rgba[4 * ((size_t)py * w + px) + 3] == 255;
      int must_hit = dist < radius - margin, must_miss = dist > radius + margin;
      if ((must_hit && !hit) || (must_miss && hit)) {
        if (bad < 5)
          fprintf(stderr, "  pixel (%d,%d): distance %.3f from the centre, radius %.3f, %s\n", px, py, dist,
                  radius, hit ? "hit" : "missed");
        bad++;
      }
    }
  return bad;
}

#endif
