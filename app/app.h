/* inkray app: the command-line program. Each subcommand is one entry point, in its own file;
 * main.c only dispatches. Entry points return the process exit status:
 * 0 success, 1 runtime failure (GPU, memory), 2 bad input (usage, files, sizes). */
#ifndef INKRAY_APP_H
#define INKRAY_APP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "data/volume.h"
#include "extract/extract.h"
#include "render/render.h"
#include "app/options.h"

/* argv[0] of each entry point is the subcommand's name; options follow. */
int app_info_main(int argc, char **argv);          /* info.c: inkray info VOLUME */
int app_compact_bench_main(int argc, char **argv); /* compact_bench.c: inkray compact-bench */
int app_extract_main(int argc, char **argv);       /* extract.c: inkray extract VOLUME -o MESH */
int app_headless_main(int argc, char **argv);      /* headless.c: inkray --headless ... */
int app_window_main(int argc, char **argv);        /* window.c: inkray [VOLUME] with a window */
bool app_window_available(void);                   /* built with SDL2 + GLEW */

/* ---- Shared option parsing (options.h, options.c; help and loading in cli.c) ------------------- */
/* Help text for the volume options. */
void cli_print_volume_options(FILE *to);

/* Checks before any work starts that `path` can be written as the output of `option` (--png,
 * --csv, ...): not a folder, its folder exists and is writable. Returns false with one line in
 * `err` ("--png '/no/such/x.png': folder /no/such does not exist") otherwise. */
bool cli_check_output_path(const char *option, const char *path, char err[IR_ERR_LEN]);

/* Loads the volume named by desc (or IR_DEFAULT_VOLUME when desc->source is NULL), printing
 * the error as "inkray: MESSAGE" on failure and the volume's note (other DICOM series, spacing
 * used, float64 rounded) as "inkray: NAME: NOTE" on success. Returns the exit status to use (0
 * on success). */
int cli_load_volume(ir_volume_desc *desc, ir_volume *out);

/* The volume axis a run shows pointing up (the orbit's axis): --up when given, else the one the
 * volume's header names, else +z. The window, headless runs and distributed runs alike. */
static inline ir_axis app_up_axis(ir_axis given, const ir_volume *v) {
  if (given != IR_AXIS_NONE) return given;
  return v->up_axis != IR_AXIS_NONE ? v->up_axis : IR_AXIS_Z;
}

/* ---- Opening a run's volume (open.c) and playing a time series (player.c) ----------------------- */
typedef struct app_player app_player;

typedef struct app_open_desc {
  const ir_volume_desc *volume;     /* source and format options (NULL source: IR_DEFAULT_VOLUME) */
  ir_device device;
  int cpu_threads;
  bool quiet;                       /* no progress lines on stderr */
  ir_volume_progress_fn on_progress; /* the window's progress bar (any thread) */
  void *progress_ctx;
} app_open_desc;

typedef struct app_opened {
  ir_volume volume;      /* one volume (owned); a series: its step 1's fields, voxels NULL */
  ir_series *series;     /* a time series, else NULL */
  app_player *player;    /* reads the series' next steps ahead */
  ir_renderer *renderer; /* drawing the volume (a series: step 1) */
  ir_volume_stats stats; /* app_open_finish: computed where the volume is (the GPU) */
  bool streamed;         /* the voxels went to the GPU while they were read */
  size_t bytes;          /* of the volume (a step) */
  double start_s, read_s, ready_s; /* clock at the start; seconds to the end of the read, to
                                      the statistics (the volume ready on the device) */
} app_opened;

/* Loads the volume (or opens the series and reads step 1) and makes its renderer, streaming the
 * voxels to the GPU while they are read where the format allows (open.c says when). Prints what
 * fails; returns the exit status (0: go on). */
int app_open(const app_open_desc *d, app_opened *out);
/* Statistics of the volume, computed where it lives (waits for the upload); sets ready_s. */
int app_open_finish(app_opened *o);
/* One line: size, read time and bandwidth, whether it streamed, when it was ready. */
void app_open_report(const app_opened *o);
/* VmHWM of this process (0 if unknown), and seconds since it started (-1 if unknown). */
size_t app_peak_host_bytes(void);
double app_seconds_since_start(void);
void app_opened_close(app_opened *o);

/* What reading one step cost. */
typedef struct app_step_info {
  size_t step;
  int slot;
  double load_ms;   /* the read (and its copies into staging), wall clock */
  size_t bytes;
  bool streamed;
  ir_status status;
  char err[IR_ERR_LEN];
} app_step_info;
int app_player_create(ir_series *series, ir_renderer *r, const ir_volume_desc *io, app_player **out);
ir_volume *app_player_slot_volume(app_player *p, int slot); /* open.c fills slot 0 */
void app_player_adopt_step0(app_player *p);                  /* slot 0 holds step 0, drawn */
int app_player_start(app_player *p);                         /* slots (2 or 3) and the reading thread */
/* The step wanted next and the direction of play; loop: wrap around the ends. */
void app_player_aim(app_player *p, size_t step, int direction, bool loop);
/* Frames draw `step` from now on: 0 done; 1 not read yet (only without wait); -1 the step could
 * not be read (info->err says why). Call from the frames' thread. */
