/* inkray in-kernel compaction: InK-Compact and InK-Collate as device functions (CUDA only).
 *
 * Hughes, Lim, Jones, Knoll, Spencer, "InK-Compact: In-Kernel Stream Compaction and Its
 * Application to Multi-Kernel Data Visualization on General-Purpose GPUs", CGF 2013, section 2.
 * A producing kernel calls an emit at its end and its survivors land, compacted, in `out`:
 *
 *   ir_ink_collate_emit(keep, value, out, out_count);            // InK §2.4: order kept within a block
 *   ir_ink_compact_emit(keep, value, out, out_count, scan);      // order == input order, per-block look-back
 *   ir_ink_compact_emit(keep, value, out, out_count, sections);  // order == input order, InK §2.1-2.3 sections
 *   ir_ink_compact_emit_items<N>(keep[N], value[N], tile, out, out_count, scan);  // N elements per thread
 *
 * The look-back form (ir_ink_scan) is the fast one: every block publishes its count in a status
 * word, learns its output offset from its predecessors' words (decoupled look-back, Merrill &
 * Garland 2016, as single-pass scans do) and writes its survivors straight to their place. The
 * section form (ir_ink_sections) is the paper's protocol, kept for the reproduction: blocks stage
 * their survivors in an intermediate buffer and the last block of each 32-block section moves
 * them once the previous section's flag is set.
 *
 * Contract of every emit (all device calls are block-uniform):
 *   - every thread of the block calls once per launch (pass keep=false for threads, or whole
 *     blocks, with nothing to keep, e.g. beyond a device-side count);
 *   - 1-D blocks, blockDim.x a multiple of 32 and at most 1024 (the warp-level scans index one
 *     word per warp of a 32-word array; IR_ASSERT_BLOCK_THREADS checks block-size constants at
 *     compile time); 1-D grid;
 *   - InK-Collate: the caller zeroes *out_count before the launch (one cudaMemsetAsync). The
 *     InK-Compact forms write *out_count themselves (the last block, or the last section);
 *   - the state (scan or sections) was bound for at least gridDim.x blocks (and, for sections,
 *     blocks of at least blockDim.x threads) and reset before the launch. A kernel may emit
 *     twice (two outputs) with two different states.
 *
 * Scheduling: the look-back and section forms make a block wait for an earlier one. The
 * in-kernel emits order blocks by the tile index the caller passes (blockIdx.x by default), so
 * they assume that a block is dispatched only after every block with a smaller index has been
 * (true of NVIDIA GPUs to date; CUB's single-pass scan assumes it too). A producer that must not
 * rely on this takes its work index from ir_ink_scan_ticket() (an atomic counter: a block then
 * only waits for blocks that have already started) and passes that as the tile; the
 * out-of-kernel forms (ink_compact.cu) always do.
 *
 * Departures from the paper, and why:
 *   - CUDA >= 9 spellings: __ballot_sync(full mask)/__popc; the paper's thread mask
 *     MAXINT shr (32 - lane) is the %lanemask_lt register; the block count comes from the block
 *     scan instead of __syncthreads_count (the scan needs the warp totals anyway).
 *   - Section offset and "section completed" flag share one 64-bit word (flag in the top bits),
 *     so the successor reads both with one load and no fence is needed between them (the paper
 *     writes S_u, fences, then writes S_f).
 *   - The last section's controller writes *out_count (the paper reads the total on the host).
 *   - Stage 4 moves 16-byte chunks with the whole controller block, several in flight per
 *     thread: one block moves 32 blocks' survivors, and one element per thread left it
 *     latency-bound.
 *   - InK-Collate issues its atomicAdd as soon as warp 0 has the block total and publishes base
 *     and offsets with the scan's last barrier.
 */
#ifndef INKRAY_COMPACTION_DEVICE_CUH
#define INKRAY_COMPACTION_DEVICE_CUH

