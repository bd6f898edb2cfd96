/* inkray block compaction: the five methods in block form, for kernels that keep a pool of
 * records in shared memory and compact it between phases (CUDA only). The persistent render
 * pipeline (render/persistent.cu) moves whole rays this way: a record is a ray's state, not an
 * index into global memory.
 *
 *   ir_pool<W>               records of W 32-bit words in shared memory, word w of slot i at
 *                            words[w * capacity + i] (a warp's slots fall in distinct banks)
 *   ir_block_compact(...)    keeps the records a block's threads hold, by the chosen method
 *
 * One call compacts the slots [base, base + n): thread t < n holds the record of slot base + t in
 * registers (`rec`: the pool's copy may be stale, the registers are the truth) and says whether
 * it stays (`keep`); afterwards the slots [base, base + count) hold the kept records and every
 * thread gets count. The slots [base, base + n) are rewritten; others are not touched. The call
 * is block-uniform, needs 1-D blocks of BLOCK threads (a multiple of 32, at most 1024) with
 * n <= BLOCK, and ends with a barrier, so the pool can be read at once and the scratch reused by
 * the next call.
 *
 * Each method decides where every kept record goes, by its own algorithm from its paper scaled
 * to one block; then each record goes straight from its thread's registers to that slot (the
 * records are in registers anyway, so no method gathers or shuffles them through shared memory
 * first, and none holds two records' registers at once):
 *   InK-Compact   InK §2.1-2.2: ballot/popc thread offsets within a warp and the paper's block
 *                 scan of the warp counts (bit-decomposed, ir_block_scan). Order kept.
 *   InK-Collate   InK §2.4 with the block's warps in the place of a grid's blocks: ballot/popc
 *                 offsets within a warp and one shared-memory atomicAdd per warp for the warp's
 *                 base. Order kept within a warp; warps land in the order of their atomics.
 *   Thrust        Thrust's copy_if is a decoupled-look-back scan over tiles, and a tile is
 *                 cub::BlockScan: that block-wide exclusive sum of the keep flags. Order kept.
 *   Jumping Jack  Moreira et al. §3.4-5 on one block of the block-based form: pSum from the
 *                 block scan, MAS[i] = n - pSum[i] (eq. 1), and output slot i < v takes the
 *                 valid element its jumps land on (Algorithm 2). The jump search runs from the
 *                 output slots as in the paper; the element it lands on learns its slot through
 *                 shared memory and moves there. Not ordered.
 *   Redzone       Bontes & Gain Algorithm 1 (one block): the removal list R (the slots that go,
 *                 from the block scan) pairs the red zone Z = [n - k, n) with R: case A sends a
 *                 valid Z[i] to the hole R[i], cases C and D become destination and source
 *                 orphans, which phase 3 pairs (|Z'| = |R'|, Lemma 4.2); every other kept record
 *                 stays in its slot. Not ordered. Departures: the marks of phase 1 are a bitmap
 *                 in shared memory (records have no spare bit), and the source orphans are
 *                 listed by slot rather than moved down inside the zone.
 */
#ifndef INKRAY_COMPACTION_BLOCK_CUH
#define INKRAY_COMPACTION_BLOCK_CUH

#include <cub/block/block_scan.cuh>

#include "compaction/compaction.h"
#include "compaction/compaction_device.cuh"

/* Records of W words in shared memory, structure of arrays. */
template <int W>
struct ir_pool {
  uint32_t *words;
  unsigned capacity;
  __device__ __forceinline__ void store(unsigned slot, const uint32_t (&r)[W]) const {
#pragma unroll
    for (int w = 0; w < W; w++) words[w * capacity + slot] = r[w];
  }
  __device__ __forceinline__ void load(unsigned slot, uint32_t (&r)[W]) const {
#pragma unroll
    for (int w = 0; w < W; w++) r[w] = words[w * capacity + slot];
  }
};

