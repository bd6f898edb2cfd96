/* DICOM files for the tests, written with GDCM (dicom_fixtures.cxx) so that the test itself
 * stays C. Each call writes one file; the test builds series from them. */
#ifndef INKRAY_TESTS_DICOM_FIXTURES_H
#define INKRAY_TESTS_DICOM_FIXTURES_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum dicom_compression {
  DICOM_RAW = 0,        /* explicit VR little endian */
  DICOM_RLE,            /* RLE lossless */
  DICOM_JPEG_LOSSLESS,  /* JPEG lossless, process 14 SV1 */
  DICOM_J2K_LOSSLESS,   /* JPEG 2000 lossless (GDCM's encoder needs images of 64x64 or so) */
  DICOM_JPEGLS_LOSSLESS, /* JPEG-LS lossless */
} dicom_compression;

typedef struct dicom_image_spec {
  const char *path;
  unsigned rows, cols, frames; /* frames > 1: an enhanced CT multi-frame file */
  int bits;                    /* 8 or 16 */
  int is_signed;
  int samples;                 /* 1, or 3 for an RGB image */
  const void *pixels;          /* rows*cols*frames*samples stored values, host order */
  double slope, intercept;
  double row_spacing, col_spacing, slice_spacing; /* PixelSpacing; slice spacing: multi-frame */
  double position[3], orientation[6];
  const char *series_uid, *modality, *description;
  int instance_number;         /* 0: none written */
  dicom_compression compression;
} dicom_image_spec;

/* Returns 0, or -1 with the reason in err. */
int dicom_write_image(const dicom_image_spec *s, char *err, size_t err_len);
/* Rewrites one US element of a written file (for corrupt headers). */
int dicom_patch_us(const char *path, unsigned group, unsigned element, unsigned value);

#ifdef __cplusplus
}
#endif
#endif
