/* inkray compaction module: five GPU stream-compaction methods behind one C interface.
 *
 * Methods are data: ir_compact_methods() returns the table that the CLI, the overlay, the
 * benchmark and the tests loop over. Every call takes a CUDA stream, returns a cudaError_t and
 * leaves the output count on the device (d_count) unless the caller reads it back itself: no
 * call synchronises the host. Scratch space lives in a reusable context, sized for the largest
 * stream it will see, so that no call allocates device memory.
 *
 * Element type: 32-bit values (ray indices). Flags: one byte per element, non-zero = keep.
 *
 * In-kernel use (InK-Compact and InK-Collate called at the end of the producing kernel) goes
 * through the device header compaction/compaction_device.cuh, for CUDA code only.
 */
#ifndef INKRAY_COMPACTION_H
#define INKRAY_COMPACTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Methods ------------------------------------------------------------------------------ */
typedef enum ir_compact_method {
  IR_COMPACT_INK_COMPACT = 0, /* in-kernel, order-preserving: InK §2.1-2.2 offsets, look-back between blocks */
  IR_COMPACT_INK_COLLATE,     /* in-kernel, atomic block offset, order kept within a block (InK §2.4) */
  IR_COMPACT_THRUST,          /* thrust::copy_if with a caching allocator */
  IR_COMPACT_JUMPING_JACK,    /* MAS jump search, block-based, non-monotonic (Moreira et al. 2009) */
  IR_COMPACT_REDZONE,         /* in-place O(k) removal of listed indices (Bontes & Gain 2024) */
  IR_COMPACT_METHOD_COUNT
} ir_compact_method;

typedef struct ir_compact_method_info {
  ir_compact_method method;
  const char *name;        /* stable name: "ink-compact", "ink-collate", "thrust", "jumping-jack", "redzone" */
  const char *description; /* one line for help texts and the overlay */
  bool in_kernel;          /* natural form runs inside the producing kernel */
  bool stable;             /* output keeps input order */
  bool in_place;           /* natural form removes listed indices in place */
} ir_compact_method_info;

const ir_compact_method_info *ir_compact_methods(void);  /* IR_COMPACT_METHOD_COUNT rows */
const ir_compact_method_info *ir_compact_method_get(ir_compact_method m);
/* Parses a stable name; returns false (and leaves *out alone) for an unknown name. */
bool ir_compact_method_parse(const char *name, ir_compact_method *out);

/* ---- Context: owns the scratch space -------------------------------------------------------- */
typedef struct ir_compact_ctx ir_compact_ctx;

/* Creates a context able to compact streams of up to max_elements. */
cudaError_t ir_compact_ctx_create(ir_compact_ctx **out, size_t max_elements);
void ir_compact_ctx_destroy(ir_compact_ctx *ctx);
/* Largest stream the context can take without growing. */
size_t ir_compact_ctx_capacity(const ir_compact_ctx *ctx);
/* Grows the scratch (never shrinks); call outside per-frame paths. */
cudaError_t ir_compact_ctx_reserve(ir_compact_ctx *ctx, size_t max_elements);

/* ---- Plain device streams ---------------------------------------------------------------------- */
/* Out of place: d_out[0..*d_count) = d_in[i] for every i with d_flags[i] != 0.
 * Order as the method promises (stable methods keep input order). d_out must hold n values
 * and may not alias d_in. For Redzone the wrapper first derives the removal list from the
 * flags (one extra pass), then removes in place on a copy. */
cudaError_t ir_compact_flagged(ir_compact_ctx *ctx, ir_compact_method method,
                               const uint32_t *d_in, const uint8_t *d_flags, uint32_t *d_out,
                               uint32_t *d_count, size_t n, cudaStream_t stream);

/* Predicate form: keeps d_in[i] != reject_value (e.g. a "dead ray" marker). */
cudaError_t ir_compact_if_not_equal(ir_compact_ctx *ctx, ir_compact_method method,
                                    const uint32_t *d_in, uint32_t reject_value, uint32_t *d_out,
                                    uint32_t *d_count, size_t n, cudaStream_t stream);

/* In place: removes the k elements at the (distinct) indices d_remove[0..k) from d_data[0..n);
 * afterwards d_data[0..n-k) holds exactly the kept elements and *d_count = n - k.
 * Redzone does this natively in O(k); the others build flags and compact through their path. */
cudaError_t ir_compact_remove_indices(ir_compact_ctx *ctx, ir_compact_method method,
                                      uint32_t *d_data, size_t n, const uint32_t *d_remove,
                                      size_t k, uint32_t *d_count, cudaStream_t stream);

/* ---- Device-side counts ------------------------------------------------------------------------
 * For loops that stay on the GPU (CUDA graphs, no host round trip): n (and k) are read on the
 * device from d_n (d_k), launch sizes come from max_n (max_k). Methods that need n on the host
 * (Thrust) return cudaErrorNotSupported; callers then read the count back and use the calls above. */
