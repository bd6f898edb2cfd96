/* VTK XML image data (.vti, https://docs.vtk.org/en/latest/design_documents/VTKFileFormats.html),
 * as ParaView and simulation codes write it. The XML is parsed with expat; the data arrays are
 * then decoded from the bytes expat points at.
 *
 * Read: <VTKFile type="ImageData"> with byte_order (LittleEndian, BigEndian), header_type
 * (UInt32, the default, or UInt64) and compressor (vtkZLibDataCompressor; vtkLZ4DataCompressor
 * and vtkLZMADataCompressor when liblz4 / liblzma were found at build time); <ImageData>
 * WholeExtent, Spacing (absolute values; 0 or missing: 1) and Origin; one <Piece> covering the
 * whole extent; one <PointData> array with one component: the one named by --array, else the
 * active scalars (PointData Scalars="..."), else the only array there is. Array encodings: ascii,
 * binary (inline base64) and appended (<AppendedData encoding="raw"> or "base64"), each
 * compressed or not. Types Int8 .. UInt64, Float32, Float64, converted as
 * ir_volume_from_samples says (Float64 becomes float32).
 * Refused, with the reason: other dataset types, several pieces, cell data only, arrays of
 * several components (vectors, colours), Bit and String arrays, unknown compressors, data
 * shorter or longer than the extent says. Direction matrices are ignored (the renderer draws in
 * voxel axes). */
#include <expat.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#ifdef INKRAY_HAVE_LZ4
#include <lz4.h>
#endif
#ifdef INKRAY_HAVE_LZMA
#include <lzma.h>
#endif

#include "data/volume_internal.h"

#define VTI_NAME_MAX 128
#define VTI_MAX_ARRAYS 64
/* No compressor shrinks data by more than these factors (zlib's deflate 1032:1, LZ4 about
 * 255:1; LZMA's bound is looser): a block claiming more is corrupt, and is refused before
 * anything is allocated for it. */
#define ZLIB_MAX_RATIO 1032u
#define LZ4_MAX_RATIO 256u
#define LZMA_MAX_RATIO 8192u

typedef enum vti_format { VTI_ASCII, VTI_BINARY, VTI_APPENDED } vti_format;
typedef enum vti_compressor { VTI_NONE, VTI_ZLIB, VTI_LZ4, VTI_LZMA } vti_compressor;

typedef struct vti_array {
  char name[VTI_NAME_MAX];
  char type_name[32];
  bool type_known;
  ir_sample_type type;
  long components;
  vti_format format;
  size_t offset;        /* appended: where its data begin after the '_' */
  size_t text_begin, text_end; /* inline: the element's content in the file */
  bool in_point_data;
} vti_array;

typedef struct vti_parse {
  XML_Parser xml;
  const char *path;
  char *err;
  ir_status status;
  int depth;
  bool saw_vtkfile, saw_image;
  bool big_endian;
  size_t header_size; /* 4 or 8 */
  vti_compressor compressor;
  long extent[6];
  bool have_extent;
  double spacing[3], origin[3];
  int pieces;
  long piece_extent[6];
  bool in_point_data, in_cell_data;
  char scalars[VTI_NAME_MAX];
  vti_array arrays[VTI_MAX_ARRAYS];
  int array_count;
  int open_array; /* index of the DataArray being read, -1 if none */
  bool appended_base64;
  bool have_appended;
} vti_parse;

static void vti_fail(vti_parse *p, const char *fmt, const char *a, const char *b) {
  if (p->status != IR_OK) return;
  char reason[IR_ERR_LEN];
  snprintf(reason, sizeof reason, fmt, a ? a : "", b ? b : "");
  p->status = ir_input_error(p->err, p->path, "line %lu: %s",
                             (unsigned long)XML_GetCurrentLineNumber(p->xml), reason);
  XML_StopParser(p->xml, XML_FALSE);
}

static const char *attr(const char **atts, const char *name) {
  for (int i = 0; atts[i]; i += 2)
    if (strcmp(atts[i], name) == 0) return atts[i + 1];
  return NULL;
}

/* Exactly `count` numbers; false otherwise. */
static bool parse_longs(const char *text, long *out, int count) {
  const char *s = text;
  for (int k = 0; k < count; k++) {
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (end == s) return false;
    out[k] = v;
    s = end;
  }
  while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') s++;
  return *s == '\0';
}

static bool parse_doubles(const char *text, double *out, int count) {
  const char *s = text;
  for (int k = 0; k < count; k++) {
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s) return false;
    out[k] = v;
    s = end;
  }
  while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') s++;
  return *s == '\0';
}

