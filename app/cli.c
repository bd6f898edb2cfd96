/* Option parsing shared by the subcommands. */
#include "app/app.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void cli_print_volume_options(FILE *to) {
  fputs("Volume options (raw files; name_XxYxZ_type.raw and header formats need none):\n"
        "  --dims XxYxZ         voxels along x, y, z\n"
        "  --type TYPE          uint8 | uint16 | int16 | float32\n"
        "  --endian little|big  byte order of 16-bit and float data (default little)\n"
        "  --spacing sx,sy,sz   voxel size (default from the header, else 1,1,1)\n"
        "  --series UID         DICOM folder of several series: the one to load (default: the\n"
        "                       largest; the others are listed)\n"
        "  --array NAME         .vti: the point data array (default: the active scalars)\n"
        "  --level N|auto       OME-Zarr: the multiscale level, 0 the finest (default: auto when\n"
        "                       drawing, the finest that fits the device's memory; 0 for info)\n"
        "  --channel N          OME-Zarr, Zarr: the channel (default 0)\n"
        "VOLUME is a file (.raw, .raw.gz, .nrrd, .nhdr, .mhd, .mha, .nii, .nii.gz, .dat, .vti,\n"
        ".tif, .tiff, .dcm or any DICOM file), a folder of DICOM files or TIFF slices, a TIFF\n"
        "slice pattern (slice_%03d.tif), a Zarr v2/v3 array or OME-Zarr image (a folder), an\n"
        "HDF5 dataset (file.h5:/path, or file.h5 holding one 3-D dataset) or builtin:NAME[:N] or\n"
        "builtin:NAME:XxYxZ (each up to 16384)",
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
