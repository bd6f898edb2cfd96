/* inkray data module: volumes in memory, loaded from raw files, common header formats, DICOM
 * series, TIFF stacks, VTK image data, or generated procedurally.
 *
 * A volume keeps its voxels in their native type (8/16-bit integers or float32), x fastest,
 * in host byte order. Isovalues are in data units. Library functions never print or exit: they
 * return an ir_status and fill a one-line message that names the file and the reason.
 *
 * What this module does not do: anything on the GPU (render/ uploads the voxels itself).
 */
#ifndef INKRAY_DATA_VOLUME_H
#define INKRAY_DATA_VOLUME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "data/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Voxel types (ir_status, IR_ERR_LEN and the ir_voxel_type enum: data/types.h) ------- */

const char *ir_voxel_type_name(ir_voxel_type t);            /* "uint8", ... */
bool ir_voxel_type_parse(const char *word, ir_voxel_type *out); /* accepts the names above */
size_t ir_voxel_type_size(ir_voxel_type t);                 /* bytes per voxel */

typedef enum ir_endian { IR_ENDIAN_LITTLE = 0, IR_ENDIAN_BIG } ir_endian;
bool ir_endian_parse(const char *word, ir_endian *out);      /* "little" | "big" */

/* ---- Axes ---------------------------------------------------------------------------------- */
/* A volume axis with a direction, for "which way is up" (the orbit camera's up vector). */
typedef enum ir_axis {
  IR_AXIS_NONE = 0, /* not known / not given */
  IR_AXIS_X, IR_AXIS_Y, IR_AXIS_Z,
  IR_AXIS_NEG_X, IR_AXIS_NEG_Y, IR_AXIS_NEG_Z,
} ir_axis;
const char *ir_axis_name(ir_axis a);                 /* "x", "-y", ...; "none" */
bool ir_axis_parse(const char *word, ir_axis *out);  /* x|y|z|-x|-y|-z (+x etc. too) */
int ir_axis_index(ir_axis a);                        /* 0, 1, 2 (-1 for none) */
int ir_axis_sign(ir_axis a);                         /* +1 or -1 (0 for none) */

/* ---- Multiscale levels -------------------------------------------------------------------- */
#define IR_MAX_LEVELS 16
/* ir_volume_desc.level: the finest level whose voxels fit a memory budget (below). */
#define IR_LEVEL_AUTO (-1)

/* ---- A volume in host memory ----------------------------------------------------------- */
typedef struct ir_volume {
  size_t dims[3];        /* voxels along x, y, z */
  ir_voxel_type type;
  float spacing[3];      /* world size of one voxel along x, y, z (1,1,1 if unknown) */
  float world_origin[3]; /* world position of voxel (0,0,0) of the file where it gives one
                            (DICOM, VTI), else 0; shown by `inkray info`; the renderer centres
                            volumes */
  void *voxels;          /* dims[0]*dims[1]*dims[2] voxels of `type`, x fastest, host order */
  size_t bytes;          /* size of `voxels` in bytes */
  char name[256];        /* short name for display: file name or builtin:NAME:N */
  size_t full_dims[3];   /* dims of the whole volume in the file (= dims unless a region was read) */
  size_t origin[3];      /* where voxel (0,0,0) of this volume sits in the whole one (region offset) */
  double value_min;      /* smallest finite value */
  double value_max;      /* largest finite value */
  size_t nonfinite_count; /* NaN/Inf voxels (float32 only); the renderer treats them as empty */
  char modality[17];     /* DICOM Modality (CT, MR, ...); empty for other formats */
  char description[128]; /* DICOM SeriesDescription, VTI array name; empty if none */
  char note[512];        /* one line the program should show (other series in the folder,
                            uneven slice spacing, a converted type); empty if none */
  /* The axis pointing up (superior for a patient), when the header says so: NRRD space +
   * space directions, MetaImage AnatomicalOrientation / TransformMatrix, NIfTI sform / qform.
   * IR_AXIS_NONE otherwise; the orbit camera then keeps +z up. up_source names the field. */
  ir_axis up_axis;
  char up_source[64];
  /* Loading: every voxel went through ir_volume_desc.sink as it was read (the data was
   * uncompressed and read in pieces); false: the voxels are only here. */
  bool streamed;
  /* Header-only loads: a full load of this source reads uncompressed pieces (and so passes them
   * to a sink); false for compressed data, DICOM, TIFF, VTI and builtin volumes. */
  bool streamable;
  /* Multiscale sources (OME-Zarr): the level read (0 the finest) and every level's dims and
   * spacing, finest first; level_count 0 for sources of one level. */
  int level;
  int level_count;
  size_t level_dims[IR_MAX_LEVELS][3];
  float level_spacing[IR_MAX_LEVELS][3];
  /* Arrays of more than three dimensions (Zarr, HDF5): the length of their time axis (0 when
   * there is none; the series of ir_series_open reads one step each) and of their channel axis
   * (0 when there is none; ir_volume_desc.channel picks one). */
  size_t steps;
  size_t channels;
} ir_volume;

