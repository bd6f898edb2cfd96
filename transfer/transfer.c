/* Pinned staging pools, chunked host <-> device copies, and the cache of pinned host blocks
 * (transfer.h says what each is for).
 *
 * Whole copies. The bytes are cut into chunks of one staging buffer. Upload: each of a few
 * threads takes the next chunk, copies it into a free buffer (memcpy, which also takes the page
 * faults of a fresh source on that thread) and queues its DMA on the buffer's stream; the next
 * memcpy runs while that DMA does. Download: each thread queues a chunk's DMA into a buffer, waits
 * for it and copies it out, while the other threads' chunks are in flight. Every buffer stream
 * first waits for an event recorded on the caller's stream, so a copy never overtakes the caller's
 * earlier work; an upload ends by making the caller's stream wait for the buffers. Host memory
 * that is already pinned (cudaHostAlloc, cudaHostRegister) is copied directly, in one DMA.
 *
 * Items (ir_xfer_download_items): one thread keeps up to ITEM_DEPTH chunks in flight in as many
 * buffers and hands them to the consumer in order, queueing the next chunk into each buffer as
 * soon as the consumer is done with it.
 *
 * Buffers are never freed while the pool lives: a buffer's `done` event, synchronized when the
 * buffer is taken again, guards its reuse.
 */
#define _DEFAULT_SOURCE /* madvise */
#include "transfer/transfer.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "transfer/transfer_internal.h"

#define DEFAULT_BUFFER_BYTES ((size_t)4 << 20)
#define DEFAULT_MAX_BUFFERS 32
#define MAX_THREADS 16
/* Chunks an item download keeps in flight: enough to cover the consumer's time on one chunk with
 * the DMA of the next ones. */
#define ITEM_DEPTH 4
#define MAX_DEVICES 64
/* Free pinned blocks the cache keeps at most: pinned memory is memory the system cannot page or
 * hand to others, so blocks of sizes no longer asked for go once the cache passes this. */
#define HOST_CACHE_MAX ((size_t)4 << 30)

typedef struct pool_buffer {
  ir_xfer_buffer pub;
  bool busy, used;
} pool_buffer;

struct ir_xfer_pool {
  int device;
  size_t buffer_bytes;
  int max_buffers, threads;
  pthread_mutex_t lock;
  pthread_cond_t freed;
  pool_buffer *buffers;
  int count;
  unsigned next;
};

