/* The frame's pixel window (ir_frame_desc.window) in every pipeline, on the CPU (no argument) or
 * the GPU (`gpu`; skipped, 77, without a device): a window of the whole image changes no bit of
 * colour or depth; a smaller one leaves every pixel inside it as the whole frame draws it, bit
 * for bit, and every pixel outside background with depth +INF, also right after a whole frame
 * drew surfaces there; an empty one draws only background. Bad rectangles are refused in one
 * line. ir_camera_box_window holds every pixel that meets a clip box. */
#include <cuda_runtime_api.h>

#include "render/render_internal.h" /* IR_BACKGROUND_RGBA */
#include "tests/check.h"
#include "tests/render/render_test_util.h"

enum { W = 100, H = 76 }; /* not multiples of the 8x8 tiles */

typedef struct variant {
  const char *name;
  ir_pipeline pipeline;
  ir_compact_method method;
  bool host_loop;
  uint32_t tail_rays;
} variant;

static const variant gpu_variants[] = {
    {"multi, ink-compact, graph", IR_PIPELINE_MULTI, IR_COMPACT_INK_COMPACT, false, 0},
    {"multi, jumping-jack, graph", IR_PIPELINE_MULTI, IR_COMPACT_JUMPING_JACK, false, 0},
    {"multi, redzone, graph", IR_PIPELINE_MULTI, IR_COMPACT_REDZONE, false, IR_TAIL_OFF},
    {"multi, thrust, host loop", IR_PIPELINE_MULTI, IR_COMPACT_THRUST, true, IR_TAIL_OFF},
    {"multi, ink-compact, host loop", IR_PIPELINE_MULTI, IR_COMPACT_INK_COMPACT, true, 0},
    {"single kernel", IR_PIPELINE_SINGLE, IR_COMPACT_INK_COMPACT, false, 0},
    {"paper, ink-compact", IR_PIPELINE_PAPER, IR_COMPACT_INK_COMPACT, false, 0},
    {"paper, jumping-jack", IR_PIPELINE_PAPER, IR_COMPACT_JUMPING_JACK, false, 0},
    {"paper, redzone", IR_PIPELINE_PAPER, IR_COMPACT_REDZONE, false, 0},
    {"paper, thrust, host loop", IR_PIPELINE_PAPER, IR_COMPACT_THRUST, true, 0},
    {"paper, ink-collate, host loop", IR_PIPELINE_PAPER, IR_COMPACT_INK_COLLATE, true, 0},
    {"plain caster", IR_PIPELINE_PLAIN, IR_COMPACT_INK_COMPACT, false, 0},
    {"persistent, ink-compact", IR_PIPELINE_PERSISTENT, IR_COMPACT_INK_COMPACT, false, 0},
    {"persistent, redzone", IR_PIPELINE_PERSISTENT, IR_COMPACT_REDZONE, false, 0},
};
static const variant cpu_variants[] = {
    {"multi", IR_PIPELINE_MULTI, IR_COMPACT_INK_COMPACT, false, 0},
    {"single", IR_PIPELINE_SINGLE, IR_COMPACT_INK_COMPACT, false, 0},
    {"paper", IR_PIPELINE_PAPER, IR_COMPACT_INK_COMPACT, false, 0},
    {"persistent", IR_PIPELINE_PERSISTENT, IR_COMPACT_INK_COMPACT, false, 0},
};

static ir_volume volume;
static ir_renderer *renderer;
static bool on_gpu;

static bool render(const ir_frame_desc *f, uint8_t *rgba, float *depth) {
  char err[IR_ERR_LEN] = "";
  bool ok = ir_render_frame(renderer, f, NULL, err) == IR_OK && ir_render_read_image(renderer, rgba, err) == IR_OK &&
            ir_render_read_depth(renderer, depth, err) == IR_OK;
  if (!ok) fprintf(stderr, "render failed: %s\n", err);
  return ok;
}

static uint32_t pixel_of(const uint8_t *rgba, size_t i) {
  uint32_t v;
  memcpy(&v, rgba + 4 * i, 4);
  return v;
}

/* Windows: the whole image, one inside it off the tile grid, one at the bottom-right corner,
 * one pixel, one row, and empty ones. */
static const int windows[][4] = {{0, 0, W, H}, {13, 9, 71, 60}, {50, 40, W, H}, {37, 30, 38, 31},
                                 {0, 38, W, 39}, {20, 20, 20, 50}, {0, 0, 0, 0}};

