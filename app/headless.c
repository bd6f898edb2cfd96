/* inkray --headless: renders frames without a window and reports what they cost.
 *
 * For every configuration (isovalue x pipeline x compaction method) it renders warm-up frames,
 * then N timed frames on an orbit of K views around the volume, and prints the mean, median and
 * 95th percentile frame time and the FPS. Frame times come from ir_frame_stats.frame_ms, which
 * the renderer measures around the whole frame (CUDA events on the GPU, host work included).
 *
 * Per-stage times are taken in a separate diagnostic pass (one frame per view with
 * ir_frame_desc.stage_timing, for which the GPU renderer runs the frame a second time, driven
 * from the host with events between the stages), because those events perturb the frame they
 * time; its rows are reported apart from the timed frames, in the summary and in the CSV.
 *
 * Checks that cost nothing: every configuration of one isovalue renders the same last view, so
 * their images must agree pixel for pixel whatever the compaction method or pipeline. --verify
 * also renders that view on the CPU reference renderer and compares.
 *
 * What is drawn comes from the look options (look.c: several surfaces, clipping, colour by the
 * gradient or a second volume, loaded here like the first, with its range measured when not
 * given); --depth writes the last timed frame's depth (depth_image.c).
 *
 * What this file does not do: any timing of its own around frames (the renderer owns that).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "app/app.h"
#include "render/render.h"

#define HL_MAX_ISOVALUES 16
#define HL_MAX_CONFIGS (HL_MAX_ISOVALUES * (2 * IR_COMPACT_METHOD_COUNT + 2))
/* A GPU-rendered image may differ from the CPU reference on silhouette pixels (fused
 * multiply-adds, float rounding in the ray march); more than this share of pixels is a bug. */
#define HL_VERIFY_MAX_DIFFERING 0.01
#define HL_VERIFY_CHANNEL_TOLERANCE 8
/* With occlusion or shadow rays: one that grazes a surface may find its crossing on one side
 * and not on the other, which moves its pixel by 1/N of the occlusion or a whole shadow. */
#define HL_VERIFY_MAX_DIFFERING_LIT 0.05

typedef struct hl_options {
  ir_volume_desc volume;
  ir_device device;
  bool device_given;
  int width, height;
  int frames, warmup, orbit;
  bool size_given, frames_given, warmup_given, orbit_given;
  float elevation, distance;
  ir_axis up; /* --up; IR_AXIS_NONE: the volume's header, else +z */
  bool use_method[IR_COMPACT_METHOD_COUNT];
  bool use_pipeline[IR_PIPELINE_COUNT];
  int iso_count;
  double isovalues[HL_MAX_ISOVALUES];
  bool iso_given;       /* --iso: refused together with --surface */
  app_look look;        /* --surface, clipping, colour, refinement, --depth */
  int suggested_wanted; /* --iso suggested[:N]: 0 = not asked, -1 = all, N = that many */
  const char *csv_path;
  const char *png_path;
  const char *mesh_path; /* --mesh: the drawn surfaces as a mesh file after the frames */
  bool stage_pass;
  bool verify;
  bool quiet;
  int cpu_threads;
  uint32_t tail_rays; /* ir_frame_desc.tail_rays: 0 automatic (multi) / off (paper), IR_TAIL_OFF */
  int accumulate;     /* --accumulate K: the image (--png) is the mean of K frames of the last view */
  int secondary;      /* --secondary: ir_secondary_mode of the persistent pipeline's lit frames */
} hl_options;

typedef struct hl_config {
  double isovalue;
  ir_pipeline pipeline;
  ir_compact_method method;
} hl_config;

/* Means over the diagnostic pass's frames. */
typedef struct hl_stage_means {
  double bvh_update_ms, raygen_ms, traverse_ms, intersect_ms, shade_ms, secondary_ms, compact_ms;
  double iterations, rays_generated, rays_hit;
} hl_stage_means;

typedef struct hl_result {
  hl_config config;
  double mean_ms, median_ms, p95_ms, sd_ms, min_ms;
  bool have_stages;
  hl_stage_means stages;
} hl_result;

/* ---- Options ------------------------------------------------------------------------------------ */

static void print_help(FILE *to) {
  fputs("Usage: inkray --headless [OPTIONS] [VOLUME]\n"
        "\n"
        "Renders frames without a window and prints, per configuration (isovalue x pipeline x\n"
        "method), the mean, median and 95th percentile frame time and FPS. Frame times are taken\n"
        "by the renderer around the whole frame (CUDA events on the GPU, host work included).\n"
        "Per-stage times come from a separate diagnostic pass (one frame per view with per-stage\n"
        "timing), reported apart, because the extra events perturb the frames they time.\n"
        "\n"
        "Options:\n"
        "  --device gpu|cpu      renderer (default gpu; cpu is the multithreaded reference)\n"
        "  --frames N            timed frames per configuration (default 20; cpu: 4)\n"
        "  --warmup N            untimed frames first, per configuration (default 3; cpu: 1)\n"
        "  --size WxH            image size (default 512x512; cpu: 256x256)\n"
        "  --orbit K             views on a circle around the volume; frame i uses view i mod K\n"
        "                        (default 8; cpu: 4)\n"
        "  --elevation DEG       camera elevation of the orbit (default 20)\n"
        "  --distance D          camera distance, 1 fits the volume in view (default 1)\n"
        "  --up x|y|z|-x|-y|-z   volume axis shown pointing up; the orbit turns around it\n"
        "                        (default: the file's header says, else z)\n"
        "  --iso V[,V...]        isovalues in data units\n"
        "  --iso suggested[:N]   the isovalues the volume's histogram suggests (all, or the N best);\n"
        "                        default: the first suggested isovalue\n"
        "  --method NAME[,NAME...]|all   compaction method(s) of the InK pipelines (persistent,\n"
        "                        multi, paper); without --pipeline, runs the persistent one\n"
        "                        (default ink-compact); NAME is one of:\n",
        to);
  const ir_compact_method_info *methods = ir_compact_methods();
  for (int m = 0; m < IR_COMPACT_METHOD_COUNT; m++)
    fprintf(to, "                          %-13s %s\n", methods[m].name, methods[m].description);
  fprintf(to, "  --pipeline NAME[,NAME...]|all  renderer(s) (default %s); `all` is persistent,multi,paper,single;\n",
          ir_pipeline_name(IR_PIPELINE_DEFAULT));
  fputs(
        "                        the single kernel and plain run once per isovalue, whatever\n"
        "                        --method says; NAME is one of:\n",
        to);
  for (int p = 0; p < IR_PIPELINE_COUNT; p++)
    fprintf(to, "                          %-10s %s\n", ir_pipeline_name((ir_pipeline)p),
            ir_pipeline_description((ir_pipeline)p));
  fputs(
        "  --csv FILE            one row per frame: timed frames (pass=timed) and the per-stage\n"
        "                        diagnostic frames (pass=stages) with stage times, iterations\n"
        "                        and ray counts per round\n"
        "  --png FILE            the last timed frame of the last configuration as a PNG\n"
        "  --accumulate K        with --ao: the PNG is the mean of K frames of that view, each with\n"
        "                        N new occlusion rays per hit (K x N samples; not timed)\n"
        "  --secondary inline|spread|pool  the persistent pipeline's occlusion and shadow rays: in\n"
        "                        the thread that shades the hit (default), spread over the block's\n"
        "                        threads, or a pool of them compacted by the method between steps\n"
        "  --depth FILE          that frame's depth (distance from the eye along each pixel's ray,\n"
        "                        world units; +inf where nothing was hit) as a 32-bit float image:\n"
        "                        FILE.pfm (Portable FloatMap) or FILE.nrrd\n"
        "  --mesh FILE           after the frames, the surfaces drawn (isovalues or --surface,\n"
        "                        clipping, colours) as a mesh: .ply, .stl or .obj (inkray extract)\n"
        "  --tail-rays N|auto|off  multi-kernel pipelines on the GPU: once no more than N rays\n"
        "                        are left, finish them in one kernel (same image). Default auto:\n"
        "                        a threshold from the image size for multi, off for paper (the\n"
        "                        paper's pipeline runs every round)\n"
        "  --no-stages           skip the per-stage diagnostic pass\n"
        "  --verify              also render the last view on the CPU reference renderer and\n"
        "                        compare (GPU only); exit 1 if they disagree\n"
        "  --threads N           CPU renderer threads (default: all cores)\n"
        "  --quiet               no progress on stderr\n"
        "  --help                this text\n"
        "\n"
        "With no options at all: 20 frames at 512x512 of the default volume on the GPU, the\n"
        "last frame written to inkray.png.\n"
        "A time series (a %d pattern or quoted glob of volume files, a folder of them, a .pvd, a\n"
        "4-D NRRD or NIfTI) is drawn step by step: one frame a step from the orbit's first view, with\n"
        "the first configuration, the next steps read onto the GPU meanwhile; a line per step with\n"
        "its read, upload, range and render times, then the steps per second. --png NAME_%03d.png\n"
        "writes every step's image (without a %d: the last step's).\n"
        "Under mpirun -np N the run is distributed over N ranks: where every rank can hold the whole\n"
        "volume, each draws a band of rows (balanced by their times) and rank 0 gathers them; else one\n"
        "brick of the volume each, composited on rank 0 by depth, translucent surfaces by \"over\" in\n"
        "the bricks' order (INKRAY_DIST_DATA=bricks|replicated asks for one); on the GPUs through NCCL\n"
        "when each rank has its own (one pipeline and method; docs/distributed.md).\n"
        "Example: inkray --headless --frames 100 --size 1024x1024 --method all --pipeline all\n"
        "         --orbit 8 --csv frames.csv --png last.png builtin:sphere:256\n"
        "\n",
        to);
  cli_print_look_options(to);
  fputc('\n', to);
  cli_print_volume_options(to);
}

