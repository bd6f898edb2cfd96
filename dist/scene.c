/* A rank's part of a distributed frame: its brick of the volume, a renderer for it, and the
 * frame loop: render the brick with the camera moved into its frame and the clip box around
 * what it owns, read colour and depth back, pack them, and MIN-reduce onto rank 0 (translucent
 * surfaces: blend them in the bricks' visibility order, ir_dist_composite_over).
 *
 * Moving the camera: a brick loaded from voxel `load_lo` on is a volume of its own whose
 * voxel (0,0,0) is voxel load_lo of the whole volume, so the whole volume's world space maps
 * onto the brick's by subtracting load_lo * spacing from the eye and the target. A translation
 * leaves every ray's direction and its parameter t unchanged, so hit distances (the depths)
 * of different bricks compare directly. The kernels are untouched: the translation is done
 * here and the clip box rides in ir_frame_desc. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dist/dist_internal.h"
#include "render/ray_math.cuh"

/* The bands' cost model of one view (dist.h, ir_dist_bands_balance). A view's rows cost what its
 * rays meet, so each view a run draws again (camera, size and surfaces: an orbit's come round
 * every few frames; a still window draws one) keeps its own model, up to BAND_VIEWS of them
 * (all made with the scene), the least recently drawn making way; a new view starts from the
 * model of the last one drawn (a moving camera's next view looks much like its last). */
#define BAND_VIEWS 16
typedef struct band_model {
  uint64_t view;      /* the camera and frame size it was learned on (view_key) */
  unsigned long used; /* when it was last drawn (band_clock) */
  double *cuts, *density;
} band_model;

static bool band_model_make(band_model *m, int ranks) {
  m->cuts = malloc((size_t)(ranks + 1) * sizeof *m->cuts);
  m->density = malloc((size_t)ir_dist_band_slots(ranks) * sizeof *m->density);
  if (!m->cuts || !m->density) {
    free(m->cuts);
    free(m->density);
    m->cuts = m->density = NULL;
    return false;
  }
  ir_dist_bands_even(ranks, m->cuts, m->density);
  return true;
}

struct ir_dist_scene {
  ir_dist *d;
  ir_volume whole; /* header only */
  ir_volume brick_volume;
  ir_volume color_brick; /* desc->color_source: the same brick of the colour volume */
  ir_dist_layout layout;
  ir_dist_brick brick;
  ir_renderer *renderer;
  bool pinned;     /* GPU: rgba and depth in page-locked memory, for fast copies from the device */
  size_t capacity; /* pixels the buffers below hold */
  size_t composited; /* rank 0: pixels of the last frame in `result` (0: none yet) */
  uint8_t *rgba;
  float *depth;
  uint64_t *words, *result;
  int *order; /* translucent frames: the ranks front to back */
  int (*windows)[4]; /* opaque frames over several ranks: every rank's window (brick_window) */
  ir_dist_gpu *gpu; /* compositing on the GPUs through NCCL; NULL: on the host through MPI */
  const char *compositing; /* how frames are composited, for the run's header */
  bool bricks_for_views; /* the layout was chosen for the run's views (choose_bricks) */
  bool whole_frames; /* INKRAY_DIST_WINDOW=off: trace every pixel, not the brick's window */
  /* Replicated data (choose_data): every rank holds the whole volume and traces a band of the
   * rows; the cuts between bands (dist.h) follow the ranks' render times frame by frame, one
   * model per view recently drawn (band_model_for). */
  bool replicated;
  bool keep_depth;        /* desc->keep_depth */
  char data_reason[192];  /* why, and how it was read, for the run's header */
  double color_bytes;     /* the colour volume's voxel bytes (desc->color_source), from its header */
  band_model models[BAND_VIEWS];
  band_model *model;        /* this frame's */
  unsigned long band_clock; /* frames drawn, for the models' ages */
  double *times, *scratch;  /* ranks, 2 ranks */
};

const char *ir_dist_scene_compositing(const ir_dist_scene *s) { return s->compositing; }

const ir_volume *ir_dist_scene_volume(const ir_dist_scene *s) { return &s->whole; }
const ir_volume *ir_dist_scene_brick_volume(const ir_dist_scene *s) { return &s->brick_volume; }
ir_status ir_dist_scene_volume_stats(ir_dist_scene *s, ir_volume_stats *out, char err[IR_ERR_LEN]) {
  return ir_renderer_volume_stats(s->renderer, out, err);
}
const ir_dist_layout *ir_dist_scene_layout(const ir_dist_scene *s) { return &s->layout; }
bool ir_dist_scene_bricks_for_views(const ir_dist_scene *s) { return s->bricks_for_views; }
bool ir_dist_scene_replicated(const ir_dist_scene *s) { return s->replicated; }
const char *ir_dist_scene_data_reason(const ir_dist_scene *s) { return s->data_reason; }
const ir_dist_brick *ir_dist_scene_brick(const ir_dist_scene *s) { return &s->brick; }

static void free_frame_buffers(ir_dist_scene *s) {
  if (s->pinned) {
    cudaFreeHost(s->rgba);
    cudaFreeHost(s->depth);
  } else {
    free(s->rgba);
    free(s->depth);
  }
  free(s->words);
  free(s->result);
  s->rgba = NULL;
  s->depth = NULL;
  s->words = s->result = NULL;
  s->capacity = 0;
  s->composited = 0;
}

void ir_dist_scene_destroy(ir_dist_scene *s) {
  if (!s) return;
  ir_dist_gpu_destroy(s->gpu);
  ir_renderer_destroy(s->renderer);
  ir_volume_free(&s->brick_volume);
  ir_volume_free(&s->color_brick);
  free_frame_buffers(s);
  free(s->order);
  free(s->windows);
  for (int i = 0; i < BAND_VIEWS; i++) {
    free(s->models[i].cuts);
    free(s->models[i].density);
  }
  free(s->times);
  free(s->scratch);
  free(s);
}

/* The host's k-th rank takes device k % devices: the ranks of a host share its GPUs round-robin,
 * whatever their global numbers (hosts of a job need not hold equal numbers of ranks). */
static ir_status pick_gpu(int local_rank, char err[IR_ERR_LEN]) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    snprintf(err, IR_ERR_LEN, "no CUDA device available (%s); use --device cpu",
             e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    return IR_ERR_RUNTIME;
  }
  e = cudaSetDevice(local_rank % count);
  if (e != cudaSuccess) {
    snprintf(err, IR_ERR_LEN, "cannot use CUDA device %d of %d: %s", local_rank % count, count,
             cudaGetErrorString(e));
    return IR_ERR_RUNTIME;
  }
  return IR_OK;
}

