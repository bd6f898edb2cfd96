/* The renderer's volumes: slots (time series), a renderer made from a header whose voxels are
 * streamed in while they are read, and the statistics computed where the volume lives.
 *   - each slot draws its own volume: the same image, bit for bit, as a renderer made from that
 *     volume alone (on the GPU with the multi pipeline too, whose captured graph reads ranges
 *     the slot switch must replace);
 *   - a renderer made from a header draws nothing until its slot is filled, then the loaded
 *     volume; the sink saw every piece (on the GPU);
 *   - a slot is filled on another thread while frames draw another one;
 *   - bad slot calls are refused with a message;
 *   - statistics: on the GPU the same histograms, range and suggested isovalues as the CPU's;
 *   - (GPU) brick and cell ranges computed on the device equal the CPU's for every voxel type,
 *     with NaN, +-Inf, int16's -32768 and sizes that are not multiples of a cell;
 *   - (GPU) the walk's skip distances equal the host's for the frame's isovalues, cells and slot,
 *     and are rebuilt exactly when one of those changes.
 * Without arguments on the CPU renderer; --gpu on the GPU (exit 77, skipped, without a device). */
#include <math.h>
#include <pthread.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "render/render_internal.h"
#include "tests/check.h"
#include "tests/render/render_test_util.h"

enum { W = 80, H = 64 };

static bool g_gpu = false;
static ir_device g_device = IR_DEVICE_CPU;
static char g_dir[256];

/* A sphere of radius 0.3 n about (cx, n/2, n/2) in voxels, in each voxel type: float R - d;
 * integers 100 + 20 (R - d) clamped (int16 with -32768 far outside); a few NaN and Inf
 * voxels in float volumes, away from the sphere. */
static void sphere_volume(ir_volume *v, ir_voxel_type type, const size_t dims[3], double cx) {
  memset(v, 0, sizeof *v);
  memcpy(v->dims, dims, sizeof v->dims);
  memcpy(v->full_dims, dims, sizeof v->full_dims);
  for (int k = 0; k < 3; k++) v->spacing[k] = 1.0f;
  v->type = type;
  size_t n = dims[0] * dims[1] * dims[2];
  v->bytes = n * ir_voxel_type_size(type);
  v->voxels = calloc(n, ir_voxel_type_size(type));
  double r = 0.3 * (double)dims[1];
  for (size_t z = 0; z < dims[2]; z++)
    for (size_t y = 0; y < dims[1]; y++)
      for (size_t x = 0; x < dims[0]; x++) {
        size_t i = x + dims[0] * (y + dims[1] * z);
        double dx = (double)x - cx, dy = (double)y - 0.5 * (double)dims[1], dz = (double)z - 0.5 * (double)dims[2];
        double f = r - sqrt(dx * dx + dy * dy + dz * dz);
        double q = 100.0 + 20.0 * f;
        switch (type) {
        case IR_VOXEL_UINT8: ((uint8_t *)v->voxels)[i] = (uint8_t)(q < 0 ? 0 : q > 255 ? 255 : q); break;
        case IR_VOXEL_UINT16: ((uint16_t *)v->voxels)[i] = (uint16_t)(q < 0 ? 0 : q * 10.0); break;
        case IR_VOXEL_INT16: ((int16_t *)v->voxels)[i] = (int16_t)(q < -50 ? -32768 : q); break;
        default: ((float *)v->voxels)[i] = (float)f; break;
        }
      }
  if (type == IR_VOXEL_FLOAT32 && n > 10) {
    float *p = v->voxels;
    p[0] = NAN;
    p[1] = INFINITY;
    p[n - 1] = -INFINITY;
  }
  snprintf(v->name, sizeof v->name, "sphere-%s-%.1f", ir_voxel_type_name(type), cx);
  v->value_min = -1e30;
  v->value_max = 1e30;
}

static ir_frame_desc frame_of(const ir_volume *v, float iso, ir_pipeline pipeline) {
  ir_frame_desc f = {.width = W, .height = H, .isovalue = iso, .pipeline = pipeline};
  f.camera = ir_camera_orbit(v, 30.0f, 20.0f, 1.0f, IR_AXIS_Z);
  return f;
}

static bool render(ir_renderer *r, const ir_frame_desc *f, uint8_t *rgba) {
  char err[IR_ERR_LEN] = "";
  bool ok = ir_render_frame(r, f, NULL, err) == IR_OK && ir_render_read_image(r, rgba, err) == IR_OK;
  if (!ok) fprintf(stderr, "render failed: %s\n", err);
  return ok;
}

