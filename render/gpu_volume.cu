/* The volume on the GPU: slots of 3D arrays filled while the volume is read, their brick and cell
 * ranges and the volume's value statistics computed from the array, and the switch between
 * slots that plays a time series.
 *
 * Upload. The data module reads uncompressed volumes in pieces of whole rows on several threads
 * (data/read_pieces.c) and hands each piece to the slot's sink as soon as it is in memory. The
 * sink copies it into a pinned staging buffer of the device's transfer pool (transfer/transfer.h;
 * pageable memory would be copied again by the driver, one piece at a time, synchronously) and
 * queues an asynchronous copy from there into the array, on the buffer's own stream: reading, the
 * copies into staging and the PCIe transfers overlap, and the volume is on the GPU a few
 * milliseconds after its last piece was read. Volumes that did not come in pieces (compressed data, builtin volumes) go through the
 * same staging buffers from host memory, on several threads.
 *
 * Ranges. Cell ranges (8^3 voxels with the shared border, IR_WALK_CELLS) are computed one
 * thread per cell from a point-sampled, element-typed texture of the array, brick ranges as the
 * union of their cells, exactly as bvh_setup.c does on the CPU (the same values: integers and
 * floats compared as they are, int16's -32768 read as -32767, NaN skipped). Float volumes reach
 * the array with +-Inf replaced by NaN, done in the staging copy, as the CPU's clean copy does.
 *
 * Statistics. Two passes over the array fill ir_volume_counts (data/volume.h): per-block
 * partial sums, minima and maxima, then block histograms in shared memory (8-bit value counts
 * too; 16-bit ones in global memory) merged with atomics; the data module turns them into the
 * statistics and suggested isovalues.
 *
 * Slots. Frames read the renderer's range buffers and the texture objects of the slot in use:
 * ir_gpu_use_slot makes the renderer's stream wait for the slot's fill, copies its ranges into
 * those buffers (so that captured graphs stay valid) and swaps the texture objects. A slot that
 * frames have drawn is refilled only once they are done (an event recorded when another slot
 * took its place).
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "render/gpu_internal.cuh"
#include "transfer/transfer.h"

#define UPLOAD_MAX_THREADS 16
#define RANGE_BLOCK 128
#define STATS_BLOCK 256

typedef struct volume_slot {
  struct ir_gpu_volumes *owner;
  int index;
  cudaArray_t array;
  cudaTextureObject_t tex;       /* linear filtering (the march) */
  cudaTextureObject_t tex_point; /* point reads, same read mode (exact trilinear) */
  cudaTextureObject_t tex_value; /* point reads of the stored values (ranges, statistics) */
  ir_brick_range *d_ranges, *d_cell_ranges;
  cudaStream_t stream;           /* the fill's barrier and range kernels */
  cudaEvent_t ev_read, ev_copied, ev_ready; /* the last fill: read done, copies done, ranges done */
  cudaEvent_t ev_released;       /* after the last frames that drew it */
  bool released_pending, filled;
} volume_slot;

struct ir_gpu_volumes {
  int device;
  size_t dims[3];
  ir_voxel_type type;
  size_t elem;
  ir_bvh_layout layout;
  uint32_t cells[3];
  int count, in_use;
  volume_slot slots[IR_MAX_SLOTS];
  /* The device's staging pool: one piece of the data module (IR_PIECE_BYTES, 4 MiB at most, since
   * a row of at most 2^20 float voxels is) per buffer. */
  ir_xfer_pool *pool;
};

