/* inkray compact-bench: times every compaction method on plain int32 streams with uint8 flags,
 * against CUB DeviceSelect::Flagged (the reference) and a device-to-device copy of the same
 * bytes (the bandwidth ceiling); also Redzone's in-place removal given the removal list, and the
 * in-kernel ("fused") case: a producer kernel with InK-Compact/InK-Collate inside it against the
 * same producer writing a sparse array followed by an out-of-kernel compaction.
 *
 * Each figure is the median of --runs runs (default 25) after 3 warm-up runs, each run timed
 * alone with CUDA events. Each run is queued behind a short kernel that holds the GPU
 * (BENCH_HOLD_US), so that the timed work starts as soon as the GPU reaches it, as it does in a
 * pipeline whose launches run ahead: the figure is the GPU's time for the work, launch gaps
 * between its own kernels included, without the host's latency for the first launch. --idle
 * times runs that start on an idle GPU instead (the host's launch latency inside the figure).
 * Effective GB/s counts the bytes a compaction must move: values and flags read (5n) plus
 * survivors written (4k); for the fused case the producer's values read plus survivors written
 * (4n + 4k); for the copy, 4n read plus 4n written.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "app/app.h"
#include "compaction/compaction.h"
#include "inkray_version.h"

#define BENCH_WARMUP 3
#define BENCH_MAX_SIZES 8
#define BENCH_GOLDEN 0x9E3779B1u
#define BENCH_HOLD_US 50 /* longer than the host needs to queue any case's launches */

typedef struct bench_desc {
  bool quick;        /* a subset that finishes in well under a minute */
  int runs;          /* timed runs per figure; 0 = 25 */
  int sizes_log2[BENCH_MAX_SIZES];
  int size_count;    /* 0 = 2^20, 2^24, 2^27 */
  int pcts[BENCH_MAX_SIZES];
  int pct_count;     /* 0 = 2, 10, 50, 90, 98 % kept */
  const char *only;  /* time only the cases whose name contains this (and the baselines) */
  const char *csv;   /* CSV file to write, or NULL */
  bool idle;         /* start each run on an idle GPU (launch latency inside the figure) */
} bench_desc;

typedef enum case_kind { CASE_COPY, CASE_METHOD, CASE_REFERENCE, CASE_REMOVE_LIST, CASE_FUSED } case_kind;

typedef struct bench_case {
  case_kind kind;
  int which;          /* method (also for in-place removal), reference or producer */
  int then;           /* fused sparse producer: the out-of-kernel method afterwards (-1: a reference) */
  int then_ref;
  bool shuffled;      /* Redzone: removal list in random order instead of ascending */
  char name[48];
} bench_case;

typedef struct bench_state {
  ir_compact_ctx *ctx;
  cudaStream_t stream;
  cudaEvent_t start, stop;
  size_t n, k;
  uint32_t threshold;
  uint32_t *d_in, *d_out, *d_sparse, *d_list, *d_work, *d_count;
  uint8_t *d_flags, *d_sparse_flags;
  float *times;
  int runs;
  FILE *csv;
  const char *only;
  bool idle;
  char gpu[256];
} bench_state;

static const char *const bench_usage =
    "Usage: inkray compact-bench [--quick] [--runs N] [--sizes L,...] [--kept P,...] [--only TEXT]\n"
    "                            [--idle] [--csv FILE]\n"
    "Times the compaction methods on int32 streams with uint8 flags: the median of N runs\n"
    "(default 25) after warm-up, with CUDA events, for n = 2^20, 2^24, 2^27 and kept fractions\n"
    "2, 10, 50, 90, 98 %, against CUB DeviceSelect::Flagged and a device copy of the same bytes.\n"
    "  --quick        2^20 and 2^24, kept 10/50/90 %, 20 runs (under a minute)\n"
    "  --sizes L,...  stream sizes as powers of two, e.g. 20,24,27 (10..30)\n"
    "  --runs N       timed runs per figure (20..1000)\n"
    "  --kept P,...   kept fractions in percent (1..99)\n"
    "  --only TEXT    only the cases whose name contains TEXT (plus the copy and CUB baselines)\n"
    "  --idle         start each timed run on an idle GPU, so that the host's launch latency is\n"
    "                 inside the figure (default: runs are queued behind a short kernel)\n"
    "  --csv FILE     also write the figures as CSV\n"
    "Exit status: 0 done, 2 bad input, 1 runtime failure.\n";