static int bad_option(const char *fmt, const char *a, const char *b) {
  fputs("inkray: ", stderr);
  fprintf(stderr, fmt, a, b);
  fputs(" (see inkray --headless --help)\n", stderr);
  return 2;
}

/* The one line of a parser in options.c, as the other bad options print it. */
static int bad_value(const char *err) { return bad_option("%s%s", err, ""); }

/* Returns -1 to go on, else the exit status (0 after --help). */
static int parse_options(int argc, char **argv, hl_options *o) {
  memset(o, 0, sizeof *o);
  o->volume.level = IR_LEVEL_AUTO; /* multiscale sources: the finest level the device holds */
  o->device = IR_DEVICE_GPU;
  o->use_method[IR_COMPACT_INK_COMPACT] = true;
  o->use_pipeline[IR_PIPELINE_DEFAULT] = true;
  o->elevation = 20.0f;
  o->distance = 1.0f;
  o->stage_pass = true;
  app_look_init(&o->look);
  int given = 0;
  bool method_given = false, pipeline_given = false;
  for (int i = 1; i < argc; i++) {
    const char *opt = argv[i];
    if (strcmp(opt, "--headless") == 0) continue;
    given++;
    char err[IR_ERR_LEN] = {0};
    int used = cli_parse_volume_option(argc, argv, &i, &o->volume, err);
    if (used < 0) {
      fprintf(stderr, "inkray: %s\n", err);
      return 2;
    }
    if (used > 0) continue;
    if ((used = cli_parse_look_option(argc, argv, &i, &o->look, err)) != 0) {
      if (used > 0) continue;
      fprintf(stderr, "inkray: %s (see inkray --headless --help)\n", err);
      return 2;
    }
    if (strcmp(opt, "--help") == 0 || strcmp(opt, "-h") == 0) {
      print_help(stdout);
      return 0;
    }
    if (opt[0] != '-' || opt[1] == '\0') {
      if (o->volume.source)
        return bad_option("two volumes given ('%s' and '%s'); give one", o->volume.source, opt);
      o->volume.source = opt;
      continue;
    }
    /* Flags without a value. */
    if (strcmp(opt, "--no-stages") == 0) { o->stage_pass = false; continue; }
    if (strcmp(opt, "--verify") == 0) { o->verify = true; continue; }
    if (strcmp(opt, "--quiet") == 0) { o->quiet = true; continue; }
    static const char *const with_value[] = {"--device", "--frames", "--warmup", "--size",
                                             "--orbit", "--elevation", "--distance", "--iso",
                                             "--method", "--pipeline", "--csv", "--png",
                                             "--threads", "--tail-rays", "--up", "--mesh", "--accumulate",
                                             "--secondary", NULL};
    bool known = false;
    for (int k = 0; with_value[k]; k++) known = known || strcmp(opt, with_value[k]) == 0;
    if (!known) return bad_option("unknown option '%s'%s", opt, "");
    if (i + 1 >= argc) return bad_option("%s needs a value%s", opt, "");
    const char *value = argv[++i];
    int rc = 0;
    if (strcmp(opt, "--device") == 0) {
      if (!ir_device_parse(value, &o->device)) rc = bad_option("--device '%s': use gpu or cpu%s", value, "");
      o->device_given = true;
    } else if (strcmp(opt, "--frames") == 0) {
      rc = app_parse_count(opt, value, 1, 1000000, &o->frames, err) ? 0 : bad_value(err);
      o->frames_given = true;
    } else if (strcmp(opt, "--warmup") == 0) {
      rc = app_parse_count(opt, value, 0, 100000, &o->warmup, err) ? 0 : bad_value(err);
      o->warmup_given = true;
    } else if (strcmp(opt, "--orbit") == 0) {
      rc = app_parse_count(opt, value, 1, 3600, &o->orbit, err) ? 0 : bad_value(err);
      o->orbit_given = true;
    } else if (strcmp(opt, "--threads") == 0) {
      rc = app_parse_count(opt, value, 1, 4096, &o->cpu_threads, err) ? 0 : bad_value(err);
    } else if (strcmp(opt, "--secondary") == 0) {
      ir_secondary_mode m;
      if (ir_secondary_parse(value, &m)) o->secondary = (int)m;
      else rc = bad_option("--secondary '%s': use inline, spread or pool%s", value, "");
    } else if (strcmp(opt, "--accumulate") == 0) {
      rc = app_parse_count(opt, value, 1, (long)IR_ACCUMULATE_MAX, &o->accumulate, err) ? 0 : bad_value(err);
    } else if (strcmp(opt, "--tail-rays") == 0) {
      rc = app_parse_tail_rays(value, &o->tail_rays, err) ? 0 : bad_value(err);
    } else if (strcmp(opt, "--size") == 0) {
      if (!cli_parse_size2(value, &o->width, &o->height))
        rc = bad_option("--size '%s': expected WxH with each from 1 to 16384, e.g. 1024x1024%s", value, "");
      o->size_given = true;
    } else if (strcmp(opt, "--elevation") == 0) {
      rc = app_parse_real(opt, value, -89.0, 89.0, &o->elevation, err) ? 0 : bad_value(err);
    } else if (strcmp(opt, "--distance") == 0) {
      rc = app_parse_real(opt, value, 0.05, 100.0, &o->distance, err) ? 0 : bad_value(err);
    } else if (strcmp(opt, "--iso") == 0) {
      o->iso_given = true;
      rc = app_parse_isovalues(value, HL_MAX_ISOVALUES, o->isovalues, &o->iso_count, &o->suggested_wanted, err)
               ? 0 : bad_value(err);
    } else if (strcmp(opt, "--up") == 0) {
      if (!ir_axis_parse(value, &o->up)) rc = bad_option("--up '%s': use x, y, z, -x, -y or -z%s", value, "");
    } else if (strcmp(opt, "--method") == 0) {
      method_given = true;
      rc = app_parse_methods(value, o->use_method, err) ? 0 : bad_value(err);
    } else if (strcmp(opt, "--pipeline") == 0) {
      pipeline_given = true;
      rc = app_parse_pipelines(value, o->use_pipeline, err) ? 0 : bad_value(err);
    } else if (strcmp(opt, "--csv") == 0) {
      o->csv_path = value;
    } else if (strcmp(opt, "--mesh") == 0) {
      o->mesh_path = value;
    } else {
      o->png_path = value;
    }
    if (rc) return rc;
  }
  if (given == 0) o->png_path = "inkray.png";
  if (method_given && !pipeline_given) { /* a method asks for a pipeline that compacts */
    memset(o->use_pipeline, 0, sizeof o->use_pipeline);
    o->use_pipeline[IR_PIPELINE_INK] = true;
  }
  if (o->iso_given && o->look.surface_count > 0)
    return bad_option("--surface and --iso both given: the surfaces replace the isovalues; give one or the "
                      "other%s%s", "", "");
  bool lit = o->look.ao_samples > 0 || o->look.shadows || o->look.light_on;
  if (lit && (o->use_pipeline[IR_PIPELINE_PAPER] || o->use_pipeline[IR_PIPELINE_PLAIN]))
    return bad_option("--ao, --shadows and --light are drawn by the single, persistent and multi pipelines; the "
                      "%s pipeline draws none%s", o->use_pipeline[IR_PIPELINE_PAPER] ? "paper" : "plain", "");
  if (o->accumulate > 1 && !o->look.ao_samples)
    return bad_option("--accumulate averages frames with new occlusion rays each; it needs --ao N%s%s", "", "");
  if (o->verify && o->device == IR_DEVICE_CPU)
    return bad_option("--verify compares the GPU with the CPU renderer; it needs --device gpu%s%s", "", "");
  return -1;
}

