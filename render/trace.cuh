/* The per-ray work of every renderer (InK §3.1.3-3.1.6), shared by the CPU and the GPU:
 *
 *   ir_ray_clip       the drawn part of the ray: the volume (or clip) box cut by the clip plane
 *   ir_ray_span       that part of the ray, and its grid of samples (below)
 *   ir_ray_start      ray generation for the BVH pipeline: stack = {root}
 *   ir_traverse       stack-based BVH traversal, nearer child first, until a leaf is on top
 *   ir_intersect      march the leaf on top of the stack; on a miss peek the stack and go on
 *                     while the next item is a leaf
 *   ir_next_run       brick walk: 3D-DDA over the brick grid to the next run of valid bricks
 *   ir_march_run_as   march a run of samples: every surface crossed, in order; translucent hits
 *                     composited on the way (ir_segment_hits), the hit that ends the ray returned;
 *                     ir_march_part_as marches it in parts that can pause between batches
 *   ir_step_as        a ray's walk and march cut into steps of a budget of batches (the
 *                     persistent pipeline moves rays between threads in between)
 *   ir_refine, ir_hit_resolve_differences  refine a crossing (texture unit, or exact trilinear
 *                     field) and take the field's differences there
 *   ir_end_at_hit     shade the hit that ends a ray and composite it: the pixel
 *   ir_trace_pixel    the BVH pipeline in one loop (the paper's pipeline on the CPU)
 *   ir_trace_pixel_runs  brick walk + march in one loop (the single kernel, the CPU reference)
 *   ir_trace_pixel_steps_as  the same in steps (the persistent pipeline's CPU reference)
 *
 * One sample grid per ray. A ray's samples sit at t_k = t_entry + k * dt (k = 0 .. K, the last
 * one clamped to the exit), dt = half a voxel, wherever the ray is in the volume. Every way of
 * finding the bricks to march (the BVH's leaves one at a time, runs of bricks from the DDA walk,
 * runs cut short to hand rays back to the traversal stage) marches segments of this one grid,
 * each brick's range widened by one segment at both ends, in increasing t. A crossing lies in a
 * valid brick, so the segments with a crossing are the same however the bricks were found, and a
 * ray never marches a segment twice: every pipeline draws the same image, bit for bit. A stack is
 * `items[i * stride]`. Kernels pass the frame's trace mode (IR_TRACE_COMPOSITE, IR_TRACE_EXACT)
 * as a constant to the `_as` functions, so that each variant carries only its own hit code.
 */
#ifndef INKRAY_RENDER_TRACE_CUH
#define INKRAY_RENDER_TRACE_CUH

#include "render/bvh.cuh"
#include "render/skip.cuh"
#include "render/render.h"
#include "render/ray_math.cuh"
#include "render/volume_sample.cuh"

/* What every ray of a frame shares. */
typedef struct ir_trace_params {
  ir_cam_basis cam;
  ir_volume_view vol;
  const ir_bvh_node *nodes;
  float box_lo[3], box_hi[3]; /* the volume bounds, or the frame's clip box inside them; voxel
                                 coordinates: rays are marched inside it only */
  float grid_lo[3], grid_hi[3]; /* the box whose entry anchors every ray's sample grid: the volume
                                   bounds, or, for a brick of a larger volume, that volume's
                                   (dist/): a brick then samples where the whole volume does */
  ir_iso_set iso;             /* the surfaces' isovalues (data units), ascending */
  float surf_rgb[IR_ISO_SET_MAX][3]; /* surface i (isovalue iso.v[i]): its colour */
  float surf_alpha[IR_ISO_SET_MAX];  /* and opacity (> 0) */
  bool translucent;           /* some surface has opacity < 1: rays composite past hits */
  bool exact;                 /* refine crossings and take normals on the exact trilinear field */
  float step;                 /* the sample step along a ray (primary and shadow), voxels */
  bool plane_on;              /* clip plane in voxel coordinates: keeps the points x with */
  float plane[4];             /* plane[0..2] . x + plane[3] >= 0 */
  int color_by;               /* ir_color_source */
  ir_volume_view color;       /* IR_COLOR_VOLUME: the second volume */
  const float *cmap;          /* colour map: IR_COLORMAP_SIZE RGB triples */
  float cmap_lo, cmap_scale;  /* a value v reads the map at (v - cmap_lo) * cmap_scale */
  uint32_t root;              /* root node index, IR_BVH_NONE when no brick is valid */
  uint32_t bricks[3];         /* brick grid = the BVH's level 0, nodes[x + bx * (y + by * z)] */
  /* The brick walk's grid: cells of `cell` voxels along each axis (a power of two), cells[] of
   * them. A cell is valid where its range holds an isovalue: read from `skip` where it is set
   * (every walk of the GPU and the CPU renderers); else from `ranges` (frames without a BVH
   * update, whose cells may be finer than the bricks), else from the cell's leaf after this
   * frame's BVH update (the cells are then the bricks). */
  uint32_t cells[3];
  float cell, inv_cell;
  const ir_brick_range *ranges;
  const uint8_t *skip;        /* each cell's skip distance for the frame's isovalues (skip.cuh),
                                 or NULL: the walk tests each cell by its range or its leaf */
  int run_cells;              /* most valid cells the walk hands the march in one run (0: no
                                 limit): short runs let a ray start marching before it has read
                                 the ranges of a long row of valid cells */
  /* Occlusion and shadow rays from each shaded hit, and the light (secondary.cuh); frames with
   * any of them run in mode IR_TRACE_LIGHT. */
  int ao_n;                   /* occlusion rays per hit (0: none) */
  float ao_radius;            /* their length, voxels */
  uint32_t ao_first;          /* the frame's first sample in each hit's sequence */
  bool shadows;               /* a ray toward the light per hit */
  bool light_on;              /* a directional light (light_dir) instead of the headlight */
  ir_vec3 light_dir;          /* unit, world, towards the light */
} ir_trace_params;


static inline IR_HD ir_bvh_node ir_load_node(const ir_bvh_node *nodes, uint32_t i) {
#ifdef __CUDA_ARCH__
  const float4 *p = (const float4 *)(nodes + i);
  float4 a = __ldg(p), b = __ldg(p + 1);
  ir_bvh_node n;
  n.lo[0] = a.x;
  n.lo[1] = a.y;
  n.lo[2] = a.z;
  n.a = __float_as_uint(a.w);
  n.hi[0] = b.x;
  n.hi[1] = b.y;
  n.hi[2] = b.z;
  n.b = __float_as_uint(b.w);
  return n;
#else
  return nodes[i];
#endif
}

/* The part [*tn, *tf] of the ray that is drawn: inside the volume box (or the clip box) and on
 * the kept side of the clip plane; false if there is none. Clipped space is skipped here, before
 * any brick is visited, so clipping costs nothing per sample. */
