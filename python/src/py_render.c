/* inkray._inkray.Renderer: an ir_renderer over an array, for repeated frames.
 *
 * The renderer takes the volume once: the GPU renderer uploads it into a texture at creation
 * (frames after that upload nothing), the CPU renderer reads it in host memory. A host array is
 * read where it is (C order: axes z, y, x; Fortran order: x, y, z); the CPU renderer works on a
 * copy unless asked not to (snapshot=False, for one-shot frames), so that changing the array
 * later cannot leave the brick ranges computed at creation stale. A device array (CuPy,
 * PyTorch) is copied to the host once: the renderer computes its brick ranges there and
 * uploads the texture from there.
 *
 * Frames run with the GIL released, one at a time per renderer (a lock), on the renderer's CUDA
 * device. The image comes back as host memory (a HostBuffer) or, for the GPU, as a view of the
 * renderer's image buffer on the device (DeviceArray, no copy), valid until the next frame.
 */
#include "python/src/py_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pythread.h"
#include "render/render.h"

typedef struct renderer_obj {
  PyObject_HEAD
  ir_renderer *renderer;
  ir_device device;
  int cuda_device;
  ir_volume volume;     /* voxels borrowed from `array` or owned (volume_owned) */
  bool volume_owned;
  irpy_array array;
  bool have_array;
  ir_volume color_volume;
  bool color_owned;
  irpy_array color_array;
  bool have_color_array;
  bool have_gradient_range;
  float gradient_range[2];
  float color_volume_range[2];
  bool c_order;         /* the volume array's axes are (z, y, x); else (x, y, z) */
  PyThread_type_lock lock;
  int width, height;    /* of the last frame */
  bool have_frame;
} renderer_obj;

/* ---- Locking: one frame at a time, waiting without the GIL ----------------------------------------- */
static void lock_renderer(renderer_obj *self) {
  if (PyThread_acquire_lock(self->lock, NOWAIT_LOCK)) return;
  Py_BEGIN_ALLOW_THREADS
  PyThread_acquire_lock(self->lock, WAIT_LOCK);
  Py_END_ALLOW_THREADS
}
static void unlock_renderer(renderer_obj *self) { PyThread_release_lock(self->lock); }

static void release_color_volume(renderer_obj *self) {
  if (self->color_owned) free(self->color_volume.voxels);
  if (self->have_color_array) irpy_array_release(&self->color_array);
  memset(&self->color_volume, 0, sizeof self->color_volume);
  self->color_owned = self->have_color_array = false;
}

static void renderer_dealloc(PyObject *obj) {
  renderer_obj *self = (renderer_obj *)obj;
  if (self->renderer) {
    irpy_device_guard guard;
    bool gpu = self->device == IR_DEVICE_GPU;
    if (gpu) irpy_device_enter(self->cuda_device, &guard);
    ir_renderer_destroy(self->renderer);
    if (gpu) irpy_device_restore(&guard);
  }
  release_color_volume(self);
  if (self->volume_owned) free(self->volume.voxels);
  if (self->have_array) irpy_array_release(&self->array);
  if (self->lock) PyThread_free_lock(self->lock);
  Py_TYPE(obj)->tp_free(obj);
}

static int parse_device(PyObject *obj, bool device_array, ir_device *out) {
  if (!obj || obj == Py_None) {
    *out = device_array || irpy_cuda_device_count() > 0 ? IR_DEVICE_GPU : IR_DEVICE_CPU;
    return 0;
  }
  const char *word = PyUnicode_Check(obj) ? PyUnicode_AsUTF8(obj) : NULL;
  if (!word || !ir_device_parse(word, out)) {
    PyErr_SetString(PyExc_ValueError, "device must be 'gpu', 'cpu' or None (the GPU when there is one)");
    return -1;
  }
  if (*out == IR_DEVICE_GPU && irpy_cuda_device_count() == 0) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    irpy_error(PyExc_RuntimeError, "device='gpu': no CUDA device available (%s); use device='cpu'",
                 e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    cudaGetLastError();
    return -1;
  }
  return 0;
}

/* Host voxels for the renderer: borrowed, or copied from the device or (CPU snapshot) the host. */
static int take_voxels(irpy_array *a, ir_volume *v, bool copy_host, cudaStream_t stream, bool *owned) {
  *owned = false;
  if (a->device) {
    void *host = NULL;
    if (irpy_copy_to_host(a, v->bytes, stream, &host) != 0) return -1;
    v->voxels = host;
    *owned = true;
  } else if (copy_host) {
    void *host = malloc(v->bytes);
    if (!host) {
      irpy_error(PyExc_MemoryError, "out of host memory for a %zu-byte copy of the volume", v->bytes);
      return -1;
    }
    Py_BEGIN_ALLOW_THREADS
    memcpy(host, v->voxels, v->bytes);
    Py_END_ALLOW_THREADS
    v->voxels = host;
    *owned = true;
  }
  return 0;
}

