/* Redzone: in-place, unstable removal of k listed indices from a list of n in O(k) work.
 *
 * Bontes, Gain, "Redzone stream compaction: removing k items from a list in parallel O(k)
 * time", 2024, section 4. The last k slots of the list are the red zone Z (z = n - k). Phase 1
 * marks the red-zone items that are themselves removed; phase 2 pairs source Z[i] with
 * destination R[i]: a valid source fills a hole outside the zone at once (case A), and the
 * unmatched ones become source orphans (Z', case D) and destination orphans (R', case C);
 * phase 3 pairs the orphans (|Z'| = |R'|, the paper's Lemma 4.2). Algorithm 1 (one block, the
 * orphan counters in shared memory) serves small k; Algorithm 2 (many blocks, per-block
 * segments, orphan counts combined by prefix sums and load-balanced in phase 3) the rest.
 *
 * Departures from the paper, and why:
 *   - Marks: the paper marks deleted items in A itself ("provided that unused state space is
 *     available"). Our elements are arbitrary 32-bit values with no spare bit, so phase 1 sets
 *     bits in a k-bit scratch bitmap. It is zero between calls: phase 3 clears the k/32 words
 *     phase 1 used (Algorithm 1 keeps it in shared memory), so no memset sized by the capacity
 *     or by max_k is needed and the device-count form stays O(k).
 *   - R is the caller's const list, so destination orphans R' go to scratch (O(k) space) rather
 *     than in place; source orphans Z' are stored in place in the red zone as in the paper.
 *   - Orphan offsets in phase 2 come from the InK ballot/popc block scan (the paper's
 *     PrefixSumToIndex); the load balancer of phase 3 (Algorithm 3) is a binary search of the
 *     per-block orphan prefix sums held in shared memory.
 *   - The precondition (distinct indices below n) is checked on the way, in O(k): phase 1 refuses
 *     an index >= n and a red-zone index whose mark is already set; phase 3 refuses orphan counts
 *     that differ (Lemma 4.2 holds only for a valid list). A refused list leaves the data
 *     untouched (phases 2 and 3 skip), sets the count to n and records the reason in the
 *     context (ir_compact_device_error), so a bad list can never make phase 3 write out of
 *     bounds. A duplicate outside the red zone cannot be seen in O(k) without an n-bit map: it
 *     loses one kept item but writes nothing out of bounds; debug builds check every list in
 *     full before running (ir_check_removals).
 *   - With a device-side k (the _dn calls) both algorithms are launched and each returns at once
 *     unless it applies, so small lists keep the one-block path.
 */
#include "compaction/tile.cuh"

#define RZ_THREADS 1024         /* the paper's blocks of 1024 threads */
#define RZ_SINGLE_BLOCK_MAX 4096 /* Algorithm 1 up to this k: one launch, one batch */
#define RZ_ITEMS 4               /* pairs per thread and batch */
IR_ASSERT_BLOCK_THREADS(RZ_THREADS);
static_assert(RZ_THREADS == IR_RZ_MAX_BLOCKS, "phase 3 scans one per-block count per thread");

typedef struct rz_args {
  uint32_t *data;
  size_t n_max;
  const uint32_t *d_n;
  const uint32_t *remove;
  size_t k_max;
  const uint32_t *d_k;
  uint32_t *marks;        /* phase 1 bitmap over the red zone */
  uint32_t *orphans;      /* destination orphans R' */
  uint32_t *block_counts; /* [p]: source orphans of block p, [IR_RZ_MAX_BLOCKS + p]: destination */
  uint32_t *count;
  uint32_t *error;        /* ctx->words + IR_CTX_WORD_DEVICE_ERROR: kind, value (sticky) */
} rz_args;

struct rz_sizes {
  unsigned n, k, z;
};

static __device__ __forceinline__ rz_sizes rz_sizes_of(const rz_args &a) {
  rz_sizes s;
  s.n = (unsigned)ir_device_n(a.n_max, a.d_n);
  s.k = min((unsigned)ir_device_n(a.k_max, a.d_k), s.n);
  s.z = s.n - s.k;
  return s;
}

static __device__ __forceinline__ bool rz_marked(const uint32_t *marks, unsigned i) {
  return marks[i >> 5] >> (i & 31u) & 1u;
}

/* Records the first bad input the kernels find (kind, value); later calls see it and skip. */
static __device__ __forceinline__ void rz_report(const rz_args &a, unsigned kind, unsigned value) {
  if (atomicCAS(&a.error[0], 0u, kind) == 0u) atomicExch(&a.error[1], value);
}

/* Nonzero when this or an earlier call found bad input (set by an earlier kernel of the stream). */
static __device__ __forceinline__ bool rz_failed(const rz_args &a) { return __ldcg(&a.error[0]) != 0u; }

