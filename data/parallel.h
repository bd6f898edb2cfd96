/* A parallel for over [0, n) on all cores with pthreads: the data module's generators and
 * scans split their work into contiguous ranges, one per thread. Internal to data/. */
#ifndef INKRAY_DATA_PARALLEL_H
#define INKRAY_DATA_PARALLEL_H

#include <stddef.h>

#define IR_MAX_THREADS 128

/* fn(ctx, begin, end, worker) runs on `worker` in [0, ir_parallel_workers(n, grain)). Ranges
 * cover [0, n) in order; each holds at least `grain` items (except a short last one). Runs on
 * the calling thread alone when n is small or threads cannot be started. Returns the number
 * of workers used, so callers can size per-worker partial results beforehand with
 * ir_parallel_workers(). */
typedef void (*ir_range_fn)(void *ctx, size_t begin, size_t end, int worker);
int ir_parallel_workers(size_t n, size_t grain);
int ir_parallel_for(size_t n, size_t grain, ir_range_fn fn, void *ctx);

#endif
