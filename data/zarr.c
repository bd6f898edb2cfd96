/* Zarr v2 and v3 arrays and OME-Zarr 0.4 / 0.5 multiscale images, read chunk by chunk on all
 * cores straight into the volume.
 *
 * A source is a folder: an array (.zarray, or zarr.json with node_type array) or an OME-Zarr
 * image group (.zattrs / zarr.json holding multiscales), whose levels are arrays in sub-folders.
 * The array's axes map to the volume's x, y, z (OME-Zarr axes by name; plain arrays of 3, 4 and
 * 5 dimensions are z y x, t z y x and t c z y x, or their v3 dimension_names); a time axis is
 * indexed by ir_volume_desc.time_step (ir_series_open makes it a series) and a channel axis by
 * desc.channel.
 *
 * Reading: the chunks that meet the box (the whole volume, or desc's region, at the chosen time
 * step and channel) are the work items; every thread takes the next one, reads its file whole
 * (a shard: its index, then each inner chunk with pread), decodes it with its own buffers and
 * copies its part into the volume (strided for F order and transposes, byte-swapped when the
 * array's order is not the host's). A missing chunk is the fill value. One item is decoded before
 * the volume is allocated, so that metadata that disagree with the chunks are refused first.
 * Samples of types other than the four voxel types are decoded into a buffer of their own type
 * and converted as the other readers do (ir_volume_from_samples).
 *
 * A whole volume of a voxel type streams to desc->sink in z slabs one chunk deep, each passed on
 * when its last chunk is placed (the items run x fastest, then y, then z, so slabs complete
 * roughly in order).
 *
 * What this file does not do: read Zarr stores other than folders (zip, HTTP). */
#define _DEFAULT_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/parallel.h"
#include "data/zarr.h"

/* dir/name into out; false when it does not fit (no such path can be opened then). */
static bool path_join(char *out, size_t cap, const char *dir, const char *name) {
  size_t a = strlen(dir), b = strlen(name);
  if (a + 1 + b >= cap) {
    out[0] = '\0';
    return false;
  }
  memcpy(out, dir, a);
  out[a] = '/';
  memcpy(out + a + 1, name, b + 1);
  return true;
}

static bool file_exists(const char *dir, const char *name) {
  char path[4096];
  if (!path_join(path, sizeof path, dir, name)) return false;
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

bool ir_is_zarr_source(const char *source) {
  if (!source || strncmp(source, "builtin:", 8) == 0) return false;
  struct stat st;
  if (stat(source, &st) != 0 || !S_ISDIR(st.st_mode)) return ir_path_has_suffix(source, ".zarr") || ir_path_has_suffix(source, ".zarr/");
  return file_exists(source, "zarr.json") || file_exists(source, ".zarray") || file_exists(source, ".zgroup") ||
         file_exists(source, ".zattrs");
}

/* HDF5 files: by name, or by the signature at the start of the file (user blocks, which move it
 * to byte 512, 1024, ..., come with the .h5 name in practice). "file.h5:/dataset" names a
 * dataset inside. */
bool ir_hdf5_split(const char *source, char *file, size_t cap, const char **dataset) {
  struct stat st;
  *dataset = NULL;
  if (stat(source, &st) == 0) {
    snprintf(file, cap, "%s", source);
    return S_ISREG(st.st_mode);
  }
  for (const char *c = strstr(source, ":/"); c; c = strstr(c + 1, ":/")) {
    size_t n = (size_t)(c - source);
    if (n == 0 || n >= cap) continue;
    memcpy(file, source, n);
    file[n] = '\0';
    if (stat(file, &st) == 0 && S_ISREG(st.st_mode)) {
      *dataset = c + 1;
      return true;
    }
  }
  return false;
}

bool ir_is_hdf5_source(const char *source) {
  if (!source || strncmp(source, "builtin:", 8) == 0) return false;
  char file[4096];
  const char *dataset = NULL;
  if (!ir_hdf5_split(source, file, sizeof file, &dataset)) {
    /* A missing file with an HDF5 name: the HDF5 loader says it is missing. */
    const char *colon = strstr(source, ":/");
    size_t n = colon ? (size_t)(colon - source) : strlen(source);
    snprintf(file, sizeof file, "%.*s", (int)(n < sizeof file ? n : sizeof file - 1), source);
  }
  static const char *const names[] = {".h5", ".hdf5", ".hdf", ".he5", ".nxs", ".nx5", NULL};
  for (int k = 0; names[k]; k++)
    if (ir_path_has_suffix(file, names[k])) return true;
  FILE *f = fopen(file, "rb");
  if (!f) return false;
  unsigned char sig[8];
  bool hdf5 = fread(sig, 1, 8, f) == 8 && memcmp(sig, "\x89HDF\r\n\x1a\n", 8) == 0;
  fclose(f);
  return hdf5;
}

#ifdef INKRAY_HAVE_CJSON

/* ---- Opening: the arrays of a source ------------------------------------------------------------ */
typedef struct zarr_level {
  char dir[4096];
  ir_zarr_array a;
  float spacing[3], origin[3];
} zarr_level;

typedef struct zarr_image {
  int level_count;
  zarr_level *levels; /* level_count of them */
  ir_zarr_role role[IR_ZARR_MAX_DIMS];
  int axis_of[5];     /* the array axis of each role, -1 when absent */
  bool ome;
  char version[16];
  char unit[32];
} zarr_image;

static ir_status read_json(const char *dir, const char *name, char **text, size_t *len, char err[IR_ERR_LEN]) {
  char path[4096];
  path_join(path, sizeof path, dir, name);
  size_t size = 0;
  ir_status st = ir_check_file(path, &size, err);
  if (st != IR_OK) return st;
  if (size > IR_ZARR_MAX_JSON_BYTES) return ir_input_error(err, path, "%zu bytes: too large for Zarr metadata", size);
  return ir_read_prefix(path, IR_ZARR_MAX_JSON_BYTES, text, len, err);
}

static ir_status open_array(const char *dir, int version, ir_zarr_array *a, char err[IR_ERR_LEN]) {
  char *text = NULL;
  size_t len = 0;
  const char *name = version == 2 ? ".zarray" : "zarr.json";
  ir_status st = read_json(dir, name, &text, &len, err);
  if (st != IR_OK) return st;
  char path[4096];
  path_join(path, sizeof path, dir, name);
  st = ir_zarr_parse_array(text, len, version, path, a, err);
  free(text);
  return st;
}

/* Roles of a plain array's axes: dimension_names x, y, z, t, c when all are given, else the
 * last ndim of t, c, z, y, x. */
static ir_status plain_roles(const ir_zarr_array *a, const char *src, ir_zarr_role *role, char err[IR_ERR_LEN]) {
  if (a->ndim < 3 || a->ndim > 5)
    return ir_input_error(err, src, "a %d-D array: inkray reads 3-D arrays (z, y, x), 4-D (t, z, y, x) and 5-D (t, c, z, y, x)",
                          a->ndim);
  bool named = true;
  int seen[5] = {0};
  for (int k = 0; k < a->ndim && named; k++) {
    const char *n = a->names[k];
    int r = strcmp(n, "x") == 0 ? 0 : strcmp(n, "y") == 0 ? 1 : strcmp(n, "z") == 0 ? 2 : strcmp(n, "t") == 0 ? 3
            : strcmp(n, "c") == 0 ? 4 : -1;
    named = r >= 0 && !seen[r]++;
    if (named) role[k] = (ir_zarr_role)r;
  }
  if (named && seen[0] && seen[1] && seen[2]) return IR_OK;
  static const ir_zarr_role order[5] = {IR_ZARR_T, IR_ZARR_C, IR_ZARR_Z, IR_ZARR_Y, IR_ZARR_X};
  for (int k = 0; k < a->ndim; k++) role[k] = order[5 - a->ndim + k];
  if (a->ndim == 4) role[0] = IR_ZARR_T;
  return IR_OK;
}

/* Lists the arrays right below a group folder, for a message. */
static void list_children(const char *dir, char *out, size_t cap) {
  out[0] = '\0';
  DIR *d = opendir(dir);
  if (!d) return;
  size_t used = 0;
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL && n < 8;) {
    if (e->d_name[0] == '.') continue;
    char sub[4096];
    path_join(sub, sizeof sub, dir, e->d_name);
    if (!file_exists(sub, ".zarray") && !file_exists(sub, "zarr.json")) continue;
    int w = snprintf(out + used, cap - used, "%s%s", n ? ", " : "", e->d_name);
    if (w < 0 || (size_t)w >= cap - used) break;
    used += (size_t)w;
    n++;
  }
  closedir(d);
}

