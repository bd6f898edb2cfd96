/* inkray dist module: distributed rendering over MPI.
 *
 * Where every rank can hold the whole volume, each loads all of it and traces a band of the
 * image's rows (sort-first, the bands balanced by the ranks' measured render times), and rank 0
 * gathers the bands. Otherwise (data-parallel, sort-last)
 * the volume is split into one brick per MPI rank (balanced along the longest axes, or the grid
 * whose largest brick covers the fewest pixels in the run's views); each rank
 * loads only its brick (data/volume.h regions), renders it with the camera of the whole volume
 * moved into the brick's frame and a clip box around the part it owns, and the frames are
 * composited by depth onto rank 0: each rank's window (its brick's projection) of 64-bit words
 * that pack depth and colour, the nearest word per pixel kept (a MIN). docs/distributed.md has
 * the design.
 *
 * The decomposition and the packing need no MPI (and are what the unit tests pin down); the
 * runtime functions need inkray built with MPI and otherwise return IR_ERR_INPUT saying so.
 * Library functions never print or exit: they return an ir_status and fill `err`.
 */
#ifndef INKRAY_DIST_H
#define INKRAY_DIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "data/volume.h"
#include "render/render.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Decomposition (no MPI) ----------------------------------------------------------------- */
#define IR_DIST_MIN_THICKNESS 2  /* voxels a brick must own along every axis */
#define IR_DIST_MAX_RANKS 65536
/* Voxels loaded beyond the shared one on each inner face. A brick's rays sample on the whole
 * volume's grid, starting at the last sample before its clip box (render/trace.cuh), so its
 * samples and hits lie up to half a voxel outside the box, and the gradient's central
 * differences reach one voxel further (render/volume_sample.cuh): 2 voxels. */
#define IR_DIST_GHOST 2

typedef struct ir_dist_layout {
  size_t dims[3]; /* the whole volume */
  int ranks;
  int parts[3];   /* bricks along x, y, z; their product is `ranks` */
} ir_dist_layout;

typedef struct ir_dist_brick {
  int rank;
  int cell[3];                   /* position in the brick grid; rank = x + parts_x (y + parts_y z) */
  size_t own_lo[3], own_hi[3];   /* voxels it owns, [lo, hi): the bricks' owned voxels tile the volume */
  size_t load_lo[3], load_hi[3]; /* voxels it loads, [lo, hi): owned, the next brick's first voxel
                                    (trilinear samples up to that voxel's centre), and the ghost
                                    on each inner face */
  float clip_lo[3], clip_hi[3];  /* the region it draws, voxel coordinates of the whole volume:
                                    from its first owned voxel's centre to the next brick's first
                                    voxel's centre (the volume's faces on the outside); the
                                    regions tile [0, dims] */
} ir_dist_brick;

/* Splits dims into `ranks` bricks: the rank count's prime factors, largest first, each split the
 * axis whose bricks are longest, into nearly equal parts (sizes differ by at most one voxel).
 * IR_ERR_INPUT with one line for a rank count outside 1..IR_DIST_MAX_RANKS or bricks that would
 * own fewer than IR_DIST_MIN_THICKNESS voxels along an axis. */
ir_status ir_dist_decompose(const size_t dims[3], int ranks, ir_dist_layout *out, char err[IR_ERR_LEN]);
/* The same bricks chosen for the frames they will draw: in sort-last each rank traces the rays
 * that meet its brick, so the slowest rank's work grows with the largest brick's projection.
 * Of every grid of `ranks` bricks (parts[0] parts[1] parts[2] = ranks, each brick at least
 * IR_DIST_MIN_THICKNESS voxels thick), the one whose largest brick covers the fewest pixels summed
 * over `views` (width x height frames of a volume with `spacing`); ir_dist_decompose's grid unless
 * another covers 1 % fewer, and for more than IR_DIST_VIEW_RANKS_MAX ranks (the search would take
 * seconds). An orbit around an axis gets slabs across it: their projections stack in every view
 * instead of overlapping where the orbit looks along a cut. clip_lo/clip_hi: the frames' clip box
 * in voxel coordinates of the whole volume (NULL: none); a brick is scored by its part inside it,
 * the part it draws, so that a clipped run shares out what is drawn, not the whole volume. */
