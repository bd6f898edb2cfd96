/* The extension module inkray._inkray: what its files share.
 *
 * One file per job: arrays in (py_array.c: buffer protocol, DLPack, __cuda_array_interface__),
 * arrays out (py_buffer.c: host memory NumPy wraps without a copy; py_device_array.c: device
 * memory CuPy and PyTorch wrap without a copy), and the bindings (py_load.c, py_render.c,
 * py_compact.c, py_extract.c), gathered into the module by module.c. The Python package
 * (python/inkray) puts the user-facing API on top: it picks the caller's array library and
 * stream and turns these objects into that library's arrays.
 *
 * Errors: the inkray libraries' messages become ValueError (IR_ERR_INPUT) or RuntimeError
 * (IR_ERR_RUNTIME) unchanged. Work that takes time runs with the GIL released.
 */
#ifndef INKRAY_PY_INTERNAL_H
#define INKRAY_PY_INTERNAL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "data/volume.h"

/* ---- Errors ------------------------------------------------------------------------------------ */
/* Sets `type` with a printf-formatted message (C's formats, floats included, unlike
 * PyErr_Format); returns NULL. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
PyObject *irpy_error(PyObject *type, const char *format, ...);
/* Raises ValueError for IR_ERR_INPUT, RuntimeError otherwise, with `message`; returns NULL. */
PyObject *irpy_raise(ir_status status, const char *message);
/* Raises RuntimeError for a failed CUDA call: "WHAT: cudaGetErrorString (name)"; returns NULL. */
PyObject *irpy_raise_cuda(cudaError_t e, const char *what);

/* ---- Arrays in (py_array.c) -------------------------------------------------------------------- */
typedef enum irpy_dtype {
  IRPY_BOOL = 0,
  IRPY_INT8, IRPY_UINT8, IRPY_INT16, IRPY_UINT16, IRPY_INT32, IRPY_UINT32, IRPY_INT64, IRPY_UINT64,
  IRPY_FLOAT16, IRPY_FLOAT32, IRPY_FLOAT64,
  IRPY_DTYPE_OTHER,
} irpy_dtype;
const char *irpy_dtype_name(irpy_dtype t); /* NumPy's names: "uint8", "float32", ... */
size_t irpy_dtype_size(irpy_dtype t);

#define IRPY_MAX_DIMS 64

/* An array borrowed from a Python object, whichever way it came. Strides are in bytes. */
typedef struct irpy_array {
  void *data;
  int ndim;
  Py_ssize_t shape[IRPY_MAX_DIMS];
  Py_ssize_t strides[IRPY_MAX_DIMS];
  irpy_dtype dtype;
  char dtype_text[64]; /* what the producer said, for messages about dtypes we do not know */
  bool device;         /* CUDA device memory (managed memory included) */
  int device_id;
  bool readonly;
  const char *via;     /* "buffer protocol" | "DLPack" | "__cuda_array_interface__" */
  /* What keeps the memory alive until irpy_array_release. */
  Py_buffer view;
  bool have_view;
  PyObject *owner;     /* DLPack capsule (consumed) or the CAI object */
  void *managed;       /* DLManagedTensor(Versioned) */
  bool versioned;
} irpy_array;

/* Borrows the memory of `obj`: the buffer protocol, then DLPack (__dlpack__), then
 * __cuda_array_interface__. `stream` is the CUDA stream the caller will use the memory on:
 * DLPack producers are asked to make their work visible to it, and a CAI stream is waited
 * for on it. On failure raises (TypeError when obj is no array at all, ValueError for arrays
 * inkray cannot read: big-endian, sub-byte types) naming `what`, and returns -1. */
int irpy_array_get(PyObject *obj, const char *what, cudaStream_t stream, irpy_array *out);
/* The same for memory whose producer's work the caller orders itself on `stream` (an event it
 * records there): __cuda_array_interface__ first where the object has one (one dict, its v3
 * stream waited for when it is not `stream`), for no DLPack export asks the producer to order
 * work that is ordered already (PyTorch's __dlpack__ runs tens of microseconds of Python to find
 * that out); else as irpy_array_get. */
