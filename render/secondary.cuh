/* Secondary rays from a shaded hit, shared by the CPU and the GPU (included by trace.cuh):
 *
 *   ir_transmittance  a ray from a point: the light that gets through the drawn surfaces it
 *                     crosses before t_max (opaque: 0; a translucent one lets 1 - opacity by);
 *                     ir_secondary_span + ir_secondary_step: the same in steps of a budget of
 *                     batches (the persistent kernel's pool of secondary rays)
 *   ir_ao_direction   sample i of a hit's cosine-weighted hemisphere: a scrambled Sobol' (0,2)
 *                     sequence, the same on both sides
 *   ir_light_color    the lit colour of a hit with ambient occlusion, a shadow ray and the
 *                     frame's light (headlight or directional), all traced by the caller;
 *                     ir_light_prepare + ir_light_ray + ir_light_combine: the same in parts, so
 *                     that other threads can trace the rays
 *   ir_accumulate_pixel  one pixel of the running mean of accumulated frames
 *
 * An occlusion or shadow ray starts half a voxel off the hit along the normal, on the viewer's
 * side, and has its own sample grid: steps from its entry into the drawn part of the volume (the
 * clip box cut by the clip plane, ir_ray_clip) to RADIUS voxels (occlusion, one-voxel steps) or
 * the exit (shadow, the primary rays' step: half a voxel by default). A long one walks the primary rays' cells with ir_next_run
 * and marches each run in batches of samples tested in order; a short one (IR_SHORT_RAY_SAMPLES:
 * the occlusion rays) is marched whole, without the walk; a crossing counts where its
 * interpolated t lies in the drawn part, as for primary rays, and the ray stops at the first
 * opaque one.
 *
 * Sampling: hit h of pixel x in frame f takes the samples [f N, f N + N) of one sequence, the
 * first two dimensions of Sobol' (a (0,2)-sequence: any 2^m consecutive points from a multiple
 * of 2^m are stratified), scrambled by XOR with a hash of the pixel's ray direction (the bits of
 * its unit world direction: one per pixel and camera, equal on the CPU and the GPU) and the hit's
 * surface. A still view's frames together take the first F N points of that sequence: the mean
 * of F frames is a picture with F N well-spread samples per hit. Only integer operations, + - *
 * / and square roots (no sin/cos: a polynomial of the quarter turn stands in), so the directions
 * are bit for bit the same on both sides.
 */
#ifndef INKRAY_RENDER_SECONDARY_CUH
#define INKRAY_RENDER_SECONDARY_CUH

/* How far off the hit a secondary ray starts, voxels along the normal: a sample grid of half
 * voxels starting nearer could see the hit's own surface again in the first segment. */
#define IR_SECONDARY_OFFSET 0.5f

/* The sample step of an occlusion ray (the finite ones), voxels; a shadow ray (to the exit) steps
 * like a primary ray (the frame's sample step, half a voxel by default). An occlusion ray only asks whether anything lies within its
 * radius, and a hit's occlusion is the mean of N such answers: what one-voxel steps can miss is
 * a sliver thinner than a voxel along the ray, which changes that mean far less than its sampling
 * noise, while they read half the samples (11-24 % of a frame with AO 8 + shadows on an H100,
 * docs/PERFORMANCE.md). A shadow edge is seen whole, so shadow rays keep the fine grid. */
#ifndef IR_OCCLUSION_STEP_VOXELS
#define IR_OCCLUSION_STEP_VOXELS 1.0f
#endif

static inline IR_HD uint32_t ir_float_bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  union {
    float f;
    uint32_t u;
  } b;
  b.f = f;
  return b.u;
#endif
}

/* A 32-bit integer hash with good avalanche (Wellons' lowbias32). */
static inline IR_HD uint32_t ir_hash32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

static inline IR_HD uint32_t ir_bit_reverse(uint32_t x) {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
  x = ((x >> 8) & 0x00ff00ffu) | ((x & 0x00ff00ffu) << 8);
  return (x >> 16) | (x << 16);
}

/* Sobol's second dimension: direction numbers v_0 = 2^31, v_k = v_{k-1} ^ (v_{k-1} >> 1). */
static inline IR_HD uint32_t ir_sobol_dim1(uint32_t i) {
  uint32_t v = 0x80000000u, r = 0;
  for (; i; i >>= 1, v ^= v >> 1)
    if (i & 1u) r ^= v;
  return r;
}