#define IR_DIST_VIEW_RANKS_MAX 4096
ir_status ir_dist_decompose_for_views(const size_t dims[3], const float spacing[3], int ranks, const ir_camera *views,
                                      int count, int width, int height, const float *clip_lo, const float *clip_hi,
                                      ir_dist_layout *out, char err[IR_ERR_LEN]);
/* Brick `rank` (0 .. ranks-1) of a layout. */
void ir_dist_brick_of(const ir_dist_layout *L, int rank, ir_dist_brick *out);
/* The ranks front to back for an eye at `eye_voxel` (the whole volume's voxel coordinates, inside
 * or outside it): an order in which every ray meets the bricks, for all pixels at once (bricks
 * sorted by the sum over the axes of their distance in cells from the eye's cell). `order` holds
 * L->ranks entries. */
void ir_dist_visibility_order(const ir_dist_layout *L, const double eye_voxel[3], int *order);

/* ---- Replicated data: bands of rows (no MPI) ----------------------------------------------------
 * Where every rank can hold the whole volume, the ranks split the image instead of the volume
 * (sort-first): rank r traces the rows between cuts[r] and cuts[r+1] of the rows the volume
 * covers (fractions, cuts[0] = 0 <= ... <= cuts[ranks] = 1), so no ray is traced twice and no
 * depth is composited. A ray's cost varies with what it meets, so equal bands are not equal work:
 * the cuts follow the ranks' measured times through a model of the rows' cost, `density`
 * (ir_dist_band_slots(ranks) values). ir_dist_bands_even: equal bands and a uniform model.
 * ir_dist_bands_balance: the model taught that the bands took times[r] ms, and the cuts moved to
 * where it says the ranks take equal times; every band keeps at least IR_DIST_BAND_MIN / ranks
 * of the rows, so that its time keeps saying what its rows cost. Nothing changes where a time is
 * not finite or negative, or all are 0. */
#define IR_DIST_BAND_MIN 0.0625
int ir_dist_band_slots(int ranks);
void ir_dist_bands_even(int ranks, double *cuts, double *density);
void ir_dist_bands_balance(int ranks, const double *times, double *cuts, double *density);
/* Rank r's band of the rows [y0, y1): rows rows[0] <= y < rows[1]. */
void ir_dist_band_rows(const double *cuts, int r, int y0, int y1, int rows[2]);

/* ---- Compositing words (no MPI) --------------------------------------------------------------- */
/* One pixel as a 64-bit word: the depth's float bits above the RGBA8 colour. Non-negative
 * floats order like their bits read as unsigned integers, so the smallest word is the nearest
 * surface and MIN composites opaque surfaces. Background is all ones, MIN's identity. */
#define IR_DIST_BACKGROUND UINT64_MAX
uint64_t ir_dist_pack(float depth, uint32_t rgba);
void ir_dist_pack_image(const uint8_t *rgba, const float *depth, size_t pixels, uint64_t *words);
/* The words of a window (x0, y0, x1, y1: pixels x0 <= x < x1, y0 <= y < y1) of a width-wide
 * frame, row by row. */
void ir_dist_pack_window(const uint8_t *rgba, const float *depth, int width, const int window[4], uint64_t *words);
/* The nearest of each pixel's word in `frame` (width-wide) and a window's words (packed as above). */
void ir_dist_min_window(const uint64_t *words, int width, const int window[4], uint64_t *frame);
/* Colours of composited words; background words become `background_rgba`. */
void ir_dist_unpack_image(const uint64_t *words, size_t pixels, uint32_t background_rgba, uint8_t *rgba);
/* Depths of composited words; +INFINITY on background. */
void ir_dist_unpack_depth(const uint64_t *words, size_t pixels, float *depth);
/* Translucent compositing: `count` layers of `pixels` words, layer order[j] at
 * layers + order[j] * stride, blended front to back with "over" (dist/over.cuh); the depth is
 * the nearest layer's. Opaque pixels give what MIN gives. */
void ir_dist_over_words(const uint64_t *layers, size_t stride, const int *order, int count, size_t pixels,
                        uint64_t *out);

/* ---- Runtime (MPI) ---------------------------------------------------------------------------- */
typedef struct ir_dist ir_dist;

bool ir_dist_built_with_mpi(void);
/* The world size mpirun gave this process (OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_SIZE in the
 * environment), 0 when it was not started by an MPI launcher. Needs no MPI. */
int ir_dist_launched_size(void);
/* This process's rank from the same environment (OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK),
 * 0 when not started by an MPI launcher. */
