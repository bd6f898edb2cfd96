/* Time series: the steps of a volume that changes over time, listed from a printf pattern, a
 * glob, a folder of volume files, a ParaView collection (.pvd) or a 4-D NRRD/NIfTI file, checked
 * against each other from their headers when the series is opened, and read one at a time.
 *
 * Steps kept in separate files are read by ir_volume_load, with everything it does (pieces on
 * several threads, a sink, reused memory). The steps of a 4-D file are byte ranges of its data:
 * uncompressed ones are read in pieces like any volume (read_pieces.c), gzip ones through one
 * zlib stream kept open, so that playing the steps in order decompresses the file once
 * (gzseek forward); stepping back starts the stream again.
 *
 * What this file does not do: read ahead (the program's player does, app/series_play.c) or
 * anything on the GPU.
 */
#define _DEFAULT_SOURCE /* glob, DT_* */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#ifdef INKRAY_HAVE_EXPAT
#include <expat.h>
#endif

#include "data/volume_internal.h"
#include "data/zarr.h"

/* SERIES_INDEXED: an array with a time axis (Zarr, OME-Zarr, HDF5), each step read by
 * ir_volume_load with desc.time_step. */
typedef enum series_kind { SERIES_FILES = 0, SERIES_4D, SERIES_INDEXED } series_kind;

struct ir_series {
  series_kind kind;
  size_t count;
  char **paths;   /* SERIES_FILES: each step's file */
  char **names;   /* what messages and the program call each step */
  double *times;  /* .pvd timesteps; else NULL */
  char **bad;     /* keep_bad_steps: what is wrong with each step found bad at open (else NULL) */
  size_t bad_count;
  ir_volume header;
  ir_volume_desc desc; /* the format options every step is read with */
  /* SERIES_4D: */
  char *path;
  ir_header h;
  bool nifti;
  size_t step_bytes;
  gzFile gz;       /* the open gzip stream of a compressed 4-D file */
  size_t gz_file;  /* its data file */
};

/* ---- Which sources are series ---------------------------------------------------------------- */
static const char *const HEADER_SUFFIXES[] = {".nrrd", ".nhdr", ".mhd", ".mha", ".nii", ".nii.gz", ".vti", ".dat", NULL};
static const char *const RAW_SUFFIXES[] = {".raw", ".raw.gz", NULL};

static bool has_suffix_in(const char *name, const char *const *suffixes) {
  for (int k = 0; suffixes[k]; k++)
    if (ir_path_has_suffix(name, suffixes[k])) return true;
  return false;
}

static bool is_tiff_name(const char *name) {
  return ir_path_has_suffix(name, ".tif") || ir_path_has_suffix(name, ".tiff");
}

