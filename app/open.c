/* Opening the volume a run draws, with its renderer (headless runs and the window share this).
 *
 * One volume on the GPU whose format reads uncompressed pieces (raw, NRRD, MetaImage, NIfTI,
 * QVis): its header first, then the renderer made from it on a thread of its own while the voxels
 * are read into host memory, and streamed to the GPU through slot 0's sink (render.h) as they
 * come (those read before the renderer was ready as soon as it is); the brick ranges and the
 * statistics are then computed on the GPU. Other formats and the CPU renderer: the volume
 * is loaded, then the renderer made from it.
 *
 * A time series: the series is opened (every step's header checked), step 0 read into slot 0
 * the same way, and a player (player.c) started to read the next steps ahead into the other
 * slots.
 *
 * Memory: one host copy of the volume (plus 4 MiB pinned staging buffers, a few per reading
 * thread); compressed data need the compressed stream's buffers besides. */
#define _DEFAULT_SOURCE /* CLOCK_BOOTTIME */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "app/app.h"

static double seconds_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Formats whose header says cheaply whether the voxels can stream (not DICOM, TIFF, VTI, which
 * are decoded whole to learn their header, and not compressed files). */
static bool header_first(const char *src) {
  static const char *const whole[] = {".gz", ".vti", ".tif", ".tiff", ".dcm", ".dicom", ".ima", NULL};
  if (strncmp(src, "builtin:", 8) == 0) return false;
  size_t n = strlen(src);
  for (int k = 0; whole[k]; k++) {
    size_t m = strlen(whole[k]);
    if (n >= m && strcmp(src + n - m, whole[k]) == 0) return false;
  }
  return true;
}

/* Environment knobs of the reads: INKRAY_IO_THREADS (1..16), INKRAY_IO (auto|buffered|direct). */
static void io_from_environment(ir_volume_desc *d) {
  long threads = 0;
  const char *env = getenv("INKRAY_IO_THREADS");
  if (env && cli_parse_int(env, 1, 16, &threads)) d->io_threads = (int)threads;
  env = getenv("INKRAY_IO");
  if (env && !ir_io_mode_parse(env, &d->io_mode))
    fprintf(stderr, "inkray: note: INKRAY_IO='%s' is not auto, buffered or direct; using auto\n", env);
}

static int fail(const char *what, ir_status st, const char *err) {
  fprintf(stderr, "inkray: %s%s\n", what, err);
  return st == IR_ERR_INPUT ? 2 : 1;
}

static int create_renderer(const app_open_desc *d, const ir_volume *v, bool later, ir_renderer **out) {
  char err[IR_ERR_LEN] = "";
  ir_renderer_desc rd = {.device = d->device, .volume = v, .cpu_threads = d->cpu_threads, .voxels_later = later};
  ir_status st = ir_renderer_create(&rd, out, err);
  if (st != IR_OK) {
    char what[64];
    snprintf(what, sizeof what, "cannot set up the %s renderer: ", ir_device_name(d->device));
    return fail(what, st, err);
  }
  return 0;
}

/* Slot 0 filled from `desc` (a volume's or a series' step 0 read), streamed when the renderer
 * takes pieces; the read into `v`. */
typedef ir_status (*read_fn)(void *ctx, const ir_volume_desc *desc, ir_volume *v, char err[IR_ERR_LEN]);

static ir_status read_step0(void *ctx, const ir_volume_desc *desc, ir_volume *v, char err[IR_ERR_LEN]) {
  return ir_series_read((ir_series *)ctx, 0, desc, v, err);
}

static int fill_slot0(app_opened *o, const ir_volume_desc *desc, read_fn read, void *ctx, ir_volume *v) {
  char err[IR_ERR_LEN] = "";
  ir_volume_sink sink;
  ir_status st = ir_renderer_slot_begin(o->renderer, 0, &sink, err);
  ir_volume_desc d = *desc;
  d.sink = &sink;
  if (st == IR_OK) st = read(ctx, &d, v, err);
  if (st != IR_OK) return fail("", st, err);
  o->read_s = seconds_now() - o->start_s;
  o->streamed = v->streamed;
  st = ir_renderer_slot_end(o->renderer, 0, v, err);
  if (st == IR_OK) st = ir_renderer_use_slot(o->renderer, 0, err);
  if (st != IR_OK) return fail("", st, err);
  return 0;
}

