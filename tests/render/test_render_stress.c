/* Stress test of one GPU renderer: thousands of frames on the same ir_renderer, every frame a new
 * random look (pipeline and its variant, compaction method, isovalues and surfaces, clipping,
 * colouring, refinement, camera, image size, tail threshold, run length, step), each checked:
 *
 *   - the image and the depth equal, bit for bit, the same look drawn by the single kernel on a
 *     second GPU renderer (every pipeline but `plain` draws the same bits, docs/render.md); the
 *     plain caster's coverage is held to test_render_gpu's 0.5 % against the reference's
 *     first visible surface (where it is comparable: no clip box, isovalue near the fractal's own;
 *     see check_plain);
 *   - small frames (and every 16th frame up to 320x240) also against the CPU renderer, with the
 *     tolerances of test_render_gpu (opaque) and test_render_surfaces (translucent, texture
 *     refinement, a clip plane; three times that with isovalues tied with voxel values or with
 *     texture refinement, whose normals the CPU emulates only in part), plus
 *     two pixels of slack for images of a few pixels, and rays generated equal to the CPU's;
 *   - the frame statistics: rays generated <= pixels, hits <= generated, the pixels an ending hit
 *     wrote (alpha 255) <= hits <= pixels with alpha >= 253, per-round counts that only shrink,
 *     the tail kernel's rays within its threshold, whether the frame ran as a CUDA graph;
 *   - now and then an invalid frame first, which must be refused (IR_ERR_INPUT) and change nothing.
 *
 * A first stretch of frames lets the image size grow step by step, so that the per-pixel buffers
 * grow (and the captured graphs go) between frames that reuse the graphs and buffers of others.
 *
 *   test_render_stress [--seed N] [--frames N] [--small] [--only K] [--verbose] [--no-cpu] [FILTER]
 *   test_render_stress --probe        exit 0 with a CUDA device, 77 without
 *
 * --small: a few hundred frames of small images on a small volume (compute-sanitizer).
 * FILTER: only frames whose variant name (printed in the summary, e.g. "paper/jumping-jack/graph")
 * contains it; "host": only frames the host drives (the multi-kernel pipelines' host loop, the
 * single, persistent and plain kernels: no CUDA graph, which racecheck cannot run; see
 * tests/render/CMakeLists.txt). --only K renders frame K alone (its look depends only on the seed,
 * K and the options), on a fresh renderer. --verbose prints every frame's look before it is drawn;
 * --no-cpu leaves out the CPU comparisons.
 * Every frame's look derives from (seed, frame number): a failure prints both, the look and the
 * command that replays the run. Exit 77 without a CUDA device.
 */
#include <cuda_runtime_api.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "render/render.h"
#include "tests/render/render_test_util.h"

/* test_render_gpu's GPU-against-CPU tolerance (opaque frames) and test_render_surfaces' (frames
 * with translucent surfaces), plus an absolute slack for images of a few pixels, where one
 * grazing pixel is already more than the fraction. */
#define MAX_COVER_MISMATCH 0.005
#define MIN_CLOSE_FRACTION 0.99
#define CLOSE_LEVELS 4
#define FAR_LEVELS 8
#define MAX_FAR_FRACTION 0.01
/* Ties seen through translucent layers: each layer at a tied crossing may shade differently, and
 * the differences add up along the ray (seen: 1.4 % of the channels of a 35 % surface at iso 1). */
#define MAX_FAR_FRACTION_TIES 0.03
/* Lit frames (occlusion, shadows): a secondary ray that grazes a surface may find it on one side
 * and not on the other, which moves its pixel by 1/N of the occlusion or the whole shadow. */
#define MAX_FAR_FRACTION_LIT 0.05
/* Texture refinement: the GPU's normals come from the texture unit's filtered differences (8-bit
 * weights and an internal rounding the CPU emulates only in part). Close to the camera, where a
 * voxel covers many pixels, the shading of whole patches moves by 10-20 levels while the depths
 * agree to 1-2 % (seen: 2.0 % of the channels with the camera 2 voxels from the surface, seed 8191
 * frame 1531; 1.1 %, seed 88817 frame 1376). */
#define MAX_FAR_FRACTION_TEXTURE 0.03
#define SMALL_SLACK 2
/* The plain caster steps from each cell's entry: its coverage may differ by 0.5 % (test_render_gpu)
 * and, here, a few pixels more for small images. */
#define PLAIN_SLACK 4

/* ---- Random numbers: splitmix64 seeds a per-frame xorshift64* ---------------------------------- */
static uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

typedef struct rng {
  uint64_t s;
} rng;

static uint64_t rng_next(rng *r) {
  r->s ^= r->s >> 12;
  r->s ^= r->s << 25;
  r->s ^= r->s >> 27;
  return r->s * 0x2545f4914f6cdd1dull;
}
static uint32_t rng_below(rng *r, uint32_t n) { return n ? (uint32_t)((rng_next(r) >> 32) % n) : 0; }
static float rng_unit(rng *r) { return (float)(rng_next(r) >> 40) / (float)(1u << 24); } /* [0, 1) */
static float rng_range(rng *r, float lo, float hi) { return lo + (hi - lo) * rng_unit(r); }
static bool rng_chance(rng *r, float p) { return rng_unit(r) < p; }

/* ---- Options and the scene ------------------------------------------------------------------- */
typedef struct options {
  uint64_t seed;
  int frames;
  bool small;
  bool verbose;
  bool no_cpu; /* --no-cpu: leave out the CPU comparisons (to tell a GPU fault from the tolerance) */
  long only; /* -1: all frames */
  const char *filter;
} options;

typedef struct scene {
  ir_volume volume, color_volume;
  const char *source, *color_source;
  float vmin, vmax;
  float dims[3];
} scene;

/* ---- Looks ------------------------------------------------------------------------------------- */
typedef struct look {
  ir_frame_desc f;
  char name[64];     /* the variant: pipeline/method/driver */
  int size_class;    /* 0 tiny, 1 small, 2 medium, 3 large */
  const char *iso_kind, *clip_kind, *plane_kind, *tail_kind;
  bool empty_by_plane; /* the clip plane removes the whole volume: nothing may be drawn */
  int invalid;         /* >0: an invalid frame of this kind is submitted first */
} look;

typedef struct size_entry {
  int w, h, cls;
} size_entry;

