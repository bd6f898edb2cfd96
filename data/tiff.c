/* TIFF stacks through libtiff, as microscopes, micro-CT and ImageJ write them.
 *
 * Read: a multi-page file (each page one z slice; ImageJ hyperstacks with one channel and one
 * time point), a folder of slices (every .tif/.tiff in it, in natural name order: slice_2
 * before slice_10), or a printf pattern (slice_%03d.tif: numbers from 0, or from 1 when 0 is
 * missing, until the first missing file). Pages of one sample: 8/16/32/64-bit unsigned and
 * signed integers, 32/64-bit float, striped or tiled, any compression libtiff decodes, classic
 * or BigTIFF; every page with the width, height and sample type of the first. Types become
 * voxel types as ir_volume_from_samples says (int8 as int16, float64 as float32). Spacing: x and
 * y from XResolution/YResolution (1/resolution, in the file's unit), z from ImageJ's
 * "spacing=" (else the x spacing when the resolution tags give one, else 1); the unit (ImageJ's
 * "unit=" or the resolution unit) goes into the description.
 * A sub-box (ir_volume_desc.region_*, distributed bricks) decodes only the pages it spans; a
 * header-only load reads no pixels unless the type depends on them (32/64-bit integers).
 * Refused, with the reason: several samples a pixel (RGB), other bit depths, pages that differ,
 * ImageJ hyperstacks of several channels or time points, data shorter than the pages claim. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <tiffio.h>

#include "data/volume_internal.h"

/* Compressed pages cannot claim more than this many bytes per byte of file (LZW's best case
 * is below 4096:1): checked before the volume is allocated. */
#define TIFF_MAX_RATIO 4096u

typedef struct tiff_error {
  char text[256];
} tiff_error;

/* A TIFF in memory (the fuzz target): libtiff's client I/O over a buffer. */
typedef struct tiff_memory {
  const unsigned char *bytes;
  size_t len, pos;
} tiff_memory;

static tmsize_t mem_read(thandle_t h, void *buf, tmsize_t n) {
  tiff_memory *m = (tiff_memory *)h;
  size_t left = m->pos < m->len ? m->len - m->pos : 0;
  size_t want = n > 0 ? (size_t)n : 0;
  if (want > left) want = left;
  memcpy(buf, m->bytes + m->pos, want);
  m->pos += want;
  return (tmsize_t)want;
}

static tmsize_t mem_write(thandle_t h, void *buf, tmsize_t n) {
  (void)h;
  (void)buf;
  (void)n;
  return 0;
}

static toff_t mem_seek(thandle_t h, toff_t off, int whence) {
  tiff_memory *m = (tiff_memory *)h;
  uint64_t base = whence == SEEK_CUR ? m->pos : whence == SEEK_END ? m->len : 0;
  if (off > UINT64_MAX - base) return (toff_t)-1;
  uint64_t to = base + off;
  if (to > SIZE_MAX) return (toff_t)-1;
  m->pos = (size_t)to;
  return to;
}

static int mem_close(thandle_t h) {
  (void)h;
  return 0;
}

static toff_t mem_size(thandle_t h) { return ((tiff_memory *)h)->len; }

static int mem_map(thandle_t h, void **base, toff_t *size) {
  (void)h;
  (void)base;
  (void)size;
  return 0;
}

static void mem_unmap(thandle_t h, void *base, toff_t size) {
  (void)h;
  (void)base;
  (void)size;
}

#if TIFFLIB_VERSION >= 20221213
/* libtiff's messages go to the loader's message, never to stderr. */
static int on_tiff_error(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap) {
  (void)tif;
  (void)module;
  tiff_error *e = user;
  if (e && !e->text[0]) vsnprintf(e->text, sizeof e->text, fmt, ap);
  return 1;
}

static int on_tiff_warning(TIFF *tif, void *user, const char *module, const char *fmt,
                           va_list ap) {
  (void)tif;
  (void)user;
  (void)module;
  (void)fmt;
  (void)ap;
  return 1;
}

