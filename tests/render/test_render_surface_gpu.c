/* Frames written through a surface (ir_frame_desc.surface, what the window's egl-image path
 * renders into): every pipeline writes the same bits into a caller's CUDA array as into the
 * renderer's own buffer (opaque, translucent, accumulated occlusion; a frame whose size is not a
 * multiple of the 8x8 tiles, in an array larger than the frame, whose texels outside the frame
 * stay untouched); ir_render_read_image reads the array back; bad surfaces are refused before
 * anything runs; ir_render_latest_time gives each finished frame's time once. Skipped (77)
 * without a device. */
#include <cuda_runtime_api.h>

#include "tests/check.h"
#include "tests/render/render_test_util.h"

/* Not multiples of 8: the tiles' edges; the array is larger, with a row pitch of its own. */
enum { W = 131, H = 97, AW = 160, AH = 120 };

typedef struct variant {
  const char *name;
  ir_pipeline pipeline;
  ir_compact_method method;
  bool host_loop;
  uint32_t tail_rays;
} variant;

static const variant variants[] = {
    {"single kernel", IR_PIPELINE_SINGLE, IR_COMPACT_INK_COMPACT, false, 0},
    {"persistent, ink-compact", IR_PIPELINE_PERSISTENT, IR_COMPACT_INK_COMPACT, false, 0},
    {"persistent, redzone", IR_PIPELINE_PERSISTENT, IR_COMPACT_REDZONE, false, 0},
    {"multi, ink-compact, graph", IR_PIPELINE_MULTI, IR_COMPACT_INK_COMPACT, false, IR_TAIL_OFF},
    {"multi, ink-compact, tail kernel", IR_PIPELINE_MULTI, IR_COMPACT_INK_COMPACT, false, 0},
    {"multi, thrust, host loop", IR_PIPELINE_MULTI, IR_COMPACT_THRUST, true, IR_TAIL_OFF},
    {"paper, ink-compact", IR_PIPELINE_PAPER, IR_COMPACT_INK_COMPACT, false, 0},
    {"paper, ink-compact, tail kernel", IR_PIPELINE_PAPER, IR_COMPACT_INK_COMPACT, false, 3000},
    {"plain caster", IR_PIPELINE_PLAIN, IR_COMPACT_INK_COMPACT, false, 0},
};
#define VARIANTS (sizeof variants / sizeof variants[0])

static ir_volume volume;
static ir_renderer *gpu;
static cudaArray_t array;
static cudaSurfaceObject_t surface;

#define SENTINEL 0xa5u

static bool cuda_ok(cudaError_t e, const char *what) {
  if (e != cudaSuccess) fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
  return e == cudaSuccess;
}

/* Every texel of the array set to SENTINEL bytes. */
static bool fill_array(void) {
  size_t bytes = (size_t)AW * AH * 4;
  uint8_t *h = malloc(bytes);
  if (!h) return false;
  memset(h, SENTINEL, bytes);
  bool ok = cuda_ok(cudaMemcpy2DToArray(array, 0, 0, h, (size_t)AW * 4, (size_t)AW * 4, AH, cudaMemcpyHostToDevice),
                    "filling the array");
  free(h);
  return ok;
}

static bool read_array(uint8_t *whole) {
  return cuda_ok(cudaMemcpy2DFromArray(whole, (size_t)AW * 4, array, 0, 0, (size_t)AW * 4, AH, cudaMemcpyDeviceToHost),
                 "reading the array");
}

/* The frame sequence `frames` (the same desc, sample_frame 0, 1, ...) into the renderer's buffer
 * and into the surface; the last frames' pixels compared bit for bit. */
