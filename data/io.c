/* File access for the loaders: checks with clear messages, reading headers, reading voxel
 * payloads (plain or gzip/zlib through zlib's inflate), progress for big volumes, and
 * ir_header_read_voxels, which every header format ends in. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "data/volume_internal.h"

#define IO_CHUNK ((size_t)1 << 20)
/* Compressed input is read in smaller pieces: inflate, not the reads, sets the pace. */
#define INFLATE_CHUNK ((size_t)1 << 16)

ir_status ir_check_file(const char *path, size_t *size, char err[IR_ERR_LEN]) {
  struct stat st;
  if (stat(path, &st) != 0) {
    if (errno == ENOENT) return ir_input_error(err, path, "no such file");
    return ir_input_error(err, path, "cannot access: %s", strerror(errno));
  }
  if (S_ISDIR(st.st_mode))
    return ir_input_error(err, path, "is a directory, expected a volume file");
  if (!S_ISREG(st.st_mode)) return ir_input_error(err, path, "not a regular file");
  FILE *f = fopen(path, "rb");
  if (!f) return ir_input_error(err, path, "cannot open: %s", strerror(errno));
  fclose(f);
  if (size) *size = (size_t)st.st_size;
  return IR_OK;
}

ir_status ir_read_prefix(const char *path, size_t max_bytes, char **text, size_t *len,
                         char err[IR_ERR_LEN]) {
  size_t size = 0;
  ir_status status = ir_check_file(path, &size, err);
  if (status != IR_OK) return status;
  size_t want = size < max_bytes ? size : max_bytes;
  char *buf = malloc(want + 1);
  if (!buf) {
    snprintf(err, IR_ERR_LEN, "%s: out of host memory reading the header", path);
    return IR_ERR_RUNTIME;
  }
  FILE *f = fopen(path, "rb");
  if (!f) {
    free(buf);
    return ir_input_error(err, path, "cannot open: %s", strerror(errno));
  }
  size_t got = fread(buf, 1, want, f);
  bool failed = ferror(f);
  fclose(f);
  if (failed) {
    free(buf);
    return ir_input_error(err, path, "read error");
  }
  buf[got] = '\0';
  *text = buf;
  *len = got;
  return IR_OK;
}

char *ir_path_join_dir(const char *base, const char *rel) {
  size_t dir_len = 0;
  if (rel[0] != '/') {
    const char *slash = strrchr(base, '/');
    dir_len = slash ? (size_t)(slash - base) + 1 : 0;
  }
  size_t rel_len = strlen(rel);
  char *out = malloc(dir_len + rel_len + 1);
  if (!out) return NULL;
  memcpy(out, base, dir_len);
  memcpy(out + dir_len, rel, rel_len + 1);
  return out;
}

/* ---- Progress ------------------------------------------------------------------------------ */
#define PROGRESS_DEFAULT_INTERVAL_MS 5000u

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void ir_progress_begin(ir_progress *p, const ir_volume_desc *desc, const char *name, size_t total) {
  size_t min_bytes = desc->progress_min_bytes ? desc->progress_min_bytes : IR_PROGRESS_MIN_BYTES;
  unsigned interval_ms = desc->progress_interval_ms ? desc->progress_interval_ms : PROGRESS_DEFAULT_INTERVAL_MS;
  *p = (ir_progress){.enabled = desc->show_progress && total >= min_bytes, .name = name, .total = total,
                     .shown_percent = -1, .interval_s = interval_ms / 1000.0,
                     .callback = desc->on_progress, .callback_ctx = desc->progress_ctx};
  pthread_mutex_init(&p->lock, NULL);
  if (p->callback) p->callback(p->callback_ctx, 0, total);
  if (!p->enabled) return;
  p->terminal = isatty(STDERR_FILENO);
  p->start_s = p->last_line_s = now_seconds();
}

/* Under p->lock. */
static void progress_print(ir_progress *p) {
  int percent = (int)(100.0 * (double)p->done / (double)p->total);
  if (percent > 100) percent = 100;
  if (percent == p->shown_percent) return;
  if (p->terminal) {
    p->shown_percent = percent;
    fprintf(stderr, "\rloading %s: %3d%%", p->name, percent);
    fflush(stderr);
    return;
  }
  double now = now_seconds();
  if (now - p->last_line_s < p->interval_s) return;
  p->shown_percent = percent;
  p->last_line_s = now;
  p->printed = true;
  fprintf(stderr, "loading %s: %d%% of %zu bytes, %.0f s\n", p->name, percent, p->total, now - p->start_s);
  fflush(stderr);
}

void ir_progress_add(ir_progress *p, size_t bytes) {
  if (!p || (!p->enabled && !p->callback)) return;
  pthread_mutex_lock(&p->lock);
  p->done += bytes;
  if (p->callback) p->callback(p->callback_ctx, p->done, p->total);
  if (p->enabled) progress_print(p);
  pthread_mutex_unlock(&p->lock);
}

