/* Arrays in: borrows the memory of a Python array, whichever protocol it speaks.
 *
 * Order: the buffer protocol (NumPy, memoryview, array.array: host memory; not for an object
 * that also has `__cuda_array_interface__`, whose buffer protocol only refuses), then DLPack
 * (`__dlpack__`: PyTorch, CuPy, JAX, NumPy; host or device; the versioned capsule when the
 * producer offers it, else the legacy one), then `__cuda_array_interface__` (Numba, CuPy, and
 * anything else that only speaks it). Nothing is copied; the memory stays valid until
 * irpy_array_release. Streams follow each protocol's rule: a DLPack producer is given the
 * consumer's stream and orders its own work before it; a CAI producer's stream is waited for
 * on the consumer's stream with an event.
 *
 * What this file does not do: decide which arrays a binding accepts (the bindings check shape,
 * dtype and contiguity and say what to change).
 */
#include "python/src/py_internal.h"

#include <stdlib.h>
#include <string.h>

#include <dlpack/dlpack.h>

static const struct {
  const char *name;
  size_t size;
} dtype_info[] = {
    [IRPY_BOOL] = {"bool", 1},       [IRPY_INT8] = {"int8", 1},       [IRPY_UINT8] = {"uint8", 1},
    [IRPY_INT16] = {"int16", 2},     [IRPY_UINT16] = {"uint16", 2},   [IRPY_INT32] = {"int32", 4},
    [IRPY_UINT32] = {"uint32", 4},   [IRPY_INT64] = {"int64", 8},     [IRPY_UINT64] = {"uint64", 8},
    [IRPY_FLOAT16] = {"float16", 2}, [IRPY_FLOAT32] = {"float32", 4}, [IRPY_FLOAT64] = {"float64", 8},
    [IRPY_DTYPE_OTHER] = {"unsupported", 0},
};

const char *irpy_dtype_name(irpy_dtype t) { return dtype_info[t].name; }
size_t irpy_dtype_size(irpy_dtype t) { return dtype_info[t].size; }

/* A signed or unsigned integer type of `size` bytes. */
static irpy_dtype int_dtype(bool is_signed, size_t size) {
  switch (size) {
  case 1: return is_signed ? IRPY_INT8 : IRPY_UINT8;
  case 2: return is_signed ? IRPY_INT16 : IRPY_UINT16;
  case 4: return is_signed ? IRPY_INT32 : IRPY_UINT32;
  case 8: return is_signed ? IRPY_INT64 : IRPY_UINT64;
  default: return IRPY_DTYPE_OTHER;
  }
}

static irpy_dtype float_dtype(size_t size) {
  return size == 2 ? IRPY_FLOAT16 : size == 4 ? IRPY_FLOAT32 : size == 8 ? IRPY_FLOAT64 : IRPY_DTYPE_OTHER;
}

static bool host_is_little_endian(void) {
  const uint16_t one = 1;
  return *(const uint8_t *)&one == 1;
}

static PyObject *big_endian_error(const char *what, const char *text) {
  irpy_error(PyExc_ValueError,
               "%s: dtype '%s' is big-endian; convert it to the machine's byte order first, e.g. "
               "array.astype(array.dtype.newbyteorder('='))",
               what, text);
  return NULL;
}

size_t irpy_array_count(const irpy_array *a) {
  size_t n = 1;
  for (int k = 0; k < a->ndim; k++) n *= (size_t)a->shape[k];
  return n;
}

static bool any_empty(const irpy_array *a) {
  for (int k = 0; k < a->ndim; k++)
    if (a->shape[k] == 0) return true;
  return false;
}

bool irpy_array_c_contiguous(const irpy_array *a) {
  if (any_empty(a)) return true;
  Py_ssize_t expected = (Py_ssize_t)irpy_dtype_size(a->dtype);
  for (int k = a->ndim - 1; k >= 0; k--) {
    if (a->shape[k] != 1 && a->strides[k] != expected) return false;
    expected *= a->shape[k];
  }
  return true;
}

bool irpy_array_f_contiguous(const irpy_array *a) {
  if (any_empty(a)) return true;
  Py_ssize_t expected = (Py_ssize_t)irpy_dtype_size(a->dtype);
  for (int k = 0; k < a->ndim; k++) {
    if (a->shape[k] != 1 && a->strides[k] != expected) return false;
    expected *= a->shape[k];
  }
  return true;
}

