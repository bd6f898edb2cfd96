/* The --script format (docs/window.md): one timed event per line,
 *
 *   # comment
 *   0.5  key Tab
 *   1.0  key shift+Up
 *   1.5  drag left 100 100 160 120
 *   1.6  drag shift+left 100 100 100 60
 *   2.0  wheel 2
 *   2.5  resize 400 300
 *   3.0  screenshot shot.png
 *   3.5  quit
 *
 * Times are seconds after the first frame and may not decrease. This file only parses; the
 * window turns the events into SDL input (so that they take the same path as a person's) and
 * checks key names against SDL's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/app.h"
#include "app/window/window_internal.h"

#define MAX_LINE 512

static bool parse_int_word(const char *word, long min, long max, int *out) {
  long value = 0;
  if (!cli_parse_int(word, min, max, &value)) return false;
  *out = (int)value;
  return true;
}

/* Splits `line` in place at blanks into at most `max` words; returns the count. */
static int split_words(char *line, char **words, int max) {
  int count = 0;
  char *save = NULL;
  for (char *w = strtok_r(line, " \t\r", &save); w; w = strtok_r(NULL, " \t\r", &save)) {
    if (count == max) return max + 1;
    words[count++] = w;
  }
  return count;
}

/* Fills `ev` from the words after the time; returns NULL or what is wrong. */
static const char *parse_event(char **words, int count, wnd_event *ev) {
  const char *what = words[0];
  if (strcmp(what, "key") == 0) {
    if (count != 2) return "key takes one key name, e.g. 'key Tab' or 'key shift+Up'";
    const char *name = words[1];
    if (strncmp(name, "shift+", 6) == 0) {
      ev->shift = true;
      name += 6;
    }
    if (!*name || strlen(name) >= sizeof ev->key) return "key: missing or overlong key name";
    ev->kind = WND_EVENT_KEY;
    strcpy(ev->key, name);
    return NULL;
  }
  if (strcmp(what, "drag") == 0) {
    if (count != 6) return "drag takes a button and two points: 'drag [shift+]left|right|middle X0 Y0 X1 Y1'";
    const char *button = words[1];
    if (strncmp(button, "shift+", 6) == 0) {
      ev->shift = true;
      button += 6;
    }
    if (strcmp(button, "left") == 0) ev->button = WND_BUTTON_LEFT;
    else if (strcmp(button, "right") == 0) ev->button = WND_BUTTON_RIGHT;
    else if (strcmp(button, "middle") == 0) ev->button = WND_BUTTON_MIDDLE;
    else return "drag: the button is left, right or middle (shift+left with Shift held)";
    int *coords[4] = {&ev->x0, &ev->y0, &ev->x1, &ev->y1};
    for (int k = 0; k < 4; k++)
      if (!parse_int_word(words[2 + k], 0, 16384, coords[k])) return "drag: coordinates are whole pixels from 0 to 16384";
    ev->kind = WND_EVENT_DRAG;
    return NULL;
  }
  if (strcmp(what, "wheel") == 0) {
    double steps = 0;
    if (count != 2 || !cli_parse_float(words[1], &steps) || steps < -100 || steps > 100)
      return "wheel takes a number of steps from -100 to 100 (positive zooms in)";
    ev->kind = WND_EVENT_WHEEL;
    ev->wheel = (float)steps;
    return NULL;
  }
  if (strcmp(what, "resize") == 0) {
    if (count != 3 || !parse_int_word(words[1], 1, 16384, &ev->width) ||
        !parse_int_word(words[2], 1, 16384, &ev->height))
      return "resize takes a width and a height in pixels, each from 1 to 16384";
    ev->kind = WND_EVENT_RESIZE;
    return NULL;
  }
  if (strcmp(what, "screenshot") == 0) {
    if (count > 2) return "screenshot takes at most one path (without blanks)";
    if (count == 2) {
      if (strlen(words[1]) >= sizeof ev->path) return "screenshot: path too long";
      strcpy(ev->path, words[1]);
    }
    ev->kind = WND_EVENT_SCREENSHOT;
    return NULL;
  }
  if (strcmp(what, "quit") == 0) {
    if (count != 1) return "quit takes no arguments";
    ev->kind = WND_EVENT_QUIT;
    return NULL;
  }
  return "unknown event; use key, drag, wheel, resize, screenshot or quit";
}

