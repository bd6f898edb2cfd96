/* The multi-kernel pipelines of one frame: BVH update, ray generation, then traversal and
 * intersection alternating until no ray is left to traverse. Two designs share this driver:
 *
 *   multi (default)  walk_*.cu: tiled ray ids; traversal walks the brick grid to the ray's next
 *                    run of valid bricks, intersection marches the run and shades a hit at
 *                    once; three compaction stages (generation -> traversal, traversal ->
 *                    intersection, intersection -> traversal); a tail kernel for the last rays
 *   paper            raygen/traverse/intersect/shade.cu: the InK paper's pipeline (§3, Fig. 3),
 *                    BVH traversal with per-ray stacks, a shading stage per round, four
 *                    compaction stages (the fourth: intersection -> shading)
 *
 * Each compaction stage hands rays on in the selected method's natural form (gpu_internal.cuh,
 * ir_stage_out; docs/render.md, "Compaction stages"):
 *
 *   stage                      InK-Compact/-Collate   Thrust, Jumping Jack      Redzone
 *   generation -> traversal    emit in raygen         flags + flagged call      removal list + in-place removal
 *   traversal -> intersection  emit in traverse       flags + flagged call      removal list + in-place removal
 *   intersection -> traversal  emit in intersect      flags + flagged call      removal list + in-place removal
 *   intersection -> shading    emit in intersect      flags + flagged call      dense copy + removal list + removal
 *
 * Two ways to drive the loop:
 *   graph      the whole frame is one CUDA graph; the loop is a conditional WHILE node whose
 *              body ends with a control kernel that moves the counts on, sets the condition and
 *              (where the driver allows device-updatable nodes) shrinks the next round's grids
 *              to the number of rays left. No host round trip at all.
 *   host loop  the host reads the counts back after each stage and launches exact grids: what
 *              Thrust needs (its copy_if takes the count on the host), and the diagnostic pass
 *              that times every stage with events.
 * Rounds are shaded as they finish, so the hit list of a round never has to be appended to the
 * previous rounds' lists (which the compaction calls, writing from offset 0, cannot do).
 *
 * Lit multi frames then run the secondary phase (walk_secondary.cu) the same two ways: a second
 * loop (a second WHILE node) of rounds of combine, seed, two steps each compacted by the method,
 * and a control kernel that moves the counts on, starts the next chunk of hits once no ray of
 * the last one is left, and sizes the next round's four kernels.
 */
#include <string.h>

#include "render/gpu_internal.cuh"

/* ---- Stage wiring ---------------------------------------------------------------------------- */
typedef struct ir_wiring {
  int mode;
  ir_stage_out gen, trav, to_shade, to_trav;
  uint32_t *isect_list; /* the list intersection reads: I, or T itself for Redzone (in place) */
} ir_wiring;

static int output_mode(ir_compact_method m) {
  if (m == IR_COMPACT_INK_COMPACT) return IR_OUT_INK_COMPACT;
  if (m == IR_COMPACT_INK_COLLATE) return IR_OUT_INK_COLLATE;
  return ir_compact_method_get(m)->in_place ? IR_OUT_REMOVE : IR_OUT_FLAGS;
}

/* Stage 0 (ray generation) launches IR_RAYGEN_BLOCK-thread blocks, the others IR_BLOCK; the
 * per-stage scratch (sized for the IR_BLOCK launch) holds either. */
static ir_ink_sections sections_of(const struct ir_gpu_state *g, int stage) {
  unsigned threads = stage == 0 ? IR_RAYGEN_BLOCK : IR_BLOCK;
  unsigned blocks = (unsigned)((g->capacity + threads - 1) / threads);
  return ir_ink_sections_bind((char *)g->d_sections + (size_t)stage * g->sections_stride, blocks, threads);
}

static ir_wiring wire(const struct ir_gpu_state *g, ir_compact_method m, bool paper) {
  ir_gpu_counters *c = g->d_counters;
  ir_wiring w;
  memset(&w, 0, sizeof w);
  w.mode = output_mode(m);
  w.gen.mode = w.trav.mode = w.to_shade.mode = w.to_trav.mode = w.mode;
  w.isect_list = g->d_list_i;
  switch (w.mode) {
  case IR_OUT_INK_COMPACT:
  case IR_OUT_INK_COLLATE:
    w.gen.list = g->d_list_t, w.gen.count = &c->trav_in, w.gen.sections = sections_of(g, 0);
    w.trav.list = g->d_list_i, w.trav.count = &c->isect, w.trav.sections = sections_of(g, 1);
    w.to_shade.list = g->d_list_s, w.to_shade.count = &c->shade, w.to_shade.sections = sections_of(g, 2);
    w.to_trav.list = g->d_list_t, w.to_trav.count = &c->trav_out, w.to_trav.sections = sections_of(g, 3);
    break;
  case IR_OUT_FLAGS:
    w.gen.flags = w.trav.flags = w.to_shade.flags = g->d_flags_a;
    w.to_trav.flags = g->d_flags_b;
    /* The paper's rays are pixels, not positions in the generation list (a window's pixels are
     * not 0..n): generation writes them into the list traversal fills later (compact_gen). */
    if (paper) w.gen.list = g->d_list_i;
    break;
  default: /* Redzone: lists shrink in place; the hit list starts as a copy of the input. */
    w.isect_list = g->d_list_t;
    w.gen.list = g->d_list_t, w.gen.remove = g->d_remove_a, w.gen.count = &c->k_gen;
    w.trav.remove = g->d_remove_a, w.trav.count = &c->k_trav;
    w.to_shade.list = g->d_list_s, w.to_shade.remove = g->d_remove_b, w.to_shade.count = &c->k_isect_s;
    w.to_trav.remove = g->d_remove_c, w.to_trav.count = &c->k_isect_t;
    break;
  }
  return w;
}

/* ---- Counters and section state ---------------------------------------------------------------- */
/* Word ranges a control kernel zeroes: the InK-Compact section flags and counters are reset
 * with plain stores instead of one memset node each (ir_ink_sections_reset zeroes exactly these
 * bytes: state and arrivals, contiguous at s.state). */
typedef struct ir_zero_list {
  uint32_t *ptr[5];
  uint32_t words[5];
  int count;
} ir_zero_list;

static void zero_list_add(ir_zero_list *z, void *ptr, size_t bytes) {
  z->ptr[z->count] = (uint32_t *)ptr;
  z->words[z->count] = (uint32_t)(bytes / 4);
  z->count++;
}

static size_t sections_reset_bytes(const struct ir_gpu_state *g) {
  return ir_ink_sections_reset_bytes_(ir_grid_for(g->capacity));
}

static __device__ void zero_words(const ir_zero_list &z) {
  for (int r = 0; r < z.count; r++)
    for (uint32_t i = threadIdx.x; i < z.words[r]; i += blockDim.x) z.ptr[r][i] = 0;
}

