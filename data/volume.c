/* ir_volume_load: picks the loader from the source's name, plus what every loader shares
 * (messages, byte counts, allocation, value range, byte swapping). */
#define _DEFAULT_SOURCE /* madvise */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "data/parallel.h"
#include "data/volume_internal.h"
#include "data/zarr.h"

ir_status ir_input_error(char err[IR_ERR_LEN], const char *path, const char *fmt, ...) {
  /* Keep the path short enough that the reason always fits. */
  int used = snprintf(err, IR_ERR_LEN / 2, "%s: ", path);
  if (used < 0 || used >= IR_ERR_LEN / 2) used = (int)strlen(err);
  va_list args;
  va_start(args, fmt);
  vsnprintf(err + used, IR_ERR_LEN - (size_t)used, fmt, args);
  va_end(args);
  /* One line whatever the file held: names from files (VTI arrays, DICOM descriptions) and
   * library texts (libtiff's) may carry line breaks. */
  for (char *c = err; *c; c++)
    if (*c == '\n' || *c == '\r' || *c == '\t') *c = ' ';
  return IR_ERR_INPUT;
}

const char *ir_display_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash && slash[1] ? slash + 1 : path;
}

bool ir_volume_byte_count(const size_t dims[3], ir_voxel_type type, size_t *bytes,
                          const char *path, char err[IR_ERR_LEN]) {
  if (dims[0] == 0 || dims[1] == 0 || dims[2] == 0) {
    ir_input_error(err, path, "dims %zux%zux%zu: every dimension must be at least 1", dims[0],
                   dims[1], dims[2]);
    return false;
  }
  size_t total = ir_voxel_type_size(type);
  for (int k = 0; k < 3; k++) {
    if (total > SIZE_MAX / dims[k]) {
      ir_input_error(err, path, "dims %zux%zux%zu %s: the byte count overflows size_t", dims[0],
                     dims[1], dims[2], ir_voxel_type_name(type));
      return false;
    }
    total *= dims[k];
  }
  *bytes = total;
  return true;
}

size_t ir_available_memory(const ir_volume_desc *desc) {
  if (desc && desc->available_bytes_override) return desc->available_bytes_override;
  FILE *f = fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[256];
  size_t bytes = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long long kib = 0;
    if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1) {
      bytes = kib > SIZE_MAX / 1024 ? SIZE_MAX : (size_t)kib * 1024;
      break;
    }
  }
  fclose(f);
  return bytes;
}

void ir_volume_drop_voxels(ir_volume *v) {
  free(v->voxels);
  v->voxels = NULL;
  v->bytes = 0;
  v->value_min = v->value_max = 0.0;
  v->nonfinite_count = 0;
}

/* Memory a recycled volume brings along: a load that fits in it needs none more. */
static bool recycle_fits(const ir_volume_desc *desc, size_t bytes) {
  return desc && desc->recycle && desc->recycle->voxels && desc->recycle->bytes >= bytes;
}

ir_status ir_check_memory(size_t bytes, const ir_volume_desc *desc, const char *path, char err[IR_ERR_LEN]) {
  if (recycle_fits(desc, bytes)) return IR_OK;
  size_t available = ir_available_memory(desc);
  if (available == 0 || bytes <= available) return IR_OK;
  const double gib = 1024.0 * 1024.0 * 1024.0;
  return ir_input_error(err, path,
                        "needs %zu bytes (%.1f GiB) of memory, but only %zu bytes (%.1f GiB) are "
                        "available (MemAvailable); free memory or load a smaller volume",
                        bytes, (double)bytes / gib, available, (double)available / gib);
}

/* Big volumes are read by several threads, which fault their pages in at the same time; on
 * 2 MiB boundaries with transparent huge pages asked for, there are 512 times fewer faults. */
#define HUGE_PAGE ((size_t)2 << 20)
static void *allocate_voxels(size_t bytes) {
  if (bytes < 32 * HUGE_PAGE) return malloc(bytes ? bytes : 1);
  void *p = NULL;
  if (posix_memalign(&p, HUGE_PAGE, bytes) != 0) return NULL;
#ifdef MADV_HUGEPAGE
  madvise(p, bytes, MADV_HUGEPAGE); /* a hint: without it the pages are small, nothing else changes */
#endif
  return p;
}