/* From the file at path, or from memory when mem is not NULL. */
static TIFF *tiff_open(const char *path, tiff_memory *mem, tiff_error *e) {
  TIFFOpenOptions *opts = TIFFOpenOptionsAlloc();
  if (!opts) return NULL;
  TIFFOpenOptionsSetErrorHandlerExtR(opts, on_tiff_error, e);
  TIFFOpenOptionsSetWarningHandlerExtR(opts, on_tiff_warning, NULL);
  TIFF *tif = mem ? TIFFClientOpenExt(path, "rm", (thandle_t)mem, mem_read, mem_write, mem_seek,
                                      mem_close, mem_size, mem_map, mem_unmap, opts)
                  : TIFFOpenExt(path, "r", opts);
  TIFFOpenOptionsFree(opts);
  return tif;
}
#else
/* Older libtiff: no per-file handlers; silence the global ones (the reason is then generic). */
static TIFF *tiff_open(const char *path, tiff_memory *mem, tiff_error *e) {
  (void)e;
  TIFFSetErrorHandler(NULL);
  TIFFSetWarningHandler(NULL);
  return mem ? TIFFClientOpen(path, "rm", (thandle_t)mem, mem_read, mem_write, mem_seek,
                              mem_close, mem_size, mem_map, mem_unmap)
             : TIFFOpen(path, "r");
}
#endif

/* One page's layout, as its tags say. */
typedef struct tiff_page {
  uint32_t width, height;
  ir_sample_type type;
} tiff_page;

static ir_status read_page_layout(TIFF *tif, const char *path, size_t page, tiff_page *out,
                                  char err[IR_ERR_LEN]) {
  uint32_t w = 0, h = 0;
  uint16_t spp = 1, bits = 1, format = SAMPLEFORMAT_UINT;
  if (!TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &w) || !TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &h) ||
      w == 0 || h == 0)
    return ir_input_error(err, path, "page %zu: no image width or height", page + 1);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
  TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &bits);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &format);
  if (spp != 1)
    return ir_input_error(err, path,
                          "page %zu has %u samples a pixel (RGB or several channels): only "
                          "single-channel images are read",
                          page + 1, (unsigned)spp);
  bool ok = true;
  ir_sample_type t = IR_SAMPLE_UINT8;
  if (format == SAMPLEFORMAT_UINT || format == SAMPLEFORMAT_INT) {
    bool sgn = format == SAMPLEFORMAT_INT;
    switch (bits) {
    case 8: t = sgn ? IR_SAMPLE_INT8 : IR_SAMPLE_UINT8; break;
    case 16: t = sgn ? IR_SAMPLE_INT16 : IR_SAMPLE_UINT16; break;
    case 32: t = sgn ? IR_SAMPLE_INT32 : IR_SAMPLE_UINT32; break;
    case 64: t = sgn ? IR_SAMPLE_INT64 : IR_SAMPLE_UINT64; break;
    default: ok = false;
    }
  } else if (format == SAMPLEFORMAT_IEEEFP) {
    if (bits == 32) t = IR_SAMPLE_FLOAT32;
    else if (bits == 64) t = IR_SAMPLE_FLOAT64;
    else ok = false;
  } else {
    ok = false;
  }
  if (!ok)
    return ir_input_error(err, path,
                          "page %zu: %u-bit samples of format %u are not supported (8/16/32/64-bit "
                          "integers, 32/64-bit float)",
                          page + 1, (unsigned)bits, (unsigned)format);
  *out = (tiff_page){w, h, t};
  return IR_OK;
}

/* ---- ImageJ description ------------------------------------------------------------------ */
typedef struct imagej_info {
  bool present;
  long images, channels, slices, frames;
  double spacing;
  char unit[32];
} imagej_info;

static void parse_imagej(const char *text, imagej_info *ij) {
  memset(ij, 0, sizeof *ij);
  if (!text || strncmp(text, "ImageJ=", 7) != 0) return;
  ij->present = true;
  ij->channels = ij->slices = ij->frames = 1;
  for (const char *line = text; line && *line;) {
    const char *end = strchr(line, '\n');
    size_t n = end ? (size_t)(end - line) : strlen(line);
    char buf[128];
    if (n < sizeof buf) {
      memcpy(buf, line, n);
      buf[n] = '\0';
      char *eq = strchr(buf, '=');
      if (eq) {
        *eq = '\0';
        const char *v = eq + 1;
        if (strcmp(buf, "images") == 0) ij->images = strtol(v, NULL, 10);
        else if (strcmp(buf, "channels") == 0) ij->channels = strtol(v, NULL, 10);
        else if (strcmp(buf, "slices") == 0) ij->slices = strtol(v, NULL, 10);
        else if (strcmp(buf, "frames") == 0) ij->frames = strtol(v, NULL, 10);
        else if (strcmp(buf, "spacing") == 0) ij->spacing = strtod(v, NULL);
        else if (strcmp(buf, "unit") == 0) snprintf(ij->unit, sizeof ij->unit, "%s", v);
      }
    }
    line = end ? end + 1 : NULL;
  }
}