/* The error of a CUDA call on a thread that reports through `err` (not IR_CUDA's early return). */
static ir_status cuda_failed(cudaError_t e, const char *what, char err[IR_ERR_LEN]) {
  snprintf(err, IR_ERR_LEN, "GPU error while %s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
  return IR_ERR_RUNTIME;
}

/* ---- Slots ---------------------------------------------------------------------------------------- */
static cudaChannelFormatDesc channel_of(ir_voxel_type t) {
  switch (t) {
  case IR_VOXEL_UINT8: return cudaCreateChannelDesc<uint8_t>();
  case IR_VOXEL_UINT16: return cudaCreateChannelDesc<uint16_t>();
  case IR_VOXEL_INT16: return cudaCreateChannelDesc<int16_t>();
  default: return cudaCreateChannelDesc<float>();
  }
}

static cudaError_t make_texture(cudaArray_t array, bool linear, bool normalized, cudaTextureObject_t *out) {
  cudaResourceDesc res;
  memset(&res, 0, sizeof res);
  res.resType = cudaResourceTypeArray;
  res.res.array.array = array;
  cudaTextureDesc td;
  memset(&td, 0, sizeof td);
  td.addressMode[0] = td.addressMode[1] = td.addressMode[2] = cudaAddressModeClamp;
  td.filterMode = linear ? cudaFilterModeLinear : cudaFilterModePoint;
  td.readMode = normalized ? cudaReadModeNormalizedFloat : cudaReadModeElementType;
  td.normalizedCoords = 0;
  return cudaCreateTextureObject(out, &res, &td, NULL);
}

static void slot_destroy(volume_slot *s) {
  if (s->stream) cudaStreamSynchronize(s->stream);
  if (s->tex) cudaDestroyTextureObject(s->tex);
  if (s->tex_point) cudaDestroyTextureObject(s->tex_point);
  if (s->tex_value) cudaDestroyTextureObject(s->tex_value);
  if (s->array) cudaFreeArray(s->array);
  cudaFree(s->d_ranges);
  cudaFree(s->d_cell_ranges);
  cudaEvent_t events[] = {s->ev_read, s->ev_copied, s->ev_ready, s->ev_released};
  for (size_t k = 0; k < sizeof events / sizeof events[0]; k++)
    if (events[k]) cudaEventDestroy(events[k]);
  if (s->stream) cudaStreamDestroy(s->stream);
  memset(s, 0, sizeof *s);
}

static ir_status slot_create(ir_gpu_volumes *v, int index, const char *name, char err[IR_ERR_LEN]) {
  volume_slot *s = &v->slots[index];
  memset(s, 0, sizeof *s);
  s->owner = v;
  s->index = index;
  int max3d = 0;
  IR_CUDA(cudaDeviceGetAttribute(&max3d, cudaDevAttrMaxTexture3DWidth, v->device));
  for (int k = 0; k < 3; k++)
    if (v->dims[k] > (size_t)max3d) {
      snprintf(err, IR_ERR_LEN, "%s: %zux%zux%zu voxels exceed the GPU's 3D texture limit of %d per axis; use --device cpu",
               name, v->dims[0], v->dims[1], v->dims[2], max3d);
      return IR_ERR_INPUT;
    }
  cudaChannelFormatDesc ch = channel_of(v->type);
  cudaError_t e = cudaMalloc3DArray(&s->array, &ch, make_cudaExtent(v->dims[0], v->dims[1], v->dims[2]));
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    size_t bytes = v->dims[0] * v->dims[1] * v->dims[2] * v->elem;
    snprintf(err, IR_ERR_LEN, "%s: not enough GPU memory for %s%zu-byte volume texture; use --device cpu", name,
             index ? "another " : "the ", bytes);
    return IR_ERR_RUNTIME;
  }
  IR_CUDA(e);
  /* Linear filtering of integer textures needs normalized reads; volume_sample.cuh scales back. */
  bool normalized = v->type != IR_VOXEL_FLOAT32;
  IR_CUDA(make_texture(s->array, true, normalized, &s->tex));
  IR_CUDA(make_texture(s->array, false, normalized, &s->tex_point));
  IR_CUDA(make_texture(s->array, false, false, &s->tex_value));
  const uint32_t *bd = v->layout.dims[0];
  IR_CUDA(cudaMalloc(&s->d_ranges, (size_t)bd[0] * bd[1] * bd[2] * sizeof(ir_brick_range)));
  IR_CUDA(cudaMalloc(&s->d_cell_ranges, (size_t)v->cells[0] * v->cells[1] * v->cells[2] * sizeof(ir_brick_range)));
  /* Non-blocking: a fill never waits for work on the legacy default stream. */
  IR_CUDA(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
  IR_CUDA(cudaEventCreate(&s->ev_read));
  IR_CUDA(cudaEventCreate(&s->ev_copied));
  IR_CUDA(cudaEventCreate(&s->ev_ready));
  IR_CUDA(cudaEventCreateWithFlags(&s->ev_released, cudaEventDisableTiming));
  return IR_OK;
}

ir_status ir_gpu_volumes_create(ir_renderer *r, char err[IR_ERR_LEN]) {
  struct ir_gpu_state *g = r->gpu;
  ir_gpu_volumes *v = (ir_gpu_volumes *)calloc(1, sizeof *v);
  if (!v) {
    snprintf(err, IR_ERR_LEN, "out of host memory creating the GPU volume");
    return IR_ERR_RUNTIME;
  }
  g->volumes = v;
  v->device = g->device;
  memcpy(v->dims, r->volume->dims, sizeof v->dims);
  v->type = r->volume->type;
  v->elem = ir_voxel_type_size(v->type);
  v->layout = r->layout;
  memcpy(v->cells, r->cells, sizeof v->cells);
  v->in_use = -1;
  v->count = 1;
  ir_status st = ir_xfer_pool_of(v->device, &v->pool, err);
  if (st != IR_OK) return st;
  return slot_create(v, 0, r->volume->name, err);
}

void ir_gpu_volumes_destroy(struct ir_gpu_state *g) {
  ir_gpu_volumes *v = g->volumes;
  if (!v) return;
  /* Copies still in flight into the arrays (a fill that stopped on an error) end first. */
  if (v->pool) {
    char err[IR_ERR_LEN];
    for (int k = 0; k < IR_MAX_SLOTS; k++)
      if (v->slots[k].stream) (void)ir_xfer_wait_all(v->pool, v->slots[k].stream, err);
  }
  for (int k = 0; k < IR_MAX_SLOTS; k++) slot_destroy(&v->slots[k]);
  free(v);
  g->volumes = NULL;
  g->tex = g->tex_point = 0;
}

ir_status ir_gpu_set_slots(ir_renderer *r, int count, char err[IR_ERR_LEN]) {
  ir_gpu_volumes *v = r->gpu->volumes;
  for (int k = count; k < v->count; k++) slot_destroy(&v->slots[k]);
  for (int k = v->count; k < count; k++) {
    ir_status st = slot_create(v, k, r->volume->name, err);
    if (st != IR_OK) {
      for (int j = v->count; j <= k; j++) slot_destroy(&v->slots[j]);
      return st;
    }
  }
  v->count = count;
  return IR_OK;
}

/* ---- Staging ------------------------------------------------------------------------------------ */
/* The staging copy; float volumes lose their infinities on the way (the texture holds NaN there,
 * as the CPU renderer's clean copy does). */
static void fill_staging(void *dst, const void *src, size_t bytes, ir_voxel_type type) {
  if (type != IR_VOXEL_FLOAT32) {
    memcpy(dst, src, bytes);
    return;
  }
  const float *s = (const float *)src;
  float *d = (float *)dst;
  for (size_t i = 0, n = bytes / sizeof(float); i < n; i++) d[i] = isinf(s[i]) ? NAN : s[i];
}

/* Rows row .. row + rows - 1 (row = y + dims[1] z) of the slot's volume from `src`, in boxes of
 * at most one staging buffer: whole slices when they fit, else rows of one slice. */
static ir_status copy_rows(volume_slot *s, size_t row, size_t rows, const unsigned char *src, char err[IR_ERR_LEN]) {
  ir_gpu_volumes *v = s->owner;
  size_t nx = v->dims[0], ny = v->dims[1], row_bytes = nx * v->elem, slice_bytes = row_bytes * ny;
  const size_t staging_bytes = ir_xfer_buffer_bytes(v->pool);
  cudaError_t e = cudaSetDevice(v->device);
  if (e != cudaSuccess) return cuda_failed(e, "selecting the renderer's GPU for the upload", err);
  while (rows > 0) {
    size_t z = row / ny, y = row % ny, height, depth;
    if (y == 0 && rows >= ny && slice_bytes <= staging_bytes) {
      height = ny;
      depth = rows / ny < staging_bytes / slice_bytes ? rows / ny : staging_bytes / slice_bytes;
    } else {
      size_t fit = staging_bytes / row_bytes ? staging_bytes / row_bytes : 1;
      height = ny - y < rows ? ny - y : rows;
      height = height < fit ? height : fit;
      depth = 1;
    }
    size_t n = height * depth, bytes = n * row_bytes;
    ir_xfer_buffer *b = NULL;
    ir_status st = ir_xfer_acquire(v->pool, &b, err);
    if (st != IR_OK) return st;
    fill_staging(b->host, src, bytes, v->type);
    cudaMemcpy3DParms p;
    memset(&p, 0, sizeof p);
    p.srcPtr = make_cudaPitchedPtr(b->host, row_bytes, nx, height);
    p.dstArray = s->array;
    p.dstPos = make_cudaPos(0, y, z);
    p.extent = make_cudaExtent(nx, height, depth);
    p.kind = cudaMemcpyHostToDevice;
    e = cudaMemcpy3DAsync(&p, b->stream);
    if (e == cudaSuccess) e = cudaEventRecord(b->done, b->stream);
    ir_xfer_release(v->pool, b);
    if (e != cudaSuccess) return cuda_failed(e, "copying a piece of the volume to the GPU", err);
    src += bytes;
    row += n;
    rows -= n;
  }
  return IR_OK;
}

static ir_status slot_piece(void *ctx, const ir_volume_piece *piece, const void *voxels, char err[IR_ERR_LEN]) {
  volume_slot *s = (volume_slot *)ctx;
  const ir_gpu_volumes *v = s->owner;
  size_t rows = v->dims[1] * v->dims[2];
  if (piece->rows == 0 || piece->row + piece->rows > rows) {
    snprintf(err, IR_ERR_LEN, "a piece of rows %zu..+%zu does not fit the renderer's %zux%zux%zu volume", piece->row,
             piece->rows, v->dims[0], v->dims[1], v->dims[2]);
    return IR_ERR_INPUT;
  }
  return copy_rows(s, piece->row, piece->rows, (const unsigned char *)voxels, err);
}

/* A whole host volume, a share of the slices on each of several threads. */
typedef struct upload_job {
  volume_slot *slot;
  const unsigned char *voxels;
  size_t slices_per_thread;
  int threads;
  pthread_mutex_t lock;
  ir_status status;
  char err[IR_ERR_LEN];
} upload_job;

typedef struct upload_share {
  upload_job *job;
  int index;
} upload_share;

static void *upload_worker(void *arg) {
  upload_share *share = (upload_share *)arg;
  upload_job *job = share->job;
  const ir_gpu_volumes *v = job->slot->owner;
  size_t z0 = (size_t)share->index * job->slices_per_thread;
  size_t z1 = z0 + job->slices_per_thread < v->dims[2] ? z0 + job->slices_per_thread : v->dims[2];
  if (z0 >= z1) return NULL;
  size_t slice_bytes = v->dims[0] * v->dims[1] * v->elem;
  char err[IR_ERR_LEN];
  ir_status st = copy_rows(job->slot, z0 * v->dims[1], (z1 - z0) * v->dims[1], job->voxels + z0 * slice_bytes, err);
  if (st != IR_OK) {
    pthread_mutex_lock(&job->lock);
    if (job->status == IR_OK) {
      job->status = st;
      memcpy(job->err, err, IR_ERR_LEN);
    }
    pthread_mutex_unlock(&job->lock);
  }
  return NULL;
}

static ir_status upload_host(volume_slot *s, const ir_volume *volume, char err[IR_ERR_LEN]) {
  const ir_gpu_volumes *v = s->owner;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  /* Threads for volumes of at least a few staging buffers; one for small ones. */
  size_t by_size = volume->bytes / (4 * ir_xfer_buffer_bytes(v->pool)) + 1;
  size_t threads = (size_t)(cores < 1 ? 1 : cores);
  threads = threads < UPLOAD_MAX_THREADS ? threads : UPLOAD_MAX_THREADS;
  threads = threads < by_size ? threads : by_size;
  threads = threads < v->dims[2] ? threads : v->dims[2];
  upload_job job;
  memset(&job, 0, sizeof job);
  job.slot = s;
  job.voxels = (const unsigned char *)volume->voxels;
  job.threads = (int)threads;
  job.slices_per_thread = (v->dims[2] + threads - 1) / threads;
  pthread_mutex_init(&job.lock, NULL);
  upload_share shares[UPLOAD_MAX_THREADS];
  pthread_t tids[UPLOAD_MAX_THREADS];
  int started = 0;
  for (int k = 0; k < job.threads; k++) shares[k] = (upload_share){&job, k};
  for (int k = 1; k < job.threads; k++, started++)
    if (pthread_create(&tids[k - 1], NULL, upload_worker, &shares[k]) != 0) break;
  upload_worker(&shares[0]);
  for (int k = 0; k < started; k++) pthread_join(tids[k], NULL);
  /* Shares whose thread could not be started run here. */
  for (int k = started + 1; k < job.threads; k++) upload_worker(&shares[k]);
  pthread_mutex_destroy(&job.lock);
  if (job.status != IR_OK) memcpy(err, job.err, IR_ERR_LEN);
  return job.status;
}

/* ---- Ranges --------------------------------------------------------------------------------------- */
/* A voxel as the ranges see it: its stored value, int16's -32768 read as -32767 (the normalized
 * texture read does so, and so does bvh_setup.c). */
template <typename T> static __device__ __forceinline__ float range_value(cudaTextureObject_t t, int x, int y, int z) {
  return (float)tex3D<T>(t, (float)x + 0.5f, (float)y + 0.5f, (float)z + 0.5f);
}
template <> __device__ __forceinline__ float range_value<int16_t>(cudaTextureObject_t t, int x, int y, int z) {
  float s = (float)tex3D<short>(t, (float)x + 0.5f, (float)y + 0.5f, (float)z + 0.5f);
  return s < -32767.0f ? -32767.0f : s;
}

/* One thread per cell: voxels W c .. min(W c + W, dim - 1) along each axis. */
template <typename T>
static __global__ void cell_ranges_kernel(cudaTextureObject_t tex, int3 dims, uint3 cells, ir_brick_range *out) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  size_t total = (size_t)cells.x * cells.y * cells.z;
  if (i >= total) return;
  int c[3] = {(int)(i % cells.x), (int)(i / cells.x % cells.y), (int)(i / ((size_t)cells.x * cells.y))};
  int d[3] = {dims.x, dims.y, dims.z}, lo[3], hi[3];
  for (int k = 0; k < 3; k++) {
    lo[k] = c[k] * IR_WALK_CELLS;
    hi[k] = lo[k] + IR_WALK_CELLS < d[k] - 1 ? lo[k] + IR_WALK_CELLS : d[k] - 1;
  }
  float mn = INFINITY, mx = -INFINITY;
  for (int z = lo[2]; z <= hi[2]; z++)
    for (int y = lo[1]; y <= hi[1]; y++)
      for (int x = lo[0]; x <= hi[0]; x++) {
        float s = range_value<T>(tex, x, y, z);
        if (!isfinite(s)) continue;
        mn = s < mn ? s : mn;
        mx = s > mx ? s : mx;
      }
  out[i].min = mn;
  out[i].max = mx;
}