int ir_dist_launched_rank(void);
/* MPI_Init and this rank's place. Without MPI: IR_ERR_INPUT, "built without MPI". */
ir_status ir_dist_init(int *argc, char ***argv, ir_dist **out, char err[IR_ERR_LEN]);
void ir_dist_finalize(ir_dist *d);
int ir_dist_rank(const ir_dist *d);
int ir_dist_size(const ir_dist *d);
/* Every rank passes its status; every rank gets the largest (so all stop together). */
int ir_dist_agree(ir_dist *d, int status);
/* The largest of each of `n` values over the ranks, on rank 0. */
ir_status ir_dist_max_to_root(ir_dist *d, const double *in, double *out, int n, char err[IR_ERR_LEN]);
/* The same on every rank. */
ir_status ir_dist_max_all(ir_dist *d, const double *in, double *out, int n, char err[IR_ERR_LEN]);
/* Opaque compositing by windows onto rank 0: every rank but 0 sends the words of its window
 * (windows[r], the same on every rank: its brick's projection, outside which its frame is
 * background) to rank 0 in one MPI_Gatherv, and rank 0 keeps the nearest word of each of their
 * pixels in `frame`, its own whole frame's words (used on rank 0 only). Only the windows travel,
 * where a reduction (MPI_Reduce with MPI_MIN) would move every rank's whole image. */
ir_status ir_dist_composite_windows(ir_dist *d, const uint64_t *local, const int (*windows)[4], int width,
                                    uint64_t *frame, char err[IR_ERR_LEN]);

/* Translucent compositing onto rank 0 by direct send: the image is cut into one strip of consecutive
 * pixels per rank, every rank sends strip j to rank j (MPI_Alltoallv), which blends the ranks'
 * strips in `order` (ir_dist_visibility_order, the same on every rank) and sends the result to
 * rank 0 (MPI_Gatherv). Any rank count; each rank sends and receives about one image. */
ir_status ir_dist_composite_over(ir_dist *d, const uint64_t *local, const int *order, uint64_t *result,
                                 size_t pixels, char err[IR_ERR_LEN]);

/* ---- A brick's renderer -------------------------------------------------------------------------- */
typedef struct ir_dist_scene ir_dist_scene;

typedef struct ir_dist_scene_desc {
  ir_volume_desc volume; /* the whole volume; its region fields are set per rank */
  ir_device device;      /* GPU: rank r uses device r % (devices on its host) */
  int cpu_threads;       /* CPU device: 0 = all cores */
  const char *color_source; /* NULL, or a second volume of the whole volume's dims for
                               IR_COLOR_VOLUME frames, read with the same format options: each
                               rank loads the same brick of it */
  bool whole_volume_rays;   /* the frames trace rays that leave their pixel's brick (ambient
                               occlusion, shadows): only replicated
                               data draws them; where it cannot be had (INKRAY_DIST_DATA=bricks,
                               or the volume does not fit every rank) IR_ERR_INPUT, before any
                               voxel is loaded */
  bool whole_volume_stats;  /* the run takes its isovalue from the whole volume's histogram (no
                               --iso given): only replicated data has it; where it cannot be had,
                               IR_ERR_INPUT asking for --iso, before any voxel is loaded */
  bool keep_depth;          /* rank 0 will read the composited depth (ir_dist_scene_last_depth);
                               on the GPUs the frames then travel with it (8 bytes a pixel into
                               rank 0 instead of 4) */
  /* The run's frames, when known before the bricks are chosen (a headless orbit): view_count
   * cameras, view i = view_camera(whole, i, view_ctx) for the whole volume's header, of
   * view_width x view_height frames; the bricks are then ir_dist_decompose_for_views's (and
   * ir_dist_decompose's with INKRAY_DIST_BRICKS=longest in the environment, for comparing).
   * view_count 0: ir_dist_decompose's. */
  int view_count, view_width, view_height;
  ir_camera (*view_camera)(const ir_volume *whole, int view, const void *view_ctx);
  /* The frames' clip box, where they have one: true and the box in the whole volume's voxel
   * coordinates (as ir_frame_desc's). NULL or false: none. */
  bool (*view_clip_box)(const ir_volume *whole, const void *view_ctx, float lo[3], float hi[3]);
  const void *view_ctx;
} ir_dist_scene_desc;

