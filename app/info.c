#include <stdio.h>

#include "app/app.h"

int app_info_main(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "inkray: info is not written yet\n");
  return 1;
}
