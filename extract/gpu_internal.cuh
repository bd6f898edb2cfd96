/* GPU internals of the extract module (CUDA only): the extractor's device state, the counters the
 * kernels leave for the host, typed voxel loads, the launchers of each stage, and the checking
 * macro every CUDA call goes through.
 *
 * Stages of one surface (gpu_extract.cu drives them, docs/extract.md explains them):
 *   bricks     one thread per brick: value range and clip test; the active bricks are compacted
 *              by the chosen method (classify.cu)
 *   classify   one block per active brick, its voxels as bit rows: which edges carry a vertex and
 *              how many triangles each cell has; writes the brick's edge and cell tables, counts
 *              and slot, and (methods other than InK-Compact) hands on its candidate points (grid
 *              points with a vertex edge) and candidate cells (cells with triangles) (classify.cu)
 *   scan       the per-brick counts summed in brick order: the first vertex and triangle of
 *              every brick, the same for every method (gpu_extract.cu, CUB)
 *   generate   InK-Compact: one block per active brick, its voxels in shared memory, its vertex
 *              edges and triangles listed there from the tables; the others: one thread per
 *              candidate point (its 1-3 vertices) and one per candidate cell (its 1-5 triangles);
 *              numbers from the tables (generate.cu)
 */
#ifndef INKRAY_EXTRACT_GPU_INTERNAL_CUH
#define INKRAY_EXTRACT_GPU_INTERNAL_CUH

#include <cuda_runtime.h>

#include "compaction/compaction_device.cuh"
#include "extract/extract_internal.h"