/* ---- The list of files ------------------------------------------------------------------- */
typedef struct file_list {
  char **paths;
  size_t count;
  tiff_memory *memory; /* one TIFF in memory instead of files (the fuzz target) */
} file_list;

static void file_list_free(file_list *l) {
  for (size_t i = 0; i < l->count; i++) free(l->paths[i]);
  free(l->paths);
  l->paths = NULL;
  l->count = 0;
}

static bool file_list_add(file_list *l, const char *path) {
  if (l->count >= IR_MAX_DATA_FILES) return false;
  char **grown = realloc(l->paths, (l->count + 1) * sizeof *grown);
  if (!grown) return false;
  l->paths = grown;
  char *copy = strdup(path);
  if (!copy) return false;
  l->paths[l->count++] = copy;
  return true;
}

static int compare_paths(const void *x, const void *y) {
  const char *a = *(char *const *)x, *b = *(char *const *)y;
  const char *sa = strrchr(a, '/'), *sb = strrchr(b, '/');
  int c = ir_natural_compare(sa ? sa + 1 : a, sb ? sb + 1 : b);
  return c ? c : strcmp(a, b);
}

static bool is_tiff_name(const char *name) {
  return ir_path_has_suffix(name, ".tif") || ir_path_has_suffix(name, ".tiff");
}

static ir_status list_folder(const char *dir_path, file_list *l, char err[IR_ERR_LEN]) {
  DIR *dir = opendir(dir_path);
  if (!dir) return ir_input_error(err, dir_path, "cannot open the folder: %s", strerror(errno));
  ir_status status = IR_OK;
  for (struct dirent *e; status == IR_OK && (e = readdir(dir)) != NULL;) {
    if (e->d_name[0] == '.' || !is_tiff_name(e->d_name)) continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir_path, e->d_name);
    if (!file_list_add(l, path))
      status = ir_input_error(err, dir_path, "more than %d TIFF files", IR_MAX_DATA_FILES);
  }
  closedir(dir);
  if (status == IR_OK && l->count == 0)
    status = ir_input_error(err, dir_path, "no .tif or .tiff files in the folder");
  if (status == IR_OK) qsort(l->paths, l->count, sizeof *l->paths, compare_paths);
  return status;
}

static bool file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static ir_status expand_pattern(const char *fmt, file_list *l, char err[IR_ERR_LEN]) {
  if (!ir_is_number_pattern(fmt))
    return ir_input_error(err, fmt, "a slice pattern needs exactly one %%d-style conversion "
                                    "(e.g. slice_%%03d.tif)");
  char path[4096];
  long first = 0;
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#endif
  snprintf(path, sizeof path, fmt, 0);
  if (!file_exists(path)) first = 1;
  for (long i = first;; i++) {
    snprintf(path, sizeof path, fmt, (int)i);
    if (!file_exists(path)) break;
    if (!file_list_add(l, path))
      return ir_input_error(err, fmt, "more than %d files match the pattern", IR_MAX_DATA_FILES);
  }
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
  if (l->count == 0) {
    snprintf(path, sizeof path, fmt, 1);
    return ir_input_error(err, fmt, "no file matches the pattern (neither number 0 nor 1: %s)",
                          path);
  }
  return IR_OK;
}

