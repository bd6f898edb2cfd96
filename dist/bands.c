/* Bands of rows for replicated data (sort-first): which rows of the image each rank traces, and
 * how the cuts between bands follow the ranks' measured times.
 *
 * The cost model is a density over the rows in ir_dist_band_slots(ranks) equal slots, uniform at
 * first. After a frame, the slots of each band are scaled so that the band's modelled cost is its
 * measured time (a slot that two bands share, in proportion to its part in each); the new cut k
 * is where the density's running sum reaches k/ranks of the total. Scaling keeps the shape that
 * earlier frames' cuts taught the model within a band, so a cost that peaks inside one band is
 * learned as the cuts move across it (cutting by each band's mean density alone oscillates there:
 * tests/dist/test_dist_decompose.c follows both on such a cost). A fixed cost per frame (launches,
 * the outside fill) is the same on every rank and moves nothing once the times are equal. */
#include <math.h>

#include "dist/dist.h"

int ir_dist_band_slots(int ranks) { return ranks < 4 ? 64 : 16 * ranks; }

void ir_dist_bands_even(int ranks, double *cuts, double *density) {
  for (int r = 0; r <= ranks; r++) cuts[r] = (double)r / (double)ranks;
  for (int s = 0, n = ir_dist_band_slots(ranks); s < n; s++) density[s] = 1.0;
}

/* The part of slot s (of n, each 1/n wide) inside [a, b), as a fraction of the slot. */
static double slot_share(int s, int n, double a, double b) {
  double lo = (double)s / n, hi = (double)(s + 1) / n;
  double in = (b < hi ? b : hi) - (a > lo ? a : lo);
  return in > 0.0 ? in * n : 0.0;
}

void ir_dist_bands_balance(int ranks, const double *times, double *cuts, double *density) {
  if (ranks < 2) return;
  double total = 0.0;
  for (int r = 0; r < ranks; r++) {
    if (!isfinite(times[r]) || times[r] < 0.0) return;
    total += times[r];
  }
  if (!(total > 0.0)) return;
  const int n = ir_dist_band_slots(ranks);
  /* Each band's slots scaled to its measured time (a time of 0 counts as a millionth of the
   * total, so that no slot's density reaches 0 and stops being scaled). */
  for (int r = 0; r < ranks; r++) {
    double a = cuts[r], b = cuts[r + 1], model = 0.0;
    int first = (int)floor(a * n), last = (int)ceil(b * n);
    if (first < 0) first = 0;
    if (last > n) last = n;
    for (int s = first; s < last; s++) model += density[s] * slot_share(s, n, a, b) / n;
    if (!(model > 0.0)) continue;
    double t = times[r] > 1e-6 * total ? times[r] : 1e-6 * total, scale = t / model;
    for (int s = first; s < last; s++) {
      double w = slot_share(s, n, a, b);
      density[s] *= (1.0 - w) + scale * w;
    }
  }
  /* Cut k where the running sum of the density reaches k / ranks of its total. */
  double sum = 0.0;
  for (int s = 0; s < n; s++) sum += density[s] / n;
  double before = 0.0; /* the density's sum over the slots above slot s */
  int s = 0;
  for (int k = 1; k < ranks; k++) {
    double want = sum * (double)k / (double)ranks;
    while (s < n - 1 && before + density[s] / n < want) before += density[s++] / n;
    double part = density[s] > 0.0 ? (want - before) / (density[s] / n) : 1.0;
    cuts[k] = ((double)s + (part < 0.0 ? 0.0 : part > 1.0 ? 1.0 : part)) / n;
  }
  cuts[0] = 0.0;
  cuts[ranks] = 1.0;
  /* Every band at least IR_DIST_BAND_MIN / ranks wide: down from the top, then up from the
   * bottom (the widths' minimums sum to at most 1, so both hold at the end). */
  double least = IR_DIST_BAND_MIN / (double)ranks;
  for (int k = 1; k < ranks; k++)
    if (cuts[k] < cuts[k - 1] + least) cuts[k] = cuts[k - 1] + least;
  for (int k = ranks - 1; k >= 1; k--)
    if (cuts[k] > cuts[k + 1] - least) cuts[k] = cuts[k + 1] - least;
}

void ir_dist_band_rows(const double *cuts, int r, int y0, int y1, int rows[2]) {
  double n = (double)(y1 - y0);
  rows[0] = y0 + (int)floor(cuts[r] * n + 0.5);
  rows[1] = y0 + (int)floor(cuts[r + 1] * n + 0.5);
  if (rows[0] > y1) rows[0] = y1;
  if (rows[1] > y1) rows[1] = y1;
  if (rows[1] < rows[0]) rows[1] = rows[0];
}