static __global__ void frame_begin_kernel(ir_zero_list z) { zero_words(z); }

/* Up to four kernel nodes of a loop body whose grids follow the rays left. */
typedef struct ir_resize {
  cudaGraphDeviceNode_t node[4];
  int count;
} ir_resize;


/* Intersection and shading see at most the rays that enter traversal, so one size fits the
 * three stage kernels of a round. */
static __device__ void resize_grids(const ir_resize *resize, uint32_t rays, ir_gpu_counters *c) {
  unsigned grid = (rays + IR_BLOCK - 1) / IR_BLOCK;
  for (int k = 0; k < resize->count; k++)
    if (cudaGraphKernelNodeSetGridDim(resize->node[k], dim3(grid ? grid : 1)) != cudaSuccess) c->resize_errors++;
}

/* A slot holds the primary loop's nodes, then the secondary loop's. */
static ir_resize *resize_slot(const struct ir_gpu_state *g, int slot) {
  static_assert(2 * sizeof(ir_resize) <= IR_RESIZE_SLOT, "ir_resize slot too small");
  return (ir_resize *)((char *)g->d_resize + (size_t)slot * IR_RESIZE_SLOT);
}


/* End of a round: statistics, counts moved on to the next round, outputs zeroed, and in the
 * graph the loop condition and the next round's grid sizes. One block. */
static __global__ void round_end_kernel(ir_gpu_counters *c, ir_zero_list z, cudaGraphConditionalHandle cond,
                                        int use_cond, const ir_resize *resize, uint32_t max_rounds,
                                        uint32_t tail_rays, uint32_t full_rays) {
  zero_words(z);
  if (threadIdx.x != 0) return;
  uint32_t r = c->round;
  if (r < IR_MAX_ITERATIONS) {
    c->trav_hist[r] = c->trav_in;
    c->isect_hist[r] = c->isect;
  }
  if (r == 0) c->generated = c->trav_in;
  c->hits += c->shade;
  uint32_t next = c->trav_out;
  c->trav_in = next;
  c->trav_out = c->isect = c->shade = 0;
  c->k_trav = c->k_isect_t = c->k_isect_s = 0;
  c->round = r + 1;
  bool more = next > tail_rays && r + 1 < max_rounds;
  if (use_cond) cudaGraphSetConditional(cond, more);
  /* The last round leaves the grids at full size, not at its few rays: the next frame's
   * loop_begin_kernel shrinks them to its first round. Should a device-side update ever miss a
   * launch, a grid too large only runs idle blocks, where one left at the last round's size
   * would drop most of the frame's rays; within a frame the rays left never grow, so the
   * previous round's size is never too small. */
  if (resize) resize_grids(resize, more ? next : full_rays, c);
}

/* Graph only, after ray generation: the first round's grids follow the rays generated (the
 * previous frame's last round left them at full size). One thread: device-side node updates
 * from several threads to the same node race (the graph then launches a node with a torn
 * grid, seen as a rare illegal address in the paper pipeline, which updates three nodes). */
static __global__ void loop_begin_kernel(ir_gpu_counters *c, const ir_resize *resize) {
  if (threadIdx.x == 0 && blockIdx.x == 0) resize_grids(resize, c->trav_in, c);
}

/* ---- The secondary phase's control (lit multi frames) -------------------------------------------- */
/* The secondary loop's nodes: combine, seed and the two steps, sized for this round's counts (the
 * last round leaves them at full size, as round_end_kernel does). One thread. */
static __device__ void sec_resize_grids(const ir_resize *resize, ir_gpu_counters *c, bool more, uint32_t full_hits,
                                        uint32_t full_rays) {
  if (!resize) return;
  const uint32_t n[4] = {more ? c->sec_combine : full_hits, more ? c->sec_seed : full_rays,
                         more ? c->sec_in : full_rays, more ? c->sec_in : full_rays};
  for (int k = 0; k < resize->count; k++) {
    unsigned grid = (n[k] + IR_BLOCK - 1) / IR_BLOCK;
    if (cudaGraphKernelNodeSetGridDim(resize->node[k], dim3(grid ? grid : 1)) != cudaSuccess) c->resize_errors++;
  }
}

/* The chunk of hits from h0: as many as `ray_cap` rays of R per hit hold (all when R is 0: light
 * without rays), seeded in the next round. */
static __device__ void sec_start_chunk(ir_gpu_counters *c, uint32_t h0, uint32_t R, uint32_t ray_cap) {
  const uint32_t left = c->sec_hits - h0, per = R ? ray_cap / R : left, n = left < per ? left : per;
  c->sec_h0 = h0;
  c->sec_chunk = n;
  c->sec_seed = c->sec_in = n * R;
  c->sec_rays += n * R;
  if (n > 0) c->sec_chunks++;
}

/* Each round's control kernel, after both steps: the rays going on enter the next round; once
 * none of the chunk is left, its hits are combined in the next round and the next chunk is
 * seeded. One block (its threads zero the steps' section state). */
static __global__ void sec_round_end_kernel(const ir_gpu_frame *frame, ir_gpu_counters *c, ir_zero_list z,
                                            cudaGraphConditionalHandle cond, int use_cond, const ir_resize *resize,
                                            uint32_t ray_cap, uint32_t full_hits) {
  zero_words(z);
  if (threadIdx.x != 0) return;
  const uint32_t live = c->sec_out;
  c->sec_rounds++;
  c->sec_combine = c->sec_seed = 0;
  c->sec_mid = c->sec_out = c->sec_k1 = c->sec_k2 = 0;
  c->sec_in = live;
  if (live == 0 && c->sec_chunk > 0) {
    c->sec_combine = c->sec_chunk;
    c->sec_combine_h0 = c->sec_h0;
    sec_start_chunk(c, c->sec_h0 + c->sec_chunk, (uint32_t)ir_light_ray_count(&frame->p), ray_cap);
  }
  bool more = c->sec_combine > 0 || c->sec_in > 0;
  /* A bound no frame reaches: each round moves every live ray on by a batch of samples or ends
   * it, a ray has at most two samples a voxel of its path (at most the sum of the dims), and a
   * chunk adds its seed and combine rounds. Past it the loop stops and the frame fails (the
   * host reads sec_capped) instead of the GPU spinning on a loop that makes no progress. */
  const uint64_t R = (uint64_t)ir_light_ray_count(&frame->p);
  const uint64_t chunks = R && ray_cap ? ((uint64_t)c->sec_hits * R + ray_cap - 1) / ray_cap : 1;
  const ir_volume_view *v = &frame->p.vol;
  const uint64_t samples = 2ull * ((uint64_t)v->dims[0] + (uint64_t)v->dims[1] + (uint64_t)v->dims[2]) + 8;
  if (more && (uint64_t)c->sec_rounds > (chunks + 1) * (samples + 3)) {
    c->sec_capped = 1;
    more = false;
  }
  c->sec_more = more;
  if (use_cond) cudaGraphSetConditional(cond, more);
  sec_resize_grids(resize, c, more, full_hits, ray_cap);
}

