/* The GPU extraction against the CPU reference (label gpu; exit 77 without a CUDA device): every
 * compaction method, run twice, must give the CPU's mesh byte for byte (positions, normals, values,
 * colours, triangles) on closed shapes, the fractal, random volumes full of ties and ambiguous
 * faces, real CT data, non-finite voxels, clipping, several surfaces with colours, grids not a
 * multiple of the brick size, device grids, device output and the caller's device arrays. Also:
 * repeated calls allocate nothing, an empty surface, and a GPU too full for the mesh refused with
 * a message, after which the extractor works again. Meshes in pinned host memory, and mesh files
 * written from device meshes through the staging buffers, equal the plain ones byte for byte. On a
 * mismatch it prints the first differing vertex or triangle and the
 * counts of each stage.
 *
 * test_extract_gpu --small runs a reduced set (small volumes) for compute-sanitizer. */
#include <cuda_runtime_api.h>

#include "tests/check.h"
#include "tests/extract/extract_test_util.h"

#include <unistd.h>

#include "data/volume.h"
#include "extract/extract_internal.h"
#include "transfer/transfer.h"

static bool small_mode;

static void print_stats(const char *what, const ir_mesh *m, const ir_extract_stats *s) {
  printf("    %-28s %9zu vertices %9zu triangles | %zu of %zu bricks active, %zu cells with triangles | "
         "count %.3f ms generate %.3f ms device %.3f ms\n",
         what, m->vertex_count, m->triangle_count, s->active_bricks, s->bricks, s->cells_with_triangles, s->count_ms,
         s->generate_ms, s->device_ms);
}

/* Extracts `d` from grid g on the CPU, then on the GPU with every method, twice, and compares. */
static void compare_all_methods(const char *name, const ir_extract_grid *g, const ir_extract_grid *color,
                                ir_extract_desc d) {
  char err[IR_ERR_LEN] = {0};
  ir_extractor *cpu = NULL, *gpu = NULL;
  ir_extractor_desc cd = {.device = IR_EXTRACT_CPU}, gd = {.device = IR_EXTRACT_GPU};
  CHECK(ir_extractor_create(&cd, &cpu, err) == IR_OK);
  CHECK_MSG(ir_extractor_create(&gd, &gpu, err) == IR_OK, "%s", err);
  CHECK_MSG(ir_extractor_set_grid(cpu, g, err) == IR_OK, "%s", err);
  CHECK_MSG(ir_extractor_set_grid(gpu, g, err) == IR_OK, "%s", err);
  if (color) {
    CHECK(ir_extractor_set_color_grid(cpu, color, err) == IR_OK);
    CHECK_MSG(ir_extractor_set_color_grid(gpu, color, err) == IR_OK, "%s", err);
  }
  ir_mesh ref, m;
  ir_extract_stats s;
  printf("  %s\n", name);
  CHECK_MSG(ir_extract(cpu, &d, &ref, &s, err) == IR_OK, "%s", err);
  print_stats("cpu", &ref, &s);
  for (int method = 0; method < IR_COMPACT_METHOD_COUNT; method++) {
    d.method = (ir_compact_method)method;
    for (int run = 0; run < 2; run++) {
      ir_status st = ir_extract(gpu, &d, &m, &s, err);
      char what[128];
      snprintf(what, sizeof what, "%s, run %d", ir_compact_methods()[method].name, run + 1);
      CHECK_MSG(st == IR_OK, "%s: %s", what, err);
      if (st != IR_OK) continue;
      print_stats(what, &m, &s);
      char label[256];
      snprintf(label, sizeof label, "%s: %s against the CPU", name, what);
      CHECK(mesh_equal(&ref, &m, label));
      ir_mesh_free(&m);
    }
  }
  ir_mesh_free(&ref);
  ir_extractor_destroy(cpu);
  ir_extractor_destroy(gpu);
}

static ir_extract_desc one_surface(float iso) {
  ir_extract_desc d;
  memset(&d, 0, sizeof d);
  d.surface_count = 1;
  d.isovalues[0] = iso;
  return d;
}

