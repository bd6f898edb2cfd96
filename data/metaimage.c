/* MetaImage (ITK/VTK, https://itk.org/Wiki/ITK/MetaIO/Documentation): .mhd headers with the
 * data in other files and .mha files with the data after the header (ElementDataFile =
 * LOCAL), "Key = Value" lines, ElementDataFile last.
 *
 * Read: ObjectType (Image), NDims (3), DimSize, ElementType (MET_UCHAR, MET_SHORT, MET_USHORT,
 * MET_FLOAT), ElementNumberOfChannels (1), ElementByteOrderMSB / BinaryDataByteOrderMSB,
 * BinaryData (True), CompressedData (zlib), ElementSpacing (else ElementSize), HeaderSize
 * (bytes before the data in each file; -1: data at the end), ElementDataFile (LOCAL, a file,
 * a "fmt first last step" pattern, or LIST followed by one name a line); AnatomicalOrientation,
 * else TransformMatrix, for the volume's up axis (the one toward superior). Other keys (offset,
 * centre of rotation, comments) do not change the voxels and are ignored. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/volume_internal.h"

#define META_VALUE_MAX 4096

static bool meta_bool(const char *value, bool *out) {
  if (ir_text_equal_nocase(value, "true") || strcmp(value, "1") == 0) {
    *out = true;
    return true;
  }
  if (ir_text_equal_nocase(value, "false") || strcmp(value, "0") == 0) {
    *out = false;
    return true;
  }
  return false;
}

static bool meta_type(const char *value, ir_voxel_type *out) {
  static const struct {
    const char *name;
    ir_voxel_type type;
  } names[] = {{"MET_UCHAR", IR_VOXEL_UINT8},
               {"MET_SHORT", IR_VOXEL_INT16},
               {"MET_USHORT", IR_VOXEL_UINT16},
               {"MET_FLOAT", IR_VOXEL_FLOAT32}};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
    if (ir_text_equal_nocase(value, names[k].name)) {
      *out = names[k].type;
      return true;
    }
  return false;
}

typedef struct meta_seen {
  bool ndims, dims, type, spacing, data_file, compressed;
  long header_size;
  ir_axis orientation_up; /* from AnatomicalOrientation */
  bool transform;         /* TransformMatrix given, rows in dirs */
  double dirs[3][3];
} meta_seen;

/* AnatomicalOrientation as ITK writes it: one letter per index axis naming the side the axis
 * comes from ("RAI": x from right to left, y from anterior to posterior, z from inferior to
 * superior, the identity in ITK's LPS space). The axis lettered I points up, S down. Returns
 * false on anything but three distinct axis letters. */
static bool meta_orientation_up(const char *value, ir_axis *up) {
  if (strlen(value) != 3) return false;
  const char *pairs = "RLAPIS";
  int used = 0;
  *up = IR_AXIS_NONE;
  for (int k = 0; k < 3; k++) {
    const char *at = strchr(pairs, toupper((unsigned char)value[k]));
    if (!at || !value[k]) return false;
    int pair = (int)(at - pairs) / 2;
    if (used & (1 << pair)) return false;
    used |= 1 << pair;
    if (pair == 2) *up = (ir_axis)((*at == 'I' ? IR_AXIS_X : IR_AXIS_NEG_X) + k);
  }
  return true;
}

static ir_status meta_spacing(const char *value, float spacing[3], size_t line, const char *key,
                              const char *path, char err[IR_ERR_LEN]) {
  double s[3];
  if (ir_text_parse_floats(value, s, 3) != 3)
    return ir_input_error(err, path, "line %zu: %s '%s': expected three numbers", line, key, value);
  for (int k = 0; k < 3; k++) spacing[k] = isfinite(s[k]) && s[k] > 0 ? (float)fabs(s[k]) : 1.0f;
  return IR_OK;
}

