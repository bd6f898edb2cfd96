/* inkray extract VOLUME --iso V -o mesh.ply: the isosurface(s) of a volume as a triangle mesh file
 * (binary PLY, binary STL or OBJ by extension), on the GPU with the chosen compaction method(s) or
 * on the CPU reference.
 *
 * It takes the look options that apply to a mesh (--surface, --clip-box, --clip-plane, --color-by,
 * --colormap, --color-range) with the renderer's meaning, and the volume options. Bad input is
 * refused with one line and exit status 2 before the volume is loaded; the output file is checked
 * first. With several methods it extracts with each, prints each one's time and checks that they
 * give the same mesh byte for byte; the file holds the first method's mesh.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "app/app.h"

typedef struct ex_options {
  ir_volume_desc volume;
  app_look look;
  int iso_count;
  float isovalues[IR_EXTRACT_MAX_SURFACES];
  int suggested_wanted; /* --iso suggested[:N]: 0 not asked, -1 all (up to 4), N that many */
  const char *output;
  ir_extract_device device;
  bool device_given;
  bool use_method[IR_COMPACT_METHOD_COUNT];
  int repeat;
  int threads;
  bool quiet;
} ex_options;

static void print_help(FILE *to) {
  fputs("Usage: inkray extract [OPTIONS] VOLUME --iso V -o MESH\n"
        "\n"
        "Extracts the isosurface(s) of VOLUME as a triangle mesh (marching cubes): one welded vertex\n"
        "per crossed grid edge, with normals from the gradient, in the volume's world coordinates\n"
        "(spacing and origin). MESH is a .ply (binary), .stl (binary) or .obj file; it is written\n"
        "whole under a temporary name and renamed, so a failed run leaves nothing under MESH.\n"
        "\n"
        "Options:\n"
        "  -o, --output MESH     the mesh file (required)\n"
        "  --iso V[,V...]        isovalue(s) in data units, up to 4 (default: the volume's first\n"
        "                        suggested isovalue, as inkray info lists them)\n"
        "  --iso suggested[:N]   the isovalues the volume's histogram suggests (up to 4, or the N\n"
        "                        best), in ascending order\n"
        "  --device gpu|cpu      where to extract (default gpu; without a CUDA device: cpu)\n"
        "  --method NAME[,NAME...]|all   GPU compaction method(s) (default ink-compact): each one\n"
        "                        extracts the mesh and prints its time; they must agree byte for\n"
        "                        byte. NAME is one of:\n",
        to);
  const ir_compact_method_info *methods = ir_compact_methods();
  for (int m = 0; m < IR_COMPACT_METHOD_COUNT; m++)
    fprintf(to, "                          %-13s %s\n", methods[m].name, methods[m].description);
  fputs("  --repeat N            time N extractions per method after one warm-up (default 1, none)\n"
        "  --threads N           CPU threads (default: all cores)\n"
        "  --quiet               print only errors\n"
        "  --help                this text\n"
        "\n"
        "Look options that apply to a mesh (the renderer's meaning; inkray --headless --help):\n"
        "  --surface ISO[:COLOR[:OPACITY]]  a surface (repeat for up to 4; replaces --iso); a COLOR\n"
        "                        writes per-vertex colours (alpha = OPACITY)\n"
        "  --clip-box X0,X1,Y0,Y1,Z0,Z1  keep the cells whose centre lies in this box (fractions 0..1)\n"
        "  --clip-plane NX,NY,NZ,D  keep the cells whose centre x has n.x + D >= 0 (world units, the\n"
        "                        volume spanning 0..dims*spacing)\n"
        "  --color-by gradient|FILE|channel:N  per-vertex colours from the colour map of the gradient\n"
        "                        magnitude, of a second volume FILE or of channel N of the same\n"
        "                        OME-Zarr source; the vertex value (PLY 'value') is that\n"
        "                        quantity (else the isovalue)\n"
        "  --colormap NAME, --color-range LO,HI  as for rendering\n"
        "\n"
        "Exit status: 0 done (also for an empty surface, which writes a valid empty file), 1 runtime\n"
        "failure (GPU, memory, disk), 2 bad input.\n"
        "Example: inkray extract builtin:fractal:256 --iso 127.5 -o fractal.ply\n"
        "\n",
        to);
  cli_print_volume_options(to);
}

