/* Uncompressed voxel data read by several threads at once.
 *
 * One thread reading a big file from the page cache moves 1.5 to 2 GB/s (the kernel's copy into
 * the process runs on the reading core); several threads reading different parts of it at once
 * move several times that. The volume is cut into pieces of whole rows of about IR_PIECE_BYTES
 * (ir_plan_pieces), which the threads take in turn: each reads its piece with pread straight
 * into its place in the volume's memory, swaps its bytes when the file's byte order is not the
 * host's, scans its value range while it is still in the core's cache, and hands it to the
 * caller's sink (the GPU upload: render/gpu_volume.cu).
 *
 * Files that come from disk rather than the page cache (under a tenth of their pages resident,
 * as mincore says) are read with O_DIRECT in aligned blocks through a small buffer per thread:
 * the disk then writes into that buffer directly, without a copy through the page cache, and a
 * big volume does not push everything else out of the cache. A file system that refuses
 * O_DIRECT is read through the cache.
 *
 * What this file does not do: compressed data or sub-boxes (io.c reads them as before).
 */
#define _GNU_SOURCE /* O_DIRECT */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/parallel.h"
#include "data/volume_internal.h"

/* O_DIRECT transfers start, end and land on multiples of the device's logical block; 4 KiB is
 * that or a multiple of it on the disks in use. */
#define DIRECT_ALIGN ((size_t)4096)
/* Smaller files are read through the cache whatever their residency: too short to matter. */
#define DIRECT_MIN_BYTES ((size_t)256 << 20)
#define IO_MAX_THREADS 16

size_t ir_plan_pieces(const size_t dims[3], size_t elem, size_t base, size_t bytes, size_t target,
                      ir_volume_piece *out) {
  size_t row_bytes = dims[0] * elem, ny = dims[1], slice_bytes = row_bytes * ny, n = 0;
  if (target == 0) target = IR_PIECE_BYTES;
  if (row_bytes == 0 || base % row_bytes || bytes % row_bytes) {
    for (size_t at = 0; at < bytes; at += target, n++)
      if (out) out[n] = (ir_volume_piece){base + at, bytes - at < target ? bytes - at : target, 0, 0};
    return n;
  }
  size_t row = base / row_bytes, end = row + bytes / row_bytes;
  size_t target_rows = target / row_bytes ? target / row_bytes : 1;
  size_t target_slices = target / slice_bytes ? target / slice_bytes : 1;
  while (row < end) {
    size_t y = row % ny, rows;
    if (y == 0 && end - row >= ny) {
      size_t slices = (end - row) / ny;
      rows = (slices < target_slices ? slices : target_slices) * ny;
    } else {
      rows = ny - y < end - row ? ny - y : end - row;
      if (rows > target_rows) rows = target_rows;
    }
    if (out) out[n] = (ir_volume_piece){row * row_bytes, rows * row_bytes, row, rows};
    n++;
    row += rows;
  }
  return n;
}