static inline IR_HD bool ir_ray_clip(const ir_trace_params *p, const ir_ray *r, float *tn, float *tf) {
  if (!ir_ray_box(r, p->box_lo, p->box_hi, tn, tf)) return false;
  if (!p->plane_on) return true;
  /* n.(o + t d) + w >= 0  <=>  a + t b >= 0 */
  float a = p->plane[0] * r->o.x + p->plane[1] * r->o.y + p->plane[2] * r->o.z + p->plane[3];
  float b = p->plane[0] * r->d.x + p->plane[1] * r->d.y + p->plane[2] * r->d.z;
  if (b == 0.0f) return a >= 0.0f;
  float t = -a / b;
  if (b > 0.0f) *tn = fmaxf(*tn, t);
  else *tf = fminf(*tf, t);
  return *tn <= *tf;
}

/* Ray generation: false if the ray misses the volume. Otherwise the stack holds the root (or
 * nothing, when no brick is valid for this isovalue). */
static inline IR_HD bool ir_ray_start(const ir_trace_params *p, uint32_t pixel, uint32_t *stack,
                                      size_t stride, int *sp) {
  ir_ray r = ir_camera_ray(&p->cam, pixel);
  float tn, tf;
  if (!ir_ray_clip(p, &r, &tn, &tf)) return false;
  *sp = 0;
  if (p->root != IR_BVH_NONE) stack[(*sp)++ * stride] = p->root;
  return true;
}

enum { IR_TRAVERSE_LEAF = 0, IR_TRAVERSE_DONE = 1 };

/* Pops nodes until a leaf is on top of the stack (left there for ir_intersect) or the stack
 * is empty (the ray leaves the volume without a hit). Children the ray misses are never
 * pushed; of two hit children the nearer is pushed last, so it is visited first and leaves
 * come off the stack in the order the ray meets them (sibling boxes do not overlap).
 * The node just pushed is the next one visited, and it is already loaded: it stays in
 * registers instead of being read back from the stack and loaded again, so each level of the
 * descent costs one dependent load (the children) instead of three. */
static inline IR_HD int ir_traverse(const ir_trace_params *p, const ir_ray *r, uint32_t *stack,
                                    size_t stride, int *sp) {
  if (*sp == 0) return IR_TRAVERSE_DONE;
  ir_bvh_node n = ir_load_node(p->nodes, stack[(*sp - 1) * stride]);
  for (;;) {
    if (ir_bvh_is_leaf(&n)) return IR_TRAVERSE_LEAF;
    --*sp;
    ir_bvh_node c0 = ir_load_node(p->nodes, n.a), c1 = ir_load_node(p->nodes, n.b);
    float n0, f0, n1, f1;
    bool h0 = ir_ray_box(r, c0.lo, c0.hi, &n0, &f0);
    bool h1 = ir_ray_box(r, c1.lo, c1.hi, &n1, &f1);
    if (h0 && h1) {
      bool first0 = n0 <= n1;
      stack[(*sp)++ * stride] = first0 ? n.b : n.a;
      stack[(*sp)++ * stride] = first0 ? n.a : n.b;
      n = first0 ? c0 : c1;
    } else if (h0) {
      stack[(*sp)++ * stride] = n.a;
      n = c0;
    } else if (h1) {
      stack[(*sp)++ * stride] = n.b;
      n = c1;
    } else {
      if (*sp == 0) return IR_TRAVERSE_DONE;
      n = ir_load_node(p->nodes, stack[(*sp - 1) * stride]);
    }
  }
}

static inline IR_HD bool ir_is_crossing(float s0, float s1, float iso) {
  return s0 == s0 && s1 == s1 && ((s0 >= iso) != (s1 >= iso));
}

/* Fused multiply-adds, written out: the same rounding on the CPU (fmaf) and the GPU (FFMA), in
 * half the instructions of a multiply and an add (the render target compiles with --fmad=false,
 * so nothing else is fused behind the code's back). */
static inline IR_HD ir_vec3 ir_ray_at(const ir_ray *r, float t) {
  return ir_v3(fmaf(r->d.x, t, r->o.x), fmaf(r->d.y, t, r->o.y), fmaf(r->d.z, t, r->o.z));
}

/* The ray's sample grid: t_k = t0 + k * dt for k < k_end, t_{k_end} = t1 (the exit). Crossings
 * count only inside [c0, c1], the part that is drawn (ir_ray_clip): the grid may start before it
 * and end after it. */
typedef struct ir_span {
  float t0, t1, dt;
  int32_t k_end;
  float c0, c1;
} ir_span;

/* Sample k's t, with k as a float (whole numbers below 2^24 are exact: a march adds its batch's
 * offsets to one conversion). k_end is the first k whose grid point lies on or past t1
 * (ir_span_end), so the clamp alone puts every sample from k_end on at t1. */
static inline IR_HD float ir_span_t_of(const ir_span *s, float k) { return fminf(fmaf(k, s->dt, s->t0), s->t1); }
static inline IR_HD float ir_span_t(const ir_span *s, int32_t k) { return ir_span_t_of(s, (float)k); }

/* The first sample on or past t1: from the count of steps that cover [t0, t1], one more where the
 * grid's rounding leaves that count's point short of t1. */
static inline IR_HD int32_t ir_span_end(float t0, float t1, float dt) {
  float n = ceilf((t1 - t0) / dt); /* at most a few times the volume's diagonal in voxels */
  if (n < 1.0f) n = 1.0f;
  if (fmaf(n, dt, t0) < t1) n += 1.0f;
  return (int32_t)n;
}

/* Samples [*ka, *kb] whose segments cover [ta, tb], widened by one segment at each end so that
 * two computations of the same interval (a leaf's box, a run of DDA cells) that differ in the
 * last bit still cover the same segments. */
static inline IR_HD void ir_span_range(const ir_span *s, float ta, float tb, int32_t *ka, int32_t *kb) {
  float inv_dt = 1.0f / s->dt; /* one division: the widening absorbs its last bit */
  float a = floorf((ta - s->t0) * inv_dt) - 1.0f, b = ceilf((tb - s->t0) * inv_dt) + 1.0f;
  float end = (float)s->k_end;
  *ka = a <= 0.0f ? 0 : (int32_t)fminf(a, end);
  *kb = b <= 0.0f ? 0 : (int32_t)fminf(b, end);
}

/* Samples fetched before any of them is tested. A march is a chain of dependent texture reads
 * when each sample is tested before the next is fetched; fetching a batch first keeps a batch
 * of reads in flight per ray. The samples and the order of the tests are those of a
 * one-at-a-time march, so the result is the same; a batch that overshoots the crossing or the
 * end of the run reads at most a batch less one samples that are never used.
 *   IR_MARCH_BATCH      frames without occlusion or shadow rays: 8. A frame is bound by its
 *                       longest rays where rays are few per voxel, and more reads in flight
 *                       shorten them: 5-12 % faster frames at 1024^2 from 256^3 to 2048^3 than
 *                       batches of 4, about even at 3840x2160 (docs/PERFORMANCE.md).
 *   IR_LIT_MARCH_BATCH  frames with them (IR_TRACE_LIGHT): 4. The lit kernels hold a hit's
 *                       secondary rays besides the march and are capped in registers; batches
 *                       of 8 made the lit single kernel 22 % slower. A lit kernel whose
 *                       march runs apart from the secondary rays (the persistent kernel's
 *                       steps phase) asks for the wider batches with IR_TRACE_WIDE.
 * The mode is a constant in every kernel, so each kernel carries one batch size. */