/* Defaults that depend on the device, once it is known (after the fallback to the CPU). */
static void apply_device_defaults(hl_options *o) {
  /* The CPU reference renderer is tens of times slower: its defaults finish in seconds. */
  bool cpu = o->device == IR_DEVICE_CPU;
  if (!o->size_given) o->width = o->height = cpu ? 256 : 512;
  if (!o->frames_given) o->frames = cpu ? 4 : 20;
  if (!o->warmup_given) o->warmup = cpu ? 1 : 3;
  if (!o->orbit_given) o->orbit = cpu ? 4 : 8;
}

/* Output files are checked before the volume is loaded or a frame rendered: a typo in a folder
 * name should not cost a whole run. */
static int check_outputs(const hl_options *o) {
  char err[IR_ERR_LEN] = {0};
  if ((o->png_path && !cli_check_output_path("--png", o->png_path, err)) ||
      (o->csv_path && !cli_check_output_path("--csv", o->csv_path, err)) ||
      (o->look.depth_path && !cli_check_output_path("--depth", o->look.depth_path, err))) {
    fprintf(stderr, "inkray: %s\n", err);
    return 2;
  }
  if (o->mesh_path && ir_mesh_check_output(o->mesh_path, err) != IR_OK) {
    fprintf(stderr, "inkray: --mesh: %s\n", err);
    return 2;
  }
  return 0;
}

/* ---- Statistics ------------------------------------------------------------------------------- */

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Sorts `ms` in place. p95 is the nearest-rank percentile. */
static void summarise(double *ms, int n, hl_result *r) {
  qsort(ms, (size_t)n, sizeof *ms, compare_double);
  double sum = 0;
  for (int k = 0; k < n; k++) sum += ms[k];
  r->mean_ms = sum / n;
  r->median_ms = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  int rank = (int)ceil(0.95 * n);
  r->p95_ms = ms[rank > 0 ? rank - 1 : 0];
  r->min_ms = ms[0];
  double ss = 0;
  for (int k = 0; k < n; k++) ss += (ms[k] - r->mean_ms) * (ms[k] - r->mean_ms);
  r->sd_ms = n > 1 ? sqrt(ss / (n - 1)) : 0.0;
}

/* ---- CSV -------------------------------------------------------------------------------------- */

static const char csv_header[] =
    "config,device,volume,width,height,isovalue,pipeline,method,pass,frame,view,azimuth,"
    "elevation,frame_ms,bvh_update_ms,raygen_ms,traverse_ms,intersect_ms,shade_ms,compact_ms,"
    "iterations,rays_generated,rays_hit,traverse_rays,intersect_rays,traverse_iter_ms,"
    "intersect_iter_ms,secondary_ms\n";

/* Quotes a field only when it needs it (RFC 4180). */
static void csv_text(FILE *f, const char *s) {
  if (!strpbrk(s, ",\"\n\r")) {
    fputs(s, f);
    return;
  }
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"') fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

static const char *method_label(const hl_config *c) {
  /* The single kernel and the plain caster use no stream compaction. */
  return ir_pipeline_compacts(c->pipeline) ? ir_compact_method_get(c->method)->name : "none";
}

/* Per-round lists go in one field each, joined with ';', so that every row has the same columns. */
static void csv_u32_list(FILE *f, const uint32_t *v, int n) {
  for (int k = 0; k < n; k++) fprintf(f, "%s%u", k ? ";" : "", v[k]);
  fputc(',', f);
}

static void csv_ms_list(FILE *f, const double *v, int n, bool last) {
  for (int k = 0; k < n; k++) fprintf(f, "%s%.4f", k ? ";" : "", v[k]);
  fputc(last ? '\n' : ',', f);
}

static void csv_row(FILE *f, int config_index, const hl_options *o, const ir_volume *v,
                    const hl_config *c, const char *pass, int frame, int view, float azimuth,
                    const ir_frame_stats *s) {
  int rounds = s->iterations < 0 ? 0 : s->iterations > IR_MAX_ITERATIONS ? IR_MAX_ITERATIONS : s->iterations;
  fprintf(f, "%d,%s,", config_index, ir_device_name(o->device));
  csv_text(f, v->name);
  fprintf(f, ",%d,%d,%.9g,%s,%s,%s,%d,%d,%.3f,%.3f,", o->width, o->height, c->isovalue,
          ir_pipeline_name(c->pipeline), method_label(c), pass, frame, view, azimuth, o->elevation);
  fprintf(f, "%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%d,%u,%u,", s->frame_ms, s->bvh_update_ms,
          s->raygen_ms, s->traverse_ms, s->intersect_ms, s->shade_ms + s->kernel_ms, s->compact_ms, s->iterations,
          s->rays_generated, s->rays_hit);
  csv_u32_list(f, s->traverse_rays, rounds);
  csv_u32_list(f, s->intersect_rays, rounds);
  csv_ms_list(f, s->traverse_iter_ms, rounds, false);
  csv_ms_list(f, s->intersect_iter_ms, rounds, false);
  fprintf(f, "%.4f\n", s->secondary_ms); /* last: the columns before it keep their places */
}

/* ---- Rendering -------------------------------------------------------------------------------- */

typedef struct hl_run {
  const hl_options *o;
  const ir_volume *volume;
  ir_renderer *renderer;
  FILE *csv;
  double *frame_ms; /* o->frames */
  float *depth;     /* --depth: the last timed frame's depths; NULL: not asked for */
  bool progress;
} hl_run;

static float view_azimuth(const hl_options *o, int view) { return 360.0f * (float)view / (float)o->orbit; }

static ir_frame_desc frame_for(const hl_run *run, const hl_config *c, int view, bool stage_timing) {
  const hl_options *o = run->o;
  ir_frame_desc f = {
      .width = o->width,
      .height = o->height,
      .isovalue = (float)c->isovalue,
      .camera = ir_camera_orbit(run->volume, view_azimuth(o, view), o->elevation, o->distance, o->up),
      .method = c->method,
      .pipeline = c->pipeline,
      .stage_timing = stage_timing,
      .tail_rays = o->tail_rays,
      .secondary = o->secondary,
  };
  app_look_apply(&o->look, run->volume, &f);
  return f;
}

static void show_progress(const hl_run *run, int index, int count, const hl_config *c, const char *what,
                          int done, int total) {
  if (!run->progress) return;
  fprintf(stderr, "\r[%d/%d] iso %-8.4g %-6s %-13s %s %d/%d   ", index + 1, count, c->isovalue,
          ir_pipeline_name(c->pipeline), method_label(c), what, done, total);
  fflush(stderr);
}

static int render_one(hl_run *run, const hl_config *c, int view, bool stage_timing, ir_frame_stats *s) {
  char err[IR_ERR_LEN] = {0};
  memset(s, 0, sizeof *s);
  ir_frame_desc frame = frame_for(run, c, view, stage_timing);
  ir_status status = ir_render_frame(run->renderer, &frame, s, err);
  if (status != IR_OK) {
    if (run->progress) fputc('\n', stderr);
    fprintf(stderr, "inkray: rendering failed (iso %g, %s pipeline, %s): %s\n", c->isovalue,
            ir_pipeline_name(c->pipeline), method_label(c), err);
    return status == IR_ERR_INPUT ? 2 : 1;
  }
  /* How long a person waits for a picture: from the start of the program (the stats above have
   * waited for the frame). */
  static bool first = true;
  if (first && !run->o->quiet) printf("inkray: first frame at %.2f s after the start\n", app_seconds_since_start());
  first = false;
  return 0;
}

/* Warm-up, timed frames, then the diagnostic pass. Leaves the last timed frame's image in `image`. */
static int run_config(hl_run *run, int index, int count, const hl_config *c, uint8_t *image, hl_result *r) {
  const hl_options *o = run->o;
  ir_frame_stats s;
  int rc = 0;
  memset(r, 0, sizeof *r);
  r->config = *c;
  for (int f = 0; f < o->warmup && !rc; f++) {
    show_progress(run, index, count, c, "warm-up", f + 1, o->warmup);
    rc = render_one(run, c, f % o->orbit, false, &s);
  }
  for (int f = 0; f < o->frames && !rc; f++) {
    if (f % 8 == 0 || f + 1 == o->frames) show_progress(run, index, count, c, "frame", f + 1, o->frames);
    int view = f % o->orbit;
    rc = render_one(run, c, view, false, &s);
    if (rc) break;
    run->frame_ms[f] = s.frame_ms;
    if (run->csv) csv_row(run->csv, index, o, run->volume, c, "timed", f, view, view_azimuth(o, view), &s);
  }
  if (rc) return rc;
  char err[IR_ERR_LEN] = {0};
  /* --accumulate: the last view again, K frames of new occlusion samples into one mean. */
  for (int k = 0; k < o->accumulate && o->accumulate > 1; k++) {
    ir_frame_desc frame = frame_for(run, c, (o->frames - 1) % o->orbit, false);
    frame.accumulate = true;
    frame.sample_frame = (uint32_t)k;
    if (ir_render_frame(run->renderer, &frame, NULL, err) != IR_OK) {
      fprintf(stderr, "inkray: rendering failed (iso %g, %s pipeline, %s): %s\n", c->isovalue,
              ir_pipeline_name(c->pipeline), method_label(c), err);
      return 1;
    }
  }
  if (ir_render_read_image(run->renderer, image, err) != IR_OK) {
    fprintf(stderr, "inkray: reading the image back failed: %s\n", err);
    return 1;
  }
  /* Read now: the diagnostic pass below renders other views. */
  if (run->depth && ir_render_read_depth(run->renderer, run->depth, err) != IR_OK) {
    fprintf(stderr, "inkray: reading the depth back failed: %s\n", err);
    return 1;
  }
  summarise(run->frame_ms, o->frames, r);
  if (!o->stage_pass) return 0;

  hl_stage_means *m = &r->stages;
  for (int view = 0; view < o->orbit; view++) {
    show_progress(run, index, count, c, "stages", view + 1, o->orbit);
    rc = render_one(run, c, view, true, &s);
    if (rc) return rc;
    if (run->csv) csv_row(run->csv, index, o, run->volume, c, "stages", view, view, view_azimuth(o, view), &s);
    m->bvh_update_ms += s.bvh_update_ms;
    m->raygen_ms += s.raygen_ms;
    m->traverse_ms += s.traverse_ms;
    m->intersect_ms += s.intersect_ms;
    m->shade_ms += s.shade_ms + s.kernel_ms; /* the single kernel and the plain caster: their one kernel */
    m->secondary_ms += s.secondary_ms;
    m->compact_ms += s.compact_ms;
    m->iterations += s.iterations;
    m->rays_generated += s.rays_generated;
    m->rays_hit += s.rays_hit;
  }
  double *fields[] = {&m->bvh_update_ms, &m->raygen_ms, &m->traverse_ms, &m->intersect_ms,
                      &m->shade_ms, &m->secondary_ms, &m->compact_ms, &m->iterations, &m->rays_generated,
                      &m->rays_hit};
  for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++) *fields[k] /= o->orbit;
  r->have_stages = true;
  return 0;
}

