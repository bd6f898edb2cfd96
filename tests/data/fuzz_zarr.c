/* libFuzzer target for the Zarr reader's parts that take bytes from a file: the v2 (.zarray)
 * and v3 (zarr.json) array metadata, the OME-Zarr multiscales object, the chunk decoders
 * (blosc, zstd, zlib, gzip, each with and without a crc32c checksum) and the sharding index.
 * Every input goes to every one; each must accept it or fail with one non-empty line (IR_ERR_INPUT
 * for the parsers), never crash, read out of bounds, leak or write past the chunk it decodes.
 * Built with clang -fsanitize=fuzzer,address,undefined from tests/data/CMakeLists.txt. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "data/zarr.h"

static void check_message(ir_status status, const char *err) {
  if (status == IR_OK) return;
  if (status != IR_ERR_INPUT) __builtin_trap();
  if (!err[0] || strchr(err, '\n')) __builtin_trap();
}

static void check_array(const ir_zarr_array *a) {
  if (a->ndim < 1 || a->ndim > IR_ZARR_MAX_DIMS || a->sample >= IR_SAMPLE_TYPE_COUNT) __builtin_trap();
  for (int k = 0; k < a->ndim; k++) {
    if (a->chunk[k] == 0 || a->codecs.order[k] < 0 || a->codecs.order[k] >= a->ndim) __builtin_trap();
    if (a->sharded && (a->inner[k] == 0 || a->chunk[k] % a->inner[k] != 0)) __builtin_trap();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[IR_ERR_LEN] = "";
  ir_zarr_array a;
  for (int version = 2; version <= 3; version++) {
    err[0] = '\0';
    ir_status st = ir_zarr_parse_array((const char *)data, size, version, "fuzz/.zarray", &a, err);
    check_message(st, err);
    if (st == IR_OK) check_array(&a);
  }
  ir_zarr_multiscale *m = malloc(sizeof *m);
  if (m) {
    err[0] = '\0';
    ir_status st = ir_zarr_parse_multiscale((const char *)data, size, "fuzz/.zattrs", m, err);
    check_message(st, err);
    if (st == IR_OK && (m->level_count < 1 || m->level_count > IR_MAX_LEVELS)) __builtin_trap();
    free(m);
  }

  /* The decoders write exactly `want` bytes: a buffer of that size, so that the sanitizer
   * catches one more. The size comes from the input's first bytes (up to 64 KiB). */
  size_t want = size >= 2 ? ((size_t)data[0] | (size_t)data[1] << 8) + 1 : 1;
  unsigned char *dst = malloc(want);
  void *zstd = ir_zarr_zstd_context();
  char reason[IR_ERR_LEN];
  for (int c = IR_ZARR_NONE; dst && c <= IR_ZARR_GZIP; c++) {
    if (!ir_zarr_compressor_built((ir_zarr_compressor)c)) continue;
    for (int crc = 0; crc <= 1; crc++) {
      reason[0] = '\0';
      bool ok = ir_zarr_decode_bytes((ir_zarr_compressor)c, crc, data, size, dst, want, zstd, reason);
      if (!ok && (!reason[0] || strchr(reason, '\n'))) __builtin_trap();
    }
  }
  ir_zarr_zstd_context_free(zstd);
  free(dst);

  /* A sharding index of as many entries as the input holds, against a shard of 1 MiB. */
  memset(&a, 0, sizeof a);
  a.ndim = 1;
  /* The first byte's low bit says whether the index ends in its CRC-32C, so that both kinds of
   * index are parsed whole (an index of count entries is 16 count bytes, plus 4 with the CRC). */
  a.index_crc32c = size > 0 && (data[0] & 1);
  size_t count = size >= (a.index_crc32c ? 4u : 0u) ? (size - (a.index_crc32c ? 4 : 0)) / 16 : 0;
  uint64_t *offsets = malloc((count + 1) * sizeof *offsets), *sizes = malloc((count + 1) * sizeof *sizes);
  if (offsets && sizes && ir_zarr_parse_shard_index(&a, data, size, count, (size_t)1 << 20, offsets, sizes, reason))
    for (size_t i = 0; i < count; i++)
      if (!(offsets[i] == UINT64_MAX && sizes[i] == UINT64_MAX) && offsets[i] + sizes[i] > ((size_t)1 << 20))
        __builtin_trap();
  free(offsets);
  free(sizes);
  return 0;
}