/* ---- Timing ---------------------------------------------------------------------------------- */

static int compare_floats(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

static bool cuda_check(cudaError_t err, const char *what, bench_state *s) {
  if (err == cudaSuccess) return true;
  fprintf(stderr, "inkray: compact-bench: %s: %s", what, cudaGetErrorString(err));
  if (s && s->ctx) fprintf(stderr, " (%s)", ir_compact_last_error(s->ctx));
  fputc('\n', stderr);
  return false;
}

/* Untimed preparation before each run (restores Redzone's list, which it edits in place). */
static cudaError_t prepare_run(bench_state *s, const bench_case *c) {
  if (c->kind == CASE_REMOVE_LIST)
    return cudaMemcpyAsync(s->d_work, s->d_in, s->n * sizeof(uint32_t), cudaMemcpyDeviceToDevice, s->stream);
  return cudaSuccess;
}

static cudaError_t enqueue_run(bench_state *s, const bench_case *c) {
  const size_t n = s->n;
  cudaError_t err;
  switch (c->kind) {
  case CASE_COPY:
    return cudaMemcpyAsync(s->d_out, s->d_in, n * sizeof(uint32_t), cudaMemcpyDeviceToDevice, s->stream);
  case CASE_METHOD:
    return ir_compact_flagged(s->ctx, (ir_compact_method)c->which, s->d_in, s->d_flags, s->d_out, s->d_count, n,
                              s->stream);
  case CASE_REFERENCE:
    return ir_compact_reference_flagged(s->ctx, (ir_compact_reference)c->which, s->d_in, s->d_flags, s->d_out,
                                        s->d_count, n, s->stream);
  case CASE_REMOVE_LIST:
    return ir_compact_remove_indices(s->ctx, (ir_compact_method)c->which, s->d_work, n, s->d_list, s->k,
                                     s->d_count, s->stream);
  case CASE_FUSED:
    if (c->which != IR_PRODUCER_SPARSE && c->which != IR_PRODUCER_SPARSE_X4 && c->which != IR_PRODUCER_SPARSE_X16)
      return ir_compact_producer_run(s->ctx, (ir_compact_producer)c->which, s->d_in, s->threshold, s->d_out, NULL,
                                     s->d_count, n, s->stream);
    err = ir_compact_producer_run(s->ctx, (ir_compact_producer)c->which, s->d_in, s->threshold, s->d_sparse,
                                  s->d_sparse_flags, NULL, n, s->stream);
    if (err != cudaSuccess) return err;
    if (c->then >= 0)
      return ir_compact_flagged(s->ctx, (ir_compact_method)c->then, s->d_sparse, s->d_sparse_flags, s->d_out,
                                s->d_count, n, s->stream);
    return ir_compact_reference_flagged(s->ctx, (ir_compact_reference)c->then_ref, s->d_sparse, s->d_sparse_flags,
                                        s->d_out, s->d_count, n, s->stream);
  }
  return cudaErrorInvalidValue;
}

/* Median (and minimum) of s->runs timed runs in microseconds; negative on failure, 0 when the
 * case is filtered out by --only. */
static double time_case(bench_state *s, const bench_case *c, double *min_us) {
  if (s->only && c->kind != CASE_COPY && !(c->kind == CASE_REFERENCE && c->which == IR_COMPACT_REF_CUB) &&
      !strstr(c->name, s->only))
    return 0;
  for (int r = 0; r < BENCH_WARMUP + s->runs; r++) {
    if (!cuda_check(prepare_run(s, c), c->name, s)) return -1;
    if (!s->idle && !cuda_check(ir_compact_hold_gpu(BENCH_HOLD_US, s->stream), "queueing behind a hold kernel", s))
      return -1;
    if (!cuda_check(cudaEventRecord(s->start, s->stream), "cudaEventRecord", s)) return -1;
    if (!cuda_check(enqueue_run(s, c), c->name, s)) return -1;
    if (!cuda_check(cudaEventRecord(s->stop, s->stream), "cudaEventRecord", s)) return -1;
    if (!cuda_check(cudaEventSynchronize(s->stop), c->name, s)) return -1;
    float ms = 0;
    if (!cuda_check(cudaEventElapsedTime(&ms, s->start, s->stop), "cudaEventElapsedTime", s)) return -1;
    if (r >= BENCH_WARMUP) s->times[r - BENCH_WARMUP] = ms * 1000.0f;
  }
  qsort(s->times, (size_t)s->runs, sizeof(float), compare_floats);
  *min_us = s->times[0];
  return s->runs % 2 ? s->times[s->runs / 2] : 0.5 * (s->times[s->runs / 2 - 1] + s->times[s->runs / 2]);
}

/* ---- Data ------------------------------------------------------------------------------------ */

/* Flags for the current fraction: the producer's hashed predicate, so the flagged streams and
 * the fused producer keep the same elements. Also counts k (removed) and builds Redzone's list. */
static bool make_stream(bench_state *s, uint32_t **h_list, size_t *h_list_cap) {
  if (!cuda_check(ir_compact_producer_run(s->ctx, IR_PRODUCER_SPARSE, s->d_in, s->threshold, s->d_sparse,
                                          s->d_flags, NULL, s->n, s->stream),
                  "making flags", s))
    return false;
  uint8_t *flags = malloc(s->n);
  if (*h_list_cap < s->n) {
    free(*h_list);
    *h_list = malloc(s->n * sizeof(uint32_t));
    *h_list_cap = s->n;
  }
  if (!flags || !*h_list) {
    fprintf(stderr, "inkray: compact-bench: out of host memory for %zu elements\n", s->n);
    free(flags);
    return false;
  }
  if (!cuda_check(cudaStreamSynchronize(s->stream), "making flags", s) ||
      !cuda_check(cudaMemcpy(flags, s->d_flags, s->n, cudaMemcpyDeviceToHost), "reading flags", s)) {
    free(flags);
    return false;
  }
  s->k = 0;
  for (size_t i = 0; i < s->n; i++)
    if (!flags[i]) (*h_list)[s->k++] = (uint32_t)i;
  free(flags);
  return cuda_check(cudaMemcpy(s->d_list, *h_list, s->k * sizeof(uint32_t), cudaMemcpyHostToDevice),
                    "uploading the removal list", s);
}

static void shuffle(uint32_t *list, size_t k) {
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (size_t i = k; i > 1; i--) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    size_t j = (size_t)(x % i);
    uint32_t t = list[i - 1];
    list[i - 1] = list[j];
    list[j] = t;
  }
}

