/* Writes the seed corpus of the DICOM fuzzer (fuzz_corpus_dicom/README says how to build and
 * run it): small series written with the tests' GDCM fixtures (dicom_fixtures.cxx), each seed
 * being the series' files joined by the fuzzer's separator line (fuzz_dicom.cxx). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/data/dicom_fixtures.h"

static const char separator[] = "\n--next-file--\n";

static unsigned char *read_all(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc(len > 0 ? (size_t)len : 1);
  *n = b ? fread(b, 1, (size_t)len, f) : 0;
  fclose(f);
  return b;
}

typedef struct seed {
  const char *name;
  int files;         /* slices, one file each (a multi-frame seed: 1) */
  unsigned rows, cols, frames;
  int bits, is_signed, samples;
  double slope, slope_step, intercept;
  dicom_compression compression;
  int two_series;    /* the second half of the files in another series */
} seed;

static void write_seed(const char *out_dir, const char *tmp_dir, const seed *s) {
  size_t per = (size_t)s->rows * s->cols * (s->frames ? s->frames : 1) * (size_t)s->samples;
  size_t bytes = per * (size_t)(s->bits / 8);
  unsigned char *pixels = malloc(bytes);
  char path[1024], err[256];
  snprintf(path, sizeof path, "%s/%s", out_dir, s->name);
  FILE *out = fopen(path, "wb");
  if (!pixels || !out) {
    fprintf(stderr, "cannot write %s\n", path);
    exit(1);
  }
  for (int k = 0; k < s->files; k++) {
    for (size_t i = 0; i < bytes; i++) pixels[i] = (unsigned char)((i * 37 + (size_t)k * 11) % 251);
    if (s->bits == 16) /* 12-bit CT values */
      for (size_t i = 0; i < per; i++) ((uint16_t *)pixels)[i] &= 0x0fff;
    char file[1024];
    snprintf(file, sizeof file, "%s/slice%d.dcm", tmp_dir, k);
    int second = s->two_series && k >= s->files / 2;
    dicom_image_spec img = {
        .path = file, .rows = s->rows, .cols = s->cols, .frames = s->frames ? s->frames : 1,
        .bits = s->bits, .is_signed = s->is_signed, .samples = s->samples, .pixels = pixels,
        .slope = s->slope + k * s->slope_step, .intercept = s->intercept,
        .row_spacing = 0.7, .col_spacing = 0.9, .slice_spacing = 1.5,
        .position = {-20, 10 - 0.6 * 2.5 * k, 5 + 0.8 * 2.5 * k},
        .orientation = {1, 0, 0, 0, 0.8, 0.6},
        .series_uid = second ? "1.2.826.0.1.99.2" : "1.2.826.0.1.99.1", .modality = "CT",
        .description = "seed", .instance_number = k + 1, .compression = s->compression};
    if (dicom_write_image(&img, err, sizeof err) != 0) {
      fprintf(stderr, "%s: %s\n", s->name, err);
      exit(1);
    }
    size_t n = 0;
    unsigned char *b = read_all(file, &n);
    if (k) fwrite(separator, 1, sizeof separator - 1, out);
    fwrite(b, 1, n, out);
    free(b);
    remove(file);
  }
  fclose(out);
  free(pixels);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: make_fuzz_dicom_seeds OUT_DIR TMP_DIR\n");
    return 2;
  }
  static const seed seeds[] = {
      {"slice_u16", 1, 5, 8, 1, 16, 0, 1, 1, 0, -1024, DICOM_RAW, 0},
      {"slice_s8", 1, 4, 6, 1, 8, 1, 1, 1, 0, 0, DICOM_RAW, 0},
      {"series3_u16", 3, 5, 8, 1, 16, 0, 1, 1, 0, -1024, DICOM_RAW, 0},
      {"series3_rescale_by_slice", 3, 4, 4, 1, 16, 1, 1, 0.5, 0.25, 0, DICOM_RAW, 0},
      {"series2_rle", 2, 5, 8, 1, 16, 0, 1, 1, 0, -1024, DICOM_RLE, 0},
      {"series2_jpeg_lossless", 2, 5, 8, 1, 16, 0, 1, 1, 0, -1024, DICOM_JPEG_LOSSLESS, 0},
      {"two_series", 4, 4, 4, 1, 16, 0, 1, 1, 0, 0, DICOM_RAW, 1},
      {"multiframe_s16", 1, 5, 8, 3, 16, 1, 1, 1, 0, 0, DICOM_RAW, 0},
      {"multiframe_rle", 1, 5, 8, 3, 8, 0, 1, 1, 0, 0, DICOM_RLE, 0},
      {"multiframe_j2k", 1, 16, 16, 2, 16, 0, 1, 1, 0, 0, DICOM_J2K_LOSSLESS, 0},
      {"multiframe_jpegls", 1, 16, 16, 2, 16, 0, 1, 1, 0, 0, DICOM_JPEGLS_LOSSLESS, 0},
      {"slice_rgb", 1, 4, 4, 1, 8, 0, 3, 1, 0, 0, DICOM_RAW, 0},
  };
  for (size_t k = 0; k < sizeof seeds / sizeof seeds[0]; k++) write_seed(argv[1], argv[2], &seeds[k]);
  return 0;
}
