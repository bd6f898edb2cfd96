/* Thrust and CUB behind C functions: the Thrust method (thrust::copy_if, stencil form, with a
 * caching allocator so that only the first call allocates device memory), the bare
 * thrust::copy_if it is compared with, and the CUB DeviceSelect::Flagged reference.
 *
 * thrust::copy_if returns the end of the output, so it waits for the GPU (a hidden host sync
 * we cannot avoid) and is not capturable in a CUDA graph: the Thrust method does not support
 * the device-count calls (ir_compact_supports_device_n). Thrust reports CUDA failures as C++
 * exceptions; they are caught here and turned into the context's error.
 */
#include <new>
#include <vector>

#include <cub/device/device_select.cuh>
#include <thrust/copy.h>
#include <thrust/execution_policy.h>
#include <thrust/system/cuda/execution_policy.h>
#include <thrust/system_error.h>

#include "compaction/compaction_internal.h"

/* Keeps every block it handed out; a request is served by the smallest free block that fits.
 * copy_if asks for the same temporary sizes call after call, so after the first call nothing
 * is allocated. */
struct ir_thrust_cache {
  typedef char value_type;
  struct block {
    char *ptr;
    size_t bytes;
    bool used;
  };
  std::vector<block> blocks;

  char *allocate(std::ptrdiff_t bytes) {
    block *best = nullptr;
    for (block &b : blocks)
      if (!b.used && b.bytes >= (size_t)bytes && (!best || b.bytes < best->bytes)) best = &b;
    if (!best) {
      char *p = nullptr;
      if (cudaMalloc(&p, (size_t)bytes) != cudaSuccess) throw std::bad_alloc();
      blocks.push_back(block{p, (size_t)bytes, false});
      best = &blocks.back();
    }
    best->used = true;
    return best->ptr;
  }
  void deallocate(char *p, size_t) {
    for (block &b : blocks)
      if (b.ptr == p) b.used = false;
  }
  ~ir_thrust_cache() {
    for (block &b : blocks) cudaFree(b.ptr);
  }
};

extern "C" cudaError_t ir_thrust_cache_create(ir_compact_ctx *ctx) {
  ctx->thrust_cache = new (std::nothrow) ir_thrust_cache();
  return ctx->thrust_cache ? cudaSuccess : cudaErrorMemoryAllocation;
}

extern "C" void ir_thrust_cache_destroy(ir_compact_ctx *ctx) {
  delete static_cast<ir_thrust_cache *>(ctx->thrust_cache);
  ctx->thrust_cache = nullptr;
}

struct flag_set {
  __host__ __device__ bool operator()(uint8_t f) const { return f != 0; }
};
struct not_equal_to_value {
  uint32_t reject;
  __host__ __device__ bool operator()(uint32_t v) const { return v != reject; }
};

template <typename Policy>
static cudaError_t copy_if(ir_compact_ctx *ctx, const Policy &policy, const ir_compact_job *job, const char *what) {
  size_t kept = 0;
  try {
    uint32_t *end = job->flags ? thrust::copy_if(policy, job->in, job->in + job->n, job->flags, job->out, flag_set())
                               : thrust::copy_if(policy, job->in, job->in + job->n, job->out,
                                                 not_equal_to_value{job->reject});
    kept = (size_t)(end - job->out);
  } catch (const thrust::system_error &e) {
    return ir_compact_fail(ctx, cudaErrorUnknown, "%s: %s", what, e.what());
  } catch (const std::bad_alloc &) {
    return ir_compact_fail(ctx, cudaErrorMemoryAllocation, "%s: out of device memory for its temporary storage",
                           what);
  }
  return ir_write_difference(ctx, job->count, kept, nullptr, 0, nullptr, job->stream);
}

extern "C" cudaError_t ir_thrust_run(ir_compact_ctx *ctx, const ir_compact_job *job) {
  if (job->d_n)
    return ir_compact_fail(ctx, cudaErrorNotSupported, "thrust: needs the element count on the host");
  ir_thrust_cache &cache = *static_cast<ir_thrust_cache *>(ctx->thrust_cache);
  return copy_if(ctx, thrust::cuda::par(cache).on(job->stream), job, "thrust::copy_if");
}

extern "C" cudaError_t ir_thrust_bare_run(ir_compact_ctx *ctx, const ir_compact_job *job) {
  return copy_if(ctx, thrust::cuda::par.on(job->stream), job, "bare thrust::copy_if");
}

extern "C" cudaError_t ir_cub_temp_bytes(size_t capacity, size_t *bytes) {
  *bytes = 0;
  return cub::DeviceSelect::Flagged(nullptr, *bytes, (const uint32_t *)nullptr, (const uint8_t *)nullptr,
                                    (uint32_t *)nullptr, (uint32_t *)nullptr, (int64_t)capacity);
}

extern "C" cudaError_t ir_cub_flagged_run(ir_compact_ctx *ctx, const ir_compact_job *job) {
  size_t bytes = ctx->cub_temp_bytes;
  IR_CUDA_TRY(ctx, cub::DeviceSelect::Flagged(ctx->cub_temp, bytes, job->in, job->flags, job->out, job->count,
                                              (int64_t)job->n, job->stream));
  return cudaSuccess;
}