ir_status ir_volume_allocate(ir_volume *out, const size_t dims[3], ir_voxel_type type,
                             const ir_volume_desc *desc, const char *path, char err[IR_ERR_LEN]) {
  size_t bytes = 0;
  if (!ir_volume_byte_count(dims, type, &bytes, path, err)) return IR_ERR_INPUT;
  ir_status status = ir_check_memory(bytes, desc, path, err);
  if (status != IR_OK) return status;
  void *voxels = NULL;
  if (recycle_fits(desc, bytes)) {
    voxels = desc->recycle->voxels;
    desc->recycle->voxels = NULL;
  } else {
    if (desc && desc->recycle) ir_volume_free(desc->recycle);
    voxels = allocate_voxels(bytes);
  }
  if (!voxels) {
    snprintf(err, IR_ERR_LEN,
             "%s: out of host memory: %zux%zux%zu %s needs %zu bytes (%.1f GiB)", path,
             dims[0], dims[1], dims[2], ir_voxel_type_name(type), bytes,
             (double)bytes / (1024.0 * 1024.0 * 1024.0));
    return IR_ERR_RUNTIME;
  }
  memset(out, 0, sizeof *out);
  memcpy(out->dims, dims, sizeof out->dims);
  out->type = type;
  out->voxels = voxels;
  out->bytes = bytes;
  memcpy(out->full_dims, dims, sizeof out->full_dims);
  for (int k = 0; k < 3; k++) out->spacing[k] = 1.0f;
  return IR_OK;
}

void ir_volume_header_only(ir_volume *out, const size_t dims[3], ir_voxel_type type,
                           const float spacing[3], const char *name) {
  memset(out, 0, sizeof *out);
  memcpy(out->dims, dims, sizeof out->dims);
  memcpy(out->full_dims, dims, sizeof out->full_dims);
  memcpy(out->spacing, spacing, sizeof out->spacing);
  out->type = type;
  snprintf(out->name, sizeof out->name, "%s", name);
}

/* ---- Sub-boxes ------------------------------------------------------------------------------ */
ir_status ir_region_resolve(const ir_volume_desc *desc, const size_t dims[3], const char *path,
                            size_t off[3], size_t size[3], char err[IR_ERR_LEN]) {
  const size_t *ro = desc->region_offset, *rs = desc->region_size;
  bool given = rs[0] || rs[1] || rs[2] || ro[0] || ro[1] || ro[2];
  for (int k = 0; k < 3; k++) {
    off[k] = given ? ro[k] : 0;
    size[k] = given ? rs[k] : dims[k];
  }
  if (!given) return IR_OK;
  for (int k = 0; k < 3; k++)
    if (size[k] == 0 || off[k] > dims[k] || size[k] > dims[k] - off[k])
      return ir_input_error(err, path,
                            "region %zux%zux%zu at %zu,%zu,%zu is empty or reaches outside the "
                            "volume's %zux%zux%zu voxels",
                            size[0], size[1], size[2], off[0], off[1], off[2], dims[0], dims[1],
                            dims[2]);
  return IR_OK;
}

bool ir_region_is_partial(const size_t dims[3], const size_t size[3]) {
  return size[0] != dims[0] || size[1] != dims[1] || size[2] != dims[2];
}

void ir_region_scatter(const ir_region_sink *s, size_t begin, const unsigned char *src, size_t len) {
  size_t row_bytes = s->dims[0] * s->elem, end = begin + len;
  size_t x_lo = s->off[0] * s->elem, x_len = s->size[0] * s->elem;
  for (size_t row = begin / row_bytes; row * row_bytes < end; row++) {
    size_t y = row % s->dims[1], z = row / s->dims[1];
    if (y < s->off[1] || y >= s->off[1] + s->size[1] || z < s->off[2] || z >= s->off[2] + s->size[2])
      continue;
    /* The box's part of this row, clipped to the bytes at hand. */
    size_t a = row * row_bytes + x_lo, b = a + x_len;
    if (a < begin) a = begin;
    if (b > end) b = end;
    if (a >= b) continue;
    size_t dst_row = (z - s->off[2]) * s->size[1] + (y - s->off[1]);
    size_t dst_x = a - row * row_bytes - x_lo;
    memcpy(s->dst + dst_row * x_len + dst_x, src + (a - begin), b - a);
  }
}

