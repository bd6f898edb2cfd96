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
 *
 * Both print one line per figure, "name value unit". */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "data/volume.h"

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

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "--pcie") == 0) {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
      fprintf(stderr, "load_bench: no CUDA device\n");
      return 1;
    }
    size_t mib = argc >= 3 ? strtoul(argv[2], NULL, 10) : 1024;
    return bench_pcie(mib ? mib : 1024);
  }
  if (argc >= 3 && strcmp(argv[1], "--read") == 0) {
    ir_volume_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.source = argv[2];
    int threads = 0;
    for (int i = 3; i + 1 < argc; i += 2) {
      if (strcmp(argv[i], "--threads") == 0) threads = atoi(argv[i + 1]);
      else if (strcmp(argv[i], "--type") == 0 && ir_voxel_type_parse(argv[i + 1], &desc.type)) desc.type_given = true;
      else if (strcmp(argv[i], "--dims") == 0 &&
               sscanf(argv[i + 1], "%zux%zux%zu", &desc.dims[0], &desc.dims[1], &desc.dims[2]) == 3) {
      } else {
        fprintf(stderr, "load_bench: unknown option %s\n", argv[i]);
        return 2;
      }
    }
    return bench_read(&desc, threads);
  }
  fprintf(stderr, "usage: load_bench --pcie [MIB] | --read FILE [--threads N] [--dims XxYxZ --type T]\n");
  return 2;
}
