/* Getting rendered frames into the window, without holding the renderer up.
 *
 * Frames go through a ring of slots (3 unless --present-ring says otherwise), each a texture of its own: frame N goes
 * into one slot while the slot holding an earlier frame is drawn, so that on the GPU the render
 * of one frame and the display of the one before overlap, and nothing on a frame's path waits
 * for the GPU. Three paths fill the slots:
 *
 *   egl-image  The GL context is NVIDIA's through EGL (SDL's offscreen or Wayland video, or X11
 *              with EGL): each slot's texture is an EGLImage registered with CUDA once
 *              (cudaGraphicsEGLRegisterImage), which needs no map or unmap afterwards, and the
 *              renderer writes the frame straight into the texture's array through a surface
 *              object (wnd_present_target, ir_frame_desc.surface): no copy. An event recorded
 *              after the frame on the legacy default stream (which follows the renderer's
 *              blocking stream) says when it is done. Synchronisation is ours and never waits
 *              while the ring has room: the newest slot whose event has completed is drawn (the
 *              one drawn before is drawn again while none has), and a slot is written again only
 *              after GL has passed the fence set when it was drawn. Only a full ring (the shown
 *              slot and two frames in flight) makes the CPU wait, for the oldest of them.
 *              With --present-sync gpu, where EGL offers it, the waits move to the GPU instead:
 *              GL waits for the frame's event (EGL_NV_cuda_event, eglWaitSync) before drawing
 *              it, so every frame is drawn as soon as it is submitted, in order; and the
 *              renderer waits for GL's fence on the slot (an EGL fence made a CUDA event,
 *              cudaEventCreateFromEGLSync) before writing it again. The CPU then waits only
 *              for the frame last in a slot about to be reused: the ring bounds the frames in
 *              flight.
 *   pbo        NVIDIA's GL through GLX, or where the EGLImage path fails: each slot has a pixel
 *              buffer registered with CUDA, mapped, filled and unmapped on the default stream for
 *              each frame (asynchronously: the unmap orders the copy before GL's later use), and
 *              the texture filled from it by glTexSubImage2D when the slot is drawn.
 *   host-copy  The CPU renderer, Mesa or another vendor's GL, GL on another GPU, or a failure of
 *              the paths above: the frame comes back with ir_render_read_image and goes up with
 *              glTexSubImage2D into slot 0, drawn in the same iteration.
 *
 * A failure of an interop path is printed once and the window goes on through the next path
 * (egl-image, then pbo, then host-copy): it costs speed, never the picture. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/window/window_gl.h"

#include <cuda_gl_interop.h>
#include <cuda_runtime_api.h>
#ifdef INKRAY_HAVE_EGL
#include <cuda_egl_interop.h>
#endif

/* Records the failing call and the CUDA error in words; the caller decides what follows. */
#define CUDA_TRY(call)                                                                            \
  do {                                                                                            \
    cudaError_t cuda_try_ = (call);                                                               \
    if (cuda_try_ != cudaSuccess) {                                                               \
      snprintf(err, IR_ERR_LEN, "%s failed: %s", #call, cudaGetErrorString(cuda_try_));          \
      return false;                                                                               \
    }                                                                                             \
  } while (0)

/* The legacy default stream: ordered after the renderer's stream (a blocking one) and before its
 * next work, which is what copying the renderer's single image buffer needs. */
#define PRESENT_STREAM ((cudaStream_t)0)

/* How long a slot may wait for GL to be done with it before that counts as a failure. */
#define FENCE_TIMEOUT_NS 5000000000ull

const char *wnd_present_path_name(wnd_present_path path) {
  switch (path) {
  case WND_PRESENT_EGL: return "egl-image";
  case WND_PRESENT_PBO: return "pbo";
  default: return "host-copy";
  }
}

bool wnd_present_path_parse(const char *word, wnd_present_path *out) {
  for (int k = 0; k < WND_PRESENT_PATH_COUNT; k++)
    if (strcmp(word, wnd_present_path_name((wnd_present_path)k)) == 0) {
      *out = (wnd_present_path)k;
      return true;
    }
  if (strcmp(word, "host") == 0) {
    *out = WND_PRESENT_HOST;
    return true;
  }
  return false;
}

/* True if the GL context runs on the CUDA device the renderer uses; else says why not. */
static bool same_nvidia_gpu(char err[IR_ERR_LEN]) {
  const char *vendor = (const char *)glGetString(GL_VENDOR);
  const char *renderer = (const char *)glGetString(GL_RENDERER);
  if (!vendor || !strstr(vendor, "NVIDIA")) {
    snprintf(err, IR_ERR_LEN, "OpenGL runs on %s (%s), not an NVIDIA GPU", renderer ? renderer : "?",
             vendor ? vendor : "unknown vendor");
    return false;
  }
  int current = 0;
  CUDA_TRY(cudaGetDevice(&current));
  unsigned int count = 0;
  int devices[8];
  CUDA_TRY(cudaGLGetDevices(&count, devices, 8, cudaGLDeviceListAll));
  for (unsigned int k = 0; k < count && k < 8; k++)
    if (devices[k] == current) return true;
  snprintf(err, IR_ERR_LEN, "OpenGL runs on %s, not on CUDA device %d", renderer ? renderer : "another GPU", current);
  return false;
}

/* ---- EGL: found at run time in the libEGL SDL loaded, so that GLX-only systems need none ---- */
#ifdef INKRAY_HAVE_EGL
typedef EGLDisplay (*egl_get_display_fn)(void);
typedef EGLContext (*egl_get_context_fn)(void);
typedef const char *(*egl_query_string_fn)(EGLDisplay, EGLint);
typedef wnd_egl_proc (*egl_get_proc_fn)(const char *);

/* dlsym's object pointer as the function pointer it is (ISO C has no cast between the two). */
static void *lookup(void *lib, const char *name, void *fn, size_t fn_size) {
  void *symbol = dlsym(lib, name);
  memset(fn, 0, fn_size);
  if (symbol && fn_size == sizeof symbol) memcpy(fn, &symbol, sizeof symbol);
  return symbol;
}

/* The current context's display and context when it is an EGL one with GL-texture EGLImages;
 * false with the reason otherwise. */
static bool egl_setup(wnd_present *p, char err[IR_ERR_LEN]) {
  /* RTLD_NOLOAD: only a libEGL already in the process (SDL loads it for an EGL context). */
  void *lib = dlopen("libEGL.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!lib) {
    snprintf(err, IR_ERR_LEN, "the GL context is not an EGL one (GLX)");
    return false;
  }
  egl_get_display_fn get_display;
  egl_get_context_fn get_context;
  egl_query_string_fn query;
  egl_get_proc_fn get_proc;
  lookup(lib, "eglGetCurrentDisplay", &get_display, sizeof get_display);
  lookup(lib, "eglGetCurrentContext", &get_context, sizeof get_context);
  lookup(lib, "eglQueryString", &query, sizeof query);
  lookup(lib, "eglGetProcAddress", &get_proc, sizeof get_proc);
  EGLDisplay display = get_display ? get_display() : EGL_NO_DISPLAY;
  EGLContext context = get_context ? get_context() : EGL_NO_CONTEXT;
  p->egl_library = lib;
  if (display == EGL_NO_DISPLAY || context == EGL_NO_CONTEXT || !query || !get_proc) {
    snprintf(err, IR_ERR_LEN, "the GL context is not an EGL one (no current EGL context)");
    return false;
  }
  const char *extensions = query(display, EGL_EXTENSIONS);
  if (!extensions || !strstr(extensions, "EGL_KHR_gl_texture_2D_image")) {
    snprintf(err, IR_ERR_LEN, "the EGL display lacks EGL_KHR_gl_texture_2D_image");
    return false;
  }
  p->egl_create_image = get_proc("eglCreateImageKHR");
  p->egl_destroy_image = get_proc("eglDestroyImageKHR");
  if (!p->egl_create_image || !p->egl_destroy_image) {
    snprintf(err, IR_ERR_LEN, "EGL has no eglCreateImageKHR");
    return false;
  }
  p->egl_display = display;
  p->egl_context = context;
  p->egl_create_sync = get_proc("eglCreateSync");
  p->egl_destroy_sync = get_proc("eglDestroySync");
  p->egl_wait_sync = get_proc("eglWaitSync");
  bool syncs = p->egl_create_sync && p->egl_destroy_sync;
  p->gl_waits_cuda = syncs && p->egl_wait_sync && strstr(extensions, "EGL_NV_cuda_event") &&
                     strstr(extensions, "EGL_KHR_wait_sync");
  p->cuda_waits_gl = syncs && strstr(extensions, "EGL_KHR_fence_sync");
  return true;
}

typedef EGLSync (*egl_create_sync_fn)(EGLDisplay, EGLenum, const EGLAttrib *);
typedef EGLBoolean (*egl_destroy_sync_fn)(EGLDisplay, EGLSync);
typedef EGLBoolean (*egl_wait_sync_fn)(EGLDisplay, EGLSync, EGLint);

static EGLSync egl_sync_create(wnd_present *p, EGLenum type, const EGLAttrib *attributes) {
  egl_create_sync_fn fn;
  memcpy(&fn, &p->egl_create_sync, sizeof fn);
  return fn((EGLDisplay)p->egl_display, type, attributes);
}

static void egl_sync_destroy(wnd_present *p, void *sync) {
  if (!sync) return;
  egl_destroy_sync_fn fn;
  memcpy(&fn, &p->egl_destroy_sync, sizeof fn);
  fn((EGLDisplay)p->egl_display, (EGLSync)sync);
}

/* GL's next commands wait on the GPU for the slot's frame (its CUDA event); false if EGL
 * refuses, with the reason. */
static bool egl_gl_wait_frame(wnd_present *p, wnd_frame_slot *s, char err[IR_ERR_LEN]) {
  const EGLAttrib attributes[] = {EGL_CUDA_EVENT_HANDLE_NV, (EGLAttrib)(uintptr_t)s->copied, EGL_NONE};
  EGLSync sync = egl_sync_create(p, EGL_SYNC_CUDA_EVENT_NV, attributes);
  if (sync == EGL_NO_SYNC) {
    snprintf(err, IR_ERR_LEN, "eglCreateSync refused a CUDA event");
    return false;
  }
  egl_wait_sync_fn wait;
  memcpy(&wait, &p->egl_wait_sync, sizeof wait);
  EGLBoolean ok = wait((EGLDisplay)p->egl_display, sync, 0);
  egl_sync_destroy(p, sync); /* deleted once the wait is over (EGL 1.5) */
  if (!ok) snprintf(err, IR_ERR_LEN, "eglWaitSync failed on a CUDA event");
  return ok;
}
#endif

/* ---- Slots ------------------------------------------------------------------------------------- */
static void slot_release_interop(wnd_present *p, wnd_frame_slot *s) {
  if (s->surface) cudaDestroySurfaceObject((cudaSurfaceObject_t)s->surface);
  s->surface = 0;
  if (s->resource) cudaGraphicsUnregisterResource(s->resource);
  s->resource = NULL;
  s->array = NULL;
#ifdef INKRAY_HAVE_EGL
  if (s->egl_image) ((PFNEGLDESTROYIMAGEKHRPROC)p->egl_destroy_image)((EGLDisplay)p->egl_display, (EGLImageKHR)s->egl_image);
#else
  (void)p;
#endif
  s->egl_image = NULL;
}

static void slot_free(wnd_present *p, wnd_frame_slot *s) {
  slot_release_interop(p, s);
#ifdef INKRAY_HAVE_EGL
  egl_sync_destroy(p, s->egl_fence);
  egl_sync_destroy(p, s->fence_used);
#endif
  if (s->fence_event) cudaEventDestroy(s->fence_event);
  if (s->drawn) glDeleteSync((GLsync)s->drawn);
  if (s->copied) cudaEventDestroy(s->copied);
  if (s->pbo) glDeleteBuffers(1, &s->pbo);
  if (s->texture) glDeleteTextures(1, &s->texture);
  *s = (wnd_frame_slot){0};
}

static bool slot_texture(wnd_frame_slot *s, int width, int height, char err[IR_ERR_LEN]) {
  if (!s->texture) {
    glGenTextures(1, &s->texture);
    glBindTexture(GL_TEXTURE_2D, s->texture);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    /* One level and no mipmap filter: a complete texture (an EGLImage needs one). */
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAX_LEVEL, 0);
    glBindTexture(GL_TEXTURE_2D, 0);
  }
  if (s->width == width && s->height == height) return true;
  glBindTexture(GL_TEXTURE_2D, s->texture);
  glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, width, height, 0, GL_RGBA, GL_UNSIGNED_BYTE, NULL);
  glBindTexture(GL_TEXTURE_2D, 0);
  s->width = width;
  s->height = height;
  char what[64];
  snprintf(what, sizeof what, "sizing a frame texture to %dx%d", width, height);
  return wnd_gl_check(what, err);
}

