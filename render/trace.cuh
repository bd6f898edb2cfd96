/* The per-ray work of the pipeline (InK §3.1.3-3.1.6), shared by every renderer:
 *
 *   ir_ray_start   ray generation: the pixel's ray against the volume bounds, stack = {root}
 *   ir_traverse    stack-based BVH traversal, nearer child first, until a leaf is on top
 *   ir_intersect   step through the leaf on top of the stack; on a miss peek the stack and go
 *                  on while the next item is a leaf
 *   ir_hit_color   gradient normal and Blinn-Phong shading of a hit
 *   ir_trace_pixel all of the above in one loop (the single-kernel GPU path and the CPU)
 *
 * The multi-kernel pipeline calls the first four from separate kernels, keeping the stack in
 * global memory between them; the single kernel and the CPU call ir_trace_pixel with a local
 * stack. Since the per-ray code is the same, so are the images, bit for bit.
 * A stack is `items[i * stride]`, i = 0 at the bottom.
 */
#ifndef INKRAY_RENDER_TRACE_CUH
#define INKRAY_RENDER_TRACE_CUH

#include "render/bvh.cuh"
#include "render/ray_math.cuh"
#include "render/volume_sample.cuh"

/* What every ray of a frame shares. */
typedef struct ir_trace_params {
  ir_cam_basis cam;
  ir_volume_view vol;
  const ir_bvh_node *nodes;
  float box_lo[3], box_hi[3]; /* the volume bounds, voxel coordinates */
  float iso;                  /* data units */
  uint32_t root;              /* root node index, IR_BVH_NONE when no brick is valid */
} ir_trace_params;

/* Half-voxel steps: the step in t that moves half a voxel in voxel space. */
#define IR_STEP_VOXELS 0.5f

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

/* Ray generation: false if the ray misses the volume. Otherwise the stack holds the root (or
 * nothing, when no brick is valid for this isovalue). */
