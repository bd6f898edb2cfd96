/* Volume statistics for `inkray info` and for picking a first isovalue.
 *
 * Suggested isovalues, best first:
 *  - a builtin volume's own isovalue (data/volume.h);
 *  - label volumes (integer data with at most 32 distinct values): the midpoints between
 *    consecutive labels present, k + 0.5 for neighbouring labels k and k+1, the labels with
 *    most voxels first;
 *  - other data: values where boundaries between materials lie. Two cues on a fine histogram
 *    of 256 bins: the mean gradient magnitude of the voxels in each bin peaks at boundary
 *    values (Kindlmann and Durkin, "Semi-automatic generation of transfer functions", 1998),
 *    and the valleys between histogram peaks separate materials (air | tissue | bone).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "data/parallel.h"
#include "data/volume_internal.h"

#define FINE_BINS IR_STATS_FINE_BINS
#define MAX_LABELS 32
#define MAX_SUGGESTED 8

static inline double value_of(const ir_volume *v, size_t i) {
  switch (v->type) {
  case IR_VOXEL_UINT8: return ((const uint8_t *)v->voxels)[i];
  case IR_VOXEL_UINT16: return ((const uint16_t *)v->voxels)[i];
  case IR_VOXEL_INT16: return ((const int16_t *)v->voxels)[i];
  default: return ((const float *)v->voxels)[i];
  }
}

/* ---- Pass 1: range, mean, non-finite --------------------------------------------------------- */
typedef struct pass1 {
  const ir_volume *v;
  double lo[IR_MAX_THREADS], hi[IR_MAX_THREADS], sum[IR_MAX_THREADS];
  size_t finite[IR_MAX_THREADS];
} pass1;

static void pass1_range(void *ctx, size_t begin, size_t end, int worker) {
  pass1 *p = ctx;
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  size_t finite = 0;
  for (size_t i = begin; i < end; i++) {
    double value = value_of(p->v, i);
    if (!isfinite(value)) continue;
    lo = value < lo ? value : lo;
    hi = value > hi ? value : hi;
    sum += value;
    finite++;
  }
  p->lo[worker] = lo;
  p->hi[worker] = hi;
  p->sum[worker] = sum;
  p->finite[worker] = finite;
}

/* ---- Pass 2: histograms, gradient per value, distinct integers ---------------------------- */
typedef struct pass2_worker {
  size_t coarse[IR_HISTOGRAM_BINS];
  size_t fine[FINE_BINS];
  size_t grad_count[FINE_BINS];
  double grad_sum[FINE_BINS];
  size_t *integer_counts; /* 65536 counters for 8/16-bit data, else NULL */
} pass2_worker;

typedef struct pass2 {
  const ir_volume *v;
  double lo, hi;
  size_t grad_stride;
  pass2_worker *workers;
} pass2;

static int bin_of(double value, double lo, double hi, int bins) {
  if (hi <= lo) return 0;
  int b = (int)((value - lo) / (hi - lo) * bins);
  return b < 0 ? 0 : b >= bins ? bins - 1 : b;
}

static size_t integer_key(const ir_volume *v, size_t i) {
  switch (v->type) {
  case IR_VOXEL_UINT8: return ((const uint8_t *)v->voxels)[i];
  case IR_VOXEL_UINT16: return ((const uint16_t *)v->voxels)[i];
  case IR_VOXEL_INT16: return (size_t)(((const int16_t *)v->voxels)[i] + 32768);
  default: return 0;
  }
}

/* Central-difference gradient length at interior voxel i (NaN near non-finite data). */
static double gradient_length(const ir_volume *v, size_t i) {
  size_t sy = v->dims[0], sz = v->dims[0] * v->dims[1];
  double gx = value_of(v, i + 1) - value_of(v, i - 1);
  double gy = value_of(v, i + sy) - value_of(v, i - sy);
  double gz = value_of(v, i + sz) - value_of(v, i - sz);
  return 0.5 * sqrt(gx * gx + gy * gy + gz * gz);
}

