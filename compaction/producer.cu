/* The producer kernel of the in-kernel ("fused") benchmark, InK's real claim: a kernel that
 * computes a predicate per element and either emits the survivors itself (InK-Collate or
 * InK-Compact called at its end) or writes a sparse array plus flags for an out-of-kernel
 * compaction afterwards (what the paper's Thrust and Chag::PP pipelines do). All forms run the
 * same code up to the output, one element per thread. Block sizes: 256 threads for the sparse and
 * InK-Collate forms (8 blocks per SM hide the latency of each block's atomic and barriers), 1024
 * for InK-Compact, both forms: the paper's chained sections have one hop per 32 blocks, and a
 * look-back block waits for all earlier blocks, so larger blocks mean fewer waits. The _X4 and
 * _X16 forms take four or sixteen elements per thread in 256-thread blocks, their loads in flight
 * together, so that the memory system, not each block's chain of latencies, sets the pace; with
 * sixteen, a look-back block carries enough work to hide its wait (docs/compaction.md).
 *
 * The look-back producers index their work by blockIdx.x and pass it as the tile: they rely on
 * blocks being dispatched in index order (compaction_device.cuh, "Scheduling"), as the section
 * producer does; a ticket would put an atomic round trip before every block's loads. */
#include <stdlib.h>

#include "compaction/tile.cuh"

#define PRODUCER_THREADS 256
#define PRODUCER_SECTION_THREADS 1024
/* The one-element look-back producer: a block waits for every earlier block to have counted
 * itself, so fewer, larger blocks wait less (1024 threads: 1.83 ms against 2.34 ms for 256 at
 * 2^27, 2 % kept, on the H100). */
#define PRODUCER_LOOK_BACK_THREADS 1024

IR_ASSERT_BLOCK_THREADS(PRODUCER_THREADS);
IR_ASSERT_BLOCK_THREADS(PRODUCER_SECTION_THREADS);
IR_ASSERT_BLOCK_THREADS(PRODUCER_LOOK_BACK_THREADS);

static const char *const producer_names[IR_PRODUCER_COUNT] = {
    "sparse",         "ink-collate",    "ink-compact",     "ink-compact-sections", "sparse-x4",
    "ink-collate-x4", "ink-compact-x4", "sparse-x16",      "ink-collate-x16",      "ink-compact-x16"};

extern "C" const char *ir_compact_producer_name(ir_compact_producer p) {
  return (unsigned)p < IR_PRODUCER_COUNT ? producer_names[p] : "?";
}

extern "C" bool ir_compact_producer_keeps(uint32_t value, uint32_t keep_threshold) {
  return ir_compact_hash(value) < keep_threshold;
}

static __device__ __forceinline__ bool produce(const uint32_t *in, uint32_t keep_threshold, size_t n, size_t i,
                                               uint32_t *value) {
  *value = i < n ? in[i] : 0u;
  return i < n && ir_compact_hash(*value) < keep_threshold;
}

__global__ void __launch_bounds__(PRODUCER_THREADS)
    producer_sparse(const uint32_t *__restrict__ in, uint32_t keep_threshold, uint32_t *__restrict__ out,
                    uint8_t *__restrict__ flags, size_t n) {
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  uint32_t value;
  const bool keep = produce(in, keep_threshold, n, i, &value);
  if (i < n) {
    out[i] = keep ? value : 0u;
    flags[i] = keep;
  }
}

__global__ void __launch_bounds__(PRODUCER_THREADS)
    producer_collate(const uint32_t *__restrict__ in, uint32_t keep_threshold, uint32_t *__restrict__ out,
                     uint32_t *count, size_t n) {
  uint32_t value;
  const bool keep = produce(in, keep_threshold, n, (size_t)blockIdx.x * blockDim.x + threadIdx.x, &value);
  ir_ink_collate_emit(keep, value, out, count);
}

__global__ void __launch_bounds__(PRODUCER_LOOK_BACK_THREADS)
    producer_compact(const uint32_t *__restrict__ in, uint32_t keep_threshold, uint32_t *__restrict__ out,
                     uint32_t *count, size_t n, ir_ink_scan s) {
  uint32_t value;
  const bool keep = produce(in, keep_threshold, n, (size_t)blockIdx.x * blockDim.x + threadIdx.x, &value);
  ir_ink_compact_emit(keep, value, out, count, s);
}

__global__ void __launch_bounds__(PRODUCER_SECTION_THREADS)
    producer_compact_sections(const uint32_t *__restrict__ in, uint32_t keep_threshold, uint32_t *__restrict__ out,
                              uint32_t *count, size_t n, ir_ink_sections s) {
  uint32_t value;
  const bool keep = produce(in, keep_threshold, n, (size_t)blockIdx.x * blockDim.x + threadIdx.x, &value);
  ir_ink_compact_emit(keep, value, out, count, s);
}