/* Pixels whose channels differ by more than `tolerance`, and the largest channel difference. */
static size_t count_differing(const uint8_t *a, const uint8_t *b, size_t pixels, int tolerance, int *max_diff) {
  size_t differing = 0;
  *max_diff = 0;
  for (size_t p = 0; p < pixels; p++) {
    int worst = 0;
    for (int ch = 0; ch < 4; ch++) {
      int d = abs((int)a[4 * p + ch] - (int)b[4 * p + ch]);
      if (d > worst) worst = d;
    }
    if (worst > *max_diff) *max_diff = worst;
    if (worst > tolerance) differing++;
  }
  return differing;
}

/* ---- Set-up ----------------------------------------------------------------------------------- */

/* Names the GPU for the summary header; returns 1 with a message when there is none. */
static int describe_gpu(char *line, size_t cap) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    fprintf(stderr, "inkray: no CUDA device available (%s); use --device cpu to render on the CPU\n",
            e != cudaSuccess ? cudaGetErrorString(e) : "no device found");
    return 1;
  }
  int dev = 0, driver = 0, runtime = 0;
  struct cudaDeviceProp prop;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
    fprintf(stderr, "inkray: cannot query the CUDA device; use --device cpu to render on the CPU\n");
    return 1;
  }
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  snprintf(line, cap, "GPU %s (sm_%d%d, %.0f GiB; CUDA driver API %d.%d, runtime %d.%d)", prop.name,
           prop.major, prop.minor, (double)prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0),
           driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10);
  return 0;
}

/* The n best-scored suggestions (the list comes best first), in ascending order for a sweep. */
static void pick_suggested(const ir_volume_stats *st, int wanted, hl_options *o) {
  int have = st->suggested_count;
  int n = wanted < 0 || wanted > have ? have : wanted;
  o->iso_count = 0;
  for (int k = 0; k < n && o->iso_count < HL_MAX_ISOVALUES; k++) o->isovalues[o->iso_count++] = st->suggested_isovalues[k];
  qsort(o->isovalues, (size_t)o->iso_count, sizeof o->isovalues[0], compare_double);
}

static int resolve_isovalues(const ir_volume *v, const ir_volume_stats *stats, hl_options *o) {
  if (v->nonfinite_count > 0 && v->nonfinite_count == ir_volume_voxel_count(v))
    fprintf(stderr, "inkray: warning: every voxel of %s is NaN or Inf; nothing will be drawn\n", v->name);
  app_look_warn_empty(&o->look, v, stderr);
  if (o->look.surface_count > 0) {
    /* The surfaces are drawn together: one configuration per pipeline and method, labelled with
     * the first surface's isovalue. */
    o->iso_count = 1;
    o->isovalues[0] = o->look.surfaces[0].isovalue;
    for (int k = 0; k < o->look.surface_count; k++) {
      double iso = o->look.surfaces[k].isovalue;
      if (iso < v->value_min || iso > v->value_max)
        fprintf(stderr, "inkray: warning: --surface isovalue %g is outside %s's values [%g, %g]; it will not be "
                "drawn\n", iso, v->name, v->value_min, v->value_max);
    }
    return 0;
  }
  if (o->iso_count == 0) {
    pick_suggested(stats, o->suggested_wanted ? o->suggested_wanted : 1, o);
    if (o->iso_count == 0) {
      /* A constant volume suggests nothing; its midpoint at least names the choice. */
      o->isovalues[o->iso_count++] = 0.5 * (stats->min + stats->max);
    }
  }
  for (int k = 0; k < o->iso_count; k++) {
    if (o->isovalues[k] < v->value_min || o->isovalues[k] > v->value_max)
      fprintf(stderr, "inkray: warning: isovalue %g is outside %s's values [%g, %g]; nothing will be drawn\n",
              o->isovalues[k], v->name, v->value_min, v->value_max);
  }
  return 0;
}

static int build_configs(const hl_options *o, hl_config *configs) {
  int n = 0;
  for (int k = 0; k < o->iso_count; k++) {
    /* The single kernel and the plain caster ignore the method; pass the first chosen one. */
    ir_compact_method first = IR_COMPACT_INK_COMPACT;
    for (int m = IR_COMPACT_METHOD_COUNT - 1; m >= 0; m--)
      if (o->use_method[m]) first = (ir_compact_method)m;
    for (int p = 0; p < IR_PIPELINE_COUNT; p++) {
      if (!o->use_pipeline[p]) continue;
      if (ir_pipeline_compacts((ir_pipeline)p)) {
        for (int m = 0; m < IR_COMPACT_METHOD_COUNT; m++)
          if (o->use_method[m]) configs[n++] = (hl_config){o->isovalues[k], (ir_pipeline)p, (ir_compact_method)m};
      } else {
        configs[n++] = (hl_config){o->isovalues[k], (ir_pipeline)p, first};
      }
    }
  }
  return n;
}

/* ---- Report ----------------------------------------------------------------------------------- */

