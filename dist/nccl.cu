/* Compositing on the GPUs through NCCL: the frames never leave the devices. Built only when CMake
 * finds NCCL (nccl_none.c otherwise); bootstrapped over MPI (rank 0 makes the ncclUniqueId and
 * broadcasts it, ir_dist_broadcast).
 *
 * Every rank packs its frame into 64-bit depth|colour words on its GPU (dist/over.cuh).
 *   opaque:      only the pixels of a rank's window (its brick's projection: the others are
 *                background for it) travel. Every rank but 0 packs its window's words and sends
 *                them to rank 0 (grouped ncclSend/ncclRecv, one call), which keeps the nearest
 *                of each window's words and its own whole frame's (a MIN kernel per window).
 *                That is one NCCL call and the windows' bytes into rank 0 (on four H100s at
 *                3840x2160, about 15 % of the image per rank), where a reduce-scatter of the
 *                whole image and a gather of its parts would take two calls and every rank's
 *                share of every pixel; every rank computes every window from the layout and
 *                the camera, so no sizes travel.
 *   translucent: the image is cut into one chunk of `chunk` words per rank (padded with
 *                background words); every rank sends its chunk j to rank j (grouped
 *                ncclSend/ncclRecv, a direct send like the host path's Alltoallv), rank j blends
 *                the ranks' chunks in visibility order with the "over" kernel, and the chunks go
 *                to rank 0 (grouped ncclSend/ncclRecv): as RGBA8 (each rank unpacks its chunk
 *                first, 4 bytes a pixel), or as words where the depth is wanted (8 bytes).
 * The frame ends on rank 0's GPU and is copied to the host only when read
 * (ir_dist_gpu_read_image).
 *
 * Waits poll the stream and NCCL's asynchronous error with a deadline (INKRAY_DIST_TIMEOUT
 * seconds, default 20): a peer that died or hangs aborts the communicators (ncclCommAbort) and
 * the frame fails with one line, instead of the rank waiting forever in a collective.
 *
 * Two communicators. The ranks first join a non-blocking one (ncclConfig_t.blocking = 0): its
 * init returns at once and is polled to the deadline, so a rank that never joins (dead or hung
 * before NCCL's init) fails the others' init instead of holding them forever. The frames then
 * go through a blocking communicator, made once every rank is in: a non-blocking
 * communicator hands each group of sends and receives to a thread of NCCL's and answers
 * ncclInProgress, and polling that to completion cost about 0.1 ms a frame on two H100s, where
 * a blocking one enqueues the same group in about 0.02 ms (docs/PERFORMANCE.md). What a blocking
 * call can wait on is its peers (its init, and their connection, made on the first frame): a
 * watchdog thread ends the process with one line if such a call does not return within the
 * deadline (the run then ends through mpirun), so no rank hangs there either. A failure after which the ranks may not meet
 * again marks the run broken (ir_dist_mark_broken): no MPI collective waits on the lost rank, and
 * the run ends through MPI_Abort. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dist/dist_internal.h"
#include "dist/over.cuh"

/* Elementwise, memory-bound kernels: 256 threads a block keep an SM's warps full; grid-stride
 * loops over at most MAX_BLOCKS blocks cover any image. */
#define DIST_BLOCK 256
#define DIST_MAX_BLOCKS 8192
#define DIST_TIMEOUT_S 20.0

struct ir_dist_gpu {
  ir_dist *d;
  int rank, size;
  ncclComm_t joined; /* non-blocking: the ranks' join, with a deadline (top of the file) */
  ncclComm_t comm;   /* blocking, made once all joined: the frames */
  cudaStream_t stream;
  size_t chunk_capacity;            /* words per rank the buffers below hold */
  uint64_t *words, *strips, *part;  /* size*chunk, size*chunk, chunk */
  uint64_t *result;                 /* rank 0: size*chunk, the composited words */
  uint64_t *windows_in;             /* rank 0, opaque: the other ranks' windows, one after another */
  size_t windows_capacity;          /* words it holds */
  uint32_t *part_color;             /* chunk: this rank's composited chunk as RGBA8 */
  uint32_t *image;                  /* rank 0: size*chunk, the frame as RGBA8 */
  bool keep_depth;                  /* gather the words (8 bytes a pixel), else only colours (4) */
  int *order, *host_order;          /* translucent: the ranks front to back (device, pinned) */
  size_t pixels;                    /* of the last composited frame (0: none) */
  double timeout_ms;
  /* The watchdog of blocking NCCL calls: armed with a deadline and what is waited for. */
  pthread_t watchdog;
  bool watchdog_running, watchdog_stop, watch_lock_made;
  pthread_mutex_t watch_lock;
  pthread_cond_t watch_wake;
  double watch_deadline; /* ir_dist_now_ms() clock; 0: disarmed */
  const char *watch_what;
};