static void pass2_rows(void *ctx, size_t begin, size_t end, int worker) {
  pass2 *p = ctx;
  pass2_worker *w = &p->workers[worker];
  const ir_volume *v = p->v;
  size_t nx = v->dims[0], ny = v->dims[1], nz = v->dims[2];
  for (size_t row = begin; row < end; row++) {
    size_t y = row % ny, z = row / ny;
    /* Gradients on interior rows, every grad_stride-th one: a sample is plenty for means. */
    bool grad_row = y > 0 && z > 0 && y + 1 < ny && z + 1 < nz && row % p->grad_stride == 0;
    for (size_t x = 0; x < nx; x++) {
      size_t i = x + nx * row;
      double value = value_of(v, i);
      if (!isfinite(value)) continue;
      w->coarse[bin_of(value, p->lo, p->hi, IR_HISTOGRAM_BINS)]++;
      int fine = bin_of(value, p->lo, p->hi, FINE_BINS);
      w->fine[fine]++;
      if (w->integer_counts) w->integer_counts[integer_key(v, i)]++;
      if (!grad_row || x == 0 || x + 1 >= nx) continue;
      double g = gradient_length(v, i);
      if (isfinite(g)) {
        w->grad_sum[fine] += g;
        w->grad_count[fine]++;
      }
    }
  }
}

/* ---- Suggestions ------------------------------------------------------------------------------ */
typedef struct candidate {
  double value, score;
} candidate;

static int by_score_desc(const void *a, const void *b) {
  double sa = ((const candidate *)a)->score, sb = ((const candidate *)b)->score;
  return (sa < sb) - (sa > sb);
}

static void add_suggestion(ir_volume_stats *s, double value, double min_gap) {
  if (s->suggested_count >= MAX_SUGGESTED || !isfinite(value)) return;
  for (int k = 0; k < s->suggested_count; k++)
    if (fabs(s->suggested_isovalues[k] - value) < min_gap) return;
  s->suggested_isovalues[s->suggested_count++] = value;
}

static void suggest_labels(ir_volume_stats *s, const size_t *counts, ir_voxel_type type,
                           size_t distinct) {
  int32_t offset = type == IR_VOXEL_INT16 ? -32768 : 0;
  candidate c[MAX_LABELS];
  int n = 0;
  long previous = -1;
  for (long key = 0; key < 65536 && (size_t)n < distinct; key++) {
    if (!counts[key]) continue;
    if (previous >= 0 && n < MAX_LABELS)
      c[n++] = (candidate){0.5 * (double)(previous + key) + offset, (double)counts[key]};
    previous = key;
  }
  qsort(c, (size_t)n, sizeof c[0], by_score_desc);
  for (int k = 0; k < n; k++) add_suggestion(s, c[k].value, 0.25);
}

/* Box-smoothed copy of a[] over +-r bins. */
static void smooth(const double *a, double *out, int r) {
  for (int b = 0; b < FINE_BINS; b++) {
    double sum = 0;
    int count = 0;
    for (int k = b - r; k <= b + r; k++)
      if (k >= 0 && k < FINE_BINS) {
        sum += a[k];
        count++;
      }
    out[b] = sum / count;
  }
}

/* Voxels within +-4 bins of bin b. */
static double peak_mass(const size_t *fine, int b) {
  size_t mass = 0;
  for (int k = b - 4; k <= b + 4; k++)
    if (k >= 0 && k < FINE_BINS) mass += fine[k];
  return (double)mass;
}

/* Material peaks of the histogram: local maxima of the smoothed log histogram that stand at
 * least e times (1 in log units) above the lowest point between them and any higher peak, and
 * hold at least 2% of the voxels within +-4 bins. Returns their bins, ascending. */
