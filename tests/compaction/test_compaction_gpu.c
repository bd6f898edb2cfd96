/* Every compaction method on the GPU against a CPU reference.
 *
 * Sizes n in {0, 1, 31, 32, 33, 1023, 1024, 1025, 65537, 2^20+7, 2^26}, kept fractions
 * {0, one element, 2, 10, 50, 90, 98, 100 %}, patterns uniform random, long runs, all valid at
 * the end (fraction-driven), alternating and a single valid element in the middle; output
 * buffers poisoned before each run. Stable methods must reproduce the reference exactly;
 * unstable ones the same multiset and count; Redzone's in-place form must leave exactly the
 * kept items in the first n-k slots. Values are distinct (a bijection of the index), so a
 * multiset check is one pass with a "seen" bitmap instead of a sort.
 *
 * Redzone's device-side refusal of bad removal lists (out of range, duplicates in the red zone).
 *
 * --sanitize: the reduced set (n <= 65537) to run under compute-sanitizer memcheck/racecheck
 * (ctest: test_compaction_gpu_memcheck, _racecheck). --probe: exit 0 with a device, 77 without.
 * Skips (exit 77) where there is no CUDA device.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "compaction/compaction.h"
#include "tests/check.h"

#define POISON 0xDEADBEEFu
#define GUARD 64 /* poisoned words past n that no method may touch */
#define MAX_FAILURE_LINES 40

static bool sanitize_mode;
static size_t max_n;
static ir_compact_ctx *ctx;
static cudaStream_t stream;
static uint32_t *d_in, *d_out, *d_list, *d_count, *d_n_word, *d_k_word;
static uint8_t *d_flags;
static uint32_t *h_in, *h_out, *h_expected, *h_list;
static uint8_t *h_flags, *h_seen;
static int failure_lines;

/* ---- Data ---------------------------------------------------------------------------------- */

#define GOLDEN 0x9E3779B1u /* odd, so value(i) = i * GOLDEN is a bijection of 32-bit words */
static uint32_t golden_inverse;
static uint32_t value_of(size_t i) { return (uint32_t)i * GOLDEN; }
static size_t index_of(uint32_t v) { return (size_t)(uint32_t)(v * golden_inverse); }

static uint64_t rng_state = 0x243F6A8885A308D3ull;
static uint32_t rng(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (uint32_t)(rng_state >> 16);
}
static double rng_unit(void) { return rng() / 4294967296.0; }

typedef enum { PAT_UNIFORM, PAT_RUNS, PAT_END, PAT_ALTERNATING, PAT_SINGLE_MIDDLE, PAT_RAY_MASK, PAT_COUNT } pattern;
static const char *const pattern_names[PAT_COUNT] = {"uniform", "long-runs", "valid-at-end", "alternating",
                                                     "single-middle", "ray-mask-512x512"};
#define ONE_ELEMENT (-1.0)
static const double fractions[] = {0.0, ONE_ELEMENT, 0.02, 0.10, 0.50, 0.90, 0.98, 1.0};
#define FRACTION_COUNT (sizeof fractions / sizeof fractions[0])

static void make_flags(size_t n, pattern p, double fraction) {
  memset(h_flags, 0, n);
  switch (p) {
  case PAT_UNIFORM:
    if (fraction == ONE_ELEMENT) {
      if (n) h_flags[rng() % n] = 1;
    } else {
      for (size_t i = 0; i < n; i++) h_flags[i] = rng_unit() < fraction;
    }
    break;
  case PAT_RUNS: /* runs of 1..4096 elements, each kept with the given probability */
    if (fraction == ONE_ELEMENT) {
      if (n) h_flags[rng() % n] = 1;
      break;
    }
    for (size_t i = 0; i < n;) {
      size_t len = 1 + rng() % 4096;
      bool keep = rng_unit() < fraction;
      for (size_t j = 0; j < len && i < n; j++, i++) h_flags[i] = keep;
    }
    break;
  case PAT_END: {
    size_t kept = fraction == ONE_ELEMENT ? (n > 0) : (size_t)(fraction * (double)n + 0.5);
    for (size_t i = n - kept; i < n; i++) h_flags[i] = 1;
    break;
  }
  case PAT_ALTERNATING:
    for (size_t i = 0; i < n; i++) h_flags[i] = (i & 1) == 0;
    break;
  case PAT_SINGLE_MIDDLE:
    if (n) h_flags[n / 2] = 1;
    break;
  case PAT_RAY_MASK: /* a 512x512 ray-hit mask: a disc of hits, as in the blog's reported failure */
    for (size_t i = 0; i < n; i++) {
      long x = (long)(i % 512) - 256, y = (long)(i / 512) - 256;
      h_flags[i] = x * x + y * y < 200 * 200;
    }
    break;
  default: break;
  }
}

