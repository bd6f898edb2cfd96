/* Small kernels the methods share: keep flags from a removal list, copies and counts whose
 * length only the device knows, and the debug check of removal lists. */
#include <stdio.h>

#include "compaction/tile.cuh"

#define OPS_THREADS 256

static unsigned grid_for(size_t n, int sm_count) {
  /* grid-stride loops: enough blocks to fill the GPU, no more than the work needs */
  const size_t want = (n + OPS_THREADS - 1) / OPS_THREADS;
  const size_t cap = (size_t)(sm_count > 0 ? sm_count : 1) * 16;
  return (unsigned)(want < 1 ? 1 : (want < cap ? want : cap));
}

__global__ void fill_keep_flags(uint8_t *flags, size_t n_max, const uint32_t *d_n) {
  const size_t n = ir_device_n(n_max, d_n);
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n_max; i += (size_t)gridDim.x * blockDim.x)
    flags[i] = i < n;
}

__global__ void clear_removed_flags(uint8_t *flags, size_t n_max, const uint32_t *d_n, const uint32_t *remove,
                                    size_t k_max, const uint32_t *d_k) {
  const size_t n = ir_device_n(n_max, d_n), k = ir_device_n(k_max, d_k);
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < k; i += (size_t)gridDim.x * blockDim.x) {
    const uint32_t r = remove[i];
    if (r < n) flags[r] = 0;
  }
}

extern "C" cudaError_t ir_flags_from_removals(ir_compact_ctx *ctx, uint8_t *flags, size_t n_max, const uint32_t *d_n,
                                              const uint32_t *remove, size_t k_max, const uint32_t *d_k,
                                              cudaStream_t stream) {
  if (d_n) {
    fill_keep_flags<<<grid_for(n_max, ctx->sm_count), OPS_THREADS, 0, stream>>>(flags, n_max, d_n);
    IR_LAUNCH_TRY(ctx, "fill_keep_flags");
  } else {
    IR_CUDA_TRY(ctx, cudaMemsetAsync(flags, 1, n_max, stream));
  }
  clear_removed_flags<<<grid_for(k_max, ctx->sm_count), OPS_THREADS, 0, stream>>>(flags, n_max, d_n, remove,
                                                                                  k_max, d_k);
  IR_LAUNCH_TRY(ctx, "clear_removed_flags");
  return cudaSuccess;
}

__global__ void copy_device_len(uint32_t *__restrict__ dst, const uint32_t *__restrict__ src, size_t n_max,
                                const uint32_t *d_len) {
  const size_t n = ir_device_n(n_max, d_len);
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    dst[i] = src[i];
}

extern "C" cudaError_t ir_copy_device_len(ir_compact_ctx *ctx, uint32_t *dst, const uint32_t *src, size_t n_max,
                                          const uint32_t *d_len, cudaStream_t stream) {
  copy_device_len<<<grid_for(n_max, ctx->sm_count), OPS_THREADS, 0, stream>>>(dst, src, n_max, d_len);
  IR_LAUNCH_TRY(ctx, "copy_device_len");
  return cudaSuccess;
}

__global__ void write_difference(uint32_t *out, size_t a, const uint32_t *d_a, size_t b, const uint32_t *d_b) {
  const size_t va = ir_device_n(a, d_a), vb = ir_device_n(b, d_b);
  *out = (uint32_t)(va > vb ? va - vb : 0);
}

extern "C" cudaError_t ir_write_difference(ir_compact_ctx *ctx, uint32_t *d_out, size_t a, const uint32_t *d_a,
                                           size_t b, const uint32_t *d_b, cudaStream_t stream) {
  write_difference<<<1, 1, 0, stream>>>(d_out, a, d_a, b, d_b);
  IR_LAUNCH_TRY(ctx, "write_difference");
  return cudaSuccess;
}

/* problems[0]: first index >= n + 1 (0: none); problems[1]: first duplicate + 1 (0: none) */
__global__ void check_removals(const uint32_t *remove, size_t k, size_t n, uint32_t *seen, uint32_t *problems) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < k; i += (size_t)gridDim.x * blockDim.x) {
    const uint32_t r = remove[i];
    if (r >= n) {
      atomicCAS(&problems[0], 0u, (uint32_t)i + 1);
      continue;
    }
    const uint32_t bit = 1u << (r & 31u);
    if (atomicOr(&seen[r >> 5], bit) & bit) atomicCAS(&problems[1], 0u, r + 1);
  }
}

extern "C" cudaError_t ir_check_removals(ir_compact_ctx *ctx, const uint32_t *remove, size_t k, size_t n,
                                         cudaStream_t stream) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  IR_CUDA_TRY(ctx, cudaStreamIsCapturing(stream, &capture));
  if (capture != cudaStreamCaptureStatusNone || !ctx->dup_bits) return cudaSuccess; /* cannot sync here */
  uint32_t *problems = ctx->words + IR_CTX_WORD_SCRATCH;
  IR_CUDA_TRY(ctx, cudaMemsetAsync(ctx->dup_bits, 0, (n / 32 + 1) * sizeof(uint32_t), stream));
  IR_CUDA_TRY(ctx, cudaMemsetAsync(problems, 0, 2 * sizeof(uint32_t), stream));
  check_removals<<<grid_for(k, ctx->sm_count), OPS_THREADS, 0, stream>>>(remove, k, n, ctx->dup_bits, problems);
  IR_LAUNCH_TRY(ctx, "check_removals");
  uint32_t host[2] = {0, 0};
  IR_CUDA_TRY(ctx, cudaMemcpyAsync(host, problems, sizeof host, cudaMemcpyDeviceToHost, stream));
  IR_CUDA_TRY(ctx, cudaStreamSynchronize(stream));
  if (host[0])
    return ir_compact_fail(ctx, cudaErrorInvalidValue, "removal list entry %u is %s n = %zu (debug check)",
                           host[0] - 1, "not below", n);
  if (host[1])
    return ir_compact_fail(ctx, cudaErrorInvalidValue,
                           "removal list holds index %u more than once (debug check): indices must be distinct",
                           host[1] - 1);
  return cudaSuccess;
}
