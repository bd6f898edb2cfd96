/* inkray._inkray.Extractor: isosurface meshes of an array through the extract module
 * (extract/extract.h), for inkray.marching_cubes.
 *
 * An Extractor keeps the extract module's GPU state (uploaded grid, scratch, compaction context)
 * between calls, so that the Python package reuses one per device and repeated calls allocate
 * nothing. The grid is an array read without a copy: a device array is used in place by the
 * GPU extractor, a host array is uploaded (GPU) or referenced (CPU) - held until the next grid.
 * Host meshes come back as HostBuffers over the module's own arrays (GPU: pinned blocks of the
 * transfer module's cache, given back with ir_mesh_free when the last of them goes); device meshes
 * as DeviceArrays over the extractor's buffers, valid until its next call; or (output='caller') in
 * arrays a Python function allocates once the counts are known, written by the extraction itself
 * (IR_MESH_CALLER); or (output='buffer') in one array of bytes it allocates, the four arrays laid
 * out in it by layout_of: the package hands CuPy and PyTorch arrays back so, without a copy, as
 * four views of one allocation (one allocation and one array read per call, not four of each).
 * values='local' asks the extraction for scikit-image's per-vertex values (the largest value
 * range of the cells around the vertex's edge, IR_EXTRACT_VALUES_LOCAL_RANGE), computed as each
 * vertex is written on whichever device extracts.
 */
#include "python/src/py_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "extract/extract.h"
#include "pythread.h"

/* ---- A host mesh, owned until its last array goes -------------------------------------------------- */
typedef struct mesh_owner {
  PyObject_HEAD
  ir_mesh mesh;
} mesh_owner;

static void mesh_owner_dealloc(PyObject *obj) {
  ir_mesh_free(&((mesh_owner *)obj)->mesh);
  Py_TYPE(obj)->tp_free(obj);
}

static PyTypeObject mesh_owner_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "inkray._inkray.MeshOwner",
    .tp_basicsize = sizeof(mesh_owner),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A host mesh of the extract module; its arrays are HostBuffers that keep it alive.",
    .tp_dealloc = mesh_owner_dealloc,
};

/* ---- Extractor ------------------------------------------------------------------------------------------ */
typedef struct extractor_obj {
  PyObject_HEAD
  ir_extractor *ex;
  ir_extract_device device;
  int cuda_device;
  irpy_array grid_array; /* the array the extractor reads in place (GPU device array, CPU host array) */
  bool have_grid_array;
  void *grid_copy;       /* a device array copied to the host for the CPU extractor */
  bool have_grid;
  bool c_order;
  cudaEvent_t ordered;   /* output='caller': the allocating stream's point the extractor's waits for */
  PyThread_type_lock lock;
} extractor_obj;

static void lock_extractor(extractor_obj *self) {
  if (PyThread_acquire_lock(self->lock, NOWAIT_LOCK)) return;
  Py_BEGIN_ALLOW_THREADS
  PyThread_acquire_lock(self->lock, WAIT_LOCK);
  Py_END_ALLOW_THREADS
}

static void drop_grid(extractor_obj *self) {
  if (self->have_grid_array) irpy_array_release(&self->grid_array);
  free(self->grid_copy);
  self->grid_copy = NULL;
  self->have_grid_array = self->have_grid = false;
}

static void extractor_dealloc(PyObject *obj) {
  extractor_obj *self = (extractor_obj *)obj;
  if (self->ex) {
    irpy_device_guard guard;
    bool gpu = self->device == IR_EXTRACT_GPU;
    if (gpu) irpy_device_enter(self->cuda_device, &guard);
    ir_extractor_destroy(self->ex);
    if (self->ordered) cudaEventDestroy(self->ordered);
    if (gpu) irpy_device_restore(&guard);
  }
  drop_grid(self);
  if (self->lock) PyThread_free_lock(self->lock);
  Py_TYPE(obj)->tp_free(obj);
}

