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
  WND_PRESENT_EGL,      /* "egl-image": textures CUDA writes directly, registered once */
  WND_PRESENT_PATH_COUNT
} wnd_present_path;
const char *wnd_present_path_name(wnd_present_path path);
bool wnd_present_path_parse(const char *word, wnd_present_path *out); /* the names above, or host */

/* Frame N is copied into one slot while the one holding frame N-1 is drawn; a slot is written
 * again only after GL has drawn it (its fence), two frames later. */
#define WND_PRESENT_RING 3

typedef struct wnd_frame_slot {
  GLuint texture;
  int width, height;            /* of the texture and of the frame it holds */
  GLuint pbo;                   /* pbo path */
  size_t pbo_bytes;
  bool pbo_pending;             /* the pixel buffer holds a frame the texture has not got yet */
  struct cudaGraphicsResource *resource; /* the pixel buffer or the texture's EGLImage */
  struct cudaArray *array;      /* egl-image path: the texture as CUDA sees it */
  void *egl_image;
  struct CUevent_st *copied;    /* the frame's copy into the slot is done */
  GLsync drawn;                 /* GL is done drawing the slot */
  bool pending;                 /* holds a frame not shown yet */
  unsigned long serial;         /* the order frames came in */
} wnd_frame_slot;

typedef void (*wnd_egl_proc)(void); /* what eglGetProcAddress returns */

typedef struct wnd_present {
  wnd_present_path path;
  char why_host[IR_ERR_LEN];    /* why the host copy is used on the GPU renderer ("" when not) */
  char why_pbo[IR_ERR_LEN];     /* why not egl-image on NVIDIA's GL ("" when not) */
  wnd_frame_slot slots[WND_PRESENT_RING];
  int next;                     /* the slot the next frame goes into */
  int shown;                    /* the slot drawn last (-1: none) */
  unsigned long serial;
  uint8_t *host;                /* host-copy path */
  size_t host_bytes;
  void *egl_library, *egl_display, *egl_context; /* egl-image path */
  wnd_egl_proc egl_create_image, egl_destroy_image;
} wnd_present;

/* Picks the path: on the GPU renderer with the GL context on that same NVIDIA GPU, egl-image
 * where the context is an EGL one, else pbo; else host-copy. `path_given` (--present) asks for
 * one; a path that is not available falls back to the next, with a note. */
void wnd_present_setup(wnd_present *present, bool gpu_renderer, bool path_given, wnd_present_path path);
/* Puts the renderer's last frame (width x height) into the next slot. On the GPU the copy is
 * queued behind the frame and nothing waits for it. An interop failure moves to the next path
 * for good (printed once); a host-copy failure is returned. */
bool wnd_present_submit(wnd_present *present, ir_renderer *renderer, int width, int height, char err[IR_ERR_LEN]);
/* The slot to draw now: the oldest frame not shown yet (on the GPU paths the frame before the
 * one just submitted, which renders meanwhile), or with `latest` the newest, dropping older
 * ones (screenshots, the end of a benchmark). Its texture is ready for GL when it returns. */
const wnd_frame_slot *wnd_present_ready(wnd_present *present, bool latest, char err[IR_ERR_LEN]);
/* Whether a submitted frame is waiting to be shown. */
bool wnd_present_has_newer(const wnd_present *present);
/* After the GL commands that draw the slot from wnd_present_ready: its fence. */
void wnd_present_drawn(wnd_present *present);
void wnd_present_shutdown(wnd_present *present);
bool wnd_present_interop(const wnd_present *present); /* a GPU path (not host-copy) */

#endif
