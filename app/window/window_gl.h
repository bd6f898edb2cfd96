/* The window's OpenGL side (gl_draw.c) and the way frames reach it (present.c). Include after
 * nothing GL-related: GLEW has to come before any other GL header. */
#ifndef INKRAY_APP_WINDOW_GL_H
#define INKRAY_APP_WINDOW_GL_H

#include <GL/glew.h>

#include "app/window/window_internal.h"

/* ---- Drawing (gl_draw.c) ----------------------------------------------------------------------- */
typedef struct wnd_gl {
  GLuint blit_program, overlay_program;
  GLint blit_viewport, blit_image, overlay_viewport; /* uniform locations */
  GLuint blit_vao;                                    /* empty: the blit makes its own vertices */
  GLuint overlay_vao, overlay_vbo;
  bool overlay_uploaded;         /* overlay_vbo holds the mesh of overlay_version */
  unsigned long overlay_version;
} wnd_gl;

/* Needs a current OpenGL 3.3 core context with GLEW initialised. */
bool wnd_gl_setup(wnd_gl *gl, char err[IR_ERR_LEN]);
void wnd_gl_shutdown(wnd_gl *gl);
/* Drains glGetError; false with a message naming `what` if anything was recorded. */
bool wnd_gl_check(const char *what, char err[IR_ERR_LEN]);
/* Draws the frame texture (RGBA8, texture_width x texture_height) over the whole viewport, then
 * `overlay` (NULL or empty: none), uploading it only when overlay_version differs from the one
 * drawn before. */
bool wnd_gl_draw(wnd_gl *gl, GLuint texture, int texture_width, int texture_height, int viewport_width,
                 int viewport_height, const wnd_mesh *overlay, unsigned long overlay_version, char err[IR_ERR_LEN]);
/* Reads the back buffer as RGBA8, row 0 at the top, alpha set to 255. */
bool wnd_gl_read_pixels(int width, int height, uint8_t *rgba, char err[IR_ERR_LEN]);

/* ---- Presenting frames (present.c) ----------------------------------------------------------- */
struct cudaGraphicsResource;
struct cudaArray;
struct CUevent_st;

typedef enum wnd_present_path {
  WND_PRESENT_HOST = 0, /* "host-copy": ir_render_read_image, then glTexSubImage2D */
  WND_PRESENT_PBO,      /* "pbo": CUDA-GL pixel buffers, mapped for each frame */
  WND_PRESENT_EGL,      /* "egl-image": textures the renderer writes directly, registered once */
  WND_PRESENT_PATH_COUNT
} wnd_present_path;
const char *wnd_present_path_name(wnd_present_path path);
bool wnd_present_path_parse(const char *word, wnd_present_path *out); /* the names above, or host */

/* Frame N goes into one slot while one holding an earlier frame is drawn; a slot is written
 * again only after GL has drawn it (its fence). */
#define WND_PRESENT_RING 3
#define WND_PRESENT_RING_MAX 8 /* --present-ring */

typedef struct wnd_frame_slot {
  GLuint texture;
  int width, height;            /* of the texture and of the frame it holds */
  GLuint pbo;                   /* pbo path */
  size_t pbo_bytes;
  bool pbo_pending;             /* the pixel buffer holds a frame the texture has not got yet */
  struct cudaGraphicsResource *resource; /* the pixel buffer or the texture's EGLImage */
  struct cudaArray *array;      /* egl-image path: the texture as CUDA sees it */
  unsigned long long surface;   /* egl-image path: a cudaSurfaceObject_t on `array` (0: copies) */
  void *egl_image;
  struct CUevent_st *copied;    /* the frame in the slot is done on the GPU */
  void *egl_fence;              /* --present-sync gpu: EGL fence set after the slot was drawn */
  void *fence_used;             /* the fence the frame in the slot waited for on the device, */
  struct CUevent_st *fence_event; /* as a CUDA event (both freed once that frame is done) */
  bool done;                    /* `copied` was seen completed */
  GLsync drawn;                 /* GL is done drawing the slot */
  bool pending;                 /* holds a frame not shown yet */
  unsigned long serial;         /* the order frames came in */
} wnd_frame_slot;

typedef void (*wnd_egl_proc)(void); /* what eglGetProcAddress returns */