/* [0, 1) from the top 24 bits. */
static inline IR_HD float ir_unit_float(uint32_t x) { return (float)(x >> 8) * (1.0f / 16777216.0f); }

/* cos and sin of 2 pi u, u in [0, 1): Taylor polynomials on a quarter turn (error below 1e-7),
 * then the quadrant. */
static inline IR_HD void ir_turn_cos_sin(float u, float *c, float *s) {
  float x = u * 4.0f;
  int q = (int)x;
  float a = (x - (float)q) * 1.57079632679f, a2 = a * a;
  float sn = a * (1.0f - a2 * (1.0f / 6.0f) * (1.0f - a2 * (1.0f / 20.0f) * (1.0f - a2 * (1.0f / 42.0f) *
                                                                             (1.0f - a2 * (1.0f / 72.0f) * (1.0f - a2 * (1.0f / 110.0f))))));
  float cs = 1.0f - a2 * 0.5f * (1.0f - a2 * (1.0f / 12.0f) * (1.0f - a2 * (1.0f / 30.0f) *
                                                            (1.0f - a2 * (1.0f / 56.0f) * (1.0f - a2 * (1.0f / 90.0f)))));
  switch (q & 3) {
  case 0: *c = cs, *s = sn; break;
  case 1: *c = -sn, *s = cs; break;
  case 2: *c = -cs, *s = -sn; break;
  default: *c = sn, *s = -cs; break;
  }
}

/* The scramble of a hit's sequence: two 32-bit words from its pixel's ray and its surface. */
static inline IR_HD void ir_ao_scramble(const ir_ray *r, int surf, uint32_t *s0, uint32_t *s1) {
  uint32_t h = ir_hash32(ir_float_bits(r->dir_world.x) ^ 0x9e3779b9u);
  h = ir_hash32(h ^ ir_float_bits(r->dir_world.y));
  h = ir_hash32(h ^ ir_float_bits(r->dir_world.z));
  *s0 = ir_hash32(h ^ (uint32_t)surf);
  *s1 = ir_hash32(*s0 ^ 0x85ebca6bu);
}

/* Sample j of the cosine-weighted hemisphere about the unit normal n (world). */
static inline IR_HD ir_vec3 ir_ao_direction(ir_vec3 n, uint32_t j, uint32_t s0, uint32_t s1) {
  float u1 = ir_unit_float(ir_bit_reverse(j) ^ s0), u2 = ir_unit_float(ir_sobol_dim1(j) ^ s1);
  float c, s;
  ir_turn_cos_sin(u2, &c, &s);
  float rad = sqrtf(u1), z = sqrtf(fmaxf(1.0f - u1, 0.0f));
  /* An orthonormal basis about n without branches on near-parallel axes (Duff et al., JCGT 2017). */
  float sign = n.z >= 0.0f ? 1.0f : -1.0f;
  float a = -1.0f / (sign + n.z), b = n.x * n.y * a;
  ir_vec3 t1 = ir_v3(1.0f + sign * n.x * n.x * a, sign * b, -sign * n.x);
  ir_vec3 t2 = ir_v3(b, sign + n.y * n.y * a, -n.y);
  return ir_add(ir_add(ir_scale(t1, rad * c), ir_scale(t2, rad * s)), ir_scale(n, z));
}

/* A secondary ray from o (voxel coordinates) along the unit world direction w. */
static inline IR_HD ir_ray ir_secondary_ray(const ir_trace_params *p, ir_vec3 o, ir_vec3 w) {
  ir_ray r;
  r.o = o;
  r.dir_world = w;
  r.d = ir_mul(w, p->cam.inv_spacing);
  r.inv_d = ir_v3(1.0f / r.d.x, 1.0f / r.d.y, 1.0f / r.d.z);
  return r;
}

/* A secondary ray's sample grid: steps of IR_OCCLUSION_STEP_VOXELS (occlusion rays, t_max
 * finite) or the frame's sample step (shadow rays) from its entry into the drawn part of the volume to
 * t_max or the exit; false when it has nothing to march (all its light passes). */
static inline IR_HD bool ir_secondary_span(const ir_trace_params *p, const ir_ray *r, float t_max, ir_span *s) {
  float tn, tf;
  if (!ir_ray_clip(p, r, &tn, &tf)) return false;
  s->dt = (t_max < INFINITY ? IR_OCCLUSION_STEP_VOXELS : p->step) / sqrtf(ir_dot(r->d, r->d));
  s->t0 = s->c0 = tn;
  s->t1 = s->c1 = fminf(tf, t_max);
  if (!(s->t1 > s->t0)) return false;
  s->k_end = ir_span_end(s->t0, s->t1, s->dt);
  return true;
}

