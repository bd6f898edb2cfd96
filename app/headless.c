#include <stdio.h>

#include "app/app.h"

int app_headless_main(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "inkray: headless is not written yet\n");
  return 1;
}
