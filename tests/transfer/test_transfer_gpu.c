/* The transfer module's copies (label gpu; exit 77 without a CUDA device): uploads and downloads
 * through pools of tiny and default buffers, at sizes and offsets that end mid-buffer, equal byte
 * for byte to what was sent; a download ordered after earlier work on its stream; item downloads
 * handed to the consumer in order and complete, and stopped by a consumer that fails; threads
 * sharing a pool of fewer buffers than their downloads would hold; pinned host
 * memory, direct and from the cache, whose blocks come back for the next allocation. */
#include <pthread.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "tests/check.h"
#include "transfer/transfer.h"
#include "transfer/transfer_internal.h"

static unsigned char *pattern(size_t bytes, unsigned seed) {
  unsigned char *p = malloc(bytes ? bytes : 1);
  uint32_t x = 2463534242u ^ seed;
  for (size_t i = 0; i < bytes; i++) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    p[i] = (unsigned char)x;
  }
  return p;
}

/* Up and back down through `pool`, with `bytes` starting `offset` bytes into host and device
 * buffers (unaligned on purpose). */
static void round_trip(ir_xfer_pool *pool, size_t bytes, size_t offset, const char *what) {
  char err[IR_ERR_LEN];
  unsigned char *src = pattern(bytes + offset, (unsigned)bytes), *back = malloc(bytes + offset + 1);
  memset(back, 0xAB, bytes + offset + 1);
  char *dev = NULL;
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
  CHECK(cudaMalloc((void **)&dev, bytes + offset + 1) == cudaSuccess);
  CHECK_MSG(ir_xfer_upload(pool, dev + offset, src + offset, bytes, stream, err) == IR_OK, "%s", err);
  /* The source may be reused as soon as the upload returns. */
  memset(src + offset, 0, bytes);
  CHECK_MSG(ir_xfer_download(pool, back + offset, dev + offset, bytes, stream, err) == IR_OK, "%s", err);
  unsigned char *expect = pattern(bytes + offset, (unsigned)bytes);
  CHECK_MSG(memcmp(back + offset, expect + offset, bytes) == 0, "%s: %zu bytes at offset %zu came back different",
            what, bytes, offset);
  CHECK_MSG(back[offset + bytes] == 0xAB, "%s: the download wrote past its end", what);
  CHECK_MSG(offset == 0 || back[offset - 1] == 0xAB, "%s: the download wrote before its start", what);
  cudaFree(dev);
  cudaStreamDestroy(stream);
  free(src), free(back), free(expect);
}

static void test_round_trips_are_byte_equal(void) {
  char err[IR_ERR_LEN];
  ir_xfer_pool *tiny = NULL, *two = NULL, *shared = NULL;
  ir_xfer_desc d = {.buffer_bytes = 4096, .max_buffers = 3, .threads = 4};
  CHECK_MSG(ir_xfer_pool_create(&d, &tiny, err) == IR_OK, "%s", err);
  ir_xfer_desc d2 = {.buffer_bytes = 8192, .max_buffers = 2, .threads = 1};
  CHECK_MSG(ir_xfer_pool_create(&d2, &two, err) == IR_OK, "%s", err);
  CHECK_MSG(ir_xfer_pool_of(0, &shared, err) == IR_OK, "%s", err);
  const size_t sizes[] = {0, 1, 4095, 4096, 4097, 3 * 4096 + 5, 100003, (size_t)1 << 20};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    round_trip(tiny, sizes[k], 0, "4 KiB buffers, 3 of them, 4 threads");
    round_trip(tiny, sizes[k], 7, "4 KiB buffers, unaligned");
    round_trip(two, sizes[k], 3, "8 KiB buffers, 2 of them, 1 thread");
    round_trip(shared, sizes[k], 1, "the shared pool");
  }
  round_trip(shared, ((size_t)48 << 20) + 12345, 5, "the shared pool, 48 MiB");
  ir_xfer_pool *again = NULL;
  CHECK(ir_xfer_pool_of(0, &again, err) == IR_OK && again == shared);
  ir_xfer_pool_destroy(tiny);
  ir_xfer_pool_destroy(two);
}

/* A download waits for the work queued on its stream before it: here a memset. */
static void test_download_waits_for_earlier_work(void) {
  char err[IR_ERR_LEN];
  ir_xfer_pool *pool = NULL;
  CHECK(ir_xfer_pool_of(0, &pool, err) == IR_OK);
  size_t bytes = (size_t)64 << 20;
  unsigned char *dev = NULL, *host = malloc(bytes);
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
  CHECK(cudaMalloc((void **)&dev, bytes) == cudaSuccess);
  CHECK(cudaMemset(dev, 1, bytes) == cudaSuccess);
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
  for (int round = 0; round < 3; round++) {
    int value = 0x10 + round;
    CHECK(cudaMemsetAsync(dev, value, bytes, stream) == cudaSuccess);
    CHECK_MSG(ir_xfer_download(pool, host, dev, bytes, stream, err) == IR_OK, "%s", err);
    size_t bad = 0;
    for (size_t i = 0; i < bytes; i++) bad += host[i] != value;
    CHECK_MSG(bad == 0, "round %d: %zu bytes were read before the memset queued ahead of the download", round, bad);
  }
  cudaFree(dev);
  cudaStreamDestroy(stream);
  free(host);
}