/* Whether GL is done drawing the slot, without waiting. */
static bool slot_drawn(wnd_frame_slot *s) {
  if (!s->drawn) return true;
  GLenum r = glClientWaitSync((GLsync)s->drawn, 0, 0);
  if (r != GL_ALREADY_SIGNALED && r != GL_CONDITION_SATISFIED) return false;
  glDeleteSync((GLsync)s->drawn);
  s->drawn = NULL;
  return true;
}

/* GL must be done drawing the slot before anything writes it again. */
static bool slot_wait_drawn(wnd_frame_slot *s, char err[IR_ERR_LEN]) {
  if (!s->drawn) return true;
  GLenum r = glClientWaitSync((GLsync)s->drawn, GL_SYNC_FLUSH_COMMANDS_BIT, FENCE_TIMEOUT_NS);
  glDeleteSync((GLsync)s->drawn);
  s->drawn = NULL;
  if (r == GL_WAIT_FAILED || r == GL_TIMEOUT_EXPIRED) {
    snprintf(err, IR_ERR_LEN, "OpenGL did not finish drawing a frame within %.0f s (%s)", FENCE_TIMEOUT_NS / 1e9,
             r == GL_WAIT_FAILED ? "wait failed" : "timed out");
    return false;
  }
  return true;
}

