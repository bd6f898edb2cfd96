/* extract_bench: inkray's GPU extraction against a classic GPU marching cubes, in the same run.
 *
 *   extract_bench [--sizes 256,512] [--runs N] [--iso V] [--method NAME[,NAME...]|all] [--csv FILE]
 *                 [--e2e-dir DIR | --no-e2e] [--inkray PATH]
 *
 * For each size N: builtin:fractal:N (uint8) at the isovalue (default 127.5), uploaded once; the
 * classic baseline (classic_mc.h: soup, welded, welded with normals) and inkray's welded mesh with
 * normals to device buffers with every method, each the median of --runs runs (default 20) after
 * two warm-up runs, each run timed with CUDA events from its first kernel to its last, the host's
 * reads of the counts in between included (both need them); and set_grid of the device grid (the
 * brick ranges a new grid needs, wall clock). Every method's mesh is checked equal
 * to the first's byte for byte, and inkray's counts against the classic welded ones. Then the time
 * to write the mesh's bytes once at the GPU's measured rates (a device-to-device copy and a memset
 * of 1 GiB, medians of 10) and the ratio of the best extraction to it.
 *
 * Transfers (the largest size, unless --no-transfers): host <-> device copies of the volume's
 * bytes up and the mesh's bytes down, median of 5 each: pageable cudaMemcpy, the transfer
 * module's staged copies (transfer/transfer.h), cudaHostRegister of the host buffer around the
 * copy, and a block of the module's pinned cache; downloads into memory reused from the run
 * before and into freshly allocated memory (whose pages are first touched by the copy), plain
 * malloc and huge pages (ir_xfer_host_pages, what ir_extract's host meshes get).
 *
 * End to end (the largest size, unless --no-e2e): the volume written once as a raw file in the
 * e2e folder (default $TMPDIR or /tmp), then the median of 3 runs of (a) reading that file and
 * writing as many bytes as the PLY takes, (b) what `inkray extract FILE -o mesh.ply` does: load,
 * upload, extract with InK-Compact to device buffers, write the PLY while it downloads chunk by
 * chunk, and (c) the same with the mesh downloaded to host arrays first; and (b) / (a). Neither
 * side syncs the disk (the page cache takes the writes, the file reads come from it). With
 * --inkray PATH it also times the program itself (`PATH extract FILE --iso V -o mesh.ply
 * --quiet`), whose figure adds the process start and the CUDA context's creation.
 *
 * A benchmark, not a test: it exits 0 unless something fails (2 bad options, 1 runtime failure
 * or a mismatch), and 77 without a CUDA device.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "data/volume.h"
#include "extract/extract.h"
#include "extract/extract_internal.h"
#include "tests/extract/classic_mc.h"
#include "tests/extract/extract_test_util.h"
#include "transfer/transfer.h"

#define BENCH_WARMUP 2
#define BENCH_MAX_SIZES 4

typedef struct bench_opts {
  int sizes[BENCH_MAX_SIZES], size_count;
  int runs;
  float iso;
  bool use_method[IR_COMPACT_METHOD_COUNT];
  const char *csv_path;
  const char *e2e_dir;
  bool e2e, transfers;
  const char *inkray; /* the program, for the end-to-end run as a process; NULL: not timed */
} bench_opts;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int usage(const char *why) {
  fprintf(stderr, "extract_bench: %s\nusage: extract_bench [--sizes 256,512] [--runs N] [--iso V] "
                  "[--method NAME[,NAME...]|all] [--csv FILE] [--e2e-dir DIR | --no-e2e] [--no-transfers] "
                  "[--inkray PATH]\n", why);
  return 2;
}