bool ir_dist_built_with_nccl(void) { return true; }

static ir_status cuda_fail(char err[IR_ERR_LEN], int rank, cudaError_t e, const char *call) {
  snprintf(err, IR_ERR_LEN, "rank %d: CUDA error in %s: %s", rank, call, cudaGetErrorString(e));
  return IR_ERR_RUNTIME;
}
static ir_status nccl_fail(char err[IR_ERR_LEN], int rank, ncclResult_t e, const char *call) {
  snprintf(err, IR_ERR_LEN, "rank %d: NCCL error in %s: %s", rank, call, ncclGetErrorString(e));
  return IR_ERR_RUNTIME;
}

/* Gives up on the communicator: aborted, and the run may not meet in a collective again. */
static void abandon(ir_dist_gpu *g) {
  if (g->comm) ncclCommAbort(g->comm);
  if (g->joined) ncclCommAbort(g->joined);
  g->comm = g->joined = NULL;
  ir_dist_mark_broken(g->d);
}

/* ---- The watchdog of blocking calls ---------------------------------------------------------- */
static void *watchdog_main(void *arg) {
  ir_dist_gpu *g = (ir_dist_gpu *)arg;
  pthread_mutex_lock(&g->watch_lock);
  while (!g->watchdog_stop) {
    double now = ir_dist_now_ms();
    if (g->watch_deadline > 0.0 && now > g->watch_deadline) {
      /* The caller is stuck inside NCCL and cannot be reached: this process ends, and mpirun
       * ends the others. */
      fprintf(stderr, "inkray: rank %d: %s did not finish within %.0f s: a peer rank died or hangs; ending the run\n",
              g->rank, g->watch_what, g->timeout_ms / 1000.0);
      fflush(stderr);
      _exit(1);
    }
    /* Asleep until armed, then until the deadline (a spurious or early wake-up looks again). */
    if (g->watch_deadline > 0.0) {
      double wait_ms = g->watch_deadline - now + 1.0;
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      long long ns = (long long)ts.tv_nsec + (long long)(wait_ms * 1e6);
      ts.tv_sec += (time_t)(ns / 1000000000LL);
      ts.tv_nsec = (long)(ns % 1000000000LL);
      pthread_cond_timedwait(&g->watch_wake, &g->watch_lock, &ts);
    } else {
      pthread_cond_wait(&g->watch_wake, &g->watch_lock);
    }
  }
  pthread_mutex_unlock(&g->watch_lock);
  return NULL;
}

static void watch(ir_dist_gpu *g, const char *what) {
  if (!g->watchdog_running) return;
  pthread_mutex_lock(&g->watch_lock);
  g->watch_deadline = ir_dist_now_ms() + g->timeout_ms;
  g->watch_what = what;
  pthread_cond_signal(&g->watch_wake);
  pthread_mutex_unlock(&g->watch_lock);
}

static void unwatch(ir_dist_gpu *g) {
  if (!g->watchdog_running) return;
  pthread_mutex_lock(&g->watch_lock);
  g->watch_deadline = 0.0;
  pthread_mutex_unlock(&g->watch_lock);
}

static void watchdog_end(ir_dist_gpu *g) {
  if (!g->watchdog_running) return;
  pthread_mutex_lock(&g->watch_lock);
  g->watchdog_stop = true;
  pthread_cond_signal(&g->watch_wake);
  pthread_mutex_unlock(&g->watch_lock);
  pthread_join(g->watchdog, NULL);
  g->watchdog_running = false;
}

/* Between two polls of a call in progress (`start`: when the wait began): a yield for the first
 * 2 ms, where a frame's compositing ends (a sleep would add to every frame), then short sleeps,
 * so that a rank waiting out the deadline does not hold a core the others may need. */
static void poll_pause(double start) {
  if (ir_dist_now_ms() - start < 2.0)
    sched_yield();
  else
    usleep(200);
}

/* A call on a non-blocking communicator that answered ncclInProgress, polled on `comm` until it
 * is done (its asynchronous state leaves ncclInProgress) or the deadline passes (ncclInProgress
 * returned). */
