/* Procedural volumes, builtin:NAME[:N] (N x N x N voxels) or builtin:NAME:XxYxZ, each from 2 to
 * 16384 (default 128), generated on all cores. The formulas are in data/volume.h; they are
 * computed here in voxel index coordinates i, j, k with x fastest. A box that is not a cube
 * keeps the cube's scale along every axis (that of its longest side), so its features are the
 * shape they have in the cube; the sphere's radius is 0.35 of the shortest side, so that it fits. A region (ir_volume_desc.region_*)
 * computes only the voxels of its box, with the same values as in the whole volume.
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
#define BUILTIN_MAX_N 16384
#define BUILTIN_DEFAULT_N 128

static const double pi = 3.14159265358979323846;

/* The job of every generator: the whole volume is dims[], n its longest side; `out` holds the
 * box of size[] at off[], x fastest. Rows are the box's x rows, row r at y = off[1] + r % size[1],
 * z = off[2] + r / size[1]. */
typedef struct box_job {
  size_t n, dims[3], off[3], size[3];
  void *out;
} box_job;

static void row_coords(const box_job *b, size_t row, size_t *y, size_t *z) {
  *y = b->off[1] + row % b->size[1];
  *z = b->off[2] + row / b->size[1];
}

/* ---- sphere --------------------------------------------------------------------------------- */
static void sphere_rows(void *ctx, size_t begin, size_t end, int worker) {
  const box_job *b = ctx;
  /* The centre of the box; the radius of its shortest side. */
  size_t shortest = b->dims[0] < b->dims[1] ? b->dims[0] : b->dims[1];
  shortest = shortest < b->dims[2] ? shortest : b->dims[2];
  double radius = 0.35 * (double)shortest;
  for (size_t row = begin; row < end; row++) {
    size_t y, z;
    row_coords(b, row, &y, &z);
    double dy = (double)y - 0.5 * (double)(b->dims[1] - 1), dz = (double)z - 0.5 * (double)(b->dims[2] - 1);
    double yz = dy * dy + dz * dz;
    float *dst = (float *)b->out + row * b->size[0];
    for (size_t i = 0; i < b->size[0]; i++) {
      double dx = (double)(b->off[0] + i) - 0.5 * (double)(b->dims[0] - 1);
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
  const box_job *b = ctx;
  /* [-1,1] along the longest side, the others centred on the same scale. */
  double scale = 2.0 / (double)(b->n - 1);
  double lo[3];
  for (int k = 0; k < 3; k++) lo[k] = -0.5 * scale * (double)(b->dims[k] - 1);
  for (size_t row = begin; row < end; row++) {
    size_t yi, zi;
    row_coords(b, row, &yi, &zi);
    double y = lo[1] + scale * (double)yi, z = lo[2] + scale * (double)zi;
    float *dst = (float *)b->out + row * b->size[0];
    for (size_t i = 0; i < b->size[0]; i++)
      dst[i] = (float)ir_marschner_lobb(lo[0] + scale * (double)(b->off[0] + i), y, z);
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

/* Adds amp * noise over voxels first .. first + count - 1 of one x row (fixed y, z in noise
 * units) to acc[0 .. count - 1]; freq noise cells span n voxels. A voxel's value depends on its
 * own index only, so a part of a row gets the values of the whole row's voxels there. */
static void noise_row(float *acc, size_t first, size_t count, size_t n, float freq, float ny, float nz, float amp,
                      uint32_t seed) {
  /* Noise coordinates are never negative, so truncation is floor (and no libm call). */
  int32_t iy = (int32_t)ny, iz = (int32_t)nz;
  float fy = ny - (float)iy, fz = nz - (float)iz;
  float v = fade(fy), w = fade(fz);
  float wyz[4] = {(1 - v) * (1 - w), v * (1 - w), (1 - v) * w, v * w};
  float step = freq / (float)n;
  size_t i = first, end = first + count;
  while (i < end) {
    int32_t ix = (int32_t)(((float)i + 0.5f) * step);
    /* The voxels up to i_end share this noise cell. */
    float last = (float)(ix + 1) / step - 0.5f;
    size_t i_end = (size_t)last;
    if ((float)i_end < last) i_end++;
    if (i_end <= i) i_end = i + 1;
    if (i_end > end) i_end = end;
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
      acc[j - first] += amp * ((1 - u) * (a0 * fx + b0) + u * (a1 * fx + b1));
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
  const box_job *box;
  int octaves;
  float *scratch[IR_MAX_THREADS];
} fractal_job;

/* Each row is computed over the box's part of it only (a rank's brick of a distributed volume
 * pays for its own voxels, not for the whole width). */
static void fractal_rows(void *ctx, size_t begin, size_t end, int worker) {
  fractal_job *job = ctx;
  const box_job *b = job->box;
  size_t n = b->n, width = b->size[0], x0 = b->off[0];
  float *acc = job->scratch[worker];
  /* Noise in units of the longest side; the walls fade at each face of the box itself. */
  float inv_n = 1.0f / (float)n;
  float inv_dims[3] = {1.0f / (float)b->dims[0], 1.0f / (float)b->dims[1], 1.0f / (float)b->dims[2]};
  for (size_t row = begin; row < end; row++) {
    size_t yi, zi;
    row_coords(b, row, &yi, &zi);
    float y = ((float)yi + 0.5f) * inv_n, z = ((float)zi + 0.5f) * inv_n;
    for (size_t i = 0; i < width; i++) acc[i] = 0.0f;
    float freq = (float)FRACTAL_BASE_FREQ, amp = 1.0f;
    for (int o = 0; o < job->octaves; o++) {
      /* A different seed per octave keeps octaves from lining up on shared lattice points. */
      noise_row(acc, x0, width, n, freq, y * freq, z * freq, amp, FRACTAL_SEED + 0x9e3779b9u * (uint32_t)o);
      freq *= 2.0f;
      amp *= 0.5f;
    }
    float yz_weight = 255.0f * margin_weight(((float)yi + 0.5f) * inv_dims[1]) *
                      margin_weight(((float)zi + 0.5f) * inv_dims[2]);
    uint8_t *dst = (uint8_t *)b->out + row * b->size[0];
    for (size_t j = 0; j < width; j++) {
      size_t i = x0 + j;
      /* A ridge on the zero set of the fBm: 255 on it, 127.5 at |fBm| = 0.64 FRACTAL_WALL. */
      float r = acc[j] * (1.0f / (float)FRACTAL_WALL);
      float q = 1.0f + r * r;
      float value = yz_weight * margin_weight(((float)i + 0.5f) * inv_dims[0]) / (q * q);
      dst[j] = (uint8_t)(value + 0.5f);
    }
  }
}

static ir_status generate_fractal(const box_job *b, char err[IR_ERR_LEN], const char *src) {
  size_t rows = b->size[1] * b->size[2];
  fractal_job job = {.box = b, .octaves = ir_fractal_octaves(b->n)};
  int workers = ir_parallel_workers(rows, 16);
  for (int w = 0; w < workers; w++) {
    job.scratch[w] = malloc(b->size[0] * sizeof(float));
    if (!job.scratch[w]) {
      for (int k = 0; k < w; k++) free(job.scratch[k]);
      snprintf(err, IR_ERR_LEN, "%s: out of host memory", src);
      return IR_ERR_RUNTIME;
    }
  }
  ir_parallel_for(rows, 16, fractal_rows, &job);
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
  size_t dims[3] = {BUILTIN_DEFAULT_N, BUILTIN_DEFAULT_N, BUILTIN_DEFAULT_N}, off[3], size[3];
  const char *size_text = src + 8 + name_len;
  if (*size_text == ':') {
    size_text++;
    const char *p = size_text;
    int axes = 0;
    bool ok = true;
    while (ok && axes < 3) {
      errno = 0;
      char *end = NULL;
      long value = (*p >= '0' && *p <= '9') ? strtol(p, &end, 10) : -1;
      ok = value >= BUILTIN_MIN_N && value <= BUILTIN_MAX_N && !errno;
      if (ok) dims[axes++] = (size_t)value;
      if (!ok || *end == '\0') break;
      ok = *end == 'x' && axes < 3;
      p = end + 1;
    }
    ok = ok && (axes == 1 || axes == 3);
    if (ok && axes == 1) dims[1] = dims[2] = dims[0];
    if (!ok)
      return ir_input_error(err, src, "size '%s' must be N or XxYxZ, each a whole number from %d to %d", size_text,
                            BUILTIN_MIN_N, BUILTIN_MAX_N);
  }
  char name[256];
  if (dims[0] == dims[1] && dims[1] == dims[2])
    snprintf(name, sizeof name, "builtin:%s:%zu", b->name, dims[0]);
  else
    snprintf(name, sizeof name, "builtin:%s:%zux%zux%zu", b->name, dims[0], dims[1], dims[2]);
  ir_status status = ir_region_resolve(desc, dims, src, off, size, err);
  if (status != IR_OK) return status;
  if (desc->header_only) {
    const float unit[3] = {1.0f, 1.0f, 1.0f};
    ir_volume_header_only(out, dims, b->type, desc->spacing_given ? desc->spacing : unit, name);
    return IR_OK;
  }
  status = ir_volume_allocate(out, size, b->type, desc, src, err);
  if (status != IR_OK) return status;
  box_job job = {.n = dims[0], .out = out->voxels};
  for (int k = 0; k < 3; k++) job.n = dims[k] > job.n ? dims[k] : job.n;
  memcpy(job.dims, dims, sizeof job.dims);
  memcpy(job.off, off, sizeof job.off);
  memcpy(job.size, size, sizeof job.size);
  if (b->rows)
    ir_parallel_for(size[1] * size[2], 16, b->rows, &job);
  else
    status = generate_fractal(&job, err, src);
  if (status != IR_OK) {
    ir_volume_free(out);
    return status;
  }
  memcpy(out->full_dims, dims, sizeof out->full_dims);
  memcpy(out->origin, off, sizeof out->origin);
  if (desc->spacing_given) memcpy(out->spacing, desc->spacing, sizeof out->spacing);
  ir_volume_finish(out, name);
  return IR_OK;
}
