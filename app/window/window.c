#include <stdio.h>

#include "app/app.h"

bool app_window_available(void) { return true; }

int app_window_main(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "inkray: the window is not written yet\n");
  return 1;
}
