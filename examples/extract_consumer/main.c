/* The smallest use of the installed inkray extraction library: the isosurface of a sphere's
 * distance field as a mesh, on the CPU and (where there is a CUDA device) on the GPU, checked to
 * be closed with Euler characteristic 2 and equal on both, then written as a PLY file (argv[1],
 * if given). Exits 0 when all is well, 1 otherwise. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <inkray/extract.h>

#define N 48

static int cmp_u64(const void *a, const void *b) {
  unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
  return (x > y) - (x < y);
}

/* V - E + F, or a large number when an edge is not shared by exactly two triangles. */
static long long euler(const ir_mesh *m) {
  size_t n = 3 * m->triangle_count, edges = 0;
  unsigned long long *e = malloc((n ? n : 1) * sizeof *e);
  for (size_t i = 0; i < m->triangle_count; i++)
    for (int k = 0; k < 3; k++) {
      unsigned long long a = m->triangles[3 * i + k], b = m->triangles[3 * i + (k + 1) % 3];
      e[3 * i + k] = a < b ? a << 32 | b : b << 32 | a;
    }
  qsort(e, n, sizeof *e, cmp_u64);
  for (size_t i = 0; i < n; i += 2, edges++)
    if (i + 1 >= n || e[i] != e[i + 1] || (i + 2 < n && e[i + 2] == e[i])) {
      free(e);
      return 1000;
    }
  free(e);
  return (long long)m->vertex_count - (long long)edges + (long long)m->triangle_count;
}

int main(int argc, char **argv) {
  static float v[N * N * N];
  for (int z = 0; z < N; z++)
    for (int y = 0; y < N; y++)
      for (int x = 0; x < N; x++)
        v[x + N * (y + N * z)] = 16.0f - sqrtf((x - 23.5f) * (x - 23.5f) + (y - 23.5f) * (y - 23.5f) + (z - 23.5f) * (z - 23.5f));
  ir_extract_grid grid = {.voxels = v, .dims = {N, N, N}, .type = IR_VOXEL_FLOAT32, .spacing = {0.5f, 0.5f, 0.5f}};
  char err[IR_ERR_LEN];
  ir_mesh cpu;
  if (ir_marching_cubes(&grid, 0.0f, IR_EXTRACT_CPU, &cpu, err) != IR_OK) {
    printf("FAIL: %s\n", err);
    return 1;
  }
  long long chi = euler(&cpu);
  printf("CPU: %zu vertices, %zu triangles, Euler characteristic %lld\n", cpu.vertex_count, cpu.triangle_count, chi);
  int rc = chi == 2 ? 0 : 1;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0) {
    ir_mesh gpu;
    if (ir_marching_cubes(&grid, 0.0f, IR_EXTRACT_GPU, &gpu, err) != IR_OK) {
      printf("FAIL: %s\n", err);
      rc = 1;
    } else {
      bool same = gpu.vertex_count == cpu.vertex_count && gpu.triangle_count == cpu.triangle_count &&
                  memcmp(gpu.positions, cpu.positions, 12 * cpu.vertex_count) == 0 &&
                  memcmp(gpu.triangles, cpu.triangles, 12 * cpu.triangle_count) == 0;
      printf("GPU: the same mesh as the CPU: %s\n", same ? "yes" : "NO");
      if (!same) rc = 1;
      ir_mesh_free(&gpu);
    }
  } else {
    printf("GPU: not run (no CUDA device)\n");
  }
  if (rc == 0 && argc > 1 && ir_mesh_write(&cpu, argv[1], err) != IR_OK) {
    printf("FAIL: %s\n", err);
    rc = 1;
  }
  ir_mesh_free(&cpu);
  return rc;
}