static void test_closed_shapes(void) {
  int n = small_mode ? 24 : 72;
  shape_fn shapes[3] = {shape_sphere, shape_torus, shape_two_spheres};
  const char *names[3] = {"sphere", "torus", "two spheres"};
  for (int k = 0; k < 3; k++) {
    float *v = make_shape(shapes[k], n);
    ir_extract_grid g = grid_f32(v, (size_t)n, (size_t)n, (size_t)n);
    g.spacing[0] = 0.7f, g.spacing[1] = 1.0f, g.spacing[2] = 1.3f, g.origin[2] = -12.5f;
    compare_all_methods(names[k], &g, NULL, one_surface(0.25f));
    free(v);
  }
}

static void test_fractal_and_real_data(void) {
  char err[IR_ERR_LEN];
  const char *sources[2] = {small_mode ? "builtin:fractal:40" : "builtin:fractal:160", NULL};
  char headsq[512];
  const char *data = getenv("INKRAY_TEST_DATA");
  snprintf(headsq, sizeof headsq, "%s/headsq_64x64x93_int16.raw", data ? data : "tests/data/real");
  sources[1] = headsq;
  float isos[2] = {127.5f, 582.77f};
  for (int k = 0; k < 2; k++) {
    ir_volume v;
    ir_volume_desc vd = {.source = sources[k]};
    CHECK_MSG(ir_volume_load(&vd, &v, err) == IR_OK, "%s", err);
    ir_extract_grid g = {.voxels = v.voxels, .type = v.type, .dims = {v.dims[0], v.dims[1], v.dims[2]},
                         .spacing = {v.spacing[0], v.spacing[1], v.spacing[2]}};
    compare_all_methods(sources[k], &g, NULL, one_surface(isos[k]));
    ir_volume_free(&v);
  }
}

static void test_ties_and_odd_sizes(void) {
  size_t dims[2][3] = {{37, 21, 50}, {5, 40, 17}};
  for (int k = 0; k < (small_mode ? 1 : 2); k++) {
    uint8_t *v = make_random_u8(dims[k], 3, k == 0);
    ir_extract_grid g = {.voxels = v, .type = IR_VOXEL_UINT8, .dims = {dims[k][0], dims[k][1], dims[k][2]}};
    compare_all_methods(k == 0 ? "random 0..2, iso 1 (ties), closed" : "random 5x40x17, open", &g, NULL, one_surface(1.0f));
    free(v);
  }
  /* uint16 with values in the thousands, two isovalues. */
  size_t d16[3] = {34, 33, 35}, n = d16[0] * d16[1] * d16[2];
  uint16_t *w = malloc(n * 2);
  for (size_t i = 0; i < n; i++) w[i] = (uint16_t)(test_rand() % 4000);
  ir_extract_grid g = {.voxels = w, .type = IR_VOXEL_UINT16, .dims = {d16[0], d16[1], d16[2]}};
  ir_extract_desc d = one_surface(1000.0f);
  d.surface_count = 2, d.isovalues[1] = 3000.0f;
  compare_all_methods("uint16 random, two surfaces", &g, NULL, d);
  free(w);
}

static void test_exact_path(void) {
  int n = small_mode ? 28 : 64;
  float *v = make_shape(shape_sphere, n);
  for (int y = 0; y < n; y++)
    for (int x = 0; x < n; x++) v[x + n * (y + n * (n / 2))] = NAN;
  v[n / 2 + n * (n / 2 + n * 5)] = INFINITY;
  ir_extract_grid g = grid_f32(v, (size_t)n, (size_t)n, (size_t)n);
  compare_all_methods("sphere with a NaN slab", &g, NULL, one_surface(0.0f));
  free(v);
  v = make_shape(shape_torus, n);
  g = grid_f32(v, (size_t)n, (size_t)n, (size_t)n);
  ir_extract_desc d = one_surface(0.0f);
  d.clip_box_on = true;
  for (int k = 0; k < 3; k++) d.clip_lo[k] = 0.2f * n, d.clip_hi[k] = 0.9f * n;
  d.clip_plane_on = true;
  d.clip_plane[0] = 1.0f, d.clip_plane[1] = 0.5f, d.clip_plane[3] = -0.6f * n;
  compare_all_methods("torus, clip box and plane", &g, NULL, d);
  free(v);
}