static ir_status cuda_failed(cudaError_t e, const char *what, char err[IR_ERR_LEN]) {
  snprintf(err, IR_ERR_LEN, "GPU error while %s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
  return IR_ERR_RUNTIME;
}

/* ---- Plans ------------------------------------------------------------------------------------------ */
static size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

size_t ir_xfer_items_per_chunk(size_t buffer_bytes, const size_t *item_bytes, int parts, size_t *offsets) {
  size_t per_item = 0;
  for (int k = 0; k < parts; k++) per_item += item_bytes[k];
  size_t slack = (size_t)parts * IR_XFER_ALIGN;
  if (per_item == 0 || buffer_bytes <= slack) return 0;
  size_t n = (buffer_bytes - slack) / per_item;
  if (n == 0) return 0;
  size_t offset = 0;
  for (int k = 0; k < parts; k++) {
    offsets[k] = offset;
    offset = align_up(offset + n * item_bytes[k], IR_XFER_ALIGN);
  }
  return n;
}

size_t ir_xfer_size_class(size_t bytes) {
  if (bytes <= 4096) return 4096;
  size_t top = (size_t)1 << (63 - __builtin_clzll((unsigned long long)bytes));
  size_t step = top / 8 > 4096 ? top / 8 : 4096;
  return align_up(bytes, step);
}

int ir_xfer_copy_threads(size_t chunks, int threads) {
  if (chunks <= 2 || threads <= 1) return 1;
  size_t t = chunks / 2;
  return t < (size_t)threads ? (int)t : threads;
}

/* ---- Pools ------------------------------------------------------------------------------------------ */
ir_status ir_xfer_pool_create(const ir_xfer_desc *desc, ir_xfer_pool **out, char err[IR_ERR_LEN]) {
  ir_xfer_desc zero = {0};
  if (!desc) desc = &zero;
  *out = NULL;
  if (desc->max_buffers < 0 || desc->threads < 0) {
    snprintf(err, IR_ERR_LEN, "transfer pool: max_buffers %d and threads %d must be 0 (default) or positive",
             desc->max_buffers, desc->threads);
    return IR_ERR_INPUT;
  }
  ir_xfer_pool *p = calloc(1, sizeof *p);
  if (!p) {
    snprintf(err, IR_ERR_LEN, "out of host memory for a transfer pool");
    return IR_ERR_RUNTIME;
  }
  cudaError_t e = cudaGetDevice(&p->device);
  if (e != cudaSuccess) {
    free(p);
    return cuda_failed(e, "finding the device of a transfer pool", err);
  }
  p->buffer_bytes = align_up(desc->buffer_bytes ? desc->buffer_bytes : DEFAULT_BUFFER_BYTES, 4096);
  p->max_buffers = desc->max_buffers ? desc->max_buffers : DEFAULT_MAX_BUFFERS;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int threads = desc->threads ? desc->threads : (int)(cores > 0 ? cores : 1);
  p->threads = threads < MAX_THREADS ? threads : MAX_THREADS;
  p->buffers = calloc((size_t)p->max_buffers, sizeof *p->buffers);
  if (!p->buffers) {
    free(p);
    snprintf(err, IR_ERR_LEN, "out of host memory for a transfer pool");
    return IR_ERR_RUNTIME;
  }
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->freed, NULL);
  *out = p;
  return IR_OK;
}

void ir_xfer_pool_destroy(ir_xfer_pool *p) {
  if (!p) return;
  int current = -1;
  bool switched = cudaGetDevice(&current) == cudaSuccess && current != p->device &&
                  cudaSetDevice(p->device) == cudaSuccess;
  for (int k = 0; k < p->count; k++) {
    ir_xfer_buffer *b = &p->buffers[k].pub;
    if (b->stream) cudaStreamSynchronize(b->stream);
    if (b->host) cudaFreeHost(b->host);
    if (b->done) cudaEventDestroy(b->done);
    if (b->stream) cudaStreamDestroy(b->stream);
  }
  if (switched) cudaSetDevice(current);
  pthread_mutex_destroy(&p->lock);
  pthread_cond_destroy(&p->freed);
  free(p->buffers);
  free(p);
}

static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static ir_xfer_pool *shared_pools[MAX_DEVICES];

ir_status ir_xfer_pool_of(int device, ir_xfer_pool **out, char err[IR_ERR_LEN]) {
  *out = NULL;
  if (device < 0 || device >= MAX_DEVICES) {
    snprintf(err, IR_ERR_LEN, "transfer pool: CUDA device %d is out of range (0..%d)", device, MAX_DEVICES - 1);
    return IR_ERR_INPUT;
  }
  pthread_mutex_lock(&shared_lock);
  ir_status st = IR_OK;
  if (!shared_pools[device]) {
    int current = -1;
    cudaError_t e = cudaGetDevice(&current);
    if (e == cudaSuccess && current != device) e = cudaSetDevice(device);
    if (e != cudaSuccess) st = cuda_failed(e, "selecting the device of a transfer pool", err);
    else st = ir_xfer_pool_create(NULL, &shared_pools[device], err);
    if (e == cudaSuccess && current != device) cudaSetDevice(current);
  }
  *out = shared_pools[device];
  pthread_mutex_unlock(&shared_lock);
  return st;
}

size_t ir_xfer_buffer_bytes(const ir_xfer_pool *p) { return p->buffer_bytes; }

