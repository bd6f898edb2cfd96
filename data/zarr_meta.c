/* Zarr metadata: a v2 array (.zarray), a v3 array (zarr.json), and the OME-Zarr multiscales
 * object (0.4 in .zattrs, 0.5 under zarr.json's attributes.ome), parsed with cJSON from memory.
 * Everything the loader does not read is refused here by name (a codec, a filter, a data type,
 * an axis), so that a load never starts on an array it would decode wrongly.
 *
 * What this file does not do: touch the file system or the chunks (zarr.c). */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "data/zarr.h"

static const cJSON *member(const cJSON *o, const char *name) { return cJSON_GetObjectItemCaseSensitive(o, name); }

static bool whole_number(const cJSON *v, size_t min, size_t *out) {
  if (!cJSON_IsNumber(v)) return false;
  double d = v->valuedouble;
  if (!(d >= (double)min) || d > 9.0e15 || d != floor(d)) return false;
  *out = (size_t)d;
  return true;
}

/* A JSON list of whole numbers (at least `min` each) of the array's rank. */
static bool size_list(const cJSON *v, int ndim, size_t min, size_t *out) {
  if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != ndim) return false;
  for (int k = 0; k < ndim; k++)
    if (!whole_number(cJSON_GetArrayItem(v, k), min, &out[k])) return false;
  return true;
}

/* ---- Element types ------------------------------------------------------------------------------ */
/* v2: numpy's typestr, "<u2", ">f4", "|u1". */
static bool v2_dtype(const char *s, ir_sample_type *t, bool *big) {
  if (strlen(s) < 3) return false;
  if (s[0] != '<' && s[0] != '>' && s[0] != '|') return false;
  *big = s[0] == '>';
  char kind = s[1];
  long size = strtol(s + 2, NULL, 10);
  char tail[8];
  snprintf(tail, sizeof tail, "%ld", size);
  if (strcmp(tail, s + 2) != 0) return false;
  static const struct {
    char kind;
    long size;
    ir_sample_type t;
  } table[] = {{'i', 1, IR_SAMPLE_INT8},    {'u', 1, IR_SAMPLE_UINT8},   {'i', 2, IR_SAMPLE_INT16},
               {'u', 2, IR_SAMPLE_UINT16},  {'i', 4, IR_SAMPLE_INT32},   {'u', 4, IR_SAMPLE_UINT32},
               {'i', 8, IR_SAMPLE_INT64},   {'u', 8, IR_SAMPLE_UINT64},  {'f', 4, IR_SAMPLE_FLOAT32},
               {'f', 8, IR_SAMPLE_FLOAT64}};
  for (size_t k = 0; k < sizeof table / sizeof table[0]; k++)
    if (table[k].kind == kind && table[k].size == size) {
      *t = table[k].t;
      return true;
    }
  return false;
}

static bool v3_dtype(const char *s, ir_sample_type *t) {
  for (int k = 0; k < IR_SAMPLE_TYPE_COUNT; k++)
    if (strcmp(s, ir_sample_name((ir_sample_type)k)) == 0) {
      *t = (ir_sample_type)k;
      return true;
    }
  return false;
}

/* ---- Fill values -------------------------------------------------------------------------------- */
static void store_value(ir_sample_type t, double v, unsigned char out[8]) {
  memset(out, 0, 8);
  switch (t) {
  case IR_SAMPLE_INT8: { int8_t x = (int8_t)v; memcpy(out, &x, 1); break; }
  case IR_SAMPLE_UINT8: { uint8_t x = (uint8_t)v; memcpy(out, &x, 1); break; }
  case IR_SAMPLE_INT16: { int16_t x = (int16_t)v; memcpy(out, &x, 2); break; }
  case IR_SAMPLE_UINT16: { uint16_t x = (uint16_t)v; memcpy(out, &x, 2); break; }
  case IR_SAMPLE_INT32: { int32_t x = (int32_t)v; memcpy(out, &x, 4); break; }
  case IR_SAMPLE_UINT32: { uint32_t x = (uint32_t)v; memcpy(out, &x, 4); break; }
  case IR_SAMPLE_INT64: { int64_t x = (int64_t)v; memcpy(out, &x, 8); break; }
  case IR_SAMPLE_UINT64: { uint64_t x = (uint64_t)v; memcpy(out, &x, 8); break; }
  case IR_SAMPLE_FLOAT32: { float x = (float)v; memcpy(out, &x, 4); break; }
  default: memcpy(out, &v, 8); break;
  }
}