/* Phase 1 for one removal index r, with the precondition check: r below n, and no red-zone index
 * twice (its mark is already set). Returns false for a bad index. */
static __device__ __forceinline__ bool rz_mark(const rz_args &a, const rz_sizes &s, uint32_t *marks, uint32_t r) {
  if (r >= s.n) {
    rz_report(a, IR_DEVICE_ERROR_INDEX_RANGE, r);
    return false;
  }
  if (r < s.z) return true;
  const uint32_t bit = 1u << ((r - s.z) & 31u);
  if (atomicOr(&marks[(r - s.z) >> 5], bit) & bit) {
    rz_report(a, IR_DEVICE_ERROR_DUPLICATE, r);
    return false;
  }
  return true;
}

/* Algorithm 2 runs for k > RZ_SINGLE_BLOCK_MAX; with a device-side k both algorithms are
 * launched and the one that does not apply returns at once. */
static __device__ __forceinline__ bool rz_algorithm2(const rz_sizes &s) { return s.k > RZ_SINGLE_BLOCK_MAX; }

/* Phase 1 (lines 3-4): mark the removed items of the red zone as invalid sources. */
__global__ void redzone_phase1(rz_args a) {
  const rz_sizes s = rz_sizes_of(a);
  if (!rz_algorithm2(s)) return;
  const unsigned stride = gridDim.x * blockDim.x;
  for (unsigned i0 = blockIdx.x * blockDim.x + threadIdx.x; i0 < s.k; i0 += RZ_ITEMS * stride) {
    uint32_t r[RZ_ITEMS]; /* several loads in flight per thread */
#pragma unroll
    for (int q = 0; q < RZ_ITEMS; q++) r[q] = i0 + q * stride < s.k ? a.remove[i0 + q * stride] : 0u;
#pragma unroll
    for (int q = 0; q < RZ_ITEMS; q++)
      if (i0 + q * stride < s.k) rz_mark(a, s, a.marks, r[q]);
  }
}

/* Phase 2 (lines 5-15) over R[start..end), RZ_ITEMS pairs per thread and batch (more loads in
 * flight, fewer barriers): case A moves at once, cases C and D append to the orphan lists.
 * Block-uniform; all threads return the same counts. */
static __device__ void rz_pair_segment(const rz_args &a, const rz_sizes &s, const uint32_t *marks, unsigned start,
                                       unsigned end, unsigned *src_orphans, unsigned *dst_orphans) {
  __shared__ unsigned scan_src[33], scan_dst[33];
  unsigned j = 0, kk = 0;
  for (unsigned batch = start; batch < end; batch += RZ_ITEMS * blockDim.x) {
    uint32_t value[RZ_ITEMS], r[RZ_ITEMS];
#pragma unroll
    for (int q = 0; q < RZ_ITEMS; q++) {
      const unsigned i = batch + q * blockDim.x + threadIdx.x; /* coalesced per load */
      value[q] = i < end ? a.data[s.z + i] : 0u;
      r[q] = i < end ? a.remove[i] : 0u;
    }
    uint32_t src_mask = 0, dst_mask = 0;
#pragma unroll
    for (int q = 0; q < RZ_ITEMS; q++) {
      const unsigned i = batch + q * blockDim.x + threadIdx.x;
      if (i >= end) continue;
      const bool deleted = rz_marked(marks, i), in_zone = r[q] >= s.z;
      if (!in_zone && !deleted) a.data[r[q]] = value[q];         /* case A, line 15 */
      src_mask |= (uint32_t)(in_zone && !deleted) << q;           /* case D, lines 8-10 */
      dst_mask |= (uint32_t)(!in_zone && deleted) << q;           /* case C, lines 11-13 */
    }
    /* The barriers inside the block scans order the batch's reads of Z before the Z' writes
     * (the local synchronisation of paper §4.4); Z' never passes the batch's read index. */
    unsigned src_at, dst_at;
    const unsigned src_n = ir_tile_offset<RZ_ITEMS>(src_mask, scan_src, &src_at);
    const unsigned dst_n = ir_tile_offset<RZ_ITEMS>(dst_mask, scan_dst, &dst_at);
#pragma unroll
    for (int q = 0; q < RZ_ITEMS; q++) {
      if (src_mask >> q & 1u) a.data[s.z + start + j + src_at++] = value[q]; /* Z' in place */
      if (dst_mask >> q & 1u) a.orphans[start + kk + dst_at++] = r[q];
    }
    j += src_n;
    kk += dst_n;
  }
  *src_orphans = j;
  *dst_orphans = kk;
}

/* Algorithm 1: all three phases in one block, marks in shared memory. A bad list (or an earlier
 * call's) leaves the data untouched and the count at n. */