static bool sample_type_of(const char *name, ir_sample_type *out) {
  static const struct {
    const char *name;
    ir_sample_type type;
  } names[] = {{"Int8", IR_SAMPLE_INT8},       {"UInt8", IR_SAMPLE_UINT8},
               {"Int16", IR_SAMPLE_INT16},     {"UInt16", IR_SAMPLE_UINT16},
               {"Int32", IR_SAMPLE_INT32},     {"UInt32", IR_SAMPLE_UINT32},
               {"Int64", IR_SAMPLE_INT64},     {"UInt64", IR_SAMPLE_UINT64},
               {"Float32", IR_SAMPLE_FLOAT32}, {"Float64", IR_SAMPLE_FLOAT64},
               {"Char", IR_SAMPLE_INT8}};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
    if (strcmp(name, names[k].name) == 0) {
      *out = names[k].type;
      return true;
    }
  return false;
}

static void start_vtkfile(vti_parse *p, const char **atts) {
  const char *type = attr(atts, "type");
  if (!type || strcmp(type, "ImageData") != 0) {
    vti_fail(p, "VTKFile type '%s': only ImageData (.vti) is read", type ? type : "(none)", NULL);
    return;
  }
  p->saw_vtkfile = true;
  const char *order = attr(atts, "byte_order");
  if (order && strcmp(order, "BigEndian") == 0) p->big_endian = true;
  else if (order && strcmp(order, "LittleEndian") != 0)
    vti_fail(p, "byte_order '%s': expected LittleEndian or BigEndian", order, NULL);
  const char *header = attr(atts, "header_type");
  if (header && strcmp(header, "UInt64") == 0) p->header_size = 8;
  else if (header && strcmp(header, "UInt32") != 0)
    vti_fail(p, "header_type '%s': expected UInt32 or UInt64", header, NULL);
  const char *compressor = attr(atts, "compressor");
  if (!compressor || !*compressor) p->compressor = VTI_NONE;
  else if (strcmp(compressor, "vtkZLibDataCompressor") == 0) p->compressor = VTI_ZLIB;
  else if (strcmp(compressor, "vtkLZ4DataCompressor") == 0) p->compressor = VTI_LZ4;
  else if (strcmp(compressor, "vtkLZMADataCompressor") == 0) p->compressor = VTI_LZMA;
  else
    vti_fail(p, "compressor '%s' is not supported (vtkZLibDataCompressor, vtkLZ4DataCompressor, "
                "vtkLZMADataCompressor)", compressor, NULL);
}

static void start_image(vti_parse *p, const char **atts) {
  p->saw_image = true;
  const char *extent = attr(atts, "WholeExtent");
  if (!extent || !parse_longs(extent, p->extent, 6)) {
    vti_fail(p, "ImageData WholeExtent '%s': expected six whole numbers", extent ? extent : "(none)",
             NULL);
    return;
  }
  for (int k = 0; k < 3; k++)
    if (p->extent[2 * k + 1] < p->extent[2 * k]) {
      vti_fail(p, "ImageData WholeExtent '%s': an axis ends before it begins", extent, NULL);
      return;
    }
  p->have_extent = true;
  const char *spacing = attr(atts, "Spacing");
  if (spacing && !parse_doubles(spacing, p->spacing, 3))
    vti_fail(p, "ImageData Spacing '%s': expected three numbers", spacing, NULL);
  const char *origin = attr(atts, "Origin");
  if (origin && !parse_doubles(origin, p->origin, 3))
    vti_fail(p, "ImageData Origin '%s': expected three numbers", origin, NULL);
}

