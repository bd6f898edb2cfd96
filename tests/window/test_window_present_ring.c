/* The egl-image ring of app/window/present.c against a simulated GPU: CUDA and OpenGL calls are
 * stand-ins here (this file defines them; nothing of CUDA, GLEW or OpenGL is linked), and every
 * frame and draw is an operation of a given length on one queue, as on a GPU that runs one
 * context at a time. Events and fences complete when the queue has reached them; waits move the
 * CPU's clock on to that point. Checked, for GPU-bound and CPU-bound loops, rings of 3 and 8:
 *   - a frame is drawn only once it is done, and a texture is written only once OpenGL is done
 *     drawing it and it holds no frame waiting to be shown;
 *   - fifo draws every frame exactly once, in order (none dropped, none drawn twice), and waits
 *     only when the ring is full; mailbox draws frames in increasing order, each at most once
 *     for the first time;
 *   - a screenshot (latest) shows the newest frame, and frames go on in order after it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/window/window_gl.h"

#include <cuda_gl_interop.h>
#include <cuda_runtime_api.h>
#ifdef INKRAY_HAVE_EGL
#include <cuda_egl_interop.h>
#endif

#include "tests/check.h"

/* ---- The simulated GPU ----------------------------------------------------------------------- */
static double cpu_clock;      /* the CPU's time */
static double gpu_free;       /* when the GPU's queue runs dry */
static double last_cuda_end;  /* the end of the last CUDA work submitted */
static double last_gl_end;    /* the end of the last OpenGL work submitted */
static double render_cost = 1.0, draw_cost = 0.3, cpu_step = 0.05;

struct CUevent_st {
  double done_at;
};
struct __GLsync {
  double done_at;
};

static double gpu_run(double cost) {
  double start = gpu_free > cpu_clock ? gpu_free : cpu_clock;
  gpu_free = start + cost;
  return gpu_free;
}

/* CUDA, as present.c uses it. */
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags) {
  (void)flags;
  *event = calloc(1, sizeof **event);
  return *event ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  free(event);
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  (void)stream;
  event->done_at = last_cuda_end;
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t event) { return event->done_at <= cpu_clock ? cudaSuccess : cudaErrorNotReady; }
cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (event->done_at > cpu_clock) cpu_clock = event->done_at;
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void) {
  if (gpu_free > cpu_clock) cpu_clock = gpu_free;
  return cudaSuccess;
}
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
const char *cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "simulated error"; }
cudaError_t cudaGetDevice(int *device) {
  *device = 0;
  return cudaSuccess;
}
cudaError_t cudaGLGetDevices(unsigned int *count, int *devices, unsigned int n, enum cudaGLDeviceList list) {
  (void)list;
  *count = n ? 1 : 0;
  if (n) devices[0] = 0;
  return cudaSuccess;
}
static unsigned long long next_handle = 1;
cudaError_t cudaCreateSurfaceObject(cudaSurfaceObject_t *surface, const struct cudaResourceDesc *res) {
  (void)res;
  *surface = next_handle++;
  return cudaSuccess;
}
cudaError_t cudaDestroySurfaceObject(cudaSurfaceObject_t surface) {
  (void)surface;
  return cudaSuccess;
}
cudaError_t cudaGraphicsUnregisterResource(cudaGraphicsResource_t resource) {
  (void)resource;
  return cudaSuccess;
}
#ifdef INKRAY_HAVE_EGL
cudaError_t cudaGraphicsEGLRegisterImage(struct cudaGraphicsResource **resource, EGLImageKHR image, unsigned int flags) {
  (void)image;
  (void)flags;
  *resource = (struct cudaGraphicsResource *)(uintptr_t)next_handle++;
  return cudaSuccess;
}
cudaError_t cudaGraphicsResourceGetMappedEglFrame(cudaEglFrame *frame, cudaGraphicsResource_t resource,
                                                   unsigned int index, unsigned int level) {
  (void)resource;
  (void)index;
  (void)level;
  frame->frameType = cudaEglFrameTypeArray;
  frame->planeCount = 1;
  frame->frame.pArray[0] = (cudaArray_t)(uintptr_t)next_handle++;
  return cudaSuccess;
}
cudaError_t cudaEventCreateFromEGLSync(cudaEvent_t *event, EGLSyncKHR sync, unsigned int flags) {
  (void)event;
  (void)sync;
  (void)flags;
  return cudaErrorNotSupported;
}
#endif
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  (void)stream;
  (void)event;
  (void)flags;
  return cudaSuccess;
}
/* The pbo and copy paths are not driven here. */
cudaError_t cudaGraphicsGLRegisterBuffer(struct cudaGraphicsResource **r, GLuint b, unsigned int f) {
  (void)r, (void)b, (void)f;
  return cudaErrorNotSupported;
}
cudaError_t cudaGraphicsMapResources(int n, cudaGraphicsResource_t *r, cudaStream_t s) {
  (void)n, (void)r, (void)s;
  return cudaErrorNotSupported;
}
cudaError_t cudaGraphicsUnmapResources(int n, cudaGraphicsResource_t *r, cudaStream_t s) {
  (void)n, (void)r, (void)s;
  return cudaErrorNotSupported;
}
cudaError_t cudaGraphicsResourceGetMappedPointer(void **p, size_t *n, cudaGraphicsResource_t r) {
  (void)p, (void)n, (void)r;
  return cudaErrorNotSupported;
}
cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, enum cudaMemcpyKind k, cudaStream_t st) {
  (void)d, (void)s, (void)n, (void)k, (void)st;
  return cudaErrorNotSupported;
}
cudaError_t cudaMemcpy2DToArrayAsync(cudaArray_t d, size_t x, size_t y, const void *s, size_t sp, size_t w, size_t h,
                                     enum cudaMemcpyKind k, cudaStream_t st) {
  (void)d, (void)x, (void)y, (void)s, (void)sp, (void)w, (void)h, (void)k, (void)st;
  return cudaErrorNotSupported;
}