#ifndef __CUDACC__
#error "compaction_device.cuh is CUDA-only: include it from .cu files (C code uses compaction.h)"
#endif

#include <stddef.h>
#include <stdint.h>

#include <cuda/atomic>
#include <cuda_runtime.h>

/* The emits and block scans keep one word per warp in a 32-word array and assume whole warps. */
#define IR_ASSERT_BLOCK_THREADS(threads)                                                          \
  static_assert((threads) % 32 == 0 && (threads) >= 32 && (threads) <= 1024,                       \
                #threads ": the compaction block scans need a multiple of 32 threads, at most 1024")

/* The run-time side of the same contract, for the emits (block sizes of user kernels are not
 * compile-time constants): a block of a partial warp would read lanes that do not exist. */
static __device__ __forceinline__ void ir_ink_check_block_(void) {
  if (blockDim.x & 31u) __trap();
}

/* InK §2.3: 32 blocks per section, so that the block-offset scan fits one warp's ballot. */
#define IR_INK_SECTION_BLOCKS 32u
#define IR_INK_FULL_MASK 0xffffffffu
/* Status words (sections and look-back tiles): top two bits = status, low 32 bits = value. */
#define IR_INK_STATE_AGGREGATE (1ull << 62) /* value = this tile's own count (look-back) */
#define IR_INK_STATE_PREFIX (1ull << 63)    /* value = inclusive offset: kept in tiles 0..i */

static inline size_t ir_ink_align_up_(size_t bytes) { return (bytes + 255) & ~(size_t)255; }

/* ---- Building blocks ---------------------------------------------------------------------------- */

static __device__ __forceinline__ unsigned ir_ink_lanemask_lt(void) {
  unsigned mask;
  asm("mov.u32 %0, %%lanemask_lt;" : "=r"(mask));
  return mask;
}

/* InK §2.2 eq. 3-4: exclusive scan over the warp of values below 2^bits, one ballot per bit
 * plane instead of a shared-memory scan. *total (if not NULL) gets the warp's sum. Whole warp. */
static __device__ __forceinline__ unsigned ir_ink_bitscan(unsigned v, int bits, unsigned *total) {
  const unsigned lt = ir_ink_lanemask_lt();
  unsigned offset = 0, sum = 0;
  for (int j = 0; j < bits; j++) {
    const unsigned plane = __ballot_sync(IR_INK_FULL_MASK, (v >> j) & 1u);
    offset += (unsigned)__popc(plane & lt) << j;
    sum += (unsigned)__popc(plane) << j;
  }
  if (total) *total = sum;
  return offset;
}

/* The block scan (InK §2.1-2.2), the one every method uses: exclusive prefix of `value` (below
 * 2^bits) over the block in thread order into *exclusive; returns the block total. warp_scan:
 * 33 words of shared memory. If `reserve` is not NULL the block also takes its place there
 * (InK §2.4 eq. 5): warp 0 adds the total as soon as it has it, into *base (shared), so that the
 * scan's last barrier publishes the base with the offsets. Ends synchronised; warp_scan is free
 * again after the caller's next barrier. Block-uniform. */
static __device__ __forceinline__ unsigned ir_block_scan(unsigned value, int bits, unsigned *warp_scan,
                                                         unsigned *exclusive, uint32_t *reserve = nullptr,
                                                         unsigned *base = nullptr) {
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  unsigned warp_total;
  const unsigned in_warp = ir_ink_bitscan(value, bits, &warp_total);
  if (lane == 0) warp_scan[warp] = warp_total;
  __syncthreads();
  if (warp == 0) {
    const unsigned t = lane < (blockDim.x >> 5) ? warp_scan[lane] : 0u;
    unsigned total;
    const unsigned ex = ir_ink_bitscan(t, bits + 5 < 32 ? bits + 5 : 32, &total); /* 32 warps: 5 more bits */
    if (lane == 0) {
      warp_scan[32] = total;
      if (reserve && total) *base = atomicAdd(reserve, total);
    }
    warp_scan[lane] = ex;
  }
  __syncthreads();
  *exclusive = warp_scan[warp] + in_warp;
  return warp_scan[32];
}

/* ---- InK-Collate (§2.4) ---------------------------------------------------------------------- */
/* Order kept within a block; blocks land in the order their atomicAdd happens (eq. 5-6). */
static __device__ __forceinline__ void ir_ink_collate_emit(bool keep, uint32_t value, uint32_t *out,
                                                           uint32_t *out_count) {
  __shared__ unsigned warp_scan[33];
  __shared__ unsigned block_base;
  ir_ink_check_block_();
  __syncthreads(); /* an earlier emit in this kernel may still read the shared words */
  unsigned local;
  ir_block_scan(keep ? 1u : 0u, 1, warp_scan, &local, out_count, &block_base);
  if (keep) out[block_base + local] = value;
}

/* ---- Decoupled look-back over tiles (InK-Compact's fast form) ------------------------------------ */

/* Per-launch state: one status word per tile (a block's share of the output), and the ticket
 * counter. Bind it to scratch once, reset it (one memset) before each launch. */
typedef struct ir_ink_scan {
  unsigned *ticket;          /* next tile to hand out (ir_ink_scan_ticket) */
  unsigned long long *state; /* per tile: status | value */
  unsigned tiles;            /* bound for launches of at most this many tiles */
} ir_ink_scan;

/* Host: scratch bytes for launches of up to `tiles` tiles (the ticket on its own 256 bytes, so
 * that its atomics do not contend with the first tiles' words). */
static inline size_t ir_ink_scan_bytes(unsigned tiles) { return 256 + (size_t)tiles * sizeof(unsigned long long); }

/* Host: carves the state out of d_scratch (256-byte aligned, ir_ink_scan_bytes(tiles)). */
static inline ir_ink_scan ir_ink_scan_bind(void *d_scratch, unsigned tiles) {
  ir_ink_scan s;
  s.ticket = (unsigned *)d_scratch;
  s.state = (unsigned long long *)((char *)d_scratch + 256);
  s.tiles = tiles;
  return s;
}

/* Host: zeroes the ticket and the status words of the first `tiles` tiles (one memset, so it can
 * be captured in a CUDA graph). */
static inline cudaError_t ir_ink_scan_reset(const ir_ink_scan *s, unsigned tiles, cudaStream_t stream) {
  return cudaMemsetAsync(s->ticket, 0, ir_ink_scan_bytes(tiles < s->tiles ? tiles : s->tiles), stream);
}

/* Block-uniform, once per block: a tile index from the ticket counter. Tiles are numbered in
 * the order in which blocks start, so a block that waits for a smaller tile waits for a block
 * that is already running or done, whatever order the hardware dispatches blocks in. */
static __device__ __forceinline__ unsigned ir_ink_scan_ticket(const ir_ink_scan &s) {
  __shared__ unsigned tile;
  if (threadIdx.x == 0) tile = atomicAdd(s.ticket, 1u);
  __syncthreads();
  return tile;
}

static __device__ __forceinline__ unsigned ir_ink_warp_sum(unsigned v) {
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(IR_INK_FULL_MASK, v, d);
  return v;
}

/* Decoupled look-back: the exclusive prefix of tile `tile` from its predecessors' words, a
 * window of 32 predecessors per step (lane l reads tile - 1 - l), stopping at the nearest
 * published inclusive prefix. A lane whose predecessor has published nothing yet spins on it
 * with relaxed loads, backing off with __nanosleep. Whole warp; every lane returns the sum.
 * (Reading 4-8 predecessors per lane per step shortens long walks but raised the register count
 * of the kernels that inline it from 32 to 48, costing occupancy: slower overall on the H100.) */
static __device__ __forceinline__ unsigned ir_ink_look_back(const unsigned long long *state, unsigned tile) {
  const unsigned lane = threadIdx.x & 31u;
  unsigned sum = 0;
  for (int end = (int)tile - 1; end >= 0; end -= 32) {
    const int j = end - (int)lane;
    unsigned long long word = IR_INK_STATE_PREFIX; /* before tile 0: an offset of 0 */
    if (j >= 0) {
      cuda::atomic_ref<const unsigned long long, cuda::thread_scope_device> pred(state[j]);
      unsigned delay = 8;
      while (!((word = pred.load(cuda::memory_order_relaxed)) & (IR_INK_STATE_AGGREGATE | IR_INK_STATE_PREFIX))) {
        __nanosleep(delay);
        if (delay < 256) delay *= 2;
      }
    }
    const unsigned prefixes = __ballot_sync(IR_INK_FULL_MASK, (word & IR_INK_STATE_PREFIX) != 0);
    const unsigned stop = prefixes ? (unsigned)__ffs(prefixes) - 1 : 31u; /* nearest published prefix */
    sum += ir_ink_warp_sum(lane <= stop ? (unsigned)word : 0u);
    if (prefixes) break;
  }
  return sum;
}

/* One warp: publishes tile `tile`'s count, looks back, publishes its inclusive prefix and
 * returns its exclusive one (every lane). Value and status travel in one 64-bit store, so
 * relaxed atomics suffice: nothing else a reader needs was written before it. */
static __device__ __forceinline__ unsigned ir_ink_scan_tile(const ir_ink_scan &s, unsigned tile, unsigned count) {
  const unsigned lane = threadIdx.x & 31u;
  cuda::atomic_ref<unsigned long long, cuda::thread_scope_device> mine(s.state[tile]);
  if (tile == 0) {
    if (lane == 0) mine.store(IR_INK_STATE_PREFIX | count, cuda::memory_order_relaxed);
    return 0;
  }
  if (lane == 0) mine.store(IR_INK_STATE_AGGREGATE | count, cuda::memory_order_relaxed);
  const unsigned base = ir_ink_look_back(s.state, tile);
  if (lane == 0) mine.store(IR_INK_STATE_PREFIX | (unsigned long long)(base + count), cuda::memory_order_relaxed);
  return base;
}

/* Output order equals input order, ITEMS elements per thread: item j of thread t precedes item j
 * of thread t + 1, and all items j precede items j + 1 (the layout of a producer that loads
 * element first + j * blockDim.x + t). Tiles land in the order of `tile`; one tile per block and
 * launch, tiles 0..gridDim.x - 1; the last tile writes *out_count. Survivors go straight from
 * registers to their final place: no intermediate buffer, no second pass. */
template <int ITEMS>
static __device__ __forceinline__ void ir_ink_compact_emit_items(const bool (&keep)[ITEMS],
                                                                 const uint32_t (&value)[ITEMS], unsigned tile,
                                                                 uint32_t *out, uint32_t *out_count,
                                                                 const ir_ink_scan &s) {
  static_assert(ITEMS >= 1 && ITEMS <= 16, "ITEMS: 1..16 elements per thread");
  __shared__ unsigned offsets[32 * ITEMS]; /* per (item, warp), in output order */
  __shared__ unsigned tile_base;
  if (gridDim.x > s.tiles) __trap(); /* scratch too small */
  ir_ink_check_block_();
  __syncthreads(); /* an earlier emit in this kernel may still read the shared words */
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const unsigned lt = ir_ink_lanemask_lt();
#pragma unroll
  for (int j = 0; j < ITEMS; j++) {
    const unsigned ballot = __ballot_sync(IR_INK_FULL_MASK, keep[j]); /* InK eq. 1-2 */
    if (lane == 0) offsets[j * warps + warp] = (unsigned)__popc(ballot);
  }
  __syncthreads();
  if (warp == 0) {
    unsigned total = 0; /* warp 0 scans the per-warp counts in output order, 32 at a time */
    for (unsigned e0 = 0; e0 < ITEMS * warps; e0 += 32) {
      const unsigned e = e0 + lane;
      const unsigned c = e < ITEMS * warps ? offsets[e] : 0u;
      unsigned sum;
      const unsigned ex = ir_ink_bitscan(c, 6, &sum); /* counts <= 32: 6 bit planes */
      if (e < ITEMS * warps) offsets[e] = total + ex;
      total += sum;
    }
    const unsigned base = ir_ink_scan_tile(s, tile, total);
    if (lane == 0) {
      tile_base = base;
      if (tile == gridDim.x - 1) *out_count = base + total;
    }
  }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < ITEMS; j++) { /* the ballots again rather than ITEMS registers kept across the wait */
    const unsigned ballot = __ballot_sync(IR_INK_FULL_MASK, keep[j]);
    if (keep[j]) out[tile_base + offsets[j * warps + warp] + (unsigned)__popc(ballot & lt)] = value[j];
  }
}

