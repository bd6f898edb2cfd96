/* The byte codecs of Zarr chunks: blosc (c-blosc: lz4, lz4hc, zstd, zlib, blosclz; byte and bit
 * shuffle, all undone by c-blosc itself), zstd (libzstd), zlib and gzip (zlib), and the crc32c
 * checksum of Zarr v3 (the codec, and the sharding index's). Each decoder writes exactly the
 * bytes a chunk must hold, or fails with the reason (the caller adds the chunk's key): a bad
 * blosc header, a truncated zstd frame, a stream that decodes to another size.
 *
 * What this file does not do: read files, or know about chunk grids (zarr.c). */
#include <string.h>

#ifdef INKRAY_HAVE_BLOSC
#include <blosc.h>
#endif
#ifdef INKRAY_HAVE_ZSTD
#include <zstd.h>
#endif

#include "data/zarr.h"

const char *ir_zarr_compressor_name(ir_zarr_compressor c) {
  static const char *const names[] = {"none", "blosc", "zstd", "zlib", "gzip"};
  return c <= IR_ZARR_GZIP ? names[c] : "?";
}

/* ---- crc32c (Castagnoli), reflected, as Zarr v3 and the sharding index use it ---------------- */
static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    crc_table[i] = c;
  }
}

uint32_t ir_crc32c(const unsigned char *p, size_t n) {
  pthread_once(&crc_once, crc_init);
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; i++) c = crc_table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

bool ir_zarr_check_crc32c(const unsigned char *p, size_t n, size_t *payload, char reason[IR_ERR_LEN]) {
  if (n < 4) {
    snprintf(reason, IR_ERR_LEN, "%zu bytes: too short for its crc32c checksum", n);
    return false;
  }
  uint32_t stored = (uint32_t)p[n - 4] | (uint32_t)p[n - 3] << 8 | (uint32_t)p[n - 2] << 16 | (uint32_t)p[n - 1] << 24;
  uint32_t actual = ir_crc32c(p, n - 4);
  if (stored != actual) {
    snprintf(reason, IR_ERR_LEN, "crc32c checksum %08x does not match the data's %08x", stored, actual);
    return false;
  }
  *payload = n - 4;
  return true;
}

/* ---- zlib and gzip ------------------------------------------------------------------------------ */
static bool inflate_exact(const unsigned char *src, size_t n, unsigned char *dst, size_t want, bool gzip,
                          char reason[IR_ERR_LEN]) {
  z_stream z;
  memset(&z, 0, sizeof z);
  if (inflateInit2(&z, gzip ? 15 + 16 : 15) != Z_OK) {
    snprintf(reason, IR_ERR_LEN, "zlib could not start");
    return false;
  }
  /* zlib counts in uInt: feed and drain in pieces below 4 GiB. */
  size_t in_left = n, out_left = want;
  int rc = Z_OK;
  z.next_in = (unsigned char *)src;
  z.next_out = dst;
  unsigned char spill[1];
  bool overflow = false;
  while (rc == Z_OK) {
    if (z.avail_in == 0 && in_left) {
      z.avail_in = in_left > (1u << 30) ? 1u << 30 : (uInt)in_left;
      in_left -= z.avail_in;
    }
    if (z.avail_out == 0) {
      if (out_left) {
        z.avail_out = out_left > (1u << 30) ? 1u << 30 : (uInt)out_left;
        out_left -= z.avail_out;
      } else {
        /* All the bytes a chunk holds are there: one more would be one too many. */
        z.next_out = spill;
        z.avail_out = 1;
        overflow = true;
      }
    }
    rc = inflate(&z, Z_NO_FLUSH);
    if (overflow && z.avail_out == 0) break;
    if (rc == Z_BUF_ERROR && z.avail_in == 0 && in_left == 0) break;
    if (rc == Z_BUF_ERROR) rc = Z_OK;
  }
  size_t got = z.total_out;
  inflateEnd(&z);
  const char *what = gzip ? "gzip" : "zlib";
  if (overflow && got > want) {
    snprintf(reason, IR_ERR_LEN, "%s data decode to more than the chunk's %zu bytes", what, want);
    return false;
  }
  if (rc == Z_STREAM_END && got == want) return true;
  if (rc == Z_STREAM_END)
    snprintf(reason, IR_ERR_LEN, "%s data decode to %zu bytes, expected %zu", what, got, want);
  else if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT)
    snprintf(reason, IR_ERR_LEN, "corrupt %s data (%s) after %zu bytes", what, z.msg ? z.msg : "bad stream", got);
  else
    snprintf(reason, IR_ERR_LEN, "truncated %s data: %zu of %zu bytes decoded", what, got, want);
  return false;
}