/* Phases of one distributed frame, milliseconds on the host clock of this rank. */
typedef struct ir_dist_frame_stats {
  double render_ms;    /* this rank's brick: ir_render_frame, to the end of its GPU work */
  double gather_ms;    /* host path: colour and depth to host memory, packed into words; NCCL
                          path: the packing kernel */
  double wait_ms;      /* this rank's wait for the slowest one before compositing (the ranks
                          agree that every brick was drawn): render imbalance, not compositing */
  double composite_ms; /* the reduction or the translucent blend, on the host (MPI) or the GPUs
                          (NCCL), from the moment every rank is ready; the frame ends in rank 0's
                          memory (its GPU's on the NCCL path), unpacked only where it is read */
  double total_ms;
  double pixels_traced; /* the pixels of this rank's window (its brick's projection), whose rays
                           its renderer traced; the others are background for it */
} ir_dist_frame_stats;

/* Reads the whole volume's header, decomposes it over the ranks, loads this rank's brick and
 * creates its renderer. Collective: every rank calls it; every rank gets the same status
 * (the message of a failure on another rank names that rank). */
ir_status ir_dist_scene_create(ir_dist *d, const ir_dist_scene_desc *desc, ir_dist_scene **out,
                               char err[IR_ERR_LEN]);
void ir_dist_scene_destroy(ir_dist_scene *s);
/* Rank 0: the last composited frame as RGBA8 in host memory (width*height*4 bytes). */
ir_status ir_dist_scene_read_image(ir_dist_scene *s, uint8_t *rgba, char err[IR_ERR_LEN]);
/* Rank 0: the last frame's composited depth (the nearest surface of any brick per pixel, as
 * ir_render_read_depth gives it), width*height floats; false on other ranks, before a frame, or
 * on the GPUs without desc.keep_depth. */
bool ir_dist_scene_last_depth(ir_dist_scene *s, float *depth);
/* How frames are composited: "none (one rank)", "on the GPUs (NCCL)", or on the host (MPI) with
 * the reason. */
const char *ir_dist_scene_compositing(const ir_dist_scene *s);
/* The colour volume's finite minimum and maximum over all the bricks (those of the whole
 * colour volume; 0..0 if none is finite). Collective; every rank gets them. */
ir_status ir_dist_scene_color_range(ir_dist_scene *s, float range[2], char err[IR_ERR_LEN]);
/* The whole volume as a header (dims, type, spacing, name; no voxels): cameras are set in its
 * world space (ir_camera_orbit). */
const ir_volume *ir_dist_scene_volume(const ir_dist_scene *s);
const ir_volume *ir_dist_scene_brick_volume(const ir_dist_scene *s);
/* The statistics of this rank's brick, computed where it lives (ir_renderer_volume_stats: a GPU
 * renderer keeps no host copy): the whole volume's where every rank holds it. */
ir_status ir_dist_scene_volume_stats(ir_dist_scene *s, ir_volume_stats *out, char err[IR_ERR_LEN]);
const ir_dist_layout *ir_dist_scene_layout(const ir_dist_scene *s);
/* Whether the layout was chosen for the run's views (ir_dist_scene_desc.view_count). */
bool ir_dist_scene_bricks_for_views(const ir_dist_scene *s);
/* Whether every rank holds the whole volume and traces a band of rows (replicated data, chosen
 * where every rank can hold it; INKRAY_DIST_DATA=bricks|replicated|auto on rank 0 asks), and
 * why, in a few words for the run's header. */
bool ir_dist_scene_replicated(const ir_dist_scene *s);
const char *ir_dist_scene_data_reason(const ir_dist_scene *s);
const ir_dist_brick *ir_dist_scene_brick(const ir_dist_scene *s);
/* One frame of the whole volume: frame->camera and clip plane in the whole volume's world space,
 * its clip box in the whole volume's voxel coordinates (all zero: none), each brick drawing the
 * part of it that it owns. Opaque surfaces are composited by MIN (the nearest), translucent ones
 * (any surface of opacity between 0 and 1) blended in the bricks' visibility order. Collective.
 * The frame ends where it was composited (rank 0's GPU with NCCL or one GPU rank, else host
 * memory); rank 0 also receives it as RGBA8 (width*height*4 bytes) in `rgba` unless that is NULL
 * (other ranks pass NULL). */
ir_status ir_dist_scene_frame(ir_dist_scene *s, const ir_frame_desc *frame, uint8_t *rgba,
                              ir_dist_frame_stats *stats, char err[IR_ERR_LEN]);

#ifdef __cplusplus
}
#endif
#endif