static ncclResult_t settle_on(ir_dist_gpu *g, ncclComm_t comm, ncclResult_t e) {
  double start = ir_dist_now_ms();
  while (e == ncclInProgress && comm) {
    ncclResult_t state = ncclInProgress;
    ncclResult_t q = ncclCommGetAsyncError(comm, &state);
    if (q != ncclSuccess) return q;
    e = state;
    if (e == ncclInProgress) {
      if (ir_dist_now_ms() - start > g->timeout_ms) return ncclInProgress;
      poll_pause(start);
    }
  }
  return e;
}
static ncclResult_t settle(ir_dist_gpu *g, ncclResult_t e) { return settle_on(g, g->comm, e); }

/* An NCCL call's failure: a call still in progress at the deadline abandons the communicator. */
static ir_status nccl_call_fail(ir_dist_gpu *g, char err[IR_ERR_LEN], ncclResult_t e, const char *call) {
  if (e != ncclInProgress) return nccl_fail(err, g->rank, e, call);
  abandon(g);
  snprintf(err, IR_ERR_LEN, "rank %d: %s did not finish within %.0f s: a peer rank died or hangs; NCCL aborted",
           g->rank, call, g->timeout_ms / 1000.0);
  return IR_ERR_RUNTIME;
}
#define DIST_CUDA(call)                                                                   \
  do {                                                                                    \
    cudaError_t e_ = (call);                                                              \
    if (e_ != cudaSuccess) return cuda_fail(err, g->rank, e_, #call);                    \
  } while (0)
#define DIST_NCCL(call)                                                                   \
  do {                                                                                    \
    ncclResult_t e_ = settle(g, (call));                                                  \
    if (e_ != ncclSuccess) return nccl_call_fail(g, err, e_, #call);                     \
  } while (0)
/* A call on the blocking communicator that may wait for its peers (their connection, made on
 * the first frame), under the watchdog. */
#define DIST_NCCL_WATCHED(call, what)                                                     \
  do {                                                                                    \
    watch(g, what);                                                                       \
    ncclResult_t e_ = settle(g, (call));                                                  \
    unwatch(g);                                                                           \
    if (e_ != ncclSuccess) return nccl_call_fail(g, err, e_, #call);                     \
  } while (0)
/* Inside ncclGroupStart .. ncclGroupEnd: a failure closes the group before returning, so that the
 * communicator is not left in a group that a later call (or the abort) would stumble on. */
#define DIST_NCCL_IN_GROUP(call)                                                          \
  do {                                                                                    \
    ncclResult_t e_ = settle(g, (call));                                                  \
    if (e_ != ncclSuccess) {                                                              \
      (void)settle(g, ncclGroupEnd());                                                    \
      return nccl_call_fail(g, err, e_, #call);                                           \
    }                                                                                     \
  } while (0)

static unsigned grid_for(size_t n) {
  size_t blocks = (n + DIST_BLOCK - 1) / DIST_BLOCK;
  return (unsigned)(blocks == 0 ? 1 : blocks > DIST_MAX_BLOCKS ? DIST_MAX_BLOCKS : blocks);
}

__global__ void pack_kernel(const uint32_t *__restrict__ rgba, const float *__restrict__ depth, size_t pixels,
                            size_t padded, uint64_t *__restrict__ words) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < padded; i += (size_t)gridDim.x * blockDim.x)
    words[i] = i < pixels ? ir_dist_word(depth[i], rgba[i]) : IR_DIST_BACKGROUND_WORD;
}

/* The words of a window (x0, y0) of ww x wh pixels of a width-wide frame, row by row. */
__global__ void pack_window_kernel(const uint32_t *__restrict__ rgba, const float *__restrict__ depth, int width,
                                   int x0, int y0, int ww, size_t count, uint64_t *__restrict__ words) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x) {
    size_t p = ir_dist_window_pixel(i, width, x0, y0, ww);
    words[i] = ir_dist_word(depth[p], rgba[p]);
  }
}

/* The nearest of each pixel's word and a window's (packed as above). */
__global__ void min_window_kernel(const uint64_t *__restrict__ words, int width, int x0, int y0, int ww, size_t count,
                                  uint64_t *__restrict__ frame) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x) {
    size_t p = ir_dist_window_pixel(i, width, x0, y0, ww);
    uint64_t w = words[i];
    if (w < frame[p]) frame[p] = w;
  }
}

