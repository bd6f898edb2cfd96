/* QVis .dat headers (the volume viewer of Stefan Roettger's volume library, used by many
 * public datasets): "Key: value" lines naming a raw file beside the header.
 *
 *   ObjectFileName: bonsai.raw
 *   Resolution:     256 256 256
 *   SliceThickness: 1 1 1
 *   Format:         UCHAR
 *
 * Read: ObjectFileName, Resolution, SliceThickness (spacing), Format (UCHAR, USHORT, FLOAT),
 * and an optional Endianess/Endianness/Endian (LITTLE or BIG; the raw data are little-endian
 * otherwise). Other keys (TaggedFileName, ObjectModel, GridType, ...) are ignored. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/volume_internal.h"

ir_status ir_qvis_parse(const char *text, size_t len, const char *path, ir_header *h,
                        char err[IR_ERR_LEN]) {
  ir_header_init(h);
  size_t pos = 0, number = 0;
  ir_text_line line;
  char key[128], value[4096];
  bool has_file = false, has_dims = false, has_format = false;
  ir_status status = IR_OK;
  while (status == IR_OK && ir_text_next_line(text, len, &pos, &number, &line)) {
    size_t blank = 0;
    while (blank < line.len && (line.start[blank] == ' ' || line.start[blank] == '\t')) blank++;
    if (blank == line.len || line.start[blank] == '#') continue;
    if (memchr(line.start, '\0', line.len)) {
      status = ir_input_error(err, path, "line %zu: %s", line.number, IR_HEADER_NUL_REASON);
      break;
    }
    if (!ir_text_split(&line, ':', key, sizeof key, value, sizeof value)) {
      status = ir_input_error(err, path,
                              memchr(line.start, ':', line.len) ? "line %zu: key or value too long"
                                                                : "line %zu: expected 'Key: value'",
                              line.number);
      break;
    }
    if (ir_text_equal_nocase(key, "ObjectFileName")) {
      if (!*value || has_file || !ir_header_add_file(h, value, strlen(value)))
        status = ir_input_error(err, path, "line %zu: ObjectFileName must name one file",
                                line.number);
      has_file = true;
    } else if (ir_text_equal_nocase(key, "Resolution")) {
      if (ir_text_parse_sizes(value, h->dims, 3) != 3)
        status = ir_input_error(err, path, "line %zu: Resolution '%s': expected three whole numbers",
                                line.number, value);
      has_dims = true;
    } else if (ir_text_equal_nocase(key, "SliceThickness")) {
      double s[3];
      if (ir_text_parse_floats(value, s, 3) != 3)
        status = ir_input_error(err, path, "line %zu: SliceThickness '%s': expected three numbers",
                                line.number, value);
      for (int k = 0; k < 3 && status == IR_OK; k++)
        h->spacing[k] = isfinite(s[k]) && s[k] > 0 ? (float)s[k] : 1.0f;
    } else if (ir_text_equal_nocase(key, "Format")) {
      if (ir_text_equal_nocase(value, "UCHAR") || ir_text_equal_nocase(value, "BYTE"))
        h->type = IR_VOXEL_UINT8;
      else if (ir_text_equal_nocase(value, "USHORT"))
        h->type = IR_VOXEL_UINT16;
      else if (ir_text_equal_nocase(value, "FLOAT"))
        h->type = IR_VOXEL_FLOAT32;
      else
        status = ir_input_error(err, path,
                                "line %zu: Format %s is not supported (UCHAR, USHORT or FLOAT)",
                                line.number, value);
      has_format = true;
    } else if (ir_text_equal_nocase(key, "Endianess") || ir_text_equal_nocase(key, "Endianness") ||
               ir_text_equal_nocase(key, "Endian")) {
      if (ir_text_equal_nocase(value, "LITTLE"))
        h->endian = IR_ENDIAN_LITTLE;
      else if (ir_text_equal_nocase(value, "BIG"))
        h->endian = IR_ENDIAN_BIG;
      else
        status = ir_input_error(err, path, "line %zu: %s '%s': expected LITTLE or BIG",
                                line.number, key, value);
    }
  }
  if (status == IR_OK) {
    const char *missing = !has_file ? "ObjectFileName" : !has_dims ? "Resolution"
                          : !has_format ? "Format" : NULL;
    if (missing) status = ir_input_error(err, path, "missing the %s key", missing);
  }
  if (status != IR_OK) ir_header_free(h);
  return status;
}

ir_status ir_load_qvis(const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]) {
  const char *path = desc->source;
  char *text = NULL;
  size_t len = 0;
  ir_status status = ir_read_prefix(path, IR_HEADER_MAX_BYTES, &text, &len, err);
  if (status != IR_OK) return status;
  ir_header h;
  status = ir_qvis_parse(text, len, path, &h, err);
  free(text);
  if (status != IR_OK) return status;
  status = ir_header_read_voxels(&h, path, desc, out, err);
  ir_header_free(&h);
  return status;
}