static void start_data_array(vti_parse *p, const char **atts) {
  if (!p->in_point_data && !p->in_cell_data) return; /* field data, coordinates: not voxels */
  if (p->array_count >= VTI_MAX_ARRAYS) {
    vti_fail(p, "more than %s data arrays%s", "64", NULL);
    return;
  }
  vti_array *a = &p->arrays[p->array_count];
  memset(a, 0, sizeof *a);
  a->in_point_data = p->in_point_data;
  const char *name = attr(atts, "Name");
  snprintf(a->name, sizeof a->name, "%s", name ? name : "");
  const char *type = attr(atts, "type");
  snprintf(a->type_name, sizeof a->type_name, "%s", type ? type : "(none)");
  a->type_known = type && sample_type_of(type, &a->type);
  const char *components = attr(atts, "NumberOfComponents");
  a->components = 1;
  if (components && (!parse_longs(components, &a->components, 1) || a->components < 1)) {
    vti_fail(p, "DataArray '%s': NumberOfComponents '%s' is not a positive number", a->name,
             components);
    return;
  }
  const char *format = attr(atts, "format");
  if (!format || strcmp(format, "ascii") == 0) a->format = VTI_ASCII;
  else if (strcmp(format, "binary") == 0) a->format = VTI_BINARY;
  else if (strcmp(format, "appended") == 0) a->format = VTI_APPENDED;
  else {
    vti_fail(p, "DataArray '%s': format '%s' (expected ascii, binary or appended)", a->name, format);
    return;
  }
  if (a->format == VTI_APPENDED) {
    const char *offset = attr(atts, "offset");
    long value = -1;
    if (!offset || !parse_longs(offset, &value, 1) || value < 0) {
      vti_fail(p, "DataArray '%s': appended data need an offset of 0 or more (got '%s')", a->name,
               offset ? offset : "none");
      return;
    }
    a->offset = (size_t)value;
  }
  /* The content starts after this start tag; expat reports where the tag is and how long. */
  a->text_begin = (size_t)XML_GetCurrentByteIndex(p->xml) + (size_t)XML_GetCurrentByteCount(p->xml);
  a->text_end = a->text_begin;
  p->open_array = p->array_count++;
}

static void XMLCALL on_start(void *user, const char *el, const char **atts) {
  vti_parse *p = user;
  if (p->status != IR_OK) return;
  p->depth++;
  if (p->depth == 1) {
    if (strcmp(el, "VTKFile") != 0) vti_fail(p, "the root element is <%s>, expected <VTKFile>", el, NULL);
    else start_vtkfile(p, atts);
  } else if (strcmp(el, "ImageData") == 0 && p->depth == 2) {
    start_image(p, atts);
  } else if (strcmp(el, "Piece") == 0 && p->depth == 3) {
    p->pieces++;
    const char *extent = attr(atts, "Extent");
    if (!extent || !parse_longs(extent, p->piece_extent, 6))
      vti_fail(p, "Piece Extent '%s': expected six whole numbers", extent ? extent : "(none)", NULL);
  } else if (strcmp(el, "PointData") == 0 && p->depth == 4) {
    p->in_point_data = true;
    const char *scalars = attr(atts, "Scalars");
    snprintf(p->scalars, sizeof p->scalars, "%s", scalars ? scalars : "");
  } else if (strcmp(el, "CellData") == 0 && p->depth == 4) {
    p->in_cell_data = true;
  } else if (strcmp(el, "DataArray") == 0 && p->depth == 5) {
    start_data_array(p, atts);
  } else if (strcmp(el, "AppendedData") == 0 && p->depth == 2) {
    p->have_appended = true;
    const char *encoding = attr(atts, "encoding");
    if (encoding && strcmp(encoding, "base64") == 0) p->appended_base64 = true;
    else if (encoding && strcmp(encoding, "raw") != 0)
      vti_fail(p, "AppendedData encoding '%s': expected raw or base64", encoding, NULL);
  }
}

static void XMLCALL on_end(void *user, const char *el) {
  vti_parse *p = user;
  if (p->status != IR_OK) return;
  if (strcmp(el, "PointData") == 0 && p->depth == 4) p->in_point_data = false;
  if (strcmp(el, "CellData") == 0 && p->depth == 4) p->in_cell_data = false;
  if (strcmp(el, "DataArray") == 0 && p->depth == 5 && p->open_array >= 0) {
    vti_array *a = &p->arrays[p->open_array];
    size_t at = (size_t)XML_GetCurrentByteIndex(p->xml);
    a->text_end = at > a->text_begin ? at : a->text_begin; /* <DataArray/> has no content */
    p->open_array = -1;
  }
  p->depth--;
}

/* ---- Byte sources: raw bytes, or base64 text decoded on demand ---------------------------- */
typedef struct vti_source {
  const unsigned char *bytes; /* raw bytes or base64 characters */
  size_t len;
  bool base64;
} vti_source;