typedef struct items_seen {
  const unsigned char *expect[3];
  size_t item_bytes[3];
  int parts;
  size_t next, chunks, fail_at;
  bool in_order, equal;
} items_seen;

static int consume(void *ctx, const void *const *parts, size_t first, size_t count, char err[IR_ERR_LEN]) {
  items_seen *s = ctx;
  if (s->chunks == s->fail_at) {
    snprintf(err, IR_ERR_LEN, "the consumer stops at chunk %zu", s->chunks);
    return 1;
  }
  s->in_order = s->in_order && first == s->next && count > 0;
  for (int k = 0; k < s->parts; k++)
    s->equal = s->equal && memcmp(parts[k], s->expect[k] + first * s->item_bytes[k], count * s->item_bytes[k]) == 0;
  s->next = first + count;
  s->chunks++;
  return 0;
}

static void test_items_arrive_in_order_and_complete(void) {
  char err[IR_ERR_LEN];
  ir_xfer_pool *small = NULL, *shared = NULL;
  ir_xfer_desc d = {.buffer_bytes = 4096, .max_buffers = 5};
  CHECK(ir_xfer_pool_create(&d, &small, err) == IR_OK);
  CHECK(ir_xfer_pool_of(0, &shared, err) == IR_OK);
  const size_t item_bytes[3] = {12, 4, 3};
  const size_t counts[] = {0, 1, 17, 1000, 300001};
  for (int p = 0; p < 2; p++) {
    ir_xfer_pool *pool = p ? shared : small;
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
      size_t items = counts[c];
      items_seen s = {.parts = 3, .in_order = true, .equal = true, .fail_at = SIZE_MAX};
      const void *src[3];
      for (int k = 0; k < 3; k++) {
        s.item_bytes[k] = item_bytes[k];
        s.expect[k] = pattern(items * item_bytes[k], (unsigned)(k + 10 * c));
        void *dev = NULL;
        CHECK(cudaMalloc(&dev, items * item_bytes[k] + 1) == cudaSuccess);
        CHECK(cudaMemcpy(dev, s.expect[k], items * item_bytes[k], cudaMemcpyHostToDevice) == cudaSuccess);
        src[k] = dev;
      }
      CHECK_MSG(ir_xfer_download_items(pool, src, item_bytes, 3, items, NULL, consume, &s, err) == IR_OK, "%s", err);
      CHECK_MSG(s.in_order && s.equal && s.next == items, "%zu items: in order %d, equal %d, %zu delivered", items,
                s.in_order, s.equal, s.next);
      if (items > 1000) {
        /* A consumer that fails stops the download with its message (every pool here cuts these
         * items into two chunks at least). */
        CHECK(s.chunks >= 2);
        items_seen f = s;
        f.next = 0, f.chunks = 0, f.fail_at = 1, f.in_order = f.equal = true;
        ir_status st = ir_xfer_download_items(pool, src, item_bytes, 3, items, NULL, consume, &f, err);
        CHECK_EQ_INT(st, IR_ERR_RUNTIME);
        CHECK_STR_CONTAINS(err, "stops at chunk 1");
        CHECK_EQ_INT(f.chunks, 1);
      }
      for (int k = 0; k < 3; k++) {
        cudaFree((void *)src[k]);
        free((void *)s.expect[k]);
      }
    }
  }
  /* Items larger than a buffer are refused with a message. */
  const size_t huge[1] = {8192};
  const void *nothing[1] = {NULL};
  items_seen s = {.parts = 1};
  CHECK_EQ_INT(ir_xfer_download_items(small, nothing, huge, 1, 10, NULL, consume, &s, err), IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "does not fit");
  ir_xfer_pool_destroy(small);
}

/* Several threads copying through one small pool at once (whole copies and item downloads, more
 * rings than the pool has buffers) all finish with the right bytes. */
typedef struct concurrent_arg {
  ir_xfer_pool *pool;
  int index;
  bool ok;
} concurrent_arg;