#ifdef INKRAY_HAVE_EGL
/* The slot's texture as an EGLImage registered with CUDA, and its array. */
static bool slot_egl_register(wnd_present *p, wnd_frame_slot *s, char err[IR_ERR_LEN]) {
  const EGLint attributes[] = {EGL_GL_TEXTURE_LEVEL_KHR, 0, EGL_NONE};
  EGLImageKHR image = ((PFNEGLCREATEIMAGEKHRPROC)p->egl_create_image)(
      (EGLDisplay)p->egl_display, (EGLContext)p->egl_context, EGL_GL_TEXTURE_2D_KHR, (EGLClientBuffer)(uintptr_t)s->texture, attributes);
  if (image == EGL_NO_IMAGE_KHR) {
    snprintf(err, IR_ERR_LEN, "eglCreateImageKHR refused the frame texture");
    return false;
  }
  s->egl_image = image;
  /* GL's work on the texture (its storage just made) must be done before CUDA takes it; this
   * happens once per texture and size. */
  glFinish();
  /* Surface writes need the load/store flag where the driver knows it; else plain registration
   * (the surface is then tried anyway, and a refusal means copies: slot_egl_prepare). */
  if (cudaGraphicsEGLRegisterImage(&s->resource, image, cudaGraphicsRegisterFlagsSurfaceLoadStore) != cudaSuccess) {
    cudaGetLastError();
    s->resource = NULL;
    CUDA_TRY(cudaGraphicsEGLRegisterImage(&s->resource, image, cudaGraphicsRegisterFlagsNone));
  }
  cudaEglFrame frame;
  memset(&frame, 0, sizeof frame);
  CUDA_TRY(cudaGraphicsResourceGetMappedEglFrame(&frame, s->resource, 0, 0));
  if (frame.frameType != cudaEglFrameTypeArray || frame.planeCount < 1 || !frame.frame.pArray[0]) {
    snprintf(err, IR_ERR_LEN, "the registered EGLImage is not one CUDA array (frame type %d, %u planes)",
             (int)frame.frameType, frame.planeCount);
    return false;
  }
  s->array = frame.frame.pArray[0];
  return true;
}
#endif