/* The renderer: frames go into surfaces here, never read back. */
const void *ir_render_device_image(const ir_renderer *r) {
  (void)r;
  return NULL;
}
ir_status ir_render_read_image(ir_renderer *r, uint8_t *rgba, char err[IR_ERR_LEN]) {
  (void)r, (void)rgba;
  snprintf(err, IR_ERR_LEN, "not simulated");
  return IR_ERR_RUNTIME;
}

/* OpenGL: plain entry points and GLEW's pointers. */
static GLuint next_texture = 1;
void glGenTextures(GLsizei n, GLuint *t) {
  for (GLsizei i = 0; i < n; i++) t[i] = next_texture++;
}
void glDeleteTextures(GLsizei n, const GLuint *t) { (void)n, (void)t; }
void glBindTexture(GLenum target, GLuint t) { (void)target, (void)t; }
void glTexParameteri(GLenum target, GLenum name, GLint v) { (void)target, (void)name, (void)v; }
void glTexImage2D(GLenum t, GLint l, GLint f, GLsizei w, GLsizei h, GLint b, GLenum fo, GLenum ty, const void *d) {
  (void)t, (void)l, (void)f, (void)w, (void)h, (void)b, (void)fo, (void)ty, (void)d;
}
void glTexSubImage2D(GLenum t, GLint l, GLint x, GLint y, GLsizei w, GLsizei h, GLenum f, GLenum ty, const void *d) {
  (void)t, (void)l, (void)x, (void)y, (void)w, (void)h, (void)f, (void)ty, (void)d;
}
void glFinish(void) {
  if (last_gl_end > cpu_clock) cpu_clock = last_gl_end;
}
void glFlush(void) {}
const GLubyte *glGetString(GLenum name) {
  (void)name;
  return (const GLubyte *)"simulated";
}
bool wnd_gl_check(const char *what, char err[IR_ERR_LEN]) {
  (void)what, (void)err;
  return true;
}
static GLsync fence_sync(GLenum condition, GLbitfield flags) {
  (void)condition, (void)flags;
  GLsync s = calloc(1, sizeof *s);
  if (s) s->done_at = last_gl_end;
  return s;
}
static void delete_sync(GLsync s) { free(s); }
static GLenum client_wait_sync(GLsync s, GLbitfield flags, GLuint64 timeout) {
  (void)flags;
  if (s->done_at <= cpu_clock) return GL_ALREADY_SIGNALED;
  if (timeout == 0) return GL_TIMEOUT_EXPIRED;
  cpu_clock = s->done_at;
  return GL_CONDITION_SATISFIED;
}
static void gen_buffers(GLsizei n, GLuint *b) { memset(b, 0, (size_t)n * sizeof *b); }
static void delete_buffers(GLsizei n, const GLuint *b) { (void)n, (void)b; }
static void bind_buffer(GLenum t, GLuint b) { (void)t, (void)b; }
static void buffer_data(GLenum t, GLsizeiptr n, const void *d, GLenum u) { (void)t, (void)n, (void)d, (void)u; }
PFNGLFENCESYNCPROC __glewFenceSync = fence_sync;
PFNGLDELETESYNCPROC __glewDeleteSync = delete_sync;
PFNGLCLIENTWAITSYNCPROC __glewClientWaitSync = client_wait_sync;
PFNGLGENBUFFERSPROC __glewGenBuffers = gen_buffers;
PFNGLDELETEBUFFERSPROC __glewDeleteBuffers = delete_buffers;
PFNGLBINDBUFFERPROC __glewBindBuffer = bind_buffer;
PFNGLBUFFERDATAPROC __glewBufferData = buffer_data;