/* Scratch of one block's compactions (shared memory). `collate` must start at 0 (ir_block_compact_init). */
template <int BLOCK>
struct ir_block_compact_shared {
  IR_ASSERT_BLOCK_THREADS(BLOCK);
  unsigned warp_scan[33];
  unsigned collate; /* InK-Collate's running total: only ever grows, each call takes a difference */
  uint32_t bits[BLOCK / 32]; /* Jumping Jack: valid elements; Redzone: phase 1 marks */
  uint16_t dest[BLOCK];      /* Jumping Jack, Redzone: where the element of each slot goes */
  union {
    typename cub::BlockScan<unsigned, BLOCK>::TempStorage cub;
    uint16_t mas[BLOCK]; /* Jumping Jack */
    struct {
      uint16_t removal[BLOCK]; /* R */
      uint16_t src_orphans[BLOCK], dst_orphans[BLOCK];
    } rz;
  };
};

template <int BLOCK>
static __device__ __forceinline__ void ir_block_compact_init(ir_block_compact_shared<BLOCK> &sh) {
  if (threadIdx.x == 0) sh.collate = 0;
}

static __device__ __forceinline__ bool ir_bit_of(const uint32_t *bits, unsigned i) { return bits[i >> 5] >> (i & 31u) & 1u; }

/* Each method returns the count and sets *dest (threads with keep) to the slot, from 0, that the
 * thread's record goes to. */
template <int BLOCK>
static __device__ __forceinline__ unsigned ir_block_ink_compact(bool keep, unsigned *dest,
                                                                ir_block_compact_shared<BLOCK> &sh) {
  return ir_block_scan(keep ? 1u : 0u, 1, sh.warp_scan, dest);
}

template <int BLOCK>
static __device__ __forceinline__ unsigned ir_block_ink_collate(bool keep, unsigned *dest,
                                                                ir_block_compact_shared<BLOCK> &sh) {
  const unsigned start = sh.collate; /* the previous call's total, stable since its last barrier */
  __syncthreads();                   /* every thread has read it before any warp adds */
  const unsigned ballot = __ballot_sync(IR_INK_FULL_MASK, keep), lane = threadIdx.x & 31u;
  unsigned warp_base = 0;
  if (lane == 0 && ballot) warp_base = atomicAdd(&sh.collate, (unsigned)__popc(ballot)); /* InK eq. 5, per warp */
  warp_base = __shfl_sync(IR_INK_FULL_MASK, warp_base, 0);
  *dest = (warp_base - start) + (unsigned)__popc(ballot & ir_ink_lanemask_lt()); /* eq. 6 */
  __syncthreads();
  return sh.collate - start;
}

template <int BLOCK>
static __device__ __forceinline__ unsigned ir_block_cub_select(bool keep, unsigned *dest,
                                                               ir_block_compact_shared<BLOCK> &sh) {
  unsigned count;
  cub::BlockScan<unsigned, BLOCK>(sh.cub).ExclusiveSum(keep ? 1u : 0u, *dest, count);
  return count;
}

template <int BLOCK>
static __device__ __forceinline__ unsigned ir_block_jumping_jack(bool keep, unsigned n, unsigned *dest,
                                                                 ir_block_compact_shared<BLOCK> &sh) {
  const unsigned t = threadIdx.x;
  const unsigned ballot = __ballot_sync(IR_INK_FULL_MASK, keep);
  if ((t & 31u) == 0) sh.bits[t >> 5] = ballot;
  unsigned valid_before;
  const unsigned v = ir_block_scan(keep ? 1u : 0u, 1, sh.warp_scan, &valid_before); /* its barriers publish the bits */
  if (t < n) sh.mas[t] = (uint16_t)(n - ((t + 1) - (valid_before + (keep ? 1u : 0u)))); /* eq. 1: n - pSum[t] */
  __syncthreads();
  if (t < v) { /* Algorithm 2: slot t takes the first valid element its jumps land on */
    unsigned idx = t, jumps = 0;
    while (!ir_bit_of(sh.bits, idx)) {
      idx = sh.mas[idx];
      if (++jumps > BLOCK) __trap(); /* cannot happen: the paper's one-to-one mapping */
    }
    sh.dest[idx] = (uint16_t)t;
  }
  __syncthreads();
  if (keep) *dest = sh.dest[t];
  return v;
}