/* ---- The GPU's start-up beside the read -------------------------------------------------------------
 * Making the renderer (the CUDA context, the volume's array: a few hundred ms) runs on a thread of
 * its own while the read begins. Pieces read before the renderer is ready wait in a list (their
 * voxels are already in their place in host memory) and go up as soon as it is, taken by that
 * thread with helpers of its own and by the reading threads between their own pieces. The read
 * from the page cache (~20 GB/s) outruns the start-up, so the list can hold most of a big volume:
 * one thread's staging copies would upload it at a quarter of PCIe's rate. */
typedef struct early_sink {
  pthread_mutex_t lock;
  bool ready, failed;
  ir_volume_sink gpu;          /* slot 0's sink, once the renderer is ready */
  ir_volume_piece *pending;
  size_t count, capacity, next;
  const unsigned char *base;   /* the volume's voxels in host memory */
  ir_status status;
  char err[IR_ERR_LEN];
  const app_open_desc *d;
  const ir_volume *header;
  ir_renderer *renderer;
  int rc;
} early_sink;

static void early_fail(early_sink *e, ir_status st, const char *err) {
  pthread_mutex_lock(&e->lock);
  if (!e->failed) {
    e->failed = true;
    e->status = st;
    snprintf(e->err, IR_ERR_LEN, "%s", err);
  }
  pthread_mutex_unlock(&e->lock);
}

static bool take_pending(early_sink *e, ir_volume_piece *p) {
  pthread_mutex_lock(&e->lock);
  bool got = !e->failed && e->next < e->count;
  if (got) *p = e->pending[e->next++];
  pthread_mutex_unlock(&e->lock);
  return got;
}

/* Uploads waiting pieces until none is left; false after a failure. */
static bool flush_pending(early_sink *e) {
  ir_volume_piece q;
  char err[IR_ERR_LEN] = "";
  while (take_pending(e, &q)) {
    ir_status st = e->gpu.piece(e->gpu.ctx, &q, e->base + q.offset, err);
    if (st != IR_OK) {
      early_fail(e, st, err);
      return false;
    }
  }
  return true;
}

static void *flush_worker(void *arg) {
  flush_pending((early_sink *)arg);
  return NULL;
}

/* The waiting pieces uploaded on as many threads as there are cores (16 at most, one per two
 * pieces), the caller's among them. */
static void flush_pending_parallel(early_sink *e) {
  enum { MAX_FLUSH_THREADS = 16 };
  pthread_mutex_lock(&e->lock);
  size_t left = e->count - e->next;
  pthread_mutex_unlock(&e->lock);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  size_t threads = cores < 1 ? 1 : cores > MAX_FLUSH_THREADS ? MAX_FLUSH_THREADS : (size_t)cores;
  if (threads > left / 2) threads = left / 2 ? left / 2 : 1;
  pthread_t helpers[MAX_FLUSH_THREADS];
  size_t started = 0;
  for (size_t k = 1; k < threads; k++)
    if (pthread_create(&helpers[started], NULL, flush_worker, e) == 0) started++;
  flush_pending(e);
  for (size_t k = 0; k < started; k++) pthread_join(helpers[k], NULL);
}

static ir_status early_piece(void *ctx, const ir_volume_piece *p, const void *voxels, char err[IR_ERR_LEN]) {
  early_sink *e = ctx;
  pthread_mutex_lock(&e->lock);
  if (!e->base) e->base = (const unsigned char *)voxels - p->offset;
  bool ready = e->ready, failed = e->failed;
  if (!ready && !failed) {
    if (e->count == e->capacity) {
      size_t capacity = e->capacity ? 2 * e->capacity : 256;
      ir_volume_piece *grown = realloc(e->pending, capacity * sizeof *grown);
      if (grown) e->pending = grown, e->capacity = capacity;
    }
    if (e->count < e->capacity) e->pending[e->count++] = *p;
    else e->failed = true, e->status = IR_ERR_RUNTIME, snprintf(e->err, IR_ERR_LEN, "out of memory listing pieces");
    failed = e->failed;
  }
  pthread_mutex_unlock(&e->lock);
  if (!failed && ready && flush_pending(e)) return e->gpu.piece(e->gpu.ctx, p, voxels, err);
  if (!failed && !ready) return IR_OK;
  pthread_mutex_lock(&e->lock);
  snprintf(err, IR_ERR_LEN, "%s", e->err);
  ir_status st = e->status;
  pthread_mutex_unlock(&e->lock);
  return st;
}