void ir_progress_end(ir_progress *p) {
  if (!p) return;
  pthread_mutex_destroy(&p->lock);
  if (!p->enabled) return;
  if (p->terminal && p->shown_percent >= 0) fputc('\n', stderr);
  /* A log that said the load was under way also says when it ended. */
  if (!p->terminal && p->printed)
    fprintf(stderr, "loading %s: done, %zu of %zu bytes in %.0f s\n", p->name, p->done, p->total,
            now_seconds() - p->start_s);
  p->shown_percent = -1;
  p->printed = false;
}

/* ---- Payloads -------------------------------------------------------------------------------- */
static ir_status read_plain(FILE *f, const char *what, void *dst, size_t bytes,
                            ir_progress *progress, char err[IR_ERR_LEN]) {
  unsigned char *out = dst;
  size_t done = 0;
  while (done < bytes) {
    size_t want = bytes - done < IO_CHUNK ? bytes - done : IO_CHUNK;
    size_t got = fread(out + done, 1, want, f);
    done += got;
    ir_progress_add(progress, got);
    if (got < want) {
      if (ferror(f)) return ir_input_error(err, what, "read error after %zu bytes", done);
      return ir_input_error(err, what, "ends after %zu bytes of data, expected %zu", done, bytes);
    }
  }
  return IR_OK;
}

/* Inflates gzip members or a zlib stream from f: `skip` decompressed bytes are dropped, then
 * exactly `bytes` go to dst. More data inside the stream than that is an error (the header's
 * dims and the file disagree); bytes after the stream has ended are ignored, as gzip does. */
static ir_status read_inflate(FILE *f, const char *what, ir_encoding encoding, size_t skip,
                              void *dst, const ir_region_sink *sink, size_t base, size_t bytes,
                              ir_progress *progress, char err[IR_ERR_LEN]) {
  const char *kind = encoding == IR_ENCODING_GZIP ? "gzip" : "zlib";
  unsigned char *in = malloc(INFLATE_CHUNK);
  /* With a sink the data go through the scratch chunk too, and on to the box. */
  unsigned char *scratch = skip || sink ? malloc(INFLATE_CHUNK) : NULL;
  if (!in || ((skip || sink) && !scratch)) {
    free(in);
    free(scratch);
    snprintf(err, IR_ERR_LEN, "%s: out of host memory for decompression", what);
    return IR_ERR_RUNTIME;
  }
  z_stream z;
  memset(&z, 0, sizeof z);
  /* 15 + 32: accept a zlib or a gzip header, whichever the stream has. */
  if (inflateInit2(&z, 15 + 32) != Z_OK) {
    free(in);
    free(scratch);
    snprintf(err, IR_ERR_LEN, "%s: cannot start zlib", what);
    return IR_ERR_RUNTIME;
  }
  ir_status status = IR_OK;
  unsigned char *out = dst;
  size_t produced = 0; /* decompressed bytes so far, skip included */
  size_t total = skip + bytes;
  bool stream_end = false;
  /* Lives as long as the stream: inflate is called with next_out pointing at it. */
  unsigned char extra;
  for (;;) {
    if (z.avail_in == 0) {
      size_t got = fread(in, 1, INFLATE_CHUNK, f);
      if (ferror(f)) {
        status = ir_input_error(err, what, "read error");
        break;
      }
      z.next_in = in;
      z.avail_in = (uInt)got;
      if (got == 0) break;
    }
    if (stream_end) {
      /* Another gzip member follows (concatenated gzip files are one stream). */
      if (inflateReset(&z) != Z_OK) break;
      stream_end = false;
    }
    unsigned char *target;
    size_t room;
    if (produced < skip) {
      target = scratch;
      room = skip - produced < INFLATE_CHUNK ? skip - produced : INFLATE_CHUNK;
    } else if (produced < total && sink) {
      target = scratch;
      room = total - produced < INFLATE_CHUNK ? total - produced : INFLATE_CHUNK;
    } else if (produced < total) {
      target = out + (produced - skip);
      room = total - produced;
    } else {
      /* All the data is in; one more byte would mean the file holds more than the dims say. */
      target = &extra;
      room = 1;
    }
    uInt room32 = room > UINT_MAX ? UINT_MAX : (uInt)room;
    z.next_out = target;
    z.avail_out = room32;
    int rc = inflate(&z, Z_NO_FLUSH);
    size_t made = room32 - z.avail_out;
    if (produced >= total && made > 0) {
      status = ir_input_error(err, what,
                              "decompresses to more than the %zu bytes the dims say: check "
                              "the dims and type",
                              total);
      break;
    }
    if (sink && made > 0 && produced >= skip && produced < total)
      ir_region_scatter(sink, base + (produced - skip), scratch, made);
    produced += made;
    if (produced > skip) ir_progress_add(progress, made);
    if (rc == Z_STREAM_END) {
      stream_end = true;
      if (produced >= total) break; /* bytes after the last stream are not voxels: ignored */
      continue;
    }
    if (rc == Z_NEED_DICT || rc == Z_DATA_ERROR || rc == Z_MEM_ERROR) {
      if (rc == Z_MEM_ERROR) {
        snprintf(err, IR_ERR_LEN, "%s: out of host memory while decompressing", what);
        status = IR_ERR_RUNTIME;
      } else {
        status = ir_input_error(err, what, "corrupt %s data after %zu decompressed bytes (%s)",
                                kind, produced, z.msg ? z.msg : "bad stream");
      }
      break;
    }
  }
  if (status == IR_OK && produced < total) {
    status = ir_input_error(err, what,
                            stream_end ? "%s data ends after %zu of %zu bytes: the dims say more"
                                       : "truncated %s data: got %zu of %zu bytes",
                            kind, produced > skip ? produced - skip : 0, bytes);
  } else if (status == IR_OK && !stream_end) {
    status = ir_input_error(err, what, "truncated %s data: the stream does not end", kind);
  }
  inflateEnd(&z);
  free(in);
  free(scratch);
  return status;
}

