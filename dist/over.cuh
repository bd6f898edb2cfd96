/* Per-pixel compositing math shared by the host (pack.c) and the GPU (nccl.cu): a word packs a
 * pixel's depth above its RGBA8 colour (dist/dist.h); translucent bricks are blended with the
 * premultiplied "over" operator in visibility order.
 *
 * A brick's pixel is its paint (premultiplied colour, alpha) over the background, as the
 * renderer writes it (render/trace.cuh, ir_paint_pixel): the paint is that pixel less
 * (1 - alpha) times the background. Bricks in front-to-back order then add their paint behind
 * what lies in front, weighted by the transmittance left, the same sum a single ray makes over
 * the hits of all bricks; the result goes over the background once. The depth is the first
 * hit's, the smallest of the bricks'. Reading paint back from 8-bit pixels costs about half a
 * step of 1/255 per brick a pixel meets (docs/distributed.md). */
#ifndef INKRAY_DIST_OVER_CUH
#define INKRAY_DIST_OVER_CUH

#include <stdint.h>
#include <string.h>

#include "render/ray_math.cuh"

#define IR_DIST_BACKGROUND_WORD UINT64_MAX

/* NaN or +INF: no surface. -0 and (impossible) negative depths count as 0. */
static inline IR_HD uint64_t ir_dist_word(float depth, uint32_t rgba) {
  if (!(depth < INFINITY)) return IR_DIST_BACKGROUND_WORD;
  if (!(depth > 0.0f)) depth = 0.0f;
  uint32_t bits;
  memcpy(&bits, &depth, sizeof bits);
  return (uint64_t)bits << 32 | rgba;
}

/* A window (x0, y0, x1, y1) of a frame: its pixel count, and the frame index of its pixel i
 * counted row by row (the order its words travel in). */
static inline IR_HD size_t ir_dist_window_count(const int w[4]) {
  return w[2] > w[0] && w[3] > w[1] ? (size_t)(w[2] - w[0]) * (size_t)(w[3] - w[1]) : 0;
}
static inline IR_HD size_t ir_dist_window_pixel(size_t i, int width, int x0, int y0, int ww) {
  return (size_t)(y0 + (int)(i / (size_t)ww)) * (size_t)width + (size_t)(x0 + (int)(i % (size_t)ww));
}

/* The word of pixel i composited over `count` layers, layer order[j] (front to back) being the
 * words at layers + order[j] * stride. */
static inline IR_HD uint64_t ir_dist_over_pixel(const uint64_t *layers, size_t stride, const int *order,
                                                int count, size_t i) {
  const float bg[3] = {(float)(IR_BACKGROUND_RGBA & 0xffu) / 255.0f,
                       (float)(IR_BACKGROUND_RGBA >> 8 & 0xffu) / 255.0f,
                       (float)(IR_BACKGROUND_RGBA >> 16 & 0xffu) / 255.0f};
  float paint[3] = {0.0f, 0.0f, 0.0f}, alpha = 0.0f;
  uint64_t nearest = IR_DIST_BACKGROUND_WORD;
  for (int j = 0; j < count; j++) {
    uint64_t w = layers[(size_t)order[j] * stride + i];
    if (w == IR_DIST_BACKGROUND_WORD) continue;
    nearest = w < nearest ? w : nearest;
    uint32_t c = (uint32_t)w;
    float a = (float)(c >> 24) / 255.0f, behind = 1.0f - alpha;
    for (int k = 0; k < 3; k++) {
      float p = (float)(c >> (8 * k) & 0xffu) / 255.0f - (1.0f - a) * bg[k];
      paint[k] += behind * (p > 0.0f ? p : 0.0f);
    }
    alpha += behind * a;
  }
  if (nearest == IR_DIST_BACKGROUND_WORD) return nearest;
  float k = 1.0f - alpha;
  uint32_t rgba = ir_pack_rgba_alpha(paint[0] + k * bg[0], paint[1] + k * bg[1], paint[2] + k * bg[2], alpha);
  return (nearest & 0xffffffff00000000ull) | rgba;
}

#endif
