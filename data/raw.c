/* Raw volumes: headerless voxel files, plain or gzip-compressed (.raw.gz, read with zlib's
 * gz* API). Dims and type come from the options (--dims, --type, --endian) or from a name of
 * the form name_XxYxZ_type.raw (e.g. bonsai_256x256x256_uint8.raw); options override the name.
 * Byte order is little-endian unless --endian big. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "data/volume_internal.h"

#define GZ_CHUNK ((unsigned)1 << 24)

/* Dims and type from a name_XxYxZ_type.ext file name: *has_dims / *has_type say which parts
 * the name gives; `bad_type` receives the type word when it is not a known type. */
static void parse_name(const char *path, size_t dims[3], bool *has_dims, ir_voxel_type *type,
                       bool *has_type, char *bad_type, size_t bad_len) {
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
  for (int k = 0; k < 3; k++) {
    if (*p < '0' || *p > '9') return;
    errno = 0;
    char *end = NULL;
    unsigned long long value = strtoull(p, &end, 10);
    if (errno || value > (1ull << 40)) return;
    parsed[k] = (size_t)value;
    if ((k < 2 && *end != 'x') || (k == 2 && *end != '\0')) return;
    p = end + 1;
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

/* .raw.gz through gzopen/gzread: reads exactly h->dims of h->type and checks nothing follows. */
static ir_status read_gz(const char *path, const ir_header *h, const ir_volume_desc *desc,
                         ir_volume *out, char err[IR_ERR_LEN]) {
  size_t file_size = 0;
  ir_status status = ir_check_file(path, &file_size, err);
  if (status != IR_OK) return status;
  FILE *probe = fopen(path, "rb");
  unsigned char magic[2] = {0, 0};
  size_t got_magic = probe ? fread(magic, 1, 2, probe) : 0;
  if (probe) fclose(probe);
  /* gzread passes non-gzip files through unchanged; a .gz name with plain data is a mistake. */
  if (got_magic < 2 || magic[0] != 0x1f || magic[1] != 0x8b)
    return ir_input_error(err, path, "not a gzip file (no gzip signature)");
  status = ir_volume_allocate(out, h->dims, h->type, path, err);
  if (status != IR_OK) return status;
  gzFile gz = gzopen(path, "rb");
  if (!gz) {
    ir_volume_free(out);
    return ir_input_error(err, path, "cannot open: %s", strerror(errno));
  }
  gzbuffer(gz, 1u << 18);
  ir_progress progress;
  ir_progress_begin(&progress, desc->show_progress, ir_display_name(path), out->bytes);
  unsigned char *dst = out->voxels;
  size_t done = 0;
  while (status == IR_OK && done < out->bytes) {
    size_t left = out->bytes - done;
    unsigned want = left < GZ_CHUNK ? (unsigned)left : GZ_CHUNK;
    int got = gzread(gz, dst + done, want);
    if (got < 0) {
      int code = 0;
      const char *msg = gzerror(gz, &code);
      if (code == Z_MEM_ERROR) {
        snprintf(err, IR_ERR_LEN, "%s: out of host memory while decompressing", path);
        status = IR_ERR_RUNTIME;
      } else {
        status = ir_input_error(err, path, "corrupt gzip data after %zu decompressed bytes (%s)",
                                done, msg);
      }
      break;
    }
    done += (size_t)got;
    ir_progress_add(&progress, (size_t)got);
    if ((unsigned)got < want) {
      status = ir_input_error(err, path,
                              "gzip data ends after %zu bytes, expected %zu for %zux%zux%zu %s",
                              done, out->bytes, h->dims[0], h->dims[1], h->dims[2],
                              ir_voxel_type_name(h->type));
    }
  }
  ir_progress_end(&progress);
  if (status == IR_OK) {
    unsigned char extra;
    int more = gzread(gz, &extra, 1);
    if (more > 0)
      status = ir_input_error(err, path,
                              "decompresses to more than %zu bytes, the size of %zux%zux%zu %s",
                              out->bytes, h->dims[0], h->dims[1], h->dims[2],
                              ir_voxel_type_name(h->type));
    else if (more < 0) {
      int code = 0;
      status = ir_input_error(err, path, "corrupt gzip data at the end (%s)", gzerror(gz, &code));
    }
  }
  gzclose(gz);
  if (status != IR_OK) {
    ir_volume_free(out);
    return status;
  }
  size_t size = ir_voxel_type_size(h->type);
  if (size > 1 && (h->endian == IR_ENDIAN_BIG) != ir_host_is_big_endian())
    ir_swap_voxels(out->voxels, ir_volume_voxel_count(out), size);
  memcpy(out->spacing, h->spacing, sizeof out->spacing);
  ir_volume_finish(out, ir_display_name(path));
  return IR_OK;
}

ir_status ir_load_raw(const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]) {
  const char *path = desc->source;
  /* A missing file is the most likely mistake; say so before talking about dims. */
  ir_status status = ir_check_file(path, NULL, err);
  if (status != IR_OK) return status;

  ir_header h;
  ir_header_init(&h);
  char bad_type[32] = "";
  bool name_dims = false, name_type = false;
  parse_name(path, h.dims, &name_dims, &h.type, &name_type, bad_type, sizeof bad_type);
  bool dims_given = desc->dims[0] || desc->dims[1] || desc->dims[2];
  if (dims_given) memcpy(h.dims, desc->dims, sizeof h.dims);
  if (desc->type_given) h.type = desc->type;
  bool have_dims = dims_given || name_dims, have_type = desc->type_given || name_type;
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
  if (desc->spacing_given) memcpy(h.spacing, desc->spacing, sizeof h.spacing);
  if (is_gzip_name(path)) return read_gz(path, &h, desc, out, err);
  return ir_header_read_voxels(&h, path, desc, out, err);
}