/* ---- Report ---------------------------------------------------------------------------------- */

static void report(bench_state *s, int kept_pct, const char *name, double us, double min_us, double bytes,
                   double copy_gbps, double base_us) {
  if (us <= 0) return; /* filtered out */
  const double gbps = bytes / (us * 1e3);
  printf("%10zu %5d%% %-32s %10.1f %8.0f %7.0f%%", s->n, kept_pct, name, us, gbps,
         copy_gbps > 0 ? 100.0 * gbps / copy_gbps : 100.0);
  if (base_us > 0) printf(" %7.2fx", us / base_us);
  printf("\n");
  fflush(stdout);
  if (s->csv)
    fprintf(s->csv, "%zu,%d,\"%s\",%.2f,%.2f,%.1f,%.3f,%.3f,\"%s\"\n", s->n, kept_pct, name, us, min_us, gbps,
            copy_gbps > 0 ? gbps / copy_gbps : 1.0, base_us > 0 ? us / base_us : 0.0, s->gpu);
}

static int bench_size(bench_state *s, const int *pcts, int pct_count, uint32_t **h_list, size_t *h_list_cap) {
  double min_us = 0;
  bench_case copy = {CASE_COPY, 0, 0, 0, false, "copy (ceiling)"};
  const double copy_us = time_case(s, &copy, &min_us);
  if (copy_us < 0) return 1;
  const double copy_gbps = 8.0 * (double)s->n / (copy_us * 1e3);
  report(s, 100, copy.name, copy_us, min_us, 8.0 * (double)s->n, 0, 0);

  for (int f = 0; f < pct_count; f++) {
    s->threshold = (uint32_t)((double)pcts[f] / 100.0 * 4294967296.0);
    if (!make_stream(s, h_list, h_list_cap)) return 1;
    const size_t kept = s->n - s->k;
    const double bytes = 5.0 * (double)s->n + 4.0 * (double)kept;

    bench_case cub = {CASE_REFERENCE, IR_COMPACT_REF_CUB, 0, 0, false, "cub DeviceSelect::Flagged"};
    const double cub_us = time_case(s, &cub, &min_us);
    if (cub_us < 0) return 1;
    report(s, pcts[f], cub.name, cub_us, min_us, bytes, copy_gbps, cub_us);

    for (int m = 0; m < IR_COMPACT_METHOD_COUNT; m++) {
      bench_case c = {CASE_METHOD, m, 0, 0, false, ""};
      snprintf(c.name, sizeof c.name, "%s", ir_compact_methods()[m].name);
      const double us = time_case(s, &c, &min_us);
      if (us < 0) return 1;
      report(s, pcts[f], c.name, us, min_us, bytes, copy_gbps, cub_us);
    }
    for (int r = IR_COMPACT_REF_THRUST_BARE; r < IR_COMPACT_REF_COUNT; r++) {
      bench_case c = {CASE_REFERENCE, r, 0, 0, false, ""};
      snprintf(c.name, sizeof c.name, "%s", ir_compact_reference_name((ir_compact_reference)r));
      const double us = time_case(s, &c, &min_us);
      if (us < 0) return 1;
      report(s, pcts[f], c.name, us, min_us, bytes, copy_gbps, cub_us);
    }
    /* Redzone given the removal list, in place; ascending list, then the same list shuffled. */
    for (int shuffled = 0; shuffled < 2; shuffled++) {
      if (shuffled) {
        shuffle(*h_list, s->k);
        if (!cuda_check(cudaMemcpy(s->d_list, *h_list, s->k * sizeof(uint32_t), cudaMemcpyHostToDevice),
                        "uploading the removal list", s))
          return 1;
      }
      bench_case c = {CASE_REMOVE_LIST, IR_COMPACT_REDZONE, 0, 0, shuffled != 0, ""};
      snprintf(c.name, sizeof c.name, "redzone in place, %s list", shuffled ? "shuffled" : "sorted");
      const double us = time_case(s, &c, &min_us);
      if (us < 0) return 1;
      report(s, pcts[f], c.name, us, min_us, bytes, copy_gbps, cub_us);
      if (shuffled) continue;
      /* the same list through an O(n) method: keep flags built from the list, compaction, copy back */
      bench_case o = {CASE_REMOVE_LIST, IR_COMPACT_INK_COLLATE, 0, 0, false, "ink-collate in place, sorted list"};
      const double o_us = time_case(s, &o, &min_us);
      if (o_us < 0) return 1;
      report(s, pcts[f], o.name, o_us, min_us, bytes, copy_gbps, cub_us);
    }

    /* Fused: producer + out-of-kernel compaction against the producer with an in-kernel emit. */
    const double fused_bytes = 4.0 * (double)s->n + 4.0 * (double)kept;
    bench_case base = {CASE_FUSED, IR_PRODUCER_SPARSE, -1, IR_COMPACT_REF_CUB, false, "fused: sparse + cub"};
    const double base_us = time_case(s, &base, &min_us);
    if (base_us < 0) return 1;
    report(s, pcts[f], base.name, base_us, min_us, fused_bytes, copy_gbps, base_us);
    for (int m = 0; m < IR_COMPACT_METHOD_COUNT; m++) {
      if (m == IR_COMPACT_REDZONE || m == IR_COMPACT_THRUST) continue; /* not contenders here */
      bench_case c = {CASE_FUSED, IR_PRODUCER_SPARSE, m, 0, false, ""};
      snprintf(c.name, sizeof c.name, "fused: sparse + %s", ir_compact_methods()[m].name);
      const double us = time_case(s, &c, &min_us);
      if (us < 0) return 1;
      report(s, pcts[f], c.name, us, min_us, fused_bytes, copy_gbps, base_us);
    }
    for (int p = IR_PRODUCER_INK_COLLATE; p <= IR_PRODUCER_INK_COMPACT_SECTIONS; p++) {
      bench_case c = {CASE_FUSED, p, 0, 0, false, ""};
      snprintf(c.name, sizeof c.name, "fused: in-kernel %s", ir_compact_producer_name((ir_compact_producer)p));
      const double us = time_case(s, &c, &min_us);
      if (us < 0) return 1;
      report(s, pcts[f], c.name, us, min_us, fused_bytes, copy_gbps, base_us);
    }
    /* The same comparison with four and sixteen elements per thread in every producer. */
    static const struct {
      int sparse, collate, compact;
      const char *tag;
    } wide[] = {{IR_PRODUCER_SPARSE_X4, IR_PRODUCER_INK_COLLATE_X4, IR_PRODUCER_INK_COMPACT_X4, "x4"},
                {IR_PRODUCER_SPARSE_X16, IR_PRODUCER_INK_COLLATE_X16, IR_PRODUCER_INK_COMPACT_X16, "x16"}};
    for (size_t w = 0; w < sizeof wide / sizeof wide[0]; w++) {
      bench_case cases[4] = {{CASE_FUSED, wide[w].sparse, -1, IR_COMPACT_REF_CUB, false, ""},
                             {CASE_FUSED, wide[w].sparse, IR_COMPACT_INK_COLLATE, 0, false, ""},
                             {CASE_FUSED, wide[w].collate, 0, 0, false, ""},
                             {CASE_FUSED, wide[w].compact, 0, 0, false, ""}};
      snprintf(cases[0].name, sizeof cases[0].name, "fused: sparse-%s + cub", wide[w].tag);
      snprintf(cases[1].name, sizeof cases[1].name, "fused: sparse-%s + ink-collate", wide[w].tag);
      snprintf(cases[2].name, sizeof cases[2].name, "fused: in-kernel ink-collate-%s", wide[w].tag);
      snprintf(cases[3].name, sizeof cases[3].name, "fused: in-kernel ink-compact-%s", wide[w].tag);
      double wide_base_us = 0;
      for (size_t k = 0; k < 4; k++) {
        const double us = time_case(s, &cases[k], &min_us);
        if (us < 0) return 1;
        if (k == 0) wide_base_us = us;
        report(s, pcts[f], cases[k].name, us, min_us, fused_bytes, copy_gbps, wide_base_us);
      }
    }
  }
  return 0;
}

