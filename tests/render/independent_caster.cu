/* An independent isosurface caster, the yardstick of render_bench: a plain single-kernel
 * macrocell 3D-DDA ray caster written apart from inkray's renderers, sharing none of their code
 * (only the volume's voxels and the camera's eye, target, up and field of view come from
 * inkray). It is what a careful engineer writes for speed without inkray's design:
 *
 *   - the volume as a 3D texture of its native type, hardware trilinear filtering;
 *   - a macrocell grid of min/max (cells of `macro` voxels, sharing a one-voxel border), tested
 *     against the isovalue as the DDA meets each cell;
 *   - one thread per pixel in 8x8 blocks; inside an active cell, samples every half voxel on a
 *     grid anchored at the ray's entry, one at a time;
 *   - a crossing refined by one secant step, the normal from six texture samples one voxel
 *     apart, Blinn-Phong with a headlight.
 *
 * Its image is close to inkray's (the same surface, shading of the same kind), not identical.
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/render/independent_caster.h"

#define IC_CHECK(call)                                                                                     \
  do {                                                                                                     \
    cudaError_t e_ = (call);                                                                               \
    if (e_ != cudaSuccess) {                                                                               \
      fprintf(stderr, "independent caster: %s failed: %s\n", #call, cudaGetErrorString(e_));              \
      return -1;                                                                                           \
    }                                                                                                      \
  } while (0)

struct ic_caster {
  cudaArray_t array;
  cudaTextureObject_t tex;
  float2 *cells; /* min, max per macrocell */
  int dims[3], cells_n[3], macro;
  float scale, spacing[3];
  cudaEvent_t a, b;
};

struct ic_params {
  cudaTextureObject_t tex;
  const float2 *cells;
  int dims[3], cells_n[3], macro;
  float scale, iso;
  float3 eye, fwd, right, up; /* voxel space eye; world directions */
  int ao_n, shadows, light_on;  /* lighting (ic_lighting); ao_n 0, no shadows and the headlight: unlit */
  float ao_radius;
  float3 light; /* unit, world, towards the light */
  float3 inv_spacing;
  int width, height;
};

static double voxel_at(const ir_volume *v, size_t i) {
  switch (v->type) {
  case IR_VOXEL_UINT8: return ((const uint8_t *)v->voxels)[i];
  case IR_VOXEL_UINT16: return ((const uint16_t *)v->voxels)[i];
  case IR_VOXEL_INT16: return ((const int16_t *)v->voxels)[i];
  default: return ((const float *)v->voxels)[i];
  }
}

__device__ static float sample(const ic_params &p, float x, float y, float z) {
  return tex3D<float>(p.tex, x, y, z) * p.scale;
}

__device__ static bool cell_active(const ic_params &p, int cx, int cy, int cz) {
  float2 m = __ldg(&p.cells[cx + p.cells_n[0] * (cy + p.cells_n[1] * cz)]);
  return m.x <= p.iso && p.iso <= m.y;
}

/* The first crossing of the isovalue along o + t d (voxel space, inv = 1 / d) in [tn, tf]: samples
 * every dt from tn on, only inside active macrocells (3D-DDA over them), refined by one secant
 * step into *hit_t; false when there is none. Primary and secondary rays alike. */