static int material_peaks(const double *logh, const size_t *fine, size_t finite, int *peaks,
                          int max_peaks) {
  int n = 0;
  for (int b = 0; b < FINE_BINS && n < max_peaks; b++) {
    bool left_ok = b == 0 || logh[b] > logh[b - 1];
    bool right_ok = b == FINE_BINS - 1 || logh[b] >= logh[b + 1];
    if (!left_ok || !right_ok) continue;
    if (peak_mass(fine, b) * 50 < (double)finite) continue;
    /* Walk each way to a higher point (or the end), keeping the lowest value passed. */
    double low_left = logh[b], low_right = logh[b];
    bool higher_left = false, higher_right = false;
    for (int k = b - 1; k >= 0 && !higher_left; k--) {
      higher_left = logh[k] > logh[b];
      low_left = logh[k] < low_left ? logh[k] : low_left;
    }
    for (int k = b + 1; k < FINE_BINS && !higher_right; k++) {
      higher_right = logh[k] > logh[b];
      low_right = logh[k] < low_right ? logh[k] : low_right;
    }
    double base = higher_left && higher_right ? (low_left > low_right ? low_left : low_right)
                  : higher_left              ? low_left
                  : higher_right             ? low_right
                                             : (low_left < low_right ? low_left : low_right);
    /* The tallest peak has no higher one: its prominence is against the deepest valley. */
    if (!higher_left && !higher_right) base = low_left < low_right ? low_left : low_right;
    if (logh[b] - base >= 1.0) peaks[n++] = b;
  }
  return n;
}

static void suggest_boundaries(ir_volume_stats *s, const size_t *fine, const size_t *grad_count,
                               const double *grad_sum, size_t finite) {
  double width = (s->max - s->min) / FINE_BINS;
  double mean_grad[FINE_BINS], g[FINE_BINS], logh_raw[FINE_BINS], logh[FINE_BINS];
  /* Bins with few voxels give noisy gradient means; ignore those under 0.02% of the data. */
  size_t min_count = finite / 5000 > 4 ? finite / 5000 : 4;
  for (int b = 0; b < FINE_BINS; b++) {
    mean_grad[b] = grad_count[b] >= min_count ? grad_sum[b] / (double)grad_count[b] : 0.0;
    logh_raw[b] = log1p((double)fine[b]);
  }
  smooth(mean_grad, g, 4);
  /* Smoothing also flattens the comb of empty bins that rescaled integer data show. */
  smooth(logh_raw, logh, 3);

  candidate c[3 * FINE_BINS];
  int n = 0;
  /* 1. Between two materials: the midpoint of their histogram peaks, where partial-volume
   *    voxels of a boundary between them lie. Best first. */
  int peaks[FINE_BINS];
  int peak_count = material_peaks(logh, fine, finite, peaks, FINE_BINS);
  for (int k = 0; k + 1 < peak_count; k++) {
    /* Pairs of big materials first: the score grows with the smaller one's share. */
    double smaller = fmin(peak_mass(fine, peaks[k]), peak_mass(fine, peaks[k + 1]));
    c[n++] = (candidate){s->min + (0.5 * (peaks[k] + peaks[k + 1]) + 0.5) * width,
                         3.0 + smaller / (double)finite};
  }
  /* 2. Above the last material, when there are two or more (the lowest is background): where
   *    a long tail (bone above tissue in CT) leaves the peak, at the first bin under a tenth of
   *    the peak's count. */
  if (peak_count > 1) {
    int p = peaks[peak_count - 1], start = p + 1;
    size_t top = 0;
    for (int k = p - 1; k <= p + 1; k++)
      if (k >= 0 && k < FINE_BINS && fine[k] > top) top = fine[k];
    while (start < FINE_BINS && fine[start] * 10 >= top) start++;
    size_t tail = 0;
    for (int k = start; k < FINE_BINS; k++) tail += fine[k];
    if (start < FINE_BINS - 2 && tail * 200 >= finite)
      c[n++] = (candidate){s->min + (start + 0.5) * width, 2.0};
  }
  /* 3. Values where the mean gradient peaks: boundaries (Kindlmann and Durkin). The end bins
   *    are the extremes of the data, where an isosurface is degenerate, so they are skipped. */
  double g_max = 0;
  for (int b = 0; b < FINE_BINS; b++) g_max = g[b] > g_max ? g[b] : g_max;
  for (int b = 2; b < FINE_BINS - 2 && g_max > 0; b++) {
    bool peak = g[b] >= g[b - 1] && g[b] > g[b + 1] && g[b] >= g[b - 2] && g[b] > g[b + 2];
    if (peak && g[b] >= 0.25 * g_max) c[n++] = (candidate){s->min + (b + 0.5) * width, g[b] / g_max};
  }
  qsort(c, (size_t)n, sizeof c[0], by_score_desc);
  for (int k = 0; k < n; k++) add_suggestion(s, c[k].value, 8 * width);
  if (s->suggested_count == 0 && s->max > s->min) add_suggestion(s, 0.5 * (s->min + s->max), 0);
}