/* ---- Options and set-up -------------------------------------------------------------------------- */

/* A whole number in [min, max], the whole string (kept local so that the benchmark also builds
 * without the rest of the app, see tests/compaction/CMakeLists.txt). */
static bool parse_long(const char *text, long min, long max, long *out) {
  char *end = NULL;
  if (!text || !*text) return false;
  long value = strtol(text, &end, 10);
  if (*end || value < min || value > max) return false;
  *out = value;
  return true;
}

static int parse_options(int argc, char **argv, bench_desc *d) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    long value = 0;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(bench_usage, stdout);
      return -1;
    } else if (strcmp(a, "--quick") == 0) {
      d->quick = true;
    } else if (strcmp(a, "--idle") == 0) {
      d->idle = true;
    } else if (strcmp(a, "--csv") == 0 && i + 1 < argc) {
      d->csv = argv[++i];
    } else if (strcmp(a, "--runs") == 0 && i + 1 < argc) {
      if (!parse_long(argv[++i], 20, 1000, &value)) {
        fprintf(stderr, "inkray: compact-bench: --runs '%s': expected a whole number from 20 to 1000\n", argv[i]);
        return 2;
      }
      d->runs = (int)value;
    } else if (strcmp(a, "--only") == 0 && i + 1 < argc) {
      d->only = argv[++i];
    } else if (strcmp(a, "--kept") == 0 && i + 1 < argc) {
      char buf[128];
      snprintf(buf, sizeof buf, "%s", argv[++i]);
      d->pct_count = 0;
      for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (d->pct_count == BENCH_MAX_SIZES || !parse_long(tok, 1, 99, &value)) {
          fprintf(stderr, "inkray: compact-bench: --kept '%s': expected up to %d percentages from 1 to 99, "
                          "e.g. 2,50,98\n", argv[i], BENCH_MAX_SIZES);
          return 2;
        }
        d->pcts[d->pct_count++] = (int)value;
      }
      if (d->pct_count == 0) {
        fprintf(stderr, "inkray: compact-bench: --kept needs at least one percentage\n");
        return 2;
      }
    } else if (strcmp(a, "--sizes") == 0 && i + 1 < argc) {
      char buf[128];
      snprintf(buf, sizeof buf, "%s", argv[++i]);
      d->size_count = 0;
      for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (d->size_count == BENCH_MAX_SIZES || !parse_long(tok, 10, 30, &value)) {
          fprintf(stderr, "inkray: compact-bench: --sizes '%s': expected up to %d powers of two from 10 to 30, "
                          "e.g. 20,24,27\n", argv[i], BENCH_MAX_SIZES);
          return 2;
        }
        d->sizes_log2[d->size_count++] = (int)value;
      }
      if (d->size_count == 0) {
        fprintf(stderr, "inkray: compact-bench: --sizes needs at least one size\n");
        return 2;
      }
    } else {
      fprintf(stderr, "inkray: compact-bench: unknown or incomplete option '%s'\n\n%s", a, bench_usage);
      return 2;
    }
  }
  return 0;
}

