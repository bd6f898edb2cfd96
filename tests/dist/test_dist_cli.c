/* Distributed runs through the built binary under mpirun, on the CPU renderer (or, with the
 * argument "gpu", on the GPU: the ranks share the machine's GPUs, and the test skips without
 * one): three ranks
 * draw the image one process draws (within the CPU tolerance of tests/render: coverage differs
 * on at most 0.5% of the pixels, and at least 99% of the pixels hit in both are within 4/255),
 * for a builtin volume and for a raw file each rank reads its brick of; bad rank counts and
 * bricks thinner than 2 voxels are refused with one line and exit 2. The look options too:
 * several opaque surfaces, clip box and plane, colour by the gradient or a second volume, and the
 * depth image agree with one process, and translucent surfaces blended over the bricks in their
 * visibility order.
 * Skipped (77) when inkray was built without MPI or mpirun is missing. */
#include <cuda_runtime_api.h>
#include <math.h>

#include "tests/check.h"
#include "tests/headless/run_inkray.h"
#include "data/volume.h"

#define MAX_COVER_MISMATCH 0.005
#define MIN_CLOSE_FRACTION 0.99
#define CLOSE_CHANNEL 4

static run_result result;
static const char *device = "cpu", *pipeline = "multi", *tail_rays = "auto";
/* The plain caster steps from each cell's (and so each brick's) entry, not on the whole volume's
 * sample grid: a brick moves its crossings by up to a step, so only its coverage is compared. */
static bool coverage_only;
/* "INKRAY_DIST_COMPOSITE=gpu" to have the ranks composite through NCCL (or fail saying why). */
static const char *composite_env;
/* "INKRAY_DIST_WINDOW=off" to have every rank trace the whole image. */
static const char *window_env;
/* "INKRAY_DIST_BRICKS=longest" for the bricks along the longest axes, whatever the views: the
 * grids whose seams a test means to cross. */
static const char *bricks_env;
/* INKRAY_DIST_DATA: the tests of bricks ask for them (a small volume fits every rank, so runs
 * would otherwise replicate it); NULL leaves the choice to inkray. */
static const char *data_env = "INKRAY_DIST_DATA=bricks";
/* "INKRAY_DIST_LOAD=each": every rank of replicated data loads the whole volume itself. */
static const char *load_env;

/* inkray with `args` in one process (ranks 0) or under mpirun with that many ranks. CI runs as
 * root on two cores: --allow-run-as-root and --oversubscribe. */
static void run_ranks(int ranks, const char *const *args, run_result *r) {
  const char *argv[64];
  int n = 0;
  char np[16];
  snprintf(np, sizeof np, "%d", ranks);
  if (ranks > 0) {
    argv[n++] = getenv("INKRAY_MPIEXEC");
    argv[n++] = "--allow-run-as-root";
    argv[n++] = "--oversubscribe";
    argv[n++] = "--bind-to"; /* each rank may use every core */
    argv[n++] = "none";
    argv[n++] = "-np";
    argv[n++] = np;
    const char *envs[] = {composite_env, window_env, bricks_env, data_env, load_env};
    for (size_t k = 0; k < sizeof envs / sizeof envs[0]; k++)
      if (envs[k]) {
        argv[n++] = "-x";
        argv[n++] = envs[k];
      }
  }
  argv[n++] = inkray_binary();
  for (int k = 0; args[k] && n < 63; k++) argv[n++] = args[k];
  argv[n] = NULL;
  run_command(NULL, argv, r);
  /* No rank of these runs dies: a rank that leaves (also with an agreed error) while another still
   * watches it would be named dead by mistake (dist/comm_mpi.c, the watcher). */
  if (ranks > 0) CHECK_MSG(!strstr(r->output, "died during the run"), "a rank was named dead: %s", r->output);
}

/* The tolerance of the CPU image tests (tests/render). */
static void check_images_agree(const char *a_path, const char *b_path) {
  int wa = 0, ha = 0, ca = 0, wb = 0, hb = 0, cb = 0;
  unsigned char *a = read_png(a_path, &wa, &ha, &ca), *b = read_png(b_path, &wb, &hb, &cb);
  CHECK_MSG(a && b, "cannot read %s or %s", a_path, b_path);
  if (!a || !b) return;
  CHECK(wa == wb && ha == hb && ca == 4 && cb == 4);
  size_t pixels = (size_t)wa * (size_t)ha, cover_mismatch = 0, both = 0, close = 0;
  for (size_t i = 0; i < pixels && ca == 4 && cb == 4 && wa == wb && ha == hb; i++) {
    bool hit_a = a[4 * i + 3] == 255, hit_b = b[4 * i + 3] == 255;
    if (hit_a != hit_b) cover_mismatch++;
    if (!hit_a || !hit_b) continue;
    both++;
    int worst = 0;
    for (int c = 0; c < 3; c++) {
      int d = abs((int)a[4 * i + c] - (int)b[4 * i + c]);
      worst = d > worst ? d : worst;
    }
    close += worst <= CLOSE_CHANNEL;
  }
  printf("  coverage differs on %zu of %zu pixels; %zu of %zu common hits within %d/255\n", cover_mismatch,
         pixels, close, both, CLOSE_CHANNEL);
  CHECK_MSG(both > pixels / 20, "only %zu pixels hit: nothing to compare", both);
  CHECK((double)cover_mismatch <= MAX_COVER_MISMATCH * (double)pixels);
  if (!coverage_only) CHECK((double)close >= MIN_CLOSE_FRACTION * (double)both);
  stbi_image_free(a);
  stbi_image_free(b);
}

/* One process against `ranks` ranks, same options; the image must agree within the tolerance. */
static void compare_with_ranks(const char *dir, const char *volume, const char *iso, int ranks) {
  char one[128], many[128], np_text[64];
  snprintf(one, sizeof one, "%s/one.png", dir);
  snprintf(many, sizeof many, "%s/ranks.png", dir);
  snprintf(np_text, sizeof np_text, "distributed over %d ranks", ranks);
  const char *single[] = {"--headless", "--device", device, "--pipeline", pipeline, "--tail-rays", tail_rays,
                          "--size", "128x128", "--frames", "1", "--warmup", "0", "--orbit", "1", "--elevation",
                          "30", "--no-stages", "--quiet", "--iso", iso, "--png", one, volume, NULL};
  run_ranks(0, single, &result);
  CHECK_MSG(result.status == 0, "exit %d: %s", result.status, result.output);
  const char *dist[] = {"--headless", "--device", device, "--pipeline", pipeline, "--tail-rays", tail_rays,
                        "--threads", "1", "--size", "128x128", "--frames", "1", "--warmup", "0", "--orbit", "1",
                        "--elevation", "30", "--quiet", "--iso", iso, "--png", many, volume, NULL};
  run_ranks(ranks, dist, &result);
  CHECK_MSG(result.status == 0, "exit %d: %s", result.status, result.output);
  CHECK_STR_CONTAINS(result.output, np_text);
  CHECK_STR_CONTAINS(result.output, "render");
  CHECK_STR_CONTAINS(result.output, "composite");
  CHECK_STR_CONTAINS(result.output, "gather");
  CHECK_STR_CONTAINS(result.output, "wait");
  if (result.status == 0) check_images_agree(one, many);
}