static bool is_regular(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* A folder of volume files: two or more of them (header formats, else raw files; one is just a
 * volume beside its data) and no TIFF slice. */
static bool folder_is_series(const char *path) {
  DIR *dir = opendir(path);
  if (!dir) return false;
  size_t headers = 0, raws = 0;
  bool tiff = false;
  for (struct dirent *e; (e = readdir(dir)) != NULL;) {
    if (e->d_name[0] == '.') continue;
    tiff = tiff || is_tiff_name(e->d_name);
    headers += has_suffix_in(e->d_name, HEADER_SUFFIXES);
    raws += has_suffix_in(e->d_name, RAW_SUFFIXES);
  }
  closedir(dir);
  return !tiff && (headers >= 2 || (headers == 0 && raws >= 2));
}

static bool has_glob_chars(const char *s) { return strpbrk(s, "*?[") != NULL; }

static bool read_4d_header(const char *path, ir_header *h, bool *nifti, char err[IR_ERR_LEN]) {
  *nifti = ir_path_has_suffix(path, ".nii") || ir_path_has_suffix(path, ".nii.gz");
  bool nrrd = ir_path_has_suffix(path, ".nrrd") || ir_path_has_suffix(path, ".nhdr");
  if (!*nifti && !nrrd) return false;
  ir_status st = *nifti ? ir_nifti_read_header(path, h, err) : ir_nrrd_read_header(path, h, err);
  return st == IR_OK;
}

/* The header of an array with a time axis; false when the source is no such array. */
static bool indexed_header(const ir_volume_desc *desc, ir_volume *header, char err[IR_ERR_LEN]) {
  if (!ir_is_zarr_source(desc->source) && !ir_is_hdf5_source(desc->source)) return false;
  ir_volume_desc d = *desc;
  d.header_only = true;
  d.time_step = 0;
  d.sink = NULL;
  d.recycle = NULL;
  if (ir_volume_load(&d, header, err) != IR_OK) return false;
  return header->steps > 1;
}

bool ir_series_detect(const char *source) {
  if (!source || !*source || strncmp(source, "builtin:", 8) == 0) return false;
  if (ir_is_zarr_source(source) || ir_is_hdf5_source(source)) {
    ir_volume header;
    char err[IR_ERR_LEN];
    bool steps = indexed_header(&(ir_volume_desc){.source = source, .level = IR_LEVEL_AUTO}, &header, err);
    ir_volume_free(&header);
    return steps;
  }
  struct stat st;
  if (stat(source, &st) == 0) {
    if (S_ISDIR(st.st_mode)) return folder_is_series(source);
    if (ir_path_has_suffix(source, ".pvd")) return true;
    ir_header h;
    bool nifti = false;
    char err[IR_ERR_LEN];
    if (!read_4d_header(source, &h, &nifti, err)) return false;
    bool steps = h.steps > 1;
    ir_header_free(&h);
    return steps;
  }
  if (is_tiff_name(source)) return false; /* a TIFF slice pattern is one volume */
  return ir_is_number_pattern(source) || has_glob_chars(source);
}

/* ---- Listing the steps -------------------------------------------------------------------------- */
typedef struct step_list {
  char **paths;
  double *times;
  size_t count, capacity;
} step_list;

static bool list_add(step_list *l, const char *path, double time) {
  if (l->count >= IR_MAX_DATA_FILES) return false;
  if (l->count == l->capacity) {
    size_t capacity = l->capacity ? 2 * l->capacity : 64;
    char **paths = realloc(l->paths, capacity * sizeof *paths);
    if (!paths) return false;
    l->paths = paths;
    double *times = realloc(l->times, capacity * sizeof *times);
    if (!times) return false;
    l->times = times;
    l->capacity = capacity;
  }
  char *copy = strdup(path);
  if (!copy) return false;
  l->paths[l->count] = copy;
  l->times[l->count++] = time;
  return true;
}

static void list_free(step_list *l) {
  for (size_t i = 0; i < l->count; i++) free(l->paths[i]);
  free(l->paths);
  free(l->times);
  memset(l, 0, sizeof *l);
}

static int compare_names(const void *x, const void *y) {
  const char *a = *(char *const *)x, *b = *(char *const *)y;
  int c = ir_natural_compare(ir_display_name(a), ir_display_name(b));
  return c ? c : strcmp(a, b);
}

static void sort_paths(step_list *l) {
  qsort(l->paths, l->count, sizeof *l->paths, compare_names);
  for (size_t i = 0; i < l->count; i++) l->times[i] = (double)i;
}

static ir_status list_folder(const char *folder, step_list *l, char err[IR_ERR_LEN]) {
  DIR *dir = opendir(folder);
  if (!dir) return ir_input_error(err, folder, "cannot open the folder: %s", strerror(errno));
  /* Header formats name their own data files (a .nhdr's .raw): with any of them, only they. */
  bool headers = false;
  for (struct dirent *e; (e = readdir(dir)) != NULL;)
    headers = headers || (e->d_name[0] != '.' && has_suffix_in(e->d_name, HEADER_SUFFIXES));
  rewinddir(dir);
  ir_status status = IR_OK;
  for (struct dirent *e; status == IR_OK && (e = readdir(dir)) != NULL;) {
    if (e->d_name[0] == '.' || !has_suffix_in(e->d_name, headers ? HEADER_SUFFIXES : RAW_SUFFIXES)) continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", folder, e->d_name);
    if (!is_regular(path)) continue;
    if (!list_add(l, path, 0)) status = ir_input_error(err, folder, "more than %d volume files", IR_MAX_DATA_FILES);
  }
  closedir(dir);
  if (status == IR_OK && l->count == 0) status = ir_input_error(err, folder, "no volume files in the folder");
  if (status == IR_OK) sort_paths(l);
  return status;
}

static ir_status list_glob(const char *pattern, step_list *l, char err[IR_ERR_LEN]) {
  glob_t g;
  memset(&g, 0, sizeof g);
  int rc = glob(pattern, 0, NULL, &g);
  ir_status status = IR_OK;
  if (rc == GLOB_NOMATCH) status = ir_input_error(err, pattern, "the pattern matches no file");
  else if (rc != 0) status = ir_input_error(err, pattern, "cannot list the files the pattern matches");
  for (size_t i = 0; status == IR_OK && i < g.gl_pathc; i++) {
    if (!is_regular(g.gl_pathv[i])) continue;
    if (!list_add(l, g.gl_pathv[i], 0)) status = ir_input_error(err, pattern, "more than %d files", IR_MAX_DATA_FILES);
  }
  globfree(&g);
  if (status == IR_OK && l->count == 0) status = ir_input_error(err, pattern, "the pattern matches no regular file");
  if (status == IR_OK) sort_paths(l);
  return status;
}

/* A printf pattern: the files of its folder whose names it makes, numbers from the first to the
 * last found, none missing in between. */
static ir_status list_pattern(const char *pattern, bool keep_missing, step_list *l, char err[IR_ERR_LEN]) {
  if (!ir_is_number_pattern(pattern))
    return ir_input_error(err, pattern, "a time series pattern needs exactly one %%d-style conversion (data_%%04d.raw)");
  const char *slash = strrchr(pattern, '/');
  char folder[4096];
  if (slash) snprintf(folder, sizeof folder, "%.*s", (int)(slash - pattern), pattern);
  else snprintf(folder, sizeof folder, ".");
  if (slash && slash == pattern) snprintf(folder, sizeof folder, "/");
  const char *base = slash ? slash + 1 : pattern;
  if (strchr(folder, '%'))
    return ir_input_error(err, pattern, "the number conversion must be in the file name, not the folder");
  const char *conv = strchr(base, '%');
  while (conv && conv[1] == '%') conv = strchr(conv + 2, '%');
  size_t prefix = (size_t)(conv - base);
  const char *after = conv + 1;
  while (*after >= '0' && *after <= '9') after++;
  after++; /* the conversion letter */
  DIR *dir = opendir(folder);
  if (!dir) return ir_input_error(err, pattern, "cannot open the folder %s: %s", folder, strerror(errno));
  long *numbers = NULL;
  size_t count = 0, capacity = 0;
  ir_status status = IR_OK;
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#endif
  for (struct dirent *e; status == IR_OK && (e = readdir(dir)) != NULL;) {
    const char *name = e->d_name;
    size_t len = strlen(name), suffix = strlen(after);
    if (len <= prefix + suffix || strncmp(name, base, prefix) != 0 || strcmp(name + len - suffix, after) != 0) continue;
    char *end = NULL;
    errno = 0;
    long n = strtol(name + prefix, &end, 10);
    if (errno || end != name + len - suffix || n < 0 || n > 100000000L) continue;
    char made[1024];
    snprintf(made, sizeof made, base, (int)n);
    if (strcmp(made, name) != 0) continue;
    if (count == capacity) {
      capacity = capacity ? 2 * capacity : 64;
      long *grown = realloc(numbers, capacity * sizeof *grown);
      if (!grown) {
        status = ir_input_error(err, pattern, "out of memory listing the files");
        break;
      }
      numbers = grown;
    }
    numbers[count++] = n;
  }
  closedir(dir);
  if (status == IR_OK && count == 0) status = ir_input_error(err, pattern, "the pattern matches no file");
  long first = 0, last = 0;
  if (status == IR_OK) {
    first = last = numbers[0];
    for (size_t i = 1; i < count; i++) {
      first = numbers[i] < first ? numbers[i] : first;
      last = numbers[i] > last ? numbers[i] : last;
    }
    if (last - first + 1 > IR_MAX_DATA_FILES)
      status = ir_input_error(err, pattern, "numbers %ld to %ld: more than %d steps", first, last, IR_MAX_DATA_FILES);
  }
  for (long n = first; status == IR_OK && n <= last; n++) {
    char path[4096];
    snprintf(path, sizeof path, pattern, (int)n);
    if (!is_regular(path) && !keep_missing)
      status = ir_input_error(err, pattern, "step %ld of %ld is missing: no file %s (the files found run from number "
                              "%ld to %ld)", n - first + 1, last - first + 1, ir_display_name(path), first, last);
    else if (!list_add(l, path, (double)(n - first)))
      status = ir_input_error(err, pattern, "out of memory listing the files");
  }
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
  free(numbers);
  return status;
}

/* ---- ParaView collections ---------------------------------------------------------------------- */
#ifdef INKRAY_HAVE_EXPAT
typedef struct pvd_parse {
  XML_Parser xml;
  const char *path;
  step_list *list;
  bool collection; /* <VTKFile type="Collection"> seen */
  ir_status status;
  char *err;
} pvd_parse;

static const char *attribute(const char **attrs, const char *name) {
  for (int k = 0; attrs[k]; k += 2)
    if (strcmp(attrs[k], name) == 0) return attrs[k + 1];
  return NULL;
}

static void pvd_fail(pvd_parse *p, const char *reason) {
  if (p->status != IR_OK) return;
  p->status = ir_input_error(p->err, p->path, "line %lu: %s", (unsigned long)XML_GetCurrentLineNumber(p->xml), reason);
  XML_StopParser(p->xml, XML_FALSE);
}

static void XMLCALL pvd_start(void *data, const char *name, const char **attrs) {
  pvd_parse *p = data;
  if (strcmp(name, "VTKFile") == 0) {
    const char *type = attribute(attrs, "type");
    if (!type || strcmp(type, "Collection") != 0) pvd_fail(p, "not a ParaView collection (VTKFile type=\"Collection\")");
    p->collection = true;
    return;
  }
  if (strcmp(name, "DataSet") != 0) return;
  const char *file = attribute(attrs, "file"), *timestep = attribute(attrs, "timestep"), *part = attribute(attrs, "part");
  if (!file || !*file) {
    pvd_fail(p, "a DataSet without a file");
    return;
  }
  if (part && strcmp(part, "0") != 0) {
    pvd_fail(p, "DataSets of several parts (part=\"1\" ...) are not read: one volume per time step");
    return;
  }
  double t = (double)p->list->count;
  if (timestep) {
    char *end = NULL;
    t = strtod(timestep, &end);
    if (end == timestep || *end || !isfinite(t)) {
      pvd_fail(p, "a DataSet's timestep is not a number");
      return;
    }
  }
  if (!ir_path_has_suffix(file, ".vti")) {
    pvd_fail(p, "only VTK image data (.vti) DataSets are read");
    return;
  }
  char *joined = ir_path_join_dir(p->path, file);
  if (!joined || !list_add(p->list, joined, t)) pvd_fail(p, "out of memory listing the files");
  free(joined);
}

static void XMLCALL pvd_end(void *data, const char *name) {
  (void)data;
  (void)name;
}

/* Steps by timestep (a stable sort: equal ones are refused below anyway). */
static void sort_by_time(step_list *l) {
  for (size_t i = 1; i < l->count; i++)
    for (size_t j = i; j > 0 && l->times[j - 1] > l->times[j]; j--) {
      double t = l->times[j];
      l->times[j] = l->times[j - 1];
      l->times[j - 1] = t;
      char *s = l->paths[j];
      l->paths[j] = l->paths[j - 1];
      l->paths[j - 1] = s;
    }
}

static ir_status list_pvd(const char *path, step_list *l, char err[IR_ERR_LEN]) {
  char *text = NULL;
  size_t len = 0;
  ir_status status = ir_read_prefix(path, IR_HEADER_MAX_BYTES, &text, &len, err);
  if (status != IR_OK) return status;
  pvd_parse p = {.path = path, .list = l, .status = IR_OK, .err = err};
  p.xml = XML_ParserCreate(NULL);
  if (!p.xml) {
    free(text);
    snprintf(err, IR_ERR_LEN, "%s: cannot start the XML parser", path);
    return IR_ERR_RUNTIME;
  }
  XML_SetUserData(p.xml, &p);
  XML_SetElementHandler(p.xml, pvd_start, pvd_end);
  if (XML_Parse(p.xml, text, (int)len, 1) != XML_STATUS_OK && p.status == IR_OK)
    p.status = ir_input_error(err, path, "line %lu: %s", (unsigned long)XML_GetCurrentLineNumber(p.xml),
                              XML_ErrorString(XML_GetErrorCode(p.xml)));
  XML_ParserFree(p.xml);
  free(text);
  if (p.status != IR_OK) return p.status;
  if (!p.collection) return ir_input_error(err, path, "not a ParaView collection (no VTKFile element)");
  if (l->count == 0) return ir_input_error(err, path, "the collection lists no DataSet");
  sort_by_time(l);
  for (size_t i = 1; i < l->count; i++)
    if (l->times[i] == l->times[i - 1])
      return ir_input_error(err, path, "two DataSets at timestep %g (%s and %s): one volume per time step",
                            l->times[i], ir_display_name(l->paths[i - 1]), ir_display_name(l->paths[i]));
  return IR_OK;
}
#else
static ir_status list_pvd(const char *path, step_list *l, char err[IR_ERR_LEN]) {
  (void)l;
  return ir_input_error(err, path, "inkray was built without VTK file support (install libexpat1-dev and rebuild)");
}
#endif

/* ---- Opening ----------------------------------------------------------------------------------------- */
static const char *step_label(const ir_series *s, size_t step, char out[64]) {
  snprintf(out, 64, "step %zu of %zu", step + 1, s->count);
  return out;
}

/* "step K of N: " and the loader's message (which names the file), cut to fit. */
static void step_error(char err[IR_ERR_LEN], const ir_series *s, size_t step, const char *sub) {
  char label[64];
  step_label(s, step, label);
  size_t n = strlen(label), m = strlen(sub);
  memcpy(err, label, n);
  memcpy(err + n, ": ", 2);
  n += 2;
  if (m > IR_ERR_LEN - 1 - n) m = IR_ERR_LEN - 1 - n;
  memcpy(err + n, sub, m);
  err[n + m] = '\0';
}

/* The extent a .vti file declares, from its first bytes (its type is known only once decoded). */
static ir_status vti_dims(const char *path, size_t dims[3], char err[IR_ERR_LEN]) {
  char *text = NULL;
  size_t len = 0;
  ir_status status = ir_read_prefix(path, (size_t)1 << 20, &text, &len, err);
  if (status != IR_OK) return status;
  const char *at = strstr(text, "WholeExtent=\"");
  long e[6];
  if (!at || sscanf(at + 13, "%ld %ld %ld %ld %ld %ld", &e[0], &e[1], &e[2], &e[3], &e[4], &e[5]) != 6) {
    free(text);
    return ir_input_error(err, path, "no WholeExtent in its ImageData element");
  }
  free(text);
  for (int k = 0; k < 3; k++) {
    if (e[2 * k + 1] < e[2 * k]) return ir_input_error(err, path, "an empty WholeExtent");
    dims[k] = (size_t)(e[2 * k + 1] - e[2 * k] + 1);
  }
  return IR_OK;
}

static bool same_dims(const size_t a[3], const size_t b[3]) { return a[0] == b[0] && a[1] == b[1] && a[2] == b[2]; }

/* With keep_bad_steps, a bad step after the first is kept with its message (read fails with it);
 * false when the series must be refused instead. */
static bool keep_bad(ir_series *s, size_t step, const char *message) {
  if (!s->desc.keep_bad_steps || step == 0) return false;
  if (!s->bad && !(s->bad = calloc(s->count, sizeof *s->bad))) return false;
  free(s->bad[step]);
  s->bad[step] = strdup(message);
  if (!s->bad[step]) return false;
  s->bad_count++;
  return true;
}

/* Each step's header against the first one's: dims and type (a .vti's dims only). */
static ir_status check_steps(ir_series *s, char err[IR_ERR_LEN]) {
  ir_status status = IR_OK;
  bool have_type = false;
  ir_voxel_type type = IR_VOXEL_UINT8;
  size_t first[3] = {0, 0, 0};
  size_t first_step = 0;
  for (size_t i = 0; i < s->count && status == IR_OK; i++) {
    char label[64], sub[IR_ERR_LEN];
    size_t dims[3] = {0, 0, 0};
    /* A .vti's type is known once it is decoded: the first step is, the others give their extent. */
    bool typed = i == 0 || !ir_path_has_suffix(s->paths[i], ".vti");
    ir_volume v;
    memset(&v, 0, sizeof v);
    if (typed) {
      ir_volume_desc d = s->desc;
      d.source = s->paths[i];
      d.header_only = true;
      d.check_data = true;
      status = ir_volume_load(&d, &v, sub);
      memcpy(dims, v.dims, sizeof dims);
    } else {
      status = vti_dims(s->paths[i], dims, sub);
    }
    if (status != IR_OK) {
      step_error(err, s, i, sub);
      if (keep_bad(s, i, err)) {
        status = IR_OK;
        continue;
      }
      break;
    }
    if (i == 0) {
      memcpy(first, dims, sizeof first);
      s->header = v;
    }
    bool mismatch = !same_dims(dims, first) || (typed && have_type && v.type != type);
    if (mismatch)
      snprintf(err, IR_ERR_LEN,
               "%s: %s is %zux%zux%zu%s%s, but %s is %zux%zux%zu%s%s: every step must have the same dims and type",
               step_label(s, i, label), s->paths[i], dims[0], dims[1], dims[2], typed ? " " : "",
               typed ? ir_voxel_type_name(v.type) : "", ir_display_name(s->paths[first_step]), first[0], first[1],
               first[2], have_type ? " " : "", have_type ? ir_voxel_type_name(type) : "");
    if (mismatch) {
      ir_volume_free(&v);
      if (keep_bad(s, i, err)) continue;
      status = IR_ERR_INPUT;
      break;
    }
    if (typed && !have_type) {
      have_type = true;
      type = v.type;
      first_step = i;
    }
    if (i > 0 || !typed) ir_volume_free(&v);
  }
  if (status == IR_OK && have_type) s->header.type = type;
  return status;
}

static ir_status open_files(ir_series *s, const step_list *l, char err[IR_ERR_LEN]) {
  s->kind = SERIES_FILES;
  s->count = l->count;
  s->paths = calloc(l->count, sizeof *s->paths);
  s->names = calloc(l->count, sizeof *s->names);
  s->times = calloc(l->count, sizeof *s->times);
  if (!s->paths || !s->names || !s->times) {
    snprintf(err, IR_ERR_LEN, "out of host memory listing %zu steps", l->count);
    return IR_ERR_RUNTIME;
  }
  for (size_t i = 0; i < l->count; i++) {
    s->paths[i] = strdup(l->paths[i]);
    s->names[i] = strdup(ir_display_name(l->paths[i]));
    s->times[i] = l->times[i];
    if (!s->paths[i] || !s->names[i]) {
      snprintf(err, IR_ERR_LEN, "out of host memory listing %zu steps", l->count);
      return IR_ERR_RUNTIME;
    }
  }
  return check_steps(s, err);
}

/* A 4-D file: where each step's bytes are, checked once here (sizes) and used by reads. */
/* Each step's name: the source's, then [PREFIXi]. */
static ir_status name_steps(ir_series *s, const char *base, const char *prefix, char err[IR_ERR_LEN]) {
  s->names = calloc(s->count, sizeof *s->names);
  if (!s->names) {
    snprintf(err, IR_ERR_LEN, "out of host memory");
    return IR_ERR_RUNTIME;
  }
  for (size_t i = 0; i < s->count; i++) {
    char name[300];
    snprintf(name, sizeof name, "%s[%s%zu]", base, prefix, i);
    if (!(s->names[i] = strdup(name))) {
      snprintf(err, IR_ERR_LEN, "out of host memory");
      return IR_ERR_RUNTIME;
    }
  }
  return IR_OK;
}

static ir_status open_4d(ir_series *s, const char *path, char err[IR_ERR_LEN]) {
  s->kind = SERIES_4D;
  s->path = strdup(path);
  if (!s->path) {
    snprintf(err, IR_ERR_LEN, "out of host memory");
    return IR_ERR_RUNTIME;
  }
  if (!read_4d_header(path, &s->h, &s->nifti, err)) {
    if (!err[0]) ir_input_error(err, path, "not a NRRD or NIfTI file");
    return IR_ERR_INPUT;
  }
  ir_header *h = &s->h;
  if (!ir_volume_byte_count(h->dims, h->type, &s->step_bytes, path, err)) return IR_ERR_INPUT;
  s->count = h->steps > 1 ? h->steps : 1;
  if (s->step_bytes > SIZE_MAX / s->count) return ir_input_error(err, path, "%zu steps: the byte count overflows", s->count);
  size_t files = h->file_count ? h->file_count : 1, total = s->step_bytes * s->count;
  if (total % files != 0 || (files > 1 && (total / files) % s->step_bytes != 0))
    return ir_input_error(err, path, "%zu data files do not hold whole time steps of %zu bytes", files, s->step_bytes);
  bool gz = s->nifti ? ir_path_has_suffix(path, ".gz") : h->encoding != IR_ENCODING_RAW;
  if (gz && (h->line_skip || h->file_skip || h->encoding == IR_ENCODING_ZLIB))
    return ir_input_error(err, path, "compressed 4-D data with line or byte skips are not read; save it uncompressed");
  for (size_t i = 0; i < files; i++) {
    if (gz) {
      const char *file = h->file_count ? h->files[i] : path;
      char *joined = ir_path_join_dir(path, file);
      ir_status st = joined ? ir_check_file(joined, NULL, err) : IR_ERR_RUNTIME;
      free(joined);
      if (st != IR_OK) return st;
      continue;
    }
    size_t start = 0;
    ir_status st = ir_header_data_start(h, path, i, total / files, &start, err);
    if (st != IR_OK) return st;
  }
  ir_volume_header_only(&s->header, h->dims, h->scaled ? IR_VOXEL_FLOAT32 : h->type,
                        s->desc.spacing_given ? s->desc.spacing : h->spacing, "");
  s->header.up_axis = h->up_axis;
  if (h->up_axis != IR_AXIS_NONE && h->up_source) snprintf(s->header.up_source, sizeof s->header.up_source, "%s", h->up_source);
  return name_steps(s, ir_display_name(path), "", err);
}

static ir_status open_indexed(ir_series *s, const ir_volume_desc *desc, char err[IR_ERR_LEN]) {
  s->kind = SERIES_INDEXED;
  s->path = strdup(desc->source);
  if (!s->path) {
    snprintf(err, IR_ERR_LEN, "out of host memory");
    return IR_ERR_RUNTIME;
  }
  err[0] = '\0';
  if (!indexed_header(desc, &s->header, err)) {
    if (!err[0]) ir_input_error(err, desc->source, "not a time series");
    return IR_ERR_INPUT;
  }
  /* Every step is read at the level the header took (auto decides once). */
  s->desc.level = s->header.level;
  s->count = s->header.steps;
  return name_steps(s, ir_display_name(desc->source), "t=", err);
}

ir_status ir_series_open(const ir_volume_desc *desc, ir_series **out, char err[IR_ERR_LEN]) {
  *out = NULL;
  err[0] = '\0';
  const char *src = desc->source;
  if (!src || !*src) {
    snprintf(err, IR_ERR_LEN, "no time series given");
    return IR_ERR_INPUT;
  }
  ir_series *s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(err, IR_ERR_LEN, "out of host memory");
    return IR_ERR_RUNTIME;
  }
  s->desc = *desc;
  s->desc.source = NULL;
  s->desc.sink = NULL;
  s->desc.recycle = NULL;
  step_list l = {0};
  ir_status status = IR_OK;
  struct stat st;
  bool exists = stat(src, &st) == 0;
  bool dir = exists && S_ISDIR(st.st_mode);
  bool nrrd_or_nifti = exists && !dir &&
                       (ir_path_has_suffix(src, ".nrrd") || ir_path_has_suffix(src, ".nhdr") ||
                        ir_path_has_suffix(src, ".nii") || ir_path_has_suffix(src, ".nii.gz"));
  if (ir_is_zarr_source(src) || ir_is_hdf5_source(src)) {
    status = open_indexed(s, desc, err);
  } else if (nrrd_or_nifti) {
    status = open_4d(s, src, err);
  } else {
    if (dir) status = list_folder(src, &l, err);
    else if (exists && ir_path_has_suffix(src, ".pvd")) status = list_pvd(src, &l, err);
    else if (!exists && ir_is_number_pattern(src)) status = list_pattern(src, desc->keep_bad_steps, &l, err);
    else if (!exists && has_glob_chars(src)) status = list_glob(src, &l, err);
    else status = ir_input_error(err, src, exists ? "not a time series" : "no such file, folder, pattern or glob");
    if (status == IR_OK) status = open_files(s, &l, err);
  }
  list_free(&l);
  if (status == IR_OK) {
    /* The series is named by what was given (its folder, pattern or file). */
    const char *base = ir_display_name(src);
    size_t n = strlen(src);
    if (dir && n > 1 && src[n - 1] == '/') base = src;
    snprintf(s->header.name, sizeof s->header.name, "%s", base);
    s->header.streamable = false;
  }
  if (status != IR_OK) {
    ir_series_close(s);
    return status;
  }
  *out = s;
  return IR_OK;
}