/* One thread per brick: the union of its (up to) eight cells. */
static __global__ void brick_ranges_kernel(ir_bvh_layout L, uint3 cells, const ir_brick_range *__restrict__ cell_ranges,
                                           ir_brick_range *ranges) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t *bd = L.dims[0];
  if (i >= bd[0] * bd[1] * bd[2]) return;
  uint32_t bx = i % bd[0], by = i / bd[0] % bd[1], bz = i / (bd[0] * bd[1]);
  float mn = INFINITY, mx = -INFINITY;
  for (uint32_t z = 2 * bz; z < 2 * bz + 2 && z < cells.z; z++)
    for (uint32_t y = 2 * by; y < 2 * by + 2 && y < cells.y; y++)
      for (uint32_t x = 2 * bx; x < 2 * bx + 2 && x < cells.x; x++) {
        ir_brick_range c = cell_ranges[x + cells.x * ((size_t)y + cells.y * (size_t)z)];
        mn = c.min < mn ? c.min : mn;
        mx = c.max > mx ? c.max : mx;
      }
  ir_brick_range *r = &ranges[ir_bvh_index(&L, 0, bx, by, bz)];
  r->min = mn;
  r->max = mx;
}

static cudaError_t launch_ranges(const volume_slot *s) {
  const ir_gpu_volumes *v = s->owner;
  int3 dims = make_int3((int)v->dims[0], (int)v->dims[1], (int)v->dims[2]);
  uint3 cells = make_uint3(v->cells[0], v->cells[1], v->cells[2]);
  size_t total = (size_t)cells.x * cells.y * cells.z;
  unsigned grid = (unsigned)((total + RANGE_BLOCK - 1) / RANGE_BLOCK);
  switch (v->type) {
  case IR_VOXEL_UINT8: cell_ranges_kernel<uint8_t><<<grid, RANGE_BLOCK, 0, s->stream>>>(s->tex_value, dims, cells, s->d_cell_ranges); break;
  case IR_VOXEL_UINT16: cell_ranges_kernel<uint16_t><<<grid, RANGE_BLOCK, 0, s->stream>>>(s->tex_value, dims, cells, s->d_cell_ranges); break;
  case IR_VOXEL_INT16: cell_ranges_kernel<int16_t><<<grid, RANGE_BLOCK, 0, s->stream>>>(s->tex_value, dims, cells, s->d_cell_ranges); break;
  default: cell_ranges_kernel<float><<<grid, RANGE_BLOCK, 0, s->stream>>>(s->tex_value, dims, cells, s->d_cell_ranges); break;
  }
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  const uint32_t *bd = v->layout.dims[0];
  uint32_t bricks = bd[0] * bd[1] * bd[2];
  brick_ranges_kernel<<<(bricks + RANGE_BLOCK - 1) / RANGE_BLOCK, RANGE_BLOCK, 0, s->stream>>>(v->layout, cells,
                                                                                            s->d_cell_ranges, s->d_ranges);
  return cudaGetLastError();
}

