/* A small test framework with real assertions, for C and CUDA tests alike.
 *
 *   static void test_something(void) { CHECK(x == 3); CHECK_EQ_INT(a, b); }
 *   int main(void) { RUN(test_something); return check_summary(); }
 *
 * A failed CHECK prints file:line and the expression and marks the running test failed; the
 * test goes on so that one run shows every failure. check_summary() prints
 * "N passed, N failed" (", N skipped") and returns 0 only if nothing failed.
 * A whole program that cannot run here (no GPU) calls check_skip_all(reason): it prints the
 * reason and exits with 77, which CTest reports as skipped (SKIP_RETURN_CODE 77).
 */
#ifndef INKRAY_TESTS_CHECK_H
#define INKRAY_TESTS_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_passed_count, check_failed_count, check_skipped_count, check_current_failed;
static const char *check_current_name = "";

#define CHECK(expr)                                                                         \
  do {                                                                                      \
    if (!(expr)) {                                                                          \
      fprintf(stderr, "%s:%d: %s: CHECK failed: %s\n", __FILE__, __LINE__,                  \
              check_current_name, #expr);                                                   \
      check_current_failed = 1;                                                             \
    }                                                                                       \
  } while (0)

#define CHECK_MSG(expr, ...)                                                                \
  do {                                                                                      \
    if (!(expr)) {                                                                          \
      fprintf(stderr, "%s:%d: %s: CHECK failed: %s: ", __FILE__, __LINE__,                  \
              check_current_name, #expr);                                                   \
      fprintf(stderr, __VA_ARGS__);                                                         \
      fputc('\n', stderr);                                                                  \
      check_current_failed = 1;                                                             \
    }                                                                                       \
  } while (0)

#define CHECK_EQ_INT(a, b)                                                                  \
  do {                                                                                      \
    long long check_a_ = (long long)(a), check_b_ = (long long)(b);                         \
    if (check_a_ != check_b_) {                                                             \
      fprintf(stderr, "%s:%d: %s: CHECK_EQ_INT failed: %s == %lld, %s == %lld\n", __FILE__, \
              __LINE__, check_current_name, #a, check_a_, #b, check_b_);                    \
      check_current_failed = 1;                                                             \
    }                                                                                       \
  } while (0)

#define CHECK_NEAR(a, b, tol)                                                               \
  do {                                                                                      \
    double check_a_ = (double)(a), check_b_ = (double)(b);                                  \
    if (!(check_a_ - check_b_ <= (tol) && check_b_ - check_a_ <= (tol))) {                  \
      fprintf(stderr, "%s:%d: %s: CHECK_NEAR failed: %s == %.9g, %s == %.9g, tol %g\n",     \
              __FILE__, __LINE__, check_current_name, #a, check_a_, #b, check_b_,           \
              (double)(tol));                                                               \
      check_current_failed = 1;                                                             \
    }                                                                                       \
  } while (0)

#define CHECK_STR_CONTAINS(haystack, needle)                                                \
  do {                                                                                      \
    const char *check_h_ = (haystack), *check_n_ = (needle);                                \
    if (!check_h_ || !strstr(check_h_, check_n_)) {                                         \
      fprintf(stderr, "%s:%d: %s: expected \"%s\" to contain \"%s\"\n", __FILE__, __LINE__, \
              check_current_name, check_h_ ? check_h_ : "(null)", check_n_);                \
      check_current_failed = 1;                                                             \
    }                                                                                       \
  } while (0)

#define RUN(fn)                                                                             \
  do {                                                                                      \
    check_current_name = #fn;                                                               \
    check_current_failed = 0;                                                               \
    fn();                                                                                   \
    if (check_current_failed) {                                                             \
      check_failed_count++;                                                                 \
      fprintf(stderr, "FAIL %s\n", #fn);                                                    \
    } else {                                                                                \
      check_passed_count++;                                                                 \
      printf("ok   %s\n", #fn);                                                             \
    }                                                                                       \
    fflush(stdout);                                                                         \
  } while (0)

/* Marks one test as skipped with a reason (a case that cannot run here). */
#define SKIP(fn, reason)                                                                    \
  do {                                                                                      \
    check_skipped_count++;                                                                  \
    printf("skip %s: %s\n", #fn, reason);                                                   \
  } while (0)

/* A whole file in a new buffer, its size in *n, with a NUL after its last byte (not counted) so
 * that a text file can be searched as a string; NULL (and *n 0) when it cannot be read whole. */
static inline unsigned char *check_read_file(const char *path, size_t *n) {
  *n = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *buf = size >= 0 ? (unsigned char *)malloc((size_t)size + 1) : NULL;
  size_t got = buf ? fread(buf, 1, (size_t)size, f) : 0;
  fclose(f);
  if (!buf || got != (size_t)size) {
    free(buf);
    return NULL;
  }
  buf[got] = '\0';
  *n = got;
  return buf;
}

static inline int check_summary(void) {
  printf("%d passed, %d failed", check_passed_count, check_failed_count);
  if (check_skipped_count) printf(", %d skipped", check_skipped_count);
  printf("\n");
  return check_failed_count ? 1 : 0;
}

static inline void check_skip_all(const char *reason) {
  printf("SKIPPED: %s\n", reason);
  exit(77);
}

#endif