ir_status wnd_script_parse(const char *text, const char *name, wnd_script *out, char err[IR_ERR_LEN]) {
  *out = (wnd_script){0};
  int capacity = 0;
  double last_time = 0;
  int line_number = 0;
  for (const char *p = text; *p;) {
    const char *end = strchr(p, '\n');
    size_t length = end ? (size_t)(end - p) : strlen(p);
    line_number++;
    char line[MAX_LINE];
    if (length >= sizeof line) {
      snprintf(err, IR_ERR_LEN, "%s:%d: line longer than %d characters", name, line_number, MAX_LINE - 1);
      wnd_script_free(out);
      return IR_ERR_INPUT;
    }
    memcpy(line, p, length);
    line[length] = '\0';
    p += length + (end ? 1 : 0);
    char *hash = strchr(line, '#');
    if (hash) *hash = '\0';
    char *words[8];
    int count = split_words(line, words, 7);
    if (count == 0) continue;

    wnd_event ev = {.line = line_number};
    double time = 0;
    const char *problem = NULL;
    if (!cli_parse_float(words[0], &time) || time < 0)
      problem = "a line starts with the time in seconds (0 or more), e.g. '1.5 key Tab'";
    else if (time < last_time)
      problem = "times may not decrease";
    else if (count < 2)
      problem = "an event follows the time";
    else if (count > 7)
      problem = "too many words";
    else
      problem = parse_event(words + 1, count - 1, &ev);
    if (problem) {
      snprintf(err, IR_ERR_LEN, "%s:%d: %s", name, line_number, problem);
      wnd_script_free(out);
      return IR_ERR_INPUT;
    }
    ev.time_s = last_time = time;
    if (out->count == capacity) {
      capacity = capacity ? capacity * 2 : 16;
      wnd_event *grown = realloc(out->events, (size_t)capacity * sizeof *grown);
      if (!grown) {
        snprintf(err, IR_ERR_LEN, "%s: out of memory", name);
        wnd_script_free(out);
        return IR_ERR_RUNTIME;
      }
      out->events = grown;
    }
    out->events[out->count++] = ev;
  }
  return IR_OK;
}

ir_status wnd_script_load(const char *path, wnd_script *out, char err[IR_ERR_LEN]) {
  *out = (wnd_script){0};
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, IR_ERR_LEN, "--script %s: %s", path, strerror(errno));
    return IR_ERR_INPUT;
  }
  /* Scripts are a few lines; a megabyte is certainly not one. */
  enum { MAX_SCRIPT = 1 << 20 };
  char *text = malloc(MAX_SCRIPT + 1);
  size_t length = text ? fread(text, 1, MAX_SCRIPT + 1, f) : 0;
  bool read_error = ferror(f);
  fclose(f);
  if (!text) {
    snprintf(err, IR_ERR_LEN, "--script %s: out of memory", path);
    return IR_ERR_RUNTIME;
  }
  if (read_error || length > MAX_SCRIPT) {
    snprintf(err, IR_ERR_LEN, "--script %s: %s", path, read_error ? "read error" : "larger than 1 MiB; not a script");
    free(text);
    return IR_ERR_INPUT;
  }
  text[length] = '\0';
  if (strlen(text) != length) {
    snprintf(err, IR_ERR_LEN, "--script %s: contains NUL bytes; not a text file", path);
    free(text);
    return IR_ERR_INPUT;
  }
  ir_status status = wnd_script_parse(text, path, out, err);
  free(text);
  return status;
}

void wnd_script_free(wnd_script *script) {
  free(script->events);
  *script = (wnd_script){0};
}