static void print_header(const hl_options *o, const ir_volume *v, const char *device_line, int config_count,
                         const char *up_from) {
  printf("inkray headless: %s\n", device_line);
  printf("volume %s: %zux%zux%zu %s, values %g..%g\n", v->name, v->dims[0], v->dims[1], v->dims[2],
         ir_voxel_type_name(v->type), v->value_min, v->value_max);
  printf("%dx%d, %d configuration%s, each %d timed frame%s after %d warm-up, orbit of %d view%s at %g deg elevation, "
         "up %s (%s)\n",
         o->width, o->height, config_count, config_count == 1 ? "" : "s", o->frames, o->frames == 1 ? "" : "s",
         o->warmup, o->orbit, o->orbit == 1 ? "" : "s", (double)o->elevation, ir_axis_name(o->up), up_from);
  if (o->device == IR_DEVICE_GPU && (o->use_pipeline[IR_PIPELINE_MULTI] || o->use_pipeline[IR_PIPELINE_PAPER])) {
    ir_frame_desc f = {.width = o->width, .height = o->height, .tail_rays = o->tail_rays};
    f.pipeline = IR_PIPELINE_MULTI;
    uint32_t multi = ir_frame_tail_rays(&f);
    f.pipeline = IR_PIPELINE_PAPER;
    uint32_t paper = ir_frame_tail_rays(&f);
    printf("tail kernel (the last rays of a frame finished in one kernel): multi %s%u rays, paper %s%u rays\n",
           o->tail_rays == 0 ? "automatic, " : "", multi, paper ? "" : "off, ", paper);
  }
}

static void print_summary(const hl_options *o, const hl_result *results, int n) {
  printf("\nframe time in ms (%s, whole frame, host work included)\n",
         o->device == IR_DEVICE_GPU ? "CUDA events" : "host clock");
  printf("%-10s %-8s %-13s %9s %9s %9s %8s %9s %9s\n", "isovalue", "pipeline", "method", "mean", "median",
         "p95", "sd", "FPS mean", "FPS med");
  for (int k = 0; k < n; k++) {
    const hl_result *r = &results[k];
    printf("%-10.5g %-8s %-13s %9.3f %9.3f %9.3f %8.3f %9.1f %9.1f\n", r->config.isovalue,
           ir_pipeline_name(r->config.pipeline), method_label(&r->config), r->mean_ms, r->median_ms,
           r->p95_ms, r->sd_ms, 1000.0 / r->mean_ms, 1000.0 / r->median_ms);
  }
  if (!o->stage_pass) return;
  if (o->device == IR_DEVICE_CPU) {
    /* The CPU renderer does each ray's whole march in one go: there are no stages to time, only
     * the rounds and ray counts of the diagnostic pass. */
    printf("\nper-stage split: GPU only (the CPU reference renderer times whole frames); ray counts "
           "from %d frame%s, one per view, means\n", o->orbit, o->orbit == 1 ? "" : "s");
    printf("%-10s %-8s %-13s %6s %9s %9s\n", "isovalue", "pipeline", "method", "rounds", "rays", "hits");
    for (int k = 0; k < n; k++) {
      const hl_result *r = &results[k];
      printf("%-10.5g %-8s %-13s %6.1f %9.0f %9.0f\n", r->config.isovalue, ir_pipeline_name(r->config.pipeline),
             method_label(&r->config), r->stages.iterations, r->stages.rays_generated, r->stages.rays_hit);
    }
    return;
  }
  printf("\nper-stage split in ms (diagnostic pass with per-stage timing; the GPU runs each frame again with events "
         "between stages; %d frame%s, one per view; means; they need not add up to a timed frame; the single kernel's "
         "and the plain caster's one kernel under shade; the multi pipeline shades inside intersect; secondary: the "
         "occlusion and shadow rays' own phase, where a pipeline has one)\n",
         o->orbit, o->orbit == 1 ? "" : "s");
  printf("%-10s %-8s %-13s %8s %8s %8s %9s %8s %9s %8s %8s %6s %9s %9s\n", "isovalue", "pipeline", "method", "bvh",
         "raygen", "traverse", "intersect", "shade", "secondary", "sum", "compact", "rounds", "rays", "hits");
  for (int k = 0; k < n; k++) {
    const hl_result *r = &results[k];
    const hl_stage_means *m = &r->stages;
    double sum = m->bvh_update_ms + m->raygen_ms + m->traverse_ms + m->intersect_ms + m->shade_ms + m->secondary_ms;
    printf("%-10.5g %-8s %-13s %8.3f %8.3f %8.3f %9.3f %8.3f %9.3f %8.3f %8.3f %6.1f %9.0f %9.0f\n",
           r->config.isovalue, ir_pipeline_name(r->config.pipeline), method_label(&r->config),
           m->bvh_update_ms, m->raygen_ms, m->traverse_ms, m->intersect_ms, m->shade_ms, m->secondary_ms, sum,
           m->compact_ms, m->iterations, m->rays_generated, m->rays_hit);
  }
}

/* One line saying what the look options draw, when any was given. */
static void print_look(const hl_options *o, const ir_volume *volume, const ir_volume *color_volume) {
  const app_look *look = &o->look;
  bool lit = look->ao_samples > 0 || look->shadows || look->light_on;
  if (!look->surface_count && !look->clip_box_on && !look->clip_plane_on && look->color_by == IR_COLOR_SURFACE &&
      !look->texture_refine && !(look->sample_step > 0.0f) && !lit)
    return;
  ir_frame_desc f;
  memset(&f, 0, sizeof f);
  app_look_apply(look, volume, &f);
  char line[1024];
  size_t n = 0;
  /* Appends, truncating at the line's end (n never points past it). */
#define HL_APPEND(...)                                                                                     \
  do {                                                                                                     \
    int wrote_ = snprintf(line + n, sizeof line - n, __VA_ARGS__);                                         \
    n += wrote_ < 0 ? 0 : (size_t)wrote_ < sizeof line - n ? (size_t)wrote_ : sizeof line - n - 1;         \
  } while (0)
  HL_APPEND("drawn:");
  if (f.surface_count == 0) HL_APPEND(" one opaque surface per isovalue");
  for (int k = 0; k < f.surface_count; k++) {
    const ir_surface *s = &f.surfaces[k];
    HL_APPEND("%s surface iso %g colour #%02x%02x%02x opacity %g", k ? "," : "", (double)s->isovalue,
              (unsigned)lroundf(s->color[0] * 255.0f), (unsigned)lroundf(s->color[1] * 255.0f),
              (unsigned)lroundf(s->color[2] * 255.0f), (double)s->opacity);
  }
  if (look->clip_box_on)
    HL_APPEND("; clip box x %g..%g y %g..%g z %g..%g voxels", (double)f.clip_lo[0], (double)f.clip_hi[0],
              (double)f.clip_lo[1], (double)f.clip_hi[1], (double)f.clip_lo[2], (double)f.clip_hi[2]);
  if (f.clip_plane_on)
    HL_APPEND("; clip plane %g,%g,%g,%g (keeps n.x + d >= 0)", (double)f.clip_plane[0], (double)f.clip_plane[1],
              (double)f.clip_plane[2], (double)f.clip_plane[3]);
  if (f.color_by == IR_COLOR_SURFACE) HL_APPEND("; surface colours");
  else
    HL_APPEND("; coloured by %s%s%s, %s over %g..%g%s", ir_color_source_name(f.color_by),
              f.color_by == IR_COLOR_VOLUME ? " " : "", f.color_by == IR_COLOR_VOLUME ? color_volume->name : "",
              ir_colormap_name(f.colormap), (double)f.color_range[0], (double)f.color_range[1],
              look->color_range_given ? "" : " (automatic)");
  HL_APPEND("; %s refinement", f.texture_refine ? "texture" : "exact");
  if (f.sample_step > 0.0f) HL_APPEND("; samples every %g voxels", (double)f.sample_step);
  if (f.ao_samples)
    HL_APPEND("; ambient occlusion %d rays of %g voxels%s", f.ao_samples,
              (double)(f.ao_radius > 0.0f ? f.ao_radius : IR_AO_RADIUS_DEFAULT),
              o->accumulate > 1 ? " (the PNG: the mean of --accumulate frames)" : "");
  if (f.shadows) HL_APPEND("; shadows");
  if (f.light_on) HL_APPEND("; light at azimuth %g, elevation %g", (double)f.light[0], (double)f.light[1]);
  else if (lit) HL_APPEND("; headlight");
#undef HL_APPEND
  printf("%s\n", line);
}

