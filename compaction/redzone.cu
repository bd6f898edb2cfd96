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
 *     bits in a k-bit scratch bitmap (k/8 bytes, zeroed per call: still O(k)).
 *   - R is the caller's const list, so destination orphans R' go to scratch (O(k) space) rather
 *     than in place; source orphans Z' are stored in place in the red zone as in the paper.
 *   - Orphan offsets in phase 2 come from the InK ballot/popc block scan (the paper's
 *     PrefixSumToIndex); the load balancer of phase 3 (Algorithm 3) is a binary search of the
 *     per-block orphan prefix sums held in shared memory.
 *   - Duplicates in R are a caller error; debug builds check for them (and for indices >= n)
 *     before running (ir_check_removals, context.c), release builds do not.
 */
#include "compaction/tile.cuh"

#define RZ_THREADS 1024         /* the paper's blocks of 1024 threads */
#define RZ_SINGLE_BLOCK_MAX 4096 /* Algorithm 1 up to this k: one launch, one batch */
#define RZ_ITEMS 4               /* pairs per thread and batch */

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

/* Phase 1 (lines 3-4): mark the removed items of the red zone as invalid sources. */
__global__ void redzone_phase1(rz_args a) {
  const rz_sizes s = rz_sizes_of(a);
  const unsigned stride = gridDim.x * blockDim.x;
  for (unsigned i0 = blockIdx.x * blockDim.x + threadIdx.x; i0 < s.k; i0 += RZ_ITEMS * stride) {
    uint32_t r[RZ_ITEMS]; /* several loads in flight per thread */
#pragma unroll
    for (int q = 0; q < RZ_ITEMS; q++) r[q] = i0 + q * stride < s.k ? a.remove[i0 + q * stride] : 0u;
#pragma unroll
    for (int q = 0; q < RZ_ITEMS; q++)
      if (i0 + q * stride < s.k && r[q] >= s.z && r[q] < s.n)
        atomicOr(&a.marks[(r[q] - s.z) >> 5], 1u << ((r[q] - s.z) & 31u));
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

/* Algorithm 1: all three phases in one block, marks in shared memory. */
__global__ void __launch_bounds__(RZ_THREADS) redzone_single_block(rz_args a) {
  __shared__ uint32_t marks[RZ_SINGLE_BLOCK_MAX / 32];
  const rz_sizes s = rz_sizes_of(a);
  for (unsigned w = threadIdx.x; w < RZ_SINGLE_BLOCK_MAX / 32; w += blockDim.x) marks[w] = 0;
  __syncthreads();
  for (unsigned i = threadIdx.x; i < s.k; i += blockDim.x) { /* phase 1 */
    const unsigned r = a.remove[i];
    if (r >= s.z && r < s.n) atomicOr(&marks[(r - s.z) >> 5], 1u << ((r - s.z) & 31u));
  }
  __syncthreads();
  unsigned orphans, dst_orphans;
  rz_pair_segment(a, s, marks, 0, s.k, &orphans, &dst_orphans); /* phase 2 */
  __syncthreads(); /* global writes of phase 2 visible to the whole block */
  for (unsigned t = threadIdx.x; t < orphans; t += blockDim.x) /* phase 3, lines 16-17 */
    a.data[a.orphans[t]] = a.data[s.z + t];
  if (threadIdx.x == 0) *a.count = s.n - s.k;
}

/* Algorithm 2, phase 2: block p owns R[p*seg ..) and Z[p*seg ..). */
__global__ void __launch_bounds__(RZ_THREADS) redzone_phase2(rz_args a) {
  const rz_sizes s = rz_sizes_of(a);
  const unsigned seg = (s.k + gridDim.x - 1) / gridDim.x;
  const unsigned start = min(blockIdx.x * seg, s.k), end = min(start + seg, s.k);
  unsigned src, dst;
  rz_pair_segment(a, s, a.marks, start, end, &src, &dst);
  if (threadIdx.x == 0) {
    a.block_counts[blockIdx.x] = src;
    a.block_counts[IR_RZ_MAX_BLOCKS + blockIdx.x] = dst;
  }
}

/* Exclusive scan of one value per thread over the block (blockDim.x <= 1024); returns the total. */
static __device__ unsigned rz_block_scan(unsigned value, unsigned *warp_sums, unsigned *exclusive) {
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  unsigned incl = value;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const unsigned up = __shfl_up_sync(IR_INK_FULL_MASK, incl, d);
    if (lane >= (unsigned)d) incl += up;
  }
  if (lane == 31) warp_sums[warp] = incl;
  __syncthreads();
  if (warp == 0) {
    unsigned w = lane < (blockDim.x >> 5) ? warp_sums[lane] : 0u, wincl = w;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const unsigned up = __shfl_up_sync(IR_INK_FULL_MASK, wincl, d);
      if (lane >= (unsigned)d) wincl += up;
    }
    warp_sums[lane] = wincl - w;
    if (lane == 31) warp_sums[32] = wincl;
  }
  __syncthreads();
  *exclusive = warp_sums[warp] + incl - value;
  return warp_sums[32];
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

/* Algorithm 2, phase 3: pair source and destination orphans across the segments. */
__global__ void __launch_bounds__(RZ_THREADS) redzone_phase3(rz_args a, unsigned phase2_blocks) {
  __shared__ unsigned J[IR_RZ_MAX_BLOCKS + 1], K[IR_RZ_MAX_BLOCKS + 1];
  __shared__ unsigned warp_sums[33];
  const rz_sizes s = rz_sizes_of(a);
  const unsigned seg = (s.k + phase2_blocks - 1) / phase2_blocks;
  { /* phase2_blocks <= IR_RZ_MAX_BLOCKS == blockDim.x: one count per thread */
    const unsigned p = threadIdx.x;
    unsigned ex;
    const unsigned src = p < phase2_blocks ? a.block_counts[p] : 0u;
    const unsigned total_src = rz_block_scan(src, warp_sums, &ex);
    if (p < phase2_blocks) J[p] = ex;
    if (p == 0) J[phase2_blocks] = total_src;
    __syncthreads();
    const unsigned dst = p < phase2_blocks ? a.block_counts[IR_RZ_MAX_BLOCKS + p] : 0u;
    const unsigned total_dst = rz_block_scan(dst, warp_sums, &ex);
    if (p < phase2_blocks) K[p] = ex;
    if (p == 0) K[phase2_blocks] = total_dst;
    __syncthreads();
  }
  const unsigned orphans = J[phase2_blocks]; /* == K[phase2_blocks], Lemma 4.2 */
  const unsigned stride = gridDim.x * blockDim.x;
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
               d_count};
  if (k_max <= RZ_SINGLE_BLOCK_MAX) {
    redzone_single_block<<<1, RZ_THREADS, 0, stream>>>(a);
    IR_LAUNCH_TRY(ctx, "redzone_single_block");
    return cudaSuccess;
  }
  const unsigned blocks = (unsigned)min((size_t)min(2 * ctx->sm_count, IR_RZ_MAX_BLOCKS),
                                        (k_max + RZ_THREADS - 1) / RZ_THREADS);
  IR_CUDA_TRY(ctx, cudaMemsetAsync(ctx->rz_marks, 0, (k_max / 32 + 1) * sizeof(uint32_t), stream));
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
