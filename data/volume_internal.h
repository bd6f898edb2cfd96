/* Internals of the data module shared between its files; not part of the public API.
 *
 * Every file format is read in two steps: a parser turns the header (text or bytes already in
 * memory) into an ir_header that says where the voxels are and how they are stored, and
 * ir_header_read_voxels() reads, decompresses, byte-swaps and checks them. The parsers never
 * touch the file system, so the fuzz target can drive them from a buffer.
 */
#ifndef INKRAY_DATA_VOLUME_INTERNAL_H
#define INKRAY_DATA_VOLUME_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <zlib.h>

#include "data/volume.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Headers larger than this are certainly not headers (a LIST of 65536 slice names fits). */
#define IR_HEADER_MAX_BYTES ((size_t)16 << 20)
/* More data files than this is a corrupt pattern, not a volume. */
#define IR_MAX_DATA_FILES 65536
/* Volumes above this many bytes show progress on stderr when the caller asks for it. */
#define IR_PROGRESS_MIN_BYTES ((size_t)256 << 20)

typedef enum ir_encoding {
  IR_ENCODING_RAW = 0,
  IR_ENCODING_GZIP, /* gzip members (NRRD "gzip") */
  IR_ENCODING_ZLIB, /* one zlib stream (MetaImage CompressedData) */
} ir_encoding;

/* What a header says about the voxels. */
typedef struct ir_header {
  size_t dims[3];
  ir_voxel_type type;
  ir_endian endian;
  float spacing[3];
  ir_encoding encoding;
  /* No data files: the voxels follow the header in the same file, at data_offset. Otherwise
   * each of the files holds an equal share of the voxels, in order (paths as written in the
   * header; relative ones are relative to the header's folder). */
  char **files;
  size_t file_count, file_capacity;
  size_t data_offset;   /* attached data: where the voxels begin in the header's file */
  size_t line_skip;     /* NRRD "line skip": lines to skip at the start of each data file */
  size_t file_skip;     /* bytes to skip at the start of each data file (after line_skip) */
  size_t inflated_skip; /* compressed data: decompressed bytes to drop before the voxels */
  bool skip_to_end;     /* raw data are the last bytes of each file ("byte skip: -1",
                           "HeaderSize = -1") */
  bool scaled;          /* NIfTI scl_slope/scl_inter: values become slope*v + inter, in float32 */
  float scale_slope, scale_inter;
  ir_axis up_axis;      /* the index axis toward the patient's superior side, if the header says */
  const char *up_source; /* the header field that said it (a string literal) */
  size_t steps;         /* a 4-D file (NRRD dimension 4, NIfTI dim[4]): time steps of dims
                           voxels each, one after another (0 or 1: a 3-D volume) */
  char note[160];       /* what the header left to a guess (NIfTI pixdim 0: spacing 1), shown as
                           the volume's note unless --spacing replaces the guess; empty if none */
} ir_header;

void ir_header_init(ir_header *h);
void ir_header_free(ir_header *h);
/* Appends a copy of `name` to h->files. */
bool ir_header_add_file(ir_header *h, const char *name, size_t len);

/* Parsers, from memory. `path` names the header in messages. Each fills `h` and returns IR_OK,
 * or IR_ERR_INPUT with a one-line message (h is then freed). `len` bytes of `text` are read,
 * NUL bytes included; the text need not be NUL-terminated. */
ir_status ir_nrrd_parse(const char *text, size_t len, const char *path, ir_header *h,
                        char err[IR_ERR_LEN]);
ir_status ir_meta_parse(const char *text, size_t len, const char *path, ir_header *h,
                        char err[IR_ERR_LEN]);
ir_status ir_qvis_parse(const char *text, size_t len, const char *path, ir_header *h,
                        char err[IR_ERR_LEN]);
/* NIfTI-1: `bytes` holds at least the 348-byte header (more is ignored). */
#define IR_NIFTI_HEADER_BYTES 348
ir_status ir_nifti_parse(const unsigned char *bytes, size_t len, const char *path, ir_header *h,
                         char err[IR_ERR_LEN]);