#ifdef INKRAY_HAVE_EGL
/* The slot ready for a width x height frame: its texture registered with CUDA and, unless the
 * driver refused one before, a surface object on its array for the renderer to write. */
static bool slot_egl_prepare(wnd_present *p, wnd_frame_slot *s, int width, int height, char err[IR_ERR_LEN]) {
  if (s->width != width || s->height != height) slot_release_interop(p, s); /* the registration is of the old storage */
  if (!slot_texture(s, width, height, err)) return false;
  if (!s->copied) CUDA_TRY(cudaEventCreateWithFlags(&s->copied, cudaEventDisableTiming));
  if (!s->resource && !slot_egl_register(p, s, err)) return false;
  if (s->surface || p->egl_copy) return true;
  struct cudaResourceDesc res;
  memset(&res, 0, sizeof res);
  res.resType = cudaResourceTypeArray;
  res.res.array.array = s->array;
  cudaSurfaceObject_t surface = 0;
  cudaError_t e = cudaCreateSurfaceObject(&surface, &res);
  if (e != cudaSuccess) {
    cudaGetLastError();
    p->egl_copy = true;
    fprintf(stderr, "inkray: note: CUDA cannot write the EGLImage textures directly (%s); copying each frame into them\n",
            cudaGetErrorString(e));
    return true;
  }
  s->surface = surface;
  return true;
}
#endif

/* Whether the slot's frame is done on the GPU, without waiting (egl-image path). */
static bool slot_done(wnd_frame_slot *s) {
  if (s->done) return true;
  cudaError_t e = cudaEventQuery(s->copied);
  if (e == cudaErrorNotReady) cudaGetLastError(); /* not a failure: no later check may read it as one */
  s->done = e == cudaSuccess;
  return s->done;
}

/* Waits for the slot's frame (the ring is full, or the newest frame is wanted now). */
static bool slot_wait_done(wnd_frame_slot *s, char err[IR_ERR_LEN]) {
  if (s->done) return true;
  cudaError_t e = cudaEventSynchronize(s->copied);
  if (e != cudaSuccess) {
    snprintf(err, IR_ERR_LEN, "waiting for a frame to be done on the GPU failed: %s", cudaGetErrorString(e));
    return false;
  }
  s->done = true;
  return true;
}

/* The slot's pixel buffer, `bytes` long, registered with CUDA. */
static bool slot_pbo_register(wnd_frame_slot *s, size_t bytes, char err[IR_ERR_LEN]) {
  if (s->resource && s->pbo_bytes >= bytes) return true;
  if (s->resource) cudaGraphicsUnregisterResource(s->resource);
  s->resource = NULL;
  if (!s->pbo) glGenBuffers(1, &s->pbo);
  glBindBuffer(GL_PIXEL_UNPACK_BUFFER, s->pbo);
  glBufferData(GL_PIXEL_UNPACK_BUFFER, (GLsizeiptr)bytes, NULL, GL_STREAM_DRAW);
  glBindBuffer(GL_PIXEL_UNPACK_BUFFER, 0);
  if (!wnd_gl_check("sizing a pixel buffer for CUDA-GL interop", err)) return false;
  s->pbo_bytes = bytes;
  /* Write-discard: CUDA overwrites the whole buffer every frame, so the driver keeps no copy. */
  CUDA_TRY(cudaGraphicsGLRegisterBuffer(&s->resource, s->pbo, cudaGraphicsRegisterFlagsWriteDiscard));
  return true;
}

#ifdef INKRAY_HAVE_EGL
/* A slot the next frame may go into: neither the one shown nor one holding a frame not shown
 * yet. With the ring full (the shown slot and two frames in flight) the CPU waits for the oldest
 * frame in flight: it, or a newer one, is drawn next, so the shown slot is free. Then GL must be
 * done drawing the slot (its fence, normally passed long ago). -1 with the reason on failure. */