ir_status ir_read_payload(FILE *f, const char *what, ir_encoding encoding, size_t skip_after,
                          void *dst, size_t bytes, ir_progress *progress, char err[IR_ERR_LEN]) {
  if (encoding == IR_ENCODING_RAW) return read_plain(f, what, dst, bytes, progress, err);
  return read_inflate(f, what, encoding, skip_after, dst, NULL, 0, bytes, progress, err);
}

ir_status ir_read_payload_scatter(FILE *f, const char *what, ir_encoding encoding,
                                  size_t skip_after, const ir_region_sink *sink, size_t base,
                                  size_t bytes, ir_progress *progress, char err[IR_ERR_LEN]) {
  return read_inflate(f, what, encoding, skip_after, NULL, sink, base, bytes, progress, err);
}

/* ---- Header + files -> voxels ------------------------------------------------------------- */
void ir_header_init(ir_header *h) {
  memset(h, 0, sizeof *h);
  for (int k = 0; k < 3; k++) h->spacing[k] = 1.0f;
  h->scale_slope = 1.0f;
}

void ir_header_free(ir_header *h) {
  for (size_t i = 0; i < h->file_count; i++) free(h->files[i]);
  free(h->files);
  h->files = NULL;
  h->file_count = h->file_capacity = 0;
}

bool ir_header_add_file(ir_header *h, const char *name, size_t len) {
  if (h->file_count >= IR_MAX_DATA_FILES) return false;
  /* Doubling: a pattern of tens of thousands of slices would otherwise copy the list each time. */
  if (h->file_count == h->file_capacity) {
    size_t capacity = h->file_capacity ? 2 * h->file_capacity : 16;
    char **grown = realloc(h->files, capacity * sizeof *grown);
    if (!grown) return false;
    h->files = grown;
    h->file_capacity = capacity;
  }
  char *copy = malloc(len + 1);
  if (!copy) return false;
  memcpy(copy, name, len);
  copy[len] = '\0';
  h->files[h->file_count++] = copy;
  return true;
}

/* Checks that a raw data file of file_size bytes holds `bytes` of voxels after `offset` (the
 * header, byte skip); with line skips still to come, the offset is a lower bound. On success
 * *start is where the voxels begin (known only without line skips or with skip_to_end). */
static ir_status check_plain_size(const ir_header *h, const char *what, size_t file_size, size_t offset,
                                  size_t bytes, bool offset_exact, size_t *start, char err[IR_ERR_LEN]) {
  if (h->skip_to_end || !offset_exact) {
    size_t need = h->skip_to_end ? bytes : offset + bytes;
    if (file_size < need || need < bytes)
      return ir_input_error(err, what, "%zu bytes, expected at least %zu for %zux%zux%zu %s",
                            file_size, need, h->dims[0], h->dims[1], h->dims[2],
                            ir_voxel_type_name(h->type));
    if (start) *start = h->skip_to_end ? file_size - bytes : offset;
    return IR_OK;
  }
  if (file_size < offset || file_size - offset != bytes) {
    if (h->file_count > 1)
      return ir_input_error(err, what,
                            "%zu bytes, expected %zu (%zu header + %zu data: one of %zu files of "
                            "%zux%zux%zu %s)",
                            file_size, offset + bytes, offset, bytes, h->file_count, h->dims[0],
                            h->dims[1], h->dims[2], ir_voxel_type_name(h->type));
    if (offset)
      return ir_input_error(err, what,
                            "%zu bytes, expected %zu (%zu header + %zu data for %zux%zux%zu %s)",
                            file_size, offset + bytes, offset, bytes, h->dims[0], h->dims[1],
                            h->dims[2], ir_voxel_type_name(h->type));
    return ir_input_error(err, what, "%zu bytes, expected %zu for %zux%zux%zu %s", file_size,
                          bytes, h->dims[0], h->dims[1], h->dims[2], ir_voxel_type_name(h->type));
  }
  if (start) *start = offset;
  return IR_OK;
}

/* deflate packs at most about 1032:1; a compressed payload smaller than this cannot hold the
 * voxels the header promises, whatever it decompresses to. */
#define DEFLATE_MAX_RATIO 1032u

