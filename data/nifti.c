/* NIfTI-1 single files, .nii and .nii.gz (https://nifti.nimh.nih.gov/nifti-1): the 348-byte
 * header, then the voxels at vox_offset. The header's byte order is found from sizeof_hdr
 * (348 read one way or the other); the data have the same order.
 *
 * Read: dim (3-D; trailing dimensions of size 1 allowed), datatype (UINT8, INT16, UINT16,
 * FLOAT32), pixdim[1..3] as spacing, vox_offset, scl_slope/scl_inter: unless the slope is 0
 * (no scaling) or the pair is 1 and 0, values become slope*v + inter and the volume float32
 * (a NaN or infinite slope or intercept is refused); sform, else qform, for the up axis.
 * Not read: .hdr/.img pairs, NIfTI-2, 4-D series, other datatypes. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "data/volume_internal.h"

/* Byte offsets of the fields in the NIfTI-1 header. */
enum {
  NII_SIZEOF_HDR = 0,
  NII_DIM = 40,
  NII_DATATYPE = 70,
  NII_PIXDIM = 76,
  NII_VOX_OFFSET = 108,
  NII_SCL_SLOPE = 112,
  NII_SCL_INTER = 116,
  NII_QFORM_CODE = 252,
  NII_SFORM_CODE = 254,
  NII_QUATERN_B = 256,
  NII_SROW_X = 280,
  NII_MAGIC = 344,
};

typedef struct nii_reader {
  const unsigned char *bytes;
  bool swap;
} nii_reader;

static uint32_t nii_u32(const nii_reader *r, size_t at) {
  uint32_t u;
  memcpy(&u, r->bytes + at, 4);
  if (r->swap) u = (u >> 24) | ((u >> 8) & 0xff00u) | ((u << 8) & 0xff0000u) | (u << 24);
  return u;
}

static int16_t nii_i16(const nii_reader *r, size_t at) {
  uint16_t u;
  memcpy(&u, r->bytes + at, 2);
  if (r->swap) u = (uint16_t)((u >> 8) | (u << 8));
  return (int16_t)u;
}