__device__ static __forceinline__ bool first_crossing(const ic_params &p, float3 o, float3 d, float3 inv, float tn,
                                                      float tf, float dt, float *hit_t) {
  /* DDA over the macrocells: cell c spans [c * macro, (c + 1) * macro] in voxel space. */
  float3 e = make_float3(o.x + tn * d.x, o.y + tn * d.y, o.z + tn * d.z);
  int cx = min(max((int)floorf(e.x / p.macro), 0), p.cells_n[0] - 1);
  int cy = min(max((int)floorf(e.y / p.macro), 0), p.cells_n[1] - 1);
  int cz = min(max((int)floorf(e.z / p.macro), 0), p.cells_n[2] - 1);
  int stx = d.x > 0 ? 1 : -1, sty = d.y > 0 ? 1 : -1, stz = d.z > 0 ? 1 : -1;
  float nx = ((cx + (stx > 0)) * p.macro - o.x) * inv.x;
  float ny = ((cy + (sty > 0)) * p.macro - o.y) * inv.y;
  float nz = ((cz + (stz > 0)) * p.macro - o.z) * inv.z;
  float ddx = fabsf(p.macro * inv.x), ddy = fabsf(p.macro * inv.y), ddz = fabsf(p.macro * inv.z);
  float t_cell = tn, prev_t = -1.0f, prev_s = 0.0f;
  for (;;) {
    float t_out = fminf(fminf(nx, ny), fminf(nz, tf));
    if (cell_active(p, cx, cy, cz)) {
      /* Samples of the ray's grid t = tn + k dt inside [t_cell, t_out], plus the one before. */
      float k0 = fmaxf(floorf((t_cell - tn) / dt), 0.0f);
      float t = tn + k0 * dt;
      if (prev_t != t - dt || prev_t < 0.0f) { /* not continuing from the last cell's samples */
        prev_t = t;
        prev_s = sample(p, o.x + t * d.x, o.y + t * d.y, o.z + t * d.z);
        t += dt;
      }
      for (; t <= t_out + dt; t += dt) {
        float tt = fminf(t, tf);
        float s = sample(p, o.x + tt * d.x, o.y + tt * d.y, o.z + tt * d.z);
        if ((s >= p.iso) != (prev_s >= p.iso)) {
          *hit_t = prev_t + (tt - prev_t) * (p.iso - prev_s) / (s - prev_s); /* secant step */
          return true;
        }
        prev_t = tt;
        prev_s = s;
        if (tt >= tf) break;
      }
    } else {
      prev_t = -1.0f;
    }
    if (t_out >= tf) return false;
    t_cell = t_out;
    if (nx <= ny && nx <= nz) {
      cx += stx;
      nx += ddx;
      if (cx < 0 || cx >= p.cells_n[0]) return false;
    } else if (ny <= nz) {
      cy += sty;
      ny += ddy;
      if (cy < 0 || cy >= p.cells_n[1]) return false;
    } else {
      cz += stz;
      nz += ddz;
      if (cz < 0 || cz >= p.cells_n[2]) return false;
    }
  }
}

/* Entry and exit of the ray o + t d (t >= 0) through the volume box [0, dims]; false if it misses. */
__device__ static __forceinline__ bool box_span(const ic_params &p, float3 o, float3 inv, float *tn, float *tf) {
  float tx0 = (0.0f - o.x) * inv.x, tx1 = (p.dims[0] - o.x) * inv.x;
  float ty0 = (0.0f - o.y) * inv.y, ty1 = (p.dims[1] - o.y) * inv.y;
  float tz0 = (0.0f - o.z) * inv.z, tz1 = (p.dims[2] - o.z) * inv.z;
  *tn = fmaxf(fmaxf(fminf(tx0, tx1), fminf(ty0, ty1)), fmaxf(fminf(tz0, tz1), 0.0f));
  *tf = fminf(fminf(fmaxf(tx0, tx1), fmaxf(ty0, ty1)), fmaxf(tz0, tz1));
  return *tn <= *tf;
}

/* Whether a secondary ray from x (voxel space) along the unit world direction w meets the
 * surface within t_max (world units along w; infinite: to the volume's exit), sampled every
 * `step` voxels on the macrocell walk. */
__device__ static bool blocked(const ic_params &p, float3 x, float3 w, float t_max, float step) {
  float3 d = make_float3(w.x * p.inv_spacing.x, w.y * p.inv_spacing.y, w.z * p.inv_spacing.z);
  float3 inv = make_float3(1.0f / d.x, 1.0f / d.y, 1.0f / d.z);
  float tn, tf, t;
  if (!box_span(p, x, inv, &tn, &tf)) return false;
  tf = fminf(tf, t_max);
  if (!(tf > tn)) return false;
  return first_crossing(p, x, d, inv, tn, tf, step * rsqrtf(d.x * d.x + d.y * d.y + d.z * d.z), &t);
}

/* A 32-bit hash (the seed of a pixel's occlusion directions). */
__device__ static __forceinline__ uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x21f0aaadu;
  x ^= x >> 15;
  x *= 0x735a2d97u;
  return x ^ (x >> 15);
}