static void image_free(zarr_image *img) {
  free(img->levels);
  memset(img, 0, sizeof *img);
}

static ir_status open_image(const char *src, zarr_image *img, char err[IR_ERR_LEN]) {
  memset(img, 0, sizeof *img);
  char root[4096];
  snprintf(root, sizeof root, "%s", src);
  size_t n = strlen(root);
  while (n > 1 && root[n - 1] == '/') root[--n] = '\0';
  struct stat st;
  if (stat(root, &st) != 0) return ir_input_error(err, src, "no such folder");
  if (!S_ISDIR(st.st_mode)) return ir_input_error(err, src, "a Zarr store is a folder; this is a file");
  bool v3 = file_exists(root, "zarr.json");
  /* An array itself? */
  bool is_array = false;
  char *text = NULL;
  size_t len = 0;
  ir_status status = IR_OK;
  if (v3) {
    if ((status = read_json(root, "zarr.json", &text, &len, err)) != IR_OK) return status;
    is_array = strstr(text, "\"array\"") != NULL && strstr(text, "\"multiscales\"") == NULL;
  } else if (file_exists(root, ".zarray")) {
    is_array = true;
  } else if (file_exists(root, ".zattrs")) {
    if ((status = read_json(root, ".zattrs", &text, &len, err)) != IR_OK) return status;
  } else if (!file_exists(root, ".zgroup")) {
    return ir_input_error(err, src, "not a Zarr store: no zarr.json, .zarray, .zgroup or .zattrs");
  }
  ir_zarr_multiscale *ms = NULL;
  if (!is_array) {
    ms = calloc(1, sizeof *ms);
    if (!ms) {
      free(text);
      snprintf(err, IR_ERR_LEN, "out of host memory");
      return IR_ERR_RUNTIME;
    }
    char meta[4200];
    path_join(meta, sizeof meta, root, v3 ? "zarr.json" : ".zattrs");
    status = text ? ir_zarr_parse_multiscale(text, len, meta, ms, err) : ir_input_error(err, src, "no OME-Zarr multiscales here");
    if (status != IR_OK) {
      char children[512];
      list_children(root, children, sizeof children);
      if (children[0])
        ir_input_error(err, src, "a Zarr group without OME-Zarr multiscales; open one of its arrays: %s", children);
      free(text);
      free(ms);
      return status;
    }
  }
  free(text);
  img->level_count = ms ? ms->level_count : 1;
  img->levels = calloc((size_t)img->level_count, sizeof *img->levels);
  if (!img->levels) {
    free(ms);
    snprintf(err, IR_ERR_LEN, "out of host memory");
    return IR_ERR_RUNTIME;
  }
  for (int l = 0; l < img->level_count && status == IR_OK; l++) {
    zarr_level *lv = &img->levels[l];
    if (ms) path_join(lv->dir, sizeof lv->dir, root, ms->paths[l]);
    else snprintf(lv->dir, sizeof lv->dir, "%s", root);
    int v = file_exists(lv->dir, "zarr.json") ? 3 : 2;
    if (ms && !file_exists(lv->dir, "zarr.json") && !file_exists(lv->dir, ".zarray")) {
      status = ir_input_error(err, src, "level %d: no array at %s", l, ms->paths[l]);
      break;
    }
    status = open_array(lv->dir, v, &lv->a, err);
  }
  if (status == IR_OK) {
    const ir_zarr_array *a0 = &img->levels[0].a;
    if (ms && ms->ndim) {
      if (ms->ndim != a0->ndim)
        status = ir_input_error(err, src, "multiscales gives %d axes, the arrays have %d", ms->ndim, a0->ndim);
      memcpy(img->role, ms->role, sizeof img->role);
    } else {
      status = plain_roles(a0, src, img->role, err);
    }
    img->ome = ms != NULL;
    if (ms) {
      snprintf(img->version, sizeof img->version, "%s", ms->version);
      memcpy(img->unit, ms->unit, sizeof img->unit);
    }
  }
  for (int k = 0; k < 5; k++) img->axis_of[k] = -1;
  for (int k = 0; status == IR_OK && k < img->levels[0].a.ndim; k++) img->axis_of[img->role[k]] = k;
  for (int l = 0; status == IR_OK && l < img->level_count; l++) {
    zarr_level *lv = &img->levels[l];
    if (lv->a.ndim != img->levels[0].a.ndim)
      status = ir_input_error(err, src, "level %d has %d dimensions, level 0 has %d", l, lv->a.ndim, img->levels[0].a.ndim);
    for (int k = 0; k < 3 && status == IR_OK; k++) {
      int axis = img->axis_of[k];
      double s = ms && ms->ndim ? ms->scale[l][axis] : 1.0;
      double t = ms && ms->ndim ? ms->translation[l][axis] : 0.0;
      lv->spacing[k] = (float)s;
      lv->origin[k] = (float)t;
      if (!(lv->spacing[k] > 0) || !isfinite(lv->spacing[k]))
        status = ir_input_error(err, src, "level %d: scale %g is not a positive float", l, s);
    }
    /* The time and channel axes are the same at every level. */
    for (int r = IR_ZARR_T; r <= IR_ZARR_C && status == IR_OK; r++) {
      int axis = img->axis_of[r];
      if (axis >= 0 && lv->a.shape[axis] != img->levels[0].a.shape[axis])
        status = ir_input_error(err, src, "level %d has %zu %s, level 0 has %zu", l, lv->a.shape[axis],
                                r == IR_ZARR_T ? "time steps" : "channels", img->levels[0].a.shape[axis]);
    }
  }
  free(ms);
  if (status != IR_OK) image_free(img);
  return status;
}