static float nii_f32(const nii_reader *r, size_t at) {
  uint32_t u = nii_u32(r, at);
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static const char *nii_type_name(int datatype) {
  switch (datatype) {
  case 1: return "BINARY";
  case 8: return "INT32";
  case 32: return "COMPLEX64";
  case 64: return "FLOAT64";
  case 128: return "RGB24";
  case 256: return "INT8";
  case 768: return "UINT32";
  case 1024: return "INT64";
  case 1280: return "UINT64";
  case 1536: return "FLOAT128";
  case 2304: return "RGBA32";
  default: return "unknown";
  }
}

/* NIfTI's world is RAS (+z superior). The sform, when its code is set, else the qform gives
 * each index axis's world direction; the axis nearest to superior is the volume's up axis. */
static void nifti_up_axis(const nii_reader *r, ir_header *h) {
  double dirs[3][3];
  if (nii_i16(r, NII_SFORM_CODE) > 0) {
    /* srow_x/y/z are the rows of the index-to-world matrix: column k is axis k's direction. */
    for (int row = 0; row < 3; row++)
      for (int k = 0; k < 3; k++) dirs[k][row] = nii_f32(r, NII_SROW_X + 16 * (size_t)row + 4 * (size_t)k);
    h->up_source = "NIfTI sform";
  } else if (nii_i16(r, NII_QFORM_CODE) > 0) {
    double b = nii_f32(r, NII_QUATERN_B), c = nii_f32(r, NII_QUATERN_B + 4), d = nii_f32(r, NII_QUATERN_B + 8);
    double a2 = 1.0 - (b * b + c * c + d * d);
    double a = a2 > 0 ? sqrt(a2) : 0.0;
    double qfac = nii_f32(r, NII_PIXDIM) < 0 ? -1.0 : 1.0;
    double m[3][3] = {{a * a + b * b - c * c - d * d, 2 * (b * c - a * d), 2 * (b * d + a * c)},
                      {2 * (b * c + a * d), a * a + c * c - b * b - d * d, 2 * (c * d - a * b)},
                      {2 * (b * d - a * c), 2 * (c * d + a * b), a * a + d * d - c * c - b * b}};
    for (int row = 0; row < 3; row++)
      for (int k = 0; k < 3; k++) dirs[k][row] = m[row][k] * (k == 2 ? qfac : 1.0);
    h->up_source = "NIfTI qform";
  } else {
    return;
  }
  h->up_axis = ir_up_axis_from_directions((const double(*)[3])dirs);
}

ir_status ir_nifti_parse(const unsigned char *bytes, size_t len, const char *path, ir_header *h,
                         char err[IR_ERR_LEN]) {
  ir_header_init(h);
  if (len < IR_NIFTI_HEADER_BYTES)
    return ir_input_error(err, path, "%zu bytes, too short for a NIfTI-1 header (348 bytes)", len);
  nii_reader r = {bytes, false};
  if (nii_u32(&r, NII_SIZEOF_HDR) != 348) {
    r.swap = true;
    if (nii_u32(&r, NII_SIZEOF_HDR) != 348) {
      r.swap = false;
      uint32_t size = nii_u32(&r, NII_SIZEOF_HDR);
      if (size == 540 || size == 0x1c020000u)
        return ir_input_error(err, path, "NIfTI-2 files are not read; convert to NIfTI-1");
      return ir_input_error(err, path, "not a NIfTI-1 file (sizeof_hdr is %u, expected 348)",
                            (unsigned)size);
    }
  }
  /* The header's order is the data's order; swap means it differs from the host's. */
  bool host_big = ir_host_is_big_endian();
  h->endian = (host_big != r.swap) ? IR_ENDIAN_BIG : IR_ENDIAN_LITTLE;

  const unsigned char *magic = bytes + NII_MAGIC;
  if (memcmp(magic, "ni1\0", 4) == 0)
    return ir_input_error(err, path,
                          "a NIfTI .hdr/.img pair is not read; convert it to a single .nii");
  if (memcmp(magic, "n+1\0", 4) != 0)
    return ir_input_error(err, path, "bad NIfTI-1 magic (expected \"n+1\")");

  int ndim = nii_i16(&r, NII_DIM);
  if (ndim < 1 || ndim > 7)
    return ir_input_error(err, path, "dim[0] is %d, expected 1 to 7", ndim);
  for (int k = 0; k < 3; k++) {
    int d = k < ndim ? nii_i16(&r, NII_DIM + 2 * (size_t)(k + 1)) : 1;
    if (d < 1) return ir_input_error(err, path, "dim[%d] is %d, expected 1 or more", k + 1, d);
    h->dims[k] = (size_t)d;
  }
  /* dim[4] is time: a time series (series.c). Higher dimensions (vector components, ...) are
   * not volumes of one value. */
  h->steps = ndim >= 4 && nii_i16(&r, NII_DIM + 8) > 1 ? (size_t)nii_i16(&r, NII_DIM + 8) : 0;
  for (int k = 5; k <= ndim; k++) {
    int d = nii_i16(&r, NII_DIM + 2 * (size_t)k);
    if (d > 1)
      return ir_input_error(err, path,
                            "a %d-D image (dim[%d] = %d): only 3-D volumes and 4-D time series are "
                            "read; extract one volume first",
                            ndim, k, d);
  }
  int datatype = nii_i16(&r, NII_DATATYPE);
  switch (datatype) {
  case 2: h->type = IR_VOXEL_UINT8; break;
  case 4: h->type = IR_VOXEL_INT16; break;
  case 512: h->type = IR_VOXEL_UINT16; break;
  case 16: h->type = IR_VOXEL_FLOAT32; break;
  default:
    return ir_input_error(err, path,
                          "datatype %d (%s) is not supported (UINT8, INT16, UINT16 or FLOAT32)",
                          datatype, nii_type_name(datatype));
  }
  /* A pixdim of 0 (or NaN) is common in files written without a voxel size; spacing 1 is the
   * usual guess, but it changes the picture's proportions, so the note names the fields. */
  char guessed[64] = "";
  for (int k = 0; k < 3; k++) {
    float raw = nii_f32(&r, NII_PIXDIM + 4 * (size_t)(k + 1)), s = fabsf(raw);
    h->spacing[k] = isfinite(s) && s > 0 ? s : 1.0f;
    if (!(isfinite(s) && s > 0)) {
      size_t used = strlen(guessed);
      snprintf(guessed + used, sizeof guessed - used, "%spixdim[%d] = %g", used ? ", " : "", k + 1, (double)raw);
    }
  }
  if (guessed[0])
    snprintf(h->note, sizeof h->note, "warning: %s in the header: spacing 1 assumed there (give --spacing X,Y,Z)",
             guessed);
  float offset = nii_f32(&r, NII_VOX_OFFSET);
  if (!isfinite(offset) || offset < (float)IR_NIFTI_HEADER_BYTES || offset > 1e9f ||
      offset != floorf(offset))
    return ir_input_error(err, path, "vox_offset %g: expected a whole number of at least 348",
                          (double)offset);
  h->data_offset = (size_t)offset;

  float slope = nii_f32(&r, NII_SCL_SLOPE), inter = nii_f32(&r, NII_SCL_INTER);
  /* A slope of 0 means no scaling (the intercept is then unused); a NaN or infinite slope or
   * intercept would turn every voxel into NaN: refused rather than guessed at. */
  if (slope != 0.0f && !isfinite(slope))
    return ir_input_error(err, path, "scl_slope is %g: expected a finite number (0 for no scaling)",
                          (double)slope);
  if (slope != 0.0f && !isfinite(inter))
    return ir_input_error(err, path, "scl_inter is %g with scl_slope %g: expected a finite number",
                          (double)inter, (double)slope);
  if (slope != 0.0f && !(slope == 1.0f && inter == 0.0f)) {
    h->scaled = true;
    h->scale_slope = slope;
    h->scale_inter = inter;
  }
  nifti_up_axis(&r, h);
  return IR_OK;
}

/* The first bytes of a .nii.gz, decompressed: enough for the header. */
static ir_status read_gz_header(const char *path, unsigned char *buf, size_t *len,
                                char err[IR_ERR_LEN]) {
  gzFile gz = gzopen(path, "rb");
  if (!gz) return ir_input_error(err, path, "cannot open");
  int got = gzread(gz, buf, IR_NIFTI_HEADER_BYTES);
  const char *msg = got < 0 ? ir_gz_reason(gz, path) : "";
  ir_status status = IR_OK;
  if (got < 0) status = ir_input_error(err, path, "corrupt gzip data in the header (%s)", msg);
  gzclose(gz);
  *len = got > 0 ? (size_t)got : 0;
  return status;
}

ir_status ir_nifti_read_header(const char *path, ir_header *h, char err[IR_ERR_LEN]) {
  bool gz = ir_path_has_suffix(path, ".gz");
  unsigned char buf[IR_NIFTI_HEADER_BYTES];
  size_t len = 0;
  ir_status status;
  if (gz) {
    status = ir_check_file(path, NULL, err);
    if (status == IR_OK) status = read_gz_header(path, buf, &len, err);
  } else {
    char *text = NULL;
    status = ir_read_prefix(path, IR_NIFTI_HEADER_BYTES, &text, &len, err);
    if (status == IR_OK) memcpy(buf, text, len);
    free(text);
  }
  if (status != IR_OK) return status;
  return ir_nifti_parse(buf, len, path, h, err);
}

ir_status ir_load_nifti(const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]) {
  const char *path = desc->source;
  bool gz = ir_path_has_suffix(path, ".gz");
  ir_header h;
  ir_status status = ir_nifti_read_header(path, &h, err);
  if (status != IR_OK) return status;
  if (h.steps > 1) {
    status = ir_refuse_4d(&h, path, err);
    ir_header_free(&h);
    return status;
  }
  if (gz)
    status = ir_gz_read_voxels(&h, path, h.data_offset, desc, out, err);
  else
    status = ir_header_read_voxels(&h, path, desc, out, err);
  ir_header_free(&h);
  return status;
}