__global__ void over_kernel(const uint64_t *__restrict__ strips, size_t chunk, const int *__restrict__ order,
                            int count, uint64_t *__restrict__ out) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < chunk; i += (size_t)gridDim.x * blockDim.x)
    out[i] = ir_dist_over_pixel(strips, chunk, order, count, i);
}

__global__ void unpack_kernel(const uint64_t *__restrict__ words, size_t pixels, uint32_t *__restrict__ rgba) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < pixels; i += (size_t)gridDim.x * blockDim.x)
    rgba[i] = words[i] == IR_DIST_BACKGROUND_WORD ? IR_BACKGROUND_RGBA : (uint32_t)words[i];
}

/* Waits for the stream's work, watching NCCL for a failed or vanished peer (top of the file). */
static ir_status wait_stream(ir_dist_gpu *g, const char *what, char err[IR_ERR_LEN]) {
  double start = ir_dist_now_ms();
  for (;;) {
    cudaError_t e = cudaStreamQuery(g->stream);
    if (e == cudaSuccess) return IR_OK;
    if (e != cudaErrorNotReady) return cuda_fail(err, g->rank, e, what);
    ncclResult_t async = ncclSuccess;
    if (g->comm && ncclCommGetAsyncError(g->comm, &async) == ncclSuccess && async != ncclSuccess &&
        async != ncclInProgress) {
      abandon(g);
      snprintf(err, IR_ERR_LEN, "rank %d: NCCL failed during %s: %s (a peer rank died or lost its link); aborted",
               g->rank, what, ncclGetErrorString(async));
      return IR_ERR_RUNTIME;
    }
    if (ir_dist_now_ms() - start > g->timeout_ms) {
      abandon(g);
      snprintf(err, IR_ERR_LEN, "rank %d: %s did not finish within %.0f s: a peer rank died or hangs; NCCL aborted",
               g->rank, what, g->timeout_ms / 1000.0);
      return IR_ERR_RUNTIME;
    }
    poll_pause(start);
  }
}

static void free_buffers(ir_dist_gpu *g) {
  cudaFree(g->words);
  cudaFree(g->strips);
  cudaFree(g->part);
  cudaFree(g->result);
  cudaFree(g->part_color);
  cudaFree(g->image);
  cudaFree(g->windows_in);
  g->windows_in = NULL;
  g->windows_capacity = 0;
  g->words = g->strips = g->part = g->result = NULL;
  g->part_color = g->image = NULL;
  g->chunk_capacity = 0;
}

void ir_dist_gpu_destroy(ir_dist_gpu *g) {
  if (!g) return;
  free_buffers(g);
  cudaFree(g->order);
  cudaFreeHost(g->host_order);
  if (g->comm) {
    /* Finalizing flushes the communicator's work with its peers (blocking: under the watchdog). */
    watch(g, "closing the NCCL communicator");
    if (ncclCommFinalize(g->comm) == ncclSuccess) ncclCommDestroy(g->comm);
    else ncclCommAbort(g->comm);
    unwatch(g);
  }
  if (g->joined) {
    /* The join's communicator never carried a transfer; one whose finalizing does not finish in
     * time is aborted instead. */
    if (settle_on(g, g->joined, ncclCommFinalize(g->joined)) == ncclSuccess) ncclCommDestroy(g->joined);
    else ncclCommAbort(g->joined);
  }
  watchdog_end(g);
  if (g->watch_lock_made) {
    pthread_mutex_destroy(&g->watch_lock);
    pthread_cond_destroy(&g->watch_wake);
  }
  if (g->stream) cudaStreamDestroy(g->stream);
  free(g);
}

