/* NRRD (teem's "nearly raw raster data", http://teem.sourceforge.net/nrrd/format.html):
 * attached .nrrd (the data follow the header's blank line) and detached .nhdr headers, raw and
 * gzip encodings, 3-D scalar volumes of type uchar, short, ushort or float.
 *
 * Read: dimension, type, sizes, endian, encoding, spacings, space directions (spacing = the
 * length of each axis vector; with a patient space, RAS/LAS/LPS, the axis nearest to superior
 * becomes the volume's up axis), space, data file (one file, a "fmt first last step [subdim]"
 * pattern, or LIST followed by one name a line), byte skip (-1 for raw data at the end of the
 * file), line skip. Ignored: comments, key:=value pairs and the fields that do not change the
 * voxels (content, kinds, centers, units, origin, ...).
 * 4-D files (dimension 4, the last axis time) are time series (series.c); ir_volume_load refuses
 * them with a line saying so.
 * Not read: ascii, hex and bzip2 encodings; other types; dimensions other than 3 and 4. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/volume_internal.h"

#define NRRD_VALUE_MAX 4096

static bool nrrd_type(const char *word, ir_voxel_type *out) {
  static const struct {
    const char *name;
    ir_voxel_type type;
  } names[] = {
      {"uchar", IR_VOXEL_UINT8},          {"unsigned char", IR_VOXEL_UINT8},
      {"uint8", IR_VOXEL_UINT8},          {"uint8_t", IR_VOXEL_UINT8},
      {"short", IR_VOXEL_INT16},          {"short int", IR_VOXEL_INT16},
      {"signed short", IR_VOXEL_INT16},   {"signed short int", IR_VOXEL_INT16},
      {"int16", IR_VOXEL_INT16},          {"int16_t", IR_VOXEL_INT16},
      {"ushort", IR_VOXEL_UINT16},        {"unsigned short", IR_VOXEL_UINT16},
      {"unsigned short int", IR_VOXEL_UINT16}, {"uint16", IR_VOXEL_UINT16},
      {"uint16_t", IR_VOXEL_UINT16},      {"float", IR_VOXEL_FLOAT32},
  };
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
    if (ir_text_equal_nocase(word, names[k].name)) {
      *out = names[k].type;
      return true;
    }
  return false;
}

/* "(a,b,c) (d,e,f) (g,h,i)" or "none" entries: the length of each vector is the spacing; the
 * vectors themselves go to dirs (zero for "none"). */
static bool parse_space_directions(const char *value, float spacing[3], double dirs[3][3]) {
  const char *p = value;
  for (int axis = 0; axis < 3; axis++) {
    while (*p == ' ' || *p == '\t') p++;
    dirs[axis][0] = dirs[axis][1] = dirs[axis][2] = 0.0;
    if (strncmp(p, "none", 4) == 0) {
      spacing[axis] = 1.0f;
      p += 4;
      continue;
    }
    if (*p != '(') return false;
    const char *close = strchr(p, ')');
    if (!close || close - p > 256) return false;
    char vec[260];
    memcpy(vec, p + 1, (size_t)(close - p - 1));
    vec[close - p - 1] = '\0';
    double c[3];
    if (ir_text_parse_floats(vec, c, 3) != 3) return false;
    double length = sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]);
    spacing[axis] = isfinite(length) && length > 0 ? (float)length : 1.0f;
    memcpy(dirs[axis], c, sizeof c);
    p = close + 1;
  }
  while (*p == ' ' || *p == '\t') p++;
  /* A 4-D time series's fourth axis has no direction. */
  if (strncmp(p, "none", 4) == 0) p += 4;
  while (*p == ' ' || *p == '\t') p++;
  return *p == '\0';
}

typedef struct nrrd_seen {
  bool dimension, type, sizes, endian, encoding, data_file;
  long dims;          /* the dimension field: 3, or 4 (time steps) */
  bool byte_skip_end; /* byte skip -1 */
  long byte_skip;
  bool patient_space; /* space: RAS, LAS or LPS (with or without time): world +z is superior */
  bool directions;    /* space directions given, in dirs */
  double dirs[3][3];
} nrrd_seen;

/* The NRRD spaces of a patient: their third world axis points to the superior side. */
static bool nrrd_patient_space(const char *value) {
  static const char *const names[] = {"right-anterior-superior", "RAS", "left-anterior-superior", "LAS",
                                      "left-posterior-superior", "LPS", "right-anterior-superior-time",
                                      "RAST", "left-anterior-superior-time", "LAST",
                                      "left-posterior-superior-time", "LPST"};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
    if (ir_text_equal_nocase(value, names[k])) return true;
  return false;
}

