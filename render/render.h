/* inkray render module: isosurface ray casting of an ir_volume.
 *
 * Two devices: the GPU (the InK multi-kernel pipeline with run-time selectable compaction, or
 * the single-kernel baseline) and the CPU reference renderer, which runs the same per-ray math
 * multithreaded. All produce an RGBA8 image of width*height pixels, row 0 at the top: the
 * surfaces composited over a dark grey background, alpha the surfaces' coverage (255 where an
 * opaque surface was hit, 0 on background; docs/render.md).
 *
 * Library functions never print or exit: they return an ir_status and fill `err`.
 */
#ifndef INKRAY_RENDER_H
#define INKRAY_RENDER_H

#include <stdbool.h>
#include <stdint.h>

#include "compaction/compaction.h"
#include "data/volume.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ir_device { IR_DEVICE_GPU = 0, IR_DEVICE_CPU } ir_device;
/* Renderers. All but `plain` draw the same image, bit for bit on the GPU (docs/render.md). */
typedef enum ir_pipeline {
  IR_PIPELINE_MULTI = 0, /* the default InK design: brick-walk traversal and intersection as
                            separate kernels, rays compacted between them by the chosen method */
  IR_PIPELINE_SINGLE,    /* one kernel: each pixel walks the bricks and marches them itself */
  IR_PIPELINE_PAPER,     /* the InK paper's pipeline as published: BVH traversal with per-ray
                            stacks, leaf intersection, shading, four compaction stages */
  IR_PIPELINE_PLAIN,     /* benchmark baseline (GPU): a plain macrocell 3D-DDA caster; its image
                            is close to the others', not identical (it steps from each cell's
                            entry); the CPU draws the default image for it */
  IR_PIPELINE_PERSISTENT, /* the InK stages as phases of one persistent kernel: each block keeps a
                            pool of rays in shared memory, moves the rays' state (not indices)
                            when it compacts the pool by the chosen method between phases, and
                            refills it from a queue of 8x8 pixel tiles */
  IR_PIPELINE_COUNT
} ir_pipeline;

/* The pipeline frames run when none is chosen (the command line, the window): the fastest on
 * the GPUs measured (docs/render.md). A compaction method chosen without a pipeline runs in the
 * fastest of the InK pipelines that compact, IR_PIPELINE_INK. */
#define IR_PIPELINE_DEFAULT IR_PIPELINE_SINGLE
#define IR_PIPELINE_INK IR_PIPELINE_PERSISTENT

const char *ir_pipeline_name(ir_pipeline p);               /* "multi" | "single" | "paper" | "plain" | "persistent" */
const char *ir_pipeline_description(ir_pipeline p);        /* one line for help texts */
bool ir_pipeline_parse(const char *word, ir_pipeline *out);
/* Whether the pipeline compacts rays with the frame's method (multi, paper, persistent). */
bool ir_pipeline_compacts(ir_pipeline p);
const char *ir_device_name(ir_device d);                   /* "gpu" | "cpu" */
bool ir_device_parse(const char *word, ir_device *out);

/* ---- Camera --------------------------------------------------------------------------------- */
/* World space: the volume spans [0, dims*spacing] on each axis. */
typedef struct ir_camera {
  float eye[3];
  float target[3];
  float up[3];
  float fov_y_degrees; /* 0 means 45 */
} ir_camera;

/* A camera on a sphere around the volume's centre, looking at it; distance 1 fits the volume
 * in view. `up` is the volume axis shown pointing up, around which the azimuth turns
 * (IR_AXIS_NONE: +z); -z shows the +z view upside down. Used by orbits, the window's views and
 * the tests. */
ir_camera ir_camera_orbit(const ir_volume *v, float azimuth_degrees, float elevation_degrees,
                          float distance, ir_axis up);