static PyObject *renderer_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  static char *keywords[] = {"volume", "spacing", "device", "threads", "snapshot", "stream", NULL};
  PyObject *volume = NULL, *spacing = Py_None, *device = Py_None, *stream_obj = Py_None;
  int threads = 0, snapshot = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O$OipO", keywords, &volume, &spacing, &device, &threads,
                                   &snapshot, &stream_obj))
    return NULL;
  if (threads < 0) {
    PyErr_SetString(PyExc_ValueError, "threads must be 0 (all cores) or a positive count");
    return NULL;
  }
  cudaStream_t stream;
  if (irpy_stream_from_object(stream_obj, &stream) != 0) return NULL;
  renderer_obj *self = (renderer_obj *)type->tp_alloc(type, 0);
  if (!self) return NULL;
  self->lock = PyThread_allocate_lock();
  if (!self->lock) {
    Py_DECREF(self);
    return PyErr_NoMemory();
  }
  if (irpy_array_get(volume, "volume", stream, &self->array) != 0) goto fail;
  self->have_array = true;
  if (irpy_volume_from_array(&self->array, spacing, "volume", &self->volume) != 0) goto fail;
  self->c_order = irpy_array_c_contiguous(&self->array);
  if (parse_device(device, self->array.device, &self->device) != 0) goto fail;
  if (self->array.device) self->cuda_device = self->array.device_id;
  else if (cudaGetDevice(&self->cuda_device) != cudaSuccess) cudaGetLastError(), self->cuda_device = 0;
  if (take_voxels(&self->array, &self->volume, self->device == IR_DEVICE_CPU && snapshot, stream,
                  &self->volume_owned) != 0)
    goto fail;
  if (self->volume_owned) {
    irpy_array_release(&self->array);
    self->have_array = false;
  }

  ir_renderer_desc desc = {.device = self->device, .volume = &self->volume, .cpu_threads = threads};
  char err[IR_ERR_LEN] = {0};
  ir_status st;
  irpy_device_guard guard;
  cudaError_t e = cudaSuccess;
  Py_BEGIN_ALLOW_THREADS
  if (self->device == IR_DEVICE_GPU) e = irpy_device_enter(self->cuda_device, &guard);
  st = e == cudaSuccess ? ir_renderer_create(&desc, &self->renderer, err) : IR_ERR_RUNTIME;
  if (self->device == IR_DEVICE_GPU && e == cudaSuccess) irpy_device_restore(&guard);
  Py_END_ALLOW_THREADS
  if (e != cudaSuccess) {
    irpy_raise_cuda(e, "selecting the volume's CUDA device");
    goto fail;
  }
  if (st != IR_OK) {
    irpy_raise(st, err);
    goto fail;
  }
  return (PyObject *)self;
fail:
  Py_DECREF(self);
  return NULL;
}

/* ---- Frame arguments -------------------------------------------------------------------------------- */
static int parse_floats(PyObject *obj, int n, float *out, const char *message) {
  PyObject *seq = PySequence_Fast(obj, message);
  if (!seq) {
    PyErr_Clear();
    PyErr_SetString(PyExc_ValueError, message);
    return -1;
  }
  int rc = PySequence_Fast_GET_SIZE(seq) == n ? 0 : -1;
  for (int k = 0; k < n && rc == 0; k++) {
    double v = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, k));
    if (PyErr_Occurred() || !isfinite(v)) PyErr_Clear(), rc = -1;
    else out[k] = (float)v;
  }
  Py_DECREF(seq);
  if (rc != 0) PyErr_SetString(PyExc_ValueError, message);
  return rc;
}