int irpy_array_get_ordered(PyObject *obj, const char *what, cudaStream_t stream, irpy_array *out);
void irpy_array_release(irpy_array *a);
size_t irpy_array_count(const irpy_array *a);
bool irpy_array_c_contiguous(const irpy_array *a);
bool irpy_array_f_contiguous(const irpy_array *a);
/* "(64, 64, 64)" */
void irpy_shape_text(const irpy_array *a, char *buf, size_t cap);
/* Parses a stream given from Python: None or an int (a cudaStream_t value). -1 on error. */
int irpy_stream_from_object(PyObject *obj, cudaStream_t *out);

/* ---- Arrays out --------------------------------------------------------------------------------- */
/* Host memory exported through the buffer protocol (NumPy wraps it with np.asarray, no copy).
 * Takes ownership of `data` (freed with free_fn, which may be NULL for memory it must not free)
 * and of a reference to `owner` if not NULL. Row-major (C order) of `shape`. */
extern PyTypeObject IrpyHostBufferType;
PyObject *irpy_host_buffer_new(void *data, void (*free_fn)(void *), PyObject *owner, irpy_dtype dtype, int ndim,
                               const Py_ssize_t *shape);
/* A new host buffer of `shape` (uninitialised); its memory through *data. */
PyObject *irpy_host_buffer_alloc(irpy_dtype dtype, int ndim, const Py_ssize_t *shape, void **data);

/* Device memory owned by `owner` (kept alive by a reference), exported as
 * __cuda_array_interface__ (v3) and __dlpack__ (C order, no copy). */
extern PyTypeObject IrpyDeviceArrayType;
PyObject *irpy_device_array_new(void *data, int device_id, PyObject *owner, irpy_dtype dtype, int ndim,
                                const Py_ssize_t *shape);

/* ---- CUDA helpers -------------------------------------------------------------------------------- */
/* Number of CUDA devices; 0 when there is none or no driver (never raises). */
int irpy_cuda_device_count(void);
/* Makes `device` current for a while; irpy_device_restore puts the caller's back. */
typedef struct irpy_device_guard {
  int previous;
  bool changed;
} irpy_device_guard;
cudaError_t irpy_device_enter(int device, irpy_device_guard *guard);
void irpy_device_restore(const irpy_device_guard *guard);

/* ---- Volumes ------------------------------------------------------------------------------------- */
/* Fills `v` (dims, type, spacing, voxels pointing into the array) from a 3-D host array of
 * uint8/int16/uint16/float32 that is C-contiguous (axes z, y, x: x is the last, fastest one) or
 * Fortran-contiguous (axes x, y, z). `spacing` (may be Py_None) is in the array's axis order.
 * Raises ValueError with the reason and returns -1 for anything else. `what` names the argument. */
int irpy_volume_from_array(const irpy_array *a, PyObject *spacing, const char *what, ir_volume *v);
/* Checks what irpy_volume_from_array needs of the array alone (3-D, dtype, contiguous, not empty). */
int irpy_check_volume_array(const irpy_array *a, const char *what);
/* Copies a device array's bytes into new host memory (cudaMemcpy on `stream`, synchronised);
 * the caller frees *host. Raises and returns -1 on failure. */
int irpy_copy_to_host(const irpy_array *a, size_t bytes, cudaStream_t stream, void **host);

/* ---- Module parts: their functions, and the types they add to the module ------------------------------ */
int irpy_render_init(PyObject *module);
/* Built when the extract module is (python/CMakeLists.txt: INKRAY_PY_EXTRACT). */
int irpy_extract_init(PyObject *module);
extern PyMethodDef irpy_extract_methods[];
extern PyMethodDef irpy_load_methods[];
extern PyMethodDef irpy_compact_methods[];
extern PyMethodDef irpy_render_methods[];

#endif