/* A secondary ray's march between steps: the next sample, the run's last one (-1: walking from
 * k), the value of sample k - 1, the light that has passed so far. */
typedef struct ir_secondary_state {
  int32_t k, kb;
  float sa, light;
} ir_secondary_state;

static inline IR_HD ir_secondary_state ir_secondary_start(void) {
  ir_secondary_state m;
  m.k = 0;
  m.kb = -1;
  m.sa = 0.0f;
  m.light = 1.0f;
  return m;
}

/* A secondary ray of at most this many samples is marched whole, without the walk: an occlusion
 * ray of the default 16 voxels has 16, starts half a voxel off a surface and so crosses mostly
 * valid cells, where setting up the walk and its runs costs more than the samples it skips. The
 * segments marched are a cover of the valid cells' like any other: the same light (trace.cuh,
 * "One sample grid per ray"). */
#ifndef IR_SHORT_RAY_SAMPLES
#define IR_SHORT_RAY_SAMPLES 40
#endif
/* Samples a secondary ray fetches before testing them (a kernel's file may set its own: the multi
 * pipeline's compacted steps take 8). */
#ifndef IR_SECONDARY_BATCH
#define IR_SECONDARY_BATCH IR_LIT_MARCH_BATCH
#endif

/* Walks and marches a secondary ray on from m: runs of valid cells (ir_next_run), each marched
 * in batches of IR_SECONDARY_BATCH samples fetched first and then tested in order (as
 * ir_march_part_as). Every crossing in the drawn part multiplies m->light by 1 - opacity; it
 * stops at 0 once below what makes a primary ray opaque. With `bounded`, at most `budget`
 * batches: returns false when the ray goes on in a later step (m says where), true when it is
 * done. The samples and the tests do not depend on where it pauses, so a stepped ray ends with
 * the light of one march, bit for bit. */
static inline IR_HD bool ir_secondary_step(const ir_trace_params *p, const ir_ray *r, const ir_span *s,
                                           ir_secondary_state *m, bool bounded, int budget) {
  for (;;) {
    if (m->kb < 0) {
      int32_t ka = m->k, kb = s->k_end;
      if (s->k_end > IR_SHORT_RAY_SAMPLES && !ir_next_run(p, r, s, m->k, p->run_cells, &ka, &kb)) return true;
      m->k = ka + 1;
      m->kb = kb;
      m->sa = ir_sample(&p->vol, ir_ray_at(r, ir_span_t(s, ka)));
    }
    const int32_t kb = m->kb;
    int32_t k = m->k;
    float ta = ir_span_t(s, k - 1), sa = m->sa, lo, hi;
    ir_iso_band(&p->iso, sa, &lo, &hi);
    while (k <= kb) {
      if (bounded && budget-- <= 0) {
        m->k = k;
        m->sa = sa;
        return false;
      }
      float tbs[IR_SECONDARY_BATCH], sbs[IR_SECONDARY_BATCH];
      const float kf = (float)k;
      bool inside = true;
      IR_UNROLL
      for (int b = 0; b < IR_SECONDARY_BATCH; b++) {
        tbs[b] = ir_span_t_of(s, kf + (float)b);
        sbs[b] = ir_sample(&p->vol, ir_ray_at(r, tbs[b]));
      }
      IR_UNROLL
      for (int b = 0; b < IR_SECONDARY_BATCH; b++) inside &= sbs[b] >= lo && sbs[b] < hi;
      k += IR_SECONDARY_BATCH; /* whole batches, as ir_march_part_as */
      if (inside) { /* no sample left the band: no crossing (the common case) */
        ta = tbs[IR_SECONDARY_BATCH - 1];
        sa = sbs[IR_SECONDARY_BATCH - 1];
        continue;
      }
      IR_UNROLL
      for (int b = 0; b < IR_SECONDARY_BATCH; b++) {
        float tb = tbs[b], sb = sbs[b];
        if (sa == sa && sb == sb && sa != sb) {
          for (int i = 0; i < p->iso.n; i++) {
            float iso = p->iso.v[i];
            if ((sa >= iso) == (sb >= iso)) continue;
            float tc = ta + (tb - ta) * ((iso - sa) / (sb - sa));
            if (!(s->c0 <= tc && tc <= s->c1)) continue;
            m->light *= 1.0f - p->surf_alpha[i];
            if (m->light < 1.0f - IR_OPAQUE_ALPHA) {
              m->light = 0.0f;
              return true;
            }
          }
        }
        ta = tb;
        sa = sb;
      }
      ir_iso_band(&p->iso, sa, &lo, &hi);
    }
    /* The walk resumes at the last sample marched (whole batches run up to IR_SECONDARY_BATCH - 1
     * past kb: ir_march_part_as says why that finds the same). */
    if (k - 1 >= s->k_end) return true;
    m->k = k - 1;
    m->kb = -1;
    if (bounded && budget <= 0) return false;
  }
}