static ir_renderer *make_renderer(const ir_volume *v) {
  ir_renderer *r = NULL;
  char err[IR_ERR_LEN] = "";
  ir_renderer_desc desc = {.device = g_device, .volume = v};
  CHECK_MSG(ir_renderer_create(&desc, &r, err) == IR_OK, "%s", err);
  return r;
}

/* The frame of `r` (drawing some slot) equals that of a renderer made from `v` alone. */
static void check_draws(ir_renderer *r, const ir_volume *v, float iso, const char *what) {
  static uint8_t a[W * H * 4], b[W * H * 4];
  ir_renderer *fresh = make_renderer(v);
  if (!fresh) return;
  const ir_pipeline pipes[] = {IR_PIPELINE_SINGLE, IR_PIPELINE_MULTI};
  for (int k = 0; k < (g_gpu ? 2 : 1); k++) {
    ir_frame_desc f = frame_of(v, iso, pipes[k]);
    if (!render(r, &f, a) || !render(fresh, &f, b)) break;
    CHECK_MSG(memcmp(a, b, sizeof a) == 0, "%s: the %s frame differs from a renderer of the volume alone", what,
              ir_pipeline_name(pipes[k]));
    CHECK_MSG(util_coverage(a, W, H) > 100, "%s: hardly anything drawn", what);
  }
  ir_renderer_destroy(fresh);
}

static void test_slots_draw_their_own_volume(void) {
  size_t dims[3] = {40, 32, 28};
  ir_volume v[3];
  for (int k = 0; k < 3; k++) sphere_volume(&v[k], IR_VOXEL_UINT8, dims, 12.0 + 8.0 * k);
  ir_renderer *r = make_renderer(&v[0]);
  char err[IR_ERR_LEN] = "";
  CHECK_MSG(ir_renderer_set_slots(r, 3, err) == IR_OK, "%s", err);
  /* Frames on slot 0 first: the multi pipeline's graph is captured with slot 0's ranges. */
  check_draws(r, &v[0], 100.5f, "slot 0");
  for (int k = 1; k < 3; k++) {
    ir_volume_sink sink;
    CHECK(ir_renderer_slot_begin(r, k, &sink, err) == IR_OK);
    CHECK_MSG(ir_renderer_slot_end(r, k, &v[k], err) == IR_OK, "%s", err);
  }
  for (int k = 1; k < 3; k++) {
    CHECK_MSG(ir_renderer_use_slot(r, k, err) == IR_OK, "%s", err);
    check_draws(r, &v[k], 100.5f, k == 1 ? "slot 1" : "slot 2");
  }
  CHECK(ir_renderer_use_slot(r, 0, err) == IR_OK);
  check_draws(r, &v[0], 100.5f, "slot 0 again");
  /* Refilled after being drawn: the new volume. */
  ir_volume_sink sink;
  CHECK(ir_renderer_slot_begin(r, 1, &sink, err) == IR_OK);
  CHECK(ir_renderer_slot_end(r, 1, &v[2], err) == IR_OK);
  CHECK(ir_renderer_use_slot(r, 1, err) == IR_OK);
  check_draws(r, &v[2], 100.5f, "slot 1 refilled");
  ir_slot_times t;
  CHECK(ir_renderer_slot_times(r, 1, &t, err) == IR_OK && t.upload_ms >= 0 && t.ranges_ms >= 0);
  ir_renderer_destroy(r);
  for (int k = 0; k < 3; k++) ir_volume_free(&v[k]);
}

static const char *write_raw(const ir_volume *v, const char *name) {
  static char path[512];
  snprintf(path, sizeof path, "%s/%s_%zux%zux%zu_%s.raw", g_dir, name, v->dims[0], v->dims[1], v->dims[2],
           ir_voxel_type_name(v->type));
  FILE *f = fopen(path, "wb");
  CHECK(f && fwrite(v->voxels, 1, v->bytes, f) == v->bytes);
  if (f) fclose(f);
  return path;
}

