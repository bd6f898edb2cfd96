/* The classic GPU marching cubes of classic_mc.h: classify every point, CUB select and scan, one
 * thread per active cell (and per point with vertices). Written apart from extract/ on purpose: it
 * is the baseline extract_bench measures inkray against, so it shares only the case table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/permutation_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "tests/extract/classic_mc.h"

#define CLASSIC_THREADS 256

struct classic_mc {
  const void *vox;
  int type;
  uint32_t nx, ny, nz;
  size_t points;
  uint64_t *d_cases;
  uint8_t *d_vcount, *d_tcount;        /* per grid point */
  uint32_t *d_voffset;                 /* per grid point: first vertex (welded) */
  uint32_t *d_cells, *d_points;        /* active cells, points with vertices */
  uint32_t *d_toffset;                 /* per active cell: first triangle */
  uint32_t *d_counts;                  /* [0] active cells, [1] active points, [2] triangles, [3] vertices */
  uint32_t *h_counts;
  void *d_temp;
  size_t temp_bytes;
  float *d_out;                        /* soup corners or welded positions (+ normals) */
  size_t out_cap;                      /* floats */
  uint32_t *d_tri;
  size_t tri_cap;                      /* uint32 */
  cudaStream_t stream;
  cudaEvent_t ev[4];
  char error[256];
};

static cudaError_t fail(classic_mc *c, cudaError_t e, const char *what) {
  if (e != cudaSuccess) snprintf(c->error, sizeof c->error, "%s: %s", what, cudaGetErrorString(e));
  return e;
}
#define TRY(c, call)                                       \
  do {                                                     \
    cudaError_t e_ = (call);                               \
    if (e_ != cudaSuccess) return fail((c), e_, #call);    \
  } while (0)

template <int TYPE>
static __device__ __forceinline__ float value(const void *v, size_t i) {
  return TYPE == 0 ? (float)__ldg((const uint8_t *)v + i) : __ldg((const float *)v + i);
}

/* Bourke's corner and edge numbering, written out here. */
__constant__ int8_t corner_off[8][3] = {{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 1, 0}, {0, 0, 1}, {1, 0, 1}, {1, 1, 1}, {0, 1, 1}};
__constant__ int8_t edge_def[12][4] = { /* lower end offset, axis */
    {0, 0, 0, 0}, {1, 0, 0, 1}, {0, 1, 0, 0}, {0, 0, 0, 1}, {0, 0, 1, 0}, {1, 0, 1, 1},
    {0, 1, 1, 0}, {0, 0, 1, 1}, {0, 0, 0, 2}, {1, 0, 0, 2}, {1, 1, 0, 2}, {0, 1, 0, 2}};

struct grid_ref {
  const void *vox;
  uint32_t nx, ny, nz;
  __device__ size_t at(uint32_t x, uint32_t y, uint32_t z) const { return x + (size_t)nx * (y + (size_t)ny * z); }
};

/* Per grid point: the crossed edges leaving it (bit per axis) and its cell's triangle count. */
template <int TYPE>
static __global__ void classify_kernel(grid_ref g, float iso, const uint64_t *__restrict__ cases, uint8_t *vbits,
                                       uint8_t *tcount, size_t points) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= points) return;
  uint32_t x = (uint32_t)(i % g.nx), y = (uint32_t)(i / g.nx % g.ny), z = (uint32_t)(i / ((size_t)g.nx * g.ny));
  float f0 = value<TYPE>(g.vox, i);
  bool in0 = f0 >= iso;
  uint8_t bits = 0;
  if (x + 1 < g.nx && (value<TYPE>(g.vox, i + 1) >= iso) != in0) bits |= 1;
  if (y + 1 < g.ny && (value<TYPE>(g.vox, i + g.nx) >= iso) != in0) bits |= 2;
  if (z + 1 < g.nz && (value<TYPE>(g.vox, i + (size_t)g.nx * g.ny) >= iso) != in0) bits |= 4;
  vbits[i] = bits;
  uint8_t n = 0;
  if (x + 1 < g.nx && y + 1 < g.ny && z + 1 < g.nz) {
    int c = 0;
    for (int k = 0; k < 8; k++)
      c |= value<TYPE>(g.vox, g.at(x + corner_off[k][0], y + corner_off[k][1], z + corner_off[k][2])) >= iso ? 1 << k : 0;
    n = (uint8_t)(__ldg(cases + c) & 15u);
  }
  tcount[i] = n;
}