/* NCCL compositing (INKRAY_DIST_COMPOSITE=gpu): two ranks, and four where there are four GPUs. */
static int gpu_count;
static void test_gpu_ranks_composite_opaque_frames_through_nccl_like_one_process(void) {
  char dir[64];
  make_scratch(dir);
  compare_with_ranks(dir, "builtin:fractal:96", "127.5", 2);
  CHECK_STR_CONTAINS(result.output, "compositing on the GPUs (NCCL)");
  if (gpu_count >= 4) {
    compare_with_ranks(dir, "builtin:marschner-lobb:80", "0.5", 4);
    CHECK_STR_CONTAINS(result.output, "compositing on the GPUs (NCCL)");
  }
  remove_scratch(dir);
}

static void compare_one_and_three(const char *dir, const char *volume, const char *iso) {
  compare_with_ranks(dir, volume, iso, 3);
}

/* Four ranks on a cube split it 2x2x1: seams along two axes and a corner where four bricks meet. */
static void test_four_ranks_in_a_2x2_grid_draw_the_single_process_image(void) {
  char dir[64];
  make_scratch(dir);
  bricks_env = "INKRAY_DIST_BRICKS=longest";
  compare_with_ranks(dir, "builtin:marschner-lobb:80", "0.5", 4);
  bricks_env = NULL;
  CHECK_STR_CONTAINS(result.output, "2x2x1 bricks (along the longest axes)");
  remove_scratch(dir);
}

static void test_three_ranks_draw_the_single_process_image_of_a_builtin_volume(void) {
  char dir[64];
  make_scratch(dir);
  compare_one_and_three(dir, "builtin:fractal:96", "127.5");
  CHECK_STR_CONTAINS(result.output, "bricks (chosen for the orbit's views)");
  remove_scratch(dir);
}

/* The nx x ny x nz corner of builtin:marschner-lobb:nx as a float32 raw file. */
static void write_marschner_lobb_box(const char *path, size_t nx, size_t ny, size_t nz) {
  char source[64], err[IR_ERR_LEN];
  snprintf(source, sizeof source, "builtin:marschner-lobb:%zu", nx);
  ir_volume v;
  ir_volume_desc d = {.source = source};
  CHECK(ir_volume_load(&d, &v, err) == IR_OK);
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (f) {
    const float *p = v.voxels;
    for (size_t z = 0; z < nz; z++)
      for (size_t y = 0; y < ny; y++) CHECK(fwrite(p + (z * nx + y) * nx, sizeof(float), nx, f) == nx);
    fclose(f);
  }
  ir_volume_free(&v);
}

/* A float32 raw file (Marschner-Lobb, bytes per voxel > 1) that each rank reads its brick of. */
static void test_three_ranks_draw_the_single_process_image_of_a_raw_file(void) {
  char dir[64], path[128];
  make_scratch(dir);
  snprintf(path, sizeof path, "%s/ml_100x64x60_float32.raw", dir);
  /* A 100x64x60 box of it: unequal axes, so the bricks are not cubes. */
  write_marschner_lobb_box(path, 100, 64, 60);
  bricks_env = "INKRAY_DIST_BRICKS=longest";
  compare_one_and_three(dir, path, "0.5");
  bricks_env = NULL;
  CHECK_STR_CONTAINS(result.output, "3x1x1 bricks");
  CHECK_STR_CONTAINS(result.output, "rank 0 loaded 36x64x60 voxels");
  remove_scratch(dir);
}

/* The orbit turns around the axis one process would use: --up, else the header's (a MetaImage
 * whose AnatomicalOrientation puts up along y), else +z; the bricks are chosen around it. */
static void test_ranks_orbit_around_the_up_axis_one_process_uses(void) {
  char dir[64], raw[128], mhd[160], one[128], many[128];
  make_scratch(dir);
  snprintf(raw, sizeof raw, "%s/ml.raw", dir);
  snprintf(mhd, sizeof mhd, "%s/ml.mhd", dir);
  snprintf(one, sizeof one, "%s/one.png", dir);
  snprintf(many, sizeof many, "%s/ranks.png", dir);
  write_marschner_lobb_box(raw, 64, 64, 64);
  FILE *f = fopen(mhd, "w");
  CHECK(f != NULL);
  if (f) {
    fprintf(f, "ObjectType = Image\nNDims = 3\nDimSize = 64 64 64\nElementType = MET_FLOAT\n"
               "AnatomicalOrientation = RIA\nElementDataFile = ml.raw\n");
    fclose(f);
  }
  const char *ups[][2] = {{"--up", "x"}, {"--quiet", "--no-stages"}}; /* --up x; the header's */
  const char *volumes[] = {"builtin:fractal:64", mhd}, *isos[] = {"127.5", "0.5"};
  for (int k = 0; k < 2; k++) {
    const char *single[] = {"--headless", "--device", device, "--pipeline", pipeline, "--size", "128x128",
                            "--frames", "3", "--warmup", "0", "--orbit", "8", "--no-stages", "--quiet",
                            ups[k][0], ups[k][1], "--iso", isos[k], "--png", one, volumes[k], NULL};
    run_ranks(0, single, &result);
    CHECK_MSG(result.status == 0, "exit %d: %s", result.status, result.output);
    const char *dist[] = {"--headless", "--device", device, "--pipeline", pipeline, "--threads", "1", "--size",
                          "128x128", "--frames", "3", "--warmup", "0", "--orbit", "8", "--quiet", ups[k][0],
                          ups[k][1], "--iso", isos[k], "--png", many, volumes[k], NULL};
    run_ranks(2, dist, &result);
    CHECK_MSG(result.status == 0, "exit %d: %s", result.status, result.output);
    CHECK_STR_CONTAINS(result.output, k == 0 ? "elevation, up x" : "elevation, up y");
    CHECK_STR_CONTAINS(result.output, k == 0 ? "2x1x1 bricks (chosen" : "1x2x1 bricks (chosen");
    if (result.status == 0) check_images_agree(one, many);
  }
  remove_scratch(dir);
}

/* Only the program's own lines: mpirun adds its note about the exit status. */
static int inkray_lines(const char *text) {
  int n = 0;
  for (const char *c = strstr(text, "inkray: "); c; c = strstr(c + 1, "inkray: ")) n++;
  return n;
}

static void test_bricks_thinner_than_two_voxels_are_refused_with_one_line(void) {
  const char *args[] = {"--headless", "--device", "cpu", "--size", "32x32", "--frames", "1", "--quiet",
                        "builtin:sphere:4", NULL};
  run_ranks(3, args, &result);
  CHECK_EQ_INT(result.status, 2);
  CHECK_STR_CONTAINS(result.output, "3 ranks on 4x4x4 voxels");
  CHECK_STR_CONTAINS(result.output, "at least 2");
  CHECK_EQ_INT(inkray_lines(result.output), 1);
}