static ir_status meta_field(const char *key, const char *value, size_t line, const char *path,
                            ir_header *h, meta_seen *seen, char err[IR_ERR_LEN]) {
  bool flag = false;
  if (ir_text_equal_nocase(key, "ObjectType")) {
    if (!ir_text_equal_nocase(value, "Image"))
      return ir_input_error(err, path, "line %zu: ObjectType %s: only Image is read", line, value);
  } else if (ir_text_equal_nocase(key, "NDims")) {
    long n = 0;
    if (!ir_text_parse_long(value, &n) || n != 3)
      return ir_input_error(err, path, "line %zu: NDims %s: only 3-D volumes are read", line, value);
    seen->ndims = true;
  } else if (ir_text_equal_nocase(key, "DimSize")) {
    if (ir_text_parse_sizes(value, h->dims, 3) != 3)
      return ir_input_error(err, path, "line %zu: DimSize '%s': expected three whole numbers", line,
                            value);
    seen->dims = true;
  } else if (ir_text_equal_nocase(key, "ElementType")) {
    if (!meta_type(value, &h->type))
      return ir_input_error(err, path,
                            "line %zu: ElementType %s is not supported (MET_UCHAR, MET_SHORT, "
                            "MET_USHORT or MET_FLOAT)",
                            line, value);
    seen->type = true;
  } else if (ir_text_equal_nocase(key, "ElementNumberOfChannels")) {
    long n = 0;
    if (!ir_text_parse_long(value, &n) || n != 1)
      return ir_input_error(err, path, "line %zu: %s channels: only scalar volumes are read", line,
                            value);
  } else if (ir_text_equal_nocase(key, "ElementByteOrderMSB") ||
             ir_text_equal_nocase(key, "BinaryDataByteOrderMSB") ||
             ir_text_equal_nocase(key, "ByteOrderMSB")) {
    if (!meta_bool(value, &flag))
      return ir_input_error(err, path, "line %zu: %s '%s': expected True or False", line, key,
                            value);
    h->endian = flag ? IR_ENDIAN_BIG : IR_ENDIAN_LITTLE;
  } else if (ir_text_equal_nocase(key, "BinaryData")) {
    if (!meta_bool(value, &flag))
      return ir_input_error(err, path, "line %zu: BinaryData '%s': expected True or False", line,
                            value);
    if (!flag)
      return ir_input_error(err, path, "line %zu: text (BinaryData = False) data are not read",
                            line);
  } else if (ir_text_equal_nocase(key, "CompressedData")) {
    if (!meta_bool(value, &seen->compressed))
      return ir_input_error(err, path, "line %zu: CompressedData '%s': expected True or False",
                            line, value);
    h->encoding = seen->compressed ? IR_ENCODING_ZLIB : IR_ENCODING_RAW;
  } else if (ir_text_equal_nocase(key, "ElementSpacing")) {
    seen->spacing = true;
    return meta_spacing(value, h->spacing, line, key, path, err);
  } else if (ir_text_equal_nocase(key, "ElementSize")) {
    /* The size of a voxel; the spacing when ElementSpacing is not given. */
    float size[3];
    ir_status status = meta_spacing(value, size, line, key, path, err);
    if (status == IR_OK && !seen->spacing) memcpy(h->spacing, size, sizeof size);
    return status;
  } else if (ir_text_equal_nocase(key, "AnatomicalOrientation")) {
    /* Orientation does not change the voxels: a value not understood only leaves up unknown. */
    if (!meta_orientation_up(value, &seen->orientation_up)) seen->orientation_up = IR_AXIS_NONE;
  } else if (ir_text_equal_nocase(key, "TransformMatrix") || ir_text_equal_nocase(key, "Rotation") ||
             ir_text_equal_nocase(key, "Orientation")) {
    double m[9];
    /* ITK writes row k as the direction of index axis k in its LPS space (+z superior). */
    seen->transform = ir_text_parse_floats(value, m, 9) == 9;
    for (int k = 0; k < 9 && seen->transform; k++) seen->dirs[k / 3][k % 3] = m[k];
  } else if (ir_text_equal_nocase(key, "HeaderSize")) {
    if (!ir_text_parse_long(value, &seen->header_size) || seen->header_size < -1)
      return ir_input_error(err, path, "line %zu: HeaderSize '%s': expected -1 or more", line,
                            value);
  }
  return IR_OK;
}