/* The pixels of a width x height frame whose rays may meet the box lo..hi (world space), as an
 * ir_frame_desc.window (x0, y0, x1, y1): the rectangle around its corners' projections, one
 * pixel wider on each side; the whole image when a corner is on or behind the eye's plane (the
 * eye inside the box too); an empty one (all zero) when the box is off screen. */
void ir_camera_box_window(const ir_camera *cam, int width, int height, const double lo[3], const double hi[3],
                          int window[4]);
/* The area in pixels of the box lo..hi's projection (the convex hull of its corners') within a
 * width x height frame: how many of the frame's rays meet it; the whole frame when a corner is on
 * or behind the eye's plane. */
double ir_camera_box_pixels(const ir_camera *cam, int width, int height, const double lo[3], const double hi[3]);

/* ---- Surfaces and colour ----------------------------------------------------------------------- */
/* Up to IR_MAX_SURFACES isosurfaces are drawn in one frame. A ray composites the surfaces it
 * crosses front to back (premultiplied "over") and goes on past translucent ones until it is
 * opaque enough (IR_OPAQUE_ALPHA) or leaves the volume (docs/render.md, "Surfaces"). */
#define IR_MAX_SURFACES 4
typedef struct ir_surface {
  float isovalue; /* data units */
  float color[3]; /* RGB, 0..1, lit by the headlight */
  float opacity;  /* 0..1: 1 is opaque, 0 hides the surface */
} ir_surface;

/* What colours a surface: its own colour, or a colour map of a second quantity at the hit. */
typedef enum ir_color_source {
  IR_COLOR_SURFACE = 0, /* ir_surface.color */
  IR_COLOR_GRADIENT,    /* the field's gradient magnitude (data units per world unit) */
  IR_COLOR_VOLUME,      /* a second volume of the same dims (ir_renderer_set_color_volume) */
  IR_COLOR_SOURCE_COUNT
} ir_color_source;

typedef enum ir_colormap {
  IR_COLORMAP_VIRIDIS = 0,
  IR_COLORMAP_MAGMA,
  IR_COLORMAP_INFERNO,
  IR_COLORMAP_PLASMA,
  IR_COLORMAP_CIVIDIS,
  IR_COLORMAP_GREY,
  IR_COLORMAP_COUNT
} ir_colormap;

/* Colour maps are tables of IR_COLORMAP_SIZE RGB triples (0..1), low values first, read with
 * linear interpolation between entries (colormap.c; the perceptual maps are matplotlib's). */
#define IR_COLORMAP_SIZE 256
const float *ir_colormap_table(ir_colormap m);
const char *ir_colormap_name(ir_colormap m); /* "viridis", ... */
bool ir_colormap_parse(const char *word, ir_colormap *out);
/* The colour at value v of the range [lo, hi] (clamped; lo == hi gives the middle). */
void ir_colormap_lookup(ir_colormap m, float v, float lo, float hi, float rgb[3]);
const char *ir_color_source_name(ir_color_source s); /* "surface" | "gradient" | "volume" */

/* Parses "#rrggbb" or a colour name (ir_color_names) into RGB 0..1. */
bool ir_color_parse(const char *word, float rgb[3]);
const char *const *ir_color_names(void); /* NULL-terminated */
/* The colour of the i-th surface when none is given (a fixed palette; the first is the
 * default surface colour). */
void ir_surface_default_color(int i, float rgb[3]);

/* A range for colouring by `source` when the user gives none: the color volume's finite
 * minimum and maximum (IR_COLOR_VOLUME), or 0 to the largest gradient magnitude of the field
 * volume at voxel centres, taken on a subsample of at most 2^24 voxels (IR_COLOR_GRADIENT);
 * 0..1 for IR_COLOR_SURFACE or a missing volume, 0..0 when no voxel is finite. */
void ir_color_range_auto(const ir_volume *field, const ir_volume *color_volume, ir_color_source source,
                         float range[2]);