static void test_values_and_colours(void) {
  int n = small_mode ? 24 : 56;
  float *v = make_shape(shape_torus, n), *c = make_shape(shape_sphere, n);
  ir_extract_grid g = grid_f32(v, (size_t)n, (size_t)n, (size_t)n), cg = grid_f32(c, (size_t)n, (size_t)n, (size_t)n);
  float map[9] = {0, 0, 1, 0, 1, 0, 1, 0, 0};
  ir_extract_desc d = one_surface(0.0f);
  d.surface_count = 2, d.isovalues[1] = 1.5f;
  d.values = IR_EXTRACT_VALUES_GRADIENT;
  d.colors = IR_EXTRACT_COLORS_MAP, d.colormap = map, d.colormap_size = 3, d.color_range[0] = 0.5f, d.color_range[1] = 1.5f;
  compare_all_methods("torus, gradient colours, two surfaces", &g, NULL, d);
  d.values = IR_EXTRACT_VALUES_COLOR_GRID;
  d.colors = IR_EXTRACT_COLORS_SURFACE;
  for (int s = 0; s < 2; s++) d.surface_rgba[s][0] = 0.3f * s, d.surface_rgba[s][1] = 0.9f, d.surface_rgba[s][3] = 1.0f;
  compare_all_methods("torus, colour grid values, surface colours", &g, &cg, d);
  d.values = IR_EXTRACT_VALUES_LOCAL_RANGE;
  d.colors = IR_EXTRACT_COLORS_NONE;
  compare_all_methods("torus, local range values (scikit-image's), two surfaces", &g, NULL, d);
  d.axes_zyx = true, d.flip_winding = true;
  compare_all_methods("torus, local range values, z y x axes, triangles reversed", &g, NULL, d);
  free(v);
  free(c);
}

/* A device grid, device output, repeated calls without allocation, an empty surface. */
static void test_device_grid_and_output(void) {
  int n = small_mode ? 24 : 64;
  float *v = make_shape(shape_two_spheres, n);
  size_t bytes = sizeof(float) * (size_t)n * n * n;
  void *dv = NULL;
  CHECK(cudaMalloc(&dv, bytes) == cudaSuccess);
  CHECK(cudaMemcpy(dv, v, bytes, cudaMemcpyHostToDevice) == cudaSuccess);
  char err[IR_ERR_LEN];
  ir_extract_grid g = grid_f32(v, (size_t)n, (size_t)n, (size_t)n);
  ir_extract_desc d = one_surface(0.0f);
  ir_mesh ref, m;
  CHECK(ir_marching_cubes(&g, 0.0f, IR_EXTRACT_CPU, &ref, err) == IR_OK);
  ir_extractor *gpu = NULL;
  ir_extractor_desc gd = {.device = IR_EXTRACT_GPU};
  CHECK(ir_extractor_create(&gd, &gpu, err) == IR_OK);
  g.voxels = dv, g.device_pointer = true;
  CHECK_MSG(ir_extractor_set_grid(gpu, &g, err) == IR_OK, "%s", err);
  d.output = IR_MESH_DEVICE;
  ir_extract_stats s;
  for (int run = 0; run < 3; run++) {
    CHECK_MSG(ir_extract(gpu, &d, &m, &s, err) == IR_OK, "%s", err);
    CHECK(m.on_device);
    if (run > 0) CHECK_MSG(!s.grew, "run %d allocated device memory", run + 1);
    ir_mesh h = m;
    h.on_device = false;
    h.positions = malloc(12 * m.vertex_count + 1), h.normals = malloc(12 * m.vertex_count + 1);
    h.values = malloc(4 * m.vertex_count + 1), h.triangles = malloc(12 * m.triangle_count + 1), h.colors = NULL;
    CHECK(cudaMemcpy(h.positions, m.positions, 12 * m.vertex_count, cudaMemcpyDeviceToHost) == cudaSuccess);
    CHECK(cudaMemcpy(h.normals, m.normals, 12 * m.vertex_count, cudaMemcpyDeviceToHost) == cudaSuccess);
    CHECK(cudaMemcpy(h.values, m.values, 4 * m.vertex_count, cudaMemcpyDeviceToHost) == cudaSuccess);
    CHECK(cudaMemcpy(h.triangles, m.triangles, 12 * m.triangle_count, cudaMemcpyDeviceToHost) == cudaSuccess);
    CHECK(mesh_equal(&ref, &h, "device grid, device output, against the CPU"));
    ir_mesh_free(&h);
    ir_mesh_free(&m); /* clears the struct only */
  }
  d.isovalues[0] = 1e6f;
  CHECK(ir_extract(gpu, &d, &m, &s, err) == IR_OK);
  CHECK_EQ_INT(m.vertex_count, 0);
  CHECK_EQ_INT(m.triangle_count, 0);
  CHECK_EQ_INT(s.active_bricks, 0);
  ir_extractor_destroy(gpu);
  ir_mesh_free(&ref);
  cudaFree(dv);
  free(v);
}