/* The colour volume's header against the whole volume's: the same on every rank, like the
 * header's own errors (a colour volume of other dims could still hold a box of a brick's). */
static ir_status check_color_header(ir_dist_scene *s, const ir_dist_scene_desc *desc, char err[IR_ERR_LEN]) {
  ir_volume_desc cd = desc->volume;
  cd.source = desc->color_source;
  cd.header_only = true;
  memset(cd.region_offset, 0, sizeof cd.region_offset);
  memset(cd.region_size, 0, sizeof cd.region_size);
  ir_volume header;
  ir_status st = ir_volume_load(&cd, &header, err);
  if (st != IR_OK) return st;
  if (header.dims[0] != s->whole.dims[0] || header.dims[1] != s->whole.dims[1] || header.dims[2] != s->whole.dims[2]) {
    snprintf(err, IR_ERR_LEN, "colour volume %.180s is %zux%zux%zu, but the volume is %zux%zux%zu: they must match",
             header.name, header.dims[0], header.dims[1], header.dims[2], s->whole.dims[0], s->whole.dims[1],
             s->whole.dims[2]);
    st = IR_ERR_INPUT;
  }
  s->color_bytes = (double)ir_volume_voxel_count(&header) * (double)ir_voxel_type_size(header.type);
  ir_volume_free(&header);
  return st;
}

/* A choice rank 0's environment makes for all: mpirun passes variables to other hosts only when
 * -x names them, and ranks that chose differently would meet in different collectives. *choice:
 * 0 where `name` is unset or empty, else 1 + the index of its value in words[0 .. count); any
 * other value is IR_ERR_INPUT with one line naming the words. Collective. */
static ir_status rank0_choice(ir_dist *d, const char *name, const char *const *words, int count, int32_t *choice,
                              char err[IR_ERR_LEN]) {
  const char *want = getenv(name);
  *choice = 0;
  if (ir_dist_rank(d) == 0 && want && *want) {
    *choice = -1;
    for (int k = 0; k < count; k++)
      if (strcmp(want, words[k]) == 0) *choice = k + 1;
  }
  ir_status st = ir_dist_broadcast(d, choice, sizeof *choice, err);
  if (st != IR_OK || *choice >= 0) return st;
  char list[128] = "";
  for (int k = 0; k < count; k++) {
    size_t at = strlen(list);
    snprintf(list + at, sizeof list - at, "%s%s", k == 0 ? "" : k + 1 == count ? " or " : ", ", words[k]);
  }
  if (ir_dist_rank(d) == 0) snprintf(err, IR_ERR_LEN, "%s='%.64s': use %s", name, want, list);
  else snprintf(err, IR_ERR_LEN, "%s on rank 0: use %s", name, list);
  return IR_ERR_INPUT;
}

/* Replicated data: the whole volume on every rank, each reading (or computing) one slab of its
 * z slices and the slabs then sent to every rank (ir_dist_share_parts): the ranks of a host
 * share the reading instead of each reading all of it (P times the file's bytes, or P builtin
 * volumes computed at once on the same cores). INKRAY_DIST_LOAD=each has every rank load the
 * whole volume itself (for comparing; =shared, the default, reads slabs). Into *out: the volume
 * (`what` "volume", which the run's header describes) or the colour volume ("colour volume").
 * Collective: every rank comes here; the status is the same on every rank (a rank's own failure
 * starts with "rank N: " in `sub`). */
static ir_status load_whole(ir_dist_scene *s, const ir_volume_desc *whole_desc, ir_volume *out, const char *what,
                            char sub[IR_ERR_LEN], bool *own) {
  bool main_volume = out == &s->brick_volume;
  int P = ir_dist_size(s->d), rank = ir_dist_rank(s->d);
  const size_t *n = s->whole.dims;
  /* Rank 0's environment decides for all (the two ways meet in different collectives). */
  static const char *const ways[] = {"shared", "each"};
  int32_t way;
  *own = false; /* a bad value: rank 0 says so, once */
  ir_status bst = rank0_choice(s->d, "INKRAY_DIST_LOAD", ways, 2, &way, sub);
  if (bst != IR_OK) return bst;
  bool each = way == 2;
  size_t said = strlen(s->data_reason);
  *own = true;
  if (P == 1 || n[2] < (size_t)P || each) {
    if (main_volume) snprintf(s->data_reason + said, sizeof s->data_reason - said, "; every rank read all of it");
    ir_status st = ir_volume_load(whole_desc, out, sub);
    int worst = ir_dist_agree(s->d, (int)st);
    if (st == IR_OK && worst != IR_OK) {
      *own = false;
      snprintf(sub, IR_ERR_LEN, "another rank failed to load the %s (its message is above)", what);
    }
    return (ir_status)worst;
  }
  if (main_volume) snprintf(s->data_reason + said, sizeof s->data_reason - said, "; read in %d slabs, one a rank", P);
  ir_volume_desc vd = *whole_desc;
  size_t z0 = (size_t)rank * n[2] / (size_t)P, z1 = (size_t)(rank + 1) * n[2] / (size_t)P;
  vd.region_offset[0] = vd.region_offset[1] = 0;
  vd.region_offset[2] = z0;
  vd.region_size[0] = n[0], vd.region_size[1] = n[1], vd.region_size[2] = z1 - z0;
  ir_volume slab;
  memset(&slab, 0, sizeof slab);
  ir_status st = ir_volume_load(&vd, &slab, sub);
  /* The whole volume's voxels, of the type the slabs were read as. */
  size_t slice = st == IR_OK ? n[0] * n[1] * ir_voxel_type_size(slab.type) : 0;
  void *voxels = st == IR_OK ? malloc(slice * n[2]) : NULL;
  if (st == IR_OK && !voxels) {
    snprintf(sub, IR_ERR_LEN, "out of host memory for the whole %s (%zu bytes)", what, slice * n[2]);
    st = IR_ERR_RUNTIME;
  }
  int worst = ir_dist_agree(s->d, (int)st);
  if (worst != IR_OK) {
    if (st == IR_OK) {
      *own = false;
      snprintf(sub, IR_ERR_LEN, "another rank failed to load its part of the %s (its message is above)", what);
    }
    free(voxels);
    ir_volume_free(&slab);
    return (ir_status)worst;
  }
  memcpy((char *)voxels + slice * z0, slab.voxels, slice * (z1 - z0));
  size_t *at = malloc((size_t)(P + 1) * sizeof *at);
  /* The finite range and the non-finite voxels of the whole: the slabs' own, combined (a slab of
   * only non-finite voxels has no range: the loader's 0..0 for it is left out). */
  bool finite = slab.nonfinite_count < ir_volume_voxel_count(&slab);
  double neg_min = finite ? -slab.value_min : -INFINITY, max = finite ? slab.value_max : -INFINITY;
  double low[1], high[1], bad[1];
  st = at ? IR_OK : IR_ERR_RUNTIME;
  if (!at) snprintf(sub, IR_ERR_LEN, "out of host memory");
  worst = ir_dist_agree(s->d, (int)st);
  if (worst == IR_OK) {
    for (int r = 0; r <= P; r++) at[r] = slice * ((size_t)r * n[2] / (size_t)P);
    /* Every rank makes every call (a failed one leaves the others in step), then they agree. */
    double count = (double)slab.nonfinite_count;
    char why[4][IR_ERR_LEN];
    ir_status calls[4] = {ir_dist_share_parts(s->d, voxels, at, why[0]), ir_dist_max_all(s->d, &neg_min, low, 1, why[1]),
                          ir_dist_max_all(s->d, &max, high, 1, why[2]), ir_dist_sum_all(s->d, &count, bad, 1, why[3])};
    for (int k = 3; k >= 0; k--)
      if (calls[k] != IR_OK) st = calls[k], snprintf(sub, IR_ERR_LEN, "%.480s", why[k]);
    worst = ir_dist_agree(s->d, (int)st);
    if (worst != IR_OK && st == IR_OK) {
      *own = false;
      snprintf(sub, IR_ERR_LEN, "another rank failed to share its part of the %s (its message is above)", what);
    }
  } else if (st == IR_OK) {
    *own = false;
    snprintf(sub, IR_ERR_LEN, "another rank ran out of host memory (its message is above)");
  }
  free(at);
  if (worst != IR_OK) {
    free(voxels);
    ir_volume_free(&slab);
    return (ir_status)worst;
  }
  /* The slab's header (name, spacing, orientation, notes) with the whole volume's voxels. */
  free(slab.voxels);
  slab.voxels = voxels;
  slab.bytes = slice * n[2];
  memcpy(slab.dims, n, sizeof slab.dims);
  memcpy(slab.full_dims, n, sizeof slab.full_dims);
  memset(slab.origin, 0, sizeof slab.origin);
  bool any = isfinite(low[0]) && isfinite(high[0]);
  slab.value_min = any ? -low[0] : 0.0; /* no finite voxel: 0..0, as the loader says it */
  slab.value_max = any ? high[0] : 0.0;
  slab.nonfinite_count = (size_t)bad[0];
  *out = slab;
  return IR_OK;
}

