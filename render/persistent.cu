/* The persistent pipeline: the InK stages as phases of one kernel launch per frame.
 *
 * Each block keeps a pool of up to IR_PERSIST_BLOCK rays in shared memory. A ray in the pool is
 * its state, not an index: its pixel, direction, span (trace.cuh: ir_span) and march state
 * (ir_march_state), and for translucent frames its paint and world direction. The block loops:
 *
 *   1. steps      every ray of the pool walks and marches by up to `step_batches` batches of
 *                 samples (trace.cuh: ir_step_as) at a time, held in its thread's registers; a
 *                 ray that leaves the volume writes its pixel; each warp goes on stepping with
 *                 no barrier until a tile's worth of the block's rays have finished (a counter
 *                 in shared memory) or its own rays are done, and then waits for the others;
 *   2. compaction the rays that go on are compacted in the pool, the rays that hit into the hit
 *                 list, both in shared memory by the frame's method (compaction_block.cuh);
 *   3. refill     one atomic claims as many 8x8 pixel tiles from the frame's queue as the pool
 *                 has room for;
 *   4. shading    the hits are refined, shaded and written, a whole warp of hits at a time;
 *   5. generation the claimed tiles' rays are generated, and the ones that meet the volume are
 *                 compacted into the pool behind the others (the third compaction);
 *
 * until the queue is empty and the pool has run dry. So the rays that a warp marches are always
 * rays with work left (finished ones leave the pool after every step, and new ones take their
 * places), the hits are shaded by full warps, and no ray state goes through global memory: the
 * InK paper's section 6 asks whether moving ray data instead of indices pays once traversal needs
 * no stack, and the brick walk needs none. The image is the single kernel's, bit for bit: every
 * ray does the same work in the same order, only cut into steps (trace.cuh: ir_step_as).
 *
 * Cells are tested by their skip distances as the walk meets them, as in the single kernel, so
 * the frame is one launch with no BVH update. The tile queue and the frame's counters are
 * double-buffered by frame parity: a launch zeroes the other frame's, so no memset precedes it.
 */
/* The shading phase's secondary rays fetch four samples a batch, as the single kernel's: with
 * occlusion rays of 16 one-voxel steps, four batches of four measured 3-4 % faster than two of
 * eight (docs/PERFORMANCE.md); the multi pipeline's compacted steps keep eight. The batch changes
 * no result (secondary.cuh). */
#define IR_SECONDARY_BATCH 4
#include "compaction/compaction_block.cuh"
#include "render/gpu_internal.cuh"

/* 256 threads: a pool of 256 rays holds four 8x8 tiles, and after a compaction the live rays
 * fill whole warps; four blocks per SM fit at 64 registers a thread. */
#define IR_PERSIST_BLOCK 256
#define IR_TILE_RAYS (IR_TILE * IR_TILE)
static_assert(IR_PERSIST_BLOCK % IR_TILE_RAYS == 0, "the pool takes whole tiles");

/* A ray in the pool: words of its record. Translucent frames add the paint so far, the first
 * hit's t and the world direction (shading inside the march needs it). */
enum {
  RAY_PIXEL, RAY_K, RAY_KB, RAY_SA, RAY_DX, RAY_DY, RAY_DZ, RAY_T0, RAY_T1, RAY_DT, RAY_KEND, RAY_C0, RAY_C1,
  RAY_WORDS_OPAQUE,
  RAY_PR = RAY_WORDS_OPAQUE, RAY_PG, RAY_PB, RAY_PA, RAY_FIRST, RAY_WX, RAY_WY, RAY_WZ, RAY_WORDS_COMPOSITE
};
/* A hit waiting for shading: the hit (trace.cuh: ir_hit) and, translucent, the paint before it. */
enum {
  HIT_PIXEL, HIT_T, HIT_SURF, HIT_TA, HIT_SA, HIT_TB, HIT_SB, HIT_WORDS_OPAQUE,
  HIT_PR = HIT_WORDS_OPAQUE, HIT_PG, HIT_PB, HIT_PA, HIT_FIRST, HIT_WORDS_COMPOSITE
};

template <int Mode>
struct persist_words {
  static constexpr int ray = (Mode & IR_TRACE_COMPOSITE) ? RAY_WORDS_COMPOSITE : RAY_WORDS_OPAQUE;
  static constexpr int hit = (Mode & IR_TRACE_COMPOSITE) ? HIT_WORDS_COMPOSITE : HIT_WORDS_OPAQUE;
};

