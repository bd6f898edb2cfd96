/* inkray in-kernel compaction: InK-Compact and InK-Collate as device functions (CUDA only).
 *
 * Hughes, Lim, Jones, Knoll, Spencer, "InK-Compact: In-Kernel Stream Compaction and Its
 * Application to Multi-Kernel Data Visualization on General-Purpose GPUs", CGF 2013, section 2.
 * A producing kernel calls an emit at its end and its survivors land, compacted, in `out`:
 *
 *   ir_ink_collate_emit(keep, value, out, out_count);      // InK §2.4: order kept within a block
 *   ir_ink_compact_emit(keep, value, out, out_count, s);   // InK §2.1-2.3: order == input order
 *
 * Contract of every emit (all device calls are block-uniform):
 *   - every thread of the block calls once per launch (pass keep=false for threads, or whole
 *     blocks, with nothing to keep, e.g. beyond a device-side count);
 *   - 1-D blocks, blockDim.x a multiple of 32 and at most 1024; 1-D grid;
 *   - the caller zeroes *out_count before the launch (one cudaMemsetAsync); after the launch
 *     *out_count is the number kept;
 *   - for ir_ink_compact_emit, the section state `s` was bound for at least gridDim.x blocks of
 *     at least blockDim.x threads and reset (ir_ink_sections_reset) before the launch. A kernel
 *     may emit twice (two outputs) with two different section states.
 *
 * Departures from the paper, and why:
 *   - CUDA >= 9 spellings: __ballot_sync(full mask)/__popc/__syncthreads_count; the paper's
 *     thread mask MAXINT shr (32 - lane) is the %lanemask_lt register.
 *   - Section offset and "section completed" flag share one 64-bit word (flag in the top bits),
 *     so the successor reads both with one load and no fence is needed between them (the paper
 *     writes S_u, fences, then writes S_f).
 *   - The last section's controller writes *out_count (the paper reads the total on the host).
 *   - IR_INK_SECTIONS_LOOKBACK (an extra, not the default): the section controller publishes
 *     its section total at once and sums its predecessors' totals (decoupled look-back, a warp
 *     reading 32 predecessors per step) instead of waiting for the previous section's flag,
 *     which removes the serial section chain.
 *   - Stage 4 moves 16-byte chunks with the whole controller block, several in flight per
 *     thread: one block moves 32 blocks' survivors, and one element per thread left it
 *     latency-bound.
 *   - InK-Collate issues its atomicAdd right after __syncthreads_count, overlapping the
 *     warp-offset scan, and publishes base and offsets with one barrier.
 *
 * Forward progress: a section controller spins on an earlier section's word. This assumes that
 * blocks are dispatched in increasing blockIdx.x order (true of every NVIDIA GPU to date, and
 * what CUB's decoupled look-back relies on too): every block of section i-1 is then resident or
 * finished when the controller of section i spins, and section 0 never waits.
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

/* InK §2.3: 32 blocks per section, so that the block-offset scan fits one warp's ballot. */
#define IR_INK_SECTION_BLOCKS 32u
#define IR_INK_FULL_MASK 0xffffffffu
/* Section state word: top bits = status, low 32 bits = value. */
#define IR_INK_STATE_AGGREGATE (1ull << 62) /* value = this section's own total (look-back only) */
#define IR_INK_STATE_PREFIX (1ull << 63)    /* value = inclusive offset: kept in sections 0..i */

typedef enum ir_ink_section_mode {
  IR_INK_SECTIONS_CHAINED = 0, /* the paper: wait for the previous section's flag */
  IR_INK_SECTIONS_LOOKBACK = 1 /* extra: decoupled look-back over section totals */
} ir_ink_section_mode;

/* InK §2.3 section state, opaque to callers: bind it to scratch, reset it before each launch. */
typedef struct ir_ink_sections {
  unsigned long long *state; /* per section: status | offset (S_f and S_u of the paper) */
  unsigned *arrivals;        /* per section: blocks done with stage 1 (S_c) */
  unsigned *block_counts;    /* per block: kept in the block (B_c) */
  uint32_t *staged;          /* intermediate buffer (Y hat): block b at b * blockDim.x */
  unsigned grid_blocks;      /* bound for launches of at most this many blocks... */
  unsigned block_threads;    /* ...of at most this many threads */
  int mode;                  /* ir_ink_section_mode */
} ir_ink_sections;

