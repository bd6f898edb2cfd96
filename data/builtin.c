/* Procedural volumes, builtin:NAME[:N] (N x N x N voxels, N from 2 to 1024, default 128),
 * generated on all cores. The formulas are in data/volume.h; they are computed here in voxel
 * index coordinates i, j, k = 0 .. N-1 with x fastest.
 *
 * The fractal is gradient (Perlin-style) noise summed over octaves (fBm). Each thread walks
 * whole x rows: along a row the y and z parts of every noise cell are fixed, so a cell's eight
 * corner gradients collapse into two linear functions of x and each voxel costs a few
 * multiply-adds per octave instead of eight hashed gradient dots. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "data/parallel.h"
#include "data/volume_internal.h"

#define BUILTIN_MIN_N 2
#define BUILTIN_MAX_N 1024
#define BUILTIN_DEFAULT_N 128

static const double pi = 3.14159265358979323846;

/* ---- sphere --------------------------------------------------------------------------------- */
static void sphere_rows(void *ctx, size_t begin, size_t end, int worker) {
  ir_volume *v = ctx;
  size_t n = v->dims[0];
  double c = 0.5 * (double)(n - 1), radius = 0.35 * (double)n;
  float *out = v->voxels;
  for (size_t row = begin; row < end; row++) {
    double dy = (double)(row % n) - c, dz = (double)(row / n) - c;
    double yz = dy * dy + dz * dz;
    float *dst = out + row * n;
    for (size_t i = 0; i < n; i++) {
      double dx = (double)i - c;
      dst[i] = (float)(radius - sqrt(dx * dx + yz));
    }
  }
}

/* ---- Marschner-Lobb -------------------------------------------------------------------------- */
#define ML_ALPHA 0.25
#define ML_FM 6.0

double ir_marschner_lobb(double x, double y, double z) {
  double r = sqrt(x * x + y * y);
  double rho_r = cos(2.0 * pi * ML_FM * cos(pi * r / 2.0));
  return (1.0 - sin(pi * z / 2.0) + ML_ALPHA * (1.0 + rho_r)) / (2.0 * (1.0 + ML_ALPHA));
}

static void marschner_lobb_rows(void *ctx, size_t begin, size_t end, int worker) {
  ir_volume *v = ctx;
  size_t n = v->dims[0];
  double scale = 2.0 / (double)(n - 1);
  float *out = v->voxels;
  for (size_t row = begin; row < end; row++) {
    double y = -1.0 + scale * (double)(row % n), z = -1.0 + scale * (double)(row / n);
    float *dst = out + row * n;
    for (size_t i = 0; i < n; i++) dst[i] = (float)ir_marschner_lobb(-1.0 + scale * (double)i, y, z);
  }
}

/* ---- fractal ----------------------------------------------------------------------------------- */
#define FRACTAL_BASE_FREQ 4.0  /* noise cells across the volume at the coarsest octave */
#define FRACTAL_SEED 0x1b873593u
#define FRACTAL_MARGIN 0.04    /* fraction of the box near each face where the walls fade out */
#define FRACTAL_WALL 0.12      /* fBm half-width of a wall; the fBm spans about +-0.8 */

static uint32_t hash3(int32_t x, int32_t y, int32_t z, uint32_t seed) {
  uint32_t h = seed ^ ((uint32_t)x * 0x8da6b343u) ^ ((uint32_t)y * 0xd8163841u) ^
               ((uint32_t)z * 0xcb1ab31fu);
  h ^= h >> 16;
  h *= 0x7feb352du;
  h ^= h >> 15;
  h *= 0x846ca68bu;
  h ^= h >> 16;
  return h;
}

/* Perlin's twelve cube-edge gradients (and four repeats so a 4-bit index covers them). */
static const float gradients[16][3] = {
    {1, 1, 0}, {-1, 1, 0}, {1, -1, 0}, {-1, -1, 0}, {1, 0, 1}, {-1, 0, 1}, {1, 0, -1}, {-1, 0, -1},
    {0, 1, 1}, {0, -1, 1}, {0, 1, -1}, {0, -1, -1}, {1, 1, 0}, {-1, 1, 0}, {0, -1, 1}, {0, -1, -1}};

static float fade(float t) { return t * t * t * (t * (t * 6.0f - 15.0f) + 10.0f); }

int ir_fractal_octaves(size_t n) {
  /* Finest octave: about 4 voxels per noise cell, so detail grows with the resolution. */
  int octaves = 1;
  while (octaves < 8 && FRACTAL_BASE_FREQ * (double)(1u << octaves) * 4.0 <= (double)n) octaves++;
  return octaves;
}

