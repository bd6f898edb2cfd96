/* inkray.load: every format the program opens (data/volume.h), through the same loader, with
 * the GIL released while it reads. The voxels are handed to NumPy without a copy: shape
 * (z, y, x), C order, x fastest, as inkray stores them. Sizes and spacings on this side of the
 * API are in that array's axis order (z, y, x), the reverse of the command line's --dims XxYxZ
 * and --spacing sx,sy,sz. */
#include "python/src/py_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static irpy_dtype dtype_of(ir_voxel_type t) {
  switch (t) {
  case IR_VOXEL_UINT8: return IRPY_UINT8;
  case IR_VOXEL_UINT16: return IRPY_UINT16;
  case IR_VOXEL_INT16: return IRPY_INT16;
  default: return IRPY_FLOAT32;
  }
}

/* Three numbers of an optional (z, y, x) argument, stored x first. */
static int zyx_sizes(PyObject *obj, const char *name, bool allow_zero, size_t xyz[3], bool *given) {
  *given = false;
  if (!obj || obj == Py_None) return 0;
  PyObject *seq = PySequence_Fast(obj, "");
  int rc = seq && PySequence_Fast_GET_SIZE(seq) == 3 ? 0 : -1;
  for (int k = 0; k < 3 && rc == 0; k++) {
    long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, k));
    if ((v == -1 && PyErr_Occurred()) || v < (allow_zero ? 0 : 1)) rc = -1;
    else xyz[2 - k] = (size_t)v;
  }
  Py_XDECREF(seq);
  if (rc != 0) {
    PyErr_Clear();
    irpy_error(PyExc_ValueError, "%s must be three whole numbers (z, y, x)%s", name,
                 allow_zero ? ", each 0 or more" : ", each 1 or more");
    return -1;
  }
  *given = true;
  return 0;
}

static int zyx_spacing(PyObject *obj, float xyz[3], bool *given) {
  *given = false;
  if (!obj || obj == Py_None) return 0;
  PyObject *seq = PySequence_Fast(obj, "");
  int rc = seq && PySequence_Fast_GET_SIZE(seq) == 3 ? 0 : -1;
  for (int k = 0; k < 3 && rc == 0; k++) {
    double v = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, k));
    if (PyErr_Occurred() || !(v > 0.0) || !isfinite(v)) rc = -1;
    else xyz[2 - k] = (float)v;
  }
  Py_XDECREF(seq);
  if (rc != 0) {
    PyErr_Clear();
    PyErr_SetString(PyExc_ValueError, "spacing must be three positive finite numbers (z, y, x)");
    return -1;
  }
  *given = true;
  return 0;
}

static PyObject *zyx_tuple_size(const size_t xyz[3]) { return Py_BuildValue("(nnn)", xyz[2], xyz[1], xyz[0]); }
static PyObject *zyx_tuple_float(const float xyz[3]) {
  return Py_BuildValue("(ddd)", (double)xyz[2], (double)xyz[1], (double)xyz[0]);
}