/* Lit frames, spread or pool (ir_persist_args.secondary): a hit's lighting setup as the block's
 * threads read it to trace its secondary rays (secondary.cuh: ir_light_setup), word w of hit h at
 * w * IR_PERSIST_BLOCK + h. */
enum { SET_X, SET_Y, SET_Z, SET_NX, SET_NY, SET_NZ, SET_LX, SET_LY, SET_LZ, SET_S0, SET_S1, SET_FLAGS, SET_WORDS };
enum { SET_NORMAL_OK = 1, SET_LIT_SIDE = 2 };
/* Lit frames, pool: a secondary ray between steps (secondary.cuh: ir_secondary_state), in the
 * first words of the hit list; its number k names its hit and which of the hit's rays it is. */
enum { SEC_KID, SEC_K, SEC_KB, SEC_SA, SEC_LIGHT, SEC_WORDS };

template <int Mode>
struct persist_shared {
  uint32_t rays[persist_words<Mode>::ray * IR_PERSIST_BLOCK];
  /* The hit list; while a block traces its hits' secondary rays spread over its threads, the
   * rays' transmittances (the hits are in the shading threads' registers by then). */
  union {
    uint32_t hits[persist_words<Mode>::hit * IR_PERSIST_BLOCK];
    float light[persist_words<Mode>::hit * IR_PERSIST_BLOCK];
  };
  uint32_t setup[(Mode & IR_TRACE_LIGHT) ? SET_WORDS * IR_PERSIST_BLOCK : 1];
  unsigned next_ray; /* lit frames, spread: the next secondary ray a thread takes */
  ir_block_compact_shared<IR_PERSIST_BLOCK> compact;
  unsigned first_tile, tiles;
  unsigned finished; /* rays of the pool that hit or left since the last compaction */
};

static __device__ __forceinline__ uint32_t as_word(float f) { return __float_as_uint(f); }
static __device__ __forceinline__ float as_float(uint32_t w) { return __uint_as_float(w); }

/* The ray of a record: origin the eye, direction and span as generated. */
template <int Mode, int W>
static __device__ __forceinline__ void ray_of(const ir_trace_params &p, const uint32_t (&rec)[W], ir_ray *r,
                                              ir_span *s) {
  r->o = p.cam.eye_voxel;
  r->d = ir_v3(as_float(rec[RAY_DX]), as_float(rec[RAY_DY]), as_float(rec[RAY_DZ]));
  r->inv_d = ir_v3(1.0f / r->d.x, 1.0f / r->d.y, 1.0f / r->d.z);
  if (Mode & IR_TRACE_COMPOSITE)
    r->dir_world = ir_v3(as_float(rec[RAY_WX]), as_float(rec[RAY_WY]), as_float(rec[RAY_WZ]));
  else
    r->dir_world = ir_v3(0.0f, 0.0f, 0.0f); /* opaque rays shade in the hit phase, from the camera ray */
  s->t0 = as_float(rec[RAY_T0]);
  s->t1 = as_float(rec[RAY_T1]);
  s->dt = as_float(rec[RAY_DT]);
  s->k_end = (int32_t)rec[RAY_KEND];
  s->c0 = as_float(rec[RAY_C0]);
  s->c1 = as_float(rec[RAY_C1]);
}

/* A ray's record from its parts (the inverse of ray_of and the march state's words). */
template <int Mode, int W>
static __device__ __forceinline__ void pack_ray(uint32_t pixel, const ir_ray &r, const ir_span &s,
                                                const ir_march_state &m, const ir_paint &pt, float first_t,
                                                uint32_t (&rec)[W]) {
  rec[RAY_PIXEL] = pixel;
  rec[RAY_K] = (uint32_t)m.k;
  rec[RAY_KB] = (uint32_t)m.kb;
  rec[RAY_SA] = as_word(m.sa);
  rec[RAY_DX] = as_word(r.d.x);
  rec[RAY_DY] = as_word(r.d.y);
  rec[RAY_DZ] = as_word(r.d.z);
  rec[RAY_T0] = as_word(s.t0);
  rec[RAY_T1] = as_word(s.t1);
  rec[RAY_DT] = as_word(s.dt);
  rec[RAY_KEND] = (uint32_t)s.k_end;
  rec[RAY_C0] = as_word(s.c0);
  rec[RAY_C1] = as_word(s.c1);
  if (Mode & IR_TRACE_COMPOSITE) {
    rec[RAY_PR] = as_word(pt.r);
    rec[RAY_PG] = as_word(pt.g);
    rec[RAY_PB] = as_word(pt.b);
    rec[RAY_PA] = as_word(pt.a);
    rec[RAY_FIRST] = as_word(first_t);
    rec[RAY_WX] = as_word(r.dir_world.x);
    rec[RAY_WY] = as_word(r.dir_world.y);
    rec[RAY_WZ] = as_word(r.dir_world.z);
  }
}

