/* Runs the built inkray program (env INKRAY_BINARY, set by CTest) and captures what it prints,
 * plus small readers for the files it writes: PNG (through stb_image) and CSV.
 * Shared by the headless CLI tests; header-only, every function static. */
#ifndef INKRAY_TESTS_RUN_INKRAY_H
#define INKRAY_TESTS_RUN_INKRAY_H

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wpedantic"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#include <stb/stb_image.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#define RUN_OUTPUT_CAP 65536

typedef struct run_result {
  int status;                  /* exit status, or -1 if the program did not exit normally */
  char output[RUN_OUTPUT_CAP]; /* stdout and stderr together */
} run_result;

static inline const char *inkray_binary(void) {
  const char *path = getenv("INKRAY_BINARY");
  if (!path || !*path) {
    fprintf(stderr, "INKRAY_BINARY is not set: run this test through ctest\n");
    exit(1);
  }
  return path;
}

/* Runs argv (NULL-terminated, argv[0] a path) in directory `cwd` (NULL: this one) and captures
 * its standard output and error. */
static inline void run_command(const char *cwd, const char *const *argv, run_result *r) {
  char log_path[] = "/tmp/inkray-test-output-XXXXXX";
  int fd = mkstemp(log_path);
  r->status = -1;
  r->output[0] = '\0';
  if (fd < 0) {
    perror("mkstemp");
    return;
  }
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    if (cwd && chdir(cwd) != 0) _exit(126);
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  int wstatus = 0;
  if (pid > 0 && waitpid(pid, &wstatus, 0) == pid && WIFEXITED(wstatus)) r->status = WEXITSTATUS(wstatus);
  lseek(fd, 0, SEEK_SET);
  ssize_t got = read(fd, r->output, RUN_OUTPUT_CAP - 1);
  r->output[got > 0 ? got : 0] = '\0';
  close(fd);
  unlink(log_path);
}

/* Runs `inkray ARGS...` (args NULL-terminated, without argv[0]) in directory `cwd`. */
static inline void run_inkray(const char *cwd, const char *const *args, run_result *r) {
  const char *argv[64] = {inkray_binary()};
  int argc = 1;
  for (int k = 0; args[k] && argc < 63; k++) argv[argc++] = args[k];
  argv[argc] = NULL;
  run_command(cwd, argv, r);
}

/* A fresh scratch folder for one test's files. */
static inline void make_scratch(char path[64]) {
  strcpy(path, "/tmp/inkray-headless-XXXXXX");
  if (!mkdtemp(path)) {
    perror("mkdtemp");
    exit(1);
  }
}

static inline void remove_scratch(const char *dir) {
  char command[128];
  snprintf(command, sizeof command, "rm -rf '%s'", dir);
  if (system(command) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

static inline bool file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Reads a PNG; returns the pixels (free with stbi_image_free) or NULL. */
static inline unsigned char *read_png(const char *path, int *w, int *h, int *channels) {
  return stbi_load(path, w, h, channels, 0);
}

/* True when the RGB pixels are not all one colour: something was drawn. */
static inline bool image_has_contrast(const unsigned char *pixels, int w, int h, int channels) {
  for (long p = 1; p < (long)w * h; p++)
    for (int c = 0; c < 3 && c < channels; c++)
      if (pixels[p * channels + c] != pixels[c]) return true;
  return false;
}

/* ---- CSV ---------------------------------------------------------------------------------------- */
#define CSV_MAX_COLUMNS 64
#define CSV_MAX_ROWS 4096
#define CSV_LINE_CAP 8192

typedef struct csv_table {
  int columns;
  char header[CSV_MAX_COLUMNS][48];
  int rows;
  char *lines[CSV_MAX_ROWS]; /* each data line, without the newline */
  bool ragged;               /* some row has a different number of fields from the header */
} csv_table;

/* Counts the fields of one line, honouring double quotes. */
static inline int csv_field_count(const char *line) {
  int fields = 1;
  bool quoted = false;
  for (const char *c = line; *c; c++) {
    if (*c == '"') quoted = !quoted;
    else if (*c == ',' && !quoted) fields++;
  }
  return fields;
}

/* Copies field `index` (unquoted; no embedded quotes expected in tests) into out. */
static inline bool csv_field(const char *line, int index, char *out, size_t cap) {
  int field = 0;
  bool quoted = false;
  size_t n = 0;
  for (const char *c = line;; c++) {
    if (*c == '\0' || (*c == ',' && !quoted)) {
      if (field == index) {
        out[n < cap ? n : cap - 1] = '\0';
        return true;
      }
      if (*c == '\0') return false;
      field++;
      continue;
    }
    if (*c == '"') {
      quoted = !quoted;
      continue;
    }
    if (field == index && n + 1 < cap) out[n++] = *c;
  }
}

static inline int csv_column(const csv_table *t, const char *name) {
  for (int k = 0; k < t->columns; k++)
    if (strcmp(t->header[k], name) == 0) return k;
  return -1;
}

static inline bool csv_read(const char *path, csv_table *t) {
  memset(t, 0, sizeof *t);
  FILE *f = fopen(path, "r");
  if (!f) return false;
  char line[CSV_LINE_CAP];
  bool first = true;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = '\0';
    if (first) {
      first = false;
      t->columns = csv_field_count(line);
      for (int k = 0; k < t->columns && k < CSV_MAX_COLUMNS; k++)
        csv_field(line, k, t->header[k], sizeof t->header[k]);
      continue;
    }
    if (t->rows == CSV_MAX_ROWS) break;
    if (csv_field_count(line) != t->columns) t->ragged = true;
    t->lines[t->rows++] = strdup(line);
  }
  fclose(f);
  return !first;
}

static inline void csv_free(csv_table *t) {
  for (int k = 0; k < t->rows; k++) free(t->lines[k]);
  t->rows = 0;
}

/* Rows whose column `name` equals `value`. */
static inline int csv_count(const csv_table *t, const char *name, const char *value) {
  int col = csv_column(t, name), n = 0;
  char field[256];
  for (int k = 0; col >= 0 && k < t->rows; k++)
    if (csv_field(t->lines[k], col, field, sizeof field) && strcmp(field, value) == 0) n++;
  return n;
}

#endif