static PyObject *load(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *keywords[] = {"path", "shape", "dtype", "endian", "spacing", "series", "array",
                             "region_offset", "region_size", "header_only", "level", "channel", "time_step", NULL};
  PyObject *path_obj = NULL, *shape = Py_None, *spacing = Py_None, *offset = Py_None, *size = Py_None;
  const char *dtype = NULL, *endian = NULL, *series = NULL, *array = NULL;
  int header_only = 0, level = 0;
  Py_ssize_t channel = 0, time_step = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|$OzzOzzOOpinn", keywords, PyUnicode_FSConverter, &path_obj,
                                   &shape, &dtype, &endian, &spacing, &series, &array, &offset, &size,
                                   &header_only, &level, &channel, &time_step))
    return NULL;
  if (level < IR_LEVEL_AUTO || channel < 0 || time_step < 0) {
    Py_DECREF(path_obj);
    PyErr_SetString(PyExc_ValueError, "level must be 'auto' or 0 or more; channel and time_step 0 or more");
    return NULL;
  }
  ir_volume_desc desc;
  memset(&desc, 0, sizeof desc);
  desc.source = PyBytes_AS_STRING(path_obj);
  desc.series = series;
  desc.array = array;
  desc.header_only = header_only != 0;
  desc.level = level;
  desc.channel = (size_t)channel;
  desc.time_step = (size_t)time_step;
  bool given = false;
  PyObject *result = NULL;
  if (zyx_sizes(shape, "shape", false, desc.dims, &given) != 0 ||
      zyx_spacing(spacing, desc.spacing, &desc.spacing_given) != 0 ||
      zyx_sizes(offset, "region_offset", true, desc.region_offset, &given) != 0 ||
      zyx_sizes(size, "region_size", false, desc.region_size, &given) != 0)
    goto done;
  if (dtype) {
    if (!ir_voxel_type_parse(dtype, &desc.type)) {
      irpy_error(PyExc_ValueError, "dtype '%s': raw volumes are uint8, uint16, int16 or float32", dtype);
      goto done;
    }
    desc.type_given = true;
  }
  if (endian) {
    if (!ir_endian_parse(endian, &desc.endian)) {
      irpy_error(PyExc_ValueError, "endian '%s': use 'little' or 'big'", endian);
      goto done;
    }
    desc.endian_given = true;
  }

  ir_volume v;
  memset(&v, 0, sizeof v);
  char err[IR_ERR_LEN] = {0};
  ir_status st;
  Py_BEGIN_ALLOW_THREADS
  st = ir_volume_load(&desc, &v, err);
  Py_END_ALLOW_THREADS
  if (st != IR_OK) {
    irpy_raise(st, err);
    goto done;
  }
  PyObject *voxels = Py_None;
  if (v.voxels) {
    Py_ssize_t zyx[3] = {(Py_ssize_t)v.dims[2], (Py_ssize_t)v.dims[1], (Py_ssize_t)v.dims[0]};
    voxels = irpy_host_buffer_new(v.voxels, free, NULL, dtype_of(v.type), 3, zyx);
    v.voxels = NULL; /* the buffer owns them now (and freed them if it failed) */
    if (!voxels) goto done;
  } else {
    Py_INCREF(voxels);
  }
  float origin[3] = {v.world_origin[0], v.world_origin[1], v.world_origin[2]};
  PyObject *levels = PyList_New(0);
  for (int l = 0; levels && l < v.level_count; l++) {
    PyObject *item = Py_BuildValue("{s:N,s:N}", "shape", zyx_tuple_size(v.level_dims[l]), "spacing",
                                   zyx_tuple_float(v.level_spacing[l]));
    if (!item || PyList_Append(levels, item) != 0) Py_CLEAR(levels);
    Py_XDECREF(item);
  }
  if (!levels) {
    Py_DECREF(voxels);
    goto done;
  }
  result = Py_BuildValue("{s:N,s:s,s:N,s:N,s:N,s:N,s:s,s:s,s:s,s:s,s:s,s:s,s:(dd),s:n,s:i,s:N,s:n,s:n}",
                         "voxels", voxels, "dtype", ir_voxel_type_name(v.type),
                         "spacing", zyx_tuple_float(v.spacing), "origin", zyx_tuple_float(origin),
                         "full_shape", zyx_tuple_size(v.full_dims), "region_offset", zyx_tuple_size(v.origin),
                         "name", v.name, "note", v.note, "modality", v.modality, "description", v.description,
                         "up_axis", ir_axis_name(v.up_axis), "up_source", v.up_source,
                         "value_range", v.value_min, v.value_max, "nonfinite_count", (Py_ssize_t)v.nonfinite_count,
                         "level", v.level, "levels", levels, "steps", (Py_ssize_t)v.steps, "channels",
                         (Py_ssize_t)v.channels);
  ir_volume_free(&v);
done:
  Py_DECREF(path_obj);
  return result;
}

/* Builtin volume names and their isovalues, for documentation and the tests. */
static PyObject *builtin_names(PyObject *self, PyObject *unused) {
  PyObject *list = PyList_New(0);
  for (const char *const *n = ir_builtin_names(); list && *n; n++) {
    PyObject *s = PyUnicode_FromString(*n);
    if (!s || PyList_Append(list, s) != 0) Py_CLEAR(list);
    Py_XDECREF(s);
  }
  return list;
}

static PyObject *builtin_isovalue(PyObject *self, PyObject *arg) {
  const char *source = PyUnicode_AsUTF8(arg);
  if (!source) return NULL;
  double iso = ir_builtin_isovalue(source);
  if (isnan(iso)) {
    irpy_error(PyExc_ValueError, "'%s' is not a builtin volume (builtin:NAME[:N])", source);
    return NULL;
  }
  return PyFloat_FromDouble(iso);
}

PyMethodDef irpy_load_methods[] = {
    {"load", (PyCFunction)(void (*)(void))load, METH_VARARGS | METH_KEYWORDS,
     "load(path, *, shape, dtype, endian, spacing, series, array, region_offset, region_size, header_only, level, "
     "channel, time_step) -> dict"},
    {"builtin_names", builtin_names, METH_NOARGS, "Names accepted after builtin:."},
    {"builtin_isovalue", builtin_isovalue, METH_O, "The isovalue a builtin:NAME[:N] volume is made for."},
    {NULL, NULL, 0, NULL},
};