/* After the primary rounds: the first chunk, the loop condition and the first round's grids. */
static __global__ void sec_begin_kernel(const ir_gpu_frame *frame, ir_gpu_counters *c, ir_zero_list z,
                                        cudaGraphConditionalHandle cond, int use_cond, const ir_resize *resize,
                                        uint32_t ray_cap, uint32_t full_hits) {
  zero_words(z);
  if (threadIdx.x != 0) return;
  c->sec_combine = c->sec_mid = c->sec_out = c->sec_k1 = c->sec_k2 = 0;
  sec_start_chunk(c, 0, (uint32_t)ir_light_ray_count(&frame->p), ray_cap);
  /* A chunk without rays (light but no occlusion or shadow rays) still has its hits to combine. */
  const bool more = c->sec_chunk > 0;
  c->sec_more = more;
  if (use_cond) cudaGraphSetConditional(cond, more);
  sec_resize_grids(resize, c, more, full_hits, ray_cap);
}

static ir_zero_list round_zero_list(const struct ir_gpu_state *g, int mode) {
  ir_zero_list z;
  memset(&z, 0, sizeof z);
  if (mode == IR_OUT_INK_COMPACT)
    for (int s = 1; s < 4; s++) zero_list_add(&z, sections_of(g, s).state, sections_reset_bytes(g));
  return z;
}

/* ---- Out-of-kernel compaction calls ------------------------------------------------------------
 * In the host loop the input counts are known on the host (exact sizes, host-count calls); in
 * the graph they stay on the device and launch sizes come from the capacity. */
/* Stage-timing marks of the diagnostic pass: an event after each piece of work; the time
 * between two marks belongs to the later one. WAIT marks the GPU idling while the host reads a
 * count back and launches the next stage: the host round trip. */
enum {
  IR_MARK_START = 0,
  IR_MARK_BVH,
  IR_MARK_RAYGEN,
  IR_MARK_COMPACT_GEN,
  IR_MARK_TRAV,
  IR_MARK_COMPACT_TRAV,
  IR_MARK_ISECT,
  IR_MARK_COMPACT_ISECT,
  IR_MARK_SHADE,
  IR_MARK_CONTROL,
  IR_MARK_WAIT,
  IR_MARK_TAIL,
  IR_MARK_SECONDARY,
  IR_MARK_COMPACT_SEC
};

typedef struct ir_pass {
  ir_renderer *r;
  bool paper;  /* the paper's pipeline; else the default multi design */
  bool timed;
  int marks;
  struct ir_gpu_state *g;
  ir_compact_method method;
  ir_wiring w;
  ir_ray_buffers b;
  cudaStream_t stream;
  uint32_t pixels;
  uint32_t gen_n; /* ray generation's input: pixels (paper) or tiled ray ids (multi) */
  int slot;       /* ir_graph_slot of pipeline and method */
  bool host_n; /* counts known on the host (host loop): exact sizes, host-count calls */
  uint32_t tail_rays; /* finish in one kernel at or below this many rays (0: never) */
  int mode;           /* the frame's trace mode: which variants of the multi design's kernels */
  ir_resize resize; /* graph capture: the loop's device-updatable nodes */
  ir_resize sec_resize; /* and the secondary loop's */
  bool lit;         /* the multi design with secondary rays: the secondary phase follows */
  ir_sec_buffers sb;
  char *err;
} ir_pass;

/* The stage kernels of either design (the multi design's intersection shades its own hits). */
static cudaError_t launch_traverse(ir_pass *p, unsigned grid, cudaStream_t s, cudaLaunchAttribute *attr, int na) {
  struct ir_gpu_state *g = p->g;
  return p->paper ? ir_traverse_launch(g->d_frame, p->b, g->d_list_t, &g->d_counters->trav_in, p->w.trav, grid, s,
                                       attr, na)
                  : ir_walk_traverse_launch(g->d_frame, p->b, g->d_list_t, &g->d_counters->trav_in, p->w.trav, grid,
                                            s, attr, na);
}

static cudaError_t launch_intersect(ir_pass *p, unsigned grid, cudaStream_t s, cudaLaunchAttribute *attr, int na) {
  struct ir_gpu_state *g = p->g;
  return p->paper ? ir_intersect_launch(g->d_frame, p->b, p->w.isect_list, &g->d_counters->isect, p->w.to_shade,
                                        p->w.to_trav, grid, p->mode, s, attr, na)
                  : ir_walk_intersect_launch(g->d_frame, p->b, p->w.isect_list, &g->d_counters->isect,
                                             g->d_counters, p->w.to_trav, grid, p->mode, s, attr, na);
}

static cudaError_t launch_tail(ir_pass *p, uint32_t max_rays) {
  struct ir_gpu_state *g = p->g;
  return p->paper ? ir_tail_finish_launch(g->d_frame, p->b, g->d_list_t, g->d_counters, max_rays, p->stream)
                  : ir_walk_tail_launch(g->d_frame, p->b, g->d_list_t, g->d_counters, max_rays, p->mode, p->stream);
}

static ir_status compact_fail(ir_pass *p, cudaError_t e, const char *stage) {
  snprintf(p->err, IR_ERR_LEN, "%s compaction (%s) failed: %s", stage, ir_compact_method_get(p->method)->name,
           ir_compact_last_error(p->g->cctx));
  (void)e;
  return IR_ERR_RUNTIME;
}

static ir_status compact_gen(ir_pass *p) {
  struct ir_gpu_state *g = p->g;
  ir_gpu_counters *c = g->d_counters;
  cudaError_t e = cudaSuccess;
  /* In a graph gen_n is the whole image's (the graph serves every window); the frame's count is
   * the one ray generation wrote. */
  const uint32_t *in = p->paper ? g->d_list_i : g->d_identity;
  if (p->w.mode == IR_OUT_FLAGS && p->host_n)
    e = ir_compact_flagged(g->cctx, p->method, in, g->d_flags_a, g->d_list_t, &c->trav_in, p->gen_n, p->stream);
  else if (p->w.mode == IR_OUT_FLAGS)
    e = ir_compact_flagged_dn(g->cctx, p->method, in, g->d_flags_a, g->d_list_t, &c->trav_in, &c->pixels, p->gen_n,
                              p->stream);
  else if (p->w.mode == IR_OUT_REMOVE)
    e = ir_compact_remove_indices_dn(g->cctx, p->method, g->d_list_t, &c->pixels, p->gen_n, g->d_remove_a,
                                     &c->k_gen, p->gen_n, &c->trav_in, p->stream);
  return e == cudaSuccess ? IR_OK : compact_fail(p, e, "generation -> traversal");
}