/* Everything but the communicator; a message starting "rank N: " on failure. */
static ir_status setup_local(ir_dist_gpu *g, char err[IR_ERR_LEN]) {
  DIST_CUDA(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
  if (pthread_mutex_init(&g->watch_lock, NULL) != 0 || pthread_cond_init(&g->watch_wake, NULL) != 0) {
    snprintf(err, IR_ERR_LEN, "rank %d: could not set up the watchdog's lock", g->rank);
    return IR_ERR_RUNTIME;
  }
  g->watch_lock_made = true;
  if (pthread_create(&g->watchdog, NULL, watchdog_main, g) != 0) {
    snprintf(err, IR_ERR_LEN, "rank %d: could not start the watchdog thread", g->rank);
    return IR_ERR_RUNTIME;
  }
  g->watchdog_running = true;
  DIST_CUDA(cudaMalloc(&g->order, (size_t)g->size * sizeof *g->order));
  DIST_CUDA(cudaMallocHost(&g->host_order, (size_t)g->size * sizeof *g->host_order));
  return IR_OK;
}

/* For the fault tests: INKRAY_DIST_STALL_RANK=R makes rank R hang before it joins the
 * communicator, as a rank whose GPU or host stalls would (it sleeps until it is killed). */
static void stall_if_asked(int rank) {
  const char *s = getenv("INKRAY_DIST_STALL_RANK");
  if (!s || !*s || atoi(s) != rank) return;
  for (;;) sleep(60);
}

/* ncclCommInitRankConfig on a non-blocking communicator, polled to the deadline: every rank must
 * join within it, else the init is aborted and the run marked broken. */
static ir_status join_communicator(ir_dist_gpu *g, const ncclUniqueId *id, char err[IR_ERR_LEN]) {
  stall_if_asked(g->rank);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclResult_t e = ncclCommInitRankConfig(&g->joined, g->size, *id, g->rank, &config);
  if (e != ncclSuccess && e != ncclInProgress) {
    /* Broken too: the peers wait in NCCL's init until the deadline and then skip MPI, so this
     * rank must not wait for them in a collective either. */
    abandon(g);
    return nccl_fail(err, g->rank, e, "ncclCommInitRankConfig");
  }
  e = settle_on(g, g->joined, e);
  if (e == ncclSuccess) return IR_OK;
  abandon(g);
  if (e == ncclInProgress)
    snprintf(err, IR_ERR_LEN,
             "rank %d: the NCCL communicator of %d ranks was not complete within %.0f s: a rank did not join "
             "(it died or hangs before NCCL's init; INKRAY_DIST_TIMEOUT sets the wait); NCCL aborted",
             g->rank, g->size, g->timeout_ms / 1000.0);
  else
    snprintf(err, IR_ERR_LEN, "rank %d: joining the NCCL communicator failed: %s; NCCL aborted", g->rank,
             ncclGetErrorString(e));
  return IR_ERR_RUNTIME;
}

/* The frames' blocking communicator, made once every rank has joined (top of the file). Its
 * init blocks until every rank is in it: watched. */
static ir_status open_for_frames(ir_dist_gpu *g, const ncclUniqueId *id, char err[IR_ERR_LEN]) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 1;
  watch(g, "making the NCCL communicator of the frames");
  ncclResult_t e = ncclCommInitRankConfig(&g->comm, g->size, *id, g->rank, &config);
  unwatch(g);
  if (e == ncclSuccess) return IR_OK;
  abandon(g);
  return nccl_fail(err, g->rank, e, "ncclCommInitRankConfig (the frames' communicator)");
}

/* What rank 0 broadcasts: its status and, when it is IR_OK, the communicator's id. */
typedef struct boot_message {
  int status;
  ncclUniqueId id, frames_id; /* the join's communicator, the frames' */
} boot_message;

ir_status ir_dist_gpu_create(ir_dist *d, bool keep_depth, ir_dist_gpu **out, char err[IR_ERR_LEN]) {
  *out = NULL;
  ir_dist_gpu *g = (ir_dist_gpu *)calloc(1, sizeof *g);
  int rank = ir_dist_rank(d);
  boot_message boot;
  memset(&boot, 0, sizeof boot);
  if (!g) {
    /* Still takes part in the collectives below, so that no rank waits for this one. */
    snprintf(err, IR_ERR_LEN, "rank %d: out of host memory", rank);
    char sub[IR_ERR_LEN];
    boot.status = IR_ERR_RUNTIME;
    ir_dist_broadcast(d, &boot, sizeof boot, sub);
    ir_dist_agree(d, IR_ERR_RUNTIME);
    return IR_ERR_RUNTIME;
  }
  g->d = d;
  g->rank = rank;
  g->size = ir_dist_size(d);
  g->keep_depth = keep_depth;
  g->timeout_ms = DIST_TIMEOUT_S * 1000.0;
  const char *t = getenv("INKRAY_DIST_TIMEOUT");
  if (t && atof(t) > 0) g->timeout_ms = atof(t) * 1000.0;
  ir_status st = setup_local(g, err);
  /* Rank 0's id (or its failure) reaches every rank; no rank enters NCCL's init unless all can. */
  if (rank == 0 && st == IR_OK) {
    ncclResult_t e = ncclGetUniqueId(&boot.id);
    if (e == ncclSuccess) e = ncclGetUniqueId(&boot.frames_id);
    if (e != ncclSuccess) st = nccl_fail(err, rank, e, "ncclGetUniqueId");
  }
  boot.status = (int)st;
  char sub[IR_ERR_LEN];
  if (ir_dist_broadcast(d, &boot, sizeof boot, sub) != IR_OK && st == IR_OK) {
    snprintf(err, IR_ERR_LEN, "rank %d: %.480s", rank, sub);
    st = IR_ERR_RUNTIME;
  }
  int worst = ir_dist_agree(d, st != IR_OK ? (int)st : boot.status);
  if (worst == IR_OK) {
    st = join_communicator(g, &boot.id, err);
    worst = ir_dist_agree(d, (int)st); /* broken (no MPI) where a rank never joined */
  }
  if (worst == IR_OK) {
    st = open_for_frames(g, &boot.frames_id, err);
    worst = ir_dist_agree(d, (int)st);
  }
  if (worst != IR_OK) {
    if (st == IR_OK) snprintf(err, IR_ERR_LEN, "another rank failed to set up NCCL (its message is above)");
    ir_dist_gpu_destroy(g);
    return (ir_status)worst;
  }
  *out = g;
  return IR_OK;
}