static ir_status check_compressed_size(const ir_header *h, const char *what, size_t compressed,
                                       size_t bytes, size_t skip, char err[IR_ERR_LEN]) {
  size_t ceiling = compressed > (SIZE_MAX - 1024) / DEFLATE_MAX_RATIO ? SIZE_MAX
                                                                       : compressed * DEFLATE_MAX_RATIO + 1024;
  if (bytes <= ceiling && skip <= ceiling - bytes) return IR_OK;
  return ir_input_error(err, what,
                        "%zu bytes of compressed data cannot hold the %zu bytes of %zux%zux%zu %s "
                        "(deflate packs at most %u:1): the header's sizes are wrong",
                        compressed, bytes, h->dims[0], h->dims[1], h->dims[2],
                        ir_voxel_type_name(h->type), DEFLATE_MAX_RATIO);
}

/* Positions f at the first voxel of one data file (raw encoding) and checks its size. */
static ir_status seek_plain(FILE *f, const char *what, const ir_header *h, size_t file_size,
                            size_t offset, size_t bytes, size_t *start, char err[IR_ERR_LEN]) {
  ir_status status = check_plain_size(h, what, file_size, offset, bytes, true, start, err);
  if (status != IR_OK) return status;
  if (fseeko(f, (off_t)*start, SEEK_SET) != 0)
    return ir_input_error(err, what, "cannot seek to byte %zu", *start);
  return IR_OK;
}

/* Before anything is allocated: can this data file hold its share of the voxels? */
static ir_status precheck_file(const ir_header *h, const char *what, size_t file_size, size_t base_offset,
                               size_t share, char err[IR_ERR_LEN]) {
  size_t offset = base_offset + h->file_skip;
  if (h->encoding == IR_ENCODING_RAW)
    return check_plain_size(h, what, file_size, offset, share, h->line_skip == 0, NULL, err);
  if (offset > file_size)
    return ir_input_error(err, what, "%zu bytes, shorter than the %zu bytes to skip", file_size, offset);
  return check_compressed_size(h, what, file_size - offset, share, h->inflated_skip, err);
}

/* Skips NRRD "line skip" lines; returns the byte offset after them. */
static bool skip_lines(FILE *f, size_t lines, size_t *offset) {
  size_t pos = 0;
  for (size_t n = 0; n < lines;) {
    int c = fgetc(f);
    if (c == EOF) return false;
    pos++;
    if (c == '\n') n++;
  }
  *offset = pos;
  return true;
}

/* Opens one data file holding `bytes` of voxel data and positions it at the first of them
 * (line skip, byte skip, size checks); *start is that byte's offset in the file. */
static ir_status open_data_file(const ir_header *h, const char *path, const char *what,
                                size_t base_offset, size_t bytes, FILE **out, size_t *start,
                                char err[IR_ERR_LEN]) {
  size_t file_size = 0;
  ir_status status = ir_check_file(path, &file_size, err);
  if (status != IR_OK) return status;
  FILE *f = fopen(path, "rb");
  if (!f) return ir_input_error(err, what, "cannot open: %s", strerror(errno));
  size_t offset = base_offset;
  if (h->line_skip) {
    size_t after_lines = 0;
    if (fseeko(f, (off_t)base_offset, SEEK_SET) != 0 || !skip_lines(f, h->line_skip, &after_lines)) {
      fclose(f);
      return ir_input_error(err, what, "has fewer than the %zu lines the header says to skip",
                            h->line_skip);
    }
    offset += after_lines;
  }
  offset += h->file_skip;
  if (h->encoding == IR_ENCODING_RAW) {
    status = seek_plain(f, what, h, file_size, offset, bytes, start, err);
  } else if (offset > file_size) {
    status = ir_input_error(err, what, "%zu bytes, shorter than the %zu bytes to skip", file_size,
                            offset);
  } else if (fseeko(f, (off_t)offset, SEEK_SET) != 0) {
    status = ir_input_error(err, what, "cannot seek to byte %zu", offset);
  } else {
    *start = offset;
  }
  if (status != IR_OK) {
    fclose(f);
    return status;
  }
  *out = f;
  return IR_OK;
}

ir_status ir_header_data_start(const ir_header *h, const char *header_path, size_t index, size_t share,
                               size_t *start, char err[IR_ERR_LEN]) {
  char *joined = h->file_count ? ir_path_join_dir(header_path, h->files[index]) : NULL;
  if (h->file_count && !joined) {
    snprintf(err, IR_ERR_LEN, "%s: out of host memory", header_path);
    return IR_ERR_RUNTIME;
  }
  const char *file = joined ? joined : header_path;
  FILE *f = NULL;
  ir_status status = open_data_file(h, file, file, joined ? 0 : h->data_offset, share, &f, start, err);
  if (f) fclose(f);
  free(joined);
  return status;
}

ir_status ir_refuse_4d(const ir_header *h, const char *path, char err[IR_ERR_LEN]) {
  return ir_input_error(err, path,
                        "a time series of %zu steps of %zux%zux%zu %s (4-D): open it as one, in the window or "
                        "with --headless, which play every step",
                        h->steps, h->dims[0], h->dims[1], h->dims[2], ir_voxel_type_name(h->type));
}

