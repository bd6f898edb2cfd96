/* Per-pixel depth (ir_render_read_depth) and the frame's clip box, on the CPU renderer:
 * depth is the distance along the unit ray to the surface (checked against geometry), +INF
 * exactly where nothing is drawn; a clip box equal to the volume changes no bit; two halves
 * clipped at a plane, composited by depth, draw the whole image, and each half draws only
 * surfaces inside its box, or within half a voxel of it: a ray starts at the last sample of its
 * grid before the box, so the segment straddling the plane is tested whole. */
#include "tests/render/render_test_util.h"
#include "tests/check.h"

enum { W = 96, H = 96 };

static bool render(ir_renderer *r, const ir_frame_desc *f, uint8_t *rgba, float *depth) {
  char err[IR_ERR_LEN] = "";
  bool ok = ir_render_frame(r, f, NULL, err) == IR_OK && ir_render_read_image(r, rgba, err) == IR_OK &&
            (!depth || ir_render_read_depth(r, depth, err) == IR_OK);
  if (!ok) fprintf(stderr, "render failed: %s\n", err);
  return ok;
}

static void test_depth_is_the_distance_to_the_surface_and_inf_on_background(void) {
  ir_volume v;
  util_blob_volume(&v, 48, 16, 31, 200); /* the iso-100 surface is the box [16, 32]^3 */
  ir_renderer *r = NULL;
  char err[IR_ERR_LEN];
  ir_renderer_desc rd = {.device = IR_DEVICE_CPU, .volume = &v};
  CHECK(ir_renderer_create(&rd, &r, err) == IR_OK);
  ir_camera c = {.eye = {120.0f, 24.0f, 24.0f}, .target = {24.0f, 24.0f, 24.0f}, .up = {0, 0, 1}, .fov_y_degrees = 30};
  ir_frame_desc f = {.width = W, .height = H, .isovalue = 100.0f, .camera = c};
  uint8_t *rgba = malloc(W * H * 4);
  float *depth = malloc(W * H * sizeof(float));
  if (r && render(r, &f, rgba, depth)) {
    size_t mismatched = 0, far = 0, hits = 0, face = 0;
    for (int py = 0; py < H; py++)
      for (int px = 0; px < W; px++) {
        size_t i = (size_t)py * W + (size_t)px;
        bool hit = rgba[4 * i + 3] == 255;
        mismatched += hit != isfinite(depth[i]);
        if (!hit || !isfinite(depth[i])) continue;
        hits++;
        /* The ray meets the face x = 32 first: t = (120 - 32) / |d.x|. Near the face's edges
         * the trilinear field rounds the box off: only the face's middle is checked. */
        double o[3], d[3];
        util_pixel_ray(&c, W, H, px, py, o, d);
        double expected = (o[0] - 32.0) / -d[0];
        double y = o[1] + d[1] * expected, z = o[2] + d[2] * expected;
        if (fabs(y - 24.0) > 6.0 || fabs(z - 24.0) > 6.0) continue;
        face++;
        far += fabs(depth[i] - expected) > 0.05;
      }
    CHECK(hits > 100 && face > 100);
    CHECK_EQ_INT(mismatched, 0);
    CHECK_MSG(far == 0, "%zu of %zu hits more than 0.05 voxels off the face", far, face);
  }
  free(rgba);
  free(depth);
  ir_renderer_destroy(r);
  ir_volume_free(&v);
}

static void test_a_clip_box_equal_to_the_volume_changes_nothing(void) {
  ir_volume v;
  CHECK(util_load("builtin:fractal:48", &v));
  ir_renderer *r = NULL;
  char err[IR_ERR_LEN];
  ir_renderer_desc rd = {.device = IR_DEVICE_CPU, .volume = &v};
  CHECK(ir_renderer_create(&rd, &r, err) == IR_OK);
  ir_frame_desc f = {.width = W, .height = H, .isovalue = 127.5f, .camera = ir_camera_orbit(&v, 30, 20, 1, IR_AXIS_NONE)};
  uint8_t *a = malloc(W * H * 4), *b = malloc(W * H * 4);
  CHECK(render(r, &f, a, NULL));
  for (int k = 0; k < 3; k++) f.clip_hi[k] = 48.0f;
  CHECK(render(r, &f, b, NULL));
  CHECK(memcmp(a, b, W * H * 4) == 0);
  CHECK(util_coverage(a, W, H) > W * H / 10);
  free(a);
  free(b);
  ir_renderer_destroy(r);
  ir_volume_free(&v);
}