static int egl_acquire(wnd_present *p, char err[IR_ERR_LEN]) {
  int k = -1, oldest = -1;
  for (int j = 0; j < p->ring; j++) {
    wnd_frame_slot *s = &p->slots[j];
    if (s->pending && (oldest < 0 || s->serial < p->slots[oldest].serial)) oldest = j;
    if (j == p->shown || s->pending) continue;
    /* A free slot GL is done with is best; one it is still drawing would make the CPU wait. */
    if (slot_drawn(s)) {
      k = j;
      break;
    }
    if (k < 0) k = j;
  }
  if (k < 0) {
    if (oldest < 0 || p->shown < 0) {
      snprintf(err, IR_ERR_LEN, "the frame ring is in an impossible state (shown %d, oldest %d)", p->shown, oldest);
      return -1;
    }
    if (!slot_wait_done(&p->slots[oldest], err)) return -1;
    p->ring_waits++;
    k = p->shown;
    p->shown = -1; /* no longer drawn: a finished frame is waiting */
  }
  if (!slot_drawn(&p->slots[k])) p->gl_waits++;
  if (!slot_wait_drawn(&p->slots[k], err)) return -1;
  return k;
}

/* GPU synchronisation given up (EGL or CUDA refused a sync): everything drained, the EGL fences
 * gone; the CPU waits of egl_acquire and egl_ready from here on. */
static void gpu_sync_off(wnd_present *p, bool both, const char *why) {
  fprintf(stderr, "inkray: note: --present-sync gpu: %s; the CPU %s instead\n", why,
          both ? "synchronises the display" : "waits for OpenGL before a texture is written again");
  if (both) p->gl_waits_cuda = false;
  p->cuda_waits_gl = false;
  glFinish();
  cudaDeviceSynchronize();
  for (int k = 0; k < WND_PRESENT_RING_MAX; k++) {
    wnd_frame_slot *s = &p->slots[k];
    egl_sync_destroy(p, s->egl_fence);
    egl_sync_destroy(p, s->fence_used);
    if (s->fence_event) cudaEventDestroy(s->fence_event);
    s->egl_fence = s->fence_used = NULL;
    s->fence_event = NULL;
  }
}

/* --present-sync gpu: the slots in turn. The CPU waits only for the frame last in the slot (the
 * ring bounds the frames in flight); GL's use of the slot is waited for by the renderer on the
 * device (`wait_event`), or where CUDA cannot take EGL fences, by the CPU. */
static int gpu_sync_acquire(wnd_present *p, void **wait_event, char err[IR_ERR_LEN]) {
  int k = p->next;
  p->next = (p->next + 1) % p->ring;
  wnd_frame_slot *s = &p->slots[k];
  if (s->serial && s->copied && !slot_done(s)) {
    p->ring_waits++;
    if (!slot_wait_done(s, err)) return -1;
  }
  /* The frame that waited for these is done. */
  if (s->fence_event) cudaEventDestroy(s->fence_event);
  egl_sync_destroy(p, s->fence_used);
  s->fence_event = NULL;
  s->fence_used = NULL;
  if (s->egl_fence) {
    cudaEvent_t event = NULL;
    cudaError_t e = cudaEventCreateFromEGLSync(&event, (EGLSyncKHR)s->egl_fence, cudaEventDefault);
    if (e != cudaSuccess) {
      cudaGetLastError();
      char why[IR_ERR_LEN];
      snprintf(why, sizeof why, "CUDA cannot wait for EGL fences (%s)", cudaGetErrorString(e));
      gpu_sync_off(p, false, why); /* GL drained: nothing left to wait for */
    } else {
      s->fence_used = s->egl_fence;
      s->egl_fence = NULL;
      s->fence_event = event;
      *wait_event = event;
    }
  }
  if (!slot_wait_drawn(s, err)) return -1;
  return k;
}

/* The copy of the renderer's own image into the slot, where surfaces are refused. */
static bool egl_copy(wnd_frame_slot *s, const ir_renderer *renderer, char err[IR_ERR_LEN]) {
  const void *image = ir_render_device_image(renderer);
  if (!image) {
    snprintf(err, IR_ERR_LEN, "the renderer gave no device image");
    return false;
  }
  size_t row = (size_t)s->width * 4;
  CUDA_TRY(cudaMemcpy2DToArrayAsync(s->array, 0, 0, image, row, row, (size_t)s->height, cudaMemcpyDeviceToDevice,
                                    PRESENT_STREAM));
  return true;
}
#endif

/* The renderer's image into the slot's pixel buffer, queued on PRESENT_STREAM (the CPU does not
 * wait): the pbo path. */
