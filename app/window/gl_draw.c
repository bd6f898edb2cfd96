/* OpenGL for the window: two small programs (the frame blit and the overlay's coloured
 * triangles), drawing a frame texture (present.c owns them) and reading the back buffer for
 * screenshots.
 * The GLSL sources are the files in shaders/, embedded at build time (inkray_shaders.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/window/window_gl.h"
#include "inkray_shaders.h"

static const char *gl_error_name(GLenum e) {
  switch (e) {
  case GL_INVALID_ENUM: return "GL_INVALID_ENUM";
  case GL_INVALID_VALUE: return "GL_INVALID_VALUE";
  case GL_INVALID_OPERATION: return "GL_INVALID_OPERATION";
  case GL_INVALID_FRAMEBUFFER_OPERATION: return "GL_INVALID_FRAMEBUFFER_OPERATION";
  case GL_OUT_OF_MEMORY: return "GL_OUT_OF_MEMORY (the GPU or driver ran out of memory)";
  default: return "unknown OpenGL error";
  }
}

bool wnd_gl_check(const char *what, char err[IR_ERR_LEN]) {
  GLenum first = glGetError();
  if (first == GL_NO_ERROR) return true;
  /* Drain the rest so that the next check reports only its own errors. */
  for (int k = 0; k < 32 && glGetError() != GL_NO_ERROR; k++) {
  }
  snprintf(err, IR_ERR_LEN, "OpenGL error in %s: %s (0x%04x)", what, gl_error_name(first), first);
  return false;
}

static GLuint compile_shader(GLenum stage, const char *source, const char *name, char err[IR_ERR_LEN]) {
  GLuint shader = glCreateShader(stage);
  glShaderSource(shader, 1, &source, NULL);
  glCompileShader(shader);
  GLint ok = GL_FALSE;
  glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
  if (!ok) {
    char log[400] = {0};
    glGetShaderInfoLog(shader, sizeof log, NULL, log);
    snprintf(err, IR_ERR_LEN, "shaders/%s does not compile: %s", name, log);
    glDeleteShader(shader);
    return 0;
  }
  return shader;
}

static GLuint link_program(const char *vert, const char *vert_name, const char *frag, const char *frag_name,
                           char err[IR_ERR_LEN]) {
  GLuint vs = compile_shader(GL_VERTEX_SHADER, vert, vert_name, err);
  if (!vs) return 0;
  GLuint fs = compile_shader(GL_FRAGMENT_SHADER, frag, frag_name, err);
  if (!fs) {
    glDeleteShader(vs);
    return 0;
  }
  GLuint program = glCreateProgram();
  glAttachShader(program, vs);
  glAttachShader(program, fs);
  glLinkProgram(program);
  glDeleteShader(vs);
  glDeleteShader(fs);
  GLint ok = GL_FALSE;
  glGetProgramiv(program, GL_LINK_STATUS, &ok);
  if (!ok) {
    char log[400] = {0};
    glGetProgramInfoLog(program, sizeof log, NULL, log);
    snprintf(err, IR_ERR_LEN, "shaders/%s + %s do not link: %s", vert_name, frag_name, log);
    glDeleteProgram(program);
    return 0;
  }
  return program;
}

bool wnd_gl_setup(wnd_gl *gl, char err[IR_ERR_LEN]) {
  *gl = (wnd_gl){0};
  gl->blit_program = link_program(inkray_shader_blit_vert, "blit.vert.glsl", inkray_shader_blit_frag,
                                  "blit.frag.glsl", err);
  if (!gl->blit_program) return false;
  gl->overlay_program = link_program(inkray_shader_overlay_vert, "overlay.vert.glsl",
                                     inkray_shader_overlay_frag, "overlay.frag.glsl", err);
  if (!gl->overlay_program) return false;
  gl->blit_viewport = glGetUniformLocation(gl->blit_program, "u_viewport");
  gl->blit_image = glGetUniformLocation(gl->blit_program, "u_image");
  gl->overlay_viewport = glGetUniformLocation(gl->overlay_program, "u_viewport");

  /* A core profile draws nothing without a vertex array object bound, even with no attributes. */
  glGenVertexArrays(1, &gl->blit_vao);
  glGenVertexArrays(1, &gl->overlay_vao);
  glGenBuffers(1, &gl->overlay_vbo);
  glBindVertexArray(gl->overlay_vao);
  glBindBuffer(GL_ARRAY_BUFFER, gl->overlay_vbo);
  glEnableVertexAttribArray(0);
  glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, sizeof(wnd_vertex), (const void *)offsetof(wnd_vertex, x));
  glEnableVertexAttribArray(1);
  glVertexAttribPointer(1, 4, GL_UNSIGNED_BYTE, GL_TRUE, sizeof(wnd_vertex), (const void *)offsetof(wnd_vertex, rgba));
  glBindVertexArray(0);
  glBindBuffer(GL_ARRAY_BUFFER, 0);

  /* Frame rows are tightly packed RGBA8: no row padding either way. */
  glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  return wnd_gl_check("setting up the shaders and buffers", err);
}

