/* inkray extract through the built program (label cpu): bad input exits 2 with one line before any
 * work, a good run writes the same bytes as the library, an empty surface writes a valid empty file,
 * the look options reach the mesh. Runs on the CPU (--device cpu); where there is a GPU, its runs
 * (the mesh written while it downloads) write the CPU's bytes too. */
#include <cuda_runtime_api.h>

#include "tests/check.h"
#include "tests/extract/extract_test_util.h"
#include "tests/headless/run_inkray.h"

#include "data/volume.h"

static char work[256];

static int count_lines(const char *text) {
  int n = 0;
  for (; *text; text++) n += *text == '\n';
  return n;
}

static void expect_refused(const char *const *args, const char *says) {
  run_result r;
  run_inkray(work, args, &r);
  CHECK_EQ_INT(r.status, 2);
  CHECK_STR_CONTAINS(r.output, says);
  CHECK_MSG(count_lines(r.output) == 1, "one line expected, got: %s", r.output);
}

static void test_bad_input_exits_2_with_one_line(void) {
  expect_refused((const char *const[]){"extract", "builtin:sphere:32", NULL}, "no mesh file given");
  expect_refused((const char *const[]){"extract", "-o", "a.ply", NULL}, "no volume given");
  expect_refused((const char *const[]){"extract", "builtin:sphere:32", "-o", "a.ply", "--bogus", NULL}, "unknown option");
  expect_refused((const char *const[]){"extract", "builtin:sphere:32", "-o", "a.ply", "--iso", "x", NULL}, "not a number");
  expect_refused((const char *const[]){"extract", "builtin:sphere:32", "-o", "a.ply", "--iso", "1,2,3,4,5", NULL}, "at most 4");
  expect_refused((const char *const[]){"extract", "builtin:sphere:32", "-o", "a.ply", "--iso", "1,,2", NULL}, "no empty value");
  expect_refused((const char *const[]){"extract", "builtin:sphere:32", "-o", "a.ply", "--method", "thrust,", NULL},
                 "no empty name");
  expect_refused((const char *const[]){"extract", "builtin:sphere:32", "-o", "a.ply", "--iso", "1", "--surface", "2", NULL},
                 "--surface and --iso both given");
  expect_refused((const char *const[]){"extract", "builtin:sphere:32", "-o", "a.ply", "--method", "fastest", NULL},
                 "unknown method 'fastest'");
  expect_refused((const char *const[]){"extract", "builtin:sphere:32", "-o", "a.ply", "--refine", "exact", NULL},
                 "rendering option");
  expect_refused((const char *const[]){"extract", "builtin:sphere:32", "-o", "a.ply", "--step", "0.25", NULL},
                 "rendering option");
  expect_refused((const char *const[]){"extract", "builtin:sphere:32", "-o", "a.ply", "--clip-box", "0,1,0,1", NULL},
                 "--clip-box");
  expect_refused((const char *const[]){"extract", "builtin:sphere:32", "-o", "a.vtk", NULL}, "unknown format");
  /* The output is checked before the volume: a missing folder is reported, not the missing file. */
  expect_refused((const char *const[]){"extract", "no-such-volume.raw", "-o", "no/such/folder/a.ply", NULL},
                 "does not exist");
  run_result r;
  run_inkray(work, (const char *const[]){"extract", "no-such-volume.nrrd", "-o", "a.ply", "--device", "cpu", NULL}, &r);
  CHECK_EQ_INT(r.status, 2);
  CHECK_STR_CONTAINS(r.output, "no-such-volume.nrrd");
  run_inkray(work, (const char *const[]){"extract", "--help", NULL}, &r);
  CHECK_EQ_INT(r.status, 0);
  CHECK_STR_CONTAINS(r.output, "Usage: inkray extract");
  CHECK_STR_CONTAINS(r.output, "redzone");
}

