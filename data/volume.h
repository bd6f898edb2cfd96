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
} ir_volume;

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
  const char *series;    /* DICOM: SeriesInstanceUID to load from a folder of several series */
  const char *array;     /* VTI: point data array to load instead of the active scalars */
} ir_volume_desc;

/* Loads (or generates) a volume. On failure `out` is left empty and `err` holds one line. */
ir_status ir_volume_load(const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]);
void ir_volume_free(ir_volume *v);

/* Voxel value at integer coordinates, in data units, as a double (no bounds check). */
double ir_volume_value_at(const ir_volume *v, size_t x, size_t y, size_t z);
size_t ir_volume_voxel_count(const ir_volume *v);

/* ---- Procedural volumes ------------------------------------------------------------------ */
/* builtin:NAME[:N] is an N x N x N volume (N from 2 to 2048, default 128), spacing 1, computed
 * at voxel indices i, j, k = 0 .. N-1 (x fastest):
 *   sphere          float32  R - sqrt((i-c)^2 + (j-c)^2 + (k-c)^2), c = (N-1)/2, R = 0.35 N:
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

#ifdef __cplusplus
}
#endif
#endif