void ir_volume_free(ir_volume *v) {
  if (!v) return;
  free(v->voxels);
  memset(v, 0, sizeof *v);
}

size_t ir_volume_voxel_count(const ir_volume *v) { return v->dims[0] * v->dims[1] * v->dims[2]; }

double ir_volume_value_at(const ir_volume *v, size_t x, size_t y, size_t z) {
  size_t i = x + v->dims[0] * (y + v->dims[1] * z);
  switch (v->type) {
  case IR_VOXEL_UINT8: return ((const uint8_t *)v->voxels)[i];
  case IR_VOXEL_UINT16: return ((const uint16_t *)v->voxels)[i];
  case IR_VOXEL_INT16: return ((const int16_t *)v->voxels)[i];
  case IR_VOXEL_FLOAT32: return ((const float *)v->voxels)[i];
  default: return 0.0;
  }
}

ir_axis ir_up_axis_from_directions(const double dirs[3][3]) {
  int best = -1;
  double best_cos = 0.5; /* cos 60 degrees */
  for (int k = 0; k < 3; k++) {
    double length = sqrt(dirs[k][0] * dirs[k][0] + dirs[k][1] * dirs[k][1] + dirs[k][2] * dirs[k][2]);
    if (!(length > 0) || !isfinite(length)) continue;
    double c = fabs(dirs[k][2]) / length;
    if (c > best_cos) {
      best_cos = c;
      best = k;
    }
  }
  if (best < 0) return IR_AXIS_NONE;
  return (ir_axis)((dirs[best][2] > 0 ? IR_AXIS_X : IR_AXIS_NEG_X) + best);
}

bool ir_host_is_big_endian(void) {
  const uint16_t probe = 1;
  unsigned char first;
  memcpy(&first, &probe, 1);
  return first == 0;
}

void ir_swap_voxels(void *voxels, size_t count, size_t voxel_size) {
  if (voxel_size == 2) {
    uint16_t *p = voxels;
    for (size_t i = 0; i < count; i++) p[i] = (uint16_t)((p[i] >> 8) | (p[i] << 8));
  } else if (voxel_size == 4) {
    uint32_t *p = voxels;
    for (size_t i = 0; i < count; i++) {
      uint32_t u = p[i];
      p[i] = (u >> 24) | ((u >> 8) & 0xff00u) | ((u << 8) & 0xff0000u) | (u << 24);
    }
  }
}

/* ---- Value range over all cores ---------------------------------------------------------- */
#define SCAN_RANGE(T)                                                                      \
  do {                                                                                     \
    const T *p = (const T *)voxels;                                                        \
    T a = p[begin], b = p[begin];                                                          \
    for (size_t i = begin; i < end; i++) {                                                 \
      a = p[i] < a ? p[i] : a;                                                             \
      b = p[i] > b ? p[i] : b;                                                             \
    }                                                                                      \
    *lo = a;                                                                               \
    *hi = b;                                                                               \
  } while (0)

void ir_scan_range(const void *voxels, ir_voxel_type type, size_t begin, size_t end, double *lo, double *hi,
                   size_t *nonfinite) {
  *lo = INFINITY;
  *hi = -INFINITY;
  *nonfinite = 0;
  if (begin >= end) return;
  switch (type) {
  case IR_VOXEL_UINT8: SCAN_RANGE(uint8_t); break;
  case IR_VOXEL_UINT16: SCAN_RANGE(uint16_t); break;
  case IR_VOXEL_INT16: SCAN_RANGE(int16_t); break;
  default: {
    const float *p = voxels;
    float a = INFINITY, b = -INFINITY;
    size_t bad = 0;
    for (size_t i = begin; i < end; i++) {
      if (!isfinite(p[i])) {
        bad++;
        continue;
      }
      a = p[i] < a ? p[i] : a;
      b = p[i] > b ? p[i] : b;
    }
    *lo = a;
    *hi = b;
    *nonfinite = bad;
  }
  }
}