static int bad(const char *fmt, const char *a) {
  fputs("inkray extract: ", stderr);
  fprintf(stderr, fmt, a);
  fputs(" (see inkray extract --help)\n", stderr);
  return 2;
}

/* --iso V[,V...] | suggested[:N], as for rendering. */
static int parse_isovalues(const char *text, ex_options *o) {
  char err[IR_ERR_LEN] = {0};
  double values[IR_EXTRACT_MAX_SURFACES];
  if (!app_parse_isovalues(text, IR_EXTRACT_MAX_SURFACES, values, &o->iso_count, &o->suggested_wanted, err))
    return bad("%s", err);
  for (int k = 0; k < o->iso_count; k++) o->isovalues[k] = (float)values[k];
  return 0;
}

/* Returns -1 to go on, else the exit status (0 after --help). */
static int parse_options(int argc, char **argv, ex_options *o) {
  memset(o, 0, sizeof *o);
  app_look_init(&o->look);
  o->use_method[IR_COMPACT_INK_COMPACT] = true;
  o->repeat = 1;
  bool iso_given = false;
  for (int i = 1; i < argc; i++) {
    const char *opt = argv[i];
    char err[IR_ERR_LEN] = {0};
    if (strcmp(opt, "--help") == 0 || strcmp(opt, "-h") == 0) {
      print_help(stdout);
      return 0;
    }
    int used = cli_parse_volume_option(argc, argv, &i, &o->volume, err);
    if (used == 0) used = cli_parse_look_option(argc, argv, &i, &o->look, err);
    if (used < 0) return bad("%s", err);
    if (used > 0) {
      if (strcmp(opt, "--refine") == 0 || strcmp(opt, "--depth") == 0 || strcmp(opt, "--step") == 0)
        return bad("%s is a rendering option; a mesh has no refinement, sample step or depth image", opt);
      continue;
    }
    if (strcmp(opt, "--quiet") == 0) {
      o->quiet = true;
      continue;
    }
    if (opt[0] != '-' || opt[1] == '\0') {
      if (o->volume.source) return bad("one volume at a time ('%s' given twice)", opt);
      o->volume.source = opt;
      continue;
    }
    static const char *const with_value[] = {"-o", "--output", "--iso", "--device", "--method", "--repeat", "--threads", NULL};
    bool known = false;
    for (int k = 0; with_value[k]; k++) known = known || strcmp(opt, with_value[k]) == 0;
    if (!known) return bad("unknown option '%s'", opt);
    if (i + 1 >= argc) return bad("%s needs a value", opt);
    const char *value = argv[++i];
    int rc = 0;
    long n = 0;
    if (strcmp(opt, "-o") == 0 || strcmp(opt, "--output") == 0) {
      o->output = value;
    } else if (strcmp(opt, "--iso") == 0) {
      iso_given = true;
      rc = parse_isovalues(value, o);
    } else if (strcmp(opt, "--device") == 0) {
      if (strcmp(value, "gpu") == 0) o->device = IR_EXTRACT_GPU;
      else if (strcmp(value, "cpu") == 0) o->device = IR_EXTRACT_CPU;
      else rc = bad("--device '%s': use gpu or cpu", value);
      o->device_given = true;
    } else if (strcmp(opt, "--method") == 0) {
      char err2[IR_ERR_LEN] = {0};
      if (!app_parse_methods(value, o->use_method, err2)) rc = bad("%s", err2);
    } else if (strcmp(opt, "--repeat") == 0) {
      if (!cli_parse_int(value, 1, 100000, &n)) rc = bad("--repeat '%s': expected a whole number from 1 to 100000", value);
      o->repeat = (int)n;
    } else {
      if (!cli_parse_int(value, 1, 4096, &n)) rc = bad("--threads '%s': expected a whole number from 1 to 4096", value);
      o->threads = (int)n;
    }
    if (rc) return rc;
  }
  if (!o->volume.source) return bad("no volume given; e.g. inkray extract %s --iso 127.5 -o mesh.ply", IR_DEFAULT_VOLUME);
  if (!o->output) return bad("no mesh file given; add -o MESH.ply (or .stl, .obj)%s", "");
  if (iso_given && o->look.surface_count > 0)
    return bad("--surface and --iso both given: the surfaces replace the isovalues; give one or the other%s", "");
  if (o->look.surface_count > 0) {
    o->iso_count = o->look.surface_count;
    for (int k = 0; k < o->iso_count; k++) o->isovalues[k] = o->look.surfaces[k].isovalue;
  }
  return -1;
}