void irpy_shape_text(const irpy_array *a, char *buf, size_t cap) {
  size_t used = (size_t)snprintf(buf, cap, "(");
  for (int k = 0; k < a->ndim && used < cap; k++)
    used += (size_t)snprintf(buf + used, cap - used, "%s%zd", k ? ", " : "", a->shape[k]);
  if (used < cap) snprintf(buf + used, cap - used, a->ndim == 1 ? ",)" : ")");
}

static void set_c_strides(irpy_array *a) {
  Py_ssize_t stride = (Py_ssize_t)(irpy_dtype_size(a->dtype) ? irpy_dtype_size(a->dtype) : 1);
  for (int k = a->ndim - 1; k >= 0; k--) {
    a->strides[k] = stride;
    stride *= a->shape[k];
  }
}

static int too_many_dims(const char *what, long ndim) {
  irpy_error(PyExc_ValueError, "%s: %ld dimensions; inkray reads arrays of at most %d", what, ndim, IRPY_MAX_DIMS);
  return -1;
}

/* ---- Buffer protocol ------------------------------------------------------------------------------ */
/* struct-module format of one item: byte-order prefix, then one type character. */
static int dtype_from_format(const char *format, Py_ssize_t itemsize, const char *what, irpy_dtype *out) {
  const char *f = format ? format : "B";
  bool big = false;
  if (*f == '@' || *f == '=' || *f == '<' || *f == '>' || *f == '!') {
    big = *f == '>' || *f == '!' || ((*f == '@' || *f == '=') && !host_is_little_endian());
    f++;
  }
  *out = IRPY_DTYPE_OTHER;
  if (f[0] && !f[1]) {
    size_t size = (size_t)itemsize;
    switch (f[0]) {
    case '?': *out = size == 1 ? IRPY_BOOL : IRPY_DTYPE_OTHER; break;
    case 'b': case 'h': case 'i': case 'l': case 'q': case 'n': *out = int_dtype(true, size); break;
    case 'B': case 'H': case 'I': case 'L': case 'Q': case 'N': *out = int_dtype(false, size); break;
    case 'e': case 'f': case 'd': *out = float_dtype(size); break;
    default: break;
    }
  }
  if (*out != IRPY_DTYPE_OTHER && big && itemsize > 1 && host_is_little_endian()) {
    big_endian_error(what, format);
    return -1;
  }
  return 0;
}

static int get_buffer(PyObject *obj, const char *what, irpy_array *out) {
  if (PyObject_GetBuffer(obj, &out->view, PyBUF_RECORDS_RO) != 0) return -1;
  out->have_view = true;
  Py_buffer *v = &out->view;
  if (v->ndim > IRPY_MAX_DIMS) return too_many_dims(what, v->ndim);
  if (dtype_from_format(v->format, v->itemsize, what, &out->dtype) != 0) return -1;
  snprintf(out->dtype_text, sizeof out->dtype_text, "'%s' (%zd bytes)", v->format ? v->format : "B", v->itemsize);
  out->data = v->buf;
  out->ndim = v->ndim;
  out->readonly = v->readonly != 0;
  out->via = "buffer protocol";
  for (int k = 0; k < v->ndim; k++) out->shape[k] = v->shape ? v->shape[k] : v->len / v->itemsize;
  if (v->strides) {
    memcpy(out->strides, v->strides, (size_t)v->ndim * sizeof *v->strides);
  } else {
    set_c_strides(out);
  }
  return 0;
}

/* ---- DLPack ------------------------------------------------------------------------------------------ */
static irpy_dtype dtype_from_dlpack(DLDataType t) {
  if (t.lanes != 1 || t.bits % 8 != 0) return IRPY_DTYPE_OTHER;
  size_t size = t.bits / 8;
  switch (t.code) {
  case kDLInt: return int_dtype(true, size);
  case kDLUInt: return int_dtype(false, size);
  case kDLFloat: return float_dtype(size);
  case kDLBool: return size == 1 ? IRPY_BOOL : IRPY_DTYPE_OTHER;
  default: return IRPY_DTYPE_OTHER;
  }
}

static bool device_type_is_cuda(long type) { return type == kDLCUDA || type == kDLCUDAManaged; }

/* obj.__dlpack_device__() -> (device_type, device_id). */
static int dlpack_device(PyObject *obj, long *type, long *id) {
  PyObject *r = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
  if (!r) return -1;
  int ok = PyTuple_Check(r) && PyTuple_GET_SIZE(r) == 2;
  if (ok) {
    *type = PyLong_AsLong(PyTuple_GET_ITEM(r, 0));
    *id = PyLong_AsLong(PyTuple_GET_ITEM(r, 1));
    ok = !PyErr_Occurred();
  }
  Py_DECREF(r);
  if (!ok && !PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "__dlpack_device__ did not return (type, id)");
  return ok ? 0 : -1;
}