/* The GPU's brick ranges against the host's (ir_mc_ranges_host), value for value, and the
 * non-finite flag: every voxel type; rows read as 16-byte words (x a multiple of 16, the grid
 * aligned) and one voxel at a time (x not a multiple, or the device grid's pointer one voxel off
 * its allocation); slabs of 32 bricks along x and a part slab; NaN and infinities. A range too
 * wide would still give the CPU's meshes (more bricks classified, nothing found in them), so the
 * mesh comparisons above cannot see it: this compares the ranges themselves. */
static void test_brick_ranges_against_the_host(void) {
  struct {
    int type;
    size_t dims[3];
    size_t offset; /* voxels past the device allocation's start; 0: a host grid (uploaded) */
    bool nonfinite;
  } cases[] = {
      {IR_VOXEL_UINT8, {64, 33, 20}, 0, false},   {IR_VOXEL_UINT8, {50, 17, 9}, 0, false},
      {IR_VOXEL_UINT8, {64, 16, 18}, 1, false},   {IR_VOXEL_UINT8, {560, 3, 34}, 0, false},
      {IR_VOXEL_UINT16, {48, 20, 35}, 0, false},  {IR_VOXEL_UINT16, {48, 21, 5}, 3, false},
      {IR_VOXEL_INT16, {37, 18, 19}, 0, false},   {IR_VOXEL_INT16, {32, 40, 2}, 0, false},
      {IR_VOXEL_FLOAT32, {32, 32, 17}, 0, true},  {IR_VOXEL_FLOAT32, {33, 5, 40}, 0, false},
      {IR_VOXEL_FLOAT32, {16, 17, 16}, 2, true},  {IR_VOXEL_FLOAT32, {1, 30, 20}, 0, false},
  };
  char err[IR_ERR_LEN];
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const size_t *dims = cases[c].dims, n = dims[0] * dims[1] * dims[2];
    const int type = cases[c].type;
    const size_t size = ir_mc_type_size(type);
    uint8_t *v = malloc(n * size);
    for (size_t i = 0; i < n; i++) {
      uint32_t r = test_rand();
      if (type == IR_VOXEL_UINT8) v[i] = (uint8_t)r;
      else if (type == IR_VOXEL_UINT16) ((uint16_t *)v)[i] = (uint16_t)(r % 60000u);
      else if (type == IR_VOXEL_INT16) ((int16_t *)v)[i] = (int16_t)((int32_t)(r % 65536u) - 32768);
      else ((float *)v)[i] = (float)(r % 100000u) * 0.01f - 500.0f;
    }
    if (cases[c].nonfinite) {
      float *f = (float *)v;
      f[n / 3] = NAN, f[n / 2] = INFINITY, f[n - 1] = -INFINITY;
      for (size_t x = 0; x < dims[0]; x++) f[x + dims[0] * dims[1] * 3] = NAN; /* a row of NaN */
    }
    ir_extract_grid g = {.voxels = v, .type = (ir_voxel_type)type, .dims = {dims[0], dims[1], dims[2]}};
    void *dv = NULL;
    if (cases[c].offset) {
      CHECK(cudaMalloc(&dv, (n + cases[c].offset) * size) == cudaSuccess);
      CHECK(cudaMemcpy((uint8_t *)dv + cases[c].offset * size, v, n * size, cudaMemcpyHostToDevice) == cudaSuccess);
      g.voxels = (uint8_t *)dv + cases[c].offset * size, g.device_pointer = true;
    }
    ir_extractor *gpu = NULL;
    ir_extractor_desc gd = {.device = IR_EXTRACT_GPU};
    CHECK_MSG(ir_extractor_create(&gd, &gpu, err) == IR_OK, "%s", err);
    CHECK_MSG(ir_extractor_set_grid(gpu, &g, err) == IR_OK, "%s", err);
    ir_mc_grid mg;
    ir_mc_grid_of(&g, &mg);
    size_t bricks = (size_t)mg.bricks[0] * mg.bricks[1] * mg.bricks[2];
    ir_mc_range *host = malloc(bricks * sizeof *host), *dev = malloc(bricks * sizeof *dev);
    bool finite = ir_mc_ranges_host(&mg, v, host, 2);
    CHECK_MSG(ir_gpu_extract_ranges(gpu, dev, err) == IR_OK, "%s", err);
    size_t wrong = 0, first = 0;
    for (size_t b = 0; b < bricks; b++)
      if (host[b].lo != dev[b].lo || host[b].hi != dev[b].hi) {
        if (!wrong) first = b;
        wrong++;
      }
    CHECK_MSG(wrong == 0, "case %zu (%zux%zux%zu, type %d, offset %zu): %zu of %zu brick ranges differ from the "
              "host's, the first brick %zu: GPU [%g, %g], host [%g, %g]", c, dims[0], dims[1], dims[2], type,
              cases[c].offset, wrong, bricks, first, dev[first].lo, dev[first].hi, host[first].lo, host[first].hi);
    CHECK_MSG(gpu->all_finite == finite && finite == !cases[c].nonfinite, "case %zu: all finite: GPU %d, host %d",
              c, (int)gpu->all_finite, (int)finite);
    free(host);
    free(dev);
    ir_extractor_destroy(gpu);
    cudaFree(dv);
    free(v);
  }
}

