/* The smallest use of the installed inkray compaction library: compact a stream of 100000
 * values with every method and compare with a CPU loop. Exits 0 when all agree, 1 on a mismatch
 * or CUDA error, 77 (skipped) where there is no CUDA device. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <inkray/compaction.h>

#define N 100000

static int compare_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

int main(void) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    printf("SKIPPED: no CUDA device\n");
    return 77;
  }
  static uint32_t in[N], out[N], expected[N];
  static uint8_t flags[N];
  uint32_t kept = 0;
  for (uint32_t i = 0; i < N; i++) {
    in[i] = i * 2654435761u;
    flags[i] = (uint8_t)((in[i] >> 7) % 3 == 0);
    if (flags[i]) expected[kept++] = in[i];
  }

  ir_compact_ctx *ctx = NULL;
  uint32_t *d_in = NULL, *d_out = NULL, *d_count = NULL;
  uint8_t *d_flags = NULL;
  cudaError_t e = ir_compact_ctx_create(&ctx, N);
  if (e == cudaSuccess) e = cudaMalloc((void **)&d_in, sizeof in);
  if (e == cudaSuccess) e = cudaMalloc((void **)&d_out, sizeof out);
  if (e == cudaSuccess) e = cudaMalloc((void **)&d_flags, sizeof flags);
  if (e == cudaSuccess) e = cudaMalloc((void **)&d_count, sizeof(uint32_t));
  if (e == cudaSuccess) e = cudaMemcpy(d_in, in, sizeof in, cudaMemcpyHostToDevice);
  if (e == cudaSuccess) e = cudaMemcpy(d_flags, flags, sizeof flags, cudaMemcpyHostToDevice);

  int failures = 0;
  for (int m = 0; e == cudaSuccess && m < IR_COMPACT_METHOD_COUNT; m++) {
    const ir_compact_method_info *info = &ir_compact_methods()[m];
    uint32_t count = 0;
    e = ir_compact_flagged(ctx, info->method, d_in, d_flags, d_out, d_count, N, 0);
    if (e == cudaSuccess) e = cudaMemcpy(&count, d_count, sizeof count, cudaMemcpyDeviceToHost);
    if (e == cudaSuccess) e = cudaMemcpy(out, d_out, count * sizeof(uint32_t), cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) break;
    /* Unstable methods promise the same values in some order: compare sorted copies. */
    if (!info->stable) {
      qsort(out, count, sizeof out[0], compare_u32);
      qsort(expected, kept, sizeof expected[0], compare_u32);
    }
    int ok = count == kept && memcmp(out, expected, kept * sizeof(uint32_t)) == 0;
    printf("%-13s %u of %d kept: %s\n", info->name, count, N, ok ? "ok" : "MISMATCH");
    failures += !ok;
    if (!info->stable) /* later stable methods compare against input order again */
      for (uint32_t i = 0, k = 0; i < N; i++)
        if (flags[i]) expected[k++] = in[i];
  }
  if (e != cudaSuccess) {
    fprintf(stderr, "compaction_consumer: %s (%s)\n", cudaGetErrorString(e),
            ctx ? ir_compact_last_error(ctx) : "no context");
    failures++;
  }
  cudaFree(d_in);
  cudaFree(d_out);
  cudaFree(d_flags);
  cudaFree(d_count);
  ir_compact_ctx_destroy(ctx);
  return failures ? 1 : 0;
}