/* ("orbit", azimuth, elevation, distance, up) or ("look", eye, target, up, fov_y). */
static int parse_camera(const renderer_obj *self, PyObject *obj, ir_camera *cam) {
  if (!obj || obj == Py_None) {
    *cam = ir_camera_orbit(&self->volume, 0.0f, 20.0f, 1.0f, IR_AXIS_Z);
    return 0;
  }
  const char *kind = NULL;
  PyObject *a = NULL, *b = NULL, *c = NULL, *d = NULL;
  if (!PyTuple_Check(obj) || !PyArg_ParseTuple(obj, "sOOOO", &kind, &a, &b, &c, &d)) {
    PyErr_Clear();
    PyErr_SetString(PyExc_ValueError, "camera: use inkray.Orbit(...) or inkray.Camera(...)");
    return -1;
  }
  if (strcmp(kind, "orbit") == 0) {
    float v[3];
    PyObject *numbers = Py_BuildValue("(OOO)", a, b, c);
    int rc = numbers ? parse_floats(numbers, 3, v, "camera: azimuth, elevation and distance must be finite numbers")
                     : -1;
    Py_XDECREF(numbers);
    if (rc != 0) return -1;
    ir_axis up = IR_AXIS_Z;
    const char *word = PyUnicode_Check(d) ? PyUnicode_AsUTF8(d) : NULL;
    if (!word || !ir_axis_parse(word, &up)) {
      PyErr_SetString(PyExc_ValueError, "camera: up must be one of x, y, z, -x, -y, -z");
      return -1;
    }
    if (v[1] < -89.0f || v[1] > 89.0f || v[2] < 0.05f || v[2] > 100.0f) {
      irpy_error(PyExc_ValueError, "camera: elevation %g must lie in -89..89 degrees and distance %g in 0.05..100",
                   (double)v[1], (double)v[2]);
      return -1;
    }
    *cam = ir_camera_orbit(&self->volume, v[0], v[1], v[2], up);
    return 0;
  }
  if (strcmp(kind, "look") == 0) {
    memset(cam, 0, sizeof *cam);
    if (parse_floats(a, 3, cam->eye, "camera: eye must be three finite numbers (x, y, z)") != 0 ||
        parse_floats(b, 3, cam->target, "camera: target must be three finite numbers (x, y, z)") != 0 ||
        parse_floats(c, 3, cam->up, "camera: up must be three finite numbers (x, y, z)") != 0)
      return -1;
    double fov = PyFloat_AsDouble(d);
    if (PyErr_Occurred() || !(fov > 0.0 && fov < 180.0)) {
      PyErr_Clear();
      PyErr_SetString(PyExc_ValueError, "camera: fov_y must be an angle between 0 and 180 degrees");
      return -1;
    }
    cam->fov_y_degrees = (float)fov;
    return 0;
  }
  irpy_error(PyExc_ValueError, "camera: unknown kind '%s'; use inkray.Orbit(...) or inkray.Camera(...)", kind);
  return -1;
}

/* Surfaces: a sequence of (isovalue, r, g, b, opacity) tuples (the Python package builds them). */
static int parse_surfaces(PyObject *obj, ir_frame_desc *f) {
  PyObject *seq = PySequence_Fast(obj, "surfaces must be a sequence");
  if (!seq) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  int rc = 0;
  if (n < 1 || n > IR_MAX_SURFACES) {
    irpy_error(PyExc_ValueError, "%zd surfaces: a frame draws 1 to %d", n, IR_MAX_SURFACES);
    rc = -1;
  }
  for (Py_ssize_t k = 0; k < n && rc == 0; k++) {
    float s[5];
    char message[160];
    snprintf(message, sizeof message, "surface %zd: expected (isovalue, r, g, b, opacity) with finite numbers", k + 1);
    rc = parse_floats(PySequence_Fast_GET_ITEM(seq, k), 5, s, message);
    if (rc != 0) break;
    ir_surface *out = &f->surfaces[k];
    out->isovalue = s[0];
    out->color[0] = s[1], out->color[1] = s[2], out->color[2] = s[3];
    out->opacity = s[4];
    bool ok = s[4] >= 0.0f && s[4] <= 1.0f;
    for (int c = 1; c < 4; c++) ok = ok && s[c] >= 0.0f && s[c] <= 1.0f;
    if (!ok) {
      irpy_error(PyExc_ValueError, "surface %zd: colour and opacity must lie between 0 and 1", k + 1);
      rc = -1;
    }
  }
  f->surface_count = (int)n;
  Py_DECREF(seq);
  return rc;
}

static int parse_clip_box(const renderer_obj *self, PyObject *obj, ir_frame_desc *f) {
  float b[6];
  if (parse_floats(obj, 6, b, "clip_box: expected six numbers (x0, x1, y0, y1, z0, z1), fractions 0..1 of the "
                              "volume along each axis") != 0)
    return -1;
  static const char axis[3] = {'x', 'y', 'z'};
  for (int k = 0; k < 3; k++) {
    float lo = b[2 * k], hi = b[2 * k + 1];
    if (lo < 0.0f || hi > 1.0f || lo >= hi) {
      irpy_error(PyExc_ValueError, "clip_box: %c range %g..%g must lie in 0..1 with the first below the second",
                   axis[k], (double)lo, (double)hi);
      return -1;
    }
    f->clip_lo[k] = lo * (float)self->volume.dims[k];
    f->clip_hi[k] = hi * (float)self->volume.dims[k];
  }
  return 0;
}

