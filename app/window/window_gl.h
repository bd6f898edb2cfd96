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
  size_t overlay_vbo_bytes;
  GLuint texture; /* the rendered frame, RGBA8 */
  int texture_width, texture_height;
} wnd_gl;

/* Needs a current OpenGL 3.3 core context with GLEW initialised. */
bool wnd_gl_setup(wnd_gl *gl, char err[IR_ERR_LEN]);
void wnd_gl_shutdown(wnd_gl *gl);
/* Drains glGetError; false with a message naming `what` if anything was recorded. */
bool wnd_gl_check(const char *what, char err[IR_ERR_LEN]);
/* Gives the frame texture this size (a no-op when it has it already). */
bool wnd_gl_texture_size(wnd_gl *gl, int width, int height, char err[IR_ERR_LEN]);
/* Draws the frame texture over the whole viewport, then `overlay` (NULL or empty: none). */
bool wnd_gl_draw(wnd_gl *gl, int viewport_width, int viewport_height, const wnd_mesh *overlay,
                 char err[IR_ERR_LEN]);
/* Reads the back buffer as RGBA8, row 0 at the top, alpha set to 255. */
bool wnd_gl_read_pixels(int width, int height, uint8_t *rgba, char err[IR_ERR_LEN]);

/* ---- Presenting frames (present.c) ----------------------------------------------------------- */
struct cudaGraphicsResource;

typedef struct wnd_present {
  bool interop;          /* CUDA-GL interop in use; else a copy through host memory */
  char why_host[IR_ERR_LEN];    /* why the host copy is used on the GPU renderer ("" when not) */
  GLuint pbo;
  size_t pbo_bytes;
  struct cudaGraphicsResource *resource; /* the PBO, registered with CUDA */
  uint8_t *host;
  size_t host_bytes;
} wnd_present;

/* Picks the path: interop when the renderer is on the GPU and the GL context runs on that
 * same NVIDIA GPU, else the host copy. */
void wnd_present_setup(wnd_present *present, bool gpu_renderer);
/* Puts the renderer's last frame (width x height) into gl's texture. An interop failure
 * switches to the host copy for good (printed once); a host-copy failure is returned. */
bool wnd_present_frame(wnd_present *present, wnd_gl *gl, ir_renderer *renderer, int width, int height,
                       char err[IR_ERR_LEN]);
void wnd_present_shutdown(wnd_present *present);
const char *wnd_present_path_name(const wnd_present *present); /* for the overlay */

#endif