/* n: the stage's input count when known on the host, otherwise the capacity. */
static ir_status compact_trav(ir_pass *p, size_t max_n) {
  struct ir_gpu_state *g = p->g;
  ir_gpu_counters *c = g->d_counters;
  cudaError_t e = cudaSuccess;
  if (p->w.mode == IR_OUT_FLAGS)
    e = p->host_n ? ir_compact_flagged(g->cctx, p->method, g->d_list_t, g->d_flags_a, g->d_list_i, &c->isect, max_n,
                                     p->stream)
                : ir_compact_flagged_dn(g->cctx, p->method, g->d_list_t, g->d_flags_a, g->d_list_i, &c->isect,
                                        &c->trav_in, max_n, p->stream);
  else if (p->w.mode == IR_OUT_REMOVE)
    e = ir_compact_remove_indices_dn(g->cctx, p->method, g->d_list_t, &c->trav_in, max_n, g->d_remove_a, &c->k_trav,
                                     max_n, &c->isect, p->stream);
  return e == cudaSuccess ? IR_OK : compact_fail(p, e, "traversal -> intersection");
}

/* The multi design shades in the intersection kernel: only its to-traversal output is compacted. */
static ir_status compact_isect(ir_pass *p, size_t max_n) {
  struct ir_gpu_state *g = p->g;
  ir_gpu_counters *c = g->d_counters;
  cudaError_t e = cudaSuccess, e2 = cudaSuccess;
  bool shade = p->paper;
  if (p->w.mode == IR_OUT_FLAGS && p->host_n) {
    if (shade)
      e = ir_compact_flagged(g->cctx, p->method, g->d_list_i, g->d_flags_a, g->d_list_s, &c->shade, max_n, p->stream);
    if (e == cudaSuccess)
      e2 = ir_compact_flagged(g->cctx, p->method, g->d_list_i, g->d_flags_b, g->d_list_t, &c->trav_out, max_n,
                              p->stream);
  } else if (p->w.mode == IR_OUT_FLAGS) {
    if (shade)
      e = ir_compact_flagged_dn(g->cctx, p->method, g->d_list_i, g->d_flags_a, g->d_list_s, &c->shade, &c->isect,
                                max_n, p->stream);
    if (e == cudaSuccess)
      e2 = ir_compact_flagged_dn(g->cctx, p->method, g->d_list_i, g->d_flags_b, g->d_list_t, &c->trav_out,
                                 &c->isect, max_n, p->stream);
  } else if (p->w.mode == IR_OUT_REMOVE) {
    if (shade)
      e = ir_compact_remove_indices_dn(g->cctx, p->method, g->d_list_s, &c->isect, max_n, g->d_remove_b,
                                       &c->k_isect_s, max_n, &c->shade, p->stream);
    if (e == cudaSuccess)
      e2 = ir_compact_remove_indices_dn(g->cctx, p->method, g->d_list_t, &c->isect, max_n, g->d_remove_c,
                                        &c->k_isect_t, max_n, &c->trav_out, p->stream);
  }
  if (e != cudaSuccess) return compact_fail(p, e, "intersection -> shading");
  return e2 == cudaSuccess ? IR_OK : compact_fail(p, e2, "intersection -> traversal");
}

static cudaError_t mark(ir_pass *p, int label, uint32_t round) {
  if (!p->timed || p->marks >= IR_TIMELINE_EVENTS) return cudaSuccess;
  p->g->mark_label[p->marks] = label;
  p->g->mark_round[p->marks] = round;
  return cudaEventRecord(p->g->timeline[p->marks++], p->stream);
}

/* Host loop: one round trip, the counters to the host. */
static ir_status read_counters(ir_pass *p, uint32_t round) {
  char *err = p->err;
  IR_CUDA(cudaMemcpyAsync(p->g->h_counters, p->g->d_counters, sizeof(ir_gpu_counters), cudaMemcpyDeviceToHost,
                          p->stream));
  IR_CUDA(cudaStreamSynchronize(p->stream));
  IR_CUDA(mark(p, IR_MARK_WAIT, round));
  return IR_OK;
}

/* ---- The frame's prologue: counters, BVH update, ray generation --------------------------------- */
static ir_status enqueue_prologue(ir_pass *p, bool graph) {
  char *err = p->err;
  struct ir_gpu_state *g = p->g;
  ir_zero_list z;
  memset(&z, 0, sizeof z);
  zero_list_add(&z, g->d_counters, sizeof(ir_gpu_counters));
  if (p->w.mode == IR_OUT_INK_COMPACT)
    for (int s = 0; s < 4; s++) zero_list_add(&z, sections_of(g, s).state, sections_reset_bytes(g));
  frame_begin_kernel<<<1, 256, 0, p->stream>>>(z);
  IR_CUDA(cudaGetLastError());
  IR_CUDA(ir_bvh_update_launch(&p->r->layout, g->d_ranges, g->d_nodes, g->d_frame, p->stream));
  IR_CUDA(mark(p, IR_MARK_BVH, 0));
  IR_CUDA(p->paper ? ir_raygen_launch(g->d_frame, p->b, g->d_counters, p->w.gen, p->pixels, p->stream)
                   : ir_walk_raygen_launch(g->d_frame, p->b, g->d_counters, p->w.gen, p->gen_n, p->stream));
  IR_CUDA(mark(p, IR_MARK_RAYGEN, 0));
  ir_status st = compact_gen(p);
  if (st == IR_OK && p->w.mode >= IR_OUT_FLAGS) IR_CUDA(mark(p, IR_MARK_COMPACT_GEN, 0));
  if (st == IR_OK && graph) {
    loop_begin_kernel<<<1, 1, 0, p->stream>>>(g->d_counters, resize_slot(g, p->slot));
    IR_CUDA(cudaGetLastError());
  }
  return st;
}

/* ---- The secondary phase (lit multi frames) -------------------------------------------------------
 * A round: combine the finished chunk's hits, seed the next chunk, then two steps, A -> B and
 * B -> A (Redzone: A in place both times), each handing its rays on in the method's form. */
static ir_ink_sections sec_sections(const struct ir_gpu_state *g, int step) {
  return ir_ink_sections_bind((char *)g->d_sec_sections + (size_t)step * g->sec_sections_stride,
                              ir_grid_for(g->sec_ray_cap), IR_BLOCK);
}

static ir_zero_list sec_zero_list(const ir_pass *p) {
  ir_zero_list z;
  memset(&z, 0, sizeof z);
  if (p->w.mode == IR_OUT_INK_COMPACT)
    for (int k = 0; k < 2; k++)
      zero_list_add(&z, sec_sections(p->g, k).state, ir_ink_sections_reset_bytes_(ir_grid_for(p->g->sec_ray_cap)));
  return z;
}