static int parse_name(const char *word, const char *what, bool (*parse)(const char *, void *), void *out,
                      const char *valid) {
  if (parse(word, out)) return 0;
  irpy_error(PyExc_ValueError, "%s '%s': use one of %s", what, word, valid);
  return -1;
}

static bool parse_pipeline(const char *w, void *out) { return ir_pipeline_parse(w, out); }
static bool parse_method(const char *w, void *out) { return ir_compact_method_parse(w, out); }
static bool parse_colormap(const char *w, void *out) { return ir_colormap_parse(w, out); }

static void list_names(char *buf, size_t cap, int count, const char *(*name_of)(int)) {
  buf[0] = '\0';
  for (int k = 0; k < count; k++) {
    strncat(buf, k ? ", " : "", cap - strlen(buf) - 1);
    strncat(buf, name_of(k), cap - strlen(buf) - 1);
  }
}
static const char *pipeline_name_of(int k) { return ir_pipeline_name((ir_pipeline)k); }
static const char *method_name_of(int k) { return ir_compact_methods()[k].name; }
static const char *colormap_name_of(int k) { return ir_colormap_name((ir_colormap)k); }

/* ---- Colouring ----------------------------------------------------------------------------------------- */
static PyObject *renderer_set_color_volume(PyObject *obj, PyObject *arg) {
  renderer_obj *self = (renderer_obj *)obj;
  irpy_array a;
  ir_volume v;
  bool owned = false, have = arg != Py_None;
  memset(&a, 0, sizeof a);
  memset(&v, 0, sizeof v);
  if (have) {
    if (irpy_array_get(arg, "color volume", NULL, &a) != 0) return NULL;
    if (irpy_volume_from_array(&a, NULL, "color volume", &v) != 0 ||
        take_voxels(&a, &v, self->device == IR_DEVICE_CPU, NULL, &owned) != 0) {
      irpy_array_release(&a);
      return NULL;
    }
    if (owned) irpy_array_release(&a);
  }
  lock_renderer(self);
  char err[IR_ERR_LEN] = {0};
  ir_status st;
  irpy_device_guard guard;
  bool gpu = self->device == IR_DEVICE_GPU;
  Py_BEGIN_ALLOW_THREADS
  if (gpu) irpy_device_enter(self->cuda_device, &guard);
  st = ir_renderer_set_color_volume(self->renderer, have ? &v : NULL, err);
  if (st == IR_OK && have) ir_color_range_auto(&self->volume, &v, IR_COLOR_VOLUME, self->color_volume_range);
  if (st != IR_OK) {
    /* Leave no colour volume behind a failure, whatever the renderer kept. */
    char ignored[IR_ERR_LEN];
    ir_renderer_set_color_volume(self->renderer, NULL, ignored);
  }
  if (gpu) irpy_device_restore(&guard);
  Py_END_ALLOW_THREADS
  release_color_volume(self);
  if (st == IR_OK && have) {
    self->color_volume = v;
    self->color_owned = owned;
    self->color_array = a;
    self->have_color_array = !owned;
  } else if (have) {
    if (owned) free(v.voxels);
    else irpy_array_release(&a);
  }
  unlock_renderer(self);
  if (st != IR_OK) return irpy_raise(st, err);
  Py_RETURN_NONE;
}