/* --mesh: the surfaces the frames drew, extracted on the run's device and written. */
static int write_mesh(const hl_options *o, const ir_volume *volume, const ir_volume *color_volume) {
  char err[IR_ERR_LEN] = {0};
  ir_extractor *ex = NULL;
  ir_extractor_desc xd = {.device = o->device == IR_DEVICE_GPU ? IR_EXTRACT_GPU : IR_EXTRACT_CPU,
                          .cpu_threads = o->cpu_threads};
  ir_extract_desc d;
  app_mesh_saved saved;
  ir_status status = ir_extractor_create(&xd, &ex, err);
  if (status == IR_OK) status = app_mesh_set_volume(ex, volume, color_volume->voxels ? color_volume : NULL, err);
  if (status == IR_OK && app_mesh_desc(&o->look, volume, o->iso_count < IR_EXTRACT_MAX_SURFACES ? o->iso_count : IR_EXTRACT_MAX_SURFACES,
                                       o->isovalues, o->look.surface_count > 0, o->look.color_range, &d) == 0) {
    snprintf(err, IR_ERR_LEN, "every surface has opacity 0: nothing to extract");
    status = IR_ERR_INPUT;
  }
  if (status == IR_OK) status = app_mesh_save(ex, &d, o->mesh_path, &saved, err);
  ir_extractor_destroy(ex);
  if (status != IR_OK) {
    fprintf(stderr, "inkray: --mesh: %s\n", err);
    return status == IR_ERR_INPUT ? 2 : 1;
  }
  if (saved.triangles == 0)
    printf("mesh: %s: the surface is empty; wrote a valid empty mesh\n", o->mesh_path);
  else
    printf("mesh: %s: %zu vertices, %zu triangles (extract %.1f ms, write %.1f ms)\n", o->mesh_path, saved.vertices,
           saved.triangles, saved.extract_ms, saved.write_ms);
  return 0;
}

/* ---- Entry point ------------------------------------------------------------------------------ */

typedef struct hl_state {
  app_opened opened;      /* the volume (or time series) and its renderer */
  const ir_volume *volume; /* the volume frames draw (a series: the step drawn) */
  ir_volume color_volume; /* --color-by FILE */
  float *depth;           /* --depth */
  ir_renderer *renderer;  /* opened.renderer */
  FILE *csv;
  double *frame_ms;
  uint8_t *image;
  uint8_t *references; /* one image per isovalue: the first configuration's last frame */
  hl_result *results;
  hl_config *configs;
} hl_state;

static void release(hl_state *st) {
  app_opened_close(&st->opened);
  if (st->csv) fclose(st->csv);
  free(st->frame_ms);
  free(st->depth);
  free(st->image);
  free(st->references);
  free(st->results);
  free(st->configs);
  ir_volume_free(&st->color_volume);
}

static int iso_index(const hl_options *o, double isovalue) {
  for (int k = 0; k < o->iso_count; k++)
    if (o->isovalues[k] == isovalue) return k;
  return 0;
}

/* Renders the last timed view of each isovalue on the CPU and compares with the GPU's image. */
static int verify_with_cpu(const hl_options *o, hl_state *st, int view) {
  ir_renderer *cpu = NULL;
  char err[IR_ERR_LEN] = {0};
  ir_renderer_desc desc = {.device = IR_DEVICE_CPU, .volume = st->volume, .cpu_threads = o->cpu_threads};
  if (ir_renderer_create(&desc, &cpu, err) != IR_OK) {
    fprintf(stderr, "inkray: --verify: cannot create the CPU renderer: %s\n", err);
    return 1;
  }
  if (st->color_volume.voxels && ir_renderer_set_color_volume(cpu, &st->color_volume, err) != IR_OK) {
    fprintf(stderr, "inkray: --verify: %s\n", err);
    ir_renderer_destroy(cpu);
    return 1;
  }
  size_t pixels = (size_t)o->width * (size_t)o->height;
  int rc = 0;
  printf("\nverify: GPU against the CPU reference renderer, view %d\n", view);
  for (int k = 0; k < o->iso_count && !rc; k++) {
    hl_config c = {o->isovalues[k], IR_PIPELINE_MULTI, IR_COMPACT_INK_COMPACT};
    hl_run run = {.o = o, .volume = st->volume, .renderer = cpu};
    ir_frame_desc frame = frame_for(&run, &c, view, false);
    ir_status s = IR_OK;
    if (o->accumulate <= 1) {
      s = ir_render_frame(cpu, &frame, NULL, err);
    } else {
      frame.accumulate = true; /* --accumulate: the same mean of frames as the GPU's picture */
      for (int a = 0; a < o->accumulate && s == IR_OK; a++) {
        frame.sample_frame = (uint32_t)a;
        s = ir_render_frame(cpu, &frame, NULL, err);
      }
    }
    if (s != IR_OK || ir_render_read_image(cpu, st->image, err) != IR_OK) {
      fprintf(stderr, "inkray: --verify: CPU rendering failed: %s\n", err);
      rc = 1;
      break;
    }
    int max_diff = 0;
    size_t differing = count_differing(st->image, st->references + (size_t)k * pixels * 4, pixels,
                                       HL_VERIFY_CHANNEL_TOLERANCE, &max_diff);
    double share = (double)differing / (double)pixels;
    bool lit = frame.ao_samples > 0 || frame.shadows || frame.light_on;
    bool ok = share <= (lit ? HL_VERIFY_MAX_DIFFERING_LIT : HL_VERIFY_MAX_DIFFERING);
    printf("verify: iso %g: %zu of %zu pixels differ by more than %d (%.3f%%, largest difference %d): %s\n",
           o->isovalues[k], differing, pixels, HL_VERIFY_CHANNEL_TOLERANCE, 100.0 * share, max_diff,
           ok ? "ok" : "MISMATCH");
    if (!ok) rc = 1;
  }
  ir_renderer_destroy(cpu);
  if (rc) fprintf(stderr, "inkray: --verify: the GPU image disagrees with the CPU reference renderer\n");
  return rc;
}

static int run_all(const hl_options *o, hl_state *st, int count) {
  size_t pixels = (size_t)o->width * (size_t)o->height;
  hl_run run = {.o = o, .volume = st->volume, .renderer = st->renderer, .csv = st->csv,
                .frame_ms = st->frame_ms, .depth = st->depth, .progress = !o->quiet && isatty(STDERR_FILENO)};
  int reference_of[HL_MAX_ISOVALUES]; /* configuration whose image is the isovalue's reference */
  for (int k = 0; k < HL_MAX_ISOVALUES; k++) reference_of[k] = -1;
  bool images_agree = true;
  for (int k = 0; k < count; k++) {
    int rc = run_config(&run, k, count, &st->configs[k], st->image, &st->results[k]);
    if (rc) return rc;
    /* The plain baseline caster steps differently (render.h): its image is not compared. */
    if (st->configs[k].pipeline == IR_PIPELINE_PLAIN) continue;
    int iso = iso_index(o, st->configs[k].isovalue);
    uint8_t *ref = st->references + (size_t)iso * pixels * 4;
    if (reference_of[iso] < 0) {
      memcpy(ref, st->image, pixels * 4);
      reference_of[iso] = k;
      continue;
    }
    const hl_config *first = &st->configs[reference_of[iso]];
    int max_diff = 0;
    size_t differing = count_differing(ref, st->image, pixels, 0, &max_diff);
    if (differing) {
      if (run.progress) fputc('\n', stderr);
      fprintf(stderr, "inkray: warning: iso %g: %s pipeline with %s renders %zu pixels differently from %s with %s "
              "(largest difference %d)\n", st->configs[k].isovalue, ir_pipeline_name(st->configs[k].pipeline),
              method_label(&st->configs[k]), differing, ir_pipeline_name(first->pipeline),
              method_label(first), max_diff);
      images_agree = false;
    }
  }
  if (run.progress) fputs("\r\033[K", stderr);
  if (count > 1 && images_agree)
    printf("check: every configuration of each isovalue rendered the same last frame%s\n",
           o->use_pipeline[IR_PIPELINE_PLAIN] ? " (plain baseline not compared)" : "");
  return 0;
}

/* ---- Time series ------------------------------------------------------------------------------ */
static double wall_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + 1e-6 * (double)t.tv_nsec;
}