static void level_dims(const zarr_image *img, int l, size_t dims[3]) {
  for (int k = 0; k < 3; k++) dims[k] = img->levels[l].a.shape[img->axis_of[k]];
}

/* ---- The level to read ---------------------------------------------------------------------------- */
static size_t level_bytes(const zarr_image *img, int l) {
  size_t dims[3], bytes = 0;
  level_dims(img, l, dims);
  char ignored[IR_ERR_LEN];
  /* Voxels after conversion take at most 4 bytes each (float32). */
  ir_voxel_type t = img->levels[l].a.elem >= 4 ? IR_VOXEL_FLOAT32 : img->levels[l].a.elem == 2 ? IR_VOXEL_UINT16 : IR_VOXEL_UINT8;
  if (!ir_volume_byte_count(dims, t, &bytes, "", ignored)) return SIZE_MAX;
  return bytes;
}

static ir_status pick_level(const zarr_image *img, const ir_volume_desc *desc, int *level, char note[512],
                            char err[IR_ERR_LEN]) {
  note[0] = '\0';
  if (desc->level != IR_LEVEL_AUTO) {
    if (desc->level < 0 || desc->level >= img->level_count)
      return ir_input_error(err, desc->source, "--level %d: the source has %d level%s (0 .. %d, 0 the finest)", desc->level,
                            img->level_count, img->level_count == 1 ? "" : "s", img->level_count - 1);
    *level = desc->level;
    return IR_OK;
  }
  size_t host = ir_available_memory(desc) / 2;
  size_t budget = desc->level_budget_bytes ? desc->level_budget_bytes : SIZE_MAX;
  if (host && host < budget) budget = host;
  int pick = img->level_count - 1;
  for (int l = 0; l < img->level_count; l++)
    if (level_bytes(img, l) <= budget) {
      pick = l;
      break;
    }
  *level = pick;
  if (img->level_count > 1) {
    size_t dims[3];
    level_dims(img, pick, dims);
    const double gib = 1024.0 * 1024.0 * 1024.0;
    snprintf(note, 512, "level %d of %d (%zux%zux%zu, %.2f GiB): the finest that fits %.1f GiB (%s)", pick,
             img->level_count, dims[0], dims[1], dims[2], (double)level_bytes(img, pick) / gib,
             budget == SIZE_MAX ? 0.0 : (double)budget / gib,
             desc->level_budget_bytes && desc->level_budget_bytes <= host ? "the device's memory with headroom"
                                                                          : "half the available host memory");
  }
  return IR_OK;
}

/* ---- Reading chunks ------------------------------------------------------------------------------- */
typedef struct zarr_job {
  const zarr_image *img;
  const ir_zarr_array *a;
  const char *name;
  const char *where; /* the array's folder, for messages */
  size_t sel_lo[IR_ZARR_MAX_DIMS], sel_hi[IR_ZARR_MAX_DIMS]; /* array coordinates of the box */
  size_t grid_lo[IR_ZARR_MAX_DIMS], grid_n[IR_ZARR_MAX_DIMS]; /* chunk indices that meet it */
  size_t items;
  size_t box_off[3], box[3];                                  /* the box in volume axes */
  unsigned char *dst;
  bool swap;
  bool probing;      /* decode, copy nothing: the check before the volume is allocated */
  bool scan;         /* the samples are the voxels: scan their range while placing them */
  ir_voxel_type voxel_type;
  double lo, hi;     /* the threads' ranges merged */
  size_t nonfinite;
  /* Streaming to desc->sink: the volume's z slabs of one chunk row each (whole slices), passed
   * on as soon as every chunk of the slab is placed. */
  const ir_volume_sink *sink;
  atomic_size_t *slab_done; /* chunks placed, per slab */
  size_t slab_chunks;       /* chunks a slab has */
  atomic_size_t next;
  atomic_bool failed;
  pthread_mutex_t lock;
  ir_status status;
  char err[IR_ERR_LEN];
  ir_progress *progress;
} zarr_job;

typedef struct zarr_scratch {
  double lo, hi;    /* the value range of the voxels this thread placed (native types) */
  size_t nonfinite;
  unsigned char *raw, *dec, *fill;
  size_t raw_cap;
  void *zstd;
  uint64_t *offsets, *sizes;
  unsigned char *index;
} zarr_scratch;

static void job_fail(zarr_job *j, ir_status st, const char *msg) {
  pthread_mutex_lock(&j->lock);
  if (!j->failed) {
    j->status = st;
    snprintf(j->err, IR_ERR_LEN, "%s", msg);
    atomic_store(&j->failed, true);
  }
  pthread_mutex_unlock(&j->lock);
}