void wnd_gl_shutdown(wnd_gl *gl) {
  glDeleteBuffers(1, &gl->overlay_vbo);
  glDeleteVertexArrays(1, &gl->overlay_vao);
  glDeleteVertexArrays(1, &gl->blit_vao);
  glDeleteProgram(gl->overlay_program);
  glDeleteProgram(gl->blit_program);
  *gl = (wnd_gl){0};
}

static bool draw_frame(wnd_gl *gl, GLuint texture, int texture_width, int texture_height, int viewport_width,
                       int viewport_height, char err[IR_ERR_LEN]) {
  glUseProgram(gl->blit_program);
  glUniform2f(gl->blit_viewport, (float)viewport_width, (float)viewport_height);
  glUniform1i(gl->blit_image, 0);
  glActiveTexture(GL_TEXTURE0);
  glBindTexture(GL_TEXTURE_2D, texture);
  /* Same size: nearest copies every pixel exactly. A fixed --size in a resized window: scale smoothly. */
  bool exact = texture_width == viewport_width && texture_height == viewport_height;
  GLint filter = exact ? GL_NEAREST : GL_LINEAR;
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, filter);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, filter);
  glBindVertexArray(gl->blit_vao);
  glDrawArrays(GL_TRIANGLES, 0, 3);
  return wnd_gl_check("drawing the frame", err);
}

static bool draw_overlay(wnd_gl *gl, int viewport_width, int viewport_height, const wnd_mesh *overlay,
                         unsigned long overlay_version, char err[IR_ERR_LEN]) {
  if (overlay && overlay->count) {
    size_t bytes = overlay->count * sizeof(wnd_vertex);
    glBindBuffer(GL_ARRAY_BUFFER, gl->overlay_vbo);
    /* Uploaded when it changed, not every frame. */
    if (!gl->overlay_uploaded || gl->overlay_version != overlay_version) {
      /* A fresh store each time: the driver need not wait for draws still reading the old one. */
      glBufferData(GL_ARRAY_BUFFER, (GLsizeiptr)bytes, overlay->vertices, GL_STREAM_DRAW);
      gl->overlay_version = overlay_version;
      gl->overlay_uploaded = true;
    }
    glEnable(GL_BLEND);
    glBlendFunc(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA);
    glUseProgram(gl->overlay_program);
    glUniform2f(gl->overlay_viewport, (float)viewport_width, (float)viewport_height);
    glBindVertexArray(gl->overlay_vao);
    glDrawArrays(GL_TRIANGLES, 0, (GLsizei)overlay->count);
    glBindBuffer(GL_ARRAY_BUFFER, 0);
    if (!wnd_gl_check("drawing the overlay", err)) return false;
  }
  return true;
}

bool wnd_gl_draw(wnd_gl *gl, GLuint texture, int texture_width, int texture_height, int viewport_width,
                 int viewport_height, const wnd_mesh *overlay, unsigned long overlay_version, char err[IR_ERR_LEN]) {
  glViewport(0, 0, viewport_width, viewport_height);
  glDisable(GL_BLEND);
  if (!texture) {
    /* No frame yet (a volume loading): the background alone under the overlay. */
    glClearColor(0.05f, 0.055f, 0.07f, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
  } else {
    if (!draw_frame(gl, texture, texture_width, texture_height, viewport_width, viewport_height, err)) return false;
  }
  if (!draw_overlay(gl, viewport_width, viewport_height, overlay, overlay_version, err)) return false;
  glBindVertexArray(0);
  glBindTexture(GL_TEXTURE_2D, 0);
  glUseProgram(0);
  return true;
}

bool wnd_gl_read_pixels(int width, int height, uint8_t *rgba, char err[IR_ERR_LEN]) {
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, rgba);
  if (!wnd_gl_check("reading the back buffer for a screenshot", err)) return false;
  /* OpenGL's row 0 is the bottom one; images start at the top. */
  size_t row = (size_t)width * 4;
  uint8_t *swap = malloc(row);
  if (!swap) {
    snprintf(err, IR_ERR_LEN, "out of memory for a %dx%d screenshot", width, height);
    return false;
  }
  for (int y = 0; y < height / 2; y++) {
    uint8_t *a = rgba + (size_t)y * row, *b = rgba + (size_t)(height - 1 - y) * row;
    memcpy(swap, a, row);
    memcpy(a, b, row);
    memcpy(b, swap, row);
  }
  free(swap);
  for (size_t k = 3; k < row * (size_t)height; k += 4) rgba[k] = 255;
  return true;
}