/* One data file into dst, or (compressed data with a sink) its part of the box. */
static ir_status read_one_file(const ir_header *h, const char *path, const char *what,
                               size_t base_offset, void *dst, const ir_region_sink *sink,
                               size_t base, size_t bytes, ir_progress *progress,
                               char err[IR_ERR_LEN]) {
  FILE *f = NULL;
  size_t start = 0;
  ir_status status = open_data_file(h, path, what, base_offset, bytes, &f, &start, err);
  if (status != IR_OK) return status;
  if (sink)
    status = ir_read_payload_scatter(f, what, h->encoding, h->inflated_skip, sink, base, bytes,
                                     progress, err);
  else
    status = ir_read_payload(f, what, h->encoding, h->inflated_skip, dst, bytes, progress, err);
  fclose(f);
  return status;
}

/* The box of uncompressed data: every contiguous run of it (an x row, or whole slabs when the
 * box spans the full width/height) is read after a seek, the rest of the file never is. Runs
 * may cross from one data file into the next. */
static ir_status read_box_plain(const ir_header *h, char **paths, const char *header_path,
                                size_t share, const ir_region_sink *s, ir_progress *progress,
                                char err[IR_ERR_LEN]) {
  size_t run = s->size[0], ny = s->size[1], nz = s->size[2];
  if (s->size[0] == s->dims[0]) {
    run *= s->size[1];
    ny = 1;
    if (s->size[1] == s->dims[1]) {
      run *= s->size[2];
      nz = 1;
    }
  }
  size_t run_bytes = run * s->elem;
  unsigned char *dst = s->dst;
  FILE *f = NULL;
  size_t open_index = SIZE_MAX, start = 0, pos = SIZE_MAX;
  const char *what = header_path;
  ir_status status = IR_OK;
  for (size_t z = 0; z < nz && status == IR_OK; z++)
    for (size_t y = 0; y < ny && status == IR_OK; y++) {
      size_t voxel = ((s->off[2] + z) * s->dims[1] + s->off[1] + y) * s->dims[0] + s->off[0];
      size_t g = voxel * s->elem, left = run_bytes;
      while (left > 0 && status == IR_OK) {
        size_t index = g / share, in_file = g % share;
        size_t piece = share - in_file < left ? share - in_file : left;
        if (index != open_index) {
          if (f) fclose(f);
          f = NULL;
          what = h->file_count ? paths[index] : header_path;
          status = open_data_file(h, what, what, h->file_count ? 0 : h->data_offset, share, &f,
                                  &start, err);
          if (status != IR_OK) break;
          open_index = index;
          pos = SIZE_MAX;
        }
        if (pos != in_file && fseeko(f, (off_t)(start + in_file), SEEK_SET) != 0) {
          status = ir_input_error(err, what, "cannot seek to byte %zu", start + in_file);
          break;
        }
        status = ir_read_payload(f, what, IR_ENCODING_RAW, 0, dst, piece, progress, err);
        dst += piece;
        g += piece;
        left -= piece;
        pos = in_file + piece;
      }
    }
  if (f) fclose(f);
  return status;
}

/* NIfTI scaling: the stored integers become slope*v + inter, kept as float32. */
ir_status ir_apply_scaling(const ir_header *h, ir_volume *out, const char *what, char err[IR_ERR_LEN]) {
  size_t n = ir_volume_voxel_count(out);
  if (out->type == IR_VOXEL_FLOAT32) {
    float *p = out->voxels;
    for (size_t i = 0; i < n; i++) p[i] = p[i] * h->scale_slope + h->scale_inter;
    return IR_OK;
  }
  if (n > SIZE_MAX / sizeof(float)) return ir_input_error(err, what, "too many voxels to scale");
  float *scaled = malloc(n * sizeof(float));
  if (!scaled) {
    snprintf(err, IR_ERR_LEN,
             "%s: out of host memory converting %zu voxels to float32 for scl_slope/scl_inter",
             what, n);
    return IR_ERR_RUNTIME;
  }
  for (size_t i = 0; i < n; i++) {
    double v = ir_volume_value_at(out, i, 0, 0);
    scaled[i] = (float)(v * h->scale_slope + h->scale_inter);
  }
  free(out->voxels);
  out->voxels = scaled;
  out->type = IR_VOXEL_FLOAT32;
  out->bytes = n * sizeof(float);
  return IR_OK;
}

/* Memory the whole load needs at its peak: the voxels of the box read, plus their float32 copy
 * while NIfTI scaling converts integer voxels. */
static ir_status check_load_memory(const ir_header *h, const size_t box_size[3], const ir_volume_desc *desc,
                                   const char *path, char err[IR_ERR_LEN]) {
  size_t bytes = 0;
  if (!ir_volume_byte_count(box_size, h->type, &bytes, path, err)) return IR_ERR_INPUT;
  size_t need = bytes;
  if (h->scaled && h->type != IR_VOXEL_FLOAT32) {
    size_t floats = bytes / ir_voxel_type_size(h->type);
    need = floats > (SIZE_MAX - bytes) / sizeof(float) ? SIZE_MAX : bytes + floats * sizeof(float);
  }
  return ir_check_memory(need, desc, path, err);
}