#ifndef IR_MARCH_BATCH
#define IR_MARCH_BATCH 8
#endif
#ifndef IR_LIT_MARCH_BATCH
#define IR_LIT_MARCH_BATCH 4
#endif
#define IR_MARCH_BATCH_MAX (IR_MARCH_BATCH > IR_LIT_MARCH_BATCH ? IR_MARCH_BATCH : IR_LIT_MARCH_BATCH)
#ifdef __CUDA_ARCH__ /* the device pass only: the host compiler warns about the pragma */
#define IR_UNROLL _Pragma("unroll")
#else
#define IR_UNROLL
#endif

/* ---- Hits: refinement, shading, compositing ------------------------------------------------- */

/* A crossing of the surface with isovalue iso.v[surf] at t. */
/* The hit that ends a ray is refined only once the march is over (ir_hit_resolve_differences): inside the
 * march loop its lanes would refine while the rest of the warp waits. */
typedef struct ir_hit {
  float t;              /* the linear estimate until resolved, then the refined crossing */
  int surf;
  float ta, sa, tb, sb; /* the segment of the march it lies in */
} ir_hit;

/* A ray's colour so far, premultiplied by alpha, composited front to back. */
typedef struct ir_paint {
  float r, g, b, a;
} ir_paint;

/* What a frame's per-ray code does at a hit, as flags: kernels compiled for one mode (a constant)
 * carry only its code; the others read it from the frame (ir_trace_mode). */
enum { IR_TRACE_COMPOSITE = 1, /* go on past translucent hits, compositing them */
       IR_TRACE_EXACT = 2,     /* refine and take normals on the exact trilinear field */
       IR_TRACE_BOUNDED = 4,   /* a march fetches at most a budget of batches (ir_march_part_as) */
       IR_TRACE_LIGHT = 8,     /* occlusion, shadow rays and the light at each hit (secondary.cuh) */
       IR_TRACE_WIDE = 16 };   /* lit, but the march in batches of IR_MARCH_BATCH (ir_march_part_as) */
/* Lit frames run the compositing variant too: their secondary rays outweigh its code, and one
 * variant fewer per kernel is compiled. */
static inline IR_HD int ir_trace_mode(const ir_trace_params *p) {
  bool lit = p->ao_n > 0 || p->shadows || p->light_on;
  return (p->translucent || lit ? IR_TRACE_COMPOSITE : 0) | (p->exact ? IR_TRACE_EXACT : 0) |
         (lit ? IR_TRACE_LIGHT : 0);
}

/* Refines a crossing of `iso` between samples (ta, sa) and (tb, sb) of the march: linear
 * interpolation and one regula falsi step with a new sample of the texture unit (texture
 * refinement; its 8-bit interpolation weights leave the crossing on a staircase), then, when
 * `exact`, Newton steps on the exact trilinear field: the value and the derivative along the
 * ray come from the same eight texels (ir_sample_exact_along). From the regula falsi estimate,
 * within a few thousandths of a voxel, one step lands on the exact isosurface to float precision
 * where the field is smooth; a step that would leave the segment is not taken. */
#ifndef IR_NEWTON_STEPS
#define IR_NEWTON_STEPS 2
#endif
static inline IR_HD float ir_refine(const ir_trace_params *p, const ir_ray *r, float ta, float sa, float tb,
                                    float sb, float iso, bool exact, ir_exact_cell *cell) {
  float tc = ta + (tb - ta) * ((iso - sa) / (sb - sa));
  float sc = ir_sample(&p->vol, ir_ray_at(r, tc));
  if (sc == sc) {
    if ((sc >= iso) == (sa >= iso)) {
      ta = tc;
      sa = sc;
    } else {
      tb = tc;
      sb = sc;
    }
    tc = ta + (tb - ta) * ((iso - sa) / (sb - sa));
  }
  if (!exact) return tc;
  bool a_above = sa >= iso; /* the bracket [ta, tb] narrowed by the texture step */
  for (int i = 0; i < IR_NEWTON_STEPS; i++) {
    float df, f = ir_sample_exact_along(&p->vol, ir_ray_at(r, tc), r->d, &df, cell) - iso;
    if (!(f == f) || f == 0.0f) break;
    if ((f >= 0.0f) == a_above) ta = tc;
    else tb = tc;
    float next = tc - f / df;
    /* Outside the bracket (a flat or NaN derivative too): bisect it instead. */
    tc = next >= ta && next <= tb ? next : 0.5f * (ta + tb);
  }
  return tc;
}

/* Central differences of the field at the hit, in voxel space: of the exact field (its cell's
 * texels from *cell where it holds them), or of the texture unit's samples with texture_refine. */
static inline IR_HD ir_vec3 ir_hit_differences(const ir_trace_params *p, const ir_ray *r, float t, bool exact,
                                               ir_exact_cell *cell) {
  ir_vec3 x = ir_ray_at(r, t);
#ifdef IR_FILTERED_NORMALS /* measuring what the exact differences cost */
  return ir_filtered_differences(&p->vol, x);
#else
  return exact ? ir_exact_differences(&p->vol, x, cell) : ir_filtered_differences(&p->vol, x);
#endif
}

/* A crossing refined (ir_refine) and the field's differences there (ir_hit_differences), the
 * exact ones reading the texels of the last Newton step's cell again only where the refined
 * crossing left it (ir_exact_cell): 32 texture reads instead of 48 at most hits. */
static inline IR_HD ir_vec3 ir_refine_differences(const ir_trace_params *p, const ir_ray *r, float ta, float sa,
                                                  float tb, float sb, float iso, bool exact, float *t) {
  ir_exact_cell cell = ir_exact_cell_none();
  *t = ir_refine(p, r, ta, sa, tb, sb, iso, exact, &cell);
  return ir_hit_differences(p, r, *t, exact, &cell);
}

/* World-space normal from the differences (towards larger values). */
static inline IR_HD ir_vec3 ir_hit_normal_of(const ir_trace_params *p, ir_vec3 diff) {
  return ir_normalize(ir_mul(diff, p->cam.inv_spacing));
}

/* The lit colour with occlusion and shadow rays (secondary.cuh, included at the end). */
static inline IR_HD ir_vec3 ir_light_color(const ir_trace_params *p, const ir_ray *r, float t, int surf, ir_vec3 diff,
                                           ir_vec3 base);

/* The colour of surface `surf` at the hit before lighting: its own colour, or the colour map of
 * the second quantity there. */
static inline IR_HD ir_vec3 ir_hit_base(const ir_trace_params *p, const ir_ray *r, float t, int surf, ir_vec3 diff) {
  ir_vec3 base = ir_v3(p->surf_rgb[surf][0], p->surf_rgb[surf][1], p->surf_rgb[surf][2]);
  if (p->color_by != IR_COLOR_SURFACE) {
    float v;
    if (p->color_by == IR_COLOR_GRADIENT) {
      ir_vec3 g = ir_mul(diff, p->cam.inv_spacing); /* two voxels apart */
      v = 0.5f * sqrtf(ir_dot(g, g));
    } else {
      v = ir_sample(&p->color, ir_ray_at(r, t));
    }
    base = ir_colormap_at(p->cmap, IR_COLORMAP_SIZE, (v - p->cmap_lo) * p->cmap_scale);
  }
  return base;
}