/* The fraction of light that passes the drawn surfaces along r up to t_max: 1 with nothing in
 * the way, 0 at the first opaque surface (or once the product of the translucent ones' 1 -
 * opacity is below what makes a primary ray opaque). */
static inline IR_HD float ir_transmittance(const ir_trace_params *p, const ir_ray *r, float t_max) {
  ir_span s;
  if (!ir_secondary_span(p, r, t_max, &s)) return 1.0f;
  ir_secondary_state m = ir_secondary_start();
  ir_secondary_step(p, r, &s, &m, false, 0);
  return m.light;
}

/* A shaded hit's lighting before its secondary rays: where they start, the normal on the viewer's
 * side, the light, the diffuse and specular factors, the scramble of its sample sequence. */
typedef struct ir_light_setup {
  ir_vec3 x, n, l;
  float ndl, spec;
  uint32_t s0, s1;
  int normal_ok;
} ir_light_setup;

static inline IR_HD ir_light_setup ir_light_prepare(const ir_trace_params *p, const ir_ray *r, float t, int surf,
                                                    ir_vec3 diff) {
  ir_light_setup L;
  ir_vec3 n = ir_hit_normal_of(p, diff), v = ir_scale(r->dir_world, -1.0f);
  float nv = ir_dot(n, v);
  bool normal_ok = nv == nv && ir_dot(n, n) > 0.5f;
  /* Two-sided: the side the ray came from, where the secondary rays start half a voxel off the
   * surface. It is told by the field half a voxel back along the ray (whatever the sample step: a
   * finer one could land within the refined hit's error) rather than by the sign of n.v, which a
   * grazing hit's differences can get wrong (its rays would start inside a ball). */
  float back = ir_sample(&p->vol, ir_ray_at(r, t - IR_SAMPLE_STEP_DEFAULT / sqrtf(ir_dot(r->d, r->d))));
  float side = back == back ? (back >= p->iso.v[surf] ? 1.0f : -1.0f) : (nv < 0.0f ? -1.0f : 1.0f);
  n = ir_scale(n, side);
  ir_vec3 x = ir_ray_at(r, t);
  if (normal_ok) x = ir_add(x, ir_scale(ir_normalize(diff), side * IR_SECONDARY_OFFSET));
  ir_vec3 l = p->light_on ? p->light_dir : v;

  float ndl, spec_base;
  if (!p->light_on) { /* the headlight: ir_shade_color's terms */
    ndl = ir_dot(n, l);
    if (!(ndl == ndl)) ndl = 1.0f;
    ndl = fabsf(ndl);
    if (ndl > 1.0f) ndl = 1.0f;
    spec_base = ndl;
  } else {
    ndl = normal_ok ? ir_clamp01(ir_dot(n, l)) : 1.0f;
    ir_vec3 h = ir_normalize(ir_add(l, v));
    spec_base = ndl > 0.0f ? (normal_ok ? ir_clamp01(ir_dot(n, h)) : 1.0f) : 0.0f;
  }
  float sp = spec_base * spec_base; /* ^32 by squaring, as ir_shade_color */
  sp = sp * sp;
  sp = sp * sp;
  sp = sp * sp;
  sp = sp * sp;
  L.x = x;
  L.n = n;
  L.l = l;
  L.ndl = ndl;
  L.spec = sp;
  L.normal_ok = normal_ok;
  L.s0 = L.s1 = 0;
  if (p->ao_n > 0 && normal_ok) ir_ao_scramble(r, surf, &L.s0, &L.s1);
  return L;
}

/* Secondary ray i of a hit: occlusion rays 0 .. ao_n - 1, then the shadow ray; false when the
 * hit has no such ray (no occlusion rays without a normal; no shadow ray without shadows or
 * with the light behind the surface), whose result then counts as 1. *t_max: its length. */