static int run_bench(const bench_desc *d) {
  static const int full_pcts[] = {2, 10, 50, 90, 98}, quick_pcts[] = {10, 50, 90};
  int sizes[BENCH_MAX_SIZES], size_count = d->size_count;
  if (size_count) memcpy(sizes, d->sizes_log2, sizeof sizes);
  else if (d->quick) {
    sizes[0] = 20;
    sizes[1] = 24;
    size_count = 2;
  } else {
    sizes[0] = 20;
    sizes[1] = 24;
    sizes[2] = 27;
    size_count = 3;
  }
  size_t max_n = 0;
  for (int i = 0; i < size_count; i++)
    if (((size_t)1 << sizes[i]) > max_n) max_n = (size_t)1 << sizes[i];

  bench_state s = {0};
  s.runs = d->runs ? d->runs : (d->quick ? 20 : 25);
  int devices = 0;
  const cudaError_t device_err = cudaGetDeviceCount(&devices);
  if (device_err != cudaSuccess || devices == 0) {
    fprintf(stderr, "inkray: compact-bench needs a CUDA GPU: %s\n",
            device_err != cudaSuccess ? cudaGetErrorString(device_err) : "no CUDA device found");
    return 1;
  }
  struct cudaDeviceProp prop;
  if (!cuda_check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties", NULL)) return 1;
  snprintf(s.gpu, sizeof s.gpu, "%s", prop.name);
  if (d->csv && !(s.csv = fopen(d->csv, "w"))) {
    fprintf(stderr, "inkray: compact-bench: cannot write %s\n", d->csv);
    return 2;
  }
  int status = 1;
  uint32_t *h_in = malloc(max_n * sizeof(uint32_t)), *h_list = NULL;
  size_t h_list_cap = 0;
  s.times = malloc((size_t)s.runs * sizeof(float));
  if (!h_in || !s.times) {
    fprintf(stderr, "inkray: compact-bench: out of host memory\n");
    goto done;
  }
  const size_t bytes = max_n * sizeof(uint32_t);
  if (!cuda_check(ir_compact_ctx_create(&s.ctx, max_n), "creating the compaction context", &s) ||
      !cuda_check(cudaStreamCreate(&s.stream), "cudaStreamCreate", &s) ||
      !cuda_check(cudaEventCreate(&s.start), "cudaEventCreate", &s) ||
      !cuda_check(cudaEventCreate(&s.stop), "cudaEventCreate", &s) ||
      !cuda_check(cudaMalloc((void **)&s.d_in, bytes), "cudaMalloc", &s) ||
      !cuda_check(cudaMalloc((void **)&s.d_out, bytes), "cudaMalloc", &s) ||
      !cuda_check(cudaMalloc((void **)&s.d_sparse, bytes), "cudaMalloc", &s) ||
      !cuda_check(cudaMalloc((void **)&s.d_list, bytes), "cudaMalloc", &s) ||
      !cuda_check(cudaMalloc((void **)&s.d_work, bytes), "cudaMalloc", &s) ||
      !cuda_check(cudaMalloc((void **)&s.d_count, sizeof(uint32_t)), "cudaMalloc", &s) ||
      !cuda_check(cudaMalloc((void **)&s.d_flags, max_n), "cudaMalloc", &s) ||
      !cuda_check(cudaMalloc((void **)&s.d_sparse_flags, max_n), "cudaMalloc", &s))
    goto done;
  for (size_t i = 0; i < max_n; i++) h_in[i] = (uint32_t)i * BENCH_GOLDEN; /* distinct, spread values */
  if (!cuda_check(cudaMemcpy(s.d_in, h_in, bytes, cudaMemcpyHostToDevice), "uploading the stream", &s)) goto done;

  char date[32];
  time_t now = time(NULL);
  strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
  s.idle = d->idle;
  printf("inkray %s compact-bench on %s (%d SMs), %s; median of %d runs after %d warm-up, CUDA events, %s\n",
         INKRAY_VERSION, s.gpu, prop.multiProcessorCount, date, s.runs, BENCH_WARMUP,
         s.idle ? "each run started on an idle GPU" : "each run queued behind a hold kernel");
#ifndef NDEBUG
  printf("note: a debug build (removal lists are checked with a host sync): figures are not representative\n");
#endif
  printf("%10s %6s %-32s %10s %8s %8s %8s\n", "n", "kept", "case", "median us", "GB/s", "of copy", "vs base");
  if (s.csv) fprintf(s.csv, "n,kept_pct,case,median_us,min_us,effective_gbps,copy_fraction,vs_base,gpu\n");
  const int *pcts = d->pct_count ? d->pcts : d->quick ? quick_pcts : full_pcts;
  const int pct_count = d->pct_count ? d->pct_count : d->quick ? 3 : 5;
  s.only = d->only;
  status = 0;
  for (int i = 0; i < size_count && status == 0; i++) {
    s.n = (size_t)1 << sizes[i];
    status = bench_size(&s, pcts, pct_count, &h_list, &h_list_cap);
  }
  printf("vs base: time over CUB's for plain streams, over 'fused: sparse + cub' for fused rows ('fused: sparse-x4 +\n"
         "cub' for the x4 rows, 'fused: sparse-x16 + cub' for the x16 rows)\n");
done:
  if (s.csv) fclose(s.csv);
  cudaFree(s.d_in);
  cudaFree(s.d_out);
  cudaFree(s.d_sparse);
  cudaFree(s.d_list);
  cudaFree(s.d_work);
  cudaFree(s.d_count);
  cudaFree(s.d_flags);
  cudaFree(s.d_sparse_flags);
  if (s.start) cudaEventDestroy(s.start);
  if (s.stop) cudaEventDestroy(s.stop);
  if (s.stream) cudaStreamDestroy(s.stream);
  ir_compact_ctx_destroy(s.ctx);
  free(h_in);
  free(h_list);
  free(s.times);
  return status;
}

int app_compact_bench_main(int argc, char **argv) {
  bench_desc desc = {0};
  const int parsed = parse_options(argc, argv, &desc);
  if (parsed != 0) return parsed < 0 ? 0 : parsed;
  return run_bench(&desc);
}
