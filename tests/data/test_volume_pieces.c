/* Uncompressed data read in pieces by several threads (data/read_pieces.c): the pieces' plan
 * (whole rows, inside a slice or whole slices, covering the data once in order), the voxels
 * and value range against a direct read of the file for every thread count, byte order and
 * data file layout, the sink seeing every byte once with the loaded values, O_DIRECT reads,
 * progress callbacks, reused memory, and the cases that do not stream (compressed data,
 * scaling, boxes). */
#include <math.h>
#include <pthread.h>

#include "data/volume_internal.h"
#include "tests/data/data_test_util.h"

/* ---- The plan ---------------------------------------------------------------------------------- */
static void check_plan(size_t nx, size_t ny, size_t nz, size_t elem, size_t base, size_t bytes, size_t target) {
  size_t dims[3] = {nx, ny, nz}, row_bytes = nx * elem;
  size_t n = ir_plan_pieces(dims, elem, base, bytes, target, NULL);
  ir_volume_piece *p = calloc(n ? n : 1, sizeof *p);
  CHECK_EQ_INT(ir_plan_pieces(dims, elem, base, bytes, target, p), n);
  size_t at = base;
  bool rows = base % row_bytes == 0 && bytes % row_bytes == 0;
  for (size_t k = 0; k < n; k++) {
    CHECK_EQ_INT(p[k].offset, at); /* in order, no gap, no overlap */
    CHECK(p[k].bytes > 0);
    at += p[k].bytes;
    if (!rows) {
      CHECK_EQ_INT(p[k].rows, 0);
      CHECK(p[k].bytes <= target);
      continue;
    }
    CHECK_EQ_INT(p[k].row * row_bytes, p[k].offset);
    CHECK_EQ_INT(p[k].rows * row_bytes, p[k].bytes);
    size_t y = p[k].row % ny;
    bool in_slice = y + p[k].rows <= ny, whole_slices = y == 0 && p[k].rows % ny == 0;
    CHECK_MSG(in_slice || whole_slices, "piece %zu: rows %zu..+%zu of %zux%zu slices", k, p[k].row, p[k].rows, ny, nz);
    /* About the target: one row at least, one slice more only when slices are that small. */
    CHECK(p[k].bytes <= (target > row_bytes ? target : row_bytes) || p[k].rows == ny);
  }
  CHECK_EQ_INT(at, base + bytes);
  free(p);
}

static void test_plan_covers_the_data_in_whole_rows(void) {
  check_plan(64, 48, 30, 1, 0, 64 * 48 * 30, 64 * 48 * 4);   /* several slices a piece */
  check_plan(64, 48, 30, 2, 0, 64 * 48 * 30 * 2, 1000);      /* rows inside slices */
  check_plan(7, 5, 3, 4, 0, 7 * 5 * 3 * 4, 1);               /* one row a piece */
  check_plan(64, 48, 30, 1, 64 * 48 * 10, 64 * 48 * 10, 64 * 48 * 3); /* one file's share */
  check_plan(64, 48, 30, 1, 64 * 20, 64 * 48 * 2, 64 * 48 * 8);       /* a share starting mid-slice */
  check_plan(64, 48, 30, 1, 13, 1000, 100);                   /* not whole rows: byte ranges */
  check_plan(4096, 4096, 2, 1, 0, (size_t)4096 * 4096 * 2, IR_PIECE_BYTES);
}

/* ---- Loading -------------------------------------------------------------------------------------- */
/* What a sink saw: every byte of the volume once, with the values the load gave it. */
typedef struct seen {
  pthread_mutex_t lock;
  unsigned char *copy; /* the pieces as handed over */
  unsigned char *count;
  size_t bytes, pieces;
  size_t dims[3], elem;
  bool bad_geometry;
  int fail_after; /* > 0: the n-th piece reports an error */
} seen;

static ir_status on_piece(void *ctx, const ir_volume_piece *p, const void *voxels, char err[IR_ERR_LEN]) {
  seen *s = ctx;
  pthread_mutex_lock(&s->lock);
  s->pieces++;
  bool fail = s->fail_after > 0 && (int)s->pieces == s->fail_after;
  if (p->offset + p->bytes > s->bytes || p->rows * s->dims[0] * s->elem != p->bytes) s->bad_geometry = true;
  for (size_t i = 0; i < p->bytes && p->offset + i < s->bytes; i++) s->count[p->offset + i]++;
  if (p->offset + p->bytes <= s->bytes) memcpy(s->copy + p->offset, voxels, p->bytes);
  pthread_mutex_unlock(&s->lock);
  if (fail) {
    snprintf(err, IR_ERR_LEN, "the sink stops here");
    return IR_ERR_RUNTIME;
  }
  return IR_OK;
}