/* The header of a NRRD or NIfTI file (4-D ones included), read from its file. */
ir_status ir_nrrd_read_header(const char *path, ir_header *h, char err[IR_ERR_LEN]);
ir_status ir_nifti_read_header(const char *path, ir_header *h, char err[IR_ERR_LEN]);
/* A 4-D file given where one volume is wanted: one line saying to open it as a time series. */
ir_status ir_refuse_4d(const ir_header *h, const char *path, char err[IR_ERR_LEN]);
/* Where the voxels of data file `index` (of h->file_count, or the header's own file) start,
 * after line and byte skips, with its size checked against its share of the data; raw encoding. */
ir_status ir_header_data_start(const ir_header *h, const char *header_path, size_t index, size_t share,
                               size_t *start, char err[IR_ERR_LEN]);
/* NIfTI scaling: the stored values become slope * v + inter, as float32 (out's type changes). */
ir_status ir_apply_scaling(const ir_header *h, ir_volume *out, const char *what, char err[IR_ERR_LEN]);
/* Natural order of names: runs of digits compare as numbers (slice_2 before slice_10). */
int ir_natural_compare(const char *a, const char *b);
/* Exactly one printf conversion of an integer (%d, %03d, %i, %u) in fmt. */
bool ir_is_number_pattern(const char *fmt);

/* Format loaders: path is the file, desc the user's options. */
ir_status ir_load_raw(const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]);
ir_status ir_load_nrrd(const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]);
ir_status ir_load_meta(const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]);
ir_status ir_load_nifti(const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]);
ir_status ir_load_qvis(const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]);
ir_status ir_load_builtin(const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]);
/* DICOM series (a folder or one file of it), TIFF stacks and slice folders, VTK image data.
 * Each is built only when its library is found at configure time (INKRAY_HAVE_GDCM,
 * INKRAY_HAVE_TIFF, INKRAY_HAVE_EXPAT); otherwise ir_volume_load refuses the format. */
ir_status ir_load_dicom(const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]);
ir_status ir_load_tiff(const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]);
ir_status ir_load_vti(const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]);
/* Zarr v2/v3 arrays and OME-Zarr images (zarr.c; needs cJSON, INKRAY_HAVE_CJSON), HDF5 datasets
 * (hdf5.c; needs libhdf5, INKRAY_HAVE_HDF5): refused with a line naming the package without. */
ir_status ir_load_zarr(const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]);
ir_status ir_load_hdf5(const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]);
/* A whole .vti file in memory (the loader and the fuzz target): `array` as --array. */
ir_status ir_vti_decode(const unsigned char *bytes, size_t len, const char *path,
                        const char *array, ir_volume *out, char err[IR_ERR_LEN]);
/* A whole TIFF file in memory (the fuzz target): all its pages, not finished (no range). */
ir_status ir_tiff_decode(const unsigned char *bytes, size_t len, const char *path, ir_volume *out,
                         char err[IR_ERR_LEN]);

/* ---- Sample types of the file formats (convert.c) ------------------------------------------ */
/* The formats store more types than the four voxel types; the loaders read samples of these
 * and ir_volume_from_samples turns them into voxels. */
typedef enum ir_sample_type {
  IR_SAMPLE_INT8 = 0,
  IR_SAMPLE_UINT8,
  IR_SAMPLE_INT16,
  IR_SAMPLE_UINT16,
  IR_SAMPLE_INT32,
  IR_SAMPLE_UINT32,
  IR_SAMPLE_INT64,
  IR_SAMPLE_UINT64,
  IR_SAMPLE_FLOAT32,
  IR_SAMPLE_FLOAT64,
  IR_SAMPLE_TYPE_COUNT
} ir_sample_type;
size_t ir_sample_size(ir_sample_type t);
const char *ir_sample_name(ir_sample_type t); /* "int8", "uint64", "float64", ... */