/* ---- Buffers ---------------------------------------------------------------------------------------- */
/* A new buffer, on the pool's device (the caller's thread may have another one current). */
static cudaError_t buffer_create(ir_xfer_pool *p, ir_xfer_buffer *b) {
  int current = -1;
  cudaError_t e = cudaGetDevice(&current);
  if (e == cudaSuccess && current != p->device) e = cudaSetDevice(p->device);
  if (e == cudaSuccess) e = cudaHostAlloc(&b->host, p->buffer_bytes, cudaHostAllocPortable);
  if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking);
  if (e == cudaSuccess) e = cudaEventCreateWithFlags(&b->done, cudaEventDisableTiming);
  if (e != cudaSuccess) {
    if (b->host) cudaFreeHost(b->host);
    if (b->stream) cudaStreamDestroy(b->stream);
    memset(b, 0, sizeof *b);
  }
  if (current >= 0 && current != p->device) cudaSetDevice(current);
  return e;
}

/* A free buffer; when every one is taken and the pool is full, waits for one (`wait`) or gives
 * IR_OK with *out NULL. */
static ir_status acquire(ir_xfer_pool *p, bool wait, ir_xfer_buffer **out, char err[IR_ERR_LEN]) {
  pool_buffer *b = NULL;
  cudaError_t e = cudaSuccess;
  *out = NULL;
  pthread_mutex_lock(&p->lock);
  while (!b) {
    for (int k = 0; k < p->count && !b; k++) {
      pool_buffer *c = &p->buffers[(p->next + (unsigned)k) % (unsigned)p->count];
      if (!c->busy) b = c;
    }
    if (b) break;
    if (p->count < p->max_buffers) {
      /* Grown on demand: as many as the threads copying at once keep busy. */
      pool_buffer *c = &p->buffers[p->count];
      if ((e = buffer_create(p, &c->pub)) == cudaSuccess) {
        p->count++;
        b = c;
        break;
      }
      if (p->count == 0) break; /* not even one: the copy cannot go through the pool */
      /* Pinned memory is short: the pool stays at the buffers it has, and this copy waits for
       * one of them (those are held by copies that will give them back). */
      (void)cudaGetLastError();
      e = cudaSuccess;
      p->max_buffers = p->count;
      continue;
    }
    if (!wait) break;
    pthread_cond_wait(&p->freed, &p->lock);
  }
  if (b) {
    b->busy = true;
    p->next++;
  }
  pthread_mutex_unlock(&p->lock);
  if (!b && !wait) {
    if (e != cudaSuccess) (void)cudaGetLastError(); /* a buffer that could not be made is one fewer, not a failure */
    return IR_OK;
  }
  if (!b) return cuda_failed(e, "allocating a pinned staging buffer", err);
  /* Its previous copy must have left the buffer before it is written again. */
  if (b->used && (e = cudaEventSynchronize(b->pub.done)) != cudaSuccess) {
    ir_xfer_release(p, &b->pub);
    return cuda_failed(e, "waiting for an earlier copy through a staging buffer", err);
  }
  *out = &b->pub;
  return IR_OK;
}

ir_status ir_xfer_acquire(ir_xfer_pool *p, ir_xfer_buffer **out, char err[IR_ERR_LEN]) {
  return acquire(p, true, out, err);
}

void ir_xfer_release(ir_xfer_pool *p, ir_xfer_buffer *buffer) {
  pool_buffer *b = (pool_buffer *)buffer; /* pub is the first member */
  pthread_mutex_lock(&p->lock);
  b->busy = false;
  b->used = true;
  pthread_cond_signal(&p->freed);
  pthread_mutex_unlock(&p->lock);
}

