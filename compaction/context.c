/* The compaction context (scratch owner), the argument checks and the dispatch to the methods.
 *
 * Every public call checks its arguments before touching CUDA, so that bad input gets
 * cudaErrorInvalidValue and a readable ir_compact_last_error() even on a machine with no GPU.
 * A context with capacity 0 allocates nothing (and makes no CUDA call). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "compaction/compaction_internal.h"

/* Counts are 32-bit (ray indices), and tile arithmetic stays in 32 bits below this. */
#define IR_COMPACT_MAX_CAPACITY ((size_t)1 << 31)

cudaError_t ir_compact_fail(ir_compact_ctx *ctx, cudaError_t err, const char *fmt, ...) {
  if (ctx) {
    va_list args;
    va_start(args, fmt);
    vsnprintf(ctx->error, sizeof ctx->error, fmt, args);
    va_end(args);
  }
  return err;
}

const char *ir_compact_last_error(const ir_compact_ctx *ctx) {
  if (!ctx) return "no compaction context (NULL)";
  return ctx->error[0] ? ctx->error : "no error";
}

size_t ir_compact_ctx_capacity(const ir_compact_ctx *ctx) { return ctx ? ctx->capacity : 0; }

static void free_buffers(ir_compact_ctx *ctx) {
  void *buffers[] = {ctx->words,    ctx->flags,    ctx->values,     ctx->indices,         ctx->sections,
                     ctx->scan,     ctx->rz_marks, ctx->rz_orphans, ctx->rz_block_counts, ctx->dup_bits,
                     ctx->cub_temp};
  for (size_t i = 0; i < sizeof buffers / sizeof buffers[0]; i++)
    if (buffers[i]) cudaFree(buffers[i]);
  ctx->words = NULL;
  ctx->flags = NULL;
  ctx->values = ctx->indices = ctx->rz_marks = ctx->rz_orphans = ctx->rz_block_counts = NULL;
  ctx->dup_bits = NULL;
  ctx->sections = ctx->scan = ctx->cub_temp = NULL;
  ctx->sections_bytes = ctx->scan_bytes = ctx->cub_temp_bytes = 0;
  ctx->capacity = 0;
}