/* The unlit frame: the caster as first written (the lit kernel below shares its walk through
 * first_crossing; this one keeps its own loop, so that its timings stay those of every earlier
 * run: the refactored form measured 13 % slower on the H100). */
__global__ static void __launch_bounds__(64) ic_kernel_unlit(const __grid_constant__ ic_params p, uint32_t *image) {
  int px = blockIdx.x * 8 + threadIdx.x % 8, py = blockIdx.y * 8 + threadIdx.x / 8;
  if (px >= p.width || py >= p.height) return;
  float sx = (2.0f * (px + 0.5f) / p.width - 1.0f), sy = (1.0f - 2.0f * (py + 0.5f) / p.height);
  float3 dw = make_float3(p.fwd.x + sx * p.right.x + sy * p.up.x, p.fwd.y + sx * p.right.y + sy * p.up.y,
                          p.fwd.z + sx * p.right.z + sy * p.up.z);
  float inv_len = rsqrtf(dw.x * dw.x + dw.y * dw.y + dw.z * dw.z);
  dw = make_float3(dw.x * inv_len, dw.y * inv_len, dw.z * inv_len);
  float3 d = make_float3(dw.x * p.inv_spacing.x, dw.y * p.inv_spacing.y, dw.z * p.inv_spacing.z);
  float3 inv = make_float3(1.0f / d.x, 1.0f / d.y, 1.0f / d.z);
  uint32_t out = 0x00161412u;
  /* Entry and exit of the volume box [0, dims]. */
  float tx0 = (0.0f - p.eye.x) * inv.x, tx1 = (p.dims[0] - p.eye.x) * inv.x;
  float ty0 = (0.0f - p.eye.y) * inv.y, ty1 = (p.dims[1] - p.eye.y) * inv.y;
  float tz0 = (0.0f - p.eye.z) * inv.z, tz1 = (p.dims[2] - p.eye.z) * inv.z;
  float tn = fmaxf(fmaxf(fminf(tx0, tx1), fminf(ty0, ty1)), fmaxf(fminf(tz0, tz1), 0.0f));
  float tf = fminf(fminf(fmaxf(tx0, tx1), fmaxf(ty0, ty1)), fmaxf(tz0, tz1));
  if (tn <= tf) {
    float dt = 0.5f * rsqrtf(d.x * d.x + d.y * d.y + d.z * d.z);
    /* DDA over the macrocells: cell c spans [c * macro, (c + 1) * macro] in voxel space. */
    float3 e = make_float3(p.eye.x + tn * d.x, p.eye.y + tn * d.y, p.eye.z + tn * d.z);
    int cx = min(max((int)floorf(e.x / p.macro), 0), p.cells_n[0] - 1);
    int cy = min(max((int)floorf(e.y / p.macro), 0), p.cells_n[1] - 1);
    int cz = min(max((int)floorf(e.z / p.macro), 0), p.cells_n[2] - 1);
    int stx = d.x > 0 ? 1 : -1, sty = d.y > 0 ? 1 : -1, stz = d.z > 0 ? 1 : -1;
    float nx = ((cx + (stx > 0)) * p.macro - p.eye.x) * inv.x;
    float ny = ((cy + (sty > 0)) * p.macro - p.eye.y) * inv.y;
    float nz = ((cz + (stz > 0)) * p.macro - p.eye.z) * inv.z;
    float ddx = fabsf(p.macro * inv.x), ddy = fabsf(p.macro * inv.y), ddz = fabsf(p.macro * inv.z);
    float t_cell = tn, prev_t = -1.0f, prev_s = 0.0f;
    bool found = false;
    float hit_t = 0.0f;
    while (!found) {
      float t_out = fminf(fminf(nx, ny), fminf(nz, tf));
      if (cell_active(p, cx, cy, cz)) {
        /* Samples of the ray's grid t = tn + k dt inside [t_cell, t_out], plus the one before. */
        float k0 = fmaxf(floorf((t_cell - tn) / dt), 0.0f);
        float t = tn + k0 * dt;
        if (prev_t != t - dt || prev_t < 0.0f) { /* not continuing from the last cell's samples */
          prev_t = t;
          prev_s = sample(p, p.eye.x + t * d.x, p.eye.y + t * d.y, p.eye.z + t * d.z);
          t += dt;
        }
        for (; t <= t_out + dt; t += dt) {
          float tt = fminf(t, tf);
          float s = sample(p, p.eye.x + tt * d.x, p.eye.y + tt * d.y, p.eye.z + tt * d.z);
          if ((s >= p.iso) != (prev_s >= p.iso)) {
            hit_t = prev_t + (tt - prev_t) * (p.iso - prev_s) / (s - prev_s); /* secant step */
            found = true;
            break;
          }
          prev_t = tt;
          prev_s = s;
          if (tt >= tf) break;
        }
        if (found) break;
      } else {
        prev_t = -1.0f;
      }
      if (t_out >= tf) break;
      t_cell = t_out;
      if (nx <= ny && nx <= nz) {
        cx += stx;
        nx += ddx;
        if (cx < 0 || cx >= p.cells_n[0]) break;
      } else if (ny <= nz) {
        cy += sty;
        ny += ddy;
        if (cy < 0 || cy >= p.cells_n[1]) break;
      } else {
        cz += stz;
        nz += ddz;
        if (cz < 0 || cz >= p.cells_n[2]) break;
      }
    }
    if (found) {
      float3 x = make_float3(p.eye.x + hit_t * d.x, p.eye.y + hit_t * d.y, p.eye.z + hit_t * d.z);
      float gx = sample(p, x.x + 1, x.y, x.z) - sample(p, x.x - 1, x.y, x.z);
      float gy = sample(p, x.x, x.y + 1, x.z) - sample(p, x.x, x.y - 1, x.z);
      float gz = sample(p, x.x, x.y, x.z + 1) - sample(p, x.x, x.y, x.z - 1);
      gx *= p.inv_spacing.x, gy *= p.inv_spacing.y, gz *= p.inv_spacing.z;
      float gl = rsqrtf(gx * gx + gy * gy + gz * gz + 1e-30f);
      float ndl = fminf(fabsf(-(gx * dw.x + gy * dw.y + gz * dw.z) * gl), 1.0f);
      float spec = 0.35f * __powf(ndl, 32.0f), diffuse = 0.12f + 0.88f * ndl;
      float r = fminf(0.93f * diffuse + spec, 1.0f), g = fminf(0.84f * diffuse + spec, 1.0f),
            b = fminf(0.66f * diffuse + spec, 1.0f);
      out = (uint32_t)(r * 255.0f + 0.5f) | (uint32_t)(g * 255.0f + 0.5f) << 8 | (uint32_t)(b * 255.0f + 0.5f) << 16 |
            0xff000000u;
    }
  }
  image[py * p.width + px] = out;
}