/* Adds amp * noise over one x row (fixed y, z in noise units) to acc. */
static void noise_row(float *acc, size_t n, float freq, float ny, float nz, float amp,
                      uint32_t seed) {
  /* Noise coordinates are never negative, so truncation is floor (and no libm call). */
  int32_t iy = (int32_t)ny, iz = (int32_t)nz;
  float fy = ny - (float)iy, fz = nz - (float)iz;
  float v = fade(fy), w = fade(fz);
  float wyz[4] = {(1 - v) * (1 - w), v * (1 - w), (1 - v) * w, v * w};
  float step = freq / (float)n;
  size_t i = 0;
  while (i < n) {
    int32_t ix = (int32_t)(((float)i + 0.5f) * step);
    /* The voxels up to i_end share this noise cell. */
    float last = (float)(ix + 1) / step - 0.5f;
    size_t i_end = (size_t)last;
    if ((float)i_end < last) i_end++;
    if (i_end <= i) i_end = i + 1;
    if (i_end > n) i_end = n;
    /* Corner (dx,dy,dz) contributes g.(fx-dx, fy-dy, fz-dz) = gx*fx + (const); summed with the
     * fixed y/z fade weights, the cell is A0*fx+B0 at the x=0 side, A1*fx+B1 at x=1. */
    float a0 = 0, b0 = 0, a1 = 0, b1 = 0;
    for (int c = 0; c < 4; c++) {
      int dy = c & 1, dz = c >> 1;
      const float *g0 = gradients[hash3(ix, iy + dy, iz + dz, seed) & 15];
      const float *g1 = gradients[hash3(ix + 1, iy + dy, iz + dz, seed) & 15];
      float yz0 = g0[1] * (fy - (float)dy) + g0[2] * (fz - (float)dz);
      float yz1 = g1[1] * (fy - (float)dy) + g1[2] * (fz - (float)dz);
      a0 += wyz[c] * g0[0];
      b0 += wyz[c] * yz0;
      a1 += wyz[c] * g1[0];
      b1 += wyz[c] * (yz1 - g1[0]);
    }
    /* Straight-line code over the cell: the compiler vectorizes it. */
    for (size_t j = i; j < i_end; j++) {
      float fx = ((float)j + 0.5f) * step - (float)ix;
      float u = fade(fx);
      acc[j] += amp * ((1 - u) * (a0 * fx + b0) + u * (a1 * fx + b1));
    }
    i = i_end;
  }
}

/* 1 inside the box, falling to 0 over the outer FRACTAL_MARGIN at each face, so the walls
 * close inside the volume instead of being cut by its faces. */
static float margin_weight(float t) {
  float d = t < 1.0f - t ? t : 1.0f - t;
  if (d >= FRACTAL_MARGIN) return 1.0f;
  float s = d / FRACTAL_MARGIN;
  return s * s * (3.0f - 2.0f * s);
}

typedef struct fractal_job {
  ir_volume *v;
  int octaves;
  float *scratch[IR_MAX_THREADS];
} fractal_job;

static void fractal_rows(void *ctx, size_t begin, size_t end, int worker) {
  fractal_job *job = ctx;
  size_t n = job->v->dims[0];
  uint8_t *out = job->v->voxels;
  float *acc = job->scratch[worker];
  float inv_n = 1.0f / (float)n;
  for (size_t row = begin; row < end; row++) {
    float y = ((float)(row % n) + 0.5f) * inv_n, z = ((float)(row / n) + 0.5f) * inv_n;
    for (size_t i = 0; i < n; i++) acc[i] = 0.0f;
    float freq = (float)FRACTAL_BASE_FREQ, amp = 1.0f;
    for (int o = 0; o < job->octaves; o++) {
      /* A different seed per octave keeps octaves from lining up on shared lattice points. */
      noise_row(acc, n, freq, y * freq, z * freq, amp, FRACTAL_SEED + 0x9e3779b9u * (uint32_t)o);
      freq *= 2.0f;
      amp *= 0.5f;
    }
    float yz_weight = 255.0f * margin_weight(y) * margin_weight(z);
    uint8_t *dst = out + row * n;
    for (size_t i = 0; i < n; i++) {
      /* A ridge on the zero set of the fBm: 255 on it, 127.5 at |fBm| = 0.64 FRACTAL_WALL. */
      float r = acc[i] * (1.0f / (float)FRACTAL_WALL);
      float q = 1.0f + r * r;
      float value = yz_weight * margin_weight(((float)i + 0.5f) * inv_n) / (q * q);
      dst[i] = (uint8_t)(value + 0.5f);
    }
  }
}

