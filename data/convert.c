/* Samples of the file formats' types (8- to 64-bit integers, float32, float64) into the four
 * voxel types, with rescaling (DICOM slope/intercept): the narrowest type that holds the
 * values exactly, so that isovalues stay in data units and nothing is rounded silently. The
 * one lossy step is float64 to float32, which docs/data.md states. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/volume_internal.h"

/* The largest integer magnitude up to which every integer is a float32. */
#define FLOAT32_EXACT 16777216.0

static const struct {
  const char *name;
  size_t size;
} sample_types[IR_SAMPLE_TYPE_COUNT] = {
    {"int8", 1},  {"uint8", 1},  {"int16", 2}, {"uint16", 2},  {"int32", 4},
    {"uint32", 4}, {"int64", 8}, {"uint64", 8}, {"float32", 4}, {"float64", 8},
};

size_t ir_sample_size(ir_sample_type t) { return t < IR_SAMPLE_TYPE_COUNT ? sample_types[t].size : 0; }

const char *ir_sample_name(ir_sample_type t) {
  return t < IR_SAMPLE_TYPE_COUNT ? sample_types[t].name : "unknown";
}

bool ir_sample_byte_count(const size_t dims[3], ir_sample_type type, size_t *bytes,
                          const char *path, char err[IR_ERR_LEN]) {
  if (dims[0] == 0 || dims[1] == 0 || dims[2] == 0) {
    ir_input_error(err, path, "dims %zux%zux%zu: every dimension must be at least 1", dims[0],
                   dims[1], dims[2]);
    return false;
  }
  size_t total = ir_sample_size(type);
  for (int k = 0; k < 3; k++) {
    if (total > SIZE_MAX / dims[k]) {
      ir_input_error(err, path, "dims %zux%zux%zu %s: the byte count overflows size_t", dims[0],
                     dims[1], dims[2], ir_sample_name(type));
      return false;
    }
    total *= dims[k];
  }
  *bytes = total;
  return true;
}

static double sample_at(const void *p, ir_sample_type t, size_t i) {
  switch (t) {
  case IR_SAMPLE_INT8: return ((const int8_t *)p)[i];
  case IR_SAMPLE_UINT8: return ((const uint8_t *)p)[i];
  case IR_SAMPLE_INT16: return ((const int16_t *)p)[i];
  case IR_SAMPLE_UINT16: return ((const uint16_t *)p)[i];
  case IR_SAMPLE_INT32: return ((const int32_t *)p)[i];
  case IR_SAMPLE_UINT32: return ((const uint32_t *)p)[i];
  case IR_SAMPLE_INT64: return (double)((const int64_t *)p)[i];
  case IR_SAMPLE_UINT64: return (double)((const uint64_t *)p)[i];
  case IR_SAMPLE_FLOAT32: return ((const float *)p)[i];
  default: return ((const double *)p)[i];
  }
}

static bool is_integer_sample(ir_sample_type t) { return t < IR_SAMPLE_FLOAT32; }

/* 64-bit integers beyond 2^53 lose bits on the way to double; they are far beyond float32's
 * exact range as well, so the range check below refuses them either way. */
static void sample_range(const void *p, ir_sample_type t, size_t n, double slope, double inter,
                         double *lo, double *hi) {
  double a = INFINITY, b = -INFINITY;
  for (size_t i = 0; i < n; i++) {
    double v = sample_at(p, t, i) * slope + inter;
    a = v < a ? v : a;
    b = v > b ? v : b;
  }
  *lo = a;
  *hi = b;
}

/* The narrowest voxel type holding every integer in [lo, hi] exactly; false if none does. */
static bool narrowest_integer_type(double lo, double hi, ir_voxel_type *out) {
  if (lo >= 0 && hi <= 255) *out = IR_VOXEL_UINT8;
  else if (lo >= -32768 && hi <= 32767) *out = IR_VOXEL_INT16;
  else if (lo >= 0 && hi <= 65535) *out = IR_VOXEL_UINT16;
  else if (lo >= -FLOAT32_EXACT && hi <= FLOAT32_EXACT) *out = IR_VOXEL_FLOAT32;
  else return false;
  return true;
}

static bool native_voxel_type(ir_sample_type t, ir_voxel_type *out) {
  switch (t) {
  case IR_SAMPLE_UINT8: *out = IR_VOXEL_UINT8; return true;
  case IR_SAMPLE_UINT16: *out = IR_VOXEL_UINT16; return true;
  case IR_SAMPLE_INT16: *out = IR_VOXEL_INT16; return true;
  case IR_SAMPLE_FLOAT32: *out = IR_VOXEL_FLOAT32; return true;
  default: return false;
  }
}

ir_status ir_volume_from_samples(ir_volume *out, const size_t dims[3], void *samples,
                                 ir_sample_type type, double slope, double inter,
                                 const char *path, char err[IR_ERR_LEN]) {
  size_t n = dims[0] * dims[1] * dims[2];
  bool rescaled = !(slope == 1.0 && inter == 0.0);
  ir_voxel_type target;
  if (!rescaled && native_voxel_type(type, &target)) {
    memset(out, 0, sizeof *out);
    memcpy(out->dims, dims, sizeof out->dims);
    out->type = target;
    out->voxels = samples;
    out->bytes = n * ir_sample_size(type);
    for (int k = 0; k < 3; k++) out->spacing[k] = 1.0f;
    return IR_OK;
  }
  bool integral = is_integer_sample(type) && slope == floor(slope) && inter == floor(inter);
  if (!isfinite(slope) || !isfinite(inter)) {
    free(samples);
    return ir_input_error(err, path, "rescale slope %g and intercept %g: expected finite numbers",
                          slope, inter);
  }
  if (!integral) {
    target = IR_VOXEL_FLOAT32;
  } else if (!rescaled && type == IR_SAMPLE_INT8) {
    target = IR_VOXEL_INT16;
  } else {
    double lo = 0, hi = 0;
    sample_range(samples, type, n, slope, inter, &lo, &hi);
    if (!narrowest_integer_type(lo, hi, &target)) {
      free(samples);
      return ir_input_error(err, path,
                            "%s values %.17g .. %.17g%s do not fit any voxel type exactly "
                            "(uint8, int16, uint16, or float32 up to 2^24 in magnitude)",
                            ir_sample_name(type), lo, hi, rescaled ? " after rescaling" : "");
    }
  }
  ir_status status = ir_volume_allocate(out, dims, target, NULL, path, err);
  if (status != IR_OK) {
    free(samples);
    return status;
  }
  for (size_t i = 0; i < n; i++) {
    double v = sample_at(samples, type, i) * slope + inter;
    switch (target) {
    case IR_VOXEL_UINT8: ((uint8_t *)out->voxels)[i] = (uint8_t)v; break;
    case IR_VOXEL_INT16: ((int16_t *)out->voxels)[i] = (int16_t)v; break;
    case IR_VOXEL_UINT16: ((uint16_t *)out->voxels)[i] = (uint16_t)v; break;
    default: ((float *)out->voxels)[i] = (float)v; break;
    }
  }
  free(samples);
  return IR_OK;
}