/* The lit frame, one thread per pixel: the hit's ao_n occlusion rays (cosine-weighted about the normal,
 * stratified in one coordinate and golden-ratio spaced in the other, rotated per pixel) of
 * ao_radius voxels and its shadow ray towards the light, each on the macrocell walk in this
 * thread (the megakernel way); occlusion rays step a voxel, the shadow ray half a voxel, as
 * inkray's do, so that the two measure the same samples. */
__global__ static void __launch_bounds__(64) ic_kernel_lit(const __grid_constant__ ic_params p, uint32_t *image) {
  int px = blockIdx.x * 8 + threadIdx.x % 8, py = blockIdx.y * 8 + threadIdx.x / 8;
  if (px >= p.width || py >= p.height) return;
  float sx = (2.0f * (px + 0.5f) / p.width - 1.0f), sy = (1.0f - 2.0f * (py + 0.5f) / p.height);
  float3 dw = make_float3(p.fwd.x + sx * p.right.x + sy * p.up.x, p.fwd.y + sx * p.right.y + sy * p.up.y,
                          p.fwd.z + sx * p.right.z + sy * p.up.z);
  float inv_len = rsqrtf(dw.x * dw.x + dw.y * dw.y + dw.z * dw.z);
  dw = make_float3(dw.x * inv_len, dw.y * inv_len, dw.z * inv_len);
  float3 d = make_float3(dw.x * p.inv_spacing.x, dw.y * p.inv_spacing.y, dw.z * p.inv_spacing.z);
  float3 inv = make_float3(1.0f / d.x, 1.0f / d.y, 1.0f / d.z);
  uint32_t out = 0x00161412u;
  float tn, tf, hit_t;
  if (box_span(p, p.eye, inv, &tn, &tf) &&
      first_crossing(p, p.eye, d, inv, tn, tf, 0.5f * rsqrtf(d.x * d.x + d.y * d.y + d.z * d.z), &hit_t)) {
    float3 x = make_float3(p.eye.x + hit_t * d.x, p.eye.y + hit_t * d.y, p.eye.z + hit_t * d.z);
    float gx = sample(p, x.x + 1, x.y, x.z) - sample(p, x.x - 1, x.y, x.z);
    float gy = sample(p, x.x, x.y + 1, x.z) - sample(p, x.x, x.y - 1, x.z);
    float gz = sample(p, x.x, x.y, x.z + 1) - sample(p, x.x, x.y, x.z - 1);
    gx *= p.inv_spacing.x, gy *= p.inv_spacing.y, gz *= p.inv_spacing.z;
    float gl = rsqrtf(gx * gx + gy * gy + gz * gz + 1e-30f);
    float ndl, spec, diffuse;
    /* The unit normal on the viewer's side; the secondary rays start half a voxel off the hit. */
    float3 n = make_float3(gx * gl, gy * gl, gz * gl);
    if (n.x * dw.x + n.y * dw.y + n.z * dw.z > 0.0f) n = make_float3(-n.x, -n.y, -n.z);
    float3 xo = make_float3(x.x + 0.5f * n.x * p.inv_spacing.x, x.y + 0.5f * n.y * p.inv_spacing.y,
                            x.z + 0.5f * n.z * p.inv_spacing.z);
    float ao = 1.0f;
    if (p.ao_n > 0) {
      /* An orthonormal basis about n (Frisvad's, with the pole case). */
      float3 t1, t2;
      if (n.z < -0.9999999f) {
        t1 = make_float3(0.0f, -1.0f, 0.0f), t2 = make_float3(-1.0f, 0.0f, 0.0f);
      } else {
        float a = 1.0f / (1.0f + n.z), b = -n.x * n.y * a;
        t1 = make_float3(1.0f - n.x * n.x * a, b, -n.x), t2 = make_float3(b, 1.0f - n.y * n.y * a, -n.y);
      }
      uint32_t h = mix32((uint32_t)px * 0x9e3779b9u ^ mix32((uint32_t)py + 0x632be5abu));
      float r1 = (float)(h >> 8) * (1.0f / 16777216.0f), r2 = (float)(mix32(h) >> 8) * (1.0f / 16777216.0f);
      int open = 0;
      for (int i = 0; i < p.ao_n; i++) {
        float u1 = ((float)i + r1) / (float)p.ao_n, u2 = r2 + 0.61803399f * (float)i;
        u2 -= floorf(u2);
        float rad = sqrtf(u1), z = sqrtf(fmaxf(1.0f - u1, 0.0f)), c, s;
        __sincosf(6.28318531f * u2, &s, &c);
        float3 w = make_float3(t1.x * rad * c + t2.x * rad * s + n.x * z, t1.y * rad * c + t2.y * rad * s + n.y * z,
                               t1.z * rad * c + t2.z * rad * s + n.z * z);
        open += !blocked(p, xo, w, p.ao_radius, 1.0f);
      }
      ao = (float)open / (float)p.ao_n;
    }
    float3 l = p.light_on ? p.light : make_float3(-dw.x, -dw.y, -dw.z);
    ndl = fmaxf(n.x * l.x + n.y * l.y + n.z * l.z, 0.0f);
    float shadow = p.shadows && ndl > 0.0f && blocked(p, xo, l, INFINITY, 0.5f) ? 0.0f : 1.0f;
    float3 hv = make_float3(l.x - dw.x, l.y - dw.y, l.z - dw.z);
    float hl = rsqrtf(hv.x * hv.x + hv.y * hv.y + hv.z * hv.z + 1e-30f);
    float ndh = fmaxf((n.x * hv.x + n.y * hv.y + n.z * hv.z) * hl, 0.0f);
    spec = 0.35f * __powf(ndh, 32.0f) * shadow;
    diffuse = (0.12f + 0.88f * ndl * shadow) * ao;
    float r = fminf(0.93f * diffuse + spec, 1.0f), g = fminf(0.84f * diffuse + spec, 1.0f),
          b = fminf(0.66f * diffuse + spec, 1.0f);
    out = (uint32_t)(r * 255.0f + 0.5f) | (uint32_t)(g * 255.0f + 0.5f) << 8 | (uint32_t)(b * 255.0f + 0.5f) << 16 |
          0xff000000u;
  }
  image[py * p.width + px] = out;
}

