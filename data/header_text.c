/* Reading text headers (NRRD, MetaImage, QVis) from a buffer that need not end in a NUL:
 * lines with their numbers, key/value splits, numbers, data file patterns. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/volume_internal.h"

bool ir_text_next_line(const char *text, size_t len, size_t *pos, size_t *number,
                       ir_text_line *line) {
  if (*pos >= len) return false;
  const char *start = text + *pos;
  const char *nl = memchr(start, '\n', len - *pos);
  size_t line_len = nl ? (size_t)(nl - start) : len - *pos;
  *pos += line_len + (nl ? 1 : 0);
  if (line_len > 0 && start[line_len - 1] == '\r') line_len--;
  *number += 1;
  *line = (ir_text_line){.start = start, .len = line_len, .number = *number};
  return true;
}

static bool is_blank(char c) { return c == ' ' || c == '\t'; }

/* Copies s[0, n) trimmed into out; false if it does not fit or holds a NUL byte. */
static bool copy_trimmed(const char *s, size_t n, char *out, size_t size) {
  while (n > 0 && is_blank(*s)) s++, n--;
  while (n > 0 && is_blank(s[n - 1])) n--;
  if (n >= size || memchr(s, '\0', n)) return false;
  memcpy(out, s, n);
  out[n] = '\0';
  return true;
}

bool ir_text_split(const ir_text_line *line, char sep, char *key, size_t key_size, char *value,
                   size_t value_size) {
  const char *at = memchr(line->start, sep, line->len);
  if (!at) return false;
  size_t key_len = (size_t)(at - line->start);
  return copy_trimmed(line->start, key_len, key, key_size) &&
         copy_trimmed(at + 1, line->len - key_len - 1, value, value_size);
}

bool ir_text_equal_nocase(const char *a, const char *b) {
  for (; *a && *b; a++, b++)
    if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return false;
  return *a == *b;
}

int ir_text_parse_sizes(const char *text, size_t *out, int count) {
  int n = 0;
  const char *p = text;
  for (;;) {
    while (is_blank(*p)) p++;
    if (!*p) return n;
    if (n == count || !isdigit((unsigned char)*p)) return -1;
    errno = 0;
    char *end = NULL;
    unsigned long long value = strtoull(p, &end, 10);
    if (errno || (*end && !is_blank(*end)) || value > SIZE_MAX) return -1;
    out[n++] = (size_t)value;
    p = end;
  }
}

int ir_text_parse_floats(const char *text, double *out, int count) {
  int n = 0;
  const char *p = text;
  for (;;) {
    while (is_blank(*p) || *p == ',') p++;
    if (!*p) return n;
    if (n == count) return -1;
    errno = 0;
    char *end = NULL;
    double value = strtod(p, &end);
    if (end == p || (*end && !is_blank(*end) && *end != ',')) return -1;
    out[n++] = value;
    p = end;
  }
}

bool ir_text_parse_long(const char *text, long *out) {
  errno = 0;
  char *end = NULL;
  long value = strtol(text, &end, 10);
  if (end == text || errno) return false;
  while (is_blank(*end)) end++;
  if (*end) return false;
  *out = value;
  return true;
}

/* One %d-style conversion: flags '0' or '-', a width, then d, i or u; no other % but %%. */
typedef struct pattern_spec {
  size_t before_len;  /* bytes of fmt before the conversion */
  size_t after_start; /* offset in fmt just after it */
  bool zero_pad;
  int width;
} pattern_spec;

static bool parse_pattern_spec(const char *fmt, pattern_spec *spec) {
  bool found = false;
  for (size_t i = 0; fmt[i]; i++) {
    if (fmt[i] != '%') continue;
    if (fmt[i + 1] == '%') {
      i++;
      continue;
    }
    if (found) return false;
    size_t j = i + 1;
    spec->zero_pad = false;
    while (fmt[j] == '0' || fmt[j] == '-') spec->zero_pad |= fmt[j++] == '0';
    int width = 0;
    while (isdigit((unsigned char)fmt[j]) && width < 100) width = width * 10 + (fmt[j++] - '0');
    if (width >= 100 || (fmt[j] != 'd' && fmt[j] != 'i' && fmt[j] != 'u')) return false;
    spec->width = width;
    spec->before_len = i;
    spec->after_start = j + 1;
    found = true;
    i = j;
  }
  return found;
}

