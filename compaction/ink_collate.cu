/* InK-Collate out of kernel (the "OfK" wrapper of InK §4): one kernel over tiles; each tile is
 * compacted in shared memory with InK §2.1-2.2 offsets and reserves its place in the output with
 * one atomicAdd (InK §2.4 eq. 5). Order is kept within a tile, not between tiles. The running
 * total lives in the context and resets itself (ir_grid_total_arrive), so a call is one launch.
 *
 * Departure from the paper: a block takes a tile of IR_TILE_THREADS * 16 (or 4) elements rather
 * than one element per thread, so that the atomic is paid once per tile and the tile's
 * survivors leave as one coalesced run (the in-kernel emit in compaction_device.cuh is the
 * paper's form). */
#include "compaction/tile.cuh"

/* Large streams: 4096-element tiles, one atomic pair per tile. Small ones (a single wave of
 * blocks): 1024-element tiles, so that each block's chain of latencies is short. */
#define IR_COLLATE_ITEMS 16
#define IR_COLLATE_ITEMS_SMALL 4
#define IR_COLLATE_SMALL_N ((size_t)1 << 22)

template <int ITEMS>
__global__ void __launch_bounds__(IR_TILE_THREADS)
    ink_collate_tiles(ir_select sel, size_t n_max, const uint32_t *d_n, bool vec, uint32_t *__restrict__ out,
                      unsigned *grid_total, uint32_t *count) {
  __shared__ uint32_t staged[IR_TILE_THREADS * ITEMS];
  __shared__ unsigned warp_scan[33];
  __shared__ unsigned tile_base;
  const size_t n = ir_device_n(n_max, d_n);
  const size_t tile_start = (size_t)blockIdx.x * (IR_TILE_THREADS * ITEMS);
  if (tile_start < n) { /* block-uniform: a device-side n may end before the launch does */
    uint32_t v[ITEMS];
    const uint32_t mask = ir_tile_load<ITEMS>(sel, tile_start, n, vec, v);
    unsigned offset;
    /* InK §2.4 eq. 5: the scan reserves the tile's place as soon as warp 0 has the total */
    const unsigned total = ir_tile_offset<ITEMS>(mask, warp_scan, &offset, grid_total, &tile_base);
    ir_tile_stage<ITEMS>(mask, v, offset, staged);
    __syncthreads();
    for (unsigned i = threadIdx.x; i < total; i += IR_TILE_THREADS) out[tile_base + i] = staged[i];
  }
  if (threadIdx.x == 0) ir_grid_total_arrive(grid_total, count);
}

cudaError_t ir_ink_collate_select(ir_compact_ctx *ctx, const ir_select &sel, size_t n_max, const uint32_t *d_n,
                                  uint32_t *out, uint32_t *count, cudaStream_t stream) {
  unsigned *grid_total = ctx->words + IR_CTX_WORD_GRID_TOTAL;
  if (n_max <= IR_COLLATE_SMALL_N)
    ink_collate_tiles<IR_COLLATE_ITEMS_SMALL>
        <<<ir_tile_count(n_max, IR_TILE_THREADS * IR_COLLATE_ITEMS_SMALL), IR_TILE_THREADS, 0, stream>>>(
            sel, n_max, d_n, ir_select_vectorizable(&sel), out, grid_total, count);
  else
    ink_collate_tiles<IR_COLLATE_ITEMS>
        <<<ir_tile_count(n_max, IR_TILE_THREADS * IR_COLLATE_ITEMS), IR_TILE_THREADS, 0, stream>>>(
            sel, n_max, d_n, ir_select_vectorizable(&sel), out, grid_total, count);
  IR_LAUNCH_TRY(ctx, "ink_collate_tiles");
  return cudaSuccess;
}

extern "C" cudaError_t ir_ink_collate_run(ir_compact_ctx *ctx, const ir_compact_job *job) {
  return ir_ink_collate_select(ctx, ir_select_from_job(job), job->n, job->d_n, job->out, job->count,
                               job->stream);
}
