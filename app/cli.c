/* Option parsing shared by the subcommands. */
#include "app/app.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool cli_parse_int(const char *text, long min, long max, long *out) {
  if (!text || !*text) return false;
  errno = 0;
  char *end = NULL;
  long value = strtol(text, &end, 10);
  if (errno || *end || value < min || value > max) return false;
  *out = value;
  return true;
}

bool cli_parse_float(const char *text, double *out) {
  if (!text || !*text) return false;
  errno = 0;
  char *end = NULL;
  double value = strtod(text, &end);
  if (errno || *end || !isfinite(value)) return false;
  *out = value;
  return true;
}

bool cli_parse_size2(const char *text, int *w, int *h) {
  long a = 0, b = 0;
  char buf[64];
  if (!text || strlen(text) >= sizeof buf) return false;
  strcpy(buf, text);
  char *x = strchr(buf, 'x');
  if (!x) return false;
  *x = '\0';
  if (!cli_parse_int(buf, 1, 16384, &a) || !cli_parse_int(x + 1, 1, 16384, &b)) return false;
  *w = (int)a;
  *h = (int)b;
  return true;
}

static bool parse_dims3(const char *text, size_t dims[3]) {
  char buf[96];
  if (strlen(text) >= sizeof buf) return false;
  strcpy(buf, text);
  char *parts[3] = {buf, NULL, NULL};
  for (int k = 1; k < 3; k++) {
    char *x = strchr(parts[k - 1], 'x');
    if (!x) return false;
    *x = '\0';
    parts[k] = x + 1;
  }
  for (int k = 0; k < 3; k++) {
    long value = 0;
    /* 2^20 per axis is far beyond any real volume; larger is certainly a typo. */
    if (!cli_parse_int(parts[k], 1, 1L << 20, &value)) return false;
    dims[k] = (size_t)value;
  }
  return true;
}

static bool parse_spacing3(const char *text, float spacing[3]) {
  char buf[128];
  if (strlen(text) >= sizeof buf) return false;
  strcpy(buf, text);
  char *save = NULL;
  char *tok = strtok_r(buf, ",", &save);
  for (int k = 0; k < 3; k++, tok = strtok_r(NULL, ",", &save)) {
    double value = 0;
    if (!tok || !cli_parse_float(tok, &value) || value <= 0) return false;
    spacing[k] = (float)value;
  }
  return tok == NULL;
}

int cli_parse_volume_option(int argc, char **argv, int *i, ir_volume_desc *desc, char err[IR_ERR_LEN]) {
  const char *opt = argv[*i];
  const char *names[] = {"--dims", "--type", "--endian", "--spacing", "--series", "--array"};
  int which = -1;
  for (int k = 0; k < 6; k++)
    if (strcmp(opt, names[k]) == 0) which = k;
  if (which < 0) return 0;
  if (*i + 1 >= argc) {
    snprintf(err, IR_ERR_LEN, "%s needs a value", opt);
    return -1;
  }
  const char *value = argv[++*i];
  switch (which) {
  case 0:
    if (!parse_dims3(value, desc->dims)) {
      snprintf(err, IR_ERR_LEN, "--dims '%s': expected XxYxZ with each between 1 and 1048576, e.g. 256x256x128", value);
      return -1;
    }
    break;
  case 1:
    if (!ir_voxel_type_parse(value, &desc->type)) {
      snprintf(err, IR_ERR_LEN, "--type '%s': unknown voxel type; use uint8, uint16, int16 or float32", value);
      return -1;
    }
    desc->type_given = true;
    break;
  case 2:
    if (!ir_endian_parse(value, &desc->endian)) {
      snprintf(err, IR_ERR_LEN, "--endian '%s': use little or big", value);
      return -1;
    }
    desc->endian_given = true;
    break;
  case 4:
  case 5:
    if (!*value) {
      snprintf(err, IR_ERR_LEN, "%s needs a non-empty value", opt);
      return -1;
    }
    if (which == 4) desc->series = value;
    else desc->array = value;
    break;
  default:
    if (!parse_spacing3(value, desc->spacing)) {
      snprintf(err, IR_ERR_LEN, "--spacing '%s': expected three positive numbers sx,sy,sz", value);
      return -1;
    }
    desc->spacing_given = true;
    break;
  }
  return 1;
}