cudaError_t ir_compact_flagged_dn(ir_compact_ctx *ctx, ir_compact_method method,
                                  const uint32_t *d_in, const uint8_t *d_flags, uint32_t *d_out,
                                  uint32_t *d_count, const uint32_t *d_n, size_t max_n,
                                  cudaStream_t stream);
cudaError_t ir_compact_remove_indices_dn(ir_compact_ctx *ctx, ir_compact_method method,
                                         uint32_t *d_data, const uint32_t *d_n, size_t max_n,
                                         const uint32_t *d_remove, const uint32_t *d_k,
                                         size_t max_k, uint32_t *d_count, cudaStream_t stream);
/* True when the method supports the _dn calls. */
bool ir_compact_supports_device_n(ir_compact_method method);

/* ---- References and benchmark support ----------------------------------------------------------
 * What the benchmark (inkray compact-bench) and the tests compare the methods with. Same shape
 * and rules as ir_compact_flagged (context scratch, stream, count left on the device). */
typedef enum ir_compact_reference {
  IR_COMPACT_REF_CUB = 0,          /* cub::DeviceSelect::Flagged: the speed reference */
  IR_COMPACT_REF_THRUST_BARE,      /* thrust::copy_if, default allocator (allocates per call) */
  IR_COMPACT_REF_INK_SECTIONS,     /* InK-Compact with the paper's chained sections (InK §2.3) */
  IR_COMPACT_REF_COUNT
} ir_compact_reference;
/* "cub", "thrust-bare", "ink-compact-sections" */
const char *ir_compact_reference_name(ir_compact_reference r);
cudaError_t ir_compact_reference_flagged(ir_compact_ctx *ctx, ir_compact_reference ref,
                                         const uint32_t *d_in, const uint8_t *d_flags,
                                         uint32_t *d_out, uint32_t *d_count, size_t n,
                                         cudaStream_t stream);

/* A producer kernel for the in-kernel ("fused") benchmark: for each i < n it computes a hashed
 * predicate of d_in[i] (keeps about keep_threshold / 2^32 of them) and either writes the value
 * and a flag to a sparse array (IR_PRODUCER_SPARSE[_X4]: d_out[i], d_flags[i], for an out-of-kernel
 * compaction afterwards) or emits the survivors from inside the kernel into d_out, *d_count. */
typedef enum ir_compact_producer {
  IR_PRODUCER_SPARSE = 0,
  IR_PRODUCER_INK_COLLATE,
  IR_PRODUCER_INK_COMPACT,          /* per-block decoupled look-back, survivors straight to place */
  IR_PRODUCER_INK_COMPACT_SECTIONS, /* the paper's chained sections (InK §2.3) */
  /* Four elements per thread, their loads issued together (one element per thread leaves a
   * memory-bound producer latency-bound). The sections allow one emit per thread and launch,
   * so they have no such form. */
  IR_PRODUCER_SPARSE_X4,
  IR_PRODUCER_INK_COLLATE_X4,       /* four emits per thread: order kept within each emit's block */
  IR_PRODUCER_INK_COMPACT_X4,       /* one look-back emit of four elements per thread: input order */
  /* Sixteen elements per thread (4096 per block): a tile as large as the out-of-kernel forms'. */
  IR_PRODUCER_SPARSE_X16,
  IR_PRODUCER_INK_COLLATE_X16,
  IR_PRODUCER_INK_COMPACT_X16,
  IR_PRODUCER_COUNT
} ir_compact_producer;
const char *ir_compact_producer_name(ir_compact_producer p);
/* The predicate the producer applies (so tests can build the expected output on the host). */
bool ir_compact_producer_keeps(uint32_t value, uint32_t keep_threshold);
cudaError_t ir_compact_producer_run(ir_compact_ctx *ctx, ir_compact_producer producer,
                                    const uint32_t *d_in, uint32_t keep_threshold, uint32_t *d_out,
                                    uint8_t *d_flags, uint32_t *d_count, size_t n,
                                    cudaStream_t stream);

/* Keeps the GPU busy on `stream` for about `microseconds` (one small kernel spinning on the
 * global timer). A timing harness enqueues it before its start event, so that the work it times
 * is already queued when the GPU reaches it and host launch latency stays out of the figure
 * (NVBench's "blocking kernel" does the same). */
cudaError_t ir_compact_hold_gpu(unsigned microseconds, cudaStream_t stream);

/* Bad input that only a kernel can see (Redzone: a removal index >= n or an index listed twice in
 * the red zone - the data are left untouched - or orphan counts that do not match, which skips
 * the last phase): the kernels set *d_count = n and record the problem in the context, where it
 * stays, and makes later Redzone calls on the context refuse too, until this call reads it.
 * Synchronises `stream`; returns cudaErrorInvalidValue (with ir_compact_last_error saying what
 * was wrong) if a call on this context since the last check found bad input, else cudaSuccess.
 * Debug builds also check every removal list before the call (with a host sync), duplicates
 * outside the red zone included. */
cudaError_t ir_compact_device_error(ir_compact_ctx *ctx, cudaStream_t stream);

/* One readable line for the last error of a call on this context (what failed and why). */
const char *ir_compact_last_error(const ir_compact_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