static ir_status ensure_buffers(ir_dist_gpu *g, size_t chunk, char err[IR_ERR_LEN]) {
  if (chunk <= g->chunk_capacity) return IR_OK;
  free_buffers(g);
  size_t all = chunk * (size_t)g->size;
  DIST_CUDA(cudaMalloc(&g->words, all * sizeof *g->words));
  DIST_CUDA(cudaMalloc(&g->strips, all * sizeof *g->strips));
  DIST_CUDA(cudaMalloc(&g->part, chunk * sizeof *g->part));
  DIST_CUDA(cudaMalloc(&g->part_color, chunk * sizeof *g->part_color));
  if (g->rank == 0) {
    DIST_CUDA(cudaMalloc(&g->result, all * sizeof *g->result));
    DIST_CUDA(cudaMalloc(&g->image, all * sizeof *g->image));
  }
  g->chunk_capacity = chunk;
  return IR_OK;
}

ir_status ir_dist_gpu_pack(ir_dist_gpu *g, const void *rgba, const float *depth, size_t pixels, int width,
                           const int *window, char err[IR_ERR_LEN]) {
  size_t chunk = (pixels + (size_t)g->size - 1) / (size_t)g->size;
  g->pixels = 0;
  ir_status st = ensure_buffers(g, chunk, err);
  if (st != IR_OK) return st;
  size_t padded = chunk * (size_t)g->size;
  if (!window) {
    pack_kernel<<<grid_for(padded), DIST_BLOCK, 0, g->stream>>>((const uint32_t *)rgba, depth, pixels, padded,
                                                                 g->words);
  } else if (g->rank == 0) { /* the whole frame: the windows are composited into it */
    pack_kernel<<<grid_for(pixels), DIST_BLOCK, 0, g->stream>>>((const uint32_t *)rgba, depth, pixels, pixels,
                                                                 g->result);
  } else if (ir_dist_window_count(window) > 0) {
    size_t count = ir_dist_window_count(window);
    pack_window_kernel<<<grid_for(count), DIST_BLOCK, 0, g->stream>>>(
        (const uint32_t *)rgba, depth, width, window[0], window[1], window[2] - window[0], count, g->words);
  }
  DIST_CUDA(cudaGetLastError());
  return wait_stream(g, "packing the frame", err);
}