static int parse_coloring(renderer_obj *self, const char *color_by, const char *colormap, PyObject *range,
                          ir_frame_desc *f) {
  char valid[256];
  if (strcmp(color_by, "surface") == 0) f->color_by = IR_COLOR_SURFACE;
  else if (strcmp(color_by, "gradient") == 0) f->color_by = IR_COLOR_GRADIENT;
  else if (strcmp(color_by, "volume") == 0) f->color_by = IR_COLOR_VOLUME;
  else {
    irpy_error(PyExc_ValueError, "color_by '%s': use surface, gradient or an array of the volume's shape",
                 color_by);
    return -1;
  }
  list_names(valid, sizeof valid, IR_COLORMAP_COUNT, colormap_name_of);
  if (parse_name(colormap, "colormap", parse_colormap, &f->colormap, valid) != 0) return -1;
  if (f->color_by == IR_COLOR_VOLUME && !self->color_volume.voxels) {
    PyErr_SetString(PyExc_ValueError, "color_by='volume' needs a colour volume (set_color_volume)");
    return -1;
  }
  if (range && range != Py_None) {
    if (parse_floats(range, 2, f->color_range, "color_range: expected two finite numbers (lo, hi)") != 0) return -1;
    if (f->color_range[0] >= f->color_range[1]) {
      PyErr_SetString(PyExc_ValueError, "color_range: lo must be below hi");
      return -1;
    }
    return 0;
  }
  if (f->color_by == IR_COLOR_GRADIENT) {
    if (!self->have_gradient_range) {
      Py_BEGIN_ALLOW_THREADS
      ir_color_range_auto(&self->volume, NULL, IR_COLOR_GRADIENT, self->gradient_range);
      Py_END_ALLOW_THREADS
      self->have_gradient_range = true;
    }
    memcpy(f->color_range, self->gradient_range, sizeof f->color_range);
  } else if (f->color_by == IR_COLOR_VOLUME) {
    memcpy(f->color_range, self->color_volume_range, sizeof f->color_range);
  }
  return 0;
}

/* ---- Frames ---------------------------------------------------------------------------------------------- */
static PyObject *stats_dict(const renderer_obj *self, const ir_frame_stats *s) {
  int rounds = s->iterations < 0 ? 0 : s->iterations > IR_MAX_ITERATIONS ? IR_MAX_ITERATIONS : s->iterations;
  PyObject *traverse = PyList_New(rounds), *intersect = PyList_New(rounds);
  for (int k = 0; traverse && intersect && k < rounds; k++) {
    PyList_SET_ITEM(traverse, k, PyLong_FromUnsignedLong(s->traverse_rays[k]));
    PyList_SET_ITEM(intersect, k, PyLong_FromUnsignedLong(s->intersect_rays[k]));
  }
  if (!traverse || !intersect) {
    Py_XDECREF(traverse);
    Py_XDECREF(intersect);
    return NULL;
  }
  return Py_BuildValue("{s:s,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:i,s:k,s:k,s:N,s:N,s:O,s:d,s:d,s:d,s:O}",
                       "device", ir_device_name(self->device), "frame_ms", s->frame_ms,
                       "bvh_update_ms", s->bvh_update_ms, "raygen_ms", s->raygen_ms, "traverse_ms",
                       s->traverse_ms, "intersect_ms", s->intersect_ms, "shade_ms", s->shade_ms, "secondary_ms",
                       s->secondary_ms, "compact_ms", s->compact_ms, "kernel_ms", s->kernel_ms, "tail_ms", s->tail_ms, "iterations",
                       s->iterations, "rays_generated", (unsigned long)s->rays_generated, "rays_hit",
                       (unsigned long)s->rays_hit, "traverse_rays", traverse, "intersect_rays", intersect,
                       "graph", s->graph ? Py_True : Py_False, "control_ms", s->control_ms, "host_wait_ms",
                       s->host_wait_ms, "skip_ms", s->skip_ms, "skip_rebuilt", s->skip_rebuilt ? Py_True : Py_False);
}

