/* Brick decomposition for sort-last rendering: one brick per rank, the rank count's prime
 * factors (largest first) each splitting the axis whose bricks are currently longest, so the
 * bricks stay close to cubes and their faces (the extra voxels each rank loads) small.
 *
 * Along one axis of N voxels cut into p parts, part j owns voxels [c_j, c_j+1) with
 * c_j = floor(j N / p). It draws the region between the centres of voxels c_j and c_j+1 (the
 * volume's faces at the ends), where every trilinear sample needs voxels c_j .. c_j+1 only,
 * so neighbours share one voxel; the gradient's central differences one voxel further out need
 * more on each inner face, and rays start at the sample of the whole volume's grid before the
 * clip box, up to half a voxel outside it: IR_DIST_GHOST voxels in all. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist.h"

static const char *const axis_names = "xyz";

ir_status ir_dist_decompose(const size_t dims[3], int ranks, ir_dist_layout *out, char err[IR_ERR_LEN]) {
  memset(out, 0, sizeof *out);
  if (ranks < 1 || ranks > IR_DIST_MAX_RANKS) {
    snprintf(err, IR_ERR_LEN, "%d ranks: a distributed run needs 1 to %d ranks", ranks, IR_DIST_MAX_RANKS);
    return IR_ERR_INPUT;
  }
  int factors[32], count = 0;
  for (int n = ranks, f = 2; n > 1;) {
    if (n % f == 0) {
      factors[count++] = f;
      n /= f;
    } else {
      f = f * f > n ? n : f + 1;
    }
  }
  int parts[3] = {1, 1, 1};
  for (int i = count - 1; i >= 0; i--) {
    int axis = 0;
    for (int k = 1; k < 3; k++)
      if ((double)dims[k] / parts[k] > (double)dims[axis] / parts[axis]) axis = k;
    parts[axis] *= factors[i];
  }
  for (int k = 0; k < 3; k++) {
    if (dims[k] / (size_t)parts[k] < IR_DIST_MIN_THICKNESS) {
      snprintf(err, IR_ERR_LEN,
               "%d ranks on %zux%zux%zu voxels: %d bricks along %c would own %zu voxel%s each; a brick "
               "needs at least %d along every axis: use fewer ranks (or a count with smaller prime factors)",
               ranks, dims[0], dims[1], dims[2], parts[k], axis_names[k], dims[k] / (size_t)parts[k],
               dims[k] / (size_t)parts[k] == 1 ? "" : "s", IR_DIST_MIN_THICKNESS);
      return IR_ERR_INPUT;
    }
  }
  memcpy(out->dims, dims, sizeof out->dims);
  memcpy(out->parts, parts, sizeof out->parts);
  out->ranks = ranks;
  return IR_OK;
}

/* The summed projection of the layout's largest brick over the views (pixels): of the part of
 * each brick inside the clip box, where there is one (a brick wholly outside draws nothing). */
static double largest_brick_pixels(const ir_dist_layout *L, const float spacing[3], const ir_camera *views, int count,
                                   int width, int height, const float *clip_lo, const float *clip_hi) {
  double sum = 0.0;
  for (int v = 0; v < count; v++) {
    double largest = 0.0;
    for (int r = 0; r < L->ranks; r++) {
      ir_dist_brick b;
      ir_dist_brick_of(L, r, &b);
      double lo[3], hi[3];
      bool drawn = true;
      for (int k = 0; k < 3; k++) {
        double a = b.clip_lo[k], z = b.clip_hi[k];
        if (clip_lo && clip_hi) a = fmax(a, clip_lo[k]), z = fmin(z, clip_hi[k]);
        drawn = drawn && a < z;
        lo[k] = a * spacing[k], hi[k] = z * spacing[k];
      }
      double px = drawn ? ir_camera_box_pixels(&views[v], width, height, lo, hi) : 0.0;
      largest = px > largest ? px : largest;
    }
    sum += largest;
  }
  return sum;
}