static void test_header_first_then_streamed_voxels(void) {
  size_t dims[3] = {300, 220, 70}; /* several 4 MiB pieces of float data */
  ir_volume made;
  sphere_volume(&made, IR_VOXEL_FLOAT32, dims, 150.0);
  const char *path = write_raw(&made, "streamed");
  char err[IR_ERR_LEN] = "";
  ir_volume header, v;
  ir_volume_desc hd = {.source = path, .header_only = true};
  CHECK_MSG(ir_volume_load(&hd, &header, err) == IR_OK, "%s", err);
  CHECK(header.streamable);
  ir_renderer *r = NULL;
  ir_renderer_desc desc = {.device = g_device, .volume = &header, .voxels_later = true};
  CHECK_MSG(ir_renderer_create(&desc, &r, err) == IR_OK, "%s", err);
  if (!r) return;
  uint8_t rgba[W * H * 4];
  ir_frame_desc f = frame_of(&header, 0.5f, IR_PIPELINE_SINGLE);
  CHECK(ir_render_frame(r, &f, NULL, err) == IR_ERR_INPUT);
  CHECK_MSG(strstr(err, "no voxels yet") != NULL, "%s", err);
  ir_volume_sink sink;
  CHECK(ir_renderer_slot_begin(r, 0, &sink, err) == IR_OK);
  ir_volume_desc vd = {.source = path, .sink = &sink, .io_threads = 3};
  CHECK_MSG(ir_volume_load(&vd, &v, err) == IR_OK, "%s", err);
  CHECK(v.streamed == g_gpu); /* the CPU needs no sink */
  CHECK_MSG(ir_renderer_slot_end(r, 0, &v, err) == IR_OK, "%s", err);
  CHECK_MSG(ir_renderer_use_slot(r, 0, err) == IR_OK, "%s", err);
  CHECK(render(r, &f, rgba));
  check_draws(r, &v, 0.5f, "streamed slot 0");
  ir_renderer_destroy(r);
  ir_volume_free(&v);
  ir_volume_free(&header);
  ir_volume_free(&made);
}

typedef struct filler {
  ir_renderer *r;
  const char *path;
  ir_volume v;
  ir_status status;
  char err[IR_ERR_LEN];
} filler;

static void *fill_slot_1(void *arg) {
  filler *f = arg;
  ir_volume_sink sink;
  f->status = ir_renderer_slot_begin(f->r, 1, &sink, f->err);
  ir_volume_desc d = {.source = f->path, .sink = &sink};
  if (f->status == IR_OK) f->status = ir_volume_load(&d, &f->v, f->err);
  if (f->status == IR_OK) f->status = ir_renderer_slot_end(f->r, 1, &f->v, f->err);
  return NULL;
}

static void test_a_slot_fills_on_another_thread_while_frames_draw(void) {
  size_t dims[3] = {256, 128, 96};
  ir_volume a, b;
  sphere_volume(&a, IR_VOXEL_UINT16, dims, 100.0);
  sphere_volume(&b, IR_VOXEL_UINT16, dims, 160.0);
  filler fl = {.r = make_renderer(&a), .path = strdup(write_raw(&b, "second"))};
  char err[IR_ERR_LEN] = "";
  if (!fl.r) return;
  CHECK(ir_renderer_set_slots(fl.r, 2, err) == IR_OK);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, fill_slot_1, &fl) == 0);
  static uint8_t rgba[W * H * 4];
  ir_frame_desc f = frame_of(&a, 1000.5f, IR_PIPELINE_SINGLE);
  for (int k = 0; k < 4; k++) CHECK(render(fl.r, &f, rgba));
  pthread_join(t, NULL);
  CHECK_MSG(fl.status == IR_OK, "%s", fl.err);
  check_draws(fl.r, &a, 1000.5f, "slot 0 while slot 1 filled");
  CHECK(ir_renderer_use_slot(fl.r, 1, err) == IR_OK);
  check_draws(fl.r, &fl.v, 1000.5f, "slot 1 filled on another thread");
  ir_renderer_destroy(fl.r);
  ir_volume_free(&fl.v);
  ir_volume_free(&a);
  ir_volume_free(&b);
  free((void *)fl.path);
}

static void test_bad_slot_calls_are_refused(void) {
  size_t dims[3] = {16, 16, 16}, other[3] = {16, 16, 17};
  ir_volume v, w;
  sphere_volume(&v, IR_VOXEL_UINT8, dims, 8.0);
  sphere_volume(&w, IR_VOXEL_UINT8, other, 8.0);
  ir_renderer *r = make_renderer(&v);
  char err[IR_ERR_LEN] = "";
  ir_volume_sink sink;
  if (!r) return;
  CHECK(ir_renderer_set_slots(r, 0, err) == IR_ERR_INPUT);
  CHECK(ir_renderer_set_slots(r, IR_MAX_SLOTS + 1, err) == IR_ERR_INPUT);
  CHECK(ir_renderer_slot_begin(r, 1, &sink, err) == IR_ERR_INPUT); /* one slot so far */
  CHECK(ir_renderer_slot_begin(r, 0, &sink, err) == IR_ERR_INPUT); /* the one in use */
  CHECK_MSG(strstr(err, "frames draw") != NULL, "%s", err);
  CHECK(ir_renderer_set_slots(r, 2, err) == IR_OK);
  CHECK(ir_renderer_use_slot(r, 1, err) == IR_ERR_INPUT); /* never filled */
  CHECK(ir_renderer_slot_begin(r, 1, &sink, err) == IR_OK);
  CHECK(ir_renderer_slot_end(r, 1, &w, err) == IR_ERR_INPUT);
  CHECK_MSG(strstr(err, "must match") != NULL, "%s", err);
  ir_renderer_destroy(r);
  ir_volume_free(&v);
  ir_volume_free(&w);
}