static int parse(int argc, char **argv, bench_opts *o) {
  memset(o, 0, sizeof *o);
  o->sizes[0] = 256, o->sizes[1] = 512, o->size_count = 2;
  o->runs = 20;
  o->iso = 127.5f;
  o->e2e = o->transfers = true;
  for (int m = 0; m < IR_COMPACT_METHOD_COUNT; m++) o->use_method[m] = true;
  o->e2e_dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--no-e2e")) {
      o->e2e = false;
      continue;
    }
    if (!strcmp(a, "--no-transfers")) {
      o->transfers = false;
      continue;
    }
    if (!v) return usage("an option needs a value");
    i++;
    if (!strcmp(a, "--sizes")) {
      o->size_count = 0;
      char buf[128];
      snprintf(buf, sizeof buf, "%s", v);
      for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int n = atoi(t);
        if (n < 16 || n > 2048 || o->size_count == BENCH_MAX_SIZES) return usage("--sizes: up to 4 sizes from 16 to 2048");
        o->sizes[o->size_count++] = n;
      }
    } else if (!strcmp(a, "--runs")) {
      o->runs = atoi(v);
      if (o->runs < 1 || o->runs > 10000) return usage("--runs: 1 to 10000");
    } else if (!strcmp(a, "--iso")) {
      o->iso = (float)atof(v);
    } else if (!strcmp(a, "--method")) {
      memset(o->use_method, 0, sizeof o->use_method);
      char buf[256];
      snprintf(buf, sizeof buf, "%s", v);
      for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        ir_compact_method m;
        if (!strcmp(t, "all")) {
          for (int k = 0; k < IR_COMPACT_METHOD_COUNT; k++) o->use_method[k] = true;
        } else if (ir_compact_method_parse(t, &m)) {
          o->use_method[m] = true;
        } else {
          return usage("--method: unknown method");
        }
      }
    } else if (!strcmp(a, "--csv")) {
      o->csv_path = v;
    } else if (!strcmp(a, "--e2e-dir")) {
      o->e2e_dir = v;
    } else if (!strcmp(a, "--inkray")) {
      o->inkray = v;
    } else {
      return usage("unknown option");
    }
  }
  return 0;
}

/* ---- GPU rates ------------------------------------------------------------------------------------ */
/* Median bytes per ms of a device-to-device copy and of a memset of `bytes`. */
static int measure_rates(size_t bytes, double *copy_rate, double *write_rate) {
  void *a = NULL, *b = NULL;
  cudaEvent_t e0, e1;
  if (cudaMalloc(&a, bytes) != cudaSuccess || cudaMalloc(&b, bytes) != cudaSuccess) {
    fprintf(stderr, "extract_bench: no room for the %zu-byte rate buffers\n", bytes);
    cudaFree(a);
    return 1;
  }
  cudaEventCreate(&e0), cudaEventCreate(&e1);
  double copy[12], set[12];
  for (int r = 0; r < 12; r++) {
    float ms = 0;
    cudaEventRecord(e0, 0);
    cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, 0);
    cudaEventRecord(e1, 0);
    cudaEventSynchronize(e1);
    cudaEventElapsedTime(&ms, e0, e1);
    copy[r] = ms;
    cudaEventRecord(e0, 0);
    cudaMemsetAsync(b, r, bytes, 0);
    cudaEventRecord(e1, 0);
    cudaEventSynchronize(e1);
    cudaEventElapsedTime(&ms, e0, e1);
    set[r] = ms;
  }
  *copy_rate = (double)bytes / median(copy + 2, 10);
  *write_rate = (double)bytes / median(set + 2, 10);
  cudaEventDestroy(e0), cudaEventDestroy(e1);
  cudaFree(a), cudaFree(b);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

/* ---- One size -------------------------------------------------------------------------------------- */
typedef struct row {
  char name[48];
  double median_ms, min_ms, stage_a_ms, stage_b_ms;
  size_t vertices, triangles, bytes;
} row;

static void print_row(const row *r, double base, FILE *csv, int n) {
  printf("%-34s %9.3f %9.3f %9.3f %9.3f %8.2fx %11zu %11zu %9.1f\n", r->name, r->median_ms, r->min_ms, r->stage_a_ms,
         r->stage_b_ms, base / r->median_ms, r->vertices, r->triangles, (double)r->bytes / 1e6);
  if (csv)
    fprintf(csv, "%d,%s,%.4f,%.4f,%.4f,%.4f,%zu,%zu,%zu\n", n, r->name, r->median_ms, r->min_ms, r->stage_a_ms,
            r->stage_b_ms, r->vertices, r->triangles, r->bytes);
}

