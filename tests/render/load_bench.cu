/* load_bench: the bandwidths a load is measured against, for scripts/load-bench.sh and
 * docs/PERFORMANCE.md. A benchmark, not a test: nothing here passes or fails.
 *
 *   load_bench --pcie [MIB]          host to device copies from pinned memory: into linear memory
 *                                    (cudaMemcpy, PCIe's rate) and into a 3D array in 4 MiB slabs
 *                                    (cudaMemcpy3D, what the upload does); median of 5, CUDA events
 *   load_bench --read FILE [OPTS]    the file read into memory by the data module (pieces on
 *                                    several threads; INKRAY_IO_THREADS / --threads N) and by one
 *                                    thread, GB/s, median of 3; OPTS: --dims XxYxZ --type T for
 *                                    raw files without dims in their name
 *   load_bench --stream FILE [OPTS]  where a streamed load's time goes: the same parallel read with
 *                                    a sink that does nothing, that copies each piece into a
 *                                    pinned staging buffer of the transfer module, that also
 *                                    queues its DMA into linear memory, and into a 3D array (the
 *                                    renderer's upload), and into linear memory then from there
 *                                    into the 3D array; each into fresh memory (its pages first
 *                                    touched by the read) and into the memory of the load before
 *                                    (ir_volume_desc.recycle); GB/s to the last copy's end,
 *                                    median of --runs N (1..9, default 3)
 *
 * Both print one line per figure, "name value unit". */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "data/volume.h"
#include "transfer/transfer.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#define CHECK_CUDA(call)                                                                    \
  do {                                                                                      \
    cudaError_t e_ = (call);                                                                \
    if (e_ != cudaSuccess) {                                                                \
      fprintf(stderr, "load_bench: %s failed: %s\n", #call, cudaGetErrorString(e_));        \
      return 1;                                                                             \
    }                                                                                       \
  } while (0)

static int bench_pcie(size_t mib) {
  size_t bytes = mib << 20;
  void *host = NULL, *dev = NULL;
  CHECK_CUDA(cudaMallocHost(&host, bytes));
  CHECK_CUDA(cudaMalloc(&dev, bytes));
  memset(host, 1, bytes);
  cudaEvent_t a, b;
  CHECK_CUDA(cudaEventCreate(&a));
  CHECK_CUDA(cudaEventCreate(&b));
  double gbs[5];
  for (int r = 0; r < 6; r++) { /* the first is a warm-up */
    CHECK_CUDA(cudaEventRecord(a, 0));
    CHECK_CUDA(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, 0));
    CHECK_CUDA(cudaEventRecord(b, 0));
    CHECK_CUDA(cudaEventSynchronize(b));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
    if (r) gbs[r - 1] = (double)bytes / (ms * 1e6);
  }
  printf("pcie_h2d_pinned_linear %.2f GB/s\n", median(gbs, 5));
  /* Into a 3D array as the upload fills it: 1024 x 1024 x Z uint8, 4 slices (4 MiB) a copy. */
  size_t depth = bytes >> 20;
  cudaArray_t array = NULL;
  cudaChannelFormatDesc ch = cudaCreateChannelDesc<unsigned char>();
  CHECK_CUDA(cudaMalloc3DArray(&array, &ch, make_cudaExtent(1024, 1024, depth)));
  for (int r = 0; r < 6; r++) {
    CHECK_CUDA(cudaEventRecord(a, 0));
    for (size_t z = 0; z < depth; z += 4) {
      cudaMemcpy3DParms p;
      memset(&p, 0, sizeof p);
      p.srcPtr = make_cudaPitchedPtr((unsigned char *)host + (z << 20), 1024, 1024, 1024);
      p.dstArray = array;
      p.dstPos = make_cudaPos(0, 0, z);
      p.extent = make_cudaExtent(1024, 1024, depth - z < 4 ? depth - z : 4);
      p.kind = cudaMemcpyHostToDevice;
      CHECK_CUDA(cudaMemcpy3DAsync(&p, 0));
    }
    CHECK_CUDA(cudaEventRecord(b, 0));
    CHECK_CUDA(cudaEventSynchronize(b));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
    if (r) gbs[r - 1] = (double)bytes / (ms * 1e6);
  }
  printf("pcie_h2d_pinned_array3d %.2f GB/s\n", median(gbs, 5));
  cudaFreeArray(array);
  cudaFree(dev);
  cudaFreeHost(host);
  return 0;
}

