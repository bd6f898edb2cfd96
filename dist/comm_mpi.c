/* The MPI side of the dist module: init, the collectives the scene uses. Built only when CMake
 * finds MPI (comm_none.c otherwise). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "dist/dist_internal.h"

struct ir_dist {
  int rank, size;
  bool initialized_here;
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