static void *start_gpu(void *arg) {
  early_sink *e = arg;
  e->rc = create_renderer(e->d, e->header, true, &e->renderer);
  char err[IR_ERR_LEN] = "the GPU renderer could not be set up (above)";
  ir_volume_sink sink = {0};
  ir_status st = e->rc ? IR_ERR_RUNTIME : ir_renderer_slot_begin(e->renderer, 0, &sink, err);
  if (st != IR_OK) {
    early_fail(e, st, err);
    return NULL;
  }
  pthread_mutex_lock(&e->lock);
  e->gpu = sink;
  e->ready = true;
  pthread_mutex_unlock(&e->lock);
  flush_pending_parallel(e);
  return NULL;
}

static int stream_while_starting(const app_open_desc *d, const ir_volume_desc *desc, const ir_volume *header,
                                 app_opened *o) {
  early_sink e;
  memset(&e, 0, sizeof e);
  pthread_mutex_init(&e.lock, NULL);
  e.d = d;
  e.header = header;
  pthread_t thread;
  bool started = pthread_create(&thread, NULL, start_gpu, &e) == 0;
  if (!started) start_gpu(&e); /* no thread: the start-up first, then the read */
  ir_volume_sink sink = {early_piece, &e};
  ir_volume_desc read = *desc;
  read.sink = &sink;
  char err[IR_ERR_LEN] = "";
  ir_status st = ir_volume_load(&read, &o->volume, err);
  if (started) pthread_join(thread, NULL);
  o->renderer = e.renderer;
  int rc = e.rc;
  if (rc == 0 && st != IR_OK) rc = fail("", st, err);
  if (rc == 0 && e.failed) rc = fail("", e.status, e.err);
  if (rc == 0) flush_pending_parallel(&e); /* pieces the readers listed after the thread's last look */
  if (rc == 0 && e.failed) rc = fail("", e.status, e.err);
  free(e.pending);
  pthread_mutex_destroy(&e.lock);
  if (rc) return rc;
  o->read_s = seconds_now() - o->start_s;
  o->streamed = o->volume.streamed;
  st = ir_renderer_slot_end(o->renderer, 0, &o->volume, err);
  if (st == IR_OK) st = ir_renderer_use_slot(o->renderer, 0, err);
  return st == IR_OK ? 0 : fail("", st, err);
}

static int open_series(const app_open_desc *d, ir_volume_desc *desc, app_opened *o) {
  char err[IR_ERR_LEN] = "";
  ir_status st = ir_series_open(desc, &o->series, err);
  if (st != IR_OK) return fail("", st, err);
  const ir_volume *header = ir_series_header(o->series);
  if (header->note[0]) fprintf(stderr, "inkray: %s: %s\n", header->name, header->note);
  int rc = create_renderer(d, header, true, &o->renderer);
  if (rc) return rc;
  rc = app_player_create(o->series, o->renderer, desc, &o->player);
  if (rc) return rc;
  rc = fill_slot0(o, desc, read_step0, o->series, app_player_slot_volume(o->player, 0));
  if (rc) return rc;
  app_player_adopt_step0(o->player);
  o->volume = *app_player_slot_volume(o->player, 0);
  o->volume.voxels = NULL; /* a view: the player owns the voxels */
  o->bytes = app_player_slot_volume(o->player, 0)->bytes;
  return app_player_start(o->player);
}

/* --level auto on the GPU: the finest level that takes at most half the GPU's free memory (the
 * renderer's bricks, rays and frames take the rest), divided among the slots a time series keeps
 * there (three). The data module also keeps it within half the host's available memory, which is
 * the whole budget on the CPU device. */
static void level_budget(const app_open_desc *d, ir_volume_desc *desc, bool series) {
  if (desc->level != IR_LEVEL_AUTO || d->device != IR_DEVICE_GPU) return;
  /* Multiscale sources are Zarr folders: other sources do not start CUDA here, ahead of the
   * renderer's start-up that overlaps the read. */
  if (!desc->source || !ir_is_zarr_source(desc->source)) return;
  size_t free_bytes = 0, total = 0;
  if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) {
    cudaGetLastError(); /* no device: the renderer says so when it starts */
    return;
  }
  desc->level_budget_bytes = free_bytes / 2 / (series ? 3 : 1);
}