/* ---- Reading pages ------------------------------------------------------------------------ */
static ir_status read_striped(TIFF *tif, const char *path, size_t page, const tiff_page *pg,
                              unsigned char *dst, tiff_error *e, char err[IR_ERR_LEN]) {
  size_t row_bytes = (size_t)pg->width * ir_sample_size(pg->type);
  uint32_t rows_per_strip = pg->height;
  TIFFGetFieldDefaulted(tif, TIFFTAG_ROWSPERSTRIP, &rows_per_strip);
  if (rows_per_strip == 0 || rows_per_strip > pg->height) rows_per_strip = pg->height;
  tmsize_t strip_size = TIFFStripSize(tif);
  if (strip_size <= 0 || (size_t)strip_size < row_bytes)
    return ir_input_error(err, path, "page %zu: bad strip layout", page + 1);
  unsigned char *buf = malloc((size_t)strip_size);
  if (!buf) {
    snprintf(err, IR_ERR_LEN, "%s: out of host memory for a strip", path);
    return IR_ERR_RUNTIME;
  }
  ir_status status = IR_OK;
  for (uint32_t row = 0; row < pg->height && status == IR_OK; row += rows_per_strip) {
    uint32_t rows = pg->height - row < rows_per_strip ? pg->height - row : rows_per_strip;
    tmsize_t want = (tmsize_t)(rows * row_bytes);
    tmsize_t got = TIFFReadEncodedStrip(tif, TIFFComputeStrip(tif, row, 0), buf, want);
    if (got < want)
      status = ir_input_error(err, path, "page %zu: cannot read the strip at row %u (%s)",
                              page + 1, (unsigned)row, e->text[0] ? e->text : "truncated");
    else
      memcpy(dst + row * row_bytes, buf, (size_t)want);
  }
  free(buf);
  return status;
}

static ir_status read_tiled(TIFF *tif, const char *path, size_t page, const tiff_page *pg,
                            unsigned char *dst, tiff_error *e, char err[IR_ERR_LEN]) {
  uint32_t tw = 0, th = 0;
  TIFFGetField(tif, TIFFTAG_TILEWIDTH, &tw);
  TIFFGetField(tif, TIFFTAG_TILELENGTH, &th);
  tmsize_t tile_size = TIFFTileSize(tif);
  size_t sample = ir_sample_size(pg->type);
  if (tw == 0 || th == 0 || tile_size <= 0 || (size_t)tile_size < (size_t)tw * th * sample)
    return ir_input_error(err, path, "page %zu: bad tile layout", page + 1);
  /* Tiles are multiples of 16 (TIFF 6.0, section 15): one wider or taller than its page so
   * rounded holds no pixel and only asks for memory, so refuse it before the tile buffer. */
  if ((uint64_t)tw > ((uint64_t)pg->width + 15) / 16 * 16 || (uint64_t)th > ((uint64_t)pg->height + 15) / 16 * 16 ||
      (uint64_t)tile_size > (uint64_t)tw * th * sample * 4)
    return ir_input_error(err, path, "page %zu: tiles of %ux%u (%lld bytes) do not fit its %ux%u pixels",
                          page + 1, (unsigned)tw, (unsigned)th, (long long)tile_size, (unsigned)pg->width,
                          (unsigned)pg->height);
  unsigned char *buf = malloc((size_t)tile_size);
  if (!buf) {
    snprintf(err, IR_ERR_LEN, "%s: out of host memory for a tile", path);
    return IR_ERR_RUNTIME;
  }
  ir_status status = IR_OK;
  size_t row_bytes = (size_t)pg->width * sample;
  for (uint32_t y = 0; y < pg->height && status == IR_OK; y += th) {
    for (uint32_t x = 0; x < pg->width && status == IR_OK; x += tw) {
      if (TIFFReadTile(tif, buf, x, y, 0, 0) < 0) {
        status = ir_input_error(err, path, "page %zu: cannot read the tile at %u,%u (%s)",
                                page + 1, (unsigned)x, (unsigned)y,
                                e->text[0] ? e->text : "truncated");
        break;
      }
      /* Tiles on the right and bottom edges stick out of the image: copy the inside. */
      uint32_t cols = pg->width - x < tw ? pg->width - x : tw;
      uint32_t rows = pg->height - y < th ? pg->height - y : th;
      for (uint32_t r = 0; r < rows; r++)
        memcpy(dst + (size_t)(y + r) * row_bytes + (size_t)x * sample,
               buf + (size_t)r * tw * sample, (size_t)cols * sample);
    }
  }
  free(buf);
  return status;
}

