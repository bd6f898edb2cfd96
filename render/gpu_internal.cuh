/* Internals of the GPU renderer shared by its CUDA files (CUDA only): the state, the device-side
 * frame parameters and counters, how a stage hands its surviving rays to the next one, and the
 * kernel launchers of each stage file.
 */
#ifndef INKRAY_RENDER_GPU_INTERNAL_CUH
#define INKRAY_RENDER_GPU_INTERNAL_CUH

#include <cuda_runtime.h>

#include "compaction/compaction.h"
#include "compaction/compaction_device.cuh"
#include "render/render_internal.h"

/* 256 threads: a multiple of the warp and of InK's 32-block sections, small enough that a
 * max-sized grid of a 1920x1080 frame still has thousands of blocks to balance the uneven
 * per-ray work of traversal and intersection. */
#ifndef IR_BLOCK
#define IR_BLOCK 256
#endif

/* Ray generation is light and uniform: 1024-thread blocks, a quarter of the blocks, and so a
 * quarter of InK-Compact's chained sections, of a 256-thread launch over the same pixels. */
#define IR_RAYGEN_BLOCK 1024

/* ---- Tiled ray ids ---------------------------------------------------------------------------
 * The single kernel and the multi pipeline number their rays over 8x8 pixel tiles of the frame's
 * window (ir_cam_basis win_*, the whole image without one): ray id i is window pixel
 * (8 tx + i % 8, 8 ty + i / 8 % 8) of tile i / 64, tiles row-major. A warp's 32 rays are an 8x4
 * block of pixels instead of 32 pixels of one row, so they meet the same bricks and texels and
 * finish at similar depths. Ids past the window's right or bottom edge are unused. Threads are
 * launched for the window's tiles only. */
#define IR_TILE 8
static inline __host__ __device__ uint32_t ir_tiled_ray_count(int width, int height) {
  return (uint32_t)((width + IR_TILE - 1) / IR_TILE) * (uint32_t)((height + IR_TILE - 1) / IR_TILE) * IR_TILE *
         IR_TILE;
}
/* The image pixel of ray `id`, or UINT32_MAX for an id outside the window. */
static inline __device__ uint32_t ir_tiled_pixel(uint32_t id, const ir_cam_basis &c) {
  uint32_t tiles_x = (uint32_t)(c.win_w + IR_TILE - 1) / IR_TILE, tile = id / (IR_TILE * IR_TILE);
  if (tiles_x == 0) return 0xffffffffu;
  uint32_t x = tile % tiles_x * IR_TILE + id % IR_TILE, y = tile / tiles_x * IR_TILE + id / IR_TILE % IR_TILE;
  return x < (uint32_t)c.win_w && y < (uint32_t)c.win_h
             ? (y + (uint32_t)c.win_y0) * (uint32_t)c.width + x + (uint32_t)c.win_x0
             : 0xffffffffu;
}
/* The image pixel of window pixel `i` in row-major order (the paper's pipeline numbers its rays
 * by pixel and generates them over the window this way). */
static inline __device__ uint32_t ir_window_pixel(uint32_t i, const ir_cam_basis &c) {
  uint32_t w = (uint32_t)c.win_w;
  return ((uint32_t)c.win_y0 + i / w) * (uint32_t)c.width + (uint32_t)c.win_x0 + i % w;
}