void ir_series_close(ir_series *s) {
  if (!s) return;
  for (size_t i = 0; s->paths && i < s->count; i++) free(s->paths[i]);
  for (size_t i = 0; s->names && i < s->count; i++) free(s->names[i]);
  for (size_t i = 0; s->bad && i < s->count; i++) free(s->bad[i]);
  free(s->bad);
  free(s->paths);
  free(s->names);
  free(s->times);
  ir_volume_free(&s->header);
  if (s->kind == SERIES_4D) ir_header_free(&s->h);
  if (s->gz) gzclose(s->gz);
  free(s->path);
  free(s);
}

size_t ir_series_length(const ir_series *s) { return s->count; }
size_t ir_series_bad_steps(const ir_series *s) { return s->bad_count; }
const char *ir_series_step_name(const ir_series *s, size_t step) { return step < s->count ? s->names[step] : "?"; }
double ir_series_step_time(const ir_series *s, size_t step) { return s->times ? s->times[step] : (double)step; }
const ir_volume *ir_series_header(const ir_series *s) { return &s->header; }

/* ---- Reading a step ------------------------------------------------------------------------------ */
/* The options of one step's read: the format's from the open, the reading's from the caller. */
static ir_volume_desc step_desc(const ir_series *s, const ir_volume_desc *o) {
  ir_volume_desc d = s->desc;
  if (o) {
    d.sink = o->sink;
    d.on_progress = o->on_progress;
    d.progress_ctx = o->progress_ctx;
    d.recycle = o->recycle;
    d.io_threads = o->io_threads;
    d.io_mode = o->io_mode;
    d.show_progress = o->show_progress;
    d.progress_min_bytes = o->progress_min_bytes;
    d.progress_interval_ms = o->progress_interval_ms;
    d.available_bytes_override = o->available_bytes_override;
  }
  return d;
}