static const size_entry sizes_full[] = {
    {1, 1, 0},     {2, 1, 0},      {1, 2, 0},      {3, 3, 0},       {7, 5, 0},      {5, 7, 0},
    {8, 8, 0},     {9, 7, 0},      {37, 5, 0},     {5, 37, 0},      {1, 1000, 0},   {1000, 1, 0},
    {16, 1, 0},    {63, 65, 0},    {31, 29, 1},    {48, 40, 1},     {64, 64, 1},    {100, 75, 1},
    {127, 129, 1}, {160, 120, 1},  {200, 3, 1},    {256, 256, 2},   {333, 217, 2},  {400, 300, 2},
    {512, 384, 2}, {640, 480, 2},  {720, 405, 2},  {1024, 768, 3},  {1024, 1024, 3}, {1280, 720, 3},
    {1920, 1080, 3}, {1080, 1920, 3}, {4099, 3, 3},
};
static const size_entry sizes_small[] = {
    {1, 1, 0},  {2, 1, 0},  {1, 2, 0},   {3, 3, 0},   {7, 5, 0},   {5, 7, 0},   {8, 8, 0},  {9, 7, 0},
    {37, 5, 0}, {5, 37, 0}, {1, 300, 0}, {300, 1, 0}, {16, 1, 0},  {31, 29, 1}, {48, 40, 1}, {64, 48, 1},
};
/* Weights of the classes (tiny, small, medium, large) in a frame's draw. */
static const float class_weight_full[4] = {0.35f, 0.35f, 0.22f, 0.08f};
static const float class_weight_small[4] = {0.55f, 0.45f, 0.0f, 0.0f};
static const char *const class_names[4] = {"tiny", "small", "medium", "large"};

static void pick_size(rng *r, const options *o, long frame, int *w, int *h, int *cls) {
  const size_entry *list = o->small ? sizes_small : sizes_full;
  size_t count = o->small ? sizeof sizes_small / sizeof sizes_small[0] : sizeof sizes_full / sizeof sizes_full[0];
  const float *weight = o->small ? class_weight_small : class_weight_full;
  size_t most = 0;
  for (size_t i = 0; i < count; i++) most = (size_t)list[i].w * list[i].h > most ? (size_t)list[i].w * list[i].h : most;
  /* The first tenth of the run: the largest size allowed grows from 64 pixels to all, so that
   * the buffers grow in steps between other frames. */
  long ramp = o->frames / 10;
  double limit = (double)most;
  if (frame < ramp) limit = 64.0 * pow((double)most / 64.0, (double)frame / (double)ramp);
  for (int tries = 0; tries < 1000; tries++) {
    float u = rng_unit(r), acc = 0.0f;
    int c = 0;
    for (; c < 3; c++) {
      acc += weight[c];
      if (u < acc) break;
    }
    uint32_t in_class = 0;
    for (size_t i = 0; i < count; i++) in_class += list[i].cls == c;
    if (!in_class) continue;
    uint32_t k = rng_below(r, in_class);
    for (size_t i = 0; i < count; i++)
      if (list[i].cls == c && k-- == 0) {
        if ((double)list[i].w * list[i].h > limit) break;
        *w = list[i].w, *h = list[i].h, *cls = c;
        return;
      }
  }
  *w = list[0].w, *h = list[0].h, *cls = list[0].cls;
}

static float pick_iso(rng *r, const scene *s, const char **kind) {
  float lo = s->vmin, hi = s->vmax, mid = 0.5f * (lo + hi);
  float u = rng_unit(r);
  if (u < 0.55f) {
    *kind = "inside";
    return rng_range(r, lo, hi);
  }
  if (u < 0.70f) {
    *kind = "typical";
    return mid + rng_range(r, -0.15f, 0.15f) * (hi - lo);
  }
  if (u < 0.88f) {
    *kind = "edge";
    const float edges[] = {lo, hi, lo + 0.5f, hi - 0.5f, nextafterf(lo, hi), nextafterf(hi, lo), lo + 1.0f, hi - 1.0f};
    return edges[rng_below(r, sizeof edges / sizeof edges[0])];
  }
  *kind = "outside";
  const float outside[] = {lo - 1.0f, hi + 1.0f, nextafterf(lo, -INFINITY), nextafterf(hi, INFINITY), -1e30f, 1e30f};
  return outside[rng_below(r, sizeof outside / sizeof outside[0])];
}

static float pick_opacity(rng *r) {
  const float edges[] = {0.0f, 1.0f, 1.0f, 0.5f, 0.001f, 0.999f, 0.995f, 0.35f};
  return rng_chance(r, 0.6f) ? edges[rng_below(r, sizeof edges / sizeof edges[0])] : rng_unit(r);
}

static bool is_multi_kernel(ir_pipeline p) { return p == IR_PIPELINE_MULTI || p == IR_PIPELINE_PAPER; }

/* Whether the frame runs as a CUDA graph (what racecheck cannot run). */
static bool runs_as_graph(const ir_frame_desc *f) {
  return is_multi_kernel(f->pipeline) && !f->host_loop && ir_compact_supports_device_n(f->method);
}

static void name_look(look *L) {
  const ir_frame_desc *f = &L->f;
  const char *method = ir_compact_method_get(f->method)->name;
  if (is_multi_kernel(f->pipeline))
    snprintf(L->name, sizeof L->name, "%s/%s/%s", ir_pipeline_name(f->pipeline), method,
             runs_as_graph(f) ? (f->fixed_grids ? "graph-fixed" : "graph") : "host");
  else if (f->pipeline == IR_PIPELINE_PERSISTENT)
    snprintf(L->name, sizeof L->name, "%s/%s", ir_pipeline_name(f->pipeline), method);
  else
    snprintf(L->name, sizeof L->name, "%s", ir_pipeline_name(f->pipeline));
}

static bool look_passes_filter(const look *L, const char *filter) {
  if (!filter) return true;
  if (strcmp(filter, "host") == 0) return !runs_as_graph(&L->f);
  return strstr(L->name, filter) != NULL;
}