/* ---- Renderer -------------------------------------------------------------------------------- */
typedef struct ir_renderer ir_renderer;

typedef struct ir_renderer_desc {
  ir_device device;          /* GPU by default */
  const ir_volume *volume;   /* uploaded (GPU) or referenced (CPU) at create; must outlive a CPU renderer */
  bool voxels_later;         /* `volume` is a header (dims, type, spacing; ir_volume_desc.header_only):
                                its voxels come through slot 0 (ir_renderer_slot_begin .. use_slot),
                                streamed to the GPU while they are read; no frame before that */
  int cpu_threads;           /* CPU device: 0 = all cores */
  int walk_cells;            /* voxels per cell of the brick walk in frames without a BVH update
                                (single, persistent, the CPU): 8 or 16; 0: chosen per frame
                                (ir_walk_cells_auto) */
} ir_renderer_desc;

/* The walk's cells for a frame of `pixels` pixels of a volume of these dims: cells of 8 voxels
 * where rays are dense (at least 2 pixels per voxel of the largest face), else 16. Finer cells
 * skip more empty space per range read, which pays while many rays share each read; with fewer
 * rays per voxel their extra steps across empty space cost more (docs/render.md). */
int ir_walk_cells_auto(const size_t dims[3], size_t pixels);

ir_status ir_renderer_create(const ir_renderer_desc *desc, ir_renderer **out, char err[IR_ERR_LEN]);
void ir_renderer_destroy(ir_renderer *r);

/* The second volume IR_COLOR_VOLUME frames colour by; NULL removes it. Its dims must be the
 * renderer volume's (else IR_ERR_INPUT, one line naming both). GPU: uploaded now; CPU:
 * referenced, so it must outlive the renderer or the next call. */
ir_status ir_renderer_set_color_volume(ir_renderer *r, const ir_volume *color_volume, char err[IR_ERR_LEN]);