/* ---- Filling and using slots -------------------------------------------------------------------- */
ir_status ir_gpu_slot_begin(ir_renderer *r, int slot, ir_volume_sink *sink, char err[IR_ERR_LEN]) {
  ir_gpu_volumes *v = r->gpu->volumes;
  volume_slot *s = &v->slots[slot];
  /* Frames that drew this slot before must be done with it. */
  if (s->released_pending) {
    IR_CUDA(cudaEventSynchronize(s->ev_released));
    s->released_pending = false;
  }
  s->filled = false;
  sink->piece = slot_piece;
  sink->ctx = s;
  return IR_OK;
}

ir_status ir_gpu_slot_end(ir_renderer *r, int slot, const ir_volume *volume, bool streamed, char err[IR_ERR_LEN]) {
  ir_gpu_volumes *v = r->gpu->volumes;
  volume_slot *s = &v->slots[slot];
  IR_CUDA(cudaSetDevice(v->device));
  IR_CUDA(cudaEventRecord(s->ev_read, s->stream));
  if (!streamed) {
    ir_status st = upload_host(s, volume, err);
    if (st != IR_OK) return st;
  }
  /* Every copy queued so far (some of them for other slots or other users of the pool: harmless)
   * before the ranges. */
  ir_status st = ir_xfer_wait_all(v->pool, s->stream, err);
  if (st != IR_OK) return st;
  IR_CUDA(cudaEventRecord(s->ev_copied, s->stream));
  IR_CUDA(launch_ranges(s));
  IR_CUDA(cudaEventRecord(s->ev_ready, s->stream));
  s->filled = true;
  return IR_OK;
}