/* Pages in all files, checked against the first; fills the layout and the page count. */
static ir_status scan_files(const file_list *l, tiff_page *first, size_t *pages, size_t *budget,
                            imagej_info *ij, double res[2], int *res_unit, char err[IR_ERR_LEN]) {
  *pages = 0;
  *budget = 0;
  for (size_t f = 0; f < l->count; f++) {
    const char *path = l->paths[f];
    size_t file_size = l->memory ? l->memory->len : 0;
    ir_status status = l->memory ? IR_OK : ir_check_file(path, &file_size, err);
    if (status != IR_OK) return status;
    tiff_error e = {{0}};
    if (l->memory) l->memory->pos = 0;
    TIFF *tif = tiff_open(path, l->memory, &e);
    if (!tif) return ir_input_error(err, path, "not a TIFF file (%s)", e.text[0] ? e.text : "cannot open");
    size_t page = 0;
    bool compressed = false;
    do {
      tiff_page pg = {0, 0, IR_SAMPLE_UINT8};
      status = read_page_layout(tif, path, page, &pg, err);
      if (status != IR_OK) break;
      uint16_t compression = COMPRESSION_NONE;
      TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &compression);
      compressed = compressed || compression != COMPRESSION_NONE;
      if (*pages == 0) {
        *first = pg;
        char *desc = NULL;
        if (TIFFGetField(tif, TIFFTAG_IMAGEDESCRIPTION, &desc)) parse_imagej(desc, ij);
        float xr = 0, yr = 0;
        uint16_t unit = RESUNIT_NONE;
        if (TIFFGetField(tif, TIFFTAG_XRESOLUTION, &xr) && TIFFGetField(tif, TIFFTAG_YRESOLUTION, &yr)) {
          res[0] = xr;
          res[1] = yr;
        }
        TIFFGetFieldDefaulted(tif, TIFFTAG_RESOLUTIONUNIT, &unit);
        *res_unit = unit;
      } else if (pg.width != first->width || pg.height != first->height || pg.type != first->type) {
        status = ir_input_error(err, path,
                                "page %zu is %ux%u %s, the first page %ux%u %s: every slice must "
                                "match",
                                page + 1, (unsigned)pg.width, (unsigned)pg.height,
                                ir_sample_name(pg.type), (unsigned)first->width,
                                (unsigned)first->height, ir_sample_name(first->type));
        break;
      }
      (*pages)++;
      page++;
    } while (TIFFReadDirectory(tif));
    /* TIFFReadDirectory also ends the walk on a directory it cannot read: a stack cut short
     * must not load as fewer pages. */
    if (status == IR_OK && e.text[0])
      status = ir_input_error(err, path, "truncated or corrupt after page %zu (%s)", page, e.text);
    uint16_t page_number = 0, page_total = 0;
    if (status == IR_OK && TIFFSetDirectory(tif, 0) &&
        TIFFGetField(tif, TIFFTAG_PAGENUMBER, &page_number, &page_total) && page_total > page)
      status = ir_input_error(err, path, "truncated or corrupt: %zu pages, the first says %u",
                              page, (unsigned)page_total);
    TIFFClose(tif);
    if (status != IR_OK) return status;
    /* What the files can hold at most: their bytes, times the best compression ratio. */
    size_t can_hold = compressed ? (file_size > SIZE_MAX / TIFF_MAX_RATIO ? SIZE_MAX
                                                                           : file_size * TIFF_MAX_RATIO)
                                 : file_size;
    *budget = *budget > SIZE_MAX - can_hold ? SIZE_MAX : *budget + can_hold;
  }
  return IR_OK;
}

/* The box of pages a load wants: pages off[2] .. off[2] + size[2], rows and columns likewise;
 * `page` is scratch for one whole page when the box is narrower than a page. */
typedef struct tiff_box {
  size_t off[3], size[3];
  size_t sample;       /* bytes a sample */
  unsigned char *page; /* NULL: the box is whole pages, read straight into dst */
} tiff_box;

/* Reads the box's pages of every file in l into dst (box-sized); pages outside the box are
 * skipped without being decoded, so a brick of a slice stack reads only its own slices. */