/* Step k's input list and count, and its output. */
static ir_stage_out sec_stage(const ir_pass *p, int k, const uint32_t **in, const uint32_t **n) {
  struct ir_gpu_state *g = p->g;
  ir_gpu_counters *c = g->d_counters;
  ir_stage_out o;
  memset(&o, 0, sizeof o);
  o.mode = p->w.mode;
  *in = k == 0 || o.mode == IR_OUT_REMOVE ? g->d_sec_list_a : g->d_sec_list_b;
  *n = k == 0 ? &c->sec_in : &c->sec_mid;
  switch (o.mode) {
  case IR_OUT_INK_COMPACT:
  case IR_OUT_INK_COLLATE:
    o.list = k == 0 ? g->d_sec_list_b : g->d_sec_list_a;
    o.count = k == 0 ? &c->sec_mid : &c->sec_out;
    o.sections = sec_sections(g, k);
    break;
  case IR_OUT_FLAGS: o.flags = g->d_sec_flags; break;
  default:
    o.remove = g->d_sec_remove;
    o.count = k == 0 ? &c->sec_k1 : &c->sec_k2;
    break;
  }
  return o;
}

/* The out-of-kernel compaction after step k; max_n: its input count when known on the host,
 * otherwise the chunk's capacity. */
static ir_status sec_compact(ir_pass *p, int k, size_t max_n) {
  struct ir_gpu_state *g = p->g;
  ir_gpu_counters *c = g->d_counters;
  uint32_t *out_n = k == 0 ? &c->sec_mid : &c->sec_out;
  const uint32_t *in_n = k == 0 ? &c->sec_in : &c->sec_mid;
  cudaError_t e = cudaSuccess;
  if (p->w.mode == IR_OUT_FLAGS) {
    const uint32_t *in = k == 0 ? g->d_sec_list_a : g->d_sec_list_b;
    uint32_t *out = k == 0 ? g->d_sec_list_b : g->d_sec_list_a;
    e = p->host_n ? ir_compact_flagged(g->cctx, p->method, in, g->d_sec_flags, out, out_n, max_n, p->stream)
                  : ir_compact_flagged_dn(g->cctx, p->method, in, g->d_sec_flags, out, out_n, in_n, max_n, p->stream);
  } else if (p->w.mode == IR_OUT_REMOVE) {
    e = ir_compact_remove_indices_dn(g->cctx, p->method, g->d_sec_list_a, in_n, max_n, g->d_sec_remove,
                                     k == 0 ? &c->sec_k1 : &c->sec_k2, max_n, out_n, p->stream);
  }
  return e == cudaSuccess ? IR_OK : compact_fail(p, e, "secondary step");
}

/* Host loop: exact grids from the counts read back after the first step and each round. */
static ir_status host_secondary(ir_pass *p) {
  char *err = p->err;
  struct ir_gpu_state *g = p->g;
  ir_gpu_counters *c = g->d_counters;
  const ir_gpu_counters *h = g->h_counters;
  const ir_zero_list z = sec_zero_list(p);
  const uint32_t cap = (uint32_t)g->sec_ray_cap, full_hits = (uint32_t)g->sec_hit_cap;
  sec_begin_kernel<<<1, 256, 0, p->stream>>>(g->d_frame, c, z, 0, 0, NULL, cap, full_hits);
  IR_CUDA(cudaGetLastError());
  IR_CUDA(mark(p, IR_MARK_SECONDARY, 0));
  ir_status st = read_counters(p, 0);
  for (uint32_t round = 0; st == IR_OK && h->sec_more; round++) {
    if (h->sec_combine > 0) {
      IR_CUDA(ir_walk_sec_combine_launch(g->d_frame, p->sb, c, g->d_image, ir_grid_for(h->sec_combine), p->stream,
                                         NULL, 0));
      IR_CUDA(mark(p, IR_MARK_SECONDARY, round));
    }
    if (h->sec_seed > 0) {
      IR_CUDA(ir_walk_sec_seed_launch(p->sb, c, ir_grid_for(h->sec_seed), p->stream, NULL, 0));
      IR_CUDA(mark(p, IR_MARK_SECONDARY, round));
    }
    uint32_t n = h->sec_in;
    for (int k = 0; k < 2 && n > 0; k++) {
      const uint32_t *in, *in_n;
      const ir_stage_out o = sec_stage(p, k, &in, &in_n);
      IR_CUDA(ir_walk_sec_step_launch(g->d_frame, p->sb, in, in_n, c, o, ir_grid_for(n), p->stream, NULL, 0));
      IR_CUDA(mark(p, IR_MARK_SECONDARY, round));
      if ((st = sec_compact(p, k, n)) != IR_OK) return st;
      if (p->w.mode >= IR_OUT_FLAGS) IR_CUDA(mark(p, IR_MARK_COMPACT_SEC, round));
      if (k == 0) {
        if ((st = read_counters(p, round)) != IR_OK) return st;
        n = h->sec_mid;
      }
    }
    sec_round_end_kernel<<<1, 256, 0, p->stream>>>(g->d_frame, c, z, 0, 0, NULL, cap, full_hits);
    IR_CUDA(cudaGetLastError());
    IR_CUDA(mark(p, IR_MARK_SECONDARY, round));
    st = read_counters(p, round);
  }
  return st;
}

/* ---- Host loop ---------------------------------------------------------------------------------- */
static ir_status host_loop(ir_pass *p) {
  char *err = p->err;
  struct ir_gpu_state *g = p->g;
  const ir_gpu_counters *h = g->h_counters;
  ir_zero_list z = round_zero_list(g, p->w.mode);
  ir_status st = enqueue_prologue(p, false);
  if (st == IR_OK) st = read_counters(p, 0);
  uint32_t n = h->trav_in, max_rounds = p->r->layout.node_count + 2;
  for (uint32_t round = 0; st == IR_OK && n > p->tail_rays && round < max_rounds; round++) {
    IR_CUDA(launch_traverse(p, ir_grid_for(n), p->stream, NULL, 0));
    IR_CUDA(mark(p, IR_MARK_TRAV, round));
    if ((st = compact_trav(p, n)) != IR_OK) return st;
    if (p->w.mode >= IR_OUT_FLAGS) IR_CUDA(mark(p, IR_MARK_COMPACT_TRAV, round));
    if ((st = read_counters(p, round)) != IR_OK) return st;
    uint32_t isect = h->isect;
    if (isect > 0) {
      IR_CUDA(launch_intersect(p, ir_grid_for(isect), p->stream, NULL, 0));
      IR_CUDA(mark(p, IR_MARK_ISECT, round));
      if ((st = compact_isect(p, isect)) != IR_OK) return st;
      if (p->w.mode >= IR_OUT_FLAGS) IR_CUDA(mark(p, IR_MARK_COMPACT_ISECT, round));
      if ((st = read_counters(p, round)) != IR_OK) return st;
      if (p->paper && h->shade > 0) {
        IR_CUDA(ir_shade_launch(g->d_frame, p->b, g->d_list_s, &g->d_counters->shade, ir_grid_for(h->shade),
                                p->stream, NULL, 0));
        IR_CUDA(mark(p, IR_MARK_SHADE, round));
      }
    }
    n = isect > 0 ? h->trav_out : 0;
    round_end_kernel<<<1, 256, 0, p->stream>>>(g->d_counters, z, 0, 0, NULL, 0, 0, 0);
    IR_CUDA(cudaGetLastError());
    IR_CUDA(mark(p, IR_MARK_CONTROL, round));
  }
  if (st == IR_OK && n > 0 && p->tail_rays > 0) {
    IR_CUDA(launch_tail(p, n));
    IR_CUDA(mark(p, IR_MARK_TAIL, 0));
  }
  if (st == IR_OK && p->lit) st = host_secondary(p);
  return st;
}

