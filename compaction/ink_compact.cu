/* InK-Compact out of kernel (the paper's "OfK-Compact", InK §4): order-preserving compaction in
 * one kernel over tiles, in two forms.
 *
 * The method (ink_compact_tiles): each block takes a tile of IR_TILE_THREADS * ITEMS elements,
 * compacts it in shared memory with the InK §2.1-2.2 block scan, learns the tile's output offset
 * by decoupled look-back over the tiles before it (compaction_device.cuh, ir_ink_scan_tile) and
 * writes its survivors straight to their place as one coalesced run: 5n + 4k bytes, one pass, as
 * CUB's DeviceSelect does, and as InK-Collate does with an atomic instead of the look-back.
 *
 * The paper's section protocol (ink_compact_section_tiles, the "ink-compact-sections"
 * reference, kept for the reproduction): stage 1 compacts the tile and writes its survivors to
 * the intermediate buffer at tile * TILE; stage 2 counts the tile into its 32-tile section, and
 * the tile that completes the section (the controller) scans the 32 tile counts; stage 3 waits
 * for the previous section's flag; stage 4 publishes the section's offset and moves its
 * survivors to the output (ir_ink_section_arrive / ir_ink_section_finish, shared with the
 * in-kernel emit). 5n + 12k bytes: the intermediate buffer is written and read back.
 *
 * No scheduling assumption: both kernels take their tile index from a ticket (an atomic counter)
 * rather than from blockIdx.x, so a tile only ever waits for tiles whose blocks have started.
 *
 * Departures from the paper: a block takes a tile of several elements per thread instead of
 * one; with one element per thread a 2^27 stream is 4096 chained sections. For the sections,
 * ITEMS is picked from n (aiming at <= 128 sections), or fixed by the INKRAY_INK_ITEMS
 * environment variable (4, 8 or 16; read once, for tuning runs).
 */
#include <stdlib.h>

#include "compaction/tile.cuh"

/* Look-back tiles of 4096 elements at every size: each tile's look-back waits for all earlier
 * tiles to have counted themselves, so fewer tiles mean fewer waits; at 2^20, 4096-element tiles
 * beat 1024-element ones (11.2 against 15.2 us on the H100, docs/PERFORMANCE.md). */
#define IR_INK_LB_ITEMS 16
/* Chained sections: aim for at most this many sections (hops of the flag chain). */
#define IR_INK_TARGET_SECTIONS 128u
/* 16 warps: the section controller is one block, and its move (stage 4) of 32 tiles' survivors
 * wants many threads; 4096-8192-element tiles keep the chain short. */
#define IR_INK_THREADS 512
IR_ASSERT_BLOCK_THREADS(IR_INK_THREADS);

template <int ITEMS>
__global__ void __launch_bounds__(IR_TILE_THREADS)
    ink_compact_tiles(ir_select sel, size_t n_max, const uint32_t *d_n, bool vec, uint32_t *__restrict__ out,
                      uint32_t *count, ir_ink_scan scan) {
  constexpr unsigned TILE = IR_TILE_THREADS * ITEMS;
  __shared__ uint32_t staged[TILE];
  __shared__ unsigned warp_scan[33];
  __shared__ unsigned tile_base;
  const unsigned tile = ir_ink_scan_ticket(scan);
  const size_t n = ir_device_n(n_max, d_n);
  const size_t tile_start = (size_t)tile * TILE;
  /* tiles past a device-side n take part with a count of 0 (their successors look back on them) */
  uint32_t v[ITEMS];
  const uint32_t mask = tile_start < n ? ir_tile_load<ITEMS>(sel, tile_start, n, vec, v) : 0u;
  unsigned offset;
  const unsigned total = ir_tile_offset<ITEMS>(mask, warp_scan, &offset);
  if (threadIdx.x < 32) {
    const unsigned base = ir_ink_scan_tile(scan, tile, total);
    if (threadIdx.x == 0) {
      tile_base = base;
      if (tile == gridDim.x - 1) *count = base + total;
    }
  }
  ir_tile_stage<ITEMS>(mask, v, offset, staged); /* the other warps stage while warp 0 looks back */
  __syncthreads();
  uint32_t *dst = out + tile_base;
  for (unsigned i = threadIdx.x; i < total; i += IR_TILE_THREADS) dst[i] = staged[i];
}

template <int ITEMS>
__global__ void __launch_bounds__(IR_INK_THREADS)
    ink_compact_section_tiles(ir_select sel, size_t n_max, const uint32_t *d_n, bool vec,
                              uint32_t *__restrict__ out, uint32_t *count, ir_ink_sections s, ir_ink_scan tickets) {
  constexpr unsigned TILE = IR_INK_THREADS * ITEMS;
  __shared__ uint32_t staged[TILE];
  __shared__ unsigned warp_scan[33];
  const unsigned tile = ir_ink_scan_ticket(tickets);
  const size_t n = ir_device_n(n_max, d_n);
  const size_t tile_start = (size_t)tile * TILE;

  /* Stage 1: tiles past a device-side n take part with a count of 0 (the sections need them). */
  unsigned total = 0;
  if (tile_start < n) {
    uint32_t v[ITEMS];
    const uint32_t mask = ir_tile_load<ITEMS>(sel, tile_start, n, vec, v);
    unsigned offset;
    total = ir_tile_offset<ITEMS>(mask, warp_scan, &offset);
    ir_tile_stage<ITEMS>(mask, v, offset, staged);
    __syncthreads();
    uint32_t *dst = s.staged + (size_t)tile * TILE;
    for (unsigned i = threadIdx.x; i < total; i += IR_INK_THREADS) dst[i] = staged[i];
  }
  /* Stages 2-4; tile counts <= TILE need log2(TILE) + 1 bit planes. */
  if (!ir_ink_section_arrive(s, tile, gridDim.x, total)) return;
  ir_ink_section_finish(s, tile, gridDim.x, TILE, ir_log2<TILE>::value + 1, out, count);
}

