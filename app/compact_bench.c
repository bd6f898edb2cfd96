#include <stdio.h>

#include "app/app.h"

int app_compact_bench_main(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "inkray: compact_bench is not written yet\n");
  return 1;
}