typedef struct ir_frame_desc {
  int width, height;
  float isovalue;               /* data units: the one opaque surface drawn when surface_count
                                   is 0 (in the default colour) */
  int surface_count;            /* 0..IR_MAX_SURFACES: draw surfaces[0..count) instead */
  ir_surface surfaces[IR_MAX_SURFACES];
  ir_camera camera;
  ir_compact_method method;     /* compaction used by the multi-kernel pipeline */
  ir_pipeline pipeline;
  bool stage_timing;            /* also time each stage (a separate diagnostic pass on the GPU) */
  bool host_loop;               /* GPU multi-kernel: drive the traversal/intersection loop from the
                                   host, reading the counts back each round (Thrust always does),
                                   instead of one CUDA graph; for measuring host round trips */
  bool fixed_grids;             /* GPU multi-kernel graph: launch every round's kernels for all
                                   pixels instead of resizing them on the device to the rays
                                   left; for measuring what the resizing saves */
  uint32_t tail_rays;           /* GPU multi-kernel: once no more than this many rays are left to
                                   traverse, finish them in one kernel running the rest of the
                                   per-ray loop (same image). 0, the default: automatic for the
                                   multi pipeline (ir_tail_auto), off for the paper's (its loop
                                   runs to the last ray); IR_TAIL_OFF: never */
  uint32_t run_bricks;          /* multi pipeline: most valid bricks traversal hands intersection
                                   in one run; 0: no limit (the default). Single and persistent
                                   kernels (and the CPU's walk): most valid cells of the walk's
                                   runs; 0: IR_WALK_RUN_CELLS */
  float clip_lo[3], clip_hi[3]; /* clip box in the volume's voxel coordinates (the volume spans
                                   [0, dims]): only surfaces inside it are drawn; all zero, the
                                   default: the whole volume. Distributed runs give each brick
                                   the part of the whole volume it owns (dist/dist.h). */
  bool window_on;               /* trace only the pixels of a rectangle of the image: */
  int window[4];                /* x0, y0, x1, y1: pixels x0 <= x < x1, y0 <= y < y1 (row 0 at
                                   the top); an empty one (x0 == x1 or y0 == y1) traces none.
                                   Pixels outside are background with depth +INF, and those
                                   inside are what the whole frame draws there, bit for bit.
                                   Distributed runs give each brick its projection's rectangle */
  bool clip_plane_on;           /* also clip by a plane: */
  float clip_plane[4];          /* (nx, ny, nz, d): keeps the world points x with n.x + d >= 0
                                   (world space: the volume spans [0, dims * spacing]) */
  ir_color_source color_by;     /* IR_COLOR_SURFACE by default */
  ir_colormap colormap;         /* for the other sources */
  float color_range[2];         /* values mapped to the colour map's ends */
  float sample_step;            /* the distance between a ray's samples, in voxels (0: the default
                                   IR_SAMPLE_STEP_DEFAULT, half a voxel; IR_SAMPLE_STEP_MIN ..
                                   IR_SAMPLE_STEP_MAX): a surface sliver thinner than a step
                                   along the ray can fall between two samples (docs/render.md,
                                   "Crossings"); a finer step finds more of them, at more samples.
                                   Shadow rays take it too; occlusion rays keep one voxel */
  bool texture_refine;          /* refine crossings with the texture unit's samples (8-bit
                                   interpolation weights: terraced surfaces) instead of the
                                   exact float trilinear field; for comparison */
  uint32_t step_batches;        /* persistent pipeline: batches of samples a ray marches between
                                   two compactions of its block's pool; the multi pipeline's
                                   secondary rays: between two of theirs (0: IR_STEP_BATCHES_AUTO) */
  /* Ambient occlusion, shadows and a directional light (docs/render.md, "Ambient occlusion and
   * shadows"): the single, persistent and multi pipelines and the CPU; the paper's pipeline and
   * the plain caster refuse them (IR_ERR_INPUT). */
  int ao_samples;               /* occlusion rays per shaded hit, cosine-weighted over the
                                   hemisphere about the normal; their unoccluded fraction scales
                                   the ambient and diffuse terms (0: none; 1..IR_AO_MAX_SAMPLES) */
  float ao_radius;              /* their length in voxels (0: IR_AO_RADIUS_DEFAULT) */
  bool shadows;                 /* one ray per shaded hit toward the light */
  bool light_on;                /* a directional light instead of the per-pixel headlight: */
  float light[2];               /* its azimuth (-180..180) and elevation (-90..90) in degrees, in
                                   the camera's frame: 0,0 shines from the eye, positive azimuth
                                   from the right, positive elevation from above */
  uint32_t sample_frame;        /* the frame's place in a still view's run: its occlusion rays are
                                   samples [sample_frame, sample_frame + 1) * ao_samples of each
                                   hit's sequence (a new set of directions every frame) */
  bool accumulate;              /* the image is the mean of the frames since the last one with
                                   sample_frame 0 (progressive refinement); that frame starts it */
  int secondary;                /* persistent pipeline, lit frames: who traces the hits' occlusion
                                   and shadow rays (ir_secondary_mode; the same image each way) */
} ir_frame_desc;

/* How the persistent pipeline traces a block's secondary rays (ir_frame_desc.secondary). */
typedef enum ir_secondary_mode {
  IR_SECONDARY_INLINE = 0, /* each hit's in the thread that shades it, as the single kernel does */
  IR_SECONDARY_SPREAD,     /* over all the block's threads, each taking the next ray when done */
  IR_SECONDARY_POOL,       /* as a pool of rays in shared memory, stepped by step_batches and
                              compacted by the frame's method between steps (InK's loop) */
  IR_SECONDARY_MODE_COUNT
} ir_secondary_mode;
const char *ir_secondary_name(ir_secondary_mode m); /* "inline" | "spread" | "pool" */
bool ir_secondary_parse(const char *word, ir_secondary_mode *out);