struct popc_u8 {
  __host__ __device__ uint32_t operator()(uint8_t b) const { return (uint32_t)((b & 1) + ((b >> 1) & 1) + ((b >> 2) & 1)); }
};
struct widen_u8 {
  __host__ __device__ uint32_t operator()(uint8_t b) const { return b; }
};

static __global__ void totals_kernel(const uint32_t *toffset, const uint8_t *tcount, const uint32_t *cells,
                                     const uint32_t *voffset, const uint8_t *vbits, size_t points, uint32_t *counts) {
  uint32_t n = counts[0];
  counts[2] = n ? toffset[n - 1] + tcount[cells[n - 1]] : 0;
  if (voffset) {
    uint8_t b = vbits[points - 1];
    counts[3] = voffset[points - 1] + (b & 1) + ((b >> 1) & 1) + ((b >> 2) & 1);
  }
}

template <int TYPE>
static __device__ float edge_t(grid_ref g, float iso, size_t a, size_t b) {
  float fa = value<TYPE>(g.vox, a), fb = value<TYPE>(g.vox, b);
  return (iso - fa) / (fb - fa);
}

template <int TYPE>
static __global__ void soup_kernel(grid_ref g, float iso, const uint64_t *__restrict__ cases, const uint32_t *cells,
                                   const uint32_t *toffset, uint32_t count, float3 *out) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  size_t p = cells[i];
  uint32_t x = (uint32_t)(p % g.nx), y = (uint32_t)(p / g.nx % g.ny), z = (uint32_t)(p / ((size_t)g.nx * g.ny));
  int c = 0;
  for (int k = 0; k < 8; k++)
    c |= value<TYPE>(g.vox, g.at(x + corner_off[k][0], y + corner_off[k][1], z + corner_off[k][2])) >= iso ? 1 << k : 0;
  uint64_t entry = __ldg(cases + c);
  int n = (int)(entry & 15u);
  float3 *dst = out + 3 * (size_t)toffset[i];
  for (int k = 0; k < 3 * n; k++) {
    int e = (int)((entry >> (4 + 4 * k)) & 15u);
    uint32_t ax = x + edge_def[e][0], ay = y + edge_def[e][1], az = z + edge_def[e][2];
    int axis = edge_def[e][3];
    size_t a = g.at(ax, ay, az), b = g.at(ax + (axis == 0), ay + (axis == 1), az + (axis == 2));
    float t = edge_t<TYPE>(g, iso, a, b);
    dst[k] = make_float3((float)ax + (axis == 0 ? t : 0.0f), (float)ay + (axis == 1 ? t : 0.0f),
                         (float)az + (axis == 2 ? t : 0.0f));
  }
}

template <int TYPE>
static __device__ float derivative(grid_ref g, uint32_t x, uint32_t y, uint32_t z, int k) {
  uint32_t p[3] = {x, y, z}, n[3] = {g.nx, g.ny, g.nz};
  uint32_t lo[3] = {x, y, z}, hi[3] = {x, y, z};
  if (p[k] > 0) lo[k]--;
  if (p[k] + 1 < n[k]) hi[k]++;
  float d = (float)(hi[k] - lo[k]);
  return (value<TYPE>(g.vox, g.at(hi[0], hi[1], hi[2])) - value<TYPE>(g.vox, g.at(lo[0], lo[1], lo[2]))) / d;
}