ir_status ir_gpu_use_slot(ir_renderer *r, int slot, char err[IR_ERR_LEN]) {
  struct ir_gpu_state *g = r->gpu;
  ir_gpu_volumes *v = g->volumes;
  volume_slot *s = &v->slots[slot];
  if (!s->filled) {
    snprintf(err, IR_ERR_LEN, "slot %d was never filled on the GPU (ir_renderer_slot_end)", slot);
    return IR_ERR_INPUT;
  }
  IR_CUDA(cudaStreamWaitEvent(g->stream, s->ev_ready, 0));
  g->ranges_version++; /* before the copies: a failed one must not leave the old map trusted */
  const uint32_t *bd = v->layout.dims[0];
  IR_CUDA(cudaMemcpyAsync(g->d_ranges, s->d_ranges, (size_t)bd[0] * bd[1] * bd[2] * sizeof(ir_brick_range),
                          cudaMemcpyDeviceToDevice, g->stream));
  IR_CUDA(cudaMemcpyAsync(g->d_cell_ranges, s->d_cell_ranges,
                          (size_t)v->cells[0] * v->cells[1] * v->cells[2] * sizeof(ir_brick_range),
                          cudaMemcpyDeviceToDevice, g->stream));
  if (v->in_use >= 0 && v->in_use != slot) {
    volume_slot *old = &v->slots[v->in_use];
    IR_CUDA(cudaEventRecord(old->ev_released, g->stream));
    old->released_pending = true;
  }
  v->in_use = slot;
  g->tex = s->tex;
  g->tex_point = s->tex_point;
  r->view.tex = (unsigned long long)s->tex;
  r->view.tex_point = (unsigned long long)s->tex_point;
  return IR_OK;
}

