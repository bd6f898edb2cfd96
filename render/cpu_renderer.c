/* The CPU reference renderer: the per-frame BVH update on the host, then every pixel through the
 * same per-ray code the GPU runs (trace.cuh) on all cores: ir_trace_pixel (BVH traversal) for
 * the paper's pipeline, ir_trace_pixel_steps_as (the brick walk in steps) for the persistent
 * one, ir_trace_pixel_runs (brick walk) for the others. All draw the same image; the round
 * counts follow the pipeline asked for.
 *
 * It exists to check the GPU images and to let inkray run without a GPU; it is not tuned.
 * Threads take bands of rows from a shared counter; each counts rays per round locally and
 * adds them up at the end, giving the same ray statistics the GPU pipeline reports.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/render_internal.h"

_Static_assert(IR_MAX_ITERATIONS == 64, "ir_round_counts in trace.cuh holds 64 rounds");

enum { ROWS_PER_TASK = 4 };

typedef struct frame_job {
  const ir_trace_params *p;
  bool bvh;         /* the paper's pipeline: BVH traversal */
  int step_batches; /* the persistent pipeline: its rays' work in steps of this many batches; 0: in one */
  uint32_t *pixels;
  float *depth;
  int width;
  int x0, y0, x1, y1; /* the traced pixels (ir_cam_basis window) */
  atomic_int next_row;
  pthread_mutex_t lock;
  ir_round_counts total;
} frame_job;

static void add_counts(ir_round_counts *to, const ir_round_counts *from) {
  for (int i = 0; i < 64; i++) {
    to->traverse[i] += from->traverse[i];
    to->intersect[i] += from->intersect[i];
  }
  if (from->rounds > to->rounds) to->rounds = from->rounds;
  to->generated += from->generated;
  to->hit += from->hit;
}

static void *frame_worker(void *arg) {
  frame_job *job = arg;
  ir_round_counts counts;
  memset(&counts, 0, sizeof counts);
  uint32_t stack[IR_BVH_MAX_LEVELS];
  for (;;) {
    int row0 = job->y0 + atomic_fetch_add(&job->next_row, ROWS_PER_TASK);
    if (row0 >= job->y1) break;
    int row1 = row0 + ROWS_PER_TASK < job->y1 ? row0 + ROWS_PER_TASK : job->y1;
    for (int y = row0; y < row1; y++)
      for (int x = job->x0; x < job->x1; x++) {
        uint32_t pixel = (uint32_t)y * (uint32_t)job->width + (uint32_t)x;
        float *depth = &job->depth[pixel];
        job->pixels[pixel] = job->bvh ? ir_trace_pixel(job->p, pixel, stack, &counts, depth)
                             : job->step_batches
                                 ? ir_trace_pixel_steps_as(job->p, pixel, job->step_batches, &counts, depth,
                                                           ir_trace_mode(job->p))
                                 : ir_trace_pixel_runs(job->p, pixel, &counts, depth);
      }
  }
  pthread_mutex_lock(&job->lock);
  add_counts(&job->total, &counts);
  pthread_mutex_unlock(&job->lock);
  return NULL;
}

/* Pixels outside the frame's window: background, depth +INF, as a ray that meets nothing. */
static void fill_outside(const ir_cam_basis *c, uint32_t *pixels, float *depth) {
  for (int y = 0; y < c->height; y++) {
    bool row_in = y >= c->win_y0 && y < c->win_y0 + c->win_h && c->win_w > 0;
    for (int x = 0; x < c->width; x++) {
      if (row_in && x >= c->win_x0 && x < c->win_x0 + c->win_w) {
        x = c->win_x0 + c->win_w - 1;
        continue;
      }
      size_t i = (size_t)y * (size_t)c->width + (size_t)x;
      pixels[i] = IR_BACKGROUND_RGBA;
      depth[i] = INFINITY;
    }
  }
}

static ir_status ensure_buffers(ir_renderer *r, size_t image_bytes, char err[IR_ERR_LEN]) {
  if (!r->nodes) {
    r->nodes = malloc((size_t)r->layout.node_count * sizeof *r->nodes);
    if (!r->nodes) {
      snprintf(err, IR_ERR_LEN, "out of host memory for %u BVH nodes", r->layout.node_count);
      return IR_ERR_RUNTIME;
    }
  }
  if (image_bytes > r->image_capacity) {
    /* Depth has one float per pixel: as many bytes as the RGBA8 image. */
    uint8_t *grown = realloc(r->image, image_bytes);
    if (grown) r->image = grown;
    float *grown_depth = grown ? realloc(r->depth, image_bytes) : NULL;
    if (grown_depth) r->depth = grown_depth;
    if (!grown || !grown_depth) {
      snprintf(err, IR_ERR_LEN, "out of host memory for a %zu-byte image", image_bytes);
      return IR_ERR_RUNTIME;
    }
    r->image_capacity = image_bytes;
  }
  return IR_OK;
}

/* The walk's skip distances for this frame's cells and isovalues (skip.cuh), made again only when
 * the isovalues, the cells or the ranges (a slot switch) changed; *rebuilt says whether. */
