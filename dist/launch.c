/* Was this process started by an MPI launcher? Read from the environment, so that a build
 * without MPI can still recognise `mpirun -np N inkray ...` and refuse it clearly. */
#include <stdlib.h>
#include <time.h>

#include "dist/dist_internal.h"

int ir_dist_launched_size(void) {
  static const char *const names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    const char *v = getenv(names[k]);
    if (v && *v) {
      long n = strtol(v, NULL, 10);
      if (n > 0 && n <= 1L << 30) return (int)n;
    }
  }
  return 0;
}

double ir_dist_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}