static void chunk_key(const ir_zarr_array *a, const size_t *idx, char *out, size_t cap) {
  size_t used = 0;
  if (a->key_prefix) used = (size_t)snprintf(out, cap, "c");
  for (int k = 0; k < a->ndim && used < cap; k++) {
    int w = snprintf(out + used, cap - used, "%s%zu", (k == 0 && !a->key_prefix) ? "" : (char[]){a->separator, 0}, idx[k]);
    if (w < 0) break;
    used += (size_t)w;
  }
}

static size_t chunk_elems(const ir_zarr_array *a, const size_t *shape) {
  size_t n = 1;
  for (int k = 0; k < a->ndim; k++) n *= shape[k];
  (void)a;
  return n;
}

#define SWAP_COPY(T, SWAP)                                                                \
  do {                                                                                    \
    const T *s = (const T *)(const void *)src;                                            \
    T *d = (T *)(void *)dst;                                                              \
    for (size_t i = 0; i < n; i++) {                                                      \
      T v;                                                                                \
      memcpy(&v, s + i * stride, sizeof v);                                               \
      v = SWAP;                                                                           \
      memcpy(d + i, &v, sizeof v);                                                        \
    }                                                                                     \
  } while (0)

static uint16_t bswap16(uint16_t v) { return (uint16_t)(v >> 8 | v << 8); }
static uint32_t bswap32(uint32_t v) { return v >> 24 | (v >> 8 & 0xff00u) | (v << 8 & 0xff0000u) | v << 24; }
static uint64_t bswap64(uint64_t v) { return (uint64_t)bswap32((uint32_t)v) << 32 | bswap32((uint32_t)(v >> 32)); }

/* n elements of `elem` bytes, `stride` elements apart in src, packed into dst. */
static void copy_run(unsigned char *dst, const unsigned char *src, size_t n, size_t stride, size_t elem, bool swap) {
  if (stride == 1 && !swap) {
    memcpy(dst, src, n * elem);
    return;
  }
  switch (elem) {
  case 1:
    for (size_t i = 0; i < n; i++) dst[i] = src[i * stride];
    break;
  case 2:
    if (swap) SWAP_COPY(uint16_t, bswap16(v));
    else SWAP_COPY(uint16_t, v);
    break;
  case 4:
    if (swap) SWAP_COPY(uint32_t, bswap32(v));
    else SWAP_COPY(uint32_t, v);
    break;
  default:
    if (swap) SWAP_COPY(uint64_t, bswap64(v));
    else SWAP_COPY(uint64_t, v);
    break;
  }
}

/* Copies the part of a decoded chunk (shape `shape`, first element at array coordinates
 * `origin`, elements in the codecs' order) inside the box into the volume; returns its bytes. */
/* The range is scanned row by row as each is copied, while it is in cache, instead of in a
 * pass over the whole volume afterwards. */
static size_t place(zarr_job *j, zarr_scratch *w, const unsigned char *chunk, const size_t *shape, const size_t *origin,
                    bool swap) {
  const ir_zarr_array *a = j->a;
  if (j->probing) return 0;
  size_t stride[IR_ZARR_MAX_DIMS], lo[IR_ZARR_MAX_DIMS], hi[IR_ZARR_MAX_DIMS];
  size_t s = 1;
  for (int i = a->ndim - 1; i >= 0; i--) {
    int axis = a->codecs.order[i];
    stride[axis] = s;
    s *= shape[axis];
  }
  size_t base = 0;
  bool whole = !swap; /* the whole chunk lands in the volume, in host order */
  for (int k = 0; k < a->ndim; k++) {
    lo[k] = origin[k] > j->sel_lo[k] ? origin[k] : j->sel_lo[k];
    size_t end = origin[k] + shape[k];
    hi[k] = end < j->sel_hi[k] ? end : j->sel_hi[k];
    if (lo[k] >= hi[k]) return 0;
    base += (lo[k] - origin[k]) * stride[k];
    whole = whole && lo[k] == origin[k] && hi[k] == end;
  }
  /* A chunk that lands whole: its range in one pass over the contiguous buffer (a call a row
   * costs more than the scan itself on short rows). */
  bool row_scan = j->scan && !whole;
  if (j->scan && whole) {
    double l, h;
    size_t bad;
    ir_scan_range(chunk, j->voxel_type, 0, s, &l, &h, &bad);
    w->lo = l < w->lo ? l : w->lo;
    w->hi = h > w->hi ? h : w->hi;
    w->nonfinite += bad;
  }
  int ax = j->img->axis_of[IR_ZARR_X], ay = j->img->axis_of[IR_ZARR_Y], az = j->img->axis_of[IR_ZARR_Z];
  size_t nx = hi[ax] - lo[ax], elem = a->elem;
  for (size_t z = lo[az]; z < hi[az]; z++)
    for (size_t y = lo[ay]; y < hi[ay]; y++) {
      size_t src = base + (z - lo[az]) * stride[az] + (y - lo[ay]) * stride[ay];
      size_t dst = ((z - j->box_off[2]) * j->box[1] + (y - j->box_off[1])) * j->box[0] + (lo[ax] - j->box_off[0]);
      copy_run(j->dst + dst * elem, chunk + src * elem, nx, stride[ax], elem, swap);
      if (row_scan) {
        double l, h;
        size_t bad;
        ir_scan_range(j->dst, j->voxel_type, dst, dst + nx, &l, &h, &bad);
        w->lo = l < w->lo ? l : w->lo;
        w->hi = h > w->hi ? h : w->hi;
        w->nonfinite += bad;
      }
    }
  return nx * (hi[ay] - lo[ay]) * (hi[az] - lo[az]) * elem;
}

static bool grow(unsigned char **buf, size_t *cap, size_t want) {
  if (*cap >= want) return true;
  unsigned char *p = realloc(*buf, want);
  if (!p) return false;
  *buf = p;
  *cap = want;
  return true;
}