/* A ray's sample step in voxels (ir_frame_desc.sample_step): the default and the range. */
#define IR_SAMPLE_STEP_DEFAULT 0.5f
#define IR_SAMPLE_STEP_MIN 0.01f
#define IR_SAMPLE_STEP_MAX 1.0f

/* Occlusion rays: the most per hit and per frame, and their default length in voxels. */
#define IR_AO_MAX_SAMPLES 256
#define IR_AO_RADIUS_DEFAULT 16.0f
/* Frames accumulated into one mean at most (ir_frame_desc.accumulate); later ones are ignored. */
#define IR_ACCUMULATE_MAX 65536u

/* The persistent pipeline's default step (ir_frame_desc.step_batches), and the largest. */
#define IR_STEP_BATCHES_AUTO 64
#define IR_STEP_BATCHES_MAX 1024

/* Pixels whose composited alpha reaches this are final: a ray stops there. */
#define IR_OPAQUE_ALPHA 0.995f

#define IR_TAIL_OFF 0xffffffffu
/* The multi pipeline's automatic tail threshold for a frame of `rays` rays. */
uint32_t ir_tail_auto(uint32_t rays);

/* What one frame cost and did. Times in milliseconds; stage times are filled when
 * stage_timing was asked for (and are 0 otherwise). */
#define IR_MAX_ITERATIONS 64
typedef struct ir_frame_stats {
  double frame_ms;       /* whole frame, host work included */
  double bvh_update_ms;
  double raygen_ms;
  double traverse_ms;    /* all traversal iterations together */
  double intersect_ms;   /* all intersection iterations together */
  double shade_ms;
  double secondary_ms;   /* lit frames on the multi pipeline, and on the persistent one spread or
                            pool: the phase of the hits' occlusion and shadow rays (with their
                            combining) */
  double compact_ms;     /* time spent compacting (out-of-kernel methods), inside the above */
  int iterations;        /* traversal/intersection rounds */
  uint32_t rays_generated;       /* rays that hit the volume bounds */
  uint32_t rays_hit;             /* rays shaded */
  uint32_t traverse_rays[IR_MAX_ITERATIONS];  /* rays entering traversal, per round */
  uint32_t intersect_rays[IR_MAX_ITERATIONS]; /* rays entering intersection, per round */
  double traverse_iter_ms[IR_MAX_ITERATIONS];
  double intersect_iter_ms[IR_MAX_ITERATIONS];
  /* Diagnostic pass (stage_timing), GPU: */
  double host_wait_ms;   /* GPU idle while the host read counts back and launched (round trips) */
  int readbacks;         /* count read-backs (host round trips) of the diagnostic pass */
  double control_ms;     /* per-round control kernels and frame setup of the multi pipeline */
  double kernel_ms;      /* single pipeline: its one kernel */
  double tail_ms;        /* multi pipeline with tail_rays: the tail kernel */
  uint32_t tail_rays;    /* multi pipeline with tail_rays: rays the tail kernel finished */
  uint32_t secondary_rays; /* multi pipeline, lit frames: the occlusion and shadow rays of its
                              secondary phase (the rays of every hit that ends a ray) */
  int secondary_chunks;  /* and the chunks of hits they ran in (docs/render.md) */
  double skip_ms;        /* the last rebuild of the walk's skip distances (made when the isovalues,
                            the walk's cells or the volume change), inside the frame_ms of the
                            frame that made it (skip_rebuilt) */
  bool skip_rebuilt;     /* this frame rebuilt them */
  /* How the timed frame ran (GPU multi pipeline): */
  bool graph;            /* as one CUDA graph (no host round trips) */
  bool graph_resized;    /* with the loop's grids resized on the device each round (all
                            resizes accepted) */
} ir_frame_stats;

/* Renders one frame. `stats` may be NULL. */
ir_status ir_render_frame(ir_renderer *r, const ir_frame_desc *frame, ir_frame_stats *stats,
                          char err[IR_ERR_LEN]);