static ir_status generate_fractal(ir_volume *v, char err[IR_ERR_LEN], const char *src) {
  size_t n = v->dims[0];
  fractal_job job = {.v = v, .octaves = ir_fractal_octaves(n)};
  int workers = ir_parallel_workers(n * n, 16);
  for (int w = 0; w < workers; w++) {
    job.scratch[w] = malloc(n * sizeof(float));
    if (!job.scratch[w]) {
      for (int k = 0; k < w; k++) free(job.scratch[k]);
      snprintf(err, IR_ERR_LEN, "%s: out of host memory", src);
      return IR_ERR_RUNTIME;
    }
  }
  ir_parallel_for(n * n, 16, fractal_rows, &job);
  for (int w = 0; w < workers; w++) free(job.scratch[w]);
  return IR_OK;
}

/* ---- Table and entry point ------------------------------------------------------------------- */
typedef struct builtin {
  const char *name;
  ir_voxel_type type;
  double isovalue;
  ir_range_fn rows; /* NULL: generated by its own function */
} builtin;

static const builtin builtins[] = {
    {"sphere", IR_VOXEL_FLOAT32, 0.0, sphere_rows},
    {"marschner-lobb", IR_VOXEL_FLOAT32, 0.5, marschner_lobb_rows},
    {"fractal", IR_VOXEL_UINT8, 127.5, NULL},
};
#define BUILTIN_COUNT (sizeof builtins / sizeof builtins[0])

const char *const *ir_builtin_names(void) {
  static const char *names[BUILTIN_COUNT + 1];
  if (!names[0])
    for (size_t k = 0; k < BUILTIN_COUNT; k++) names[k] = builtins[k].name;
  return names;
}

/* Splits builtin:NAME[:N]; NULL entry when the name is unknown. */
static const builtin *find_builtin(const char *source, size_t *name_len) {
  const char *name = source + 8;
  const char *colon = strchr(name, ':');
  *name_len = colon ? (size_t)(colon - name) : strlen(name);
  for (size_t k = 0; k < BUILTIN_COUNT; k++)
    if (strlen(builtins[k].name) == *name_len && strncmp(builtins[k].name, name, *name_len) == 0)
      return &builtins[k];
  return NULL;
}

double ir_builtin_isovalue(const char *source) {
  if (!source || strncmp(source, "builtin:", 8) != 0) return NAN;
  size_t len = 0;
  const builtin *b = find_builtin(source, &len);
  return b ? b->isovalue : NAN;
}

ir_status ir_load_builtin(const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]) {
  const char *src = desc->source;
  size_t name_len = 0;
  const builtin *b = find_builtin(src, &name_len);
  if (!b) {
    char list[256] = "";
    for (size_t k = 0; k < BUILTIN_COUNT; k++) {
      strncat(list, k ? ", " : "", sizeof list - strlen(list) - 1);
      strncat(list, builtins[k].name, sizeof list - strlen(list) - 1);
    }
    return ir_input_error(err, src, "unknown builtin volume '%.*s'; choose one of %s",
                          (int)(name_len > 64 ? 64 : name_len), src + 8, list);
  }
  size_t n = BUILTIN_DEFAULT_N;
  const char *size_text = src + 8 + name_len;
  if (*size_text == ':') {
    size_text++;
    errno = 0;
    char *end = NULL;
    long value = (*size_text >= '0' && *size_text <= '9') ? strtol(size_text, &end, 10) : -1;
    if (value < BUILTIN_MIN_N || value > BUILTIN_MAX_N || errno || *end)
      return ir_input_error(err, src, "size '%s' must be a whole number from %d to %d", size_text,
                            BUILTIN_MIN_N, BUILTIN_MAX_N);
    n = (size_t)value;
  }
  size_t dims[3] = {n, n, n};
  ir_status status = ir_volume_allocate(out, dims, b->type, src, err);
  if (status != IR_OK) return status;
  if (b->rows)
    ir_parallel_for(n * n, 16, b->rows, out);
  else
    status = generate_fractal(out, err, src);
  if (status != IR_OK) {
    ir_volume_free(out);
    return status;
  }
  if (desc->spacing_given) memcpy(out->spacing, desc->spacing, sizeof out->spacing);
  char name[256];
  snprintf(name, sizeof name, "builtin:%s:%zu", b->name, n);
  ir_volume_finish(out, name);
  return IR_OK;
}