static inline size_t ir_ink_align_up_(size_t bytes) { return (bytes + 255) & ~(size_t)255; }

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
static inline ir_ink_sections ir_ink_sections_bind_mode(void *d_scratch, unsigned grid_blocks,
                                                        unsigned block_threads,
                                                        ir_ink_section_mode mode) {
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
  s.mode = (int)mode;
  return s;
}

/* Host: the paper's scheme (chained sections). */
static inline ir_ink_sections ir_ink_sections_bind(void *d_scratch, unsigned grid_blocks,
                                                   unsigned block_threads) {
  return ir_ink_sections_bind_mode(d_scratch, grid_blocks, block_threads, IR_INK_SECTIONS_CHAINED);
}

/* Host: zeroes the section counters and flags (InK §2.3: "zero-cleared before the main kernel").
 * One memset, so it can be captured in a CUDA graph. */
static inline cudaError_t ir_ink_sections_reset(const ir_ink_sections *s, cudaStream_t stream) {
  return cudaMemsetAsync(s->state, 0, ir_ink_sections_reset_bytes_(s->grid_blocks), stream);
}

/* ---- Building blocks (also used by the out-of-kernel wrappers) ------------------------------ */

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

/* InK §2.1-2.2: offset of this thread's element among the block's kept elements; returns the
 * block's count (from __syncthreads_count, as in the paper). `warp_scratch` is 32 words of
 * shared memory; the call ends with the block synchronised and warp_scratch free again only
 * after the caller's next __syncthreads. If `counter` is not NULL, the block also reserves its
 * place there (InK §2.4 eq. 5) into *block_base: the atomic is issued before the warp-offset
 * scan so that its latency overlaps it, and the barrier that publishes the offsets publishes
 * the base too. Block-uniform. */
static __device__ __forceinline__ unsigned ir_ink_block_offset(bool keep, unsigned *warp_scratch, unsigned *local,
                                                               uint32_t *counter = nullptr,
                                                               unsigned *block_base = nullptr) {
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const unsigned ballot = __ballot_sync(IR_INK_FULL_MASK, keep);
  const unsigned thread_offset = (unsigned)__popc(ballot & ir_ink_lanemask_lt()); /* eq. 1-2 */
  if (lane == 31) warp_scratch[warp] = (unsigned)__popc(ballot);
  const unsigned block_count = (unsigned)__syncthreads_count(keep);
  if (warp == 0) {
    if (counter && lane == 0 && block_count) *block_base = atomicAdd(counter, block_count);
    const unsigned count = lane < (blockDim.x >> 5) ? warp_scratch[lane] : 0u;
    warp_scratch[lane] = ir_ink_bitscan(count, 6, NULL); /* counts <= 32: 6 bit planes */
  }
  __syncthreads();
  *local = warp_scratch[warp] + thread_offset;
  return block_count;
}

/* ---- InK-Collate (§2.4) ---------------------------------------------------------------------- */
/* Order kept within a block; blocks land in the order their atomicAdd happens (eq. 5-6). */
static __device__ __forceinline__ void ir_ink_collate_emit(bool keep, uint32_t value, uint32_t *out,
                                                           uint32_t *out_count) {
  __shared__ unsigned warp_offsets[32];
  __shared__ unsigned block_base;
  __syncthreads(); /* an earlier emit in this kernel may still read the shared words */
  unsigned local;
  ir_ink_block_offset(keep, warp_offsets, &local, out_count, &block_base);
  if (keep) out[block_base + local] = value;
}

/* ---- InK-Compact (§2.1-2.3) -------------------------------------------------------------------- */

