/* Block tiles for the out-of-kernel forms of InK-Collate, InK-Compact and Jumping Jack.
 *
 * Out of kernel, a block does not have to take one element per thread as the in-kernel emits do:
 * it takes a tile of IR_TILE_THREADS * ITEMS consecutive elements, each thread ITEMS adjacent
 * ones (vector loads where aligned), and compacts the tile in shared memory with the same
 * ballot/popc offsets as InK §2.1-2.2, so that the tile's survivors leave as one coalesced run.
 * Internal to compaction/.
 */
#ifndef INKRAY_COMPACTION_TILE_CUH
#define INKRAY_COMPACTION_TILE_CUH

#include "compaction/compaction_device.cuh"
#include "compaction/compaction_internal.h"

/* 8 warps: with 16-32 items each, a tile is 4-8K elements, enough bytes in flight per block;
 * small enough that several blocks share an SM while a section controller works. */
#define IR_TILE_THREADS 256
IR_ASSERT_BLOCK_THREADS(IR_TILE_THREADS);

/* What to keep and what to emit. */
typedef struct ir_select {
  const uint32_t *in;   /* values (may be NULL when emitting indices from flags) */
  const uint8_t *flags; /* keep where flags[i] != 0; NULL: keep where in[i] != reject */
  uint32_t reject;
  bool invert;          /* keep the rejected ones instead (Redzone derives its removal list) */
  bool emit_index;      /* emit i instead of in[i] */
} ir_select;

static inline ir_select ir_select_from_job(const ir_compact_job *job) {
  ir_select sel = {job->in, job->flags, job->reject, false, false};
  return sel;
}

/* Vector loads need 16-byte aligned streams (the tile start is then aligned too). */
static inline bool ir_select_vectorizable(const ir_select *sel) {
  return ((uintptr_t)sel->in % 16 == 0) && ((uintptr_t)sel->flags % 16 == 0);
}

static inline unsigned ir_tile_count(size_t n, unsigned tile) { return (unsigned)((n + tile - 1) / tile); }

/* Element count: the device-side count when given (clamped to the launch size), else n_max. */
static __device__ __forceinline__ size_t ir_device_n(size_t n_max, const uint32_t *d_n) {
  return d_n ? min((size_t)*d_n, n_max) : n_max;
}

template <int ITEMS>
static __device__ __forceinline__ void ir_load_flags(const uint8_t *p, uint8_t (&f)[ITEMS]) {
  if constexpr (ITEMS % 16 == 0) {
#pragma unroll
    for (int q = 0; q < ITEMS / 16; q++) {
      const uint4 w = __ldg(reinterpret_cast<const uint4 *>(p) + q);
      const uint32_t words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
      for (int j = 0; j < 16; j++) f[q * 16 + j] = (uint8_t)(words[j / 4] >> (8 * (j % 4)));
    }
  } else {
#pragma unroll
    for (int q = 0; q < ITEMS / 4; q++) {
      const uint32_t w = __ldg(reinterpret_cast<const uint32_t *>(p) + q);
#pragma unroll
      for (int j = 0; j < 4; j++) f[q * 4 + j] = (uint8_t)(w >> (8 * j));
    }
  }
}

/* Loads this thread's ITEMS elements of the tile starting at tile_start; returns the keep mask
 * (bit j: element tile_start + threadIdx.x * ITEMS + j is kept). */