static bool value_fits(ir_sample_type t, double v) {
  /* Inclusive bounds up to 32 bits; the 64-bit types' ends (2^63, 2^64) are exclusive, as a double
   * converted to them must lie below (the cast of a larger one is undefined). */
  static const double lo[] = {-128, 0, -32768, 0, -2147483648.0, 0, -0x1p63, 0};
  static const double hi[] = {127, 255, 32767, 65535, 2147483647.0, 4294967295.0, 0x1p63, 0x1p64};
  if (t >= IR_SAMPLE_FLOAT32) return true;
  if (!(isfinite(v) && v == floor(v) && v >= lo[t])) return false;
  return t == IR_SAMPLE_INT64 || t == IR_SAMPLE_UINT64 ? v < hi[t] : v <= hi[t];
}

/* null (v2: zero), a number, true/false, "NaN", "Infinity", "-Infinity", or (v3) "0x..." with
 * the element's bits. */
static bool parse_fill(const cJSON *v, ir_sample_type t, unsigned char out[8], const char *path, char err[IR_ERR_LEN]) {
  memset(out, 0, 8);
  if (!v || cJSON_IsNull(v)) return true;
  if (cJSON_IsBool(v)) {
    store_value(t, cJSON_IsTrue(v) ? 1 : 0, out);
    return true;
  }
  if (cJSON_IsNumber(v)) {
    if (!value_fits(t, v->valuedouble)) {
      ir_input_error(err, path, "fill_value %.17g is not a %s value", v->valuedouble, ir_sample_name(t));
      return false;
    }
    store_value(t, v->valuedouble, out);
    return true;
  }
  if (cJSON_IsString(v)) {
    const char *s = v->valuestring;
    bool is_float = t >= IR_SAMPLE_FLOAT32;
    if (is_float && strcmp(s, "NaN") == 0) return store_value(t, NAN, out), true;
    if (is_float && strcmp(s, "Infinity") == 0) return store_value(t, INFINITY, out), true;
    if (is_float && strcmp(s, "-Infinity") == 0) return store_value(t, -INFINITY, out), true;
    size_t n = strlen(s), size = ir_sample_size(t);
    if (n == 2 + 2 * size && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
      uint64_t bits = 0;
      bool ok = true;
      for (size_t i = 2; i < n; i++) {
        int c = tolower((unsigned char)s[i]);
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        ok = ok && d >= 0;
        bits = bits << 4 | (uint64_t)(d < 0 ? 0 : d);
      }
      if (ok) {
        /* The bits of one element, as a number: the host's order is the element's. */
        if (size == 1) out[0] = (unsigned char)bits;
        else if (size == 2) { uint16_t x = (uint16_t)bits; memcpy(out, &x, 2); }
        else if (size == 4) { uint32_t x = (uint32_t)bits; memcpy(out, &x, 4); }
        else memcpy(out, &bits, 8);
        return true;
      }
    }
  }
  ir_input_error(err, path, "fill_value: not a value of %s", ir_sample_name(t));
  return false;
}

/* ---- Codecs ------------------------------------------------------------------------------------- */
static bool compressor_from_name(const char *id, ir_zarr_compressor *c) {
  static const struct {
    const char *name;
    ir_zarr_compressor c;
  } table[] = {{"blosc", IR_ZARR_BLOSC}, {"zstd", IR_ZARR_ZSTD}, {"zlib", IR_ZARR_ZLIB}, {"gzip", IR_ZARR_GZIP}};
  for (size_t k = 0; k < sizeof table / sizeof table[0]; k++)
    if (strcmp(id, table[k].name) == 0) {
      *c = table[k].c;
      return true;
    }
  return false;
}