/* §2.3 stage 3 (chained): the inclusive offset of section `sec - 1`, waiting for its flag. */
static __device__ __forceinline__ unsigned ir_ink_wait_prefix(unsigned long long *state, unsigned sec) {
  if (sec == 0) return 0;
  cuda::atomic_ref<unsigned long long, cuda::thread_scope_device> prev(state[sec - 1]);
  unsigned long long word;
  while (!((word = prev.load(cuda::memory_order_relaxed)) & IR_INK_STATE_PREFIX)) {
  }
  return (unsigned)word;
}

static __device__ __forceinline__ unsigned ir_ink_warp_sum(unsigned v) {
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(IR_INK_FULL_MASK, v, d);
  return v;
}

/* Extra: decoupled look-back over the section totals, a window of 32 predecessors per step (lane
 * l reads section end - l); stops at the nearest section whose inclusive offset is published.
 * Whole warp; every lane returns the sum. */
static __device__ __forceinline__ unsigned ir_ink_look_back(unsigned long long *state, unsigned sec) {
  const unsigned lane = threadIdx.x & 31u;
  unsigned sum = 0;
  for (int end = (int)sec - 1; end >= 0; end -= 32) {
    const int j = end - (int)lane;
    unsigned long long word = IR_INK_STATE_PREFIX; /* before section 0: an offset of 0 */
    if (j >= 0) {
      cuda::atomic_ref<unsigned long long, cuda::thread_scope_device> pred(state[j]);
      while (!((word = pred.load(cuda::memory_order_relaxed)) & (IR_INK_STATE_AGGREGATE | IR_INK_STATE_PREFIX))) {
      }
    }
    const unsigned prefixes = __ballot_sync(IR_INK_FULL_MASK, (word & IR_INK_STATE_PREFIX) != 0);
    const unsigned stop = prefixes ? (unsigned)__ffs(prefixes) - 1 : 31u; /* nearest published offset */
    sum += ir_ink_warp_sum(lane <= stop ? (unsigned)word : 0u);
    if (prefixes) break;
  }
  return sum;
}

/* §2.3 stages 2-3 for the section controller (whole warp): scans the section's block counts
 * (each below 2^count_bits) into block_offsets[0..32] and their 4-element chunk counts into
 * chunk_offsets[0..32] (entry 32 holds the section total), then obtains the section's output
 * offset and publishes its own. Every lane returns the offset; the last section writes
 * *out_count. */
static __device__ __forceinline__ unsigned ir_ink_section_controller(const ir_ink_sections &s,
                                                                     unsigned sec, unsigned blocks_in_sec,
                                                                     int count_bits, unsigned *block_offsets,
                                                                     unsigned *chunk_offsets,
                                                                     uint32_t *out_count) {
  const unsigned lane = threadIdx.x & 31u;
  const unsigned first = sec * IR_INK_SECTION_BLOCKS;
  const unsigned count = lane < blocks_in_sec ? __ldcg(&s.block_counts[first + lane]) : 0u;
  unsigned total, chunks;
  block_offsets[lane] = ir_ink_bitscan(count, count_bits, &total);
  chunk_offsets[lane] = ir_ink_bitscan((count + 3) / 4, count_bits, &chunks);
  if (lane == 0) {
    block_offsets[IR_INK_SECTION_BLOCKS] = total;
    chunk_offsets[IR_INK_SECTION_BLOCKS] = chunks;
  }
  cuda::atomic_ref<unsigned long long, cuda::thread_scope_device> mine(s.state[sec]);
  unsigned base;
  if (s.mode == IR_INK_SECTIONS_LOOKBACK) {
    if (lane == 0 && sec > 0) mine.store(IR_INK_STATE_AGGREGATE | total, cuda::memory_order_relaxed);
    base = ir_ink_look_back(s.state, sec);
  } else {
    base = __shfl_sync(IR_INK_FULL_MASK, lane == 0 ? ir_ink_wait_prefix(s.state, sec) : 0u, 0); /* stage 3 */
  }
  if (lane == 0) {
    mine.store(IR_INK_STATE_PREFIX | (unsigned long long)(base + total), cuda::memory_order_relaxed);
    if (first + blocks_in_sec == gridDim.x) *out_count = base + total;
  }
  return base;
}