static PyObject *renderer_render(PyObject *obj, PyObject *args, PyObject *kwargs) {
  static char *keywords[] = {"width", "height", "iso", "surfaces", "camera", "clip_box", "clip_plane",
                             "pipeline", "method", "color_by", "colormap", "color_range", "refine",
                             "stage_timing", "output", "depth", "tail_rays", "ao", "ao_radius", "shadows", "light",
                             "accumulate", "step", NULL};
  renderer_obj *self = (renderer_obj *)obj;
  int width = 0, height = 0, stage_timing = 0, want_depth = 0;
  PyObject *iso = Py_None, *surfaces = Py_None, *camera = Py_None, *clip_box = Py_None, *clip_plane = Py_None;
  PyObject *color_range = Py_None, *tail = Py_None, *light = Py_None;
  int ao = 0, shadows = 0, accumulate = 1;
  double ao_radius = 0.0, step = 0.0;
  const char *pipeline = "single", *method = "ink-compact", *color_by = "surface", *colormap = "viridis";
  const char *refine = "exact", *output = "numpy";
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$iiOOOOOssssOspspOidpOid", keywords, &width, &height, &iso,
                                   &surfaces, &camera, &clip_box, &clip_plane, &pipeline, &method, &color_by,
                                   &colormap, &color_range, &refine, &stage_timing, &output, &want_depth, &tail, &ao,
                                   &ao_radius, &shadows, &light, &accumulate, &step))
    return NULL;
  ir_frame_desc f;
  memset(&f, 0, sizeof f);
  f.width = width;
  f.height = height;
  f.stage_timing = stage_timing != 0;
  char valid[256];
  list_names(valid, sizeof valid, IR_PIPELINE_COUNT, pipeline_name_of);
  if (parse_name(pipeline, "pipeline", parse_pipeline, &f.pipeline, valid) != 0) return NULL;
  list_names(valid, sizeof valid, IR_COMPACT_METHOD_COUNT, method_name_of);
  if (parse_name(method, "method", parse_method, &f.method, valid) != 0) return NULL;
  if (surfaces != Py_None) {
    if (parse_surfaces(surfaces, &f) != 0) return NULL;
  } else if (iso != Py_None) {
    double v = PyFloat_AsDouble(iso);
    if (PyErr_Occurred() || !isfinite(v)) {
      PyErr_Clear();
      PyErr_SetString(PyExc_ValueError, "iso must be a finite number (data units)");
      return NULL;
    }
    f.isovalue = (float)v;
  } else {
    PyErr_SetString(PyExc_ValueError, "give iso or surfaces");
    return NULL;
  }
  if (parse_camera(self, camera, &f.camera) != 0) return NULL;
  if (clip_box != Py_None && parse_clip_box(self, clip_box, &f) != 0) return NULL;
  if (clip_plane != Py_None) {
    if (parse_floats(clip_plane, 4, f.clip_plane, "clip_plane: expected four finite numbers (nx, ny, nz, d)") != 0)
      return NULL;
    f.clip_plane_on = true;
  }
  if (strcmp(refine, "exact") != 0 && strcmp(refine, "texture") != 0) {
    irpy_error(PyExc_ValueError, "refine '%s': use exact (float trilinear) or texture", refine);
    return NULL;
  }
  f.texture_refine = strcmp(refine, "texture") == 0;
  f.sample_step = (float)step; /* the renderer checks its range (0: the default) */
  /* Ambient occlusion, shadows, the light: the renderer checks their ranges (one message). */
  f.ao_samples = ao;
  f.ao_radius = (float)ao_radius;
  f.shadows = shadows != 0;
  if (light != Py_None) {
    if (parse_floats(light, 2, f.light, "light: expected (azimuth, elevation) in degrees") != 0) return NULL;
    f.light_on = true;
  }
  if (accumulate < 1 || accumulate > (int)IR_ACCUMULATE_MAX) {
    irpy_error(PyExc_ValueError, "accumulate %d: frames of the same view averaged, 1 to %u", accumulate,
               IR_ACCUMULATE_MAX);
    return NULL;
  }
  if (tail != Py_None) {
    long t = PyLong_AsLong(tail);
    if (PyErr_Occurred() || t < -1) {
      PyErr_Clear();
      PyErr_SetString(PyExc_ValueError, "tail_rays: a whole number of rays, -1 for off, None for automatic");
      return NULL;
    }
    f.tail_rays = t < 0 ? IR_TAIL_OFF : (uint32_t)t;
  }
  bool device_out = strcmp(output, "device") == 0;
  if (!device_out && strcmp(output, "numpy") != 0) {
    irpy_error(PyExc_ValueError, "output '%s': use numpy or device", output);
    return NULL;
  }
  if (device_out && self->device != IR_DEVICE_GPU) {
    PyErr_SetString(PyExc_ValueError, "output='device' needs the GPU renderer (device='gpu')");
    return NULL;
  }
  if (width < 1 || height < 1) {
    irpy_error(PyExc_ValueError, "size %dx%d: width and height must be 1 or more", width, height);
    return NULL;
  }
  lock_renderer(self);
  if (parse_coloring(self, color_by, colormap, color_range, &f) != 0) {
    unlock_renderer(self);
    return NULL;
  }
  Py_ssize_t shape[3] = {height, width, 4};
  void *pixels = NULL, *depth_pixels = NULL;
  PyObject *image = device_out ? NULL : irpy_host_buffer_alloc(IRPY_UINT8, 3, shape, &pixels);
  PyObject *depth = want_depth ? irpy_host_buffer_alloc(IRPY_FLOAT32, 2, shape, &depth_pixels) : NULL;
  if ((!device_out && !image) || (want_depth && !depth)) {
    unlock_renderer(self);
    Py_XDECREF(image);
    Py_XDECREF(depth);
    return NULL;
  }
  ir_frame_stats stats;
  memset(&stats, 0, sizeof stats);
  char err[IR_ERR_LEN] = {0};
  ir_status st;
  const void *device_image = NULL;
  irpy_device_guard guard;
  bool gpu = self->device == IR_DEVICE_GPU;
  Py_BEGIN_ALLOW_THREADS
  if (gpu) irpy_device_enter(self->cuda_device, &guard);
  if (accumulate <= 1) {
    st = ir_render_frame(self->renderer, &f, &stats, err);
  } else {
    /* accumulate > 1: frames of the view, each with new occlusion rays, into one mean; the
     * statistics (and a stage-timing pass, when asked) are the first frame's. */
    f.accumulate = true;
    st = IR_OK;
    for (int k = 0; k < accumulate && st == IR_OK; k++) {
      f.sample_frame = (uint32_t)k;
      st = ir_render_frame(self->renderer, &f, k == 0 ? &stats : NULL, err);
      f.stage_timing = false;
    }
  }
  if (st == IR_OK && pixels) st = ir_render_read_image(self->renderer, pixels, err);
  if (st == IR_OK && depth_pixels) st = ir_render_read_depth(self->renderer, depth_pixels, err);
  if (st == IR_OK && device_out) device_image = ir_render_device_image(self->renderer);
  if (gpu) irpy_device_restore(&guard);
  Py_END_ALLOW_THREADS
  self->width = width, self->height = height, self->have_frame = st == IR_OK;
  unlock_renderer(self);
  if (st != IR_OK) {
    Py_XDECREF(image);
    Py_XDECREF(depth);
    return irpy_raise(st, err);
  }
  if (device_out) image = irpy_device_array_new((void *)device_image, self->cuda_device, obj, IRPY_UINT8, 3, shape);
  PyObject *stats_obj = image ? stats_dict(self, &stats) : NULL;
  if (!stats_obj) {
    Py_XDECREF(image);
    Py_XDECREF(depth);
    return NULL;
  }
  if (!depth) depth = Py_NewRef(Py_None);
  return Py_BuildValue("(NNN)", image, stats_obj, depth);
}

