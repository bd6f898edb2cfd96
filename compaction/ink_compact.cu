/* InK-Compact out of kernel (the paper's "OfK-Compact", InK §4): the order-preserving section
 * scheme of InK §2.3 wrapped in one kernel over tiles.
 *
 * Stage 1: each block compacts its tile in shared memory (InK §2.1-2.2 offsets) and writes the
 * survivors to the intermediate buffer at tile * TILE. Stage 2: it counts itself into its
 * section; the block that completes the section (the section controller) scans the 32 tile
 * counts with bit-plane ballots. Stage 3: the controller waits for the previous section's flag
 * (chained) or sums its predecessors' totals (look-back, an extra). Stage 4: it publishes its
 * offset and moves the section's survivors to the output.
 *
 * Departures from the paper: a block takes a tile of IR_INK_THREADS * ITEMS elements instead of
 * one per thread. With one element per thread, a 2^27 stream is 4096 sections of 1024-thread
 * blocks and the serial chain of section flags (one L2 round trip per hop) dominates; tiles of up
 * to 8K elements cut the chain to a few hundred hops. ITEMS is picked per call from n (below),
 * or fixed by the INKRAY_INK_ITEMS environment variable (4, 8 or 16; read once, for tuning
 * runs).
 */
#include <stdlib.h>

#include "compaction/tile.cuh"

/* Chained sections: aim for at most this many sections (hops of the flag chain). */
#define IR_INK_TARGET_SECTIONS 128u
/* 16 warps: the section controller is one block, and its move (stage 4) of 32 tiles' survivors
 * wants many threads; 4096-8192-element tiles keep the chain short. */
#define IR_INK_THREADS 512

template <int ITEMS>
__global__ void __launch_bounds__(IR_INK_THREADS)
    ink_compact_tiles(ir_select sel, size_t n_max, const uint32_t *d_n, bool vec, uint32_t *__restrict__ out,
                      uint32_t *count, ir_ink_sections s) {
  constexpr unsigned TILE = IR_INK_THREADS * ITEMS;
  __shared__ uint32_t staged[TILE];
  __shared__ unsigned warp_scan[33];
  __shared__ unsigned block_offsets[IR_INK_SECTION_BLOCKS + 1];
  __shared__ unsigned chunk_offsets[IR_INK_SECTION_BLOCKS + 1];
  __shared__ unsigned section_base;
  __shared__ bool is_controller;
  const size_t n = ir_device_n(n_max, d_n);
  const size_t tile_start = (size_t)blockIdx.x * TILE;

  /* Stage 1: tiles past a device-side n take part with a count of 0 (the sections need them). */
  unsigned total = 0;
  if (tile_start < n) {
    uint32_t v[ITEMS];
    const uint32_t mask = ir_tile_load<ITEMS>(sel, tile_start, n, vec, v);
    unsigned offset;
    total = ir_tile_offset<ITEMS>(mask, warp_scan, &offset);
    ir_tile_stage<ITEMS>(mask, v, offset, staged);
    __syncthreads();
    uint32_t *dst = s.staged + (size_t)blockIdx.x * TILE;
    for (unsigned i = threadIdx.x; i < total; i += IR_INK_THREADS) dst[i] = staged[i];
  }

  /* Stage 2: count the tile in; the last tile of the section to arrive is its controller. */
  const unsigned sec = blockIdx.x / IR_INK_SECTION_BLOCKS;
  const unsigned first = sec * IR_INK_SECTION_BLOCKS;
  const unsigned blocks_in_sec = min(IR_INK_SECTION_BLOCKS, gridDim.x - first);
  __syncthreads();
  if (threadIdx.x == 0) {
    s.block_counts[blockIdx.x] = total;
    __threadfence(); /* staged data and count visible before the arrival is */
    is_controller = atomicAdd(&s.arrivals[sec], 1u) == blocks_in_sec - 1;
  }
  __syncthreads();
  if (!is_controller) return;
  __threadfence();

  /* Stages 2-4 for the controller: tile counts <= TILE need log2(TILE) + 1 bit planes. */
  if (threadIdx.x < 32) {
    const unsigned base = ir_ink_section_controller(s, sec, blocks_in_sec, ir_log2<TILE>::value + 1,
                                                    block_offsets, chunk_offsets, count);
    if (threadIdx.x == 0) section_base = base;
  }
  __syncthreads();
  ir_ink_section_move(s.staged, TILE, first, block_offsets, chunk_offsets, section_base, out);
}

static const int ink_items_options[] = {4, 8, 16};

/* Scratch for both users of ctx->sections: these tiles, and the in-kernel producer (one element
 * per thread, blocks of 256 or 1024 threads). */
extern "C" size_t ir_ink_compact_scratch_bytes(size_t capacity) {
  size_t bytes = ir_ink_sections_bytes(ir_tile_count(capacity, 256), 256);
  if (ir_ink_sections_bytes(ir_tile_count(capacity, 1024), 1024) > bytes)
    bytes = ir_ink_sections_bytes(ir_tile_count(capacity, 1024), 1024);
  for (int items : ink_items_options) {
    const unsigned tile = IR_INK_THREADS * items;
    const size_t need = ir_ink_sections_bytes(ir_tile_count(capacity, tile), tile);
    if (need > bytes) bytes = need;
  }
  return bytes;
}

static int pick_items(size_t n, int mode) {
  static int forced = -1;
  if (forced < 0) {
    const char *env = getenv("INKRAY_INK_ITEMS");
    const int value = env ? atoi(env) : 0;
    forced = (value == 4 || value == 8 || value == 16) ? value : 0;
  }
  if (forced) return forced;
  if (mode == IR_INK_SECTIONS_LOOKBACK) return 8;
  for (int items : ink_items_options)
    if ((n + (size_t)IR_INK_SECTION_BLOCKS * IR_INK_THREADS * items - 1) /
            ((size_t)IR_INK_SECTION_BLOCKS * IR_INK_THREADS * items) <=
        IR_INK_TARGET_SECTIONS)
      return items;
  return 16;
}

template <int ITEMS>
static cudaError_t launch(ir_compact_ctx *ctx, const ir_compact_job *job, int mode) {
  constexpr unsigned TILE = IR_INK_THREADS * ITEMS;
  const ir_select sel = ir_select_from_job(job);
  const unsigned tiles = ir_tile_count(job->n, TILE);
  const ir_ink_sections s = ir_ink_sections_bind_mode(ctx->sections, tiles, TILE, (ir_ink_section_mode)mode);
  IR_CUDA_TRY(ctx, ir_ink_sections_reset(&s, job->stream));
  ink_compact_tiles<ITEMS><<<tiles, IR_INK_THREADS, 0, job->stream>>>(
      sel, job->n, job->d_n, ir_select_vectorizable(&sel), job->out, job->count, s);
  IR_LAUNCH_TRY(ctx, "ink_compact_tiles");
  return cudaSuccess;
}

extern "C" cudaError_t ir_ink_compact_run(ir_compact_ctx *ctx, const ir_compact_job *job, int mode) {
  switch (pick_items(job->n, mode)) {
  case 4: return launch<4>(ctx, job, mode);
  case 8: return launch<8>(ctx, job, mode);
  default: return launch<16>(ctx, job, mode);
  }
}
