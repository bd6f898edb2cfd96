/* HDF5 datasets through libhdf5: `file.h5:/path/to/dataset`, or the file alone when it holds
 * exactly one 3-D or 4-D numeric dataset. The dataset's axes are z, y, x (ImageJ, ilastik,
 * DXchange and NeXus write them so), or t, z, y, x for a time series (ir_volume_desc.time_step
 * picks the step; ir_series_open plays them). Spacing comes from an `element_size_um` or
 * `spacing` attribute of the dataset (z, y, x; a fourth value in front for t is dropped).
 *
 * libhdf5 reads and decodes the chunks (deflate, shuffle, szip, whatever filters it was built
 * with) and converts byte order; the read goes slab by slab in z, so that progress shows on
 * long loads, straight into the volume (or, for types other than the four voxel types, into a
 * buffer converted by ir_volume_from_samples). A region reads only its hyperslab.
 *
 * libhdf5 as Debian builds it is not thread-safe: every call here runs under one lock.
 * What this file does not do: multiscale pyramids in HDF5 (no common layout), or channels. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <hdf5.h>

#include "data/zarr.h"

static pthread_mutex_t hdf5_lock = PTHREAD_MUTEX_INITIALIZER;

/* libhdf5's innermost reason for the last failure, for messages. */
static herr_t last_reason(unsigned n, const H5E_error2_t *e, void *data) {
  (void)n;
  if (e->desc && e->desc[0]) snprintf(data, 200, "%s", e->desc);
  return 0;
}

static const char *reason(char buf[200]) {
  buf[0] = '\0';
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, last_reason, buf);
  if (!buf[0]) snprintf(buf, 200, "libhdf5 gave no reason");
  return buf;
}

typedef struct candidates {
  char names[8][256];
  int count;
} candidates;

static bool numeric_rank(hid_t d, int *rank) {
  hid_t space = H5Dget_space(d), type = H5Dget_type(d);
  *rank = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
  H5T_class_t cls = type >= 0 ? H5Tget_class(type) : H5T_NO_CLASS;
  if (space >= 0) H5Sclose(space);
  if (type >= 0) H5Tclose(type);
  return cls == H5T_INTEGER || cls == H5T_FLOAT;
}

static herr_t visit(hid_t g, const char *name, const H5L_info_t *info, void *data) {
  candidates *c = data;
  if (info->type != H5L_TYPE_HARD) return 0;
  hid_t d = H5Dopen2(g, name, H5P_DEFAULT);
  if (d < 0) return 0; /* a group */
  int rank = 0;
  if (numeric_rank(d, &rank) && (rank == 3 || rank == 4)) {
    if (c->count < 8) snprintf(c->names[c->count], sizeof c->names[0], "/%s", name);
    c->count++;
  }
  H5Dclose(d);
  return 0;
}

static bool sample_of(hid_t type, ir_sample_type *out, hid_t *mem) {
  H5T_class_t cls = H5Tget_class(type);
  size_t size = H5Tget_size(type);
  if (cls == H5T_FLOAT) {
    if (size == 4) *out = IR_SAMPLE_FLOAT32, *mem = H5T_NATIVE_FLOAT;
    else if (size == 8) *out = IR_SAMPLE_FLOAT64, *mem = H5T_NATIVE_DOUBLE;
    else return false;
    return true;
  }
  if (cls != H5T_INTEGER) return false;
  bool sign = H5Tget_sign(type) == H5T_SGN_2;
  switch (size) {
  case 1: *out = sign ? IR_SAMPLE_INT8 : IR_SAMPLE_UINT8, *mem = sign ? H5T_NATIVE_INT8 : H5T_NATIVE_UINT8; return true;
  case 2: *out = sign ? IR_SAMPLE_INT16 : IR_SAMPLE_UINT16, *mem = sign ? H5T_NATIVE_INT16 : H5T_NATIVE_UINT16; return true;
  case 4: *out = sign ? IR_SAMPLE_INT32 : IR_SAMPLE_UINT32, *mem = sign ? H5T_NATIVE_INT32 : H5T_NATIVE_UINT32; return true;
  case 8: *out = sign ? IR_SAMPLE_INT64 : IR_SAMPLE_UINT64, *mem = sign ? H5T_NATIVE_INT64 : H5T_NATIVE_UINT64; return true;
  default: return false;
  }
}

/* element_size_um or spacing: 3 numbers (z, y, x), or 4 (t, z, y, x). */
static bool read_spacing(hid_t d, float spacing[3], char source[64]) {
  static const char *const names[] = {"element_size_um", "spacing", NULL};
  for (int k = 0; names[k]; k++) {
    if (H5Aexists(d, names[k]) <= 0) continue;
    hid_t a = H5Aopen(d, names[k], H5P_DEFAULT);
    if (a < 0) continue;
    hid_t space = H5Aget_space(a);
    hssize_t n = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
    double v[4] = {0};
    bool ok = (n == 3 || n == 4) && H5Aread(a, H5T_NATIVE_DOUBLE, v) >= 0;
    if (space >= 0) H5Sclose(space);
    H5Aclose(a);
    if (!ok) continue;
    int first = n == 4 ? 1 : 0;
    for (int i = 0; i < 3; i++) {
      double s = v[first + 2 - i];
      if (!(s > 0) || !isfinite((float)s)) ok = false;
      spacing[i] = (float)s;
    }
    if (!ok) continue;
    snprintf(source, 64, "%s", names[k]);
    return true;
  }
  return false;
}