static int bench_read(ir_volume_desc *desc, int threads) {
  double gbs[3];
  size_t bytes = 0;
  const int modes[2] = {threads, 1};
  for (int m = 0; m < 2; m++) {
    desc->io_threads = modes[m];
    for (int r = 0; r < 3; r++) {
      ir_volume v;
      char err[IR_ERR_LEN];
      double t0 = now_s();
      if (ir_volume_load(desc, &v, err) != IR_OK) {
        fprintf(stderr, "load_bench: %s\n", err);
        return 1;
      }
      double s = now_s() - t0;
      bytes = v.bytes;
      gbs[r] = (double)v.bytes / (s * 1e9);
      ir_volume_free(&v);
    }
    printf("%s %.2f GB/s\n", m == 0 ? "read_parallel" : "read_one_thread", median(gbs, 3));
  }
  printf("read_bytes %zu bytes\n", bytes);
  return 0;
}

/* ---- Where a streamed load's time goes ---------------------------------------------------------- */
typedef enum sink_mode { SINK_NONE, SINK_STAGE, SINK_LINEAR, SINK_ARRAY, SINK_ARRAY_VIA_LINEAR, SINK_COUNT } sink_mode;
static const char *const sink_names[SINK_COUNT] = {"read_only", "read_stage", "read_stage_dma_linear",
                                                    "read_stage_dma_array", "read_stage_dma_linear_then_array"};

typedef struct stream_sink {
  sink_mode mode;
  ir_xfer_pool *pool;
  size_t dims[3];
  char *linear;
  cudaArray_t array;
} stream_sink;

/* The renderer's copy_rows (render/gpu_volume.cu) for the pieces the reader makes: whole slices,
 * or rows inside one slice, at most one staging buffer each (uint8). */
static ir_status stream_piece(void *ctx, const ir_volume_piece *piece, const void *voxels, char err[IR_ERR_LEN]) {
  stream_sink *s = (stream_sink *)ctx;
  if (s->mode == SINK_NONE) return IR_OK;
  ir_xfer_buffer *b = NULL;
  ir_status st = ir_xfer_acquire(s->pool, &b, err);
  if (st != IR_OK) return st;
  memcpy(b->host, voxels, piece->bytes);
  cudaError_t e = cudaSuccess;
  if (s->mode == SINK_LINEAR) {
    e = cudaMemcpyAsync(s->linear + piece->offset, b->host, piece->bytes, cudaMemcpyHostToDevice, b->stream);
  } else if (s->mode == SINK_ARRAY || s->mode == SINK_ARRAY_VIA_LINEAR) {
    /* Via linear: the DMA into linear device memory, then a device copy into the array. */
    bool via = s->mode == SINK_ARRAY_VIA_LINEAR;
    if (via) e = cudaMemcpyAsync(s->linear + piece->offset, b->host, piece->bytes, cudaMemcpyHostToDevice, b->stream);
    size_t nx = s->dims[0], ny = s->dims[1], y = piece->row % ny, z = piece->row / ny;
    bool slices = y == 0 && piece->rows % ny == 0;
    cudaMemcpy3DParms p;
    memset(&p, 0, sizeof p);
    p.srcPtr = make_cudaPitchedPtr(via ? (void *)(s->linear + piece->offset) : b->host, nx, nx, slices ? ny : piece->rows);
    p.dstArray = s->array;
    p.dstPos = make_cudaPos(0, y, z);
    p.extent = make_cudaExtent(nx, slices ? ny : piece->rows, slices ? piece->rows / ny : 1);
    p.kind = via ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice;
    if (e == cudaSuccess) e = cudaMemcpy3DAsync(&p, b->stream);
  }
  if (e == cudaSuccess && s->mode != SINK_STAGE) e = cudaEventRecord(b->done, b->stream);
  ir_xfer_release(s->pool, b);
  if (e != cudaSuccess) snprintf(err, IR_ERR_LEN, "%s", cudaGetErrorString(e));
  return e == cudaSuccess ? IR_OK : IR_ERR_RUNTIME;
}