static ir_status set_compressor(ir_zarr_codecs *codecs, const char *id, const char *path, char err[IR_ERR_LEN]) {
  ir_zarr_compressor c;
  if (!compressor_from_name(id, &c))
    return ir_input_error(err, path, "codec '%s' is not read (blosc, zstd, zlib, gzip, bytes, transpose, crc32c and "
                          "sharding_indexed are)", id);
  if (codecs->compressor != IR_ZARR_NONE || codecs->crc32c)
    return ir_input_error(err, path, "codec '%s' after another compressor or checksum: one compressor a chunk is read", id);
  if (!ir_zarr_compressor_built(c))
    return ir_input_error(err, path, "codec '%s': inkray was built without it (install %s and rebuild)", id,
                          c == IR_ZARR_BLOSC ? "libblosc-dev" : "libzstd-dev");
  codecs->compressor = c;
  return IR_OK;
}

static void identity_order(ir_zarr_codecs *c, int ndim) {
  for (int k = 0; k < ndim; k++) c->order[k] = k;
}

static const char *codec_name(const cJSON *codec) {
  const cJSON *name = member(codec, "name");
  return cJSON_IsString(name) ? name->valuestring : NULL;
}

/* v3 codecs: array->array (transpose), one array->bytes (bytes, or sharding_indexed when
 * `outer`), then bytes->bytes (a compressor, crc32c). */