/* ---- Reading in pieces ------------------------------------------------------------------- */
/* Uncompressed data of a whole volume (raw files and the header formats with raw encoding, NIfTI
 * without scaling) are read by several threads at once, in pieces of whole rows of dims[0]
 * voxels: rows row .. row + rows - 1, row = y + dims[1] z, either inside one slice or whole
 * slices from a slice's first row. A sink sees each piece once, as soon as it is read. */
typedef struct ir_volume_piece {
  size_t offset, bytes; /* bytes [offset, offset + bytes) of the voxels (x fastest) */
  size_t row, rows;
} ir_volume_piece;

/* Where pieces go as they are read (the GPU upload). piece() runs on the reading threads, for
 * several pieces at a time, with the piece's voxels in host byte order; an error it returns
 * stops the load with its message. */
typedef struct ir_volume_sink {
  ir_status (*piece)(void *ctx, const ir_volume_piece *piece, const void *voxels, char err[IR_ERR_LEN]);
  void *ctx;
} ir_volume_sink;

/* Progress of a load: bytes of voxels read (or decompressed) so far, of `total`. Called from
 * the reading threads, possibly several at a time. */
typedef void (*ir_volume_progress_fn)(void *ctx, size_t done, size_t total);

typedef enum ir_io_mode { IR_IO_AUTO = 0, IR_IO_BUFFERED, IR_IO_DIRECT } ir_io_mode;
bool ir_io_mode_parse(const char *word, ir_io_mode *out); /* auto | buffered | direct */

/* How to load a volume. Zero means "not given": the format or file name decides. */
typedef struct ir_volume_desc {
  const char *source;    /* path, or builtin:NAME[:N] */
  size_t dims[3];        /* --dims XxYxZ for raw files */
  bool type_given;       /* --type given: use `type` */
  ir_voxel_type type;
  bool endian_given;     /* --endian given: use `endian` */
  ir_endian endian;
  bool spacing_given;    /* --spacing given: use `spacing` */
  float spacing[3];
  /* Progress on stderr for big loads: on a terminal one line updated in place, otherwise a
   * line at most every progress_interval_ms (0: 5000), so that logs stay short. */
  bool show_progress;
  size_t progress_min_bytes;     /* loads smaller than this show nothing (0: 256 MiB) */
  unsigned progress_interval_ms; /* see above */
  /* Refuse, before allocating, a volume larger than the memory the system says is available
   * (MemAvailable in /proc/meminfo): a swap storm helps nobody. Zero-default: the check is on;
   * available_bytes_override replaces the system's figure (tests; 0 = ask the system). */
  size_t available_bytes_override;
  /* A sub-box: only voxels [region_offset, region_offset + region_size) of the volume are
   * read (sizes all 0: the whole volume). Raw and header formats with uncompressed data seek
   * to each run of the box and read nothing else; gzip/zlib data are decompressed as one
   * stream, keeping only the box's bytes (memory for the box only, time for the whole file);
   * builtin volumes compute only the box. A box outside the volume is an input error. */
  size_t region_offset[3];
  size_t region_size[3];
  /* Header only: dims (of the whole volume), type, spacing and name are filled; no voxels are
   * read or allocated (voxels NULL, bytes 0, value range 0..0). */
  bool header_only;
  /* With header_only: the dims, levels and spacing only, the voxel type left unknown
   * (IR_VOXEL_FLOAT32 stands in) where it depends on the values (Zarr arrays of 32- and 64-bit
   * integers, which a header load otherwise reads whole to learn it): for a caller that only
   * counts levels or steps. */
  bool layout_only;
  /* With header_only: also check that the data files exist and can hold the voxels (their sizes
   * for uncompressed data, the compressor's best ratio otherwise), as a full load does first.
   * Formats read whole to learn their header (DICOM, VTI) are read whole either way. */
  bool check_data;
  bool keep_bad_steps;   /* time series: keep bad steps, failing when read (ir_series_open) */
  const char *series;    /* DICOM: SeriesInstanceUID to load from a folder of several series */
  const char *array;     /* VTI: point data array to load instead of the active scalars */
  /* Pieces of uncompressed data go here too as they are read (ir_volume.streamed says whether
   * they did); NULL: none. */
  const ir_volume_sink *sink;
  ir_volume_progress_fn on_progress; /* NULL: none; called whatever show_progress says */
  void *progress_ctx;
  /* An earlier volume whose memory the load may reuse (time series: one buffer per step in
   * flight). The load takes it over: its voxels become the new volume's when they are large
   * enough, else they are freed; *recycle is left empty either way. NULL: none. */
  ir_volume *recycle;
  /* Reading uncompressed pieces: threads (0: one per core, at most 16) and how: through the page
   * cache, or with O_DIRECT (which spares a copy when the file comes from disk; needs a file
   * system that supports it). Automatic: O_DIRECT for files of 256 MiB or more with under a
   * tenth of their pages in the page cache. */
  int io_threads;
  ir_io_mode io_mode;
  /* Chunked arrays (Zarr, OME-Zarr, HDF5; refused for the other formats when not zero):
   * level: which level of a multiscale image, 0 the finest, IR_LEVEL_AUTO the finest whose
   * voxels take at most level_budget_bytes and half the available memory (0: half of
   * MemAvailable alone); the volume's note says which was taken. channel: the index along a
   * channel axis. time_step: the index along a time axis (ir_series_open reads each step). */
  int level;
  size_t level_budget_bytes;
  size_t channel;
  size_t time_step;
} ir_volume_desc;