/* Records "what failed where" in err and returns IR_ERR_RUNTIME. */
ir_status ir_cuda_fail(char err[IR_ERR_LEN], cudaError_t e, const char *call, const char *file, int line);
#define IR_CUDA(call)                                                                   \
  do {                                                                                  \
    cudaError_t ir_e_ = (call);                                                         \
    if (ir_e_ != cudaSuccess) return ir_cuda_fail(err, ir_e_, #call, __FILE__, __LINE__); \
  } while (0)

static inline unsigned ir_grid_for(size_t n) { return (unsigned)((n + IR_BLOCK - 1) / IR_BLOCK); }

/* Launches a stage kernel with IR_BLOCK threads per block and optional launch attributes (the
 * graph build asks for device-updatable nodes this way; cudaLaunchKernelEx writes the node
 * handle back into the attribute). */
template <typename... Params, typename... Args>
static cudaError_t ir_launch(void (*kernel)(Params...), unsigned grid, cudaStream_t stream,
                             cudaLaunchAttribute *attr, int attr_count, Args... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(grid ? grid : 1);
  cfg.blockDim = dim3(IR_BLOCK);
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = (unsigned)attr_count;
  return cudaLaunchKernelEx(&cfg, kernel, args...);
}

/* ---- Device-side frame state ---------------------------------------------------------------- */
/* Parameters of the frame, copied to the device before the frame's work, so that a captured
 * graph reads the current camera and isovalue without being rebuilt. */
typedef struct ir_gpu_frame {
  ir_trace_params p; /* p.nodes: the device tree; p.root: the root's index (validity is read) */
  uint32_t pixels;   /* width * height */
  uint32_t rays;     /* tiled ray ids (ir_tiled_ray_count): the multi pipeline's first input */
  uint32_t run_bricks; /* multi pipeline: most valid bricks per run (0: no limit) */
  int step_batches;    /* multi pipeline, lit frames: batches a secondary ray marches per step
                          (read here, so that a captured graph follows it) */
} ir_gpu_frame;

/* Counts of the multi-kernel loop, all on the device. Each stage reads its input count and
 * appends to its output count; the round's control kernel moves trav_out to trav_in and zeroes
 * the outputs (see gpu_pipeline.cu). */
typedef struct ir_gpu_counters {
  uint32_t pixels;    /* width * height, the raygen stage's input count (for Redzone's d_n) */
  uint32_t trav_in;   /* rays entering traversal this round */
  uint32_t isect;     /* rays entering intersection this round */
  uint32_t trav_out;  /* rays intersection sends back to traversal */
  uint32_t shade;     /* hits of this round */
  uint32_t k_trav;    /* Redzone: removal counts of the traversal and intersection stages */
  uint32_t k_isect_t;
  uint32_t k_isect_s;
  uint32_t round;
  uint32_t generated;
  uint32_t hits;
  uint32_t k_gen;
  uint32_t resize_errors; /* device-side grid updates the driver refused */
  uint32_t tail;          /* rays finished by the tail kernel (tail_rays option) */
  /* Lit multi frames: the secondary phase (walk_secondary.cu). The hits that end rays wait in
   * the hit records; their secondary rays run in chunks of whole hits, a chunk's rays numbered
   * k = (hit - sec_h0) * R + i. */
  uint32_t sec_hits;    /* hit records written by the primary rounds */
  uint32_t sec_h0;      /* the chunk in flight: its first hit */
  uint32_t sec_chunk;   /* and its hits */
  uint32_t sec_in;      /* rays entering the first step of the round */
  uint32_t sec_mid;     /* rays going on after it (the second step's input) */
  uint32_t sec_out;     /* rays going on after the second step */
  uint32_t sec_k1, sec_k2; /* Redzone: removal counts of the two steps */
  uint32_t sec_seed;    /* rays the seed kernel starts this round (a new chunk's) */
  uint32_t sec_combine; /* hits the combine kernel writes this round (a finished chunk's) */
  uint32_t sec_combine_h0; /* the first of them */
  uint32_t sec_rounds;  /* rounds of the secondary loop */
  uint32_t sec_rays;    /* secondary rays started */
  uint32_t sec_chunks;  /* chunks of hits started */
  uint32_t sec_more;    /* the loop goes on: its condition, as the host loop reads it */
  uint32_t sec_capped;  /* the loop was stopped at its bound with rays left (the frame fails) */
  uint32_t trav_hist[IR_MAX_ITERATIONS];
  uint32_t isect_hist[IR_MAX_ITERATIONS];
} ir_gpu_counters;

/* The persistent pipeline's counters (persistent.cu), two per renderer by frame parity. */
typedef struct ir_persist_counters {
  unsigned next_tile; /* the tile queue: tiles handed out */
  unsigned generated; /* rays that met the volume */
  unsigned hits;      /* rays that ended at a hit */
  unsigned rounds;    /* most steps a block took */
} ir_persist_counters;

/* ---- Stage outputs ----------------------------------------------------------------------------
 * How a kernel hands on the rays it keeps, by compaction method (docs/render.md has the table):
 *   INK_COMPACT / INK_COLLATE  emit into `list`, `count` inside the kernel
 *   FLAGS (Thrust, Jumping Jack) flags[pos] = keep; a compaction call follows the kernel
 *   REMOVE (Redzone)           the position of each ray that leaves is appended to `remove`
 *                              (`count` = k); ir_compact_remove_indices follows
 * `list`, when set for FLAGS/REMOVE, also receives a dense copy list[pos] = value (the list the
 * following call compacts or trims in place). */
enum { IR_OUT_INK_COMPACT = 0, IR_OUT_INK_COLLATE, IR_OUT_FLAGS, IR_OUT_REMOVE };

typedef struct ir_stage_out {
  int mode;
  uint32_t *list;
  uint32_t *count;
  uint8_t *flags;
  uint32_t *remove;
  ir_ink_sections sections;
} ir_stage_out;

/* Appends the positions of leaving rays with one atomic per warp. Whole warp, any mask. */
static __device__ __forceinline__ void ir_append_removal(bool leave, uint32_t pos, uint32_t *remove,
                                                         uint32_t *count) {
  unsigned mask = __ballot_sync(0xffffffffu, leave);
  if (!mask) return;
  unsigned lane = threadIdx.x & 31u, leader = (unsigned)__ffs((int)mask) - 1u;
  uint32_t base = 0;
  if (lane == leader) base = atomicAdd(count, (uint32_t)__popc(mask));
  base = __shfl_sync(0xffffffffu, base, (int)leader);
  if (leave) remove[base + (uint32_t)__popc(mask & ((1u << lane) - 1u))] = pos;
}

/* Whether a whole block of a stage kernel lies past the round's ray count and may leave at once:
 * not under InK-Compact, whose chain of sections needs every block of the grid to report. */
static __device__ __forceinline__ bool ir_block_past_count(uint32_t n, const ir_stage_out &o) {
  return blockIdx.x * blockDim.x >= n && o.mode != IR_OUT_INK_COMPACT;
}

/* Every thread of the block calls this once per output per launch (block-uniform); `active`
 * is false for threads beyond the input count. */
static __device__ __forceinline__ void ir_stage_emit(const ir_stage_out &o, bool active, bool keep,
                                                     uint32_t value, uint32_t pos) {
  switch (o.mode) {
  case IR_OUT_INK_COMPACT: ir_ink_compact_emit(active && keep, value, o.list, o.count, o.sections); break;
  case IR_OUT_INK_COLLATE: ir_ink_collate_emit(active && keep, value, o.list, o.count); break;
  case IR_OUT_FLAGS:
    if (active) {
      o.flags[pos] = keep ? 1 : 0;
      if (o.list) o.list[pos] = value;
    }
    break;
  default:
    if (active && o.list) o.list[pos] = value;
    ir_append_removal(active && !keep, pos, o.remove, o.count);
    break;
  }
}

#define IR_TIMELINE_EVENTS 1040
#define IR_RESIZE_SLOT 128
#define IR_GRAPH_SLOTS (2 * IR_COMPACT_METHOD_COUNT)
static inline int ir_graph_slot(bool paper, ir_compact_method m) { return (paper ? IR_COMPACT_METHOD_COUNT : 0) + (int)m; }

/* ---- The renderer's GPU state ----------------------------------------------------------------- */
struct ir_gpu_volumes; /* gpu_volume.cu: the slots' arrays, staging buffers, statistics */

struct ir_gpu_state {
  int device;
  cudaStream_t stream;
  cudaEvent_t ev_start, ev_stop, ev_a, ev_b;
  struct ir_gpu_volumes *volumes;
  cudaTextureObject_t tex;       /* the slot in use's: linear filtering, the march */
  cudaTextureObject_t tex_point; /* point reads of the same array: exact trilinear */
  cudaArray_t color_array;       /* ir_renderer_set_color_volume */
  cudaTextureObject_t color_tex;
  float *d_colormaps;            /* every colour map's table, IR_COLORMAP_SIZE RGB triples each */
  float4 *d_paint;               /* per ray slot: translucent frames' paint so far (ir_paint) */
  uint8_t *d_hit_surf;           /* per ray slot: the paper pipeline's hit surface */
  ir_brick_range *d_ranges;
  ir_brick_range *d_cell_ranges; /* the brick walk's finer cells (IR_WALK_CELLS) */
  unsigned ranges_version;       /* bumped whenever the ranges above change (ir_gpu_use_slot) */
  /* The walk's skip distances (skip.cuh) for the isovalues, cells and ranges below; sized for
   * the finer cells, the larger grid. Rebuilt only when one of them changes. */
  uint8_t *d_skip, *d_skip_tmp;
  bool skip_made;
  ir_iso_set skip_iso;
  int skip_cell;
  unsigned skip_ranges_version;
  bool skip_rebuilt;             /* for the frame being rendered */
  cudaEvent_t skip_ev[2];        /* around the last rebuild; */
  int skip_ev_created;
  bool skip_timed;               /* its time not read yet */
  double skip_ms;                /* the last rebuild's */
  ir_bvh_node *d_nodes;
  ir_gpu_frame *d_frame;
  ir_gpu_counters *d_counters;
  ir_gpu_counters *h_counters; /* pinned: read-backs */
  ir_compact_ctx *cctx;

  /* Per-pixel buffers, sized for `capacity` pixels; they grow and never shrink. */
  size_t capacity;
  uint32_t *d_image;
  float *d_depth;
  uint32_t *d_identity;      /* 0, 1, 2, ...: the raygen stage's input list for flag methods */
  uint32_t *d_list_t, *d_list_i, *d_list_s;
  uint8_t *d_flags_a, *d_flags_b;
  uint32_t *d_remove_a, *d_remove_b, *d_remove_c;
  uint2 *d_seg;              /* multi pipeline, per ray: the samples to march, or .x = where to resume */
  uint8_t *d_sp;             /* stack depth per ray */
  uint32_t *d_stack;         /* per ray: levels entries, entry i of ray r at i * capacity + r */
  float4 *d_hit;             /* per ray: t and the world normal of its hit */
  void *d_sections;          /* InK-Compact state of the four in-kernel stages */
  size_t sections_stride;    /* bytes per stage */

  /* Lit multi frames' secondary phase (walk_secondary.cu), allocated by the first such frame and
   * grown, never shrunk: a hit record per ray slot, and per secondary ray of a chunk its march
   * state, its light, two lists, flags and a removal list. */
  float4 *d_sec_hit;         /* IR_SEC_HIT_WORDS float4 per hit, word w of hit h at w * sec_hit_cap + h */
  size_t sec_hit_cap;        /* hits it holds */
  size_t sec_ray_cap;        /* secondary rays of one chunk */
  uint4 *d_sec_state;        /* per ray: ir_secondary_state (k, kb, sa, light) */
  float *d_sec_light;        /* per ray: its light once done */
  uint32_t *d_sec_list_a, *d_sec_list_b;
  uint8_t *d_sec_flags;
  uint32_t *d_sec_remove;
  void *d_sec_sections;      /* InK-Compact state of the two steps of a round */
  size_t sec_sections_stride;
  unsigned sec_generation;   /* bumped when the buffers move: graphs built before are rebuilt */

  /* Captured frames of the multi-kernel pipelines, one per pipeline (multi, paper) and method
   * (slot = ir_graph_slot), for the size they were built for. */
  cudaGraphExec_t graph[IR_GRAPH_SLOTS];
  int graph_width[IR_GRAPH_SLOTS], graph_height[IR_GRAPH_SLOTS];
  bool graph_sized[IR_GRAPH_SLOTS];  /* loop kernels resized on the device */
  bool graph_fixed[IR_GRAPH_SLOTS];  /* built for fixed_grids */
  uint32_t graph_tail[IR_GRAPH_SLOTS]; /* built for tail_rays */
  bool graph_failed[IR_GRAPH_SLOTS]; /* capture refused: host loop from then on */
  int graph_mode[IR_GRAPH_SLOTS];    /* built with the kernels of this trace mode (trace.cuh) */
  unsigned graph_sec[IR_GRAPH_SLOTS]; /* built on this sec_generation of the secondary buffers */
  bool last_graph; /* the last multi-kernel frame ran as a graph */
  void *d_resize; /* per slot, IR_RESIZE_SLOT bytes: the loop's device-updatable nodes */

  /* Events of the stage-timing pass (gpu_pipeline.cu): eight per round for 128 rounds. */
  cudaEvent_t timeline[IR_TIMELINE_EVENTS];
  int timeline_created;
  int mark_label[IR_TIMELINE_EVENTS], mark_round[IR_TIMELINE_EVENTS];

  int width, height; /* of the last frame */
  int trace_mode;    /* of the frame being rendered (trace.cuh), set by its parameters' upload */
  ir_persist_counters *d_persist; /* the persistent pipeline's, two (by frame parity) */
  ir_persist_counters *h_persist; /* pinned: read-backs */
  unsigned persist_epoch;         /* persistent frames rendered */
  unsigned persist_blocks[16];    /* per trace mode: resident blocks (0: not asked yet) */
  float4 *d_accum;                /* accumulated frames (ir_frame_desc.accumulate): RGBA sums */
  size_t accum_pixels;            /* its size in pixels */
  int accum_width, accum_height;  /* of the frames in it */
  uint32_t accum_count;           /* frames in it (0: none; the next accumulated frame starts it) */
  unsigned long long *d_phase_cycles; /* the persistent diagnostic pass's (IR_PERSIST_PHASES) */
};

/* ---- Launchers (each in the stage's own file) ---------------------------------------------- */
/* skip_map.cu: the walk's skip distances of cells[] cells from their ranges, into d_map (d_tmp:
 * as many bytes of scratch). */
cudaError_t ir_skip_map_launch(const ir_brick_range *d_ranges, const uint32_t cells[3], const ir_iso_set *iso,
                               uint8_t *d_map, uint8_t *d_tmp, cudaStream_t stream);
/* bvh_update.cu: one or two launches; the isovalue is read from the device frame. */
cudaError_t ir_bvh_update_launch(const ir_bvh_layout *L, const ir_brick_range *d_ranges, ir_bvh_node *d_nodes,
                                 const ir_gpu_frame *d_frame, cudaStream_t stream);

/* The per-ray buffers every stage kernel works on. */
typedef struct ir_ray_buffers {
  uint8_t *sp;
  uint32_t *stack;
  size_t stride; /* = capacity */
  float4 *hit;
  uint32_t *image;
  float *depth; /* per pixel: t of the (first) hit, INFINITY for background (ir_render_read_depth) */
  uint2 *seg; /* multi pipeline: per ray, the run of samples to march / where to resume */
  float4 *paint;    /* translucent frames, per pixel: the ray's paint so far (ir_paint) */
  uint8_t *hit_surf; /* paper pipeline, per ray: the surface of the hit in `hit` */
  float4 *sec_hit;   /* lit multi frames: the hit records (ir_gpu_state.d_sec_hit) */
  size_t sec_stride; /* = sec_hit_cap */
} ir_ray_buffers;

/* ---- The multi pipeline's secondary rays (walk_secondary.cu) ------------------------------------
 * Lit frames: the intersection and tail kernels do not light the hit that ends a ray; they write
 * a hit record (IR_SEC_HIT_WORDS float4: ir_light_setup, the base colour, the paint before the
 * hit, the pixel and surface) and its depth. After the primary rounds, rounds of two step
 * kernels march the hits' secondary rays, compacted by the frame's method, and a combine kernel
 * writes each hit's pixel (ir_light_combine). */
enum { IR_SEC_X = 0, /* x, ndl */
       IR_SEC_N,     /* n, s0 (bits) */
       IR_SEC_L,     /* l, s1 (bits) */
       IR_SEC_BASE,  /* base colour, spec */
       IR_SEC_PAINT, /* the paint before the hit */
       IR_SEC_PIXEL, /* pixel, surface, normal_ok (bits), unused */
       IR_SEC_HIT_WORDS };
/* Secondary rays per pixel of the frame that the buffers hold at most: a frame with more rays
 * per hit runs its hits in chunks (docs/render.md). */
#define IR_SEC_RAYS_PER_PIXEL 8

typedef struct ir_sec_buffers {
  const float4 *hit;
  size_t stride;
  uint4 *state;
  float *light;
  uint32_t *list_a; /* the seed kernel's output: a new chunk's rays */
  uint32_t ray_cap; /* rays per chunk at most */
} ir_sec_buffers;

/* The lit hit that ends a ray, set up for its secondary rays: record slot h of the frame. */
static __device__ __forceinline__ void ir_sec_store_hit(const ir_ray_buffers &b, uint32_t h, const ir_light_setup &L,
                                                        ir_vec3 base, const ir_paint &pt, uint32_t pixel, int surf) {
  const size_t s = b.sec_stride;
  b.sec_hit[IR_SEC_X * s + h] = make_float4(L.x.x, L.x.y, L.x.z, L.ndl);
  b.sec_hit[IR_SEC_N * s + h] = make_float4(L.n.x, L.n.y, L.n.z, __uint_as_float(L.s0));
  b.sec_hit[IR_SEC_L * s + h] = make_float4(L.l.x, L.l.y, L.l.z, __uint_as_float(L.s1));
  b.sec_hit[IR_SEC_BASE * s + h] = make_float4(base.x, base.y, base.z, L.spec);
  b.sec_hit[IR_SEC_PAINT * s + h] = make_float4(pt.r, pt.g, pt.b, pt.a);
  b.sec_hit[IR_SEC_PIXEL * s + h] =
      make_float4(__uint_as_float(pixel), __uint_as_float((uint32_t)surf), __uint_as_float(L.normal_ok ? 1u : 0u), 0.0f);
}

/* A hit record's setup as ir_light_ray and ir_light_combine read it. */
static __device__ __forceinline__ ir_light_setup ir_sec_load_setup(const float4 *hit, size_t s, uint32_t h) {
  const float4 x = hit[IR_SEC_X * s + h], n = hit[IR_SEC_N * s + h], l = hit[IR_SEC_L * s + h];
  ir_light_setup L;
  L.x = ir_v3(x.x, x.y, x.z);
  L.ndl = x.w;
  L.n = ir_v3(n.x, n.y, n.z);
  L.s0 = __float_as_uint(n.w);
  L.l = ir_v3(l.x, l.y, l.z);
  L.s1 = __float_as_uint(l.w);
  L.normal_ok = __float_as_uint(hit[IR_SEC_PIXEL * s + h].z) != 0u;
  L.spec = hit[IR_SEC_BASE * s + h].w;
  return L;
}

/* Translucent frames carry a ray's paint and its first hit's depth from kernel to kernel in
 * per-pixel buffers; opaque frames start every march from nothing and read no buffer. */
static __device__ __forceinline__ void ir_paint_load(const ir_trace_params &p, const ir_ray_buffers &b, uint32_t pixel,
                                                     ir_paint *pt, float *first_t) {
  pt->r = pt->g = pt->b = pt->a = 0.0f;
  *first_t = INFINITY;
  if (!p.translucent) return;
  float4 q = b.paint[pixel];
  pt->r = q.x;
  pt->g = q.y;
  pt->b = q.z;
  pt->a = q.w;
  *first_t = b.depth[pixel];
}

/* After a march that did not end the ray: keeps what its translucent hits added, and shows it at
 * once, so that a ray that meets nothing more needs no further write. */
static __device__ __forceinline__ void ir_paint_keep(const ir_ray_buffers &b, uint32_t pixel, const ir_paint &pt,
                                                     float alpha_before, float first_t) {
  if (pt.a == alpha_before) return;
  b.paint[pixel] = make_float4(pt.r, pt.g, pt.b, pt.a);
  b.image[pixel] = ir_paint_pixel(&pt);
  b.depth[pixel] = first_t;
}

/* Ray generation's part: an empty paint for every pixel of a translucent frame. */
static __device__ __forceinline__ void ir_paint_clear(const ir_trace_params &p, const ir_ray_buffers &b,
                                                      uint32_t pixel) {
  if (p.translucent) b.paint[pixel] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
}

/* raygen.cu: one thread per pixel; background into the image, stack = {root} for rays that
 * meet the volume, which go to `out`. Also writes counters->pixels. */
cudaError_t ir_raygen_launch(const ir_gpu_frame *d_frame, ir_ray_buffers b, ir_gpu_counters *counters,
                             ir_stage_out out, uint32_t pixels, cudaStream_t stream);
/* traverse.cu: rays in[0..*n) to a leaf (to `out`) or out of the volume (dropped). */
cudaError_t ir_traverse_launch(const ir_gpu_frame *d_frame, ir_ray_buffers b, const uint32_t *in, const uint32_t *n,
                               ir_stage_out out, unsigned grid, cudaStream_t stream, cudaLaunchAttribute *attr,
                               int attr_count);
/* intersect.cu: rays in[0..*n): hits (t and normal stored) to `to_shade`, rays with an inner
 * node on top of the stack to `to_traverse`, the rest dropped. */
cudaError_t ir_intersect_launch(const ir_gpu_frame *d_frame, ir_ray_buffers b, const uint32_t *in, const uint32_t *n,
                                ir_stage_out to_shade, ir_stage_out to_traverse, unsigned grid, int mode,
                                cudaStream_t stream, cudaLaunchAttribute *attr, int attr_count);
/* shade.cu: hits in[0..*n) into the image. */
cudaError_t ir_shade_launch(const ir_gpu_frame *d_frame, ir_ray_buffers b, const uint32_t *in, const uint32_t *n,
                            unsigned grid, cudaStream_t stream, cudaLaunchAttribute *attr, int attr_count);
/* tail_finish.cu: the rest of the loop for the rays in[0..counters->trav_in), in one kernel. */
cudaError_t ir_tail_finish_launch(const ir_gpu_frame *d_frame, ir_ray_buffers b, const uint32_t *in,
                                  ir_gpu_counters *counters, uint32_t max_rays, cudaStream_t stream);
/* single_kernel.cu: brick walk and march per pixel, in one kernel over tiled ray ids (the frame
 * by value, read from the kernel's parameters). */
cudaError_t ir_single_kernel_launch(const ir_gpu_frame &frame, uint32_t *image, float *depth, int width,
                                    int height, int mode, cudaStream_t stream);
/* plain_caster.cu: the plain macrocell DDA caster (benchmark baseline), 16x8 thread blocks. */
cudaError_t ir_plain_caster_launch(const ir_gpu_frame *d_frame, const ir_brick_range *d_ranges, uint32_t *image,
                                   float *depth, int width, int height, cudaStream_t stream);

/* The multi pipeline's stages (walk_*.cu). Its rays carry no stack: only seg, the run of
 * samples traversal found for intersection, or where traversal resumes (.x). */
/* walk_raygen.cu: one thread per tiled ray id; background into the image, rays that meet the
 * volume (and a valid brick exists) to `out` with seg.x = 0. Writes counters->pixels. */
cudaError_t ir_walk_raygen_launch(const ir_gpu_frame *d_frame, ir_ray_buffers b, ir_gpu_counters *counters,
                                  ir_stage_out out, uint32_t rays, cudaStream_t stream);
/* walk_traverse.cu: rays in[0..*n) walk the bricks to their next run (to `out`, seg = the run)
 * or out of the volume (dropped). */
cudaError_t ir_walk_traverse_launch(const ir_gpu_frame *d_frame, ir_ray_buffers b, const uint32_t *in,
                                    const uint32_t *n, ir_stage_out out, unsigned grid, cudaStream_t stream,
                                    cudaLaunchAttribute *attr, int attr_count);
/* walk_intersect.cu: rays in[0..*n) march their run; a hit is shaded into the image at once
 * (counted in counters->shade), a miss with volume left goes back to traversal (`to_traverse`). */
cudaError_t ir_walk_intersect_launch(const ir_gpu_frame *d_frame, ir_ray_buffers b, const uint32_t *in,
                                     const uint32_t *n, ir_gpu_counters *counters, ir_stage_out to_traverse,
                                     unsigned grid, int mode, cudaStream_t stream, cudaLaunchAttribute *attr,
                                     int attr_count);
/* walk_intersect.cu: the rest of the walk for rays in[0..counters->trav_in), in one kernel. */
cudaError_t ir_walk_tail_launch(const ir_gpu_frame *d_frame, ir_ray_buffers b, const uint32_t *in,
                                ir_gpu_counters *counters, uint32_t max_rays, int mode, cudaStream_t stream);

/* walk_secondary.cu (lit multi frames): the seed kernel starts the chunk's rays (list A, their
 * march state); a step kernel marches the rays in[0..*n) by up to frame->step_batches batches each
 * (ir_secondary_step), a ray that is done leaves its light, the others go on through `out`; the
 * combine kernel lights the finished chunk's hits and writes their pixels. Counts on the device. */
cudaError_t ir_walk_sec_seed_launch(ir_sec_buffers s, const ir_gpu_counters *counters, unsigned grid,
                                    cudaStream_t stream, cudaLaunchAttribute *attr, int attr_count);
cudaError_t ir_walk_sec_step_launch(const ir_gpu_frame *d_frame, ir_sec_buffers s, const uint32_t *in,
                                    const uint32_t *n, const ir_gpu_counters *counters, ir_stage_out out, unsigned grid, cudaStream_t stream, cudaLaunchAttribute *attr, int attr_count);
cudaError_t ir_walk_sec_combine_launch(const ir_gpu_frame *d_frame, ir_sec_buffers s, const ir_gpu_counters *counters,
                                       uint32_t *image, unsigned grid, cudaStream_t stream,
                                       cudaLaunchAttribute *attr, int attr_count);

/* persistent.cu: the persistent pipeline, one launch per frame (the frame by value). */
typedef struct ir_persist_args {
  uint32_t *image;
  float *depth;
  ir_persist_counters *counters; /* two, by frame parity: a frame zeroes the next one's */
  unsigned epoch;                /* the frame's number */
  unsigned tiles;                /* 8x8 pixel tiles of the window (ir_persist_tiles) */
  int step_batches;              /* batches a ray marches per step */
  ir_compact_method method;      /* how the blocks compact their pools */
  unsigned blocks;               /* resident blocks to launch (ir_persistent_blocks) */
  unsigned long long *phase_cycles; /* diagnostic pass: clock cycles of each phase summed over the
                                       blocks (IR_PERSIST_PHASES), with a barrier after every phase;
                                       NULL otherwise */
  int secondary;                 /* lit frames: how a block traces its secondary rays
                                    (ir_secondary_mode) */
} ir_persist_args;
/* The phases the diagnostic pass times: the step, the step's two compactions and the refill
 * claim, the shading, the generation and its compaction, and (lit frames, spread or pool) the
 * secondary rays of the hits. */
enum { IR_PHASE_STEP = 0, IR_PHASE_COMPACT, IR_PHASE_SHADE, IR_PHASE_GENERATE, IR_PHASE_SECONDARY,
       IR_PERSIST_PHASES };
uint32_t ir_persist_tiles(int width, int height);
/* The blocks of the kernel of trace mode `mode` that fit on the device at once. */
cudaError_t ir_persistent_blocks(int mode, unsigned *blocks);
cudaError_t ir_persistent_launch(const ir_gpu_frame &frame, const ir_persist_args &a, int mode, cudaStream_t stream);

/* gpu_volume.cu: the slots (slot 0 allocated for the renderer's dims and type, nothing loaded). */
ir_status ir_gpu_volumes_create(ir_renderer *r, char err[IR_ERR_LEN]);
void ir_gpu_volumes_destroy(struct ir_gpu_state *g);

/* gpu_renderer.cu: the secondary phase's buffers for `hits` hit records and chunks of `rays`
 * rays (grown, never shrunk; the graphs built on older ones are rebuilt). */
ir_status ir_gpu_sec_reserve(struct ir_gpu_state *g, size_t hits, size_t rays, char err[IR_ERR_LEN]);

/* gpu_pipeline.cu: one multi-kernel frame (graph or host-driven loop); fills the stage times
 * when `timed` (host loop with events between stages). */
ir_status ir_gpu_multi_frame(ir_renderer *r, const ir_frame_desc *f, bool host_loop, bool timed,
                             ir_frame_stats *stats, char err[IR_ERR_LEN]);
void ir_gpu_graphs_destroy(struct ir_gpu_state *g);

#endif