static void *concurrent_worker(void *arg) {
  concurrent_arg *a = arg;
  char err[IR_ERR_LEN];
  size_t items = 20000 + 999 * (size_t)a->index;
  const size_t item_bytes[2] = {12, 4};
  items_seen s = {.parts = 2, .in_order = true, .equal = true, .fail_at = SIZE_MAX};
  const void *src[2] = {NULL, NULL};
  a->ok = cudaSetDevice(0) == cudaSuccess;
  for (int k = 0; k < 2 && a->ok; k++) {
    s.item_bytes[k] = item_bytes[k];
    s.expect[k] = pattern(items * item_bytes[k], (unsigned)(a->index * 7 + k));
    void *dev = NULL;
    a->ok = cudaMalloc(&dev, items * item_bytes[k]) == cudaSuccess &&
            ir_xfer_upload(a->pool, dev, s.expect[k], items * item_bytes[k], NULL, err) == IR_OK;
    src[k] = dev;
  }
  for (int round = 0; round < 3 && a->ok; round++) {
    s.next = 0, s.chunks = 0;
    a->ok = ir_xfer_download_items(a->pool, src, item_bytes, 2, items, NULL, consume, &s, err) == IR_OK &&
            s.in_order && s.equal && s.next == items;
  }
  for (int k = 0; k < 2; k++) {
    cudaFree((void *)src[k]);
    free((void *)s.expect[k]);
  }
  return NULL;
}

static void test_threads_share_a_small_pool(void) {
  char err[IR_ERR_LEN];
  ir_xfer_pool *pool = NULL;
  ir_xfer_desc d = {.buffer_bytes = 8192, .max_buffers = 5, .threads = 3};
  CHECK(ir_xfer_pool_create(&d, &pool, err) == IR_OK);
  enum { THREADS = 8 };
  pthread_t tid[THREADS];
  concurrent_arg args[THREADS];
  for (int t = 0; t < THREADS; t++) {
    args[t] = (concurrent_arg){.pool = pool, .index = t};
    CHECK(pthread_create(&tid[t], NULL, concurrent_worker, &args[t]) == 0);
  }
  for (int t = 0; t < THREADS; t++) {
    pthread_join(tid[t], NULL);
    CHECK_MSG(args[t].ok, "thread %d: its copies went wrong", t);
  }
  ir_xfer_pool_destroy(pool);
}

static void test_pinned_cache_reuses_blocks(void) {
  char err[IR_ERR_LEN];
  ir_xfer_host_trim();
  size_t used = 0, cached = 0;
  void *a = ir_xfer_host_alloc((size_t)10 << 20), *b = ir_xfer_host_alloc(100);
  CHECK(a && b && a != b);
  ir_xfer_host_usage(&used, &cached);
  CHECK_EQ_INT(used, ir_xfer_size_class((size_t)10 << 20) + 4096);
  CHECK_EQ_INT(cached, 0);
  ir_xfer_host_free(a);
  /* A block of the same class comes back; a larger one is new. */
  void *c = ir_xfer_host_alloc(((size_t)10 << 20) - 1000);
  CHECK(c == a);
  void *d = ir_xfer_host_alloc((size_t)20 << 20);
  CHECK(d && d != a);
  /* The blocks are pinned: downloads write them directly, byte for byte. */
  ir_xfer_pool *pool = NULL;
  CHECK(ir_xfer_pool_of(0, &pool, err) == IR_OK);
  unsigned char *src = pattern((size_t)20 << 20, 5);
  void *dev = NULL;
  CHECK(cudaMalloc(&dev, (size_t)20 << 20) == cudaSuccess);
  CHECK_MSG(ir_xfer_upload(pool, dev, src, (size_t)20 << 20, NULL, err) == IR_OK, "%s", err);
  CHECK_MSG(ir_xfer_download(pool, d, dev, (size_t)20 << 20, NULL, err) == IR_OK, "%s", err);
  CHECK(memcmp(d, src, (size_t)20 << 20) == 0);
  /* And uploads read them directly. */
  memset(d, 7, (size_t)20 << 20);
  CHECK_MSG(ir_xfer_upload(pool, dev, d, (size_t)20 << 20, NULL, err) == IR_OK, "%s", err);
  CHECK(cudaMemcpy(src, dev, (size_t)20 << 20, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(src[0] == 7 && src[((size_t)20 << 20) - 1] == 7);
  ir_xfer_host_free(b), ir_xfer_host_free(c), ir_xfer_host_free(d);
  ir_xfer_host_free(NULL);
  ir_xfer_host_usage(&used, &cached);
  CHECK_EQ_INT(used, 0);
  CHECK(cached >= ((size_t)30 << 20));
  CHECK(ir_xfer_host_trim() == cached);
  ir_xfer_host_usage(&used, &cached);
  CHECK_EQ_INT(cached, 0);
  cudaFree(dev);
  free(src);
}

int main(int argc, char **argv) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    char reason[256];
    snprintf(reason, sizeof reason, "no CUDA device (%s)", e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    check_skip_all(reason);
  }
  if (argc > 1 && strcmp(argv[1], "--probe") == 0) return 0;
  RUN(test_round_trips_are_byte_equal);
  RUN(test_download_waits_for_earlier_work);
  RUN(test_items_arrive_in_order_and_complete);
  RUN(test_threads_share_a_small_pool);
  RUN(test_pinned_cache_reuses_blocks);
  return check_summary();
}