/* One element per thread, the tile = blockIdx.x (see "Scheduling" above). */
static __device__ __forceinline__ void ir_ink_compact_emit(bool keep, uint32_t value, uint32_t *out,
                                                           uint32_t *out_count, const ir_ink_scan &s) {
  const bool k[1] = {keep};
  const uint32_t v[1] = {value};
  ir_ink_compact_emit_items<1>(k, v, blockIdx.x, out, out_count, s);
}

/* ---- InK-Compact sections (§2.1-2.3), the paper's protocol ------------------------------------ */

/* InK §2.3 section state, opaque to callers: bind it to scratch, reset it before each launch. */
typedef struct ir_ink_sections {
  unsigned long long *state; /* per section: status | offset (S_f and S_u of the paper) */
  unsigned *arrivals;        /* per section: blocks done with stage 1 (S_c) */
  unsigned *block_counts;    /* per block: kept in the block (B_c) */
  uint32_t *staged;          /* intermediate buffer (Y hat): block b at b * block_threads */
  unsigned grid_blocks;      /* bound for launches of at most this many blocks... */
  unsigned block_threads;    /* ...of at most this many threads */
} ir_ink_sections;

static inline unsigned ir_ink_section_count_(unsigned grid_blocks) {
  return (grid_blocks + IR_INK_SECTION_BLOCKS - 1) / IR_INK_SECTION_BLOCKS;
}