static PyObject *extractor_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  static char *keywords[] = {"device", "cuda_device", "threads", NULL};
  const char *device = "gpu";
  int cuda_device = 0, threads = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|s$ii", keywords, &device, &cuda_device, &threads)) return NULL;
  bool gpu = strcmp(device, "gpu") == 0;
  if (!gpu && strcmp(device, "cpu") != 0) return irpy_error(PyExc_ValueError, "device '%s': use gpu or cpu", device);
  if (threads < 0) return irpy_error(PyExc_ValueError, "threads must be 0 (all cores) or a positive count");
  if (gpu && irpy_cuda_device_count() == 0)
    return irpy_error(PyExc_RuntimeError, "device='gpu': no CUDA device available; use device='cpu'");
  extractor_obj *self = (extractor_obj *)type->tp_alloc(type, 0);
  if (!self) return NULL;
  self->device = gpu ? IR_EXTRACT_GPU : IR_EXTRACT_CPU;
  self->cuda_device = cuda_device;
  self->lock = PyThread_allocate_lock();
  if (!self->lock) {
    Py_DECREF(self);
    return PyErr_NoMemory();
  }
  /* NumPy meshes in pinned memory from the process's cache: the download writes them at the link's
   * speed, and the arrays give their blocks back to the cache when the last of them goes. */
  ir_extractor_desc desc = {.device = self->device, .cpu_threads = threads, .pinned_mesh = gpu};
  char err[IR_ERR_LEN] = {0};
  ir_status st;
  irpy_device_guard guard;
  cudaError_t e = cudaSuccess;
  Py_BEGIN_ALLOW_THREADS
  if (gpu) e = irpy_device_enter(cuda_device, &guard);
  st = e == cudaSuccess ? ir_extractor_create(&desc, &self->ex, err) : IR_ERR_RUNTIME;
  if (gpu && e == cudaSuccess) irpy_device_restore(&guard);
  Py_END_ALLOW_THREADS
  if (e != cudaSuccess || st != IR_OK) {
    Py_DECREF(self);
    return e != cudaSuccess ? irpy_raise_cuda(e, "selecting the CUDA device") : irpy_raise(st, err);
  }
  return (PyObject *)self;
}

/* set_grid(volume, spacing=None, *, stream=None): spacing in the array's axis order. */
static PyObject *extractor_set_grid(PyObject *obj, PyObject *args, PyObject *kwargs) {
  static char *keywords[] = {"volume", "spacing", "stream", NULL};
  extractor_obj *self = (extractor_obj *)obj;
  PyObject *volume, *spacing = Py_None, *stream_obj = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O$O", keywords, &volume, &spacing, &stream_obj)) return NULL;
  cudaStream_t stream;
  if (irpy_stream_from_object(stream_obj, &stream) != 0) return NULL;
  irpy_array a;
  if (irpy_array_get(volume, "volume", stream, &a) != 0) return NULL;
  ir_volume v;
  if (irpy_volume_from_array(&a, spacing, "volume", &v) != 0) {
    irpy_array_release(&a);
    return NULL;
  }
  bool gpu = self->device == IR_EXTRACT_GPU;
  if (gpu && a.device && a.device_id != self->cuda_device) {
    irpy_array_release(&a);
    return irpy_error(PyExc_ValueError, "volume is on CUDA device %d, the extractor on device %d", a.device_id,
                      self->cuda_device);
  }
  void *copy = NULL;
  if (!gpu && a.device) {
    if (irpy_copy_to_host(&a, v.bytes, stream, &copy) != 0) {
      irpy_array_release(&a);
      return NULL;
    }
    v.voxels = copy;
  } else if (gpu && a.device && stream) {
    /* The extractor works on its own stream: the caller's work on the volume comes first. */
    cudaError_t e = cudaStreamSynchronize(stream);
    if (e != cudaSuccess) {
      irpy_array_release(&a);
      return irpy_raise_cuda(e, "waiting for the volume's stream");
    }
  }
  ir_extract_grid grid = {.voxels = v.voxels, .device_pointer = gpu && a.device, .type = v.type};
  for (int k = 0; k < 3; k++) grid.dims[k] = v.dims[k], grid.spacing[k] = v.spacing[k];
  lock_extractor(self);
  drop_grid(self);
  char err[IR_ERR_LEN] = {0};
  ir_status st;
  irpy_device_guard guard;
  Py_BEGIN_ALLOW_THREADS
  if (gpu) irpy_device_enter(self->cuda_device, &guard);
  st = ir_extractor_set_grid(self->ex, &grid, err);
  if (gpu) irpy_device_restore(&guard);
  Py_END_ALLOW_THREADS
  if (st == IR_OK) {
    self->have_grid = true;
    self->c_order = irpy_array_c_contiguous(&a);
    self->grid_copy = copy;
    /* Kept while the extractor reads it in place: device arrays (GPU) and host arrays (CPU). */
    bool keep = copy == NULL && (gpu ? a.device : true);
    if (keep) self->grid_array = a, self->have_grid_array = true;
  }
  PyThread_release_lock(self->lock);
  if (st != IR_OK || !self->have_grid_array) irpy_array_release(&a);
  if (st != IR_OK) {
    free(copy);
    return irpy_raise(st, err);
  }
  Py_RETURN_NONE;
}