static ir_status skip_map(ir_renderer *r, ir_trace_params *p, bool *rebuilt, char err[IR_ERR_LEN]) {
  size_t n = (size_t)p->cells[0] * p->cells[1] * p->cells[2];
  bool same = r->skip_made && r->skip_ranges == p->ranges && r->skip_ranges_version == r->ranges_version &&
              !memcmp(r->skip_cells, p->cells, sizeof r->skip_cells) && ir_iso_set_same(&r->skip_iso, &p->iso);
  *rebuilt = !same;
  if (!same) {
    r->skip_made = false;
    if (n > r->skip_capacity) {
      free(r->skip);
      free(r->skip_tmp);
      r->skip = malloc(n);
      r->skip_tmp = malloc(n);
      r->skip_capacity = r->skip && r->skip_tmp ? n : 0;
      if (!r->skip_capacity) {
        snprintf(err, IR_ERR_LEN, "out of host memory for the walk's %zu skip distances", n);
        return IR_ERR_RUNTIME;
      }
    }
    double t0 = ir_now_ms();
    ir_skip_map_host(p->ranges, p->cells, &p->iso, r->skip, r->skip_tmp);
    r->skip_ms = ir_now_ms() - t0;
    r->skip_made = true;
    r->skip_ranges = p->ranges;
    r->skip_ranges_version = r->ranges_version;
    memcpy(r->skip_cells, p->cells, sizeof r->skip_cells);
    r->skip_iso = p->iso;
  }
  p->skip = r->skip;
  return IR_OK;
}

/* The running mean of accumulated frames (ir_frame_desc.accumulate), as the GPU computes it. */
static ir_status accumulate(ir_renderer *r, const ir_frame_desc *f, char err[IR_ERR_LEN]) {
  size_t n = (size_t)f->width * (size_t)f->height;
  if (!f->accumulate) {
    r->accum_count = 0;
    return IR_OK;
  }
  if (n > r->accum_pixels) {
    float *grown = realloc(r->accum, n * 4 * sizeof(float));
    if (!grown) {
      snprintf(err, IR_ERR_LEN, "out of host memory for a %zu-pixel accumulation buffer", n);
      return IR_ERR_RUNTIME;
    }
    r->accum = grown;
    r->accum_pixels = n;
    r->accum_count = 0;
  }
  if (f->sample_frame == 0 || f->width != r->accum_width || f->height != r->accum_height) r->accum_count = 0;
  bool add = r->accum_count < IR_ACCUMULATE_MAX, first = r->accum_count == 0;
  if (add) r->accum_count++;
  uint32_t *px = (uint32_t *)(void *)r->image;
  for (size_t i = 0; i < n; i++) px[i] = ir_accumulate_pixel(px[i], r->accum + 4 * i, add, first, (float)r->accum_count);
  r->accum_width = f->width;
  r->accum_height = f->height;
  return IR_OK;
}

ir_status ir_cpu_render_frame(ir_renderer *r, const ir_frame_desc *f, ir_frame_stats *stats, char err[IR_ERR_LEN]) {
  double t0 = ir_now_ms();
  size_t image_bytes = (size_t)f->width * (size_t)f->height * 4;
  ir_status st = ensure_buffers(r, image_bytes, err);
  if (st != IR_OK) return st;

  ir_trace_params p;
  bool skip_rebuilt = false;
  ir_trace_params_fill(r, f, &p);
  ir_bvh_update_host(&r->layout, r->ranges, &p.iso, r->nodes);
  double t1 = ir_now_ms();

  p.nodes = r->nodes;
  p.root = ir_bvh_root_or_none(&r->nodes[ir_bvh_root(&r->layout)], ir_bvh_root(&r->layout));
  /* The brick walk tests its cells' ranges, as the single and persistent kernels do; the paper's
   * pipeline walks the tree. */
  if (f->pipeline != IR_PIPELINE_PAPER) {
    ir_trace_params_walk(r, f, r->ranges, r->cell_ranges, &p);
    if ((st = skip_map(r, &p, &skip_rebuilt, err)) != IR_OK) return st;
  }

  frame_job job = {.p = &p, .bvh = f->pipeline == IR_PIPELINE_PAPER,
                   .step_batches = f->pipeline == IR_PIPELINE_PERSISTENT ? ir_frame_step_batches(f) : 0,
                   .pixels = (uint32_t *)(void *)r->image, .depth = r->depth, .width = f->width,
                   .x0 = p.cam.win_x0, .y0 = p.cam.win_y0, .x1 = p.cam.win_x0 + p.cam.win_w,
                   .y1 = p.cam.win_y0 + p.cam.win_h};
  if (f->window_on) fill_outside(&p.cam, job.pixels, job.depth);
  atomic_init(&job.next_row, 0);
  pthread_mutex_init(&job.lock, NULL);
  int threads = ir_cpu_thread_count(r->threads);
  pthread_t tids[256];
  int started = 0;
  for (; started < threads - 1; started++)
    if (pthread_create(&tids[started], NULL, frame_worker, &job) != 0) break;
  frame_worker(&job);
  for (int i = 0; i < started; i++) pthread_join(tids[i], NULL);
  pthread_mutex_destroy(&job.lock);
  r->width = f->width;
  r->height = f->height;
  if ((st = accumulate(r, f, err)) != IR_OK) return st;

  if (stats) {
    memset(stats, 0, sizeof *stats);
    stats->frame_ms = ir_now_ms() - t0;
    stats->skip_ms = r->skip_ms;
    stats->skip_rebuilt = skip_rebuilt;
    /* The CPU traces each pixel start to finish, so only the BVH update is a separate stage. */
    if (f->stage_timing) stats->bvh_update_ms = t1 - t0;
    stats->iterations = job.total.rounds;
    stats->rays_generated = job.total.generated;
    stats->rays_hit = job.total.hit;
    for (int i = 0; i < IR_MAX_ITERATIONS; i++) {
      stats->traverse_rays[i] = job.total.traverse[i];
      stats->intersect_rays[i] = job.total.intersect[i];
    }
  }
  return IR_OK;
}