/* obj.__dlpack__(stream=..., max_version=(1, 1)); producers from before DLPack 1.0 do not know
 * max_version and get asked again without it. */
static PyObject *dlpack_capsule(PyObject *obj, bool cuda, cudaStream_t stream) {
  PyObject *method = PyObject_GetAttrString(obj, "__dlpack__");
  if (!method) return NULL;
  PyObject *kwargs = PyDict_New();
  PyObject *capsule = NULL;
  if (kwargs) {
    /* DLPack streams: 1 is the legacy default stream (0 is not allowed). */
    PyObject *s = cuda ? PyLong_FromVoidPtr(stream ? (void *)stream : (void *)(uintptr_t)1) : NULL;
    if (!cuda || (s && PyDict_SetItemString(kwargs, "stream", s) == 0)) {
      PyObject *version = Py_BuildValue("(ii)", DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION);
      if (version && PyDict_SetItemString(kwargs, "max_version", version) == 0) {
        PyObject *empty = PyTuple_New(0);
        if (empty) {
          capsule = PyObject_Call(method, empty, kwargs);
          if (!capsule && PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyDict_DelItemString(kwargs, "max_version");
            capsule = PyObject_Call(method, empty, kwargs);
          }
          Py_DECREF(empty);
        }
      }
      Py_XDECREF(version);
    }
    Py_XDECREF(s);
    Py_DECREF(kwargs);
  }
  Py_DECREF(method);
  return capsule;
}

static int get_dlpack(PyObject *obj, const char *what, cudaStream_t stream, irpy_array *out) {
  long type = 0, id = 0;
  if (dlpack_device(obj, &type, &id) != 0) return -1;
  bool cuda = device_type_is_cuda(type);
  if (!cuda && type != kDLCPU && type != kDLCUDAHost) {
    irpy_error(PyExc_ValueError,
                 "%s: DLPack device type %ld; inkray reads arrays in host memory or on CUDA devices", what, type);
    return -1;
  }
  PyObject *capsule = dlpack_capsule(obj, cuda, stream);
  if (!capsule) return -1;
  out->owner = capsule;
  DLTensor *t = NULL;
  if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
    struct DLManagedTensorVersioned *m = PyCapsule_GetPointer(capsule, "dltensor_versioned");
    PyCapsule_SetName(capsule, "used_dltensor_versioned");
    out->managed = m;
    out->versioned = true;
    if (m->version.major != DLPACK_MAJOR_VERSION) {
      irpy_error(PyExc_ValueError, "%s: DLPack version %u.%u; inkray reads version %d", what,
                   (unsigned)m->version.major, (unsigned)m->version.minor, DLPACK_MAJOR_VERSION);
      return -1;
    }
    out->readonly = (m->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
    t = &m->dl_tensor;
  } else if (PyCapsule_IsValid(capsule, "dltensor")) {
    DLManagedTensor *m = PyCapsule_GetPointer(capsule, "dltensor");
    PyCapsule_SetName(capsule, "used_dltensor");
    out->managed = m;
    t = &m->dl_tensor;
  } else {
    irpy_error(PyExc_TypeError, "%s: __dlpack__ did not return a DLPack capsule", what);
    return -1;
  }
  if (t->ndim < 0 || t->ndim > IRPY_MAX_DIMS) return too_many_dims(what, t->ndim);
  out->dtype = dtype_from_dlpack(t->dtype);
  snprintf(out->dtype_text, sizeof out->dtype_text, "DLPack code %u, %u bits, %u lanes", (unsigned)t->dtype.code,
           (unsigned)t->dtype.bits, (unsigned)t->dtype.lanes);
  out->data = (char *)t->data + t->byte_offset;
  out->ndim = t->ndim;
  out->device = cuda;
  out->device_id = (int)t->device.device_id;
  out->via = "DLPack";
  for (int k = 0; k < t->ndim; k++) out->shape[k] = (Py_ssize_t)t->shape[k];
  if (t->strides) {
    Py_ssize_t item = (Py_ssize_t)irpy_dtype_size(out->dtype);
    for (int k = 0; k < t->ndim; k++) out->strides[k] = (Py_ssize_t)t->strides[k] * item;
  } else {
    set_c_strides(out);
  }
  return 0;
}