static void test_two_clipped_halves_composited_by_depth_draw_the_whole(void) {
  ir_volume v;
  CHECK(util_load("builtin:fractal:48", &v));
  ir_renderer *r = NULL;
  char err[IR_ERR_LEN];
  ir_renderer_desc rd = {.device = IR_DEVICE_CPU, .volume = &v};
  CHECK(ir_renderer_create(&rd, &r, err) == IR_OK);
  ir_camera cam = ir_camera_orbit(&v, 40, 25, 1, IR_AXIS_NONE);
  ir_frame_desc f = {.width = W, .height = H, .isovalue = 127.5f, .camera = cam};
  size_t n = W * H;
  uint8_t *whole = malloc(n * 4), *half[2] = {malloc(n * 4), malloc(n * 4)};
  float *depth[2] = {malloc(n * sizeof(float)), malloc(n * sizeof(float))};
  const float cut = 20.5f; /* a voxel centre, as the distributed bricks cut */
  CHECK(render(r, &f, whole, NULL));
  for (int h = 0; h < 2; h++) {
    ir_frame_desc g = f;
    for (int k = 0; k < 3; k++) g.clip_hi[k] = 48.0f;
    if (h == 0) g.clip_hi[0] = cut;
    else g.clip_lo[0] = cut;
    CHECK(render(r, &g, half[h], depth[h]));
  }
  size_t outside = 0, cover = 0, both = 0, close = 0;
  for (int py = 0; py < H; py++)
    for (int px = 0; px < W; px++) {
      size_t i = (size_t)py * W + (size_t)px;
      double o[3], d[3];
      util_pixel_ray(&cam, W, H, px, py, o, d);
      for (int h = 0; h < 2; h++)
        if (isfinite(depth[h][i])) {
          double x = o[0] + d[0] * depth[h][i];
          outside += h == 0 ? x > cut + 0.5 + 1e-3 : x < cut - 0.5 - 1e-3;
        }
      int nearer = depth[0][i] <= depth[1][i] ? 0 : 1;
      const uint8_t *c = half[nearer] + 4 * i, *w = whole + 4 * i;
      cover += (c[3] == 255) != (w[3] == 255);
      if (c[3] != 255 || w[3] != 255) continue;
      both++;
      close += abs(c[0] - w[0]) <= 4 && abs(c[1] - w[1]) <= 4 && abs(c[2] - w[2]) <= 4;
    }
  CHECK_EQ_INT(outside, 0);
  CHECK(both > n / 10);
  CHECK_MSG((double)cover <= 0.005 * (double)n, "coverage differs on %zu pixels", cover);
  CHECK_MSG((double)close >= 0.99 * (double)both, "%zu of %zu common hits close", close, both);
  /* Each half alone misses part of the whole. */
  CHECK(util_coverage(half[0], W, H) < util_coverage(whole, W, H));
  CHECK(util_coverage(half[1], W, H) < util_coverage(whole, W, H));
  free(whole);
  for (int h = 0; h < 2; h++) {
    free(half[h]);
    free(depth[h]);
  }
  ir_renderer_destroy(r);
  ir_volume_free(&v);
}

int main(void) {
  RUN(test_depth_is_the_distance_to_the_surface_and_inf_on_background);
  RUN(test_a_clip_box_equal_to_the_volume_changes_nothing);
  RUN(test_two_clipped_halves_composited_by_depth_draw_the_whole);
  return check_summary();
}
