/* inkray transfer module: host <-> device copies at the link's speed, through pinned memory.
 *
 * A copy from or to pageable host memory runs at 1-1.5 GB/s (the driver stages it through its own
 * small pinned buffers, synchronously); from pinned memory the same link moves 25-55 GB/s. This
 * module gives every caller the fast path without pinning the caller's memory:
 *
 *   - a pool of pinned staging buffers (a few MiB each, grown on demand up to a limit and kept),
 *     each with its own stream and an event after its last copy; callers that queue their own
 *     copies (3D arrays) take and give back buffers;
 *   - whole copies, chunked through the buffers on several threads so that the host-side memcpy
 *     of one chunk overlaps the DMA of the others: upload from host memory, download into host
 *     memory, and a download of several arrays of items handed, chunk by chunk and in order, to a
 *     consumer (a file writer writes chunk k while chunk k + 1 downloads);
 *   - pinned host memory from a process-wide cache (like CuPy's pinned memory pool), for results
 *     that are handed out and downloaded into directly: a block given back is kept for the next
 *     allocation of its size class.
 *
 * One pool per CUDA device is shared by the whole process (ir_xfer_pool_of); pools are
 * thread-safe. Copies never return before the host memory they read may be reused or the host
 * memory they write is complete. Functions return an ir_status and fill `err` with one line; they
 * never print or exit. Plain C on the CUDA runtime API.
 */
#ifndef INKRAY_TRANSFER_H
#define INKRAY_TRANSFER_H

#include <stdbool.h>
#include <stddef.h>

#include <cuda_runtime_api.h>

#include "data/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Pools -------------------------------------------------------------------------------------- */
typedef struct ir_xfer_pool ir_xfer_pool;

typedef struct ir_xfer_desc {
  size_t buffer_bytes; /* each staging buffer; 0: 4 MiB (a multiple of 4096 is used) */
  int max_buffers;     /* the most buffers the pool grows to; 0: 32 */
  int threads;         /* host threads of a whole copy; 0: the cores, at most 16 */
} ir_xfer_desc;

/* A pool on the current CUDA device (its streams live there). */
ir_status ir_xfer_pool_create(const ir_xfer_desc *desc, ir_xfer_pool **out, char err[IR_ERR_LEN]);
/* Waits for the pool's copies, then frees its buffers. NULL is fine. */
void ir_xfer_pool_destroy(ir_xfer_pool *pool);
/* The process's shared pool of CUDA device `device` (made at the first call, with the default
 * desc, kept until the process ends). */
ir_status ir_xfer_pool_of(int device, ir_xfer_pool **out, char err[IR_ERR_LEN]);
size_t ir_xfer_buffer_bytes(const ir_xfer_pool *pool);

/* ---- Buffers, for callers that queue their own copies ------------------------------------------- */
typedef struct ir_xfer_buffer {
  void *host;          /* pinned, ir_xfer_buffer_bytes(pool) */
  cudaStream_t stream; /* the buffer's own non-blocking stream */
  cudaEvent_t done;    /* the caller records it after the buffer's last copy, before releasing it */
} ir_xfer_buffer;

/* A free buffer whose previous copy has finished (waits for one when all are taken). */
ir_status ir_xfer_acquire(ir_xfer_pool *pool, ir_xfer_buffer **out, char err[IR_ERR_LEN]);
void ir_xfer_release(ir_xfer_pool *pool, ir_xfer_buffer *buffer);
/* Makes `stream` wait for every copy queued through the pool's buffers so far. */
ir_status ir_xfer_wait_all(ir_xfer_pool *pool, cudaStream_t stream, char err[IR_ERR_LEN]);

/* ---- Whole copies ------------------------------------------------------------------------------- */
/* Host -> device: `bytes` of host memory (any kind) into device memory. The copy is ordered before
 * work queued on `stream` afterwards; `src` may be reused when this returns. */
ir_status ir_xfer_upload(ir_xfer_pool *pool, void *dst, const void *src, size_t bytes, cudaStream_t stream,
                         char err[IR_ERR_LEN]);
/* Device -> host: after the work queued on `stream` so far; `dst` is complete when this returns. */
ir_status ir_xfer_download(ir_xfer_pool *pool, void *dst, const void *src, size_t bytes, cudaStream_t stream,
                           char err[IR_ERR_LEN]);

/* Arrays of `items` items each (part k: item_bytes[k] bytes an item, in device memory), downloaded
 * a chunk of items at a time, every part's slice of the chunk in a staging buffer, and handed to
 * `consume` in order (first = the chunk's first item) while the next chunks download. A non-zero
 * return from `consume` stops the download: IR_ERR_RUNTIME, `err` left as the consumer wrote it. */
#define IR_XFER_MAX_PARTS 8
typedef int (*ir_xfer_consumer)(void *ctx, const void *const *parts, size_t first, size_t count,
                                char err[IR_ERR_LEN]);
ir_status ir_xfer_download_items(ir_xfer_pool *pool, const void *const *src, const size_t *item_bytes, int parts,
                                 size_t items, cudaStream_t stream, ir_xfer_consumer consume, void *ctx,
                                 char err[IR_ERR_LEN]);

/* ---- Pageable host memory for big destinations ---------------------------------------------------- */
/* `bytes` of plain host memory (free() frees it) whose first touch costs little: from 64 MiB on,
 * 2 MiB-aligned with transparent huge pages asked for (madvise), so that a download into it takes
 * 512 times fewer page faults. NULL when out of memory. */
void *ir_xfer_host_pages(size_t bytes);

/* ---- Pinned host memory, cached ----------------------------------------------------------------- */
/* `bytes` of pinned (page-locked, portable) host memory, from the cache when a block of its size
 * class is free there; NULL when none can be had (the cache is emptied and the allocation tried
 * again first). The memory is usable with every device. */
void *ir_xfer_host_alloc(size_t bytes);
/* Gives a block from ir_xfer_host_alloc back to the cache, which keeps at most 4 GiB of free
 * blocks (older ones of other sizes are freed first). NULL is fine. */
void ir_xfer_host_free(void *ptr);
/* Frees the cache's unused blocks; returns the bytes freed. */
size_t ir_xfer_host_trim(void);
/* Bytes the cache holds: in use (handed out) and free (kept for reuse). */
void ir_xfer_host_usage(size_t *in_use, size_t *cached);

#ifdef __cplusplus
}
#endif
#endif