/* Makes out from dims[0]*dims[1]*dims[2] samples (host byte order) in `samples`, a malloc'd
 * buffer that this function takes over (it becomes out->voxels or is freed). Values become
 * slope * v + inter (pass 1, 0 for none) and are kept in the narrowest voxel type that holds
 * them exactly: uint8, uint16, int16 and float32 samples as they are; int8 as int16; wider
 * integers (and rescaled integers) as uint8, int16 or uint16 when their range fits, else
 * float32 when every value is at most 2^24 in magnitude, else refused; float64 and non-integer
 * rescaling as float32. Spacing is set to 1; the caller sets it and finishes the volume. */
ir_status ir_volume_from_samples(ir_volume *out, const size_t dims[3], void *samples,
                                 ir_sample_type type, double slope, double inter,
                                 const char *path, char err[IR_ERR_LEN]);
/* dims[0]*dims[1]*dims[2]*ir_sample_size(type) in *bytes; false (with a message) on zero dims
 * or overflow. */
bool ir_sample_byte_count(const size_t dims[3], ir_sample_type type, size_t *bytes,
                          const char *path, char err[IR_ERR_LEN]);

/* Reads the voxels a header describes into out (dims, type, spacing, voxels, bytes), then
 * finishes the volume (ir_volume_finish). `header_path` is the header's file. */
ir_status ir_header_read_voxels(const ir_header *h, const char *header_path,
                                const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]);

/* Reads a gzip file holding a header-less voxel block at `offset` (decompressed bytes) with
 * zlib's gz* API (.raw.gz, .nii.gz), then finishes the volume as ir_header_read_voxels does. */
ir_status ir_gz_read_voxels(const ir_header *h, const char *path, size_t offset,
                            const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]);

/* gzerror's reason for a gzFile opened from `path`, without the path in front. */
const char *ir_gz_reason(gzFile gz, const char *path);

/* ---- Header text (header_text.c) ---------------------------------------------------------- */
/* A NUL byte on a header line: binary bytes where the header's text should be. */
#define IR_HEADER_NUL_REASON \
  "a NUL byte in the header: binary data where text was expected (is the header cut short, or " \
  "the blank line before attached data missing?)"
typedef struct ir_text_line {
  const char *start; /* not NUL-terminated */
  size_t len;        /* without the line end */
  size_t number;     /* 1-based */
} ir_text_line;
/* Next line of text[0, len) starting at *pos (\n or \r\n ends a line); false at the end. */
bool ir_text_next_line(const char *text, size_t len, size_t *pos, size_t *number,
                       ir_text_line *line);
/* Splits "key<sep>value" (sep ':' or '='), both trimmed, into NUL-terminated copies; false
 * when there is no separator or a part is too long. */
bool ir_text_split(const ir_text_line *line, char sep, char *key, size_t key_size, char *value,
                   size_t value_size);
bool ir_text_equal_nocase(const char *a, const char *b);
/* Up to `count` numbers separated by blanks (commas too for floats); returns how many were
 * read, or -1 on anything else or more than `count`. */
int ir_text_parse_sizes(const char *text, size_t *out, int count);
int ir_text_parse_floats(const char *text, double *out, int count);
bool ir_text_parse_long(const char *text, long *out);
/* A data file pattern "fmt first last step" (fmt with one %d-style conversion): appends the
 * names to h->files. False with a message naming the line on a bad pattern. */
bool ir_text_expand_pattern(ir_header *h, const char *fmt, long first, long last, long step,
                            const char *path, size_t line, char err[IR_ERR_LEN]);
/* Does the value look like a pattern (first word holds a %, followed by three integers)? */
bool ir_text_is_pattern(const char *value, char *fmt, size_t fmt_size, long *first, long *last,
                        long *step);