/* A device mesh written chunk by chunk through the staging buffers gives the same file, byte for
 * byte, as its host copy (PLY, STL, OBJ, with and without colours, meshes of many chunks); a
 * pinned host mesh equals the plain one and its blocks go back to the cache. */
static void test_pinned_mesh_and_files_from_the_device(void) {
  char err[IR_ERR_LEN];
  ir_volume v;
  ir_volume_desc vd = {.source = small_mode ? "builtin:fractal:48" : "builtin:fractal:200"};
  CHECK(ir_volume_load(&vd, &v, err) == IR_OK);
  ir_extractor *plain = NULL, *pinned = NULL;
  ir_extractor_desc pd = {.device = IR_EXTRACT_GPU}, qd = {.device = IR_EXTRACT_GPU, .pinned_mesh = true};
  CHECK_MSG(ir_extractor_create(&pd, &plain, err) == IR_OK, "%s", err);
  CHECK_MSG(ir_extractor_create(&qd, &pinned, err) == IR_OK, "%s", err);
  CHECK_MSG(ir_extractor_set_volume(plain, &v, err) == IR_OK, "%s", err);
  CHECK_MSG(ir_extractor_set_volume(pinned, &v, err) == IR_OK, "%s", err);
  const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  for (int colored = 0; colored < 2; colored++) {
    ir_extract_desc d = one_surface(127.5f);
    if (colored) {
      d.surface_count = 2, d.isovalues[1] = 60.0f;
      d.colors = IR_EXTRACT_COLORS_SURFACE;
      d.surface_rgba[0][0] = 1.0f, d.surface_rgba[0][3] = 1.0f, d.surface_rgba[1][2] = 0.5f, d.surface_rgba[1][3] = 1.0f;
    }
    ir_mesh host, pin, dev;
    CHECK_MSG(ir_extract(plain, &d, &host, NULL, err) == IR_OK, "%s", err);
    for (int run = 0; run < 2; run++) {
      size_t cached_before = 0, cached_after = 0, used = 0;
      ir_xfer_host_usage(NULL, &cached_before);
      CHECK_MSG(ir_extract(pinned, &d, &pin, NULL, err) == IR_OK, "%s", err);
      CHECK(pin.pinned);
      CHECK(mesh_equal(&host, &pin, "pinned host mesh against the plain one"));
      ir_mesh_free(&pin);
      ir_xfer_host_usage(&used, &cached_after);
      CHECK_EQ_INT(used, 0);
      if (run > 0) CHECK_MSG(cached_after == cached_before, "the second call grew the cache (%zu -> %zu bytes)",
                             cached_before, cached_after);
    }
    d.output = IR_MESH_DEVICE;
    CHECK_MSG(ir_extract(plain, &d, &dev, NULL, err) == IR_OK, "%s", err);
    printf("    %zu vertices, %zu triangles%s\n", dev.vertex_count, dev.triangle_count, colored ? ", coloured" : "");
    const char *ext[3] = {"ply", "stl", "obj"};
    for (int k = 0; k < (small_mode ? 3 : 2); k++) {
      char a[600], b[600];
      /* The process id in the names: ctest runs this binary and its memcheck run at once. */
      snprintf(a, sizeof a, "%s/test_extract_gpu_host_%ld.%s", dir, (long)getpid(), ext[k]);
      snprintf(b, sizeof b, "%s/test_extract_gpu_device_%ld.%s", dir, (long)getpid(), ext[k]);
      CHECK_MSG(ir_mesh_write(&host, a, err) == IR_OK, "%s", err);
      CHECK_MSG(ir_mesh_write(&dev, b, err) == IR_OK, "%s", err);
      size_t na = 0, nb = 0;
      unsigned char *fa = check_read_file(a, &na), *fb = check_read_file(b, &nb);
      CHECK_MSG(fa && fb && na == nb && na > 0 && memcmp(fa, fb, na) == 0,
                "%s: the device mesh's file (%zu bytes) differs from the host mesh's (%zu bytes)", ext[k], nb, na);
      free(fa), free(fb);
      unlink(a), unlink(b);
    }
    ir_mesh_free(&dev);
    ir_mesh_free(&host);
  }
  ir_extractor_destroy(plain);
  ir_extractor_destroy(pinned);
  ir_volume_free(&v);
}