/* One random look; it depends only on the generator's state (per frame) and the options. */
static void make_look(rng *r, const options *o, const scene *s, long frame, look *L) {
  memset(L, 0, sizeof *L);
  ir_frame_desc *f = &L->f;
  pick_size(r, o, frame, &f->width, &f->height, &L->size_class);
  uint32_t pixels = (uint32_t)f->width * (uint32_t)f->height;
  uint32_t tiled = (uint32_t)((f->width + 7) / 8) * (uint32_t)((f->height + 7) / 8) * 64u;

  /* Pipeline, method and how the frame is driven. */
  float u = rng_unit(r);
  f->pipeline = u < 0.30f   ? IR_PIPELINE_MULTI
                : u < 0.60f ? IR_PIPELINE_PAPER
                : u < 0.85f ? IR_PIPELINE_PERSISTENT
                : u < 0.93f ? IR_PIPELINE_SINGLE
                            : IR_PIPELINE_PLAIN;
  f->method = (ir_compact_method)rng_below(r, IR_COMPACT_METHOD_COUNT);
  bool force_host = o->filter && strcmp(o->filter, "host") == 0;
  if (is_multi_kernel(f->pipeline)) {
    f->host_loop = force_host || rng_chance(r, 0.3f);
    f->fixed_grids = rng_chance(r, 0.2f);
    /* The tail threshold at its edges: 0 (automatic for multi, none for paper), 1, around the
     * frame's ray counts, the largest value and IR_TAIL_OFF. */
    const uint32_t tails[] = {0u, 1u, pixels - 1u, pixels, pixels + 1u, tiled - 1u, tiled, tiled + 1u,
                              IR_TAIL_OFF - 1u, IR_TAIL_OFF, 3000u, 1u + rng_below(r, pixels)};
    const char *const tail_names[] = {"0", "1", "pixels-1", "pixels", "pixels+1", "rays-1", "rays", "rays+1",
                                      "max", "off", "3000", "random"};
    uint32_t k = rng_below(r, sizeof tails / sizeof tails[0]);
    f->tail_rays = tails[k];
    L->tail_kind = tail_names[k];
  }
  if (f->pipeline != IR_PIPELINE_PAPER && f->pipeline != IR_PIPELINE_PLAIN) {
    const uint32_t runs[] = {0, 0, 1, 2, 3, 1000};
    f->run_bricks = runs[rng_below(r, sizeof runs / sizeof runs[0])];
  }
  if (f->pipeline == IR_PIPELINE_PERSISTENT) {
    const uint32_t steps[] = {0, 0, 1, 2, 5, 64, IR_STEP_BATCHES_MAX};
    f->step_batches = steps[rng_below(r, sizeof steps / sizeof steps[0])];
  }

  /* Surfaces. */
  f->isovalue = pick_iso(r, s, &L->iso_kind);
  if (rng_chance(r, 0.65f)) {
    f->surface_count = 1 + (int)rng_below(r, IR_MAX_SURFACES);
    for (int i = 0; i < f->surface_count; i++) {
      const char *kind;
      ir_surface *sf = &f->surfaces[i];
      sf->isovalue = i == 0 ? f->isovalue : pick_iso(r, s, &kind);
      for (int c = 0; c < 3; c++) sf->color[c] = rng_chance(r, 0.2f) ? (float)rng_below(r, 2) : rng_unit(r);
      sf->opacity = pick_opacity(r);
    }
  }

  /* Clip box (voxel coordinates). */
  u = rng_unit(r);
  if (u < 0.55f) {
    L->clip_kind = "none";
  } else if (u < 0.80f) {
    L->clip_kind = "inside";
    for (int k = 0; k < 3; k++) {
      f->clip_lo[k] = rng_range(r, 0.0f, 0.6f * s->dims[k]);
      f->clip_hi[k] = rng_range(r, f->clip_lo[k] + 1.0f, s->dims[k]);
    }
  } else if (u < 0.87f) {
    L->clip_kind = "overhanging";
    for (int k = 0; k < 3; k++) {
      f->clip_lo[k] = rng_range(r, -20.0f, 0.5f * s->dims[k]);
      f->clip_hi[k] = rng_range(r, 0.5f * s->dims[k], s->dims[k] + 20.0f);
    }
  } else if (u < 0.92f) {
    L->clip_kind = "whole volume"; /* must change no bit */
    for (int k = 0; k < 3; k++) f->clip_hi[k] = s->dims[k];
  } else if (u < 0.96f) {
    L->clip_kind = "thin slab";
    for (int k = 0; k < 3; k++) f->clip_hi[k] = s->dims[k];
    int a = (int)rng_below(r, 3);
    f->clip_lo[a] = rng_range(r, 0.0f, s->dims[a]);
    f->clip_hi[a] = f->clip_lo[a] + (rng_chance(r, 0.5f) ? 0.0f : 0.25f);
  } else {
    L->clip_kind = "outside";
    for (int k = 0; k < 3; k++) {
      f->clip_lo[k] = s->dims[k] + 5.0f;
      f->clip_hi[k] = s->dims[k] + 30.0f;
    }
  }

  /* Clip plane (world coordinates; the volume's spacing is 1). */
  u = rng_unit(r);
  if (u < 0.65f) {
    L->plane_kind = "none";
  } else if (u < 0.90f) {
    L->plane_kind = "through";
    f->clip_plane_on = true;
    float n[3], len = 0.0f;
    do {
      len = 0.0f;
      for (int k = 0; k < 3; k++) {
        n[k] = rng_chance(r, 0.3f) ? 0.0f : rng_range(r, -1.0f, 1.0f);
        len += n[k] * n[k];
      }
    } while (len < 1e-3f);
    float d = 0.0f;
    for (int k = 0; k < 3; k++) {
      f->clip_plane[k] = n[k];
      d -= n[k] * rng_range(r, 0.0f, s->dims[k]);
    }
    f->clip_plane[3] = d;
  } else if (u < 0.96f) {
    L->plane_kind = "removes all";
    L->empty_by_plane = true;
    f->clip_plane_on = true;
    int a = (int)rng_below(r, 3);
    float sign = rng_chance(r, 0.5f) ? 1.0f : -1.0f;
    f->clip_plane[a] = sign;
    /* keeps sign * x_a + d >= 0: the points 50 voxels beyond the volume's far side */
    f->clip_plane[3] = sign > 0 ? -(s->dims[a] + 50.0f) : -50.0f;
  } else {
    L->plane_kind = "keeps all";
    f->clip_plane_on = true;
    f->clip_plane[2] = 1.0f;
    f->clip_plane[3] = 50.0f;
  }

  /* Colour and refinement. */
  u = rng_unit(r);
  f->color_by = u < 0.70f ? IR_COLOR_SURFACE : u < 0.85f ? IR_COLOR_GRADIENT : IR_COLOR_VOLUME;
  f->colormap = (ir_colormap)rng_below(r, IR_COLORMAP_COUNT);
  f->color_range[0] = rng_range(r, -0.5f, 0.5f);
  f->color_range[1] = rng_chance(r, 0.1f) ? f->color_range[0] : f->color_range[0] + rng_range(r, 0.1f, 60.0f);
  f->texture_refine = rng_chance(r, 0.25f);
  f->stage_timing = rng_chance(r, 0.04f);
  /* The sample step, from a generator of its own on (seed, frame) (r does not move), so that
   * every seed's other draws stay as they were; the fixed cases (seed 90417 frame 517, seed 31337
   * frame 320) draw the default step, as when they were found. */
  rng step_rng = {splitmix64(o->seed ^ splitmix64((uint64_t)frame + 1u) ^ 0x5ca1ab1e5eedull) | 1u};
  if (rng_chance(&step_rng, 0.15f)) {
    const float steps[] = {0.25f, 0.35f, 0.8f, 1.0f};
    f->sample_step = steps[rng_below(&step_rng, sizeof steps / sizeof steps[0])];
  }

  /* Camera: an orbit, now and then from inside the volume, along an axis, or another up. */
  float az = rng_range(r, 0.0f, 360.0f), el = rng_range(r, -85.0f, 85.0f);
  if (rng_chance(r, 0.08f)) az = 90.0f * (float)rng_below(r, 4), el = 0.0f;
  float dist = rng_chance(r, 0.1f) ? rng_range(r, 0.15f, 0.45f) : rng_range(r, 0.6f, 2.5f);
  ir_axis up = (ir_axis)rng_below(r, 7);
  f->camera = ir_camera_orbit(&s->volume, az, el, dist, up);
  if (rng_chance(r, 0.3f)) f->camera.fov_y_degrees = rng_range(r, 10.0f, 110.0f);

  /* Ambient occlusion, shadows and the light, where they are drawn. */
  if (f->pipeline != IR_PIPELINE_PAPER && f->pipeline != IR_PIPELINE_PLAIN && rng_chance(r, 0.3f)) {
    const int samples[] = {0, 1, 2, 4, 8, 16};
    f->ao_samples = samples[rng_below(r, sizeof samples / sizeof samples[0])];
    f->ao_radius = rng_chance(r, 0.3f) ? 0.0f : rng_range(r, 0.25f, 48.0f);
    f->shadows = rng_chance(r, 0.5f);
    f->light_on = rng_chance(r, 0.6f);
    f->light[0] = rng_range(r, -180.0f, 180.0f);
    f->light[1] = rng_range(r, -90.0f, 90.0f);
    f->sample_frame = rng_below(r, 8);
    f->secondary = f->pipeline == IR_PIPELINE_PERSISTENT ? (int)rng_below(r, IR_SECONDARY_MODE_COUNT) : 0;
  }

  L->invalid = rng_chance(r, 0.03f) ? 1 + (int)rng_below(r, 7) : 0;
  name_look(L);
}