/* ITEMS elements per thread, PRODUCER_THREADS apart (coalesced), all loads in flight before the
 * first predicate is tested. */
template <int ITEMS>
static __device__ __forceinline__ void produce_items(const uint32_t *in, uint32_t keep_threshold, size_t n,
                                                     size_t first, uint32_t (&value)[ITEMS], bool (&keep)[ITEMS]) {
#pragma unroll
  for (int j = 0; j < ITEMS; j++) {
    const size_t i = first + (size_t)j * PRODUCER_THREADS;
    value[j] = i < n ? in[i] : 0u;
  }
#pragma unroll
  for (int j = 0; j < ITEMS; j++)
    keep[j] = first + (size_t)j * PRODUCER_THREADS < n && ir_compact_hash(value[j]) < keep_threshold;
}

template <int ITEMS>
__global__ void __launch_bounds__(PRODUCER_THREADS)
    producer_sparse_items(const uint32_t *__restrict__ in, uint32_t keep_threshold, uint32_t *__restrict__ out,
                          uint8_t *__restrict__ flags, size_t n) {
  const size_t first = (size_t)blockIdx.x * PRODUCER_THREADS * ITEMS + threadIdx.x;
  uint32_t value[ITEMS];
  bool keep[ITEMS];
  produce_items<ITEMS>(in, keep_threshold, n, first, value, keep);
#pragma unroll
  for (int j = 0; j < ITEMS; j++) {
    const size_t i = first + (size_t)j * PRODUCER_THREADS;
    if (i < n) {
      out[i] = keep[j] ? value[j] : 0u;
      flags[i] = keep[j];
    }
  }
}

template <int ITEMS>
__global__ void __launch_bounds__(PRODUCER_THREADS)
    producer_collate_items(const uint32_t *__restrict__ in, uint32_t keep_threshold, uint32_t *__restrict__ out,
                           uint32_t *count, size_t n) {
  uint32_t value[ITEMS];
  bool keep[ITEMS];
  produce_items<ITEMS>(in, keep_threshold, n, (size_t)blockIdx.x * PRODUCER_THREADS * ITEMS + threadIdx.x, value,
                       keep);
#pragma unroll
  for (int j = 0; j < ITEMS; j++) ir_ink_collate_emit(keep[j], value[j], out, count);
}

/* One emit of all the thread's elements: element first + j * PRODUCER_THREADS is item j, the
 * layout ir_ink_compact_emit_items orders by. */
template <int ITEMS>
__global__ void __launch_bounds__(PRODUCER_THREADS)
    producer_compact_items(const uint32_t *__restrict__ in, uint32_t keep_threshold, uint32_t *__restrict__ out,
                           uint32_t *count, size_t n, ir_ink_scan s) {
  uint32_t value[ITEMS];
  bool keep[ITEMS];
  produce_items<ITEMS>(in, keep_threshold, n, (size_t)blockIdx.x * PRODUCER_THREADS * ITEMS + threadIdx.x, value,
                       keep);
  ir_ink_compact_emit_items<ITEMS>(keep, value, blockIdx.x, out, count, s);
}

/* Threads per block of the one-element look-back producer: PRODUCER_LOOK_BACK_THREADS, or 256 /
 * 512 from INKRAY_PRODUCER_THREADS for tuning runs (read once). */
static unsigned lookback_producer_threads(void) {
  static unsigned threads = 0;
  if (!threads) {
    const char *env = getenv("INKRAY_PRODUCER_THREADS");
    const int value = env ? atoi(env) : 0;
    threads = (value == 256 || value == 512) ? (unsigned)value : PRODUCER_LOOK_BACK_THREADS;
  }
  return threads;
}