static ir_status read_4d_raw(ir_series *s, size_t step, const ir_volume_desc *d, ir_volume *out, char err[IR_ERR_LEN]) {
  const ir_header *h = &s->h;
  size_t files = h->file_count ? h->file_count : 1, share = s->step_bytes * s->count / files;
  size_t at = step * s->step_bytes, index = at / share, in_file = at % share, start = 0;
  ir_status status = ir_header_data_start(h, s->path, index, share, &start, err);
  if (status != IR_OK) return status;
  char *joined = h->file_count ? ir_path_join_dir(s->path, h->files[index]) : NULL;
  ir_piece_file part = {joined ? joined : s->path, start + in_file, 0, s->step_bytes};
  ir_volume_desc plain = *d;
  if (h->scaled) plain.sink = NULL; /* a sink would see the stored values */
  status = ir_volume_allocate(out, h->dims, h->type, &plain, s->path, err);
  double lo = 0, hi = 0;
  size_t bad = 0;
  if (status == IR_OK) {
    ir_progress progress;
    ir_progress_begin(&progress, &plain, s->names[step], s->step_bytes);
    bool swap = ir_voxel_type_size(h->type) > 1 && (h->endian == IR_ENDIAN_BIG) != ir_host_is_big_endian();
    status = ir_read_pieces(&part, 1, h->dims, h->type, swap, out->voxels, &plain, &progress, &lo, &hi, &bad,
                            &out->streamed, err);
    ir_progress_end(&progress);
  }
  free(joined);
  if (status == IR_OK && h->scaled) status = ir_apply_scaling(h, out, s->path, err);
  if (status != IR_OK) {
    ir_volume_free(out);
    return status;
  }
  if (h->scaled) ir_volume_finish(out, s->names[step]);
  else ir_volume_finish_with_range(out, s->names[step], lo, hi, bad);
  return IR_OK;
}