/* Generation: the record of the ray of tiled id `id`, or false when it has no pixel or misses
 * the volume (the pixel then gets the background at once). */
template <int Mode, int W>
static __device__ __forceinline__ bool generate_ray(const ir_trace_params &p, uint32_t id, uint32_t *image, float *depth,
                                                    uint32_t (&rec)[W]) {
  uint32_t pixel = ir_tiled_pixel(id, p.cam);
  if (pixel == 0xffffffffu) return false;
  ir_ray r = ir_camera_ray(&p.cam, pixel);
  ir_span s;
  if (!ir_ray_span(&p, &r, &s)) {
    image[pixel] = IR_BACKGROUND_RGBA;
    depth[pixel] = INFINITY;
    return false;
  }
  ir_paint pt = {0.0f, 0.0f, 0.0f, 0.0f};
  pack_ray<Mode>(pixel, r, s, ir_step_start(), pt, INFINITY, rec);
  return true;
}

/* Step: the ray of `rec` goes on by up to `budget` batches. LIVE: rec holds where it goes on;
 * HIT: rec's first words hold the hit record instead (the ray leaves the pool, and one record's
 * registers serve both); DONE: the pixel is written. */
template <int Mode, int RW>
static __device__ __forceinline__ int step_ray(const ir_trace_params &p, int budget, uint32_t (&rec)[RW],
                                               uint32_t *image, float *depth) {
  static_assert(persist_words<Mode>::hit <= RW, "a hit record fits in a ray record");
  uint32_t(&hit)[RW] = rec;
  ir_ray r;
  ir_span s;
  ray_of<Mode>(p, rec, &r, &s);
  ir_march_state m;
  m.k = (int32_t)rec[RAY_K];
  m.kb = (int32_t)rec[RAY_KB];
  m.sa = as_float(rec[RAY_SA]);
  ir_paint pt = {0.0f, 0.0f, 0.0f, 0.0f};
  float first_t = INFINITY;
  if (Mode & IR_TRACE_COMPOSITE) {
    pt.r = as_float(rec[RAY_PR]);
    pt.g = as_float(rec[RAY_PG]);
    pt.b = as_float(rec[RAY_PB]);
    pt.a = as_float(rec[RAY_PA]);
    first_t = as_float(rec[RAY_FIRST]);
  }
  const uint32_t pixel = rec[RAY_PIXEL];
  ir_hit h;
  /* Lit frames march in the unlit batches here too: the hits' secondary rays run in the shading
   * phase, so the steps have the registers for more reads in flight (1-3 % off a lit frame on
   * the H100, docs/PERFORMANCE.md). */
  const int outcome = ir_step_as(&p, &r, &s, &m, budget, &pt, &first_t, &h, Mode | IR_TRACE_WIDE);
  if (outcome == IR_STEP_DONE) {
    image[pixel] = ir_paint_pixel(&pt);
    depth[pixel] = first_t;
  } else if (outcome == IR_STEP_LIVE) {
    /* The whole record again from the parts the step used, so that the record's words need not
     * stay live beside them through the march. */
    pack_ray<Mode>(pixel, r, s, m, pt, first_t, rec);
  } else {
    hit[HIT_PIXEL] = pixel;
    hit[HIT_T] = as_word(h.t);
    hit[HIT_SURF] = (uint32_t)h.surf;
    hit[HIT_TA] = as_word(h.ta);
    hit[HIT_SA] = as_word(h.sa);
    hit[HIT_TB] = as_word(h.tb);
    hit[HIT_SB] = as_word(h.sb);
    if (Mode & IR_TRACE_COMPOSITE) {
      hit[HIT_PR] = as_word(pt.r);
      hit[HIT_PG] = as_word(pt.g);
      hit[HIT_PB] = as_word(pt.b);
      hit[HIT_PA] = as_word(pt.a);
      hit[HIT_FIRST] = as_word(first_t);
    }
  }
  return outcome;
}

