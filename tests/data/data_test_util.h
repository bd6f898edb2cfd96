/* Helpers for the data module's tests: the dataset folders, a scratch folder, writing
 * and reading whole files (plain, gzip, zlib), loading with options. Reads files directly,
 * never through the loader, so expected values are independent of the code under test. */
#ifndef INKRAY_TESTS_DATA_UTIL_H
#define INKRAY_TESTS_DATA_UTIL_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "data/volume.h"
#include "tests/check.h"

/* The small real datasets kept in the repository (tests/data/real); a test that needs them
 * fails (not skips) when they are missing. */
static inline const char *test_data_dir(void) {
  const char *dir = getenv("INKRAY_TEST_DATA");
  struct stat st;
  if (!dir || !*dir || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    fprintf(stderr,
            "FAIL: INKRAY_TEST_DATA ('%s') is not a folder: these tests need the datasets in "
            "tests/data/real (ctest sets the variable)\n",
            dir ? dir : "(unset)");
    exit(1);
  }
  return dir;
}

/* The optional shared dataset folder (INKRAY_SHARED_DATA): NULL when it is not there. Tests
 * only add cases with it, never need it. */
static inline const char *shared_data_dir_or_null(void) {
  const char *dir = getenv("INKRAY_SHARED_DATA");
  struct stat st;
  if (!dir || !*dir || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) return NULL;
  return dir;
}

/* printf into a static ring of buffers: handy for building paths inline. */
static inline const char *fmt_path(const char *fmt, ...) {
  static char ring[16][1024];
  static int next;
  char *out = ring[next++ % 16];
  va_list args;
  va_start(args, fmt);
  vsnprintf(out, sizeof ring[0], fmt, args);
  va_end(args);
  return out;
}

/* A file of the shared folder, or NULL (with a note on stdout) when it is not there. */
static inline const char *shared_file(const char *name) {
  const char *dir = shared_data_dir_or_null();
  const char *path = dir ? fmt_path("%s/%s", dir, name) : NULL;
  if (!path || access(path, R_OK) != 0) {
    printf("  (%s not in INKRAY_SHARED_DATA: that case is skipped)\n", name);
    return NULL;
  }
  return path;
}

static inline const char *data_path(const char *name) { return fmt_path("%s/%s", test_data_dir(), name); }

static char scratch_dir_path[512];

static inline void remove_scratch_dir(void) {
  if (!scratch_dir_path[0]) return;
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", scratch_dir_path);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", scratch_dir_path);
}

/* A fresh folder for generated files, removed at exit. */
static inline const char *scratch_dir(void) {
  if (scratch_dir_path[0]) return scratch_dir_path;
  const char *tmp = getenv("TMPDIR");
  snprintf(scratch_dir_path, sizeof scratch_dir_path, "%s/inkray-data-test-XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(scratch_dir_path)) {
    fprintf(stderr, "FAIL: cannot create a scratch folder %s\n", scratch_dir_path);
    exit(1);
  }
  atexit(remove_scratch_dir);
  return scratch_dir_path;
}

static inline const char *scratch_path(const char *name) { return fmt_path("%s/%s", scratch_dir(), name); }

/* A scratch path that outlives fmt_path's ring of buffers (folders used across many calls); the
 * copies are freed at exit, so that a leak check sees only what the code under test leaks. */
static char *kept_paths[256];
static int kept_path_count;

static inline void free_kept_paths(void) {
  for (int i = 0; i < kept_path_count; i++) free(kept_paths[i]);
  kept_path_count = 0;
}

static inline const char *kept_path(const char *name) {
  if (kept_path_count == (int)(sizeof kept_paths / sizeof kept_paths[0])) {
    fprintf(stderr, "FAIL: more than %zu kept paths\n", sizeof kept_paths / sizeof kept_paths[0]);
    exit(1);
  }
  if (kept_path_count == 0) atexit(free_kept_paths);
  return kept_paths[kept_path_count++] = strdup(scratch_path(name));
}

static inline void write_bytes(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, n, f) != n) {
    fprintf(stderr, "FAIL: cannot write %s\n", path);
    exit(1);
  }
  fclose(f);
}

static inline void append_bytes(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "ab");
  if (!f || fwrite(data, 1, n, f) != n) {
    fprintf(stderr, "FAIL: cannot append to %s\n", path);
    exit(1);
  }
  fclose(f);
}

static inline void write_text(const char *path, const char *text) { write_bytes(path, text, strlen(text)); }