/* ---- __cuda_array_interface__ ------------------------------------------------------------------------ */
/* typestr: byte order ('<', '>', '|'), kind ('b', 'i', 'u', 'f'), bytes. */
static int dtype_from_typestr(const char *s, const char *what, irpy_dtype *out) {
  *out = IRPY_DTYPE_OTHER;
  if (strlen(s) < 3) return 0;
  char order = s[0], kind = s[1];
  long size = strtol(s + 2, NULL, 10);
  if (order == '>' && size > 1) {
    big_endian_error(what, s);
    return -1;
  }
  switch (kind) {
  case 'b': *out = size == 1 ? IRPY_BOOL : IRPY_DTYPE_OTHER; break;
  case 'i': *out = int_dtype(true, (size_t)size); break;
  case 'u': *out = int_dtype(false, (size_t)size); break;
  case 'f': *out = float_dtype((size_t)size); break;
  default: break;
  }
  return 0;
}

static int int_tuple(PyObject *seq, const char *what, const char *field, Py_ssize_t *values, int *count) {
  if (!PyTuple_Check(seq)) {
    irpy_error(PyExc_TypeError, "%s: __cuda_array_interface__['%s'] is not a tuple", what, field);
    return -1;
  }
  Py_ssize_t n = PyTuple_GET_SIZE(seq);
  if (n > IRPY_MAX_DIMS) return too_many_dims(what, (long)n);
  for (Py_ssize_t k = 0; k < n; k++) {
    values[k] = PyLong_AsSsize_t(PyTuple_GET_ITEM(seq, k));
    if (values[k] == -1 && PyErr_Occurred()) return -1;
  }
  *count = (int)n;
  return 0;
}

static cudaStream_t stream_of_cai_value(uintptr_t v) {
  if (v == 1) return cudaStreamLegacy;
  if (v == 2) return cudaStreamPerThread;
  return (cudaStream_t)v;
}

/* CAI v3: the producer's work on `producer` must be complete before `consumer` uses the data. */
static int wait_for_producer(cudaStream_t producer, cudaStream_t consumer, int device) {
  /* 0 is the legacy default stream here (no per-thread default stream in this build), which CAI
   * names 1: CuPy's default stream as consumer and producer needs no event. */
  if (producer == consumer || (producer == cudaStreamLegacy && consumer == NULL)) return 0;
  irpy_device_guard guard;
  cudaError_t e = irpy_device_enter(device, &guard);
  cudaEvent_t ev = NULL;
  if (e == cudaSuccess) e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
  if (e == cudaSuccess) e = cudaEventRecord(ev, producer);
  if (e == cudaSuccess) e = cudaStreamWaitEvent(consumer, ev, 0);
  if (ev) cudaEventDestroy(ev);
  irpy_device_restore(&guard);
  if (e != cudaSuccess) {
    irpy_raise_cuda(e, "waiting for the __cuda_array_interface__ stream");
    return -1;
  }
  return 0;
}

/* Reads `cai`, an object's __cuda_array_interface__ (a new reference, kept as the owner). */
static int read_cai(PyObject *cai, const char *what, cudaStream_t stream, irpy_array *out) {
  out->owner = cai;
  if (!PyDict_Check(cai)) {
    irpy_error(PyExc_TypeError, "%s: __cuda_array_interface__ is not a dict", what);
    return -1;
  }
  PyObject *shape = PyDict_GetItemString(cai, "shape");
  PyObject *typestr = PyDict_GetItemString(cai, "typestr");
  PyObject *data = PyDict_GetItemString(cai, "data");
  PyObject *strides = PyDict_GetItemString(cai, "strides");
  PyObject *mask = PyDict_GetItemString(cai, "mask");
  PyObject *producer = PyDict_GetItemString(cai, "stream");
  if (!shape || !typestr || !PyUnicode_Check(typestr) || !data || !PyTuple_Check(data) ||
      PyTuple_GET_SIZE(data) != 2) {
    irpy_error(PyExc_TypeError, "%s: __cuda_array_interface__ lacks shape, typestr or data", what);
    return -1;
  }
  if (mask && mask != Py_None) {
    irpy_error(PyExc_ValueError, "%s: masked arrays are not supported; fill the masked values first", what);
    return -1;
  }
  const char *ts = PyUnicode_AsUTF8(typestr);
  if (!ts || dtype_from_typestr(ts, what, &out->dtype) != 0) return -1;
  snprintf(out->dtype_text, sizeof out->dtype_text, "'%s'", ts);
  if (int_tuple(shape, what, "shape", out->shape, &out->ndim) != 0) return -1;
  out->data = PyLong_AsVoidPtr(PyTuple_GET_ITEM(data, 0));
  if (!out->data && PyErr_Occurred()) return -1;
  out->readonly = PyObject_IsTrue(PyTuple_GET_ITEM(data, 1)) == 1;
  if (strides && strides != Py_None) {
    int n = 0;
    if (int_tuple(strides, what, "strides", out->strides, &n) != 0) return -1;
    if (n != out->ndim) {
      irpy_error(PyExc_ValueError, "%s: __cuda_array_interface__ has %d strides for %d dimensions", what, n,
                   out->ndim);
      return -1;
    }
  } else {
    set_c_strides(out);
  }
  out->device = true;
  out->via = "__cuda_array_interface__";
  cudaGetDevice(&out->device_id);
  if (out->data) {
    struct cudaPointerAttributes attr;
    cudaError_t e = cudaPointerGetAttributes(&attr, out->data);
    if (e != cudaSuccess) {
      irpy_raise_cuda(e, "reading the __cuda_array_interface__ pointer's device");
      return -1;
    }
    if (attr.type == cudaMemoryTypeHost || attr.type == cudaMemoryTypeUnregistered) out->device = false;
    else out->device_id = attr.device;
  }
  if (producer && producer != Py_None) {
    uintptr_t v = (uintptr_t)PyLong_AsVoidPtr(producer);
    if (PyErr_Occurred()) return -1;
    if (wait_for_producer(stream_of_cai_value(v), stream, out->device_id) != 0) return -1;
  }
  return 0;
}