/* The lit colour of surface `surf` at the hit. */
static inline IR_HD ir_vec3 ir_hit_color(const ir_trace_params *p, const ir_ray *r, float t, int surf, ir_vec3 diff,
                                         int mode) {
  ir_vec3 base = ir_hit_base(p, r, t, surf, diff);
  if (mode & IR_TRACE_LIGHT) return ir_light_color(p, r, t, surf, diff, base);
  return ir_shade_color(ir_hit_normal_of(p, diff), r->dir_world, base);
}

/* Composites a surface of colour c and opacity `opacity` behind what the ray has so far. */
static inline IR_HD void ir_paint_add(ir_paint *pt, ir_vec3 c, float opacity) {
  float w = (1.0f - pt->a) * opacity;
  pt->r += w * c.x;
  pt->g += w * c.y;
  pt->b += w * c.z;
  pt->a += w;
}

/* Whether a hit on surface `surf` leaves the ray opaque enough to stop. */
static inline IR_HD bool ir_hit_finishes(const ir_trace_params *p, const ir_paint *pt, int surf) {
  return pt->a + (1.0f - pt->a) * p->surf_alpha[surf] >= IR_OPAQUE_ALPHA;
}

/* The pixel of a ray's paint over the background. */
static inline IR_HD uint32_t ir_paint_pixel(const ir_paint *pt) {
  if (pt->a == 0.0f) return IR_BACKGROUND_RGBA;
  float k = 1.0f - pt->a;
  const float bg_r = (float)(IR_BACKGROUND_RGBA & 0xffu) / 255.0f, bg_g = (float)(IR_BACKGROUND_RGBA >> 8 & 0xffu) / 255.0f,
              bg_b = (float)(IR_BACKGROUND_RGBA >> 16 & 0xffu) / 255.0f;
  return ir_pack_rgba_alpha(pt->r + k * bg_r, pt->g + k * bg_g, pt->b + k * bg_b, pt->a);
}

/* The pixel of a ray that ends at hit h (which ir_march_run_as returned): the hit composited
 * behind the paint so far. `diff` are the field's differences at the hit (ir_hit_differences). */
static inline IR_HD uint32_t ir_finish_hit(const ir_trace_params *p, const ir_ray *r, ir_hit h, ir_vec3 diff,
                                           ir_paint *pt, int mode) {
  ir_paint_add(pt, ir_hit_color(p, r, h.t, h.surf, diff, mode), p->surf_alpha[h.surf]);
  return ir_paint_pixel(pt);
}

/* The values between two isovalues, [*lo, *hi), that a sample v lies in: a segment whose end
 * stays in its start's band crosses no surface. NaN gets an empty band, so that the segment
 * after it is looked at (and skipped: a NaN sample never counts as a crossing). */
static inline IR_HD void ir_iso_band(const ir_iso_set *iso, float v, float *lo, float *hi) {
  *lo = -INFINITY;
  *hi = INFINITY;
  if (!(v == v)) {
    *lo = INFINITY;
    return;
  }
  for (int i = 0; i < iso->n; i++) {
    if (iso->v[i] <= v) {
      *lo = iso->v[i];
    } else {
      *hi = iso->v[i];
      break;
    }
  }
}

/* The crossings in the segment (ta, sa) .. (tb, sb), in the order the ray meets them (ascending
 * isovalues on a rising segment); those outside the drawn part [c0, c1] are skipped. Hits that
 * leave the ray translucent are composited into *pt at once (the first one's t to *first_t); the
 * first that makes it opaque enough is returned in *hit, not yet composited. */
static inline IR_HD bool ir_segment_hits(const ir_trace_params *p, const ir_ray *r, const ir_span *s, float ta,
                                         float sa, float tb, float sb, ir_paint *pt, float *first_t, ir_hit *hit,
                                         int mode) {
  if (!(sa == sa && sb == sb)) return false;
  bool rising = sb > sa;
  for (int m = 0; m < p->iso.n; m++) {
    int i = rising ? m : p->iso.n - 1 - m;
    float iso = p->iso.v[i];
    if ((sa >= iso) == (sb >= iso)) continue;
    /* Clipping tests the interpolated crossing, which refinement moves by hundredths of a voxel. */
    float tc = ta + (tb - ta) * ((iso - sa) / (sb - sa));
    if (!(s->c0 <= tc && tc <= s->c1)) continue;
    if (!(mode & IR_TRACE_COMPOSITE) || ir_hit_finishes(p, pt, i)) {
      hit->t = tc;
      hit->surf = i;
      hit->ta = ta;
      hit->sa = sa;
      hit->tb = tb;
      hit->sb = sb;
      return true;
    }
    ir_vec3 diff = ir_refine_differences(p, r, ta, sa, tb, sb, iso, (mode & IR_TRACE_EXACT) != 0, &tc);
    ir_paint_add(pt, ir_hit_color(p, r, tc, i, diff, mode), p->surf_alpha[i]);
    if (!(*first_t < INFINITY)) *first_t = tc;
  }
  return false;
}

/* A march that can pause between batches of samples (the persistent pipeline hands its rays
 * round between phases): the next sample to fetch, the run's last sample, and the value of the
 * sample before k (its t is ir_span_t(s, k - 1)). That is all a march carries from batch to
 * batch: the band is the one sa lies in. The march is over once k > kb. */
typedef struct ir_march_state {
  int32_t k, kb;
  float sa;
} ir_march_state;

/* Marches from m->k on in whole batches until past m->kb, in order. Translucent hits are
 * composited on the way (ir_segment_hits); returns true at the hit that ends the ray (in *hit).
 * A batch of samples is tested against the band of values between isovalues its start lies in;
 * only a sample leaving the band (rare: a crossing, or NaN) takes the slow path, once per batch,
 * with the samples after it read again from there, so that the slow path's code appears once in
 * the loop rather than once per sample of the unrolled batch. The last batch runs whole, up to
 * a batch less one samples past kb, rather than testing each sample against kb: the samples
 * past a run are those the ray's march meets next anyway (past its last valid cell, where no
 * crossing lies, or in the next run, which then starts after them), so what the march finds is
 * the same and each sample costs fewer instructions. m->k - 1 is the last sample marched. With
 * IR_TRACE_BOUNDED in `mode`, at most *budget batches are fetched (each one counted off): the
 * march then stops between two batches, and *m says where it goes on. The samples and the order
 * of the tests do not depend on where it pauses, so a paused and resumed march finds what one
 * march finds, bit for bit. */
