/* The dist module built without NCCL: distributed frames are composited on the host through MPI
 * (comm_mpi.c). Install NCCL (the CUDA toolkit's, the system's, or PyPI's nvidia-nccl-cu13) and
 * reconfigure for compositing on the GPUs. */
#include <stdio.h>

#include "dist/dist_internal.h"

bool ir_dist_built_with_nccl(void) { return false; }

ir_status ir_dist_gpu_create(ir_dist *d, bool keep_depth, ir_dist_gpu **out, char err[IR_ERR_LEN]) {
  (void)d, (void)keep_depth;
  *out = NULL;
  snprintf(err, IR_ERR_LEN, "built without NCCL: frames are composited on the host");
  return IR_ERR_INPUT;
}
void ir_dist_gpu_destroy(ir_dist_gpu *g) { (void)g; }

static ir_status unavailable(char err[IR_ERR_LEN]) {
  snprintf(err, IR_ERR_LEN, "built without NCCL");
  return IR_ERR_RUNTIME;
}
ir_status ir_dist_gpu_pack(ir_dist_gpu *g, const void *rgba, const float *depth, size_t pixels, int width,
                           const int *window, char err[IR_ERR_LEN]) {
  (void)g, (void)rgba, (void)depth, (void)pixels, (void)width, (void)window;
  return unavailable(err);
}
ir_status ir_dist_gpu_composite(ir_dist_gpu *g, const int *order, size_t pixels, int width, const int (*windows)[4],
                                char err[IR_ERR_LEN]) {
  (void)g, (void)order, (void)pixels, (void)width, (void)windows;
  return unavailable(err);
}
ir_status ir_dist_gpu_gather_rows(ir_dist_gpu *g, void *rgba, float *depth, int width, const int (*windows)[4],
                                  char err[IR_ERR_LEN]) {
  (void)g, (void)rgba, (void)depth, (void)width, (void)windows;
  return unavailable(err);
}
ir_status ir_dist_gpu_read_image(ir_dist_gpu *g, uint8_t *rgba, char err[IR_ERR_LEN]) {
  (void)g, (void)rgba;
  return unavailable(err);
}
ir_status ir_dist_gpu_read_words(ir_dist_gpu *g, uint64_t *words, char err[IR_ERR_LEN]) {
  (void)g, (void)words;
  return unavailable(err);
}