/* The caller's device arrays (IR_MESH_CALLER): several surfaces with colours, every method, the
 * CPU's mesh byte for byte; arrays not in device memory are refused before anything is written. */
typedef struct device_arrays {
  int calls;
  bool host; /* hand out host memory instead (refused) */
  ir_mesh_arrays given;
  size_t vertices, triangles;
} device_arrays;

static ir_status allocate_device(void *user, size_t vertices, size_t triangles, bool colors, ir_mesh_arrays *a,
                                 char err[IR_ERR_LEN]) {
  device_arrays *c = user;
  c->calls++;
  c->vertices = vertices, c->triangles = triangles;
  void *p[5] = {NULL, NULL, NULL, NULL, NULL};
  size_t bytes[5] = {12 * vertices + 1, 12 * vertices + 1, 4 * vertices + 1, colors ? 4 * vertices + 1 : 0,
                     12 * triangles + 1};
  for (int k = 0; k < 5; k++) {
    if (!bytes[k]) continue;
    if (c->host) p[k] = malloc(bytes[k]);
    else if (cudaMalloc(&p[k], bytes[k]) != cudaSuccess) {
      snprintf(err, IR_ERR_LEN, "cudaMalloc of %zu bytes failed", bytes[k]);
      return IR_ERR_RUNTIME;
    }
  }
  *a = (ir_mesh_arrays){(float *)p[0], (float *)p[1], (float *)p[2], (uint8_t *)p[3], (uint32_t *)p[4]};
  c->given = *a;
  return IR_OK;
}