template <int ITEMS>
static __device__ __forceinline__ uint32_t ir_tile_load(const ir_select &sel, size_t tile_start, size_t n,
                                                        bool vec, uint32_t (&v)[ITEMS]) {
  static_assert(ITEMS % 4 == 0 && ITEMS <= 32, "ITEMS: a multiple of 4, at most 32");
  const size_t base = tile_start + (size_t)threadIdx.x * ITEMS;
  const bool need_values = !sel.emit_index || !sel.flags;
  uint32_t mask = 0;
  if (vec && base + ITEMS <= n) {
    if (need_values) {
#pragma unroll
      for (int q = 0; q < ITEMS / 4; q++) {
        const uint4 w = __ldg(reinterpret_cast<const uint4 *>(sel.in + base) + q);
        v[4 * q] = w.x;
        v[4 * q + 1] = w.y;
        v[4 * q + 2] = w.z;
        v[4 * q + 3] = w.w;
      }
    }
    if (sel.flags) {
      uint8_t f[ITEMS];
      ir_load_flags<ITEMS>(sel.flags + base, f);
#pragma unroll
      for (int j = 0; j < ITEMS; j++) mask |= (uint32_t)((f[j] != 0) != sel.invert) << j;
    } else {
#pragma unroll
      for (int j = 0; j < ITEMS; j++) mask |= (uint32_t)((v[j] != sel.reject) != sel.invert) << j;
    }
  } else {
#pragma unroll
    for (int j = 0; j < ITEMS; j++) {
      const size_t i = base + j;
      bool keep = false;
      v[j] = 0;
      if (i < n) {
        if (need_values) v[j] = sel.in[i];
        keep = (sel.flags ? sel.flags[i] != 0 : v[j] != sel.reject) != sel.invert;
      }
      mask |= (uint32_t)keep << j;
    }
  }
  if (sel.emit_index) {
#pragma unroll
    for (int j = 0; j < ITEMS; j++) v[j] = (uint32_t)(base + j);
  }
  return mask;
}

/* A grid-wide running total that resets itself, so that no memset precedes the kernel (one
 * launch per call, as cheap as it gets for small streams, and capturable). words[0] is the total
 * the blocks add their counts to, words[1] counts the blocks done; the last block writes the
 * grand total to *count and zeroes both for the next launch. The words start at zero
 * (ir_compact_ctx_reserve); a context therefore serves one stream at a time, as its scratch
 * does anyway. Thread 0 of every block calls this once, after its atomicAdd on words[0]: the
 * acq_rel arrival orders that add before it, and makes every block's add visible to the last. */
static __device__ __forceinline__ void ir_grid_total_arrive(unsigned *words, uint32_t *count) {
  cuda::atomic_ref<unsigned, cuda::thread_scope_device> arrivals(words[1]);
  if (arrivals.fetch_add(1u, cuda::memory_order_acq_rel) == gridDim.x - 1) {
    *count = atomicExch(&words[0], 0u);
    arrivals.store(0u, cuda::memory_order_relaxed);
  }
}

/* The context's InK-Compact look-back state (ctx->scan), bound for its capacity (ink_compact.cu). */
ir_ink_scan ir_ink_scan_of_ctx(ir_compact_ctx *ctx);

/* InK-Collate out of kernel on any selection (ink_collate.cu); *count gets the number kept. */
cudaError_t ir_ink_collate_select(ir_compact_ctx *ctx, const ir_select &sel, size_t n_max, const uint32_t *d_n,
                                  uint32_t *out, uint32_t *count, cudaStream_t stream);

/* log2 of a power of two, at compile time. */
template <int X> struct ir_log2 { static constexpr int value = 1 + ir_log2<X / 2>::value; };
template <> struct ir_log2<1> { static constexpr int value = 0; };

/* InK §2.1-2.2 for a tile: this thread's offset among the tile's survivors (the block scan of
 * the per-thread counts, at most ITEMS: log2(ITEMS) + 1 bit planes); returns the tile's count.
 * warp_scan: 33 words of shared memory. Ends synchronised. */
template <int ITEMS>
static __device__ __forceinline__ unsigned ir_tile_offset(uint32_t mask, unsigned *warp_scan, unsigned *offset,
                                                          uint32_t *reserve = nullptr, unsigned *base = nullptr) {
  return ir_block_scan((unsigned)__popc(mask), ir_log2<ITEMS>::value + 1, warp_scan, offset, reserve, base);
}

/* Packs the kept values into staged[offset...] (shared memory), in input order. */
template <int ITEMS>
static __device__ __forceinline__ void ir_tile_stage(uint32_t mask, const uint32_t (&v)[ITEMS],
                                                     unsigned offset, uint32_t *staged) {
#pragma unroll
  for (int j = 0; j < ITEMS; j++)
    if (mask >> j & 1u) staged[offset++] = v[j];
}

#endif