/* The gzip stream of data file `index`, at decompressed byte `at` of its data. */
static ir_status gz_at(ir_series *s, size_t index, size_t at, char err[IR_ERR_LEN]) {
  const ir_header *h = &s->h;
  if (s->gz && s->gz_file != index) {
    gzclose(s->gz);
    s->gz = NULL;
  }
  if (!s->gz) {
    /* NIfTI: the whole file is the stream (the header inside it); NRRD: its data file, or the
     * data after the header's blank line. */
    char *joined = h->file_count ? ir_path_join_dir(s->path, h->files[index]) : NULL;
    const char *file = joined ? joined : s->path;
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    bool attached = !s->nifti && !h->file_count;
    if (fd >= 0 && attached && lseek(fd, (off_t)h->data_offset, SEEK_SET) < 0) {
      close(fd);
      fd = -1;
    }
    s->gz = fd >= 0 ? gzdopen(fd, "rb") : NULL;
    if (!s->gz && fd >= 0) close(fd);
    ir_status st = s->gz ? IR_OK : ir_input_error(err, file, "cannot open: %s", strerror(errno));
    free(joined);
    if (st != IR_OK) return st;
    gzbuffer(s->gz, 1u << 18);
    s->gz_file = index;
  }
  size_t skip = (s->nifti ? h->data_offset : 0) + h->inflated_skip;
  z_off_t want = (z_off_t)(skip + at);
  if (gzseek(s->gz, want, SEEK_SET) != want) {
    ir_status st = ir_input_error(err, s->path, "compressed data end before byte %zu (%s)", skip + at,
                                  ir_gz_reason(s->gz, s->path));
    gzclose(s->gz);
    s->gz = NULL;
    return st;
  }
  return IR_OK;
}