int ic_create(const ir_volume *v, int macro, ic_caster **out) {
  ic_caster *c = (ic_caster *)calloc(1, sizeof *c);
  if (!c) return -1;
  *out = c;
  c->macro = macro;
  for (int k = 0; k < 3; k++) {
    c->dims[k] = (int)v->dims[k];
    c->cells_n[k] = (c->dims[k] + macro - 1) / macro;
    c->spacing[k] = v->spacing[k];
  }
  cudaChannelFormatDesc ch = v->type == IR_VOXEL_UINT8    ? cudaCreateChannelDesc<uint8_t>()
                             : v->type == IR_VOXEL_UINT16 ? cudaCreateChannelDesc<uint16_t>()
                             : v->type == IR_VOXEL_INT16  ? cudaCreateChannelDesc<int16_t>()
                                                          : cudaCreateChannelDesc<float>();
  c->scale = v->type == IR_VOXEL_UINT8 ? 255.0f : v->type == IR_VOXEL_UINT16 ? 65535.0f : v->type == IR_VOXEL_INT16 ? 32767.0f : 1.0f;
  cudaExtent ext = make_cudaExtent(v->dims[0], v->dims[1], v->dims[2]);
  IC_CHECK(cudaMalloc3DArray(&c->array, &ch, ext));
  cudaMemcpy3DParms cp;
  memset(&cp, 0, sizeof cp);
  cp.srcPtr = make_cudaPitchedPtr(v->voxels, v->dims[0] * ir_voxel_type_size(v->type), v->dims[0], v->dims[1]);
  cp.dstArray = c->array;
  cp.extent = ext;
  cp.kind = cudaMemcpyHostToDevice;
  IC_CHECK(cudaMemcpy3D(&cp));
  cudaResourceDesc res;
  memset(&res, 0, sizeof res);
  res.resType = cudaResourceTypeArray;
  res.res.array.array = c->array;
  cudaTextureDesc td;
  memset(&td, 0, sizeof td);
  td.addressMode[0] = td.addressMode[1] = td.addressMode[2] = cudaAddressModeClamp;
  td.filterMode = cudaFilterModeLinear;
  td.readMode = v->type == IR_VOXEL_FLOAT32 ? cudaReadModeElementType : cudaReadModeNormalizedFloat;
  IC_CHECK(cudaCreateTextureObject(&c->tex, &res, &td, NULL));
  /* Macrocell min/max over the voxels the trilinear field in the cell depends on: the cell's
   * voxel centres and one more on each side (the clamped border). */
  size_t ncell = (size_t)c->cells_n[0] * c->cells_n[1] * c->cells_n[2];
  float2 *h = (float2 *)malloc(ncell * sizeof *h);
  if (!h) return -1;
  for (int z = 0; z < c->cells_n[2]; z++)
    for (int y = 0; y < c->cells_n[1]; y++)
      for (int x = 0; x < c->cells_n[0]; x++) {
        float lo = INFINITY, hi = -INFINITY;
        for (int k = max(z * macro - 1, 0); k <= min((z + 1) * macro, c->dims[2] - 1); k++)
          for (int j = max(y * macro - 1, 0); j <= min((y + 1) * macro, c->dims[1] - 1); j++)
            for (int i = max(x * macro - 1, 0); i <= min((x + 1) * macro, c->dims[0] - 1); i++) {
              float s = (float)voxel_at(v, (size_t)i + v->dims[0] * ((size_t)j + v->dims[1] * k));
              lo = fminf(lo, s);
              hi = fmaxf(hi, s);
            }
        h[x + c->cells_n[0] * (y + c->cells_n[1] * z)] = make_float2(lo, hi);
      }
  IC_CHECK(cudaMalloc(&c->cells, ncell * sizeof *h));
  IC_CHECK(cudaMemcpy(c->cells, h, ncell * sizeof *h, cudaMemcpyHostToDevice));
  free(h);
  IC_CHECK(cudaEventCreate(&c->a));
  IC_CHECK(cudaEventCreate(&c->b));
  return 0;
}