static inline IR_HD bool ir_march_part_as(const ir_trace_params *p, const ir_ray *r, const ir_span *s,
                                          ir_march_state *m, int *budget, ir_paint *pt, float *first_t, ir_hit *hit,
                                          int mode) {
  const int batch = (mode & IR_TRACE_LIGHT) && !(mode & IR_TRACE_WIDE) ? IR_LIT_MARCH_BATCH : IR_MARCH_BATCH;
  int32_t k = m->k;
  const int32_t kb = m->kb;
  float ta = ir_span_t(s, k - 1), sa = m->sa, lo, hi;
  ir_iso_band(&p->iso, sa, &lo, &hi);
  while (k <= kb) {
    if ((mode & IR_TRACE_BOUNDED) && (*budget)-- <= 0) break;
    float tbs[IR_MARCH_BATCH_MAX], sbs[IR_MARCH_BATCH_MAX];
    const float kf = (float)k;
    bool inside = true;
    IR_UNROLL
    for (int j = 0; j < batch; j++) {
      tbs[j] = ir_span_t_of(s, kf + (float)j);
      sbs[j] = ir_sample(&p->vol, ir_ray_at(r, tbs[j]));
    }
    IR_UNROLL
    for (int j = 0; j < batch; j++) inside &= sbs[j] >= lo && sbs[j] < hi;
    if (inside) {
      ta = tbs[batch - 1];
      sa = sbs[batch - 1];
      k += batch;
      continue;
    }
    /* The first sample that leaves the band, and the one before it. */
    int leave = batch - 1;
    float tl = tbs[batch - 1], sl = sbs[batch - 1];
    IR_UNROLL
    for (int j = batch - 2; j >= 0; j--) {
      if (!(sbs[j] >= lo && sbs[j] < hi)) {
        leave = j;
        tl = tbs[j];
        sl = sbs[j];
      }
    }
    IR_UNROLL
    for (int j = 0; j < batch - 1; j++) {
      if (j < leave) {
        ta = tbs[j];
        sa = sbs[j];
      }
    }
    if (ir_segment_hits(p, r, s, ta, sa, tl, sl, pt, first_t, hit, mode)) return true;
    ir_iso_band(&p->iso, sl, &lo, &hi);
    ta = tl;
    sa = sl;
    k += leave + 1;
  }
  m->k = k;
  m->sa = sa;
  return false;
}

/* The march state at the start of the run [ka, kb]: sample ka read. (Reusing the value of the
 * sample the previous run ended on, when the run starts there, saved a read per run but held
 * two more registers across the march: 1 % slower on the H200, docs/PERFORMANCE.md.) */
static inline IR_HD ir_march_state ir_march_begin(const ir_trace_params *p, const ir_ray *r, const ir_span *s,
                                                  int32_t ka, int32_t kb) {
  ir_march_state m;
  m.k = ka + 1;
  m.kb = kb;
  m.sa = ir_sample(&p->vol, ir_ray_at(r, ir_span_t(s, ka)));
  return m;
}

/* Marches the segments between samples ka .. kb in order, and possibly a few past kb
 * (ir_march_part_as, unbounded); *k_last gets the last sample marched (>= kb, or ka when there
 * was nothing to march), where the ray's walk goes on. */
static inline IR_HD bool ir_march_run_as(const ir_trace_params *p, const ir_ray *r, const ir_span *s, int32_t ka,
                                         int32_t kb, int32_t *k_last, ir_paint *pt, float *first_t, ir_hit *hit,
                                         int mode) {
  *k_last = ka > kb ? ka : kb;
  if (kb <= ka) return false;
  ir_march_state m = ir_march_begin(p, r, s, ka, kb);
  bool hit_found = ir_march_part_as(p, r, s, &m, NULL, pt, first_t, hit, mode & ~IR_TRACE_BOUNDED);
  *k_last = m.k - 1;
  return hit_found;
}

/* The step in t that moves the frame's sample step (p->step voxels, half a voxel by default) in
 * voxel space. */
static inline IR_HD float ir_ray_step(const ir_trace_params *p, const ir_ray *r) {
  return p->step / sqrtf(ir_dot(r->d, r->d));
}

/* The ray's span in the volume and its sample grid; false if the ray misses the volume. */
static inline IR_HD bool ir_ray_span(const ir_trace_params *p, const ir_ray *r, ir_span *s) {
  float tn, tf, gn, gf;
  if (!ir_ray_clip(p, r, &tn, &tf)) return false;
  s->c0 = tn;
  s->c1 = tf;
  s->dt = ir_ray_step(p, r);
  /* Clipped, the span runs from the grid's sample on or before the entry to the one on or after
   * the exit, so segments straddling the clip are tested whole (a no-op without clipping). */
  if (ir_ray_box(r, p->grid_lo, p->grid_hi, &gn, &gf) && (gn < tn || tf < gf)) {
    tn = gn + floorf((tn - gn) / s->dt) * s->dt;
    tf = fminf(gn + ceilf((tf - gn) / s->dt) * s->dt, gf);
  }
  s->t0 = tn;
  s->t1 = tf;
  s->k_end = ir_span_end(tn, tf, s->dt);
  return true;
}

enum { IR_INTERSECT_HIT = 0, IR_INTERSECT_TRAVERSE = 1, IR_INTERSECT_DONE = 2 };

/* Pops the leaf on top of the stack and marches the samples of its box; on a miss, while the next
 * item on the stack is a leaf too, pops and tests that one (the stack peek of InK §3.1.5).
 * Returns HIT (the hit that ends the ray in *hit), TRAVERSE (an inner node is on top) or DONE
 * (stack empty). Translucent hits on the way are composited into *pt (ir_march_run_as). Leaves'
 * ranges are widened by a segment and so overlap: *k_done, the last sample marched, keeps a
 * segment from being marched twice. */
static inline IR_HD int ir_intersect(const ir_trace_params *p, const ir_ray *r, uint32_t *stack, size_t stride,
                                     int *sp, int32_t *k_done, ir_paint *pt, float *first_t, ir_hit *hit, int mode) {
  ir_span s;
  if (!ir_ray_span(p, r, &s)) s.t0 = s.t1 = s.dt = 1.0f, s.k_end = 0; /* never: the ray met the box */
  for (;;) {
    ir_bvh_node leaf = ir_load_node(p->nodes, stack[--*sp * stride]);
    float tn, tf;
    int32_t ka, kb;
    if (ir_ray_box(r, leaf.lo, leaf.hi, &tn, &tf)) {
      ir_span_range(&s, tn, tf, &ka, &kb);
      if (ka < *k_done) ka = *k_done;
      int32_t k_last;
      if (ir_march_run_as(p, r, &s, ka, kb, &k_last, pt, first_t, hit, mode)) return IR_INTERSECT_HIT;
      if (k_last > *k_done) *k_done = k_last;
    }
    if (*sp == 0) return IR_INTERSECT_DONE;
    ir_bvh_node top = ir_load_node(p->nodes, stack[(*sp - 1) * stride]);
    if (!ir_bvh_is_leaf(&top)) return IR_INTERSECT_TRAVERSE;
  }
}

/* Rays entering traversal / intersection per round, counted by the CPU renderer. */
typedef struct ir_round_counts {
  uint32_t traverse[64];
  uint32_t intersect[64];
  int rounds;      /* largest number of rounds of any ray */
  uint32_t generated, hit;
} ir_round_counts;