static void seen_init(seen *s, const size_t dims[3], size_t elem) {
  memset(s, 0, sizeof *s);
  pthread_mutex_init(&s->lock, NULL);
  memcpy(s->dims, dims, sizeof s->dims);
  s->elem = elem;
  s->bytes = dims[0] * dims[1] * dims[2] * elem;
  s->copy = calloc(s->bytes, 1);
  s->count = calloc(s->bytes, 1);
}

static void seen_free(seen *s) {
  free(s->copy);
  free(s->count);
  pthread_mutex_destroy(&s->lock);
}

static bool every_byte_once(const seen *s) {
  for (size_t i = 0; i < s->bytes; i++)
    if (s->count[i] != 1) return false;
  return true;
}

/* uint16 test values with every byte different from its neighbours, so that swapped or
 * shifted data cannot match. */
static uint16_t value_at(size_t i) { return (uint16_t)(i * 40503u + 17u); }

static void check_range_matches_a_scan(const ir_volume *v) {
  double lo = INFINITY, hi = -INFINITY;
  for (size_t i = 0; i < ir_volume_voxel_count(v); i++) {
    double x = ir_volume_value_at(v, i, 0, 0);
    lo = x < lo ? x : lo;
    hi = x > hi ? x : hi;
  }
  CHECK_NEAR(v->value_min, lo, 0);
  CHECK_NEAR(v->value_max, hi, 0);
}

static void test_raw_in_pieces_matches_the_file_for_every_thread_count(void) {
  size_t dims[3] = {97, 61, 53};
  size_t n = dims[0] * dims[1] * dims[2];
  uint16_t *data = malloc(n * 2);
  for (size_t i = 0; i < n; i++) data[i] = value_at(i);
  const char *path = kept_path("pieces_97x61x53_uint16.raw");
  write_bytes(path, data, n * 2);
  for (int threads = 1; threads <= 5; threads += 2) {
    seen s;
    seen_init(&s, dims, 2);
    ir_volume_sink sink = {on_piece, &s};
    ir_volume_desc desc = {.sink = &sink, .io_threads = threads};
    ir_volume v;
    char err[IR_ERR_LEN];
    CHECK_MSG(load_with(path, &desc, &v, err) == IR_OK, "%s", err);
    CHECK(memcmp(v.voxels, data, n * 2) == 0);
    CHECK(v.streamed);
    CHECK(every_byte_once(&s));
    CHECK(!s.bad_geometry);
    CHECK(memcmp(s.copy, data, n * 2) == 0);
    check_range_matches_a_scan(&v);
    ir_volume_free(&v);
    seen_free(&s);
  }
  free(data);
}

static void test_big_endian_pieces_reach_the_sink_in_host_order(void) {
  size_t dims[3] = {33, 20, 17}, n = 33 * 20 * 17;
  unsigned char *be = malloc(n * 2);
  for (size_t i = 0; i < n; i++) put_be16(be + 2 * i, value_at(i));
  const char *raw = kept_path("pieces_be.raw");
  write_bytes(raw, be, n * 2);
  write_text(scratch_path("pieces_be.nhdr"), "NRRD0004\ntype: uint16\ndimension: 3\nsizes: 33 20 17\n"
                                             "endian: big\nencoding: raw\ndata file: pieces_be.raw\n\n");
  seen s;
  seen_init(&s, dims, 2);
  ir_volume_sink sink = {on_piece, &s};
  ir_volume_desc desc = {.sink = &sink, .io_threads = 3};
  ir_volume v;
  char err[IR_ERR_LEN];
  CHECK_MSG(load_with(scratch_path("pieces_be.nhdr"), &desc, &v, err) == IR_OK, "%s", err);
  bool values = true;
  for (size_t i = 0; i < n && values; i++) values = ((uint16_t *)v.voxels)[i] == value_at(i);
  CHECK(values);
  CHECK(v.streamed && every_byte_once(&s));
  CHECK(memcmp(s.copy, v.voxels, n * 2) == 0);
  check_range_matches_a_scan(&v);
  ir_volume_free(&v);
  seen_free(&s);
  free(be);
}

