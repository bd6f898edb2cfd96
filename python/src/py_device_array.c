/* Arrays out, device memory: a view of device memory that inkray owns (a renderer's image),
 * exported without a copy through __cuda_array_interface__ (v3) and DLPack, so that
 * cupy.asarray, torch.as_tensor and the from_dlpack functions wrap it. The view holds a
 * reference to the object that owns the memory; the memory is ready when the view is made (the
 * producing call synchronised its stream), so no stream is named. */
#include "python/src/py_internal.h"

#include <stdlib.h>
#include <string.h>

#include <dlpack/dlpack.h>

#include "transfer/transfer.h"

typedef struct device_array {
  PyObject_HEAD
  void *data;
  int device_id;
  PyObject *owner;
  irpy_dtype dtype;
  int ndim;
  Py_ssize_t shape[IRPY_MAX_DIMS];
} device_array;

static void device_array_dealloc(PyObject *obj) {
  Py_XDECREF(((device_array *)obj)->owner);
  Py_TYPE(obj)->tp_free(obj);
}

static PyObject *shape_tuple(const device_array *self) {
  PyObject *t = PyTuple_New(self->ndim);
  for (int k = 0; t && k < self->ndim; k++) PyTuple_SET_ITEM(t, k, PyLong_FromSsize_t(self->shape[k]));
  return t;
}

/* NumPy typestr: "|u1", "<f4", ... (little-endian machines only: x86-64 and arm64). */
static void typestr_of(irpy_dtype t, char out[8]) {
  size_t size = irpy_dtype_size(t);
  char kind = t == IRPY_BOOL ? 'b' : t == IRPY_FLOAT16 || t == IRPY_FLOAT32 || t == IRPY_FLOAT64 ? 'f'
            : t == IRPY_INT8 || t == IRPY_INT16 || t == IRPY_INT32 || t == IRPY_INT64          ? 'i'
                                                                                                : 'u';
  snprintf(out, 8, "%c%c%zu", size == 1 ? '|' : '<', kind, size);
}

static PyObject *device_array_cai(PyObject *obj, void *closure) {
  device_array *self = (device_array *)obj;
  char typestr[8];
  typestr_of(self->dtype, typestr);
  PyObject *shape = shape_tuple(self);
  if (!shape) return NULL;
  return Py_BuildValue("{s:N,s:s,s:(NO),s:i,s:O,s:O}", "shape", shape, "typestr", typestr, "data",
                       PyLong_FromVoidPtr(self->data), Py_False, "version", 3, "strides", Py_None, "stream",
                       Py_None);
}

static PyObject *device_array_shape(PyObject *obj, void *closure) { return shape_tuple((device_array *)obj); }
static PyObject *device_array_dtype(PyObject *obj, void *closure) {
  return PyUnicode_FromString(irpy_dtype_name(((device_array *)obj)->dtype));
}
static PyObject *device_array_ptr(PyObject *obj, void *closure) {
  return PyLong_FromVoidPtr(((device_array *)obj)->data);
}
static PyObject *device_array_device(PyObject *obj, void *closure) {
  return PyLong_FromLong(((device_array *)obj)->device_id);
}

/* ---- DLPack export ------------------------------------------------------------------------------------ */
typedef struct export_ctx {
  PyObject *owner;
  int64_t shape[IRPY_MAX_DIMS];
  DLManagedTensor legacy;
  struct DLManagedTensorVersioned versioned;
} export_ctx;

/* Consumers may call the deleter from any thread, with or without the GIL. */
static void release_export(export_ctx *ctx) {
  PyGILState_STATE gil = PyGILState_Ensure();
  Py_XDECREF(ctx->owner);
  PyGILState_Release(gil);
  free(ctx);
}
static void delete_legacy(DLManagedTensor *m) { release_export(m->manager_ctx); }
static void delete_versioned(struct DLManagedTensorVersioned *m) { release_export(m->manager_ctx); }

static void capsule_destructor(PyObject *capsule) {
  /* Consumed capsules are renamed "used_..." and their consumer calls the deleter. */
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    DLManagedTensor *m = PyCapsule_GetPointer(capsule, "dltensor");
    m->deleter(m);
  } else if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
    struct DLManagedTensorVersioned *m = PyCapsule_GetPointer(capsule, "dltensor_versioned");
    m->deleter(m);
  } else {
    PyErr_Clear();
  }
}

static DLDataType dlpack_dtype_of(irpy_dtype t) {
  DLDataType d = {.code = kDLUInt, .bits = (uint8_t)(8 * irpy_dtype_size(t)), .lanes = 1};
  switch (t) {
  case IRPY_BOOL: d.code = kDLBool; break;
  case IRPY_INT8: case IRPY_INT16: case IRPY_INT32: case IRPY_INT64: d.code = kDLInt; break;
  case IRPY_FLOAT16: case IRPY_FLOAT32: case IRPY_FLOAT64: d.code = kDLFloat; break;
  default: break;
  }
  return d;
}