static float3 sub3(float3 a, float3 b) { return make_float3(a.x - b.x, a.y - b.y, a.z - b.z); }
static float3 norm3(float3 a) {
  float l = sqrtf(a.x * a.x + a.y * a.y + a.z * a.z);
  return make_float3(a.x / l, a.y / l, a.z / l);
}
static float3 cross3(float3 a, float3 b) {
  return make_float3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}

int ic_render(ic_caster *c, const ir_camera *cam, float iso, const ic_lighting *lit, int width, int height,
              uint32_t *d_image, double *ms) {
  ic_params p;
  memset(&p, 0, sizeof p);
  p.tex = c->tex;
  p.cells = c->cells;
  for (int k = 0; k < 3; k++) p.dims[k] = c->dims[k], p.cells_n[k] = c->cells_n[k];
  p.macro = c->macro;
  p.scale = c->scale;
  p.iso = iso;
  float3 eye = make_float3(cam->eye[0], cam->eye[1], cam->eye[2]);
  float3 fwd = norm3(sub3(make_float3(cam->target[0], cam->target[1], cam->target[2]), eye));
  float3 right = norm3(cross3(fwd, make_float3(cam->up[0], cam->up[1], cam->up[2])));
  float3 up = cross3(right, fwd);
  float fov = cam->fov_y_degrees > 0 ? cam->fov_y_degrees : 45.0f;
  float th = tanf(fov * 0.5f * 3.14159265f / 180.0f), tw = th * (float)width / (float)height;
  p.fwd = fwd;
  p.right = make_float3(right.x * tw, right.y * tw, right.z * tw);
  p.up = make_float3(up.x * th, up.y * th, up.z * th);
  p.eye = make_float3(eye.x / c->spacing[0], eye.y / c->spacing[1], eye.z / c->spacing[2]);
  p.inv_spacing = make_float3(1.0f / c->spacing[0], 1.0f / c->spacing[1], 1.0f / c->spacing[2]);
  p.width = width;
  p.height = height;
  bool lit_frame = lit && (lit->ao_n > 0 || lit->shadows || lit->light_on);
  if (lit_frame) {
    p.ao_n = lit->ao_n;
    p.ao_radius = lit->ao_radius > 0.0f ? lit->ao_radius : 16.0f;
    p.shadows = lit->shadows;
    p.light_on = lit->light_on;
    /* The light in the camera's frame: azimuth from the view direction towards the right,
     * elevation towards up (inkray's --light). */
    float az = lit->light[0] * 3.14159265f / 180.0f, el = lit->light[1] * 3.14159265f / 180.0f;
    p.light = norm3(make_float3(right.x * cosf(el) * sinf(az) + up.x * sinf(el) - fwd.x * cosf(el) * cosf(az),
                                right.y * cosf(el) * sinf(az) + up.y * sinf(el) - fwd.y * cosf(el) * cosf(az),
                                right.z * cosf(el) * sinf(az) + up.z * sinf(el) - fwd.z * cosf(el) * cosf(az)));
  }
  dim3 grid((width + 7) / 8, (height + 7) / 8);
  IC_CHECK(cudaEventRecord(c->a));
  if (lit_frame) ic_kernel_lit<<<grid, 64>>>(p, d_image);
  else ic_kernel_unlit<<<grid, 64>>>(p, d_image);
  IC_CHECK(cudaGetLastError());
  IC_CHECK(cudaEventRecord(c->b));
  IC_CHECK(cudaEventSynchronize(c->b));
  float f = 0;
  IC_CHECK(cudaEventElapsedTime(&f, c->a, c->b));
  *ms = f;
  return 0;
}

void ic_destroy(ic_caster *c) {
  if (!c) return;
  if (c->tex) cudaDestroyTextureObject(c->tex);
  if (c->array) cudaFreeArray(c->array);
  cudaFree(c->cells);
  if (c->a) cudaEventDestroy(c->a);
  if (c->b) cudaEventDestroy(c->b);
  free(c);
}
