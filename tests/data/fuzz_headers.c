/* libFuzzer target for the header parsers (NRRD, MetaImage, QVis, NIfTI-1), the gzip/zlib
 * payload reader, and the whole-file decoders of VTK image data (expat XML, base64, compressed
 * blocks) and TIFF (libtiff from memory) when those were built. Every input goes to every parser; a parser must either accept it or return
 * IR_ERR_INPUT with one non-empty line, never crash, read out of bounds or leak.
 * Built with clang -fsanitize=fuzzer,address,undefined from tests/data/CMakeLists.txt. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "data/volume_internal.h"

/* A failed parse must leave one line of message; a successful one a usable header. */
static void check_result(ir_status status, const ir_header *h, const char *err) {
  if (status != IR_OK) {
    if (status != IR_ERR_INPUT && status != IR_ERR_RUNTIME) __builtin_trap();
    if (!err[0] || strchr(err, '\n')) __builtin_trap();
    return;
  }
  if (h->type >= IR_VOXEL_TYPE_COUNT) __builtin_trap();
  for (size_t i = 0; i < h->file_count; i++)
    if (!h->files[i]) __builtin_trap();
}

typedef ir_status (*text_parser)(const char *, size_t, const char *, ir_header *, char *);

static void run_text_parser(text_parser parse, const uint8_t *data, size_t size, const char *name) {
  char err[IR_ERR_LEN] = "";
  ir_header h;
  ir_status status = parse((const char *)data, size, name, &h, err);
  check_result(status, &h, err);
  if (status == IR_OK) ir_header_free(&h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  run_text_parser(ir_nrrd_parse, data, size, "fuzz.nrrd");
  run_text_parser(ir_meta_parse, data, size, "fuzz.mha");
  run_text_parser(ir_qvis_parse, data, size, "fuzz.dat");

  char err[IR_ERR_LEN] = "";
  ir_header h;
  ir_status status = ir_nifti_parse(data, size, "fuzz.nii", &h, err);
  check_result(status, &h, err);
  if (status == IR_OK) ir_header_free(&h);

  /* Whole-file decoders: they allocate only what the data can hold, so a fuzzed input cannot
   * make them ask for more than a small multiple of its size. */
  ir_volume v;
#ifdef INKRAY_HAVE_EXPAT
  err[0] = '\0';
  status = ir_vti_decode(data, size, "fuzz.vti", size % 3 == 0 ? "density" : NULL, &v, err);
  if (status != IR_OK && (!err[0] || strchr(err, '\n'))) __builtin_trap();
  if (status == IR_OK && (!v.voxels || v.type >= IR_VOXEL_TYPE_COUNT)) __builtin_trap();
  ir_volume_free(&v);
#endif
#ifdef INKRAY_HAVE_TIFF
  err[0] = '\0';
  status = ir_tiff_decode(data, size, "fuzz.tif", &v, err);
  if (status != IR_OK && (!err[0] || strchr(err, '\n'))) __builtin_trap();
  if (status == IR_OK && (!v.voxels || v.type >= IR_VOXEL_TYPE_COUNT)) __builtin_trap();
  ir_volume_free(&v);
#endif
  (void)v;

  /* The same bytes as a compressed payload of 4 KiB, gzip and zlib. */
  static unsigned char out[4096];
  for (int encoding = IR_ENCODING_GZIP; encoding <= IR_ENCODING_ZLIB && size > 0; encoding++) {
    FILE *f = fmemopen((void *)(uintptr_t)data, size, "rb");
    if (!f) break;
    err[0] = '\0';
    status = ir_read_payload(f, "fuzz.gz", (ir_encoding)encoding, size % 7, out, sizeof out,
                             NULL, err);
    fclose(f);
    if (status != IR_OK && (!err[0] || strchr(err, '\n'))) __builtin_trap();
  }
  return 0;
}