static PyObject *renderer_suggested_isovalues(PyObject *obj, PyObject *unused) {
  renderer_obj *self = (renderer_obj *)obj;
  ir_volume_stats st;
  Py_BEGIN_ALLOW_THREADS
  ir_volume_compute_stats(&self->volume, &st);
  Py_END_ALLOW_THREADS
  PyObject *list = PyList_New(0);
  for (int k = 0; list && k < st.suggested_count; k++) {
    PyObject *v = PyFloat_FromDouble(st.suggested_isovalues[k]);
    if (!v || PyList_Append(list, v) != 0) Py_CLEAR(list);
    Py_XDECREF(v);
  }
  if (list && st.suggested_count == 0) {
    /* A constant volume suggests nothing; its midpoint at least names the choice (as the program). */
    PyObject *v = PyFloat_FromDouble(0.5 * (st.min + st.max));
    if (!v || PyList_Append(list, v) != 0) Py_CLEAR(list);
    Py_XDECREF(v);
  }
  return list;
}

static PyObject *renderer_device(PyObject *obj, void *closure) {
  return PyUnicode_FromString(ir_device_name(((renderer_obj *)obj)->device));
}
static PyObject *renderer_dims(PyObject *obj, void *closure) {
  const ir_volume *v = &((renderer_obj *)obj)->volume;
  return Py_BuildValue("(nnn)", (Py_ssize_t)v->dims[0], (Py_ssize_t)v->dims[1], (Py_ssize_t)v->dims[2]);
}
static PyObject *renderer_spacing(PyObject *obj, void *closure) {
  const ir_volume *v = &((renderer_obj *)obj)->volume;
  return Py_BuildValue("(ddd)", (double)v->spacing[0], (double)v->spacing[1], (double)v->spacing[2]);
}
static PyObject *renderer_dtype(PyObject *obj, void *closure) {
  return PyUnicode_FromString(ir_voxel_type_name(((renderer_obj *)obj)->volume.type));
}
static PyObject *renderer_c_order(PyObject *obj, void *closure) {
  return PyBool_FromLong(((renderer_obj *)obj)->c_order);
}