/* Appends fmt[from, to) to out with %% as %; false if out overflows. */
static bool append_literal(char *out, size_t *n, size_t size, const char *fmt, size_t from,
                           size_t to) {
  for (size_t i = from; i < to; i++) {
    if (fmt[i] == '%' && fmt[i + 1] == '%') i++;
    if (*n + 1 >= size) return false;
    out[(*n)++] = fmt[i];
  }
  out[*n] = '\0';
  return true;
}

bool ir_text_expand_pattern(ir_header *h, const char *fmt, long first, long last, long step,
                            const char *path, size_t line, char err[IR_ERR_LEN]) {
  pattern_spec spec = {0};
  if (!parse_pattern_spec(fmt, &spec)) {
    ir_input_error(err, path, "line %zu: file pattern '%s' needs exactly one %%d conversion",
                   line, fmt);
    return false;
  }
  const long limit = 1L << 30; /* keeps last - first from overflowing */
  if (first < -limit || first > limit || last < -limit || last > limit || step == 0 ||
      (last - first) / step < 0 ||
      (unsigned long)((last - first) / step) >= IR_MAX_DATA_FILES) {
    ir_input_error(err, path,
                   "line %zu: file pattern range %ld to %ld step %ld is empty or above %d files",
                   line, first, last, step, IR_MAX_DATA_FILES);
    return false;
  }
  long count = (last - first) / step + 1;
  for (long k = 0; k < count; k++) {
    long index = first + k * step;
    char number[32], name[1024];
    int digits = snprintf(number, sizeof number, "%ld", index < 0 ? -index : index);
    size_t n = 0;
    name[0] = '\0';
    bool ok = append_literal(name, &n, sizeof name, fmt, 0, spec.before_len);
    int pad = spec.width - digits - (index < 0);
    if (ok && index < 0 && spec.zero_pad) ok = append_literal(name, &n, sizeof name, "-", 0, 1);
    for (int p = 0; ok && p < pad; p++)
      ok = append_literal(name, &n, sizeof name, spec.zero_pad ? "0" : " ", 0, 1);
    if (ok && index < 0 && !spec.zero_pad) ok = append_literal(name, &n, sizeof name, "-", 0, 1);
    if (ok) ok = append_literal(name, &n, sizeof name, number, 0, (size_t)digits);
    if (ok) ok = append_literal(name, &n, sizeof name, fmt, spec.after_start, strlen(fmt));
    if (!ok) {
      ir_input_error(err, path, "line %zu: file pattern '%s' makes a name too long", line, fmt);
      return false;
    }
    if (!ir_header_add_file(h, name, n)) {
      snprintf(err, IR_ERR_LEN, "%s: out of host memory listing data files", path);
      return false;
    }
  }
  return true;
}

bool ir_text_is_pattern(const char *value, char *fmt, size_t fmt_size, long *first, long *last,
                        long *step) {
  const char *space = value;
  while (*space && !is_blank(*space)) space++;
  size_t fmt_len = (size_t)(space - value);
  if (!memchr(value, '%', fmt_len) || fmt_len >= fmt_size) return false;
  long numbers[4];
  int n = 0;
  const char *p = space;
  while (*p) {
    while (is_blank(*p)) p++;
    if (!*p) break;
    if (n == 4) return false;
    errno = 0;
    char *end = NULL;
    numbers[n++] = strtol(p, &end, 10);
    if (end == p || errno || (*end && !is_blank(*end))) return false;
    p = end;
  }
  /* The fourth number (NRRD sub-dimension) is allowed and not needed: files share equally. */
  if (n < 3) return false;
  memcpy(fmt, value, fmt_len);
  fmt[fmt_len] = '\0';
  *first = numbers[0];
  *last = numbers[1];
  *step = numbers[2];
  return true;
}