/* Records "what failed where" in err and returns IR_ERR_RUNTIME. */
ir_status ir_gx_cuda_fail(char err[IR_ERR_LEN], cudaError_t e, const char *call, const char *file, int line);
#define IR_GX_CUDA(call)                                                                     \
  do {                                                                                       \
    cudaError_t ir_e_ = (call);                                                              \
    if (ir_e_ != cudaSuccess) return ir_gx_cuda_fail(err, ir_e_, #call, __FILE__, __LINE__); \
  } while (0)

/* Block sizes. The brick test is one thread per brick; 256 keeps the look-back tiles of the
 * InK-Compact emit short. Classification: 512 threads own a brick's 4096 points, 8 each (the
 * emits take them as 8 items per thread, item j of thread t = point t + 512 j, so the candidates
 * leave in point order), and its 512 nibble words, one each. Generation: one thread per
 * candidate, 256 a block; or one block of 256 per brick. */
#define IR_GX_BRICK_THREADS 256
#define IR_GX_CLASSIFY_THREADS 512
#define IR_GX_POINTS_PER_THREAD (IR_MC_BRICK_POINTS / IR_GX_CLASSIFY_THREADS)
#define IR_GX_GENERATE_THREADS 256
#define IR_GX_RANGE_THREADS 256
IR_ASSERT_BLOCK_THREADS(IR_GX_BRICK_THREADS);
IR_ASSERT_BLOCK_THREADS(IR_GX_CLASSIFY_THREADS);
IR_ASSERT_BLOCK_THREADS(IR_GX_GENERATE_THREADS);
static_assert(IR_GX_POINTS_PER_THREAD * IR_GX_CLASSIFY_THREADS == IR_MC_BRICK_POINTS, "whole bricks");
/* Classification sees the brick's points -1 .. 16 along each axis: its own 16, the next one
 * (ends of its edges, corners of its cells) and, on the exact path, the one before (cells below
 * its edges). */
#define IR_GX_HALO 18
/* Candidates are numbered slot * 4096 + local point, so 32-bit values hold 2^20 active bricks. */
#define IR_GX_MAX_ACTIVE_BRICKS ((size_t)1 << 20)

/* How a stage hands on what it keeps, by compaction method (the renderer's stages do the same):
 * in-kernel emits for InK-Compact and InK-Collate, flags and a flagged call for Thrust and
 * Jumping Jack, a dense stream and a removal list for Redzone. */
enum { IR_GX_INK_COMPACT = 0, IR_GX_INK_COLLATE, IR_GX_FLAGS, IR_GX_REMOVE };
static inline int ir_gx_mode(ir_compact_method m) {
  if (m == IR_COMPACT_INK_COMPACT) return IR_GX_INK_COMPACT;
  if (m == IR_COMPACT_INK_COLLATE) return IR_GX_INK_COLLATE;
  return ir_compact_method_get(m)->in_place ? IR_GX_REMOVE : IR_GX_FLAGS;
}

/* Counts the kernels leave on the device; the host reads them twice per surface (InK-Compact once,
 * in the steady state: count_surface in gpu_extract.cu). */
typedef struct ir_gx_counters {
  uint32_t active;       /* active bricks */
  uint32_t points;       /* candidate points */
  uint32_t cells;        /* candidate cells */
  uint32_t k_bricks;     /* Redzone: inactive bricks listed for removal */
  uint32_t k_points, k_cells;
  uint32_t n_bricks;     /* Redzone's device-side stream lengths */
  uint32_t n_candidates;
  unsigned long long vertices;  /* of this surface */
  unsigned long long triangles;
} ir_gx_counters;

/* One stage output: where its kept elements go in the method's form. */
typedef struct ir_gx_out {
  int mode;
  uint32_t *list;        /* INK_*: the compacted list; REMOVE: the dense stream */
  uint32_t *count;       /* INK_*: kept count; REMOVE: removal count k */
  uint8_t *flags;        /* FLAGS */
  uint32_t *remove;      /* REMOVE: the removal list */
  ir_ink_scan scan;      /* INK_COMPACT */
} ir_gx_out;

/* A brick's tables, by slot (position in the active list). */
typedef struct ir_gx_tables {
  uint2 *edges;               /* slot * 384 words: {mask, vertices in earlier words} */
  uint4 *cell_nibbles;        /* slot * 128 groups: triangle counts of 32 cells, 4 bits each */
  uint32_t *cell_prefix;      /* slot * 128 groups: triangles in earlier groups */
  unsigned long long *vcount; /* per brick (zero for inactive ones) */
  unsigned long long *tcount;
  unsigned long long *vbase;  /* per brick: first vertex and triangle within the surface */
  unsigned long long *tbase;
  const uint32_t *active;     /* slot -> brick */
  uint32_t *slot_of;          /* brick -> slot (active bricks only) */
} ir_gx_tables;

struct ir_gpu_extract {
  int device;
  cudaStream_t stream;
  cudaEvent_t ev[6];
  ir_compact_ctx *cctx;
  uint64_t *d_cases;
  ir_gx_counters *d_counters, *h_counters; /* h_: pinned */

  /* The grid. */
  void *d_voxels_owned;
  size_t voxels_cap;
  const void *d_voxels;
  void *d_color_owned;
  size_t color_cap;
  const void *d_color;
  int color_type;
  float *d_colormap;
  size_t colormap_cap;         /* floats */

  /* Per brick (grow with the brick count). */
  size_t brick_cap;
  ir_mc_range *d_ranges;
  uint32_t *d_brick_ids;       /* 0, 1, 2, ...: the flagged methods' input */
  uint8_t *d_brick_flags;
  uint32_t *d_active;
  uint32_t *d_brick_remove;
  uint32_t *d_slot_of;
  unsigned long long *d_counts; /* vcount, tcount, vbase, tbase: 4 arrays of brick_cap */
  void *d_brick_scan;           /* InK-Compact look-back state of the brick test */
  void *d_cub_temp;
  size_t cub_temp_bytes;
  int *d_nonfinite;

  /* Per active brick (grow with the active count). */
  size_t slot_cap;
  size_t last_active;                  /* of the last surface: InK-Compact's grid before the count */
  uint2 *d_edge_table;
  uint4 *d_cell_nibbles;
  uint32_t *d_cell_prefix;
  uint32_t *d_points, *d_cells;        /* candidate lists (Redzone: dense streams trimmed in place) */
  uint8_t *d_point_flags, *d_cell_flags;
  uint32_t *d_identity;                /* 0, 1, 2, ...: input of the flagged candidate streams */
  uint32_t *d_point_remove, *d_cell_remove;

  /* The mesh (grows with the counts, never shrinks). */
  size_t vertex_cap, triangle_cap;
  bool mesh_colors;             /* the colour buffer exists for vertex_cap vertices */
  float *d_positions, *d_normals, *d_values;
  uint32_t *d_colors, *d_triangles;
};

/* ---- Typed voxel loads through the read-only cache ---------------------------------------------- */
template <int TYPE>
static __device__ __forceinline__ float ir_gx_load(const void *__restrict__ voxels, size_t i) {
  if (TYPE == IR_VOXEL_UINT8) return (float)__ldg((const uint8_t *)voxels + i);
  if (TYPE == IR_VOXEL_UINT16) return (float)__ldg((const uint16_t *)voxels + i);
  if (TYPE == IR_VOXEL_INT16) return (float)__ldg((const int16_t *)voxels + i);
  return __ldg((const float *)voxels + i);
}

static __device__ __forceinline__ void ir_gx_brick_origin(const ir_mc_grid &g, uint32_t brick, uint32_t o[3]) {
  o[0] = brick % g.bricks[0] * IR_MC_BRICK;
  o[1] = brick / g.bricks[0] % g.bricks[1] * IR_MC_BRICK;
  o[2] = brick / g.bricks[0] / g.bricks[1] * IR_MC_BRICK;
}

/* ---- Stage launchers ------------------------------------------------------------------------------ */
/* Brick value ranges and the non-finite flag of the grid (brick_ranges.cu). */
cudaError_t ir_gx_launch_ranges(const ir_mc_grid &g, const void *voxels, ir_mc_range *ranges, int *nonfinite,
                                cudaStream_t stream);
/* The brick test (classify.cu); zeroes the counts of the inactive bricks in t. */
cudaError_t ir_gx_launch_bricks(const ir_mc_grid &g, const ir_mc_rules &r, float iso, const ir_mc_range *ranges,
                                size_t bricks, const ir_gx_out &out, const ir_gx_tables &t, cudaStream_t stream);
/* Classification of the active bricks on a grid of `grid` blocks (classify.cu). active_count NULL:
 * grid is the active count; else the count on the device, and the launch does nothing unless all
 * active bricks have a block (a launch made before the host knew the count). */
cudaError_t ir_gx_launch_classify(const ir_mc_grid &g, const ir_mc_rules &r, float iso, const void *voxels,
                                  const uint64_t *cases, const ir_gx_tables &t, uint32_t grid,
                                  const uint32_t *active_count, const ir_gx_out &points, const ir_gx_out &cells,
                                  cudaStream_t stream);

/* What the generation kernels write (generate.cu). */
typedef struct ir_gx_mesh_out {
  float *positions, *normals, *values;
  uint32_t *colors;            /* NULL: no colours */
  uint32_t *triangles;
  uint32_t vertex_offset;      /* first vertex and triangle of this surface in the mesh */
  uint32_t triangle_offset;
  int surface;
  ir_extract_values values_from;
  ir_extract_colors colors_from;
  uint32_t surface_rgba;
  const float *colormap;
  int colormap_size;
  float color_range[2];
  const void *color_voxels;
  int color_type;
  bool axes_zyx, flip_winding; /* ir_extract_desc's */
} ir_gx_mesh_out;

/* A generation launched before the host knew the counts: the counters on the device, and the
 * vertices and triangles the mesh buffers hold beyond the surfaces before this one. The launch
 * does nothing unless every active brick has a block and the surface fits. counters NULL: the
 * launch is sized exactly. */
typedef struct ir_gx_spec {
  const ir_gx_counters *counters;
  unsigned long long room_vertices, room_triangles;
} ir_gx_spec;

/* InK-Compact: one block per active brick writes its vertices and triangles, on a grid of `grid`
 * blocks. */
cudaError_t ir_gx_launch_bricks_generate(const ir_mc_grid &g, float iso, const void *voxels, const uint64_t *cases,
                                         const ir_gx_tables &t, uint32_t grid, const ir_gx_mesh_out &m,
                                         const ir_gx_spec &spec, cudaStream_t stream);
/* The other methods: one thread per candidate point, one per candidate cell. */
cudaError_t ir_gx_launch_vertices(const ir_mc_grid &g, float iso, const void *voxels, const ir_gx_tables &t,
                                  const uint32_t *points, uint32_t count, const ir_gx_mesh_out &m,
                                  cudaStream_t stream);
cudaError_t ir_gx_launch_triangles(const ir_mc_grid &g, float iso, const void *voxels, const uint64_t *cases,
                                   const ir_gx_tables &t, const uint32_t *cells, uint32_t count,
                                   const ir_gx_mesh_out &m, cudaStream_t stream);

/* Appends `value` to a removal list with one atomic per warp (Redzone's input, as the renderer's
 * stages build theirs). Whole warp, every lane calls. */
static __device__ __forceinline__ void ir_gx_append_removal(bool remove, uint32_t value, uint32_t *list,
                                                            uint32_t *count) {
  unsigned mask = __ballot_sync(0xffffffffu, remove);
  if (!mask) return;
  unsigned lane = threadIdx.x & 31u, leader = (unsigned)__ffs((int)mask) - 1u;
  uint32_t base = 0;
  if (lane == leader) base = atomicAdd(count, (uint32_t)__popc(mask));
  base = __shfl_sync(0xffffffffu, base, (int)leader);
  if (remove) list[base + (uint32_t)__popc(mask & ((1u << lane) - 1u))] = value;
}

#endif