static int bench_stream(ir_volume_desc *desc, int runs) {
  char err[IR_ERR_LEN];
  stream_sink sink;
  memset(&sink, 0, sizeof sink);
  if (ir_xfer_pool_of(0, &sink.pool, err) != IR_OK) {
    fprintf(stderr, "load_bench: %s\n", err);
    return 1;
  }
  ir_volume v;
  if (ir_volume_load(desc, &v, err) != IR_OK) { /* the dims, and the file into the page cache */
    fprintf(stderr, "load_bench: %s\n", err);
    return 1;
  }
  memcpy(sink.dims, v.dims, sizeof sink.dims);
  size_t bytes = v.bytes;
  if (v.type != IR_VOXEL_UINT8) {
    fprintf(stderr, "load_bench: --stream measures uint8 volumes\n");
    return 1;
  }
  CHECK_CUDA(cudaMalloc((void **)&sink.linear, bytes));
  cudaChannelFormatDesc ch = cudaCreateChannelDesc<uint8_t>();
  CHECK_CUDA(cudaMalloc3DArray(&sink.array, &ch, make_cudaExtent(v.dims[0], v.dims[1], v.dims[2])));
  ir_volume_sink vs = {stream_piece, &sink};
  desc->sink = &vs;
  for (int m = 0; m < SINK_COUNT; m++)
    for (int recycled = 0; recycled < 2; recycled++) {
      double gbs[9];
      sink.mode = (sink_mode)m;
      for (int r = 0; r < runs; r++) {
        desc->recycle = recycled ? &v : NULL;
        if (!recycled) ir_volume_free(&v);
        ir_volume next;
        double t0 = now_s();
        if (ir_volume_load(desc, &next, err) != IR_OK) {
          fprintf(stderr, "load_bench: %s\n", err);
          return 1;
        }
        char werr[IR_ERR_LEN];
        if (ir_xfer_wait_all(sink.pool, 0, werr) != IR_OK) return 1;
        CHECK_CUDA(cudaDeviceSynchronize());
        gbs[r] = (double)bytes / ((now_s() - t0) * 1e9);
        ir_volume_free(&v);
        v = next;
      }
      printf("%s_%s %.2f GB/s\n", sink_names[m], recycled ? "recycled" : "fresh", median(gbs, runs));
    }
  desc->sink = NULL;
  desc->recycle = NULL;
  ir_volume_free(&v);
  cudaFree(sink.linear);
  cudaFreeArray(sink.array);
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0); /* each figure out as it is measured */
  if (argc >= 2 && strcmp(argv[1], "--pcie") == 0) {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
      fprintf(stderr, "load_bench: no CUDA device\n");
      return 1;
    }
    size_t mib = argc >= 3 ? strtoul(argv[2], NULL, 10) : 1024;
    return bench_pcie(mib ? mib : 1024);
  }
  bool stream = argc >= 3 && strcmp(argv[1], "--stream") == 0;
  if (argc >= 3 && (strcmp(argv[1], "--read") == 0 || stream)) {
    ir_volume_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.source = argv[2];
    int threads = 0, runs = 3;
    for (int i = 3; i + 1 < argc; i += 2) {
      if (strcmp(argv[i], "--threads") == 0) threads = atoi(argv[i + 1]);
      else if (strcmp(argv[i], "--runs") == 0 && atoi(argv[i + 1]) >= 1 && atoi(argv[i + 1]) <= 9) runs = atoi(argv[i + 1]);
      else if (strcmp(argv[i], "--type") == 0 && ir_voxel_type_parse(argv[i + 1], &desc.type)) desc.type_given = true;
      else if (strcmp(argv[i], "--dims") == 0 &&
               sscanf(argv[i + 1], "%zux%zux%zu", &desc.dims[0], &desc.dims[1], &desc.dims[2]) == 3) {
      } else {
        fprintf(stderr, "load_bench: unknown option %s\n", argv[i]);
        return 2;
      }
    }
    return stream ? bench_stream(&desc, runs) : bench_read(&desc, threads);
  }
  fprintf(stderr, "usage: load_bench --pcie [MIB] | --read|--stream FILE [--threads N] [--runs N] [--dims XxYxZ --type T]\n");
  return 2;
}
