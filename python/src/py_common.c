/* What the bindings share: exceptions from ir_status, the CUDA device guard, and volumes made
 * from arrays (the axis rule: x is the fastest-varying axis, so a C-ordered array is (z, y, x)
 * and a Fortran-ordered one (x, y, z), and neither is copied). */
#include "python/src/py_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "transfer/transfer.h"

PyObject *irpy_error(PyObject *type, const char *format, ...) {
  char message[IR_ERR_LEN + 256];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof message, format, args);
  va_end(args);
  PyErr_SetString(type, message);
  return NULL;
}

PyObject *irpy_raise(ir_status status, const char *message) {
  PyErr_SetString(status == IR_ERR_INPUT ? PyExc_ValueError : PyExc_RuntimeError,
                  message && *message ? message : "inkray: unknown error");
  return NULL;
}

PyObject *irpy_raise_cuda(cudaError_t e, const char *what) {
  return irpy_error(PyExc_RuntimeError, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

int irpy_cuda_device_count(void) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError(); /* no driver or no device: not an error of the next call */
    return 0;
  }
  return count;
}

cudaError_t irpy_device_enter(int device, irpy_device_guard *guard) {
  guard->changed = false;
  cudaError_t e = cudaGetDevice(&guard->previous);
  if (e != cudaSuccess) return e;
  if (guard->previous == device) return cudaSuccess;
  e = cudaSetDevice(device);
  guard->changed = e == cudaSuccess;
  return e;
}

void irpy_device_restore(const irpy_device_guard *guard) {
  if (guard->changed) cudaSetDevice(guard->previous);
}

int irpy_check_volume_array(const irpy_array *a, const char *what) {
  char shape[256];
  irpy_shape_text(a, shape, sizeof shape);
  if (a->ndim != 3) {
    irpy_error(PyExc_ValueError,
                 "%s must be a 3-D array, got %d-D with shape %s: a C-ordered volume is indexed "
                 "[z, y, x], a Fortran-ordered one [x, y, z]",
                 what, a->ndim, shape);
    return -1;
  }
  bool ok_type = a->dtype == IRPY_UINT8 || a->dtype == IRPY_INT16 || a->dtype == IRPY_UINT16 ||
                 a->dtype == IRPY_FLOAT32;
  if (!ok_type) {
    irpy_error(PyExc_ValueError,
                 "%s has dtype %s; inkray reads uint8, int16, uint16 and float32 volumes: convert it, "
                 "e.g. volume.astype(numpy.float32)",
                 what, a->dtype == IRPY_DTYPE_OTHER ? a->dtype_text : irpy_dtype_name(a->dtype));
    return -1;
  }
  if (a->shape[0] == 0 || a->shape[1] == 0 || a->shape[2] == 0) {
    irpy_error(PyExc_ValueError, "%s is empty (shape %s): every axis needs at least one voxel", what, shape);
    return -1;
  }
  if (!irpy_array_c_contiguous(a) && !irpy_array_f_contiguous(a)) {
    irpy_error(PyExc_ValueError,
                 "%s is not contiguous (shape %s, strides %zd, %zd, %zd bytes): inkray reads the voxels "
                 "in place, so pass a contiguous copy, e.g. numpy.ascontiguousarray(volume)",
                 what, shape, a->strides[0], a->strides[1], a->strides[2]);
    return -1;
  }
  return 0;
}

static ir_voxel_type voxel_type_of(irpy_dtype t) {
  switch (t) {
  case IRPY_UINT8: return IR_VOXEL_UINT8;
  case IRPY_INT16: return IR_VOXEL_INT16;
  case IRPY_UINT16: return IR_VOXEL_UINT16;
  default: return IR_VOXEL_FLOAT32;
  }
}

/* Three positive finite numbers; Py_None gives 1, 1, 1. */
static int parse_spacing(PyObject *obj, const char *what, float out[3]) {
  out[0] = out[1] = out[2] = 1.0f;
  if (!obj || obj == Py_None) return 0;
  PyObject *seq = PySequence_Fast(obj, "spacing must be a sequence of three numbers");
  if (!seq) return -1;
  int rc = 0;
  if (PySequence_Fast_GET_SIZE(seq) != 3) rc = -1;
  for (Py_ssize_t k = 0; k < 3 && rc == 0; k++) {
    double s = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, k));
    if (PyErr_Occurred()) PyErr_Clear(), rc = -1;
    else if (!(s > 0.0) || !isfinite(s)) rc = -1;
    else out[k] = (float)s;
  }
  Py_DECREF(seq);
  if (rc != 0)
    irpy_error(PyExc_ValueError, "%s: spacing must be three positive finite numbers, one per array axis", what);
  return rc;
}

int irpy_volume_from_array(const irpy_array *a, PyObject *spacing, const char *what, ir_volume *v) {
  if (irpy_check_volume_array(a, what) != 0) return -1;
  float s[3];
  if (parse_spacing(spacing, what, s) != 0) return -1;
  memset(v, 0, sizeof *v);
  /* x is the fastest axis: the last of a C-ordered array, the first of a Fortran-ordered one. */
  bool c_order = irpy_array_c_contiguous(a);
  for (int k = 0; k < 3; k++) {
    int axis = c_order ? 2 - k : k;
    v->dims[k] = (size_t)a->shape[axis];
    v->spacing[k] = s[axis];
    v->full_dims[k] = v->dims[k];
  }
  v->type = voxel_type_of(a->dtype);
  v->voxels = a->data;
  v->bytes = irpy_array_count(a) * ir_voxel_type_size(v->type);
  snprintf(v->name, sizeof v->name, "%s", what);
  return 0;
}

int irpy_copy_to_host(const irpy_array *a, size_t bytes, cudaStream_t stream, void **host) {
  *host = malloc(bytes ? bytes : 1);
  if (!*host) {
    irpy_error(PyExc_MemoryError, "out of host memory for a %zu-byte copy of a device array", bytes);
    return -1;
  }
  irpy_device_guard guard;
  cudaError_t e;
  ir_status st = IR_OK;
  char err[IR_ERR_LEN] = {0};
  Py_BEGIN_ALLOW_THREADS
  e = irpy_device_enter(a->device_id, &guard);
  /* Through the device's pinned staging buffers (transfer/transfer.h), after `stream`'s work. */
  ir_xfer_pool *pool = NULL;
  if (e == cudaSuccess) st = ir_xfer_pool_of(a->device_id, &pool, err);
  if (e == cudaSuccess && st == IR_OK) st = ir_xfer_download(pool, *host, a->data, bytes, stream, err);
  irpy_device_restore(&guard);
  Py_END_ALLOW_THREADS
  if (e != cudaSuccess || st != IR_OK) {
    free(*host);
    *host = NULL;
    if (e != cudaSuccess) irpy_raise_cuda(e, "copying a device array to the host");
    else irpy_raise(st, err);
    return -1;
  }
  return 0;
}