#ifdef INKRAY_HAVE_EGL
static EGLImageKHR create_image(EGLDisplay d, EGLContext c, EGLenum t, EGLClientBuffer b, const EGLint *a) {
  (void)d, (void)c, (void)t, (void)b, (void)a;
  return (EGLImageKHR)(uintptr_t)next_handle++;
}
static EGLBoolean destroy_image(EGLDisplay d, EGLImageKHR i) {
  (void)d, (void)i;
  return EGL_TRUE;
}

/* ---- The window's loop, as frame() runs it ---------------------------------------------------- */
enum { MAX_FRAMES = 4096 };
typedef struct run_result {
  long shown[MAX_FRAMES]; /* frame numbers in the order they were first drawn */
  int shown_count;
  long frames;            /* frames rendered */
  int unsafe_writes;      /* a texture written while drawn, or holding a frame not shown */
  int early_draws;        /* a frame drawn before it was done */
  int errors;
} run_result;

/* What the window does with the slot wnd_present_ready gave: records the frame, draws it. */
static void draw(wnd_present *p, const wnd_frame_slot *drawn, const long *frame_in, double *drawn_until,
                 long *last_shown, run_result *out) {
  int d = (int)(drawn - p->slots);
  if (drawn->copied->done_at > cpu_clock) out->early_draws++;
  if (frame_in[d] != *last_shown) {
    if (out->shown_count < MAX_FRAMES) out->shown[out->shown_count++] = frame_in[d];
    *last_shown = frame_in[d];
  }
  last_gl_end = gpu_run(draw_cost);
  drawn_until[d] = last_gl_end;
  wnd_present_drawn(p);
}

static void run_loop(bool fifo, int ring, int iterations, int screenshot_at, run_result *out) {
  memset(out, 0, sizeof *out);
  cpu_clock = gpu_free = last_cuda_end = last_gl_end = 0;
  wnd_present p = {.shown = -1, .target = -1, .ring = ring, .path = WND_PRESENT_EGL, .fifo = fifo};
  p.egl_display = (void *)1;
  p.egl_context = (void *)1;
  p.egl_create_image = (wnd_egl_proc)create_image;
  p.egl_destroy_image = (wnd_egl_proc)destroy_image;
  long frame_in[WND_PRESENT_RING_MAX] = {0}; /* the frame each slot holds */
  double drawn_until[WND_PRESENT_RING_MAX] = {0}; /* when OpenGL is done with each slot */
  long last_shown = 0;
  char err[IR_ERR_LEN];
  for (int i = 0; i < iterations; i++) {
    unsigned long long surface = 0;
    void *wait = NULL;
    err[0] = '\0';
    if (!wnd_present_target(&p, 64, 64, &surface, &wait, err) || p.target < 0 || !surface) {
      fprintf(stderr, "iteration %d: no target: %s\n", i, err);
      out->errors++;
      break;
    }
    int k = p.target;
    wnd_frame_slot *s = &p.slots[k];
    if (drawn_until[k] > cpu_clock || s->pending || k == p.shown) out->unsafe_writes++;
    frame_in[k] = ++out->frames;
    last_cuda_end = gpu_run(render_cost);
    if (!wnd_present_submit(&p, NULL, 64, 64, err)) {
      out->errors++;
      break;
    }
    const wnd_frame_slot *drawn = wnd_present_ready(&p, i == screenshot_at, err);
    if (!drawn && err[0]) {
      fprintf(stderr, "iteration %d: %s\n", i, err);
      out->errors++;
      break;
    }
    if (drawn) draw(&p, drawn, frame_in, drawn_until, &last_shown, out);
    cpu_clock += cpu_step;
  }
  /* The frames still in the ring, as later iterations would draw them. */
  for (int guard = 0; guard < 2 * WND_PRESENT_RING_MAX && wnd_present_has_newer(&p); guard++) {
    if (gpu_free > cpu_clock) cpu_clock = gpu_free;
    const wnd_frame_slot *drawn = wnd_present_ready(&p, false, err);
    if (drawn) draw(&p, drawn, frame_in, drawn_until, &last_shown, out);
  }
  wnd_present_shutdown(&p);
}