static void test_a_rank_count_with_a_large_prime_factor_is_refused(void) {
  /* 5 ranks on 8 voxels: five bricks along x of one voxel each. */
  const char *args[] = {"--headless", "--device", "cpu", "--size", "32x32", "--frames", "1", "--quiet",
                        "builtin:sphere:8", NULL};
  run_ranks(5, args, &result);
  CHECK_EQ_INT(result.status, 2);
  CHECK_STR_CONTAINS(result.output, "5 ranks on 8x8x8 voxels: 5 bricks along x would own 1 voxel each");
  CHECK_EQ_INT(inkray_lines(result.output), 1);
}

static bool same_file(const char *a, const char *b);

/* Without --iso a file's isovalue is its histogram's first suggestion, as in one process: ranks
 * that each hold the whole volume (left to inkray, a small one is replicated) take it and draw
 * one process's frame byte for byte; over bricks, which no rank holds whole, the run asks for
 * --iso in one line before any voxel is loaded. */
static void test_a_file_without_iso_takes_the_suggested_isovalue(void) {
  char dir[64], path[128], png[2][128];
  make_scratch(dir);
  snprintf(path, sizeof path, "%s/ml_40x36x32_float32.raw", dir);
  write_marschner_lobb_box(path, 40, 36, 32);
  for (int pass = 0; pass < 2; pass++) {
    snprintf(png[pass], sizeof png[pass], "%s/s%d.png", dir, pass);
    const char *args[] = {"--headless", "--device", "cpu", "--threads", "1", "--size", "64x48", "--frames", "1",
                          "--warmup", "0", "--orbit", "1", "--elevation", "30", "--quiet", "--png", png[pass], path,
                          NULL};
    data_env = NULL;
    run_ranks(pass ? 2 : 0, args, &result);
    data_env = "INKRAY_DIST_DATA=bricks";
    CHECK_MSG(result.status == 0, "%s: exit %d: %s", pass ? "ranks" : "one process", result.status, result.output);
    if (pass) CHECK_STR_CONTAINS(result.output, "replicated on every rank (automatic");
  }
  CHECK_MSG(same_file(png[0], png[1]), "the image differs from one process's");
  const char *args[] = {"--headless", "--device", "cpu", "--size", "32x32", "--frames", "1", "--quiet", path, NULL};
  run_ranks(2, args, &result);
  CHECK_EQ_INT(result.status, 2);
  CHECK_STR_CONTAINS(result.output, "INKRAY_DIST_DATA=bricks cannot: give --iso V");
  CHECK_EQ_INT(inkray_lines(result.output), 1);
  remove_scratch(dir);
}

static void test_a_bad_option_is_reported_once(void) {
  const char *args[] = {"--headless", "--device", "cpu", "--method", "all", "--size", "32x32", "builtin:sphere:16", NULL};
  run_ranks(3, args, &result);
  CHECK_EQ_INT(result.status, 2);
  CHECK_STR_CONTAINS(result.output, "one pipeline with one --method");
  CHECK_EQ_INT(inkray_lines(result.output), 1);
}

/* Surfaces pass to the ranks (and stand for --iso on a file); the options bricks cannot share
 * are refused in one line. */
static void test_opaque_surfaces_are_distributed_and_stand_for_iso(void) {
  char dir[64], path[128];
  make_scratch(dir);
  snprintf(path, sizeof path, "%s/zeros_8x8x8_uint8.raw", dir);
  FILE *f = fopen(path, "wb");
  unsigned char zeros[512] = {0};
  if (f) {
    CHECK(fwrite(zeros, 1, sizeof zeros, f) == sizeof zeros);
    fclose(f);
  }
  const char *args[] = {"--headless", "--device", "cpu", "--size", "16x16", "--frames", "1", "--warmup", "0",
                        "--quiet", "--surface", "0.5:red", "--surface", "0.25", path, NULL};
  run_ranks(2, args, &result);
  CHECK_MSG(result.status == 0, "exit %d: %s", result.status, result.output);
  CHECK_STR_CONTAINS(result.output, "distributed over 2 ranks");
  remove_scratch(dir);
}