/* Bytes of the part that ir_ink_sections_reset zeroes (state then arrivals, contiguous). */
static inline size_t ir_ink_sections_reset_bytes_(unsigned grid_blocks) {
  size_t sections = ir_ink_section_count_(grid_blocks);
  return sections * sizeof(unsigned long long) + sections * sizeof(unsigned);
}

/* Host: scratch bytes for launches of up to grid_blocks blocks of up to block_threads threads. */
static inline size_t ir_ink_sections_bytes(unsigned grid_blocks, unsigned block_threads) {
  return ir_ink_align_up_(ir_ink_sections_reset_bytes_(grid_blocks)) +
         ir_ink_align_up_((size_t)grid_blocks * sizeof(unsigned)) +
         (size_t)grid_blocks * block_threads * sizeof(uint32_t);
}

/* Host: carves the section state out of d_scratch (256-byte aligned, ir_ink_sections_bytes). */
static inline ir_ink_sections ir_ink_sections_bind(void *d_scratch, unsigned grid_blocks, unsigned block_threads) {
  unsigned sections = ir_ink_section_count_(grid_blocks);
  char *p = (char *)d_scratch;
  ir_ink_sections s;
  s.state = (unsigned long long *)p;
  s.arrivals = (unsigned *)(p + (size_t)sections * sizeof(unsigned long long));
  p += ir_ink_align_up_(ir_ink_sections_reset_bytes_(grid_blocks));
  s.block_counts = (unsigned *)p;
  p += ir_ink_align_up_((size_t)grid_blocks * sizeof(unsigned));
  s.staged = (uint32_t *)p;
  s.grid_blocks = grid_blocks;
  s.block_threads = block_threads;
  return s;
}