static const int section_items_options[] = {4, 8, 16};

/* Scratch (ctx->sections) for the section forms: these tiles, and the in-kernel producer (one
 * element per thread, blocks of 256 or 1024 threads). */
extern "C" size_t ir_ink_compact_scratch_bytes(size_t capacity) {
  size_t bytes = ir_ink_sections_bytes(ir_tile_count(capacity, 256), 256);
  if (ir_ink_sections_bytes(ir_tile_count(capacity, 1024), 1024) > bytes)
    bytes = ir_ink_sections_bytes(ir_tile_count(capacity, 1024), 1024);
  for (int items : section_items_options) {
    const unsigned tile = IR_INK_THREADS * items;
    const size_t need = ir_ink_sections_bytes(ir_tile_count(capacity, tile), tile);
    if (need > bytes) bytes = need;
  }
  return bytes;
}

/* Look-back state (ctx->scan): one word per tile of the smallest tiles in use, the in-kernel
 * producers' 256-element blocks. */
extern "C" size_t ir_ink_scan_scratch_bytes(size_t capacity) { return ir_ink_scan_bytes(ir_tile_count(capacity, 256) + 1); }

/* INKRAY_INK_ITEMS (4, 8 or 16) fixes the tile size of both forms, for tuning runs; read once. */
static int forced_items(void) {
  static int forced = -1;
  if (forced < 0) {
    const char *env = getenv("INKRAY_INK_ITEMS");
    const int value = env ? atoi(env) : 0;
    forced = (value == 4 || value == 8 || value == 16) ? value : 0;
  }
  return forced;
}

static int pick_section_items(size_t n) {
  if (forced_items()) return forced_items();
  for (int items : section_items_options)
    if ((n + (size_t)IR_INK_SECTION_BLOCKS * IR_INK_THREADS * items - 1) /
            ((size_t)IR_INK_SECTION_BLOCKS * IR_INK_THREADS * items) <=
        IR_INK_TARGET_SECTIONS)
      return items;
  return 16;
}

/* The context's look-back state, bound for its capacity. */
ir_ink_scan ir_ink_scan_of_ctx(ir_compact_ctx *ctx) {
  return ir_ink_scan_bind(ctx->scan, (unsigned)((ctx->scan_bytes - 256) / sizeof(unsigned long long)));
}

static ir_ink_scan scan_of(ir_compact_ctx *ctx) { return ir_ink_scan_of_ctx(ctx); }

template <int ITEMS>
static cudaError_t launch_lookback(ir_compact_ctx *ctx, const ir_compact_job *job) {
  const ir_select sel = ir_select_from_job(job);
  const unsigned tiles = ir_tile_count(job->n, IR_TILE_THREADS * ITEMS);
  const ir_ink_scan scan = scan_of(ctx);
  IR_CUDA_TRY(ctx, ir_ink_scan_reset(&scan, tiles, job->stream));
  ink_compact_tiles<ITEMS><<<tiles, IR_TILE_THREADS, 0, job->stream>>>(sel, job->n, job->d_n,
                                                                       ir_select_vectorizable(&sel), job->out,
                                                                       job->count, scan);
  IR_LAUNCH_TRY(ctx, "ink_compact_tiles");
  return cudaSuccess;
}

extern "C" cudaError_t ir_ink_compact_run(ir_compact_ctx *ctx, const ir_compact_job *job) {
  switch (forced_items()) {
  case 4: return launch_lookback<4>(ctx, job);
  case 8: return launch_lookback<8>(ctx, job);
  case 16: return launch_lookback<16>(ctx, job);
  default: break;
  }
  return launch_lookback<IR_INK_LB_ITEMS>(ctx, job);
}

template <int ITEMS>
static cudaError_t launch_sections(ir_compact_ctx *ctx, const ir_compact_job *job) {
  constexpr unsigned TILE = IR_INK_THREADS * ITEMS;
  const ir_select sel = ir_select_from_job(job);
  const unsigned tiles = ir_tile_count(job->n, TILE);
  const ir_ink_sections s = ir_ink_sections_bind(ctx->sections, tiles, TILE);
  const ir_ink_scan tickets = scan_of(ctx); /* only its ticket counter is used */
  IR_CUDA_TRY(ctx, ir_ink_sections_reset(&s, job->stream));
  IR_CUDA_TRY(ctx, ir_ink_scan_reset(&tickets, 0, job->stream));
  ink_compact_section_tiles<ITEMS><<<tiles, IR_INK_THREADS, 0, job->stream>>>(
      sel, job->n, job->d_n, ir_select_vectorizable(&sel), job->out, job->count, s, tickets);
  IR_LAUNCH_TRY(ctx, "ink_compact_section_tiles");
  return cudaSuccess;
}

extern "C" cudaError_t ir_ink_compact_sections_run(ir_compact_ctx *ctx, const ir_compact_job *job) {
  switch (pick_section_items(job->n)) {
  case 4: return launch_sections<4>(ctx, job);
  case 8: return launch_sections<8>(ctx, job);
  default: return launch_sections<16>(ctx, job);
  }
}