template <int TYPE, bool NORMALS>
static __global__ void vertex_kernel(grid_ref g, float iso, const uint32_t *points, const uint8_t *vbits,
                                     const uint32_t *voffset, uint32_t count, float3 *pos, float3 *nrm) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  size_t p = points[i];
  uint32_t x = (uint32_t)(p % g.nx), y = (uint32_t)(p / g.nx % g.ny), z = (uint32_t)(p / ((size_t)g.nx * g.ny));
  uint8_t bits = vbits[p];
  uint32_t id = voffset[p];
  for (int axis = 0; axis < 3; axis++) {
    if (!((bits >> axis) & 1)) continue;
    size_t q = g.at(x + (axis == 0), y + (axis == 1), z + (axis == 2));
    float t = edge_t<TYPE>(g, iso, p, q);
    pos[id] = make_float3((float)x + (axis == 0 ? t : 0.0f), (float)y + (axis == 1 ? t : 0.0f),
                          (float)z + (axis == 2 ? t : 0.0f));
    if (NORMALS) {
      uint32_t qx = x + (axis == 0), qy = y + (axis == 1), qz = z + (axis == 2);
      float gx = derivative<TYPE>(g, x, y, z, 0) + t * (derivative<TYPE>(g, qx, qy, qz, 0) - derivative<TYPE>(g, x, y, z, 0));
      float gy = derivative<TYPE>(g, x, y, z, 1) + t * (derivative<TYPE>(g, qx, qy, qz, 1) - derivative<TYPE>(g, x, y, z, 1));
      float gz = derivative<TYPE>(g, x, y, z, 2) + t * (derivative<TYPE>(g, qx, qy, qz, 2) - derivative<TYPE>(g, x, y, z, 2));
      float len = sqrtf(gx * gx + gy * gy + gz * gz);
      float s = len > 0.0f ? -1.0f / len : 0.0f;
      nrm[id] = make_float3(gx * s, gy * s, gz * s);
    }
    id++;
  }
}

template <int TYPE>
static __global__ void index_kernel(grid_ref g, float iso, const uint64_t *__restrict__ cases, const uint32_t *cells,
                                    const uint32_t *toffset, const uint8_t *vbits, const uint32_t *voffset, uint32_t count,
                                    uint32_t *tri) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  size_t p = cells[i];
  uint32_t x = (uint32_t)(p % g.nx), y = (uint32_t)(p / g.nx % g.ny), z = (uint32_t)(p / ((size_t)g.nx * g.ny));
  int c = 0;
  for (int k = 0; k < 8; k++)
    c |= value<TYPE>(g.vox, g.at(x + corner_off[k][0], y + corner_off[k][1], z + corner_off[k][2])) >= iso ? 1 << k : 0;
  uint64_t entry = __ldg(cases + c);
  int n = (int)(entry & 15u);
  uint32_t *dst = tri + 3 * (size_t)toffset[i];
  for (int k = 0; k < 3 * n; k++) {
    int e = (int)((entry >> (4 + 4 * k)) & 15u);
    size_t q = g.at(x + edge_def[e][0], y + edge_def[e][1], z + edge_def[e][2]);
    int axis = edge_def[e][3];
    uint8_t bits = vbits[q];
    dst[k] = voffset[q] + (uint32_t)__popc(bits & ((1u << axis) - 1u));
  }
}