static PyMethodDef renderer_methods[] = {
    {"render", (PyCFunction)(void (*)(void))renderer_render, METH_VARARGS | METH_KEYWORDS,
     "render(*, width, height, iso, surfaces, camera, clip_box, clip_plane, pipeline, method, color_by, colormap, "
     "color_range, refine, stage_timing, output, depth, tail_rays, ao, ao_radius, shadows, light, accumulate, step) -> "
     "(image, stats, depth)"},
    {"set_color_volume", renderer_set_color_volume, METH_O, "The second volume color_by='volume' maps (or None)."},
    {"suggested_isovalues", renderer_suggested_isovalues, METH_NOARGS,
     "Isovalues the volume's histogram suggests, best first (what the program picks by default)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef renderer_getset[] = {
    {"device", renderer_device, NULL, "'gpu' or 'cpu'", NULL},
    {"dims", renderer_dims, NULL, "voxels along x, y, z", NULL},
    {"spacing_xyz", renderer_spacing, NULL, "voxel size along x, y, z", NULL},
    {"dtype", renderer_dtype, NULL, "voxel type", NULL},
    {"c_order", renderer_c_order, NULL, "the array's axes are (z, y, x) (else (x, y, z))", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject renderer_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "inkray._inkray.Renderer",
    .tp_basicsize = sizeof(renderer_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Renderer(volume, spacing=None, *, device=None, threads=0, snapshot=True, stream=None)",
    .tp_new = renderer_new,
    .tp_dealloc = renderer_dealloc,
    .tp_methods = renderer_methods,
    .tp_getset = renderer_getset,
};

/* ---- Module functions: names and colours -------------------------------------------------------------- */
static PyObject *parse_color(PyObject *self, PyObject *arg) {
  const char *word = PyUnicode_AsUTF8(arg);
  if (!word) return NULL;
  float rgb[3];
  if (!ir_color_parse(word, rgb)) {
    irpy_error(PyExc_ValueError, "colour '%s': use #rrggbb, #rgb, an (r, g, b) tuple of 0..1 or a name "
                 "(inkray.color_names())", word);
    return NULL;
  }
  return Py_BuildValue("(ddd)", (double)rgb[0], (double)rgb[1], (double)rgb[2]);
}

static PyObject *string_list(int count, const char *(*name_of)(int)) {
  PyObject *list = PyList_New(count);
  for (int k = 0; list && k < count; k++) {
    PyObject *s = PyUnicode_FromString(name_of(k));
    if (!s) Py_CLEAR(list);
    else PyList_SET_ITEM(list, k, s);
  }
  return list;
}

static PyObject *color_names(PyObject *self, PyObject *unused) {
  PyObject *list = PyList_New(0);
  for (const char *const *n = ir_color_names(); list && *n; n++) {
    PyObject *s = PyUnicode_FromString(*n);
    if (!s || PyList_Append(list, s) != 0) Py_CLEAR(list);
    Py_XDECREF(s);
  }
  return list;
}

static PyObject *surface_default_color(PyObject *self, PyObject *arg) {
  long i = PyLong_AsLong(arg);
  if (i == -1 && PyErr_Occurred()) return NULL;
  float rgb[3];
  ir_surface_default_color((int)i, rgb);
  return Py_BuildValue("(ddd)", (double)rgb[0], (double)rgb[1], (double)rgb[2]);
}

static PyObject *pipelines(PyObject *self, PyObject *unused) {
  PyObject *list = PyList_New(IR_PIPELINE_COUNT);
  for (int k = 0; list && k < IR_PIPELINE_COUNT; k++) {
    PyObject *row = Py_BuildValue("{s:s,s:s}", "name", ir_pipeline_name((ir_pipeline)k), "description",
                                  ir_pipeline_description((ir_pipeline)k));
    if (!row) Py_CLEAR(list);
    else PyList_SET_ITEM(list, k, row);
  }
  return list;
}

static PyObject *colormaps(PyObject *self, PyObject *unused) { return string_list(IR_COLORMAP_COUNT, colormap_name_of); }

static PyObject *cuda_device_count(PyObject *self, PyObject *unused) { return PyLong_FromLong(irpy_cuda_device_count()); }

PyMethodDef irpy_render_methods[] = {
    {"parse_color", parse_color, METH_O, "'#rrggbb', '#rgb' or a colour name -> (r, g, b) in 0..1."},
    {"color_names", color_names, METH_NOARGS, "Colour names parse_color accepts."},
    {"surface_default_color", surface_default_color, METH_O, "The i-th surface's colour when none is given."},
    {"pipelines", pipelines, METH_NOARGS, "The renderers: name and description."},
    {"colormaps", colormaps, METH_NOARGS, "Colour map names."},
    {"cuda_device_count", cuda_device_count, METH_NOARGS, "CUDA devices visible (0 without a driver or GPU)."},
    {NULL, NULL, 0, NULL},
};

int irpy_render_init(PyObject *module) {
  if (PyType_Ready(&renderer_type) < 0) return -1;
  return PyModule_AddObjectRef(module, "Renderer", (PyObject *)&renderer_type);
}