static void test_one_file_per_slice_streams_each_share(void) {
  size_t dims[3] = {40, 30, 6}, slice = 40 * 30;
  unsigned char *all = malloc(slice * 6);
  for (size_t i = 0; i < slice * 6; i++) all[i] = (unsigned char)(i * 7u + 3u);
  for (int z = 0; z < 6; z++) write_bytes(scratch_path(fmt_path("slice_%d.raw", z)), all + z * slice, slice);
  write_text(scratch_path("slices.nhdr"), "NRRD0004\ntype: uint8\ndimension: 3\nsizes: 40 30 6\nencoding: raw\n"
                                          "data file: slice_%d.raw 0 5 1\n\n");
  seen s;
  seen_init(&s, dims, 1);
  ir_volume_sink sink = {on_piece, &s};
  ir_volume_desc desc = {.sink = &sink, .io_threads = 4};
  ir_volume v;
  char err[IR_ERR_LEN];
  CHECK_MSG(load_with(scratch_path("slices.nhdr"), &desc, &v, err) == IR_OK, "%s", err);
  CHECK(memcmp(v.voxels, all, slice * 6) == 0);
  CHECK(v.streamed && every_byte_once(&s) && !s.bad_geometry);
  ir_volume_free(&v);
  seen_free(&s);
  free(all);
}

static void test_direct_io_reads_the_same_voxels(void) {
  /* A byte skip in front: the voxels start off the 4 KiB grid O_DIRECT needs. A file system that
   * refuses O_DIRECT (tmpfs) is read through the cache: the result is the same either way. */
  size_t n = 300 * 200 * 20;
  float *data = malloc(n * 4);
  for (size_t i = 0; i < n; i++) data[i] = (float)value_at(i) * 0.5f - 1000.0f;
  data[12345] = NAN;
  const char *path = kept_path("direct.raw");
  FILE *f = fopen(path, "wb");
  unsigned char skip[1000] = {0};
  CHECK(f && fwrite(skip, 1, sizeof skip, f) == sizeof skip && fwrite(data, 4, n, f) == n);
  if (f) fclose(f);
  write_text(scratch_path("direct.nhdr"), "NRRD0004\ntype: float\ndimension: 3\nsizes: 300 200 20\nendian: little\n"
                                          "encoding: raw\nbyte skip: 1000\ndata file: direct.raw\n\n");
  ir_volume_desc desc = {.io_mode = IR_IO_DIRECT, .io_threads = 3};
  ir_volume v;
  char err[IR_ERR_LEN];
  CHECK_MSG(load_with(scratch_path("direct.nhdr"), &desc, &v, err) == IR_OK, "%s", err);
  CHECK(v.voxels && memcmp(v.voxels, data, n * 4) == 0);
  CHECK_EQ_INT(v.nonfinite_count, 1);
  check_range_matches_a_scan(&v);
  ir_volume_free(&v);
  free(data);
}

static void test_a_sink_error_stops_the_load_with_its_message(void) {
  /* 16 MiB: four pieces; the second one the sink sees stops the load. */
  size_t dims[3] = {1024, 1024, 16}, bytes = (size_t)1024 * 1024 * 16;
  const char *path = kept_path("stop_1024x1024x16_uint8.raw");
  unsigned char *data = calloc(bytes, 1);
  write_bytes(path, data, bytes);
  seen s;
  seen_init(&s, dims, 1);
  s.fail_after = 2;
  ir_volume_sink sink = {on_piece, &s};
  ir_volume_desc desc = {.sink = &sink, .io_threads = 1};
  ir_volume v;
  char err[IR_ERR_LEN];
  CHECK(load_with(path, &desc, &v, err) == IR_ERR_RUNTIME);
  CHECK_MSG(strstr(err, "the sink stops here") != NULL, "%s", err);
  CHECK(v.voxels == NULL);
  CHECK_EQ_INT(s.pieces, 2); /* one thread: nothing read after the failing piece */
  seen_free(&s);
  free(data);
}

typedef struct progress_seen {
  pthread_mutex_t lock;
  size_t calls, last_done, total;
  bool backwards;
} progress_seen;

static void on_progress(void *ctx, size_t done, size_t total) {
  progress_seen *p = ctx;
  pthread_mutex_lock(&p->lock);
  if (done < p->last_done) p->backwards = true;
  p->calls++;
  p->last_done = done;
  p->total = total;
  pthread_mutex_unlock(&p->lock);
}

static void test_progress_callback_counts_up_to_the_total(void) {
  const char *path = kept_path("progress_cb_512x512x64_uint8.raw");
  size_t bytes = (size_t)512 * 512 * 64;
  unsigned char *data = calloc(bytes, 1);
  write_bytes(path, data, bytes);
  progress_seen p = {.lock = PTHREAD_MUTEX_INITIALIZER};
  ir_volume_desc desc = {.on_progress = on_progress, .progress_ctx = &p, .io_threads = 3};
  ir_volume v;
  char err[IR_ERR_LEN];
  CHECK_MSG(load_with(path, &desc, &v, err) == IR_OK, "%s", err);
  CHECK(p.calls >= 2 && !p.backwards);
  CHECK_EQ_INT(p.last_done, bytes);
  CHECK_EQ_INT(p.total, bytes);
  ir_volume_free(&v);
  free(data);
}

