/* Compositing words: depth and colour in one 64-bit integer, so that MPI's own MIN reduction
 * (any of its algorithms, over any number of ranks) is the z-test of sort-last compositing.
 * IEEE 754 floats that are >= +0 order like their bit patterns read as unsigned integers, and
 * the colour in the low half only breaks exact depth ties (deterministically). */
#include <math.h>
#include <string.h>

#include "dist/dist.h"

uint64_t ir_dist_pack(float depth, uint32_t rgba) {
  /* NaN or +INF: no surface. -0 and (impossible) negative depths count as 0. */
  if (!(depth < INFINITY)) return IR_DIST_BACKGROUND;
  if (!(depth > 0.0f)) depth = 0.0f;
  uint32_t bits;
  memcpy(&bits, &depth, sizeof bits);
  return (uint64_t)bits << 32 | rgba;
}

void ir_dist_pack_image(const uint8_t *rgba, const float *depth, size_t pixels, uint64_t *words) {
  for (size_t i = 0; i < pixels; i++) {
    uint32_t c;
    memcpy(&c, rgba + 4 * i, sizeof c);
    words[i] = ir_dist_pack(depth[i], c);
  }
}

void ir_dist_unpack_image(const uint64_t *words, size_t pixels, uint32_t background_rgba, uint8_t *rgba) {
  for (size_t i = 0; i < pixels; i++) {
    uint32_t c = words[i] == IR_DIST_BACKGROUND ? background_rgba : (uint32_t)words[i];
    memcpy(rgba + 4 * i, &c, sizeof c);
  }
}

void ir_dist_unpack_depth(const uint64_t *words, size_t pixels, float *depth) {
  for (size_t i = 0; i < pixels; i++) {
    uint32_t bits = (uint32_t)(words[i] >> 32);
    float d;
    memcpy(&d, &bits, sizeof d);
    depth[i] = words[i] == IR_DIST_BACKGROUND ? INFINITY : d;
  }
}