size_t ir_volume_grad_stride(const size_t dims[3]) {
  return 1 + dims[0] * dims[1] * dims[2] / ((size_t)16 << 20);
}

void ir_volume_stats_from_counts(const ir_volume *v, const ir_volume_counts *c, ir_volume_stats *out) {
  memset(out, 0, sizeof *out);
  out->nonfinite_count = c->nonfinite;
  if (c->finite == 0) return;
  out->min = c->min;
  out->max = c->max;
  out->mean = c->sum / (double)c->finite;
  memcpy(out->histogram, c->coarse, sizeof out->histogram);
  double builtin_iso = ir_builtin_isovalue(v->name);
  if (isfinite(builtin_iso)) add_suggestion(out, builtin_iso, 0);
  size_t distinct = 0;
  for (size_t k = 0; c->integer_counts && k < 65536; k++) distinct += c->integer_counts[k] != 0;
  if (c->integer_counts && distinct >= 2 && distinct <= MAX_LABELS)
    suggest_labels(out, c->integer_counts, v->type, distinct);
  else
    suggest_boundaries(out, c->fine, c->grad_count, c->grad_sum, c->finite);
}

void ir_volume_compute_stats(const ir_volume *v, ir_volume_stats *out) {
  memset(out, 0, sizeof *out);
  size_t count = ir_volume_voxel_count(v);
  if (!v->voxels || count == 0) return;

  pass1 *p1 = calloc(1, sizeof *p1);
  if (!p1) return;
  p1->v = v;
  int workers = ir_parallel_for(count, (size_t)1 << 20, pass1_range, p1);
  ir_volume_counts c = {.min = INFINITY, .max = -INFINITY};
  for (int w = 0; w < workers; w++) {
    c.min = p1->lo[w] < c.min ? p1->lo[w] : c.min;
    c.max = p1->hi[w] > c.max ? p1->hi[w] : c.max;
    c.sum += p1->sum[w];
    c.finite += p1->finite[w];
  }
  free(p1);
  c.nonfinite = count - c.finite;
  if (c.finite == 0) {
    out->nonfinite_count = c.nonfinite;
    return;
  }

  size_t rows = v->dims[1] * v->dims[2];
  size_t grain = rows / 256 > 1 ? rows / 256 : 1;
  int row_workers = ir_parallel_workers(rows, grain);
  pass2 p2 = {.v = v, .lo = c.min, .hi = c.max, .grad_stride = ir_volume_grad_stride(v->dims),
              .workers = calloc((size_t)row_workers, sizeof(pass2_worker))};
  if (!p2.workers) return;
  bool integer = v->type != IR_VOXEL_FLOAT32;
  bool ok = true;
  for (int w = 0; w < row_workers && integer; w++) {
    p2.workers[w].integer_counts = calloc(65536, sizeof(size_t));
    ok = ok && p2.workers[w].integer_counts;
  }
  if (ok) {
    ir_parallel_for(rows, grain, pass2_rows, &p2);
    for (int w = 0; w < row_workers; w++) {
      for (int b = 0; b < IR_HISTOGRAM_BINS; b++) c.coarse[b] += p2.workers[w].coarse[b];
      for (int b = 0; b < FINE_BINS; b++) {
        c.fine[b] += p2.workers[w].fine[b];
        c.grad_count[b] += p2.workers[w].grad_count[b];
        c.grad_sum[b] += p2.workers[w].grad_sum[b];
      }
      if (w > 0 && integer)
        for (size_t k = 0; k < 65536; k++) p2.workers[0].integer_counts[k] += p2.workers[w].integer_counts[k];
    }
    c.integer_counts = integer ? p2.workers[0].integer_counts : NULL;
    ir_volume_stats_from_counts(v, &c, out);
  }
  for (int w = 0; w < row_workers; w++) free(p2.workers[w].integer_counts);
  free(p2.workers);
}