static PyObject *mesh_array(PyObject *owner, bool device, int cuda_device, void *data, irpy_dtype dtype, size_t rows,
                            int columns) {
  static float nothing[3]; /* an empty mesh's arrays may be NULL; a buffer needs an address */
  Py_ssize_t shape[2] = {(Py_ssize_t)rows, columns};
  int ndim = columns > 1 ? 2 : 1;
  if (!data) data = nothing;
  if (device) return irpy_device_array_new(data, cuda_device, owner, dtype, ndim, shape);
  return irpy_host_buffer_new(data, NULL, owner, dtype, ndim, shape);
}

static PyObject *extract_stats(const ir_extract_stats *s) {
  return Py_BuildValue("{s:d,s:d,s:d,s:d,s:d,s:n,s:n,s:n,s:O}", "total_ms", s->total_ms, "device_ms", s->device_ms,
                       "count_ms", s->count_ms, "generate_ms", s->generate_ms, "download_ms", s->download_ms,
                       "bricks", (Py_ssize_t)s->bricks, "active_bricks", (Py_ssize_t)s->active_bricks,
                       "cells_with_triangles", (Py_ssize_t)s->cells_with_triangles, "grew",
                       s->grew ? Py_True : Py_False);
}

/* ---- output='caller': the mesh in arrays a Python function allocates ------------------------------------- */
/* output='buffer': where each array lies in the one buffer. Each starts on a 256-byte boundary
 * of the buffer, the alignment cudaMalloc gives every array of its own (whole 128-byte lines
 * for the kernels' coalesced writes); the buffer's size is a multiple of 256 too. */
#define MESH_BUFFER_ALIGN 256
typedef struct mesh_layout {
  size_t offset[4]; /* positions, normals, values, triangles: bytes from the buffer's start */
  size_t bytes;     /* the buffer's size */
} mesh_layout;

static size_t buffer_align(size_t bytes) { return (bytes + MESH_BUFFER_ALIGN - 1) / MESH_BUFFER_ALIGN * MESH_BUFFER_ALIGN; }

static mesh_layout layout_of(size_t vertices, size_t triangles) {
  const size_t sizes[4] = {vertices * 3 * sizeof(float), vertices * 3 * sizeof(float), vertices * sizeof(float),
                           triangles * 3 * sizeof(uint32_t)};
  mesh_layout l = {.bytes = 0};
  for (int k = 0; k < 4; k++) l.offset[k] = l.bytes, l.bytes += buffer_align(sizes[k]);
  return l;
}

typedef struct caller_alloc {
  PyObject *allocate;       /* allocate(vertices, triangles) -> (positions, normals, values, triangles);
                               output='buffer': allocate(bytes) -> one array of that many bytes */
  bool buffer;              /* output='buffer' */
  mesh_layout layout;       /* output='buffer': where the arrays lie */
  size_t vertices, triangles;
  bool gpu;
  int cuda_device;
  cudaStream_t stream;      /* the extractor's */
  cudaStream_t allocating;  /* the arrays' allocation stream (DLPack's consumer stream), or the extractor's */
  bool wait;                /* the extractor's stream waits for `allocating` through `ordered` */
  cudaEvent_t *ordered;
  PyObject *items[4];       /* the arrays allocate returned, handed back as the result */
  irpy_array views[4];
  int viewed;
  bool raised;              /* a Python exception is pending (allocate raised, or an array was refused) */
} caller_alloc;