/* Shading: refine the hit, light it, composite it behind the paint and write the pixel. */
template <int Mode, int W>
static __device__ __forceinline__ void shade_hit(const ir_trace_params &p, const uint32_t (&hit)[W], uint32_t *image,
                                                 float *depth) {
  const uint32_t pixel = hit[HIT_PIXEL];
  ir_ray r = ir_camera_ray(&p.cam, pixel);
  ir_hit h;
  h.t = as_float(hit[HIT_T]);
  h.surf = (int)hit[HIT_SURF];
  h.ta = as_float(hit[HIT_TA]);
  h.sa = as_float(hit[HIT_SA]);
  h.tb = as_float(hit[HIT_TB]);
  h.sb = as_float(hit[HIT_SB]);
  ir_paint pt = {0.0f, 0.0f, 0.0f, 0.0f};
  float first_t = INFINITY;
  if (Mode & IR_TRACE_COMPOSITE) {
    pt.r = as_float(hit[HIT_PR]);
    pt.g = as_float(hit[HIT_PG]);
    pt.b = as_float(hit[HIT_PB]);
    pt.a = as_float(hit[HIT_PA]);
    first_t = as_float(hit[HIT_FIRST]);
  }
  image[pixel] = ir_end_at_hit(&p, &r, h, &pt, &first_t, Mode);
  depth[pixel] = first_t;
}

/* The diagnostic pass's clock: thread 0 adds the cycles since the last mark to a phase, after a
 * barrier, so that a phase lasts until its slowest warp is done. Block-uniform; nothing when
 * the frame is not timed. */
struct phase_clock {
  bool on;
  long long last;
  unsigned long long cycles[IR_PERSIST_PHASES];
  __device__ __forceinline__ void mark(int phase) {
    if (!on) return;
    __syncthreads();
    long long now = clock64();
    cycles[phase] += (unsigned long long)(now - last);
    last = now;
  }
};

/* Lit frames, spread or pool: the setup of hit h as shade_hits_spread left it in shared memory. */
template <int Mode>
static __device__ __forceinline__ ir_light_setup load_setup(const persist_shared<Mode> &sh, unsigned h) {
  ir_light_setup S;
  S.x = ir_v3(as_float(sh.setup[SET_X * IR_PERSIST_BLOCK + h]), as_float(sh.setup[SET_Y * IR_PERSIST_BLOCK + h]),
              as_float(sh.setup[SET_Z * IR_PERSIST_BLOCK + h]));
  S.n = ir_v3(as_float(sh.setup[SET_NX * IR_PERSIST_BLOCK + h]), as_float(sh.setup[SET_NY * IR_PERSIST_BLOCK + h]),
              as_float(sh.setup[SET_NZ * IR_PERSIST_BLOCK + h]));
  S.l = ir_v3(as_float(sh.setup[SET_LX * IR_PERSIST_BLOCK + h]), as_float(sh.setup[SET_LY * IR_PERSIST_BLOCK + h]),
              as_float(sh.setup[SET_LZ * IR_PERSIST_BLOCK + h]));
  S.s0 = sh.setup[SET_S0 * IR_PERSIST_BLOCK + h];
  S.s1 = sh.setup[SET_S1 * IR_PERSIST_BLOCK + h];
  const uint32_t flags = sh.setup[SET_FLAGS * IR_PERSIST_BLOCK + h];
  S.normal_ok = (flags & SET_NORMAL_OK) != 0;
  S.ndl = (flags & SET_LIT_SIDE) ? 1.0f : 0.0f; /* ir_light_ray asks only whether it is above 0 */
  S.spec = 0.0f;
  return S;
}

/* Spread: secondary ray i of hit h, traced to its end. */
template <int Mode>
static __device__ __forceinline__ float trace_secondary(const ir_trace_params &p, const persist_shared<Mode> &sh,
                                                        unsigned h, int i) {
  const ir_light_setup S = load_setup(sh, h);
  ir_ray ray;
  float t_max;
  return ir_light_ray(&p, &S, i, &ray, &t_max) ? ir_transmittance(&p, &ray, t_max) : 1.0f;
}

/* Pool: the `total` secondary rays of the hits from h0 (R each) as the InK loop runs primary
 * rays: every ray of the pool steps by up to `budget` batches; those that go on are compacted by
 * the method; the free slots take the next rays. A ray's record is its number and its march
 * state: its origin and direction come again from its hit's setup at every step. Its light goes
 * to light[k] when it is done (1 for a ray the hit does not have). Block-uniform. */