static size_t reference(size_t n) {
  size_t kept = 0;
  for (size_t i = 0; i < n; i++)
    if (h_flags[i]) h_expected[kept++] = h_in[i];
  return kept;
}

/* ---- Checks ---------------------------------------------------------------------------------- */

#define FAILF(...)                                                                                 \
  do {                                                                                             \
    check_current_failed = 1;                                                                      \
    if (failure_lines++ < MAX_FAILURE_LINES) {                                                     \
      fprintf(stderr, "%s: ", check_current_name);                                                 \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fputc('\n', stderr);                                                                         \
    }                                                                                              \
  } while (0)

static bool cuda_ok(cudaError_t err, const char *what, const char *label) {
  if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
  if (err != cudaSuccess) {
    FAILF("%s: %s failed: %s (%s)", label, what, cudaGetErrorString(err), ir_compact_last_error(ctx));
    return false;
  }
  return true;
}

static uint32_t read_count(void) {
  uint32_t c = 0;
  cudaMemcpy(&c, d_count, sizeof c, cudaMemcpyDeviceToHost);
  return c;
}

static void poison_output(size_t n) {
  for (size_t i = 0; i < n + GUARD; i++) h_out[i] = POISON;
  cudaMemcpy(d_out, h_out, (n + GUARD) * sizeof(uint32_t), cudaMemcpyHostToDevice);
  cudaMemset(d_count, 0xA5, sizeof(uint32_t));
}

/* out[0..count) against expected[0..kept): exact order, or the same set of distinct values. */
static bool compare(const char *label, const uint32_t *out, size_t count, size_t kept, bool exact) {
  if (count != kept) {
    FAILF("%s: count %zu, expected %zu", label, count, kept);
    return false;
  }
  if (exact) {
    for (size_t i = 0; i < kept; i++)
      if (out[i] != h_expected[i]) {
        FAILF("%s: out[%zu] = %u, expected %u (order must equal input order)", label, i, out[i], h_expected[i]);
        return false;
      }
    return true;
  }
  /* multiset of distinct values: every output must be a kept input value, each once */
  bool ok = true;
  size_t n_seen = 0;
  for (size_t i = 0; i < kept && ok; i++) {
    const size_t idx = index_of(out[i]);
    if (idx >= max_n || !h_flags[idx] || h_seen[idx]) {
      FAILF("%s: out[%zu] = %u is %s", label, i, out[i],
            idx >= max_n || !h_flags[idx] ? "not a kept input value" : "a duplicate");
      ok = false;
    } else {
      h_seen[idx] = 1;
      n_seen++;
    }
  }
  for (size_t i = 0; i < kept; i++) h_seen[index_of(out[i]) % max_n] = 0;
  return ok && n_seen == kept;
}

static bool check_guard(const char *label, size_t from, size_t to) {
  for (size_t i = from; i < to; i++)
    if (h_out[i] != POISON) {
      FAILF("%s: out[%zu] = %u written beyond the kept elements (expected the poison)", label, i, h_out[i]);
      return false;
    }
  return true;
}

/* ---- Cases ----------------------------------------------------------------------------------- */

static void upload(size_t n) {
  cudaMemcpy(d_in, h_in, n * sizeof(uint32_t), cudaMemcpyHostToDevice);
  cudaMemcpy(d_flags, h_flags, n, cudaMemcpyHostToDevice);
}

/* One out-of-place run of one method on the uploaded stream. */
static void run_flagged(ir_compact_method m, size_t n, size_t kept, const char *label) {
  const ir_compact_method_info *info = ir_compact_method_get(m);
  poison_output(n);
  if (!cuda_ok(ir_compact_flagged(ctx, m, d_in, d_flags, d_out, d_count, n, stream), "ir_compact_flagged", label))
    return;
  const size_t count = read_count();
  cudaMemcpy(h_out, d_out, (n + GUARD) * sizeof(uint32_t), cudaMemcpyDeviceToHost);
  if (!compare(label, h_out, count, kept, info->stable)) return;
  /* Redzone's out-of-place form copies the whole input first: only the guard must hold. */
  check_guard(label, m == IR_COMPACT_REDZONE ? n : count, n + GUARD);
}

