/* inkray.compact / inkray.remove on device arrays: the compaction module's calls
 * (compaction/compaction.h) on memory borrowed from CuPy or PyTorch, on the caller's stream.
 *
 * One compaction context per CUDA device, created on first use and grown (never shrunk) to the
 * largest stream seen, so that repeated calls allocate nothing; a lock per context keeps two
 * Python threads from sharing its scratch at once. The caller (the Python package) allocates
 * the output with its own library. With a device `count` the call only enqueues work and
 * returns; without it the count is read back (one synchronisation of the stream) and returned.
 *
 * Host arrays never reach this file: the package compacts them with NumPy.
 */
#include "python/src/py_internal.h"

#include <string.h>

#include "compaction/compaction.h"
#include "pythread.h"

#define IRPY_MAX_DEVICES 64

typedef struct device_ctx {
  ir_compact_ctx *ctx;
  uint32_t *d_count;     /* the count when the caller gives none */
  uint32_t *h_count;     /* pinned, for its read-back */
  PyThread_type_lock lock;
} device_ctx;

static device_ctx contexts[IRPY_MAX_DEVICES];

static PyObject *raise_compaction(cudaError_t e, const device_ctx *dc, const char *what) {
  const char *detail = dc && dc->ctx ? ir_compact_last_error(dc->ctx) : "";
  /* Bad input a kernel found (Redzone: an index out of range or listed twice) is the caller's. */
  irpy_error(e == cudaErrorInvalidValue ? PyExc_ValueError : PyExc_RuntimeError, "%s: %s%s%s", what,
               cudaGetErrorString(e), detail && *detail ? ": " : "", detail ? detail : "");
  return NULL;
}

/* The device's context, able to take n elements. Called with the device current, without the GIL
 * but holding the context's lock. */
static cudaError_t ready_context(device_ctx *dc, size_t n) {
  cudaError_t e = cudaSuccess;
  if (!dc->ctx) {
    e = ir_compact_ctx_create(&dc->ctx, n);
    if (e == cudaSuccess && !dc->d_count) e = cudaMalloc((void **)&dc->d_count, sizeof *dc->d_count);
    if (e == cudaSuccess && !dc->h_count) e = cudaMallocHost((void **)&dc->h_count, sizeof *dc->h_count);
    return e;
  }
  if (ir_compact_ctx_capacity(dc->ctx) < n) e = ir_compact_ctx_reserve(dc->ctx, n);
  return e;
}

static device_ctx *context_of(int device) {
  if (device < 0 || device >= IRPY_MAX_DEVICES) {
    irpy_error(PyExc_ValueError, "CUDA device %d: inkray handles devices 0 to %d", device, IRPY_MAX_DEVICES - 1);
    return NULL;
  }
  device_ctx *dc = &contexts[device];
  if (!dc->lock && !(dc->lock = PyThread_allocate_lock())) {
    PyErr_NoMemory();
    return NULL;
  }
  return dc;
}

/* ---- Argument checks -------------------------------------------------------------------------------- */
static int check_vector(const irpy_array *a, const char *what, int device, bool writable) {
  char shape[128];
  irpy_shape_text(a, shape, sizeof shape);
  if (!a->device) {
    irpy_error(PyExc_ValueError, "%s is in host memory but the other arrays are on a CUDA device: pass "
                 "arrays of one kind (all NumPy, or all on the GPU)", what);
    return -1;
  }
  if (a->device_id != device) {
    irpy_error(PyExc_ValueError, "%s is on CUDA device %d, the values on device %d: put them on one device", what,
                 a->device_id, device);
    return -1;
  }
  if (a->ndim != 1) {
    irpy_error(PyExc_ValueError, "%s must be 1-D, got shape %s", what, shape);
    return -1;
  }
  if (a->shape[0] > 1 && a->strides[0] != (Py_ssize_t)irpy_dtype_size(a->dtype)) {
    irpy_error(PyExc_ValueError, "%s is not contiguous (stride %zd bytes): pass a contiguous copy", what,
                 a->strides[0]);
    return -1;
  }
  if (writable && a->readonly) {
    irpy_error(PyExc_ValueError, "%s is read-only", what);
    return -1;
  }
  return 0;
}