/* Loads the brick (replicated data: the whole volume, load_whole) and makes its renderer; a
 * message starting "rank N: " on failure. Collective with replicated data. */
static ir_status load_brick(ir_dist_scene *s, const ir_dist_scene_desc *desc, char err[IR_ERR_LEN]) {
  int rank = ir_dist_rank(s->d);
  ir_volume_desc vd = desc->volume;
  vd.header_only = false;
  for (int k = 0; k < 3; k++) {
    vd.region_offset[k] = s->brick.load_lo[k];
    vd.region_size[k] = s->brick.load_hi[k] - s->brick.load_lo[k];
  }
  char sub[IR_ERR_LEN];
  bool own = true; /* a failure is this rank's own (else another's, said by that rank) */
  ir_status st = s->replicated ? load_whole(s, &vd, &s->brick_volume, "volume", sub, &own)
                                : ir_volume_load(&vd, &s->brick_volume, sub);
  if (st == IR_OK && desc->device == IR_DEVICE_GPU) st = pick_gpu(ir_dist_local_rank(s->d), sub);
  if (st == IR_OK) {
    ir_renderer_desc rd = {.device = desc->device, .volume = &s->brick_volume, .cpu_threads = desc->cpu_threads};
    st = ir_renderer_create(&rd, &s->renderer, sub);
    s->pinned = desc->device == IR_DEVICE_GPU;
    /* A GPU renderer has its own copy (the texture): the host's goes, so that a rank holds its
     * brick once, not twice (a 2048^3 brick is 8 GiB of host memory). Its header stays. */
    if (st == IR_OK && desc->device == IR_DEVICE_GPU) {
      free(s->brick_volume.voxels);
      s->brick_volume.voxels = NULL;
      s->brick_volume.bytes = 0;
    }
  }
  if (desc->color_source && s->replicated) {
    /* The whole colour volume, read in slabs as the volume was (collective: the ranks agree on
     * how far they got first, so that all of them come or none). */
    int worst = ir_dist_agree(s->d, (int)st);
    if (worst == IR_OK) {
      ir_volume_desc cd = vd;
      cd.source = desc->color_source;
      st = load_whole(s, &cd, &s->color_brick, "colour volume", sub, &own);
      if (st == IR_OK) {
        own = true;
        st = ir_renderer_set_color_volume(s->renderer, &s->color_brick, sub);
      }
    } else if (st == IR_OK) {
      st = (ir_status)worst;
      own = false;
      snprintf(sub, IR_ERR_LEN, "another rank failed to load its volume (its message is above)");
    }
  } else if (st == IR_OK && desc->color_source) {
    /* The same brick of the colour volume (its dims were checked against the header's). */
    ir_volume_desc cd = vd;
    cd.source = desc->color_source;
    st = ir_volume_load(&cd, &s->color_brick, sub);
    if (st == IR_OK) st = ir_renderer_set_color_volume(s->renderer, &s->color_brick, sub);
  }
  if (st != IR_OK && own) snprintf(err, IR_ERR_LEN, "rank %d: %.480s", rank, sub);
  else if (st != IR_OK) snprintf(err, IR_ERR_LEN, "%.480s", sub);
  return st;
}

/* One rank composites nothing. GPU ranks composite through NCCL when inkray has it and every
 * rank has a GPU of its own (NCCL takes one rank per device); otherwise, and on the CPU, through
 * MPI on the host. INKRAY_DIST_COMPOSITE=host|gpu asks for one (gpu: an error where it cannot
 * be). Collective; the choice is the same on every rank. */