ir_status ir_gpu_slot_times(ir_renderer *r, int slot, ir_slot_times *out, char err[IR_ERR_LEN]) {
  volume_slot *s = &r->gpu->volumes->slots[slot];
  if (!s->filled) return IR_OK;
  IR_CUDA(cudaEventSynchronize(s->ev_ready));
  float upload = 0, ranges = 0;
  IR_CUDA(cudaEventElapsedTime(&upload, s->ev_read, s->ev_copied));
  IR_CUDA(cudaEventElapsedTime(&ranges, s->ev_copied, s->ev_ready));
  out->upload_ms = upload;
  out->ranges_ms = ranges;
  return IR_OK;
}

ir_status ir_gpu_read_ranges(ir_renderer *r, ir_brick_range *bricks, ir_brick_range *cells, char err[IR_ERR_LEN]) {
  struct ir_gpu_state *g = r->gpu;
  const uint32_t *bd = r->layout.dims[0];
  IR_CUDA(cudaMemcpyAsync(bricks, g->d_ranges, (size_t)bd[0] * bd[1] * bd[2] * sizeof(ir_brick_range),
                          cudaMemcpyDeviceToHost, g->stream));
  IR_CUDA(cudaMemcpyAsync(cells, g->d_cell_ranges, (size_t)r->cells[0] * r->cells[1] * r->cells[2] * sizeof(ir_brick_range),
                          cudaMemcpyDeviceToHost, g->stream));
  IR_CUDA(cudaStreamSynchronize(g->stream));
  return IR_OK;
}

/* ---- Statistics ------------------------------------------------------------------------------------ */
/* Stored values as data/stats.c reads them (int16 as it is). */
template <typename T> static __device__ __forceinline__ double stat_value(cudaTextureObject_t t, int x, int y, int z) {
  return (double)tex3D<T>(t, (float)x + 0.5f, (float)y + 0.5f, (float)z + 0.5f);
}

typedef struct pass1_partial {
  double sum, lo, hi;
  unsigned long long finite;
} pass1_partial;

static __device__ double warp_sum(double v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

/* Per block: the sum, finite count, minimum and maximum of its share of the voxels. */
template <typename T>
static __global__ void pass1_kernel(cudaTextureObject_t tex, int3 dims, pass1_partial *partials) {
  size_t n = (size_t)dims.x * dims.y * dims.z, stride = (size_t)gridDim.x * blockDim.x;
  double sum = 0, lo = INFINITY, hi = -INFINITY, count = 0;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    int x = (int)(i % dims.x), y = (int)(i / dims.x % dims.y), z = (int)(i / ((size_t)dims.x * dims.y));
    double value = stat_value<T>(tex, x, y, z);
    if (!isfinite(value)) continue;
    sum += value;
    count += 1;
    lo = value < lo ? value : lo;
    hi = value > hi ? value : hi;
  }
  __shared__ double s_sum[STATS_BLOCK / 32], s_count[STATS_BLOCK / 32], s_lo[STATS_BLOCK / 32], s_hi[STATS_BLOCK / 32];
  sum = warp_sum(sum);
  count = warp_sum(count);
  for (int o = 16; o > 0; o /= 2) {
    double a = __shfl_down_sync(0xffffffffu, lo, o), b = __shfl_down_sync(0xffffffffu, hi, o);
    lo = a < lo ? a : lo;
    hi = b > hi ? b : hi;
  }
  int warp = threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) {
    s_sum[warp] = sum;
    s_count[warp] = count;
    s_lo[warp] = lo;
    s_hi[warp] = hi;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    pass1_partial p = {0.0, INFINITY, -INFINITY, 0};
    double c = 0;
    for (int w = 0; w < STATS_BLOCK / 32; w++) {
      p.sum += s_sum[w];
      c += s_count[w];
      p.lo = s_lo[w] < p.lo ? s_lo[w] : p.lo;
      p.hi = s_hi[w] > p.hi ? s_hi[w] : p.hi;
    }
    p.finite = (unsigned long long)c;
    partials[blockIdx.x] = p;
  }
}

typedef struct pass2_totals {
  unsigned long long coarse[IR_HISTOGRAM_BINS];
  unsigned long long fine[IR_STATS_FINE_BINS];
  unsigned long long grad_count[IR_STATS_FINE_BINS];
  double grad_sum[IR_STATS_FINE_BINS];
} pass2_totals;

/* data/stats.c's bin_of, in the same double arithmetic (no fused multiply-adds in this module). */
static __device__ __forceinline__ int stat_bin(double value, double lo, double hi, int bins) {
  if (hi <= lo) return 0;
  int b = (int)((value - lo) / (hi - lo) * bins);
  return b < 0 ? 0 : b >= bins ? bins - 1 : b;
}

/* Rows handed to blocks in turn; a block's histograms in shared memory, merged at its end. The
 * 8-bit value counts fit in shared memory too; 16-bit ones go to global memory directly. */