static bool same_file_bytes(const char *a, const char *b) {
  FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
  bool same = fa && fb;
  for (int ca = 0, cb = 0; same && ca != EOF;) {
    ca = fgetc(fa), cb = fgetc(fb);
    same = ca == cb;
  }
  if (fa) fclose(fa);
  if (fb) fclose(fb);
  return same;
}

/* The CPU library's mesh of `v` for `d`, written as PLY, must equal work/cli_file byte for byte
 * (both are removed). */
static void check_library_mesh(const ir_volume *v, const ir_extract_desc *d, const char *cli_file) {
  char err[IR_ERR_LEN], path[300], lib[300];
  ir_extractor *ex = NULL;
  ir_extractor_desc xd = {.device = IR_EXTRACT_CPU};
  ir_mesh m;
  CHECK(ir_extractor_create(&xd, &ex, err) == IR_OK);
  CHECK(ir_extractor_set_volume(ex, v, err) == IR_OK);
  CHECK(ir_extract(ex, d, &m, NULL, err) == IR_OK);
  CHECK(m.vertex_count > 0);
  snprintf(lib, sizeof lib, "%s/lib.ply", work);
  snprintf(path, sizeof path, "%s/%s", work, cli_file);
  CHECK(ir_mesh_write(&m, lib, err) == IR_OK);
  CHECK_MSG(same_file_bytes(path, lib), "%s differs from the library's mesh", cli_file);
  ir_mesh_free(&m);
  ir_extractor_destroy(ex);
  unlink(lib);
  unlink(path);
}

static void test_a_run_writes_the_library_mesh(void) {
  run_result r;
  run_inkray(work, (const char *const[]){"extract", "builtin:sphere:40", "--iso", "1.5", "--device", "cpu", "-o", "cli.ply", NULL},
             &r);
  CHECK_MSG(r.status == 0, "%s", r.output);
  CHECK_STR_CONTAINS(r.output, "vertices");
  ir_volume v;
  char err[IR_ERR_LEN];
  ir_volume_desc vd = {.source = "builtin:sphere:40"};
  CHECK(ir_volume_load(&vd, &v, err) == IR_OK);
  ir_extract_desc d = {.surface_count = 1, .isovalues = {1.5f}};
  check_library_mesh(&v, &d, "cli.ply");
  ir_volume_free(&v);
}

/* --iso suggested:2 takes the two best isovalues the histogram suggests (inkray info's), in
 * ascending order: the mesh is the library's for those values. */
static void test_suggested_isovalues_as_for_rendering(void) {
  run_result r;
  run_inkray(work, (const char *const[]){"extract", "builtin:fractal:32", "--iso", "suggested:2", "--device", "cpu", "-o",
                                         "suggested.ply", NULL},
             &r);
  CHECK_MSG(r.status == 0, "%s", r.output);
  ir_volume v;
  char err[IR_ERR_LEN];
  ir_volume_desc vd = {.source = "builtin:fractal:32"};
  CHECK(ir_volume_load(&vd, &v, err) == IR_OK);
  ir_volume_stats st;
  ir_volume_compute_stats(&v, &st);
  CHECK_MSG(st.suggested_count >= 2, "the fractal suggests %d isovalues", st.suggested_count);
  float a = (float)st.suggested_isovalues[0], b = (float)st.suggested_isovalues[1];
  ir_extract_desc d = {.surface_count = 2, .isovalues = {a < b ? a : b, a < b ? b : a}};
  char line[128];
  snprintf(line, sizeof line, "isovalues %g %g (suggested", (double)d.isovalues[0], (double)d.isovalues[1]);
  CHECK_STR_CONTAINS(r.output, line);
  check_library_mesh(&v, &d, "suggested.ply");
  ir_volume_free(&v);
}

static void test_empty_surface_writes_a_valid_empty_file(void) {
  run_result r;
  run_inkray(work, (const char *const[]){"extract", "builtin:sphere:24", "--iso", "1000", "--device", "cpu", "-o", "empty.stl", NULL},
             &r);
  CHECK_EQ_INT(r.status, 0);
  CHECK_STR_CONTAINS(r.output, "outside");
  CHECK_STR_CONTAINS(r.output, "empty");
  char path[300];
  snprintf(path, sizeof path, "%s/empty.stl", work);
  struct stat st;
  CHECK(stat(path, &st) == 0 && st.st_size == 84);
  unlink(path);
}