/* ---- Graph ------------------------------------------------------------------------------------ */
/* One loop round, captured into the WHILE node's body. With `resize`, the three stage kernels
 * are device-updatable nodes and the control kernel sizes their next grids. */
static ir_status enqueue_body(ir_pass *p, cudaStream_t s, cudaGraphConditionalHandle cond, bool resize) {
  char *err = p->err;
  struct ir_gpu_state *g = p->g;
  unsigned grid = ir_grid_for(g->capacity);
  cudaLaunchAttribute attr[3];
  memset(attr, 0, sizeof attr);
  for (int k = 0; k < 3; k++) {
    attr[k].id = cudaLaunchAttributeDeviceUpdatableKernelNode;
    attr[k].val.deviceUpdatableKernelNode.deviceUpdatable = 1;
  }
  int na = resize ? 1 : 0;
  cudaStream_t saved = p->stream;
  p->stream = s; /* the compaction calls enqueue on p->stream */
  ir_status st = IR_OK;
  cudaError_t e = launch_traverse(p, grid, s, &attr[0], na);
  if (e == cudaSuccess && (st = compact_trav(p, g->capacity)) == IR_OK) {
    e = launch_intersect(p, grid, s, &attr[1], na);
    if (e == cudaSuccess) st = compact_isect(p, g->capacity);
  }
  p->stream = saved;
  IR_CUDA(e);
  if (st != IR_OK) return st;
  if (p->paper) IR_CUDA(ir_shade_launch(g->d_frame, p->b, g->d_list_s, &g->d_counters->shade, grid, s, &attr[2], na));
  ir_resize rs;
  memset(&rs, 0, sizeof rs);
  if (resize) {
    rs.count = p->paper ? 3 : 2;
    for (int k = 0; k < rs.count; k++) rs.node[k] = attr[k].val.deviceUpdatableKernelNode.devNode;
  }
  /* The node handles are known only now; loop_begin_kernel, captured earlier, reads them from
   * device memory, which capture_frame fills once the capture has ended. */
  p->resize = rs;
  /* A ray passes at most one round per valid leaf; the cap only guards against a bug looping. */
  uint32_t max_rounds = p->r->layout.node_count + 2;
  round_end_kernel<<<1, 256, 0, s>>>(g->d_counters, round_zero_list(g, p->w.mode), cond, 1,
                                     resize_slot(g, p->slot), max_rounds, p->tail_rays, (uint32_t)g->capacity);
  IR_CUDA(cudaGetLastError());
  return IR_OK;
}

/* A conditional handle of the graph being captured on `s`, set by a kernel captured next. */
static cudaError_t create_cond(cudaStream_t s, cudaGraphConditionalHandle *cond) {
  cudaStreamCaptureStatus status;
  cudaGraph_t capturing = NULL;
  cudaError_t e = cudaStreamGetCaptureInfo(s, &status, NULL, &capturing, NULL, NULL, NULL);
  if (e == cudaSuccess) e = cudaGraphConditionalHandleCreate(cond, capturing, 1, cudaGraphCondAssignDefault);
  return e;
}

/* Adds a WHILE node on `cond` after the work captured so far on `s`, and begins capturing its
 * body on `body_stream`. */
static cudaError_t begin_while(cudaStream_t s, cudaStream_t body_stream, cudaGraphConditionalHandle cond) {
  cudaStreamCaptureStatus status;
  const cudaGraphNode_t *deps = NULL;
  size_t ndeps = 0;
  cudaGraph_t capturing = NULL;
  cudaGraphNode_t loop = NULL;
  cudaGraphNodeParams cp = {};
  cudaError_t e = cudaStreamGetCaptureInfo(s, &status, NULL, &capturing, &deps, NULL, &ndeps);
  if (e == cudaSuccess) {
    cp.type = cudaGraphNodeTypeConditional;
    cp.conditional.handle = cond;
    cp.conditional.type = cudaGraphCondTypeWhile;
    cp.conditional.size = 1;
    e = cudaGraphAddNode(&loop, capturing, deps, NULL, ndeps, &cp);
  }
  if (e == cudaSuccess) e = cudaStreamUpdateCaptureDependencies(s, &loop, NULL, 1, cudaStreamSetCaptureDependencies);
  if (e == cudaSuccess)
    e = cudaStreamBeginCaptureToGraph(body_stream, cp.conditional.phGraph_out[0], NULL, NULL, 0,
                                      cudaStreamCaptureModeThreadLocal);
  return e;
}

/* The secondary phase's round, captured into its WHILE node's body; with `resize`, combine, seed
 * and the two steps are device-updatable nodes that the control kernel sizes. */
static ir_status enqueue_sec_body(ir_pass *p, cudaStream_t s, cudaGraphConditionalHandle cond, bool resize) {
  char *err = p->err;
  struct ir_gpu_state *g = p->g;
  ir_gpu_counters *c = g->d_counters;
  cudaLaunchAttribute attr[4];
  memset(attr, 0, sizeof attr);
  for (int k = 0; k < 4; k++) {
    attr[k].id = cudaLaunchAttributeDeviceUpdatableKernelNode;
    attr[k].val.deviceUpdatableKernelNode.deviceUpdatable = 1;
  }
  const int na = resize ? 1 : 0;
  const uint32_t cap = (uint32_t)g->sec_ray_cap, full_hits = (uint32_t)g->sec_hit_cap;
  IR_CUDA(ir_walk_sec_combine_launch(g->d_frame, p->sb, c, g->d_image, ir_grid_for(full_hits), s, &attr[0], na));
  IR_CUDA(ir_walk_sec_seed_launch(p->sb, c, ir_grid_for(cap), s, &attr[1], na));
  cudaStream_t saved = p->stream;
  p->stream = s; /* the compaction calls enqueue on p->stream */
  ir_status st = IR_OK;
  cudaError_t e = cudaSuccess;
  for (int k = 0; k < 2 && e == cudaSuccess && st == IR_OK; k++) {
    const uint32_t *in, *in_n;
    const ir_stage_out o = sec_stage(p, k, &in, &in_n);
    e = ir_walk_sec_step_launch(g->d_frame, p->sb, in, in_n, c, o, ir_grid_for(cap), s, &attr[2 + k], na);
    if (e == cudaSuccess) st = sec_compact(p, k, cap);
  }
  p->stream = saved;
  IR_CUDA(e);
  if (st != IR_OK) return st;
  memset(&p->sec_resize, 0, sizeof p->sec_resize);
  if (resize) {
    p->sec_resize.count = 4;
    for (int k = 0; k < 4; k++) p->sec_resize.node[k] = attr[k].val.deviceUpdatableKernelNode.devNode;
  }
  sec_round_end_kernel<<<1, 256, 0, s>>>(g->d_frame, c, sec_zero_list(p), cond, 1,
                                         resize ? resize_slot(g, p->slot) + 1 : NULL, cap, full_hits);
  IR_CUDA(cudaGetLastError());
  return IR_OK;
}

