/* inkray --headless under mpirun: the frames of a headless run, distributed over the MPI ranks
 * (dist/dist.h). Every rank loads and renders its brick; rank 0 composites, prints the frame
 * times with the per-phase split (render, gather, composite) and writes the PNG and CSV.
 *
 * One configuration per isovalue (one pipeline, one compaction method); the per-stage
 * diagnostic pass and --verify of single-process runs are not offered here: the phase split
 * takes the stage table's place. The window is not distributed: under mpirun inkray runs
 * headless. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app/app.h"
#include "dist/dist.h"

bool app_dist_requested(void) {
  int size = ir_dist_launched_size();
  return size > 1 || (size == 1 && ir_dist_built_with_mpi());
}

int app_dist_launched_rank(void) { return ir_dist_launched_rank(); }

typedef struct dist_phase_sums {
  double render, gather, composite, wait, total;
} dist_phase_sums;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The compaction method's name, or "none" for the pipelines that compact nothing. */
static const char *method_label(const app_dist_options *o) {
  bool compacts = ir_pipeline_compacts((ir_pipeline)o->pipeline);
  return compacts ? ir_compact_method_get((ir_compact_method)o->method)->name : "none";
}

static float view_azimuth(const app_dist_options *o, int view) { return 360.0f * (float)view / (float)o->orbit; }

/* View `view` of the run's orbit: the camera of its frames (and of the bricks' choice). */
static ir_camera orbit_camera(const ir_volume *whole, int view, const void *ctx) {
  const app_dist_options *o = ctx;
  return ir_camera_orbit(whole, view_azimuth(o, view), o->elevation, o->distance, app_up_axis((ir_axis)o->up, whole));
}

/* The frames' clip box (the bricks' choice shares out what it keeps): the look's, as the frames
 * take it. */
static bool look_clip_box(const ir_volume *whole, const void *ctx, float lo[3], float hi[3]) {
  const app_dist_options *o = ctx;
  if (!o->look || !o->look->clip_box_on) return false;
  ir_frame_desc frame;
  memset(&frame, 0, sizeof frame);
  app_look_apply(o->look, whole, &frame);
  memcpy(lo, frame.clip_lo, sizeof frame.clip_lo);
  memcpy(hi, frame.clip_hi, sizeof frame.clip_hi);
  return true;
}

/* Prints on rank 0 only: the ranks share their errors, and one line is enough. */
static int fail(const ir_dist *d, int status, const char *err) {
  if (ir_dist_rank(d) == 0 || strncmp(err, "rank ", 5) == 0) fprintf(stderr, "inkray: %s\n", err);
  return status == IR_ERR_INPUT ? 2 : 1;
}