/* Loads (or generates) a volume. On failure `out` is left empty and `err` holds one line. */
ir_status ir_volume_load(const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]);
void ir_volume_free(ir_volume *v);

/* Voxel value at integer coordinates, in data units, as a double (no bounds check). */
double ir_volume_value_at(const ir_volume *v, size_t x, size_t y, size_t z);
size_t ir_volume_voxel_count(const ir_volume *v);

/* ---- Procedural volumes ------------------------------------------------------------------ */
/* builtin:NAME[:N] is an N x N x N volume, builtin:NAME:XxYxZ a box (each side from 2 to 16384,
 * default 128), spacing 1, computed at voxel indices i, j, k = 0 .. N-1 (x fastest); a box keeps
 * the scale of the cube of its longest side N (docs/data.md):
 *   sphere          float32  R - sqrt((i-c)^2 + (j-c)^2 + (k-c)^2), c = (N-1)/2, R = 0.35 N (a box: 0.35
 *                            of its shortest side):
 *                            the distance in voxels to a sphere of radius R about the centre,
 *                            positive inside. Isovalue 0 is that sphere.
 *   marschner-lobb  float32  (1 - sin(pi z/2) + a (1 + cos(2 pi fM cos(pi r/2)))) / (2 (1 + a)),
 *                            r = sqrt(x^2 + y^2), a = 0.25, fM = 6, with x = -1 + 2i/(N-1) (the
 *                            same for y, z) on [-1,1]^3. Values in [0,1]; isovalue 0.5.
 *   fractal         uint8    round(255 w(p) / (1 + (F(p) / 0.12)^2)^2), p = (i+0.5, j+0.5, k+0.5)/N,
 *                            F = fBm: gradient noise summed over octaves o = 0 .. O-1 (4*2^o
 *                            cells across the volume, amplitude 2^-o, O such that the finest
 *                            cell is about 4 voxels), w = 1 inside the box, fading smoothly to 0
 *                            over the outer 4% at each face. Thin branching walls along the zero
 *                            set of F fill the box; isovalue 127.5 (higher values give thinner
 *                            walls). Deterministic: fixed seeds, the same on any thread count.
 * Names accepted after builtin:, NULL-terminated. */
const char *const *ir_builtin_names(void);
/* The isovalue a builtin source is made for (0 for sphere, 0.5 for marschner-lobb, 127.5 for
 * fractal); NaN for anything that is not a known builtin:NAME[:N]. */
double ir_builtin_isovalue(const char *source);
/* The volume used when none is given on the command line. */
#define IR_DEFAULT_VOLUME "builtin:fractal:256"