static bool is_32bit(irpy_dtype t) { return t == IRPY_UINT32 || t == IRPY_INT32 || t == IRPY_FLOAT32; }
static bool is_32bit_int(irpy_dtype t) { return t == IRPY_UINT32 || t == IRPY_INT32; }

static int check_values(const irpy_array *a, const char *what, int device, bool writable) {
  if (check_vector(a, what, device, writable) != 0) return -1;
  if (!is_32bit(a->dtype)) {
    irpy_error(PyExc_ValueError, "%s has dtype %s; the compaction methods move 32-bit elements "
                 "(uint32, int32 or float32)", what, a->dtype == IRPY_DTYPE_OTHER ? a->dtype_text : irpy_dtype_name(a->dtype));
    return -1;
  }
  if ((size_t)a->shape[0] > UINT32_MAX) {
    irpy_error(PyExc_ValueError, "%s has %zd elements; the compaction methods take up to 2^32 - 1", what,
                 a->shape[0]);
    return -1;
  }
  return 0;
}

static int check_count(const irpy_array *a, int device) {
  if (check_vector(a, "count", device, true) != 0) return -1;
  if (a->shape[0] != 1 || !is_32bit_int(a->dtype)) {
    PyErr_SetString(PyExc_ValueError, "count must be a device array of one uint32 (or int32)");
    return -1;
  }
  return 0;
}

static int parse_method(const char *name, ir_compact_method *m) {
  if (ir_compact_method_parse(name, m)) return 0;
  char valid[256] = "";
  for (int k = 0; k < IR_COMPACT_METHOD_COUNT; k++) {
    strncat(valid, k ? ", " : "", sizeof valid - strlen(valid) - 1);
    strncat(valid, ir_compact_methods()[k].name, sizeof valid - strlen(valid) - 1);
  }
  irpy_error(PyExc_ValueError, "method '%s': use one of %s", name, valid);
  return -1;
}

/* ---- The calls --------------------------------------------------------------------------------------- */
typedef enum op_kind { OP_COMPACT, OP_REMOVE } op_kind;

typedef struct op {
  op_kind kind;
  ir_compact_method method;
  irpy_array values, second, out, count; /* second: flags (compact) or indices (remove) */
  bool have_out, have_count;
  cudaStream_t stream;
} op;

/* Runs the call with the GIL released; returns the count (sync) via *result. */
static cudaError_t run_op(device_ctx *dc, int device, op *o, uint32_t *result, bool *bad_input) {
  irpy_device_guard guard;
  size_t n = (size_t)o->values.shape[0];
  *bad_input = false;
  cudaError_t e = irpy_device_enter(device, &guard);
  if (e == cudaSuccess) e = ready_context(dc, n);
  uint32_t *d_count = o->have_count ? (uint32_t *)o->count.data : dc->d_count;
  if (e == cudaSuccess) {
    if (o->kind == OP_COMPACT)
      e = ir_compact_flagged(dc->ctx, o->method, o->values.data, o->second.data, o->out.data, d_count, n, o->stream);
    else
      e = ir_compact_remove_indices(dc->ctx, o->method, o->values.data, n, o->second.data,
                                    (size_t)o->second.shape[0], d_count, o->stream);
    *bad_input = e == cudaErrorInvalidValue;
  }
  if (e == cudaSuccess && !o->have_count) {
    e = cudaMemcpyAsync(dc->h_count, d_count, sizeof *d_count, cudaMemcpyDeviceToHost, o->stream);
    /* Synchronises the stream, and reports bad input a kernel found (Redzone). */
    if (e == cudaSuccess) e = ir_compact_device_error(dc->ctx, o->stream);
    *bad_input = e == cudaErrorInvalidValue;
    if (e == cudaSuccess) *result = *dc->h_count;
  }
  irpy_device_restore(&guard);
  return e;
}