int app_open(const app_open_desc *d, app_opened *o) {
  memset(o, 0, sizeof *o);
  o->start_s = seconds_now();
  ir_volume_desc desc = *d->volume;
  if (!desc.source) desc.source = IR_DEFAULT_VOLUME;
  desc.show_progress = !d->quiet;
  if (d->quiet) desc.progress_min_bytes = SIZE_MAX;
  long interval = 0;
  const char *env = getenv("INKRAY_PROGRESS_INTERVAL_MS");
  if (env && cli_parse_int(env, 1, 3600000, &interval)) desc.progress_interval_ms = (unsigned)interval;
  desc.on_progress = d->on_progress;
  desc.progress_ctx = d->progress_ctx;
  io_from_environment(&desc);
  bool series = ir_series_detect(desc.source);
  level_budget(d, &desc, series);
  if (series) return open_series(d, &desc, o);

  char err[IR_ERR_LEN] = "";
  ir_volume header;
  memset(&header, 0, sizeof header);
  bool stream = false;
  if (d->device == IR_DEVICE_GPU && header_first(desc.source)) {
    ir_volume_desc hd = desc;
    hd.header_only = true;
    hd.check_data = true;
    ir_status st = ir_volume_load(&hd, &header, err);
    if (st != IR_OK) return fail("", st, err);
    stream = header.streamable;
    /* --level auto is decided once, by the header: the load reads that level even if the memory
     * free has changed since (the GPU's start runs in between). */
    if (header.level_count > 0) desc.level = header.level;
  }
  int rc = 0;
  if (stream) {
    rc = stream_while_starting(d, &desc, &header, o);
  } else {
    ir_status st = ir_volume_load(&desc, &o->volume, err);
    if (st != IR_OK) rc = fail("", st, err);
    o->read_s = seconds_now() - o->start_s;
    if (rc == 0) rc = create_renderer(d, &o->volume, false, &o->renderer);
  }
  ir_volume_free(&header);
  if (rc) return rc;
  o->bytes = o->volume.bytes;
  if (o->volume.note[0]) fprintf(stderr, "inkray: %s: %s\n", o->volume.name, o->volume.note);
  return 0;
}

int app_open_finish(app_opened *o) {
  /* On the GPU the upload and the ranges are queued: a statistics pass or a frame waits for
   * them; here they are waited for so that the time below says when the volume was ready. */
  ir_volume_stats stats;
  char err[IR_ERR_LEN] = "";
  ir_status st = ir_renderer_volume_stats(o->renderer, &stats, err);
  if (st != IR_OK) return fail("statistics of the volume: ", st, err);
  o->stats = stats;
  o->ready_s = seconds_now() - o->start_s;
  return 0;
}

size_t app_peak_host_bytes(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  size_t bytes = 0;
  unsigned long long kib = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmHWM: %llu kB", &kib) == 1) bytes = (size_t)kib * 1024;
  fclose(f);
  return bytes;
}

double app_seconds_since_start(void) {
  /* The process's start time (field 22 of /proc/self/stat, clock ticks since boot) against the
   * boot-time clock: includes what ran before main. */
  FILE *f = fopen("/proc/self/stat", "r");
  char buf[1024];
  size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
  if (f) fclose(f);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')');
  unsigned long long start = 0;
  int field = 2;
  for (; p && *p && field < 22; p++)
    if (*p == ' ') field++;
  long ticks = sysconf(_SC_CLK_TCK);
  struct timespec t;
  if (!p || sscanf(p, "%llu", &start) != 1 || ticks <= 0 || clock_gettime(CLOCK_BOOTTIME, &t) != 0) return -1.0;
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec - (double)start / (double)ticks;
}

void app_open_report(const app_opened *o) {
  const double gib = 1024.0 * 1024.0 * 1024.0;
  double read = o->read_s > 0 ? o->read_s : 1e-9;
  size_t peak = app_peak_host_bytes();
  printf("inkray: opened %s%s: %.2f GiB read in %.2f s (%.2f GB/s)%s, ready with statistics at %.2f s; host memory peak "
         "%.2f GiB (%.2fx the voxels)\n",
         o->volume.name, o->series ? " (step 1)" : "", (double)o->bytes / gib, o->read_s, (double)o->bytes / read / 1e9,
         o->streamed ? ", streamed to the GPU while read" : "", o->ready_s, (double)peak / gib,
         o->bytes ? (double)peak / (double)o->bytes : 0.0);
}

void app_opened_close(app_opened *o) {
  app_player_destroy(o->player);
  if (o->renderer) ir_renderer_destroy(o->renderer);
  ir_series_close(o->series);
  if (!o->series) ir_volume_free(&o->volume);
  memset(o, 0, sizeof *o);
}
