/* Was this process started by an MPI launcher? Read from the environment, so that a build
 * without MPI can still recognise `mpirun -np N inkray ...` and refuse it clearly. */
#include <stdlib.h>
#include <time.h>

#include "dist/dist_internal.h"

/* The first of the variables that holds a number in [min, 2^30]; 0 if none does. */
static int first_number(const char *const *names, size_t count, long min) {
  for (size_t k = 0; k < count; k++) {
    const char *v = getenv(names[k]);
    if (v && *v) {
      char *end = NULL;
      long n = strtol(v, &end, 10);
      if (*end == '\0' && n >= min && n <= 1L << 30) return (int)n;
    }
  }
  return 0;
}

int ir_dist_launched_size(void) {
  static const char *const names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"};
  return first_number(names, sizeof names / sizeof names[0], 1);
}

int ir_dist_launched_rank(void) {
  static const char *const names[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"};
  return first_number(names, sizeof names / sizeof names[0], 0);
}

double ir_dist_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}