static void release_op(op *o) {
  irpy_array_release(&o->values);
  irpy_array_release(&o->second);
  if (o->have_out) irpy_array_release(&o->out);
  if (o->have_count) irpy_array_release(&o->count);
}

static PyObject *finish_op(op *o, const char *what) {
  int device = o->values.device_id;
  device_ctx *dc = context_of(device);
  if (!dc) {
    release_op(o);
    return NULL;
  }
  uint32_t result = 0;
  bool bad_input = false;
  cudaError_t e = cudaSuccess;
  if (o->values.shape[0] > 0) {
    if (!PyThread_acquire_lock(dc->lock, NOWAIT_LOCK)) {
      Py_BEGIN_ALLOW_THREADS
      PyThread_acquire_lock(dc->lock, WAIT_LOCK);
      Py_END_ALLOW_THREADS
    }
    Py_BEGIN_ALLOW_THREADS
    e = run_op(dc, device, o, &result, &bad_input);
    Py_END_ALLOW_THREADS
    PyThread_release_lock(dc->lock);
  } else if (o->have_count) {
    Py_BEGIN_ALLOW_THREADS
    e = cudaMemsetAsync(o->count.data, 0, sizeof(uint32_t), o->stream);
    Py_END_ALLOW_THREADS
  }
  bool async = o->have_count;
  release_op(o);
  if (e != cudaSuccess) return raise_compaction(bad_input ? cudaErrorInvalidValue : e, dc, what);
  if (async) Py_RETURN_NONE;
  return PyLong_FromUnsignedLong(result);
}

static PyObject *compact(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *keywords[] = {"values", "flags", "out", "method", "count", "stream", NULL};
  PyObject *values, *flags, *out, *count = Py_None, *stream_obj = Py_None;
  const char *method = "ink-compact";
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|s$OO", keywords, &values, &flags, &out, &method, &count,
                                   &stream_obj))
    return NULL;
  op o;
  memset(&o, 0, sizeof o);
  o.kind = OP_COMPACT;
  if (parse_method(method, &o.method) != 0 || irpy_stream_from_object(stream_obj, &o.stream) != 0) return NULL;
  if (irpy_array_get(values, "values", o.stream, &o.values) != 0) return NULL;
  if (irpy_array_get(flags, "flags", o.stream, &o.second) != 0) goto fail;
  o.have_out = irpy_array_get(out, "out", o.stream, &o.out) == 0;
  if (!o.have_out) goto fail;
  o.have_count = count != Py_None;
  if (o.have_count && irpy_array_get(count, "count", o.stream, &o.count) != 0) {
    o.have_count = false;
    goto fail;
  }
  int device = o.values.device_id;
  if (check_values(&o.values, "values", device, false) != 0 || check_vector(&o.second, "flags", device, false) != 0 ||
      check_vector(&o.out, "out", device, true) != 0 || (o.have_count && check_count(&o.count, device) != 0))
    goto fail;
  if (irpy_dtype_size(o.second.dtype) != 1) {
    irpy_error(PyExc_ValueError, "flags has dtype %s; use one byte per element (bool or uint8, non-zero = keep)",
                 irpy_dtype_name(o.second.dtype));
    goto fail;
  }
  if (o.second.shape[0] != o.values.shape[0]) {
    irpy_error(PyExc_ValueError, "flags has %zd elements, values %zd: they must match", o.second.shape[0],
                 o.values.shape[0]);
    goto fail;
  }
  if (irpy_dtype_size(o.out.dtype) != 4 || o.out.shape[0] < o.values.shape[0]) {
    irpy_error(PyExc_ValueError, "out must hold %zd 32-bit elements", o.values.shape[0]);
    goto fail;
  }
  if (o.out.data == o.values.data && o.values.shape[0] > 0) {
    PyErr_SetString(PyExc_ValueError, "out must not be the values array (compaction is out of place)");
    goto fail;
  }
  return finish_op(&o, "compact");