/* Copies the last frame to host memory: width*height*4 bytes, row 0 at the top. */
ir_status ir_render_read_image(ir_renderer *r, uint8_t *rgba, char err[IR_ERR_LEN]);
/* The last frame's depth, width*height floats, row 0 at the top: the distance from the eye to
 * the surface along the pixel's (unit) ray in world units, +INFINITY where no surface was hit.
 * Distances do not change when camera and volume are moved together, so depths of bricks
 * rendered in their own frames compare directly (sort-last compositing, dist/dist.h). */
ir_status ir_render_read_depth(ir_renderer *r, float *depth, char err[IR_ERR_LEN]);

/* The tail threshold a frame runs with (resolving 0 and IR_TAIL_OFF); 0 = no tail kernel. */
uint32_t ir_frame_tail_rays(const ir_frame_desc *f);
/* The step a persistent frame runs with (resolving 0). */
int ir_frame_step_batches(const ir_frame_desc *f);

/* ---- The volume: statistics, streamed loads, time series -------------------------------------- */
/* ir_volume_compute_stats of the volume frames draw, computed where it lives: on the GPU from its
 * texture (the same counts, data/volume.h; sums in another order), else on the CPU. */
ir_status ir_renderer_volume_stats(ir_renderer *r, ir_volume_stats *out, char err[IR_ERR_LEN]);

/* Slots: up to IR_MAX_SLOTS volumes of the renderer volume's dims and type, kept on the device, of
 * which frames draw one; slot 0 is the volume the renderer was created with. A time series
 * loads the next steps into the other slots while one is drawn. Each slot is filled by
 *   ir_renderer_slot_begin   a sink (ir_volume_desc.sink) that uploads pieces as they are read:
 *                            pinned staging buffers, asynchronous copies (GPU; the CPU needs none)
 *   ir_volume_load           with that sink
 *   ir_renderer_slot_end     the volume read: what the sink did not get is uploaded, its brick
 *                            and cell ranges computed (on the GPU, queued: it returns at once)
 * and drawn after ir_renderer_use_slot (frames on the GPU wait for the slot's upload there). The
 * three calls for one slot may run on another thread than frames, while frames draw another
 * slot; `v` must stay valid while its slot is in use (the CPU renderer reads it). */
#define IR_MAX_SLOTS 4
ir_status ir_renderer_set_slots(ir_renderer *r, int count, char err[IR_ERR_LEN]);
ir_status ir_renderer_slot_begin(ir_renderer *r, int slot, ir_volume_sink *sink, char err[IR_ERR_LEN]);
ir_status ir_renderer_slot_end(ir_renderer *r, int slot, const ir_volume *v, char err[IR_ERR_LEN]);
ir_status ir_renderer_use_slot(ir_renderer *r, int slot, char err[IR_ERR_LEN]);
/* What the slot's last fill cost on the device, in ms (waits for it): the copies still running
 * once the read had ended, and the range computation; 0 on the CPU, which computes the ranges in
 * ir_renderer_slot_end. */
typedef struct ir_slot_times {
  double upload_ms, ranges_ms;
} ir_slot_times;
ir_status ir_renderer_slot_times(ir_renderer *r, int slot, ir_slot_times *out, char err[IR_ERR_LEN]);

/* GPU device only: device pointer to the last frame's RGBA8 pixels (for CUDA-GL interop);
 * NULL on the CPU device. Valid until the next frame or a size change. */
const void *ir_render_device_image(const ir_renderer *r);
/* GPU device only: device pointer to the last frame's depth (as ir_render_read_depth gives it),
 * for compositing on the GPU (dist/); NULL on the CPU device. Valid like the image's. */
const float *ir_render_device_depth(const ir_renderer *r);

#ifdef __cplusplus
}
#endif
#endif