static void for_each_case(void (*run)(size_t n, pattern p, double fraction, const char *label)) {
  const size_t sizes[] = {0, 1, 31, 32, 33, 1023, 1024, 1025, 65537, ((size_t)1 << 20) + 7, (size_t)1 << 26};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    const size_t n = sizes[s];
    if (n > max_n) continue;
    const bool huge = n >= ((size_t)1 << 26);
    for (int p = 0; p < PAT_RAY_MASK; p++) {
      const bool fraction_driven = p == PAT_UNIFORM || p == PAT_RUNS || p == PAT_END;
      for (size_t f = 0; f < (fraction_driven ? FRACTION_COUNT : 1); f++) {
        /* 2^26: every fraction for the uniform pattern, the others at 50 % (test time) */
        if (huge && p != PAT_UNIFORM && fraction_driven && fractions[f] != 0.5) continue;
        if (sanitize_mode && f % 3 != 0 && fractions[f] != ONE_ELEMENT) continue;
        char label[160];
        if (fraction_driven)
          snprintf(label, sizeof label, "n=%zu %s kept=%s%g%%", n, pattern_names[p],
                   fractions[f] == ONE_ELEMENT ? "one element " : "",
                   fractions[f] == ONE_ELEMENT ? 0.0 : fractions[f] * 100);
        else
          snprintf(label, sizeof label, "n=%zu %s", n, pattern_names[p]);
        make_flags(n, (pattern)p, fraction_driven ? fractions[f] : 0);
        run(n, (pattern)p, fraction_driven ? fractions[f] : 0, label);
      }
    }
  }
}

static void flagged_case(size_t n, pattern p, double fraction, const char *label) {
  (void)p;
  (void)fraction;
  const size_t kept = reference(n);
  upload(n);
  for (int m = 0; m < IR_COMPACT_METHOD_COUNT; m++) {
    char full[200];
    snprintf(full, sizeof full, "%s: %s", ir_compact_methods()[m].name, label);
    run_flagged((ir_compact_method)m, n, kept, full);
  }
}

static void test_flagged_every_method_size_fraction_and_pattern(void) { for_each_case(flagged_case); }

static void test_ray_mask_512x512_compacts_correctly(void) {
  const size_t n = 512 * 512;
  if (n > max_n) return;
  make_flags(n, PAT_RAY_MASK, 0);
  flagged_case(n, PAT_RAY_MASK, 0, "ray mask 512x512");
}

static void test_cub_reference_agrees_with_the_cpu(void) {
  const size_t n = sanitize_mode ? 65537 : ((size_t)1 << 20) + 7;
  make_flags(n, PAT_UNIFORM, 0.5);
  const size_t kept = reference(n);
  upload(n);
  for (int r = 0; r < IR_COMPACT_REF_COUNT; r++) {
    poison_output(n);
    const char *name = ir_compact_reference_name((ir_compact_reference)r);
    if (!cuda_ok(ir_compact_reference_flagged(ctx, (ir_compact_reference)r, d_in, d_flags, d_out, d_count, n, stream),
                 name, name))
      continue;
    cudaMemcpy(h_out, d_out, (n + GUARD) * sizeof(uint32_t), cudaMemcpyDeviceToHost);
    compare(name, h_out, read_count(), kept, true); /* all three keep input order */
    check_guard(name, kept, n + GUARD);
  }
}

/* Predicate form: keep d_in[i] != reject, with many elements equal to the reject value. */
static void test_if_not_equal_keeps_everything_but_the_reject_value(void) {
  const size_t sizes[] = {1, 33, 1025, 65537, 300007};
  const uint32_t reject = 0xFFFFFFFFu; /* value_of(i) never produces it for i < 2^26 */
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    const size_t n = sizes[s];
    if (n > max_n) continue;
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
      const bool keep = rng() % 3 != 0;
      h_in[i] = keep ? value_of(i) : reject;
      h_flags[i] = keep;
      if (keep) h_expected[kept++] = h_in[i];
    }
    cudaMemcpy(d_in, h_in, n * sizeof(uint32_t), cudaMemcpyHostToDevice);
    for (int m = 0; m < IR_COMPACT_METHOD_COUNT; m++) {
      char label[120];
      snprintf(label, sizeof label, "%s: if_not_equal n=%zu", ir_compact_methods()[m].name, n);
      poison_output(n);
      if (!cuda_ok(ir_compact_if_not_equal(ctx, (ir_compact_method)m, d_in, reject, d_out, d_count, n, stream),
                   "ir_compact_if_not_equal", label))
        continue;
      cudaMemcpy(h_out, d_out, (n + GUARD) * sizeof(uint32_t), cudaMemcpyDeviceToHost);
      compare(label, h_out, read_count(), kept, ir_compact_methods()[m].stable);
    }
    for (size_t i = 0; i < n; i++) h_in[i] = value_of(i);
  }
}

