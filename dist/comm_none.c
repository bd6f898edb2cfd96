/* The dist module built without MPI: the runtime entry points say so (the decomposition and
 * the packing work all the same). Install libopenmpi-dev and reconfigure for distributed runs. */
#include <stdio.h>

#include "dist/dist_internal.h"

struct ir_dist {
  int unused;
};

bool ir_dist_built_with_mpi(void) { return false; }

ir_status ir_dist_init(int *argc, char ***argv, ir_dist **out, char err[IR_ERR_LEN]) {
  (void)argc;
  (void)argv;
  *out = NULL;
  snprintf(err, IR_ERR_LEN,
           "built without MPI, so no distributed runs: install libopenmpi-dev and openmpi-bin and rebuild");
  return IR_ERR_INPUT;
}

void ir_dist_finalize(ir_dist *d) { (void)d; }
int ir_dist_rank(const ir_dist *d) { (void)d; return 0; }
int ir_dist_size(const ir_dist *d) { (void)d; return 1; }
int ir_dist_agree(ir_dist *d, int status) { (void)d; return status; }
void ir_dist_mark_broken(ir_dist *d) { (void)d; }
int ir_dist_agree_times(ir_dist *d, int status, double mine, double *times, double *scratch) {
  (void)d, (void)scratch;
  times[0] = mine;
  return status;
}

ir_status ir_dist_broadcast(ir_dist *d, void *buf, size_t bytes, char err[IR_ERR_LEN]) {
  (void)d, (void)buf, (void)bytes, (void)err;
  return IR_OK;
}

int ir_dist_local_size(const ir_dist *d) {
  (void)d;
  return 1;
}
int ir_dist_local_rank(const ir_dist *d) {
  (void)d;
  return 0;
}

ir_status ir_dist_max_to_root(ir_dist *d, const double *in, double *out, int n, char err[IR_ERR_LEN]) {
  (void)d;
  (void)err;
  for (int i = 0; i < n; i++) out[i] = in[i];
  return IR_OK;
}

ir_status ir_dist_share_parts(ir_dist *d, void *buf, const size_t *at, char err[IR_ERR_LEN]) {
  (void)d, (void)buf, (void)at, (void)err; /* one rank: its part is the whole */
  return IR_OK;
}

ir_status ir_dist_sum_all(ir_dist *d, const double *in, double *out, int n, char err[IR_ERR_LEN]) {
  return ir_dist_max_to_root(d, in, out, n, err);
}

ir_status ir_dist_max_all(ir_dist *d, const double *in, double *out, int n, char err[IR_ERR_LEN]) {
  return ir_dist_max_to_root(d, in, out, n, err);
}

ir_status ir_dist_composite_windows(ir_dist *d, const uint64_t *local, const int (*windows)[4], int width,
                                    uint64_t *frame, char err[IR_ERR_LEN]) {
  /* One rank: its frame is the composite. */
  (void)d, (void)local, (void)windows, (void)width, (void)frame, (void)err;
  return IR_OK;
}

ir_status ir_dist_composite_over(ir_dist *d, const uint64_t *local, const int *order, uint64_t *result,
                                 size_t pixels, char err[IR_ERR_LEN]) {
  /* One rank: its frame is the composite. */
  (void)d, (void)order, (void)err;
  for (size_t i = 0; i < pixels; i++) result[i] = local[i];
  return IR_OK;
}