static void release_arrays(device_arrays *c) {
  void *p[5] = {c->given.positions, c->given.normals, c->given.values, c->given.colors, c->given.triangles};
  for (int k = 0; k < 5; k++) c->host ? free(p[k]) : (void)cudaFree(p[k]);
  memset(&c->given, 0, sizeof c->given);
}

static void test_caller_device_arrays(void) {
  int n = small_mode ? 24 : 72;
  float *v = make_shape(shape_two_spheres, n);
  char err[IR_ERR_LEN];
  ir_extract_grid g = grid_f32(v, (size_t)n, (size_t)n, (size_t)n);
  ir_extract_desc d = one_surface(0.0f);
  d.surface_count = 3, d.isovalues[1] = 2.0f, d.isovalues[2] = -1.5f;
  d.values = IR_EXTRACT_VALUES_LOCAL_RANGE, d.colors = IR_EXTRACT_COLORS_SURFACE;
  for (int s = 0; s < 3; s++) d.surface_rgba[s][s] = 1.0f, d.surface_rgba[s][3] = 1.0f;
  d.axes_zyx = true;
  ir_extractor *cpu = NULL, *gpu = NULL;
  ir_extractor_desc cd = {.device = IR_EXTRACT_CPU}, gd = {.device = IR_EXTRACT_GPU};
  CHECK(ir_extractor_create(&cd, &cpu, err) == IR_OK && ir_extractor_set_grid(cpu, &g, err) == IR_OK);
  CHECK(ir_extractor_create(&gd, &gpu, err) == IR_OK);
  CHECK_MSG(ir_extractor_set_grid(gpu, &g, err) == IR_OK, "%s", err);
  for (int surfaces = 1; surfaces <= 3; surfaces += 2) {
    d.surface_count = surfaces;
    d.output = IR_MESH_HOST;
    ir_mesh ref;
    CHECK_MSG(ir_extract(cpu, &d, &ref, NULL, err) == IR_OK, "%s", err);
    for (int method = 0; method < IR_COMPACT_METHOD_COUNT; method++) {
      device_arrays c = {0};
      d.method = (ir_compact_method)method;
      d.output = IR_MESH_CALLER, d.allocate = allocate_device, d.allocate_user = &c;
      ir_mesh m;
      ir_extract_stats s;
      CHECK_MSG(ir_extract(gpu, &d, &m, &s, err) == IR_OK, "%s", err);
      CHECK_EQ_INT(c.calls, 1);
      CHECK(m.on_device && m.borrowed && m.positions == c.given.positions);
      CHECK_EQ_INT(c.vertices, ref.vertex_count);
      CHECK_EQ_INT(c.triangles, ref.triangle_count);
      ir_mesh h = m;
      h.on_device = false, h.borrowed = false;
      size_t nv = m.vertex_count, nt = m.triangle_count;
      h.positions = malloc(12 * nv + 1), h.normals = malloc(12 * nv + 1), h.values = malloc(4 * nv + 1);
      h.colors = malloc(4 * nv + 1), h.triangles = malloc(12 * nt + 1);
      CHECK(cudaMemcpy(h.positions, m.positions, 12 * nv, cudaMemcpyDeviceToHost) == cudaSuccess);
      CHECK(cudaMemcpy(h.normals, m.normals, 12 * nv, cudaMemcpyDeviceToHost) == cudaSuccess);
      CHECK(cudaMemcpy(h.values, m.values, 4 * nv, cudaMemcpyDeviceToHost) == cudaSuccess);
      CHECK(cudaMemcpy(h.colors, m.colors, 4 * nv, cudaMemcpyDeviceToHost) == cudaSuccess);
      CHECK(cudaMemcpy(h.triangles, m.triangles, 12 * nt, cudaMemcpyDeviceToHost) == cudaSuccess);
      char what[96];
      snprintf(what, sizeof what, "%d surface(s) into the caller's arrays, %s", surfaces,
               ir_compact_methods()[method].name);
      CHECK(mesh_equal(&ref, &h, what));
      if (method == 0) print_stats(what, &m, &s);
      ir_mesh_free(&h);
      ir_mesh_free(&m); /* borrowed: clears the struct only */
      release_arrays(&c);
    }
    ir_mesh_free(&ref);
  }
  device_arrays c = {.host = true};
  d.allocate_user = &c;
  CHECK(ir_extract(gpu, &d, &(ir_mesh){0}, NULL, err) == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "not device memory");
  release_arrays(&c);
  /* The extractor works on after the refusal. */
  c = (device_arrays){0};
  ir_mesh m;
  CHECK_MSG(ir_extract(gpu, &d, &m, NULL, err) == IR_OK, "%s", err);
  CHECK(m.triangle_count > 0);
  release_arrays(&c);
  ir_extractor_destroy(gpu);
  ir_extractor_destroy(cpu);
  free(v);
}