static void print_look(FILE *out, const look *L) {
  const ir_frame_desc *f = &L->f;
  fprintf(out, "    variant %s; size %dx%d (%s); pipeline %s, method %s, host_loop %d, fixed_grids %d\n", L->name,
          f->width, f->height, class_names[L->size_class], ir_pipeline_name(f->pipeline),
          ir_compact_method_get(f->method)->name, f->host_loop, f->fixed_grids);
  fprintf(out, "    tail_rays %" PRIu32 " (%s; runs with %" PRIu32 "), run_bricks %" PRIu32 ", step_batches %" PRIu32
               ", stage_timing %d, texture_refine %d, sample_step %g\n",
          f->tail_rays, L->tail_kind ? L->tail_kind : "-", ir_frame_tail_rays(f), f->run_bricks, f->step_batches,
          f->stage_timing, f->texture_refine, (double)f->sample_step);
  fprintf(out, "    isovalue %.9g (%s), %d surfaces:", (double)f->isovalue, L->iso_kind, f->surface_count);
  for (int i = 0; i < f->surface_count; i++)
    fprintf(out, " [iso %.9g rgb %.3f,%.3f,%.3f opacity %.9g]", (double)f->surfaces[i].isovalue,
            (double)f->surfaces[i].color[0], (double)f->surfaces[i].color[1], (double)f->surfaces[i].color[2],
            (double)f->surfaces[i].opacity);
  fprintf(out, "\n    clip box (%s) %.9g,%.9g,%.9g .. %.9g,%.9g,%.9g; clip plane (%s) %d: %.9g,%.9g,%.9g,%.9g\n",
          L->clip_kind, (double)f->clip_lo[0], (double)f->clip_lo[1], (double)f->clip_lo[2], (double)f->clip_hi[0],
          (double)f->clip_hi[1], (double)f->clip_hi[2], L->plane_kind, f->clip_plane_on, (double)f->clip_plane[0],
          (double)f->clip_plane[1], (double)f->clip_plane[2], (double)f->clip_plane[3]);
  fprintf(out, "    colour by %s, map %s, range %.9g..%.9g\n", ir_color_source_name(f->color_by),
          ir_colormap_name(f->colormap), (double)f->color_range[0], (double)f->color_range[1]);
  fprintf(out, "    ao %d rays, radius %.9g, shadows %d, light %d: %.9g,%.9g, sample frame %" PRIu32 ", secondary %d\n",
          f->ao_samples, (double)f->ao_radius, f->shadows, f->light_on, (double)f->light[0], (double)f->light[1],
          f->sample_frame, f->secondary);
  fprintf(out, "    camera eye %.9g,%.9g,%.9g target %.9g,%.9g,%.9g up %.9g,%.9g,%.9g fov %.9g\n", (double)f->camera.eye[0],
          (double)f->camera.eye[1], (double)f->camera.eye[2], (double)f->camera.target[0], (double)f->camera.target[1],
          (double)f->camera.target[2], (double)f->camera.up[0], (double)f->camera.up[1], (double)f->camera.up[2],
          (double)f->camera.fov_y_degrees);
  if (L->invalid) fprintf(out, "    preceded by an invalid frame of kind %d\n", L->invalid);
}

/* ---- Checks ------------------------------------------------------------------------------------ */
typedef struct buffers {
  uint8_t *img, *ref, *cpu, *plain_ref, *scratch;
  float *depth, *ref_depth, *cpu_depth;
  size_t pixels;
} buffers;

typedef struct tally {
  char names[96][64];
  long counts[96];
  int name_count;
  long per_class[4];
  long exact_compared, plain_compared, cpu_compared, invalid_refused, graph_frames, resize_missed, stage_timed;
  long failures;
  size_t max_differing;      /* pixels differing from the reference, worst frame (0 when all pass) */
  int max_cpu_levels;        /* worst channel difference against the CPU, over pixels hit on both */
  double max_cpu_cover;      /* worst coverage difference against the CPU, fraction */
  double max_plain_cover;    /* worst plain-caster coverage difference, fraction */
  double gpu_ms, total_ms;
} tally;

static void tally_name(tally *t, const char *name) {
  for (int i = 0; i < t->name_count; i++)
    if (strcmp(t->names[i], name) == 0) {
      t->counts[i]++;
      return;
    }
  if (t->name_count < 96) {
    snprintf(t->names[t->name_count], sizeof t->names[0], "%s", name);
    t->counts[t->name_count++] = 1;
  }
}

/* Bit-for-bit: the image and depth against the reference's. Returns the pixels that differ. */
static size_t compare_exact(const buffers *b, size_t n, char *why, size_t len) {
  size_t differ = 0, first = 0;
  for (size_t i = 0; i < n; i++) {
    bool d = memcmp(b->img + 4 * i, b->ref + 4 * i, 4) != 0 || memcmp(&b->depth[i], &b->ref_depth[i], sizeof(float)) != 0;
    if (d && differ++ == 0) first = i;
  }
  if (differ)
    snprintf(why, len,
             "%zu of %zu pixels differ from the single kernel's (image or depth); first at index %zu: rgba "
             "%u,%u,%u,%u depth %.9g, reference rgba %u,%u,%u,%u depth %.9g",
             differ, n, first, b->img[4 * first], b->img[4 * first + 1], b->img[4 * first + 2], b->img[4 * first + 3],
             (double)b->depth[first], b->ref[4 * first], b->ref[4 * first + 1], b->ref[4 * first + 2],
             b->ref[4 * first + 3], (double)b->ref_depth[first]);
  return differ;
}

/* Within the GPU-against-CPU tolerance (see the top). `envelope`: channels the CPU's own image
 * moves by more than FAR_LEVELS when the tied isovalues are nudged (tie_envelope); a loose frame
 * may differ by that many. */