/* One "field: value" line. */
static ir_status nrrd_field(const char *key, const char *value, size_t line, const char *path,
                            ir_header *h, nrrd_seen *seen, bool *list_mode, char err[IR_ERR_LEN]) {
  if (ir_text_equal_nocase(key, "dimension")) {
    long d = 0;
    if (!ir_text_parse_long(value, &d))
      return ir_input_error(err, path, "line %zu: dimension '%s' is not a number", line, value);
    if (d != 3 && d != 4)
      return ir_input_error(err, path,
                            "line %zu: dimension %ld: only 3-D scalar volumes and 4-D time series of "
                            "them are read",
                            line, d);
    seen->dimension = true;
    seen->dims = d;
  } else if (ir_text_equal_nocase(key, "type")) {
    if (!nrrd_type(value, &h->type))
      return ir_input_error(err, path,
                            "line %zu: type '%s' is not supported (uchar, short, ushort or float)",
                            line, value);
    seen->type = true;
  } else if (ir_text_equal_nocase(key, "sizes")) {
    size_t sizes[4] = {0, 0, 0, 1};
    int want = seen->dims == 4 ? 4 : 3;
    if (ir_text_parse_sizes(value, sizes, want) != want)
      return ir_input_error(err, path, "line %zu: sizes '%s': expected %s whole numbers", line, value,
                            want == 4 ? "four" : "three");
    memcpy(h->dims, sizes, sizeof h->dims);
    h->steps = want == 4 ? sizes[3] : 0;
    seen->sizes = true;
  } else if (ir_text_equal_nocase(key, "endian")) {
    if (!ir_endian_parse(value, &h->endian))
      return ir_input_error(err, path, "line %zu: endian '%s': expected little or big", line,
                            value);
    seen->endian = true;
  } else if (ir_text_equal_nocase(key, "encoding")) {
    if (ir_text_equal_nocase(value, "raw"))
      h->encoding = IR_ENCODING_RAW;
    else if (ir_text_equal_nocase(value, "gzip") || ir_text_equal_nocase(value, "gz"))
      h->encoding = IR_ENCODING_GZIP;
    else
      return ir_input_error(err, path,
                            "line %zu: encoding '%s' is not supported (raw or gzip); convert with "
                            "unu save -e raw",
                            line, value);
    seen->encoding = true;
  } else if (ir_text_equal_nocase(key, "spacings")) {
    double s[4];
    int want = seen->dims == 4 ? 4 : 3; /* a time axis's spacing (usually nan) is not used */
    if (ir_text_parse_floats(value, s, want) != want)
      return ir_input_error(err, path, "line %zu: spacings '%s': expected %s numbers", line, value,
                            want == 4 ? "four" : "three");
    /* NaN marks a non-spatial axis; a missing or absurd spacing is taken as 1. */
    for (int k = 0; k < 3; k++) h->spacing[k] = isfinite(s[k]) && s[k] > 0 ? (float)s[k] : 1.0f;
  } else if (ir_text_equal_nocase(key, "space directions")) {
    if (!parse_space_directions(value, h->spacing, seen->dirs))
      return ir_input_error(err, path,
                            "line %zu: space directions '%s': expected three (x,y,z) vectors",
                            line, value);
    seen->directions = true;
  } else if (ir_text_equal_nocase(key, "space")) {
    seen->patient_space = nrrd_patient_space(value);
  } else if (ir_text_equal_nocase(key, "byte skip") || ir_text_equal_nocase(key, "byteskip")) {
    if (!ir_text_parse_long(value, &seen->byte_skip) || seen->byte_skip < -1)
      return ir_input_error(err, path, "line %zu: byte skip '%s': expected -1 or more", line,
                            value);
  } else if (ir_text_equal_nocase(key, "line skip") || ir_text_equal_nocase(key, "lineskip")) {
    long n = 0;
    if (!ir_text_parse_long(value, &n) || n < 0)
      return ir_input_error(err, path, "line %zu: line skip '%s': expected 0 or more", line,
                            value);
    h->line_skip = (size_t)n;
  } else if (ir_text_equal_nocase(key, "data file") || ir_text_equal_nocase(key, "datafile")) {
    char fmt[1024];
    long first = 0, last = 0, step = 0;
    seen->data_file = true;
    if (strncmp(value, "LIST", 4) == 0 && (value[4] == '\0' || value[4] == ' ')) {
      *list_mode = true;
    } else if (ir_text_is_pattern(value, fmt, sizeof fmt, &first, &last, &step)) {
      if (!ir_text_expand_pattern(h, fmt, first, last, step, path, line, err)) return IR_ERR_INPUT;
    } else if (!*value) {
      return ir_input_error(err, path, "line %zu: data file is empty", line);
    } else if (!ir_header_add_file(h, value, strlen(value))) {
      return ir_input_error(err, path, "line %zu: cannot record the data file", line);
    }
  }
  return IR_OK;
}