/* Compresses into a new buffer: gzip (window_bits 31) or zlib (15). */
static inline unsigned char *deflate_bytes(const void *data, size_t n, int window_bits, size_t *out_n) {
  z_stream z;
  memset(&z, 0, sizeof z);
  if (deflateInit2(&z, 6, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY) != Z_OK) return NULL;
  size_t cap = deflateBound(&z, (uLong)n) + 64;
  unsigned char *out = malloc(cap);
  z.next_in = (Bytef *)(uintptr_t)data;
  z.avail_in = (uInt)n;
  z.next_out = out;
  z.avail_out = (uInt)cap;
  int rc = deflate(&z, Z_FINISH);
  *out_n = cap - z.avail_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) {
    free(out);
    return NULL;
  }
  return out;
}

/* Loads with options; returns the status, err holds the message. */
static inline ir_status load_with(const char *source, const ir_volume_desc *options, ir_volume *v,
                           char err[IR_ERR_LEN]) {
  ir_volume_desc desc = options ? *options : (ir_volume_desc){0};
  desc.source = source;
  err[0] = '\0';
  return ir_volume_load(&desc, v, err);
}

static inline ir_status load(const char *source, ir_volume *v, char err[IR_ERR_LEN]) {
  return load_with(source, NULL, v, err);
}

/* Big-endian stores for writing test files on any host. */
static inline void put_be16(unsigned char *p, uint16_t v) {
  p[0] = (unsigned char)(v >> 8);
  p[1] = (unsigned char)v;
}

static inline void put_be32(unsigned char *p, uint32_t v) {
  for (int k = 0; k < 4; k++) p[k] = (unsigned char)(v >> (24 - 8 * k));
}

static inline void put_le16(unsigned char *p, uint16_t v) {
  p[0] = (unsigned char)v;
  p[1] = (unsigned char)(v >> 8);
}

static inline void put_le32(unsigned char *p, uint32_t v) {
  for (int k = 0; k < 4; k++) p[k] = (unsigned char)(v >> (8 * k));
}

static inline uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

/* Runs `inkray info ARGS` (ARGS already quoted for the shell) with the built program (env
 * INKRAY_BINARY); returns the exit status and the whole of stderr and stdout in new strings. */
typedef struct info_run {
  int status;
  char *out, *err;
} info_run;

static inline char *slurp_text(const char *path) {
  size_t n = 0;
  unsigned char *data = check_read_file(path, &n);
  char *text = malloc(n + 1);
  if (data) memcpy(text, data, n);
  text[data ? n : 0] = '\0';
  free(data);
  return text;
}

/* Runs `inkray ARGS`. */
static inline info_run run_inkray(const char *args) {
  const char *bin = getenv("INKRAY_BINARY");
  if (!bin || access(bin, X_OK) != 0) {
    fprintf(stderr, "FAIL: INKRAY_BINARY ('%s') is not the built inkray program\n", bin ? bin : "(unset)");
    exit(1);
  }
  const char *out = scratch_path("info_stdout.txt"), *err = scratch_path("info_stderr.txt");
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "'%s' %s >'%s' 2>'%s'", bin, args, out, err);
  int raw = system(cmd);
  info_run r = {raw != -1 && WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, slurp_text(out), slurp_text(err)};
  return r;
}

static inline info_run run_inkray_info(const char *args) { return run_inkray(fmt_path("info %s", args)); }

/* A short headless run on the CPU reference renderer (no GPU needed) must load the volume,
 * render, and find surface hits. */
#define CHECK_HEADLESS_RENDERS(source_quoted)                                               \
  do {                                                                                      \
    info_run h_ = run_inkray(fmt_path("--headless --device cpu --frames 1 --warmup 0 "      \
                                      "--size 32x32 %s", source_quoted));                   \
    CHECK_MSG(h_.status == 0, "headless %s: exit %d: %s", source_quoted, h_.status, h_.err); \
    CHECK_STR_CONTAINS(h_.out, "hits");                                                     \
    info_run_free(&h_);                                                                     \
  } while (0)

static inline void info_run_free(info_run *r) {
  free(r->out);
  free(r->err);
}

/* `inkray info ARGS` exits 2 with exactly one line on stderr holding `reason`, nothing on
 * stdout. */
#define CHECK_INFO_REFUSES(args, reason)                                                    \
  do {                                                                                      \
    info_run r_ = run_inkray_info(args);                                                    \
    CHECK_MSG(r_.status == 2, "info %s: exit %d, expected 2 (%s)", args, r_.status, r_.err); \
    CHECK_STR_CONTAINS(r_.err, reason);                                                     \
    char *nl_ = strchr(r_.err, '\n');                                                       \
    CHECK_MSG(nl_ && nl_[1] == '\0', "stderr is not one line: %s", r_.err);                 \
    CHECK_EQ_INT(strlen(r_.out), 0);                                                        \
    info_run_free(&r_);                                                                     \
  } while (0)

#endif