static inline IR_HD bool ir_light_ray(const ir_trace_params *p, const ir_light_setup *L, int i, ir_ray *ray,
                                      float *t_max) {
  if (i < p->ao_n) {
    if (!L->normal_ok) return false;
    *ray = ir_secondary_ray(p, L->x, ir_ao_direction(L->n, p->ao_first + (uint32_t)i, L->s0, L->s1));
    *t_max = p->ao_radius / sqrtf(ir_dot(ray->d, ray->d));
    return true;
  }
  if (!p->shadows || !(L->ndl > 0.0f)) return false;
  *ray = ir_secondary_ray(p, L->x, L->l);
  *t_max = INFINITY;
  return true;
}

/* Secondary rays per hit, occlusion and shadow (ir_light_ray's i ranges over them). */
static inline IR_HD int ir_light_ray_count(const ir_trace_params *p) { return p->ao_n + (p->shadows ? 1 : 0); }

/* The lit colour from the setup, the open fraction of the occlusion rays and the shadow ray's
 * transmittance: the one formula of every pipeline (a person switching pipelines sees the same
 * picture, and the CPU reference checks them all). */
static inline IR_HD ir_vec3 ir_light_shade(const ir_light_setup *L, ir_vec3 base, float ao, float shadow) {
  float diffuse = (IR_AMBIENT + (1.0f - IR_AMBIENT) * (L->ndl * shadow)) * ao;
  float spec = IR_SPECULAR * L->spec * shadow;
  return ir_v3(ir_clamp01(base.x * diffuse + spec), ir_clamp01(base.y * diffuse + spec),
               ir_clamp01(base.z * diffuse + spec));
}

/* The lit colour from the setup and the transmittances of the hit's secondary rays (light[i] for
 * ray i, 1 where it has none), added in order: whoever traced them, the same colour. */
static inline IR_HD ir_vec3 ir_light_combine(const ir_trace_params *p, const ir_light_setup *L, ir_vec3 base,
                                             const float *light) {
  float ao = 1.0f;
  if (p->ao_n > 0 && L->normal_ok) {
    float open = 0.0f;
    for (int i = 0; i < p->ao_n; i++) open += light[i];
    ao = open / (float)p->ao_n;
  }
  float shadow = p->shadows && L->ndl > 0.0f ? light[p->ao_n] : 1.0f;
  return ir_light_shade(L, base, ao, shadow);
}

/* The lit colour of a hit (at t along r, field differences diff, colour base) with the frame's
 * occlusion rays, shadow ray and light, traced here one after the other. With nothing occluded
 * and the headlight it is ir_shade_color's, bit for bit: an isolated convex surface looks as it
 * does without them. */
static inline IR_HD ir_vec3 ir_light_color(const ir_trace_params *p, const ir_ray *r, float t, int surf, ir_vec3 diff,
                                           ir_vec3 base) {
  ir_light_setup L = ir_light_prepare(p, r, t, surf, diff);
  float ao = 1.0f;
  if (p->ao_n > 0 && L.normal_ok) {
    float open = 0.0f;
    for (int i = 0; i < p->ao_n; i++) {
      ir_ray a;
      float t_max;
      ir_light_ray(p, &L, i, &a, &t_max);
      open += ir_transmittance(p, &a, t_max);
    }
    ao = open / (float)p->ao_n;
  }
  float shadow = 1.0f;
  ir_ray sr;
  float t_max;
  if (ir_light_ray(p, &L, p->ao_n, &sr, &t_max)) shadow = ir_transmittance(p, &sr, t_max);
  return ir_light_shade(&L, base, ao, shadow);
}

/* ---- Progressive accumulation (ir_frame_desc.accumulate) ----------------------------------------
 * One pixel of the running mean: its RGBA8 value `px` added to the channel sums q (`first`:
 * replacing them) when `add`, and the mean of `count` frames returned, rounded to nearest. */
static inline IR_HD uint32_t ir_accumulate_pixel(uint32_t px, float q[4], bool add, bool first, float count) {
  uint32_t out = 0;
  for (int c = 0; c < 4; c++) {
    float v = (float)(px >> (8 * c) & 0xffu);
    if (add) q[c] = first ? v : q[c] + v;
    float m = q[c] / count + 0.5f;
    out |= (uint32_t)(m > 255.0f ? 255.0f : m) << (8 * c);
  }
  return out;
}

#endif