static ir_status choose_compositing(ir_dist_scene *s, const ir_dist_scene_desc *desc, char err[IR_ERR_LEN]) {
  int ranks = ir_dist_size(s->d);
  enum { WANT_AUTO, WANT_HOST, WANT_GPU };
  static const char *const words[] = {"host", "gpu"};
  int32_t choice;
  ir_status bst = rank0_choice(s->d, "INKRAY_DIST_COMPOSITE", words, 2, &choice, err);
  if (bst != IR_OK) return bst;
  bool want_host = choice == WANT_HOST, want_gpu = choice == WANT_GPU;
  s->compositing = desc->device == IR_DEVICE_GPU ? "on the host (MPI)" : "on the host (MPI, CPU ranks)";
  if (ranks == 1) {
    s->compositing = "none (one rank)";
    return IR_OK;
  }
  if (want_host) return IR_OK;
  int devices = 0;
  if (desc->device == IR_DEVICE_GPU && cudaGetDeviceCount(&devices) != cudaSuccess) devices = 0;
  bool own_gpu = desc->device == IR_DEVICE_GPU && ir_dist_local_size(s->d) <= devices;
  bool all_own = ir_dist_agree(s->d, own_gpu ? 0 : 1) == 0;
  if (!ir_dist_built_with_nccl() || !all_own) {
    if (!want_gpu) {
      if (ir_dist_built_with_nccl() && desc->device == IR_DEVICE_GPU)
        s->compositing = "on the host (MPI): ranks share a GPU, and NCCL takes one rank per GPU";
      else if (desc->device == IR_DEVICE_GPU)
        s->compositing = "on the host (MPI): built without NCCL";
      return IR_OK;
    }
    snprintf(err, IR_ERR_LEN, "INKRAY_DIST_COMPOSITE=gpu: %s",
             !ir_dist_built_with_nccl() ? "inkray was built without NCCL (install it and reconfigure)"
             : desc->device != IR_DEVICE_GPU ? "the ranks render on the CPU"
                                             : "ranks share a GPU; NCCL needs one GPU per rank");
    return IR_ERR_INPUT;
  }
  ir_status st = ir_dist_gpu_create(s->d, desc->keep_depth, &s->gpu, err);
  if (st == IR_OK) s->compositing = "on the GPUs (NCCL)";
  return st;
}

/* Bytes a voxel takes in a GPU renderer's texture (render/gpu_volume.cu: 8- and 16-bit integers
 * as they are, every other type as float). */
static double gpu_voxel_bytes(ir_voxel_type t) {
  return t == IR_VOXEL_UINT8 ? 1.0 : t == IR_VOXEL_UINT16 || t == IR_VOXEL_INT16 ? 2.0 : 4.0;
}

/* Whether this rank can hold the whole volume (and the colour volume) beside the other ranks of
 * its host, in at most half of the memory it shares with them: the host's for every rank (each
 * loads the volume there first) and, on a GPU, the device's among the ranks that share it. The
 * other half is left to the renderer's buffers (bricks' ranges, masks, images) and other work. */
static bool whole_volume_fits(const ir_dist_scene *s, const ir_dist_scene_desc *desc, char *why, size_t why_len) {
  double voxels = (double)ir_volume_voxel_count(&s->whole);
  double host_bytes = voxels * (double)ir_voxel_type_size(s->whole.type) + s->color_bytes;
  double gpu_bytes = voxels * gpu_voxel_bytes(s->whole.type) + (desc->color_source ? 4.0 * voxels : 0.0);
  int local = ir_dist_local_size(s->d);
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  double host_memory = pages > 0 && page > 0 ? (double)pages * (double)page : 0.0;
  if (host_bytes * local > 0.5 * host_memory) {
    snprintf(why, why_len, "%d ranks x %.2f GiB is more than half of this host's %.0f GiB", local, host_bytes / 1073741824.0,
             host_memory / 1073741824.0);
    return false;
  }
  if (desc->device != IR_DEVICE_GPU) return true;
  int devices = 0;
  struct cudaDeviceProp prop;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    snprintf(why, why_len, "no CUDA device to hold it");
    return false;
  }
  int mine = ir_dist_local_rank(s->d) % devices;
  int sharing = local / devices + (mine < local % devices ? 1 : 0);
  if (cudaGetDeviceProperties(&prop, mine) != cudaSuccess) {
    snprintf(why, why_len, "cannot read CUDA device %d's memory size", mine);
    return false;
  }
  if (gpu_bytes * sharing > 0.5 * (double)prop.totalGlobalMem) {
    snprintf(why, why_len, "%d rank%s x %.2f GiB is more than half of a GPU's %.0f GiB", sharing, sharing == 1 ? "" : "s",
             gpu_bytes / 1073741824.0, (double)prop.totalGlobalMem / 1073741824.0);
    return false;
  }
  return true;
}

/* How the ranks share the work: replicated data (every rank the whole volume, a band of rows
 * each: no ray traced twice, nothing composited by depth) where every rank can hold the volume,
 * else bricks (sort-last, for volumes larger than a rank's memory). Rank 0's INKRAY_DIST_DATA
 * (replicated, bricks, auto) decides for all, as INKRAY_DIST_COMPOSITE does; replicated asked for
 * where it does not fit is refused, in one line. One rank draws everything either way (bricks:
 * its one brick is the volume). Collective. */