/* Checks one of the allocated arrays: on the extractor's device, of its dtype, C-contiguous,
 * writable, (rows, columns) or (rows,). Raises ValueError and returns -1 otherwise. */
static int check_caller_array(const caller_alloc *c, const irpy_array *a, const char *name, bool integer,
                              size_t rows, int columns) {
  bool dtype_ok = integer ? a->dtype == IRPY_INT32 || a->dtype == IRPY_UINT32 : a->dtype == IRPY_FLOAT32;
  bool shape_ok = a->ndim == (columns > 1 ? 2 : 1) && (size_t)a->shape[0] == rows &&
                  (columns == 1 || a->shape[1] == columns);
  char shape[96];
  irpy_shape_text(a, shape, sizeof shape);
  if (c->gpu && (!a->device || a->device_id != c->cuda_device))
    irpy_error(PyExc_ValueError, "allocate: %s must be a device array on CUDA device %d (the extractor's)", name,
               c->cuda_device);
  else if (!c->gpu && a->device)
    irpy_error(PyExc_ValueError, "allocate: %s must be a host array for the CPU extractor", name);
  else if (!dtype_ok)
    irpy_error(PyExc_ValueError, "allocate: %s is %s; give %s", name, irpy_dtype_name(a->dtype),
               integer ? "int32 (or uint32)" : "float32");
  else if (!shape_ok)
    irpy_error(PyExc_ValueError, "allocate: %s has shape %s; give (%zu%s)", name, shape, rows,
               columns == 3 ? ", 3" : ",");
  else if (!irpy_array_c_contiguous(a) || a->readonly)
    irpy_error(PyExc_ValueError, "allocate: %s must be C-contiguous and writable", name);
  else
    return 0;
  return -1;
}

/* output='buffer': checks the one array allocate(bytes) returned, as check_caller_array checks each
 * of four (device, element type known, 1-D, C-contiguous, writable, exactly the layout's bytes, its
 * start aligned to 4 bytes: the kernels store 4-byte words, and every offset is a multiple of 256).
 * Raises ValueError and returns -1 otherwise. */
static int check_caller_buffer(const caller_alloc *c, const irpy_array *a) {
  size_t bytes = irpy_array_count(a) * irpy_dtype_size(a->dtype);
  char shape[96];
  irpy_shape_text(a, shape, sizeof shape);
  if (c->gpu && (!a->device || a->device_id != c->cuda_device))
    irpy_error(PyExc_ValueError, "allocate: the buffer must be a device array on CUDA device %d (the extractor's)",
               c->cuda_device);
  else if (!c->gpu && a->device)
    irpy_error(PyExc_ValueError, "allocate: the buffer must be a host array for the CPU extractor");
  else if (a->dtype == IRPY_DTYPE_OTHER || a->ndim != 1)
    irpy_error(PyExc_ValueError, "allocate: the buffer is %s of shape %s; give a 1-D uint8 array of %zu bytes",
               irpy_dtype_name(a->dtype), shape, c->layout.bytes);
  else if (bytes != c->layout.bytes)
    irpy_error(PyExc_ValueError, "allocate: the buffer has %zu bytes; give %zu", bytes, c->layout.bytes);
  else if (!irpy_array_c_contiguous(a) || a->readonly)
    irpy_error(PyExc_ValueError, "allocate: the buffer must be C-contiguous and writable");
  else if ((uintptr_t)a->data % 4 != 0)
    irpy_error(PyExc_ValueError, "allocate: the buffer starts at %p, not aligned to 4 bytes", a->data);
  else
    return 0;
  return -1;
}