/* ---- Host ------------------------------------------------------------------------------------------ */
cudaError_t classic_mc_create(classic_mc **out, const void *d_voxels, int type, const size_t dims[3],
                              const uint64_t cases[256]) {
  classic_mc *c = (classic_mc *)calloc(1, sizeof *c);
  *out = c;
  if (!c) return cudaErrorMemoryAllocation;
  c->vox = d_voxels, c->type = type;
  c->nx = (uint32_t)dims[0], c->ny = (uint32_t)dims[1], c->nz = (uint32_t)dims[2];
  c->points = dims[0] * dims[1] * dims[2];
  TRY(c, cudaStreamCreate(&c->stream));
  for (int k = 0; k < 4; k++) TRY(c, cudaEventCreate(&c->ev[k]));
  TRY(c, cudaMalloc(&c->d_cases, 256 * sizeof(uint64_t)));
  TRY(c, cudaMemcpy(c->d_cases, cases, 256 * sizeof(uint64_t), cudaMemcpyHostToDevice));
  TRY(c, cudaMalloc(&c->d_vcount, c->points));
  TRY(c, cudaMalloc(&c->d_tcount, c->points));
  TRY(c, cudaMalloc(&c->d_voffset, c->points * sizeof(uint32_t)));
  TRY(c, cudaMalloc(&c->d_cells, c->points * sizeof(uint32_t)));
  TRY(c, cudaMalloc(&c->d_points, c->points * sizeof(uint32_t)));
  TRY(c, cudaMalloc(&c->d_toffset, c->points * sizeof(uint32_t)));
  TRY(c, cudaMalloc(&c->d_counts, 4 * sizeof(uint32_t)));
  TRY(c, cudaMallocHost(&c->h_counts, 4 * sizeof(uint32_t)));
  /* Scratch for the largest of the selects and scans. */
  size_t a = 0, b = 0, d = 0;
  thrust::counting_iterator<uint32_t> ids(0);
  TRY(c, cub::DeviceSelect::Flagged(NULL, a, ids, c->d_tcount, c->d_cells, c->d_counts, c->points));
  auto widened = thrust::make_transform_iterator(c->d_vcount, popc_u8());
  TRY(c, cub::DeviceScan::ExclusiveSum(NULL, b, widened, c->d_voffset, c->points));
  auto cell_counts = thrust::make_transform_iterator(thrust::make_permutation_iterator(c->d_tcount, c->d_cells), widen_u8());
  TRY(c, cub::DeviceScan::ExclusiveSum(NULL, d, cell_counts, c->d_toffset, c->points));
  c->temp_bytes = a > b ? (a > d ? a : d) : (b > d ? b : d);
  TRY(c, cudaMalloc(&c->d_temp, c->temp_bytes));
  return cudaSuccess;
}

static cudaError_t ensure(classic_mc *c, void **ptr, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return cudaSuccess;
  cudaFree(*ptr);
  *ptr = NULL;
  *cap = 0;
  TRY(c, cudaMalloc(ptr, need * elem));
  *cap = need;
  return cudaSuccess;
}

static float span(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  return ms;
}