/* The pixel of a ray that ends at hit h, and its depth (the first hit's t). */
/* Refines the hit that ends a ray (ir_hit) and returns the field's differences there, sharing
 * the exact reads of the hit's cell (ir_refine_differences). */
static inline IR_HD ir_vec3 ir_hit_resolve_differences(const ir_trace_params *p, const ir_ray *r, ir_hit *h,
                                                       int mode) {
  return ir_refine_differences(p, r, h->ta, h->sa, h->tb, h->sb, p->iso.v[h->surf], (mode & IR_TRACE_EXACT) != 0,
                               &h->t);
}

static inline IR_HD uint32_t ir_end_at_hit(const ir_trace_params *p, const ir_ray *r, ir_hit h, ir_paint *pt,
                                           float *first_t, int mode) {
  ir_vec3 diff = ir_hit_resolve_differences(p, r, &h, mode);
  if (!(*first_t < INFINITY)) *first_t = h.t;
  return ir_finish_hit(p, r, h, diff, pt, mode);
}

/* The whole pipeline for one pixel with a local stack of IR_BVH_MAX_LEVELS entries; returns
 * the pixel's RGBA8 and stores the first hit's t in *depth (INFINITY on a miss). `counts` may
 * be NULL. */
static inline IR_HD uint32_t ir_trace_pixel(const ir_trace_params *p, uint32_t pixel, uint32_t *stack,
                                            ir_round_counts *counts, float *depth) {
  int sp = 0;
  *depth = INFINITY;
  if (!ir_ray_start(p, pixel, stack, 1, &sp)) return IR_BACKGROUND_RGBA;
  if (counts) counts->generated++;
  ir_ray r = ir_camera_ray(&p->cam, pixel);
  ir_paint pt = {0.0f, 0.0f, 0.0f, 0.0f};
  int32_t k_done = 0;
  for (int round = 0;; round++) {
    if (counts && round < 64) counts->traverse[round]++;
    if (counts && round + 1 > counts->rounds) counts->rounds = round + 1;
    if (ir_traverse(p, &r, stack, 1, &sp) == IR_TRAVERSE_DONE) return ir_paint_pixel(&pt);
    if (counts && round < 64) counts->intersect[round]++;
    ir_hit h;
    int s = ir_intersect(p, &r, stack, 1, &sp, &k_done, &pt, depth, &h, ir_trace_mode(p));
    if (s == IR_INTERSECT_HIT) {
      if (counts) counts->hit++;
      return ir_end_at_hit(p, &r, h, &pt, depth, ir_trace_mode(p));
    }
    if (s == IR_INTERSECT_DONE) return ir_paint_pixel(&pt);
  }
}

/* ---- Brick walk ------------------------------------------------------------------------------
 * 3D-DDA over the walk's grid (ir_trace_params.cells): the brick grid (the BVH's level 0,
 * updated every frame) for the traversal stage of the multi-kernel pipeline; cells of 8 or 16
 * voxels with their own ranges for the single and persistent kernels and the CPU. Cell c of size
 * C along an axis spans [C c + 0.5, C c + C + 0.5] in voxel coordinates (the first from 0, the
 * last to the volume's face; bvh.cuh), so the cell boundaries are C c + 0.5. */
/* The cell's skip distance (skip.cuh): 0 where it is valid; without a map, 1 where it is not. */
static inline IR_HD int ir_cell_skip(const ir_trace_params *p, int x, int y, int z);

static inline IR_HD bool ir_brick_valid(const ir_trace_params *p, int x, int y, int z) {
  uint32_t i = (uint32_t)x + p->cells[0] * ((uint32_t)y + p->cells[1] * (uint32_t)z);
#ifdef __CUDA_ARCH__
  if (p->ranges) {
    float2 m = __ldg((const float2 *)(p->ranges + i));
    return ir_iso_in_range(&p->iso, m.x, m.y);
  }
  return __ldg(&p->nodes[i].a) != IR_BVH_NONE;
#else
  if (p->ranges) return ir_iso_in_range(&p->iso, p->ranges[i].min, p->ranges[i].max);
  return p->nodes[i].a != IR_BVH_NONE;
#endif
}

static inline IR_HD int ir_cell_skip(const ir_trace_params *p, int x, int y, int z) {
  if (!p->skip) return ir_brick_valid(p, x, y, z) ? 0 : 1;
  uint32_t i = (uint32_t)x + p->cells[0] * ((uint32_t)y + p->cells[1] * (uint32_t)z);
#ifdef __CUDA_ARCH__
  return __ldg(p->skip + i);
#else
  return p->skip[i];
#endif
}

/* t where the ray leaves cell c along an axis (origin o, inverse direction inv, step -1/0/1,
 * n cells of `cell` voxels); infinite where it leaves the grid there (the volume's exit, t1,
 * ends the walk instead) or runs parallel to the axis. */
static inline IR_HD float ir_cell_exit(float o, float inv, int c, int step, uint32_t n, float cell) {
  if (step == 0 || (step > 0 && c + 1 >= (int)n) || (step < 0 && c == 0)) return INFINITY;
  float boundary = (float)(step > 0 ? c + 1 : c) * cell + 0.5f;
  return (boundary - o) * inv;
}

static inline IR_HD int ir_cell_of(float x, uint32_t n, float inv_cell) {
  float b = floorf((x - 0.5f) * inv_cell);
  return b < 0.0f ? 0 : (b >= (float)n ? (int)n - 1 : (int)b);
}

/* The DDA's state: the cell, the step and the exit t along each axis. Plain scalars, not arrays
 * indexed by the axis, so that they live in registers on the GPU. */
typedef struct ir_brick_cursor {
  int cx, cy, cz, sx, sy, sz;
  float ex, ey, ez;
} ir_brick_cursor;

/* The cursor at the cell holding the point at t. */
static inline IR_HD ir_brick_cursor ir_cursor_at(const ir_trace_params *p, const ir_ray *r, float t) {
  ir_vec3 x = ir_ray_at(r, t);
  ir_brick_cursor q;
  q.cx = ir_cell_of(x.x, p->cells[0], p->inv_cell);
  q.cy = ir_cell_of(x.y, p->cells[1], p->inv_cell);
  q.cz = ir_cell_of(x.z, p->cells[2], p->inv_cell);
  q.sx = r->d.x > 0.0f ? 1 : (r->d.x < 0.0f ? -1 : 0);
  q.sy = r->d.y > 0.0f ? 1 : (r->d.y < 0.0f ? -1 : 0);
  q.sz = r->d.z > 0.0f ? 1 : (r->d.z < 0.0f ? -1 : 0);
  q.ex = ir_cell_exit(r->o.x, r->inv_d.x, q.cx, q.sx, p->cells[0], p->cell);
  q.ey = ir_cell_exit(r->o.y, r->inv_d.y, q.cy, q.sy, p->cells[1], p->cell);
  q.ez = ir_cell_exit(r->o.z, r->inv_d.z, q.cz, q.sz, p->cells[2], p->cell);
  return q;
}

/* The t where the ray leaves the current cell. */
static inline IR_HD float ir_cursor_exit(const ir_brick_cursor *q) { return fminf(q->ex, fminf(q->ey, q->ez)); }