/* In place: the first n-k slots hold exactly the kept items (in order for stable methods). */
static void remove_case(size_t n, pattern p, double fraction, const char *label) {
  (void)p;
  (void)fraction;
  /* the removal list: the unflagged indices, shuffled (Redzone takes them in any order) */
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (!h_flags[i]) h_list[k++] = (uint32_t)i;
  for (size_t i = k; i > 1; i--) {
    size_t j = rng() % i;
    uint32_t t = h_list[i - 1];
    h_list[i - 1] = h_list[j];
    h_list[j] = t;
  }
  const size_t kept = reference(n);
  cudaMemcpy(d_list, h_list, k * sizeof(uint32_t), cudaMemcpyHostToDevice);
  for (int m = 0; m < IR_COMPACT_METHOD_COUNT; m++) {
    char full[200];
    snprintf(full, sizeof full, "%s: remove_indices k=%zu %s", ir_compact_methods()[m].name, k, label);
    cudaMemcpy(d_out, h_in, n * sizeof(uint32_t), cudaMemcpyHostToDevice);
    cudaMemset(d_count, 0xA5, sizeof(uint32_t));
    if (!cuda_ok(ir_compact_remove_indices(ctx, (ir_compact_method)m, d_out, n, d_list, k, d_count, stream),
                 "ir_compact_remove_indices", full))
      continue;
    cudaMemcpy(h_out, d_out, n * sizeof(uint32_t), cudaMemcpyDeviceToHost);
    compare(full, h_out, read_count(), kept, ir_compact_methods()[m].stable);
  }
}

static void test_remove_indices_every_method_leaves_the_kept_items_first(void) {
  const size_t saved = max_n;
  if (!sanitize_mode && max_n > ((size_t)1 << 20) + 7) max_n = ((size_t)1 << 20) + 7; /* 2^26 covered above */
  for_each_case(remove_case);
  max_n = saved;
}

static void test_redzone_removes_from_a_large_list_in_place(void) {
  const size_t n = sanitize_mode ? 65537 : (size_t)1 << 24;
  if (n > max_n) return;
  const double ks[] = {0.02, 0.10, 0.5, 0.9};
  for (size_t f = 0; f < sizeof ks / sizeof ks[0]; f++) {
    make_flags(n, PAT_UNIFORM, 1.0 - ks[f]);
    char label[80];
    snprintf(label, sizeof label, "n=%zu removed=%g%%", n, ks[f] * 100);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
      if (!h_flags[i]) h_list[k++] = (uint32_t)i;
    const size_t kept = reference(n);
    cudaMemcpy(d_list, h_list, k * sizeof(uint32_t), cudaMemcpyHostToDevice);
    cudaMemcpy(d_out, h_in, n * sizeof(uint32_t), cudaMemcpyHostToDevice);
    if (!cuda_ok(ir_compact_remove_indices(ctx, IR_COMPACT_REDZONE, d_out, n, d_list, k, d_count, stream),
                 "redzone", label))
      continue;
    cudaMemcpy(h_out, d_out, n * sizeof(uint32_t), cudaMemcpyDeviceToHost);
    compare(label, h_out, read_count(), kept, false);
  }
}