/* start_ms: when the run began (before the bricks were loaded), for the time to the first frame. */
static int run_frames(ir_dist *d, ir_dist_scene *scene, const app_dist_options *o, const double *isovalues,
                      int iso_count, FILE *csv, uint8_t *image, double start_ms) {
  const ir_volume *whole = ir_dist_scene_volume(scene);
  int rank = ir_dist_rank(d), ranks = ir_dist_size(d);
  double *totals = calloc((size_t)o->frames, sizeof *totals);
  /* The last frame's pixels traced by each rank (slot r: rank r's; the max over the ranks fills them). */
  double *traced = calloc((size_t)ranks, sizeof *traced), *traced_all = calloc((size_t)ranks, sizeof *traced_all);
  if (!totals || !traced || !traced_all) {
    free(totals);
    free(traced);
    free(traced_all);
    return fail(d, IR_ERR_RUNTIME, "out of host memory");
  }
  if (rank == 0) {
    printf("\nframe time in ms (host clock of rank 0, whole distributed frame) and its phases (means; render\n"
           "and gather: the slowest rank; wait: rank 0's wait for the slowest rank; composite: rank 0, from\n"
           "the moment every rank is ready)\n");
    printf("%-10s %6s %9s %9s %9s %9s %9s %9s %11s %9s\n", "isovalue", "ranks", "mean", "median", "p95", "FPS mean",
           "render", "gather", "composite", "wait");
    fflush(stdout); /* the frames have begun: what a watcher (test_dist_fault) waits for */
  }
  int rc = 0;
  double first_frame_ms = 0;

  for (int k = 0; k < iso_count && !rc; k++) {
    dist_phase_sums sums = {0, 0, 0, 0, 0};
    for (int f = -o->warmup; f < o->frames && !rc; f++) {
      int view = (f < 0 ? f + o->warmup : f) % o->orbit;
      ir_frame_desc frame = {
          .width = o->width,
          .height = o->height,
          .isovalue = (float)isovalues[k],
          .camera = orbit_camera(whole, view, o),
          .method = (ir_compact_method)o->method,
          .pipeline = (ir_pipeline)o->pipeline,
          .tail_rays = o->tail_rays,
      };
      /* The look, with the clip box in the whole volume's voxels (the scene narrows it to each
       * brick); headless.c has refused what is not distributed. */
      if (o->look) app_look_apply(o->look, whole, &frame);
      ir_dist_frame_stats st;
      char err[IR_ERR_LEN] = "";
      /* The frame stays where it was composited; the last one is read after the loop. */
      ir_status status = ir_dist_scene_frame(scene, &frame, NULL, &st, err);
      if (status != IR_OK) {
        rc = fail(d, status, err);
        break;
      }
      if (first_frame_ms == 0) first_frame_ms = now_ms() - start_ms;
      traced[rank] = st.pixels_traced;
      if (f < 0) continue;
      double mine[4] = {st.render_ms, st.gather_ms, st.composite_ms, st.total_ms}, worst[4];
      if (ir_dist_max_to_root(d, mine, worst, 4, err) != IR_OK) {
        rc = fail(d, IR_ERR_RUNTIME, err);
        break;
      }
      if (rank != 0) continue;
      /* Rank 0's own clock for the frame and the composite; the slowest rank for the others. */
      totals[f] = st.total_ms;
      sums.render += worst[0];
      sums.gather += worst[1];
      sums.composite += st.composite_ms;
      sums.wait += st.wait_ms;
      sums.total += st.total_ms;
      if (csv)
        fprintf(csv, "%.9g,%d,%d,%d,%.3f,%s,%s,%d,%d,%.4f,%.4f,%.4f,%.4f,%.4f\n", isovalues[k], ranks, f, view,
                view_azimuth(o, view), ir_pipeline_name((ir_pipeline)o->pipeline),
                method_label(o),
                o->width, o->height, st.total_ms, worst[0], worst[1], st.composite_ms, st.wait_ms);
    }
    if (rc || rank != 0) continue;
    int n = o->frames;
    qsort(totals, (size_t)n, sizeof *totals, compare_double);
    double median = n % 2 ? totals[n / 2] : 0.5 * (totals[n / 2 - 1] + totals[n / 2]);
    int p95 = (int)ceil(0.95 * n);
    double mean = sums.total / n;
    printf("%-10.5g %6d %9.3f %9.3f %9.3f %9.1f %9.3f %9.3f %11.3f %9.3f\n", isovalues[k], ranks, mean, median,
           totals[p95 > 0 ? p95 - 1 : 0], 1000.0 / mean, sums.render / n, sums.gather / n, sums.composite / n,
           sums.wait / n);
  }
  free(totals);
  char err[IR_ERR_LEN] = "";
  if (rc == 0 && ir_dist_max_to_root(d, traced, traced_all, ranks, err) != IR_OK) rc = fail(d, IR_ERR_RUNTIME, err);
  if (rc == 0 && rank == 0) {
    /* What each rank's window saved: the share of the image its renderer traced. */
    double image_pixels = (double)o->width * (double)o->height, most = 0.0, sum = 0.0;
    for (int r = 0; r < ranks; r++) {
      most = traced_all[r] > most ? traced_all[r] : most;
      sum += traced_all[r];
    }
    printf("pixels traced per rank (its brick's window, the last frame): %.1f %% of the image on average, "
           "%.1f %% at most\n", 100.0 * sum / ranks / image_pixels, 100.0 * most / image_pixels);
  }
  free(traced);
  free(traced_all);
  if (rc == 0 && rank == 0)
    printf("time to the first frame: %.3f s (header, bricks loaded and uploaded, compositing set up, one frame)\n",
           first_frame_ms / 1000.0);
  /* The last frame to host memory (for --png), timed on its own: frames end on rank 0's GPU. */
  if (rc == 0 && rank == 0 && image) {
    double t0 = now_ms();
    ir_status status = ir_dist_scene_read_image(scene, image, err);
    if (status != IR_OK) return fail(d, status, err);
    printf("last frame to host memory: %.3f ms\n", now_ms() - t0);
  }
  return rc;
}