static void test_look_options_reach_the_mesh(void) {
  const char *data = getenv("INKRAY_TEST_DATA");
  char volume[512], path[300];
  snprintf(volume, sizeof volume, "%s/neghip_66x66x66_uint8.raw", data ? data : "tests/data/real");
  run_result r;
  run_inkray(work, (const char *const[]){"extract", volume, "--surface", "40", "--surface", "120:red", "--clip-box",
                                         "0,1,0,0.5,0,1", "--device", "cpu", "-o", "neghip.ply", "--method", "all", NULL},
             &r);
  CHECK_MSG(r.status == 0, "%s", r.output);
  snprintf(path, sizeof path, "%s/neghip.ply", work);
  FILE *f = fopen(path, "rb");
  char header[2048] = {0};
  if (f) {
    CHECK(fread(header, 1, sizeof header - 1, f) > 0);
    fclose(f);
  }
  CHECK_STR_CONTAINS(header, "property uchar red"); /* a surface with a colour: per-vertex colours */
  unlink(path);
  run_inkray(work, (const char *const[]){"extract", volume, "--iso", "40", "--color-by", "gradient", "--colormap", "magma",
                                         "--device", "cpu", "-o", "neghip.obj", NULL},
             &r);
  CHECK_MSG(r.status == 0, "%s", r.output);
  snprintf(path, sizeof path, "%s/neghip.obj", work);
  f = fopen(path, "r");
  char line[256] = {0};
  float x, y, z, cr, cg, cb;
  bool coloured = false;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "v %f %f %f %f %f %f", &x, &y, &z, &cr, &cg, &cb) == 6) coloured = true;
  if (f) fclose(f);
  CHECK(coloured);
  unlink(path);
}

/* Headless runs extract the surfaces they drew in the same invocation (--mesh). */
static void test_headless_run_writes_its_surfaces_as_a_mesh(void) {
  run_result r;
  run_inkray(work, (const char *const[]){"--headless", "--device", "cpu", "--frames", "1", "--warmup", "0", "--orbit", "1",
                                         "--size", "32x32", "--no-stages", "--surface", "2", "--surface", "-4:blue",
                                         "--mesh", "drawn.ply", "builtin:sphere:36", NULL},
             &r);
  CHECK_MSG(r.status == 0, "%s", r.output);
  const char *line = strstr(r.output, "mesh: drawn.ply: ");
  size_t vertices = 0, triangles = 0;
  CHECK(line && sscanf(line, "mesh: drawn.ply: %zu vertices, %zu triangles", &vertices, &triangles) == 2);
  ir_volume v;
  char err[IR_ERR_LEN];
  ir_volume_desc vd = {.source = "builtin:sphere:36"};
  CHECK(ir_volume_load(&vd, &v, err) == IR_OK);
  ir_extract_grid g = {.voxels = v.voxels, .type = v.type, .dims = {36, 36, 36}};
  ir_mesh a, b;
  CHECK(ir_marching_cubes(&g, 2.0f, IR_EXTRACT_CPU, &a, err) == IR_OK);
  CHECK(ir_marching_cubes(&g, -4.0f, IR_EXTRACT_CPU, &b, err) == IR_OK);
  CHECK_EQ_INT(vertices, a.vertex_count + b.vertex_count);
  CHECK_EQ_INT(triangles, a.triangle_count + b.triangle_count);
  ir_mesh_free(&a);
  ir_mesh_free(&b);
  ir_volume_free(&v);
  char path[300];
  snprintf(path, sizeof path, "%s/drawn.ply", work);
  unlink(path);
  /* A mesh path that cannot be written stops the run before anything is rendered. */
  run_inkray(work, (const char *const[]){"--headless", "--device", "cpu", "--mesh", "no/such/dir/m.ply", "builtin:sphere:36", NULL},
             &r);
  CHECK_EQ_INT(r.status, 2);
  CHECK_STR_CONTAINS(r.output, "--mesh");
  CHECK(strstr(r.output, "frame time") == NULL);
}