ir_status ir_nrrd_parse(const char *text, size_t len, const char *path, ir_header *h,
                        char err[IR_ERR_LEN]) {
  ir_header_init(h);
  nrrd_seen seen = {0};
  size_t pos = 0, number = 0;
  ir_text_line line;
  if (len < 8 || memcmp(text, "NRRD000", 7) != 0 || text[7] < '1' || text[7] > '9' ||
      !ir_text_next_line(text, len, &pos, &number, &line) || line.len != 8)
    return ir_input_error(err, path, "not a NRRD file (the first line must be NRRD0001..NRRD0005)");
  bool list_mode = false, ended = false;
  char key[128], value[NRRD_VALUE_MAX];
  ir_status status = IR_OK;
  while (status == IR_OK && ir_text_next_line(text, len, &pos, &number, &line)) {
    if (line.len == 0) {
      /* The blank line ends the header; attached data begin right after it. */
      ended = true;
      h->data_offset = pos;
      break;
    }
    if (list_mode) {
      const char *s = line.start;
      size_t n = line.len;
      while (n && (*s == ' ' || *s == '\t')) s++, n--;
      while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
      if (n == 0 || memchr(s, '\0', n) || !ir_header_add_file(h, s, n))
        status = ir_input_error(err, path, "line %zu: bad data file name in the LIST", line.number);
      continue;
    }
    if (line.start[0] == '#') continue;
    /* key:=value pairs are free-form metadata. */
    const char *colon = memchr(line.start, ':', line.len);
    if (colon && (size_t)(colon - line.start) + 1 < line.len && colon[1] == '=') continue;
    if (memchr(line.start, '\0', line.len)) {
      status = ir_input_error(err, path, "line %zu: %s", line.number, IR_HEADER_NUL_REASON);
      break;
    }
    if (!ir_text_split(&line, ':', key, sizeof key, value, sizeof value)) {
      status = ir_input_error(err, path,
                              colon ? "line %zu: field or value too long"
                                    : "line %zu: expected 'field: value'",
                              line.number);
      break;
    }
    status = nrrd_field(key, value, line.number, path, h, &seen, &list_mode, err);
  }
  if (status == IR_OK) {
    const char *missing = !seen.dimension ? "dimension"
                          : !seen.type    ? "type"
                          : !seen.sizes   ? "sizes"
                          : !seen.encoding ? "encoding"
                                          : NULL;
    if (missing)
      status = ir_input_error(err, path, "missing the '%s:' field", missing);
    else if (!seen.endian && ir_voxel_type_size(h->type) > 1)
      status = ir_input_error(err, path, "missing the 'endian:' field (little or big), needed "
                                         "for 16-bit and float data");
    else if (seen.data_file && h->file_count == 0)
      status = ir_input_error(err, path, "data file LIST names no files");
    else if (!seen.data_file && !ended)
      status = ir_input_error(err, path,
                              "no 'data file:' field and no blank line before attached data");
    else if (seen.byte_skip == -1 && h->encoding != IR_ENCODING_RAW)
      status = ir_input_error(err, path, "byte skip -1 works only with raw encoding");
  }
  if (status != IR_OK) {
    ir_header_free(h);
    return status;
  }
  if (seen.patient_space) {
    /* Without space directions the index axes are the world axes. */
    static const double identity[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    h->up_axis = ir_up_axis_from_directions(seen.directions ? (const double(*)[3])seen.dirs : identity);
    h->up_source = seen.directions ? "NRRD space directions" : "NRRD space";
  }
  if (seen.byte_skip == -1)
    h->skip_to_end = true;
  else if (h->encoding == IR_ENCODING_RAW)
    h->file_skip = (size_t)seen.byte_skip;
  else
    h->inflated_skip = (size_t)seen.byte_skip; /* NRRD skips these after decompression */
  return IR_OK;
}

ir_status ir_nrrd_read_header(const char *path, ir_header *h, char err[IR_ERR_LEN]) {
  char *text = NULL;
  size_t len = 0;
  ir_status status = ir_read_prefix(path, IR_HEADER_MAX_BYTES, &text, &len, err);
  if (status != IR_OK) return status;
  status = ir_nrrd_parse(text, len, path, h, err);
  free(text);
  if (status != IR_OK) return status;
  if (h->file_count == 0 && ir_path_has_suffix(path, ".nhdr")) {
    ir_header_free(h);
    return ir_input_error(err, path, "a detached header (.nhdr) needs a 'data file:' field");
  }
  return IR_OK;
}

ir_status ir_load_nrrd(const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]) {
  const char *path = desc->source;
  ir_header h;
  ir_status status = ir_nrrd_read_header(path, &h, err);
  if (status != IR_OK) return status;
  if (h.steps > 1)
    status = ir_refuse_4d(&h, path, err);
  else
    status = ir_header_read_voxels(&h, path, desc, out, err);
  ir_header_free(&h);
  return status;
}