/* Opaque: the other ranks' windows into rank 0's frame of words (top of the file). */
static ir_status composite_windows(ir_dist_gpu *g, size_t pixels, int width, const int (*windows)[4],
                                   char err[IR_ERR_LEN]) {
  if (g->rank == 0) {
    size_t total = 0;
    for (int r = 1; r < g->size; r++) total += ir_dist_window_count(windows[r]);
    if (total > g->windows_capacity) {
      cudaFree(g->windows_in);
      g->windows_in = NULL;
      g->windows_capacity = 0;
      DIST_CUDA(cudaMalloc(&g->windows_in, total * sizeof *g->windows_in));
      g->windows_capacity = total;
    }
  }
  DIST_NCCL(ncclGroupStart());
  size_t at = 0;
  for (int r = 1; r < g->size; r++) {
    size_t n = ir_dist_window_count(windows[r]);
    if (n == 0) continue;
    if (g->rank == 0) DIST_NCCL_IN_GROUP(ncclRecv(g->windows_in + at, n, ncclUint64, r, g->comm, g->stream));
    else if (g->rank == r) DIST_NCCL_IN_GROUP(ncclSend(g->words, n, ncclUint64, 0, g->comm, g->stream));
    at += n;
  }
  DIST_NCCL_WATCHED(ncclGroupEnd(), "sending frames through NCCL");
  if (g->rank != 0) return IR_OK;
  at = 0;
  for (int r = 1; r < g->size; r++) {
    const int *w = windows[r];
    size_t n = ir_dist_window_count(w);
    if (n == 0) continue;
    min_window_kernel<<<grid_for(n), DIST_BLOCK, 0, g->stream>>>(g->windows_in + at, width, w[0], w[1], w[2] - w[0],
                                                                  n, g->result);
    DIST_CUDA(cudaGetLastError());
    at += n;
  }
  if (!g->keep_depth) {
    unpack_kernel<<<grid_for(pixels), DIST_BLOCK, 0, g->stream>>>(g->result, pixels, g->image);
    DIST_CUDA(cudaGetLastError());
  }
  return IR_OK;
}

/* The chunks at `from` (chunk elements of `bytes` on each rank) into `to` on rank 0, in rank
 * order. */
static ir_status gather_to_root(ir_dist_gpu *g, const void *from, void *to, size_t chunk, size_t bytes,
                                char err[IR_ERR_LEN]) {
  ncclDataType_t type = bytes == 8 ? ncclUint64 : ncclUint32;
  DIST_NCCL(ncclGroupStart());
  if (g->rank == 0) {
    for (int j = 1; j < g->size; j++)
      DIST_NCCL_IN_GROUP(ncclRecv((char *)to + (size_t)j * chunk * bytes, chunk, type, j, g->comm, g->stream));
  } else {
    DIST_NCCL_IN_GROUP(ncclSend(from, chunk, type, 0, g->comm, g->stream));
  }
  DIST_NCCL_WATCHED(ncclGroupEnd(), "sending frames through NCCL");
  if (g->rank == 0) DIST_CUDA(cudaMemcpyAsync(to, from, chunk * bytes, cudaMemcpyDeviceToDevice, g->stream));
  return IR_OK;
}

ir_status ir_dist_gpu_composite(ir_dist_gpu *g, const int *order, size_t pixels, int width,
                                const int (*windows)[4], char err[IR_ERR_LEN]) {
  if (!g->comm) {
    snprintf(err, IR_ERR_LEN, "rank %d: NCCL was aborted by an earlier failure", g->rank);
    return IR_ERR_RUNTIME;
  }
  size_t chunk = (pixels + (size_t)g->size - 1) / (size_t)g->size;
  const uint64_t *mine = g->part;
  if (windows) {
    ir_status st = composite_windows(g, pixels, width, windows, err);
    if (st == IR_OK) st = wait_stream(g, "compositing (NCCL)", err);
    g->pixels = st == IR_OK && g->rank == 0 ? pixels : 0;
    return st;
  }
  if (!order) {
    DIST_NCCL_WATCHED(ncclReduceScatter(g->words, g->part, chunk, ncclUint64, ncclMin, g->comm, g->stream),
                      "sending frames through NCCL");
  } else {
    memcpy(g->host_order, order, (size_t)g->size * sizeof *order);
    DIST_CUDA(cudaMemcpyAsync(g->order, g->host_order, (size_t)g->size * sizeof *order, cudaMemcpyHostToDevice,
                              g->stream));
    /* The own chunk by a device copy, the others through NCCL in one group (so that no send
     * waits on a receive posted later). */
    size_t own = (size_t)g->rank * chunk;
    DIST_CUDA(cudaMemcpyAsync(g->strips + own, g->words + own, chunk * sizeof *g->words, cudaMemcpyDeviceToDevice,
                              g->stream));
    DIST_NCCL(ncclGroupStart());
    for (int j = 0; j < g->size; j++) {
      if (j == g->rank) continue;
      DIST_NCCL_IN_GROUP(ncclSend(g->words + (size_t)j * chunk, chunk, ncclUint64, j, g->comm, g->stream));
      DIST_NCCL_IN_GROUP(ncclRecv(g->strips + (size_t)j * chunk, chunk, ncclUint64, j, g->comm, g->stream));
    }
    DIST_NCCL_WATCHED(ncclGroupEnd(), "sending frames through NCCL");
    over_kernel<<<grid_for(chunk), DIST_BLOCK, 0, g->stream>>>(g->strips, chunk, g->order, g->size, g->part);
    DIST_CUDA(cudaGetLastError());
  }
  /* Only colours travel to rank 0 unless the depth is wanted: half the bytes. */
  ir_status st;
  if (g->keep_depth) {
    st = gather_to_root(g, mine, g->result, chunk, sizeof *mine, err);
  } else {
    unpack_kernel<<<grid_for(chunk), DIST_BLOCK, 0, g->stream>>>(mine, chunk, g->part_color);
    DIST_CUDA(cudaGetLastError());
    st = gather_to_root(g, g->part_color, g->image, chunk, sizeof *g->part_color, err);
  }
  if (st == IR_OK) st = wait_stream(g, order ? "translucent compositing (NCCL)" : "compositing (NCCL)", err);
  g->pixels = st == IR_OK && g->rank == 0 ? pixels : 0;
  return st;
}

