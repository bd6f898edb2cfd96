/* inkray app: parsing the command line's values, with no side effects. Each parser fills an
 * options struct (or a value) and returns success, or fills `err` with one line naming the
 * option, the value and what is accepted; nothing is printed, loaded or opened, and the process
 * never exits here: the subcommands (headless.c, window/window.c, extract.c, info.c) print the
 * line and choose the exit status. tests/app/fuzz_options.c fuzzes every parser here. */
#ifndef INKRAY_APP_OPTIONS_H
#define INKRAY_APP_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "data/volume.h"
#include "render/render.h"

/* ---- Volume options -------------------------------------------------------------------------- */
/* Volume options every subcommand that loads a volume accepts:
 *   --dims XxYxZ  --type uint8|uint16|int16|float32  --endian little|big  --spacing sx,sy,sz
 *   --series UID (DICOM)  --array NAME (.vti)
 *   --level N|auto  --channel N (OME-Zarr, Zarr, HDF5: the multiscale level, 0 the finest; the channel)
 * If argv[*i] is one of them, consumes it (and its value), fills `desc` and returns 1;
 * returns 0 if argv[*i] is not a volume option; returns -1 and fills `err` on a bad value. */
int cli_parse_volume_option(int argc, char **argv, int *i, ir_volume_desc *desc, char err[IR_ERR_LEN]);

/* Parses "WxH" (e.g. 1024x768) into positive ints. */
bool cli_parse_size2(const char *text, int *w, int *h);
/* Parses a whole number / a float, the whole string, with range checks. */
bool cli_parse_int(const char *text, long min, long max, long *out);
bool cli_parse_float(const char *text, double *out);

/* ---- Look options: what is drawn, shared by headless runs, the window and extraction -----------
 *   --surface ISO[:COLOR[:OPACITY]]   repeatable, up to IR_MAX_SURFACES; COLOR #rrggbb or a name
 *   --clip-box X0,X1,Y0,Y1,Z0,Z1      fractions of the volume along each axis
 *   --clip-plane NX,NY,NZ,D           keeps world points with n.x + D >= 0
 *   --color-by gradient|FILE|channel:N  colour surfaces by a second quantity (FILE: a volume of the
 *                                     same dims, loaded with the main volume's format options;
 *                                     channel:N: channel N of the main volume's source)
 *   --colormap NAME  --color-range LO,HI
 *   --refine exact|texture            crossing refinement (exact float trilinear by default)
 *   --depth FILE                      headless: the last frame's depth as a 32-bit float image
 *   --ao N[:RADIUS]                   N occlusion rays per shaded hit (1..IR_AO_MAX_SAMPLES), each
 *                                     up to RADIUS voxels (default IR_AO_RADIUS_DEFAULT)
 *   --shadows                         a shadow ray per shaded hit toward the light (no value)
 *   --light AZ,EL                     a directional light in the camera's frame, degrees */
typedef struct app_look {
  int surface_count;                /* 0: the --iso values / the volume's default isovalue */
  ir_surface surfaces[IR_MAX_SURFACES]; /* color[0] < 0: none given; app_look_apply uses
                                           ir_surface_default_color(index) */
  bool clip_box_on;
  float clip_box[6];                /* x0, x1, y0, y1, z0, z1 as fractions 0..1 */
  bool clip_plane_on;
  float clip_plane[4];
  ir_color_source color_by;
  const char *color_file;           /* IR_COLOR_VOLUME: the second volume's path */
  int color_channel;                /* --color-by channel:N: N (the main source's channel); -1 */
  ir_colormap colormap;
  bool color_range_given;
  float color_range[2];
  bool texture_refine;
  float sample_step;                /* --step: voxels between a ray's samples; 0: the default */
  const char *depth_path;
  int ao_samples;                   /* 0: no ambient occlusion */
  float ao_radius;                  /* voxels; 0: IR_AO_RADIUS_DEFAULT */
  bool shadows;
  bool light_on;
  float light[2];                   /* azimuth -180..180, elevation -90..90, degrees */
} app_look;

/* Defaults: no surfaces given, no clipping, surface colours, viridis, exact refinement. */
void app_look_init(app_look *look);
/* The desc the --color-by volume is read with: the main volume's options with its own file, or
 * the main source with channel N. */
ir_volume_desc app_look_color_desc(const app_look *look, const ir_volume_desc *volume);
/* Like cli_parse_volume_option, for the look options above. */
int cli_parse_look_option(int argc, char **argv, int *i, app_look *look, char err[IR_ERR_LEN]);
/* --depth files: the format is named by the extension (.pfm, .nrrd; any case). */
typedef enum app_depth_format { APP_DEPTH_UNKNOWN = 0, APP_DEPTH_PFM, APP_DEPTH_NRRD } app_depth_format;
app_depth_format app_depth_format_of(const char *path);
/* ---- Values of the subcommands' own options ---------------------------------------------------- */
/* One isovalue: a number that stays finite as a float (the renderer's type). */
bool app_parse_isovalue(const char *text, double *out);
/* OPT 'VALUE': a whole number from min to max / a number from min to max. */
bool app_parse_count(const char *opt, const char *value, long min, long max, int *out, char err[IR_ERR_LEN]);
bool app_parse_real(const char *opt, const char *value, double min, double max, float *out, char err[IR_ERR_LEN]);
/* --method all | NAME[,NAME...] (ir_compact_methods' names): sets use[] (cleared first). */
bool app_parse_methods(const char *text, bool use[IR_COMPACT_METHOD_COUNT], char err[IR_ERR_LEN]);
/* --pipeline all | both | NAME[,NAME...] (ir_pipeline_parse's names): sets use[] (cleared first). */
bool app_parse_pipelines(const char *text, bool use[IR_PIPELINE_COUNT], char err[IR_ERR_LEN]);
/* --iso V[,V...] (at most `max`) | suggested | suggested:N (N from 1 to max): the values in
 * values[0 .. *count), or *count 0 and *suggested -1 (suggested) or N. */
bool app_parse_isovalues(const char *text, int max, double *values, int *count, int *suggested,
                         char err[IR_ERR_LEN]);
/* --tail-rays auto | off | N (1 .. 2^28): 0, IR_TAIL_OFF or N. */
bool app_parse_tail_rays(const char *text, uint32_t *out, char err[IR_ERR_LEN]);
/* The colour names and colour maps, ", "-separated, for messages and help. */
void app_list_color_names(char *buf, size_t cap);
void app_list_colormaps(char *buf, size_t cap);

#endif