ir_status ir_xfer_wait_all(ir_xfer_pool *p, cudaStream_t stream, char err[IR_ERR_LEN]) {
  cudaError_t e = cudaSuccess;
  pthread_mutex_lock(&p->lock);
  for (int k = 0; k < p->count && e == cudaSuccess; k++)
    if (p->buffers[k].used) e = cudaStreamWaitEvent(stream, p->buffers[k].pub.done, 0);
  pthread_mutex_unlock(&p->lock);
  return e == cudaSuccess ? IR_OK : cuda_failed(e, "ordering work after the staged copies", err);
}

/* ---- Whole copies ---------------------------------------------------------------------------------- */
typedef struct copy_job {
  ir_xfer_pool *pool;
  char *device;
  char *host;
  size_t bytes, chunk, chunks, next;
  bool upload;
  cudaEvent_t start; /* recorded on the caller's stream: no copy overtakes its earlier work */
  pthread_mutex_t lock;
  ir_status status;
  char err[IR_ERR_LEN];
} copy_job;

static void job_fail(copy_job *job, ir_status st, const char *err) {
  pthread_mutex_lock(&job->lock);
  if (job->status == IR_OK) {
    job->status = st;
    snprintf(job->err, IR_ERR_LEN, "%s", err);
  }
  pthread_mutex_unlock(&job->lock);
}

static ir_status copy_chunk(copy_job *job, size_t k, char err[IR_ERR_LEN]) {
  size_t off = k * job->chunk, n = job->bytes - off < job->chunk ? job->bytes - off : job->chunk;
  ir_xfer_buffer *b = NULL;
  ir_status st = ir_xfer_acquire(job->pool, &b, err);
  if (st != IR_OK) return st;
  cudaError_t e = cudaStreamWaitEvent(b->stream, job->start, 0);
  if (job->upload) {
    memcpy(b->host, job->host + off, n);
    if (e == cudaSuccess) e = cudaMemcpyAsync(job->device + off, b->host, n, cudaMemcpyHostToDevice, b->stream);
    if (e == cudaSuccess) e = cudaEventRecord(b->done, b->stream);
  } else {
    if (e == cudaSuccess) e = cudaMemcpyAsync(b->host, job->device + off, n, cudaMemcpyDeviceToHost, b->stream);
    if (e == cudaSuccess) e = cudaEventRecord(b->done, b->stream);
    if (e == cudaSuccess) e = cudaEventSynchronize(b->done);
    if (e == cudaSuccess) memcpy(job->host + off, b->host, n);
  }
  ir_xfer_release(job->pool, b);
  return e == cudaSuccess ? IR_OK : cuda_failed(e, job->upload ? "uploading a chunk" : "downloading a chunk", err);
}

static void *copy_worker(void *arg) {
  copy_job *job = arg;
  char err[IR_ERR_LEN];
  cudaError_t e = cudaSetDevice(job->pool->device);
  if (e != cudaSuccess) {
    cuda_failed(e, "selecting the device of a copy", err);
    job_fail(job, IR_ERR_RUNTIME, err);
    return NULL;
  }
  for (;;) {
    pthread_mutex_lock(&job->lock);
    bool stop = job->status != IR_OK || job->next >= job->chunks;
    size_t k = job->next++;
    pthread_mutex_unlock(&job->lock);
    if (stop) break;
    ir_status st = copy_chunk(job, k, err);
    if (st != IR_OK) job_fail(job, st, err);
  }
  return NULL;
}

