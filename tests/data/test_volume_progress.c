/* Load progress on stderr when stderr is not a terminal (a log, CI): whole lines, none for a
 * load shorter than the interval, at most one per interval, and a closing line. stderr is
 * redirected to a file here, so it is never a terminal. */
#include <fcntl.h>

#include "tests/data/data_test_util.h"

#define PAYLOAD ((size_t)24 << 20)

/* Loads `path` with progress options while stderr goes to a file; returns what was written. */
static char *load_capturing_stderr(const char *path, size_t min_bytes, unsigned interval_ms) {
  const char *log = scratch_path("stderr.txt");
  fflush(stderr);
  int saved = dup(STDERR_FILENO);
  int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (saved < 0 || fd < 0) {
    fprintf(stderr, "FAIL: cannot redirect stderr\n");
    exit(1);
  }
  dup2(fd, STDERR_FILENO);
  close(fd);
  ir_volume_desc desc = {.show_progress = true, .progress_min_bytes = min_bytes, .progress_interval_ms = interval_ms};
  ir_volume v;
  char err[IR_ERR_LEN];
  ir_status status = load_with(path, &desc, &v, err);
  fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  CHECK_MSG(status == IR_OK, "%s", err);
  if (status == IR_OK) ir_volume_free(&v);
  size_t n = 0;
  unsigned char *text = check_read_file(log, &n);
  char *out = calloc(n + 1, 1);
  if (text && out) memcpy(out, text, n);
  free(text);
  return out;
}

static int count_lines_with(const char *text, const char *part) {
  int n = 0;
  for (const char *line = text; line && *line;) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    char buf[512];
    snprintf(buf, sizeof buf, "%.*s", (int)(len < 511 ? len : 511), line);
    if (strstr(buf, part)) n++;
    line = end ? end + 1 : NULL;
  }
  return n;
}

static void test_lines_not_carriage_returns_when_not_a_terminal(void) {
  /* A gzip file inflates in small pieces: many progress updates within one load. */
  unsigned char *raw = calloc(PAYLOAD, 1);
  for (size_t i = 0; i < PAYLOAD; i++) raw[i] = (unsigned char)(i * 2654435761u >> 24);
  size_t zn = 0;
  unsigned char *z = deflate_bytes(raw, PAYLOAD, 31, &zn);
  CHECK(z != NULL);
  const char *path = scratch_path("progress_2048x3072x4_uint8.raw.gz");
  write_bytes(path, z, zn);
  free(z);
  free(raw);

  /* An interval of 1 ms: lines come as the load goes, each a whole line, then a closing one. */
  char *log = load_capturing_stderr(path, 1, 1);
  CHECK_MSG(log && strchr(log, '\r') == NULL, "carriage returns in a log: %s", log);
  CHECK_MSG(count_lines_with(log, "loading progress_2048x3072x4_uint8.raw.gz: ") >= 2, "no progress lines: %s", log);
  CHECK_MSG(count_lines_with(log, ": done, 25165824 of 25165824 bytes") == 1, "no closing line: %s", log);
  CHECK(log && log[0] && log[strlen(log) - 1] == '\n');
  free(log);

  /* An interval far longer than the load: a short load stays silent. */
  log = load_capturing_stderr(path, 1, 600000);
  CHECK_MSG(log && log[0] == '\0', "a load shorter than the interval printed: %s", log);
  free(log);

  /* Below the size threshold: nothing, whatever the interval. */
  log = load_capturing_stderr(path, PAYLOAD + 1, 1);
  CHECK_MSG(log && log[0] == '\0', "a load below the threshold printed: %s", log);
  free(log);
}

int main(void) {
  RUN(test_lines_not_carriage_returns_when_not_a_terminal);
  return check_summary();
}