static int b64_value(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

/* Decodes base64 from the start of src until `need` bytes are out. A padded group ends one
 * encoded block and another may follow: VTK encodes the header and the data as separate
 * blocks, other writers as one; both decode to the same bytes. On failure *bad is where the
 * text goes wrong (src->len when it ends too soon), so that the message can say where. */
static bool b64_decode_prefix(const vti_source *src, size_t need, unsigned char *out, size_t *bad) {
  size_t got = 0, i = 0;
  while (got < need) {
    int quad[4], n = 0, pad = 0;
    while (n < 4 && i < src->len) {
      unsigned char c = src->bytes[i++];
      if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
      *bad = i - 1;
      if (c == '=') {
        if (n < 2) return false;
        quad[n++] = 0;
        pad++;
        continue;
      }
      int v = b64_value(c);
      if (v < 0 || pad) return false;
      quad[n++] = v;
    }
    *bad = src->len;
    if (n < 4) return false;
    unsigned bits = (unsigned)quad[0] << 18 | (unsigned)quad[1] << 12 | (unsigned)quad[2] << 6 |
                    (unsigned)quad[3];
    unsigned char three[3] = {(unsigned char)(bits >> 16), (unsigned char)(bits >> 8),
                              (unsigned char)bits};
    for (int k = 0; k < 3 - pad && got < need; k++) out[got++] = three[k];
  }
  return true;
}

/* The first `need` bytes of src: a pointer into src (raw) or into a new buffer (*owned). */
static ir_status source_bytes(const vti_source *src, size_t need, const unsigned char **bytes,
                              unsigned char **owned, const char *what, const char *path,
                              char err[IR_ERR_LEN]) {
  *owned = NULL;
  if (!src->base64) {
    if (need > src->len)
      return ir_input_error(err, path, "%s: data end after %zu bytes, %zu needed", what, src->len,
                            need);
    *bytes = src->bytes;
    return IR_OK;
  }
  /* Four characters carry three bytes: check the text is long enough before allocating. */
  if (need / 3 > src->len / 4 + 1)
    return ir_input_error(err, path, "%s: %zu base64 characters cannot hold the %zu bytes needed",
                          what, src->len, need);
  unsigned char *buf = malloc(need ? need : 1);
  if (!buf) {
    snprintf(err, IR_ERR_LEN, "%s: out of host memory decoding %zu bytes of base64", path, need);
    return IR_ERR_RUNTIME;
  }
  size_t bad = 0;
  if (!b64_decode_prefix(src, need, buf, &bad)) {
    free(buf);
    if (bad >= src->len)
      return ir_input_error(err, path, "%s: the base64 data end after %zu characters, %zu bytes needed",
                            what, src->len, need);
    unsigned char c = src->bytes[bad];
    return ir_input_error(err, path, "%s: bad base64 data at character %zu of %zu ('%c')", what, bad,
                          src->len, c >= 0x20 && c < 0x7f ? c : '?');
  }
  *bytes = buf;
  *owned = buf;
  return IR_OK;
}

static uint64_t read_uint(const unsigned char *p, size_t size, bool big_endian) {
  uint64_t v = 0;
  for (size_t k = 0; k < size; k++) {
    size_t at = big_endian ? k : size - 1 - k;
    v = v << 8 | p[at];
  }
  return v;
}

static void swap_samples(unsigned char *data, size_t count, size_t size) {
  for (size_t i = 0; i < count; i++) {
    unsigned char *s = data + i * size;
    for (size_t a = 0, b = size - 1; a < b; a++, b--) {
      unsigned char t = s[a];
      s[a] = s[b];
      s[b] = t;
    }
  }
}

static const char *compressor_name(vti_compressor c) {
  switch (c) {
  case VTI_ZLIB: return "zlib";
  case VTI_LZ4: return "LZ4";
  case VTI_LZMA: return "LZMA";
  default: return "none";
  }
}

/* One compressed block into exactly `size` bytes at dst. */
static bool inflate_block(vti_compressor c, const unsigned char *in, size_t in_len,
                          unsigned char *dst, size_t size) {
  if (c == VTI_ZLIB) {
    uLongf out_len = (uLongf)size;
    return uncompress(dst, &out_len, in, (uLong)in_len) == Z_OK && out_len == size;
  }
#ifdef INKRAY_HAVE_LZ4
  if (c == VTI_LZ4) {
    if (in_len > INT32_MAX || size > INT32_MAX) return false;
    return LZ4_decompress_safe((const char *)in, (char *)dst, (int)in_len, (int)size) == (int)size;
  }
#endif
#ifdef INKRAY_HAVE_LZMA
  if (c == VTI_LZMA) {
    uint64_t memlimit = UINT64_MAX;
    size_t in_pos = 0, out_pos = 0;
    return lzma_stream_buffer_decode(&memlimit, 0, NULL, in, &in_pos, in_len, dst, &out_pos,
                                     size) == LZMA_OK &&
           out_pos == size && in_pos == in_len;
  }
#endif
  return false;
}

static size_t max_ratio(vti_compressor c) {
  return c == VTI_ZLIB ? ZLIB_MAX_RATIO : c == VTI_LZ4 ? LZ4_MAX_RATIO : LZMA_MAX_RATIO;
}

/* Binary (inline or appended) array data: header, then raw or compressed bytes, into dst of
 * `expected` bytes. */
static ir_status decode_binary(const vti_parse *p, const vti_source *src, const char *what,
                               unsigned char *dst, size_t expected, char err[IR_ERR_LEN]) {
  const char *path = p->path;
  size_t hs = p->header_size;
  const unsigned char *bytes = NULL;
  unsigned char *owned = NULL;
  ir_status status;
  if (p->compressor == VTI_NONE) {
    if ((status = source_bytes(src, hs, &bytes, &owned, what, path, err)) != IR_OK) return status;
    uint64_t count = read_uint(bytes, hs, p->big_endian);
    free(owned);
    if (count != expected)
      return ir_input_error(err, path, "%s: holds %llu bytes, expected %zu for the extent", what,
                            (unsigned long long)count, expected);
    if ((status = source_bytes(src, hs + expected, &bytes, &owned, what, path, err)) != IR_OK)
      return status;
    memcpy(dst, bytes + hs, expected);
    free(owned);
    return IR_OK;
  }
  if ((status = source_bytes(src, 3 * hs, &bytes, &owned, what, path, err)) != IR_OK) return status;
  uint64_t blocks = read_uint(bytes, hs, p->big_endian);
  uint64_t block_size = read_uint(bytes + hs, hs, p->big_endian);
  uint64_t last_size = read_uint(bytes + 2 * hs, hs, p->big_endian);
  free(owned);
  if (last_size == 0) last_size = block_size;
  uint64_t total = 0;
  bool sane = last_size <= block_size && (blocks == 0 || block_size > 0);
  if (sane && blocks > 0) {
    sane = (blocks - 1) <= (UINT64_MAX - last_size) / (block_size ? block_size : 1);
    if (sane) total = (blocks - 1) * block_size + last_size;
  }
  if (!sane || total != expected)
    return ir_input_error(err, path,
                          "%s: the compression header says %llu blocks of %llu bytes (last "
                          "%llu), expected %zu bytes for the extent",
                          what, (unsigned long long)blocks, (unsigned long long)block_size,
                          (unsigned long long)last_size, expected);
  /* Block sizes follow the three counts; a count the data cannot hold is corrupt. */
  size_t room = src->base64 ? src->len / 4 * 3 + 3 : src->len;
  if (blocks > room / hs)
    return ir_input_error(err, path, "%s: %llu compressed blocks claimed, the data are too short",
                          what, (unsigned long long)blocks);
  size_t head = (3 + (size_t)blocks) * hs;
  if ((status = source_bytes(src, head, &bytes, &owned, what, path, err)) != IR_OK) return status;
  size_t compressed = 0;
  bool fits = true;
  for (size_t b = 0; b < blocks && fits; b++) {
    uint64_t c = read_uint(bytes + (3 + b) * hs, hs, p->big_endian);
    uint64_t size = b + 1 == blocks ? last_size : block_size;
    /* c == 0 cannot decompress to anything, and the ratio bound catches absurd sizes. */
    if (c == 0 || c > room || size / max_ratio(p->compressor) > c + 64 ||
        compressed > SIZE_MAX - c)
      fits = false;
    else
      compressed += (size_t)c;
  }
  free(owned);
  if (!fits)
    return ir_input_error(err, path, "%s: corrupt compression header (block sizes do not fit "
                                     "the data)", what);
  if ((status = source_bytes(src, head + compressed, &bytes, &owned, what, path, err)) != IR_OK)
    return status;
  const unsigned char *in = bytes + head;
  size_t out_at = 0;
  for (size_t b = 0; b < blocks && status == IR_OK; b++) {
    size_t c = (size_t)read_uint(bytes + (3 + b) * hs, hs, p->big_endian);
    size_t size = (size_t)(b + 1 == blocks ? last_size : block_size);
    if (!inflate_block(p->compressor, in, c, dst + out_at, size))
      status = ir_input_error(err, path, "%s: corrupt %s data in block %zu of %llu", what,
                              compressor_name(p->compressor), b + 1, (unsigned long long)blocks);
    in += c;
    out_at += size;
  }
  free(owned);
  return status;
}

/* Whitespace-separated numbers, exactly `count` of them. */
static ir_status decode_ascii(const vti_parse *p, const vti_array *a, const unsigned char *text,
                              size_t len, unsigned char *dst, size_t count, const char *what,
                              char err[IR_ERR_LEN]) {
  /* strtod needs a terminated string: copy the content once. */
  char *copy = malloc(len + 1);
  if (!copy) {
    snprintf(err, IR_ERR_LEN, "%s: out of host memory reading ascii data", p->path);
    return IR_ERR_RUNTIME;
  }
  memcpy(copy, text, len);
  copy[len] = '\0';
  char *s = copy;
  size_t n = 0;
  bool integer = a->type < IR_SAMPLE_FLOAT32;
  ir_status status = IR_OK;
  for (;;) {
    while (*s == ' ' || *s == '\n' || *s == '\r' || *s == '\t') s++;
    if (!*s) break;
    if (n == count) {
      status = ir_input_error(err, p->path, "%s: more than the %zu values the extent says", what,
                              count);
      break;
    }
    char *end = NULL;
    size_t size = ir_sample_size(a->type);
    unsigned char *at = dst + n * size;
    if (integer && a->type == IR_SAMPLE_UINT64) {
      unsigned long long v = strtoull(s, &end, 10);
      memcpy(at, &v, 8);
    } else if (integer) {
      long long v = strtoll(s, &end, 10);
      int8_t i8 = (int8_t)v;
      uint8_t u8 = (uint8_t)v;
      int16_t i16 = (int16_t)v;
      uint16_t u16 = (uint16_t)v;
      int32_t i32 = (int32_t)v;
      uint32_t u32 = (uint32_t)v;
      int64_t i64 = (int64_t)v;
      switch (a->type) {
      case IR_SAMPLE_INT8: memcpy(at, &i8, 1); break;
      case IR_SAMPLE_UINT8: memcpy(at, &u8, 1); break;
      case IR_SAMPLE_INT16: memcpy(at, &i16, 2); break;
      case IR_SAMPLE_UINT16: memcpy(at, &u16, 2); break;
      case IR_SAMPLE_INT32: memcpy(at, &i32, 4); break;
      case IR_SAMPLE_UINT32: memcpy(at, &u32, 4); break;
      default: memcpy(at, &i64, 8); break;
      }
    } else {
      double v = strtod(s, &end);
      float f = (float)v;
      if (a->type == IR_SAMPLE_FLOAT32) memcpy(at, &f, 4);
      else memcpy(at, &v, 8);
    }
    if (end == s || (*end && *end != ' ' && *end != '\n' && *end != '\r' && *end != '\t')) {
      status = ir_input_error(err, p->path, "%s: value %zu is not a number", what, n + 1);
      break;
    }
    s = end;
    n++;
  }
  if (status == IR_OK && n < count)
    status = ir_input_error(err, p->path, "%s: %zu values, expected %zu for the extent", what, n,
                            count);
  free(copy);
  return status;
}

/* Lists the point data arrays, for messages. */
static void list_arrays(const vti_parse *p, char *out, size_t size) {
  out[0] = '\0';
  size_t used = 0;
  for (int k = 0; k < p->array_count && used + 1 < size; k++) {
    if (!p->arrays[k].in_point_data) continue;
    int n = snprintf(out + used, size - used, "%s%s", used ? ", " : "", p->arrays[k].name);
    if (n < 0) break;
    used += (size_t)n;
  }
  if (used >= size) used = size - 1;
  if (!out[0]) snprintf(out, size, "none");
}

static ir_status pick_array(const vti_parse *p, const char *wanted, const vti_array **out,
                            char err[IR_ERR_LEN]) {
  char names[200];
  list_arrays(p, names, sizeof names);
  const char *name = wanted ? wanted : p->scalars[0] ? p->scalars : NULL;
  int points = 0;
  const vti_array *only = NULL;
  for (int k = 0; k < p->array_count; k++) {
    const vti_array *a = &p->arrays[k];
    if (!a->in_point_data) continue;
    points++;
    only = a;
    if (name && strcmp(a->name, name) == 0) {
      *out = a;
      return IR_OK;
    }
  }
  if (wanted)
    return ir_input_error(err, p->path, "no point data array '%s' (point data arrays: %s)", wanted,
                          names);
  if (name)
    return ir_input_error(err, p->path, "the active scalars '%s' are not among the point data "
                          "arrays (%s)", name, names);
  if (points == 1) {
    *out = only;
    return IR_OK;
  }
  if (points == 0)
    return ir_input_error(err, p->path, "no point data arrays%s",
                          p->array_count ? " (cell data are not read)" : "");
  return ir_input_error(err, p->path,
                        "no active scalars among %d point data arrays (%s): pick one with "
                        "--array NAME", points, names);
}

/* The XML part of the file: everything before the '_' that starts raw appended data (which is
 * not XML); *appended gets where the data after it begin, or len if there are none. */
static size_t xml_length(const unsigned char *bytes, size_t len, size_t *appended) {
  static const char tag[] = "<AppendedData";
  *appended = len;
  size_t n = sizeof tag - 1;
  for (size_t i = 0; i + n <= len; i++) {
    if (memcmp(bytes + i, tag, n) != 0) continue;
    size_t j = i + n;
    while (j < len && bytes[j] != '>') j++;
    while (j < len && bytes[j] != '_') j++;
    if (j >= len) return len;
    *appended = j + 1;
    return j;
  }
  return len;
}

ir_status ir_vti_decode(const unsigned char *bytes, size_t len, const char *path,
                        const char *array, ir_volume *out, char err[IR_ERR_LEN]) {
  memset(out, 0, sizeof *out);
  vti_parse *p = calloc(1, sizeof *p);
  if (!p) {
    snprintf(err, IR_ERR_LEN, "%s: out of host memory", path);
    return IR_ERR_RUNTIME;
  }
  p->path = path;
  p->err = err;
  p->header_size = 4;
  p->open_array = -1;
  for (int k = 0; k < 3; k++) p->spacing[k] = 1.0;
  size_t appended = 0;
  size_t xml_len = xml_length(bytes, len, &appended);
  if (xml_len > INT32_MAX) {
    free(p);
    return ir_input_error(err, path, "the XML part is over 2 GiB: use appended data");
  }
  p->xml = XML_ParserCreate(NULL);
  if (!p->xml) {
    free(p);
    snprintf(err, IR_ERR_LEN, "%s: out of host memory for the XML parser", path);
    return IR_ERR_RUNTIME;
  }
  XML_SetUserData(p->xml, p);
  XML_SetElementHandler(p->xml, on_start, on_end);
  bool has_appended = appended < len || xml_len < len;
  static const char closing[] = "</AppendedData></VTKFile>";
  enum XML_Status rc = XML_Parse(p->xml, (const char *)bytes, (int)xml_len, !has_appended);
  if (rc == XML_STATUS_OK && has_appended)
    rc = XML_Parse(p->xml, closing, (int)(sizeof closing - 1), 1);
  if (rc != XML_STATUS_OK && p->status == IR_OK)
    p->status = ir_input_error(err, path, "line %lu: not valid XML: %s",
                               (unsigned long)XML_GetCurrentLineNumber(p->xml),
                               XML_ErrorString(XML_GetErrorCode(p->xml)));
  XML_ParserFree(p->xml);
  p->xml = NULL;
  ir_status status = p->status;
  if (status == IR_OK && !p->saw_vtkfile)
    status = ir_input_error(err, path, "no <VTKFile> element");
  if (status == IR_OK && (!p->saw_image || !p->have_extent))
    status = ir_input_error(err, path, "no <ImageData WholeExtent=...> element");
  if (status == IR_OK && p->pieces != 1)
    status = ir_input_error(err, path, "%d pieces: only a single piece covering the whole extent "
                            "is read", p->pieces);
  if (status == IR_OK && memcmp(p->piece_extent, p->extent, sizeof p->extent) != 0)
    status = ir_input_error(err, path, "the piece's Extent differs from the WholeExtent: only a "
                            "single piece covering the whole extent is read");
#ifndef INKRAY_HAVE_LZ4
  if (status == IR_OK && p->compressor == VTI_LZ4)
    status = ir_input_error(err, path, "inkray was built without LZ4 (install liblz4-dev and "
                            "rebuild)");
#endif
#ifndef INKRAY_HAVE_LZMA
  if (status == IR_OK && p->compressor == VTI_LZMA)
    status = ir_input_error(err, path, "inkray was built without LZMA (install liblzma-dev and "
                            "rebuild)");
#endif
  const vti_array *a = NULL;
  if (status == IR_OK) status = pick_array(p, array, &a, err);
  char what[VTI_NAME_MAX + 16];
  if (a) snprintf(what, sizeof what, "array '%s'", a->name);
  if (status == IR_OK && !a->type_known)
    status = ir_input_error(err, path, "%s: type %s is not supported (Int8 .. UInt64, Float32, "
                            "Float64)", what, a->type_name);
  if (status == IR_OK && a->components != 1)
    status = ir_input_error(err, path, "%s has %ld components: only scalar arrays are read", what,
                            a->components);
  size_t dims[3] = {0, 0, 0}, expected = 0;
  for (int k = 0; k < 3 && status == IR_OK; k++) {
    unsigned long span = (unsigned long)p->extent[2 * k + 1] - (unsigned long)p->extent[2 * k];
    dims[k] = (size_t)span + 1;
  }
  if (status == IR_OK && !ir_sample_byte_count(dims, a->type, &expected, path, err))
    status = IR_ERR_INPUT;
  vti_source src = {0};
  if (status == IR_OK) {
    if (a->format == VTI_APPENDED) {
      if (!has_appended) status = ir_input_error(err, path, "%s is appended, but there is no "
                                                 "<AppendedData> section", what);
      else if (a->offset > len - appended)
        status = ir_input_error(err, path, "%s: offset %zu is past the end of the appended data",
                                what, a->offset);
      src = (vti_source){bytes + appended + a->offset, len - appended - a->offset,
                         p->appended_base64};
    } else {
      src = (vti_source){bytes + a->text_begin, a->text_end - a->text_begin,
                         a->format == VTI_BINARY};
    }
  }
  /* Sizes before allocation: the data must be able to hold the extent. Raw bytes hold one
   * byte each, base64 3/4, ascii at least two characters a value, compressed data the
   * compressor's ratio. */
  if (status == IR_OK) {
    size_t count = expected / ir_sample_size(a->type);
    size_t cap = src.len;
    if (a->format == VTI_ASCII) cap = (src.len + 1) / 2 * ir_sample_size(a->type);
    else if (src.base64) cap = src.len / 4 * 3 + 3;
    if (p->compressor != VTI_NONE && a->format != VTI_ASCII)
      cap = cap > SIZE_MAX / max_ratio(p->compressor) ? SIZE_MAX : cap * max_ratio(p->compressor);
    if (expected > cap)
      status = ir_input_error(err, path,
                              "%s: extent %zux%zux%zu %s needs %zu bytes (%zu values), more than "
                              "the %zu bytes of data there can hold",
                              what, dims[0], dims[1], dims[2], a->type_name, expected, count,
                              src.len);
  }
  unsigned char *samples = NULL;
  if (status == IR_OK) {
    samples = malloc(expected);
    if (!samples) {
      snprintf(err, IR_ERR_LEN, "%s: out of host memory: %zux%zux%zu %s needs %zu bytes", path,
               dims[0], dims[1], dims[2], a->type_name, expected);
      status = IR_ERR_RUNTIME;
    }
  }
  if (status == IR_OK) {
    size_t count = expected / ir_sample_size(a->type);
    if (a->format == VTI_ASCII) {
      status = decode_ascii(p, a, src.bytes, src.len, samples, count, what, err);
    } else {
      status = decode_binary(p, &src, what, samples, expected, err);
      size_t size = ir_sample_size(a->type);
      if (status == IR_OK && size > 1 && p->big_endian != ir_host_is_big_endian())
        swap_samples(samples, count, size);
    }
  }
  if (status == IR_OK) {
    status = ir_volume_from_samples(out, dims, samples, a->type, 1.0, 0.0, path, err);
    samples = NULL;
  }
  if (status == IR_OK) {
    for (int k = 0; k < 3; k++) {
      double s = fabs(p->spacing[k]);
      out->spacing[k] = isfinite(s) && s > 0 ? (float)s : 1.0f;
      out->world_origin[k] = isfinite(p->origin[k]) ? (float)p->origin[k] : 0.0f;
    }
    snprintf(out->description, sizeof out->description, "point data '%.80s' (%.20s)", a->name,
             a->type_name);
    if (a->type == IR_SAMPLE_FLOAT64)
      snprintf(out->note, sizeof out->note, "%s: Float64 values are kept as float32", what);
  }
  free(samples);
  free(p);
  if (status != IR_OK) ir_volume_free(out);
  return status;
}

ir_status ir_load_vti(const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]) {
  char *bytes = NULL;
  size_t len = 0;
  ir_status status = ir_read_prefix(desc->source, SIZE_MAX - 1, &bytes, &len, err);
  if (status != IR_OK) return status;
  status = ir_vti_decode((const unsigned char *)bytes, len, desc->source, desc->array, out, err);
  free(bytes);
  if (status != IR_OK) return status;
  if (desc->spacing_given) memcpy(out->spacing, desc->spacing, sizeof out->spacing);
  ir_volume_finish(out, ir_display_name(desc->source));
  return IR_OK;
}