static bool is_pinned(const void *host) {
  struct cudaPointerAttributes attr;
  if (cudaPointerGetAttributes(&attr, host) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeHost;
}

static ir_status whole_copy(ir_xfer_pool *p, void *device, void *host, size_t bytes, bool upload, cudaStream_t stream,
                            char err[IR_ERR_LEN]) {
  if (bytes == 0) return IR_OK;
  int current = -1;
  cudaError_t e = cudaGetDevice(&current);
  if (e == cudaSuccess && current != p->device) e = cudaSetDevice(p->device);
  if (e != cudaSuccess) return cuda_failed(e, "selecting the device of a copy", err);
  ir_status st = IR_OK;
  if (is_pinned(host)) {
    e = upload ? cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream)
               : cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream);
    /* The caller may write the source or read the destination once this returns. */
    if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
    if (e != cudaSuccess)
      st = cuda_failed(e, upload ? "uploading pinned memory" : "downloading into pinned memory", err);
  } else {
    copy_job job;
    memset(&job, 0, sizeof job);
    job.pool = p, job.device = device, job.host = host, job.bytes = bytes, job.upload = upload;
    job.chunk = p->buffer_bytes;
    job.chunks = (bytes + job.chunk - 1) / job.chunk;
    pthread_mutex_init(&job.lock, NULL);
    e = cudaEventCreateWithFlags(&job.start, cudaEventDisableTiming);
    if (e == cudaSuccess) e = cudaEventRecord(job.start, stream);
    if (e != cudaSuccess) {
      st = cuda_failed(e, "ordering a copy after earlier work", err);
    } else {
      int threads = ir_xfer_copy_threads(job.chunks, p->threads);
      pthread_t tid[MAX_THREADS];
      int started = 0;
      for (int t = 1; t < threads; t++, started++)
        if (pthread_create(&tid[started], NULL, copy_worker, &job) != 0) break;
      copy_worker(&job);
      for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
      st = job.status;
      if (st != IR_OK) snprintf(err, IR_ERR_LEN, "%s", job.err);
      if (st == IR_OK && upload) st = ir_xfer_wait_all(p, stream, err);
      /* Every chunk is queued before the source is given back: its memcpy is done. */
    }
    if (job.start) cudaEventDestroy(job.start);
    pthread_mutex_destroy(&job.lock);
  }
  if (current >= 0 && current != p->device) cudaSetDevice(current);
  return st;
}

ir_status ir_xfer_upload(ir_xfer_pool *p, void *dst, const void *src, size_t bytes, cudaStream_t stream,
                         char err[IR_ERR_LEN]) {
  return whole_copy(p, dst, (void *)src, bytes, true, stream, err);
}

ir_status ir_xfer_download(ir_xfer_pool *p, void *dst, const void *src, size_t bytes, cudaStream_t stream,
                           char err[IR_ERR_LEN]) {
  return whole_copy(p, (void *)src, dst, bytes, false, stream, err);
}

/* ---- Items to a consumer ----------------------------------------------------------------------------- */
typedef struct item_plan {
  const char *src[IR_XFER_MAX_PARTS];
  size_t item_bytes[IR_XFER_MAX_PARTS], offsets[IR_XFER_MAX_PARTS];
  int parts;
  size_t items, per_chunk;
} item_plan;

static cudaError_t queue_items(const item_plan *plan, size_t chunk, ir_xfer_buffer *b, cudaEvent_t start) {
  size_t first = chunk * plan->per_chunk;
  size_t count = plan->items - first < plan->per_chunk ? plan->items - first : plan->per_chunk;
  cudaError_t e = cudaStreamWaitEvent(b->stream, start, 0);
  for (int k = 0; k < plan->parts && e == cudaSuccess; k++)
    e = cudaMemcpyAsync((char *)b->host + plan->offsets[k], plan->src[k] + first * plan->item_bytes[k],
                        count * plan->item_bytes[k], cudaMemcpyDeviceToHost, b->stream);
  if (e == cudaSuccess) e = cudaEventRecord(b->done, b->stream);
  return e;
}

