/* Per-ray math shared by the CPU reference renderer (gcc, C11) and the GPU kernels (nvcc):
 * small vectors, the camera, ray/box slabs and Blinn-Phong shading with a headlight.
 *
 * Every function is `static inline IR_HD`, so the same source is compiled for the host and the
 * device. The render target compiles CUDA with --fmad=false and C without contraction, so the
 * float operations here round identically on both sides: only the texture filter (see
 * volume_sample.cuh) separates a GPU image from the CPU one. No transcendental functions are
 * called per ray (those differ between libm and the CUDA math library); tan() of the field of
 * view is taken once on the host.
 */
#ifndef INKRAY_RENDER_RAY_MATH_CUH
#define INKRAY_RENDER_RAY_MATH_CUH

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#ifdef __CUDACC__
#define IR_HD __host__ __device__
#else
#define IR_HD
#endif

typedef struct ir_vec3 {
  float x, y, z;
} ir_vec3;

static inline IR_HD ir_vec3 ir_v3(float x, float y, float z) {
  ir_vec3 v;
  v.x = x;
  v.y = y;
  v.z = z;
  return v;
}
static inline IR_HD ir_vec3 ir_add(ir_vec3 a, ir_vec3 b) { return ir_v3(a.x + b.x, a.y + b.y, a.z + b.z); }
static inline IR_HD ir_vec3 ir_sub(ir_vec3 a, ir_vec3 b) { return ir_v3(a.x - b.x, a.y - b.y, a.z - b.z); }
static inline IR_HD ir_vec3 ir_mul(ir_vec3 a, ir_vec3 b) { return ir_v3(a.x * b.x, a.y * b.y, a.z * b.z); }
static inline IR_HD ir_vec3 ir_scale(ir_vec3 a, float s) { return ir_v3(a.x * s, a.y * s, a.z * s); }
static inline IR_HD float ir_dot(ir_vec3 a, ir_vec3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
static inline IR_HD ir_vec3 ir_cross(ir_vec3 a, ir_vec3 b) {
  return ir_v3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}
static inline IR_HD ir_vec3 ir_normalize(ir_vec3 a) {
  float len = sqrtf(ir_dot(a, a));
  return len > 0.0f ? ir_scale(a, 1.0f / len) : a;
}

/* ---- Camera -----------------------------------------------------------------------------------
 * Prepared once per frame on the host (render/camera.c). Rays are traced in voxel (texture)
 * coordinates, where the volume spans [0, dims] and voxel i has its centre at i + 0.5; world
 * space is voxel space times the spacing. */
typedef struct ir_cam_basis {
  ir_vec3 eye_voxel;    /* eye in voxel coordinates */
  ir_vec3 forward;      /* unit view direction, world */
  ir_vec3 right;        /* world, scaled by tan(fov/2) * aspect */
  ir_vec3 up;           /* world, scaled by tan(fov/2) */
  ir_vec3 inv_spacing;  /* 1 / spacing: world direction -> voxel direction */
  float two_over_w, two_over_h;
  int width, height;
  /* The traced pixels (ir_frame_desc.window; the whole image without one): rays are numbered
   * over this rectangle and placed in the image by its origin. */
  int win_x0, win_y0, win_w, win_h;
} ir_cam_basis;

typedef struct ir_ray {
  ir_vec3 o;      /* origin, voxel coordinates */
  ir_vec3 d;      /* direction, voxel coordinates (world unit direction / spacing) */
  ir_vec3 inv_d;  /* 1 / d, for the slab tests */
  ir_vec3 dir_world; /* unit direction in world space, for shading */
} ir_ray;

/* The primary ray through the centre of pixel `pixel` (row-major, row 0 at the top). */
static inline IR_HD ir_ray ir_camera_ray(const ir_cam_basis *c, uint32_t pixel) {
  uint32_t px = pixel % (uint32_t)c->width, py = pixel / (uint32_t)c->width;
  float sx = ((float)px + 0.5f) * c->two_over_w - 1.0f;
  float sy = 1.0f - ((float)py + 0.5f) * c->two_over_h;
  ir_vec3 dw = ir_normalize(ir_add(c->forward, ir_add(ir_scale(c->right, sx), ir_scale(c->up, sy))));
  ir_ray r;
  r.o = c->eye_voxel;
  r.dir_world = dw;
  r.d = ir_mul(dw, c->inv_spacing);
  r.inv_d = ir_v3(1.0f / r.d.x, 1.0f / r.d.y, 1.0f / r.d.z);
  return r;
}

/* Slab test against [lo, hi], clipped to t >= 0 (the camera may be inside the box). A zero
 * direction component gives an infinite inverse; the NaN that (lo - o) * inf can produce on a
 * slab plane is dropped by fminf/fmaxf, which return the other operand. */
static inline IR_HD bool ir_ray_box(const ir_ray *r, const float lo[3], const float hi[3],
                                    float *t_near, float *t_far) {
  float x0 = (lo[0] - r->o.x) * r->inv_d.x, x1 = (hi[0] - r->o.x) * r->inv_d.x;
  float y0 = (lo[1] - r->o.y) * r->inv_d.y, y1 = (hi[1] - r->o.y) * r->inv_d.y;
  float z0 = (lo[2] - r->o.z) * r->inv_d.z, z1 = (hi[2] - r->o.z) * r->inv_d.z;
  float tn = fmaxf(fmaxf(fminf(x0, x1), fminf(y0, y1)), fmaxf(fminf(z0, z1), 0.0f));
  float tf = fminf(fminf(fmaxf(x0, x1), fmaxf(y0, y1)), fmaxf(z0, z1));
  *t_near = tn;
  *t_far = tf;
  return tn <= tf;
}

/* ---- Shading ----------------------------------------------------------------------------------
 * Blinn-Phong with a headlight: the light sits at the eye, so L = V = H = -dir and the
 * specular term is (n.l)^32, computed by squaring (no powf, see the top of the file).
 * The surface is two-sided: the normal is flipped to face the viewer. */
#define IR_SURFACE_R 0.93f
#define IR_SURFACE_G 0.84f
#define IR_SURFACE_B 0.66f
#define IR_AMBIENT 0.12f
#define IR_SPECULAR 0.35f
/* Background: dark grey with alpha 0, so surface pixels (alpha 255) can be told apart. */
#define IR_BACKGROUND_RGBA 0x00161412u

static inline IR_HD float ir_clamp01(float x) { return fminf(fmaxf(x, 0.0f), 1.0f); }

/* RGBA8 of colour values 0..1 (clamped), alpha 0..1. */
static inline IR_HD uint32_t ir_pack_rgba_alpha(float r, float g, float b, float a) {
  uint32_t ri = (uint32_t)(ir_clamp01(r) * 255.0f + 0.5f), gi = (uint32_t)(ir_clamp01(g) * 255.0f + 0.5f),
           bi = (uint32_t)(ir_clamp01(b) * 255.0f + 0.5f), ai = (uint32_t)(ir_clamp01(a) * 255.0f + 0.5f);
  return ri | (gi << 8) | (bi << 16) | (ai << 24);
}
static inline IR_HD uint32_t ir_pack_rgba(float r, float g, float b) { return ir_pack_rgba_alpha(r, g, b, 1.0f); }

/* The lit colour (0..1 per channel) of a surface of colour `base` with this normal. */
static inline IR_HD ir_vec3 ir_shade_color(ir_vec3 normal_world, ir_vec3 dir_world, ir_vec3 base) {
  ir_vec3 l = ir_scale(dir_world, -1.0f);
  float ndl = ir_dot(normal_world, l);
  if (!(ndl == ndl)) ndl = 1.0f; /* a normal from NaN samples: light it head-on */
  ndl = fabsf(ndl);
  if (ndl > 1.0f) ndl = 1.0f;
  float s = ndl * ndl; /* ^2 */
  s = s * s;           /* ^4 */
  s = s * s;           /* ^8 */
  s = s * s;           /* ^16 */
  s = s * s;           /* ^32 */
  float diffuse = IR_AMBIENT + (1.0f - IR_AMBIENT) * ndl;
  float spec = IR_SPECULAR * s;
  return ir_v3(ir_clamp01(base.x * diffuse + spec), ir_clamp01(base.y * diffuse + spec),
               ir_clamp01(base.z * diffuse + spec));
}

/* The default surface, opaque: RGBA8. */
static inline IR_HD uint32_t ir_shade(ir_vec3 normal_world, ir_vec3 dir_world) {
  ir_vec3 c = ir_shade_color(normal_world, dir_world, ir_v3(IR_SURFACE_R, IR_SURFACE_G, IR_SURFACE_B));
  return ir_pack_rgba(c.x, c.y, c.z);
}

/* ---- Colour maps ------------------------------------------------------------------------------
 * A table of `size` RGB triples read at u in [0, 1] (clamped; NaN reads the low end) with linear
 * interpolation between entries (render.h: ir_colormap). */
static inline IR_HD ir_vec3 ir_colormap_at(const float *table, int size, float u) {
  u = u == u ? ir_clamp01(u) : 0.0f;
  float x = u * (float)(size - 1);
  int i = (int)x;
  if (i > size - 2) i = size - 2;
  float w = x - (float)i;
  const float *a = table + 3 * i, *b = a + 3;
  return ir_v3((1.0f - w) * a[0] + w * b[0], (1.0f - w) * a[1] + w * b[1], (1.0f - w) * a[2] + w * b[2]);
}

#endif