/* Host: zeroes the section counters and flags (InK §2.3: "zero-cleared before the main kernel").
 * One memset, so it can be captured in a CUDA graph. */
static inline cudaError_t ir_ink_sections_reset(const ir_ink_sections *s, cudaStream_t stream) {
  return cudaMemsetAsync(s->state, 0, ir_ink_sections_reset_bytes_(s->grid_blocks), stream);
}

/* §2.3 stage 2: after the block has written its staged survivors (all threads), counts the
 * block (`tile`, of `tiles` in the launch) into its section. Returns true (block-uniform) for
 * the block that completes the section, its controller. Thread 0's acq_rel atomic is the
 * release of the block's staged data (ordered before it by the barrier) and, for the
 * controller, the acquire of every other block's; the barrier after it extends that to the
 * controller's other threads. */
static __device__ __forceinline__ bool ir_ink_section_arrive(const ir_ink_sections &s, unsigned tile,
                                                             unsigned tiles, unsigned count) {
  __shared__ bool is_controller;
  const unsigned sec = tile / IR_INK_SECTION_BLOCKS;
  const unsigned blocks_in_sec = min(IR_INK_SECTION_BLOCKS, tiles - sec * IR_INK_SECTION_BLOCKS);
  __syncthreads(); /* all staged writes of the block happen before thread 0's release */
  if (threadIdx.x == 0) {
    s.block_counts[tile] = count;
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> arrivals(s.arrivals[sec]);
    is_controller = arrivals.fetch_add(1u, cuda::memory_order_acq_rel) == blocks_in_sec - 1;
  }
  __syncthreads();
  return is_controller;
}