/* Makes the extraction's writes wait for the work queued on the allocating stream. */
static int order_after_allocation(caller_alloc *c) {
  if (!c->wait) return 0;
  /* Memory a stream-ordered pool hands back may still be in use by work queued on the allocating
   * stream: the extraction's writes go after it. One event for the arrays (the producers saw
   * their own stream as the consumer's, or were not asked: nothing to order on their side). */
  cudaError_t e = *c->ordered ? cudaSuccess : cudaEventCreateWithFlags(c->ordered, cudaEventDisableTiming);
  if (e == cudaSuccess) e = cudaEventRecord(*c->ordered, c->allocating);
  if (e == cudaSuccess) e = cudaStreamWaitEvent(c->stream, *c->ordered, 0);
  if (e != cudaSuccess) {
    irpy_raise_cuda(e, "ordering the extraction after the arrays' stream");
    return -1;
  }
  return 0;
}

/* output='buffer': one array of the layout's bytes, read once; the four arrays' addresses are the
 * layout's offsets into it. */
static int allocate_buffer(caller_alloc *c, ir_mesh_arrays *out) {
  c->layout = layout_of(c->vertices, c->triangles);
  PyObject *r = PyObject_CallFunction(c->allocate, "n", (Py_ssize_t)c->layout.bytes);
  if (!r) return -1;
  irpy_array *a = &c->views[0];
  /* With the allocating stream named the binding orders the writes itself (order_after_allocation):
   * the producer need not. */
  int rc = c->wait ? irpy_array_get_ordered(r, "buffer", c->allocating, a)
                   : irpy_array_get(r, "buffer", c->gpu ? c->allocating : NULL, a);
  if (rc != 0) {
    Py_DECREF(r);
    return -1;
  }
  c->viewed = 1;
  if (check_caller_buffer(c, a) != 0 || order_after_allocation(c) != 0) {
    Py_DECREF(r);
    return -1;
  }
  char *base = a->data;
  out->positions = (float *)(base + c->layout.offset[0]), out->normals = (float *)(base + c->layout.offset[1]);
  out->values = (float *)(base + c->layout.offset[2]), out->triangles = (uint32_t *)(base + c->layout.offset[3]);
  c->items[0] = r;
  return 0;
}

/* ir_mesh_allocate_fn, called inside ir_extract with the GIL released: takes the GIL back for the
 * Python function, borrows its arrays' memory and hands it to the extraction. */
static ir_status allocate_from_python(void *user, size_t vertices, size_t triangles, bool colors, ir_mesh_arrays *out,
                                      char err[IR_ERR_LEN]) {
  caller_alloc *c = user;
  static const char *const names[4] = {"positions", "normals", "values", "triangles"};
  static const int columns[4] = {3, 3, 1, 3};
  (void)colors; /* the package asks for no colours */
  PyGILState_STATE gil = PyGILState_Ensure();
  c->vertices = vertices, c->triangles = triangles;
  PyObject *fast = NULL, *r = NULL;
  if (c->buffer) {
    if (allocate_buffer(c, out) != 0) goto raised;
    PyGILState_Release(gil);
    return IR_OK;
  }
  r = PyObject_CallFunction(c->allocate, "nn", (Py_ssize_t)vertices, (Py_ssize_t)triangles);
  if (!r) goto raised;
  fast = PySequence_Fast(r, "allocate must return (positions, normals, values, triangles)");
  if (!fast) goto raised;
  if (PySequence_Fast_GET_SIZE(fast) != 4) {
    irpy_error(PyExc_ValueError, "allocate returned %zd arrays; return (positions, normals, values, triangles)",
               PySequence_Fast_GET_SIZE(fast));
    goto raised;
  }
  for (int k = 0; k < 4; k++) {
    irpy_array *a = &c->views[k];
    if (irpy_array_get(PySequence_Fast_GET_ITEM(fast, k), names[k], c->gpu ? c->allocating : NULL, a) != 0)
      goto raised;
    c->viewed++;
    if (check_caller_array(c, a, names[k], k == 3, k == 3 ? triangles : vertices, columns[k]) != 0) goto raised;
  }
  if (order_after_allocation(c) != 0) goto raised;
  out->positions = c->views[0].data, out->normals = c->views[1].data, out->values = c->views[2].data;
  out->triangles = c->views[3].data;
  for (int k = 0; k < 4; k++) c->items[k] = Py_NewRef(PySequence_Fast_GET_ITEM(fast, k));
  Py_DECREF(fast);
  Py_DECREF(r);
  PyGILState_Release(gil);
  return IR_OK;
raised:
  c->raised = true;
  snprintf(err, IR_ERR_LEN, "the allocate function failed");
  Py_XDECREF(fast);
  Py_XDECREF(r);
  PyGILState_Release(gil);
  return IR_ERR_RUNTIME;
}