static PyObject *device_array_dlpack(PyObject *obj, PyObject *args, PyObject *kwargs) {
  static char *keywords[] = {"stream", "max_version", "dl_device", "copy", NULL};
  PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO", keywords, &stream, &max_version, &dl_device, &copy))
    return NULL;
  device_array *self = (device_array *)obj;
  if (copy == Py_True) {
    PyErr_SetString(PyExc_BufferError, "inkray device arrays are exported without a copy (copy=True)");
    return NULL;
  }
  bool versioned = false;
  if (max_version != Py_None) {
    long major = PyTuple_Check(max_version) && PyTuple_GET_SIZE(max_version) == 2
                     ? PyLong_AsLong(PyTuple_GET_ITEM(max_version, 0))
                     : -1;
    if (PyErr_Occurred()) return NULL;
    versioned = major >= 1;
  }
  export_ctx *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return PyErr_NoMemory();
  ctx->owner = Py_NewRef(obj);
  for (int k = 0; k < self->ndim; k++) ctx->shape[k] = self->shape[k];
  DLTensor t = {.data = self->data,
                .device = {.device_type = kDLCUDA, .device_id = self->device_id},
                .ndim = self->ndim,
                .dtype = dlpack_dtype_of(self->dtype),
                .shape = ctx->shape,
                .strides = NULL,
                .byte_offset = 0};
  PyObject *capsule;
  if (versioned) {
    ctx->versioned = (struct DLManagedTensorVersioned){
        .version = {.major = DLPACK_MAJOR_VERSION, .minor = DLPACK_MINOR_VERSION},
        .manager_ctx = ctx,
        .deleter = delete_versioned,
        .flags = 0,
        .dl_tensor = t};
    capsule = PyCapsule_New(&ctx->versioned, "dltensor_versioned", capsule_destructor);
  } else {
    ctx->legacy = (DLManagedTensor){.dl_tensor = t, .manager_ctx = ctx, .deleter = delete_legacy};
    capsule = PyCapsule_New(&ctx->legacy, "dltensor", capsule_destructor);
  }
  if (!capsule) {
    Py_DECREF(ctx->owner);
    free(ctx);
  }
  return capsule;
}

static PyObject *device_array_dlpack_device(PyObject *obj, PyObject *unused) {
  return Py_BuildValue("(ii)", (int)kDLCUDA, ((device_array *)obj)->device_id);
}

/* A host copy as an inkray HostBuffer (the Python package turns it into a NumPy array), through the
 * device's pinned staging buffers (transfer/transfer.h): a pageable copy runs at ~1 GB/s. */
static PyObject *device_array_copy_to_host(PyObject *obj, PyObject *unused) {
  device_array *self = (device_array *)obj;
  void *host = NULL;
  PyObject *buffer = irpy_host_buffer_alloc(self->dtype, self->ndim, self->shape, &host);
  if (!buffer) return NULL;
  size_t bytes = irpy_dtype_size(self->dtype);
  for (int k = 0; k < self->ndim; k++) bytes *= (size_t)self->shape[k];
  irpy_device_guard guard;
  cudaError_t e;
  ir_status st = IR_OK;
  char err[IR_ERR_LEN] = {0};
  Py_BEGIN_ALLOW_THREADS
  e = irpy_device_enter(self->device_id, &guard);
  ir_xfer_pool *pool = NULL;
  if (e == cudaSuccess) st = ir_xfer_pool_of(self->device_id, &pool, err);
  if (e == cudaSuccess && st == IR_OK) st = ir_xfer_download(pool, host, self->data, bytes, NULL, err);
  irpy_device_restore(&guard);
  Py_END_ALLOW_THREADS
  if (e != cudaSuccess || st != IR_OK) {
    Py_DECREF(buffer);
    return e != cudaSuccess ? irpy_raise_cuda(e, "copying a device array to the host") : irpy_raise(st, err);
  }
  return buffer;
}

static PyMethodDef device_array_methods[] = {
    {"__dlpack__", (PyCFunction)(void (*)(void))device_array_dlpack, METH_VARARGS | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None): a DLPack capsule (no copy)."},
    {"__dlpack_device__", device_array_dlpack_device, METH_NOARGS, "(kDLCUDA, device id)"},
    {"copy_to_host", device_array_copy_to_host, METH_NOARGS, "A host copy of the data (HostBuffer)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef device_array_getset[] = {
    {"__cuda_array_interface__", device_array_cai, NULL, "CUDA array interface, version 3", NULL},
    {"shape", device_array_shape, NULL, "shape (C order)", NULL},
    {"dtype", device_array_dtype, NULL, "NumPy name of the element type", NULL},
    {"ptr", device_array_ptr, NULL, "device pointer", NULL},
    {"device_id", device_array_device, NULL, "CUDA device the memory is on", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject IrpyDeviceArrayType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "inkray._inkray.DeviceArray",
    .tp_basicsize = sizeof(device_array),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Device memory owned by inkray, exported without a copy through __cuda_array_interface__ "
              "and __dlpack__ (cupy.asarray, torch.as_tensor, torch.from_dlpack).",
    .tp_dealloc = device_array_dealloc,
    .tp_methods = device_array_methods,
    .tp_getset = device_array_getset,
};

PyObject *irpy_device_array_new(void *data, int device_id, PyObject *owner, irpy_dtype dtype, int ndim,
                                const Py_ssize_t *shape) {
  device_array *self = PyObject_New(device_array, &IrpyDeviceArrayType);
  if (!self) return NULL;
  self->data = data;
  self->device_id = device_id;
  self->owner = Py_XNewRef(owner);
  self->dtype = dtype;
  self->ndim = ndim;
  memcpy(self->shape, shape, (size_t)ndim * sizeof *shape);
  return (PyObject *)self;
}