/* On a machine with a GPU: `inkray extract` on the GPU keeps the mesh on the device and writes it
 * while it downloads; the file equals the CPU library's byte for byte (one and two surfaces, with
 * colours, over many download chunks), and so do a headless run's --mesh on both devices. */
static void test_gpu_runs_write_the_library_mesh(void) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    (void)cudaGetLastError();
    printf("    no CUDA device: the GPU runs are left out\n");
    return;
  }
  run_result r;
  run_inkray(work, (const char *const[]){"extract", "builtin:fractal:160", "--iso", "127.5", "--device", "gpu", "-o",
                                         "gpu.ply", NULL},
             &r);
  CHECK_MSG(r.status == 0, "%s", r.output);
  CHECK_STR_CONTAINS(r.output, "download and write");
  ir_volume v;
  char err[IR_ERR_LEN];
  ir_volume_desc vd = {.source = "builtin:fractal:160"};
  CHECK(ir_volume_load(&vd, &v, err) == IR_OK);
  ir_extract_desc d = {.surface_count = 1, .isovalues = {127.5f}};
  check_library_mesh(&v, &d, "gpu.ply");
  run_inkray(work, (const char *const[]){"extract", "builtin:fractal:160", "--surface", "60:red", "--surface", "127.5:blue",
                                         "--device", "gpu", "-o", "gpu2.ply", NULL},
             &r);
  CHECK_MSG(r.status == 0, "%s", r.output);
  run_inkray(work, (const char *const[]){"extract", "builtin:fractal:160", "--surface", "60:red", "--surface", "127.5:blue",
                                         "--device", "cpu", "-o", "cpu2.ply", NULL},
             &r);
  CHECK_MSG(r.status == 0, "%s", r.output);
  char a[300], b[300];
  snprintf(a, sizeof a, "%s/gpu2.ply", work);
  snprintf(b, sizeof b, "%s/cpu2.ply", work);
  CHECK_MSG(same_file_bytes(a, b), "two coloured surfaces: the GPU run's file differs from the CPU run's");
  unlink(a), unlink(b);
  const char *devs[2] = {"gpu", "cpu"};
  for (int k = 0; k < 2; k++) {
    char name[32];
    snprintf(name, sizeof name, "drawn_%s.ply", devs[k]);
    run_inkray(work, (const char *const[]){"--headless", "--device", devs[k], "--frames", "1", "--warmup", "0", "--orbit",
                                           "1", "--size", "32x32", "--no-stages", "--surface", "100:green", "--mesh", name,
                                           "builtin:fractal:96", NULL},
               &r);
    CHECK_MSG(r.status == 0, "%s", r.output);
  }
  snprintf(a, sizeof a, "%s/drawn_gpu.ply", work);
  snprintf(b, sizeof b, "%s/drawn_cpu.ply", work);
  CHECK_MSG(same_file_bytes(a, b), "headless --mesh: the GPU run's file differs from the CPU run's");
  unlink(a), unlink(b);
  ir_volume_free(&v);
}

int main(void) {
  snprintf(work, sizeof work, "%s/inkray-extract-cli-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(work)) {
    perror("mkdtemp");
    return 1;
  }
  RUN(test_bad_input_exits_2_with_one_line);
  RUN(test_a_run_writes_the_library_mesh);
  RUN(test_suggested_isovalues_as_for_rendering);
  RUN(test_empty_surface_writes_a_valid_empty_file);
  RUN(test_look_options_reach_the_mesh);
  RUN(test_headless_run_writes_its_surfaces_as_a_mesh);
  RUN(test_gpu_runs_write_the_library_mesh);
  rmdir(work);
  return check_summary();
}
