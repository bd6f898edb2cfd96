/* Host helpers of the extract module: a parallel loop on pthreads, the grid description, and the
 * brick value ranges the CPU reference skips empty bricks with. (The module stands alone in the
 * installed package, so it keeps its own small parallel loop instead of linking data/.) */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "extract/extract_internal.h"

double ir_mc_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

int ir_mc_thread_count(int requested) {
  if (requested > 0) return requested > 256 ? 256 : requested;
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : (n > 256 ? 256 : (int)n);
}

typedef struct parallel_job {
  size_t n;
  atomic_size_t next;
  void (*fn)(void *ctx, size_t item);
  void *ctx;
} parallel_job;

static void *parallel_worker(void *arg) {
  parallel_job *job = arg;
  for (size_t i; (i = atomic_fetch_add(&job->next, 1)) < job->n;) job->fn(job->ctx, i);
  return NULL;
}

void ir_mc_parallel(size_t n, int threads, void (*fn)(void *ctx, size_t item), void *ctx) {
  parallel_job job = {.n = n, .fn = fn, .ctx = ctx};
  atomic_init(&job.next, 0);
  if (threads > 256) threads = 256;
  if ((size_t)threads > n) threads = n > 0 ? (int)n : 1;
  pthread_t tids[256];
  int started = 0;
  for (; started < threads - 1; started++)
    if (pthread_create(&tids[started], NULL, parallel_worker, &job) != 0) break;
  parallel_worker(&job); /* the calling thread works too: a failed pthread_create only slows down */
  for (int i = 0; i < started; i++) pthread_join(tids[i], NULL);
}

size_t ir_mc_type_size(int type) {
  switch (type) {
  case IR_VOXEL_UINT8: return 1;
  case IR_VOXEL_UINT16:
  case IR_VOXEL_INT16: return 2;
  default: return 4;
  }
}

void ir_mc_grid_of(const ir_extract_grid *in, ir_mc_grid *out) {
  bool no_spacing = in->spacing[0] == 0.0f && in->spacing[1] == 0.0f && in->spacing[2] == 0.0f;
  for (int k = 0; k < 3; k++) {
    out->dims[k] = (uint32_t)in->dims[k];
    out->bricks[k] = (uint32_t)((in->dims[k] + IR_MC_BRICK - 1) / IR_MC_BRICK);
    out->spacing[k] = no_spacing ? 1.0f : in->spacing[k];
    out->origin[k] = in->origin[k];
  }
  out->type = (int)in->type;
}

typedef struct range_job {
  const ir_mc_grid *g;
  const void *voxels;
  ir_mc_range *ranges;
  atomic_bool nonfinite;
} range_job;

/* Brick b's range covers its points and the next point along each axis: the ends of its edges
 * and the corners of its cells. */
static void brick_range(void *ctx, size_t row) {
  range_job *job = ctx;
  const ir_mc_grid *g = job->g;
  uint32_t by = (uint32_t)(row % g->bricks[1]), bz = (uint32_t)(row / g->bricks[1]);
  for (uint32_t bx = 0; bx < g->bricks[0]; bx++) {
    uint32_t b[3] = {bx, by, bz}, lo[3], hi[3];
    for (int k = 0; k < 3; k++) {
      lo[k] = b[k] * IR_MC_BRICK;
      hi[k] = lo[k] + IR_MC_BRICK;
      if (hi[k] > g->dims[k] - 1) hi[k] = g->dims[k] - 1;
    }
    float mn = INFINITY, mx = -INFINITY;
    bool nonfinite = false;
    for (uint32_t z = lo[2]; z <= hi[2]; z++)
      for (uint32_t y = lo[1]; y <= hi[1]; y++)
        for (uint32_t x = lo[0]; x <= hi[0]; x++) {
          float v = ir_mc_voxel(job->voxels, g->type, ir_mc_index(g, x, y, z));
          if (!ir_mc_finite(v)) {
            nonfinite = true;
            continue;
          }
          mn = v < mn ? v : mn;
          mx = v > mx ? v : mx;
        }
    job->ranges[ir_mc_brick_index(g, bx, by, bz)] = (ir_mc_range){mn, mx};
    if (nonfinite) atomic_store(&job->nonfinite, true);
  }
}

bool ir_mc_ranges_host(const ir_mc_grid *g, const void *voxels, ir_mc_range *ranges, int threads) {
  range_job job = {.g = g, .voxels = voxels, .ranges = ranges};
  atomic_init(&job.nonfinite, false);
  ir_mc_parallel((size_t)g->bricks[1] * g->bricks[2], ir_mc_thread_count(threads), brick_range, &job);
  return !atomic_load(&job.nonfinite);
}