static void test_unshared_options_are_refused(void) {
  static const char *const cases[][3] = {
      {"--color-by", "gradient", "needs --color-range"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const char *args[] = {"--headless", "--device", "cpu", "--size", "16x16", "--frames", "1", "--quiet",
                          cases[k][0], cases[k][1], "builtin:sphere:16", NULL};
    run_ranks(2, args, &result);
    CHECK_MSG(result.status == 2, "%s %s: exit %d", cases[k][0], cases[k][1], result.status);
    CHECK_STR_CONTAINS(result.output, cases[k][2]);
    CHECK_EQ_INT(inkray_lines(result.output), 1);
  }
}

/* INKRAY_DIST_COMPOSITE: a value other than host or gpu, and gpu where NCCL cannot be used (CPU
 * ranks), stop the run with one line; host is taken as asked. */
static void test_the_compositing_choice_is_checked(void) {
  static const char *const cases[][2] = {
      {"INKRAY_DIST_COMPOSITE=nccl", "use host or gpu"},
      {"INKRAY_DIST_COMPOSITE=gpu", "INKRAY_DIST_COMPOSITE=gpu: "},
  };
  const char *args[] = {"--headless", "--device", "cpu", "--size", "16x16", "--frames", "1", "--quiet",
                        "builtin:sphere:16", NULL};
  for (size_t k = 0; k < 2; k++) {
    composite_env = cases[k][0];
    run_ranks(2, args, &result);
    CHECK_MSG(result.status == 2, "%s: exit %d", cases[k][0], result.status);
    CHECK_STR_CONTAINS(result.output, cases[k][1]);
    CHECK_EQ_INT(inkray_lines(result.output), 1);
  }
  composite_env = "INKRAY_DIST_COMPOSITE=host";
  run_ranks(2, args, &result);
  CHECK_MSG(result.status == 0, "exit %d: %s", result.status, result.output);
  CHECK_STR_CONTAINS(result.output, "compositing on the host (MPI");
  composite_env = NULL;
}

/* One frame of `volume` drawn by one process and by `ranks` ranks with the same view and look
 * options (NULL-ended lists): the images must agree within the tolerance; `result` keeps the
 * ranks' output for the caller's checks. */
static void compare_look(const char *dir, int ranks, const char *const *view, const char *const *look,
                         const char *volume) {
  char one[128], many[128], np_text[64];
  snprintf(one, sizeof one, "%s/one.png", dir);
  snprintf(many, sizeof many, "%s/ranks.png", dir);
  snprintf(np_text, sizeof np_text, "distributed over %d ranks", ranks);
  const char *single[40] = {"--headless", "--device", device, "--pipeline", pipeline, "--frames", "1",
                            "--warmup", "0", "--no-stages", "--quiet", "--png", one};
  const char *dist[40] = {"--headless", "--device", device, "--pipeline", pipeline, "--threads", "1",
                          "--frames", "1", "--warmup", "0", "--quiet", "--png", many};
  int ns = 0, nd = 0;
  while (single[ns]) ns++;
  while (dist[nd]) nd++;
  for (int a = 0; view[a] && ns < 30; a++) single[ns++] = dist[nd++] = view[a];
  for (int a = 0; look[a] && ns < 38; a++) single[ns++] = dist[nd++] = look[a];
  single[ns++] = dist[nd++] = volume;
  single[ns] = dist[nd] = NULL;
  run_ranks(0, single, &result);
  CHECK_MSG(result.status == 0, "one process: exit %d: %s", result.status, result.output);
  run_ranks(ranks, dist, &result);
  CHECK_MSG(result.status == 0, "%d ranks: exit %d: %s", ranks, result.status, result.output);
  CHECK_STR_CONTAINS(result.output, np_text);
  if (result.status == 0) check_images_agree(one, many);
}

/* Clipping and colour by gradient drawn over three bricks along x (the longest-axes grid, whose
 * seams the looks are set against): the image one process draws. The first box ends inside the
 * middle brick and leaves the last one nothing; the plane cuts the first. */
static void test_three_ranks_draw_the_single_process_image_with_clipping_and_gradient_colours(void) {
  char dir[64];
  make_scratch(dir);
  bricks_env = "INKRAY_DIST_BRICKS=longest";
  static const char *const view[] = {"--size", "128x128", "--orbit", "1", "--elevation", "30", NULL};
  static const char *const looks[][9] = {
      {"--surface", "0:#ff8000", "--clip-box", "0,0.5,0,1,0.2,1", NULL},
      {"--surface", "0", "--surface", "-8:#3060ff", "--clip-plane", "1,0.3,0,-14", NULL},
      {"--color-by", "gradient", "--color-range", "0,1.5", "--colormap", "plasma", "--clip-box", "0.1,0.9,0,1,0,0.7",
       NULL},
      {"--surface", "0", "--step", "0.3", NULL}, /* every rank's samples on the whole volume's grid */
  };
  for (size_t k = 0; k < sizeof looks / sizeof looks[0]; k++) {
    printf("  look %zu\n", k);
    compare_look(dir, 3, view, looks[k], "builtin:sphere:48");
    CHECK_STR_CONTAINS(result.output, "3x1x1 bricks (along the longest axes)");
  }
  bricks_env = NULL;
  remove_scratch(dir);
}

/* The bricks chosen for the orbit share out what the clip box keeps: an orbit around z over two
 * ranks takes two slabs across z, but with the box keeping z below the middle one slab would draw
 * it all, so the cut goes along x or y; the image is one process's. */
static void test_two_ranks_share_out_what_the_clip_box_keeps(void) {
  char dir[64];
  make_scratch(dir);
  static const char *const view[] = {"--size", "96x96", "--orbit", "4", NULL};
  static const char *const whole[] = {NULL}, *const clipped[] = {"--clip-box", "0,1,0,1,0,0.5", NULL};
  compare_look(dir, 2, view, whole, "builtin:sphere:64");
  CHECK_STR_CONTAINS(result.output, "1x1x2 bricks (chosen for the orbit's views)");
  compare_look(dir, 2, view, clipped, "builtin:sphere:64");
  CHECK_STR_CONTAINS(result.output, "x1 bricks (chosen for the orbit's views and the clip box)");
  remove_scratch(dir);
}

/* Translucent images: every channel, alpha included, since a pixel's alpha is the coverage of
 * the surfaces it shows. One process against the ranks: coverage (alpha 0 or not) differs on at
 * most 0.5% of the pixels, and at least 99% of the pixels both draw are within 4/255 on every
 * channel (each brick's paint read back from 8 bits costs about half a step). */
static void check_translucent_images_agree(const char *a_path, const char *b_path) {
  int wa = 0, ha = 0, ca = 0, wb = 0, hb = 0, cb = 0;
  unsigned char *a = read_png(a_path, &wa, &ha, &ca), *b = read_png(b_path, &wb, &hb, &cb);
  CHECK_MSG(a && b, "cannot read %s or %s", a_path, b_path);
  if (!a || !b) return;
  CHECK(wa == wb && ha == hb && ca == 4 && cb == 4);
  size_t pixels = (size_t)wa * (size_t)ha, cover_mismatch = 0, both = 0, close = 0, partial = 0;
  int worst_all = 0;
  for (size_t i = 0; i < pixels && ca == 4 && cb == 4 && wa == wb && ha == hb; i++) {
    bool hit_a = a[4 * i + 3] != 0, hit_b = b[4 * i + 3] != 0;
    if (hit_a != hit_b) cover_mismatch++;
    if (!hit_a || !hit_b) continue;
    both++;
    partial += a[4 * i + 3] < 255;
    int worst = 0;
    for (int c = 0; c < 4; c++) {
      int d = abs((int)a[4 * i + c] - (int)b[4 * i + c]);
      worst = d > worst ? d : worst;
    }
    close += worst <= CLOSE_CHANNEL;
    worst_all = worst > worst_all ? worst : worst_all;
  }
  printf("  translucent: coverage differs on %zu of %zu pixels; %zu of %zu common pixels (%zu not opaque) within "
         "%d/255 on every channel, largest difference %d/255\n",
         cover_mismatch, pixels, close, both, partial, CLOSE_CHANNEL, worst_all);
  CHECK_MSG(both > pixels / 20, "only %zu pixels drawn: nothing to compare", both);
  CHECK_MSG(partial > both / 10, "only %zu of %zu pixels translucent: the blend is not exercised", partial, both);
  CHECK((double)cover_mismatch <= MAX_COVER_MISMATCH * (double)pixels);
  CHECK((double)close >= MIN_CLOSE_FRACTION * (double)both);
  stbi_image_free(a);
  stbi_image_free(b);
}

/* Four surfaces, three translucent, over three bricks (3x1x1) and four (2x2x1, bricks along the
 * longest axes), and four slabs across the orbit's axis (the bricks chosen for its views): rays
 * cross two or three bricks, each adding its surfaces behind the ones in front; views from
 * several sides change the bricks' order. */
static int translucent_ranks[3] = {3, 4, 4};
static void test_translucent_surfaces_over_three_and_four_ranks_draw_the_single_process_image(void) {
  char dir[64], one[128], many[128];
  make_scratch(dir);
  snprintf(one, sizeof one, "%s/one.png", dir);
  snprintf(many, sizeof many, "%s/ranks.png", dir);
  /* The last frame of an orbit of 8 views: azimuth 0, 135 and 270 degrees. */
  static const char *const frames[] = {"1", "4", "7"};
  const int *rank_counts = translucent_ranks;
  for (size_t r = 0; r < 3; r++)
    for (size_t k = 0; k < sizeof frames / sizeof frames[0]; k++) {
      if (r == 2 && k != 1) continue; /* the slabs: one view */
      bricks_env = r < 2 ? "INKRAY_DIST_BRICKS=longest" : NULL;
      const char *single[] = {"--headless", "--device", device, "--pipeline", pipeline, "--size", "128x128",
                              "--frames", frames[k], "--warmup", "0", "--orbit", "8",
                              "--elevation", "30", "--no-stages", "--quiet", "--png", one, "--surface",
                              "80:#ff8000:0.2", "--surface", "120:#30a0ff:0.3", "--surface", "160:white:0.4",
                              "--surface", "200:#ff3060", "builtin:fractal:64", NULL};
      const char *dist[] = {"--headless", "--device", device, "--pipeline", pipeline, "--threads", "1", "--size",
                            "128x128", "--frames", frames[k], "--warmup", "0", "--orbit", "8",
                            "--elevation", "30", "--quiet", "--png", many, "--surface", "80:#ff8000:0.2",
                            "--surface", "120:#30a0ff:0.3", "--surface", "160:white:0.4", "--surface",
                            "200:#ff3060", "builtin:fractal:64", NULL};
      run_ranks(0, single, &result);
      CHECK_MSG(result.status == 0, "exit %d: %s", result.status, result.output);
      run_ranks(rank_counts[r], dist, &result);
      CHECK_MSG(result.status == 0, "%d ranks, %s frames: exit %d: %s", rank_counts[r], frames[k], result.status,
                result.output);
      bricks_env = NULL;
      CHECK_STR_CONTAINS(result.output, r < 2 ? "bricks (along the longest axes)" : "bricks (chosen for the orbit's views)");
      printf("  %d ranks, last of %s frames\n", rank_counts[r], frames[k]);
      if (composite_env) CHECK_STR_CONTAINS(result.output, "compositing on the GPUs (NCCL)");
      if (result.status == 0) check_translucent_images_agree(one, many);
    }
  remove_scratch(dir);
}

/* Writes a float32 volume of side n whose value is the voxel's z index. */
static void write_z_ramp(const char *path, size_t n) {
  FILE *f = fopen(path, "wb");
  CHECK_MSG(f != NULL, "cannot write %s", path);
  if (!f) return;
  for (size_t i = 0; i < n * n * n; i++) {
    float v = (float)(i / (n * n));
    CHECK(fwrite(&v, sizeof v, 1, f) == 1);
  }
  fclose(f);
}

/* Colour by a second volume over three bricks: each rank reads its brick of it; the automatic
 * range is the whole volume's (0..47 from three bricks); one process draws the same image. A
 * colour volume of other dims is refused once, before any brick is loaded. */
static void test_three_ranks_colour_by_a_second_volume_like_one_process(void) {
  char dir[64], one[128], many[128], ramp[128], small[128];
  make_scratch(dir);
  snprintf(one, sizeof one, "%s/one.png", dir);
  snprintf(many, sizeof many, "%s/ranks.png", dir);
  snprintf(ramp, sizeof ramp, "%s/z_48x48x48_float32.raw", dir);
  snprintf(small, sizeof small, "%s/z_16x16x16_float32.raw", dir);
  write_z_ramp(ramp, 48);
  write_z_ramp(small, 16);
  static const char *const looks[][6] = {
      {"--colormap", "magma"},
      {"--color-range", "10,30", "--clip-box", "0,0.8,0,1,0,1"},
  };
  for (size_t k = 0; k < sizeof looks / sizeof looks[0]; k++) {
    const char *single[40] = {"--headless", "--device", device, "--pipeline", pipeline, "--size", "128x128",
                              "--frames", "1", "--warmup", "0", "--orbit", "1", "--elevation", "30", "--no-stages",
                              "--quiet", "--png", one, "--color-by", ramp};
    const char *dist[40] = {"--headless", "--device", device, "--pipeline", pipeline, "--threads", "1", "--size",
                            "128x128", "--frames", "1", "--warmup", "0", "--orbit", "1", "--elevation", "30",
                            "--quiet", "--png", many, "--color-by", ramp};
    int ns = 21, nd = 22;
    for (int a = 0; a < 6 && looks[k][a]; a++) single[ns++] = dist[nd++] = looks[k][a];
    single[ns++] = dist[nd++] = "builtin:sphere:48";
    single[ns] = dist[nd] = NULL;
    run_ranks(0, single, &result);
    CHECK_MSG(result.status == 0, "look %zu: exit %d: %s", k, result.status, result.output);
    run_ranks(3, dist, &result);
    CHECK_MSG(result.status == 0, "look %zu, 3 ranks: exit %d: %s", k, result.status, result.output);
    CHECK_STR_CONTAINS(result.output, k == 0 ? "magma over 0..47 (automatic)" : "viridis over 10..30\n");
    if (result.status == 0) check_images_agree(one, many);
    /* Replicated data reads the colour volume in slabs too (and whole on every rank with
     * INKRAY_DIST_LOAD=each): one process's frame, byte for byte. */
    for (int each = 0; each < 2; each++) {
      data_env = "INKRAY_DIST_DATA=replicated";
      load_env = each ? "INKRAY_DIST_LOAD=each" : NULL;
      run_ranks(3, dist, &result);
      data_env = "INKRAY_DIST_DATA=bricks";
      load_env = NULL;
      CHECK_MSG(result.status == 0, "look %zu, 3 replicated ranks: exit %d: %s", k, result.status, result.output);
      CHECK_STR_CONTAINS(result.output, each ? "every rank read all of it" : "read in 3 slabs, one a rank");
      CHECK_MSG(same_file(one, many), "look %zu, replicated%s: the image differs from one process's", k,
                each ? ", each rank reading all" : "");
    }
  }
  const char *wrong[] = {"--headless", "--device", device, "--size", "32x32", "--frames", "1", "--quiet",
                         "--color-by", small, "builtin:sphere:48", NULL};
  run_ranks(3, wrong, &result);
  CHECK_EQ_INT(result.status, 2);
  CHECK_STR_CONTAINS(result.output, "is 16x16x16, but the volume is 48x48x48");
  CHECK_EQ_INT(inkray_lines(result.output), 1);
  remove_scratch(dir);
}

/* Reads a one-channel little-endian PFM of w x h written by inkray; rows bottom to top. */
static bool read_pfm(const char *path, int w, int h, float *out) {
  char header[64];
  int n = snprintf(header, sizeof header, "Pf\n%d %d\n-1.0\n", w, h);
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  char got[64];
  bool ok = fread(got, 1, (size_t)n, f) == (size_t)n && memcmp(got, header, (size_t)n) == 0;
  for (int y = h - 1; y >= 0 && ok; y--)
    for (int x = 0; x < w && ok; x++) {
      unsigned char b[4];
      ok = fread(b, 1, 4, f) == 4;
      uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
      memcpy(&out[y * w + x], &u, 4);
    }
  ok = ok && fgetc(f) == EOF;
  fclose(f);
  return ok;
}

/* --depth of a distributed run: rank 0 writes the composited depth, the nearest surface of any
 * brick, which is the depth one process finds (the same rays on the same sample grid). */
static int depth_ranks = 3;
static void test_three_ranks_write_the_single_process_depth(void) {
  char dir[64], one[128], many[128];
  make_scratch(dir);
  snprintf(one, sizeof one, "%s/one.pfm", dir);
  snprintf(many, sizeof many, "%s/ranks.pfm", dir);
  const char *single[] = {"--headless", "--device", device, "--pipeline", pipeline, "--size", "96x96", "--frames",
                          "1", "--warmup", "0", "--orbit", "1", "--elevation", "30", "--no-stages", "--quiet",
                          "--surface", "127.5", "--surface", "60:red", "--depth", one, "builtin:fractal:48", NULL};
  run_ranks(0, single, &result);
  CHECK_MSG(result.status == 0, "exit %d: %s", result.status, result.output);
  const char *dist[] = {"--headless", "--device", device, "--pipeline", pipeline, "--threads", "1", "--size",
                        "96x96", "--frames", "1", "--warmup", "0", "--orbit", "1", "--elevation", "30", "--quiet",
                        "--surface", "127.5", "--surface", "60:red", "--depth", many, "builtin:fractal:48", NULL};
  run_ranks(depth_ranks, dist, &result);
  CHECK_MSG(result.status == 0, "exit %d: %s", result.status, result.output);
  CHECK_STR_CONTAINS(result.output, "last frame's depth: ");
  if (composite_env) CHECK_STR_CONTAINS(result.output, "compositing on the GPUs (NCCL)");
  static float a[96 * 96], b[96 * 96];
  CHECK_MSG(read_pfm(one, 96, 96, a) && read_pfm(many, 96, 96, b), "cannot read %s or %s", one, many);
  size_t hits = 0, cover_mismatch = 0, close = 0;
  for (int i = 0; i < 96 * 96; i++) {
    bool ha = isfinite(a[i]), hb = isfinite(b[i]);
    CHECK_MSG((ha || isinf(a[i])) && (hb || isinf(b[i])), "pixel %d: depths %g, %g", i, (double)a[i], (double)b[i]);
    if (ha != hb) cover_mismatch++;
    if (!ha || !hb) continue;
    hits++;
    close += fabsf(a[i] - b[i]) <= 1e-3f * fabsf(a[i]);
  }
  printf("  depth: %zu common hits, %zu within 0.1%%, coverage differs on %zu\n", hits, close, cover_mismatch);
  CHECK(hits > 96 * 96 / 20);
  CHECK((double)cover_mismatch <= MAX_COVER_MISMATCH * 96 * 96);
  CHECK((double)close >= MIN_CLOSE_FRACTION * (double)hits);
  remove_scratch(dir);
}

static bool same_file(const char *a, const char *b) {
  FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
  bool same = fa && fb;
  while (same) {
    int ca = fgetc(fa), cb = fgetc(fb);
    same = ca == cb;
    if (ca == EOF) break;
  }
  if (fa) fclose(fa);
  if (fb) fclose(fb);
  return same;
}

/* The arguments of a 120x90 frame of builtin:fractal:64 with `look`, written to png and pfm:
 * `frames` timed after `warmup`, over an orbit of `orbit` views, into args (48 entries). */
static void look_args(const char **args, const char *png, const char *pfm, const char *frames, const char *warmup,
                      const char *orbit, const char *const *look) {
  const char *head[] = {"--headless", "--device", device, "--pipeline", pipeline, "--threads", "1", "--size", "120x90",
                        "--frames", frames, "--warmup", warmup, "--orbit", orbit, "--elevation", "30", "--quiet",
                        "--png", png, "--depth", pfm};
  int n = 0;
  for (size_t j = 0; j < sizeof head / sizeof head[0]; j++) args[n++] = head[j];
  for (int j = 0; look[j]; j++) args[n++] = look[j];
  args[n++] = "builtin:fractal:64";
  args[n] = NULL;
}

/* Each rank traces only the pixels its brick's projection covers (dist/scene.c); the composited
 * image and depth are those of ranks tracing every pixel, byte for byte: opaque and translucent
 * surfaces, a clip box, a view from inside the volume (every brick's window the whole image)
 * and one close enough that bricks leave the screen. */
static int window_max_ranks = 4; /* NCCL: one rank per GPU */
static void test_the_pixel_window_changes_no_bit_of_the_composited_frame(void) {
  char dir[64], png[2][128], pfm[2][128];
  make_scratch(dir);
  const char *looks[][8] = {
      {"--surface", "127.5", "--distance", "1", NULL},
      {"--surface", "60:red:0.5", "--surface", "127.5", "--distance", "0.6", NULL},
      {"--surface", "127.5", "--clip-box", "0.1,0.9,0,1,0.2,0.8", "--distance", "1.3", NULL},
      {"--surface", "100:orange:0.4", "--surface", "150", "--distance", "0.15", NULL},
  };
  const int ranks[] = {3, 4, 4, 3};
  for (int k = 0; k < 4; k++) {
    for (int pass = 0; pass < 2; pass++) {
      snprintf(png[pass], sizeof png[pass], "%s/w%d.png", dir, pass);
      snprintf(pfm[pass], sizeof pfm[pass], "%s/w%d.pfm", dir, pass);
      const char *args[48];
      look_args(args, png[pass], pfm[pass], "1", "0", "1", looks[k]);
      window_env = pass ? "INKRAY_DIST_WINDOW=off" : NULL;
      run_ranks(ranks[k] < window_max_ranks ? ranks[k] : window_max_ranks, args, &result);
      window_env = NULL;
      CHECK_MSG(result.status == 0, "look %d, window %s: exit %d: %s", k, pass ? "off" : "on", result.status,
                result.output);
      /* The windows are applied: with them no rank traces the whole image in the first view (every
       * brick in sight, none around the eye), without them every rank does. */
      const char *line = strstr(result.output, "pixels traced per rank");
      const char *at = line ? strstr(line, "on average, ") : NULL;
      double most = at ? atof(at + strlen("on average, ")) : -1.0;
      CHECK_MSG(line && at, "look %d: no 'pixels traced' line in: %s", k, result.output);
      if (pass == 1) CHECK_MSG(most == 100.0, "look %d, window off: a rank traced %.1f %% of the image", k, most);
      if (pass == 0 && k == 0) CHECK_MSG(most < 100.0, "look 0, window on: a rank traced %.1f %% of the image", most);
    }
    CHECK_MSG(same_file(png[0], png[1]), "look %d: the image differs with the pixel window", k);
    CHECK_MSG(same_file(pfm[0], pfm[1]), "look %d: the depth differs with the pixel window", k);
  }
  remove_scratch(dir);
}

/* Replicated data: every rank holds the whole volume and traces a band of rows, so the composited
 * frame and depth are one process's byte for byte: opaque and translucent surfaces, a clip box
 * and plane, a view from inside the volume, and ambient occlusion with shadows (their rays cross
 * the other ranks' bands). Several frames of an orbit, so that the bands
 * have moved (their cuts follow the ranks' render times) before the last frame is written. */
static int replicated_ranks[2] = {2, 3};
static void test_replicated_ranks_draw_the_single_process_frame_bit_for_bit(void) {
  char dir[64], png[2][128], pfm[2][128];
  make_scratch(dir);
  const char *looks[][12] = {
      {"--surface", "127.5", NULL},
      {"--surface", "60:red:0.5", "--surface", "127.5", "--distance", "0.6", NULL},
      {"--surface", "127.5", "--clip-box", "0.1,0.9,0,1,0.2,0.8", "--clip-plane", "1,0.2,0,0.05", NULL},
      {"--surface", "100:orange:0.4", "--surface", "150", "--distance", "0.15", NULL},
      {"--surface", "60:red:0.5", "--surface", "127.5", "--ao", "4", "--shadows", "--light", "30,45", NULL},
  };
  for (int k = 0; k < 5; k++) {
    int ranks = replicated_ranks[k % 2];
    for (int pass = 0; pass < 2; pass++) {
      snprintf(png[pass], sizeof png[pass], "%s/r%d.png", dir, pass);
      snprintf(pfm[pass], sizeof pfm[pass], "%s/r%d.pfm", dir, pass);
      const char *args[48];
      look_args(args, png[pass], pfm[pass], "4", "1", "3", looks[k]);
      data_env = "INKRAY_DIST_DATA=replicated";
      run_ranks(pass ? ranks : 0, args, &result);
      data_env = "INKRAY_DIST_DATA=bricks";
      CHECK_MSG(result.status == 0, "look %d, %s: exit %d: %s", k, pass ? "ranks" : "one process", result.status,
                result.output);
      if (pass) {
        CHECK_STR_CONTAINS(result.output, "(MPI, sort-first)");
        CHECK_STR_CONTAINS(result.output, "replicated on every rank (INKRAY_DIST_DATA=replicated");
        if (composite_env) CHECK_STR_CONTAINS(result.output, "compositing on the GPUs (NCCL)");
      }
    }
    CHECK_MSG(same_file(png[0], png[1]), "look %d: the image differs from one process's", k);
    CHECK_MSG(same_file(pfm[0], pfm[1]), "look %d: the depth differs from one process's", k);
  }
  remove_scratch(dir);
}

/* Replicated data from a file: each rank reads a slab of its z slices and the slabs are sent to
 * every rank; the frame is one process's byte for byte, and the same as with every rank reading
 * the whole file (INKRAY_DIST_LOAD=each). Float32 with a last slab of NaN only (a rank whose part
 * has no finite value). */
static void test_replicated_ranks_share_the_reading_of_a_file(void) {
  char dir[64], path[128], png[3][128], pfm[3][128];
  make_scratch(dir);
  snprintf(path, sizeof path, "%s/ml_72x64x48_float32.raw", dir);
  write_marschner_lobb_box(path, 72, 64, 48);
  FILE *f = fopen(path, "r+b");
  CHECK(f != NULL);
  if (f) {
    const float nan = NAN;
    CHECK(fseek(f, (long)(72 * 64 * 36 * sizeof(float)), SEEK_SET) == 0);
    for (size_t i = 0; i < 72 * 64 * 12; i++) CHECK(fwrite(&nan, sizeof nan, 1, f) == 1);
    fclose(f);
  }
  for (int pass = 0; pass < 3; pass++) {
    snprintf(png[pass], sizeof png[pass], "%s/f%d.png", dir, pass);
    snprintf(pfm[pass], sizeof pfm[pass], "%s/f%d.pfm", dir, pass);
    const char *args[] = {"--headless", "--device", device, "--pipeline", pipeline, "--threads", "1", "--size",
                          "120x90", "--frames", "2", "--warmup", "0", "--orbit", "2", "--elevation", "30",
                          "--quiet", "--iso", "0.5", "--png", png[pass], "--depth", pfm[pass], path, NULL};
    data_env = "INKRAY_DIST_DATA=replicated";
    load_env = pass == 2 ? "INKRAY_DIST_LOAD=each" : NULL;
    run_ranks(pass ? 3 : 0, args, &result);
    data_env = "INKRAY_DIST_DATA=bricks";
    load_env = NULL;
    CHECK_MSG(result.status == 0, "pass %d: exit %d: %s", pass, result.status, result.output);
    if (pass) CHECK_STR_CONTAINS(result.output, pass == 1 ? "; read in 3 slabs, one a rank)" : "; every rank read all of it)");
  }
  for (int pass = 1; pass < 3; pass++) {
    CHECK_MSG(same_file(png[0], png[pass]), "%s: the image differs from one process's", pass == 1 ? "shared" : "each");
    CHECK_MSG(same_file(pfm[0], pfm[pass]), "%s: the depth differs from one process's", pass == 1 ? "shared" : "each");
  }
  remove_scratch(dir);
}

/* Over bricks, --ao and --shadows are refused in one line and exit 2 (their rays would leave a
 * rank's brick); --light alone shades each hit where it is and draws one process's image. */
static void test_occlusion_over_bricks_is_refused_and_light_is_drawn(void) {
  const char *const lit[][3] = {{"--ao", "4", NULL}, {"--shadows", NULL, NULL}};
  for (int k = 0; k < 2; k++) {
    const char *args[16] = {"--headless", "--device", device, "--size", "16x16", "--frames", "1", "--quiet"};
    int n = 8;
    for (int j = 0; lit[k][j]; j++) args[n++] = lit[k][j];
    args[n++] = "builtin:sphere:16";
    args[n] = NULL;
    run_ranks(2, args, &result);
    CHECK_MSG(result.status == 2, "%s over bricks: exit %d", lit[k][0], result.status);
    CHECK_STR_CONTAINS(result.output, "need every rank to hold the whole volume");
    CHECK_EQ_INT(inkray_lines(result.output), 1);
  }
  char dir[64], one[128], many[128];
  make_scratch(dir);
  snprintf(one, sizeof one, "%s/one.png", dir);
  snprintf(many, sizeof many, "%s/ranks.png", dir);
  const char *single[] = {"--headless", "--device", device, "--size", "128x128", "--frames", "1", "--warmup", "0",
                          "--orbit", "1", "--elevation", "30", "--no-stages", "--quiet", "--light", "30,45", "--iso",
                          "127.5", "--png", one, "builtin:fractal:96", NULL};
  run_ranks(0, single, &result);
  CHECK_MSG(result.status == 0, "exit %d: %s", result.status, result.output);
  const char *dist[] = {"--headless", "--device", device, "--threads", "1", "--size", "128x128", "--frames", "1",
                        "--warmup", "0", "--orbit", "1", "--elevation", "30", "--quiet", "--light", "30,45", "--iso",
                        "127.5", "--png", many, "builtin:fractal:96", NULL};
  run_ranks(3, dist, &result);
  CHECK_MSG(result.status == 0, "exit %d: %s", result.status, result.output);
  CHECK_STR_CONTAINS(result.output, "bricks: INKRAY_DIST_DATA=bricks");
  if (result.status == 0) check_images_agree(one, many);
  remove_scratch(dir);
}

/* Left to inkray, a volume every rank can hold is replicated; INKRAY_DIST_DATA other than auto,
 * bricks or replicated stops the run with one line. */
static void test_the_data_choice_replicates_what_fits_and_is_checked(void) {
  const char *args[] = {"--headless", "--device", device, "--size", "16x16", "--frames", "1", "--quiet",
                        "builtin:sphere:16", NULL};
  data_env = NULL;
  run_ranks(2, args, &result);
  CHECK_MSG(result.status == 0, "exit %d: %s", result.status, result.output);
  CHECK_STR_CONTAINS(result.output, "replicated on every rank (automatic: ");
  data_env = "INKRAY_DIST_DATA=auto";
  run_ranks(2, args, &result);
  CHECK_STR_CONTAINS(result.output, "replicated on every rank (automatic: ");
  data_env = "INKRAY_DIST_DATA=bricks";
  run_ranks(2, args, &result);
  CHECK_STR_CONTAINS(result.output, "bricks: INKRAY_DIST_DATA=bricks");
  data_env = "INKRAY_DIST_DATA=mirror";
  run_ranks(2, args, &result);
  CHECK_MSG(result.status == 2, "INKRAY_DIST_DATA=mirror: exit %d", result.status);
  CHECK_STR_CONTAINS(result.output, "INKRAY_DIST_DATA='mirror': use auto, bricks or replicated");
  CHECK_EQ_INT(inkray_lines(result.output), 1);
  data_env = "INKRAY_DIST_DATA=bricks";
}

int main(int argc, char **argv) {
  const char *mpiexec = getenv("INKRAY_MPIEXEC");
  if (!mpiexec || !*mpiexec || access(mpiexec, X_OK) != 0) check_skip_all("inkray was built without MPI (no mpiexec)");
  if (argc > 1 && strcmp(argv[1], "gpu") == 0) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) check_skip_all("no CUDA device");
    gpu_count = count;
    device = "gpu";
    /* "gpu nccl": only the NCCL part below (the ranks sharing GPUs above it take minutes). */
    bool nccl_only = argc > 2 && strcmp(argv[2], "nccl") == 0;
    /* The same images on the GPU, with the depth of each place that writes a colour: the multi
     * pipeline's intersection stage and its tail kernel, the single kernel, the paper pipeline
     * (shading stage), the plain caster (whose own march from each cell's entry is close to,
     * not on, the others' sample grid: coverage only, see coverage_only). */
    const char *variants[][2] = {{"multi", "off"}, {"multi", "2000"}, {"single", "auto"}, {"paper", "auto"},
                                 {"plain", "auto"}};
    for (int k = 0; k < (nccl_only ? 0 : 5); k++) {
      pipeline = variants[k][0];
      tail_rays = variants[k][1];
      coverage_only = strcmp(pipeline, "plain") == 0;
      printf("GPU, %s pipeline, tail rays %s\n", pipeline, tail_rays);
      RUN(test_three_ranks_draw_the_single_process_image_of_a_builtin_volume);
      RUN(test_three_ranks_draw_the_single_process_image_of_a_raw_file);
    }
    pipeline = "single";
    tail_rays = "auto";
    coverage_only = false;
    if (!nccl_only) {
      RUN(test_translucent_surfaces_over_three_and_four_ranks_draw_the_single_process_image);
      RUN(test_the_pixel_window_changes_no_bit_of_the_composited_frame);
      RUN(test_replicated_ranks_draw_the_single_process_frame_bit_for_bit);
    }
    /* One rank per GPU: compositing on the GPUs through NCCL (opaque and translucent), where
     * the machine has two GPUs or more. */
    if (count >= 2) {
      composite_env = "INKRAY_DIST_COMPOSITE=gpu";
      translucent_ranks[0] = 2;
      translucent_ranks[1] = count >= 4 ? 4 : 2;
      translucent_ranks[2] = translucent_ranks[1];
      printf("GPU, NCCL compositing over %d and %d ranks\n", translucent_ranks[0], translucent_ranks[1]);
      RUN(test_translucent_surfaces_over_three_and_four_ranks_draw_the_single_process_image);
      RUN(test_gpu_ranks_composite_opaque_frames_through_nccl_like_one_process);
      depth_ranks = count >= 4 ? 4 : 2; /* the composited depth: rank 0 keeps the words */
      RUN(test_three_ranks_write_the_single_process_depth);
      window_max_ranks = count;
      RUN(test_the_pixel_window_changes_no_bit_of_the_composited_frame);
      replicated_ranks[1] = count >= 3 ? 3 : 2;
      RUN(test_replicated_ranks_draw_the_single_process_frame_bit_for_bit);
      RUN(test_the_data_choice_replicates_what_fits_and_is_checked);
      composite_env = NULL;
    }
    return check_summary();
  }
  RUN(test_three_ranks_draw_the_single_process_image_of_a_builtin_volume);
  /* The paper pipeline's per-pixel BVH loop on the CPU (the default above is the brick walk). */
  pipeline = "paper";
  RUN(test_three_ranks_draw_the_single_process_image_of_a_raw_file);
  pipeline = "multi";
  RUN(test_four_ranks_in_a_2x2_grid_draw_the_single_process_image);
  RUN(test_ranks_orbit_around_the_up_axis_one_process_uses);
  RUN(test_bricks_thinner_than_two_voxels_are_refused_with_one_line);
  RUN(test_a_rank_count_with_a_large_prime_factor_is_refused);
  RUN(test_a_file_without_iso_takes_the_suggested_isovalue);
  RUN(test_a_bad_option_is_reported_once);
  RUN(test_opaque_surfaces_are_distributed_and_stand_for_iso);
  RUN(test_unshared_options_are_refused);
  RUN(test_the_compositing_choice_is_checked);
  RUN(test_translucent_surfaces_over_three_and_four_ranks_draw_the_single_process_image);
  RUN(test_three_ranks_draw_the_single_process_image_with_clipping_and_gradient_colours);
  RUN(test_two_ranks_share_out_what_the_clip_box_keeps);
  RUN(test_three_ranks_colour_by_a_second_volume_like_one_process);
  RUN(test_three_ranks_write_the_single_process_depth);
  RUN(test_the_pixel_window_changes_no_bit_of_the_composited_frame);
  RUN(test_replicated_ranks_draw_the_single_process_frame_bit_for_bit);
  RUN(test_the_data_choice_replicates_what_fits_and_is_checked);
  RUN(test_occlusion_over_bricks_is_refused_and_light_is_drawn);
  RUN(test_replicated_ranks_share_the_reading_of_a_file);
  return check_summary();
}