static ir_status choose_data(ir_dist_scene *s, const ir_dist_scene_desc *desc, char err[IR_ERR_LEN]) {
  enum { DATA_AUTO, DATA_AUTO_NAMED, DATA_BRICKS, DATA_REPLICATED };
  static const char *const words[] = {"auto", "bricks", "replicated"};
  int32_t choice;
  ir_status st = rank0_choice(s->d, "INKRAY_DIST_DATA", words, 3, &choice, err);
  if (st != IR_OK) return st;
  if (choice == DATA_AUTO_NAMED) choice = DATA_AUTO;
  int ranks = ir_dist_size(s->d);
  double bytes = (double)ir_volume_voxel_count(&s->whole) * (double)ir_voxel_type_size(s->whole.type);
  char size[32];
  if (bytes >= 1073741824.0) snprintf(size, sizeof size, "%.2f GiB", bytes / 1073741824.0);
  else snprintf(size, sizeof size, "%.1f MiB", bytes / 1048576.0);
  if (ranks == 1) {
    snprintf(s->data_reason, sizeof s->data_reason, "one rank");
    return IR_OK;
  }
  /* Occlusion and shadow rays cross bricks: only replicated data draws them. */
  const char *lit = "--ao and --shadows need every rank to hold the whole volume (their rays cross bricks)";
  /* The suggested isovalues come from the whole volume's histogram, which only replicated data has. */
  const char *stats = "without --iso V the isovalue comes from the whole volume's histogram, which needs every rank "
                      "to hold the whole volume";
  bool whole = desc->whole_volume_rays || desc->whole_volume_stats;
  const char *need = desc->whole_volume_rays ? lit : stats;
  if (choice == DATA_BRICKS && whole) {
    snprintf(err, IR_ERR_LEN, "%s: INKRAY_DIST_DATA=bricks %s", need,
             desc->whole_volume_rays ? "cannot draw them" : "cannot: give --iso V");
    return IR_ERR_INPUT;
  }
  if (choice == DATA_BRICKS) {
    snprintf(s->data_reason, sizeof s->data_reason, "INKRAY_DIST_DATA=bricks");
    return IR_OK;
  }
  char why[128] = "";
  bool fits = whole_volume_fits(s, desc, why, sizeof why);
  /* Whether any rank cannot hold it, and whether rank 0 cannot (then rank 0 alone says why: the
   * hosts of a job are mostly alike). */
  double mine[2] = {fits ? 0.0 : 1.0, !fits && ir_dist_rank(s->d) == 0 ? 1.0 : 0.0}, all[2];
  st = ir_dist_max_all(s->d, mine, all, 2, err);
  if (st != IR_OK) return st;
  if (all[0] == 0.0) {
    s->replicated = true;
    snprintf(s->data_reason, sizeof s->data_reason, "%s: %s fits every rank",
             choice == DATA_REPLICATED ? "INKRAY_DIST_DATA=replicated" : "automatic", size);
    return IR_OK;
  }
  if (choice == DATA_REPLICATED || whole) {
    int rank = ir_dist_rank(s->d);
    const char *asked = choice == DATA_REPLICATED ? "INKRAY_DIST_DATA=replicated" : need;
    const char *instead = choice == DATA_REPLICATED ? "use bricks"
                          : desc->whole_volume_rays ? "draw them in one process"
                                                    : "give --iso V";
    if (all[1] != 0.0 || (rank == 0 && !fits))
      snprintf(err, IR_ERR_LEN, "%s: the whole volume does not fit: %s; %s", asked, why, instead);
    else if (!fits)
      snprintf(err, IR_ERR_LEN, "rank %d: %s: the whole volume does not fit: %s; %s", rank, asked, why, instead);
    else
      snprintf(err, IR_ERR_LEN, "%s: another rank cannot hold the whole volume (its message is above); %s", asked,
               instead);
    return IR_ERR_INPUT;
  }
  snprintf(s->data_reason, sizeof s->data_reason, "automatic: the whole volume (%s) does not fit every rank%s%s", size,
           fits ? "" : ": ", fits ? "" : why);
  return IR_OK;
}

/* The bricks: for the run's views where the caller knows them (ir_dist_decompose_for_views),
 * else along the longest axes. Only rank 0 searches the views (its grid is broadcast to the
 * others, below); every rank meets the decomposition's errors alike. */
static ir_status choose_bricks(ir_dist_scene *s, const ir_dist_scene_desc *desc, char err[IR_ERR_LEN]) {
  const char *rule = getenv("INKRAY_DIST_BRICKS");
  int ranks = ir_dist_size(s->d), count = desc->view_camera ? desc->view_count : 0;
  if ((rule && strcmp(rule, "longest") == 0) || count <= 0 || ranks == 1 || ir_dist_rank(s->d) != 0)
    return ir_dist_decompose(s->whole.dims, ranks, &s->layout, err);
  ir_camera *views = malloc((size_t)count * sizeof *views);
  if (!views) {
    snprintf(err, IR_ERR_LEN, "rank %d: out of host memory", ir_dist_rank(s->d));
    return IR_ERR_RUNTIME;
  }
  for (int i = 0; i < count; i++) views[i] = desc->view_camera(&s->whole, i, desc->view_ctx);
  float clip_lo[3], clip_hi[3];
  bool clipped = desc->view_clip_box && desc->view_clip_box(&s->whole, desc->view_ctx, clip_lo, clip_hi);
  ir_status st = ir_dist_decompose_for_views(s->whole.dims, s->whole.spacing, ranks, views, count, desc->view_width,
                                             desc->view_height, clipped ? clip_lo : NULL, clipped ? clip_hi : NULL,
                                             &s->layout, err);
  s->bricks_for_views = st == IR_OK && ranks <= IR_DIST_VIEW_RANKS_MAX;
  free(views);
  return st;
}