typedef struct range_scan {
  const ir_volume *v;
  double lo[IR_MAX_THREADS], hi[IR_MAX_THREADS];
  size_t nonfinite[IR_MAX_THREADS];
} range_scan;

static void scan_range(void *ctx, size_t begin, size_t end, int worker) {
  range_scan *s = ctx;
  ir_scan_range(s->v->voxels, s->v->type, begin, end, &s->lo[worker], &s->hi[worker], &s->nonfinite[worker]);
}

void ir_volume_finish_with_range(ir_volume *v, const char *name, double lo, double hi, size_t nonfinite) {
  snprintf(v->name, sizeof v->name, "%s", name);
  /* An all-NaN volume has no finite range; report 0..0 rather than infinities. */
  v->value_min = isfinite(lo) ? lo : 0.0;
  v->value_max = isfinite(hi) ? hi : 0.0;
  v->nonfinite_count = nonfinite;
}

void ir_volume_finish(ir_volume *v, const char *name) {
  range_scan s; /* a few KiB of per-worker partial results */
  s.v = v;
  int workers = ir_parallel_for(ir_volume_voxel_count(v), (size_t)1 << 22, scan_range, &s);
  double lo = INFINITY, hi = -INFINITY;
  size_t bad = 0;
  for (int w = 0; w < workers; w++) {
    lo = s.lo[w] < lo ? s.lo[w] : lo;
    hi = s.hi[w] > hi ? s.hi[w] : hi;
    bad += s.nonfinite[w];
  }
  ir_volume_finish_with_range(v, name, lo, hi, bad);
}

bool ir_io_mode_parse(const char *word, ir_io_mode *out) {
  static const char *const names[] = {"auto", "buffered", "direct"};
  for (int k = 0; k < 3; k++)
    if (strcmp(word, names[k]) == 0) {
      *out = (ir_io_mode)k;
      return true;
    }
  return false;
}

int ir_natural_compare(const char *a, const char *b) {
  while (*a && *b) {
    if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
      while (*a == '0') a++;
      while (*b == '0') b++;
      size_t na = 0, nb = 0;
      while (a[na] >= '0' && a[na] <= '9') na++;
      while (b[nb] >= '0' && b[nb] <= '9') nb++;
      if (na != nb) return na < nb ? -1 : 1;
      int c = strncmp(a, b, na);
      if (c) return c;
      a += na;
      b += nb;
      continue;
    }
    if (*a != *b) return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
    a++;
    b++;
  }
  return *a ? 1 : *b ? -1 : 0;
}

bool ir_is_number_pattern(const char *fmt) {
  int conversions = 0;
  for (const char *s = fmt; *s; s++) {
    if (*s != '%') continue;
    if (s[1] == '%') {
      s++;
      continue;
    }
    s++;
    while (*s >= '0' && *s <= '9') s++;
    if (*s != 'd' && *s != 'i' && *s != 'u') return false;
    conversions++;
  }
  return conversions == 1;
}

/* ---- Dispatch ------------------------------------------------------------------------------ */
bool ir_path_has_suffix(const char *path, const char *suffix) {
  size_t n = strlen(path), m = strlen(suffix);
  if (m > n) return false;
  for (size_t i = 0; i < m; i++) {
    char a = path[n - m + i], b = suffix[i];
    if (a >= 'A' && a <= 'Z') a = (char)(a - 'A' + 'a');
    if (a != b) return false;
  }
  return true;
}

static bool raw_only_options(const ir_volume_desc *desc) {
  return desc->dims[0] || desc->dims[1] || desc->dims[2] || desc->type_given || desc->endian_given;
}