static inline IR_HD bool ir_ray_start(const ir_trace_params *p, uint32_t pixel, uint32_t *stack,
                                      size_t stride, int *sp) {
  ir_ray r = ir_camera_ray(&p->cam, pixel);
  float tn, tf;
  if (!ir_ray_box(&r, p->box_lo, p->box_hi, &tn, &tf)) return false;
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

static inline IR_HD ir_vec3 ir_ray_at(const ir_ray *r, float t) { return ir_add(r->o, ir_scale(r->d, t)); }

/* Samples fetched before any of them is tested. A march is a chain of dependent texture reads
 * when each sample is tested before the next is fetched; fetching a batch first keeps
 * IR_MARCH_BATCH reads in flight per ray. The samples and the order of the tests are those of
 * a one-at-a-time march, so the result is the same; a batch that overshoots the crossing or
 * the end of the leaf reads at most IR_MARCH_BATCH - 1 samples that are never used. */
#ifndef IR_MARCH_BATCH
#define IR_MARCH_BATCH 4
#endif
#ifdef __CUDA_ARCH__ /* the device pass only: the host compiler warns about the pragma */
#define IR_UNROLL _Pragma("unroll")
#else
#define IR_UNROLL
#endif

/* Steps through [t0, t1] in equal steps of at most `dt` and returns the first crossing,
 * refined by linear interpolation and one more regula falsi step. */
static inline IR_HD bool ir_march(const ir_trace_params *p, const ir_ray *r, float t0, float t1, float dt,
                                  float *t_hit) {
  int n = (int)ceilf((t1 - t0) / dt);
  if (n < 1) n = 1;
  float h = (t1 - t0) / (float)n;
  float ta = t0, sa = ir_sample(&p->vol, ir_ray_at(r, t0));
  for (int i = 1; i <= n; i += IR_MARCH_BATCH) {
    float tbs[IR_MARCH_BATCH], sbs[IR_MARCH_BATCH];
    IR_UNROLL
    for (int j = 0; j < IR_MARCH_BATCH; j++) {
      tbs[j] = i + j >= n ? t1 : t0 + (float)(i + j) * h;
      sbs[j] = ir_sample(&p->vol, ir_ray_at(r, tbs[j]));
    }
    IR_UNROLL
    for (int j = 0; j < IR_MARCH_BATCH; j++) {
      if (i + j > n) break;
      float tb = tbs[j], sb = sbs[j];
      if (ir_is_crossing(sa, sb, p->iso)) {
        float tc = ta + (tb - ta) * ((p->iso - sa) / (sb - sa));
        float sc = ir_sample(&p->vol, ir_ray_at(r, tc));
        if (sc == sc) {
          if ((sc >= p->iso) == (sa >= p->iso)) {
            ta = tc;
            sa = sc;
          } else {
            tb = tc;
            sb = sc;
          }
          tc = ta + (tb - ta) * ((p->iso - sa) / (sb - sa));
        }
        *t_hit = tc;
        return true;
      }
      ta = tb;
      sa = sb;
    }
  }
  return false;
}

static inline IR_HD float ir_ray_step(const ir_ray *r) { return IR_STEP_VOXELS / sqrtf(ir_dot(r->d, r->d)); }

enum { IR_INTERSECT_HIT = 0, IR_INTERSECT_TRAVERSE = 1, IR_INTERSECT_DONE = 2 };

/* Pops the leaf on top of the stack and looks for a crossing in it; on a miss, while the next
 * item on the stack is a leaf too, pops and tests that one (the stack peek of InK §3.1.5).
 * Returns HIT (t in *t_hit), TRAVERSE (an inner node is on top) or DONE (stack empty). */
static inline IR_HD int ir_intersect(const ir_trace_params *p, const ir_ray *r, uint32_t *stack,
                                     size_t stride, int *sp, float *t_hit) {
  float dt = ir_ray_step(r);
  for (;;) {
    ir_bvh_node leaf = ir_load_node(p->nodes, stack[--*sp * stride]);
    float tn, tf;
    if (ir_ray_box(r, leaf.lo, leaf.hi, &tn, &tf) && ir_march(p, r, tn, tf, dt, t_hit))
      return IR_INTERSECT_HIT;
    if (*sp == 0) return IR_INTERSECT_DONE;
    ir_bvh_node top = ir_load_node(p->nodes, stack[(*sp - 1) * stride]);
    if (!ir_bvh_is_leaf(&top)) return IR_INTERSECT_TRAVERSE;
  }
}

/* World-space normal at the hit (gradient of the field), as the intersection stage stores it. */
static inline IR_HD ir_vec3 ir_hit_normal(const ir_trace_params *p, const ir_ray *r, float t) {
  return ir_gradient_normal(&p->vol, ir_ray_at(r, t), p->cam.inv_spacing);
}

/* Rays entering traversal / intersection per round, counted by the CPU renderer. */
typedef struct ir_round_counts {
  uint32_t traverse[64];
  uint32_t intersect[64];
  int rounds;      /* largest number of rounds of any ray */
  uint32_t generated, hit;
} ir_round_counts;

/* The whole pipeline for one pixel with a local stack of IR_BVH_MAX_LEVELS entries; returns
 * the pixel's RGBA8. `counts` may be NULL. */
static inline IR_HD uint32_t ir_trace_pixel(const ir_trace_params *p, uint32_t pixel, uint32_t *stack,
                                            ir_round_counts *counts) {
  int sp = 0;
  if (!ir_ray_start(p, pixel, stack, 1, &sp)) return IR_BACKGROUND_RGBA;
  if (counts) counts->generated++;
  ir_ray r = ir_camera_ray(&p->cam, pixel);
  for (int round = 0;; round++) {
    if (counts && round < 64) counts->traverse[round]++;
    if (counts && round + 1 > counts->rounds) counts->rounds = round + 1;
    if (ir_traverse(p, &r, stack, 1, &sp) == IR_TRAVERSE_DONE) return IR_BACKGROUND_RGBA;
    if (counts && round < 64) counts->intersect[round]++;
    float t = 0.0f;
    int s = ir_intersect(p, &r, stack, 1, &sp, &t);
    if (s == IR_INTERSECT_HIT) {
      if (counts) counts->hit++;
      return ir_shade(ir_hit_normal(p, &r, t), r.dir_world);
    }
    if (s == IR_INTERSECT_DONE) return IR_BACKGROUND_RGBA;
  }
}

#endif