static bool close_to_cpu(const uint8_t *gpu, const uint8_t *cpu, size_t n, bool translucent, bool ties, bool lit,
                         bool texture, size_t envelope, tally *t, char *why, size_t len) {
  util_image_diff d = util_image_diff_of(gpu, cpu, n, CLOSE_LEVELS, FAR_LEVELS);
  size_t cover_diff = d.cover_diff, both = d.both, close = d.close, far = d.far;
  int worst = d.worst;
  double cover = (double)cover_diff / (double)n;
  if (!translucent && worst > t->max_cpu_levels) t->max_cpu_levels = worst;
  if (cover > t->max_cpu_cover) t->max_cpu_cover = cover;
  bool ok;
  if (translucent) { /* test_render_surfaces: at most 1 % of the channels off by more than 8 levels */
    double allowed = (lit       ? MAX_FAR_FRACTION_LIT
                      : ties    ? MAX_FAR_FRACTION_TIES
                      : texture ? MAX_FAR_FRACTION_TEXTURE
                                : MAX_FAR_FRACTION) * 4.0 * (double)n;
    if ((double)envelope > allowed) allowed = (double)envelope;
    ok = (double)far <= allowed + 4.0 * SMALL_SLACK;
  }
  else
    ok = (double)cover_diff <= MAX_COVER_MISMATCH * (double)n + SMALL_SLACK &&
         (double)(both - close) <= (1.0 - MIN_CLOSE_FRACTION) * (double)both + SMALL_SLACK;
  if (!ok)
    snprintf(why, len,
             "against the CPU (%s tolerance): coverage differs on %zu of %zu pixels; %zu of %zu common hits "
             "within %d levels (worst %d); %zu channels off by more than %d (the CPU's own under a nudge of the tied "
             "isovalues: %zu)",
             translucent ? (lit ? "lit" : ties ? "tie" : texture ? "texture" : "translucent or plane") : "opaque", cover_diff, n, close, both, CLOSE_LEVELS, worst, far, FAR_LEVELS, envelope);
  return ok;
}

/* --verbose: the pixels where the GPU and the CPU differ by more than CLOSE_LEVELS or in coverage,
 * with both depths, to tell a crossing moved along the ray from a different surface hit. */
static void print_cpu_differences(FILE *out, const buffers *b, size_t n) {
  int shown = 0;
  for (size_t i = 0; i < n && shown < 40; i++) {
    int worst = 0;
    for (int c = 0; c < 4; c++) {
      int e = abs((int)b->img[4 * i + c] - (int)b->cpu[4 * i + c]);
      worst = e > worst ? e : worst;
    }
    if (worst <= CLOSE_LEVELS) continue;
    fprintf(out, "    pixel %zu: gpu rgba %u,%u,%u,%u depth %.9g | cpu rgba %u,%u,%u,%u depth %.9g\n", i, b->img[4 * i],
            b->img[4 * i + 1], b->img[4 * i + 2], b->img[4 * i + 3], (double)b->depth[i], b->cpu[4 * i],
            b->cpu[4 * i + 1], b->cpu[4 * i + 2], b->cpu[4 * i + 3], (double)b->cpu_depth[i]);
    shown++;
  }
}

static size_t count_alpha_at_least(const uint8_t *img, size_t n, int a) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) k += img[4 * i + 3] >= a;
  return k;
}

static bool frame_translucent(const ir_frame_desc *f) {
  for (int i = 0; i < f->surface_count; i++)
    if (f->surfaces[i].opacity > 0.0f && f->surfaces[i].opacity < 1.0f) return true;
  return false;
}

/* An isovalue at (or within 1/100 of) a whole number ties with voxel values of the integer
 * volumes: the crossing then sits on a voxel, where the GPU's and the CPU's last bits of float
 * arithmetic pick the cell and so the normal (the extraction's tests treat ties apart too). */
static bool isovalue_ties(float iso) { return fabsf(iso - nearbyintf(iso)) <= 0.01f; }

static bool frame_has_ties(const ir_frame_desc *f) {
  if (isovalue_ties(f->isovalue)) return true;
  for (int i = 0; i < f->surface_count; i++)
    if (isovalue_ties(f->surfaces[i].isovalue)) return true;
  return false;
}

/* How far a frame with ties is from its neighbours: the channels of the CPU's image (cpu, just
 * drawn) that move by more than FAR_LEVELS when each tied isovalue is moved by one part in 10^6
 * up, and then down (the larger count). That is about the texture unit's rounding of a sample,
 * which the CPU emulates only in part, so a GPU image may differ as much. Where a tied surface
 * bounds a plateau of voxels at exactly its value (an isovalue of 1 over a volume whose
 * background is 0 and 1), the crossings jump from one side of the plateau to the other, and a
 * translucent stack shows it: seed 31337, frame 320, three translucent surfaces, one at iso 1 on
 * the uint8 scene, AO 4: the nudge up moves 306 of 740 channels on the CPU, the GPU differed on
 * 68. 0 on a renderer failure (the comparison then keeps its own rule). */
static size_t tie_envelope(ir_renderer *cpu_renderer, const ir_frame_desc *f, const uint8_t *cpu, uint8_t *scratch,
                           size_t n) {
  size_t most = 0;
  for (int sign = -1; sign <= 1; sign += 2) {
    ir_frame_desc g = *f;
    const float k = 1.0f + (float)sign * 1e-6f;
    if (isovalue_ties(g.isovalue)) g.isovalue *= k;
    for (int i = 0; i < g.surface_count; i++)
      if (isovalue_ties(g.surfaces[i].isovalue)) g.surfaces[i].isovalue *= k;
    char err[IR_ERR_LEN] = "";
    if (ir_render_frame(cpu_renderer, &g, NULL, err) != IR_OK || ir_render_read_image(cpu_renderer, scratch, err) != IR_OK)
      return 0;
    util_image_diff d = util_image_diff_of(scratch, cpu, n, CLOSE_LEVELS, FAR_LEVELS);
    if (d.far > most) most = d.far;
  }
  return most;
}

/* An isovalue in the outer tenth of the volume's value range: there the surface breaks into
 * blobs around local extrema, many thinner than a step, whose samples lie within the texture
 * unit's rounding of the isovalue. Whether a ray meets such a blob or the surface behind it is
 * then decided by that rounding, which the CPU does not reproduce (seed 90417, frame 517: a
 * 1x1000 column at 237.3 of 0..255, 8 of 600 pixels hit surfaces tens of voxels apart on the two,
 * 2 more a blob on one only). Those frames are held to the translucent frames' rule. */
static bool frame_thin(const ir_frame_desc *f, const scene *s) {
  float span = s->vmax - s->vmin, lo = s->vmin + 0.1f * span, hi = s->vmax - 0.1f * span;
  if (f->surface_count == 0) return !(f->isovalue >= lo && f->isovalue <= hi);
  for (int i = 0; i < f->surface_count; i++)
    if (f->surfaces[i].opacity > 0.0f && !(f->surfaces[i].isovalue >= lo && f->surfaces[i].isovalue <= hi)) return true;
  return false;
}