/* After the primary rounds: the first chunk's control kernel, then the secondary loop. */
static ir_status capture_secondary(ir_pass *p, bool resize) {
  char *err = p->err;
  struct ir_gpu_state *g = p->g;
  cudaStream_t body_stream = NULL;
  IR_CUDA(cudaStreamCreateWithFlags(&body_stream, cudaStreamNonBlocking));
  cudaGraphConditionalHandle cond = 0;
  cudaError_t e = create_cond(p->stream, &cond);
  if (e == cudaSuccess) {
    sec_begin_kernel<<<1, 256, 0, p->stream>>>(g->d_frame, g->d_counters, sec_zero_list(p), cond, 1,
                                               resize ? resize_slot(g, p->slot) + 1 : NULL,
                                               (uint32_t)g->sec_ray_cap, (uint32_t)g->sec_hit_cap);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess) e = begin_while(p->stream, body_stream, cond);
  ir_status st = IR_OK;
  if (e == cudaSuccess) {
    st = enqueue_sec_body(p, body_stream, cond, resize);
    cudaGraph_t body = NULL;
    cudaError_t e2 = cudaStreamEndCapture(body_stream, &body);
    if (st == IR_OK) e = e2;
  }
  cudaStreamDestroy(body_stream);
  if (st != IR_OK) return st;
  IR_CUDA(e);
  return IR_OK;
}

static ir_status capture_frame(ir_pass *p, bool resize, cudaGraphExec_t *out) {
  char *err = p->err;
  cudaStream_t body_stream = NULL;
  cudaGraph_t graph = NULL;
  IR_CUDA(cudaStreamCreateWithFlags(&body_stream, cudaStreamNonBlocking));
  ir_status st = IR_OK;
  memset(&p->resize, 0, sizeof p->resize);
  memset(&p->sec_resize, 0, sizeof p->sec_resize);
  cudaError_t e = cudaStreamBeginCapture(p->stream, cudaStreamCaptureModeThreadLocal);
  if (e == cudaSuccess) st = enqueue_prologue(p, true);
  if (e == cudaSuccess && st == IR_OK) {
    cudaGraphConditionalHandle cond = 0;
    e = create_cond(p->stream, &cond);
    if (e == cudaSuccess) e = begin_while(p->stream, body_stream, cond);
    if (e == cudaSuccess) {
      st = enqueue_body(p, body_stream, cond, resize);
      cudaGraph_t body = NULL;
      cudaError_t e2 = cudaStreamEndCapture(body_stream, &body);
      if (st == IR_OK) e = e2;
    }
    /* The tail kernel strides over the rays left (never more than the capacity): its grid is
     * sized for the threshold only up to the capacity. Sized for the threshold itself, a
     * threshold beyond the image (up to IR_TAIL_OFF - 1, which the API allows) launched up to
     * 2^24 blocks of idle threads every frame, slow on the GPU and far slower under
     * compute-sanitizer (test_render_stress draws such thresholds). */
    if (e == cudaSuccess && st == IR_OK && p->tail_rays > 0)
      e = launch_tail(p, p->tail_rays < p->g->capacity ? p->tail_rays : (uint32_t)p->g->capacity);
    if (e == cudaSuccess && st == IR_OK && p->lit) st = capture_secondary(p, resize);
  }
  cudaError_t e3 = cudaStreamEndCapture(p->stream, &graph);
  if (e == cudaSuccess && st == IR_OK) e = e3;
  if (e == cudaSuccess && st == IR_OK)
    e = cudaMemcpy(resize_slot(p->g, p->slot), &p->resize, sizeof p->resize, cudaMemcpyHostToDevice);
  if (e == cudaSuccess && st == IR_OK)
    e = cudaMemcpy(resize_slot(p->g, p->slot) + 1, &p->sec_resize, sizeof p->sec_resize, cudaMemcpyHostToDevice);
  if (e == cudaSuccess && st == IR_OK) e = cudaGraphInstantiate(out, graph, 0);
  if (graph) cudaGraphDestroy(graph);
  cudaStreamDestroy(body_stream);
  if (st != IR_OK) {
    (void)cudaGetLastError();
    return st;
  }
  if (e != cudaSuccess) {
    (void)cudaGetLastError(); /* capture errors are not sticky; clear them for the retry */
    return ir_cuda_fail(err, e, "capturing the multi-kernel frame as a CUDA graph", __FILE__, __LINE__);
  }
  return IR_OK;
}