int app_player_show(app_player *p, size_t step, bool wait, app_step_info *info);
const ir_volume *app_player_volume(const app_player *p); /* the step drawn, on the host */
void app_player_destroy(app_player *p);

/* ---- Look options (look.c; parsed in options.c) ----------------------------------------------- */
void cli_print_look_options(FILE *to);
/* Puts the look into a frame for volume v: surfaces, clip box (fractions -> voxel coordinates),
 * clip plane, colour source, map and range (`range` resolved by the caller when not given). */
void app_look_apply(const app_look *look, const ir_volume *v, ir_frame_desc *f);
/* Warns on `to` when the look draws nothing whatever the isovalue: every surface at opacity 0,
 * or a clip plane that keeps no part of the volume (or of the clip box). Returns the warnings. */
int app_look_warn_empty(const app_look *look, const ir_volume *v, FILE *to);

/* Writes w*h float depths (row 0 at the top, +INFINITY where nothing was hit) as a 32-bit float
 * image: a Portable FloatMap (little-endian, rows bottom to top as the format has them) or a
 * NRRD (raw little-endian floats, row 0 first, a `content` line saying what the values are).
 * Returns false with one line naming the file in `err` when it cannot be written
 * (depth_image.c). */
bool app_write_depth(const char *path, int w, int h, const float *depth, char err[IR_ERR_LEN]);

/* ---- Meshes of what a look draws (mesh_export.c) -------------------------------------------------
 * The extraction of the surfaces `look` draws on volume v: the look's surfaces (those with opacity
 * 0, hidden in a frame, left out) or else the `iso_count` isovalues; its clip box and plane with
 * the renderer's meaning; colours from the colour map over `range` when it colours by the gradient
 * or a second volume (the vertex values are then that quantity), else the surfaces' colours when
 * `surface_colors`. Returns the number of surfaces in *d. */
int app_mesh_desc(const app_look *look, const ir_volume *v, int iso_count, const double *isovalues, bool surface_colors,
                  const float range[2], ir_extract_desc *d);
/* The volume (and colour volume, or NULL) for an extractor. */
ir_status app_mesh_set_volume(ir_extractor *ex, const ir_volume *v, const ir_volume *color_volume, char err[IR_ERR_LEN]);
typedef struct app_mesh_saved {
  size_t vertices, triangles;
  double extract_ms, write_ms; /* host clock: extraction (GPU: to device buffers), file writing (and the download) */
} app_mesh_saved;
/* Extracts d (GPU: to device arrays, downloaded while the file is written; CPU: to host arrays)
 * and writes them to `path` (ir_mesh_write: temporary name, rename). */
ir_status app_mesh_save(ir_extractor *ex, const ir_extract_desc *d, const char *path, app_mesh_saved *out,
                        char err[IR_ERR_LEN]);

/* ---- Distributed headless runs (dist_headless.c) ------------------------------------------------ */
/* What a distributed run takes from the headless options (headless.c parses them). */
typedef struct app_dist_options {
  ir_volume_desc volume;
  int device;                 /* ir_device */
  int cpu_threads;
  int width, height, frames, warmup, orbit;
  float elevation, distance;
  int up;                     /* ir_axis the orbit turns around (--up); IR_AXIS_NONE: the volume's
                                 header's, else +z, as in one process */
  int iso_count;
  const double *isovalues;    /* none given: the builtin volume's isovalue */
  int pipeline;               /* ir_pipeline */
  int method;                 /* ir_compact_method */
  unsigned tail_rays;
  const char *png_path, *csv_path;
  const app_look *look;       /* surfaces, clipping, colouring, refinement, --depth; the caller
                                 refuses what is not distributed (translucency, an automatic
                                 gradient range) */
} app_dist_options;
/* Was inkray started by mpirun with more than one rank (or with INKRAY_DIST=1 and one)? */
bool app_dist_requested(void);
/* This process's rank as the MPI launcher gave it (0 outside mpirun). */
int app_dist_launched_rank(void);
/* Runs the headless frames distributed over the MPI ranks; rank 0 prints and writes files.
 * Without MPI: one line saying so, exit 2. */
int app_dist_headless(int argc, char **argv, const app_dist_options *o);

/* ---- Images (stb_impl.c) ------------------------------------------------------------------------ */
/* Writes w*h RGBA8 pixels (row 0 at the top, rows packed) as a PNG. Returns false and fills
 * `err` with one line naming the file when it cannot be written. */
bool app_write_png(const char *path, int w, int h, const uint8_t *rgba, char err[IR_ERR_LEN]);

#endif