typedef struct wnd_present {
  wnd_present_path path;
  char why_host[IR_ERR_LEN];    /* why the host copy is used on the GPU renderer ("" when not) */
  char why_pbo[IR_ERR_LEN];     /* why not egl-image on NVIDIA's GL ("" when not) */
  wnd_frame_slot slots[WND_PRESENT_RING_MAX];
  int ring;                     /* slots in use */
  int next;                     /* the slot the next frame goes into */
  int shown;                    /* the slot drawn last (-1: none) */
  int target;                   /* egl-image: the slot the frame being rendered goes into (-1: none) */
  bool egl_copy;                /* egl-image: CUDA refused surfaces on the textures; frames are copied */
  unsigned long frames_shown;   /* frames drawn for the first time */
  unsigned long repeats;        /* draws of a frame already shown (no newer one done yet) */
  unsigned long dropped;        /* frames never drawn (a newer one was done first) */
  unsigned long ring_waits;     /* times the CPU waited for the GPU because the ring was full */
  unsigned long gl_waits;       /* times it waited for GL to finish drawing a slot to reuse */
  unsigned long serial;
  uint8_t *host;                /* host-copy path */
  size_t host_bytes;
  void *egl_library, *egl_display, *egl_context; /* egl-image path */
  wnd_egl_proc egl_create_image, egl_destroy_image;
  wnd_egl_proc egl_create_sync, egl_destroy_sync, egl_wait_sync; /* EGL 1.5 */
  bool gl_waits_cuda;           /* --present-sync gpu: GL waits on the GPU for a frame's event */
  bool cuda_waits_gl;           /* and the renderer on the GPU for GL's fence of a slot */
  bool fifo;                    /* egl-image, CPU waits: every frame drawn in order, none again */
  unsigned long idle;           /* fifo: iterations with no new frame done (nothing drawn) */
} wnd_present;

/* How frames reach the window (wnd_present_setup). */
typedef struct wnd_present_desc {
  bool gpu_renderer;
  bool path_given;       /* --present: */
  wnd_present_path path;
  int ring;              /* --present-ring: 2..WND_PRESENT_RING_MAX (else WND_PRESENT_RING) */
  bool gpu_sync;         /* --present-sync gpu: egl-image synchronised on the GPU where EGL can */
  bool fifo;             /* --present-queue fifo: egl-image draws every frame, in order */
} wnd_present_desc;

/* Picks the path: on the GPU renderer with the GL context on that same NVIDIA GPU, egl-image
 * where the context is an EGL one, else pbo; else host-copy. `path_given` (--present) asks for
 * one; a path that is not available falls back to the next, with a note. */
void wnd_present_setup(wnd_present *present, const wnd_present_desc *desc);
/* egl-image: the slot the next frame goes into, as a surface for ir_frame_desc.surface (0 on the
 * other paths, or where CUDA refuses surfaces on the textures: the renderer then draws into its
 * own image, which wnd_present_submit copies). Waits only when the ring is full. With
 * --present-sync gpu, `wait_event` is an event the frame must wait for on the device (GL done
 * drawing the slot), or NULL. */
bool wnd_present_target(wnd_present *present, int width, int height, unsigned long long *surface,
                        void **wait_event, char err[IR_ERR_LEN]);
/* The renderer refused the surface (ir_render_frame failed with it): frames are copied from the
 * renderer's own image from now on (said once on stderr). */
void wnd_present_refuse_surfaces(wnd_present *present, const char *why);
/* Puts the renderer's last frame (width x height) into its slot: on egl-image the one
 * wnd_present_target gave (an event marks it done), elsewhere the next one, copied; on the GPU
 * nothing waits. An interop failure moves to the next path for good (printed once); a host-copy
 * failure is returned. */
bool wnd_present_submit(wnd_present *present, ir_renderer *renderer, int width, int height, char err[IR_ERR_LEN]);
/* The slot to draw now: on egl-image the newest frame done on the GPU (found without waiting;
 * while none is, the one drawn before), or with --present-queue fifo the oldest frame not shown
 * if it is done (else NULL with `err` empty: nothing new to draw), or with --present-sync gpu the
 * frame just submitted (GL waits for it on the GPU); on pbo the oldest frame not shown yet (the
 * frame before the one just submitted, which renders meanwhile); with `latest` the newest,
 * waited for, dropping older ones (screenshots, the end of a benchmark). Its texture is ready
 * for GL. */
const wnd_frame_slot *wnd_present_ready(wnd_present *present, bool latest, char err[IR_ERR_LEN]);
/* Whether a submitted frame is waiting to be shown. */
bool wnd_present_has_newer(const wnd_present *present);
/* After the GL commands that draw the slot from wnd_present_ready: its fence. */
void wnd_present_drawn(wnd_present *present);
void wnd_present_shutdown(wnd_present *present);
bool wnd_present_interop(const wnd_present *present); /* a GPU path (not host-copy) */

#endif