template <typename T>
static __global__ void pass2_kernel(cudaTextureObject_t tex, int3 dims, double lo, double hi, size_t grad_stride,
                                    bool integer, pass2_totals *totals, unsigned long long *int_counts) {
  __shared__ unsigned s_coarse[IR_HISTOGRAM_BINS], s_fine[IR_STATS_FINE_BINS], s_gc[IR_STATS_FINE_BINS], s_int[256];
  __shared__ double s_gs[IR_STATS_FINE_BINS];
  for (int k = threadIdx.x; k < IR_STATS_FINE_BINS; k += blockDim.x) {
    s_fine[k] = s_gc[k] = s_int[k] = 0;
    s_gs[k] = 0.0;
    if (k < IR_HISTOGRAM_BINS) s_coarse[k] = 0;
  }
  __syncthreads();
  bool bytes = sizeof(T) == 1;
  size_t rows = (size_t)dims.y * dims.z;
  for (size_t row = blockIdx.x; row < rows; row += gridDim.x) {
    int y = (int)(row % dims.y), z = (int)(row / dims.y);
    bool grad_row = y > 0 && z > 0 && y + 1 < dims.y && z + 1 < dims.z && row % grad_stride == 0;
    for (int x = threadIdx.x; x < dims.x; x += blockDim.x) {
      double value = stat_value<T>(tex, x, y, z);
      if (!isfinite(value)) continue;
      atomicAdd(&s_coarse[stat_bin(value, lo, hi, IR_HISTOGRAM_BINS)], 1u);
      int fine = stat_bin(value, lo, hi, IR_STATS_FINE_BINS);
      atomicAdd(&s_fine[fine], 1u);
      if (integer) {
        int key = (int)value + (sizeof(T) == 2 && (T)-1 < 0 ? 32768 : 0);
        if (bytes) atomicAdd(&s_int[key], 1u);
        else atomicAdd(&int_counts[key], 1ull);
      }
      if (!grad_row || x == 0 || x + 1 >= dims.x) continue;
      double gx = stat_value<T>(tex, x + 1, y, z) - stat_value<T>(tex, x - 1, y, z);
      double gy = stat_value<T>(tex, x, y + 1, z) - stat_value<T>(tex, x, y - 1, z);
      double gz = stat_value<T>(tex, x, y, z + 1) - stat_value<T>(tex, x, y, z - 1);
      double g = 0.5 * sqrt(gx * gx + gy * gy + gz * gz);
      if (isfinite(g)) {
        atomicAdd(&s_gs[fine], g);
        atomicAdd(&s_gc[fine], 1u);
      }
    }
  }
  __syncthreads();
  for (int k = threadIdx.x; k < IR_STATS_FINE_BINS; k += blockDim.x) {
    if (s_fine[k]) atomicAdd(&totals->fine[k], (unsigned long long)s_fine[k]);
    if (s_gc[k]) atomicAdd(&totals->grad_count[k], (unsigned long long)s_gc[k]);
    if (s_gs[k] != 0.0) atomicAdd(&totals->grad_sum[k], s_gs[k]);
    if (bytes && integer && s_int[k]) atomicAdd(&int_counts[k], (unsigned long long)s_int[k]);
    if (k < IR_HISTOGRAM_BINS && s_coarse[k]) atomicAdd(&totals->coarse[k], (unsigned long long)s_coarse[k]);
  }
}

template <typename T>
static cudaError_t launch_stats(cudaTextureObject_t tex, int3 dims, unsigned blocks, pass1_partial *partials,
                                cudaStream_t stream) {
  pass1_kernel<T><<<blocks, STATS_BLOCK, 0, stream>>>(tex, dims, partials);
  return cudaGetLastError();
}

template <typename T>
static cudaError_t launch_hist(cudaTextureObject_t tex, int3 dims, unsigned blocks, double lo, double hi,
                               size_t grad_stride, bool integer, pass2_totals *totals, unsigned long long *ints,
                               cudaStream_t stream) {
  pass2_kernel<T><<<blocks, STATS_BLOCK, 0, stream>>>(tex, dims, lo, hi, grad_stride, integer, totals, ints);
  return cudaGetLastError();
}

/* Device scratch of one statistics run. */
typedef struct stats_scratch {
  pass1_partial *partials;
  pass2_totals *totals;
  unsigned long long *ints;
} stats_scratch;

static void stats_scratch_free(stats_scratch *s) {
  cudaFree(s->partials);
  cudaFree(s->totals);
  cudaFree(s->ints);
}