/* Reads a whole chunk file; *missing when there is none (the fill value). */
static ir_status read_whole(const char *path, const char *where, const char *key, size_t max, unsigned char **buf, size_t *cap, size_t *len,
                            bool *missing, char err[IR_ERR_LEN]) {
  *missing = false;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) {
      *missing = true;
      return IR_OK;
    }
    return ir_input_error(err, where, "chunk %s: cannot open: %s", key, strerror(errno));
  }
  struct stat st;
  ir_status status = IR_OK;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) status = ir_input_error(err, where, "chunk %s: not a regular file", key);
  else if ((size_t)st.st_size > max)
    status = ir_input_error(err, where, "chunk %s: %lld bytes, more than a chunk of these dims can be stored in", key,
                            (long long)st.st_size);
  else if (!grow(buf, cap, (size_t)st.st_size + 1)) {
    ir_input_error(err, where, "out of host memory for chunk %s", key);
    status = IR_ERR_RUNTIME;
  }
  size_t got = 0;
  while (status == IR_OK && got < (size_t)st.st_size) {
    ssize_t r = read(fd, *buf + got, (size_t)st.st_size - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) status = ir_input_error(err, where, "chunk %s: read error", key);
    else got += (size_t)r;
  }
  close(fd);
  *len = got;
  return status;
}

static ir_status pread_exact(int fd, unsigned char *dst, size_t n, uint64_t at, const char *where, const char *key,
                             char err[IR_ERR_LEN]) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = pread(fd, dst + got, n - got, (off_t)(at + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return ir_input_error(err, where, "shard %s: read error at byte %llu", key, (unsigned long long)(at + got));
    got += (size_t)r;
  }
  return IR_OK;
}

/* Largest stored size of a chunk of `bytes`: compressors may add a little; beyond that the file
 * is not a chunk of these dims. */
static size_t max_stored(size_t bytes) { return bytes + bytes / 8 + ((size_t)1 << 16); }

/* The fill value's chunk, made at the first missing chunk (most arrays have none). */
static const unsigned char *fill_chunk(const ir_zarr_array *a, zarr_scratch *w) {
  if (!w->fill) {
    const size_t *shape = a->sharded ? a->inner : a->chunk;
    size_t n = 1;
    for (int k = 0; k < a->ndim; k++) n *= shape[k];
    w->fill = malloc(n * a->elem);
    if (!w->fill) return NULL;
    for (size_t i = 0; i < n; i++) memcpy(w->fill + i * a->elem, a->fill, a->elem);
  }
  return w->fill;
}

static ir_status decode_one(zarr_job *j, zarr_scratch *w, const unsigned char *src, size_t n, const size_t *shape,
                            const size_t *origin, const char *where, const char *key, char err[IR_ERR_LEN]) {
  const ir_zarr_array *a = j->a;
  size_t bytes = chunk_elems(a, shape) * a->elem;
  char reason[IR_ERR_LEN];
  if (!ir_zarr_decode_bytes(a->codecs.compressor, a->codecs.crc32c, src, n, w->dec, bytes, w->zstd, reason))
    return ir_input_error(err, where, "chunk %s: %s", key, reason);
  size_t placed = place(j, w, w->dec, shape, origin, j->swap);
  ir_progress_add(j->progress, placed);
  return IR_OK;
}

static ir_status read_shard(zarr_job *j, zarr_scratch *w, const char *path, const char *key, const size_t *origin,
                            char err[IR_ERR_LEN]) {
  const ir_zarr_array *a = j->a;
  const char *where = j->where;
  size_t per[IR_ZARR_MAX_DIMS], count = 1;
  for (int k = 0; k < a->ndim; k++) {
    per[k] = a->chunk[k] / a->inner[k];
    count *= per[k];
  }
  size_t inner_elems = chunk_elems(a, a->inner);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {
    if (!fill_chunk(a, w)) return ir_input_error(err, where, "out of host memory for the fill value's chunk"), IR_ERR_RUNTIME;
    for (size_t i = 0; i < count; i++) {
      size_t at[IR_ZARR_MAX_DIMS], r = i;
      for (int k = a->ndim - 1; k >= 0; k--) {
        at[k] = origin[k] + (r % per[k]) * a->inner[k];
        r /= per[k];
      }
      ir_progress_add(j->progress, place(j, w, w->fill, a->inner, at, false));
    }
    return IR_OK;
  }
  if (fd < 0) return ir_input_error(err, where, "shard %s: cannot open: %s", key, strerror(errno));
  struct stat st;
  ir_status status = IR_OK;
  size_t index_bytes = count * 16 + (a->index_crc32c ? 4 : 0);
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) status = ir_input_error(err, where, "shard %s: not a regular file", key);
  else if ((size_t)st.st_size < index_bytes)
    status = ir_input_error(err, where, "shard %s: %lld bytes, too short for its index of %zu", key, (long long)st.st_size,
                            index_bytes);
  if (status == IR_OK) {
    size_t at = a->index_at_start ? 0 : (size_t)st.st_size - index_bytes;
    status = pread_exact(fd, w->index, index_bytes, at, where, key, err);
  }
  char reason[IR_ERR_LEN];
  if (status == IR_OK &&
      !ir_zarr_parse_shard_index(a, w->index, index_bytes, count, (size_t)st.st_size, w->offsets, w->sizes, reason))
    status = ir_input_error(err, where, "shard %s: %s", key, reason);
  for (size_t i = 0; i < count && status == IR_OK && !atomic_load(&j->failed); i++) {
    size_t at[IR_ZARR_MAX_DIMS], r = i;
    bool meets = true;
    for (int k = a->ndim - 1; k >= 0; k--) {
      at[k] = origin[k] + (r % per[k]) * a->inner[k];
      r /= per[k];
      meets = meets && at[k] < j->sel_hi[k] && at[k] + a->inner[k] > j->sel_lo[k];
    }
    if (!meets) continue;
    char inner_key[300];
    snprintf(inner_key, sizeof inner_key, "%s (inner chunk %zu)", key, i);
    if (w->offsets[i] == UINT64_MAX && w->sizes[i] == UINT64_MAX) {
      if (!fill_chunk(a, w)) {
        ir_input_error(err, where, "out of host memory for the fill value's chunk");
        status = IR_ERR_RUNTIME;
        break;
      }
      ir_progress_add(j->progress, place(j, w, w->fill, a->inner, at, false));
      continue;
    }
    if (w->sizes[i] > max_stored(inner_elems * a->elem) + 4) {
      status = ir_input_error(err, where, "chunk %s: %llu bytes, more than a chunk of these dims can be stored in", inner_key,
                              (unsigned long long)w->sizes[i]);
      break;
    }
    if (!grow(&w->raw, &w->raw_cap, (size_t)w->sizes[i] + 1)) {
      ir_input_error(err, where, "out of host memory for chunk %s", inner_key);
      status = IR_ERR_RUNTIME;
      break;
    }
    status = pread_exact(fd, w->raw, (size_t)w->sizes[i], w->offsets[i], where, key, err);
    if (status == IR_OK) status = decode_one(j, w, w->raw, (size_t)w->sizes[i], a->inner, at, where, inner_key, err);
    if (j->probing) break; /* one inner chunk tells whether the codecs are right */
  }
  close(fd);
  return status;
}

