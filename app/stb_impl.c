/* The one translation unit that compiles stb_image_write (Debian's libstb-dev header), and the
 * PNG writer the headless runs and the window's screenshots share. Nothing else here: stb keeps
 * no global state, so callers may write from any thread. */
#include <errno.h>
#include <string.h>

#include "app/app.h"

#if defined(__GNUC__)
#pragma GCC diagnostic push
/* stb_image_write is third-party code written for C89/C99 compilers; its warnings are not ours. */
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wpedantic"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#include <stb/stb_image_write.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

bool app_write_png(const char *path, int w, int h, const uint8_t *rgba, char err[IR_ERR_LEN]) {
  if (!path || !*path || !rgba || w <= 0 || h <= 0) {
    snprintf(err, IR_ERR_LEN, "cannot write PNG '%s': no image (%dx%d)", path ? path : "", w, h);
    return false;
  }
  /* stb reports failure without a reason; errno from its fopen is the usual cause. */
  errno = 0;
  if (!stbi_write_png(path, w, h, 4, rgba, w * 4)) {
    snprintf(err, IR_ERR_LEN, "cannot write PNG '%s': %s", path,
             errno ? strerror(errno) : "write failed (disk full?)");
    return false;
  }
  return true;
}