/* ---- Reading one piece --------------------------------------------------------------------------- */
static bool pread_all(int fd, void *buf, size_t bytes, size_t at, size_t *got) {
  size_t done = 0;
  while (done < bytes) {
    ssize_t n = pread(fd, (unsigned char *)buf + done, bytes - done, (off_t)(at + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) break;
    done += (size_t)n;
  }
  *got = done;
  return true;
}

typedef struct open_file {
  int fd;        /* through the page cache */
  int direct_fd; /* O_DIRECT, or -1 */
} open_file;

typedef struct piece_job {
  const ir_piece_file *files;
  open_file *open;
  const ir_volume_piece *pieces;
  const size_t *piece_file; /* the file of each piece */
  size_t count;
  unsigned char *dst;
  ir_voxel_type type;
  size_t elem;
  bool swap;
  const ir_volume_sink *sink;
  ir_progress *progress;
  size_t bounce_bytes;
  bool any_direct; /* some file is read with O_DIRECT: each thread needs a bounce buffer */
  atomic_size_t next;
  atomic_bool failed;
  pthread_mutex_t lock; /* the first error */
  ir_status status;
  char err[IR_ERR_LEN];
  double lo[IO_MAX_THREADS], hi[IO_MAX_THREADS];
  size_t nonfinite[IO_MAX_THREADS];
  int worker_count;
  atomic_int worker_ids;
} piece_job;

static void fail(piece_job *job, ir_status status, const char *message) {
  pthread_mutex_lock(&job->lock);
  if (job->status == IR_OK) {
    job->status = status;
    snprintf(job->err, IR_ERR_LEN, "%s", message);
  }
  pthread_mutex_unlock(&job->lock);
  atomic_store(&job->failed, true);
}

/* Reads bytes [at, at + bytes) of the file into dst with O_DIRECT through `bounce` (aligned,
 * job->bounce_bytes long). False when the file system refuses: the caller reads it cached. */
static bool read_direct(int fd, unsigned char *bounce, size_t bounce_bytes, unsigned char *dst, size_t at,
                        size_t bytes, size_t *got) {
  size_t a = at & ~(DIRECT_ALIGN - 1), end = (at + bytes + DIRECT_ALIGN - 1) & ~(DIRECT_ALIGN - 1);
  if (end - a > bounce_bytes) return false;
  size_t read = 0;
  if (!pread_all(fd, bounce, end - a, a, &read)) return false;
  size_t have = read > at - a ? read - (at - a) : 0;
  *got = have < bytes ? have : bytes;
  memcpy(dst, bounce + (at - a), *got);
  return true;
}

static void swap_piece(unsigned char *p, size_t bytes, size_t elem) { ir_swap_voxels(p, bytes / elem, elem); }

static bool read_piece(piece_job *job, size_t index, unsigned char *bounce, int worker) {
  const ir_volume_piece *pc = &job->pieces[index];
  const ir_piece_file *f = &job->files[job->piece_file[index]];
  open_file *of = &job->open[job->piece_file[index]];
  unsigned char *dst = job->dst + pc->offset;
  size_t at = f->start + (pc->offset - f->base), got = 0;
  bool ok = false;
  if (of->direct_fd >= 0 && bounce)
    ok = read_direct(of->direct_fd, bounce, job->bounce_bytes, dst, at, pc->bytes, &got);
  if (!ok) ok = pread_all(of->fd, dst, pc->bytes, at, &got);
  char message[IR_ERR_LEN];
  if (!ok) {
    ir_input_error(message, f->path, "read error at byte %zu: %s", at, strerror(errno));
    fail(job, IR_ERR_INPUT, message);
    return false;
  }
  if (got < pc->bytes) {
    /* The size was checked before: the file shrank while it was read. */
    ir_input_error(message, f->path, "ends after %zu bytes, expected %zu: did it change while being read?",
                   at + got, f->start + f->bytes);
    fail(job, IR_ERR_INPUT, message);
    return false;
  }
  if (job->swap) swap_piece(dst, pc->bytes, job->elem);
  double lo, hi;
  size_t bad;
  ir_scan_range(dst, job->type, 0, pc->bytes / job->elem, &lo, &hi, &bad);
  job->lo[worker] = lo < job->lo[worker] ? lo : job->lo[worker];
  job->hi[worker] = hi > job->hi[worker] ? hi : job->hi[worker];
  job->nonfinite[worker] += bad;
  if (job->sink && job->sink->piece) {
    ir_status status = job->sink->piece(job->sink->ctx, pc, dst, message);
    if (status != IR_OK) {
      fail(job, status, message);
      return false;
    }
  }
  ir_progress_add(job->progress, pc->bytes);
  return true;
}

static void *piece_worker(void *arg) {
  piece_job *job = arg;
  int worker = atomic_fetch_add(&job->worker_ids, 1);
  unsigned char *bounce = NULL;
  if (job->any_direct && posix_memalign((void **)&bounce, DIRECT_ALIGN, job->bounce_bytes) != 0) bounce = NULL;
  for (;;) {
    if (atomic_load(&job->failed)) break;
    size_t index = atomic_fetch_add(&job->next, 1);
    if (index >= job->count || !read_piece(job, index, bounce, worker)) break;
  }
  free(bounce);
  return NULL;
}

/* ---- Files ------------------------------------------------------------------------------------- */
/* The share of the file's pages in the page cache (1 when it cannot be told). */
static double resident_share(int fd, size_t size) {
  long page = sysconf(_SC_PAGESIZE);
  if (size == 0 || page <= 0) return 1.0;
  void *map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) return 1.0;
  size_t pages = (size + (size_t)page - 1) / (size_t)page, resident = 0;
  unsigned char *vec = malloc(pages);
  double share = 1.0;
  if (vec && mincore(map, size, vec) == 0) {
    for (size_t i = 0; i < pages; i++) resident += vec[i] & 1u;
    share = (double)resident / (double)pages;
  }
  free(vec);
  munmap(map, size);
  return share;
}

static ir_status open_files(const ir_piece_file *files, size_t count, ir_io_mode mode, open_file *opened,
                            char err[IR_ERR_LEN]) {
  for (size_t i = 0; i < count; i++) opened[i] = (open_file){-1, -1};
  for (size_t i = 0; i < count; i++) {
    opened[i].fd = open(files[i].path, O_RDONLY | O_CLOEXEC);
    if (opened[i].fd < 0) return ir_input_error(err, files[i].path, "cannot open: %s", strerror(errno));
    struct stat st;
    size_t size = fstat(opened[i].fd, &st) == 0 ? (size_t)st.st_size : 0;
    bool direct = mode == IR_IO_DIRECT ||
                  (mode == IR_IO_AUTO && size >= DIRECT_MIN_BYTES && resident_share(opened[i].fd, size) < 0.1);
    if (direct) opened[i].direct_fd = open(files[i].path, O_RDONLY | O_CLOEXEC | O_DIRECT);
    /* Through the cache the kernel reads ahead; tell it the whole range will be wanted. */
    if (opened[i].direct_fd < 0)
      posix_fadvise(opened[i].fd, (off_t)files[i].start, (off_t)files[i].bytes, POSIX_FADV_WILLNEED);
  }
  return IR_OK;
}