static ir_status v3_codecs(const cJSON *list, ir_zarr_array *a, bool outer, ir_zarr_codecs *c, const char *path,
                           char err[IR_ERR_LEN]) {
  identity_order(c, a->ndim);
  c->big_endian = false;
  c->compressor = IR_ZARR_NONE;
  c->crc32c = false;
  if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) == 0)
    return ir_input_error(err, path, "codecs: expected a non-empty list");
  int stage = 0; /* 0: array->array, 1: bytes->bytes */
  bool transposed = false;
  const cJSON *codec;
  cJSON_ArrayForEach(codec, list) {
    const char *name = codec_name(codec);
    if (!name) return ir_input_error(err, path, "codecs: a codec without a name");
    const cJSON *cfg = member(codec, "configuration");
    if (strcmp(name, "transpose") == 0) {
      if (stage != 0 || transposed) return ir_input_error(err, path, "codecs: transpose out of place");
      const cJSON *order = member(cfg, "order");
      size_t o[IR_ZARR_MAX_DIMS];
      if (cJSON_IsString(order) && strcmp(order->valuestring, "C") == 0) {
        identity_order(c, a->ndim);
      } else if (cJSON_IsString(order) && strcmp(order->valuestring, "F") == 0) {
        for (int k = 0; k < a->ndim; k++) c->order[k] = a->ndim - 1 - k;
      } else if (size_list(order, a->ndim, 0, o)) {
        bool seen[IR_ZARR_MAX_DIMS] = {false};
        for (int k = 0; k < a->ndim; k++) {
          if (o[k] >= (size_t)a->ndim || seen[o[k]]) return ir_input_error(err, path, "transpose: order is not a permutation");
          seen[o[k]] = true;
          c->order[k] = (int)o[k];
        }
      } else {
        return ir_input_error(err, path, "transpose: order is not a permutation of the %d axes", a->ndim);
      }
      transposed = true;
    } else if (strcmp(name, "bytes") == 0 || strcmp(name, "endian") == 0) {
      if (stage != 0) return ir_input_error(err, path, "codecs: two array->bytes codecs");
      const cJSON *endian = member(cfg, "endian");
      if (cJSON_IsString(endian) && strcmp(endian->valuestring, "big") == 0) c->big_endian = true;
      else if (endian && !(cJSON_IsString(endian) && strcmp(endian->valuestring, "little") == 0))
        return ir_input_error(err, path, "bytes: endian must be little or big");
      if (!endian && a->elem > 1) return ir_input_error(err, path, "bytes: endian missing for %s", ir_sample_name(a->sample));
      stage = 1;
    } else if (strcmp(name, "sharding_indexed") == 0) {
      if (!outer) return ir_input_error(err, path, "sharding_indexed inside a shard is not read");
      if (stage != 0 || transposed) return ir_input_error(err, path, "sharding_indexed after another codec is not read");
      if (!size_list(member(cfg, "chunk_shape"), a->ndim, 1, a->inner))
        return ir_input_error(err, path, "sharding_indexed: chunk_shape must hold %d whole numbers of 1 or more", a->ndim);
      for (int k = 0; k < a->ndim; k++)
        if (a->chunk[k] % a->inner[k] != 0)
          return ir_input_error(err, path, "sharding_indexed: inner chunks of %zu do not divide shards of %zu (axis %d)",
                                a->inner[k], a->chunk[k], k);
      const cJSON *loc = member(cfg, "index_location");
      a->index_at_start = cJSON_IsString(loc) && strcmp(loc->valuestring, "start") == 0;
      if (loc && !(cJSON_IsString(loc) && (strcmp(loc->valuestring, "start") == 0 || strcmp(loc->valuestring, "end") == 0)))
        return ir_input_error(err, path, "sharding_indexed: index_location must be start or end");
      /* The index: bytes (either order), then an optional crc32c; nothing else. */
      const cJSON *ic = member(cfg, "index_codecs"), *one;
      if (!cJSON_IsArray(ic)) return ir_input_error(err, path, "sharding_indexed: index_codecs missing");
      int n = 0;
      cJSON_ArrayForEach(one, ic) {
        const char *iname = codec_name(one);
        const cJSON *e = member(member(one, "configuration"), "endian");
        if (iname && strcmp(iname, "bytes") == 0 && n == 0)
          a->index_big_endian = cJSON_IsString(e) && strcmp(e->valuestring, "big") == 0;
        else if (iname && strcmp(iname, "crc32c") == 0 && n == 1)
          a->index_crc32c = true;
        else
          return ir_input_error(err, path, "sharding_indexed: index codec '%s' is not read (bytes, then crc32c, are)",
                                iname ? iname : "?");
        n++;
      }
      if (n == 0) return ir_input_error(err, path, "sharding_indexed: index_codecs is empty");
      a->sharded = true;
      ir_status st = v3_codecs(member(cfg, "codecs"), a, false, c, path, err);
      if (st != IR_OK) return st;
      stage = 2; /* nothing may follow the shard codec */
    } else if (strcmp(name, "crc32c") == 0) {
      if (stage != 1 || c->crc32c) return ir_input_error(err, path, "codecs: crc32c out of place");
      c->crc32c = true;
    } else {
      if (stage == 2) return ir_input_error(err, path, "codec '%s' after sharding_indexed is not read", name);
      if (stage != 1) return ir_input_error(err, path, "codec '%s' before the bytes codec is not read", name);
      ir_status st = set_compressor(c, name, path, err);
      if (st != IR_OK) return st;
    }
  }
  if (stage == 0) return ir_input_error(err, path, "codecs: no bytes codec");
  return IR_OK;
}

static ir_status v2_compressor(const cJSON *comp, ir_zarr_codecs *c, const char *path, char err[IR_ERR_LEN]) {
  c->compressor = IR_ZARR_NONE;
  if (!comp || cJSON_IsNull(comp)) return IR_OK;
  const cJSON *id = member(comp, "id");
  if (!cJSON_IsString(id)) return ir_input_error(err, path, "compressor: no id");
  return set_compressor(c, id->valuestring, path, err);
}

/* ---- Arrays ----------------------------------------------------------------------------------- */
/* The array's shape (v2 and v3 alike): its dimension count and sizes. */
static ir_status parse_shape(const cJSON *root, const char *path, ir_zarr_array *a, char err[IR_ERR_LEN]) {
  const cJSON *shape = member(root, "shape");
  if (!cJSON_IsArray(shape)) return ir_input_error(err, path, "shape: expected a list");
  a->ndim = cJSON_GetArraySize(shape);
  if (a->ndim < 1 || a->ndim > IR_ZARR_MAX_DIMS)
    return ir_input_error(err, path, "%d dimensions: 3 to 5 are read", a->ndim);
  if (!size_list(shape, a->ndim, 1, a->shape))
    return ir_input_error(err, path, "shape: expected whole numbers of 1 or more (an empty array has nothing to draw)");
  return IR_OK;
}