static ir_status ensure_graph(ir_pass *p, int width, int height, bool fixed_grids) {
  struct ir_gpu_state *g = p->g;
  int m = p->slot;
  if (g->graph[m] && g->graph_width[m] == width && g->graph_height[m] == height && g->graph_fixed[m] == fixed_grids &&
      g->graph_tail[m] == p->tail_rays && g->graph_mode[m] == p->mode && g->graph_sec[m] == g->sec_generation)
    return IR_OK;
  /* The slot's device-updatable nodes (resize_slot) are about to change owner: no launch of the
   * old graph may still be running or queued when its executable goes, and the new one is
   * uploaded before its first launch reads the new handles. Measured: rebuilding a slot's graph
   * every frame without this gave rare wrong frames and illegal addresses. */
  if (g->graph[m]) {
    cudaError_t e = cudaStreamSynchronize(g->stream);
    if (e != cudaSuccess) return ir_cuda_fail(p->err, e, "waiting for the previous frame before rebuilding its graph", __FILE__, __LINE__);
    cudaGraphExecDestroy(g->graph[m]);
  }
  g->graph[m] = NULL;
  /* Device-updatable nodes first; where the driver refuses them, the loop runs max-sized grids
   * that exit early past the count. */
  ir_status st = fixed_grids ? IR_ERR_RUNTIME : capture_frame(p, true, &g->graph[m]);
  g->graph_sized[m] = st == IR_OK;
  if (st != IR_OK) st = capture_frame(p, false, &g->graph[m]);
  if (st != IR_OK) return st;
  cudaError_t e = cudaGraphUpload(g->graph[m], g->stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(g->stream);
  if (e != cudaSuccess) return ir_cuda_fail(p->err, e, "uploading the frame's CUDA graph", __FILE__, __LINE__);
  g->graph_fixed[m] = fixed_grids;
  g->graph_tail[m] = p->tail_rays;
  g->graph_mode[m] = p->mode;
  g->graph_sec[m] = g->sec_generation;
  g->graph_width[m] = width;
  g->graph_height[m] = height;
  return IR_OK;
}

void ir_gpu_graphs_destroy(struct ir_gpu_state *g) {
  for (int m = 0; m < IR_GRAPH_SLOTS; m++) {
    if (g->graph[m]) cudaGraphExecDestroy(g->graph[m]);
    g->graph[m] = NULL;
  }
}

/* ---- Statistics ---------------------------------------------------------------------------------- */
static ir_status fill_stage_times(ir_pass *p, ir_frame_stats *s) {
  char *err = p->err;
  for (int i = 1; i < p->marks; i++) {
    float ms = 0.0f;
    IR_CUDA(cudaEventElapsedTime(&ms, p->g->timeline[i - 1], p->g->timeline[i]));
    int r = p->g->mark_round[i] < IR_MAX_ITERATIONS ? p->g->mark_round[i] : IR_MAX_ITERATIONS - 1;
    switch (p->g->mark_label[i]) {
    case IR_MARK_BVH: s->bvh_update_ms += ms; break;
    case IR_MARK_COMPACT_GEN: s->compact_ms += ms; /* fall through: part of ray generation */
    case IR_MARK_RAYGEN: s->raygen_ms += ms; break;
    case IR_MARK_COMPACT_TRAV: s->compact_ms += ms; /* fall through */
    case IR_MARK_TRAV: s->traverse_iter_ms[r] += ms, s->traverse_ms += ms; break;
    case IR_MARK_COMPACT_ISECT: s->compact_ms += ms; /* fall through */
    case IR_MARK_ISECT: s->intersect_iter_ms[r] += ms, s->intersect_ms += ms; break;
    case IR_MARK_SHADE: s->shade_ms += ms; break;
    case IR_MARK_WAIT: s->host_wait_ms += ms, s->readbacks++; break;
    case IR_MARK_TAIL: s->tail_ms += ms; break;
    case IR_MARK_COMPACT_SEC: s->compact_ms += ms; /* fall through: part of the secondary phase */
    case IR_MARK_SECONDARY: s->secondary_ms += ms; break;
    default: s->control_ms += ms; break;
    }
  }
  return IR_OK;
}

/* ---- Entry ----------------------------------------------------------------------------------- */
ir_status ir_gpu_multi_frame(ir_renderer *r, const ir_frame_desc *f, bool host_loop_mode, bool timed,
                             ir_frame_stats *stats, char err[IR_ERR_LEN]) {
  struct ir_gpu_state *g = r->gpu;
  ir_pass pass;
  memset(&pass, 0, sizeof pass);
  ir_pass *p = &pass;
  p->r = r;
  p->g = g;
  p->timed = timed;
  p->paper = f->pipeline == IR_PIPELINE_PAPER;
  p->slot = ir_graph_slot(p->paper, f->method);
  p->method = f->method;
  p->w = wire(g, f->method, p->paper);
  p->b.sp = g->d_sp;
  p->b.stack = g->d_stack;
  p->b.stride = g->capacity;
  p->b.hit = g->d_hit;
  p->b.image = g->d_image;
  p->b.depth = g->d_depth;
  p->b.seg = g->d_seg;
  p->b.paint = g->d_paint;
  p->b.hit_surf = g->d_hit_surf;
  p->b.sec_hit = g->d_sec_hit;
  p->b.sec_stride = g->sec_hit_cap;
  p->stream = g->stream;
  /* Ray generation's launch: in a graph the whole image's pixels or tiled ids, which bound every
   * window's (the kernels read the frame's count), so one graph serves all windows; in the host
   * loop the window's (below). */
  p->pixels = (uint32_t)f->width * (uint32_t)f->height;
  p->gen_n = p->paper ? p->pixels : ir_tiled_ray_count(f->width, f->height);
  p->tail_rays = ir_frame_tail_rays(f);
  p->mode = g->trace_mode;
  p->lit = !p->paper && (p->mode & IR_TRACE_LIGHT) != 0;
  p->sb.hit = g->d_sec_hit;
  p->sb.stride = g->sec_hit_cap;
  p->sb.state = g->d_sec_state;
  p->sb.light = g->d_sec_light;
  p->sb.list_a = g->d_sec_list_a;
  p->sb.ray_cap = (uint32_t)g->sec_ray_cap;
  p->err = err;
  ir_status st = IR_OK;
  if (timed) {
    cudaError_t e = mark(p, IR_MARK_START, 0);
    if (e != cudaSuccess) st = ir_cuda_fail(err, e, "cudaEventRecord", __FILE__, __LINE__);
  }
  /* A method whose calls cannot be captured (or a driver without conditional nodes) runs the
   * host loop; stats->graph says which way a frame ran. */
  if (st == IR_OK && !host_loop_mode && !g->graph_failed[p->slot] && ir_compact_supports_device_n(f->method)) {
    ir_status gs = ensure_graph(p, f->width, f->height, f->fixed_grids);
    if (gs != IR_OK) g->graph_failed[p->slot] = true;
  }
  bool use_graph = !host_loop_mode && g->graph[p->slot] && ir_compact_supports_device_n(f->method);
  g->last_graph = use_graph;
  if (st == IR_OK && !use_graph) {
    int win[4];
    ir_frame_window(f, win);
    p->pixels = (uint32_t)(win[2] - win[0]) * (uint32_t)(win[3] - win[1]);
    p->gen_n = p->paper ? p->pixels : ir_tiled_ray_count(win[2] - win[0], win[3] - win[1]);
    p->host_n = true;
    st = host_loop(p);
  } else if (st == IR_OK) {
    cudaError_t e = cudaGraphLaunch(g->graph[p->slot], g->stream);
    if (e != cudaSuccess) st = ir_cuda_fail(err, e, "cudaGraphLaunch", __FILE__, __LINE__);
  }
  if (st == IR_OK && timed) {
    cudaError_t e = cudaStreamSynchronize(g->stream);
    if (e != cudaSuccess) st = ir_cuda_fail(err, e, "cudaStreamSynchronize", __FILE__, __LINE__);
    if (st == IR_OK && stats) st = fill_stage_times(p, stats);
  }
  return st;
}