#define ALLOC_TRY(ctx, ptr, bytes)                                                                 \
  do {                                                                                             \
    cudaError_t alloc_err_ = cudaMalloc((void **)&(ptr), (bytes));                                 \
    if (alloc_err_ != cudaSuccess) {                                                               \
      size_t want_ = (bytes);                                                                      \
      free_buffers(ctx);                                                                           \
      return ir_compact_fail(ctx, alloc_err_,                                                      \
                             "compaction scratch for %zu elements: cudaMalloc of %zu bytes (%s) "  \
                             "failed: %s; use a smaller capacity",                                 \
                             max_elements, want_, #ptr, cudaGetErrorString(alloc_err_));           \
    }                                                                                              \
  } while (0)

cudaError_t ir_compact_ctx_reserve(ir_compact_ctx *ctx, size_t max_elements) {
  if (!ctx) return cudaErrorInvalidValue;
  if (max_elements > IR_COMPACT_MAX_CAPACITY)
    return ir_compact_fail(ctx, cudaErrorInvalidValue,
                           "capacity %zu elements: at most 2^31 (counts are 32-bit)", max_elements);
  if (max_elements <= ctx->capacity) return cudaSuccess;
  free_buffers(ctx);
  IR_CUDA_TRY(ctx, cudaDeviceGetAttribute(&ctx->sm_count, cudaDevAttrMultiProcessorCount, 0));
  const size_t words32 = max_elements / 32 + 1;
  ctx->sections_bytes = ir_ink_compact_scratch_bytes(max_elements);
  ctx->scan_bytes = ir_ink_scan_scratch_bytes(max_elements);
  size_t cub_bytes = 0;
  IR_CUDA_TRY(ctx, ir_cub_temp_bytes(max_elements, &cub_bytes));
  ALLOC_TRY(ctx, ctx->words, IR_CTX_WORDS * sizeof(uint32_t));
  IR_CUDA_TRY(ctx, cudaMemset(ctx->words, 0, IR_CTX_WORDS * sizeof(uint32_t)));
  ALLOC_TRY(ctx, ctx->flags, max_elements);
  ALLOC_TRY(ctx, ctx->values, max_elements * sizeof(uint32_t));
  ALLOC_TRY(ctx, ctx->indices, max_elements * sizeof(uint32_t));
  ALLOC_TRY(ctx, ctx->sections, ctx->sections_bytes);
  ALLOC_TRY(ctx, ctx->scan, ctx->scan_bytes);
  ALLOC_TRY(ctx, ctx->rz_marks, words32 * sizeof(uint32_t));
  IR_CUDA_TRY(ctx, cudaMemset(ctx->rz_marks, 0, words32 * sizeof(uint32_t)));
  ALLOC_TRY(ctx, ctx->rz_orphans, max_elements * sizeof(uint32_t));
  ALLOC_TRY(ctx, ctx->rz_block_counts, 2 * IR_RZ_MAX_BLOCKS * sizeof(uint32_t));
#ifndef NDEBUG
  ALLOC_TRY(ctx, ctx->dup_bits, words32 * sizeof(uint32_t));
#endif
  ALLOC_TRY(ctx, ctx->cub_temp, cub_bytes > 0 ? cub_bytes : 1);
  ctx->cub_temp_bytes = cub_bytes;
  ctx->capacity = max_elements;
  /* The first call's allocations happen here, not in a per-frame call. */
  return cudaSuccess;
}

cudaError_t ir_compact_ctx_create(ir_compact_ctx **out, size_t max_elements) {
  if (!out) return cudaErrorInvalidValue;
  *out = NULL;
  ir_compact_ctx *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return cudaErrorMemoryAllocation;
  cudaError_t err = ir_thrust_cache_create(ctx);
  if (err == cudaSuccess) err = ir_compact_ctx_reserve(ctx, max_elements);
  if (err != cudaSuccess) {
    ir_compact_ctx_destroy(ctx);
    return err;
  }
  *out = ctx;
  return cudaSuccess;
}

void ir_compact_ctx_destroy(ir_compact_ctx *ctx) {
  if (!ctx) return;
  free_buffers(ctx);
  ir_thrust_cache_destroy(ctx);
  free(ctx);
}

/* ---- Argument checks (no CUDA call before they pass) ------------------------------------------ */

static cudaError_t check_method(ir_compact_ctx *ctx, ir_compact_method method) {
  if ((unsigned)method >= IR_COMPACT_METHOD_COUNT)
    return ir_compact_fail(ctx, cudaErrorInvalidValue,
                           "method %d is not a compaction method (use ir_compact_method_parse with "
                           "ink-compact, ink-collate, thrust, jumping-jack or redzone)",
                           (int)method);
  return cudaSuccess;
}

static cudaError_t check_size(ir_compact_ctx *ctx, const char *what, size_t n) {
  if (n > ctx->capacity)
    return ir_compact_fail(ctx, cudaErrorInvalidValue,
                           "%s = %zu exceeds the context's capacity of %zu elements: grow it with "
                           "ir_compact_ctx_reserve first",
                           what, n, ctx->capacity);
  return cudaSuccess;
}

static cudaError_t check_pointer(ir_compact_ctx *ctx, const void *p, const char *name) {
  if (!p) return ir_compact_fail(ctx, cudaErrorInvalidValue, "%s is NULL", name);
  return cudaSuccess;
}

#define CHECK_TRY(expr)                                                                            \
  do {                                                                                             \
    cudaError_t check_err_ = (expr);                                                               \
    if (check_err_ != cudaSuccess) return check_err_;                                              \
  } while (0)

static cudaError_t check_out_of_place(ir_compact_ctx *ctx, const uint32_t *d_in, const void *d_select,
                                      const char *select_name, const uint32_t *d_out,
                                      const uint32_t *d_count, size_t n) {
  CHECK_TRY(check_pointer(ctx, d_count, "d_count"));
  CHECK_TRY(check_size(ctx, "n", n));
  if (n == 0) return cudaSuccess;
  CHECK_TRY(check_pointer(ctx, d_in, "d_in"));
  if (select_name) CHECK_TRY(check_pointer(ctx, d_select, select_name));
  CHECK_TRY(check_pointer(ctx, d_out, "d_out"));
  if (d_out == d_in)
    return ir_compact_fail(ctx, cudaErrorInvalidValue,
                           "d_out may not alias d_in (out-of-place call); use "
                           "ir_compact_remove_indices for in-place removal");
  return cudaSuccess;
}

/* ---- Dispatch --------------------------------------------------------------------------------- */

static cudaError_t run_job(ir_compact_ctx *ctx, ir_compact_method method, const ir_compact_job *job) {
  switch (method) {
  case IR_COMPACT_INK_COMPACT: return ir_ink_compact_run(ctx, job);
  case IR_COMPACT_INK_COLLATE: return ir_ink_collate_run(ctx, job);
  case IR_COMPACT_THRUST: return ir_thrust_run(ctx, job);
  case IR_COMPACT_JUMPING_JACK: return ir_jumping_jack_run(ctx, job);
  case IR_COMPACT_REDZONE: return ir_redzone_flagged(ctx, job);
  default: break;
  }
  return ir_compact_fail(ctx, cudaErrorInvalidValue, "method %d: no implementation", (int)method);
}

cudaError_t ir_compact_flagged(ir_compact_ctx *ctx, ir_compact_method method, const uint32_t *d_in,
                               const uint8_t *d_flags, uint32_t *d_out, uint32_t *d_count, size_t n,
                               cudaStream_t stream) {
  if (!ctx) return cudaErrorInvalidValue;
  CHECK_TRY(check_method(ctx, method));
  CHECK_TRY(check_out_of_place(ctx, d_in, d_flags, "d_flags", d_out, d_count, n));
  if (n == 0) IR_CUDA_TRY(ctx, cudaMemsetAsync(d_count, 0, sizeof *d_count, stream));
  if (n == 0) return cudaSuccess;
  ir_compact_job job = {d_in, d_flags, 0, d_out, d_count, n, NULL, stream};
  return run_job(ctx, method, &job);
}

cudaError_t ir_compact_if_not_equal(ir_compact_ctx *ctx, ir_compact_method method, const uint32_t *d_in,
                                    uint32_t reject_value, uint32_t *d_out, uint32_t *d_count, size_t n,
                                    cudaStream_t stream) {
  if (!ctx) return cudaErrorInvalidValue;
  CHECK_TRY(check_method(ctx, method));
  CHECK_TRY(check_out_of_place(ctx, d_in, NULL, NULL, d_out, d_count, n));
  if (n == 0) IR_CUDA_TRY(ctx, cudaMemsetAsync(d_count, 0, sizeof *d_count, stream));
  if (n == 0) return cudaSuccess;
  ir_compact_job job = {d_in, NULL, reject_value, d_out, d_count, n, NULL, stream};
  return run_job(ctx, method, &job);
}

bool ir_compact_supports_device_n(ir_compact_method method) {
  return (unsigned)method < IR_COMPACT_METHOD_COUNT && method != IR_COMPACT_THRUST;
}

static cudaError_t check_device_n(ir_compact_ctx *ctx, ir_compact_method method) {
  if (!ir_compact_supports_device_n(method))
    return ir_compact_fail(ctx, cudaErrorNotSupported,
                           "%s needs the element count on the host (thrust::copy_if returns it): "
                           "read the count back and call the host-count form",
                           ir_compact_method_get(method)->name);
  return cudaSuccess;
}

cudaError_t ir_compact_flagged_dn(ir_compact_ctx *ctx, ir_compact_method method, const uint32_t *d_in,
                                  const uint8_t *d_flags, uint32_t *d_out, uint32_t *d_count,
                                  const uint32_t *d_n, size_t max_n, cudaStream_t stream) {
  if (!ctx) return cudaErrorInvalidValue;
  CHECK_TRY(check_method(ctx, method));
  CHECK_TRY(check_pointer(ctx, d_n, "d_n"));
  CHECK_TRY(check_out_of_place(ctx, d_in, d_flags, "d_flags", d_out, d_count, max_n));
  CHECK_TRY(check_device_n(ctx, method));
  if (max_n == 0) IR_CUDA_TRY(ctx, cudaMemsetAsync(d_count, 0, sizeof *d_count, stream));
  if (max_n == 0) return cudaSuccess;
  ir_compact_job job = {d_in, d_flags, 0, d_out, d_count, max_n, d_n, stream};
  return run_job(ctx, method, &job);
}

static cudaError_t check_removal(ir_compact_ctx *ctx, const uint32_t *d_data, size_t n,
                                 const uint32_t *d_remove, size_t k, const uint32_t *d_count) {
  CHECK_TRY(check_pointer(ctx, d_count, "d_count"));
  CHECK_TRY(check_size(ctx, "n", n));
  if (k > n)
    return ir_compact_fail(ctx, cudaErrorInvalidValue,
                           "k = %zu removals from a list of n = %zu: k may not exceed n", k, n);
  if (n > 0) CHECK_TRY(check_pointer(ctx, d_data, "d_data"));
  if (k > 0) CHECK_TRY(check_pointer(ctx, d_remove, "d_remove"));
  return cudaSuccess;
}

/* The non-native path: keep flags from the list, compact out of place, copy back. */
static cudaError_t remove_through_flags(ir_compact_ctx *ctx, ir_compact_method method, uint32_t *d_data,
                                       size_t n, const uint32_t *d_n, const uint32_t *d_remove, size_t k,
                                       const uint32_t *d_k, uint32_t *d_count, cudaStream_t stream) {
  cudaError_t err = ir_flags_from_removals(ctx, ctx->flags, n, d_n, d_remove, k, d_k, stream);
  if (err != cudaSuccess) return err;
  ir_compact_job job = {d_data, ctx->flags, 0, ctx->values, d_count, n, d_n, stream};
  err = run_job(ctx, method, &job);
  if (err != cudaSuccess) return err;
  return ir_copy_device_len(ctx, d_data, ctx->values, n, d_count, stream);
}

cudaError_t ir_compact_remove_indices(ir_compact_ctx *ctx, ir_compact_method method, uint32_t *d_data,
                                      size_t n, const uint32_t *d_remove, size_t k, uint32_t *d_count,
                                      cudaStream_t stream) {
  if (!ctx) return cudaErrorInvalidValue;
  CHECK_TRY(check_method(ctx, method));
  CHECK_TRY(check_removal(ctx, d_data, n, d_remove, k, d_count));
  if (k == 0 || n == 0) return ir_write_difference(ctx, d_count, n, NULL, 0, NULL, stream);
#ifndef NDEBUG
  CHECK_TRY(ir_check_removals(ctx, d_remove, k, n, stream));
#endif
  if (method == IR_COMPACT_REDZONE)
    return ir_redzone_remove(ctx, d_data, n, NULL, d_remove, k, NULL, d_count, stream);
  return remove_through_flags(ctx, method, d_data, n, NULL, d_remove, k, NULL, d_count, stream);
}

cudaError_t ir_compact_remove_indices_dn(ir_compact_ctx *ctx, ir_compact_method method, uint32_t *d_data,
                                         const uint32_t *d_n, size_t max_n, const uint32_t *d_remove,
                                         const uint32_t *d_k, size_t max_k, uint32_t *d_count,
                                         cudaStream_t stream) {
  if (!ctx) return cudaErrorInvalidValue;
  CHECK_TRY(check_method(ctx, method));
  CHECK_TRY(check_pointer(ctx, d_n, "d_n"));
  CHECK_TRY(check_pointer(ctx, d_k, "d_k"));
  CHECK_TRY(check_removal(ctx, d_data, max_n, d_remove, max_k, d_count));
  CHECK_TRY(check_device_n(ctx, method));
  if (max_k == 0 || max_n == 0) return ir_write_difference(ctx, d_count, max_n, d_n, 0, NULL, stream);
  if (method == IR_COMPACT_REDZONE)
    return ir_redzone_remove(ctx, d_data, max_n, d_n, d_remove, max_k, d_k, d_count, stream);
  return remove_through_flags(ctx, method, d_data, max_n, d_n, d_remove, max_k, d_k, d_count, stream);
}

/* ---- Errors the kernels found --------------------------------------------------------------- */

cudaError_t ir_compact_device_error(ir_compact_ctx *ctx, cudaStream_t stream) {
  if (!ctx) return cudaErrorInvalidValue;
  if (!ctx->words) return cudaSuccess; /* capacity 0: no kernel ever ran */
  uint32_t *word = ctx->words + IR_CTX_WORD_DEVICE_ERROR;
  uint32_t host[2] = {0, 0};
  IR_CUDA_TRY(ctx, cudaMemcpyAsync(host, word, sizeof host, cudaMemcpyDeviceToHost, stream));
  IR_CUDA_TRY(ctx, cudaStreamSynchronize(stream));
  if (host[0] == IR_DEVICE_ERROR_NONE) return cudaSuccess;
  IR_CUDA_TRY(ctx, cudaMemsetAsync(word, 0, sizeof host, stream));
  IR_CUDA_TRY(ctx, cudaStreamSynchronize(stream));
  switch (host[0]) {
  case IR_DEVICE_ERROR_INDEX_RANGE:
    return ir_compact_fail(ctx, cudaErrorInvalidValue,
                           "redzone: removal index %u is not below n: the list was refused, nothing removed",
                           host[1]);
  case IR_DEVICE_ERROR_DUPLICATE:
    return ir_compact_fail(ctx, cudaErrorInvalidValue,
                           "redzone: removal index %u is listed more than once: indices must be distinct; the "
                           "list was refused, nothing removed",
                           host[1]);
  default:
    return ir_compact_fail(ctx, cudaErrorInvalidValue,
                           "redzone: %u source orphans do not match the destination orphans (the removal list "
                           "is not a set of distinct indices below n): phase 3 was skipped, the data is "
                           "partly rearranged",
                           host[1]);
  }
}

/* ---- References ------------------------------------------------------------------------------- */

static const char *const reference_names[IR_COMPACT_REF_COUNT] = {"cub", "thrust-bare", "ink-compact-sections"};

const char *ir_compact_reference_name(ir_compact_reference r) {
  return (unsigned)r < IR_COMPACT_REF_COUNT ? reference_names[r] : "?";
}

cudaError_t ir_compact_reference_flagged(ir_compact_ctx *ctx, ir_compact_reference ref, const uint32_t *d_in,
                                         const uint8_t *d_flags, uint32_t *d_out, uint32_t *d_count,
                                         size_t n, cudaStream_t stream) {
  if (!ctx) return cudaErrorInvalidValue;
  if ((unsigned)ref >= IR_COMPACT_REF_COUNT)
    return ir_compact_fail(ctx, cudaErrorInvalidValue, "reference %d is not one of cub, thrust-bare, "
                           "ink-compact-sections", (int)ref);
  CHECK_TRY(check_out_of_place(ctx, d_in, d_flags, "d_flags", d_out, d_count, n));
  if (n == 0) IR_CUDA_TRY(ctx, cudaMemsetAsync(d_count, 0, sizeof *d_count, stream));
  if (n == 0) return cudaSuccess;
  ir_compact_job job = {d_in, d_flags, 0, d_out, d_count, n, NULL, stream};
  switch (ref) {
  case IR_COMPACT_REF_CUB: return ir_cub_flagged_run(ctx, &job);
  case IR_COMPACT_REF_THRUST_BARE: return ir_thrust_bare_run(ctx, &job);
  default: return ir_ink_compact_sections_run(ctx, &job);
  }
}