/* The exit of the next cell along an axis, from the exit of the last: one cell further, one
 * fused multiply-add (ir_cell_exit's boundary arithmetic costs five instructions more per step:
 * 2.4 % of the single kernel's frame at 4K on the H100); infinite past the grid's last cell that
 * way, as ir_cell_exit. The sum drifts from the boundary by a few ulps over a ray's steps, far
 * inside the segment each run is widened by. */
static inline IR_HD float ir_cell_exit_next(float exit, float inv, int c, int step, uint32_t n, float cell) {
  bool last = step > 0 ? c + 1 >= (int)n : c == 0;
  return last ? INFINITY : fmaf(fabsf(inv), cell, exit);
}

/* Into the next cell along the axis the ray leaves through first (x, then y, then z on ties). */
static inline IR_HD void ir_cursor_step(const ir_trace_params *p, const ir_ray *r, ir_brick_cursor *q) {
  if (q->ex <= q->ey && q->ex <= q->ez) {
    q->cx += q->sx;
    q->ex = ir_cell_exit_next(q->ex, r->inv_d.x, q->cx, q->sx, p->cells[0], p->cell);
  } else if (q->ey <= q->ez) {
    q->cy += q->sy;
    q->ey = ir_cell_exit_next(q->ey, r->inv_d.y, q->cy, q->sy, p->cells[1], p->cell);
  } else {
    q->cz += q->sz;
    q->ez = ir_cell_exit_next(q->ez, r->inv_d.z, q->cz, q->sz, p->cells[2], p->cell);
  }
}

/* Where the ray leaves, along one axis, the cubes of cells [c - reach, c + reach] about cell c:
 * infinite where the cube reaches the grid's last cell that way (the volume's exit ends the walk
 * instead) or the ray runs parallel to the axis. */
static inline IR_HD float ir_cube_exit(float o, float inv, int c, int step, int reach, uint32_t n, float cell) {
  if (step == 0 || (step > 0 && c + reach + 1 >= (int)n) || (step < 0 && c - reach <= 0)) return INFINITY;
  float boundary = (float)(step > 0 ? c + reach + 1 : c - reach) * cell + 0.5f;
  return (boundary - o) * inv;
}

/* The cell along an axis where a leap lands, from the cell c the leap starts in: the cell of the
 * point there (x), kept between c and the cube's last cell the ray's way, so that the cursor
 * only ever moves forward (whatever the rounding) and stays inside the cube. */
static inline IR_HD int ir_leap_cell(float x, uint32_t n, float inv_cell, int c, int step, int reach) {
  int b = ir_cell_of(x, n, inv_cell);
  int lo = step < 0 ? c - reach : c, hi = step > 0 ? c + reach : c;
  return b < lo ? lo : (b > hi ? hi : b);
}

/* The cursor is in a cell `skip` >= 2 cells from any valid one, so the cube of cells within
 * skip - 1 of it holds none (skip.cuh). Moves the cursor to the cell where the ray leaves that
 * cube and returns the t there (infinite when the ray leaves the grid inside it). The axis the
 * ray leaves through gets the cell past the cube's face exactly, skip cells on; the others the
 * cell of the point there, kept between the cell they were in and the cube's face the ray's way
 * (ir_leap_cell), so rounding can never move the cursor backwards and every leap moves it on;
 * the exits are those of the new cell (ir_cell_exit). */
static inline IR_HD float ir_cursor_leap(const ir_trace_params *p, const ir_ray *r, ir_brick_cursor *q, int skip) {
  int reach = skip - 1;
  float ex = ir_cube_exit(r->o.x, r->inv_d.x, q->cx, q->sx, reach, p->cells[0], p->cell);
  float ey = ir_cube_exit(r->o.y, r->inv_d.y, q->cy, q->sy, reach, p->cells[1], p->cell);
  float ez = ir_cube_exit(r->o.z, r->inv_d.z, q->cz, q->sz, reach, p->cells[2], p->cell);
  float t = fminf(ex, fminf(ey, ez));
  if (!(t < INFINITY)) return INFINITY;
  ir_vec3 x = ir_ray_at(r, t);
  int cx = ir_leap_cell(x.x, p->cells[0], p->inv_cell, q->cx, q->sx, reach);
  int cy = ir_leap_cell(x.y, p->cells[1], p->inv_cell, q->cy, q->sy, reach);
  int cz = ir_leap_cell(x.z, p->cells[2], p->inv_cell, q->cz, q->sz, reach);
  if (ex <= ey && ex <= ez) cx = q->cx + q->sx * skip;
  else if (ey <= ez) cy = q->cy + q->sy * skip;
  else cz = q->cz + q->sz * skip;
  q->cx = cx;
  q->cy = cy;
  q->cz = cz;
  q->ex = ir_cell_exit(r->o.x, r->inv_d.x, cx, q->sx, p->cells[0], p->cell);
  q->ey = ir_cell_exit(r->o.y, r->inv_d.y, cy, q->sy, p->cells[1], p->cell);
  q->ez = ir_cell_exit(r->o.z, r->inv_d.z, cz, q->sz, p->cells[2], p->cell);
  return t;
}

/* The least skip distance the walk leaps from (2, the least that can: a cube of 3 cells a side);
 * from nearer cells it steps cell by cell. A leap costs about five cell steps of instructions and
 * a cube of skip D saves about D - 1 of them, so on a busy volume the short leaps may cost more
 * than they save (a measuring switch: the cells met, and so the image, are the same for any
 * value, docs/PERFORMANCE.md, "Leaps over empty space, counted"). */
#ifndef IR_LEAP_MIN_SKIP
#define IR_LEAP_MIN_SKIP 2
#endif

/* From sample k on, walks the cells the ray passes and returns the next run of consecutive
 * valid cells (at most max_cells of them, 0 = no limit) as the samples [*ka, *kb] to march;
 * false when the ray leaves the volume first. */
static inline IR_HD bool ir_next_run(const ir_trace_params *p, const ir_ray *r, const ir_span *s, int32_t k,
                                     int max_cells, int32_t *ka, int32_t *kb) {
  float t = ir_span_t(s, k);
  ir_brick_cursor q = ir_cursor_at(p, r, t);
  float run_start = 0.0f, run_end = s->t1;
  int cells = 0;
  for (;;) {
    float t_out = fminf(ir_cursor_exit(&q), s->t1);
    int skip = ir_cell_skip(p, q.cx, q.cy, q.cz);
    if (skip == 0) {
      if (cells++ == 0) run_start = t;
      if (cells == max_cells) {
        run_end = t_out;
        break;
      }
    } else if (cells > 0) {
      run_end = t;
      break;
    } else if (skip >= IR_LEAP_MIN_SKIP) { /* empty space: out of the cube of empty cells in one step */
      float t_leap = ir_cursor_leap(p, r, &q, skip);
      if (t_leap >= s->t1) break;
      t = fmaxf(t, t_leap);
      continue;
    }
    if (t_out >= s->t1) break; /* run_end stays t1 */
    ir_cursor_step(p, r, &q);
    t = fmaxf(t, t_out);
  }
  if (cells == 0) return false;
  ir_span_range(s, run_start, run_end, ka, kb);
  /* Runs are widened by a segment: never march again what the ray has marched (a translucent
   * hit would be composited twice). */
  if (*ka < k) *ka = k;
  /* A run always ends past sample k (its range is widened by a segment); should rounding ever
   * say otherwise, the ray ends here rather than walking the same run forever. */
  return *kb > k;
}