static int bench_size(const bench_opts *o, int n, FILE *csv, double copy_rate, double write_rate) {
  char err[IR_ERR_LEN], source[64];
  snprintf(source, sizeof source, "builtin:fractal:%d", n);
  ir_volume v;
  ir_volume_desc vd = {.source = source};
  if (ir_volume_load(&vd, &v, err) != IR_OK) {
    fprintf(stderr, "extract_bench: %s\n", err);
    return 1;
  }
  void *dv = NULL;
  if (cudaMalloc(&dv, v.bytes) != cudaSuccess || cudaMemcpy(dv, v.voxels, v.bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
    fprintf(stderr, "extract_bench: cannot upload the %zu-byte volume\n", v.bytes);
    ir_volume_free(&v);
    return 1;
  }
  int rc = 0, runs = o->runs;
  double *t = calloc((size_t)runs, sizeof *t), *ta = calloc((size_t)runs, sizeof *ta), *tb = calloc((size_t)runs, sizeof *tb);
  row rows[3 + IR_COMPACT_METHOD_COUNT];
  int nrows = 0;
  /* The classic baseline. */
  uint64_t cases[256];
  ir_mc_build_cases(cases);
  classic_mc *c = NULL;
  classic_result cr, welded_ref;
  memset(&welded_ref, 0, sizeof welded_ref);
  if (classic_mc_create(&c, dv, 0, v.dims, cases) != cudaSuccess) {
    fprintf(stderr, "extract_bench: classic baseline: %s\n", classic_mc_error(c));
    rc = 1;
  }
  static const char *const classic_names[3] = {"classic soup (3 float3/triangle)", "classic welded (pos + idx)",
                                               "classic welded + normals"};
  for (int mode = 0; mode < 3 && rc == 0; mode++) {
    for (int r = -BENCH_WARMUP; r < runs && rc == 0; r++) {
      if (classic_mc_run(c, o->iso, (classic_mode)mode, &cr) != cudaSuccess) {
        fprintf(stderr, "extract_bench: classic baseline: %s\n", classic_mc_error(c));
        rc = 1;
      }
      if (r >= 0) t[r] = cr.ms, ta[r] = cr.classify_ms + cr.compact_ms, tb[r] = cr.generate_ms;
    }
    if (rc) break;
    row *w = &rows[nrows++];
    snprintf(w->name, sizeof w->name, "%s", classic_names[mode]);
    w->median_ms = median(t, runs), w->min_ms = t[0], w->stage_a_ms = median(ta, runs), w->stage_b_ms = median(tb, runs);
    w->vertices = cr.vertices, w->triangles = cr.triangles, w->bytes = cr.bytes;
    if (mode == CLASSIC_WELDED) welded_ref = cr;
  }
  classic_mc_destroy(c);
  /* inkray, every method, to device buffers. */
  ir_extractor *ex = NULL;
  ir_extractor_desc xd = {.device = IR_EXTRACT_GPU};
  ir_extract_grid g = {.voxels = dv, .device_pointer = true, .type = v.type, .dims = {v.dims[0], v.dims[1], v.dims[2]},
                       .spacing = {v.spacing[0], v.spacing[1], v.spacing[2]}};
  if (rc == 0 && (ir_extractor_create(&xd, &ex, err) != IR_OK || ir_extractor_set_grid(ex, &g, err) != IR_OK)) {
    fprintf(stderr, "extract_bench: %s\n", err);
    rc = 1;
  }
  ir_mesh first, m;
  memset(&first, 0, sizeof first);
  bool have_first = false, agree = true;
  size_t active = 0, bricks = 0;
  double best = 1e30;
  for (int method = 0; method < IR_COMPACT_METHOD_COUNT && rc == 0; method++) {
    if (!o->use_method[method]) continue;
    ir_extract_desc d = {.surface_count = 1, .isovalues = {o->iso}, .method = (ir_compact_method)method,
                         .output = IR_MESH_DEVICE};
    ir_extract_stats s;
    for (int r = -BENCH_WARMUP; r < runs && rc == 0; r++) {
      if (ir_extract(ex, &d, &m, &s, err) != IR_OK) {
        fprintf(stderr, "extract_bench: %s: %s\n", ir_compact_methods()[method].name, err);
        rc = 1;
        break;
      }
      if (r >= 0) t[r] = s.device_ms, ta[r] = s.count_ms, tb[r] = s.generate_ms;
    }
    if (rc) break;
    active = s.active_bricks, bricks = s.bricks;
    row *w = &rows[nrows++];
    snprintf(w->name, sizeof w->name, "inkray %s (welded + normals)", ir_compact_methods()[method].name);
    w->median_ms = median(t, runs), w->min_ms = t[0], w->stage_a_ms = median(ta, runs), w->stage_b_ms = median(tb, runs);
    w->vertices = m.vertex_count, w->triangles = m.triangle_count;
    w->bytes = m.vertex_count * 28 + m.triangle_count * 12; /* positions, normals, values; indices */
    best = w->median_ms < best ? w->median_ms : best;
    d.output = IR_MESH_HOST;
    ir_mesh h;
    if (ir_extract(ex, &d, &h, NULL, err) != IR_OK) {
      fprintf(stderr, "extract_bench: %s\n", err);
      rc = 1;
      break;
    }
    if (!have_first) {
      first = h, have_first = true;
    } else {
      if (!mesh_equal(&first, &h, ir_compact_methods()[method].name)) agree = false;
      ir_mesh_free(&h);
    }
  }
  /* A new grid's cost: set_grid of the device grid again, which computes the brick ranges (one
   * read of the volume) and reads back the non-finite flag; what each fresh Python call pays. */
  double grid_ms = 0.0;
  for (int r = -BENCH_WARMUP; r < runs && rc == 0; r++) {
    double t0 = now_ms();
    if (ir_extractor_set_grid(ex, &g, err) != IR_OK) {
      fprintf(stderr, "extract_bench: %s\n", err);
      rc = 1;
    }
    if (r >= 0) t[r] = now_ms() - t0;
  }
  if (rc == 0) grid_ms = median(t, runs);
  if (rc == 0) {
    printf("\nbuiltin:fractal:%d at iso %g: %zu of %zu bricks active; median of %d runs after %d warm-up, CUDA events "
           "(host reads of the counts included)\n", n, (double)o->iso, active, bricks, runs, BENCH_WARMUP);
    printf("%-34s %9s %9s %9s %9s %9s %11s %11s %9s\n", "case", "median ms", "min ms", "count ms", "gen ms",
           "vs welded", "vertices", "triangles", "mesh MB");
    double base = nrows > 1 ? rows[1].median_ms : 1.0;
    for (int k = 0; k < nrows; k++) print_row(&rows[k], base, csv, n);
    printf("set_grid of the device grid (its brick ranges: one read of the %.1f MB volume), wall clock: median "
           "%.3f ms = %.0f GB/s (device copy rate %.0f GB/s)\n", (double)v.bytes / 1e6, grid_ms,
           (double)v.bytes / grid_ms / 1e6, copy_rate / 1e6);
    if (have_first) {
      bool counts = first.vertex_count == welded_ref.vertices && first.triangle_count == welded_ref.triangles;
      printf("check: every method gave the same mesh byte for byte: %s; its counts equal the classic welded ones: %s\n",
             agree ? "yes" : "NO", counts ? "yes" : "NO");
      if (!agree || !counts) rc = 1;
      size_t bytes = first.vertex_count * 28 + first.triangle_count * 12;
      printf("writing the mesh's %.1f MB once: %.3f ms at the copy rate (%.0f GB/s), %.3f ms at the memset rate "
             "(%.0f GB/s); best inkray extraction %.3f ms = %.1fx / %.1fx that\n", (double)bytes / 1e6,
             (double)bytes / copy_rate, copy_rate / 1e6, (double)bytes / write_rate, write_rate / 1e6, best,
             best / ((double)bytes / copy_rate), best / ((double)bytes / write_rate));
    }
  }
  ir_mesh_free(&first);
  ir_extractor_destroy(ex);
  free(t), free(ta), free(tb);
  cudaFree(dv);
  ir_volume_free(&v);
  return rc;
}

/* ---- Transfers ------------------------------------------------------------------------------------- */
typedef enum xfer_way { WAY_PAGEABLE, WAY_STAGED, WAY_REGISTER, WAY_PINNED_CACHE, WAY_COUNT } xfer_way;
static const char *const way_names[WAY_COUNT] = {"pageable cudaMemcpy", "staged (transfer module)",
                                                  "cudaHostRegister around the copy", "pinned cache block"};

/* One copy of `bytes` between `host` and `dev` the given way; false on a failure (printed). */
static bool copy_once(xfer_way way, bool up, void *host, void *dev, size_t bytes, ir_xfer_pool *pool) {
  char err[IR_ERR_LEN] = {0};
  cudaError_t e = cudaSuccess;
  if (way == WAY_STAGED) {
    ir_status st = up ? ir_xfer_upload(pool, dev, host, bytes, NULL, err) : ir_xfer_download(pool, host, dev, bytes, NULL, err);
    if (st == IR_OK) e = cudaDeviceSynchronize();
    else fprintf(stderr, "extract_bench: transfers: %s\n", err);
    return st == IR_OK && e == cudaSuccess;
  }
  if (way == WAY_REGISTER) e = cudaHostRegister(host, bytes, cudaHostRegisterDefault);
  if (e == cudaSuccess) e = up ? cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice) : cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost);
  if (way == WAY_REGISTER && e == cudaSuccess) e = cudaHostUnregister(host);
  if (e != cudaSuccess) fprintf(stderr, "extract_bench: transfers: %s: %s\n", way_names[way], cudaGetErrorString(e));
  return e == cudaSuccess;
}