void cli_print_volume_options(FILE *to) {
  fputs("Volume options (raw files; name_XxYxZ_type.raw and header formats need none):\n"
        "  --dims XxYxZ         voxels along x, y, z\n"
        "  --type TYPE          uint8 | uint16 | int16 | float32\n"
        "  --endian little|big  byte order of 16-bit and float data (default little)\n"
        "  --spacing sx,sy,sz   voxel size (default from the header, else 1,1,1)\n"
        "  --series UID         DICOM folder of several series: the one to load (default: the\n"
        "                       largest; the others are listed)\n"
        "  --array NAME         .vti: the point data array (default: the active scalars)\n"
        "VOLUME is a file (.raw, .raw.gz, .nrrd, .nhdr, .mhd, .mha, .nii, .nii.gz, .dat, .vti,\n"
        ".tif, .tiff, .dcm or any DICOM file), a folder of DICOM files or TIFF slices, a TIFF\n"
        "slice pattern (slice_%03d.tif) or builtin:NAME[:N] (N up to 2048)",
        to);
  const char *const *names = ir_builtin_names();
  fputs(" with NAME one of:", to);
  for (int k = 0; names && names[k]; k++) fprintf(to, " %s", names[k]);
  fprintf(to, ".\nWith no VOLUME: %s.\n", IR_DEFAULT_VOLUME);
}

bool cli_check_output_path(const char *option, const char *path, char err[IR_ERR_LEN]) {
  struct stat st;
  if (!path || !*path) {
    snprintf(err, IR_ERR_LEN, "%s: empty file name", option);
    return false;
  }
  if (stat(path, &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      snprintf(err, IR_ERR_LEN, "%s '%s': is a folder; give a file name", option, path);
      return false;
    }
    if (access(path, W_OK) != 0) {
      snprintf(err, IR_ERR_LEN, "%s '%s': cannot write: %s", option, path, strerror(errno));
      return false;
    }
    return true;
  }
  char dir[4096];
  const char *slash = strrchr(path, '/');
  if (!slash) {
    snprintf(dir, sizeof dir, ".");
  } else {
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    if (n >= sizeof dir) {
      snprintf(err, IR_ERR_LEN, "%s: path too long", option);
      return false;
    }
    memcpy(dir, path, n);
    dir[n] = '\0';
  }
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    snprintf(err, IR_ERR_LEN, "%s '%s': folder %.200s does not exist", option, path, dir);
    return false;
  }
  if (access(dir, W_OK | X_OK) != 0) {
    snprintf(err, IR_ERR_LEN, "%s '%s': cannot write in folder %.200s: %s", option, path, dir, strerror(errno));
    return false;
  }
  return true;
}

int cli_load_volume(ir_volume_desc *desc, ir_volume *out) {
  char err[IR_ERR_LEN] = {0};
  if (!desc->source) desc->source = IR_DEFAULT_VOLUME;
  /* Big loads always report progress on stderr: in place on a terminal, else a line every few
   * seconds (a log or CI shows that a long load is alive). */
  desc->show_progress = true;
  /* INKRAY_PROGRESS_INTERVAL_MS: how often those lines come in a log (default 5000). */
  long interval = 0;
  const char *env = getenv("INKRAY_PROGRESS_INTERVAL_MS");
  if (env && cli_parse_int(env, 1, 3600000, &interval)) desc->progress_interval_ms = (unsigned)interval;
  ir_status status = ir_volume_load(desc, out, err);
  if (status != IR_OK) {
    fprintf(stderr, "inkray: %s\n", err);
    return status == IR_ERR_INPUT ? 2 : 1;
  }
  if (out->note[0]) fprintf(stderr, "inkray: %s: %s\n", out->name, out->note);
  return 0;
}