static ir_status read_4d_gz(ir_series *s, size_t step, const ir_volume_desc *d, ir_volume *out, char err[IR_ERR_LEN]) {
  const ir_header *h = &s->h;
  size_t files = h->file_count ? h->file_count : 1, share = s->step_bytes * s->count / files;
  size_t at = step * s->step_bytes;
  ir_status status = gz_at(s, at / share, at % share, err);
  if (status == IR_OK) status = ir_volume_allocate(out, h->dims, h->type, d, s->path, err);
  ir_progress progress;
  ir_progress_begin(&progress, d, s->names[step], s->step_bytes);
  unsigned char *dst = out->voxels;
  for (size_t done = 0; status == IR_OK && done < s->step_bytes;) {
    size_t left = s->step_bytes - done;
    unsigned want = left < ((size_t)1 << 24) ? (unsigned)left : 1u << 24;
    int got = gzread(s->gz, dst + done, want);
    if (got <= 0) {
      status = ir_input_error(err, s->path, "%s gzip data after %zu bytes of the step (%s)", got < 0 ? "corrupt" : "truncated",
                              done, ir_gz_reason(s->gz, s->path));
      gzclose(s->gz);
      s->gz = NULL;
      break;
    }
    done += (size_t)got;
    ir_progress_add(&progress, (size_t)got);
  }
  ir_progress_end(&progress);
  if (status == IR_OK && ir_voxel_type_size(h->type) > 1 && (h->endian == IR_ENDIAN_BIG) != ir_host_is_big_endian())
    ir_swap_voxels(out->voxels, ir_volume_voxel_count(out), ir_voxel_type_size(h->type));
  if (status == IR_OK && h->scaled) status = ir_apply_scaling(h, out, s->path, err);
  if (status != IR_OK) {
    ir_volume_free(out);
    return status;
  }
  ir_volume_finish(out, s->names[step]);
  return IR_OK;
}