/* output='buffer': ((offset, shape, dtype) of positions, normals, values, triangles), the views of
 * the buffer the package makes (offsets in bytes; dtype NumPy's name). Every index < 2^31
 * (extract.h): the uint32 indices read the same as int32. */
static PyObject *buffer_layout(const caller_alloc *c) {
  const Py_ssize_t v = (Py_ssize_t)c->vertices, t = (Py_ssize_t)c->triangles;
  const size_t *o = c->layout.offset;
  return Py_BuildValue("((n(nn)s)(n(nn)s)(n(n)s)(n(nn)s))", (Py_ssize_t)o[0], v, (Py_ssize_t)3, "float32",
                       (Py_ssize_t)o[1], v, (Py_ssize_t)3, "float32", (Py_ssize_t)o[2], v, "float32",
                       (Py_ssize_t)o[3], t, (Py_ssize_t)3, "int32");
}

/* Lets go of the borrowed memory (the arrays themselves stay in items). */
static void release_caller_views(caller_alloc *c) {
  for (int k = 0; k < c->viewed; k++) irpy_array_release(&c->views[k]);
  c->viewed = 0;
}

/* extract(isovalue, *, method='ink-compact', output='numpy', values='isovalue'; or 'gradient', 'local',
 *         array_axes=False, ascent=False, allocate=None, stream=None)
 * -> (positions (V, 3) x y z, normals (V, 3), values (V,), triangles (F, 3) int32, stats).
 * output='caller': allocate(V, F) returns the four arrays (device arrays on the extractor's device
 * for the GPU, host arrays for the CPU; float32, int32 triangles, C order), called once the counts
 * are known; the extraction writes into them and they are returned. stream: the CUDA stream allocate
 * allocates on (the library's current one); the extraction's writes wait for the work queued on it
 * (without it, each array's producer is asked to order its work before the extractor's stream).
 * output='buffer': allocate(bytes) returns one 1-D array of exactly that many bytes (any element
 * type; on the device as above, C order, its start aligned to 4 bytes), called once the counts are
 * known; the extraction writes the four arrays into it at 256-byte-aligned offsets, and the result
 * is (buffer, layout, stats): layout ((offset, shape, dtype) of positions, normals, values,
 * triangles) says which views of the buffer the mesh is.
 * array_axes: positions and normals in the array's axis order (z, y, x for a C-order array) and
 * triangles wound as scikit-image winds them for gradient_direction 'descent' (or 'ascent'),
 * written so by the extraction itself. */