template <int Mode, ir_compact_method Method>
static __device__ __forceinline__ void trace_secondary_pool(const ir_trace_params &p, persist_shared<Mode> &sh,
                                                            unsigned h0, unsigned total, unsigned R, float *light,
                                                            int budget) {
  const ir_pool<SEC_WORDS> pool = {sh.hits, IR_PERSIST_BLOCK};
  const unsigned t = threadIdx.x;
  uint32_t rec[SEC_WORDS] = {0, 0, 0, 0, 0};
  unsigned live = 0, issued = 0;
  for (;;) {
    const unsigned add = min(IR_PERSIST_BLOCK - live, total - issued), count = live + add;
    if (count == 0) break;
    if (t >= live && t < count) { /* a new ray in a free slot */
      const ir_secondary_state m = ir_secondary_start();
      rec[SEC_KID] = issued + (t - live);
      rec[SEC_K] = (uint32_t)m.k;
      rec[SEC_KB] = (uint32_t)m.kb;
      rec[SEC_SA] = as_word(m.sa);
      rec[SEC_LIGHT] = as_word(m.light);
    }
    issued += add;
    bool going = false;
    if (t < count) {
      const unsigned k = rec[SEC_KID];
      const ir_light_setup S = load_setup(sh, h0 + k / R);
      ir_secondary_state m;
      m.k = (int32_t)rec[SEC_K];
      m.kb = (int32_t)rec[SEC_KB];
      m.sa = as_float(rec[SEC_SA]);
      m.light = as_float(rec[SEC_LIGHT]);
      ir_ray ray;
      ir_span span;
      float t_max;
      if (ir_light_ray(&p, &S, (int)(k % R), &ray, &t_max) && ir_secondary_span(&p, &ray, t_max, &span))
        going = !ir_secondary_step(&p, &ray, &span, &m, true, budget);
      if (going) {
        rec[SEC_K] = (uint32_t)m.k;
        rec[SEC_KB] = (uint32_t)m.kb;
        rec[SEC_SA] = as_word(m.sa);
        rec[SEC_LIGHT] = as_word(m.light);
      } else {
        light[k] = m.light;
      }
    }
    live = ir_block_compact(Method, going, rec, pool, 0, count, sh.compact);
    if (t < live) pool.load(t, rec);
    __syncthreads(); /* every slot read before the next compaction writes the pool */
  }
}

/* Lit frames, spread: the block's hits are shaded in three parts, so that their secondary rays
 * (occlusion and shadow, ir_light_ray) are traced by all the block's threads, one ray each in
 * turn, rather than each hit's rays by the one thread that shades it:
 *   1. each hit's thread refines it and takes its colour and lighting setup (ir_light_prepare),
 *      which goes to shared memory;
 *   2. the block's threads trace the hits' rays, ray i of hit h at k = h R + i (R rays a hit),
 *      as many hits at a time as their transmittances fit in the hit list's words; a thread that
 *      has finished a ray takes the next one not taken (a shared counter), so a warp's lanes stay
 *      busy while rays of different lengths end (the persistent threads of Aila and Laine 2009);
 *   3. each hit's thread adds its rays' results in order (ir_light_combine) and writes the pixel.
 * With IR_SECONDARY_POOL, step 2 is the InK loop instead: the block keeps a pool of secondary rays
 * (one per thread, SEC_WORDS words in shared memory), each steps by up to `budget` batches
 * (ir_secondary_step), the rays that go on are compacted by the frame's method and the free slots
 * are refilled with the next rays, until all are done.
 * The same operations as ir_end_at_hit in one thread, so the same image bit for bit. Called by
 * every thread of the block (barriers inside). */