static int io_threads(const ir_volume_desc *desc, size_t pieces) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int n = desc && desc->io_threads > 0 ? desc->io_threads : (int)(cores < 1 ? 1 : cores);
  if (n > IO_MAX_THREADS) n = IO_MAX_THREADS;
  if ((size_t)n > pieces) n = pieces ? (int)pieces : 1;
  return n;
}

ir_status ir_read_pieces(const ir_piece_file *files, size_t file_count, const size_t dims[3], ir_voxel_type type,
                         bool swap, unsigned char *dst, const ir_volume_desc *desc, ir_progress *progress,
                         double *lo, double *hi, size_t *nonfinite, bool *streamed, char err[IR_ERR_LEN]) {
  size_t elem = ir_voxel_type_size(type), row_bytes = dims[0] * elem, count = 0;
  bool rows = true;
  /* Pieces never span two files; shares of whole rows keep every piece whole rows, which is what
   * a sink can place. */
  for (size_t i = 0; i < file_count; i++) {
    count += ir_plan_pieces(dims, elem, files[i].base, files[i].bytes, IR_PIECE_BYTES, NULL);
    rows = rows && files[i].base % row_bytes == 0 && files[i].bytes % row_bytes == 0;
  }
  ir_volume_piece *pieces = malloc((count ? count : 1) * sizeof *pieces);
  size_t *piece_file = malloc((count ? count : 1) * sizeof *piece_file);
  open_file *opened = calloc(file_count ? file_count : 1, sizeof *opened);
  if (!pieces || !piece_file || !opened) {
    free(pieces);
    free(piece_file);
    free(opened);
    snprintf(err, IR_ERR_LEN, "%s: out of host memory planning the read", files[0].path);
    return IR_ERR_RUNTIME;
  }
  size_t at = 0, bounce = 0;
  for (size_t i = 0; i < file_count; i++) {
    size_t n = ir_plan_pieces(dims, elem, files[i].base, files[i].bytes, IR_PIECE_BYTES, pieces + at);
    for (size_t k = at; k < at + n; k++) {
      piece_file[k] = i;
      if (pieces[k].bytes > bounce) bounce = pieces[k].bytes;
    }
    at += n;
  }
  ir_status status = open_files(files, file_count, desc ? desc->io_mode : IR_IO_AUTO, opened, err);
  piece_job *job = calloc(1, sizeof *job);
  if (status == IR_OK && !job) {
    snprintf(err, IR_ERR_LEN, "%s: out of host memory", files[0].path);
    status = IR_ERR_RUNTIME;
  }
  if (status == IR_OK) {
    job->files = files;
    job->open = opened;
    job->pieces = pieces;
    job->piece_file = piece_file;
    job->count = count;
    job->dst = dst;
    job->type = type;
    job->elem = elem;
    job->swap = swap;
    job->sink = rows && desc->sink && desc->sink->piece ? desc->sink : NULL;
    job->progress = progress;
    job->bounce_bytes = bounce + 2 * DIRECT_ALIGN;
    for (size_t i = 0; i < file_count; i++) job->any_direct = job->any_direct || opened[i].direct_fd >= 0;
    atomic_init(&job->next, 0);
    atomic_init(&job->failed, false);
    atomic_init(&job->worker_ids, 0);
    pthread_mutex_init(&job->lock, NULL);
    job->worker_count = io_threads(desc, count);
    for (int w = 0; w < job->worker_count; w++) {
      job->lo[w] = INFINITY;
      job->hi[w] = -INFINITY;
    }
    pthread_t threads[IO_MAX_THREADS];
    int started = 0;
    for (; started < job->worker_count - 1; started++)
      if (pthread_create(&threads[started], NULL, piece_worker, job) != 0) break;
    piece_worker(job); /* the calling thread reads too, so that a failed pthread_create only slows it */
    for (int t = 0; t < started; t++) pthread_join(threads[t], NULL);
    pthread_mutex_destroy(&job->lock);
    status = job->status;
    if (status != IR_OK) snprintf(err, IR_ERR_LEN, "%s", job->err);
    *lo = INFINITY;
    *hi = -INFINITY;
    *nonfinite = 0;
    for (int w = 0; w < job->worker_count; w++) {
      *lo = job->lo[w] < *lo ? job->lo[w] : *lo;
      *hi = job->hi[w] > *hi ? job->hi[w] : *hi;
      *nonfinite += job->nonfinite[w];
    }
    *streamed = status == IR_OK && job->sink != NULL;
  }
  for (size_t i = 0; i < file_count; i++) {
    if (opened[i].fd >= 0) close(opened[i].fd);
    if (opened[i].direct_fd >= 0) close(opened[i].direct_fd);
  }
  free(job);
  free(opened);
  free(pieces);
  free(piece_file);
  return status;
}