static ir_status read_item(zarr_job *j, zarr_scratch *w, size_t item, const char *dir, char err[IR_ERR_LEN]) {
  const ir_zarr_array *a = j->a;
  size_t idx[IR_ZARR_MAX_DIMS], origin[IR_ZARR_MAX_DIMS];
  for (int k = a->ndim - 1; k >= 0; k--) {
    idx[k] = j->grid_lo[k] + item % j->grid_n[k];
    item /= j->grid_n[k];
    origin[k] = idx[k] * a->chunk[k];
  }
  char key[256], path[4400];
  chunk_key(a, idx, key, sizeof key);
  path_join(path, sizeof path, dir, key);
  if (a->sharded) return read_shard(j, w, path, key, origin, err);
  size_t elems = chunk_elems(a, a->chunk), len = 0;
  bool missing = false;
  ir_status st = read_whole(path, j->where, key, max_stored(elems * a->elem) + 4, &w->raw, &w->raw_cap, &len, &missing, err);
  if (st != IR_OK) return st;
  if (missing) {
    if (!fill_chunk(a, w)) return ir_input_error(err, j->where, "out of host memory for the fill value's chunk"), IR_ERR_RUNTIME;
    ir_progress_add(j->progress, place(j, w, w->fill, a->chunk, origin, false));
    return IR_OK;
  }
  return decode_one(j, w, w->raw, len, a->chunk, origin, j->where, key, err);
}

static void scratch_free(zarr_scratch *w) {
  free(w->raw);
  free(w->dec);
  free(w->fill);
  free(w->offsets);
  free(w->sizes);
  free(w->index);
  ir_zarr_zstd_context_free(w->zstd);
  memset(w, 0, sizeof *w);
}

static bool scratch_init(const ir_zarr_array *a, zarr_scratch *w) {
  memset(w, 0, sizeof *w);
  w->lo = INFINITY;
  w->hi = -INFINITY;
  const size_t *shape = a->sharded ? a->inner : a->chunk;
  size_t bytes = chunk_elems(a, shape) * a->elem;
  w->dec = malloc(bytes);
  w->zstd = ir_zarr_zstd_context();
  bool ok = w->dec != NULL;
  if (a->sharded) {
    size_t count = 1;
    for (int k = 0; k < a->ndim; k++) count *= a->chunk[k] / a->inner[k];
    w->offsets = malloc(count * sizeof *w->offsets);
    w->sizes = malloc(count * sizeof *w->sizes);
    w->index = malloc(count * 16 + 4);
    ok = ok && w->offsets && w->sizes && w->index;
  }
  if (!ok) scratch_free(w);
  return ok;
}

/* One more chunk of item's slab is placed: the whole slab goes to the sink when it was the last. */
static ir_status slab_progress(zarr_job *j, size_t item, char err[IR_ERR_LEN]) {
  const ir_zarr_array *a = j->a;
  int az = j->img->axis_of[IR_ZARR_Z];
  size_t rest = item, slab = 0;
  for (int k = a->ndim - 1; k >= 0; k--) {
    if (k == az) slab = rest % j->grid_n[k];
    rest /= j->grid_n[k];
  }
  if (atomic_fetch_add(&j->slab_done[slab], 1) + 1 != j->slab_chunks) return IR_OK;
  size_t z0 = (j->grid_lo[az] + slab) * a->chunk[az], z1 = z0 + a->chunk[az];
  if (z1 > j->box[2]) z1 = j->box[2];
  size_t slice = j->box[0] * j->box[1] * a->elem;
  ir_volume_piece piece = {z0 * slice, (z1 - z0) * slice, z0 * j->box[1], (z1 - z0) * j->box[1]};
  return j->sink->piece(j->sink->ctx, &piece, j->dst + piece.offset, err);
}

typedef struct zarr_run {
  zarr_job *job;
  const char *dir;
} zarr_run;

static void worker(void *ctx, size_t begin, size_t end, int index) {
  (void)begin, (void)end, (void)index;
  zarr_run *run = ctx;
  zarr_job *j = run->job;
  zarr_scratch w;
  if (!scratch_init(j->a, &w)) {
    job_fail(j, IR_ERR_RUNTIME, "out of host memory for the chunk buffers");
    return;
  }
  char err[IR_ERR_LEN];
  for (;;) {
    if (atomic_load(&j->failed)) break;
    size_t item = atomic_fetch_add(&j->next, 1);
    if (item >= j->items) break;
    ir_status st = read_item(j, &w, item, run->dir, err);
    if (st == IR_OK && j->sink) st = slab_progress(j, item, err);
    if (st != IR_OK) {
      job_fail(j, st, err);
      break;
    }
  }
  pthread_mutex_lock(&j->lock);
  j->lo = w.lo < j->lo ? w.lo : j->lo;
  j->hi = w.hi > j->hi ? w.hi : j->hi;
  j->nonfinite += w.nonfinite;
  pthread_mutex_unlock(&j->lock);
  scratch_free(&w);
}

bool ir_zarr_parse_shard_index(const ir_zarr_array *a, const unsigned char *index, size_t index_bytes, size_t count,
                               size_t shard_bytes, uint64_t *offsets, uint64_t *sizes, char reason[IR_ERR_LEN]) {
  size_t payload = index_bytes;
  if (a->index_crc32c && !ir_zarr_check_crc32c(index, index_bytes, &payload, reason)) {
    char inner[IR_ERR_LEN];
    memcpy(inner, reason, IR_ERR_LEN);
    ir_input_error(reason, "index", "%s", inner);
    return false;
  }
  if (payload != count * 16) {
    snprintf(reason, IR_ERR_LEN, "index of %zu bytes, expected %zu", payload, count * 16);
    return false;
  }
  for (size_t i = 0; i < 2 * count; i++) {
    uint64_t v = 0;
    for (int b = 0; b < 8; b++) {
      unsigned byte = index[i * 8 + (size_t)(a->index_big_endian ? b : 7 - b)];
      v = v << 8 | byte;
    }
    if (i % 2 == 0) offsets[i / 2] = v;
    else sizes[i / 2] = v;
  }
  for (size_t i = 0; i < count; i++) {
    if (offsets[i] == UINT64_MAX && sizes[i] == UINT64_MAX) continue;
    if (offsets[i] > shard_bytes || sizes[i] > shard_bytes - offsets[i]) {
      snprintf(reason, IR_ERR_LEN, "index entry %zu (bytes %llu + %llu) reaches past the shard's %zu bytes", i,
               (unsigned long long)offsets[i], (unsigned long long)sizes[i], shard_bytes);
      return false;
    }
  }
  return true;
}

