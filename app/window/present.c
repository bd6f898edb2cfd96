/* Getting rendered frames into the window, without holding the renderer up.
 *
 * Frames go through a ring of WND_PRESENT_RING slots, each a texture of its own: frame N is
 * copied into one slot while the slot holding frame N-1 is drawn, so that on the GPU the render
 * of one frame and the display of the one before overlap, and nothing on a frame's path waits
 * for the GPU. Three paths fill the slots:
 *
 *   egl-image  The GL context is NVIDIA's through EGL (SDL's offscreen or Wayland video, or X11
 *              with EGL): each slot's texture is an EGLImage registered with CUDA once
 *              (cudaGraphicsEGLRegisterImage), which needs no map or unmap afterwards. A frame
 *              is one asynchronous device-to-device copy from the renderer's image into the
 *              texture's array, on the legacy default stream (ordered after the renderer's
 *              work and before its next frame, which overwrites the image), and an event.
 *              Synchronisation is ours: the slot is drawn once its event has completed, and
 *              written again only after GL has passed the fence set when it was drawn (three
 *              slots, so that fence is two frames old and never waits in practice).
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
  return true;
}
#endif

/* ---- Slots ------------------------------------------------------------------------------------- */
static void slot_release_interop(wnd_present *p, wnd_frame_slot *s) {
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
  CUDA_TRY(cudaGraphicsEGLRegisterImage(&s->resource, image, cudaGraphicsRegisterFlagsNone));
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

/* The renderer's image into the slot, queued on PRESENT_STREAM (the CPU does not wait). */
static bool interop_fill(wnd_present *p, wnd_frame_slot *s, const ir_renderer *renderer, int width, int height,
                         char err[IR_ERR_LEN]) {
  const void *image = ir_render_device_image(renderer);
  if (!image) {
    snprintf(err, IR_ERR_LEN, "the renderer gave no device image");
    return false;
  }
  if (!slot_wait_drawn(s, err)) return false;
  bool resized = s->width != width || s->height != height;
  if (resized) slot_release_interop(p, s); /* the registration is of the old storage */
  if (!slot_texture(s, width, height, err)) return false;
  if (!s->copied) CUDA_TRY(cudaEventCreateWithFlags(&s->copied, cudaEventDisableTiming));
  size_t row = (size_t)width * 4, bytes = row * (size_t)height;
#ifdef INKRAY_HAVE_EGL
  if (p->path == WND_PRESENT_EGL) {
    if (!s->resource && !slot_egl_register(p, s, err)) return false;
    CUDA_TRY(cudaMemcpy2DToArrayAsync(s->array, 0, 0, image, row, row, (size_t)height, cudaMemcpyDeviceToDevice,
                                      PRESENT_STREAM));
    CUDA_TRY(cudaEventRecord(s->copied, PRESENT_STREAM));
    return true;
  }
#endif
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
  for (int k = 0; k < WND_PRESENT_RING; k++) slot_free(p, &p->slots[k]);
  p->next = 0;
  p->shown = -1;
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

void wnd_present_setup(wnd_present *p, bool gpu_renderer, bool path_given, wnd_present_path path) {
  *p = (wnd_present){.shown = -1};
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
    return;
  }
#else
  snprintf(why, sizeof why, "built without EGL headers");
#endif
  if (path_given) fprintf(stderr, "inkray: note: --present egl-image is not available (%s); using pbo\n", why);
  snprintf(p->why_pbo, sizeof p->why_pbo, "%s", why);
}

bool wnd_present_submit(wnd_present *p, ir_renderer *renderer, int width, int height, char err[IR_ERR_LEN]) {
  if (p->path == WND_PRESENT_HOST) {
    p->next = 0;
    if (!host_fill(p, &p->slots[0], renderer, width, height, err)) return false;
    p->slots[0].pending = true;
    p->slots[0].serial = ++p->serial;
    return true;
  }
  for (;;) {
    wnd_frame_slot *s = &p->slots[p->next];
    char why[IR_ERR_LEN] = {0};
    if (interop_fill(p, s, renderer, width, height, why)) {
      s->pending = true;
      s->serial = ++p->serial;
      p->next = (p->next + 1) % WND_PRESENT_RING;
      return true;
    }
    fall_back(p, why);
    if (p->path == WND_PRESENT_HOST) return wnd_present_submit(p, renderer, width, height, err);
  }
}

const wnd_frame_slot *wnd_present_ready(wnd_present *p, bool latest, char err[IR_ERR_LEN]) {
  int oldest = -1, newest = -1, waiting = 0;
  for (int k = 0; k < WND_PRESENT_RING; k++) {
    const wnd_frame_slot *s = &p->slots[k];
    if (!s->pending) continue;
    waiting++;
    if (oldest < 0 || s->serial < p->slots[oldest].serial) oldest = k;
    if (newest < 0 || s->serial > p->slots[newest].serial) newest = k;
  }
  /* The GPU paths keep the newest frame back while an older one is shown, so that it renders
   * while GL draws the other: with only the newest waiting, the last shown one is drawn again
   * (once, after the first frame or a `latest`). The host copy has nothing to overlap. */
  bool overlap = p->path != WND_PRESENT_HOST && !latest;
  if (overlap && waiting == 1 && p->shown >= 0) return &p->slots[p->shown];
  int pick = overlap && waiting >= 2 ? oldest : newest;
  if (pick < 0) {
    if (p->shown >= 0) return &p->slots[p->shown];
    snprintf(err, IR_ERR_LEN, "no frame to show (none was submitted)");
    return NULL;
  }
  /* Frames older than the one shown are dropped. */
  for (int k = 0; k < WND_PRESENT_RING; k++)
    if (p->slots[k].pending && p->slots[k].serial < p->slots[pick].serial) p->slots[k].pending = false;
  wnd_frame_slot *s = &p->slots[pick];
  s->pending = false;
  p->shown = pick;
  if (p->path == WND_PRESENT_EGL && s->copied) {
    /* EGLImages have no implicit synchronisation: the copy must be done before GL samples. */
    cudaError_t e = cudaEventSynchronize(s->copied);
    if (e != cudaSuccess) {
      snprintf(err, IR_ERR_LEN, "waiting for a frame's copy into its texture failed: %s", cudaGetErrorString(e));
      return NULL;
    }
  }
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
  for (int k = 0; k < WND_PRESENT_RING; k++)
    if (p->slots[k].pending) return true;
  return false;
}

void wnd_present_drawn(wnd_present *p) {
  if (p->shown < 0 || p->path == WND_PRESENT_HOST) return;
  wnd_frame_slot *s = &p->slots[p->shown];
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
  *p = (wnd_present){.shown = -1};
}

bool wnd_present_interop(const wnd_present *p) { return p->path != WND_PRESENT_HOST; }