/* Device-side counts: n (and k) only on the device, launch sizes from a larger max_n. */
static void test_device_count_forms_match_the_host_forms(void) {
  const size_t sizes[] = {1, 1000, 65537, 400009};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    const size_t n = sizes[s], launch = n + 5000;
    if (launch > max_n) continue;
    make_flags(launch, PAT_UNIFORM, 0.4);
    const size_t kept = reference(n);
    upload(launch);
    const uint32_t n32 = (uint32_t)n;
    cudaMemcpy(d_n_word, &n32, sizeof n32, cudaMemcpyHostToDevice);
    for (int m = 0; m < IR_COMPACT_METHOD_COUNT; m++) {
      const ir_compact_method method = (ir_compact_method)m;
      char label[120];
      snprintf(label, sizeof label, "%s: flagged_dn n=%zu max_n=%zu", ir_compact_methods()[m].name, n, launch);
      poison_output(launch);
      cudaError_t err = ir_compact_flagged_dn(ctx, method, d_in, d_flags, d_out, d_count, d_n_word, launch, stream);
      if (!ir_compact_supports_device_n(method)) {
        CHECK_EQ_INT(err, cudaErrorNotSupported);
        continue;
      }
      if (!cuda_ok(err, "ir_compact_flagged_dn", label)) continue;
      cudaMemcpy(h_out, d_out, (launch + GUARD) * sizeof(uint32_t), cudaMemcpyDeviceToHost);
      compare(label, h_out, read_count(), kept, ir_compact_methods()[m].stable);

      /* in place, k on the device too */
      size_t k = 0;
      for (size_t i = 0; i < n; i++)
        if (!h_flags[i]) h_list[k++] = (uint32_t)i;
      const uint32_t k32 = (uint32_t)k;
      cudaMemcpy(d_k_word, &k32, sizeof k32, cudaMemcpyHostToDevice);
      cudaMemcpy(d_list, h_list, k * sizeof(uint32_t), cudaMemcpyHostToDevice);
      cudaMemcpy(d_out, h_in, launch * sizeof(uint32_t), cudaMemcpyHostToDevice);
      snprintf(label, sizeof label, "%s: remove_indices_dn n=%zu k=%zu", ir_compact_methods()[m].name, n, k);
      err = ir_compact_remove_indices_dn(ctx, method, d_out, d_n_word, launch, d_list, d_k_word, k + 777, d_count,
                                         stream);
      if (!cuda_ok(err, "ir_compact_remove_indices_dn", label)) continue;
      cudaMemcpy(h_out, d_out, launch * sizeof(uint32_t), cudaMemcpyDeviceToHost);
      compare(label, h_out, read_count(), kept, ir_compact_methods()[m].stable);
      /* nothing past n may change */
      for (size_t i = n; i < launch; i++)
        if (h_out[i] != h_in[i]) {
          FAILF("%s: element %zu past n changed", label, i);
          break;
        }
    }
  }
}