static ir_status run_stats(ir_renderer *r, stats_scratch *sc, ir_volume_counts *c, size_t *int_counts,
                           char err[IR_ERR_LEN]) {
  struct ir_gpu_state *g = r->gpu;
  ir_gpu_volumes *v = g->volumes;
  const volume_slot *s = &v->slots[v->in_use];
  int sms = 0;
  IR_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, v->device));
  unsigned blocks = (unsigned)(sms > 0 ? 4 * sms : 128);
  int3 dims = make_int3((int)v->dims[0], (int)v->dims[1], (int)v->dims[2]);
  bool integer = v->type != IR_VOXEL_FLOAT32;
  IR_CUDA(cudaMalloc(&sc->partials, blocks * sizeof(pass1_partial)));
  IR_CUDA(cudaMalloc(&sc->totals, sizeof(pass2_totals)));
  IR_CUDA(cudaMalloc(&sc->ints, 65536 * sizeof(unsigned long long)));
  IR_CUDA(cudaMemsetAsync(sc->totals, 0, sizeof(pass2_totals), g->stream));
  IR_CUDA(cudaMemsetAsync(sc->ints, 0, 65536 * sizeof(unsigned long long), g->stream));
  switch (v->type) {
  case IR_VOXEL_UINT8: IR_CUDA(launch_stats<uint8_t>(s->tex_value, dims, blocks, sc->partials, g->stream)); break;
  case IR_VOXEL_UINT16: IR_CUDA(launch_stats<uint16_t>(s->tex_value, dims, blocks, sc->partials, g->stream)); break;
  case IR_VOXEL_INT16: IR_CUDA(launch_stats<int16_t>(s->tex_value, dims, blocks, sc->partials, g->stream)); break;
  default: IR_CUDA(launch_stats<float>(s->tex_value, dims, blocks, sc->partials, g->stream)); break;
  }
  pass1_partial *host = (pass1_partial *)malloc(blocks * sizeof *host);
  if (!host) {
    snprintf(err, IR_ERR_LEN, "out of host memory for the statistics");
    return IR_ERR_RUNTIME;
  }
  cudaError_t e = cudaMemcpyAsync(host, sc->partials, blocks * sizeof *host, cudaMemcpyDeviceToHost, g->stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(g->stream);
  c->min = INFINITY;
  c->max = -INFINITY;
  for (unsigned b = 0; b < blocks && e == cudaSuccess; b++) {
    c->sum += host[b].sum;
    c->finite += host[b].finite;
    c->min = host[b].lo < c->min ? host[b].lo : c->min;
    c->max = host[b].hi > c->max ? host[b].hi : c->max;
  }
  free(host);
  IR_CUDA(e);
  c->nonfinite = v->dims[0] * v->dims[1] * v->dims[2] - c->finite;
  if (c->finite == 0) return IR_OK;
  size_t stride = ir_volume_grad_stride(v->dims);
  switch (v->type) {
  case IR_VOXEL_UINT8:
    IR_CUDA(launch_hist<uint8_t>(s->tex_value, dims, blocks, c->min, c->max, stride, integer, sc->totals, sc->ints, g->stream));
    break;
  case IR_VOXEL_UINT16:
    IR_CUDA(launch_hist<uint16_t>(s->tex_value, dims, blocks, c->min, c->max, stride, integer, sc->totals, sc->ints, g->stream));
    break;
  case IR_VOXEL_INT16:
    IR_CUDA(launch_hist<int16_t>(s->tex_value, dims, blocks, c->min, c->max, stride, integer, sc->totals, sc->ints, g->stream));
    break;
  default:
    IR_CUDA(launch_hist<float>(s->tex_value, dims, blocks, c->min, c->max, stride, integer, sc->totals, sc->ints, g->stream));
    break;
  }
  pass2_totals totals;
  IR_CUDA(cudaMemcpyAsync(&totals, sc->totals, sizeof totals, cudaMemcpyDeviceToHost, g->stream));
  unsigned long long *ints = (unsigned long long *)malloc(65536 * sizeof *ints);
  if (!ints) {
    snprintf(err, IR_ERR_LEN, "out of host memory for the statistics");
    return IR_ERR_RUNTIME;
  }
  e = cudaMemcpyAsync(ints, sc->ints, 65536 * sizeof *ints, cudaMemcpyDeviceToHost, g->stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(g->stream);
  for (int k = 0; k < IR_HISTOGRAM_BINS; k++) c->coarse[k] = (size_t)totals.coarse[k];
  for (int k = 0; k < IR_STATS_FINE_BINS; k++) {
    c->fine[k] = (size_t)totals.fine[k];
    c->grad_count[k] = (size_t)totals.grad_count[k];
    c->grad_sum[k] = totals.grad_sum[k];
  }
  for (int k = 0; k < 65536 && integer; k++) int_counts[k] = (size_t)ints[k];
  c->integer_counts = integer ? int_counts : NULL;
  free(ints);
  IR_CUDA(e);
  return IR_OK;
}

ir_status ir_gpu_volume_stats(ir_renderer *r, ir_volume_stats *out, char err[IR_ERR_LEN]) {
  ir_volume_counts c;
  memset(&c, 0, sizeof c);
  size_t *int_counts = (size_t *)calloc(65536, sizeof *int_counts);
  if (!int_counts) {
    snprintf(err, IR_ERR_LEN, "out of host memory for the statistics");
    return IR_ERR_RUNTIME;
  }
  stats_scratch sc;
  memset(&sc, 0, sizeof sc);
  ir_status st = run_stats(r, &sc, &c, int_counts, err);
  stats_scratch_free(&sc);
  if (st == IR_OK) ir_volume_stats_from_counts(r->volume, &c, out);
  free(int_counts);
  return st;
}