ir_status ir_xfer_download_items(ir_xfer_pool *p, const void *const *src, const size_t *item_bytes, int parts,
                                 size_t items, cudaStream_t stream, ir_xfer_consumer consume, void *ctx,
                                 char err[IR_ERR_LEN]) {
  if (parts < 1 || parts > IR_XFER_MAX_PARTS) {
    snprintf(err, IR_ERR_LEN, "item download: %d parts; give 1 to %d", parts, IR_XFER_MAX_PARTS);
    return IR_ERR_INPUT;
  }
  item_plan plan;
  memset(&plan, 0, sizeof plan);
  plan.parts = parts, plan.items = items;
  for (int k = 0; k < parts; k++) plan.src[k] = src[k], plan.item_bytes[k] = item_bytes[k];
  plan.per_chunk = ir_xfer_items_per_chunk(p->buffer_bytes, item_bytes, parts, plan.offsets);
  if (plan.per_chunk == 0) {
    snprintf(err, IR_ERR_LEN, "item download: an item of every part does not fit a %zu-byte staging buffer",
             p->buffer_bytes);
    return IR_ERR_INPUT;
  }
  if (items == 0) return IR_OK;
  size_t chunks = (items + plan.per_chunk - 1) / plan.per_chunk;
  int depth = chunks < ITEM_DEPTH ? (int)chunks : ITEM_DEPTH;
  if (depth > p->max_buffers) depth = p->max_buffers;
  int current = -1;
  cudaError_t e = cudaGetDevice(&current);
  if (e == cudaSuccess && current != p->device) e = cudaSetDevice(p->device);
  if (e != cudaSuccess) return cuda_failed(e, "selecting the device of a download", err);
  ir_xfer_buffer *ring[ITEM_DEPTH] = {0};
  cudaEvent_t start = NULL;
  ir_status st = IR_OK;
  e = cudaEventCreateWithFlags(&start, cudaEventDisableTiming);
  if (e == cudaSuccess) e = cudaEventRecord(start, stream);
  if (e != cudaSuccess) st = cuda_failed(e, "ordering a download after earlier work", err);
  /* The first buffer waits for one to be free; the others are taken only when free, so that
   * downloads running at once never hold part of their rings each and wait for the rest. */
  for (int k = 0; k < depth && st == IR_OK; k++) {
    if ((st = acquire(p, k == 0, &ring[k], err)) != IR_OK) break;
    if (!ring[k]) {
      depth = k;
      break;
    }
    if ((e = queue_items(&plan, (size_t)k, ring[k], start)) != cudaSuccess)
      st = cuda_failed(e, "queueing a download", err);
  }
  for (size_t c = 0; c < chunks && st == IR_OK; c++) {
    ir_xfer_buffer *b = ring[c % (size_t)depth];
    if ((e = cudaEventSynchronize(b->done)) != cudaSuccess) {
      st = cuda_failed(e, "downloading a chunk", err);
      break;
    }
    const void *slices[IR_XFER_MAX_PARTS];
    for (int k = 0; k < parts; k++) slices[k] = (const char *)b->host + plan.offsets[k];
    size_t first = c * plan.per_chunk, count = items - first < plan.per_chunk ? items - first : plan.per_chunk;
    if (consume(ctx, slices, first, count, err) != 0) {
      st = IR_ERR_RUNTIME;
      break;
    }
    if (c + (size_t)depth < chunks && (e = queue_items(&plan, c + (size_t)depth, b, start)) != cudaSuccess)
      st = cuda_failed(e, "queueing a download", err);
  }
  /* A buffer given back with a copy in flight is safe: it is waited for when taken again. */
  for (int k = 0; k < depth; k++)
    if (ring[k]) ir_xfer_release(p, ring[k]);
  if (start) cudaEventDestroy(start);
  if (current >= 0 && current != p->device) cudaSetDevice(current);
  return st;
}

/* ---- Pageable host memory ----------------------------------------------------------------------------- */
#define HUGE_PAGE ((size_t)2 << 20)

void *ir_xfer_host_pages(size_t bytes) {
  if (bytes < 32 * HUGE_PAGE) return malloc(bytes ? bytes : 1);
  void *p = NULL;
  if (posix_memalign(&p, HUGE_PAGE, bytes) != 0) return NULL;
#ifdef MADV_HUGEPAGE
  madvise(p, bytes, MADV_HUGEPAGE); /* a hint: without it the pages are small, nothing else changes */
#endif
  return p;
}