/* With the GPU nearly full, the extraction is refused with what it needs; once memory is back the
 * same extractor works. */
static void test_full_gpu_is_refused_with_a_message(void) {
  char err[IR_ERR_LEN];
  ir_volume v;
  ir_volume_desc vd = {.source = "builtin:fractal:96"};
  CHECK(ir_volume_load(&vd, &v, err) == IR_OK);
  ir_extractor *gpu = NULL;
  ir_extractor_desc gd = {.device = IR_EXTRACT_GPU};
  CHECK(ir_extractor_create(&gd, &gpu, err) == IR_OK);
  CHECK(ir_extractor_set_volume(gpu, &v, err) == IR_OK);
  size_t free_bytes = 0, total = 0;
  CHECK(cudaMemGetInfo(&free_bytes, &total) == cudaSuccess);
  /* Leave 2 MiB: less than the mesh of 96^3 needs (and than the candidate lists of 216 bricks x 32 KiB). */
  void *hog = NULL;
  size_t leave = (size_t)2 << 20;
  if (free_bytes > leave && cudaMalloc(&hog, free_bytes - leave) == cudaSuccess) {
    ir_extract_desc d = one_surface(127.5f);
    ir_mesh m;
    ir_status st = ir_extract(gpu, &d, &m, NULL, err);
    CHECK_EQ_INT(st, IR_ERR_RUNTIME);
    CHECK_STR_CONTAINS(err, "GPU memory");
    printf("    refused as expected: %s\n", err);
    cudaFree(hog);
    st = ir_extract(gpu, &d, &m, NULL, err);
    CHECK_MSG(st == IR_OK, "after the memory came back: %s", err);
    CHECK(m.triangle_count > 0);
    ir_mesh_free(&m);
  } else {
    (void)cudaGetLastError();
    printf("    could not fill the GPU to test the refusal (%zu MiB free); left out\n", free_bytes >> 20);
  }
  ir_extractor_destroy(gpu);
  ir_volume_free(&v);
}

int main(int argc, char **argv) {
  small_mode = argc > 1 && strcmp(argv[1], "--small") == 0;
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    char reason[256];
    snprintf(reason, sizeof reason, "no CUDA device (%s)", e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    check_skip_all(reason);
  }
  if (argc > 1 && strcmp(argv[1], "--probe") == 0) return 0;
  RUN(test_closed_shapes);
  RUN(test_fractal_and_real_data);
  RUN(test_ties_and_odd_sizes);
  RUN(test_exact_path);
  RUN(test_values_and_colours);
  RUN(test_device_grid_and_output);
  RUN(test_brick_ranges_against_the_host);
  RUN(test_pinned_mesh_and_files_from_the_device);
  RUN(test_caller_device_arrays);
  if (!small_mode) RUN(test_full_gpu_is_refused_with_a_message);
  return check_summary();
}
