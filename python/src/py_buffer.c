/* Arrays out, host memory: an object that owns a block of memory (an image, a loaded volume's
 * voxels, a mesh) and shows it through the buffer protocol, so that numpy.asarray wraps it
 * without a copy and the NumPy array keeps it alive. */
#include "python/src/py_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct host_buffer {
  PyObject_HEAD
  void *data;
  void (*free_fn)(void *);
  PyObject *owner;
  irpy_dtype dtype;
  int ndim;
  Py_ssize_t shape[IRPY_MAX_DIMS];
  Py_ssize_t strides[IRPY_MAX_DIMS];
  Py_ssize_t bytes;
} host_buffer;

/* struct-module format characters, native order (the memory is the machine's own). */
static const char *format_of(irpy_dtype t) {
  switch (t) {
  case IRPY_BOOL: return "?";
  case IRPY_INT8: return "b";
  case IRPY_UINT8: return "B";
  case IRPY_INT16: return "h";
  case IRPY_UINT16: return "H";
  case IRPY_INT32: return "i";
  case IRPY_UINT32: return "I";
  case IRPY_INT64: return "q";
  case IRPY_UINT64: return "Q";
  case IRPY_FLOAT16: return "e";
  case IRPY_FLOAT32: return "f";
  case IRPY_FLOAT64: return "d";
  default: return "B";
  }
}

static int host_buffer_getbuffer(PyObject *obj, Py_buffer *view, int flags) {
  host_buffer *self = (host_buffer *)obj;
  if (!(flags & PyBUF_ND)) return PyBuffer_FillInfo(view, obj, self->data, self->bytes, 0, flags);
  view->buf = self->data;
  view->obj = Py_NewRef(obj);
  view->len = self->bytes;
  view->readonly = 0;
  view->itemsize = (Py_ssize_t)irpy_dtype_size(self->dtype);
  view->format = (flags & PyBUF_FORMAT) ? (char *)format_of(self->dtype) : NULL;
  view->ndim = self->ndim;
  view->shape = self->shape;
  view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? self->strides : NULL;
  view->suboffsets = NULL;
  view->internal = NULL;
  return 0;
}

static PyBufferProcs host_buffer_as_buffer = {.bf_getbuffer = host_buffer_getbuffer};

static void host_buffer_dealloc(PyObject *obj) {
  host_buffer *self = (host_buffer *)obj;
  if (self->free_fn && self->data) self->free_fn(self->data);
  Py_XDECREF(self->owner);
  Py_TYPE(obj)->tp_free(obj);
}

static PyObject *host_buffer_nbytes(PyObject *obj, void *closure) {
  return PyLong_FromSsize_t(((host_buffer *)obj)->bytes);
}

static PyGetSetDef host_buffer_getset[] = {
    {"nbytes", host_buffer_nbytes, NULL, "size of the memory in bytes", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject IrpyHostBufferType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "inkray._inkray.HostBuffer",
    .tp_basicsize = sizeof(host_buffer),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Host memory owned by inkray, shown through the buffer protocol (numpy.asarray wraps it).",
    .tp_dealloc = host_buffer_dealloc,
    .tp_as_buffer = &host_buffer_as_buffer,
    .tp_getset = host_buffer_getset,
};

PyObject *irpy_host_buffer_new(void *data, void (*free_fn)(void *), PyObject *owner, irpy_dtype dtype, int ndim,
                               const Py_ssize_t *shape) {
  host_buffer *self = PyObject_New(host_buffer, &IrpyHostBufferType);
  if (!self) {
    if (free_fn) free_fn(data);
    return NULL;
  }
  self->data = data;
  self->free_fn = free_fn;
  self->owner = Py_XNewRef(owner);
  self->dtype = dtype;
  self->ndim = ndim;
  Py_ssize_t stride = (Py_ssize_t)irpy_dtype_size(dtype);
  for (int k = ndim - 1; k >= 0; k--) {
    self->shape[k] = shape[k];
    self->strides[k] = stride;
    stride *= shape[k];
  }
  self->bytes = stride;
  return (PyObject *)self;
}

PyObject *irpy_host_buffer_alloc(irpy_dtype dtype, int ndim, const Py_ssize_t *shape, void **data) {
  size_t bytes = irpy_dtype_size(dtype);
  for (int k = 0; k < ndim; k++) bytes *= (size_t)shape[k];
  *data = malloc(bytes ? bytes : 1);
  if (!*data) {
    irpy_error(PyExc_MemoryError, "out of host memory for a %zu-byte array", bytes);
    return NULL;
  }
  PyObject *buffer = irpy_host_buffer_new(*data, free, NULL, dtype, ndim, shape);
  if (!buffer) *data = NULL;
  return buffer;
}