static int get_cai(PyObject *obj, const char *what, cudaStream_t stream, irpy_array *out) {
  PyObject *cai = PyObject_GetAttrString(obj, "__cuda_array_interface__");
  return cai ? read_cai(cai, what, stream, out) : -1;
}

/* ---- Entry points ---------------------------------------------------------------------------------- */
int irpy_array_get(PyObject *obj, const char *what, cudaStream_t stream, irpy_array *out) {
  memset(out, 0, sizeof *out);
  int rc;
  /* A device array may speak the buffer protocol too, only to refuse it (CuPy 14 raises
   * TypeError from __getbuffer__ for device memory): the device protocols come first for it. */
  /* Asked only of objects with a buffer protocol: PyTorch's property builds the whole interface
   * in Python, tens of microseconds for a tensor that has no buffer protocol to refuse anyway. */
  if (PyObject_CheckBuffer(obj) && !PyObject_HasAttrString(obj, "__cuda_array_interface__"))
    rc = get_buffer(obj, what, out);
  else if (PyObject_HasAttrString(obj, "__dlpack__")) rc = get_dlpack(obj, what, stream, out);
  else if (PyObject_HasAttrString(obj, "__cuda_array_interface__")) rc = get_cai(obj, what, stream, out);
  else {
    irpy_error(PyExc_TypeError,
                 "%s: expected an array (NumPy, CuPy, PyTorch, or anything with the buffer protocol, "
                 "__dlpack__ or __cuda_array_interface__), got %s",
                 what, Py_TYPE(obj)->tp_name);
    return -1;
  }
  if (rc != 0) irpy_array_release(out);
  return rc;
}

int irpy_array_get_ordered(PyObject *obj, const char *what, cudaStream_t stream, irpy_array *out) {
  memset(out, 0, sizeof *out);
  PyObject *cai = PyObject_GetAttrString(obj, "__cuda_array_interface__");
  if (!cai) {
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
    PyErr_Clear();
    return irpy_array_get(obj, what, stream, out);
  }
  int rc = read_cai(cai, what, stream, out);
  if (rc != 0) irpy_array_release(out);
  return rc;
}

void irpy_array_release(irpy_array *a) {
  if (a->have_view) PyBuffer_Release(&a->view);
  if (a->managed) {
    if (a->versioned) {
      struct DLManagedTensorVersioned *m = a->managed;
      if (m->deleter) m->deleter(m);
    } else {
      DLManagedTensor *m = a->managed;
      if (m->deleter) m->deleter(m);
    }
  }
  Py_XDECREF(a->owner);
  memset(a, 0, sizeof *a);
}

int irpy_stream_from_object(PyObject *obj, cudaStream_t *out) {
  *out = NULL;
  if (!obj || obj == Py_None) return 0;
  void *p = PyLong_AsVoidPtr(obj);
  if (!p && PyErr_Occurred()) return -1;
  *out = (cudaStream_t)p;
  return 0;
}