/* ---- Pinned host blocks, cached --------------------------------------------------------------------- */
typedef struct host_block {
  void *ptr;
  size_t bytes; /* its size class */
  bool in_use;
} host_block;

static pthread_mutex_t host_lock = PTHREAD_MUTEX_INITIALIZER;
static host_block *host_blocks;
static size_t host_count, host_cap;

/* Frees every unused block; with host_lock held. */
static size_t trim_locked(void) {
  size_t freed = 0, kept = 0;
  for (size_t k = 0; k < host_count; k++) {
    if (host_blocks[k].in_use) {
      host_blocks[kept++] = host_blocks[k];
    } else {
      cudaFreeHost(host_blocks[k].ptr);
      freed += host_blocks[k].bytes;
    }
  }
  host_count = kept;
  return freed;
}

void *ir_xfer_host_alloc(size_t bytes) {
  size_t cls = ir_xfer_size_class(bytes ? bytes : 1);
  pthread_mutex_lock(&host_lock);
  for (size_t k = 0; k < host_count; k++)
    if (!host_blocks[k].in_use && host_blocks[k].bytes == cls) {
      host_blocks[k].in_use = true;
      pthread_mutex_unlock(&host_lock);
      return host_blocks[k].ptr;
    }
  void *ptr = NULL;
  if (host_count == host_cap) {
    size_t cap = host_cap ? 2 * host_cap : 64;
    host_block *grown = realloc(host_blocks, cap * sizeof *grown);
    if (!grown) {
      pthread_mutex_unlock(&host_lock);
      return NULL;
    }
    host_blocks = grown, host_cap = cap;
  }
  cudaError_t e = cudaHostAlloc(&ptr, cls, cudaHostAllocPortable);
  if (e != cudaSuccess) {
    /* Blocks kept for other sizes may be what stands in the way. */
    (void)cudaGetLastError();
    if (trim_locked() > 0) e = cudaHostAlloc(&ptr, cls, cudaHostAllocPortable);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      pthread_mutex_unlock(&host_lock);
      return NULL;
    }
  }
  host_blocks[host_count++] = (host_block){.ptr = ptr, .bytes = cls, .in_use = true};
  pthread_mutex_unlock(&host_lock);
  return ptr;
}

void ir_xfer_host_free(void *ptr) {
  if (!ptr) return;
  pthread_mutex_lock(&host_lock);
  size_t cached = 0;
  for (size_t k = 0; k < host_count; k++) {
    if (host_blocks[k].ptr == ptr) host_blocks[k].in_use = false;
    if (!host_blocks[k].in_use) cached += host_blocks[k].bytes;
  }
  /* Over the limit: the other free blocks go, oldest first; the one given back now stays (the
   * next call of the same size wants it). */
  size_t kept = 0;
  for (size_t k = 0; k < host_count; k++) {
    host_block b = host_blocks[k];
    if (cached > HOST_CACHE_MAX && !b.in_use && b.ptr != ptr) {
      cudaFreeHost(b.ptr);
      cached -= b.bytes;
    } else {
      host_blocks[kept++] = b;
    }
  }
  host_count = kept;
  pthread_mutex_unlock(&host_lock);
}

size_t ir_xfer_host_trim(void) {
  pthread_mutex_lock(&host_lock);
  size_t freed = trim_locked();
  pthread_mutex_unlock(&host_lock);
  return freed;
}

void ir_xfer_host_usage(size_t *in_use, size_t *cached) {
  size_t used = 0, kept = 0;
  pthread_mutex_lock(&host_lock);
  for (size_t k = 0; k < host_count; k++) *(host_blocks[k].in_use ? &used : &kept) += host_blocks[k].bytes;
  pthread_mutex_unlock(&host_lock);
  if (in_use) *in_use = used;
  if (cached) *cached = kept;
}