/* GB/s of copies of `bytes` one way, median of 5 after a warm-up; `fresh`: into (or from) host
 * memory allocated for each run (`huge`: as ir_extract allocates host meshes, ir_xfer_host_pages). */
static double copy_rate(xfer_way way, bool up, bool fresh, bool huge, void *dev, size_t bytes, ir_xfer_pool *pool) {
  double ms[5];
  void *warm = way == WAY_PINNED_CACHE ? ir_xfer_host_alloc(bytes) : malloc(bytes);
  if (!warm) return 0;
  memset(warm, 1, bytes);
  bool ok = copy_once(way, up, warm, dev, bytes, pool);
  for (int r = 0; r < 5 && ok; r++) {
    void *host = warm;
    if (fresh) host = huge ? ir_xfer_host_pages(bytes) : malloc(bytes);
    if (!host) {
      if (way == WAY_PINNED_CACHE) ir_xfer_host_free(warm);
      else free(warm);
      return 0;
    }
    if (fresh && up) memset(host, 1, bytes); /* an upload's source has been written */
    double t0 = now_ms();
    ok = copy_once(way, up, host, dev, bytes, pool);
    ms[r] = now_ms() - t0;
    if (fresh) free(host);
  }
  if (way == WAY_PINNED_CACHE) ir_xfer_host_free(warm);
  else free(warm);
  return ok ? (double)bytes / median(ms, 5) / 1e6 : 0;
}