/* From sample k on, walks to each run of valid bricks and marches it until the hit that ends the
 * ray (in *hit; translucent ones on the way composited into *pt) or the volume's exit: the rest
 * of a ray's work, for the single kernel, the multi pipeline's tail kernel and the CPU. `counts`
 * (may be NULL) gets one round per run. */
static inline IR_HD bool ir_walk_and_march_as(const ir_trace_params *p, const ir_ray *r, const ir_span *s, int32_t k,
                                              ir_round_counts *counts, ir_paint *pt, float *first_t, ir_hit *hit,
                                              int mode) {
  for (int round = 0;; round++) {
    if (counts && round < 64) counts->traverse[round]++;
    if (counts && round + 1 > counts->rounds) counts->rounds = round + 1;
    int32_t ka, kb;
    if (!ir_next_run(p, r, s, k, p->run_cells, &ka, &kb)) return false;
    if (counts && round < 64) counts->intersect[round]++;
    if (ir_march_run_as(p, r, s, ka, kb, &k, pt, first_t, hit, mode)) return true;
    if (k >= s->k_end) return false;
  }
}

static inline IR_HD bool ir_walk_and_march(const ir_trace_params *p, const ir_ray *r, const ir_span *s, int32_t k,
                                           ir_round_counts *counts, ir_paint *pt, float *first_t, ir_hit *hit) {
  return ir_walk_and_march_as(p, r, s, k, counts, pt, first_t, hit, ir_trace_mode(p));
}

/* ---- A ray's work in steps (the persistent pipeline) -----------------------------------------
 * ir_walk_and_march_as cut into steps of at most `budget` batches of samples: between steps a ray
 * is its span, its march state and its paint, so that it can move to another thread. While
 * m->kb < 0 the ray walks from sample m->k; otherwise it marches (ir_march_state). A step walks
 * to the next run whenever a run ends with budget left, so the batches of a step are spent on
 * marching wherever the ray goes. The walk's steps and the march's samples are those of
 * ir_walk_and_march_as: the same hit, bit for bit, whatever the budget. */
enum { IR_STEP_LIVE = 0, /* budget spent: the ray goes on in a later step */
       IR_STEP_HIT,      /* the hit that ends the ray (in *hit) */
       IR_STEP_DONE };   /* the ray left the volume (its translucent hits composited in *pt) */

/* The state of a ray that has not started: walking from the span's first sample. */
static inline IR_HD ir_march_state ir_step_start(void) {
  ir_march_state m;
  m.k = 0;
  m.kb = -1;
  m.sa = 0.0f;
  return m;
}

static inline IR_HD int ir_step_as(const ir_trace_params *p, const ir_ray *r, const ir_span *s, ir_march_state *m,
                                   int budget, ir_paint *pt, float *first_t, ir_hit *hit, int mode) {
  for (;;) {
    if (m->kb < 0) {
      int32_t ka, kb;
      if (!ir_next_run(p, r, s, m->k, p->run_cells, &ka, &kb)) return IR_STEP_DONE;
      if (kb > ka) {
        *m = ir_march_begin(p, r, s, ka, kb);
      } else { /* an empty run: nothing to march (ir_march_run_as) */
        if (kb >= s->k_end) return IR_STEP_DONE;
        m->k = kb;
        continue;
      }
    }
    if (ir_march_part_as(p, r, s, m, &budget, pt, first_t, hit, mode | IR_TRACE_BOUNDED)) return IR_STEP_HIT;
    if (m->k <= m->kb) return IR_STEP_LIVE; /* paused inside the run */
    m->k -= 1; /* the walk resumes at the last sample marched */
    if (m->k >= s->k_end) return IR_STEP_DONE;
    m->kb = -1;
    if (budget <= 0) return IR_STEP_LIVE;
  }
}

/* Brick walk and march for one pixel: the single kernel and the CPU reference of the default
 * pipelines; the first hit's t goes to *depth (INFINITY on a miss). `counts` (may be NULL) gets
 * one round per run of bricks. */
static inline IR_HD uint32_t ir_trace_pixel_runs_as(const ir_trace_params *p, uint32_t pixel,
                                                    ir_round_counts *counts, float *depth, int mode) {
  ir_ray r = ir_camera_ray(&p->cam, pixel);
  ir_span s;
  *depth = INFINITY;
  if (!ir_ray_span(p, &r, &s)) return IR_BACKGROUND_RGBA;
  if (counts) counts->generated++;
  if (p->root == IR_BVH_NONE) return IR_BACKGROUND_RGBA;
  ir_paint pt = {0.0f, 0.0f, 0.0f, 0.0f};
  ir_hit h;
  if (!ir_walk_and_march_as(p, &r, &s, 0, counts, &pt, depth, &h, mode)) return ir_paint_pixel(&pt);
  if (counts) counts->hit++;
  return ir_end_at_hit(p, &r, h, &pt, depth, mode);
}

static inline IR_HD uint32_t ir_trace_pixel_runs(const ir_trace_params *p, uint32_t pixel, ir_round_counts *counts,
                                                 float *depth) {
  return ir_trace_pixel_runs_as(p, pixel, counts, depth, ir_trace_mode(p));
}

/* The persistent pipeline's per-ray work in one loop, steps of `budget` batches until the ray
 * hits or leaves the volume: what its kernel does for each ray, between other rays' steps (the
 * CPU reference of that pipeline). Draws what ir_trace_pixel_runs draws, bit for bit. `counts`
 * (may be NULL) gets one round per step. */
static inline IR_HD uint32_t ir_trace_pixel_steps_as(const ir_trace_params *p, uint32_t pixel, int budget,
                                                     ir_round_counts *counts, float *depth, int mode) {
  ir_ray r = ir_camera_ray(&p->cam, pixel);
  ir_span s;
  *depth = INFINITY;
  if (!ir_ray_span(p, &r, &s)) return IR_BACKGROUND_RGBA;
  if (counts) counts->generated++;
  if (p->root == IR_BVH_NONE) return IR_BACKGROUND_RGBA;
  ir_paint pt = {0.0f, 0.0f, 0.0f, 0.0f};
  ir_hit h;
  ir_march_state m = ir_step_start();
  for (int round = 0;; round++) {
    if (counts && round < 64) counts->traverse[round]++;
    if (counts && round + 1 > counts->rounds) counts->rounds = round + 1;
    int st = ir_step_as(p, &r, &s, &m, budget, &pt, depth, &h, mode);
    if (st == IR_STEP_DONE) return ir_paint_pixel(&pt);
    if (st == IR_STEP_HIT) break;
  }
  if (counts) counts->hit++;
  return ir_end_at_hit(p, &r, h, &pt, depth, mode);
}

/* Occlusion and shadow rays: they walk and march with the functions above. */
#include "render/secondary.cuh"

#endif