/* What the parallel read of the pieces already did (read_pieces.c): byte order and value range. */
typedef struct pieces_done {
  bool swapped, ranged;
  double lo, hi;
  size_t nonfinite;
} pieces_done;

static bool needs_swap(const ir_header *h) {
  return ir_voxel_type_size(h->type) > 1 && (h->endian == IR_ENDIAN_BIG) != ir_host_is_big_endian();
}

/* A header-only volume from a parsed header: what a full load's finish_read gives but the voxels
 * (dims, type after scaling, spacing, the up axis and where it came from). */
static void header_only(const ir_header *h, const ir_volume_desc *desc, const char *path, ir_volume *out) {
  ir_volume_header_only(out, h->dims, h->scaled ? IR_VOXEL_FLOAT32 : h->type,
                        desc->spacing_given ? desc->spacing : h->spacing, ir_display_name(path));
  out->up_axis = h->up_axis;
  if (h->up_axis != IR_AXIS_NONE && h->up_source)
    snprintf(out->up_source, sizeof out->up_source, "%s", h->up_source);
}

/* Byte order, scaling, spacing, value range: the common end of every loader. */
static ir_status finish_read(const ir_header *h, const char *path, const ir_volume_desc *desc,
                             const pieces_done *done, ir_volume *out, char err[IR_ERR_LEN]) {
  size_t size = ir_voxel_type_size(h->type);
  if (needs_swap(h) && !(done && done->swapped)) ir_swap_voxels(out->voxels, ir_volume_voxel_count(out), size);
  if (h->scaled) {
    ir_status status = ir_apply_scaling(h, out, path, err);
    if (status != IR_OK) {
      ir_volume_free(out);
      return status;
    }
  }
  memcpy(out->spacing, desc->spacing_given ? desc->spacing : h->spacing, sizeof out->spacing);
  if (h->note[0] && !desc->spacing_given && !out->note[0]) snprintf(out->note, sizeof out->note, "%s", h->note);
  out->up_axis = h->up_axis;
  if (h->up_axis != IR_AXIS_NONE && h->up_source)
    snprintf(out->up_source, sizeof out->up_source, "%s", h->up_source);
  /* Scaling changed the values the pieces were scanned with. */
  if (done && done->ranged && !h->scaled)
    ir_volume_finish_with_range(out, ir_display_name(path), done->lo, done->hi, done->nonfinite);
  else
    ir_volume_finish(out, ir_display_name(path));
  return IR_OK;
}

#define GZ_CHUNK ((unsigned)1 << 24)