static ir_voxel_type voxel_of(ir_sample_type s) {
  switch (s) {
  case IR_SAMPLE_UINT8: return IR_VOXEL_UINT8;
  case IR_SAMPLE_UINT16: return IR_VOXEL_UINT16;
  case IR_SAMPLE_INT16:
  case IR_SAMPLE_INT8: return IR_VOXEL_INT16;
  default: return IR_VOXEL_FLOAT32;
  }
}

static ir_status load_locked(const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]) {
  const char *src = desc->source;
  char file[4096], why[200];
  const char *dataset = NULL;
  if (!ir_hdf5_split(src, file, sizeof file, &dataset)) return ir_input_error(err, src, "no such file");
  if (desc->level > 0) return ir_input_error(err, src, "--level %d: an HDF5 dataset has one level (0)", desc->level);
  if (desc->channel) return ir_input_error(err, src, "--channel: HDF5 datasets are read without a channel axis");
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  hid_t f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return ir_input_error(err, file, "not a readable HDF5 file (%s)", reason(why));
  ir_status status = IR_OK;
  char chosen[256];
  if (!dataset) {
    candidates c;
    memset(&c, 0, sizeof c);
    H5Lvisit(f, H5_INDEX_NAME, H5_ITER_NATIVE, visit, &c);
    if (c.count == 1) {
      snprintf(chosen, sizeof chosen, "%s", c.names[0]);
      dataset = chosen;
    } else if (c.count == 0) {
      status = ir_input_error(err, src, "no 3-D or 4-D numeric dataset in the file");
    } else {
      char list[400] = "";
      size_t used = 0;
      for (int k = 0; k < c.count && k < 8; k++) {
        int w = snprintf(list + used, sizeof list - used, "%s%s", k ? ", " : "", c.names[k]);
        if (w < 0 || (size_t)w >= sizeof list - used) break;
        used += (size_t)w;
      }
      status = ir_input_error(err, src, "%d datasets could be the volume; name one as %s:/PATH (%s%s)", c.count,
                              ir_display_name(file), list, c.count > 8 ? ", ..." : "");
    }
  }
  hid_t d = -1, space = -1, type = -1;
  if (status == IR_OK && (d = H5Dopen2(f, dataset, H5P_DEFAULT)) < 0)
    status = ir_input_error(err, src, "no dataset %s in the file", dataset);
  int rank = 0;
  hsize_t shape[4] = {0};
  ir_sample_type sample = IR_SAMPLE_UINT8;
  hid_t mem = -1;
  if (status == IR_OK) {
    space = H5Dget_space(d);
    type = H5Dget_type(d);
    rank = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
    if (rank != 3 && rank != 4)
      status = ir_input_error(err, src, "a %d-D dataset: inkray reads 3-D (z, y, x) and 4-D (t, z, y, x) ones", rank);
    else if (H5Sget_simple_extent_dims(space, shape, NULL) != rank)
      status = ir_input_error(err, src, "cannot read the dataset's dims (%s)", reason(why));
    else if (type < 0 || !sample_of(type, &sample, &mem))
      status = ir_input_error(err, src, "element type not read (integers of 8 to 64 bits, float32, float64 are)");
  }
  size_t dims[3] = {0}, steps = rank == 4 ? (size_t)shape[0] : 0;
  for (int k = 0; status == IR_OK && k < 3; k++) dims[k] = (size_t)shape[rank - 1 - k];
  if (status == IR_OK && steps == 0 && desc->time_step)
    status = ir_input_error(err, src, "time step %zu: the dataset has no time axis", desc->time_step);
  if (status == IR_OK && steps && desc->time_step >= steps)
    status = ir_input_error(err, src, "time step %zu: the dataset has %zu steps", desc->time_step, steps);
  size_t off[3], size[3];
  if (status == IR_OK) status = ir_region_resolve(desc, dims, src, off, size, err);
  float spacing[3] = {1, 1, 1};
  char spacing_from[64] = "";
  if (status == IR_OK) read_spacing(d, spacing, spacing_from);
  bool native = sample == IR_SAMPLE_UINT8 || sample == IR_SAMPLE_UINT16 || sample == IR_SAMPLE_INT16 ||
                sample == IR_SAMPLE_FLOAT32;
  bool type_known = native || sample == IR_SAMPLE_INT8 || sample == IR_SAMPLE_FLOAT64;
  char name[300];
  snprintf(name, sizeof name, "%s:%s", ir_display_name(file), dataset ? dataset : "");
  void *samples = NULL;
  if (status == IR_OK && !(desc->header_only && type_known)) {
    size_t bytes = 0;
    if (!ir_sample_byte_count(size, sample, &bytes, src, err)) status = IR_ERR_INPUT;
    else if (native) {
      status = ir_volume_allocate(out, size, voxel_of(sample), desc, src, err);
      samples = out->voxels;
    } else if ((status = ir_check_memory(bytes, desc, src, err)) == IR_OK && !(samples = malloc(bytes))) {
      snprintf(err, IR_ERR_LEN, "%s: out of host memory: %zu bytes of %s samples", src, bytes, ir_sample_name(sample));
      status = IR_ERR_RUNTIME;
    }
    /* Slabs of about 64 MiB, whole z slices: a progress step each. A chunked dataset's slabs end
     * on its chunks' z boundaries, so that each chunk is read and decompressed once (libhdf5's
     * chunk cache, 1 MiB by default, would not keep a chunk from one slab to the next). */
    size_t elem = ir_sample_size(sample), slice = size[0] * size[1] * elem;
    size_t slab = slice ? ((size_t)64 << 20) / slice : 1;
    if (slab < 1) slab = 1;
    size_t chunk_z = 1;
    hid_t dcpl = H5Dget_create_plist(d);
    if (dcpl >= 0 && H5Pget_layout(dcpl) == H5D_CHUNKED) {
      hsize_t cdims[4] = {0};
      if (H5Pget_chunk(dcpl, rank, cdims) == rank && cdims[rank - 3] > 0) chunk_z = (size_t)cdims[rank - 3];
    }
    if (dcpl >= 0) H5Pclose(dcpl);
    if (chunk_z > 1) slab = slab < chunk_z ? chunk_z : slab / chunk_z * chunk_z;
    ir_progress progress;
    ir_progress_begin(&progress, desc, name, bytes);
    for (size_t z = 0, nz = 0; status == IR_OK && z < size[2]; z += nz) {
      /* To the next chunk boundary (of the whole dataset) at or past z + slab. */
      size_t end = off[2] + z + slab;
      if (chunk_z > 1) end = end / chunk_z * chunk_z;
      if (end <= off[2] + z) end = off[2] + z + 1;
      nz = end - (off[2] + z);
      nz = size[2] - z < nz ? size[2] - z : nz;
      hsize_t start[4], count[4];
      int first = rank == 4 ? 1 : 0;
      if (rank == 4) start[0] = desc->time_step, count[0] = 1;
      start[first] = off[2] + z, count[first] = nz;
      start[first + 1] = off[1], count[first + 1] = size[1];
      start[first + 2] = off[0], count[first + 2] = size[0];
      hsize_t mcount[3] = {nz, size[1], size[0]};
      hid_t ms = H5Screate_simple(3, mcount, NULL);
      herr_t rc = H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
      if (ms < 0 || rc < 0 || H5Dread(d, mem, ms, space, H5P_DEFAULT, (unsigned char *)samples + z * slice) < 0)
        status = ir_input_error(err, src, "cannot read slices %zu .. %zu of %s (%s)", off[2] + z, off[2] + z + nz - 1,
                                dataset, reason(why));
      if (ms >= 0) H5Sclose(ms);
      ir_progress_add(&progress, nz * slice);
    }
    ir_progress_end(&progress);
    if (status == IR_OK && !native) {
      status = ir_volume_from_samples(out, size, samples, sample, 1.0, 0.0, src, err);
      samples = NULL;
      if (status == IR_OK && sample == IR_SAMPLE_FLOAT64)
        snprintf(out->note, sizeof out->note, "float64 samples rounded to float32");
    }
    if (status != IR_OK) {
      if (native) ir_volume_free(out);
      else free(samples);
      memset(out, 0, sizeof *out);
    }
  }
  if (type >= 0) H5Tclose(type);
  if (space >= 0) H5Sclose(space);
  if (d >= 0) H5Dclose(d);
  H5Fclose(f);
  if (status != IR_OK) return status;
  if (desc->header_only && type_known) {
    ir_volume_header_only(out, dims, voxel_of(sample), spacing, name);
  } else {
    ir_volume_finish(out, name);
    memcpy(out->full_dims, dims, sizeof out->full_dims);
    memcpy(out->origin, off, sizeof out->origin);
    memcpy(out->spacing, spacing, sizeof out->spacing);
    if (desc->header_only) ir_volume_drop_voxels(out);
  }
  if (desc->spacing_given) memcpy(out->spacing, desc->spacing, sizeof out->spacing);
  out->steps = steps;
  int used = snprintf(out->description, sizeof out->description, "HDF5 %s %s", dataset, ir_sample_name(sample));
  if (steps && used > 0 && (size_t)used < sizeof out->description)
    used += snprintf(out->description + used, sizeof out->description - (size_t)used, ", step %zu of %zu", desc->time_step,
                     steps);
  if (spacing_from[0] && used > 0 && (size_t)used < sizeof out->description)
    snprintf(out->description + used, sizeof out->description - (size_t)used, ", spacing from %s", spacing_from);
  return IR_OK;
}

ir_status ir_load_hdf5(const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]) {
  pthread_mutex_lock(&hdf5_lock);
  ir_status st = load_locked(desc, out, err);
  pthread_mutex_unlock(&hdf5_lock);
  return st;
}