static double median_of(double *v, size_t n) {
  if (n == 0) return 0.0;
  qsort(v, n, sizeof *v, compare_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* --png with a %d in the name: one file per step, numbered from 0; else the last step's. */
static int write_step_png(const hl_options *o, size_t step, size_t steps, const uint8_t *image) {
  if (!o->png_path || (!strchr(o->png_path, '%') && step + 1 != steps)) return 0;
  char path[4096], err[IR_ERR_LEN] = {0};
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#endif
  if (strchr(o->png_path, '%')) snprintf(path, sizeof path, o->png_path, (int)step);
  else snprintf(path, sizeof path, "%s", o->png_path);
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
  if (!app_write_png(path, o->width, o->height, image, err)) {
    fprintf(stderr, "inkray: %s\n", err);
    return 1;
  }
  return 0;
}

/* Every step of the series, in order, one frame each from the orbit's first view, with the
 * first configuration; the player reads the next steps while a step is drawn. One line per
 * step with what it cost, then the rates. */
static int run_series(const hl_options *o, hl_state *st, int count) {
  app_opened *op = &st->opened;
  const hl_config *c = &st->configs[0];
  size_t n = ir_series_length(op->series);
  const ir_volume *h = ir_series_header(op->series);
  if (count > 1)
    printf("note: a time series is drawn with the first configuration only (iso %g, %s, %s)\n", c->isovalue,
           ir_pipeline_name(c->pipeline), method_label(c));
  printf("time series %s: %zu steps of %zux%zux%zu %s (%.1f MiB each), %s .. %s\n", h->name, n, h->dims[0], h->dims[1],
         h->dims[2], ir_voxel_type_name(h->type), (double)op->bytes / (1024.0 * 1024.0),
         ir_series_step_name(op->series, 0), ir_series_step_name(op->series, n - 1));
  hl_run run = {.o = o, .volume = st->volume, .renderer = st->renderer, .csv = st->csv, .frame_ms = st->frame_ms};
  ir_frame_stats s;
  int rc = 0;
  for (int f = 0; f < o->warmup && !rc; f++) rc = render_one(&run, c, 0, false, &s);
  double *load = calloc(n, sizeof *load), *upload = calloc(n, sizeof *upload), *ranges = calloc(n, sizeof *ranges);
  double *render = calloc(n, sizeof *render), *wait = calloc(n, sizeof *wait);
  if (!load || !upload || !ranges || !render || !wait) {
    fprintf(stderr, "inkray: out of memory for %zu steps' timings\n", n);
    rc = 1;
  }
  if (!rc) printf("%-9s %-28s %9s %9s %9s %8s %9s\n", "step", "file", "load ms", "upload ms", "ranges ms", "wait ms",
                  "render ms");
  app_player_aim(op->player, 0, 1, false);
  double start = wall_ms();
  for (size_t k = 0; k < n && !rc; k++) {
    app_step_info info;
    double t0 = wall_ms();
    int shown = app_player_show(op->player, k, true, &info);
    wait[k] = wall_ms() - t0;
    if (shown != 0) {
      fprintf(stderr, "inkray: %s\n", info.err);
      rc = info.status == IR_ERR_INPUT ? 2 : 1;
      break;
    }
    run.volume = st->volume = app_player_volume(op->player);
    if ((rc = render_one(&run, c, 0, false, &s)) != 0) break;
    ir_slot_times t = {0};
    char err[IR_ERR_LEN] = "";
    if (ir_renderer_slot_times(st->renderer, info.slot, &t, err) != IR_OK) fprintf(stderr, "inkray: %s\n", err);
    load[k] = k == 0 ? op->read_s * 1000.0 : info.load_ms;
    upload[k] = t.upload_ms;
    ranges[k] = t.ranges_ms;
    render[k] = s.frame_ms;
    printf("%4zu/%-4zu %-28.28s %9.2f %9.2f %9.2f %8.2f %9.3f\n", k + 1, n, ir_series_step_name(op->series, k), load[k],
           upload[k], ranges[k], wait[k], render[k]);
    if (st->csv) csv_row(st->csv, (int)k, o, st->volume, c, "step", (int)k, 0, 0.0f, &s);
    if (o->png_path && (strchr(o->png_path, '%') || k + 1 == n)) {
      char err2[IR_ERR_LEN] = "";
      if (ir_render_read_image(st->renderer, st->image, err2) != IR_OK) {
        fprintf(stderr, "inkray: reading the image back failed: %s\n", err2);
        rc = 1;
      } else {
        rc = write_step_png(o, k, n, st->image);
      }
    }
  }
  double total_ms = wall_ms() - start;
  if (!rc) {
    double mib = (double)op->bytes / (1024.0 * 1024.0), gb = (double)op->bytes / 1e9;
    printf("\nseries: %zu steps in %.3f s: %.1f steps/s, %.2f GB/s of voxels\n", n, total_ms / 1000.0,
           1000.0 * (double)n / total_ms, gb * (double)n / (total_ms / 1000.0));
    double ml = median_of(load, n), mu = median_of(upload, n), mr = median_of(ranges, n), mf = median_of(render, n),
           mw = median_of(wait, n);
    printf("medians per step: load %.2f ms (%.2f GB/s), upload %.2f ms, ranges %.2f ms, render %.3f ms, waiting for the "
           "step %.2f ms\n", ml, ml > 0 ? gb / (ml / 1000.0) : 0.0, mu, mr, mf, mw);
    /* Loads run beside the frames; the slower of the two paces playback. */
    double bound = ml + mu > mf + mr ? ml + mu : mf + mr;
    printf("bound: %.0f steps/s by the %s (%.1f MiB a step; steps are read, copied and drawn at once)\n",
           bound > 0 ? 1000.0 / bound : 0.0, ml + mu > mf + mr ? "read and upload" : "frames and ranges", mib);
    if (o->png_path) printf("\n%s: %s\n", strchr(o->png_path, '%') ? "step images" : "last step", o->png_path);
  }
  if (!rc && o->look.depth_path) {
    char err[IR_ERR_LEN] = "";
    if (ir_render_read_depth(st->renderer, st->depth, err) != IR_OK ||
        !app_write_depth(o->look.depth_path, o->width, o->height, st->depth, err)) {
      fprintf(stderr, "inkray: %s\n", err);
      rc = 1;
    } else {
      printf("last step's depth: %s\n", o->look.depth_path);
    }
  }
  free(load);
  free(upload);
  free(ranges);
  free(render);
  free(wait);
  return rc;
}

/* Under mpirun: one configuration per isovalue. Returns -1 to go on, else the exit status. */
static int check_distributed(const hl_options *o) {
  int methods = 0, pipelines = 0;
  for (int m = 0; m < IR_COMPACT_METHOD_COUNT; m++) methods += o->use_method[m];
  for (int p = 0; p < IR_PIPELINE_COUNT; p++) pipelines += o->use_pipeline[p];
  if (o->mesh_path)
    return bad_option("--mesh extracts on one process: run inkray extract (or inkray --headless without mpirun)%s%s",
                      "", "");
  if (pipelines != 1 || methods != 1 || o->verify || o->suggested_wanted)
    return bad_option("a distributed run renders one pipeline with one --method, and takes no --verify or "
                      "--iso suggested%s%s", "", "");
  const app_look *look = &o->look;
  /* Occlusion and shadow rays are drawn where every rank holds the whole volume (the scene
   * refuses them over bricks, dist.h); an accumulated mean is not: its frames' bands move, so a
   * pixel's frames are drawn by different ranks, each with its own sums. */
  if (o->accumulate)
    return bad_option("--accumulate is not drawn in a distributed run: a pixel's frames may be drawn by different "
                      "ranks; run without mpirun%s%s", "", "");
  /* No rank holds the whole volume: a gradient range measured on bricks would differ from the
   * whole volume's (their faces, their subsamples). */
  if (look->color_by == IR_COLOR_GRADIENT && !look->color_range_given)
    return bad_option("--color-by gradient in a distributed run needs --color-range LO,HI: no rank holds the "
                      "whole volume to measure it%s%s", "", "");
  return -1;
}

/* Under mpirun: the same options, rendered by dist_headless.c over the ranks. */
static int run_distributed(int argc, char **argv, const hl_options *given) {
  /* The size, frame and orbit defaults of the device, as for one process (an orbit of 0 views
   * would divide by zero). */
  hl_options defaults = *given;
  apply_device_defaults(&defaults);
  const hl_options *o = &defaults;
  int method = IR_COMPACT_INK_COMPACT, pipeline = IR_PIPELINE_DEFAULT;
  for (int m = IR_COMPACT_METHOD_COUNT - 1; m >= 0; m--)
    if (o->use_method[m]) method = m;
  for (int p = IR_PIPELINE_COUNT - 1; p >= 0; p--)
    if (o->use_pipeline[p]) pipeline = p;
  app_dist_options d = {.volume = o->volume, .device = o->device, .cpu_threads = o->cpu_threads,
                        .width = o->width, .height = o->height, .frames = o->frames, .warmup = o->warmup,
                        .orbit = o->orbit, .elevation = o->elevation, .distance = o->distance,
                        .up = (int)o->up, .iso_count = o->iso_count, .isovalues = o->isovalues,
                        .pipeline = pipeline,
                        .method = method, .tail_rays = (unsigned)o->tail_rays, .png_path = o->png_path,
                        .csv_path = o->csv_path, .look = &o->look};
  /* Surfaces are drawn together in one configuration, labelled by the first one's isovalue. */
  double first_surface = o->look.surface_count > 0 ? o->look.surfaces[0].isovalue : 0.0;
  if (o->look.surface_count > 0) d.iso_count = 1, d.isovalues = &first_surface;
  return app_dist_headless(argc, argv, &d);
}

int app_headless_main(int argc, char **argv) {
  hl_options o;
  /* Under mpirun every rank parses the same options: rank 0 alone reports a bad one and fails
   * the job; the others leave quietly with 0, since a rank failing first would have mpirun
   * abort the job, rank 0 possibly before it has said why. */
  int saved_stderr = -1;
  if (app_dist_requested() && app_dist_launched_rank() > 0) {
    fflush(stderr);
    saved_stderr = dup(STDERR_FILENO);
    int null_fd = open("/dev/null", O_WRONLY);
    if (null_fd >= 0) dup2(null_fd, STDERR_FILENO), close(null_fd);
  }
  int rc = parse_options(argc, argv, &o);
  if (rc < 0 && app_dist_requested()) rc = check_distributed(&o);
  if (saved_stderr >= 0) {
    fflush(stderr);
    dup2(saved_stderr, STDERR_FILENO);
    close(saved_stderr);
    if (rc > 0) return 0;
  }
  if (rc >= 0) return rc;
  if (app_dist_requested()) return run_distributed(argc, argv, &o);

  if ((rc = check_outputs(&o)) != 0) return rc;
  /* Like the window: with no CUDA device the default GPU renderer gives way to the CPU one.
   * An explicit --device gpu (or --verify) still needs the GPU: its timings mean the GPU. */
  if (o.device == IR_DEVICE_GPU && !o.device_given && !o.verify) {
    int devices = 0;
    cudaError_t e = cudaGetDeviceCount(&devices);
    if (e != cudaSuccess || devices == 0) {
      fprintf(stderr, "inkray: no CUDA device (%s); using the CPU reference renderer\n",
              e != cudaSuccess ? cudaGetErrorString(e) : "none found");
      o.device = IR_DEVICE_CPU;
    }
  }
  apply_device_defaults(&o);

  char device_line[512] = "CPU reference renderer";
  if (o.device == IR_DEVICE_GPU && (rc = describe_gpu(device_line, sizeof device_line)) != 0) return rc;
  if (o.device == IR_DEVICE_CPU) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    snprintf(device_line, sizeof device_line, "CPU reference renderer, %d thread%s", o.cpu_threads ? o.cpu_threads : (int)cores,
             (o.cpu_threads ? o.cpu_threads : cores) == 1 ? "" : "s");
  }

  hl_state st;
  memset(&st, 0, sizeof st);
  /* The volume and its renderer (streamed to the GPU while read, statistics computed there);
   * --quiet: no load progress either. */
  app_open_desc open_desc = {.volume = &o.volume, .device = o.device, .cpu_threads = o.cpu_threads, .quiet = o.quiet};
  rc = app_open(&open_desc, &st.opened);
  if (rc == 0) rc = app_open_finish(&st.opened);
  if (rc != 0) {
    release(&st);
    return rc;
  }
  if (st.opened.series && o.accumulate > 1) {
    fprintf(stderr, "inkray: --accumulate averages frames of one view; a time series draws each step once: "
                    "leave --accumulate out\n");
    release(&st);
    return 2;
  }
  st.renderer = st.opened.renderer;
  st.volume = st.opened.series ? app_player_volume(st.opened.player) : &st.opened.volume;
  if (o.quiet) o.volume.progress_min_bytes = SIZE_MAX;
  if (o.look.color_by == IR_COLOR_VOLUME) {
    /* The second volume is read like the first: the same format options, its own file. */
    ir_volume_desc color_desc = app_look_color_desc(&o.look, &o.volume);
    color_desc.level = st.volume->level; /* the level the volume was read at: the same dims */
    if ((rc = cli_load_volume(&color_desc, &st.color_volume)) != 0) {
      release(&st);
      return rc;
    }
  }
  const char *up_from = "--up";
  if (o.up == IR_AXIS_NONE) up_from = st.volume->up_axis != IR_AXIS_NONE ? st.volume->up_source : "default";
  o.up = app_up_axis(o.up, st.volume);
  resolve_isovalues(st.volume, &st.opened.stats, &o);

  size_t pixels = (size_t)o.width * (size_t)o.height;
  st.configs = calloc(HL_MAX_CONFIGS, sizeof *st.configs);
  st.results = calloc(HL_MAX_CONFIGS, sizeof *st.results);
  st.frame_ms = calloc((size_t)o.frames, sizeof *st.frame_ms);
  st.image = malloc(pixels * 4);
  st.references = malloc(pixels * 4 * (size_t)o.iso_count);
  if (o.look.depth_path) st.depth = malloc(pixels * sizeof *st.depth);
  if (!st.configs || !st.results || !st.frame_ms || !st.image || !st.references || (o.look.depth_path && !st.depth)) {
    fprintf(stderr, "inkray: out of host memory for %dx%d images; try a smaller --size\n", o.width, o.height);
    release(&st);
    return 1;
  }
  int count = build_configs(&o, st.configs);

  char err[IR_ERR_LEN] = {0};
  ir_status status = IR_OK;
  if (st.color_volume.voxels) {
    status = ir_renderer_set_color_volume(st.renderer, &st.color_volume, err);
    if (status != IR_OK) {
      fprintf(stderr, "inkray: --color-by: %s\n", err);
      release(&st);
      return status == IR_ERR_INPUT ? 2 : 1;
    }
  }
  if (o.look.color_by != IR_COLOR_SURFACE && !o.look.color_range_given)
    ir_color_range_auto(st.volume, st.color_volume.voxels ? &st.color_volume : NULL, o.look.color_by,
                        o.look.color_range);
  if (o.csv_path) {
    st.csv = fopen(o.csv_path, "w");
    if (!st.csv) {
      fprintf(stderr, "inkray: cannot write --csv '%s': %s\n", o.csv_path, strerror(errno));
      release(&st);
      return 2;
    }
    fputs(csv_header, st.csv);
  }

  print_header(&o, st.volume, device_line, count, up_from);
  print_look(&o, st.volume, &st.color_volume);
  if (!o.quiet) app_open_report(&st.opened);
  fflush(stdout);
  if (st.opened.series) {
    rc = run_series(&o, &st, count);
    release(&st);
    return rc;
  }
  rc = run_all(&o, &st, count);
  if (rc == 0) {
    print_summary(&o, st.results, count);
    if (o.png_path) {
      if (!app_write_png(o.png_path, o.width, o.height, st.image, err)) {
        fprintf(stderr, "inkray: %s\n", err);
        rc = 1;
      } else {
        printf("\nlast frame: %s\n", o.png_path);
      }
    }
    if (rc == 0 && o.look.depth_path) {
      if (!app_write_depth(o.look.depth_path, o.width, o.height, st.depth, err)) {
        fprintf(stderr, "inkray: %s\n", err);
        rc = 1;
      } else {
        printf("last frame's depth: %s\n", o.look.depth_path);
      }
    }
  }
  if (rc == 0 && st.csv && (fflush(st.csv) != 0 || ferror(st.csv))) {
    fprintf(stderr, "inkray: writing --csv '%s' failed: %s\n", o.csv_path, strerror(errno));
    rc = 1;
  }
  if (rc == 0 && o.csv_path) printf("per-frame CSV: %s\n", o.csv_path);
  if (rc == 0 && o.mesh_path) rc = write_mesh(&o, st.volume, &st.color_volume);
  if (rc == 0 && o.verify) rc = verify_with_cpu(&o, &st, (o.frames - 1) % o.orbit);
  release(&st);
  return rc;
}
