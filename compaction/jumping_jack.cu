/* Jumping Jack: non-monotonic stream compaction by max-allowable-size (MAS) jump search.
 *
 * Moreira, Reis, de Sousa, "Jumping Jack: A Parallel Algorithm for Non-Monotonic Stream
 * Compaction", GRAPP 2009, sections 3.4-5. For a stream of s elements, v of them valid:
 * pSum[i] counts the invalid elements up to and including i, MAS[i] = s - pSum[i] (eq. 1), and
 * output slot i < v takes the first valid element met by idx = i; while invalid(idx): idx =
 * MAS[idx] (Algorithm 2). Each slot finds a different valid element.
 *
 * How the 2009 form maps to CUDA. The paper ran on OpenGL 2 fragment programs with the stream in
 * a 2-D float texture, in the block-based form of its section 3.4 / Fig. 8: stage 1 splits the
 * stream into blocks, stage 2 compacts each block (Jumping Jack on that block's own prefix sum)
 * and stage 3 concatenates the compacted blocks at displacements from an inter-block prefix sum,
 * drawing them as textured lines. Here a "block" is a tile of JJ_TILE elements held by one CUDA
 * block: the flags and values go to shared memory, a ballot/popc block scan gives pSum and MAS
 * (the paper's recursive doubling or balanced tree), and the jump search runs over shared memory,
 * so the worst case - one valid element in the middle of a sparse tile - costs at most
 * JJ_TILE - 1 jumps. Stage 3 becomes one atomicAdd per tile for its displacement: the output is non-monotonic
 * anyway, so the order of the tiles need not follow the input, and the separate counting pass
 * and inter-block scan of the paper disappear. (A self-resetting total as in ink_collate.cu
 * would save the memset, but its second atomic per tile costs more than that at 1024-element
 * tiles: same-address atomics serialise in L2.) Writes of a tile's slots 0..v-1 are
 * consecutive, so they coalesce (the gather happens in shared memory).
 */
#include "compaction/tile.cuh"

#define JJ_ITEMS 4
#define JJ_TILE (IR_TILE_THREADS * JJ_ITEMS) /* 1024: bounds the jumps of the worst case */

/* One tile: the block's shared memory holds the values, the keep bits and MAS. */
struct jj_tile_shared {
  uint4 values4[JJ_TILE / 4];
  uint16_t mas[JJ_TILE];
  uint8_t keep_mask[IR_TILE_THREADS]; /* bit j of entry t: element t * JJ_ITEMS + j valid */
  unsigned warp_scan[33];
  unsigned tile_base;
};

static __device__ __forceinline__ void jumping_jack_tile(const ir_select &sel, size_t tile_start, size_t n, bool vec,
                                         uint32_t *__restrict__ out, uint32_t *count, jj_tile_shared &sh) {
  const unsigned s = (unsigned)min((size_t)JJ_TILE, n - tile_start); /* this tile's stream length */
  uint32_t v[JJ_ITEMS];
  const uint32_t mask = ir_tile_load<JJ_ITEMS>(sel, tile_start, n, vec, v);
  sh.values4[threadIdx.x] = make_uint4(v[0], v[1], v[2], v[3]);
  sh.keep_mask[threadIdx.x] = (uint8_t)mask;

  /* pSum (invalid elements up to and including each one) by the block scan of the valid ones:
   * pSum[e] = (e + 1) - (valid elements up to and including e). */
  unsigned valid_before;
  const unsigned valid_total = ir_tile_offset<JJ_ITEMS>(mask, sh.warp_scan, &valid_before);
  unsigned valid_incl = valid_before;
#pragma unroll
  for (int j = 0; j < JJ_ITEMS; j++) {
    const unsigned e = threadIdx.x * JJ_ITEMS + j;
    valid_incl += mask >> j & 1u;
    if (e < s) sh.mas[e] = (uint16_t)(s - ((e + 1) - valid_incl)); /* eq. 1 */
  }
  if (threadIdx.x == 0 && valid_total) sh.tile_base = atomicAdd(count, valid_total); /* stage 3 */
  __syncthreads();

  /* Algorithm 2 on the tile: slot i < v takes the valid element its jumps land on. */
  const uint32_t *values = reinterpret_cast<const uint32_t *>(sh.values4);
  for (unsigned i = threadIdx.x; i < valid_total; i += IR_TILE_THREADS) {
    unsigned idx = i, jumps = 0;
    while (!(sh.keep_mask[idx / JJ_ITEMS] >> (idx % JJ_ITEMS) & 1u)) {
      idx = sh.mas[idx];
      if (++jumps >= JJ_TILE) __trap(); /* cannot happen (the paper's one-to-one mapping) */
    }
    out[sh.tile_base + i] = values[idx];
  }
}

__global__ void __launch_bounds__(IR_TILE_THREADS)
    jumping_jack_tiles(ir_select sel, size_t n_max, const uint32_t *d_n, bool vec, uint32_t *__restrict__ out,
                       uint32_t *count) {
  __shared__ jj_tile_shared sh;
  const size_t n = ir_device_n(n_max, d_n);
  const size_t tile_start = (size_t)blockIdx.x * JJ_TILE;
  if (tile_start < n) jumping_jack_tile(sel, tile_start, n, vec, out, count, sh); /* block-uniform */
}

extern "C" cudaError_t ir_jumping_jack_run(ir_compact_ctx *ctx, const ir_compact_job *job) {
  const ir_select sel = ir_select_from_job(job);
  IR_CUDA_TRY(ctx, cudaMemsetAsync(job->count, 0, sizeof(uint32_t), job->stream));
  jumping_jack_tiles<<<ir_tile_count(job->n, JJ_TILE), IR_TILE_THREADS, 0, job->stream>>>(
      sel, job->n, job->d_n, ir_select_vectorizable(&sel), job->out, job->count);
  IR_LAUNCH_TRY(ctx, "jumping_jack_tiles");
  return cudaSuccess;
}