static int run(ir_dist *d, const app_dist_options *o) {
  double start_ms = now_ms();
  int rank = ir_dist_rank(d), ranks = ir_dist_size(d);
  double builtin_iso = ir_builtin_isovalue(o->volume.source ? o->volume.source : IR_DEFAULT_VOLUME);
  const double *isovalues = o->isovalues;
  int iso_count = o->iso_count;
  /* Without --iso a file's isovalue is the histogram's first suggestion, as in one process: the
   * scene then keeps the whole volume on every rank, or says in one line that it cannot. */
  bool suggest = iso_count == 0 && isnan(builtin_iso);
  if (o->look && o->look->color_channel >= 0) {
    if (rank == 0) fprintf(stderr, "inkray: --color-by channel:N is not read in distributed runs; give the channel as a file\n");
    return 2;
  }
  if (iso_count == 0 && !suggest) {
    isovalues = &builtin_iso;
    iso_count = 1;
  }
  ir_dist_scene_desc desc = {.volume = o->volume, .device = (ir_device)o->device, .cpu_threads = o->cpu_threads};
  if (o->look && o->look->color_by == IR_COLOR_VOLUME) desc.color_source = o->look->color_file;
  /* Each rank reads its brick of one level: the finest, unless --level names another (an
   * automatic choice could differ between hosts of unlike memory). */
  if (desc.volume.level == IR_LEVEL_AUTO) desc.volume.level = 0;
  desc.keep_depth = o->look && o->look->depth_path;
  desc.whole_volume_rays = o->look && (o->look->ao_samples > 0 || o->look->shadows);
  desc.whole_volume_stats = suggest;
  /* The bricks are chosen for the orbit's views and the clip box (dist.h, ir_dist_decompose_for_views). */
  desc.view_count = o->orbit, desc.view_width = o->width, desc.view_height = o->height;
  desc.view_camera = orbit_camera, desc.view_clip_box = look_clip_box, desc.view_ctx = o;
  if (!desc.volume.source) desc.volume.source = IR_DEFAULT_VOLUME;
  ir_dist_scene *scene = NULL;
  char err[IR_ERR_LEN] = "";
  ir_status status = ir_dist_scene_create(d, &desc, &scene, err);
  if (status != IR_OK) return fail(d, status, err);
  double suggested = NAN;
  if (suggest) {
    /* Rank 0's copy of the whole volume gives the value, from the statistics one process takes
     * (on its GPU, or its CPU); the others take it from rank 0 (a maximum over the ranks with
     * theirs at -inf), so hosts whose arithmetic differs agree. */
    double mine = -INFINITY;
    if (rank == 0) {
      ir_volume_stats st;
      status = ir_dist_scene_volume_stats(scene, &st, err);
      if (status == IR_OK) mine = st.suggested_count > 0 ? st.suggested_isovalues[0] : 0.5 * (st.min + st.max);
    }
    if (ir_dist_agree(d, status != IR_OK) != 0 && status == IR_OK) status = IR_ERR_RUNTIME; /* said by rank 0 */
    if (status == IR_OK) status = ir_dist_max_all(d, &mine, &suggested, 1, err);
    if (status != IR_OK) {
      ir_dist_scene_destroy(scene);
      return fail(d, status, err);
    }
    isovalues = &suggested;
    iso_count = 1;
  }
  /* An unset colour range: the colour volume's, from every rank's brick. */
  float color_range[2] = {0.0f, 0.0f};
  bool auto_range = desc.color_source && !o->look->color_range_given;
  if (auto_range && (status = ir_dist_scene_color_range(scene, color_range, err)) != IR_OK) {
    ir_dist_scene_destroy(scene);
    return fail(d, status, err);
  }

  FILE *csv = NULL;
  int rc = 0;
  size_t pixels = (size_t)o->width * (size_t)o->height;
  /* Frames end in rank 0's GPU memory; the host holds the last one only where it is written. */
  uint8_t *image = rank == 0 && o->png_path ? malloc(pixels * 4) : NULL;
  if (rank == 0 && o->png_path && !image) {
    fprintf(stderr, "inkray: out of host memory for %dx%d images; try a smaller --size\n", o->width, o->height);
    rc = 1;
  }
  if (rank == 0 && !rc && o->csv_path) {
    csv = fopen(o->csv_path, "w");
    if (!csv) {
      fprintf(stderr, "inkray: cannot write --csv '%s': %s\n", o->csv_path, strerror(errno));
      rc = 2;
    } else {
      fputs("isovalue,ranks,frame,view,azimuth,pipeline,method,width,height,total_ms,render_ms,gather_ms,"
            "composite_ms,wait_ms\n", csv);
    }
  }
  rc = ir_dist_agree(d, rc);
  if (rc == 0 && rank == 0) {
    const ir_volume *v = ir_dist_scene_volume(scene);
    const ir_dist_layout *L = ir_dist_scene_layout(scene);
    const ir_volume *b = ir_dist_scene_brick_volume(scene); /* what rank 0 holds in memory */
    bool replicated = ir_dist_scene_replicated(scene);
    printf("inkray headless: distributed over %d rank%s (MPI, %s), %s renderer\n", ranks, ranks == 1 ? "" : "s",
           replicated ? "sort-first" : "sort-last",
           o->device == IR_DEVICE_CPU ? "CPU reference" : "GPU (rank r on GPU r % devices)");
    if (replicated) {
      printf("compositing %s: each rank's band of finished pixels onto rank 0\n", ir_dist_scene_compositing(scene));
      printf("volume %s: %zux%zux%zu %s replicated on every rank (%s); each traces a band of rows, balanced by the "
             "ranks' render times\n",
             v->name, v->dims[0], v->dims[1], v->dims[2], ir_voxel_type_name(v->type), ir_dist_scene_data_reason(scene));
    } else {
      printf("compositing %s: opaque by depth (MIN), translucent by \"over\" in the bricks' visibility order\n",
             ir_dist_scene_compositing(scene));
      printf("volume %s: %zux%zux%zu %s in %dx%dx%d bricks (%s); rank 0 loaded %zux%zux%zu voxels; bricks: %s\n",
             v->name, v->dims[0], v->dims[1], v->dims[2], ir_voxel_type_name(v->type), L->parts[0], L->parts[1],
             L->parts[2], !ir_dist_scene_bricks_for_views(scene) ? "along the longest axes"
                          : o->look && o->look->clip_box_on ? "chosen for the orbit's views and the clip box"
                                                            : "chosen for the orbit's views",
             b->dims[0], b->dims[1], b->dims[2], ir_dist_scene_data_reason(scene));
    }
    printf("%dx%d, %s pipeline, compaction %s, %d timed frame%s after %d warm-up, orbit of %d view%s at %g deg "
           "elevation, up %s\n",
           o->width, o->height, ir_pipeline_name((ir_pipeline)o->pipeline), method_label(o),
           o->frames, o->frames == 1 ? "" : "s", o->warmup, o->orbit, o->orbit == 1 ? "" : "s", (double)o->elevation,
           ir_axis_name(app_up_axis((ir_axis)o->up, v)));
    fflush(stdout);
  }
  app_look look;
  app_dist_options with_range = *o;
  if (o->look) {
    look = *o->look;
    if (auto_range) memcpy(look.color_range, color_range, sizeof color_range);
    with_range.look = &look;
    if (rc == 0 && rank == 0 && look.color_by != IR_COLOR_SURFACE) {
      printf("coloured by %s%s%s, %s over %g..%g%s\n", ir_color_source_name(look.color_by),
             look.color_file ? " " : "", look.color_file ? look.color_file : "", ir_colormap_name(look.colormap),
             (double)look.color_range[0], (double)look.color_range[1], auto_range ? " (automatic)" : "");
      fflush(stdout);
    }
  }
  if (rc == 0 && rank == 0 && o->look && (o->look->ao_samples > 0 || o->look->shadows || o->look->light_on)) {
    const app_look *l = o->look;
    if (l->ao_samples > 0)
      printf("lit: ambient occlusion %d rays of %g voxels%s", l->ao_samples,
             (double)(l->ao_radius > 0.0f ? l->ao_radius : IR_AO_RADIUS_DEFAULT), l->shadows ? "; shadows" : "");
    else
      printf("lit: %s", l->shadows ? "shadows" : "no occlusion");
    if (l->light_on) printf("; light at azimuth %g, elevation %g\n", (double)l->light[0], (double)l->light[1]);
    else printf("; headlight\n");
    fflush(stdout);
  }
  if (rc == 0) rc = run_frames(d, scene, &with_range, isovalues, iso_count, csv, image, start_ms);
  if (rc == 0 && rank == 0 && o->png_path) {
    if (!app_write_png(o->png_path, o->width, o->height, image, err)) {
      fprintf(stderr, "inkray: %s\n", err);
      rc = 1;
    } else {
      printf("\nlast frame: %s\n", o->png_path);
    }
  }
  const char *depth_path = o->look ? o->look->depth_path : NULL;
  if (rc == 0 && rank == 0 && depth_path) {
    float *depth = malloc(pixels * sizeof *depth);
    if (!depth || !ir_dist_scene_last_depth(scene, depth)) {
      fprintf(stderr, "inkray: --depth: %s\n", depth ? "no composited frame to read" : "out of host memory");
      rc = 1;
    } else if (!app_write_depth(depth_path, o->width, o->height, depth, err)) {
      fprintf(stderr, "inkray: %s\n", err);
      rc = 1;
    } else {
      printf("last frame's depth: %s\n", depth_path);
    }
    free(depth);
  }
  if (csv) {
    if (fflush(csv) != 0 || ferror(csv)) {
      fprintf(stderr, "inkray: writing --csv '%s' failed: %s\n", o->csv_path, strerror(errno));
      rc = 1;
    } else if (rc == 0) {
      printf("per-frame CSV: %s\n", o->csv_path);
    }
    fclose(csv);
  }
  free(image);
  ir_dist_scene_destroy(scene);
  return ir_dist_agree(d, rc);
}

int app_dist_headless(int argc, char **argv, const app_dist_options *o) {
  ir_dist *d = NULL;
  char err[IR_ERR_LEN] = "";
  if (ir_dist_init(&argc, &argv, &d, err) != IR_OK) {
    /* Started by mpirun but unable to take part: rank 0 says why and fails the job; the others
     * leave quietly with 0 (one failing first would have mpirun abort rank 0 before it spoke). */
    if (ir_dist_launched_rank() > 0) return 0;
    fprintf(stderr, "inkray: %s\n", err);
    return 2;
  }
  int rc = run(d, o), rank = ir_dist_rank(d);
  ir_dist_finalize(d);
  /* Every rank's status was agreed on: rank 0's is the job's. The others return 0, so that
   * mpirun does not abort the job (rank 0 included, perhaps before its output is out) when
   * one of them exits first. */
  return rank == 0 ? rc : 0;
}