/* ---- The loader --------------------------------------------------------------------------------- */
static void describe(const zarr_image *img, int level, const ir_volume_desc *desc, ir_volume *out) {
  const zarr_level *lv = &img->levels[level];
  out->level = level;
  out->level_count = img->level_count > 1 ? img->level_count : 0;
  for (int l = 0; l < img->level_count && l < IR_MAX_LEVELS; l++) {
    level_dims(img, l, out->level_dims[l]);
    memcpy(out->level_spacing[l], img->levels[l].spacing, sizeof out->level_spacing[l]);
  }
  if (!desc->spacing_given) memcpy(out->spacing, lv->spacing, sizeof out->spacing);
  memcpy(out->world_origin, lv->origin, sizeof out->world_origin);
  int t = img->axis_of[IR_ZARR_T], c = img->axis_of[IR_ZARR_C];
  out->steps = t >= 0 ? lv->a.shape[t] : 0;
  out->channels = c >= 0 ? lv->a.shape[c] : 0;
  char what[64];
  if (img->ome) snprintf(what, sizeof what, "OME-Zarr %s", img->version[0] ? img->version : "");
  else snprintf(what, sizeof what, "Zarr v%d %s", lv->a.version, ir_sample_name(lv->a.sample));
  size_t used = (size_t)snprintf(out->description, sizeof out->description, "%s", what);
  if (img->ome && used < sizeof out->description)
    used += (size_t)snprintf(out->description + used, sizeof out->description - used, ", level %d of %d", level,
                             img->level_count);
  if (c >= 0 && used < sizeof out->description)
    used += (size_t)snprintf(out->description + used, sizeof out->description - used, ", channel %zu of %zu",
                             desc->channel, out->channels);
  if (t >= 0 && used < sizeof out->description)
    used += (size_t)snprintf(out->description + used, sizeof out->description - used, ", step %zu of %zu",
                             desc->time_step, out->steps);
  if (img->unit[0] && used < sizeof out->description)
    snprintf(out->description + used, sizeof out->description - used, ", %s", img->unit);
}