static void test_statistics_match_the_cpu(void) {
  size_t dims[3] = {45, 38, 31};
  for (int t = 0; t < IR_VOXEL_TYPE_COUNT; t++) {
    ir_volume v;
    sphere_volume(&v, (ir_voxel_type)t, dims, 20.0);
    ir_renderer *r = make_renderer(&v);
    if (!r) continue;
    ir_volume_stats got, want;
    char err[IR_ERR_LEN] = "";
    CHECK_MSG(ir_renderer_volume_stats(r, &got, err) == IR_OK, "%s", err);
    ir_volume_compute_stats(&v, &want);
    const char *type = ir_voxel_type_name(v.type);
    CHECK_MSG(got.min == want.min && got.max == want.max, "%s: range %g..%g, CPU %g..%g", type, got.min, got.max,
              want.min, want.max);
    CHECK_MSG(got.nonfinite_count == want.nonfinite_count, "%s: %zu non-finite, CPU %zu", type, got.nonfinite_count,
              want.nonfinite_count);
    CHECK_MSG(memcmp(got.histogram, want.histogram, sizeof got.histogram) == 0, "%s: histograms differ", type);
    CHECK_NEAR(got.mean, want.mean, 1e-9 * (fabs(want.mean) + 1.0));
    CHECK_EQ_INT(got.suggested_count, want.suggested_count);
    double span = want.max - want.min;
    for (int k = 0; k < got.suggested_count && k < want.suggested_count; k++)
      CHECK_NEAR(got.suggested_isovalues[k], want.suggested_isovalues[k], 1e-9 * span);
    ir_renderer_destroy(r);
    ir_volume_free(&v);
  }
}

/* GPU: the device's ranges against a CPU renderer's, for each type and awkward sizes. */
static void test_gpu_ranges_match_the_cpu(void) {
  const size_t sizes[][3] = {{17, 9, 33}, {1, 40, 40}, {64, 64, 64}, {2, 2, 2}, {130, 7, 9}};
  for (int t = 0; t < IR_VOXEL_TYPE_COUNT; t++)
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
      ir_volume v;
      sphere_volume(&v, (ir_voxel_type)t, sizes[s], 0.4 * (double)sizes[s][0]);
      ir_renderer *gpu = make_renderer(&v), *cpu = NULL;
      char err[IR_ERR_LEN] = "";
      ir_renderer_desc desc = {.device = IR_DEVICE_CPU, .volume = &v};
      CHECK(ir_renderer_create(&desc, &cpu, err) == IR_OK);
      if (gpu && cpu) {
        const uint32_t *bd = cpu->layout.dims[0];
        size_t bricks = (size_t)bd[0] * bd[1] * bd[2], cells = (size_t)cpu->cells[0] * cpu->cells[1] * cpu->cells[2];
        ir_brick_range *b = malloc(bricks * sizeof *b), *c = malloc(cells * sizeof *c);
        CHECK_MSG(ir_gpu_read_ranges(gpu, b, c, err) == IR_OK, "%s", err);
        CHECK_MSG(memcmp(b, cpu->ranges, bricks * sizeof *b) == 0, "%s %zux%zux%zu: brick ranges differ",
                  ir_voxel_type_name(v.type), sizes[s][0], sizes[s][1], sizes[s][2]);
        CHECK_MSG(memcmp(c, cpu->cell_ranges, cells * sizeof *c) == 0, "%s %zux%zux%zu: cell ranges differ",
                  ir_voxel_type_name(v.type), sizes[s][0], sizes[s][1], sizes[s][2]);
        free(b);
        free(c);
      }
      ir_renderer_destroy(gpu);
      ir_renderer_destroy(cpu);
      ir_volume_free(&v);
    }
}

/* GPU: the skip distances a frame leaves on the device against the host's (ir_skip_map_host) from
 * a CPU renderer's ranges of the same volume, for the frame's walk cells; and whether the frame
 * rebuilt them. */
