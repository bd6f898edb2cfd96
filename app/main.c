/* inkray: entry point. Picks the subcommand and hands over; every option is parsed there. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/app.h"
#include "inkray_version.h"

static void print_help(FILE *to) {
  fprintf(to,
          "inkray %s - interactive GPU isosurface ray-caster with swappable stream compaction\n"
          "\n"
          "Usage:\n"
          "  inkray [OPTIONS] [VOLUME]             window (with a display), else a headless run\n"
          "  inkray --headless [OPTIONS] [VOLUME]  render frames without a window, print timings\n"
          "  inkray info [VOLUME OPTIONS] VOLUME   dims, type, value range, histogram, isovalues\n"
          "  inkray extract VOLUME --iso V -o MESH  the isosurface as a mesh (.ply, .stl, .obj)\n"
          "  inkray compact-bench [OPTIONS]        time the compaction methods on plain streams\n"
          "  inkray --help | --version\n"
          "\n"
          "Each subcommand takes --help, e.g. inkray --headless --help.\n"
          "\n",
          INKRAY_VERSION);
  cli_print_volume_options(to);
}

static bool has_flag(int argc, char **argv, const char *flag) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], flag) == 0) return true;
  return false;
}

/* A display, or an SDL video driver asked for by name (SDL_VIDEODRIVER=offscreen renders the
 * window into an EGL surface with no display at all: scripted runs on GPU servers). */
static bool display_present(void) {
  const char *x = getenv("DISPLAY");
  const char *wayland = getenv("WAYLAND_DISPLAY");
  const char *sdl = getenv("SDL_VIDEODRIVER");
  return (x && *x) || (wayland && *wayland) || (sdl && *sdl);
}

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "info") == 0) return app_info_main(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "extract") == 0) return app_extract_main(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "compact-bench") == 0) return app_compact_bench_main(argc - 1, argv + 1);
  if (argc == 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)) {
    printf("inkray %s\n", INKRAY_VERSION);
    return 0;
  }
  if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    print_help(stdout);
    return 0;
  }
  /* Under mpirun the run is distributed, and distributed runs are headless. */
  if (has_flag(argc, argv, "--headless") || app_dist_requested()) return app_headless_main(argc, argv);
  if (!app_window_available()) {
    fprintf(stderr, "inkray: built without SDL2/GLEW, so no window; running headless "
                    "(install libsdl2-dev and libglew-dev and rebuild for the window)\n");
    return app_headless_main(argc, argv);
  }
  if (!display_present()) {
    fprintf(stderr, "inkray: no display (neither DISPLAY nor SDL_VIDEODRIVER is set); running headless\n");
    return app_headless_main(argc, argv);
  }
  return app_window_main(argc, argv);
}
