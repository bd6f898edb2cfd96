/* Getting the rendered frame into the window's texture.
 *
 * Interop: when the renderer runs on the GPU and the OpenGL context lives on that same NVIDIA
 * GPU, the frame goes device to device: a pixel buffer object registered with CUDA is mapped,
 * the renderer's image (ir_render_device_image) copied into it, unmapped, and the texture
 * filled from it by glTexSubImage2D. Nothing crosses the PCIe bus.
 * Host copy: everywhere else (the CPU renderer, Mesa, another GPU, any interop failure) the
 * frame comes back with ir_render_read_image and goes up with glTexSubImage2D.
 *
 * ir_render_frame has finished the frame when it returns (its stats time the whole frame), so
 * the copies here need no further synchronisation with the renderer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/window/window_gl.h"

#include <cuda_gl_interop.h>
#include <cuda_runtime_api.h>

/* Records the failing call and the CUDA error in words; the caller decides what follows. */
#define CUDA_TRY(call)                                                                            \
  do {                                                                                            \
    cudaError_t cuda_try_ = (call);                                                               \
    if (cuda_try_ != cudaSuccess) {                                                               \
      snprintf(err, IR_ERR_LEN, "%s failed: %s", #call, cudaGetErrorString(cuda_try_));          \
      return false;                                                                               \
    }                                                                                             \
  } while (0)

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

void wnd_present_setup(wnd_present *present, bool gpu_renderer) {
  *present = (wnd_present){0};
  if (!gpu_renderer) return;
  char why[IR_ERR_LEN] = {0};
  present->interop = same_nvidia_gpu(why);
  if (!present->interop) {
    snprintf(present->why_host, sizeof present->why_host, "%s", why);
    fprintf(stderr, "inkray: showing frames through a host copy: %s\n", why);
  }
}

static void unregister_pbo(wnd_present *present) {
  if (present->resource) cudaGraphicsUnregisterResource(present->resource);
  present->resource = NULL;
}

/* Grows the PBO to `bytes` and registers it with CUDA. */
static bool reserve_pbo(wnd_present *present, size_t bytes, char err[IR_ERR_LEN]) {
  if (present->resource && present->pbo_bytes >= bytes) return true;
  unregister_pbo(present);
  if (!present->pbo) glGenBuffers(1, &present->pbo);
  glBindBuffer(GL_PIXEL_UNPACK_BUFFER, present->pbo);
  glBufferData(GL_PIXEL_UNPACK_BUFFER, (GLsizeiptr)bytes, NULL, GL_STREAM_DRAW);
  glBindBuffer(GL_PIXEL_UNPACK_BUFFER, 0);
  if (!wnd_gl_check("sizing the pixel buffer for CUDA-GL interop", err)) return false;
  present->pbo_bytes = bytes;
  /* Write-discard: CUDA overwrites the whole buffer every frame, so the driver keeps no copy. */
  CUDA_TRY(cudaGraphicsGLRegisterBuffer(&present->resource, present->pbo, cudaGraphicsRegisterFlagsWriteDiscard));
  return true;
}

static bool interop_frame(wnd_present *present, wnd_gl *gl, const ir_renderer *renderer, int width, int height,
                          char err[IR_ERR_LEN]) {
  const void *image = ir_render_device_image(renderer);
  if (!image) {
    snprintf(err, IR_ERR_LEN, "the renderer gave no device image");
    return false;
  }
  size_t bytes = (size_t)width * (size_t)height * 4;
  if (!reserve_pbo(present, bytes, err)) return false;
  CUDA_TRY(cudaGraphicsMapResources(1, &present->resource, 0));
  void *mapped = NULL;
  size_t mapped_bytes = 0;
  cudaError_t e = cudaGraphicsResourceGetMappedPointer(&mapped, &mapped_bytes, present->resource);
  if (e == cudaSuccess && mapped_bytes < bytes) e = cudaErrorInvalidValue;
  if (e == cudaSuccess) e = cudaMemcpy(mapped, image, bytes, cudaMemcpyDeviceToDevice);
  cudaError_t unmap = cudaGraphicsUnmapResources(1, &present->resource, 0);
  if (e != cudaSuccess || unmap != cudaSuccess) {
    snprintf(err, IR_ERR_LEN, "copying the frame into the mapped pixel buffer failed: %s",
             cudaGetErrorString(e != cudaSuccess ? e : unmap));
    return false;
  }
  glBindTexture(GL_TEXTURE_2D, gl->texture);
  glBindBuffer(GL_PIXEL_UNPACK_BUFFER, present->pbo);
  glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, NULL);
  glBindBuffer(GL_PIXEL_UNPACK_BUFFER, 0);
  glBindTexture(GL_TEXTURE_2D, 0);
  return wnd_gl_check("filling the frame texture from the pixel buffer", err);
}

static bool host_frame(wnd_present *present, wnd_gl *gl, ir_renderer *renderer, int width, int height,
                       char err[IR_ERR_LEN]) {
  size_t bytes = (size_t)width * (size_t)height * 4;
  if (bytes > present->host_bytes) {
    uint8_t *grown = realloc(present->host, bytes);
    if (!grown) {
      snprintf(err, IR_ERR_LEN, "out of memory for a %dx%d frame", width, height);
      return false;
    }
    present->host = grown;
    present->host_bytes = bytes;
  }
  if (ir_render_read_image(renderer, present->host, err) != IR_OK) return false;
  glBindTexture(GL_TEXTURE_2D, gl->texture);
  glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, present->host);
  glBindTexture(GL_TEXTURE_2D, 0);
  return wnd_gl_check("filling the frame texture from host memory", err);
}

bool wnd_present_frame(wnd_present *present, wnd_gl *gl, ir_renderer *renderer, int width, int height,
                       char err[IR_ERR_LEN]) {
  if (!wnd_gl_texture_size(gl, width, height, err)) return false;
  if (present->interop) {
    char why[IR_ERR_LEN] = {0};
    if (interop_frame(present, gl, renderer, width, height, why)) return true;
    /* A broken interop path costs speed, not the picture: carry on through the host. */
    fprintf(stderr, "inkray: CUDA-GL interop failed, switching to a host copy: %s\n", why);
    snprintf(present->why_host, sizeof present->why_host, "interop failed: %.480s", why);
    present->interop = false;
    unregister_pbo(present);
  }
  return host_frame(present, gl, renderer, width, height, err);
}

void wnd_present_shutdown(wnd_present *present) {
  unregister_pbo(present);
  if (present->pbo) glDeleteBuffers(1, &present->pbo);
  free(present->host);
  *present = (wnd_present){0};
}

const char *wnd_present_path_name(const wnd_present *present) {
  return present->interop ? "CUDA-GL interop" : "host copy";
}