ir_status ir_dist_scene_create(ir_dist *d, const ir_dist_scene_desc *desc, ir_dist_scene **out,
                               char err[IR_ERR_LEN]) {
  *out = NULL;
  ir_dist_scene *s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(err, IR_ERR_LEN, "rank %d: out of host memory", ir_dist_rank(d));
    return ir_dist_agree(d, IR_ERR_RUNTIME) == IR_ERR_INPUT ? IR_ERR_INPUT : IR_ERR_RUNTIME;
  }
  s->d = d;
  s->keep_depth = desc->keep_depth;
  /* Each rank's own choice (the composited frame is the same either way), for measuring what the
   * window saves. */
  const char *window = getenv("INKRAY_DIST_WINDOW");
  s->whole_frames = window && strcmp(window, "off") == 0;
  s->order = malloc((size_t)ir_dist_size(d) * sizeof *s->order);
  s->windows = malloc((size_t)ir_dist_size(d) * sizeof *s->windows);
  /* The header and the decomposition are the same on every rank, and so are their errors. */
  ir_volume_desc hd = desc->volume;
  hd.header_only = true;
  memset(hd.region_offset, 0, sizeof hd.region_offset);
  memset(hd.region_size, 0, sizeof hd.region_size);
  ir_status st = s->order && s->windows ? ir_volume_load(&hd, &s->whole, err) : IR_ERR_RUNTIME;
  if (!s->order || !s->windows) snprintf(err, IR_ERR_LEN, "rank %d: out of host memory", ir_dist_rank(d));
  if (st == IR_OK && desc->color_source) st = check_color_header(s, desc, err);
  int agreed = ir_dist_agree(d, (int)st);
  if (agreed != IR_OK && st == IR_OK) {
    st = (ir_status)agreed;
    snprintf(err, IR_ERR_LEN, "another rank failed to read the volume's header (its message is above)");
  }
  if (st == IR_OK) st = choose_data(s, desc, err); /* the same status on every rank */
  /* Replicated: one brick, the whole volume, on every rank. */
  if (st == IR_OK) st = s->replicated ? ir_dist_decompose(s->whole.dims, 1, &s->layout, err) : choose_bricks(s, desc, err);
  /* Every rank takes rank 0's grid: the search is done once, and the views' scores are floating
   * point (a host whose libm rounds a cosine otherwise could tip a near tie the other way). */
  agreed = ir_dist_agree(d, (int)st);
  if (agreed != IR_OK && st == IR_OK) {
    st = (ir_status)agreed;
    snprintf(err, IR_ERR_LEN, "another rank failed to choose the bricks (its message is above)");
  }
  if (st == IR_OK && s->replicated) {
    int ranks = ir_dist_size(d);
    s->times = malloc((size_t)ranks * sizeof *s->times);
    s->scratch = malloc(2 * (size_t)ranks * sizeof *s->scratch);
    bool made = true;
    for (int i = 0; i < BAND_VIEWS; i++) made = made && band_model_make(&s->models[i], ranks);
    if (!s->times || !s->scratch || !made) {
      snprintf(err, IR_ERR_LEN, "rank %d: out of host memory", ir_dist_rank(d));
      st = IR_ERR_RUNTIME;
    }
    s->model = &s->models[0];
  }
  if (st == IR_OK && !s->replicated) {
    int grid[4] = {s->layout.parts[0], s->layout.parts[1], s->layout.parts[2], s->bricks_for_views};
    st = ir_dist_broadcast(d, grid, sizeof grid, err);
    memcpy(s->layout.parts, grid, sizeof s->layout.parts);
    s->bricks_for_views = grid[3] != 0;
  }
  /* Replicated data loads together (load_whole): every rank goes on, or none. */
  if (s->replicated) {
    int worst = ir_dist_agree(d, (int)st);
    if (worst != IR_OK && st == IR_OK) snprintf(err, IR_ERR_LEN, "another rank failed (its message is above)");
    st = (ir_status)worst;
  }
  if (st == IR_OK) {
    ir_dist_brick_of(&s->layout, s->replicated ? 0 : ir_dist_rank(d), &s->brick);
    st = load_brick(s, desc, err);
  }
  int worst = ir_dist_agree(d, (int)st);
  if (st == IR_OK && worst != IR_OK)
    snprintf(err, IR_ERR_LEN, "another rank failed to load its brick (its message is above)");
  if (worst == IR_OK) worst = choose_compositing(s, desc, err);
  if (worst != IR_OK) {
    ir_dist_scene_destroy(s);
    return (ir_status)worst;
  }
  *out = s;
  return IR_OK;
}

static ir_status ensure_buffers(ir_dist_scene *s, size_t pixels, char err[IR_ERR_LEN]) {
  if (pixels <= s->capacity) return IR_OK;
  free_frame_buffers(s);
  if (s->pinned) {
    void *rgba = NULL, *depth = NULL;
    if (cudaMallocHost(&rgba, pixels * 4) == cudaSuccess) s->rgba = rgba;
    if (cudaMallocHost(&depth, pixels * sizeof *s->depth) == cudaSuccess) s->depth = depth;
  } else {
    s->rgba = malloc(pixels * 4);
    s->depth = malloc(pixels * sizeof *s->depth);
  }
  s->words = malloc(pixels * sizeof *s->words);
  s->result = ir_dist_rank(s->d) == 0 ? malloc(pixels * sizeof *s->result) : NULL;
  s->capacity = pixels;
  if (!s->rgba || !s->depth || !s->words || (ir_dist_rank(s->d) == 0 && !s->result)) {
    s->capacity = 0;
    snprintf(err, IR_ERR_LEN, "rank %d: out of host memory for %zu-pixel frames", ir_dist_rank(s->d), pixels);
    return IR_ERR_RUNTIME;
  }
  return IR_OK;
}

/* The frame moved into the brick's own frame (see the top of the file). The frame's own clip
 * box, in the whole volume's voxels, narrows the part the brick draws; a brick outside it draws
 * an empty box. The clip plane needs no move: the renderer places it in the whole volume's world
 * through the brick volume's origin (render/camera.c). Only the pixels whose rays may meet the
 * drawn box are traced (ir_camera_box_window, within the frame's own window if it has one): the
 * others would be background with depth +INF anyway, which the renderer writes for them. */
/* The part of brick b that is drawn, in the whole volume's voxels: its box within the frame's own
 * clip box (an empty box where they do not meet). */
static void drawn_box(const ir_frame_desc *frame, const ir_dist_brick *b, float lo[3], float hi[3]) {
  bool user_box = false;
  for (int k = 0; k < 3; k++) user_box = user_box || frame->clip_lo[k] != 0.0f || frame->clip_hi[k] != 0.0f;
  for (int k = 0; k < 3; k++) {
    lo[k] = b->clip_lo[k];
    hi[k] = b->clip_hi[k];
    if (user_box) {
      lo[k] = fmaxf(lo[k], frame->clip_lo[k]);
      hi[k] = fminf(hi[k], frame->clip_hi[k]);
      if (hi[k] < lo[k]) hi[k] = lo[k];
    }
  }
}

/* The pixels whose rays may meet brick b's drawn part (ir_camera_box_window), within the frame's
 * own window if it has one; the others are background for b. Every rank computes the same
 * rectangle for the same brick and frame. */
static void brick_window(const ir_dist_scene *s, const ir_frame_desc *frame, const ir_dist_brick *b, int w[4]) {
  float lo[3], hi[3];
  drawn_box(frame, b, lo, hi);
  double box_lo[3], box_hi[3];
  for (int k = 0; k < 3; k++) {
    box_lo[k] = (double)lo[k] * (double)s->whole.spacing[k];
    box_hi[k] = (double)hi[k] * (double)s->whole.spacing[k];
  }
  ir_camera_box_window(&frame->camera, frame->width, frame->height, box_lo, box_hi, w);
  if (frame->window_on) {
    w[0] = w[0] > frame->window[0] ? w[0] : frame->window[0];
    w[1] = w[1] > frame->window[1] ? w[1] : frame->window[1];
    w[2] = w[2] < frame->window[2] ? w[2] : frame->window[2];
    w[3] = w[3] < frame->window[3] ? w[3] : frame->window[3];
    if (w[2] < w[0] || w[3] < w[1]) w[0] = w[1] = w[2] = w[3] = 0;
  }
}