fail:
  release_op(&o);
  return NULL;
}

static PyObject *remove_indices(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *keywords[] = {"values", "indices", "method", "count", "stream", NULL};
  PyObject *values, *indices, *count = Py_None, *stream_obj = Py_None;
  const char *method = "redzone";
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|s$OO", keywords, &values, &indices, &method, &count,
                                   &stream_obj))
    return NULL;
  op o;
  memset(&o, 0, sizeof o);
  o.kind = OP_REMOVE;
  if (parse_method(method, &o.method) != 0 || irpy_stream_from_object(stream_obj, &o.stream) != 0) return NULL;
  if (irpy_array_get(values, "values", o.stream, &o.values) != 0) return NULL;
  if (irpy_array_get(indices, "indices", o.stream, &o.second) != 0) goto fail;
  o.have_count = count != Py_None;
  if (o.have_count && irpy_array_get(count, "count", o.stream, &o.count) != 0) {
    o.have_count = false;
    goto fail;
  }
  int device = o.values.device_id;
  if (check_values(&o.values, "values", device, true) != 0 || check_vector(&o.second, "indices", device, false) != 0 ||
      (o.have_count && check_count(&o.count, device) != 0))
    goto fail;
  if (!is_32bit_int(o.second.dtype)) {
    irpy_error(PyExc_ValueError, "indices has dtype %s; use uint32 or int32", irpy_dtype_name(o.second.dtype));
    goto fail;
  }
  if (o.second.shape[0] > o.values.shape[0]) {
    irpy_error(PyExc_ValueError, "%zd indices to remove from %zd values: indices must be distinct and fewer",
                 o.second.shape[0], o.values.shape[0]);
    goto fail;
  }
  return finish_op(&o, "remove");
fail:
  release_op(&o);
  return NULL;
}

static PyObject *hold_gpu(PyObject *self, PyObject *args) {
  unsigned microseconds = 0;
  PyObject *stream_obj = Py_None;
  if (!PyArg_ParseTuple(args, "I|O", &microseconds, &stream_obj)) return NULL;
  cudaStream_t stream;
  if (irpy_stream_from_object(stream_obj, &stream) != 0) return NULL;
  cudaError_t e = ir_compact_hold_gpu(microseconds, stream);
  if (e != cudaSuccess) return irpy_raise_cuda(e, "holding the GPU");
  Py_RETURN_NONE;
}

static PyObject *compaction_methods(PyObject *self, PyObject *unused) {
  PyObject *list = PyList_New(IR_COMPACT_METHOD_COUNT);
  for (int k = 0; list && k < IR_COMPACT_METHOD_COUNT; k++) {
    const ir_compact_method_info *m = &ir_compact_methods()[k];
    PyObject *row = Py_BuildValue("{s:s,s:s,s:O,s:O,s:O}", "name", m->name, "description", m->description,
                                  "in_kernel", m->in_kernel ? Py_True : Py_False, "stable",
                                  m->stable ? Py_True : Py_False, "in_place", m->in_place ? Py_True : Py_False);
    if (!row) Py_CLEAR(list);
    else PyList_SET_ITEM(list, k, row);
  }
  return list;
}

PyMethodDef irpy_compact_methods[] = {
    {"compact", (PyCFunction)(void (*)(void))compact, METH_VARARGS | METH_KEYWORDS,
     "compact(values, flags, out, method='ink-compact', *, count=None, stream=None) -> int | None"},
    {"remove", (PyCFunction)(void (*)(void))remove_indices, METH_VARARGS | METH_KEYWORDS,
     "remove(values, indices, method='redzone', *, count=None, stream=None) -> int | None"},
    {"hold_gpu", hold_gpu, METH_VARARGS,
     "hold_gpu(microseconds, stream=None): keep the GPU busy (benchmarks queue timed work behind it)."},
    {"compaction_methods", compaction_methods, METH_NOARGS, "The methods: name, description, in_kernel, stable, in_place."},
    {NULL, NULL, 0, NULL},
};