/* Formats whose library was not found at configure time: one line saying how to get them. */
#ifndef INKRAY_HAVE_GDCM
ir_status ir_load_dicom(const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]) {
  (void)out;
  return ir_input_error(err, desc->source,
                        "inkray was built without DICOM support (install libgdcm-dev and rebuild)");
}
#endif
#ifndef INKRAY_HAVE_TIFF
ir_status ir_load_tiff(const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]) {
  (void)out;
  return ir_input_error(err, desc->source,
                        "inkray was built without TIFF support (install libtiff-dev and rebuild)");
}
#endif
#ifndef INKRAY_HAVE_EXPAT
ir_status ir_load_vti(const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]) {
  (void)out;
  return ir_input_error(err, desc->source,
                        "inkray was built without VTK image data support (install libexpat1-dev "
                        "and rebuild)");
}
#endif

#ifndef INKRAY_HAVE_HDF5
ir_status ir_load_hdf5(const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]) {
  (void)out;
  return ir_input_error(err, desc->source, "inkray was built without HDF5 support (install libhdf5-dev and rebuild)");
}
#endif

static bool is_tiff_name(const char *name) {
  return ir_path_has_suffix(name, ".tif") || ir_path_has_suffix(name, ".tiff");
}

/* A folder holds either TIFF slices (any .tif/.tiff file in it) or a DICOM series. */
static bool folder_has_tiff(const char *path) {
  DIR *dir = opendir(path);
  if (!dir) return false;
  bool found = false;
  for (struct dirent *e; !found && (e = readdir(dir)) != NULL;)
    found = e->d_name[0] != '.' && is_tiff_name(e->d_name);
  closedir(dir);
  return found;
}

/* DICOM Part 10 files have "DICM" after a 128-byte preamble, whatever their name. */
static bool has_dicom_magic(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  unsigned char buf[132];
  size_t got = fread(buf, 1, sizeof buf, f);
  fclose(f);
  return got == sizeof buf && memcmp(buf + 128, "DICM", 4) == 0;
}

typedef ir_status (*loader_fn)(const ir_volume_desc *, ir_volume *, char *);

/* The loader for a path that names no header format, and its format's name. */
static loader_fn pick_image_loader(const char *src, const char **format) {
  struct stat st;
  bool is_dir = stat(src, &st) == 0 && S_ISDIR(st.st_mode);
  if (is_dir) {
    bool tiff = folder_has_tiff(src);
    *format = tiff ? "TIFF" : "DICOM";
    return tiff ? ir_load_tiff : ir_load_dicom;
  }
  if (ir_path_has_suffix(src, ".vti")) {
    *format = "VTK image data";
    return ir_load_vti;
  }
  if (is_tiff_name(src)) {
    *format = "TIFF";
    return ir_load_tiff;
  }
  if (ir_path_has_suffix(src, ".dcm") || ir_path_has_suffix(src, ".dicom") ||
      ir_path_has_suffix(src, ".ima") || has_dicom_magic(src)) {
    *format = "DICOM";
    return ir_load_dicom;
  }
  return NULL;
}

/* DICOM and VTI are decoded whole (slices through GDCM, arrays that are compressed or text): a
 * sub-box is cut out of the loaded volume, and a header-only load drops the voxels. (TIFF reads
 * only a box's pages itself, tiff.c.) Memory and time are those of the whole volume; the result follows the
 * same contract as the formats that read only the box. */
static ir_status load_whole_then_box(const ir_volume_desc *desc, loader_fn load, ir_volume *out,
                                     char err[IR_ERR_LEN]) {
  ir_status status = load(desc, out, err);
  if (status != IR_OK) return status;
  memcpy(out->full_dims, out->dims, sizeof out->full_dims);
  if (desc->header_only) {
    ir_volume_drop_voxels(out);
    return IR_OK;
  }
  size_t off[3], size[3];
  status = ir_region_resolve(desc, out->dims, desc->source, off, size, err);
  if (status != IR_OK || !ir_region_is_partial(out->dims, size)) {
    if (status != IR_OK) ir_volume_free(out);
    return status;
  }
  size_t elem = ir_voxel_type_size(out->type), row = size[0] * elem;
  size_t bytes = row * size[1] * size[2];
  unsigned char *box = malloc(bytes ? bytes : 1);
  if (!box) {
    snprintf(err, IR_ERR_LEN, "%s: out of host memory for a %zux%zux%zu box", desc->source,
             size[0], size[1], size[2]);
    ir_volume_free(out);
    return IR_ERR_RUNTIME;
  }
  const unsigned char *whole = out->voxels;
  for (size_t z = 0; z < size[2]; z++)
    for (size_t y = 0; y < size[1]; y++)
      memcpy(box + (z * size[1] + y) * row,
             whole + (((off[2] + z) * out->dims[1] + off[1] + y) * out->dims[0] + off[0]) * elem,
             row);
  free(out->voxels);
  out->voxels = box;
  out->bytes = bytes;
  memcpy(out->dims, size, sizeof out->dims);
  memcpy(out->origin, off, sizeof out->origin);
  char name[sizeof out->name];
  memcpy(name, out->name, sizeof name);
  ir_volume_finish(out, name);
  return IR_OK;
}