static void compare(const char *look, const ir_frame_desc *base, int frames) {
  size_t n = (size_t)W * H;
  uint8_t *linear = malloc(n * 4), *read = malloc(n * 4), *whole = malloc((size_t)AW * AH * 4);
  char err[IR_ERR_LEN] = "";
  for (size_t v = 0; v < VARIANTS; v++) {
    ir_frame_desc f = *base;
    f.pipeline = variants[v].pipeline;
    f.method = variants[v].method;
    f.host_loop = variants[v].host_loop;
    f.tail_rays = variants[v].tail_rays;
    if (f.ao_samples && (f.pipeline == IR_PIPELINE_PAPER || f.pipeline == IR_PIPELINE_PLAIN))
      continue; /* they draw no occlusion (render.h) */
    bool ok = true;
    for (int k = 0; ok && k < frames; k++) {
      f.sample_frame = (uint32_t)k;
      f.surface = 0;
      ok = ir_render_frame(gpu, &f, NULL, err) == IR_OK;
    }
    ok = ok && ir_render_read_image(gpu, linear, err) == IR_OK;
    CHECK_MSG(ok && ir_render_device_image(gpu) != NULL, "%s, %s: the linear frames: %s", look, variants[v].name, err);
    ok = ok && fill_array();
    for (int k = 0; ok && k < frames; k++) {
      f.sample_frame = (uint32_t)k;
      f.surface = surface;
      ok = ir_render_frame(gpu, &f, NULL, err) == IR_OK;
    }
    ok = ok && ir_render_read_image(gpu, read, err) == IR_OK && read_array(whole);
    CHECK_MSG(ok, "%s, %s: the surface frames: %s", look, variants[v].name, err);
    if (!ok) continue;
    CHECK_MSG(ir_render_device_image(gpu) == NULL, "%s, %s: a device image after a surface frame", look,
              variants[v].name);
    size_t differ = 0, touched = 0, drawn = 0;
    for (int y = 0; y < AH; y++)
      for (int x = 0; x < AW; x++) {
        const uint8_t *t = whole + ((size_t)y * AW + (size_t)x) * 4;
        if (x < W && y < H) {
          const uint8_t *l = linear + ((size_t)y * W + (size_t)x) * 4;
          differ += memcmp(t, l, 4) != 0;
          drawn += l[3] == 255;
        } else {
          touched += t[0] != SENTINEL || t[1] != SENTINEL || t[2] != SENTINEL || t[3] != SENTINEL;
        }
      }
    CHECK_MSG(differ == 0, "%s, %s: %zu of %zu pixels differ between the surface and the linear frame", look,
              variants[v].name, differ, n);
    CHECK_MSG(touched == 0, "%s, %s: %zu texels outside the frame were written", look, variants[v].name, touched);
    CHECK_MSG(drawn > n / 20, "%s, %s: only %zu pixels show a surface", look, variants[v].name, drawn);
    CHECK_MSG(memcmp(read, linear, n * 4) == 0, "%s, %s: ir_render_read_image of the surface frame differs", look,
              variants[v].name);
  }
  free(linear);
  free(read);
  free(whole);
}

static ir_frame_desc base_frame(void) {
  return (ir_frame_desc){.width = W, .height = H, .isovalue = 127.5f,
                         .camera = ir_camera_orbit(&volume, 35, 25, 1, IR_AXIS_NONE)};
}

static void test_surface_frames_equal_linear_frames_in_every_pipeline(void) {
  ir_frame_desc f = base_frame();
  compare("opaque", &f, 1);
}

static void test_surface_frames_equal_linear_frames_with_translucent_surfaces(void) {
  ir_frame_desc f = base_frame();
  f.surface_count = 2;
  f.surfaces[0] = (ir_surface){90.0f, {0.2f, 0.5f, 1.0f}, 0.4f};
  f.surfaces[1] = (ir_surface){150.0f, {1.0f, 0.5f, 0.0f}, 1.0f};
  compare("translucent", &f, 1);
}

/* The accumulation reads the frame's pixels back from where they were written. */
static void test_surface_frames_equal_linear_frames_when_accumulating(void) {
  ir_frame_desc f = base_frame();
  f.ao_samples = 4;
  f.accumulate = true;
  compare("accumulated occlusion", &f, 3);
}

static void test_bad_surfaces_are_refused(void) {
  char err[IR_ERR_LEN] = "";
  ir_frame_desc f = base_frame();
  f.width = AW + 1; /* wider than the array */
  f.surface = surface;
  CHECK(ir_render_frame(gpu, &f, NULL, err) == IR_ERR_INPUT);
  CHECK_MSG(strstr(err, "surface") != NULL, "message: %s", err);
  cudaArray_t small8 = NULL;
  cudaSurfaceObject_t s8 = 0;
  struct cudaChannelFormatDesc ch = cudaCreateChannelDesc(8, 0, 0, 0, cudaChannelFormatKindUnsigned);
  bool made = cuda_ok(cudaMallocArray(&small8, &ch, AW, AH, cudaArraySurfaceLoadStore), "an 8-bit array");
  struct cudaResourceDesc res;
  memset(&res, 0, sizeof res);
  res.resType = cudaResourceTypeArray;
  res.res.array.array = small8;
  made = made && cuda_ok(cudaCreateSurfaceObject(&s8, &res), "its surface");
  if (made) {
    f = base_frame();
    f.surface = s8;
    CHECK(ir_render_frame(gpu, &f, NULL, err) == IR_ERR_INPUT);
    CHECK_MSG(strstr(err, "8-bit") != NULL, "message: %s", err);
  }
  if (s8) cudaDestroySurfaceObject(s8);
  if (small8) cudaFreeArray(small8);
  /* The CPU renderer writes its own image. */
  ir_renderer *cpu = NULL;
  ir_renderer_desc c = {.device = IR_DEVICE_CPU, .volume = &volume};
  if (ir_renderer_create(&c, &cpu, err) == IR_OK) {
    f = base_frame();
    f.surface = surface;
    CHECK(ir_render_frame(cpu, &f, NULL, err) == IR_ERR_INPUT);
    cudaEvent_t event = NULL;
    if (cuda_ok(cudaEventCreate(&event), "an event")) {
      f = base_frame();
      f.wait_event = event;
      CHECK(ir_render_frame(cpu, &f, NULL, err) == IR_ERR_INPUT);
      cudaEventDestroy(event);
    }
    double ms = 0;
    CHECK(!ir_render_latest_time(cpu, &ms));
    ir_renderer_destroy(cpu);
  }
}