ir_status ir_dist_gpu_gather_rows(ir_dist_gpu *g, void *rgba, float *depth, int width, const int (*windows)[4],
                                  char err[IR_ERR_LEN]) {
  if (!g->comm) {
    snprintf(err, IR_ERR_LEN, "rank %d: NCCL was aborted by an earlier failure", g->rank);
    return IR_ERR_RUNTIME;
  }
  g->pixels = 0; /* the frame is in rank 0's renderer, not in this module's buffers */
  DIST_NCCL(ncclGroupStart());
  for (int r = 1; r < g->size; r++) {
    const int *w = windows[r];
    size_t at = (size_t)w[1] * (size_t)width, n = (size_t)(w[3] - w[1]) * (size_t)width;
    if (n == 0 || (g->rank != 0 && g->rank != r)) continue;
    uint32_t *color = (uint32_t *)rgba + at;
    if (g->rank == 0) {
      DIST_NCCL_IN_GROUP(ncclRecv(color, n, ncclUint32, r, g->comm, g->stream));
      if (g->keep_depth) DIST_NCCL_IN_GROUP(ncclRecv(depth + at, n, ncclFloat32, r, g->comm, g->stream));
    } else {
      DIST_NCCL_IN_GROUP(ncclSend(color, n, ncclUint32, 0, g->comm, g->stream));
      if (g->keep_depth) DIST_NCCL_IN_GROUP(ncclSend(depth + at, n, ncclFloat32, 0, g->comm, g->stream));
    }
  }
  DIST_NCCL_WATCHED(ncclGroupEnd(), "sending frames through NCCL");
  return wait_stream(g, "gathering the bands (NCCL)", err);
}

ir_status ir_dist_gpu_read_image(ir_dist_gpu *g, uint8_t *rgba, char err[IR_ERR_LEN]) {
  if (!g->pixels) {
    snprintf(err, IR_ERR_LEN, "rank %d: no composited frame to read", g->rank);
    return IR_ERR_INPUT;
  }
  if (g->keep_depth) { /* the colours were left in the words */
    unpack_kernel<<<grid_for(g->pixels), DIST_BLOCK, 0, g->stream>>>(g->result, g->pixels, g->image);
    DIST_CUDA(cudaGetLastError());
  }
  DIST_CUDA(cudaMemcpyAsync(rgba, g->image, g->pixels * 4, cudaMemcpyDeviceToHost, g->stream));
  DIST_CUDA(cudaStreamSynchronize(g->stream));
  return IR_OK;
}

ir_status ir_dist_gpu_read_words(ir_dist_gpu *g, uint64_t *words, char err[IR_ERR_LEN]) {
  if (!g->keep_depth) {
    snprintf(err, IR_ERR_LEN, "rank %d: the frames were composited without their depth", g->rank);
    return IR_ERR_INPUT;
  }
  if (!g->pixels) {
    snprintf(err, IR_ERR_LEN, "rank %d: no composited frame to read", g->rank);
    return IR_ERR_INPUT;
  }
  DIST_CUDA(cudaMemcpyAsync(words, g->result, g->pixels * sizeof *words, cudaMemcpyDeviceToHost, g->stream));
  DIST_CUDA(cudaStreamSynchronize(g->stream));
  return IR_OK;
}