static void test_recycled_memory_is_reused_or_freed(void) {
  const char *path = kept_path("recycle_32x32x32_uint8.raw");
  unsigned char data[32 * 32 * 32];
  for (size_t i = 0; i < sizeof data; i++) data[i] = (unsigned char)i;
  write_bytes(path, data, sizeof data);
  ir_volume first, second;
  char err[IR_ERR_LEN];
  CHECK(load(path, &first, err) == IR_OK);
  void *memory = first.voxels;
  ir_volume_desc desc = {.recycle = &first};
  CHECK_MSG(load_with(path, &desc, &second, err) == IR_OK, "%s", err);
  CHECK(second.voxels == memory); /* the same buffer, refilled */
  CHECK(first.voxels == NULL);
  CHECK(memcmp(second.voxels, data, sizeof data) == 0);
  /* Too small to reuse: freed, and the load allocates (valgrind/ASan would see a leak). */
  ir_volume small;
  write_bytes(scratch_path("recycle_4x4x4_uint8.raw"), data, 64);
  CHECK(load(scratch_path("recycle_4x4x4_uint8.raw"), &small, err) == IR_OK);
  desc.recycle = &small;
  ir_volume third;
  CHECK_MSG(load_with(path, &desc, &third, err) == IR_OK, "%s", err);
  CHECK(small.voxels == NULL && memcmp(third.voxels, data, sizeof data) == 0);
  /* A failed load frees it too. */
  desc.recycle = &second;
  ir_volume none;
  CHECK(load_with(scratch_path("no_such_8x8x8_uint8.raw"), &desc, &none, err) == IR_ERR_INPUT);
  CHECK(second.voxels == NULL);
  ir_volume_free(&third);
}

static void test_compressed_scaled_and_boxes_do_not_stream(void) {
  size_t dims[3] = {16, 16, 16};
  unsigned char data[16 * 16 * 16];
  for (size_t i = 0; i < sizeof data; i++) data[i] = (unsigned char)(i * 3u);
  size_t zn = 0;
  unsigned char *z = deflate_bytes(data, sizeof data, 31, &zn);
  write_bytes(scratch_path("gz_16x16x16_uint8.raw.gz"), z, zn);
  free(z);
  write_bytes(scratch_path("box_16x16x16_uint8.raw"), data, sizeof data);
  seen s;
  seen_init(&s, dims, 1);
  ir_volume_sink sink = {on_piece, &s};
  ir_volume_desc desc = {.sink = &sink};
  ir_volume v;
  char err[IR_ERR_LEN];
  CHECK_MSG(load_with(scratch_path("gz_16x16x16_uint8.raw.gz"), &desc, &v, err) == IR_OK, "%s", err);
  CHECK(!v.streamed && s.pieces == 0);
  ir_volume_free(&v);
  desc.region_size[0] = desc.region_size[1] = desc.region_size[2] = 8;
  CHECK_MSG(load_with(scratch_path("box_16x16x16_uint8.raw"), &desc, &v, err) == IR_OK, "%s", err);
  CHECK(!v.streamed && s.pieces == 0);
  ir_volume_free(&v);
  /* Header-only loads say which sources would stream. */
  ir_volume_desc header = {.header_only = true};
  CHECK(load_with(scratch_path("box_16x16x16_uint8.raw"), &header, &v, err) == IR_OK && v.streamable);
  ir_volume_free(&v);
  CHECK(load_with(scratch_path("gz_16x16x16_uint8.raw.gz"), &header, &v, err) == IR_OK && !v.streamable);
  ir_volume_free(&v);
  seen_free(&s);
}

int main(void) {
  RUN(test_plan_covers_the_data_in_whole_rows);
  RUN(test_raw_in_pieces_matches_the_file_for_every_thread_count);
  RUN(test_big_endian_pieces_reach_the_sink_in_host_order);
  RUN(test_one_file_per_slice_streams_each_share);
  RUN(test_direct_io_reads_the_same_voxels);
  RUN(test_a_sink_error_stops_the_load_with_its_message);
  RUN(test_progress_callback_counts_up_to_the_total);
  RUN(test_recycled_memory_is_reused_or_freed);
  RUN(test_compressed_scaled_and_boxes_do_not_stream);
  return check_summary();
}