/* The statistics' own consistency (see the top). */
static bool check_stats(const look *L, const ir_frame_stats *s, const uint8_t *img, tally *t, char *why, size_t len) {
  const ir_frame_desc *f = &L->f;
  size_t n = (size_t)f->width * (size_t)f->height;
  size_t full = count_alpha_at_least(img, n, 255), ended_max = count_alpha_at_least(img, n, 253);
  if (!(s->frame_ms >= 0.0) || !isfinite(s->frame_ms)) {
    snprintf(why, len, "frame_ms %g", s->frame_ms);
    return false;
  }
  if (f->stage_timing) {
    t->stage_timed++;
    if (is_multi_kernel(f->pipeline) && s->readbacks < 1) {
      snprintf(why, len, "stage timing: %d read-backs", s->readbacks);
      return false;
    }
    if (!is_multi_kernel(f->pipeline) && !(s->kernel_ms > 0.0)) {
      snprintf(why, len, "stage timing: kernel_ms %g", s->kernel_ms);
      return false;
    }
  }
  if (f->pipeline == IR_PIPELINE_SINGLE || f->pipeline == IR_PIPELINE_PLAIN) return true;
  if (s->rays_generated > n || s->rays_hit > s->rays_generated) {
    snprintf(why, len, "%u rays generated, %u hit, for %zu pixels", s->rays_generated, s->rays_hit, n);
    return false;
  }
  if (s->rays_hit < full || s->rays_hit > ended_max) {
    snprintf(why, len, "%u rays hit, but %zu pixels have alpha 255 and %zu alpha >= 253", s->rays_hit, full, ended_max);
    return false;
  }
  if (L->empty_by_plane && s->rays_generated != 0) {
    snprintf(why, len, "%u rays generated though the clip plane removes the volume", s->rays_generated);
    return false;
  }
  if (!is_multi_kernel(f->pipeline)) return true;
  int it = s->iterations;
  if (it < 0 || (s->rays_generated == 0 && it != 0)) {
    snprintf(why, len, "%d rounds for %u rays generated", it, s->rays_generated);
    return false;
  }
  if (it > 0 && s->traverse_rays[0] != s->rays_generated) {
    snprintf(why, len, "round 0 traversed %u rays, %u generated", s->traverse_rays[0], s->rays_generated);
    return false;
  }
  for (int k = 0; k < IR_MAX_ITERATIONS; k++) {
    bool bad = k < it ? s->intersect_rays[k] > s->traverse_rays[k] || (k > 0 && s->traverse_rays[k] > s->intersect_rays[k - 1])
                      : s->intersect_rays[k] != 0 || s->traverse_rays[k] != 0;
    if (bad) {
      snprintf(why, len, "round %d of %d: %u rays traversed, %u intersected (the round before: %u intersected)", k, it,
               s->traverse_rays[k], s->intersect_rays[k], k ? s->intersect_rays[k - 1] : 0u);
      return false;
    }
  }
  uint32_t tail = ir_frame_tail_rays(f);
  if ((tail == 0 && s->tail_rays != 0) || (tail > 0 && s->tail_rays > tail) || s->tail_rays > s->rays_generated) {
    snprintf(why, len, "the tail kernel finished %u rays; threshold %u, %u generated", s->tail_rays, tail,
             s->rays_generated);
    return false;
  }
  bool graph = runs_as_graph(f);
  if (!graph && tail > 0 && s->rays_generated <= tail && (it != 0 || s->tail_rays != s->rays_generated)) {
    snprintf(why, len, "host loop, %u rays at most the tail threshold %u: %d rounds, tail kernel %u rays",
             s->rays_generated, tail, it, s->tail_rays);
    return false;
  }
  if (s->graph != graph) {
    snprintf(why, len, "ran %s a CUDA graph, expected %s", s->graph ? "as" : "without", graph ? "one" : "none");
    return false;
  }
  if (graph) {
    t->graph_frames++;
    if (!f->fixed_grids && !s->graph_resized) t->resize_missed++;
  }
  return true;
}

/* A frame with an invalid field: must be refused with IR_ERR_INPUT. */
static bool submit_invalid(ir_renderer *r, const look *L, char *why, size_t len) {
  ir_frame_desc bad = L->f;
  switch (L->invalid) {
  case 1: bad.width = 0; break;
  case 2: bad.isovalue = NAN, bad.surface_count = 0; break;
  case 3: bad.surface_count = IR_MAX_SURFACES + 1; break;
  case 4: bad.method = (ir_compact_method)IR_COMPACT_METHOD_COUNT; break;
  case 5: bad.step_batches = IR_STEP_BATCHES_MAX + 1; break;
  case 6: bad.ao_samples = IR_AO_MAX_SAMPLES + 1; break;
  default: bad.clip_plane_on = true, bad.clip_plane[0] = bad.clip_plane[1] = bad.clip_plane[2] = 0.0f; break;
  }
  char err[IR_ERR_LEN] = "";
  ir_status st = ir_render_frame(r, &bad, NULL, err);
  if (st != IR_ERR_INPUT) {
    snprintf(why, len, "invalid frame of kind %d: status %d (%s), expected IR_ERR_INPUT", L->invalid, (int)st, err);
    return false;
  }
  return true;
}

/* ---- The run ----------------------------------------------------------------------------------- */
typedef struct renderers {
  ir_renderer *gpu, *ref, *cpu;
} renderers;

static bool render_read(ir_renderer *r, const ir_frame_desc *f, ir_frame_stats *s, uint8_t *img, float *depth,
                        const char *who, char *why, size_t len) {
  char err[IR_ERR_LEN] = "";
  ir_status st = ir_render_frame(r, f, s, err);
  if (st == IR_OK) st = ir_render_read_image(r, img, err);
  if (st == IR_OK && depth) st = ir_render_read_depth(r, depth, err);
  if (st != IR_OK) snprintf(why, len, "%s: %s", who, err);
  return st == IR_OK;
}

static bool cpu_wanted(const options *o, long frame, size_t n) {
  return n <= 64 * 64 || (frame % 16 == 0 && n <= 320 * 240) || (o->small && n <= 64 * 48);
}

/* The plain caster against the reference's first visible surface, opaque, with no clip plane
 * (plain ignores the plane and draws the lowest visible isovalue). Compared only without a clip
 * box (plain clips at the box, the others test the segments straddling it whole) and for
 * isovalues near the fractal's own 127.5 (at others its walls get thinner than a step, where
 * plain's steps from each cell's entry and the grid's find different walls); otherwise only
 * run. Returns false with `why` on a failure; *compared tells whether it compared. */
static bool check_plain(renderers *R, const look *L, const scene *s, buffers *b, tally *t, bool *compared, char *why,
                        size_t len) {
  const ir_frame_desc *f = &L->f;
  size_t n = (size_t)f->width * f->height;
  *compared = false;
  float lowest = INFINITY;
  if (f->surface_count == 0) lowest = f->isovalue;
  for (int i = 0; i < f->surface_count; i++)
    if (f->surfaces[i].opacity > 0.0f && f->surfaces[i].isovalue < lowest) lowest = f->surfaces[i].isovalue;
  bool boxed = false;
  for (int k = 0; k < 3; k++) boxed = boxed || f->clip_lo[k] != 0.0f || f->clip_hi[k] != 0.0f;
  size_t cover = util_coverage(b->img, f->width, f->height);
  if (!isfinite(lowest)) {
    if (cover == 0) return true;
    snprintf(why, len, "plain caster drew %zu pixels with no visible surface", cover);
    return false;
  }
  float mid = 0.5f * (s->vmin + s->vmax), span = s->vmax - s->vmin;
  if (boxed || fabsf(lowest - mid) > 0.12f * span) return true;
  ir_frame_desc g = *f;
  g.pipeline = IR_PIPELINE_SINGLE;
  g.surface_count = 0;
  g.isovalue = lowest;
  g.clip_plane_on = false;
  g.color_by = IR_COLOR_SURFACE;
  g.stage_timing = false;
  if (!render_read(R->ref, &g, NULL, b->plain_ref, NULL, "reference for the plain caster", why, len)) return false;
  size_t diff = 0;
  for (size_t i = 0; i < n; i++) diff += (b->img[4 * i + 3] == 255) != (b->plain_ref[4 * i + 3] == 255);
  *compared = true;
  double frac = (double)diff / (double)n;
  if (frac > t->max_plain_cover) t->max_plain_cover = frac;
  if ((double)diff > MAX_COVER_MISMATCH * (double)n + PLAIN_SLACK) {
    snprintf(why, len, "plain caster coverage differs from the single kernel's on %zu of %zu pixels", diff, n);
    return false;
  }
  return true;
}