static PyObject *extractor_extract(PyObject *obj, PyObject *args, PyObject *kwargs) {
  static char *keywords[] = {"isovalue", "method", "output", "values", "array_axes", "ascent", "allocate",
                             "stream", NULL};
  extractor_obj *self = (extractor_obj *)obj;
  double isovalue = 0;
  const char *method = "ink-compact", *output = "numpy", *values = "isovalue";
  int array_axes = 0, ascent = 0;
  PyObject *allocate = Py_None, *stream_obj = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "d|$sssppOO", keywords, &isovalue, &method, &output, &values,
                                   &array_axes, &ascent, &allocate, &stream_obj))
    return NULL;
  cudaStream_t allocating = NULL;
  if (irpy_stream_from_object(stream_obj, &allocating) != 0) return NULL;
  if (!isfinite(isovalue)) return irpy_error(PyExc_ValueError, "level %g: must be a finite number", isovalue);
  ir_extract_desc desc = {.surface_count = 1};
  desc.isovalues[0] = (float)isovalue;
  if (!ir_compact_method_parse(method, &desc.method))
    return irpy_error(PyExc_ValueError,
                      "compaction '%s': use one of ink-compact, ink-collate, thrust, jumping-jack, redzone", method);
  bool device_out = strcmp(output, "device") == 0, buffer_out = strcmp(output, "buffer") == 0;
  bool caller_out = buffer_out || strcmp(output, "caller") == 0;
  if (!device_out && !caller_out && strcmp(output, "numpy") != 0)
    return irpy_error(PyExc_ValueError, "output '%s': use numpy, device, caller or buffer", output);
  if (device_out && self->device != IR_EXTRACT_GPU)
    return irpy_error(PyExc_ValueError, "output='device' needs the GPU extractor (device='gpu')");
  if (caller_out != (allocate != Py_None) || (caller_out && !PyCallable_Check(allocate)))
    return irpy_error(PyExc_ValueError, "allocate: give a function with output='caller' or 'buffer' (and only then)");
  desc.output = caller_out ? IR_MESH_CALLER : device_out ? IR_MESH_DEVICE : IR_MESH_HOST;
  if (strcmp(values, "isovalue") == 0) desc.values = IR_EXTRACT_VALUES_ISOVALUE;
  else if (strcmp(values, "gradient") == 0) desc.values = IR_EXTRACT_VALUES_GRADIENT;
  else if (strcmp(values, "local") == 0) desc.values = IR_EXTRACT_VALUES_LOCAL_RANGE;
  else return irpy_error(PyExc_ValueError, "values '%s': use local, isovalue or gradient", values);
  if (!self->have_grid) return irpy_error(PyExc_ValueError, "no volume given to the extractor (set_grid)");
  if (array_axes) {
    /* A C-order array's axes are z, y, x: the mirror image of the extractor's x, y, z, which
     * turns the winding over; scikit-image's 'descent' winding is the other way round from the
     * table's, so the two cancel for a C-order array with 'descent'. */
    desc.axes_zyx = self->c_order;
    desc.flip_winding = self->c_order == (bool)ascent;
  }

  mesh_owner *owner = PyObject_New(mesh_owner, &mesh_owner_type);
  if (!owner) return NULL;
  memset(&owner->mesh, 0, sizeof owner->mesh);
  ir_extract_stats stats;
  memset(&stats, 0, sizeof stats);
  char err[IR_ERR_LEN] = {0};
  ir_status st;
  irpy_device_guard guard;
  bool gpu = self->device == IR_EXTRACT_GPU;
  caller_alloc caller;
  memset(&caller, 0, sizeof caller);
  caller.allocate = allocate, caller.buffer = buffer_out, caller.gpu = gpu, caller.cuda_device = self->cuda_device;
  caller.stream = ir_extractor_stream(self->ex);
  caller.wait = gpu && stream_obj != Py_None;
  caller.allocating = caller.wait ? allocating : caller.stream;
  caller.ordered = &self->ordered;
  desc.allocate = allocate_from_python, desc.allocate_user = &caller;
  lock_extractor(self);
  Py_BEGIN_ALLOW_THREADS
  if (gpu) irpy_device_enter(self->cuda_device, &guard);
  st = ir_extract(self->ex, &desc, &owner->mesh, &stats, err);
  if (gpu) irpy_device_restore(&guard);
  Py_END_ALLOW_THREADS
  PyThread_release_lock(self->lock);
  release_caller_views(&caller);
  if (st != IR_OK || caller_out) {
    Py_DECREF(owner);
    PyObject *stats_dict = st == IR_OK ? extract_stats(&stats) : NULL, *result = NULL;
    if (stats_dict && buffer_out)
      result = Py_BuildValue("(ONN)", caller.items[0], buffer_layout(&caller), stats_dict);
    else if (stats_dict)
      result = Py_BuildValue("(OOOON)", caller.items[0], caller.items[1], caller.items[2], caller.items[3], stats_dict);
    for (int k = 0; k < 4; k++) Py_XDECREF(caller.items[k]);
    if (st != IR_OK && !caller.raised) irpy_raise(st, err);
    return result;
  }
  const ir_mesh *m = &owner->mesh;
  /* Device arrays belong to the extractor (valid until its next call), host arrays to `owner`. */
  PyObject *keep = device_out ? obj : (PyObject *)owner;
  PyObject *items[5] = {
      mesh_array(keep, device_out, self->cuda_device, m->positions, IRPY_FLOAT32, m->vertex_count, 3),
      mesh_array(keep, device_out, self->cuda_device, m->normals, IRPY_FLOAT32, m->vertex_count, 3),
      mesh_array(keep, device_out, self->cuda_device, m->values, IRPY_FLOAT32, m->vertex_count, 1),
      /* every index < 2^31 (extract.h): the uint32 indices read the same as int32 */
      mesh_array(keep, device_out, self->cuda_device, m->triangles, IRPY_INT32, m->triangle_count, 3),
      extract_stats(&stats)};
  Py_DECREF(owner);
  PyObject *result = NULL;
  if (items[0] && items[1] && items[2] && items[3] && items[4])
    result = Py_BuildValue("(OOOOO)", items[0], items[1], items[2], items[3], items[4]);
  for (int k = 0; k < 5; k++) Py_XDECREF(items[k]);
  return result;
}