ir_status ir_load_zarr(const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]) {
  const char *src = desc->source;
  zarr_image img;
  ir_status status = open_image(src, &img, err);
  if (status != IR_OK) return status;
  char note[512];
  int level = 0;
  status = pick_level(&img, desc, &level, note, err);
  int t = img.axis_of[IR_ZARR_T], c = img.axis_of[IR_ZARR_C];
  const ir_zarr_array *a = &img.levels[level].a;
  if (status == IR_OK && c < 0 && desc->channel)
    status = ir_input_error(err, src, "--channel %zu: the array has no channel axis", desc->channel);
  if (status == IR_OK && c >= 0 && desc->channel >= a->shape[c])
    status = ir_input_error(err, src, "--channel %zu: the array has %zu channels (0 .. %zu)", desc->channel, a->shape[c],
                            a->shape[c] - 1);
  if (status == IR_OK && t < 0 && desc->time_step)
    status = ir_input_error(err, src, "time step %zu: the array has no time axis", desc->time_step);
  if (status == IR_OK && t >= 0 && desc->time_step >= a->shape[t])
    status = ir_input_error(err, src, "time step %zu: the array has %zu steps", desc->time_step, a->shape[t]);
  size_t dims[3] = {0}, off[3], size[3];
  if (status == IR_OK) {
    level_dims(&img, level, dims);
    status = ir_region_resolve(desc, dims, src, off, size, err);
  }
  bool native = a->sample == IR_SAMPLE_UINT8 || a->sample == IR_SAMPLE_UINT16 || a->sample == IR_SAMPLE_INT16 ||
                a->sample == IR_SAMPLE_FLOAT32;
  /* A header names the voxel type without reading voxels unless that type depends on the
   * values (32- and 64-bit integers: the narrowest type that holds them); those are read. */
  bool type_known = native || a->sample == IR_SAMPLE_INT8 || a->sample == IR_SAMPLE_FLOAT64;
  if (status == IR_OK && desc->header_only && (type_known || desc->layout_only)) {
    ir_voxel_type shown = native ? (ir_voxel_type)(a->sample == IR_SAMPLE_UINT8 ? IR_VOXEL_UINT8
                                                   : a->sample == IR_SAMPLE_UINT16 ? IR_VOXEL_UINT16
                                                   : a->sample == IR_SAMPLE_INT16 ? IR_VOXEL_INT16 : IR_VOXEL_FLOAT32)
                                 : a->sample == IR_SAMPLE_INT8 ? IR_VOXEL_INT16 : IR_VOXEL_FLOAT32;
    float ones[3] = {1, 1, 1};
    ir_volume_header_only(out, dims, shown, desc->spacing_given ? desc->spacing : ones, ir_display_name(src));
    describe(&img, level, desc, out);
    out->streamable = native && !ir_region_is_partial(dims, size);
    if (note[0]) snprintf(out->note, sizeof out->note, "%s", note);
    image_free(&img);
    return IR_OK;
  }
  zarr_job *j = NULL;
  if (status == IR_OK && !(j = calloc(1, sizeof *j))) {
    snprintf(err, IR_ERR_LEN, "out of host memory");
    status = IR_ERR_RUNTIME;
  }
  if (status != IR_OK) {
    image_free(&img);
    return status;
  }
  j->img = &img;
  j->a = a;
  j->name = ir_display_name(src);
  j->where = img.levels[level].dir;
  j->items = 1;
  for (int k = 0; k < a->ndim; k++) {
    ir_zarr_role r = img.role[k];
    j->sel_lo[k] = r <= IR_ZARR_Z ? off[r] : r == IR_ZARR_T ? desc->time_step : desc->channel;
    j->sel_hi[k] = r <= IR_ZARR_Z ? off[r] + size[r] : j->sel_lo[k] + 1;
    j->grid_lo[k] = j->sel_lo[k] / a->chunk[k];
    j->grid_n[k] = (j->sel_hi[k] - 1) / a->chunk[k] - j->grid_lo[k] + 1;
    j->items *= j->grid_n[k];
  }
  memcpy(j->box_off, off, sizeof off);
  memcpy(j->box, size, sizeof size);
  j->swap = a->elem > 1 && a->codecs.big_endian != ir_host_is_big_endian();
  pthread_mutex_init(&j->lock, NULL);
  size_t bytes = 0;
  if (!ir_sample_byte_count(size, a->sample, &bytes, src, err)) status = IR_ERR_INPUT;
  /* The volume's memory is checked first (no allocation yet), so that dims too large for it are
   * refused before even a chunk's buffers are taken. */
  if (status == IR_OK) status = ir_check_memory(bytes, desc, src, err);
  /* One chunk first, decoded and dropped: metadata that lie about the chunks (another size,
   * another codec) are refused before the volume's memory is taken. */
  zarr_run run = {j, img.levels[level].dir};
  if (status == IR_OK) {
    zarr_scratch w;
    if (!scratch_init(a, &w)) {
      snprintf(err, IR_ERR_LEN, "%s: out of host memory for the chunk buffers", src);
      status = IR_ERR_RUNTIME;
    } else {
      j->probing = true;
      status = read_item(j, &w, 0, run.dir, err);
      j->probing = false;
      scratch_free(&w);
    }
  }
  void *samples = NULL;
  if (status == IR_OK) {
    if (native) {
      ir_voxel_type vt = a->sample == IR_SAMPLE_UINT8 ? IR_VOXEL_UINT8 : a->sample == IR_SAMPLE_UINT16 ? IR_VOXEL_UINT16
                       : a->sample == IR_SAMPLE_INT16 ? IR_VOXEL_INT16 : IR_VOXEL_FLOAT32;
      status = ir_volume_allocate(out, size, vt, desc, src, err);
      samples = out->voxels;
    } else {
      status = ir_check_memory(bytes, desc, src, err);
      if (status == IR_OK && !(samples = malloc(bytes))) {
        snprintf(err, IR_ERR_LEN, "%s: out of host memory: %zu bytes of %s samples", src, bytes, ir_sample_name(a->sample));
        status = IR_ERR_RUNTIME;
      }
    }
  }
  if (status == IR_OK) {
    j->dst = samples;
    /* Whole-volume reads of the voxel types stream (boxes and converted types do not). */
    if (native && desc->sink && desc->sink->piece && !ir_region_is_partial(dims, size)) {
      int az = img.axis_of[IR_ZARR_Z];
      j->slab_chunks = j->items / j->grid_n[az];
      j->slab_done = calloc(j->grid_n[az], sizeof *j->slab_done);
      if (j->slab_done) {
        for (size_t k = 0; k < j->grid_n[az]; k++) atomic_init(&j->slab_done[k], 0);
        j->sink = desc->sink;
      }
    }
    j->scan = native;
    j->voxel_type = out->type;
    j->lo = INFINITY;
    j->hi = -INFINITY;
    ir_progress progress;
    ir_progress_begin(&progress, desc, j->name, bytes);
    j->progress = &progress;
    size_t workers = j->items;
    if (desc->io_threads > 0 && (size_t)desc->io_threads < workers) workers = (size_t)desc->io_threads;
    /* Each worker holds a decoded chunk, its compressed bytes and, where one is missing, a chunk
     * of fill values (and a shard's index): no more workers than the memory beside the volume
     * holds, one at least (memory unknown: no limit). */
    size_t per_worker = 3 * chunk_elems(a, a->sharded ? a->inner : a->chunk) * a->elem;
    if (a->sharded) {
      size_t count = 1;
      for (int k = 0; k < a->ndim; k++) count *= a->chunk[k] / a->inner[k];
      per_worker += count * 32;
    }
    size_t avail = ir_available_memory(desc);
    if (avail > bytes && per_worker > 0) {
      size_t fit = (avail - bytes) / per_worker;
      fit = fit < 1 ? 1 : fit;
      if (fit < workers) workers = fit;
    }
    ir_parallel_for(workers, 1, worker, &run);
    ir_progress_end(&progress);
    if (j->failed) {
      status = j->status;
      snprintf(err, IR_ERR_LEN, "%s", j->err);
    }
    out->streamed = status == IR_OK && j->sink != NULL;
  }
  free(j->slab_done);
  pthread_mutex_destroy(&j->lock);
  if (status == IR_OK && !native) {
    out->voxels = NULL;
    status = ir_volume_from_samples(out, size, samples, a->sample, 1.0, 0.0, src, err);
    samples = NULL;
    if (status == IR_OK && a->sample == IR_SAMPLE_FLOAT64)
      snprintf(out->note, sizeof out->note, "float64 samples rounded to float32");
  }
  if (status != IR_OK) {
    if (native) ir_volume_free(out);
    else free(samples);
    memset(out, 0, sizeof *out);
    free(j);
    image_free(&img);
    return status;
  }
  memcpy(out->full_dims, dims, sizeof out->full_dims);
  memcpy(out->origin, off, sizeof out->origin);
  for (int k = 0; k < 3; k++) out->spacing[k] = 1.0f;
  if (desc->spacing_given) memcpy(out->spacing, desc->spacing, sizeof out->spacing);
  describe(&img, level, desc, out);
  if (note[0]) {
    size_t used = strlen(out->note);
    snprintf(out->note + used, sizeof out->note - used, "%s%s", used ? "; " : "", note);
  }
  if (native) ir_volume_finish_with_range(out, ir_display_name(src), j->lo, j->hi, j->nonfinite);
  else ir_volume_finish(out, ir_display_name(src));
  if (desc->header_only) ir_volume_drop_voxels(out);
  free(j);
  image_free(&img);
  return IR_OK;
}

#else

ir_status ir_load_zarr(const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]) {
  (void)out;
  return ir_input_error(err, desc->source, "inkray was built without Zarr support (install libcjson-dev and rebuild)");
}

#endif
