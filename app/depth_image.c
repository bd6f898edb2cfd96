/* --depth: a frame's per-pixel depth as a 32-bit float image, in one of two formats that
 * image tools read without a plug-in:
 *   .pfm   Portable FloatMap: "Pf" (one channel), "W H", a negative scale for little-endian,
 *          then the rows from the bottom of the image to the top, as the format defines them;
 *   .nrrd  NRRD: a text header (type float, sizes W H, raw little-endian encoding, a `content`
 *          line saying what the values mean), then the rows from the top, x fastest.
 * Values are what ir_render_read_depth gives: the distance from the eye along the pixel's ray
 * in world units, +inf where no surface was hit (both formats carry IEEE infinities as they are).
 * Floats are written byte by byte in little-endian order, whatever the host's.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "app/app.h"

static bool put_row(FILE *f, const float *row, int w) {
  uint8_t bytes[4 * 1024];
  for (int x0 = 0; x0 < w; x0 += 1024) {
    int n = w - x0 < 1024 ? w - x0 : 1024;
    for (int x = 0; x < n; x++) {
      uint32_t u;
      memcpy(&u, &row[x0 + x], 4);
      for (int b = 0; b < 4; b++) bytes[4 * x + b] = (uint8_t)(u >> (8 * b));
    }
    if (fwrite(bytes, 4, (size_t)n, f) != (size_t)n) return false;
  }
  return true;
}

bool app_write_depth(const char *path, int w, int h, const float *depth, char err[IR_ERR_LEN]) {
  app_depth_format format = app_depth_format_of(path);
  if (format == APP_DEPTH_UNKNOWN) {
    snprintf(err, IR_ERR_LEN, "--depth '%.300s': unknown format; name a .pfm or .nrrd file", path);
    return false;
  }
  FILE *f = fopen(path, "wb");
  if (!f) {
    snprintf(err, IR_ERR_LEN, "cannot write --depth '%.300s': %s", path, strerror(errno));
    return false;
  }
  bool ok;
  if (format == APP_DEPTH_PFM) {
    ok = fprintf(f, "Pf\n%d %d\n-1.0\n", w, h) > 0;
    for (int y = h - 1; y >= 0 && ok; y--) ok = put_row(f, depth + (size_t)y * (size_t)w, w);
  } else {
    ok = fprintf(f,
                 "NRRD0004\n"
                 "# inkray depth image\n"
                 "content: depth: distance from the eye along each pixel's ray in world units, inf where no "
                 "surface was hit\n"
                 "type: float\n"
                 "dimension: 2\n"
                 "sizes: %d %d\n"
                 "kinds: domain domain\n"
                 "endian: little\n"
                 "encoding: raw\n"
                 "\n",
                 w, h) > 0;
    for (int y = 0; y < h && ok; y++) ok = put_row(f, depth + (size_t)y * (size_t)w, w);
  }
  if (fclose(f) != 0) ok = false;
  if (!ok) snprintf(err, IR_ERR_LEN, "writing --depth '%.300s' failed: %s", path, strerror(errno));
  return ok;
}