static ir_status parse_v2(const cJSON *root, const char *path, ir_zarr_array *a, char err[IR_ERR_LEN]) {
  const cJSON *fmt = member(root, "zarr_format");
  if (!cJSON_IsNumber(fmt) || fmt->valuedouble != 2) return ir_input_error(err, path, "zarr_format is not 2");
  ir_status st = parse_shape(root, path, a, err);
  if (st != IR_OK) return st;
  if (!size_list(member(root, "chunks"), a->ndim, 1, a->chunk))
    return ir_input_error(err, path, "chunks: expected %d whole numbers of 1 or more", a->ndim);
  const cJSON *dtype = member(root, "dtype");
  if (!cJSON_IsString(dtype)) return ir_input_error(err, path, "dtype: structured types are not read");
  if (!v2_dtype(dtype->valuestring, &a->sample, &a->codecs.big_endian))
    return ir_input_error(err, path, "dtype '%s' is not read (integers of 8 to 64 bits, float32, float64 are)",
                          dtype->valuestring);
  a->elem = ir_sample_size(a->sample);
  const cJSON *order = member(root, "order");
  bool fortran = cJSON_IsString(order) && strcmp(order->valuestring, "F") == 0;
  if (!(cJSON_IsString(order) && (fortran || strcmp(order->valuestring, "C") == 0)))
    return ir_input_error(err, path, "order must be C or F");
  for (int k = 0; k < a->ndim; k++) a->codecs.order[k] = fortran ? a->ndim - 1 - k : k;
  const cJSON *filters = member(root, "filters");
  if (filters && !cJSON_IsNull(filters)) {
    if (!cJSON_IsArray(filters)) return ir_input_error(err, path, "filters: expected a list or null");
    if (cJSON_GetArraySize(filters) > 0) {
      const cJSON *id = member(cJSON_GetArrayItem(filters, 0), "id");
      return ir_input_error(err, path, "filter '%s' is not read (save the array without filters)",
                            cJSON_IsString(id) ? id->valuestring : "?");
    }
  }
  st = v2_compressor(member(root, "compressor"), &a->codecs, path, err);
  if (st != IR_OK) return st;
  const cJSON *sep = member(root, "dimension_separator");
  a->separator = '.';
  if (sep && !cJSON_IsNull(sep)) {
    if (!cJSON_IsString(sep) || (strcmp(sep->valuestring, ".") != 0 && strcmp(sep->valuestring, "/") != 0))
      return ir_input_error(err, path, "dimension_separator must be . or /");
    a->separator = sep->valuestring[0];
  }
  if (!parse_fill(member(root, "fill_value"), a->sample, a->fill, path, err)) return IR_ERR_INPUT;
  return IR_OK;
}