template <int TYPE>
static cudaError_t run_typed(classic_mc *c, float iso, classic_mode mode, classic_result *r) {
  grid_ref g = {c->vox, c->nx, c->ny, c->nz};
  size_t temp = c->temp_bytes;
  unsigned blocks = (unsigned)((c->points + CLASSIC_THREADS - 1) / CLASSIC_THREADS);
  bool welded = mode != CLASSIC_SOUP;
  TRY(c, cudaEventRecord(c->ev[0], c->stream));
  classify_kernel<TYPE><<<blocks, CLASSIC_THREADS, 0, c->stream>>>(g, iso, c->d_cases, c->d_vcount, c->d_tcount, c->points);
  TRY(c, cudaGetLastError());
  TRY(c, cudaEventRecord(c->ev[1], c->stream));
  thrust::counting_iterator<uint32_t> ids(0);
  TRY(c, cub::DeviceSelect::Flagged(c->d_temp, temp, ids, c->d_tcount, c->d_cells, c->d_counts, c->points, c->stream));
  if (welded) {
    temp = c->temp_bytes; /* CUB takes the size by reference: a fresh copy for each call */
    TRY(c, cub::DeviceSelect::Flagged(c->d_temp, temp, ids, c->d_vcount, c->d_points, c->d_counts + 1, c->points, c->stream));
    auto widened = thrust::make_transform_iterator(c->d_vcount, popc_u8());
    temp = c->temp_bytes;
    TRY(c, cub::DeviceScan::ExclusiveSum(c->d_temp, temp, widened, c->d_voffset, c->points, c->stream));
  }
  TRY(c, cudaMemcpyAsync(c->h_counts, c->d_counts, 2 * sizeof(uint32_t), cudaMemcpyDeviceToHost, c->stream));
  TRY(c, cudaStreamSynchronize(c->stream));
  uint32_t cells = c->h_counts[0], points = c->h_counts[1];
  auto cell_counts = thrust::make_transform_iterator(thrust::make_permutation_iterator(c->d_tcount, c->d_cells), widen_u8());
  temp = c->temp_bytes;
  if (cells) TRY(c, cub::DeviceScan::ExclusiveSum(c->d_temp, temp, cell_counts, c->d_toffset, cells, c->stream));
  totals_kernel<<<1, 1, 0, c->stream>>>(c->d_toffset, c->d_tcount, c->d_cells, welded ? c->d_voffset : NULL,
                                        c->d_vcount, c->points, c->d_counts);
  TRY(c, cudaGetLastError());
  TRY(c, cudaMemcpyAsync(c->h_counts, c->d_counts, 4 * sizeof(uint32_t), cudaMemcpyDeviceToHost, c->stream));
  TRY(c, cudaStreamSynchronize(c->stream));
  TRY(c, cudaEventRecord(c->ev[2], c->stream));
  size_t triangles = c->h_counts[2], vertices = welded ? c->h_counts[3] : 3 * triangles;
  size_t floats = vertices * 3 * (mode == CLASSIC_WELDED_NORMALS ? 2 : 1);
  TRY(c, ensure(c, (void **)&c->d_out, &c->out_cap, floats, sizeof(float)));
  if (welded) TRY(c, ensure(c, (void **)&c->d_tri, &c->tri_cap, 3 * triangles, sizeof(uint32_t)));
  unsigned cell_blocks = (cells + CLASSIC_THREADS - 1) / CLASSIC_THREADS;
  if (!welded && cells) {
    soup_kernel<TYPE><<<cell_blocks, CLASSIC_THREADS, 0, c->stream>>>(g, iso, c->d_cases, c->d_cells, c->d_toffset, cells,
                                                                     (float3 *)c->d_out);
  } else if (cells) {
    float3 *pos = (float3 *)c->d_out, *nrm = pos + vertices;
    unsigned point_blocks = (points + CLASSIC_THREADS - 1) / CLASSIC_THREADS;
    if (mode == CLASSIC_WELDED_NORMALS)
      vertex_kernel<TYPE, true><<<point_blocks, CLASSIC_THREADS, 0, c->stream>>>(g, iso, c->d_points, c->d_vcount,
                                                                               c->d_voffset, points, pos, nrm);
    else
      vertex_kernel<TYPE, false><<<point_blocks, CLASSIC_THREADS, 0, c->stream>>>(g, iso, c->d_points, c->d_vcount,
                                                                                c->d_voffset, points, pos, nrm);
    index_kernel<TYPE><<<cell_blocks, CLASSIC_THREADS, 0, c->stream>>>(g, iso, c->d_cases, c->d_cells, c->d_toffset,
                                                                      c->d_vcount, c->d_voffset, cells, c->d_tri);
  }
  TRY(c, cudaGetLastError());
  TRY(c, cudaEventRecord(c->ev[3], c->stream));
  TRY(c, cudaEventSynchronize(c->ev[3]));
  r->triangles = triangles;
  r->vertices = vertices;
  r->active_cells = cells;
  r->ms = span(c->ev[0], c->ev[3]);
  r->classify_ms = span(c->ev[0], c->ev[1]);
  r->compact_ms = span(c->ev[1], c->ev[2]);
  r->generate_ms = span(c->ev[2], c->ev[3]);
  r->bytes = floats * sizeof(float) + (welded ? 3 * triangles * sizeof(uint32_t) : 0);
  return cudaSuccess;
}

cudaError_t classic_mc_run(classic_mc *c, float iso, classic_mode mode, classic_result *r) {
  memset(r, 0, sizeof *r);
  return c->type == 0 ? run_typed<0>(c, iso, mode, r) : run_typed<3>(c, iso, mode, r);
}

void classic_mc_destroy(classic_mc *c) {
  if (!c) return;
  if (c->stream) cudaStreamSynchronize(c->stream);
  void *bufs[] = {c->d_cases, c->d_vcount, c->d_tcount, c->d_voffset, c->d_cells, c->d_points, c->d_toffset,
                  c->d_counts, c->d_temp, c->d_out, c->d_tri};
  for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; k++) cudaFree(bufs[k]);
  if (c->h_counts) cudaFreeHost(c->h_counts);
  for (int k = 0; k < 4; k++)
    if (c->ev[k]) cudaEventDestroy(c->ev[k]);
  if (c->stream) cudaStreamDestroy(c->stream);
  free(c);
}

const char *classic_mc_error(const classic_mc *c) { return c ? c->error : "out of host memory"; }