static void check_frames(const ir_frame_desc *base, const char *look) {
  size_t n = (size_t)W * H;
  uint8_t *ref = malloc(n * 4), *img = malloc(n * 4);
  float *ref_d = malloc(n * sizeof(float)), *dep = malloc(n * sizeof(float));
  const variant *vs = on_gpu ? gpu_variants : cpu_variants;
  size_t count = on_gpu ? sizeof gpu_variants / sizeof gpu_variants[0] : sizeof cpu_variants / sizeof cpu_variants[0];
  for (size_t v = 0; v < count; v++) {
    ir_frame_desc f = *base;
    f.pipeline = vs[v].pipeline;
    f.method = vs[v].method;
    f.host_loop = vs[v].host_loop;
    f.tail_rays = vs[v].tail_rays;
    if ((f.ao_samples || f.shadows) && (f.pipeline == IR_PIPELINE_PAPER || f.pipeline == IR_PIPELINE_PLAIN)) continue;
    if (!render(&f, ref, ref_d)) {
      CHECK_MSG(false, "%s, %s: rendering failed", vs[v].name, look);
      continue;
    }
    size_t hits = 0;
    for (size_t i = 0; i < n; i++) hits += isfinite(ref_d[i]);
    CHECK_MSG(hits > n / 10, "%s, %s: only %zu hits in the whole frame", vs[v].name, look, hits);
    for (size_t k = 0; k < sizeof windows / sizeof windows[0]; k++) {
      const int *w = windows[k];
      ir_frame_desc fw = f;
      fw.window_on = true;
      memcpy(fw.window, w, sizeof fw.window);
      /* Every window frame follows a whole one, so stale surfaces outside would show. */
      if (k > 0 && !render(&f, img, dep)) break;
      if (!render(&fw, img, dep)) {
        CHECK_MSG(false, "%s, %s: window %d,%d,%d,%d failed", vs[v].name, look, w[0], w[1], w[2], w[3]);
        continue;
      }
      size_t inside_diff = 0, outside_bad = 0, outside_hits = 0;
      for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
          size_t i = (size_t)y * W + (size_t)x;
          bool in = x >= w[0] && x < w[2] && y >= w[1] && y < w[3];
          if (in) {
            inside_diff += pixel_of(img, i) != pixel_of(ref, i) || memcmp(&dep[i], &ref_d[i], sizeof(float)) != 0;
          } else {
            outside_bad += pixel_of(img, i) != IR_BACKGROUND_RGBA || !(isinf(dep[i]) && dep[i] > 0);
            outside_hits += isfinite(ref_d[i]);
          }
        }
      CHECK_MSG(inside_diff == 0, "%s, %s, window %d,%d,%d,%d: %zu pixels inside differ from the whole frame",
                vs[v].name, look, w[0], w[1], w[2], w[3], inside_diff);
      CHECK_MSG(outside_bad == 0, "%s, %s, window %d,%d,%d,%d: %zu pixels outside are not background at +INF",
                vs[v].name, look, w[0], w[1], w[2], w[3], outside_bad);
      /* Not vacuous: the whole frame has surfaces where these windows leave background. */
      if (k == 1 || k == 6) CHECK_MSG(outside_hits > 0, "%s, %s: no surface outside the window", vs[v].name, look);
    }
    /* A whole frame after windowed ones is the first one again. */
    if (render(&f, img, dep))
      CHECK_MSG(memcmp(img, ref, n * 4) == 0 && memcmp(dep, ref_d, n * sizeof(float)) == 0,
                "%s, %s: a whole frame after windows differs", vs[v].name, look);
  }
  free(ref);
  free(img);
  free(ref_d);
  free(dep);
}

static ir_frame_desc base_frame(void) {
  return (ir_frame_desc){.width = W, .height = H, .isovalue = 127.5f,
                         .camera = ir_camera_orbit(&volume, 35, 25, 1, IR_AXIS_NONE)};
}

static void test_opaque_frames_in_windows(void) {
  ir_frame_desc f = base_frame();
  check_frames(&f, "opaque");
}

static void test_translucent_frames_in_windows(void) {
  ir_frame_desc f = base_frame();
  f.surface_count = 2;
  f.surfaces[0] = (ir_surface){.isovalue = 90.0f, .color = {0.9f, 0.5f, 0.2f}, .opacity = 0.4f};
  f.surfaces[1] = (ir_surface){.isovalue = 160.0f, .color = {0.3f, 0.6f, 0.9f}, .opacity = 1.0f};
  check_frames(&f, "translucent");
}

static void test_clipped_and_lit_frames_in_windows(void) {
  ir_frame_desc f = base_frame();
  const float lo[3] = {6.5f, 0.0f, 4.0f}, hi[3] = {50.5f, 64.0f, 44.0f};
  memcpy(f.clip_lo, lo, sizeof lo);
  memcpy(f.clip_hi, hi, sizeof hi);
  f.ao_samples = 4;
  f.shadows = true;
  check_frames(&f, "clipped and lit");
}

static void test_bad_windows_are_refused_in_one_line(void) {
  static const int bad[][4] = {{-1, 0, 10, 10}, {0, -2, 10, 10}, {0, 0, W + 1, 10}, {0, 0, 10, H + 1},
                               {20, 0, 10, 10}, {0, 30, 10, 29}};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    ir_frame_desc f = base_frame();
    f.window_on = true;
    memcpy(f.window, bad[k], sizeof f.window);
    char err[IR_ERR_LEN] = "";
    CHECK(ir_render_frame(renderer, &f, NULL, err) == IR_ERR_INPUT);
    CHECK_MSG(strstr(err, "window") && !strchr(err, '\n'), "message: %s", err);
  }
}

