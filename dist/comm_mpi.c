/* The MPI side of the dist module: init, the collectives the scene uses. Built only when CMake
 * finds MPI (comm_none.c otherwise). */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "dist/dist_internal.h"

struct ir_dist {
  int rank, size;
  bool initialized_here;
  /* Translucent compositing: the strips received from every rank and the blended strip; per-rank
   * counts and offsets. Grown, never shrunk. */
  uint64_t *strips, *blended;
  size_t strip_capacity;
  int *counts; /* 4 x size: send counts, send offsets, receive counts, receive offsets */
};

bool ir_dist_built_with_mpi(void) { return true; }

static ir_status mpi_fail(char err[IR_ERR_LEN], int rc, const char *call) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "code %d", rc);
  snprintf(err, IR_ERR_LEN, "MPI error in %s: %s", call, text);
  return IR_ERR_RUNTIME;
}

ir_status ir_dist_init(int *argc, char ***argv, ir_dist **out, char err[IR_ERR_LEN]) {
  *out = NULL;
  ir_dist *d = calloc(1, sizeof *d);
  if (!d) {
    snprintf(err, IR_ERR_LEN, "out of host memory starting MPI");
    return IR_ERR_RUNTIME;
  }
  int already = 0;
  MPI_Initialized(&already);
  if (!already) {
    int rc = MPI_Init(argc, argv);
    if (rc != MPI_SUCCESS) {
      free(d);
      return mpi_fail(err, rc, "MPI_Init");
    }
    d->initialized_here = true;
  }
  /* Errors come back as codes (turned into messages), instead of aborting the job. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &d->size);
  *out = d;
  return IR_OK;
}

void ir_dist_finalize(ir_dist *d) {
  if (!d) return;
  if (d->initialized_here) MPI_Finalize();
  free(d->strips);
  free(d->blended);
  free(d->counts);
  free(d);
}

int ir_dist_rank(const ir_dist *d) { return d->rank; }
int ir_dist_size(const ir_dist *d) { return d->size; }

int ir_dist_agree(ir_dist *d, int status) {
  int worst = status;
  if (MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS)
    return status > IR_ERR_RUNTIME ? status : IR_ERR_RUNTIME;
  return worst;
}

ir_status ir_dist_broadcast(ir_dist *d, void *buf, size_t bytes, char err[IR_ERR_LEN]) {
  (void)d;
  int rc = MPI_Bcast(buf, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
  return rc == MPI_SUCCESS ? IR_OK : mpi_fail(err, rc, "MPI_Bcast");
}

int ir_dist_local_size(ir_dist *d) {
  (void)d;
  MPI_Comm local;
  int n = 1;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local) != MPI_SUCCESS) return 1;
  MPI_Comm_size(local, &n);
  MPI_Comm_free(&local);
  return n;
}

ir_status ir_dist_max_to_root(ir_dist *d, const double *in, double *out, int n, char err[IR_ERR_LEN]) {
  int rc = MPI_Reduce(in, out, n, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  return rc == MPI_SUCCESS ? IR_OK : mpi_fail(err, rc, "MPI_Reduce (timings)");
}

ir_status ir_dist_max_all(ir_dist *d, const double *in, double *out, int n, char err[IR_ERR_LEN]) {
  (void)d;
  int rc = MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return rc == MPI_SUCCESS ? IR_OK : mpi_fail(err, rc, "MPI_Allreduce (colour range)");
}

ir_status ir_dist_reduce_min(ir_dist *d, const uint64_t *local, uint64_t *result, size_t pixels,
                             char err[IR_ERR_LEN]) {
  /* MPI counts are ints: images above 2^31 pixels go in pieces (none are that large today). */
  const size_t piece = (size_t)1 << 30;
  for (size_t done = 0; done < pixels; done += piece) {
    int n = (int)(pixels - done < piece ? pixels - done : piece);
    int rc = MPI_Reduce(local + done, d->rank == 0 ? result + done : NULL, n, MPI_UINT64_T, MPI_MIN, 0,
                        MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) return mpi_fail(err, rc, "MPI_Reduce (compositing)");
  }
  return IR_OK;
}

ir_status ir_dist_composite_over(ir_dist *d, const uint64_t *local, const int *order, uint64_t *result,
                                 size_t pixels, char err[IR_ERR_LEN]) {
  int P = d->size;
  if (pixels > (size_t)INT_MAX) {
    snprintf(err, IR_ERR_LEN, "rank %d: %zu-pixel frames are above the %d pixels translucent compositing takes",
             d->rank, pixels, INT_MAX);
    return IR_ERR_INPUT;
  }
  size_t mine_lo = (size_t)d->rank * pixels / (size_t)P, mine = ((size_t)d->rank + 1) * pixels / (size_t)P - mine_lo;
  size_t need = (pixels / (size_t)P + 1) * (size_t)P;
  if (!d->counts) d->counts = malloc(4 * (size_t)P * sizeof *d->counts);
  if (need > d->strip_capacity) {
    free(d->strips);
    free(d->blended);
    d->strips = malloc(need * sizeof *d->strips);
    d->blended = malloc((pixels / (size_t)P + 1) * sizeof *d->blended);
    d->strip_capacity = d->strips && d->blended ? need : 0;
  }
  if (!d->counts || !d->strip_capacity) {
    snprintf(err, IR_ERR_LEN, "rank %d: out of host memory compositing %zu-pixel frames", d->rank, pixels);
    return IR_ERR_RUNTIME;
  }
  int *send_n = d->counts, *send_at = d->counts + P, *recv_n = d->counts + 2 * P, *recv_at = d->counts + 3 * P;
  for (int j = 0; j < P; j++) {
    size_t lo = (size_t)j * pixels / (size_t)P, hi = ((size_t)j + 1) * pixels / (size_t)P;
    send_n[j] = (int)(hi - lo);
    send_at[j] = (int)lo;
    recv_n[j] = (int)mine;
    recv_at[j] = (int)((size_t)j * mine);
  }
  int rc = MPI_Alltoallv(local, send_n, send_at, MPI_UINT64_T, d->strips, recv_n, recv_at, MPI_UINT64_T,
                         MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) return mpi_fail(err, rc, "MPI_Alltoallv (translucent compositing)");
  ir_dist_over_words(d->strips, mine, order, P, mine, d->blended);
  /* Rank 0 gathers the blended strips where they lie in the image (send_n/at are the strips). */
  rc = MPI_Gatherv(d->blended, (int)mine, MPI_UINT64_T, result, send_n, send_at, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  return rc == MPI_SUCCESS ? IR_OK : mpi_fail(err, rc, "MPI_Gatherv (translucent compositing)");
}