static ir_status parse_v3(const cJSON *root, const char *path, ir_zarr_array *a, char err[IR_ERR_LEN]) {
  const cJSON *fmt = member(root, "zarr_format");
  if (!cJSON_IsNumber(fmt) || fmt->valuedouble != 3) return ir_input_error(err, path, "zarr_format is not 3");
  const cJSON *node = member(root, "node_type");
  if (!cJSON_IsString(node) || strcmp(node->valuestring, "array") != 0)
    return ir_input_error(err, path, "not an array (node_type %s)", cJSON_IsString(node) ? node->valuestring : "missing");
  ir_status st = parse_shape(root, path, a, err);
  if (st != IR_OK) return st;
  const cJSON *grid = member(root, "chunk_grid");
  const cJSON *gname = member(grid, "name");
  if (!cJSON_IsString(gname) || strcmp(gname->valuestring, "regular") != 0)
    return ir_input_error(err, path, "chunk_grid '%s' is not read (regular is)", cJSON_IsString(gname) ? gname->valuestring : "?");
  if (!size_list(member(member(grid, "configuration"), "chunk_shape"), a->ndim, 1, a->chunk))
    return ir_input_error(err, path, "chunk_shape: expected %d whole numbers of 1 or more", a->ndim);
  const cJSON *dtype = member(root, "data_type");
  if (!cJSON_IsString(dtype) || !v3_dtype(dtype->valuestring, &a->sample))
    return ir_input_error(err, path, "data_type '%s' is not read (integers of 8 to 64 bits, float32, float64 are)",
                          cJSON_IsString(dtype) ? dtype->valuestring : "?");
  a->elem = ir_sample_size(a->sample);
  const cJSON *keys = member(root, "chunk_key_encoding");
  const cJSON *kname = member(keys, "name");
  const cJSON *ksep = member(member(keys, "configuration"), "separator");
  if (!cJSON_IsString(kname) || (strcmp(kname->valuestring, "default") != 0 && strcmp(kname->valuestring, "v2") != 0))
    return ir_input_error(err, path, "chunk_key_encoding '%s' is not read (default and v2 are)",
                          cJSON_IsString(kname) ? kname->valuestring : "?");
  a->key_prefix = strcmp(kname->valuestring, "default") == 0;
  a->separator = a->key_prefix ? '/' : '.';
  if (ksep) {
    if (!cJSON_IsString(ksep) || (strcmp(ksep->valuestring, ".") != 0 && strcmp(ksep->valuestring, "/") != 0))
      return ir_input_error(err, path, "chunk_key_encoding: separator must be . or /");
    a->separator = ksep->valuestring[0];
  }
  st = v3_codecs(member(root, "codecs"), a, true, &a->codecs, path, err);
  if (st != IR_OK) return st;
  if (!parse_fill(member(root, "fill_value"), a->sample, a->fill, path, err)) return IR_ERR_INPUT;
  const cJSON *names = member(root, "dimension_names");
  if (cJSON_IsArray(names) && cJSON_GetArraySize(names) == a->ndim)
    for (int k = 0; k < a->ndim; k++) {
      const cJSON *n = cJSON_GetArrayItem(names, k);
      if (cJSON_IsString(n)) snprintf(a->names[k], sizeof a->names[k], "%s", n->valuestring);
    }
  return IR_OK;
}

static cJSON *parse_json(const char *json, size_t len, const char *path, char err[IR_ERR_LEN]) {
  cJSON *root = cJSON_ParseWithLength(json, len);
  if (!root) {
    const char *at = cJSON_GetErrorPtr();
    size_t offset = at && at >= json && at <= json + len ? (size_t)(at - json) : len;
    ir_input_error(err, path, "not valid JSON (at byte %zu)", offset);
  } else if (!cJSON_IsObject(root)) {
    ir_input_error(err, path, "expected a JSON object");
    cJSON_Delete(root);
    root = NULL;
  }
  return root;
}

ir_status ir_zarr_parse_array(const char *json, size_t len, int version, const char *path, ir_zarr_array *a,
                              char err[IR_ERR_LEN]) {
  memset(a, 0, sizeof *a);
  a->version = version;
  cJSON *root = parse_json(json, len, path, err);
  if (!root) return IR_ERR_INPUT;
  ir_status st = version == 2 ? parse_v2(root, path, a, err) : parse_v3(root, path, a, err);
  cJSON_Delete(root);
  if (st != IR_OK) return st;
  /* One chunk must fit what a reading thread holds; its byte count must not overflow. */
  size_t bytes = a->elem;
  const size_t *shape = a->sharded ? a->inner : a->chunk;
  for (int k = 0; k < a->ndim; k++) {
    if (bytes > IR_ZARR_MAX_CHUNK_BYTES / shape[k])
      return ir_input_error(err, path, "chunks larger than %zu bytes are not read", IR_ZARR_MAX_CHUNK_BYTES);
    bytes *= shape[k];
  }
  if (a->sharded) {
    size_t count = 1;
    for (int k = 0; k < a->ndim; k++) {
      size_t n = a->chunk[k] / a->inner[k];
      if (count > ((size_t)1 << 26) / n) return ir_input_error(err, path, "shards of more than 2^26 inner chunks are not read");
      count *= n;
    }
  }
  return IR_OK;
}