extern "C" cudaError_t ir_compact_producer_run(ir_compact_ctx *ctx, ir_compact_producer producer,
                                               const uint32_t *d_in, uint32_t keep_threshold, uint32_t *d_out,
                                               uint8_t *d_flags, uint32_t *d_count, size_t n, cudaStream_t stream) {
  if (!ctx) return cudaErrorInvalidValue;
  if ((unsigned)producer >= IR_PRODUCER_COUNT)
    return ir_compact_fail(ctx, cudaErrorInvalidValue, "producer %d is not one of sparse, ink-collate, "
                           "ink-compact, ink-compact-sections, sparse-x4, ink-collate-x4, ink-compact-x4, "
                           "sparse-x16, ink-collate-x16, ink-compact-x16",
                           (int)producer);
  if (n > ctx->capacity)
    return ir_compact_fail(ctx, cudaErrorInvalidValue, "n = %zu exceeds the context's capacity of %zu elements",
                           n, ctx->capacity);
  const bool sparse =
      producer == IR_PRODUCER_SPARSE || producer == IR_PRODUCER_SPARSE_X4 || producer == IR_PRODUCER_SPARSE_X16;
  if (!d_in || !d_out || (sparse ? !d_flags : !d_count))
    return ir_compact_fail(ctx, cudaErrorInvalidValue, "producer %s: NULL buffer", producer_names[producer]);
  if (n == 0) return cudaSuccess;
  /* The one-, four- and sixteen-element forms differ only in kernel and grid. */
  const int items = producer == IR_PRODUCER_SPARSE_X4 || producer == IR_PRODUCER_INK_COLLATE_X4 ||
                            producer == IR_PRODUCER_INK_COMPACT_X4
                        ? 4
                    : producer == IR_PRODUCER_SPARSE_X16 || producer == IR_PRODUCER_INK_COLLATE_X16 ||
                            producer == IR_PRODUCER_INK_COMPACT_X16
                        ? 16
                        : 1;
  const unsigned per_block = PRODUCER_THREADS * (unsigned)items;
  const unsigned grid = (unsigned)((n + per_block - 1) / per_block);
  const ir_ink_scan scan = ir_ink_scan_of_ctx(ctx);
  switch (producer) {
  case IR_PRODUCER_SPARSE:
    producer_sparse<<<grid, PRODUCER_THREADS, 0, stream>>>(d_in, keep_threshold, d_out, d_flags, n);
    break;
  case IR_PRODUCER_SPARSE_X4:
    producer_sparse_items<4><<<grid, PRODUCER_THREADS, 0, stream>>>(d_in, keep_threshold, d_out, d_flags, n);
    break;
  case IR_PRODUCER_SPARSE_X16:
    producer_sparse_items<16><<<grid, PRODUCER_THREADS, 0, stream>>>(d_in, keep_threshold, d_out, d_flags, n);
    break;
  case IR_PRODUCER_INK_COLLATE:
  case IR_PRODUCER_INK_COLLATE_X4:
  case IR_PRODUCER_INK_COLLATE_X16:
    IR_CUDA_TRY(ctx, cudaMemsetAsync(d_count, 0, sizeof *d_count, stream));
    if (items == 1) producer_collate<<<grid, PRODUCER_THREADS, 0, stream>>>(d_in, keep_threshold, d_out, d_count, n);
    else if (items == 4)
      producer_collate_items<4><<<grid, PRODUCER_THREADS, 0, stream>>>(d_in, keep_threshold, d_out, d_count, n);
    else producer_collate_items<16><<<grid, PRODUCER_THREADS, 0, stream>>>(d_in, keep_threshold, d_out, d_count, n);
    break;
  case IR_PRODUCER_INK_COMPACT: {
    const unsigned threads = lookback_producer_threads();
    const unsigned blocks = (unsigned)((n + threads - 1) / threads);
    IR_CUDA_TRY(ctx, ir_ink_scan_reset(&scan, blocks, stream));
    producer_compact<<<blocks, threads, 0, stream>>>(d_in, keep_threshold, d_out, d_count, n, scan);
    break;
  }
  case IR_PRODUCER_INK_COMPACT_X4:
    IR_CUDA_TRY(ctx, ir_ink_scan_reset(&scan, grid, stream));
    producer_compact_items<4><<<grid, PRODUCER_THREADS, 0, stream>>>(d_in, keep_threshold, d_out, d_count, n, scan);
    break;
  case IR_PRODUCER_INK_COMPACT_X16:
    IR_CUDA_TRY(ctx, ir_ink_scan_reset(&scan, grid, stream));
    producer_compact_items<16><<<grid, PRODUCER_THREADS, 0, stream>>>(d_in, keep_threshold, d_out, d_count, n, scan);
    break;
  default: {
    const unsigned blocks = (unsigned)((n + PRODUCER_SECTION_THREADS - 1) / PRODUCER_SECTION_THREADS);
    const ir_ink_sections s = ir_ink_sections_bind(ctx->sections, blocks, PRODUCER_SECTION_THREADS);
    IR_CUDA_TRY(ctx, ir_ink_sections_reset(&s, stream));
    producer_compact_sections<<<blocks, PRODUCER_SECTION_THREADS, 0, stream>>>(d_in, keep_threshold, d_out, d_count,
                                                                              n, s);
    break;
  }
  }
  IR_LAUNCH_TRY(ctx, producer_names[producer]);
  return cudaSuccess;
}

static __global__ void hold_gpu_kernel(unsigned long long nanoseconds) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < nanoseconds);
}

extern "C" cudaError_t ir_compact_hold_gpu(unsigned microseconds, cudaStream_t stream) {
  hold_gpu_kernel<<<1, 32, 0, stream>>>(microseconds * 1000ull);
  return cudaGetLastError();
}