/* ---- Helpers (volume.c, io.c) ------------------------------------------------------------ */
/* "path: reason" into err; always returns IR_ERR_INPUT. */
ir_status ir_input_error(char err[IR_ERR_LEN], const char *path, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* The file name part of a path (after the last '/'), for volume names. */
const char *ir_display_name(const char *path);

/* dims[0]*dims[1]*dims[2]*size in *bytes; false (with a message) on zero dims or overflow. */
bool ir_volume_byte_count(const size_t dims[3], ir_voxel_type type, size_t *bytes,
                          const char *path, char err[IR_ERR_LEN]);
/* IR_ERR_INPUT with both numbers when `bytes` exceed the memory available (MemAvailable, or
 * desc->available_bytes_override); IR_OK when they fit or the figure cannot be read. */
ir_status ir_check_memory(size_t bytes, const ir_volume_desc *desc, const char *path, char err[IR_ERR_LEN]);
/* Allocates out->voxels for dims/type after ir_check_memory; IR_ERR_RUNTIME with a message
 * when malloc fails all the same. */
ir_status ir_volume_allocate(ir_volume *out, const size_t dims[3], ir_voxel_type type,
                             const ir_volume_desc *desc, const char *path, char err[IR_ERR_LEN]);
/* The box a desc asks for (ir_volume_desc.region_*), checked against the whole volume's dims:
 * off/size of the box, the whole volume when no region is given. IR_ERR_INPUT with a message
 * naming the path when the box is empty or reaches outside. */
ir_status ir_region_resolve(const ir_volume_desc *desc, const size_t dims[3], const char *path,
                            size_t off[3], size_t size[3], char err[IR_ERR_LEN]);
/* Does the desc ask for a box smaller than dims? */
bool ir_region_is_partial(const size_t dims[3], const size_t size[3]);
/* Copies the bytes of the global byte range [begin, begin + len) of a whole volume (dims,
 * voxel size elem, x fastest) that lie in the box into `dst`, laid out as a volume of the
 * box's size. For formats read as one stream (compressed data): the stream is passed through
 * in pieces and only the box is kept. */
typedef struct ir_region_sink {
  size_t dims[3], off[3], size[3], elem;
  unsigned char *dst;
} ir_region_sink;
void ir_region_scatter(const ir_region_sink *s, size_t begin, const unsigned char *src, size_t len);
/* Fills `out` for desc->header_only: dims, type, spacing, name; no voxels. */
void ir_volume_header_only(ir_volume *out, const size_t dims[3], ir_voxel_type type,
                           const float spacing[3], const char *name);

/* The index axis whose world direction is closest to world +z, with its sign: dirs[k] is the
 * direction of index axis k in a patient space whose +z is superior (RAS, LPS, LAS). NONE when
 * no axis is within 60 degrees of it (an oblique volume has no clear up). */
ir_axis ir_up_axis_from_directions(const double dirs[3][3]);
/* Sets the name, fills value_min/value_max/nonfinite_count. */
void ir_volume_finish(ir_volume *v, const char *name);
/* A header-only load (ir_volume_desc.header_only) keeps the header and drops what was read. */
void ir_volume_drop_voxels(ir_volume *v);
/* MemAvailable from /proc/meminfo in bytes, or the desc's override; 0 when it cannot be read
 * (the caller then skips its check). */
size_t ir_available_memory(const ir_volume_desc *desc);
/* The same with the range already known (scanned piece by piece while reading): lo/hi are the
 * smallest and largest finite values (+-INFINITY when none). */
void ir_volume_finish_with_range(ir_volume *v, const char *name, double lo, double hi, size_t nonfinite);
/* Finite minimum and maximum of voxels [begin, end) (+INFINITY/-INFINITY when none) and the
 * count of the others; the loop every range scan runs. */
void ir_scan_range(const void *voxels, ir_voxel_type type, size_t begin, size_t end, double *lo, double *hi,
                   size_t *nonfinite);

/* Swaps every voxel's bytes (16- and 32-bit types). */
void ir_swap_voxels(void *voxels, size_t count, size_t voxel_size);
bool ir_host_is_big_endian(void);

/* Checks the path is a readable regular file; a message for missing, directory, unreadable. */
ir_status ir_check_file(const char *path, size_t *size, char err[IR_ERR_LEN]);
/* Reads at most max_bytes from the start of path into a new NUL-terminated buffer. */
ir_status ir_read_prefix(const char *path, size_t max_bytes, char **text, size_t *len,
                         char err[IR_ERR_LEN]);
/* `rel` resolved against the folder of `base` (unless absolute), in a new string. */
char *ir_path_join_dir(const char *base, const char *rel);
/* Case-insensitive: does `path` end with `suffix`? */
bool ir_path_has_suffix(const char *path, const char *suffix);

/* Progress on stderr for big volumes (desc->show_progress and at least progress_min_bytes): on a
 * terminal one line rewritten in place; otherwise (a log, a pipe) a full line at most every
 * progress_interval_ms, so that long loads show they are alive without flooding the log. A
 * no-op when disabled. */
typedef struct ir_progress {
  bool enabled, terminal;
  const char *name;
  size_t total, done;
  int shown_percent;
  double start_s, last_line_s, interval_s;
  bool printed;
  ir_volume_progress_fn callback; /* desc->on_progress, called on every update */
  void *callback_ctx;
  pthread_mutex_t lock;           /* the reading threads add at the same time */
} ir_progress;
void ir_progress_begin(ir_progress *p, const ir_volume_desc *desc, const char *name, size_t total);
void ir_progress_add(ir_progress *p, size_t bytes);
void ir_progress_end(ir_progress *p);

/* Reads `bytes` from an open file into dst: plain, or inflating gzip/zlib streams after
 * dropping `skip_after` decompressed bytes. `what` names the file in messages; `progress` may
 * be NULL. */
ir_status ir_read_payload(FILE *f, const char *what, ir_encoding encoding, size_t skip_after,
                          void *dst, size_t bytes, ir_progress *progress, char err[IR_ERR_LEN]);
/* The same for a compressed payload whose bytes go through `sink` instead of into memory:
 * data byte i of this file is byte base + i of the whole volume. */
ir_status ir_read_payload_scatter(FILE *f, const char *what, ir_encoding encoding,
                                  size_t skip_after, const ir_region_sink *sink, size_t base,
                                  size_t bytes, ir_progress *progress, char err[IR_ERR_LEN]);

/* ---- Uncompressed data in pieces (read_pieces.c) ------------------------------------------------- */
/* Pieces of about this many bytes: a few of them fit in a core's cache between the read, the
 * range scan and the sink's copy. */
#define IR_PIECE_BYTES ((size_t)4 << 20)
/* Cuts bytes [base, base + bytes) of a volume of `dims` voxels of `elem` bytes into pieces of
 * whole rows, inside one slice or whole slices, of about `target` bytes (one row at least);
 * writes them to `out` unless it is NULL and returns how many. When base or bytes is not a
 * whole number of rows, the pieces are plain byte ranges with row = rows = 0. */
size_t ir_plan_pieces(const size_t dims[3], size_t elem, size_t base, size_t bytes, size_t target,
                      ir_volume_piece *out);
/* One data file's part of the voxels: `bytes` of them from byte `start` of the file, which are
 * bytes [base, base + bytes) of the volume. */
typedef struct ir_piece_file {
  const char *path;
  size_t start, base, bytes;
} ir_piece_file;
/* Reads the files' voxels into dst (the whole volume, dims/type), in pieces on several threads
 * (desc->io_threads, desc->io_mode), swapping each piece's bytes when `swap`, scanning its value
 * range (*lo, *hi, *nonfinite as ir_scan_range gives them for the whole volume) and passing it to
 * desc->sink (when given and the pieces are whole rows: *streamed says so). */
ir_status ir_read_pieces(const ir_piece_file *files, size_t file_count, const size_t dims[3], ir_voxel_type type,
                         bool swap, unsigned char *dst, const ir_volume_desc *desc, ir_progress *progress,
                         double *lo, double *hi, size_t *nonfinite, bool *streamed, char err[IR_ERR_LEN]);

/* Procedural volumes (builtin.c): the Marschner-Lobb signal on [-1,1]^3, and the number of
 * noise octaves the fractal uses at size n. */
double ir_marschner_lobb(double x, double y, double z);
int ir_fractal_octaves(size_t n);

#ifdef __cplusplus
}
#endif
#endif
