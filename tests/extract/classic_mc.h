/* A classic GPU marching cubes, the baseline of extract_bench: what an engineer writes from the
 * textbook (GPU Gems 3 ch. 1, the CUDA sample) with CUB, sharing nothing with extract/ but the case
 * table. Every grid point is classified (its crossed edges, its cell's triangle count); CUB
 * DeviceSelect compacts the active cells (and, welded, the points with vertices); CUB DeviceScan
 * gives each active cell its first triangle (and, welded, each grid point its first vertex, a scan
 * over the whole grid); then one thread per active cell writes its triangles:
 *   soup    three float3 corners per triangle (no sharing, no normals);
 *   welded  one vertex per crossed edge (one thread per point with vertices), triangles as three
 *           uint32 indices, optionally with normals from central differences.
 * The host reads the counts twice (the sizes of the scans and of the generation grids), as any
 * implementation must before it launches exact grids. */
#ifndef INKRAY_TESTS_EXTRACT_CLASSIC_MC_H
#define INKRAY_TESTS_EXTRACT_CLASSIC_MC_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum classic_mode { CLASSIC_SOUP = 0, CLASSIC_WELDED, CLASSIC_WELDED_NORMALS } classic_mode;

typedef struct classic_result {
  size_t vertices, triangles; /* soup: vertices = 3 x triangles */
  size_t active_cells;
  double ms;                  /* CUDA events around all of it, host reads included */
  double classify_ms, compact_ms, generate_ms;
  size_t bytes;               /* of the mesh written */
} classic_result;

typedef struct classic_mc classic_mc;

/* d_voxels: the grid on the device, uint8 or float32 (type 0 or 3, ir_voxel_type); cases: the
 * 256-entry table of marching.cuh (host). Buffers are sized here for the whole grid. */
cudaError_t classic_mc_create(classic_mc **out, const void *d_voxels, int type, const size_t dims[3],
                              const uint64_t cases[256]);
cudaError_t classic_mc_run(classic_mc *c, float iso, classic_mode mode, classic_result *r);
void classic_mc_destroy(classic_mc *c);
/* One line for the last failure. */
const char *classic_mc_error(const classic_mc *c);

#ifdef __cplusplus
}
#endif
#endif
