/* GPU renderer: being written; the CPU device works. */
#include <stdio.h>

#include "render/render_internal.h"

ir_status ir_gpu_create(ir_renderer *r, char err[IR_ERR_LEN]) {
  (void)r;
  snprintf(err, IR_ERR_LEN, "the GPU renderer is not available in this build yet; use --device cpu");
  return IR_ERR_RUNTIME;
}
void ir_gpu_destroy(ir_renderer *r) { (void)r; }
ir_status ir_gpu_render_frame(ir_renderer *r, const ir_frame_desc *f, ir_frame_stats *stats, char err[IR_ERR_LEN]) {
  (void)r; (void)f; (void)stats;
  snprintf(err, IR_ERR_LEN, "the GPU renderer is not available in this build yet");
  return IR_ERR_RUNTIME;
}
ir_status ir_gpu_read_image(ir_renderer *r, uint8_t *rgba, char err[IR_ERR_LEN]) {
  (void)r; (void)rgba;
  snprintf(err, IR_ERR_LEN, "the GPU renderer is not available in this build yet");
  return IR_ERR_RUNTIME;
}
const void *ir_gpu_device_image(const ir_renderer *r) { (void)r; return NULL; }