__global__ void __launch_bounds__(RZ_THREADS) redzone_single_block(rz_args a) {
  __shared__ uint32_t marks[RZ_SINGLE_BLOCK_MAX / 32];
  const rz_sizes s = rz_sizes_of(a);
  if (rz_algorithm2(s)) return;
  for (unsigned w = threadIdx.x; w < RZ_SINGLE_BLOCK_MAX / 32; w += blockDim.x) marks[w] = 0;
  __syncthreads();
  bool good = true;
  for (unsigned i = threadIdx.x; i < s.k; i += blockDim.x) good &= rz_mark(a, s, marks, a.remove[i]); /* phase 1 */
  if (__syncthreads_or(!good) || rz_failed(a)) {
    if (threadIdx.x == 0) *a.count = s.n;
    return;
  }
  unsigned orphans, dst_orphans;
  rz_pair_segment(a, s, marks, 0, s.k, &orphans, &dst_orphans); /* phase 2 */
  if (orphans != dst_orphans) { /* Lemma 4.2 fails: only a bad list gets here */
    if (threadIdx.x == 0) {
      rz_report(a, IR_DEVICE_ERROR_ORPHANS, orphans);
      *a.count = s.n;
    }
    return;
  }
  __syncthreads(); /* global writes of phase 2 visible to the whole block */
  for (unsigned t = threadIdx.x; t < orphans; t += blockDim.x) /* phase 3, lines 16-17 */
    a.data[a.orphans[t]] = a.data[s.z + t];
  if (threadIdx.x == 0) *a.count = s.n - s.k;
}

/* Algorithm 2, phase 2: block p owns R[p*seg ..) and Z[p*seg ..). Skipped after a bad list. */
__global__ void __launch_bounds__(RZ_THREADS) redzone_phase2(rz_args a) {
  const rz_sizes s = rz_sizes_of(a);
  if (!rz_algorithm2(s) || rz_failed(a)) return;
  const unsigned seg = (s.k + gridDim.x - 1) / gridDim.x;
  const unsigned start = min(blockIdx.x * seg, s.k), end = min(start + seg, s.k);
  unsigned src, dst;
  rz_pair_segment(a, s, a.marks, start, end, &src, &dst);
  if (threadIdx.x == 0) {
    a.block_counts[blockIdx.x] = src;
    a.block_counts[IR_RZ_MAX_BLOCKS + blockIdx.x] = dst;
  }
}

/* Algorithm 3: the segment holding orphan t, given the prefix sums S[0..blocks]. */
static __device__ __forceinline__ unsigned rz_load_balance(const unsigned *S, unsigned blocks, unsigned t) {
  unsigned lo = 0, hi = blocks; /* largest b with S[b] <= t */
  while (hi - lo > 1) {
    const unsigned mid = (lo + hi) / 2;
    if (S[mid] <= t) lo = mid;
    else hi = mid;
  }
  return lo;
}

/* Algorithm 2, phase 3: pair source and destination orphans across the segments; then clear
 * the marks phase 1 set (k bits), so that the bitmap is zero for the next call without a memset
 * sized by anything but k. */
__global__ void __launch_bounds__(RZ_THREADS) redzone_phase3(rz_args a, unsigned phase2_blocks) {
  __shared__ unsigned J[IR_RZ_MAX_BLOCKS + 1], K[IR_RZ_MAX_BLOCKS + 1];
  __shared__ unsigned warp_scan[33];
  const rz_sizes s = rz_sizes_of(a);
  if (!rz_algorithm2(s)) return;
  const unsigned stride = gridDim.x * blockDim.x;
  for (unsigned w = blockIdx.x * blockDim.x + threadIdx.x; w < (s.k + 31) / 32; w += stride) a.marks[w] = 0;
  const bool failed = rz_failed(a); /* before anything this kernel reports */
  __syncthreads();
  const unsigned seg = (s.k + phase2_blocks - 1) / phase2_blocks;
  { /* phase2_blocks <= IR_RZ_MAX_BLOCKS == blockDim.x: one count per thread */
    const unsigned p = threadIdx.x;
    unsigned ex;
    const unsigned src = p < phase2_blocks ? a.block_counts[p] : 0u;
    const unsigned total_src = ir_block_scan(src, 32, warp_scan, &ex);
    if (p < phase2_blocks) J[p] = ex;
    if (p == 0) J[phase2_blocks] = total_src;
    __syncthreads();
    const unsigned dst = p < phase2_blocks ? a.block_counts[IR_RZ_MAX_BLOCKS + p] : 0u;
    const unsigned total_dst = ir_block_scan(dst, 32, warp_scan, &ex);
    if (p < phase2_blocks) K[p] = ex;
    if (p == 0) K[phase2_blocks] = total_dst;
    __syncthreads();
  }
  const unsigned orphans = J[phase2_blocks];
  if (failed || orphans != K[phase2_blocks]) { /* Lemma 4.2 fails only for a bad list */
    if (blockIdx.x == 0 && threadIdx.x == 0) {
      if (!failed) rz_report(a, IR_DEVICE_ERROR_ORPHANS, orphans);
      *a.count = s.n;
    }
    return;
  }
  for (unsigned t0 = blockIdx.x * blockDim.x + threadIdx.x; t0 < orphans; t0 += RZ_ITEMS * stride) {
    uint32_t value[RZ_ITEMS], dst[RZ_ITEMS]; /* several pairs in flight per thread */
#pragma unroll
    for (int q = 0; q < RZ_ITEMS; q++) {
      const unsigned t = t0 + q * stride;
      if (t < orphans) {
        const unsigned bs = rz_load_balance(J, phase2_blocks, t);
        const unsigned bd = rz_load_balance(K, phase2_blocks, t);
        value[q] = a.data[s.z + bs * seg + (t - J[bs])];
        dst[q] = a.orphans[bd * seg + (t - K[bd])];
      }
    }
#pragma unroll
    for (int q = 0; q < RZ_ITEMS; q++)
      if (t0 + q * stride < orphans) a.data[dst[q]] = value[q];
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) *a.count = s.n - s.k;
}