static bool interop_fill(wnd_frame_slot *s, const ir_renderer *renderer, int width, int height, char err[IR_ERR_LEN]) {
  const void *image = ir_render_device_image(renderer);
  if (!image) {
    snprintf(err, IR_ERR_LEN, "the renderer gave no device image");
    return false;
  }
  if (!slot_wait_drawn(s, err)) return false;
  if (!slot_texture(s, width, height, err)) return false;
  size_t row = (size_t)width * 4, bytes = row * (size_t)height;
  if (!slot_pbo_register(s, bytes, err)) return false;
  CUDA_TRY(cudaGraphicsMapResources(1, &s->resource, PRESENT_STREAM));
  void *mapped = NULL;
  size_t mapped_bytes = 0;
  cudaError_t e = cudaGraphicsResourceGetMappedPointer(&mapped, &mapped_bytes, s->resource);
  if (e == cudaSuccess && mapped_bytes < bytes) e = cudaErrorInvalidValue;
  if (e == cudaSuccess) e = cudaMemcpyAsync(mapped, image, bytes, cudaMemcpyDeviceToDevice, PRESENT_STREAM);
  cudaError_t unmap = cudaGraphicsUnmapResources(1, &s->resource, PRESENT_STREAM);
  if (e != cudaSuccess || unmap != cudaSuccess) {
    snprintf(err, IR_ERR_LEN, "copying the frame into a mapped pixel buffer failed: %s",
             cudaGetErrorString(e != cudaSuccess ? e : unmap));
    return false;
  }
  s->pbo_pending = true;
  return true;
}

static bool host_fill(wnd_present *p, wnd_frame_slot *s, ir_renderer *renderer, int width, int height,
                      char err[IR_ERR_LEN]) {
  size_t bytes = (size_t)width * (size_t)height * 4;
  if (bytes > p->host_bytes) {
    uint8_t *grown = realloc(p->host, bytes);
    if (!grown) {
      snprintf(err, IR_ERR_LEN, "out of memory for a %dx%d frame", width, height);
      return false;
    }
    p->host = grown;
    p->host_bytes = bytes;
  }
  if (ir_render_read_image(renderer, p->host, err) != IR_OK) return false;
  if (!slot_texture(s, width, height, err)) return false;
  glBindTexture(GL_TEXTURE_2D, s->texture);
  glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, p->host);
  glBindTexture(GL_TEXTURE_2D, 0);
  return wnd_gl_check("filling the frame texture from host memory", err);
}

/* ---- The ring ---------------------------------------------------------------------------------- */
static void release_slots(wnd_present *p) {
  for (int k = 0; k < WND_PRESENT_RING_MAX; k++) slot_free(p, &p->slots[k]);
  p->next = 0;
  p->shown = -1;
  p->target = -1;
}

/* Drops the interop path in use for the next one, saying why once. */
static void fall_back(wnd_present *p, const char *why) {
  wnd_present_path next = p->path == WND_PRESENT_EGL ? WND_PRESENT_PBO : WND_PRESENT_HOST;
  fprintf(stderr, "inkray: %s failed, showing frames through %s: %s\n", wnd_present_path_name(p->path),
          wnd_present_path_name(next), why);
  snprintf(p->why_host, sizeof p->why_host, "%s failed: %.400s", wnd_present_path_name(p->path), why);
  /* Copies in flight must land before their buffers go. */
  cudaDeviceSynchronize();
  glFinish();
  release_slots(p);
  p->path = next;
}

void wnd_present_setup(wnd_present *p, const wnd_present_desc *desc) {
  *p = (wnd_present){.shown = -1, .target = -1};
  int ring = desc->ring;
  p->ring = ring < 2 ? WND_PRESENT_RING : ring > WND_PRESENT_RING_MAX ? WND_PRESENT_RING_MAX : ring;
  p->fifo = desc->fifo;
  bool gpu_renderer = desc->gpu_renderer, path_given = desc->path_given;
  wnd_present_path path = desc->path;
  p->path = WND_PRESENT_HOST;
  if (!gpu_renderer) {
    if (path_given && path != WND_PRESENT_HOST)
      fprintf(stderr, "inkray: note: --present %s needs the GPU renderer; showing frames through host-copy\n",
              wnd_present_path_name(path));
    return;
  }
  char why[IR_ERR_LEN] = {0};
  if (path_given && path == WND_PRESENT_HOST) return;
  if (!same_nvidia_gpu(why)) {
    snprintf(p->why_host, sizeof p->why_host, "%s", why);
    fprintf(stderr, "inkray: showing frames through a host copy: %s\n", why);
    return;
  }
  p->path = WND_PRESENT_PBO;
  if (path_given && path == WND_PRESENT_PBO) return;
#ifdef INKRAY_HAVE_EGL
  if (egl_setup(p, why)) {
    p->path = WND_PRESENT_EGL;
    if (!desc->gpu_sync) p->gl_waits_cuda = p->cuda_waits_gl = false;
    else if (!p->gl_waits_cuda)
      fprintf(stderr, "inkray: note: --present-sync gpu: EGL offers no GPU wait for CUDA events "
                      "(EGL_NV_cuda_event, EGL_KHR_wait_sync); the CPU synchronises the display\n");
    return;
  }
#else
  snprintf(why, sizeof why, "built without EGL headers");
#endif
  if (path_given) fprintf(stderr, "inkray: note: --present egl-image is not available (%s); using pbo\n", why);
  snprintf(p->why_pbo, sizeof p->why_pbo, "%s", why);
}