static void check_in_order(const char *what, const run_result *r, bool every) {
  CHECK_MSG(r->errors == 0, "%s: %d errors", what, r->errors);
  CHECK_MSG(r->unsafe_writes == 0, "%s: %d textures written while in use", what, r->unsafe_writes);
  CHECK_MSG(r->early_draws == 0, "%s: %d frames drawn before they were done", what, r->early_draws);
  int gaps = 0, backwards = 0;
  for (int i = 1; i < r->shown_count; i++) {
    backwards += r->shown[i] <= r->shown[i - 1];
    gaps += r->shown[i] != r->shown[i - 1] + 1;
  }
  CHECK_MSG(backwards == 0, "%s: %d frames drawn out of order", what, backwards);
  if (every) {
    CHECK_MSG(gaps == 0 && r->shown_count == r->frames && r->shown[0] == 1,
              "%s: %d of %ld frames drawn, %d gaps", what, r->shown_count, r->frames, gaps);
  }
}

static void test_fifo_draws_every_frame_in_order_when_the_gpu_is_slow(void) {
  render_cost = 1.0, draw_cost = 0.3, cpu_step = 0.05;
  run_result r;
  run_loop(true, 3, 300, -1, &r);
  check_in_order("fifo, ring 3, GPU-bound", &r, true);
  run_loop(true, 8, 300, -1, &r);
  check_in_order("fifo, ring 8, GPU-bound", &r, true);
}

static void test_fifo_draws_every_frame_in_order_when_the_cpu_is_slow(void) {
  render_cost = 0.1, draw_cost = 0.05, cpu_step = 1.0;
  run_result r;
  run_loop(true, 3, 300, -1, &r);
  check_in_order("fifo, ring 3, CPU-bound", &r, true);
}

static void test_mailbox_draws_frames_in_order_and_never_writes_one_in_use(void) {
  render_cost = 1.0, draw_cost = 0.3, cpu_step = 0.05;
  run_result r;
  run_loop(false, 3, 300, -1, &r);
  check_in_order("mailbox, ring 3, GPU-bound", &r, false);
  CHECK_MSG(r.shown_count > 30, "mailbox: only %d frames drawn", r.shown_count);
  run_loop(false, 8, 300, -1, &r);
  check_in_order("mailbox, ring 8, GPU-bound", &r, false);
  render_cost = 0.1, draw_cost = 0.05, cpu_step = 1.0;
  run_loop(false, 3, 300, -1, &r);
  check_in_order("mailbox, ring 3, CPU-bound", &r, false);
}

/* A screenshot shows the frame just rendered; fifo goes on in order after it. */
static void test_a_screenshot_shows_the_newest_frame(void) {
  render_cost = 1.0, draw_cost = 0.3, cpu_step = 0.05;
  run_result r;
  run_loop(true, 3, 100, 50, &r);
  check_in_order("fifo with a screenshot", &r, false);
  bool found = false;
  for (int i = 0; i < r.shown_count; i++) found |= r.shown[i] == 51;
  CHECK_MSG(found, "the screenshot's frame (51) was not drawn");
  CHECK_MSG(r.shown[r.shown_count - 1] == r.frames, "the last frame drawn is %ld, not the newest %ld",
            r.shown[r.shown_count - 1], r.frames);
}
#endif

int main(void) {
#ifdef INKRAY_HAVE_EGL
  RUN(test_fifo_draws_every_frame_in_order_when_the_gpu_is_slow);
  RUN(test_fifo_draws_every_frame_in_order_when_the_cpu_is_slow);
  RUN(test_mailbox_draws_frames_in_order_and_never_writes_one_in_use);
  RUN(test_a_screenshot_shows_the_newest_frame);
  return check_summary();
#else
  check_skip_all("built without EGL headers: no egl-image path");
#endif
}