extern "C" cudaError_t ir_redzone_remove(ir_compact_ctx *ctx, uint32_t *d_data, size_t n_max, const uint32_t *d_n,
                                         const uint32_t *d_remove, size_t k_max, const uint32_t *d_k,
                                         uint32_t *d_count, cudaStream_t stream) {
  rz_args a = {d_data, n_max, d_n, d_remove, k_max, d_k, ctx->rz_marks, ctx->rz_orphans, ctx->rz_block_counts,
               d_count, ctx->words + IR_CTX_WORD_DEVICE_ERROR};
  /* Algorithm 1 when k can be small (each kernel checks the real k and returns if the other
   * algorithm applies); Algorithm 2 when it can be large. Launch sizes depend on k_max only
   * through a cap of a few blocks per SM, and no memset depends on it: O(k) work for any k. */
  if (k_max <= RZ_SINGLE_BLOCK_MAX || d_k || d_n) {
    redzone_single_block<<<1, RZ_THREADS, 0, stream>>>(a);
    IR_LAUNCH_TRY(ctx, "redzone_single_block");
  }
  if (k_max <= RZ_SINGLE_BLOCK_MAX) return cudaSuccess;
  const unsigned blocks = (unsigned)min((size_t)min(2 * ctx->sm_count, IR_RZ_MAX_BLOCKS),
                                        (k_max + RZ_THREADS - 1) / RZ_THREADS);
  const unsigned phase1_blocks = (unsigned)min((size_t)8 * ctx->sm_count, (k_max + 255) / 256);
  redzone_phase1<<<phase1_blocks, 256, 0, stream>>>(a);
  IR_LAUNCH_TRY(ctx, "redzone_phase1");
  redzone_phase2<<<blocks, RZ_THREADS, 0, stream>>>(a);
  IR_LAUNCH_TRY(ctx, "redzone_phase2");
  redzone_phase3<<<blocks, RZ_THREADS, 0, stream>>>(a, blocks);
  IR_LAUNCH_TRY(ctx, "redzone_phase3");
  return cudaSuccess;
}

/* Out of place: the removal list is derived from the selection (one pass over the flags, an
 * InK-Collate of the indices of the rejected elements: n flag bytes read, 4k bytes written), the
 * input is copied to the output (4n read, 4n written) and Redzone removes in place there. The
 * copy and the derivation cost O(n): this form exists for a uniform interface, not for speed. */
extern "C" cudaError_t ir_redzone_flagged(ir_compact_ctx *ctx, const ir_compact_job *job) {
  ir_select sel = ir_select_from_job(job);
  sel.invert = true;
  sel.emit_index = true;
  uint32_t *d_k = ctx->words + IR_CTX_WORD_REMOVALS;
  cudaError_t err = ir_ink_collate_select(ctx, sel, job->n, job->d_n, ctx->indices, d_k, job->stream);
  if (err != cudaSuccess) return err;
  if (job->d_n) {
    err = ir_copy_device_len(ctx, job->out, job->in, job->n, job->d_n, job->stream);
    if (err != cudaSuccess) return err;
  } else {
    IR_CUDA_TRY(ctx, cudaMemcpyAsync(job->out, job->in, job->n * sizeof(uint32_t), cudaMemcpyDeviceToDevice,
                                     job->stream));
  }
  return ir_redzone_remove(ctx, job->out, job->n, job->d_n, ctx->indices, job->n, d_k, job->count, job->stream);
}