static int bench_transfers(size_t up_bytes, size_t down_bytes) {
  char err[IR_ERR_LEN] = "";
  ir_xfer_pool *pool = NULL;
  void *dev = NULL;
  size_t bytes = up_bytes > down_bytes ? up_bytes : down_bytes;
  if (ir_xfer_pool_of(0, &pool, err) != IR_OK) {
    fprintf(stderr, "extract_bench: transfers: %s\n", err);
    return 1;
  }
  cudaError_t e = cudaMalloc(&dev, bytes);
  if (e != cudaSuccess) {
    fprintf(stderr, "extract_bench: transfers: cannot allocate %zu bytes on the GPU: %s\n", bytes, cudaGetErrorString(e));
    return 1;
  }
  cudaMemset(dev, 3, bytes);
  printf("\ntransfers, GB/s (median of 5): up %.1f MB (the volume), down %.1f MB (the mesh)\n", up_bytes / 1e6,
         down_bytes / 1e6);
  printf("  %-34s %10s %14s %14s %14s\n", "way", "up", "down (reused)", "down (fresh)", "(fresh, huge)");
  for (int w = 0; w < WAY_COUNT; w++) {
    double up = copy_rate((xfer_way)w, true, false, false, dev, up_bytes, pool);
    double down = copy_rate((xfer_way)w, false, false, false, dev, down_bytes, pool);
    if (w == WAY_PINNED_CACHE) {
      printf("  %-34s %10.2f %14.2f %14s %14s\n", way_names[w], up, down, "-", "-");
      continue;
    }
    double fresh = copy_rate((xfer_way)w, false, true, false, dev, down_bytes, pool);
    double huge = copy_rate((xfer_way)w, false, true, true, dev, down_bytes, pool);
    printf("  %-34s %10.2f %14.2f %14.2f %14.2f\n", way_names[w], up, down, fresh, huge);
  }
  cudaFree(dev);
  return 0;
}

