/* Raw volumes: headerless voxel files, plain or gzip-compressed (.raw.gz, read with zlib's
 * gz* API). Dims and type come from the options (--dims, --type, --endian) or from a name of
 * the form name_XxYxZ_type.raw (e.g. bonsai_256x256x256_uint8.raw); options override the name.
 * Byte order is little-endian unless --endian big. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "data/volume_internal.h"

/* Does the word look like an attempt at XxYxZ (digits, signs, dots and at least one 'x')? Then
 * a name that fails to parse gets a message about its dims, not "no dims". */
static bool looks_like_dims(const char *word, size_t len) {
  bool digit = false, x = false;
  for (size_t k = 0; k < len; k++) {
    char c = word[k];
    if (c >= '0' && c <= '9')
      digit = true;
    else if (c == 'x' || c == 'X')
      x = true;
    else if (c != '-' && c != '+' && c != '.')
      return false;
  }
  return digit && x;
}

/* Dims and type from a name_XxYxZ_type.ext file name: *has_dims / *has_type say which parts
 * the name gives; `bad_type` receives the type word when it is not a known type, `bad_dims`
 * the dims word when it looks like dims but is not three whole numbers up to 2^40. */
static void parse_name(const char *path, size_t dims[3], bool *has_dims, ir_voxel_type *type,
                       bool *has_type, char *bad_type, size_t bad_len, char *bad_dims) {
  *has_dims = *has_type = false;
  const char *base = ir_display_name(path);
  const char *type_start = strrchr(base, '_');
  if (!type_start || type_start == base) return;
  const char *dims_start = type_start - 1;
  while (dims_start > base && dims_start[-1] != '_') dims_start--;
  if (dims_start == base) return;
  char token[64];
  size_t dims_len = (size_t)(type_start - dims_start);
  if (dims_len == 0 || dims_len >= sizeof token) return;
  memcpy(token, dims_start, dims_len);
  token[dims_len] = '\0';
  size_t parsed[3];
  char *p = token;
  bool ok = true;
  for (int k = 0; k < 3 && ok; k++) {
    ok = *p >= '0' && *p <= '9';
    errno = 0;
    char *end = NULL;
    unsigned long long value = ok ? strtoull(p, &end, 10) : 0;
    ok = ok && !errno && value <= (1ull << 40) &&
         ((k < 2 && *end == 'x') || (k == 2 && *end == '\0'));
    parsed[k] = (size_t)value;
    if (ok) p = end + 1;
  }
  if (!ok) {
    if (looks_like_dims(token, dims_len)) snprintf(bad_dims, 64, "%s", token);
    return;
  }
  memcpy(dims, parsed, sizeof parsed);
  *has_dims = true;
  const char *dot = strchr(type_start, '.');
  size_t type_len = dot ? (size_t)(dot - type_start - 1) : strlen(type_start + 1);
  char word[32];
  if (type_len >= sizeof word) type_len = sizeof word - 1;
  memcpy(word, type_start + 1, type_len);
  word[type_len] = '\0';
  *has_type = ir_voxel_type_parse(word, type);
  if (!*has_type) snprintf(bad_type, bad_len, "%s", word);
}

static bool is_gzip_name(const char *path) { return ir_path_has_suffix(path, ".gz"); }

ir_status ir_load_raw(const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]) {
  const char *path = desc->source;
  /* A missing file is the most likely mistake; say so before talking about dims. */
  ir_status status = ir_check_file(path, NULL, err);
  if (status != IR_OK) return status;

  ir_header h;
  ir_header_init(&h);
  char bad_type[32] = "", bad_dims[64] = "";
  bool name_dims = false, name_type = false;
  parse_name(path, h.dims, &name_dims, &h.type, &name_type, bad_type, sizeof bad_type, bad_dims);
  bool dims_given = desc->dims[0] || desc->dims[1] || desc->dims[2];
  if (dims_given) memcpy(h.dims, desc->dims, sizeof h.dims);
  if (desc->type_given) h.type = desc->type;
  bool have_dims = dims_given || name_dims, have_type = desc->type_given || name_type;
  if (!have_dims && bad_dims[0])
    return ir_input_error(err, path,
                          "dims '%s' in the file name are not three whole numbers up to "
                          "1099511627776 (XxYxZ, e.g. 256x256x128); rename the file or give --dims",
                          bad_dims);
  if (!have_dims)
    return ir_input_error(err, path,
                          "raw file with no dims: give --dims XxYxZ --type "
                          "uint8|uint16|int16|float32, or name it name_XxYxZ_type.raw "
                          "(e.g. bonsai_256x256x256_uint8.raw)");
  if (!have_type && bad_type[0])
    return ir_input_error(err, path,
                          "unknown voxel type '%s' in the file name; use uint8, uint16, int16 "
                          "or float32, or give --type",
                          bad_type);
  if (!have_type)
    return ir_input_error(err, path,
                          "raw file with no voxel type: give --type uint8|uint16|int16|float32");
  h.endian = desc->endian_given ? desc->endian : IR_ENDIAN_LITTLE;
  if (is_gzip_name(path)) return ir_gz_read_voxels(&h, path, 0, desc, out, err);
  return ir_header_read_voxels(&h, path, desc, out, err);
}