ir_status ir_series_read(ir_series *s, size_t step, const ir_volume_desc *options, ir_volume *out,
                         char err[IR_ERR_LEN]) {
  memset(out, 0, sizeof *out);
  err[0] = '\0';
  ir_volume_desc d = step_desc(s, options);
  char sub[IR_ERR_LEN] = "";
  if (step >= s->count) {
    if (d.recycle) ir_volume_free(d.recycle);
    snprintf(err, IR_ERR_LEN, "%s: step %zu of %zu does not exist", s->header.name, step + 1, s->count);
    return IR_ERR_INPUT;
  }
  if (s->bad && s->bad[step]) {
    if (d.recycle) ir_volume_free(d.recycle);
    snprintf(err, IR_ERR_LEN, "%s", s->bad[step]);
    return IR_ERR_INPUT;
  }
  ir_status status;
  if (s->kind == SERIES_INDEXED) {
    d.source = s->path;
    d.time_step = step;
    d.header_only = false;
    status = ir_volume_load(&d, out, sub);
    if (status == IR_OK && (!same_dims(out->dims, s->header.dims) || out->type != s->header.type)) {
      status = ir_input_error(sub, s->names[step], "is %s, but step 0 is %s: every step must have the same type",
                              ir_voxel_type_name(out->type), ir_voxel_type_name(s->header.type));
      ir_volume_free(out);
    }
    if (status == IR_OK) snprintf(out->name, sizeof out->name, "%s", s->names[step]);
  } else if (s->kind == SERIES_4D) {
    bool gz = s->nifti ? ir_path_has_suffix(s->path, ".gz") : s->h.encoding != IR_ENCODING_RAW;
    status = gz ? read_4d_gz(s, step, &d, out, sub) : read_4d_raw(s, step, &d, out, sub);
    if (d.recycle) ir_volume_free(d.recycle);
    if (status == IR_OK) {
      memcpy(out->spacing, s->header.spacing, sizeof out->spacing);
      out->up_axis = s->header.up_axis;
      memcpy(out->up_source, s->header.up_source, sizeof out->up_source);
    }
  } else {
    d.source = s->paths[step];
    status = ir_volume_load(&d, out, sub);
    if (status == IR_OK && (!same_dims(out->dims, s->header.dims) || out->type != s->header.type)) {
      status = ir_input_error(sub, s->paths[step], "is %zux%zux%zu %s, but the series' steps are %zux%zux%zu %s",
                              out->dims[0], out->dims[1], out->dims[2], ir_voxel_type_name(out->type),
                              s->header.dims[0], s->header.dims[1], s->header.dims[2],
                              ir_voxel_type_name(s->header.type));
      ir_volume_free(out);
    }
  }
  if (status != IR_OK) {
    /* The loader's message names the file; say which step it is. */
    step_error(err, s, step, sub);
    return status;
  }
  return IR_OK;
}