template <int Mode, ir_compact_method Method>
static __device__ __forceinline__ void shade_hits_spread(const ir_trace_params &p, persist_shared<Mode> &sh,
                                                         unsigned hits_n, uint32_t *image, float *depth, bool pool,
                                                         int budget, phase_clock &clock) {
  constexpr int HW = persist_words<Mode>::hit;
  const ir_pool<HW> hits = {sh.hits, IR_PERSIST_BLOCK};
  const unsigned t = threadIdx.x;
  const bool mine = t < hits_n;
  uint32_t pixel = 0;
  ir_paint pt = {0.0f, 0.0f, 0.0f, 0.0f};
  float first_t = INFINITY;
  ir_vec3 base = ir_v3(0.0f, 0.0f, 0.0f);
  ir_light_setup L;
  int surf = 0;
  if (mine) {
    uint32_t hit[HW];
    hits.load(t, hit);
    pixel = hit[HIT_PIXEL];
    ir_ray r = ir_camera_ray(&p.cam, pixel);
    ir_hit h;
    h.t = as_float(hit[HIT_T]);
    h.surf = (int)hit[HIT_SURF];
    h.ta = as_float(hit[HIT_TA]);
    h.sa = as_float(hit[HIT_SA]);
    h.tb = as_float(hit[HIT_TB]);
    h.sb = as_float(hit[HIT_SB]);
    pt.r = as_float(hit[HIT_PR]);
    pt.g = as_float(hit[HIT_PG]);
    pt.b = as_float(hit[HIT_PB]);
    pt.a = as_float(hit[HIT_PA]);
    first_t = as_float(hit[HIT_FIRST]);
    /* ir_end_at_hit up to the lighting */
    ir_vec3 diff = ir_hit_resolve_differences(&p, &r, &h, Mode);
    if (!(first_t < INFINITY)) first_t = h.t;
    base = ir_hit_base(&p, &r, h.t, h.surf, diff);
    L = ir_light_prepare(&p, &r, h.t, h.surf, diff);
    surf = h.surf;
  }
  __syncthreads(); /* every hit read: the hit list's words take the transmittances now */
  if (mine) {
    const float w[SET_S0] = {L.x.x, L.x.y, L.x.z, L.n.x, L.n.y, L.n.z, L.l.x, L.l.y, L.l.z};
    for (int k = 0; k < SET_S0; k++) sh.setup[k * IR_PERSIST_BLOCK + t] = as_word(w[k]);
    sh.setup[SET_S0 * IR_PERSIST_BLOCK + t] = L.s0;
    sh.setup[SET_S1 * IR_PERSIST_BLOCK + t] = L.s1;
    sh.setup[SET_FLAGS * IR_PERSIST_BLOCK + t] =
        (L.normal_ok ? SET_NORMAL_OK : 0u) | (L.ndl > 0.0f ? SET_LIT_SIDE : 0u);
  }
  if (t == 0) sh.next_ray = 0;
  __syncthreads();
  clock.mark(IR_PHASE_SHADE); /* the hits refined and prepared; their secondary rays from here */
  static_assert(HW > SEC_WORDS, "the hit list holds a pool of secondary rays and their results");
  static_assert((size_t)(HW - SEC_WORDS) * IR_PERSIST_BLOCK >= IR_AO_MAX_SAMPLES + 1,
                "a chunk holds at least one hit's secondary rays (else the chunk loop would not advance)");
  const unsigned R = (unsigned)ir_light_ray_count(&p);
  /* The results: the hit list's words, after the secondary rays' pool when there is one. */
  float *const light = pool ? sh.light + SEC_WORDS * IR_PERSIST_BLOCK : sh.light;
  const unsigned per_chunk = (unsigned)((pool ? HW - SEC_WORDS : HW) * IR_PERSIST_BLOCK) / (R ? R : 1u);
  for (unsigned h0 = 0; h0 < hits_n; h0 += per_chunk) {
    const unsigned n = min(per_chunk, hits_n - h0);
    if (pool)
      trace_secondary_pool<Mode, Method>(p, sh, h0, n * R, R, light, budget);
    else
      for (unsigned k = atomicAdd(&sh.next_ray, 1u); k < n * R; k = atomicAdd(&sh.next_ray, 1u))
        light[k] = trace_secondary(p, sh, h0 + k / R, (int)(k % R));
    __syncthreads();
    if (mine && t >= h0 && t < h0 + n) {
      ir_paint_add(&pt, ir_light_combine(&p, &L, base, &light[(t - h0) * R]), p.surf_alpha[surf]);
      image[pixel] = ir_paint_pixel(&pt);
      depth[pixel] = first_t;
    }
    __syncthreads(); /* the next chunk's rays overwrite these results */
    if (t == 0) sh.next_ray = 0;
    __syncthreads();
  }
  clock.mark(IR_PHASE_SECONDARY);
}