static ir_status read_files(const file_list *l, const tiff_page *pg, const tiff_box *box, unsigned char *dst,
                            ir_progress *progress, char err[IR_ERR_LEN]) {
  size_t at = 0, page_bytes = (size_t)pg->width * pg->height * box->sample;
  size_t row_bytes = box->size[0] * box->sample, box_page = row_bytes * box->size[1];
  for (size_t f = 0; f < l->count && at < box->off[2] + box->size[2]; f++) {
    tiff_error e = {{0}};
    if (l->memory) l->memory->pos = 0;
    TIFF *tif = tiff_open(l->paths[f], l->memory, &e);
    if (!tif) return ir_input_error(err, l->paths[f], "cannot open (%s)", e.text);
    ir_status status = IR_OK;
    size_t page = 0;
    do {
      if (at >= box->off[2] && at < box->off[2] + box->size[2]) {
        unsigned char *slice = box->page ? box->page : dst + (at - box->off[2]) * page_bytes;
        status = TIFFIsTiled(tif) ? read_tiled(tif, l->paths[f], page, pg, slice, &e, err)
                                  : read_striped(tif, l->paths[f], page, pg, slice, &e, err);
        for (size_t y = 0; status == IR_OK && box->page && y < box->size[1]; y++)
          memcpy(dst + (at - box->off[2]) * box_page + y * row_bytes,
                 box->page + ((box->off[1] + y) * pg->width + box->off[0]) * box->sample, row_bytes);
        ir_progress_add(progress, box_page);
      }
      at++;
      page++;
    } while (status == IR_OK && at < box->off[2] + box->size[2] && TIFFReadDirectory(tif));
    TIFFClose(tif);
    if (status != IR_OK) return status;
  }
  return IR_OK;
}

/* The voxel type a sample type becomes when no values are needed to decide it; false for the
 * wide integers, whose narrowest exact type depends on their values (ir_volume_from_samples). */
static bool fixed_voxel_type(ir_sample_type t, ir_voxel_type *out) {
  switch (t) {
  case IR_SAMPLE_UINT8: *out = IR_VOXEL_UINT8; return true;
  case IR_SAMPLE_UINT16: *out = IR_VOXEL_UINT16; return true;
  case IR_SAMPLE_INT8:
  case IR_SAMPLE_INT16: *out = IR_VOXEL_INT16; return true;
  case IR_SAMPLE_FLOAT32:
  case IR_SAMPLE_FLOAT64: *out = IR_VOXEL_FLOAT32; return true;
  default: return false;
  }
}

static const char *unit_name(int unit) {
  return unit == RESUNIT_INCH ? "inch" : unit == RESUNIT_CENTIMETER ? "cm" : "";
}