/* ---- blosc ------------------------------------------------------------------------------------- */
static bool blosc_exact(const unsigned char *src, size_t n, unsigned char *dst, size_t want, char reason[IR_ERR_LEN]) {
#ifdef INKRAY_HAVE_BLOSC
  size_t nbytes = 0;
  /* The header's sizes are checked against the buffer before c-blosc trusts them. */
  if (n < 16 || blosc_cbuffer_validate(src, n, &nbytes) != 0) {
    snprintf(reason, IR_ERR_LEN, "bad blosc header (%zu bytes of data)", n);
    return false;
  }
  size_t cbytes = 0, blocksize = 0;
  blosc_cbuffer_sizes(src, &nbytes, &cbytes, &blocksize);
  if (cbytes != n) {
    snprintf(reason, IR_ERR_LEN, "blosc header says %zu compressed bytes, the chunk has %zu", cbytes, n);
    return false;
  }
  if (nbytes != want) {
    snprintf(reason, IR_ERR_LEN, "blosc data decode to %zu bytes, expected %zu", nbytes, want);
    return false;
  }
  int got = blosc_decompress_ctx(src, dst, want, 1);
  if (got < 0 || (size_t)got != want) {
    snprintf(reason, IR_ERR_LEN, "corrupt blosc data (c-blosc error %d)", got);
    return false;
  }
  return true;
#else
  (void)src, (void)n, (void)dst, (void)want;
  snprintf(reason, IR_ERR_LEN, "inkray was built without blosc (install libblosc-dev and rebuild)");
  return false;
#endif
}

/* ---- zstd -------------------------------------------------------------------------------------- */
static bool zstd_exact(const unsigned char *src, size_t n, unsigned char *dst, size_t want, void *dctx,
                       char reason[IR_ERR_LEN]) {
#ifdef INKRAY_HAVE_ZSTD
  unsigned long long size = ZSTD_getFrameContentSize(src, n);
  if (size == ZSTD_CONTENTSIZE_ERROR) {
    snprintf(reason, IR_ERR_LEN, "not a zstd frame (%zu bytes)", n);
    return false;
  }
  if (size != ZSTD_CONTENTSIZE_UNKNOWN && size != want) {
    snprintf(reason, IR_ERR_LEN, "zstd frame holds %llu bytes, expected %zu", size, want);
    return false;
  }
  size_t got = dctx ? ZSTD_decompressDCtx(dctx, dst, want, src, n) : ZSTD_decompress(dst, want, src, n);
  if (ZSTD_isError(got)) {
    snprintf(reason, IR_ERR_LEN, "corrupt or truncated zstd data (%s)", ZSTD_getErrorName(got));
    return false;
  }
  if (got != want) {
    snprintf(reason, IR_ERR_LEN, "zstd data decode to %zu bytes, expected %zu", got, want);
    return false;
  }
  return true;
#else
  (void)src, (void)n, (void)dst, (void)want, (void)dctx;
  snprintf(reason, IR_ERR_LEN, "inkray was built without zstd (install libzstd-dev and rebuild)");
  return false;
#endif
}

void *ir_zarr_zstd_context(void) {
#ifdef INKRAY_HAVE_ZSTD
  return ZSTD_createDCtx();
#else
  return NULL;
#endif
}

void ir_zarr_zstd_context_free(void *ctx) {
#ifdef INKRAY_HAVE_ZSTD
  ZSTD_freeDCtx(ctx);
#else
  (void)ctx;
#endif
}

bool ir_zarr_decode_bytes(ir_zarr_compressor c, bool crc32c, const unsigned char *src, size_t n, unsigned char *dst,
                          size_t want, void *zstd_ctx, char reason[IR_ERR_LEN]) {
  if (crc32c && !ir_zarr_check_crc32c(src, n, &n, reason)) return false;
  switch (c) {
  case IR_ZARR_BLOSC: return blosc_exact(src, n, dst, want, reason);
  case IR_ZARR_ZSTD: return zstd_exact(src, n, dst, want, zstd_ctx, reason);
  case IR_ZARR_ZLIB: return inflate_exact(src, n, dst, want, false, reason);
  case IR_ZARR_GZIP: return inflate_exact(src, n, dst, want, true, reason);
  default:
    if (n != want) {
      snprintf(reason, IR_ERR_LEN, "%zu bytes of uncompressed data, expected %zu", n, want);
      return false;
    }
    memcpy(dst, src, n);
    return true;
  }
}

bool ir_zarr_compressor_built(ir_zarr_compressor c) {
#ifndef INKRAY_HAVE_BLOSC
  if (c == IR_ZARR_BLOSC) return false;
#endif
#ifndef INKRAY_HAVE_ZSTD
  if (c == IR_ZARR_ZSTD) return false;
#endif
  (void)c;
  return true;
}