template <int Mode, ir_compact_method Method>
static __device__ __forceinline__ void persistent_frame(const ir_gpu_frame &frame, const ir_persist_args &a) {
  constexpr int RW = persist_words<Mode>::ray, HW = persist_words<Mode>::hit;
  __shared__ persist_shared<Mode> sh;
  const ir_trace_params &p = frame.p;
  const ir_pool<RW> pool = {sh.rays, IR_PERSIST_BLOCK};
  const ir_pool<HW> hits = {sh.hits, IR_PERSIST_BLOCK};
  ir_persist_counters *mine = &a.counters[a.epoch & 1u];
  const unsigned t = threadIdx.x, total_tiles = a.tiles;
  if (blockIdx.x == 0 && t == 0) a.counters[(a.epoch + 1u) & 1u] = ir_persist_counters{}; /* the next frame's */
  ir_block_compact_init(sh.compact);
  if (t == 0) sh.finished = 0;
  __syncthreads();
  unsigned live = 0, generated = 0, hit_count = 0, rounds = 0;
  phase_clock clock = {a.phase_cycles != NULL, clock64(), {0, 0, 0, 0, 0}};
  uint32_t rec[RW]; /* this thread's ray (slot t of the pool), held in registers between compactions */
  int outcome = IR_STEP_DONE;
  for (;;) {
    /* 1. steps: each warp steps its rays on its own, with no barrier, until a tile's worth of the
     * block's rays have finished (room to refill; a shared counter says) or its own are done;
     * then the block meets. */
    for (;;) {
      if (outcome == IR_STEP_LIVE) {
        outcome = step_ray<Mode>(p, a.step_batches, rec, a.image, a.depth);
        if (outcome != IR_STEP_LIVE) atomicAdd(&sh.finished, 1u);
      }
      rounds++;
      const bool warp_going = __any_sync(0xffffffffu, outcome == IR_STEP_LIVE);
      unsigned finished = 0;
      if ((t & 31u) == 0) finished = *(volatile unsigned *)&sh.finished;
      finished = __shfl_sync(0xffffffffu, finished, 0);
      if (!warp_going || finished >= IR_TILE_RAYS) break;
    }
    __syncthreads();
    clock.mark(IR_PHASE_STEP);
    /* 2. the rays that go on stay in the pool; the hits go to the hit list */
    const unsigned kept = ir_block_compact(Method, outcome == IR_STEP_LIVE, rec, pool, 0, live, sh.compact);
    uint32_t(&hit)[HW] = reinterpret_cast<uint32_t(&)[HW]>(rec); /* a hit's record: rec's first words */
    const unsigned hits_n = ir_block_compact(Method, outcome == IR_STEP_HIT, hit, hits, 0, live, sh.compact);
    hit_count += hits_n;
    /* 3. refill: whole tiles for the free slots, one atomic */
    if (t == 0) {
      sh.finished = 0;
      const unsigned want = (IR_PERSIST_BLOCK - kept) / IR_TILE_RAYS;
      const unsigned first = want ? atomicAdd(&mine->next_tile, want) : total_tiles;
      sh.first_tile = first;
      sh.tiles = first < total_tiles ? min(want, total_tiles - first) : 0u;
    }
    __syncthreads();
    const unsigned first_tile = sh.first_tile, new_rays = sh.tiles * IR_TILE_RAYS;
    clock.mark(IR_PHASE_COMPACT);
    /* 4. shading, a warp of hits at a time (lit frames, spread: their secondary rays over the
     * whole block; a block-uniform choice) */
    bool spread = false;
    if constexpr ((Mode & IR_TRACE_LIGHT) != 0) { /* only lit kernels carry that code */
      spread = a.secondary != IR_SECONDARY_INLINE;
      if (spread)
        shade_hits_spread<Mode, Method>(p, sh, hits_n, a.image, a.depth, a.secondary == IR_SECONDARY_POOL,
                                        a.step_batches, clock);
    }
    if (!spread && t < hits_n) {
      hits.load(t, hit);
      shade_hit<Mode>(p, hit, a.image, a.depth);
    }
    clock.mark(IR_PHASE_SHADE);
    /* 5. generation, compacted into the pool behind the rays that go on */
    bool meets = false;
    if (t < new_rays) meets = generate_ray<Mode>(p, first_tile * IR_TILE_RAYS + t, a.image, a.depth, rec);
    const unsigned added = ir_block_compact(Method, meets, rec, pool, kept, new_rays, sh.compact);
    generated += added;
    live = kept + added;
    clock.mark(IR_PHASE_GENERATE);
    if (live == 0 && new_rays == 0) break;
    /* Each thread takes the ray of its slot. */
    outcome = IR_STEP_DONE;
    if (t < live) {
      pool.load(t, rec);
      outcome = IR_STEP_LIVE;
    }
  }
  if (t == 0) {
    atomicAdd(&mine->generated, generated);
    atomicAdd(&mine->hits, hit_count);
    atomicMax(&mine->rounds, rounds);
    if (clock.on)
      for (int i = 0; i < IR_PERSIST_PHASES; i++) atomicAdd(&a.phase_cycles[i], clock.cycles[i]);
  }
}

/* One kernel per trace mode and compaction method: each carries only its own hit code and its
 * own compaction (with the method chosen at run time inside one kernel, the registers of all
 * five weighed on the march: 80 bytes of spills instead of 16). */
/* Four blocks per SM (64 registers): three (80 registers, fewer spills in the exact hit code)
 * measured 3-9 % slower on the H100. */