/* zlib's gzerror text without the "path: " it puts in front (the message names the file). */
const char *ir_gz_reason(gzFile gz, const char *path) {
  int code = 0;
  const char *msg = gzerror(gz, &code);
  size_t n = strlen(path);
  if (strncmp(msg, path, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ') msg += n + 2;
  return *msg ? msg : "unexpected end of file";
}

/* gzread into dst until `bytes` are in; a message for corrupt or short data. */
static ir_status gz_read_exact(gzFile gz, const char *path, void *dst, size_t bytes,
                               ir_progress *progress, char err[IR_ERR_LEN]) {
  unsigned char *out = dst;
  size_t done = 0;
  while (done < bytes) {
    size_t left = bytes - done;
    unsigned want = left < GZ_CHUNK ? (unsigned)left : GZ_CHUNK;
    int got = gzread(gz, out + done, want);
    if (got < 0) {
      int code = 0;
      gzerror(gz, &code);
      const char *msg = ir_gz_reason(gz, path);
      if (code == Z_MEM_ERROR) {
        snprintf(err, IR_ERR_LEN, "%s: out of host memory while decompressing", path);
        return IR_ERR_RUNTIME;
      }
      return ir_input_error(err, path, "corrupt gzip data after %zu decompressed bytes (%s)",
                            done, msg);
    }
    done += (size_t)got;
    ir_progress_add(progress, (size_t)got);
    if ((unsigned)got < want) {
      return ir_input_error(err, path, "truncated gzip data: %zu of %zu bytes (%s)", done, bytes,
                            ir_gz_reason(gz, path));
    }
  }
  return IR_OK;
}

/* A box of a gzip file: the whole stream is decompressed in chunks (gzip has no random
 * access), and only the box's bytes are kept. */
static ir_status gz_read_box(gzFile gz, const char *path, const ir_header *h,
                             const size_t off[3], const size_t size[3], size_t bytes,
                             ir_volume *out, ir_progress *progress, char err[IR_ERR_LEN]) {
  ir_region_sink sink = {.elem = ir_voxel_type_size(h->type), .dst = out->voxels};
  memcpy(sink.dims, h->dims, sizeof sink.dims);
  memcpy(sink.off, off, sizeof sink.off);
  memcpy(sink.size, size, sizeof sink.size);
  unsigned char *chunk = malloc(GZ_CHUNK);
  if (!chunk) {
    snprintf(err, IR_ERR_LEN, "%s: out of host memory for decompression", path);
    return IR_ERR_RUNTIME;
  }
  ir_status status = IR_OK;
  for (size_t done = 0; done < bytes && status == IR_OK;) {
    size_t want = bytes - done < GZ_CHUNK ? bytes - done : GZ_CHUNK;
    status = gz_read_exact(gz, path, chunk, want, progress, err);
    if (status == IR_OK) ir_region_scatter(&sink, done, chunk, want);
    done += want;
  }
  free(chunk);
  return status;
}

ir_status ir_gz_read_voxels(const ir_header *h, const char *path, size_t offset,
                            const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]) {
  ir_status status = ir_check_file(path, NULL, err);
  if (status != IR_OK) return status;
  FILE *probe = fopen(path, "rb");
  unsigned char magic[2] = {0, 0};
  size_t got_magic = probe ? fread(magic, 1, 2, probe) : 0;
  if (probe) fclose(probe);
  /* gzread passes non-gzip files through unchanged; a .gz name on plain data is a mistake. */
  if (got_magic < 2 || magic[0] != 0x1f || magic[1] != 0x8b)
    return ir_input_error(err, path, "not a gzip file (no gzip signature)");
  size_t box_off[3], box_size[3], bytes = 0;
  if (!ir_volume_byte_count(h->dims, h->type, &bytes, path, err)) return IR_ERR_INPUT;
  status = ir_region_resolve(desc, h->dims, path, box_off, box_size, err);
  if (status != IR_OK) return status;
  if (desc->header_only && !desc->check_data) {
    header_only(h, desc, path, out);
    return IR_OK;
  }
  bool box = ir_region_is_partial(h->dims, box_size);
  /* The compressed file must be able to hold the voxels before any memory is taken for them. */
  size_t file_size = 0;
  status = ir_check_file(path, &file_size, err);
  if (status == IR_OK) status = check_compressed_size(h, path, file_size, bytes, offset, err);
  if (status == IR_OK && desc->header_only) {
    header_only(h, desc, path, out);
    return IR_OK;
  }
  if (status == IR_OK) status = check_load_memory(h, box_size, desc, path, err);
  if (status != IR_OK) return status;
  status = ir_volume_allocate(out, box_size, h->type, desc, path, err);
  if (status != IR_OK) return status;
  memcpy(out->full_dims, h->dims, sizeof out->full_dims);
  memcpy(out->origin, box_off, sizeof out->origin);
  gzFile gz = gzopen(path, "rb");
  if (!gz) {
    ir_volume_free(out);
    return ir_input_error(err, path, "cannot open: %s", strerror(errno));
  }
  gzbuffer(gz, 1u << 18);
  if (offset > 0 && gzseek(gz, (z_off_t)offset, SEEK_SET) != (z_off_t)offset) {
    status = ir_input_error(err, path, "gzip data end before byte %zu, where the voxels begin (%s)",
                            offset, ir_gz_reason(gz, path));
  }
  ir_progress progress;
  ir_progress_begin(&progress, desc, ir_display_name(path), bytes);
  if (status == IR_OK && !box) status = gz_read_exact(gz, path, out->voxels, out->bytes, &progress, err);
  if (status == IR_OK && box) status = gz_read_box(gz, path, h, box_off, box_size, bytes, out, &progress, err);
  ir_progress_end(&progress);
  if (status == IR_OK) {
    unsigned char extra;
    int more = gzread(gz, &extra, 1);
    if (more > 0)
      status = ir_input_error(err, path,
                              "decompresses to more than %zu bytes, the size of %zux%zux%zu %s",
                              bytes, h->dims[0], h->dims[1], h->dims[2],
                              ir_voxel_type_name(h->type));
    else if (more < 0)
      status = ir_input_error(err, path, "corrupt gzip data at the end (%s)", ir_gz_reason(gz, path));
  }
  gzclose(gz);
  if (status != IR_OK) {
    ir_volume_free(out);
    return status;
  }
  return finish_read(h, path, desc, NULL, out, err);
}

/* The whole volume of uncompressed data: the data files' starts (after line and byte skips,
 * sizes checked), then the pieces read by several threads (read_pieces.c). */
static ir_status read_plain_pieces(const ir_header *h, char **paths, const char *header_path, size_t share,
                                   size_t files, const ir_volume_desc *desc, ir_volume *out, ir_progress *progress,
                                   pieces_done *done, char err[IR_ERR_LEN]) {
  ir_piece_file *parts = calloc(files, sizeof *parts);
  if (!parts) {
    snprintf(err, IR_ERR_LEN, "%s: out of host memory", header_path);
    return IR_ERR_RUNTIME;
  }
  ir_status status = IR_OK;
  for (size_t i = 0; i < files && status == IR_OK; i++) {
    const char *file = h->file_count ? paths[i] : header_path;
    FILE *f = NULL;
    size_t start = 0;
    status = open_data_file(h, file, file, h->file_count ? 0 : h->data_offset, share, &f, &start, err);
    if (f) fclose(f);
    parts[i] = (ir_piece_file){file, start, i * share, share};
  }
  /* Scaled values are made after the read: a sink would see the stored ones. */
  ir_volume_desc plain = *desc;
  if (h->scaled) plain.sink = NULL;
  if (status == IR_OK) {
    status = ir_read_pieces(parts, files, h->dims, h->type, needs_swap(h), out->voxels, &plain, progress, &done->lo,
                            &done->hi, &done->nonfinite, &out->streamed, err);
    done->swapped = done->ranged = status == IR_OK;
  }
  free(parts);
  return status;
}

ir_status ir_header_read_voxels(const ir_header *h, const char *header_path,
                                const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]) {
  size_t bytes = 0;
  if (!ir_volume_byte_count(h->dims, h->type, &bytes, header_path, err)) return IR_ERR_INPUT;
  size_t files = h->file_count ? h->file_count : 1;
  if (bytes % files != 0)
    return ir_input_error(err, header_path,
                          "%zu data files cannot share %zu bytes (%zux%zux%zu %s) equally", files,
                          bytes, h->dims[0], h->dims[1], h->dims[2], ir_voxel_type_name(h->type));
  size_t box_off[3], box_size[3];
  ir_status status = ir_region_resolve(desc, h->dims, header_path, box_off, box_size, err);
  if (status != IR_OK) return status;
  if (desc->header_only && !desc->check_data) {
    header_only(h, desc, header_path, out);
    out->streamable = h->encoding == IR_ENCODING_RAW && !h->scaled && !ir_region_is_partial(h->dims, box_size);
    return IR_OK;
  }
  bool box = ir_region_is_partial(h->dims, box_size);
  pieces_done done = {0};
  /* Check every data file exists before allocating: a typo in a pattern is the common case. */
  char **paths = calloc(files, sizeof *paths);
  if (!paths) {
    snprintf(err, IR_ERR_LEN, "%s: out of host memory", header_path);
    return IR_ERR_RUNTIME;
  }
  for (size_t i = 0; i < h->file_count && status == IR_OK; i++) {
    paths[i] = ir_path_join_dir(header_path, h->files[i]);
    if (!paths[i]) {
      snprintf(err, IR_ERR_LEN, "%s: out of host memory", header_path);
      status = IR_ERR_RUNTIME;
      break;
    }
    char sub[IR_ERR_LEN];
    if (ir_check_file(paths[i], NULL, sub) != IR_OK)
      status = ir_input_error(err, header_path, "data file %s", sub);
  }
  /* Sizes before the allocation: a header (or a file name) that promises more voxels than its
   * files can hold fails here, naming both numbers, instead of allocating first. */
  for (size_t i = 0; i < files && status == IR_OK; i++) {
    const char *file = h->file_count ? paths[i] : header_path;
    size_t file_size = 0;
    status = ir_check_file(file, &file_size, err);
    if (status == IR_OK)
      status = precheck_file(h, file, file_size, h->file_count ? 0 : h->data_offset, bytes / files, err);
  }
  if (status == IR_OK && desc->header_only) {
    for (size_t i = 0; i < files; i++) free(paths[i]);
    free(paths);
    header_only(h, desc, header_path, out);
    out->streamable = h->encoding == IR_ENCODING_RAW && !h->scaled && !box;
    return IR_OK;
  }
  if (status == IR_OK) status = check_load_memory(h, box_size, desc, header_path, err);
  if (status == IR_OK) status = ir_volume_allocate(out, box_size, h->type, desc, header_path, err);
  if (status == IR_OK) {
    ir_region_sink sink = {.elem = ir_voxel_type_size(h->type), .dst = out->voxels};
    memcpy(sink.dims, h->dims, sizeof sink.dims);
    memcpy(sink.off, box_off, sizeof sink.off);
    memcpy(sink.size, box_size, sizeof sink.size);
    ir_progress progress;
    size_t share = bytes / files;
    bool compressed = h->encoding != IR_ENCODING_RAW;
    ir_progress_begin(&progress, desc, ir_display_name(header_path), box && !compressed ? out->bytes : bytes);
    if (box && !compressed) {
      status = read_box_plain(h, paths, header_path, share, &sink, &progress, err);
    } else if (!compressed) {
      status = read_plain_pieces(h, paths, header_path, share, files, desc, out, &progress, &done, err);
    } else {
      for (size_t i = 0; i < files && status == IR_OK; i++) {
        unsigned char *dst = (unsigned char *)out->voxels + i * share;
        const char *file = h->file_count ? paths[i] : header_path;
        status = read_one_file(h, file, file, h->file_count ? 0 : h->data_offset, dst,
                               box ? &sink : NULL, i * share, share, &progress, err);
      }
    }
    ir_progress_end(&progress);
    memcpy(out->full_dims, h->dims, sizeof out->full_dims);
    memcpy(out->origin, box_off, sizeof out->origin);
  }
  for (size_t i = 0; i < files; i++) free(paths[i]);
  free(paths);
  if (status != IR_OK) {
    ir_volume_free(out);
    return status;
  }
  return finish_read(h, header_path, desc, &done, out, err);
}