/* ---- End to end -------------------------------------------------------------------------------------- */
static bool write_file(const char *path, const void *data, size_t bytes) {
  FILE *f = fopen(path, "wb");
  bool ok = f && fwrite(data, 1, bytes, f) == bytes;
  if (f && fclose(f) != 0) ok = false;
  return ok;
}

static int end_to_end(const bench_opts *o, int n) {
  char err[IR_ERR_LEN], raw[512], ply[512], copy[512], source[64];
  snprintf(source, sizeof source, "builtin:fractal:%d", n);
  snprintf(raw, sizeof raw, "%s/extract_bench_fractal_%dx%dx%d_uint8.raw", o->e2e_dir, n, n, n);
  snprintf(ply, sizeof ply, "%s/extract_bench_mesh.ply", o->e2e_dir);
  snprintf(copy, sizeof copy, "%s/extract_bench_bytes.bin", o->e2e_dir);
  ir_volume v;
  ir_volume_desc vd = {.source = source};
  if (ir_volume_load(&vd, &v, err) != IR_OK || !write_file(raw, v.voxels, v.bytes)) {
    fprintf(stderr, "extract_bench: cannot write %s\n", raw);
    return 1;
  }
  ir_volume_free(&v);
  double a[3], b[3], c[3], load[3], extract[3], write[3], process[3] = {0, 0, 0};
  size_t file_bytes = 0;
  int rc = 0;
  for (int r = 0; r < 3 && rc == 0; r++) {
    /* (b) what inkray extract does. */
    double t0 = now_ms();
    ir_volume_desc rd = {.source = raw};
    ir_extractor *ex = NULL;
    ir_extractor_desc xd = {.device = IR_EXTRACT_GPU};
    ir_mesh m;
    memset(&m, 0, sizeof m);
    ir_extract_desc d = {.surface_count = 1, .isovalues = {o->iso}, .output = IR_MESH_DEVICE};
    if (ir_volume_load(&rd, &v, err) != IR_OK) rc = 1;
    double t1 = now_ms();
    if (rc == 0 && (ir_extractor_create(&xd, &ex, err) != IR_OK || ir_extractor_set_volume(ex, &v, err) != IR_OK ||
                    ir_extract(ex, &d, &m, NULL, err) != IR_OK))
      rc = 1;
    double t2 = now_ms();
    if (rc == 0 && ir_mesh_write(&m, ply, err) != IR_OK) rc = 1;
    double t3 = now_ms();
    if (rc) fprintf(stderr, "extract_bench: end to end: %s\n", err);
    file_bytes = ir_mesh_file_bytes(IR_MESH_PLY, m.vertex_count, m.triangle_count, false);
    ir_mesh_free(&m);
    b[r] = t3 - t0, load[r] = t1 - t0, extract[r] = t2 - t1, write[r] = t3 - t2;
    /* (c) the same mesh to host arrays (staged download) and written from there. */
    d.output = IR_MESH_HOST;
    double c0 = now_ms();
    if (rc == 0 && (ir_extract(ex, &d, &m, NULL, err) != IR_OK || ir_mesh_write(&m, ply, err) != IR_OK)) rc = 1;
    c[r] = (t2 - t0) + (now_ms() - c0); /* (b)'s load, upload and extraction, then this extraction again, to host */
    if (rc) fprintf(stderr, "extract_bench: end to end: %s\n", err);
    ir_mesh_free(&m);
    ir_extractor_destroy(ex);
    ir_volume_free(&v);
    if (rc) break;
    /* (a) reading the volume file and writing the same number of bytes. */
    double s0 = now_ms();
    FILE *f = fopen(raw, "rb");
    size_t bytes = (size_t)n * n * n;
    char *buf = malloc(bytes > file_bytes ? bytes : file_bytes);
    bool ok = f && buf && fread(buf, 1, bytes, f) == bytes;
    if (f) fclose(f);
    ok = ok && write_file(copy, buf, file_bytes);
    a[r] = now_ms() - s0;
    free(buf);
    if (!ok) {
      fprintf(stderr, "extract_bench: end to end: reading %s or writing %s failed\n", raw, copy);
      rc = 1;
    }
    /* (c) the program, when given: a process that starts, creates its CUDA context, and runs (b). */
    if (rc == 0 && o->inkray) {
      char command[2048];
      snprintf(command, sizeof command, "'%s' extract '%s' --iso %.9g -o '%s' --quiet", o->inkray, raw, (double)o->iso, ply);
      double p0 = now_ms();
      if (system(command) != 0) {
        fprintf(stderr, "extract_bench: end to end: '%s' failed\n", command);
        rc = 1;
      }
      process[r] = now_ms() - p0;
    }
  }
  unlink(copy);
  unlink(ply);
  unlink(raw);
  if (rc) return rc;
  double ma = median(a, 3), mb = median(b, 3);
  printf("\nend to end, %s as a raw file -> binary PLY of %.1f MB (median of 3, page cache, no disk sync):\n", source,
         (double)file_bytes / 1e6);
  printf("  read the volume + write the file's bytes: %9.1f ms\n", ma);
  printf("  inkray extract (load %.1f, upload + extract to device %.1f, download while writing %.1f): %9.1f ms = %.2fx "
         "(target <= 1.3x)\n", median(load, 3), median(extract, 3), median(write, 3), mb, mb / ma);
  printf("  the same with the mesh downloaded to host arrays first, then written: %9.1f ms = %.2fx\n", median(c, 3),
         median(c, 3) / ma);
  if (o->inkray) {
    double mp = median(process, 3);
    printf("  %s extract as a process (start and CUDA context included): %9.1f ms = %.2fx\n", o->inkray, mp, mp / ma);
  }
  return 0;
}