template <int BLOCK>
static __device__ __forceinline__ unsigned ir_block_redzone(bool keep, unsigned n, unsigned *dest,
                                                            ir_block_compact_shared<BLOCK> &sh) {
  const unsigned t = threadIdx.x;
  if (t < BLOCK / 32) sh.bits[t] = 0;
  const bool removed = t < n && !keep;
  unsigned at;
  const unsigned k = ir_block_scan(removed ? 1u : 0u, 1, sh.warp_scan, &at);
  if (removed) sh.rz.removal[at] = (uint16_t)t; /* R */
  const unsigned z = n - k;                      /* the red zone Z = [z, n) */
  __syncthreads();
  /* Phase 1 (lines 3-4): mark the removed items of the red zone as invalid sources. */
  const unsigned r = t < k ? sh.rz.removal[t] : 0u;
  if (t < k && r >= z) atomicOr(&sh.bits[(r - z) >> 5], 1u << ((r - z) & 31u));
  __syncthreads();
  /* Phase 2 (lines 5-15): pair Z[t] with R[t]. */
  const bool deleted = t < k && ir_bit_of(sh.bits, t), in_zone = r >= z;
  if (t < k && !in_zone && !deleted) sh.dest[z + t] = (uint16_t)r; /* case A */
  const bool src_orphan = t < k && in_zone && !deleted;             /* case D */
  const bool dst_orphan = t < k && !in_zone && deleted;             /* case C */
  unsigned src_at, dst_at;
  const unsigned orphans = ir_block_scan(src_orphan ? 1u : 0u, 1, sh.warp_scan, &src_at);
  if (src_orphan) sh.rz.src_orphans[src_at] = (uint16_t)(z + t);
  __syncthreads(); /* warp_scan is read by every thread before the second scan writes it */
  const unsigned dst_orphans = ir_block_scan(dst_orphan ? 1u : 0u, 1, sh.warp_scan, &dst_at);
  if (dst_orphan) sh.rz.dst_orphans[dst_at] = (uint16_t)r;
  if (orphans != dst_orphans) __trap(); /* Lemma 4.2: only a list of repeated slots gets here */
  __syncthreads();
  /* Phase 3 (lines 16-17): each source orphan fills a destination orphan. */
  if (t < orphans) sh.dest[sh.rz.src_orphans[t]] = sh.rz.dst_orphans[t];
  __syncthreads();
  if (keep) *dest = t < z ? t : sh.dest[t]; /* kept records outside the zone stay */
  return z;
}

/* The records of threads with `keep` into slots [base, base + count) by `method`; returns count
 * (every thread). See the top of the file for the contract. */
template <int BLOCK, int W>
static __device__ __forceinline__ unsigned ir_block_compact(ir_compact_method method, bool keep,
                                                            const uint32_t (&rec)[W], ir_pool<W> pool, unsigned base,
                                                            unsigned n, ir_block_compact_shared<BLOCK> &sh) {
  keep = keep && threadIdx.x < n;
  unsigned dest = 0, count;
  switch (method) {
  case IR_COMPACT_INK_COMPACT: count = ir_block_ink_compact<BLOCK>(keep, &dest, sh); break;
  case IR_COMPACT_INK_COLLATE: count = ir_block_ink_collate<BLOCK>(keep, &dest, sh); break;
  case IR_COMPACT_THRUST: count = ir_block_cub_select<BLOCK>(keep, &dest, sh); break;
  case IR_COMPACT_JUMPING_JACK: count = ir_block_jumping_jack<BLOCK>(keep, n, &dest, sh); break;
  default: count = ir_block_redzone<BLOCK>(keep, n, &dest, sh); break;
  }
  if (keep) pool.store(base + dest, rec);
  __syncthreads();
  return count;
}

#endif