bool wnd_present_target(wnd_present *p, int width, int height, unsigned long long *surface, void **wait_event,
                        char err[IR_ERR_LEN]) {
  *surface = 0;
  *wait_event = NULL;
  p->target = -1;
#ifdef INKRAY_HAVE_EGL
  if (p->path == WND_PRESENT_EGL) {
    char why[IR_ERR_LEN] = {0};
    int k = p->gl_waits_cuda ? gpu_sync_acquire(p, wait_event, why) : -2;
    if (k == -2) k = egl_acquire(p, why);
    if (k >= 0 && slot_egl_prepare(p, &p->slots[k], width, height, why)) {
      p->target = k;
      *surface = p->slots[k].surface;
      return true;
    }
    fall_back(p, why);
  }
#else
  (void)width;
  (void)height;
#endif
  (void)err;
  return true;
}

void wnd_present_refuse_surfaces(wnd_present *p, const char *why) {
  if (p->egl_copy) return;
  fprintf(stderr, "inkray: note: rendering into the frame textures failed (%s); copying each frame into them\n", why);
  p->egl_copy = true;
  cudaDeviceSynchronize(); /* nothing may still write through the surfaces */
  for (int k = 0; k < p->ring; k++)
    if (p->slots[k].surface) {
      cudaDestroySurfaceObject((cudaSurfaceObject_t)p->slots[k].surface);
      p->slots[k].surface = 0;
    }
}

bool wnd_present_submit(wnd_present *p, ir_renderer *renderer, int width, int height, char err[IR_ERR_LEN]) {
  if (p->path == WND_PRESENT_HOST) {
    p->next = 0;
    if (!host_fill(p, &p->slots[0], renderer, width, height, err)) return false;
    p->slots[0].pending = true;
    p->slots[0].serial = ++p->serial;
    return true;
  }
#ifdef INKRAY_HAVE_EGL
  if (p->path == WND_PRESENT_EGL) {
    unsigned long long surface = 0;
    void *wait_event = NULL;
    if (p->target < 0 && !wnd_present_target(p, width, height, &surface, &wait_event, err)) return false;
    if (wait_event) /* a frame that went into the renderer's image: the copy waits instead */
      CUDA_TRY(cudaStreamWaitEvent(PRESENT_STREAM, (cudaEvent_t)wait_event, 0));
    if (p->path == WND_PRESENT_EGL) {
      wnd_frame_slot *s = &p->slots[p->target];
      char why[IR_ERR_LEN] = {0};
      bool ok = s->surface || egl_copy(s, renderer, why);
      cudaError_t e = ok ? cudaEventRecord(s->copied, PRESENT_STREAM) : cudaSuccess;
      if (ok && e == cudaSuccess) {
        s->pending = true;
        s->done = false;
        s->serial = ++p->serial;
        p->target = -1;
        return true;
      }
      if (e != cudaSuccess) snprintf(why, sizeof why, "cudaEventRecord failed: %s", cudaGetErrorString(e));
      fall_back(p, why);
    }
    if (p->path == WND_PRESENT_HOST) return wnd_present_submit(p, renderer, width, height, err);
  }
#endif
  for (;;) {
    wnd_frame_slot *s = &p->slots[p->next];
    char why[IR_ERR_LEN] = {0};
    if (interop_fill(s, renderer, width, height, why)) {
      s->pending = true;
      s->serial = ++p->serial;
      p->next = (p->next + 1) % p->ring;
      return true;
    }
    fall_back(p, why);
    if (p->path == WND_PRESENT_HOST) return wnd_present_submit(p, renderer, width, height, err);
  }
}

/* Marks `pick` shown, dropping the frames older than it (never drawn: a newer one is done). */
static wnd_frame_slot *show(wnd_present *p, int pick) {
  for (int k = 0; k < p->ring; k++)
    if (p->slots[k].pending && p->slots[k].serial < p->slots[pick].serial) {
      p->slots[k].pending = false;
      p->dropped++;
    }
  wnd_frame_slot *s = &p->slots[pick];
  s->pending = false;
  p->shown = pick;
  p->frames_shown++;
  return s;
}

/* egl-image: the newest frame done on the GPU, found without waiting; while none is, the one
 * shown before again. Waits only with `latest` (for the newest) or before the first frame. */
