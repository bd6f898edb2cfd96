/* The extension module inkray._inkray: gathers the bindings' functions and types. The public
 * API is the Python package around it (python/inkray/__init__.py). */
#include "python/src/py_internal.h"

#include "inkray_version.h"

static PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "inkray._inkray",
    .m_doc = "inkray's C libraries (data, render, compaction, extract) for the inkray Python package.",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__inkray(void) {
  PyObject *m = PyModule_Create(&module_def);
  if (!m) return NULL;
  if (PyType_Ready(&IrpyHostBufferType) < 0 || PyType_Ready(&IrpyDeviceArrayType) < 0 ||
      PyModule_AddObjectRef(m, "HostBuffer", (PyObject *)&IrpyHostBufferType) < 0 ||
      PyModule_AddObjectRef(m, "DeviceArray", (PyObject *)&IrpyDeviceArrayType) < 0 ||
      PyModule_AddFunctions(m, irpy_load_methods) < 0 || PyModule_AddFunctions(m, irpy_render_methods) < 0 ||
      PyModule_AddFunctions(m, irpy_compact_methods) < 0 || irpy_render_init(m) < 0 || PyModule_AddStringConstant(m, "version", INKRAY_VERSION) < 0) {
    Py_DECREF(m);
    return NULL;
  }
#ifdef INKRAY_PY_EXTRACT
  if (PyModule_AddFunctions(m, irpy_extract_methods) < 0 || irpy_extract_init(m) < 0) {
    Py_DECREF(m);
    return NULL;
  }
#endif
  return m;
}