ir_status ir_dist_decompose_for_views(const size_t dims[3], const float spacing[3], int ranks, const ir_camera *views,
                                      int count, int width, int height, const float *clip_lo, const float *clip_hi,
                                      ir_dist_layout *out, char err[IR_ERR_LEN]) {
  ir_status st = ir_dist_decompose(dims, ranks, out, err);
  /* The scores cost grids x views x ranks projections on every rank: about 1 s for 4096 ranks
   * and 8 views on one core, 13 s for 65536. */
  if (st != IR_OK || ranks == 1 || ranks > IR_DIST_VIEW_RANKS_MAX || count <= 0 || width <= 0 || height <= 0)
    return st;
  double best = largest_brick_pixels(out, spacing, views, count, width, height, clip_lo, clip_hi);
  /* Every grid of bricks whose product is `ranks` (d(ranks)^2 of them at most); a grid must beat
   * the current choice by 1 % to replace it, so that where the views do not tell the grids apart
   * the bricks stay near cubes. */
  for (int a = 1; a <= ranks; a++) {
    if (ranks % a) continue;
    for (int b = 1; b <= ranks / a; b++) {
      if ((ranks / a) % b) continue;
      ir_dist_layout c = *out;
      c.parts[0] = a, c.parts[1] = b, c.parts[2] = ranks / a / b;
      bool thick = true;
      for (int k = 0; k < 3; k++) thick = thick && dims[k] / (size_t)c.parts[k] >= IR_DIST_MIN_THICKNESS;
      if (!thick) continue;
      double score = largest_brick_pixels(&c, spacing, views, count, width, height, clip_lo, clip_hi);
      if (score < 0.99 * best) {
        best = score;
        *out = c;
      }
    }
  }
  return IR_OK;
}

void ir_dist_brick_of(const ir_dist_layout *L, int rank, ir_dist_brick *out) {
  memset(out, 0, sizeof *out);
  out->rank = rank;
  out->cell[0] = rank % L->parts[0];
  out->cell[1] = rank / L->parts[0] % L->parts[1];
  out->cell[2] = rank / (L->parts[0] * L->parts[1]);
  for (int k = 0; k < 3; k++) {
    size_t n = L->dims[k], p = (size_t)L->parts[k], j = (size_t)out->cell[k];
    size_t lo = j * n / p, hi = (j + 1) * n / p;
    bool first = j == 0, last = j + 1 == p;
    out->own_lo[k] = lo;
    out->own_hi[k] = hi;
    out->load_lo[k] = first || lo < IR_DIST_GHOST ? 0 : lo - IR_DIST_GHOST;
    out->load_hi[k] = last ? n : (hi + 1 + IR_DIST_GHOST < n ? hi + 1 + IR_DIST_GHOST : n);
    out->clip_lo[k] = first ? 0.0f : (float)lo + 0.5f;
    out->clip_hi[k] = last ? (float)n : (float)hi + 0.5f;
  }
}

/* Front to back for a camera at `eye_voxel` (whole-volume voxel coordinates). A ray leaves the
 * eye's slab along each axis and never comes back (rays are straight), so along any ray every
 * axis's distance |cell_k - eye_cell_k| in brick cells only grows, and it grows by one at each
 * face the ray crosses: the sum over the axes strictly increases from brick to brick along every
 * ray. Sorting by it (ties, bricks no ray meets both of, by rank) is a visibility order of the
 * whole grid for every pixel at once. An eye outside the volume counts as in the nearest cell. */
void ir_dist_visibility_order(const ir_dist_layout *L, const double eye_voxel[3], int *order) {
  int eye_cell[3];
  for (int k = 0; k < 3; k++) {
    size_t n = L->dims[k], p = (size_t)L->parts[k];
    int c = 0;
    for (size_t j = 1; j < p; j++)
      if (eye_voxel[k] >= (double)(j * n / p) + 0.5) c = (int)j;
    eye_cell[k] = c;
  }
  /* A counting sort by key, stable (ties by rank): O(ranks) a frame. */
  int max_key = (L->parts[0] - 1) + (L->parts[1] - 1) + (L->parts[2] - 1);
  int *first = calloc((size_t)max_key + 2, sizeof *first), *key = malloc((size_t)L->ranks * sizeof *key);
  if (!first || !key) { /* no memory for the counts: the same order, one pass per key */
    free(first);
    free(key);
    int n = 0;
    for (int k = 0; k <= max_key; k++)
      for (int r = 0; r < L->ranks; r++) {
        ir_dist_brick b;
        ir_dist_brick_of(L, r, &b);
        if (abs(b.cell[0] - eye_cell[0]) + abs(b.cell[1] - eye_cell[1]) + abs(b.cell[2] - eye_cell[2]) == k)
          order[n++] = r;
      }
    return;
  }
  for (int r = 0; r < L->ranks; r++) {
    ir_dist_brick b;
    ir_dist_brick_of(L, r, &b);
    key[r] = abs(b.cell[0] - eye_cell[0]) + abs(b.cell[1] - eye_cell[1]) + abs(b.cell[2] - eye_cell[2]);
    first[key[r] + 1]++;
  }
  for (int k = 1; k <= max_key + 1; k++) first[k] += first[k - 1];
  for (int r = 0; r < L->ranks; r++) order[first[key[r]]++] = r;
  free(first);
  free(key);
}