template <int Mode, ir_compact_method Method>
static __global__ void __launch_bounds__(IR_PERSIST_BLOCK, 4)
    persistent_kernel(const __grid_constant__ ir_gpu_frame frame, const __grid_constant__ ir_persist_args a) {
  persistent_frame<Mode, Method>(frame, a);
}

/* Translucent frames carry more per ray; two blocks per SM leave them the registers. */
#ifndef IR_PERSIST_COMPOSITE_BLOCKS
#define IR_PERSIST_COMPOSITE_BLOCKS 2
#endif
template <int Mode, ir_compact_method Method>
static __global__ void __launch_bounds__(IR_PERSIST_BLOCK, IR_PERSIST_COMPOSITE_BLOCKS)
    persistent_composite_kernel(const __grid_constant__ ir_gpu_frame frame, const __grid_constant__ ir_persist_args a) {
  persistent_frame<Mode, Method>(frame, a);
}

typedef void (*persist_kernel_fn)(const ir_gpu_frame, const ir_persist_args);

template <ir_compact_method Method>
static persist_kernel_fn kernel_for_mode(int mode) {
  switch (mode) {
  case 0: return persistent_kernel<0, Method>;
  case IR_TRACE_COMPOSITE: return persistent_composite_kernel<IR_TRACE_COMPOSITE, Method>;
  case IR_TRACE_EXACT: return persistent_kernel<IR_TRACE_EXACT, Method>;
  case IR_TRACE_COMPOSITE | IR_TRACE_EXACT: return persistent_composite_kernel<IR_TRACE_COMPOSITE | IR_TRACE_EXACT, Method>;
  /* Lit frames (secondary.cuh): a hit's occlusion and shadow rays are traced in the shading phase. */
  case IR_TRACE_LIGHT | IR_TRACE_COMPOSITE: return persistent_composite_kernel<IR_TRACE_LIGHT | IR_TRACE_COMPOSITE, Method>;
  case IR_TRACE_LIGHT | IR_TRACE_COMPOSITE | IR_TRACE_EXACT:
    return persistent_composite_kernel<IR_TRACE_LIGHT | IR_TRACE_COMPOSITE | IR_TRACE_EXACT, Method>;
  default: return NULL; /* no kernel for that mode: the launch says so */
  }
}

static persist_kernel_fn kernel_for(int mode, ir_compact_method method) {
  switch (method) {
  case IR_COMPACT_INK_COMPACT: return kernel_for_mode<IR_COMPACT_INK_COMPACT>(mode);
  case IR_COMPACT_INK_COLLATE: return kernel_for_mode<IR_COMPACT_INK_COLLATE>(mode);
  case IR_COMPACT_THRUST: return kernel_for_mode<IR_COMPACT_THRUST>(mode);
  case IR_COMPACT_JUMPING_JACK: return kernel_for_mode<IR_COMPACT_JUMPING_JACK>(mode);
  case IR_COMPACT_REDZONE: return kernel_for_mode<IR_COMPACT_REDZONE>(mode);
  default: return NULL;
  }
}

/* As many blocks as fit on the GPU at once: the blocks take their work from the tile queue.
 * Every method's kernel of a mode has the same registers and shared memory within a block or
 * so; the InK-Compact one stands for them. */
cudaError_t ir_persistent_blocks(int mode, unsigned *blocks) {
  int device = 0, sms = 0, per_sm = 0;
  if (!kernel_for(mode, IR_COMPACT_INK_COMPACT)) return cudaErrorInvalidValue;
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (e == cudaSuccess)
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel_for(mode, IR_COMPACT_INK_COMPACT),
                                                      IR_PERSIST_BLOCK, 0);
  if (e != cudaSuccess) return e;
  *blocks = (unsigned)(sms * (per_sm > 0 ? per_sm : 1));
  return cudaSuccess;
}

cudaError_t ir_persistent_launch(const ir_gpu_frame &frame, const ir_persist_args &a, int mode, cudaStream_t stream) {
  const unsigned grid = a.blocks < a.tiles ? a.blocks : (a.tiles ? a.tiles : 1);
  persist_kernel_fn kernel = kernel_for(mode, a.method);
  if (!kernel) return cudaErrorInvalidValue;
  kernel<<<grid, IR_PERSIST_BLOCK, 0, stream>>>(frame, a);
  return cudaGetLastError();
}

uint32_t ir_persist_tiles(int width, int height) { return ir_tiled_ray_count(width, height) / IR_TILE_RAYS; }