static double now_ms(void) {
  struct timespec ts;
  timespec_get(&ts, TIME_UTC); /* C11; a wall clock is good enough for the summary */
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void print_replay(FILE *out, const options *o, long frame) {
  fprintf(out, "  replay: test_render_stress --seed %" PRIu64 " --frames %d%s%s%s%s   (this frame alone: add --only %ld)\n",
          o->seed, o->frames, o->small ? " --small" : "", o->no_cpu ? " --no-cpu" : "", o->filter ? " " : "",
          o->filter ? o->filter : "", frame);
}

/* One frame: draws and checks it. Returns 0 when it passed, 1 on a mismatch, 2 when the renderer
 * failed (a GPU error: the run stops, the context may be gone). */
static int run_frame(renderers *R, const options *o, const scene *s, long frame, const look *L, buffers *b,
                     tally *t) {
  const ir_frame_desc *f = &L->f;
  size_t n = (size_t)f->width * (size_t)f->height;
  char why[1024] = "";
  int result = 0;
  if (o->verbose) {
    printf("frame %ld: %s %dx%d\n", frame, L->name, f->width, f->height);
    print_look(stdout, L);
    fflush(stdout);
  }
  if (L->invalid) {
    if (!submit_invalid(R->gpu, L, why, sizeof why)) result = 1;
    else t->invalid_refused++;
  }
  ir_frame_stats st;
  double t0 = now_ms();
  if (result == 0 && !render_read(R->gpu, f, &st, b->img, b->depth, "the stressed renderer", why, sizeof why))
    result = 2;
  t->gpu_ms += now_ms() - t0;
  if (result == 0 && ir_render_device_image(R->gpu) == NULL) {
    snprintf(why, sizeof why, "no device image after a frame");
    result = 1;
  }
  if (result == 0 && !check_stats(L, &st, b->img, t, why, sizeof why)) result = 1;
  /* (plain ignores the clip plane) */
  if (result == 0 && L->empty_by_plane && f->pipeline != IR_PIPELINE_PLAIN &&
      util_coverage(b->img, f->width, f->height) != 0) {
    snprintf(why, sizeof why, "%zu pixels drawn though the clip plane removes the volume",
             util_coverage(b->img, f->width, f->height));
    result = 1;
  }
  if (result == 0 && f->pipeline == IR_PIPELINE_PLAIN) {
    bool compared = false;
    if (!check_plain(R, L, s, b, t, &compared, why, sizeof why)) result = 1;
    t->plain_compared += compared;
  } else if (result == 0) {
    ir_frame_desc g = *f;
    g.pipeline = IR_PIPELINE_SINGLE;
    g.host_loop = g.fixed_grids = g.stage_timing = false;
    g.tail_rays = 0;
    g.run_bricks = 0;
    g.step_batches = 0;
    g.method = IR_COMPACT_INK_COMPACT;
    if (!render_read(R->ref, &g, NULL, b->ref, b->ref_depth, "the reference renderer", why, sizeof why)) {
      result = 2;
    } else {
      size_t d = compare_exact(b, n, why, sizeof why);
      t->exact_compared++;
      if (d > t->max_differing) t->max_differing = d;
      if (d) result = 1;
    }
  }
  /* The CPU against the image just compared with the reference (not the plain caster's, which
   * differs by design). */
  if (result == 0 && !o->no_cpu && f->pipeline != IR_PIPELINE_PLAIN && cpu_wanted(o, frame, n)) {
    ir_frame_desc g = *f;
    g.pipeline = IR_PIPELINE_SINGLE;
    g.stage_timing = false;
    ir_frame_stats cs;
    if (!render_read(R->cpu, &g, &cs, b->cpu, b->cpu_depth, "the CPU renderer", why, sizeof why)) {
      result = 1;
    } else {
      t->cpu_compared++;
      /* Texture refinement: the CPU emulates the texture unit's 8-bit weights, not its internal
       * rounding, so edge pixels move; a clip plane's cut moves the crossings beside it by the
       * last bits of float arithmetic; ties (frame_has_ties) move shading. Those frames are held
       * to test_render_surfaces' rule (at most 1 % of the channels off by more than 8 levels; 3 %
       * with ties or texture refinement), as translucent frames are; a frame with ties to as many
       * as the CPU's own image moves under a nudge of the tied isovalues, if that is more. */
      bool ties = frame_has_ties(f);
      /* Lit frames too: an occlusion or shadow ray that grazes a surface can find its crossing on
       * one side and not the other, which moves that pixel's occlusion by 1/N. */
      bool lit = f->ao_samples > 0 || f->shadows || f->light_on;
      bool loose = frame_translucent(f) || f->texture_refine || f->clip_plane_on || ties || lit || frame_thin(f, s);
      size_t envelope = ties ? tie_envelope(R->cpu, &g, b->cpu, b->scratch, n) : 0;
      if (!close_to_cpu(b->img, b->cpu, n, loose, ties, lit, f->texture_refine, envelope, t, why, sizeof why)) {
        result = 1;
        if (o->verbose) print_cpu_differences(stderr, b, n);
      }
      if (result == 0 && f->pipeline != IR_PIPELINE_SINGLE && cs.rays_generated != st.rays_generated) {
        snprintf(why, sizeof why, "%u rays generated, the CPU's %u", st.rays_generated, cs.rays_generated);
        result = 1;
      }
    }
  }
  if (result) {
    t->failures++;
    fprintf(stderr, "FAILED: seed %" PRIu64 ", frame %ld (%s %dx%d): %s\n", o->seed, frame, L->name, f->width,
            f->height, why);
    print_look(stderr, L);
    print_replay(stderr, o, frame);
  }
  return result;
}

static int load_scene(const options *o, scene *s) {
  memset(s, 0, sizeof *s);
  s->source = o->small ? "builtin:fractal:40" : "builtin:fractal:88";
  s->color_source = o->small ? "builtin:marschner-lobb:40" : "builtin:marschner-lobb:88";
  if (!util_load(s->source, &s->volume)) return 0;
  if (!util_load(s->color_source, &s->color_volume)) return 0;
  s->vmin = (float)s->volume.value_min;
  s->vmax = (float)s->volume.value_max;
  for (int k = 0; k < 3; k++) s->dims[k] = (float)s->volume.dims[k];
  return 1;
}

static int make_renderers(const scene *s, renderers *R) {
  char err[IR_ERR_LEN] = "";
  memset(R, 0, sizeof *R);
  ir_renderer_desc gd = {.device = IR_DEVICE_GPU, .volume = &s->volume};
  ir_renderer_desc cd = {.device = IR_DEVICE_CPU, .volume = &s->volume};
  if (ir_renderer_create(&gd, &R->gpu, err) != IR_OK || ir_renderer_set_color_volume(R->gpu, &s->color_volume, err) != IR_OK ||
      ir_renderer_create(&gd, &R->ref, err) != IR_OK || ir_renderer_set_color_volume(R->ref, &s->color_volume, err) != IR_OK ||
      ir_renderer_create(&cd, &R->cpu, err) != IR_OK || ir_renderer_set_color_volume(R->cpu, &s->color_volume, err) != IR_OK) {
    fprintf(stderr, "creating the renderers: %s\n", err);
    return 0;
  }
  return 1;
}

static void destroy_renderers(renderers *R) {
  ir_renderer_destroy(R->gpu);
  ir_renderer_destroy(R->ref);
  ir_renderer_destroy(R->cpu);
  memset(R, 0, sizeof *R);
}

/* The frame's look: its own generator from (seed, frame), redrawn until it passes the filter. */
static bool look_of(const options *o, const scene *s, long frame, look *L) {
  rng r = {splitmix64(o->seed ^ splitmix64((uint64_t)frame + 1u)) | 1u};
  for (int tries = 0; tries < 10000; tries++) {
    make_look(&r, o, s, frame, L);
    if (look_passes_filter(L, o->filter)) return true;
  }
  return false;
}

static void print_summary(const options *o, const tally *t, long frames) {
  printf("summary: seed %" PRIu64 ", %ld frames in %.1f s (%.1f s in the stressed renderer's frames and read-backs)\n",
         o->seed, frames, t->total_ms / 1e3, t->gpu_ms / 1e3);
  printf("  variants:");
  for (int i = 0; i < t->name_count; i++) printf("%s %s %ld", i % 6 ? "," : "\n   ", t->names[i], t->counts[i]);
  printf("\n  sizes: %ld tiny, %ld small, %ld medium, %ld large\n", t->per_class[0], t->per_class[1], t->per_class[2],
         t->per_class[3]);
  printf("  compared: %ld bit for bit with the single kernel (max %zu pixels differing), %ld plain-caster coverages "
         "(max %.4f %%), %ld with the CPU (max coverage difference %.4f %%, max %d levels on opaque hits)\n",
         t->exact_compared, t->max_differing, t->plain_compared, 100.0 * t->max_plain_cover, t->cpu_compared,
         100.0 * t->max_cpu_cover, t->max_cpu_levels);
  printf("  %ld graph frames (%ld without device-side resizing), %ld stage-timed, %ld invalid frames refused\n",
         t->graph_frames, t->resize_missed, t->stage_timed, t->invalid_refused);
  printf("stress: %s (%ld failed frames)\n", t->failures ? "FAILED" : "ok", t->failures);
}

static void usage(void) {
  fprintf(stderr, "usage: test_render_stress [--seed N] [--frames N] [--small] [--only K] [--verbose] [--no-cpu] [FILTER]\n"
                  "       test_render_stress --probe\n");
}

int main(int argc, char **argv) {
  int devices = 0;
  cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) { /* as tests/check.h's check_skip_all: CTest's skip */
    printf("SKIPPED: no CUDA device: the GPU stress test needs one\n");
    return 77;
  }
  options o = {.seed = 24, .frames = -1, .only = -1};
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--probe") == 0) return 0;
    if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) o.seed = strtoull(argv[++i], NULL, 0);
    else if (strcmp(argv[i], "--frames") == 0 && i + 1 < argc) o.frames = atoi(argv[++i]);
    else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) o.only = atol(argv[++i]);
    else if (strcmp(argv[i], "--small") == 0) o.small = true;
    else if (strcmp(argv[i], "--verbose") == 0) o.verbose = true;
    else if (strcmp(argv[i], "--no-cpu") == 0) o.no_cpu = true;
    else if (argv[i][0] != '-' && !o.filter) o.filter = argv[i];
    else {
      usage();
      return 2;
    }
  }
  if (o.frames < 0) o.frames = o.small ? 200 : 3000;
  if (o.small) o.verbose = true; /* under a sanitizer: its report follows the frame it is about */
  printf("seed %" PRIu64 " (--seed N), %d frames (--frames N)%s%s%s\n", o.seed, o.frames, o.small ? ", small" : "",
         o.filter ? ", filter " : "", o.filter ? o.filter : "");
  fflush(stdout);

  scene s;
  if (!load_scene(&o, &s)) return 1;
  renderers R;
  if (!make_renderers(&s, &R)) return 1;
  size_t most = 0;
  const size_entry *list = o.small ? sizes_small : sizes_full;
  size_t count = o.small ? sizeof sizes_small / sizeof sizes_small[0] : sizeof sizes_full / sizeof sizes_full[0];
  for (size_t i = 0; i < count; i++) most = (size_t)list[i].w * list[i].h > most ? (size_t)list[i].w * list[i].h : most;
  buffers b = {.pixels = most};
  b.img = malloc(most * 4), b.ref = malloc(most * 4), b.cpu = malloc(most * 4), b.plain_ref = malloc(most * 4);
  b.scratch = malloc(most * 4);
  b.depth = malloc(most * sizeof(float)), b.ref_depth = malloc(most * sizeof(float));
  b.cpu_depth = malloc(most * sizeof(float));
  if (!b.img || !b.ref || !b.cpu || !b.plain_ref || !b.scratch || !b.depth || !b.ref_depth || !b.cpu_depth) {
    fprintf(stderr, "out of host memory\n");
    return 1;
  }
  static tally t;
  double start = now_ms();
  long done = 0;
  long first = o.only >= 0 ? o.only : 0, last = o.only >= 0 ? o.only + 1 : o.frames;
  for (long frame = first; frame < last; frame++) {
    look L;
    if (!look_of(&o, &s, frame, &L)) {
      fprintf(stderr, "no look passes the filter '%s'\n", o.filter);
      return 1;
    }
    tally_name(&t, L.name);
    t.per_class[L.size_class]++;
    int r = run_frame(&R, &o, &s, frame, &L, &b, &t);
    done++;
    if (r == 2 || t.failures >= 5) {
      if (r == 2) fprintf(stderr, "stopping: the renderer failed\n");
      else fprintf(stderr, "stopping after %ld failed frames\n", t.failures);
      break;
    }
    if (!o.verbose && (frame + 1) % 500 == 0) {
      printf("  %ld frames, %.1f s\n", frame + 1, (now_ms() - start) / 1e3);
      fflush(stdout);
    }
  }
  t.total_ms = now_ms() - start;
  print_summary(&o, &t, done);
  destroy_renderers(&R);
  free(b.img), free(b.ref), free(b.cpu), free(b.plain_ref), free(b.scratch), free(b.depth), free(b.ref_depth), free(b.cpu_depth);
  ir_volume_free(&s.volume);
  ir_volume_free(&s.color_volume);
  return t.failures ? 1 : 0;
}
