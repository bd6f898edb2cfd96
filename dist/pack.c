/* Compositing words: depth and colour in one 64-bit integer, so that a MIN of words is the z-test
 * of sort-last compositing.
 * IEEE 754 floats that are >= +0 order like their bit patterns read as unsigned integers, and
 * the colour in the low half only breaks exact depth ties (deterministically). Translucent
 * frames are blended instead, in the bricks' visibility order (dist/over.cuh). */
#include <math.h>
#include <string.h>

#include "dist/dist.h"
#include "dist/over.cuh"

uint64_t ir_dist_pack(float depth, uint32_t rgba) { return ir_dist_word(depth, rgba); }

void ir_dist_over_words(const uint64_t *layers, size_t stride, const int *order, int count, size_t pixels,
                        uint64_t *out) {
  for (size_t i = 0; i < pixels; i++) out[i] = ir_dist_over_pixel(layers, stride, order, count, i);
}

void ir_dist_pack_image(const uint8_t *rgba, const float *depth, size_t pixels, uint64_t *words) {
  for (size_t i = 0; i < pixels; i++) {
    uint32_t c;
    memcpy(&c, rgba + 4 * i, sizeof c);
    words[i] = ir_dist_pack(depth[i], c);
  }
}

void ir_dist_pack_window(const uint8_t *rgba, const float *depth, int width, const int window[4], uint64_t *words) {
  size_t n = ir_dist_window_count(window);
  for (size_t i = 0; i < n; i++) {
    size_t p = ir_dist_window_pixel(i, width, window[0], window[1], window[2] - window[0]);
    uint32_t c;
    memcpy(&c, rgba + 4 * p, sizeof c);
    words[i] = ir_dist_pack(depth[p], c);
  }
}

void ir_dist_min_window(const uint64_t *words, int width, const int window[4], uint64_t *frame) {
  size_t n = ir_dist_window_count(window);
  for (size_t i = 0; i < n; i++) {
    size_t p = ir_dist_window_pixel(i, width, window[0], window[1], window[2] - window[0]);
    if (words[i] < frame[p]) frame[p] = words[i];
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