static void check_skip_map(ir_renderer *gpu, const ir_volume *v, const ir_frame_desc *f, bool rebuilt,
                           const char *what) {
  char err[IR_ERR_LEN] = "";
  ir_frame_stats st;
  CHECK_MSG(ir_render_frame(gpu, f, &st, err) == IR_OK, "%s: %s", what, err);
  CHECK_MSG(st.skip_rebuilt == rebuilt, "%s: the skip distances were %srebuilt", what, st.skip_rebuilt ? "" : "not ");
  CHECK_MSG(st.skip_ms > 0, "%s: no rebuild time", what);
  ir_renderer *cpu = NULL;
  ir_renderer_desc desc = {.device = IR_DEVICE_CPU, .volume = v};
  if (ir_renderer_create(&desc, &cpu, err) != IR_OK) {
    CHECK_MSG(0, "%s", err);
    return;
  }
  bool fine = f->pipeline != IR_PIPELINE_MULTI &&
              ir_walk_cells_auto(v->dims, (size_t)f->width * (size_t)f->height) == IR_WALK_CELLS;
  const uint32_t *cells = fine ? cpu->cells : cpu->layout.dims[0];
  size_t n = (size_t)cells[0] * cells[1] * cells[2];
  uint8_t *want = malloc(n), *tmp = malloc(n), *got = malloc(n);
  ir_iso_set iso = {.v = {f->isovalue}, .n = 1};
  ir_skip_map_host(fine ? cpu->cell_ranges : cpu->ranges, cells, &iso, want, tmp);
  CHECK_MSG(ir_gpu_read_skip(gpu, got, n, err) == IR_OK, "%s", err);
  size_t differ = 0, far = 0;
  for (size_t i = 0; i < n; i++) differ += got[i] != want[i], far += want[i] >= 2;
  CHECK_MSG(differ == 0, "%s: %zu of %zu skip distances differ from the host's", what, differ, n);
  CHECK_MSG(far > 0, "%s: no cell far from the surface (the test would not see a leap)", what);
  free(want);
  free(tmp);
  free(got);
  ir_renderer_destroy(cpu);
}

static void test_gpu_skip_map_follows_the_isovalue_and_the_slot(void) {
  size_t dims[3] = {150, 130, 90};
  ir_volume a, b;
  sphere_volume(&a, IR_VOXEL_UINT8, dims, 40.0);
  sphere_volume(&b, IR_VOXEL_UINT8, dims, 100.0);
  ir_renderer *r = make_renderer(&a);
  char err[IR_ERR_LEN] = "";
  if (!r) return;
  CHECK_MSG(ir_renderer_set_slots(r, 2, err) == IR_OK, "%s", err);
  CHECK_MSG(ir_renderer_slot_end(r, 1, &b, err) == IR_OK, "%s", err);
  ir_frame_desc f = frame_of(&a, 100.0f, IR_PIPELINE_SINGLE); /* 80x64: the bricks' cells */
  check_skip_map(r, &a, &f, true, "first frame");
  check_skip_map(r, &a, &f, false, "same isovalue");
  f.isovalue = 110.0f;
  check_skip_map(r, &a, &f, true, "another isovalue");
  f.width = f.height = 512; /* 2 pixels per face voxel: the finer cells */
  check_skip_map(r, &a, &f, true, "finer cells");
  f.pipeline = IR_PIPELINE_PERSISTENT;
  check_skip_map(r, &a, &f, false, "persistent, same cells");
  f.pipeline = IR_PIPELINE_MULTI; /* the bricks' */
  check_skip_map(r, &a, &f, true, "multi");
  CHECK_MSG(ir_renderer_use_slot(r, 1, err) == IR_OK, "%s", err);
  check_skip_map(r, &b, &f, true, "another slot");
  ir_renderer_destroy(r);
  ir_volume_free(&a);
  ir_volume_free(&b);
}

static void remove_dir(void) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
}

int main(int argc, char **argv) {
  g_gpu = argc > 1 && strcmp(argv[1], "--gpu") == 0;
  if (g_gpu) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) check_skip_all("no CUDA device");
    g_device = IR_DEVICE_GPU;
  }
  snprintf(g_dir, sizeof g_dir, "/tmp/inkray-slots-XXXXXX");
  if (!mkdtemp(g_dir)) return 1;
  atexit(remove_dir);
  RUN(test_slots_draw_their_own_volume);
  RUN(test_header_first_then_streamed_voxels);
  RUN(test_a_slot_fills_on_another_thread_while_frames_draw);
  RUN(test_bad_slot_calls_are_refused);
  RUN(test_statistics_match_the_cpu);
  if (g_gpu) RUN(test_gpu_ranges_match_the_cpu);
  if (g_gpu) RUN(test_gpu_skip_map_follows_the_isovalue_and_the_slot);
  return check_summary();
}