/* §2.3 stage 3 (chained): the inclusive offset of section `sec - 1`, waiting for its flag. */
static __device__ __forceinline__ unsigned ir_ink_wait_prefix(unsigned long long *state, unsigned sec) {
  if (sec == 0) return 0;
  cuda::atomic_ref<unsigned long long, cuda::thread_scope_device> prev(state[sec - 1]);
  unsigned long long word;
  while (!((word = prev.load(cuda::memory_order_relaxed)) & IR_INK_STATE_PREFIX)) __nanosleep(32);
  return (unsigned)word;
}

/* Index of the last of the 33 offsets that is <= x (offsets ascending, offsets[0] = 0). */
static __device__ __forceinline__ unsigned ir_ink_find_block(const unsigned *offsets, unsigned x) {
  unsigned b = 0;
#pragma unroll
  for (unsigned step = 16; step > 0; step >>= 1)
    if (offsets[b + step] <= x) b += step;
  return b;
}

/* §2.3 stages 2-4 for the controller of tile `tile`'s section (the whole block): warp 0 scans
 * the section's block counts (each below 2^count_bits) and their 4-element chunk counts, waits
 * for the previous section's flag and publishes its own (the last section writes *out_count);
 * then the block moves the staged survivors to out, 16-byte chunks (each staged block starts
 * 16-byte aligned), each chunk finding its block by a binary search of the chunk offsets, four
 * chunks in flight per thread. */