static ir_status load_volume(const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]) {
  memset(out, 0, sizeof *out);
  err[0] = '\0';
  const char *src = desc->source;
  if (!src || !*src) {
    snprintf(err, IR_ERR_LEN, "no volume given: name a file or builtin:NAME[:N]");
    return IR_ERR_INPUT;
  }
  /* Chunked arrays: the level, channel and time step pick what is read; elsewhere they are
   * refused (--level auto, the renderer's default, means the one level there is). */
  bool chunked = ir_is_zarr_source(src) || ir_is_hdf5_source(src);
  if (!chunked && (desc->level > 0 || desc->channel || desc->time_step))
    return ir_input_error(err, src, "%s is for OME-Zarr, Zarr and HDF5 sources",
                          desc->level > 0 ? "--level" : desc->channel ? "--channel" : "a time step");
  if (chunked && (raw_only_options(desc) || desc->series || desc->array))
    return ir_input_error(err, src, "--dims, --type, --endian, --series and --array are not for %s sources "
                          "(their metadata give them)", ir_is_hdf5_source(src) ? "HDF5" : "Zarr");
  if (chunked) return ir_is_hdf5_source(src) ? ir_load_hdf5(desc, out, err) : ir_load_zarr(desc, out, err);
  if (strncmp(src, "builtin:", 8) == 0) {
    if (desc->series || desc->array)
      return ir_input_error(err, src, "%s is for %s; a builtin volume has none",
                            desc->series ? "--series" : "--array",
                            desc->series ? "DICOM folders" : ".vti files");
    return ir_load_builtin(desc, out, err);
  }

  static const struct {
    const char *suffix;
    loader_fn load;
    const char *format;
  } headers[] = {
      {".nrrd", ir_load_nrrd, "NRRD"},   {".nhdr", ir_load_nrrd, "NRRD"},
      {".mhd", ir_load_meta, "MetaImage"}, {".mha", ir_load_meta, "MetaImage"},
      {".nii", ir_load_nifti, "NIfTI"},  {".nii.gz", ir_load_nifti, "NIfTI"},
      {".dat", ir_load_qvis, "QVis"},
  };
  loader_fn load = NULL;
  const char *format = NULL;
  for (size_t k = 0; k < sizeof headers / sizeof headers[0] && !load; k++) {
    if (!ir_path_has_suffix(src, headers[k].suffix)) continue;
    load = headers[k].load;
    format = headers[k].format;
  }
  if (!load) load = pick_image_loader(src, &format);
  if (!load) load = ir_load_raw;
  if (load != ir_load_raw && raw_only_options(desc))
    return ir_input_error(err, src,
                          "--dims, --type and --endian are for raw files; the %s header "
                          "already gives them (only --spacing overrides a header)",
                          format);
  if (desc->series && load != ir_load_dicom)
    return ir_input_error(err, src, "--series picks a DICOM series; this is not DICOM");
  if (desc->array && load != ir_load_vti)
    return ir_input_error(err, src, "--array picks a VTK image data array; this is not a .vti file");
  if (load == ir_load_dicom || load == ir_load_vti)
    return load_whole_then_box(desc, load, out, err);
  return load(desc, out, err);
}

ir_status ir_volume_load(const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]) {
  ir_status status = load_volume(desc, out, err);
  /* The recycled memory is the load's to use or free, whichever way it went. */
  if (desc->recycle) ir_volume_free(desc->recycle);
  return status;
}