/* Index of the last of the 33 offsets that is <= x (offsets ascending, offsets[0] = 0). */
static __device__ __forceinline__ unsigned ir_ink_find_block(const unsigned *offsets, unsigned x) {
  unsigned b = 0;
#pragma unroll
  for (unsigned step = 16; step > 0; step >>= 1)
    if (offsets[b + step] <= x) b += step;
  return b;
}

/* §2.3 stage 4: the controller block moves the section's staged survivors to out[base...]. The
 * loop runs over 4-element chunks of the staged blocks (16-byte loads: each staged block starts
 * 16-byte aligned), each chunk finding its block by a binary search of the chunk offsets; four
 * chunks in flight per thread hide the latency of the intermediate buffer. */
static __device__ __forceinline__ void ir_ink_section_move(const uint32_t *__restrict__ staged,
                                                           size_t block_stride, unsigned first,
                                                           const unsigned *block_offsets,
                                                           const unsigned *chunk_offsets, unsigned base,
                                                           uint32_t *__restrict__ out) {
  const unsigned chunks = chunk_offsets[IR_INK_SECTION_BLOCKS];
  enum { UNROLL = 4 };
  for (unsigned c0 = threadIdx.x; c0 < chunks; c0 += UNROLL * blockDim.x) {
    uint4 v[UNROLL];
    unsigned b[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
      const unsigned c = c0 + u * blockDim.x;
      if (c < chunks) {
        b[u] = ir_ink_find_block(chunk_offsets, c);
        const uint4 *src = reinterpret_cast<const uint4 *>(staged + (first + b[u]) * block_stride);
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

/* Output order equals input order (thread order within a block, block order within the grid).
 * Stage 1 stages the block's survivors in s.staged; the last block of each section to finish
 * (the section controller) scans the section's block counts, chains the section offsets and
 * moves the section's survivors to `out`. The other blocks leave at once (stage 2). */
static __device__ __forceinline__ void ir_ink_compact_emit(bool keep, uint32_t value, uint32_t *out,
                                                           uint32_t *out_count,
                                                           const ir_ink_sections &s) {
  __shared__ unsigned warp_offsets[32];
  __shared__ unsigned block_offsets[IR_INK_SECTION_BLOCKS + 1];
  __shared__ unsigned chunk_offsets[IR_INK_SECTION_BLOCKS + 1];
  __shared__ unsigned section_base;
  __shared__ bool is_controller;
  if (gridDim.x > s.grid_blocks || blockDim.x > s.block_threads) __trap(); /* scratch too small */
  __syncthreads(); /* an earlier emit in this kernel may still read the shared words */

  /* Stage 1: local compaction into the intermediate buffer. */
  unsigned local;
  const unsigned block_count = ir_ink_block_offset(keep, warp_offsets, &local);
  if (keep) s.staged[(size_t)blockIdx.x * blockDim.x + local] = value;

  /* Stage 2: count the block in; the block that completes the section becomes its controller. */
  const unsigned sec = blockIdx.x / IR_INK_SECTION_BLOCKS;
  const unsigned first = sec * IR_INK_SECTION_BLOCKS;
  const unsigned blocks_in_sec = min(IR_INK_SECTION_BLOCKS, gridDim.x - first);
  __syncthreads(); /* all staged writes of the block are issued before the fence below */
  if (threadIdx.x == 0) {
    s.block_counts[blockIdx.x] = block_count;
    __threadfence(); /* staged data and count visible before the arrival is */
    is_controller = atomicAdd(&s.arrivals[sec], 1u) == blocks_in_sec - 1;
  }
  __syncthreads();
  if (!is_controller) return;
  __threadfence(); /* acquire side of the pattern above */

  /* Stages 2-3 (one warp), then stage 4: move the section's data to its place. Block counts are
   * at most 1024: 11 bit planes (the paper's log2(w_s * w_n) scans). */
  if (threadIdx.x < 32) {
    const unsigned base =
        ir_ink_section_controller(s, sec, blocks_in_sec, 11, block_offsets, chunk_offsets, out_count);
    if (threadIdx.x == 0) section_base = base;
  }
  __syncthreads();
  ir_ink_section_move(s.staged, blockDim.x, first, block_offsets, chunk_offsets, section_base, out);
}

#endif