ir_status ir_meta_parse(const char *text, size_t len, const char *path, ir_header *h,
                        char err[IR_ERR_LEN]) {
  ir_header_init(h);
  meta_seen seen = {0};
  size_t pos = 0, number = 0;
  ir_text_line line;
  char key[128], value[META_VALUE_MAX];
  bool attached = false, list_mode = false;
  ir_status status = IR_OK;
  while (status == IR_OK && ir_text_next_line(text, len, &pos, &number, &line)) {
    if (list_mode) {
      const char *s = line.start;
      size_t n = line.len;
      while (n && (*s == ' ' || *s == '\t')) s++, n--;
      while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
      if (n == 0) continue;
      if (memchr(s, '\0', n) || !ir_header_add_file(h, s, n))
        status = ir_input_error(err, path, "line %zu: bad data file name in the LIST", line.number);
      continue;
    }
    size_t blank = 0;
    while (blank < line.len && (line.start[blank] == ' ' || line.start[blank] == '\t')) blank++;
    if (blank == line.len) continue;
    if (memchr(line.start, '\0', line.len)) {
      status = ir_input_error(err, path, "line %zu: %s", line.number, IR_HEADER_NUL_REASON);
      break;
    }
    if (!ir_text_split(&line, '=', key, sizeof key, value, sizeof value)) {
      status = ir_input_error(err, path,
                              memchr(line.start, '=', line.len)
                                  ? "line %zu: key or value too long"
                                  : "line %zu: expected 'Key = Value'",
                              line.number);
      break;
    }
    if (!ir_text_equal_nocase(key, "ElementDataFile")) {
      status = meta_field(key, value, line.number, path, h, &seen, err);
      continue;
    }
    /* ElementDataFile is the last key: LOCAL data start on the next line. */
    seen.data_file = true;
    char fmt[1024];
    long first = 0, last = 0, step = 0;
    if (ir_text_equal_nocase(value, "LOCAL")) {
      attached = true;
      h->data_offset = pos;
      break;
    }
    if (strncmp(value, "LIST", 4) == 0 && (value[4] == '\0' || value[4] == ' ')) {
      list_mode = true;
    } else if (ir_text_is_pattern(value, fmt, sizeof fmt, &first, &last, &step)) {
      if (!ir_text_expand_pattern(h, fmt, first, last, step, path, line.number, err))
        status = IR_ERR_INPUT;
      break;
    } else if (!*value) {
      status = ir_input_error(err, path, "line %zu: ElementDataFile is empty", line.number);
    } else {
      if (!ir_header_add_file(h, value, strlen(value)))
        status = ir_input_error(err, path, "line %zu: cannot record the data file", line.number);
      break;
    }
  }
  if (status == IR_OK) {
    const char *missing = !seen.ndims       ? "NDims"
                          : !seen.dims      ? "DimSize"
                          : !seen.type      ? "ElementType"
                          : !seen.data_file ? "ElementDataFile"
                                            : NULL;
    if (missing)
      status = ir_input_error(err, path, "missing the %s key", missing);
    else if (!attached && h->file_count == 0)
      status = ir_input_error(err, path, "ElementDataFile LIST names no files");
    else if (seen.header_size == -1 && seen.compressed)
      status = ir_input_error(err, path, "HeaderSize = -1 works only with uncompressed data");
  }
  if (status != IR_OK) {
    ir_header_free(h);
    return status;
  }
  if (seen.orientation_up != IR_AXIS_NONE) {
    h->up_axis = seen.orientation_up;
    h->up_source = "MetaImage AnatomicalOrientation";
  } else if (seen.transform) {
    h->up_axis = ir_up_axis_from_directions((const double(*)[3])seen.dirs);
    h->up_source = "MetaImage TransformMatrix";
  }
  if (seen.header_size == -1)
    h->skip_to_end = true;
  else
    h->file_skip = (size_t)seen.header_size;
  return IR_OK;
}

ir_status ir_load_meta(const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]) {
  const char *path = desc->source;
  char *text = NULL;
  size_t len = 0;
  ir_status status = ir_read_prefix(path, IR_HEADER_MAX_BYTES, &text, &len, err);
  if (status != IR_OK) return status;
  ir_header h;
  status = ir_meta_parse(text, len, path, &h, err);
  free(text);
  if (status != IR_OK) return status;
  if (h.file_count == 0 && ir_path_has_suffix(path, ".mhd")) {
    ir_header_free(&h);
    return ir_input_error(err, path,
                          "ElementDataFile = LOCAL in a .mhd header: the data are not here; "
                          "name the file .mha if they follow the header");
  }
  status = ir_header_read_voxels(&h, path, desc, out, err);
  ir_header_free(&h);
  return status;
}
