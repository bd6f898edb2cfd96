/* Built when SDL2/GLEW are missing: the program still works headless. */
#include <stdio.h>

#include "app/app.h"

bool app_window_available(void) { return false; }

int app_window_main(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "inkray: this build has no window (SDL2/GLEW were not found at build time)\n");
  return 1;
}