/* ---- Running ---------------------------------------------------------------------------------- */
static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static bool same_mesh(const ir_mesh *a, const ir_mesh *b) {
  if (a->vertex_count != b->vertex_count || a->triangle_count != b->triangle_count) return false;
  size_t v = a->vertex_count, t = a->triangle_count;
  return memcmp(a->positions, b->positions, v * 12) == 0 && memcmp(a->normals, b->normals, v * 12) == 0 &&
         memcmp(a->values, b->values, v * 4) == 0 && memcmp(a->triangles, b->triangles, t * 12) == 0 &&
         (!a->colors || memcmp(a->colors, b->colors, v * 4) == 0);
}

/* The extraction description for the look options (colours, clipping) on volume v: colours when
 * --color-by asks for a map, or when a --surface names its colour. */
static void fill_desc(const ex_options *o, const ir_volume *v, const ir_volume *color_volume, ir_extract_desc *d) {
  bool surface_colors = false;
  for (int k = 0; k < o->look.surface_count; k++) surface_colors = surface_colors || o->look.surfaces[k].color[0] >= 0.0f;
  float range[2] = {o->look.color_range[0], o->look.color_range[1]};
  if (o->look.color_by != IR_COLOR_SURFACE && !o->look.color_range_given)
    ir_color_range_auto(v, color_volume, o->look.color_by, range);
  double isovalues[IR_EXTRACT_MAX_SURFACES];
  for (int k = 0; k < o->iso_count; k++) isovalues[k] = o->isovalues[k];
  app_mesh_desc(&o->look, v, o->iso_count, isovalues, surface_colors, range, d);
}

typedef struct ex_state {
  ir_volume volume, color_volume;
  ir_extractor *ex;
  ir_mesh mesh, other;
  double *times;
} ex_state;

static void release(ex_state *st) {
  ir_mesh_free(&st->mesh);
  ir_mesh_free(&st->other);
  ir_extractor_destroy(st->ex);
  ir_volume_free(&st->volume);
  ir_volume_free(&st->color_volume);
  free(st->times);
}

static int fail(const char *what, ir_status status, const char *err) {
  fprintf(stderr, "inkray extract: %s: %s\n", what, err);
  return status == IR_ERR_INPUT ? 2 : 1;
}

/* Times `repeat` extractions to device buffers (GPU) after one warm-up; fills median and minimum. */
static int time_method(const ex_options *o, ex_state *st, ir_extract_desc d, double *median, double *best) {
  char err[IR_ERR_LEN] = {0};
  ir_extract_stats s;
  ir_mesh m;
  d.output = o->device == IR_EXTRACT_GPU ? IR_MESH_DEVICE : IR_MESH_HOST;
  for (int r = -1; r < o->repeat; r++) {
    ir_status status = ir_extract(st->ex, &d, &m, &s, err);
    if (status != IR_OK) return fail("extraction failed", status, err);
    ir_mesh_free(&m);
    if (r >= 0) st->times[r] = s.device_ms;
  }
  qsort(st->times, (size_t)o->repeat, sizeof *st->times, compare_double);
  *median = o->repeat % 2 ? st->times[o->repeat / 2] : 0.5 * (st->times[o->repeat / 2 - 1] + st->times[o->repeat / 2]);
  *best = st->times[0];
  return 0;
}

/* Resolves the device: without a CUDA device the default GPU gives way to the CPU (an explicit
 * --device gpu does not: its timings must mean the GPU). Returns 0 or the exit status. */