/* Lets go of the array the extractor reads in place (it is not read again before the next
 * set_grid: extract refuses until then), so that a cached extractor keeps no volume alive. */
static PyObject *extractor_release_grid(PyObject *obj, PyObject *unused) {
  extractor_obj *self = (extractor_obj *)obj;
  lock_extractor(self);
  drop_grid(self);
  PyThread_release_lock(self->lock);
  Py_RETURN_NONE;
}

static PyObject *extractor_device(PyObject *obj, void *closure) {
  return PyUnicode_FromString(((extractor_obj *)obj)->device == IR_EXTRACT_GPU ? "gpu" : "cpu");
}
static PyObject *extractor_cuda_device(PyObject *obj, void *closure) {
  return PyLong_FromLong(((extractor_obj *)obj)->cuda_device);
}
static PyObject *extractor_stream(PyObject *obj, void *closure) {
  return PyLong_FromVoidPtr((void *)ir_extractor_stream(((extractor_obj *)obj)->ex));
}

static PyMethodDef extractor_methods[] = {
    {"set_grid", (PyCFunction)(void (*)(void))extractor_set_grid, METH_VARARGS | METH_KEYWORDS,
     "set_grid(volume, spacing=None, *, stream=None): the array to extract from (spacing in its axis order)."},
    {"extract", (PyCFunction)(void (*)(void))extractor_extract, METH_VARARGS | METH_KEYWORDS,
     "extract(isovalue, *, method, output, values, array_axes, ascent, allocate, stream) -> (positions, normals, "
     "values, triangles, stats); output='caller': allocate(V, F) -> the four arrays the extraction writes into, "
     "allocated on `stream`; output='buffer': allocate(bytes) -> one array for all four, and the result is "
     "(buffer, layout, stats), layout ((offset in bytes, shape, dtype) of positions, normals, values, triangles)"},
    {"release_grid", extractor_release_grid, METH_NOARGS,
     "release_grid(): drop the volume (the next extract needs set_grid first)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef extractor_getset[] = {
    {"device", extractor_device, NULL, "'gpu' or 'cpu'", NULL},
    {"cuda_device", extractor_cuda_device, NULL, "the CUDA device of a GPU extractor", NULL},
    {"stream", extractor_stream, NULL, "the CUDA stream the GPU extractor works on (0 for the CPU)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject extractor_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "inkray._inkray.Extractor",
    .tp_basicsize = sizeof(extractor_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Extractor(device='gpu', *, cuda_device=0, threads=0)",
    .tp_new = extractor_new,
    .tp_dealloc = extractor_dealloc,
    .tp_methods = extractor_methods,
    .tp_getset = extractor_getset,
};


PyMethodDef irpy_extract_methods[] = {
    {NULL, NULL, 0, NULL},
};

int irpy_extract_init(PyObject *module) {
  if (PyType_Ready(&mesh_owner_type) < 0 || PyType_Ready(&extractor_type) < 0) return -1;
  return PyModule_AddObjectRef(module, "Extractor", (PyObject *)&extractor_type);
}
