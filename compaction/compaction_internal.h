/* Internals of the compaction module, shared by context.c and the method files (.cu).
 * Not a public header: only files in compaction/ include it. */
#ifndef INKRAY_COMPACTION_INTERNAL_H
#define INKRAY_COMPACTION_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compaction/compaction.h"

#ifdef __cplusplus
extern "C" {
#endif

#define IR_COMPACT_ERR_LEN 320

/* The scratch a context owns; every buffer is sized for `capacity` elements at reserve time, so
 * that no call allocates. */
struct ir_compact_ctx {
  size_t capacity;
  char error[IR_COMPACT_ERR_LEN];
  int sm_count;

  uint32_t *words;          /* IR_CTX_WORDS small device words (counts between passes) */
  uint8_t *flags;           /* capacity: keep flags built from a removal list */
  uint32_t *values;         /* capacity: staging for in-place removal through out-of-place methods */
  uint32_t *indices;        /* capacity: removal list derived from flags (Redzone's flagged form) */
  void *sections;           /* InK-Compact section state (the paper's protocol) */
  size_t sections_bytes;
  void *scan;               /* InK-Compact look-back state: ticket and per-tile status words */
  size_t scan_bytes;
  uint32_t *rz_marks;       /* capacity bits: Redzone phase 1 marks of the red zone, all zero
                               between calls (phase 3 clears the words phase 1 used) */
  uint32_t *rz_orphans;     /* capacity/2 + 1: Redzone destination orphans */
  uint32_t *rz_block_counts; /* 2 * IR_RZ_MAX_BLOCKS: Redzone orphan counts per block */
  uint32_t *dup_bits;       /* capacity bits, debug builds: duplicate check of removal lists */
  void *cub_temp;           /* CUB DeviceSelect::Flagged temporary storage (reference) */
  size_t cub_temp_bytes;
  void *thrust_cache;       /* the caching allocator behind Thrust (thrust_compact.cu) */
};

/* ctx->words: the removal count Redzone derives; two words for debug checks; a self-resetting
 * grid total (total, arrivals) that must be zero between launches; the device-side error a
 * kernel found in its input (kind, value), sticky until ir_compact_device_error reads it. */
enum {
  IR_CTX_WORD_REMOVALS = 0,
  IR_CTX_WORD_SCRATCH = 2,
  IR_CTX_WORD_GRID_TOTAL = 4,
  IR_CTX_WORD_DEVICE_ERROR = 6,
  IR_CTX_WORDS = 8
};
/* Kinds of device-side errors (ctx->words[IR_CTX_WORD_DEVICE_ERROR]). */
enum { IR_DEVICE_ERROR_NONE = 0, IR_DEVICE_ERROR_INDEX_RANGE, IR_DEVICE_ERROR_DUPLICATE, IR_DEVICE_ERROR_ORPHANS };
/* Redzone Algorithm 2: at most this many blocks, so that phase 3 scans the per-block orphan
 * counts within one block. */
#define IR_RZ_MAX_BLOCKS 1024

/* Records "what failed: why" as the context's last error and returns err. */
cudaError_t ir_compact_fail(ir_compact_ctx *ctx, cudaError_t err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* The checking macro every CUDA call goes through: records file, line, call and the reason. */
#define IR_CUDA_TRY(ctx, call)                                                                    \
  do {                                                                                            \
    cudaError_t ir_try_err_ = (call);                                                             \
    if (ir_try_err_ != cudaSuccess)                                                               \
      return ir_compact_fail((ctx), ir_try_err_, "%s:%d: %s: %s", __FILE__, __LINE__, #call,      \
                             cudaGetErrorString(ir_try_err_));                                    \
  } while (0)
/* After a kernel launch: a bad configuration shows up here, not at the next sync. */
#define IR_LAUNCH_TRY(ctx, what)                                                                  \
  do {                                                                                            \
    cudaError_t ir_try_err_ = cudaGetLastError();                                                 \
    if (ir_try_err_ != cudaSuccess)                                                               \
      return ir_compact_fail((ctx), ir_try_err_, "%s:%d: launch of %s: %s", __FILE__, __LINE__,   \
                             (what), cudaGetErrorString(ir_try_err_));                            \
  } while (0)

/* One compaction job on a plain stream. n is the launch size (max_n when d_n is given). */
typedef struct ir_compact_job {
  const uint32_t *in;
  const uint8_t *flags;  /* keep where flags[i] != 0; NULL: keep where in[i] != reject */
  uint32_t reject;
  uint32_t *out;
  uint32_t *count;
  size_t n;
  const uint32_t *d_n;   /* device-side element count (n = its upper bound), or NULL */
  cudaStream_t stream;
} ir_compact_job;

cudaError_t ir_ink_collate_run(ir_compact_ctx *ctx, const ir_compact_job *job);
/* InK-Compact: per-tile decoupled look-back (the method), or the paper's chained sections. */
cudaError_t ir_ink_compact_run(ir_compact_ctx *ctx, const ir_compact_job *job);
cudaError_t ir_ink_compact_sections_run(ir_compact_ctx *ctx, const ir_compact_job *job);
size_t ir_ink_compact_scratch_bytes(size_t capacity);
size_t ir_ink_scan_scratch_bytes(size_t capacity);
cudaError_t ir_jumping_jack_run(ir_compact_ctx *ctx, const ir_compact_job *job);
cudaError_t ir_thrust_run(ir_compact_ctx *ctx, const ir_compact_job *job);
cudaError_t ir_thrust_cache_create(ir_compact_ctx *ctx);
void ir_thrust_cache_destroy(ir_compact_ctx *ctx);
cudaError_t ir_cub_temp_bytes(size_t capacity, size_t *bytes);

/* Redzone (redzone.cu): removes d_remove[0..k) from d_data[0..n) in place. n_max/k_max size
 * the launches; d_n/d_k (may be NULL) hold the real counts on the device. */
cudaError_t ir_redzone_remove(ir_compact_ctx *ctx, uint32_t *d_data, size_t n_max, const uint32_t *d_n,
                              const uint32_t *d_remove, size_t k_max, const uint32_t *d_k,
                              uint32_t *d_count, cudaStream_t stream);
/* Redzone's out-of-place form: derives the removal list from the job's predicate, copies in to
 * out and removes in place there. */
cudaError_t ir_redzone_flagged(ir_compact_ctx *ctx, const ir_compact_job *job);

/* References (thrust_compact.cu). */
cudaError_t ir_cub_flagged_run(ir_compact_ctx *ctx, const ir_compact_job *job);
cudaError_t ir_thrust_bare_run(ir_compact_ctx *ctx, const ir_compact_job *job);

/* The benchmark producer's predicate: a cheap integer hash, so that the kept elements are spread
 * without a pattern (host and device run the same code). */
#ifdef __CUDACC__
#define IR_COMPACT_HD __host__ __device__
#else
#define IR_COMPACT_HD
#endif
static inline IR_COMPACT_HD uint32_t ir_compact_hash(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

/* Shared helpers (stream_ops.cu). */
/* flags[i] = i < n for i < n_max, then flags[remove[j]] = 0 for j < k. */
cudaError_t ir_flags_from_removals(ir_compact_ctx *ctx, uint8_t *flags, size_t n_max, const uint32_t *d_n,
                                   const uint32_t *remove, size_t k_max, const uint32_t *d_k,
                                   cudaStream_t stream);
/* dst[i] = src[i] for i < *d_len (a length that only the device knows); n_max sizes the launch. */
cudaError_t ir_copy_device_len(ir_compact_ctx *ctx, uint32_t *dst, const uint32_t *src, size_t n_max,
                               const uint32_t *d_len, cudaStream_t stream);
/* *d_out = (d_a ? *d_a : a) - (d_b ? *d_b : b), one thread. */
cudaError_t ir_write_difference(ir_compact_ctx *ctx, uint32_t *d_out, size_t a, const uint32_t *d_a,
                                size_t b, const uint32_t *d_b, cudaStream_t stream);
/* Debug builds: checks that remove[0..k) are distinct and below n (synchronises). */
cudaError_t ir_check_removals(ir_compact_ctx *ctx, const uint32_t *remove, size_t k, size_t n,
                              cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