/* ---- OME-Zarr multiscales ---------------------------------------------------------------------- */
/* Axis names in the order OME-Zarr writes them when a file gives no axes (before 0.3): the last
 * ndim of t, c, z, y, x. */
static bool role_of(const cJSON *axis, ir_zarr_role *role, char unit[32]) {
  const char *name = NULL, *type = NULL;
  if (cJSON_IsString(axis)) name = axis->valuestring;
  else {
    const cJSON *n = member(axis, "name"), *t = member(axis, "type"), *u = member(axis, "unit");
    name = cJSON_IsString(n) ? n->valuestring : NULL;
    type = cJSON_IsString(t) ? t->valuestring : NULL;
    if (cJSON_IsString(u) && unit) snprintf(unit, 32, "%s", u->valuestring);
  }
  if (!name) return false;
  if (strcmp(name, "x") == 0) *role = IR_ZARR_X;
  else if (strcmp(name, "y") == 0) *role = IR_ZARR_Y;
  else if (strcmp(name, "z") == 0) *role = IR_ZARR_Z;
  else if (strcmp(name, "t") == 0 || (type && strcmp(type, "time") == 0)) *role = IR_ZARR_T;
  else if (strcmp(name, "c") == 0 || (type && strcmp(type, "channel") == 0)) *role = IR_ZARR_C;
  else return false;
  return true;
}

static ir_status transforms(const cJSON *list, int ndim, double *scale, double *translation, const char *path,
                            const char *what, char err[IR_ERR_LEN]) {
  const cJSON *t;
  cJSON_ArrayForEach(t, list) {
    const cJSON *type = member(t, "type");
    if (!cJSON_IsString(type)) return ir_input_error(err, path, "%s: a coordinate transformation without a type", what);
    bool is_scale = strcmp(type->valuestring, "scale") == 0;
    if (!is_scale && strcmp(type->valuestring, "translation") != 0) {
      if (strcmp(type->valuestring, "identity") == 0) continue;
      return ir_input_error(err, path, "%s: coordinate transformation '%s' is not read (scale, translation are)", what,
                            type->valuestring);
    }
    const cJSON *values = member(t, is_scale ? "scale" : "translation");
    if (!cJSON_IsArray(values) || cJSON_GetArraySize(values) != ndim)
      return ir_input_error(err, path, "%s: %s needs %d numbers (a 'path' to them is not read)", what,
                            type->valuestring, ndim);
    for (int k = 0; k < ndim; k++) {
      const cJSON *v = cJSON_GetArrayItem(values, k);
      if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || (is_scale && !(v->valuedouble > 0)))
        return ir_input_error(err, path, "%s: %s value %d is not a %s number", what, type->valuestring, k,
                              is_scale ? "positive" : "finite");
      /* Applied in order, x -> scale x + translation so far: a scale after a translation
       * scales that translation too. */
      if (is_scale) scale[k] *= v->valuedouble, translation[k] *= v->valuedouble;
      else translation[k] += v->valuedouble;
    }
  }
  return IR_OK;
}