/* A frame waits on the device for wait_event (a display still reading its surface) and draws the
 * same pixels. */
static void test_frames_wait_for_the_event_given(void) {
  char err[IR_ERR_LEN] = "";
  size_t n = (size_t)W * H;
  uint8_t *a = malloc(n * 4), *b = malloc(n * 4);
  ir_frame_desc f = base_frame();
  CHECK(ir_render_frame(gpu, &f, NULL, err) == IR_OK && ir_render_read_image(gpu, a, err) == IR_OK);
  cudaStream_t other = NULL;
  cudaEvent_t event = NULL;
  bool ok = cuda_ok(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), "a stream") &&
            cuda_ok(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "an event") &&
            cuda_ok(cudaEventRecord(event, other), "recording it");
  f.wait_event = event;
  f.surface = surface;
  CHECK_MSG(ok && ir_render_frame(gpu, &f, NULL, err) == IR_OK && ir_render_read_image(gpu, b, err) == IR_OK,
            "a frame waiting for an event: %s", err);
  CHECK(memcmp(a, b, n * 4) == 0);
  if (event) cudaEventDestroy(event);
  if (other) cudaStreamDestroy(other);
  free(a);
  free(b);
}

static void test_latest_time_gives_each_finished_frame_once(void) {
  char err[IR_ERR_LEN] = "";
  ir_frame_desc f = base_frame();
  double ms = -1;
  for (int k = 0; k < 3; k++) CHECK(ir_render_frame(gpu, &f, NULL, err) == IR_OK);
  CHECK(cuda_ok(cudaDeviceSynchronize(), "draining"));
  CHECK(ir_render_latest_time(gpu, &ms));
  CHECK_MSG(ms > 0 && ms < 10000, "frame time %g ms", ms);
  CHECK(!ir_render_latest_time(gpu, &ms)); /* the older frames are not given after a newer one */
  ir_frame_stats stats;
  CHECK(ir_render_frame(gpu, &f, &stats, err) == IR_OK);
  CHECK(ir_render_latest_time(gpu, &ms));
  CHECK_MSG(fabs(ms - stats.frame_ms) < 1e-3, "latest %g ms, the frame's stats %g ms", ms, stats.frame_ms);
  /* A frame still queued is not waited for: the call returns at once either way, and a launch
   * after it still checks clean (the not-ready query leaves no error behind). */
  CHECK(ir_render_frame(gpu, &f, NULL, err) == IR_OK);
  (void)ir_render_latest_time(gpu, &ms);
  CHECK(ir_render_frame(gpu, &f, NULL, err) == IR_OK);
  CHECK(cuda_ok(cudaDeviceSynchronize(), "draining"));
}

int main(void) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) check_skip_all("no CUDA device");
  if (!util_load("builtin:fractal:64", &volume)) return 1;
  char err[IR_ERR_LEN];
  ir_renderer_desc g = {.device = IR_DEVICE_GPU, .volume = &volume};
  if (ir_renderer_create(&g, &gpu, err) != IR_OK) {
    fprintf(stderr, "cannot create the renderer: %s\n", err);
    return 1;
  }
  struct cudaChannelFormatDesc ch = cudaCreateChannelDesc(8, 8, 8, 8, cudaChannelFormatKindUnsigned);
  struct cudaResourceDesc res;
  memset(&res, 0, sizeof res);
  res.resType = cudaResourceTypeArray;
  if (!cuda_ok(cudaMallocArray(&array, &ch, AW, AH, cudaArraySurfaceLoadStore), "the RGBA8 array")) return 1;
  res.res.array.array = array;
  if (!cuda_ok(cudaCreateSurfaceObject(&surface, &res), "its surface")) return 1;
  RUN(test_surface_frames_equal_linear_frames_in_every_pipeline);
  RUN(test_surface_frames_equal_linear_frames_with_translucent_surfaces);
  RUN(test_surface_frames_equal_linear_frames_when_accumulating);
  RUN(test_bad_surfaces_are_refused);
  RUN(test_frames_wait_for_the_event_given);
  RUN(test_latest_time_gives_each_finished_frame_once);
  cudaDestroySurfaceObject(surface);
  cudaFreeArray(array);
  ir_renderer_destroy(gpu);
  ir_volume_free(&volume);
  return check_summary();
}