static ir_frame_desc brick_frame(const ir_dist_scene *s, const ir_frame_desc *frame) {
  ir_frame_desc f = *frame;
  float lo[3], hi[3];
  drawn_box(frame, &s->brick, lo, hi);
  for (int k = 0; k < 3; k++) {
    double shift = (double)s->brick.load_lo[k] * (double)s->whole.spacing[k];
    f.camera.eye[k] = (float)((double)frame->camera.eye[k] - shift);
    f.camera.target[k] = (float)((double)frame->camera.target[k] - shift);
    f.clip_lo[k] = lo[k] - (float)s->brick.load_lo[k];
    f.clip_hi[k] = hi[k] - (float)s->brick.load_lo[k];
  }
  if (s->whole_frames) return f;
  f.window_on = true;
  brick_window(s, frame, &s->brick, f.window);
  return f;
}

static uint64_t fnv1a(uint64_t h, const void *data, size_t bytes) {
  const unsigned char *p = data;
  for (size_t i = 0; i < bytes; i++) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

/* The view a model is learned on: the frame's camera, size and surfaces (what its rays meet),
 * hashed (FNV-1a): the same on every rank for the same frame. */
static uint64_t view_key(const ir_frame_desc *frame) {
  uint64_t h = fnv1a(1469598103934665603ull, &frame->camera, sizeof frame->camera);
  int size[3] = {frame->width, frame->height, frame->surface_count};
  h = fnv1a(h, size, sizeof size);
  h = fnv1a(h, &frame->isovalue, sizeof frame->isovalue);
  for (int k = 0; k < frame->surface_count && k < IR_MAX_SURFACES; k++) {
    float surface[2] = {frame->surfaces[k].isovalue, frame->surfaces[k].opacity};
    h = fnv1a(h, surface, sizeof surface);
  }
  return h;
}

/* The model of this frame's view: its own if the run drew it lately, else the least recently drawn
 * one, taking a copy of the model last drawn (all are made with the scene, so every rank picks
 * the same). */
static band_model *band_model_for(ir_dist_scene *s, const ir_frame_desc *frame) {
  uint64_t view = view_key(frame);
  int ranks = ir_dist_size(s->d), oldest = 0;
  band_model *last = s->model;
  s->band_clock++;
  if (!last->used) { /* the run's first frame: the even bands made with the scene */
    last->view = view;
    last->used = s->band_clock;
    return last;
  }
  for (int i = 0; i < BAND_VIEWS; i++) {
    band_model *m = &s->models[i];
    if (m->view == view && m->used) {
      m->used = s->band_clock;
      return m;
    }
    if (m->used < s->models[oldest].used) oldest = i;
  }
  band_model *m = &s->models[oldest];
  if (m != last) {
    memcpy(m->cuts, last->cuts, (size_t)(ranks + 1) * sizeof *m->cuts);
    memcpy(m->density, last->density, (size_t)ir_dist_band_slots(ranks) * sizeof *m->density);
  }
  m->view = view;
  m->used = s->band_clock;
  return m;
}

/* Replicated data: rank r traces band r (ir_dist_band_rows) of the rows where the volume's drawn
 * part can show (ir_camera_box_window, within the frame's own window), the whole width of that
 * window; the frame is otherwise the one a single process draws. Every rank computes every band
 * from the same cuts, so that the composite knows them without a message. With
 * INKRAY_DIST_WINDOW=off a rank traces the whole frame and still sends only its band. */
static ir_frame_desc band_frame(ir_dist_scene *s, const ir_frame_desc *frame) {
  int covered[4], ranks = ir_dist_size(s->d);
  s->model = band_model_for(s, frame);
  brick_window(s, frame, &s->brick, covered);
  for (int r = 0; r < ranks; r++) {
    int rows[2];
    ir_dist_band_rows(s->model->cuts, r, covered[1], covered[3], rows);
    int *w = s->windows[r];
    w[0] = covered[0], w[1] = rows[0], w[2] = covered[2], w[3] = rows[1];
    if (w[2] <= w[0] || w[3] <= w[1]) w[0] = w[1] = w[2] = w[3] = 0;
  }
  ir_frame_desc f = *frame;
  if (s->whole_frames) return f;
  f.window_on = true;
  memcpy(f.window, s->windows[ir_dist_rank(s->d)], sizeof f.window);
  return f;
}

/* Whether a surface lets light through (hidden ones, opacity 0, are not drawn at all): then the
 * bricks are blended in visibility order instead of keeping the nearest. */
static bool frame_is_translucent(const ir_frame_desc *frame) {
  for (int k = 0; k < frame->surface_count && k < IR_MAX_SURFACES; k++)
    if (frame->surfaces[k].opacity > 0.0f && frame->surfaces[k].opacity < 1.0f) return true;
  return false;
}

ir_status ir_dist_scene_frame(ir_dist_scene *s, const ir_frame_desc *frame, uint8_t *rgba,
                              ir_dist_frame_stats *stats, char err[IR_ERR_LEN]) {
  ir_dist_frame_stats local;
  memset(&local, 0, sizeof local);
  double t0 = ir_dist_now_ms();
  int ranks = ir_dist_size(s->d), rank = ir_dist_rank(s->d);
  size_t pixels = (size_t)frame->width * (size_t)frame->height;
  bool host = ranks > 1 && !s->gpu;
  s->composited = 0;
  ir_status st = host ? ensure_buffers(s, pixels, err) : IR_OK;
  ir_frame_desc f = s->replicated ? band_frame(s, frame) : brick_frame(s, frame);
  ir_frame_stats rs;
  char sub[IR_ERR_LEN] = "";
  /* With stats the renderer waits for the frame's GPU work, so render time is all of it. */
  double t_render = ir_dist_now_ms();
  if (st == IR_OK) st = ir_render_frame(s->renderer, &f, &rs, sub);
  if (sub[0]) snprintf(err, IR_ERR_LEN, "rank %d: %.480s", rank, sub);
  double t1 = ir_dist_now_ms();
  /* One rank: the frame is finished where the renderer left it. Opaque frames send only each
   * brick's window, through NCCL (dist/nccl.cu) or MPI (ir_dist_composite_windows); so do the
   * bands of replicated data, translucent or not (each pixel is finished by one rank). */
  bool translucent = ranks > 1 && frame_is_translucent(frame) && !s->replicated;
  bool by_windows = ranks > 1 && !translucent;
  if (by_windows && !s->replicated)
    for (int r = 0; r < ranks; r++) {
      ir_dist_brick b;
      ir_dist_brick_of(&s->layout, r, &b);
      brick_window(s, frame, &b, s->windows[r]);
    }
  /* Replicated data on the GPUs: the bands' rows go from the renderers' images as they are. */
  bool rows = s->gpu && s->replicated;
  if (st == IR_OK && s->gpu && !rows)
    st = ir_dist_gpu_pack(s->gpu, ir_render_device_image(s->renderer), ir_render_device_depth(s->renderer), pixels,
                          frame->width, by_windows ? s->windows[rank] : NULL, err);
  if (st == IR_OK && host) {
    st = ir_render_read_image(s->renderer, s->rgba, sub);
    if (st == IR_OK) st = ir_render_read_depth(s->renderer, s->depth, sub);
    /* By windows, rank 0's whole frame is where the others' windows are composited. */
    if (st == IR_OK && by_windows && rank != 0)
      ir_dist_pack_window(s->rgba, s->depth, frame->width, s->windows[rank], s->words);
    else if (st == IR_OK)
      ir_dist_pack_image(s->rgba, s->depth, pixels, by_windows ? s->result : s->words);
    if (st != IR_OK) snprintf(err, IR_ERR_LEN, "rank %d: %.480s", rank, sub);
  }
  double t2 = ir_dist_now_ms();
  /* A rank that failed must not leave the others waiting in the reduction. Replicated data: the
   * same message hands every rank each rank's render time, for the next frame's bands. */
  int worst = ranks == 1         ? (int)st
              : s->replicated ? ir_dist_agree_times(s->d, (int)st, t1 - t_render, s->times, s->scratch)
                                : ir_dist_agree(s->d, (int)st);
  double t_ready = ir_dist_now_ms(); /* every rank has drawn and packed its brick */
  if (worst != IR_OK) {
    if (st == IR_OK) snprintf(err, IR_ERR_LEN, "another rank failed to render its brick (its message is above)");
    return (ir_status)worst;
  }
  const int *order = NULL;
  if (translucent) {
    double eye[3];
    for (int k = 0; k < 3; k++) eye[k] = (double)frame->camera.eye[k] / (double)s->whole.spacing[k];
    ir_dist_visibility_order(&s->layout, eye, s->order);
    order = s->order;
  }
  if (rows)
    st = ir_dist_gpu_gather_rows(s->gpu, (void *)ir_render_device_image(s->renderer),
                                 (float *)ir_render_device_depth(s->renderer), frame->width,
                                 (const int(*)[4])s->windows, err);
  else if (s->gpu)
    st = ir_dist_gpu_composite(s->gpu, order, pixels, frame->width, by_windows ? (const int(*)[4])s->windows : NULL,
                               err);
  else if (host && order)
    st = ir_dist_composite_over(s->d, s->words, order, s->result, pixels, err);
  else if (host)
    st = ir_dist_composite_windows(s->d, s->words, (const int(*)[4])s->windows, frame->width, s->result, err);
  s->composited = st == IR_OK && rank == 0 ? pixels : 0;
  /* Not from the run's first frame: its times hold each renderer's first launch. */
  if (st == IR_OK && s->replicated && ranks > 1 && s->band_clock > 1)
    ir_dist_bands_balance(ranks, s->times, s->model->cuts, s->model->density);
  double t3 = ir_dist_now_ms();
  if (st == IR_OK && rank == 0 && rgba) st = ir_dist_scene_read_image(s, rgba, err);
  local.render_ms = t1 - t0;
  local.gather_ms = t2 - t1;
  local.wait_ms = t_ready - t2;
  local.composite_ms = t3 - t_ready;
  local.total_ms = t3 - t0;
  local.pixels_traced = f.window_on ? (double)(f.window[2] - f.window[0]) * (double)(f.window[3] - f.window[1])
                                    : (double)pixels;
  if (stats) *stats = local;
  return st;
}

ir_status ir_dist_scene_read_image(ir_dist_scene *s, uint8_t *rgba, char err[IR_ERR_LEN]) {
  if (!s->composited) {
    snprintf(err, IR_ERR_LEN, "rank %d: no composited frame to read", ir_dist_rank(s->d));
    return IR_ERR_INPUT;
  }
  /* One rank, or the bands gathered into rank 0's renderer: the frame is where it drew. */
  if (ir_dist_size(s->d) == 1 || (s->gpu && s->replicated)) return ir_render_read_image(s->renderer, rgba, err);
  if (s->gpu) return ir_dist_gpu_read_image(s->gpu, rgba, err);
  ir_dist_unpack_image(s->result, s->composited, IR_BACKGROUND_RGBA, rgba);
  return IR_OK;
}

ir_status ir_dist_scene_color_range(ir_dist_scene *s, float range[2], char err[IR_ERR_LEN]) {
  /* The bricks cover the whole volume, so the extremes over their voxels are the whole one's;
   * the minimum travels as the maximum of its negation. */
  const ir_volume *c = &s->color_brick;
  bool any = c->voxels && c->nonfinite_count < ir_volume_voxel_count(c);
  double mine[2] = {any ? -c->value_min : -INFINITY, any ? c->value_max : -INFINITY}, all[2];
  ir_status st = ir_dist_max_all(s->d, mine, all, 2, err);
  if (st != IR_OK) return st;
  bool found = isfinite(all[0]) && isfinite(all[1]);
  range[0] = found ? (float)-all[0] : 0.0f;
  range[1] = found ? (float)all[1] : 0.0f;
  return IR_OK;
}

bool ir_dist_scene_last_depth(ir_dist_scene *s, float *depth) {
  if (!s->composited) return false;
  char err[IR_ERR_LEN];
  /* Bands gathered on the GPUs carry the depth only where it was asked for (keep_depth). */
  if (s->gpu && s->replicated && !s->keep_depth) return false;
  if (ir_dist_size(s->d) == 1 || (s->gpu && s->replicated)) return ir_render_read_depth(s->renderer, depth, err) == IR_OK;
  if (!s->gpu) {
    ir_dist_unpack_depth(s->result, s->composited, depth);
    return true;
  }
  uint64_t *words = malloc(s->composited * sizeof *words);
  bool ok = words && ir_dist_gpu_read_words(s->gpu, words, err) == IR_OK;
  if (ok) ir_dist_unpack_depth(words, s->composited, depth);
  free(words);
  return ok;
}