/* The _dn calls are meant for CUDA graphs: capture one per method, replay it, check. */
static void test_device_count_calls_capture_into_a_cuda_graph(void) {
  const size_t n = 100003;
  if (n + 1000 > max_n) return;
  make_flags(n + 1000, PAT_RUNS, 0.3);
  const size_t kept = reference(n);
  upload(n + 1000);
  const uint32_t n32 = (uint32_t)n;
  cudaMemcpy(d_n_word, &n32, sizeof n32, cudaMemcpyHostToDevice);
  for (int m = 0; m < IR_COMPACT_METHOD_COUNT; m++) {
    const ir_compact_method method = (ir_compact_method)m;
    if (!ir_compact_supports_device_n(method)) continue;
    char label[120];
    snprintf(label, sizeof label, "%s: graph", ir_compact_methods()[m].name);
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    poison_output(n + 1000);
    CHECK_EQ_INT(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    cudaError_t err = ir_compact_flagged_dn(ctx, method, d_in, d_flags, d_out, d_count, d_n_word, n + 1000, stream);
    cudaError_t end = cudaStreamEndCapture(stream, &graph);
    if (err != cudaSuccess || end != cudaSuccess) {
      FAILF("%s: capture failed: %s / %s (%s)", label, cudaGetErrorString(err), cudaGetErrorString(end),
            ir_compact_last_error(ctx));
      cudaGetLastError();
      if (graph) cudaGraphDestroy(graph);
      continue;
    }
    CHECK_EQ_INT(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    for (int replay = 0; replay < 3 && exec; replay++) {
      poison_output(n + 1000);
      if (!cuda_ok(cudaGraphLaunch(exec, stream), "cudaGraphLaunch", label)) break;
      cudaMemcpy(h_out, d_out, (n + 1000) * sizeof(uint32_t), cudaMemcpyDeviceToHost);
      compare(label, h_out, read_count(), kept, ir_compact_methods()[m].stable);
    }
    if (exec) cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  }
}

/* In-kernel emits: a producer kernel computing a predicate and emitting its survivors. */
static void test_in_kernel_emits_match_the_cpu(void) {
  const size_t sizes[] = {1, 1000, 1024, 33 * 1024 + 5, 1 << 20, (size_t)1 << 24};
  const uint32_t thresholds[] = {0, 0x05000000u, 0x80000000u, 0xFA000000u, 0xFFFFFFFFu};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    const size_t n = sizes[s];
    if (n > max_n || (sanitize_mode && n > 65537)) continue;
    cudaMemcpy(d_in, h_in, n * sizeof(uint32_t), cudaMemcpyHostToDevice);
    for (size_t t = 0; t < sizeof thresholds / sizeof thresholds[0]; t++) {
      for (size_t i = 0; i < n; i++) h_flags[i] = ir_compact_producer_keeps(h_in[i], thresholds[t]);
      const size_t kept = reference(n);
      for (int p = 1; p < IR_PRODUCER_COUNT; p++) {
        if (p == IR_PRODUCER_SPARSE_X4 || p == IR_PRODUCER_SPARSE_X16) continue; /* checked below */
        char label[120];
        snprintf(label, sizeof label, "producer %s n=%zu threshold=%08x", ir_compact_producer_name(p), n,
                 thresholds[t]);
        poison_output(n);
        if (!cuda_ok(ir_compact_producer_run(ctx, (ir_compact_producer)p, d_in, thresholds[t], d_out, NULL, d_count,
                                             n, stream),
                     "ir_compact_producer_run", label))
          continue;
        cudaMemcpy(h_out, d_out, (n + GUARD) * sizeof(uint32_t), cudaMemcpyDeviceToHost);
        const size_t count = read_count();
        const bool stable = p == IR_PRODUCER_INK_COMPACT || p == IR_PRODUCER_INK_COMPACT_SECTIONS ||
                            p == IR_PRODUCER_INK_COMPACT_X4 || p == IR_PRODUCER_INK_COMPACT_X16;
        if (compare(label, h_out, count, kept, stable)) check_guard(label, count, n + GUARD);
      }
      /* the sparse producers' flags and values feed an out-of-kernel compaction */
      const ir_compact_producer sparse_forms[] = {IR_PRODUCER_SPARSE, IR_PRODUCER_SPARSE_X4, IR_PRODUCER_SPARSE_X16};
      for (int f = 0; f < 3; f++) {
        poison_output(n);
        cudaMemset(d_flags, 0xAB, n);
        if (!cuda_ok(ir_compact_producer_run(ctx, sparse_forms[f], d_in, thresholds[t], d_list, d_flags, NULL, n,
                                             stream),
                     "sparse producer", ir_compact_producer_name(sparse_forms[f])))
          continue;
        cudaMemcpy(h_out, d_flags, n, cudaMemcpyDeviceToHost);
        if (memcmp(h_out, h_flags, n) != 0)
          FAILF("%s producer n=%zu: flags differ from the predicate", ir_compact_producer_name(sparse_forms[f]), n);
        cudaMemcpy(h_out, d_list, n * sizeof(uint32_t), cudaMemcpyDeviceToHost);
        for (size_t i = 0; i < n; i++)
          if (h_out[i] != (h_flags[i] ? h_in[i] : 0u)) {
            FAILF("%s producer n=%zu: value %zu is %08x, expected %08x", ir_compact_producer_name(sparse_forms[f]), n,
                  i, h_out[i], h_flags[i] ? h_in[i] : 0u);
            break;
          }
      }
    }
  }
}

/* Redzone's precondition, checked on the device in every build: a removal list with an index
 * >= n or an index twice in the red zone is refused (ir_compact_device_error says why), the data
 * and everything past it stay untouched and the count is n; the next valid list works again.
 * Both algorithms (k below and above the one-block limit), host and device counts. */
static void redzone_bad_list_case(size_t n, size_t k, bool device_counts, int bad, const char *label) {
  for (size_t i = 0; i < k; i++) h_list[i] = (uint32_t)(n - 1 - 2 * i); /* distinct, half in the red zone */
  if (bad == 0) h_list[k / 3] = (uint32_t)(n + 7);   /* out of range */
  else h_list[k - 1] = h_list[0];                      /* n - 1 twice: a red-zone duplicate */
  for (size_t i = 0; i < n + GUARD; i++) h_out[i] = i < n ? h_in[i] : POISON;
  cudaMemcpy(d_out, h_out, (n + GUARD) * sizeof(uint32_t), cudaMemcpyHostToDevice);
  cudaMemcpy(d_list, h_list, k * sizeof(uint32_t), cudaMemcpyHostToDevice);
  const uint32_t n32 = (uint32_t)n, k32 = (uint32_t)k;
  cudaMemcpy(d_n_word, &n32, sizeof n32, cudaMemcpyHostToDevice);
  cudaMemcpy(d_k_word, &k32, sizeof k32, cudaMemcpyHostToDevice);
  cudaMemset(d_count, 0xA5, sizeof(uint32_t));
  cudaError_t err = device_counts ? ir_compact_remove_indices_dn(ctx, IR_COMPACT_REDZONE, d_out, d_n_word, n, d_list,
                                                                 d_k_word, k, d_count, stream)
                                  : ir_compact_remove_indices(ctx, IR_COMPACT_REDZONE, d_out, n, d_list, k, d_count,
                                                              stream);
  const bool refused_on_host = err == cudaErrorInvalidValue; /* debug builds check the list first */
  if (err == cudaSuccess) err = ir_compact_device_error(ctx, stream);
  CHECK_MSG(err == cudaErrorInvalidValue, "%s: bad list not refused (%s)", label, cudaGetErrorString(err));
  CHECK_STR_CONTAINS(ir_compact_last_error(ctx), bad == 0 ? "not below" : "more than once");
  if (!refused_on_host) CHECK_MSG(read_count() == n, "%s: count %u, expected n = %zu", label, read_count(), n);
  uint32_t *after = malloc((n + GUARD) * sizeof(uint32_t));
  cudaMemcpy(after, d_out, (n + GUARD) * sizeof(uint32_t), cudaMemcpyDeviceToHost);
  CHECK_MSG(memcmp(after, h_out, (n + GUARD) * sizeof(uint32_t)) == 0, "%s: data or guard changed", label);
  free(after);
  /* the error was read and cleared: a valid list goes through */
  h_list[k / 3] = (uint32_t)(n - 1 - 2 * (k / 3));
  h_list[k - 1] = (uint32_t)(n - 1 - 2 * (k - 1));
  cudaMemcpy(d_list, h_list, k * sizeof(uint32_t), cudaMemcpyHostToDevice);
  memset(h_flags, 1, n);
  for (size_t i = 0; i < k; i++) h_flags[h_list[i]] = 0;
  const size_t kept = reference(n);
  err = device_counts ? ir_compact_remove_indices_dn(ctx, IR_COMPACT_REDZONE, d_out, d_n_word, n, d_list, d_k_word, k,
                                                     d_count, stream)
                      : ir_compact_remove_indices(ctx, IR_COMPACT_REDZONE, d_out, n, d_list, k, d_count, stream);
  if (err == cudaSuccess) err = ir_compact_device_error(ctx, stream);
  if (!cuda_ok(err, "redzone after a refused list", label)) return;
  cudaMemcpy(h_out, d_out, n * sizeof(uint32_t), cudaMemcpyDeviceToHost);
  compare(label, h_out, read_count(), kept, false);
}

static void test_redzone_refuses_out_of_range_and_duplicate_indices(void) {
  const size_t ns[] = {1000, 200003};
  for (size_t s = 0; s < 2; s++) {
    const size_t n = ns[s], k = n / 10; /* 100 (one block) and 20000 (Algorithm 2) */
    if (n + GUARD > max_n) continue;
    for (int dn = 0; dn < 2; dn++)
      for (int bad = 0; bad < 2; bad++) {
        char label[120];
        snprintf(label, sizeof label, "redzone n=%zu k=%zu %s %s", n, k, dn ? "device counts" : "host counts",
                 bad == 0 ? "index >= n" : "duplicate in the red zone");
        redzone_bad_list_case(n, k, dn != 0, bad, label);
      }
  }
}

#ifndef NDEBUG
static void test_duplicate_removals_are_refused_in_debug_builds(void) {
  const size_t n = 1000;
  for (size_t i = 0; i < n; i++) h_list[i] = (uint32_t)i;
  h_list[17] = 3;
  cudaMemcpy(d_list, h_list, 20 * sizeof(uint32_t), cudaMemcpyHostToDevice);
  cudaMemcpy(d_out, h_in, n * sizeof(uint32_t), cudaMemcpyHostToDevice);
  CHECK_EQ_INT(ir_compact_remove_indices(ctx, IR_COMPACT_REDZONE, d_out, n, d_list, 20, d_count, stream),
               cudaErrorInvalidValue);
  CHECK_STR_CONTAINS(ir_compact_last_error(ctx), "more than once");
  h_list[17] = 5000;
  cudaMemcpy(d_list, h_list, 20 * sizeof(uint32_t), cudaMemcpyHostToDevice);
  CHECK_EQ_INT(ir_compact_remove_indices(ctx, IR_COMPACT_REDZONE, d_out, n, d_list, 20, d_count, stream),
               cudaErrorInvalidValue);
  CHECK_STR_CONTAINS(ir_compact_last_error(ctx), "not below");
}
#endif

/* ---- Set-up ---------------------------------------------------------------------------------- */

static bool setup(void) {
  golden_inverse = GOLDEN; /* Newton: x <- x * (2 - a x) doubles the correct low bits */
  for (int i = 0; i < 5; i++) golden_inverse *= 2u - GOLDEN * golden_inverse;
  max_n = sanitize_mode ? 400009 + 5000 : (size_t)1 << 26;
  const size_t words = max_n + GUARD;
  const cudaError_t created = ir_compact_ctx_create(&ctx, max_n);
  if (created != cudaSuccess) {
    fprintf(stderr, "compaction context for %zu elements: %s\n", max_n, cudaGetErrorString(created));
    return false;
  }
  if (cudaStreamCreate(&stream) != cudaSuccess || cudaMalloc((void **)&d_in, words * 4) != cudaSuccess ||
      cudaMalloc((void **)&d_out, words * 4) != cudaSuccess || cudaMalloc((void **)&d_list, words * 4) != cudaSuccess ||
      cudaMalloc((void **)&d_flags, words) != cudaSuccess || cudaMalloc((void **)&d_count, 16) != cudaSuccess ||
      cudaMalloc((void **)&d_n_word, 4) != cudaSuccess || cudaMalloc((void **)&d_k_word, 4) != cudaSuccess) {
    fprintf(stderr, "device buffers for %zu elements: %s\n", max_n, cudaGetErrorString(cudaGetLastError()));
    return false;
  }
  h_in = malloc(words * 4);
  h_out = malloc(words * 4);
  h_expected = malloc(words * 4);
  h_list = malloc(words * 4);
  h_flags = malloc(words);
  h_seen = calloc(words, 1);
  if (!h_in || !h_out || !h_expected || !h_list || !h_flags || !h_seen) return false;
  for (size_t i = 0; i < words; i++) h_in[i] = value_of(i);
  cudaMemset(d_flags, 0, words);
  return true;
}

int main(int argc, char **argv) {
  bool probe = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--sanitize") == 0) sanitize_mode = true;
    else if (strcmp(argv[i], "--probe") == 0) probe = true;
    else {
      fprintf(stderr, "usage: %s [--sanitize] [--probe]\n", argv[0]);
      return 2;
    }
  }
  int devices = 0;
  cudaError_t err = cudaGetDeviceCount(&devices);
  /* --probe: only whether there is a device (0) or not (77), so that a sanitizer run skips. */
  if (probe) return err == cudaSuccess && devices > 0 ? 0 : 77;
  if (err != cudaSuccess || devices == 0) {
    char reason[160];
    snprintf(reason, sizeof reason, "no CUDA device: %s",
             err != cudaSuccess ? cudaGetErrorString(err) : "cudaGetDeviceCount found 0 devices");
    check_skip_all(reason);
  }
  if (!setup()) {
    fprintf(stderr, "set-up failed\n");
    return 1;
  }
  struct cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  printf("device: %s%s\n", prop.name, sanitize_mode ? " (reduced set for compute-sanitizer)" : "");
  RUN(test_flagged_every_method_size_fraction_and_pattern);
  RUN(test_ray_mask_512x512_compacts_correctly);
  RUN(test_cub_reference_agrees_with_the_cpu);
  RUN(test_if_not_equal_keeps_everything_but_the_reject_value);
  RUN(test_remove_indices_every_method_leaves_the_kept_items_first);
  RUN(test_redzone_removes_from_a_large_list_in_place);
  RUN(test_device_count_forms_match_the_host_forms);
  RUN(test_device_count_calls_capture_into_a_cuda_graph);
  RUN(test_in_kernel_emits_match_the_cpu);
  RUN(test_redzone_refuses_out_of_range_and_duplicate_indices);
#ifndef NDEBUG
  RUN(test_duplicate_removals_are_refused_in_debug_builds);
#endif
  ir_compact_ctx_destroy(ctx);
  return check_summary();
}