static int resolve_device(ex_options *o) {
  if (o->device != IR_EXTRACT_GPU) return 0;
  int devices = 0;
  cudaError_t e = cudaGetDeviceCount(&devices);
  if (e == cudaSuccess && devices > 0) return 0;
  if (o->device_given) {
    fprintf(stderr, "inkray extract: no CUDA device (%s); use --device cpu to extract on the CPU\n",
            e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    return 1;
  }
  if (!o->quiet)
    fprintf(stderr, "inkray extract: no CUDA device (%s); extracting on the CPU\n",
            e != cudaSuccess ? cudaGetErrorString(e) : "none found");
  o->device = IR_EXTRACT_CPU;
  return 0;
}

/* Isovalues when none are given: the first one the histogram suggests (inkray info). */
static int compare_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

static void resolve_isovalues(ex_options *o, const ir_volume *v) {
  if (o->suggested_wanted) {
    /* The best-scored suggestions (the list comes best first), ascending like a sweep's. */
    ir_volume_stats st;
    ir_volume_compute_stats(v, &st);
    int n = o->suggested_wanted < 0 || o->suggested_wanted > st.suggested_count ? st.suggested_count
                                                                                : o->suggested_wanted;
    if (n > IR_EXTRACT_MAX_SURFACES) n = IR_EXTRACT_MAX_SURFACES;
    for (int k = 0; k < n; k++) o->isovalues[o->iso_count++] = (float)st.suggested_isovalues[k];
    qsort(o->isovalues, (size_t)o->iso_count, sizeof o->isovalues[0], compare_float);
    if (o->iso_count == 0) o->isovalues[o->iso_count++] = (float)(0.5 * (st.min + st.max));
    if (!o->quiet) {
      printf("isovalues");
      for (int k = 0; k < o->iso_count; k++) printf(" %g", (double)o->isovalues[k]);
      printf(" (suggested by the volume's histogram)\n");
    }
  } else if (o->iso_count == 0) {
    double builtin = ir_builtin_isovalue(o->volume.source);
    if (!isnan(builtin)) {
      o->isovalues[o->iso_count++] = (float)builtin;
    } else {
      ir_volume_stats st;
      ir_volume_compute_stats(v, &st);
      o->isovalues[o->iso_count++] = (float)(st.suggested_count ? st.suggested_isovalues[0] : 0.5 * (st.min + st.max));
    }
    if (!o->quiet) printf("isovalue %g (not given: the volume's suggested one)\n", (double)o->isovalues[0]);
  }
  for (int k = 0; k < o->iso_count; k++)
    if (!(o->isovalues[k] >= v->value_min && o->isovalues[k] <= v->value_max) && !o->quiet)
      fprintf(stderr, "inkray extract: warning: isovalue %g is outside %s's values [%g, %g]: its surface is empty\n",
              (double)o->isovalues[k], v->name, v->value_min, v->value_max);
}

int app_extract_main(int argc, char **argv) {
  ex_options o;
  int rc = parse_options(argc, argv, &o);
  if (rc >= 0) return rc;
  char err[IR_ERR_LEN] = {0};
  /* The output first: a typo in a folder name should not cost a load and an extraction. */
  ir_status status = ir_mesh_check_output(o.output, err);
  if (status != IR_OK) return bad("%s", err);
  if ((rc = resolve_device(&o)) != 0) return rc;
  ex_state st;
  memset(&st, 0, sizeof st);
  st.times = calloc((size_t)o.repeat, sizeof *st.times);
  if (!st.times) {
    fprintf(stderr, "inkray extract: out of host memory\n");
    return 1;
  }
  double t_start = now_ms();
  if (o.quiet) o.volume.progress_min_bytes = SIZE_MAX;
  if ((rc = cli_load_volume(&o.volume, &st.volume)) != 0) {
    release(&st);
    return rc;
  }
  if (o.look.color_by == IR_COLOR_VOLUME) {
    ir_volume_desc color_desc = app_look_color_desc(&o.look, &o.volume);
    color_desc.level = st.volume.level;
    if ((rc = cli_load_volume(&color_desc, &st.color_volume)) != 0) {
      release(&st);
      return rc;
    }
  }
  double t_loaded = now_ms();
  resolve_isovalues(&o, &st.volume);
  ir_extractor_desc xd = {.device = o.device, .cpu_threads = o.threads};
  if ((status = ir_extractor_create(&xd, &st.ex, err)) != IR_OK) {
    release(&st);
    return fail("cannot start the extractor", status, err);
  }
  if ((status = app_mesh_set_volume(st.ex, &st.volume, st.color_volume.voxels ? &st.color_volume : NULL, err)) != IR_OK) {
    release(&st);
    return fail(st.volume.name, status, err);
  }
  double t_uploaded = now_ms();
  ir_extract_desc d;
  fill_desc(&o, &st.volume, st.color_volume.voxels ? &st.color_volume : NULL, &d);
  if (d.surface_count == 0) {
    release(&st);
    return bad("every --surface has opacity 0 (hidden): nothing to extract%s", "");
  }
  if (!o.quiet) {
    printf("inkray extract: %s (%zux%zux%zu %s), %d surface%s, on the %s\n", st.volume.name, st.volume.dims[0],
           st.volume.dims[1], st.volume.dims[2], ir_voxel_type_name(st.volume.type), o.iso_count,
           o.iso_count == 1 ? "" : "s", o.device == IR_EXTRACT_GPU ? "GPU" : "CPU");
    if (o.repeat > 1)
      printf("%-13s %10s %10s  (%d extractions each after a warm-up; %s)\n", "method", "median ms", "min ms", o.repeat,
             o.device == IR_EXTRACT_GPU ? "CUDA events, to device buffers" : "host clock");
  }
  /* Each method (the CPU has none: one run), its time, and its mesh against the first. */
  int methods = 0, chosen = 0;
  bool agree = true;
  for (int m = 0; m < IR_COMPACT_METHOD_COUNT; m++) chosen += o.use_method[m];
  /* One mesh on the GPU: it stays in the extractor's buffers and the writer downloads it chunk by
   * chunk while writing the chunks before (ir_mesh_write); several are compared on the host. */
  const bool streamed = o.device == IR_EXTRACT_GPU && chosen == 1;
  ir_extract_stats stats;
  memset(&stats, 0, sizeof stats);
  double t_extract = 0;
  for (int m = 0; m < IR_COMPACT_METHOD_COUNT && rc == 0; m++) {
    if (!o.use_method[m] || (o.device == IR_EXTRACT_CPU && methods > 0)) continue;
    d.method = (ir_compact_method)m;
    const char *name = o.device == IR_EXTRACT_GPU ? ir_compact_methods()[m].name : "cpu";
    if (o.repeat > 1) {
      double median = 0, best = 0;
      if ((rc = time_method(&o, &st, d, &median, &best)) != 0) break;
      if (!o.quiet) printf("%-13s %10.3f %10.3f\n", name, median, best);
    }
    d.output = streamed ? IR_MESH_DEVICE : IR_MESH_HOST;
    ir_mesh *target = methods == 0 ? &st.mesh : &st.other;
    ir_extract_stats s;
    double t = now_ms();
    if ((status = ir_extract(st.ex, &d, target, &s, err)) != IR_OK) {
      rc = fail("extraction failed", status, err);
      break;
    }
    if (methods == 0) stats = s, t_extract = now_ms() - t;
    if (o.repeat == 1 && !o.quiet)
      printf("%-13s %10.3f ms%s%s\n", name, s.device_ms, o.device == IR_EXTRACT_GPU ? " on the GPU (CUDA events)" : "",
             s.grew ? ", buffers allocated in this call (--repeat N times warm runs)" : "");
    if (methods > 0) {
      if (!same_mesh(&st.mesh, &st.other)) {
        fprintf(stderr, "inkray extract: %s gave a different mesh from %s\n", name, ir_compact_methods()[m].name);
        agree = false;
      }
      ir_mesh_free(&st.other);
    }
    methods++;
  }
  if (rc == 0 && !agree) rc = 1;
  if (rc == 0 && methods > 1 && !o.quiet) printf("check: the %d methods gave the same mesh, byte for byte\n", methods);
  double t_written = 0, t_write = now_ms();
  if (rc == 0 && (status = ir_mesh_write(&st.mesh, o.output, err)) != IR_OK) rc = fail("writing the mesh", status, err);
  t_written = now_ms();
  if (rc == 0 && !o.quiet) {
    const ir_mesh *m = &st.mesh;
    if (m->triangle_count == 0)
      printf("the surface is empty (no cell crosses the isovalue%s): wrote a valid empty mesh to %s\n",
             o.iso_count > 1 ? "s" : "", o.output);
    else
      printf("mesh: %zu vertices, %zu triangles; wrote %s (%zu bricks of 16^3 points, %zu active summed over the "
             "surfaces)\n", m->vertex_count, m->triangle_count, o.output, stats.bricks, stats.active_bricks);
    if (streamed)
      printf("times in ms: load %.1f, upload %.1f, extract %.2f (device %.3f), download and write %.1f; total %.1f\n",
             t_loaded - t_start, t_uploaded - t_loaded, t_extract, stats.device_ms, t_written - t_write,
             t_written - t_start);
    else
      printf("times in ms: load %.1f, upload %.1f, extract %.2f (device %.3f, download %.1f), write %.1f; total %.1f\n",
             t_loaded - t_start, t_uploaded - t_loaded, t_extract, stats.device_ms, stats.download_ms,
             t_written - t_write, t_written - t_start);
  }
  release(&st);
  return rc;
}