int main(int argc, char **argv) {
  bench_opts o;
  int rc = parse(argc, argv, &o);
  if (rc) return rc;
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    printf("SKIPPED: no CUDA device (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    return 77;
  }
  struct cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  double copy_rate = 0, write_rate = 0;
  if (measure_rates((size_t)1 << 30, &copy_rate, &write_rate)) return 1;
  printf("extract_bench on %s (%d SMs): device copy %.0f GB/s, memset %.0f GB/s (1 GiB, median of 10)\n", prop.name,
         prop.multiProcessorCount, copy_rate / 1e6, write_rate / 1e6);
  FILE *csv = o.csv_path ? fopen(o.csv_path, "w") : NULL;
  if (o.csv_path && !csv) {
    fprintf(stderr, "extract_bench: cannot write %s\n", o.csv_path);
    return 2;
  }
  if (csv) fprintf(csv, "size,case,median_ms,min_ms,count_ms,generate_ms,vertices,triangles,mesh_bytes\n");
  for (int k = 0; k < o.size_count && rc == 0; k++) rc = bench_size(&o, o.sizes[k], csv, copy_rate, write_rate);
  if (rc == 0 && o.transfers) {
    /* The largest size's volume up, and the mesh of 512^3 at iso 127.5 down (9,296,638 vertices of
     * 28 bytes and 18,594,504 triangles of 12: docs/extract.md), scaled by the size. */
    double n = o.sizes[o.size_count - 1], scale = n * n * n / (512.0 * 512.0 * 512.0);
    rc = bench_transfers((size_t)(n * n * n), (size_t)(scale * (9296638.0 * 28 + 18594504.0 * 12)));
  }
  if (rc == 0 && o.e2e) rc = end_to_end(&o, o.sizes[o.size_count - 1]);
  if (csv) fclose(csv);
  return rc;
}