static __device__ __forceinline__ void ir_ink_section_finish(const ir_ink_sections &s, unsigned tile, unsigned tiles,
                                                             size_t block_stride, int count_bits,
                                                             uint32_t *__restrict__ out, uint32_t *out_count) {
  __shared__ unsigned block_offsets[IR_INK_SECTION_BLOCKS + 1];
  __shared__ unsigned chunk_offsets[IR_INK_SECTION_BLOCKS + 1];
  __shared__ unsigned section_base;
  const unsigned sec = tile / IR_INK_SECTION_BLOCKS, first = sec * IR_INK_SECTION_BLOCKS;
  const unsigned blocks_in_sec = min(IR_INK_SECTION_BLOCKS, tiles - first);
  if (threadIdx.x < 32) {
    const unsigned lane = threadIdx.x;
    const unsigned count = lane < blocks_in_sec ? __ldcg(&s.block_counts[first + lane]) : 0u;
    unsigned total, chunks;
    block_offsets[lane] = ir_ink_bitscan(count, count_bits, &total);
    chunk_offsets[lane] = ir_ink_bitscan((count + 3) / 4, count_bits, &chunks);
    if (lane == 0) {
      block_offsets[IR_INK_SECTION_BLOCKS] = total;
      chunk_offsets[IR_INK_SECTION_BLOCKS] = chunks;
      const unsigned base = ir_ink_wait_prefix(s.state, sec); /* stage 3 */
      cuda::atomic_ref<unsigned long long, cuda::thread_scope_device> mine(s.state[sec]);
      mine.store(IR_INK_STATE_PREFIX | (unsigned long long)(base + total), cuda::memory_order_relaxed);
      if (first + blocks_in_sec == tiles) *out_count = base + total;
      section_base = base;
    }
  }
  __syncthreads();
  const unsigned chunks = chunk_offsets[IR_INK_SECTION_BLOCKS], base = section_base;
  enum { UNROLL = 4 };
  for (unsigned c0 = threadIdx.x; c0 < chunks; c0 += UNROLL * blockDim.x) {
    uint4 v[UNROLL];
    unsigned b[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
      const unsigned c = c0 + u * blockDim.x;
      if (c < chunks) {
        b[u] = ir_ink_find_block(chunk_offsets, c);
        const uint4 *src = reinterpret_cast<const uint4 *>(s.staged + (first + b[u]) * block_stride);
        v[u] = __ldcg(src + (c - chunk_offsets[b[u]]));
      }
    }
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
      const unsigned c = c0 + u * blockDim.x;
      if (c < chunks) {
        const unsigned within = 4 * (c - chunk_offsets[b[u]]); /* element offset in its block */
        const unsigned count = block_offsets[b[u] + 1] - block_offsets[b[u]];
        uint32_t *dst = out + base + block_offsets[b[u]] + within;
        const uint32_t e[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
#pragma unroll
        for (int q = 0; q < 4; q++)
          if (within + q < count) dst[q] = e[q];
      }
    }
  }
}

/* The paper's form, one element per thread: output order equals input order (thread order
 * within a block, blockIdx order within the grid). Stage 1 stages the block's survivors in
 * s.staged; the last block of each section to finish (the section controller) chains the
 * section offsets and moves the section's survivors to `out`. The other blocks leave at once. */
static __device__ __forceinline__ void ir_ink_compact_emit(bool keep, uint32_t value, uint32_t *out,
                                                           uint32_t *out_count, const ir_ink_sections &s) {
  __shared__ unsigned warp_scan[33];
  if (gridDim.x > s.grid_blocks || blockDim.x > s.block_threads) __trap(); /* scratch too small */
  ir_ink_check_block_();
  __syncthreads(); /* an earlier emit in this kernel may still read the shared words */
  unsigned local; /* stage 1: local compaction into the intermediate buffer */
  const unsigned block_count = ir_block_scan(keep ? 1u : 0u, 1, warp_scan, &local);
  if (keep) s.staged[(size_t)blockIdx.x * blockDim.x + local] = value;
  if (!ir_ink_section_arrive(s, blockIdx.x, gridDim.x, block_count)) return;
  /* block counts are at most 1024: 11 bit planes (the paper's log2(w_s * w_n) scans) */
  ir_ink_section_finish(s, blockIdx.x, gridDim.x, blockDim.x, 11, out, out_count);
}

#endif