ir_status ir_zarr_parse_multiscale(const char *json, size_t len, const char *path, ir_zarr_multiscale *m,
                                   char err[IR_ERR_LEN]) {
  memset(m, 0, sizeof *m);
  cJSON *root = parse_json(json, len, path, err);
  if (!root) return IR_ERR_INPUT;
  ir_status st = IR_OK;
  /* 0.5: zarr.json's attributes.ome; 0.4 and before: .zattrs itself. */
  const cJSON *attrs = member(root, "attributes");
  const cJSON *ome = member(attrs ? attrs : root, "ome");
  const cJSON *holder = ome ? ome : attrs ? attrs : root;
  const cJSON *list = member(holder, "multiscales");
  const cJSON *ms = cJSON_GetArrayItem(list, 0);
  const cJSON *version = member(ome ? ome : ms, "version");
  snprintf(m->version, sizeof m->version, "%s", cJSON_IsString(version) ? version->valuestring : "");
  if (!cJSON_IsArray(list) || !cJSON_IsObject(ms)) {
    st = ir_input_error(err, path, "no OME-Zarr multiscales here");
    goto done;
  }
  const cJSON *datasets = member(ms, "datasets");
  m->level_count = cJSON_GetArraySize(datasets);
  if (!cJSON_IsArray(datasets) || m->level_count < 1) {
    st = ir_input_error(err, path, "multiscales: no datasets");
    goto done;
  }
  if (m->level_count > IR_MAX_LEVELS) {
    st = ir_input_error(err, path, "multiscales: %d levels, at most %d are read", m->level_count, IR_MAX_LEVELS);
    goto done;
  }
  const cJSON *axes = member(ms, "axes");
  if (cJSON_IsArray(axes)) {
    m->ndim = cJSON_GetArraySize(axes);
    if (m->ndim < 3 || m->ndim > 5) {
      st = ir_input_error(err, path, "multiscales: %d axes; x, y, z and optional t, c are read", m->ndim);
      goto done;
    }
    int seen[5] = {0};
    for (int k = 0; k < m->ndim; k++) {
      const cJSON *axis = cJSON_GetArrayItem(axes, k);
      char unit[32] = "";
      if (!role_of(axis, &m->role[k], unit)) {
        const cJSON *n = cJSON_IsString(axis) ? axis : member(axis, "name");
        st = ir_input_error(err, path, "axis '%s' is not read (x, y, z, t and c are)", cJSON_IsString(n) ? n->valuestring : "?");
        goto done;
      }
      if (seen[m->role[k]]++) {
        st = ir_input_error(err, path, "multiscales: two axes of the same name");
        goto done;
      }
      if (m->role[k] == IR_ZARR_X) memcpy(m->unit, unit, sizeof m->unit);
    }
    if (!seen[IR_ZARR_X] || !seen[IR_ZARR_Y] || !seen[IR_ZARR_Z]) {
      st = ir_input_error(err, path, "multiscales: a 2-D image (inkray draws volumes with x, y and z axes)");
      goto done;
    }
  } else {
    m->ndim = 0; /* taken from the arrays: the last ndim of t, c, z, y, x */
  }
  double global_scale[IR_ZARR_MAX_DIMS], global_shift[IR_ZARR_MAX_DIMS];
  for (int k = 0; k < IR_ZARR_MAX_DIMS; k++) global_scale[k] = 1, global_shift[k] = 0;
  const cJSON *global = member(ms, "coordinateTransformations");
  if (global && m->ndim && (st = transforms(global, m->ndim, global_scale, global_shift, path, "multiscales", err)) != IR_OK)
    goto done;
  for (int l = 0; l < m->level_count; l++) {
    const cJSON *ds = cJSON_GetArrayItem(datasets, l);
    const cJSON *p = member(ds, "path");
    if (!cJSON_IsString(p) || !p->valuestring[0] || strstr(p->valuestring, "..") || p->valuestring[0] == '/' ||
        strlen(p->valuestring) >= sizeof m->paths[l]) {
      st = ir_input_error(err, path, "multiscales: dataset %d has no usable path", l);
      goto done;
    }
    snprintf(m->paths[l], sizeof m->paths[l], "%s", p->valuestring);
    for (int k = 0; k < IR_ZARR_MAX_DIMS; k++) m->scale[l][k] = 1, m->translation[l][k] = 0;
    const cJSON *ct = member(ds, "coordinateTransformations");
    char what[48];
    snprintf(what, sizeof what, "dataset %s", m->paths[l]);
    if (ct && m->ndim && (st = transforms(ct, m->ndim, m->scale[l], m->translation[l], path, what, err)) != IR_OK) goto done;
    for (int k = 0; k < m->ndim; k++) {
      /* The global transformation comes after the dataset's. */
      m->translation[l][k] = m->translation[l][k] * global_scale[k] + global_shift[k];
      m->scale[l][k] *= global_scale[k];
    }
  }
done:
  cJSON_Delete(root);
  return st;
}