/* The rectangle of a box's projection holds every pixel the box's surfaces are drawn in (the clip
 * box bounds where rays go), for views from outside; an eye inside gives the whole image, a box
 * off screen none. */
static void test_box_window_holds_every_pixel_of_the_box(void) {
  size_t n = (size_t)W * H;
  uint8_t *img = malloc(n * 4);
  float *dep = malloc(n * sizeof(float));
  const float boxes[][6] = {{0, 0, 0, 64, 64, 64}, {6.5f, 0, 4, 30.5f, 64, 44}, {32, 32, 0, 64, 64, 32},
                            {10, 40, 20, 20, 60, 64}};
  for (size_t b = 0; b < sizeof boxes / sizeof boxes[0]; b++)
    for (int view = 0; view < 6; view++) {
      ir_frame_desc f = base_frame();
      f.camera = ir_camera_orbit(&volume, -170.0f + 67.0f * view, -40.0f + 17.0f * view, view == 5 ? 0.7f : 1.0f,
                                 IR_AXIS_NONE);
      memcpy(f.clip_lo, boxes[b], sizeof f.clip_lo);
      memcpy(f.clip_hi, boxes[b] + 3, sizeof f.clip_hi);
      double lo[3], hi[3];
      for (int k = 0; k < 3; k++) lo[k] = boxes[b][k] * volume.spacing[k], hi[k] = boxes[b][3 + k] * volume.spacing[k];
      int w[4];
      ir_camera_box_window(&f.camera, W, H, lo, hi, w);
      CHECK(w[0] >= 0 && w[1] >= 0 && w[0] <= w[2] && w[1] <= w[3] && w[2] <= W && w[3] <= H);
      if (!render(&f, img, dep)) continue;
      size_t outside = 0, hits = 0;
      for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
          bool hit = isfinite(dep[(size_t)y * W + (size_t)x]);
          hits += hit;
          outside += hit && !(x >= w[0] && x < w[2] && y >= w[1] && y < w[3]);
        }
      CHECK_MSG(hits > 0, "box %zu, view %d: nothing drawn", b, view);
      CHECK_MSG(outside == 0, "box %zu, view %d: %zu hit pixels outside the window %d,%d,%d,%d", b, view, outside,
                w[0], w[1], w[2], w[3]);
    }
  /* The eye inside the box: every pixel; a box behind the camera's field: none. */
  ir_camera cam = ir_camera_orbit(&volume, 30, 20, 1, IR_AXIS_NONE);
  double lo[3], hi[3];
  for (int k = 0; k < 3; k++) lo[k] = cam.eye[k] - 1.0, hi[k] = cam.eye[k] + 1.0;
  int w[4];
  ir_camera_box_window(&cam, W, H, lo, hi, w);
  CHECK(w[0] == 0 && w[1] == 0 && w[2] == W && w[3] == H);
  /* Far to the side of the view, in front of the eye's plane: off screen. */
  double fwd[3], side[3] = {0, 0, 0};
  for (int k = 0; k < 3; k++) fwd[k] = (double)cam.target[k] - cam.eye[k];
  side[0] = -fwd[1], side[1] = fwd[0]; /* horizontal, perpendicular to the view */
  for (int k = 0; k < 3; k++) {
    double c = cam.eye[k] + 0.5 * fwd[k] + 20.0 * side[k];
    lo[k] = c - 1.0, hi[k] = c + 1.0;
  }
  ir_camera_box_window(&cam, W, H, lo, hi, w);
  CHECK_MSG(w[0] == w[2] || w[1] == w[3], "off-screen box: window %d,%d,%d,%d", w[0], w[1], w[2], w[3]);
  free(img);
  free(dep);
}

int main(int argc, char **argv) {
  on_gpu = argc > 1 && strcmp(argv[1], "gpu") == 0;
  int count = 0;
  if (on_gpu && (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)) check_skip_all("no CUDA device");
  if (!util_load("builtin:fractal:64", &volume)) return 1;
  char err[IR_ERR_LEN];
  ir_renderer_desc d = {.device = on_gpu ? IR_DEVICE_GPU : IR_DEVICE_CPU, .volume = &volume};
  if (ir_renderer_create(&d, &renderer, err) != IR_OK) {
    fprintf(stderr, "cannot create the renderer: %s\n", err);
    return 1;
  }
  RUN(test_opaque_frames_in_windows);
  RUN(test_translucent_frames_in_windows);
  RUN(test_clipped_and_lit_frames_in_windows);
  RUN(test_bad_windows_are_refused_in_one_line);
  RUN(test_box_window_holds_every_pixel_of_the_box);
  ir_renderer_destroy(renderer);
  ir_volume_free(&volume);
  return check_summary();
}