/* ---- Time series ---------------------------------------------------------------------------- */
/* A volume that changes over time: steps of the same dims and type, from
 *   a printf pattern    data_%04d.raw: every number from the first file found to the last; a
 *                       number in between with no file is a missing step (TIFF slice patterns
 *                       stay one volume)
 *   a glob              'data_*.nrrd' (quoted, so that the shell leaves it): natural order
 *   a folder            its volume files: the header formats (.nrrd .nhdr .mhd .mha .nii
 *                       .nii.gz .vti .dat) when it holds any, else the .raw/.raw.gz files;
 *                       natural order (a folder of TIFF slices or DICOM files stays one volume)
 *   a .pvd file         ParaView's collection of .vti files, in timestep order
 *   a 4-D NRRD / NIfTI  the last axis is time (ir_volume_load refuses them, saying so)
 * Opening reads every step's header (dims, type, data sizes; for .vti steps the extent only),
 * so that a missing, mismatched or short step is refused before any voxel is read; data that
 * are corrupt inside (compressed streams) show only when that step is read. Messages name the
 * step and its file: "step 8 of 20: dir/data_0007.raw: ...". */
typedef struct ir_series ir_series;
/* Whether `source` names a time series (a header is read for NRRD and NIfTI files). */
bool ir_series_detect(const char *source);
/* Whether `source` names a Zarr array or group (a folder with .zarray, .zgroup or zarr.json):
 * the sources that may hold several levels. */
bool ir_is_zarr_source(const char *source);
/* desc: the source and format options (--dims, --type, ...), applied to every step. With
 * desc->keep_bad_steps (the window, which skips them), a bad step after the first (missing, other
 * dims or type, short) does not refuse the series: reading it fails with the same message. */
ir_status ir_series_open(const ir_volume_desc *desc, ir_series **out, char err[IR_ERR_LEN]);
size_t ir_series_bad_steps(const ir_series *s); /* steps kept bad at open (keep_bad_steps) */
void ir_series_close(ir_series *s);
size_t ir_series_length(const ir_series *s);
const char *ir_series_step_name(const ir_series *s, size_t step); /* file name, or "run.nii[4]" */
double ir_series_step_time(const ir_series *s, size_t step);       /* .pvd timestep, else the index */
/* Dims, type, spacing, up axis of every step (from the first), name of the series. */
const ir_volume *ir_series_header(const ir_series *s);
/* Reads step `step` into out (ir_volume_load's contract). From `options`: sink, on_progress,
 * recycle, io_threads, io_mode, show_progress (the rest comes from the desc opened with). One
 * step at a time: not from several threads at once. */
ir_status ir_series_read(ir_series *s, size_t step, const ir_volume_desc *options, ir_volume *out,
                         char err[IR_ERR_LEN]);

/* ---- Statistics for `inkray info` --------------------------------------------------------- */
#define IR_HISTOGRAM_BINS 64
typedef struct ir_volume_stats {
  double min, max, mean;
  size_t nonfinite_count;
  size_t histogram[IR_HISTOGRAM_BINS]; /* finite values, bins over [min, max] */
  int suggested_count;
  double suggested_isovalues[8];       /* isovalues likely to show structure, best first */
} ir_volume_stats;
void ir_volume_compute_stats(const ir_volume *v, ir_volume_stats *out);

/* What the statistics are made from: two passes over the finite voxels. The first gives the
 * range, sum and counts; the second bins each value over [min, max] into a coarse and a fine
 * histogram (bin = (int)((value - min) / (max - min) * bins), clamped), counts 8/16-bit values
 * exactly, and on every grad_stride-th row (row = y + dims[1] z, interior rows and voxels only)
 * adds the central-difference gradient length, 0.5 |(f(x+1) - f(x-1), ...)|, of each voxel whose
 * gradient is finite to its fine bin. A GPU fills the same counts (render.h,
 * ir_renderer_volume_stats); ir_volume_stats_from_counts makes the statistics of either. */
#define IR_STATS_FINE_BINS 256
typedef struct ir_volume_counts {
  double min, max, sum;
  size_t finite, nonfinite;
  size_t coarse[IR_HISTOGRAM_BINS];
  size_t fine[IR_STATS_FINE_BINS];
  size_t grad_count[IR_STATS_FINE_BINS];
  double grad_sum[IR_STATS_FINE_BINS];
  size_t *integer_counts; /* 65536 counts by value (int16: value + 32768); NULL for float32 */
} ir_volume_counts;
size_t ir_volume_grad_stride(const size_t dims[3]); /* 1 + voxels / 2^24 */
/* v gives the type and name (a builtin volume's own isovalue comes first); no voxels are read. */
void ir_volume_stats_from_counts(const ir_volume *v, const ir_volume_counts *counts, ir_volume_stats *out);

#ifdef __cplusplus
}
#endif
#endif