/* The pages of every file in l, in order, into out; frees l. */
static ir_status load_pages(file_list *l, const char *src, ir_status status, const ir_volume_desc *desc,
                            ir_volume *out, char err[IR_ERR_LEN]) {
  memset(out, 0, sizeof *out);
  tiff_page pg = {0};
  size_t pages = 0, budget = 0;
  imagej_info ij = {0};
  double res[2] = {0, 0};
  int res_unit = RESUNIT_NONE;
  if (status == IR_OK) status = scan_files(l, &pg, &pages, &budget, &ij, res, &res_unit, err);
  if (status == IR_OK && ij.present && (ij.channels > 1 || ij.frames > 1))
    status = ir_input_error(err, src,
                            "an ImageJ hyperstack of %ld channels and %ld frames: only one "
                            "channel and one time point are read (split it in ImageJ first)",
                            ij.channels, ij.frames);
  /* images= describes one file's stack; slice folders of ImageJ files each say their own. */
  if (status == IR_OK && l->count == 1 && ij.present && ij.images > 0 && (size_t)ij.images != pages)
    status = ir_input_error(err, src,
                            "the ImageJ description says %ld images, the file has %zu pages "
                            "(ImageJ's contiguous stacks over 4 GiB are not read)",
                            ij.images, pages);
  size_t dims[3] = {pg.width, pg.height, pages}, bytes = 0;
  if (status == IR_OK && !ir_sample_byte_count(dims, pg.type, &bytes, src, err))
    status = IR_ERR_INPUT;
  if (status == IR_OK && bytes > budget)
    status = ir_input_error(err, src,
                            "%zu pages of %zux%zu %s need %zu bytes, more than the files can "
                            "hold: the sizes are corrupt",
                            pages, dims[0], dims[1], ir_sample_name(pg.type), bytes);
  /* A sub-box (ir_volume_desc.region_*) reads only its pages and keeps only its rows. */
  tiff_box box = {{0}, {0}, ir_sample_size(pg.type), NULL};
  if (status == IR_OK) status = ir_region_resolve(desc, dims, src, box.off, box.size, err);
  ir_voxel_type fixed;
  if (status == IR_OK && desc->header_only && fixed_voxel_type(pg.type, &fixed)) {
    file_list_free(l);
    float ones[3] = {1.0f, 1.0f, 1.0f};
    ir_volume_header_only(out, dims, fixed, ones, ir_display_name(src));
    status = IR_OK;
  } else {
    size_t box_bytes = box.size[0] * box.size[1] * box.size[2] * box.sample;
    bool narrow = box.size[0] != dims[0] || box.size[1] != dims[1];
    unsigned char *samples = NULL;
    if (status == IR_OK && (!(samples = malloc(box_bytes ? box_bytes : 1)) ||
                            (narrow && !(box.page = malloc(bytes / pages))))) {
      snprintf(err, IR_ERR_LEN, "%s: out of host memory: %zux%zux%zu %s needs %zu bytes", src,
               box.size[0], box.size[1], box.size[2], ir_sample_name(pg.type), box_bytes);
      status = IR_ERR_RUNTIME;
    }
    if (status == IR_OK) {
      ir_progress progress;
      ir_progress_begin(&progress, desc, ir_display_name(src), box_bytes);
      status = read_files(l, &pg, &box, samples, &progress, err);
      ir_progress_end(&progress);
    }
    free(box.page);
    file_list_free(l);
    if (status != IR_OK) {
      free(samples);
      return status;
    }
    status = ir_volume_from_samples(out, box.size, samples, pg.type, 1.0, 0.0, src, err);
    if (status != IR_OK) return status;
    memcpy(out->origin, box.off, sizeof out->origin);
    memcpy(out->full_dims, dims, sizeof out->full_dims);
    if (desc->header_only) { /* wide integers: their type needed the values */
      free(out->voxels);
      out->voxels = NULL;
      out->bytes = 0;
    }
  }
  bool have_res = res[0] > 0 && res[1] > 0 && isfinite(res[0]) && isfinite(res[1]);
  if (have_res) {
    out->spacing[0] = (float)(1.0 / res[0]);
    out->spacing[1] = (float)(1.0 / res[1]);
    out->spacing[2] = out->spacing[0];
  }
  if (ij.present && ij.spacing > 0 && isfinite(ij.spacing)) out->spacing[2] = (float)ij.spacing;
  const char *unit = ij.present && ij.unit[0] ? ij.unit : have_res ? unit_name(res_unit) : "";
  if (unit[0]) snprintf(out->description, sizeof out->description, "spacing in %s", unit);
  if (pg.type == IR_SAMPLE_FLOAT64)
    snprintf(out->note, sizeof out->note, "64-bit float samples are kept as float32");
  return IR_OK;
}

ir_status ir_tiff_decode(const unsigned char *bytes, size_t len, const char *path, ir_volume *out,
                         char err[IR_ERR_LEN]) {
  tiff_memory mem = {bytes, len, 0};
  file_list l = {0};
  l.memory = &mem;
  ir_status status = IR_OK;
  if (!file_list_add(&l, path)) {
    snprintf(err, IR_ERR_LEN, "%s: out of host memory", path);
    status = IR_ERR_RUNTIME;
  }
  const ir_volume_desc quiet = {0}; /* from memory: no progress */
  return load_pages(&l, path, status, &quiet, out, err);
}

ir_status ir_load_tiff(const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]) {
  const char *src = desc->source;
  file_list l = {0};
  struct stat st;
  ir_status status;
  if (stat(src, &st) == 0 && S_ISDIR(st.st_mode)) {
    status = list_folder(src, &l, err);
  } else if (strchr(ir_display_name(src), '%') && !file_exists(src)) {
    status = expand_pattern(src, &l, err);
  } else {
    status = ir_check_file(src, NULL, err);
    if (status == IR_OK && !file_list_add(&l, src)) {
      snprintf(err, IR_ERR_LEN, "%s: out of host memory", src);
      status = IR_ERR_RUNTIME;
    }
  }
  status = load_pages(&l, src, status, desc, out, err);
  if (status != IR_OK) return status;
  if (desc->spacing_given) memcpy(out->spacing, desc->spacing, sizeof out->spacing);
  if (desc->header_only)
    snprintf(out->name, sizeof out->name, "%s", ir_display_name(src));
  else
    ir_volume_finish(out, ir_display_name(src));
  return IR_OK;
}