static const wnd_frame_slot *egl_ready(wnd_present *p, bool latest, char err[IR_ERR_LEN]) {
  int newest = -1, newest_done = -1, oldest = -1;
  for (int k = 0; k < p->ring; k++) {
    wnd_frame_slot *s = &p->slots[k];
    if (!s->pending) continue;
    if (newest < 0 || s->serial > p->slots[newest].serial) newest = k;
    if (oldest < 0 || s->serial < p->slots[oldest].serial) oldest = k;
  }
#ifdef INKRAY_HAVE_EGL
  /* GPU synchronisation: the frame just submitted, drawn once it is done, GL waiting on the GPU. */
  if (p->gl_waits_cuda && newest >= 0) {
    char why[IR_ERR_LEN] = {0};
    if (egl_gl_wait_frame(p, &p->slots[newest], why)) return show(p, newest);
    gpu_sync_off(p, true, why);
  }
#endif
  if (newest >= 0 && !latest)
    for (int k = 0; k < p->ring; k++) {
      wnd_frame_slot *s = &p->slots[k];
      if (s->pending && (newest_done < 0 || s->serial > p->slots[newest_done].serial) && slot_done(s)) newest_done = k;
    }
  /* fifo: the oldest frame not shown, once done; nothing while it is not (waited for only when
   * nothing is on the screen: the first frame, or the shown slot taken for a full ring's next). */
  if (p->fifo && !latest && oldest >= 0) {
    if (slot_done(&p->slots[oldest])) return show(p, oldest);
    if (p->shown >= 0) {
      p->idle++;
      err[0] = '\0';
      return NULL;
    }
    return slot_wait_done(&p->slots[oldest], err) ? show(p, oldest) : NULL;
  }
  int pick = latest ? newest : newest_done;
  if (pick < 0 && p->shown >= 0) {
    p->repeats++;
    return &p->slots[p->shown];
  }
  if (pick < 0) pick = oldest; /* nothing shown yet */
  if (pick < 0) {
    snprintf(err, IR_ERR_LEN, "no frame to show (none was submitted)");
    return NULL;
  }
  /* EGLImages have no implicit synchronisation: the frame must be done before GL samples it. */
  if (!slot_wait_done(&p->slots[pick], err)) return NULL;
  return show(p, pick);
}

const wnd_frame_slot *wnd_present_ready(wnd_present *p, bool latest, char err[IR_ERR_LEN]) {
  if (p->path == WND_PRESENT_EGL) return egl_ready(p, latest, err);
  int oldest = -1, newest = -1, waiting = 0;
  for (int k = 0; k < p->ring; k++) {
    const wnd_frame_slot *s = &p->slots[k];
    if (!s->pending) continue;
    waiting++;
    if (oldest < 0 || s->serial < p->slots[oldest].serial) oldest = k;
    if (newest < 0 || s->serial > p->slots[newest].serial) newest = k;
  }
  /* The pbo path keeps the newest frame back while an older one is shown, so that it renders
   * while GL draws the other: with only the newest waiting, the last shown one is drawn again
   * (once, after the first frame or a `latest`). The host copy has nothing to overlap. */
  bool overlap = p->path != WND_PRESENT_HOST && !latest;
  if (overlap && waiting == 1 && p->shown >= 0) {
    p->repeats++;
    return &p->slots[p->shown];
  }
  int pick = overlap && waiting >= 2 ? oldest : newest;
  if (pick < 0) {
    if (p->shown >= 0) return &p->slots[p->shown];
    snprintf(err, IR_ERR_LEN, "no frame to show (none was submitted)");
    return NULL;
  }
  wnd_frame_slot *s = show(p, pick);
  if (p->path == WND_PRESENT_PBO && s->pbo_pending) {
    /* The unmap ordered the CUDA copy before this GL command. */
    glBindTexture(GL_TEXTURE_2D, s->texture);
    glBindBuffer(GL_PIXEL_UNPACK_BUFFER, s->pbo);
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, s->width, s->height, GL_RGBA, GL_UNSIGNED_BYTE, NULL);
    glBindBuffer(GL_PIXEL_UNPACK_BUFFER, 0);
    glBindTexture(GL_TEXTURE_2D, 0);
    s->pbo_pending = false;
    if (!wnd_gl_check("filling a frame texture from its pixel buffer", err)) return NULL;
  }
  return s;
}

bool wnd_present_has_newer(const wnd_present *p) {
  for (int k = 0; k < p->ring; k++)
    if (p->slots[k].pending) return true;
  return false;
}

void wnd_present_drawn(wnd_present *p) {
  if (p->shown < 0 || p->path == WND_PRESENT_HOST) return;
  wnd_frame_slot *s = &p->slots[p->shown];
#ifdef INKRAY_HAVE_EGL
  if (p->path == WND_PRESENT_EGL && p->gl_waits_cuda && p->cuda_waits_gl) {
    egl_sync_destroy(p, s->egl_fence); /* drawn again before its fence was handed over */
    s->egl_fence = egl_sync_create(p, EGL_SYNC_FENCE, NULL);
    if (s->egl_fence) {
      glFlush(); /* the fence must reach the GPU before CUDA waits for it */
      return;
    }
    gpu_sync_off(p, false, "eglCreateSync refused a fence");
  }
#endif
  if (s->drawn) glDeleteSync((GLsync)s->drawn);
  s->drawn = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
}

void wnd_present_shutdown(wnd_present *p) {
  if (p->path != WND_PRESENT_HOST) {
    cudaDeviceSynchronize();
    glFinish();
  }
  release_slots(p);
  free(p->host);
  if (p->egl_library) dlclose(p->egl_library);
  *p = (wnd_present){.shown = -1, .target = -1};
}

bool wnd_present_interop(const wnd_present *p) { return p->path != WND_PRESENT_HOST; }
