/* CPU reference renderer and BVH: geometry, real datasets, edge cases, bad input. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "render/render_internal.h"
#include "tests/check.h"
#include "tests/render/render_test_util.h"

static uint8_t *render_cpu(const ir_volume *v, const ir_frame_desc *f, ir_frame_stats *stats, int threads) {
  char err[IR_ERR_LEN] = "";
  ir_renderer *r = NULL;
  ir_renderer_desc desc = {.device = IR_DEVICE_CPU, .volume = v, .cpu_threads = threads};
  if (ir_renderer_create(&desc, &r, err) != IR_OK) {
    fprintf(stderr, "create: %s\n", err);
    return NULL;
  }
  uint8_t *img = malloc((size_t)f->width * f->height * 4);
  ir_status st = ir_render_frame(r, f, stats, err);
  if (st == IR_OK) st = ir_render_read_image(r, img, err);
  if (st != IR_OK) {
    fprintf(stderr, "render: %s\n", err);
    free(img);
    img = NULL;
  }
  ir_renderer_destroy(r);
  return img;
}

static ir_frame_desc frame_of(const ir_volume *v, int w, int h, float iso, float az, float el) {
  ir_frame_desc f = {.width = w, .height = h, .isovalue = iso, .camera = ir_camera_orbit(v, az, el, 1.0f, IR_AXIS_NONE)};
  return f;
}

/* ---- BVH ---------------------------------------------------------------------------------- */
static void collect_leaves(const ir_bvh_node *nodes, uint32_t id, int depth, char *seen, int *bad) {
  ir_bvh_node n = nodes[id];
  if (!ir_bvh_valid(&n) || depth > IR_BVH_MAX_LEVELS) {
    (*bad)++;
    return;
  }
  if (ir_bvh_is_leaf(&n)) {
    seen[n.a]++;
    return;
  }
  for (int c = 0; c < 2; c++) {
    ir_bvh_node ch = nodes[c ? n.b : n.a];
    for (int k = 0; k < 3; k++)
      if (!(ch.lo[k] >= n.lo[k] && ch.hi[k] <= n.hi[k])) (*bad)++;
    collect_leaves(nodes, c ? n.b : n.a, depth + 1, seen, bad);
  }
}

static void test_bvh_brick_ranges_include_the_shared_border(void) {
  ir_volume v;
  if (!util_load("builtin:marschner-lobb:41", &v)) {
    CHECK(0);
    return;
  }
  ir_renderer_desc desc = {.device = IR_DEVICE_CPU, .volume = &v};
  ir_renderer *r = NULL;
  char err[IR_ERR_LEN];
  CHECK(ir_renderer_create(&desc, &r, err) == IR_OK);
  const ir_bvh_layout *L = &r->layout;
  /* 40 cells per axis -> 3 bricks per axis, the last one 8 cells wide. */
  CHECK_EQ_INT(L->dims[0][0], 3);
  CHECK_EQ_INT(L->dims[0][2], 3);
  const float *vox = v.voxels;
  for (uint32_t b = 0; b < 27; b++) {
    uint32_t bx = b % 3, by = b / 3 % 3, bz = b / 9;
    float mn = INFINITY, mx = -INFINITY;
    for (size_t z = bz * 16; z <= bz * 16 + 16 && z < 41; z++)
      for (size_t y = by * 16; y <= by * 16 + 16 && y < 41; y++)
        for (size_t x = bx * 16; x <= bx * 16 + 16 && x < 41; x++) {
          float s = vox[(z * 41 + y) * 41 + x];
          mn = fminf(mn, s);
          mx = fmaxf(mx, s);
        }
    CHECK(r->ranges[b].min == mn && r->ranges[b].max == mx);
  }
  /* The walk's cells of 8: 5 per axis, the last one 8 cells wide too, each with its border. */
  CHECK_EQ_INT(r->cells[0], 5);
  CHECK_EQ_INT(r->cells[2], 5);
  for (uint32_t c = 0; c < 125; c++) {
    uint32_t cx = c % 5, cy = c / 5 % 5, cz = c / 25;
    float mn = INFINITY, mx = -INFINITY;
    for (size_t z = cz * 8; z <= cz * 8 + 8 && z < 41; z++)
      for (size_t y = cy * 8; y <= cy * 8 + 8 && y < 41; y++)
        for (size_t x = cx * 8; x <= cx * 8 + 8 && x < 41; x++) {
          float s = vox[(z * 41 + y) * 41 + x];
          mn = fminf(mn, s);
          mx = fmaxf(mx, s);
        }
    CHECK(r->cell_ranges[c].min == mn && r->cell_ranges[c].max == mx);
  }
  ir_renderer_destroy(r);
  ir_volume_free(&v);
}

static void test_bvh_update_reaches_exactly_the_valid_leaves(void) {
  ir_volume v;
  if (!util_load("builtin:fractal:100", &v)) {
    CHECK(0);
    return;
  }
  ir_renderer_desc desc = {.device = IR_DEVICE_CPU, .volume = &v};
  ir_renderer *r = NULL;
  char err[IR_ERR_LEN];
  CHECK(ir_renderer_create(&desc, &r, err) == IR_OK);
  const ir_bvh_layout *L = &r->layout;
  uint32_t bricks = L->dims[0][0] * L->dims[0][1] * L->dims[0][2];
  ir_bvh_node *nodes = malloc(L->node_count * sizeof *nodes);
  char *seen = malloc(bricks);
  float isos[] = {-1.0f, 40.0f, 127.5f, 200.0f, 254.0f, 300.0f};
  for (int i = 0; i < 6; i++) {
    ir_iso_set set = {.v = {isos[i]}, .n = 1};
    ir_bvh_update_host(L, r->ranges, &set, nodes);
    memset(seen, 0, bricks);
    int bad = 0, expected = 0;
    ir_bvh_node root = nodes[ir_bvh_root(L)];
    for (uint32_t b = 0; b < bricks; b++) expected += r->ranges[b].min <= isos[i] && isos[i] <= r->ranges[b].max;
    if (ir_bvh_valid(&root)) collect_leaves(nodes, ir_bvh_root(L), 0, seen, &bad);
    CHECK_EQ_INT(bad, 0);
    int found = 0;
    for (uint32_t b = 0; b < bricks; b++) {
      int valid = r->ranges[b].min <= isos[i] && isos[i] <= r->ranges[b].max;
      CHECK(seen[b] == valid);
      found += seen[b];
    }
    CHECK_EQ_INT(found, expected);
    CHECK(ir_bvh_valid(&root) == (expected > 0));
  }
  free(seen);
  free(nodes);
  ir_renderer_destroy(r);
  ir_volume_free(&v);
}

/* ---- Images ----------------------------------------------------------------------------------- */
static void test_sphere_silhouette_matches_geometry(void) {
  ir_volume v;
  if (!util_load("builtin:sphere:64", &v)) {
    CHECK(0);
    return;
  }
  float views[][2] = {{0, 0}, {37, 20}, {120, -45}, {250, 80}};
  for (int i = 0; i < 4; i++) {
    ir_frame_desc f = frame_of(&v, 160, 120, 0.0f, views[i][0], views[i][1]);
    ir_frame_stats s;
    uint8_t *img = render_cpu(&v, &f, &s, 0);
    CHECK(img != NULL);
    if (!img) continue;
    /* One voxel of slack: the surface of the trilinear field of a sampled distance function
     * lies within a fraction of a voxel of the true sphere. */
    CHECK_EQ_INT(util_sphere_violations(&v, &f.camera, f.width, f.height, img, 1.0), 0);
    CHECK(util_coverage(img, f.width, f.height) > 1000);
    CHECK_EQ_INT(s.rays_hit, util_coverage(img, f.width, f.height));
    CHECK_EQ_INT(s.traverse_rays[0], s.rays_generated);
    CHECK(s.rays_hit <= s.rays_generated && s.iterations >= 1);
    free(img);
  }
  ir_volume_free(&v);
}

static void test_isovalue_outside_the_data_range_gives_an_empty_image(void) {
  ir_volume v;
  if (!util_load("builtin:sphere:48", &v)) {
    CHECK(0);
    return;
  }
  float isos[] = {(float)v.value_min - 1.0f, (float)v.value_max + 1.0f};
  for (int i = 0; i < 2; i++) {
    ir_frame_desc f = frame_of(&v, 64, 48, isos[i], 30, 30);
    ir_frame_stats s;
    uint8_t *img = render_cpu(&v, &f, &s, 0);
    CHECK(img != NULL);
    if (!img) continue;
    CHECK_EQ_INT(util_coverage(img, 64, 48), 0);
    CHECK_EQ_INT(s.rays_hit, 0);
    uint32_t px;
    memcpy(&px, img, 4);
    CHECK_EQ_INT(px, IR_BACKGROUND_RGBA);
    free(img);
  }
  ir_volume_free(&v);
}

static void test_isovalue_crossing_a_single_brick(void) {
  ir_volume v;
  util_blob_volume(&v, 64, 22, 26, 200); /* inside brick (1,1,1): voxels 16..32 */
  ir_renderer_desc desc = {.device = IR_DEVICE_CPU, .volume = &v};
  ir_renderer *r = NULL;
  char err[IR_ERR_LEN];
  CHECK(ir_renderer_create(&desc, &r, err) == IR_OK);
  if (!r) return;
  ir_frame_desc f = frame_of(&v, 200, 200, 100.0f, 30, 25);
  CHECK(ir_render_frame(r, &f, NULL, err) == IR_OK);
  /* After condensation the root is the one valid leaf. */
  ir_bvh_node root = r->nodes[ir_bvh_root(&r->layout)];
  CHECK(ir_bvh_is_leaf(&root));
  CHECK_EQ_INT(root.a, ir_bvh_index(&r->layout, 0, 1, 1, 1));
  uint8_t *img = malloc(200 * 200 * 4);
  CHECK(ir_render_read_image(r, img, err) == IR_OK);
  /* Hits only where rays pass the blob (a cube of 22..26 voxel centres, +-1 voxel). */
  double c[3] = {24.5, 24.5, 24.5};
  size_t hits = 0, outside = 0;
  for (int py = 0; py < 200; py++)
    for (int px = 0; px < 200; px++) {
      if (img[4 * (py * 200 + px) + 3] != 255) continue;
      hits++;
      double o[3], d[3];
      util_pixel_ray(&f.camera, 200, 200, px, py, o, d);
      if (util_ray_point_distance(o, d, c) > 3.5 * sqrt(3.0)) outside++;
    }
  CHECK(hits > 20);
  CHECK_EQ_INT(outside, 0);
  free(img);
  ir_renderer_destroy(r);
  ir_volume_free(&v);
}

static void test_camera_inside_the_volume(void) {
  ir_volume v;
  if (!util_load("builtin:sphere:64", &v)) {
    CHECK(0);
    return;
  }
  /* At the centre, inside the sphere: every ray meets the surface from inside. */
  ir_frame_desc f = frame_of(&v, 64, 64, 0.0f, 0, 0);
  for (int k = 0; k < 3; k++) f.camera.eye[k] = 31.0f;
  f.camera.target[0] = 64.0f;
  uint8_t *img = render_cpu(&v, &f, NULL, 0);
  CHECK(img && util_coverage(img, 64, 64) == 64 * 64);
  free(img);
  /* In a corner of the volume, outside the sphere, looking at it: the silhouette holds. */
  ir_frame_desc g = frame_of(&v, 96, 96, 0.0f, 0, 0);
  for (int k = 0; k < 3; k++) {
    g.camera.eye[k] = 3.0f;
    g.camera.target[k] = 32.0f;
  }
  g.camera.fov_y_degrees = 90.0f;
  img = render_cpu(&v, &g, NULL, 0);
  CHECK(img != NULL);
  if (img) {
    CHECK_EQ_INT(util_sphere_violations(&v, &g.camera, 96, 96, img, 1.0), 0);
    CHECK(util_coverage(img, 96, 96) > 500);
  }
  free(img);
  ir_volume_free(&v);
}

static void test_tiny_odd_and_large_image_sizes(void) {
  ir_volume v;
  if (!util_load("builtin:sphere:48", &v)) {
    CHECK(0);
    return;
  }
  int sizes[][2] = {{1, 1}, {7, 5}, {5, 7}, {1920, 1080}};
  for (int i = 0; i < 4; i++) {
    int w = sizes[i][0], h = sizes[i][1];
    ir_frame_desc f = frame_of(&v, w, h, 0.0f, 45, 30);
    uint8_t *img = render_cpu(&v, &f, NULL, 0);
    CHECK(img != NULL);
    if (!img) continue;
    CHECK_EQ_INT(util_sphere_violations(&v, &f.camera, w, h, img, 1.0), 0);
    if (w * h == 1) CHECK_EQ_INT(util_coverage(img, 1, 1), 1);
    free(img);
  }
  ir_volume_free(&v);
}

static void test_thread_count_does_not_change_the_image(void) {
  ir_volume v;
  if (!util_load("builtin:fractal:64", &v)) {
    CHECK(0);
    return;
  }
  ir_frame_desc f = frame_of(&v, 90, 70, 127.5f, 10, 35);
  ir_frame_stats s1, s3;
  uint8_t *a = render_cpu(&v, &f, &s1, 1), *b = render_cpu(&v, &f, &s3, 3);
  CHECK(a && b && memcmp(a, b, 90 * 70 * 4) == 0);
  CHECK(s1.rays_hit == s3.rays_hit && s1.iterations == s3.iterations);
  CHECK(memcmp(s1.traverse_rays, s3.traverse_rays, sizeof s1.traverse_rays) == 0);
  CHECK(a && util_coverage(a, 90, 70) > 90 * 70 / 4);
  free(a);
  free(b);
  ir_volume_free(&v);
}

/* The brick walk (multi, single) and the BVH traversal (paper) march the same sample grid, so
 * they draw the same image bit for bit, from any view: axis-aligned rays (zero direction
 * components), rays along brick edges and diagonals, the camera inside the volume. */
static void test_brick_walk_and_bvh_draw_the_same_image(void) {
  const char *sources[] = {"builtin:fractal:100", "builtin:sphere:64", "builtin:marschner-lobb:41"};
  const float isos[] = {127.5f, 0.5f, 0.5f};
  const float views[][3] = {{0, 0, 1}, {90, 0, 1}, {45, 35.26439f, 1}, {10, 25, 1}, {200, -60, 0.7f}, {33, 12, 0.15f}};
  for (size_t s = 0; s < sizeof sources / sizeof sources[0]; s++) {
    ir_volume v;
    if (!util_load(sources[s], &v)) {
      CHECK(0);
      continue;
    }
    float iso = (float)(v.value_min + isos[s] * (v.value_max - v.value_min));
    if (s == 0) iso = isos[s];
    for (size_t k = 0; k < sizeof views / sizeof views[0]; k++) {
      ir_frame_desc f = {.width = 96, .height = 80, .isovalue = iso,
                         .camera = ir_camera_orbit(&v, views[k][0], views[k][1], views[k][2], IR_AXIS_NONE)};
      f.pipeline = IR_PIPELINE_PAPER;
      uint8_t *bvh = render_cpu(&v, &f, NULL, 0);
      f.pipeline = IR_PIPELINE_MULTI;
      uint8_t *walk = render_cpu(&v, &f, NULL, 0);
      size_t differ = 0;
      for (size_t i = 0; bvh && walk && i < 96 * 80; i++) differ += memcmp(bvh + 4 * i, walk + 4 * i, 4) != 0;
      if (differ) fprintf(stderr, "  %s view %zu: %zu pixels differ\n", sources[s], k, differ);
      CHECK(bvh && walk && differ == 0);
      CHECK(bvh && util_coverage(bvh, 96, 80) > 0);
      free(bvh);
      free(walk);
    }
    ir_volume_free(&v);
  }
}

/* Image and depth of one CPU frame (caller frees both). */
static bool render_cpu_with_depth(const ir_volume *v, const ir_frame_desc *f, int walk_cells, uint8_t **img,
                                  float **depth) {
  char err[IR_ERR_LEN] = "";
  ir_renderer *r = NULL;
  ir_renderer_desc desc = {.device = IR_DEVICE_CPU, .volume = v, .walk_cells = walk_cells};
  *img = malloc((size_t)f->width * f->height * 4);
  *depth = malloc((size_t)f->width * f->height * sizeof(float));
  bool ok = ir_renderer_create(&desc, &r, err) == IR_OK && ir_render_frame(r, f, NULL, err) == IR_OK &&
            ir_render_read_image(r, *img, err) == IR_OK && ir_render_read_depth(r, *depth, err) == IR_OK;
  if (!ok) fprintf(stderr, "render: %s\n", err);
  ir_renderer_destroy(r);
  return ok;
}

/* The persistent pipeline cuts each ray's walk and march into steps of a few batches of samples
 * (trace.cuh: ir_step_as); paused and resumed wherever the steps end, a ray finds the hit the
 * one-piece walk finds: the same image and depth bit for bit, for any step, with translucent
 * surfaces and a clip plane too; and so does the walk over cells of 16 voxels (the bricks)
 * instead of 8, in runs of one cell or of any length. */
static void test_steps_draw_the_brick_walks_image(void) {
  const char *sources[] = {"builtin:fractal:100", "builtin:marschner-lobb:41"};
  const float views[][3] = {{0, 0, 1}, {45, 35.26439f, 1}, {200, -60, 0.7f}, {33, 12, 0.15f}};
  const uint32_t steps[] = {1, 2, 3, 7};
  for (size_t s = 0; s < sizeof sources / sizeof sources[0]; s++) {
    ir_volume v;
    if (!util_load(sources[s], &v)) {
      CHECK(0);
      continue;
    }
    for (size_t k = 0; k < sizeof views / sizeof views[0]; k++) {
      for (int look = 0; look < 2; look++) {
        ir_frame_desc f = {.width = 72, .height = 64, .isovalue = s == 0 ? 127.5f : 0.5f,
                           .camera = ir_camera_orbit(&v, views[k][0], views[k][1], views[k][2], IR_AXIS_NONE)};
        if (look == 1) { /* a translucent surface over an opaque one, cut by a plane */
          float lo = s == 0 ? 100.0f : 0.35f, hi = s == 0 ? 160.0f : 0.6f;
          f.surface_count = 2;
          f.surfaces[0] = (ir_surface){lo, {0.9f, 0.2f, 0.2f}, 0.4f};
          f.surfaces[1] = (ir_surface){hi, {0.2f, 0.9f, 0.2f}, 1.0f};
          f.clip_plane_on = true;
          f.clip_plane[0] = 0.3f, f.clip_plane[1] = 1.0f, f.clip_plane[3] = -0.45f * (float)v.dims[1];
        }
        f.pipeline = IR_PIPELINE_MULTI;
        uint8_t *walk, *stepped;
        float *walk_depth, *stepped_depth;
        if (!render_cpu_with_depth(&v, &f, 8, &walk, &walk_depth)) CHECK(0);
        CHECK(util_coverage(walk, 72, 64) > 0);
        f.pipeline = IR_PIPELINE_PERSISTENT;
        for (size_t q = 0; q < sizeof steps / sizeof steps[0] + 2; q++) {
          bool bricks = q >= sizeof steps / sizeof steps[0];
          f.step_batches = bricks ? 3 : steps[q];
          f.run_bricks = bricks ? (q % 2 ? 1000 : 1) : 0;
          if (!render_cpu_with_depth(&v, &f, bricks ? 16 : 8, &stepped, &stepped_depth)) CHECK(0);
          size_t differ = 0;
          for (size_t i = 0; i < 72 * 64; i++)
            differ += memcmp(walk + 4 * i, stepped + 4 * i, 4) != 0 ||
                      memcmp(&walk_depth[i], &stepped_depth[i], sizeof(float)) != 0;
          CHECK_MSG(differ == 0, "%s view %zu look %d, steps of %u batches, cells of %d: %zu pixels differ", sources[s],
                    k, look, f.step_batches, bricks ? 16 : 8, differ);
          free(stepped);
          free(stepped_depth);
        }
        free(walk);
        free(walk_depth);
      }
    }
    ir_volume_free(&v);
  }
}

/* ---- The walk's skip distances (skip.cuh) ---------------------------------------------------- */
static uint32_t lcg(uint32_t *state) {
  *state = *state * 1664525u + 1013904223u;
  return *state >> 8;
}

/* Every cell's value is its L-infinity distance in cells to the nearest cell whose range holds
 * an isovalue, capped at IR_SKIP_MAX (0 on those cells): against a search over all cells, on
 * grids from one cell to long thin ones, sparse and dense, with one surface and with three. */
static void test_skip_map_is_the_capped_distance_to_the_nearest_valid_cell(void) {
  const uint32_t grids[][3] = {{1, 1, 1}, {5, 7, 3}, {40, 3, 2}, {33, 20, 17}, {2, 50, 9}, {26, 24, 22}};
  const double densities[] = {0.0, 0.0005, 0.01, 0.2, 1.0};
  uint32_t seed = 12345u;
  for (size_t g = 0; g < sizeof grids / sizeof grids[0]; g++)
    for (size_t d = 0; d < sizeof densities / sizeof densities[0]; d++)
      for (int surfaces = 1; surfaces <= 3; surfaces += 2) {
        const uint32_t *c = grids[g];
        size_t n = (size_t)c[0] * c[1] * c[2];
        ir_brick_range *ranges = malloc(n * sizeof *ranges);
        uint8_t *map = malloc(n), *tmp = malloc(n);
        ir_iso_set iso = {.v = {10.0f, 20.0f, 30.0f}, .n = surfaces};
        for (size_t i = 0; i < n; i++) {
          bool valid = (double)(lcg(&seed) % 1000000u) < densities[d] * 1e6;
          float at = iso.v[lcg(&seed) % (uint32_t)surfaces];
          /* an invalid cell lies between the isovalues, or its min is above its max (no value) */
          ranges[i] = valid ? (ir_brick_range){at - 1.0f, at + 1.0f}
                            : (lcg(&seed) % 4 == 0 ? (ir_brick_range){1.0f, 0.0f} : (ir_brick_range){11.0f, 19.0f});
        }
        ir_skip_map_host(ranges, c, &iso, map, tmp);
        /* The valid cells, then every cell's nearest one among them. */
        uint32_t(*valid)[3] = malloc(n * sizeof *valid);
        size_t nvalid = 0;
        for (uint32_t k = 0; k < c[2]; k++)
          for (uint32_t j = 0; j < c[1]; j++)
            for (uint32_t i = 0; i < c[0]; i++) {
              ir_brick_range r = ranges[i + c[0] * (j + (size_t)c[1] * k)];
              if (ir_iso_in_range(&iso, r.min, r.max)) valid[nvalid][0] = i, valid[nvalid][1] = j, valid[nvalid++][2] = k;
            }
        size_t wrong = 0, far = 0;
        for (uint32_t z = 0; z < c[2]; z++)
          for (uint32_t y = 0; y < c[1]; y++)
            for (uint32_t x = 0; x < c[0]; x++) {
              int want = IR_SKIP_MAX;
              for (size_t v = 0; v < nvalid; v++) {
                int dist = abs((int)valid[v][0] - (int)x);
                if (abs((int)valid[v][1] - (int)y) > dist) dist = abs((int)valid[v][1] - (int)y);
                if (abs((int)valid[v][2] - (int)z) > dist) dist = abs((int)valid[v][2] - (int)z);
                if (dist < want) want = dist;
              }
              uint8_t got = map[x + c[0] * (y + (size_t)c[1] * z)];
              wrong += got != want;
              far += got >= 2;
            }
        CHECK_MSG(wrong == 0, "grid %ux%ux%u, density %g, %d surfaces: %zu of %zu distances wrong", c[0], c[1], c[2],
                  densities[d], surfaces, wrong, n);
        if (n >= 1000 && densities[d] > 0 && densities[d] < 0.1) CHECK(far > 0);
        free(valid);
        free(ranges);
        free(map);
        free(tmp);
      }
}

/* A few small balls in a large empty volume: most cells far from any surface. */
static void balls_volume(ir_volume *v) {
  const size_t dims[3] = {97, 80, 64};
  const double balls[][4] = {{20, 20, 15, 5}, {70, 30, 40, 7}, {50, 60, 20, 3}, {85, 70, 55, 4}, {10, 75, 50, 6}};
  memset(v, 0, sizeof *v);
  memcpy(v->dims, dims, sizeof v->dims);
  memcpy(v->full_dims, dims, sizeof v->full_dims);
  for (int k = 0; k < 3; k++) v->spacing[k] = 1.0f;
  v->type = IR_VOXEL_UINT8;
  v->bytes = dims[0] * dims[1] * dims[2];
  v->voxels = calloc(v->bytes, 1);
  for (size_t z = 0; z < dims[2]; z++)
    for (size_t y = 0; y < dims[1]; y++)
      for (size_t x = 0; x < dims[0]; x++) {
        double best = 0;
        for (size_t b = 0; b < sizeof balls / sizeof balls[0]; b++) {
          double dx = (double)x - balls[b][0], dy = (double)y - balls[b][1], dz = (double)z - balls[b][2];
          double q = 128.0 + 30.0 * (balls[b][3] - sqrt(dx * dx + dy * dy + dz * dz));
          if (q > best) best = q;
        }
        ((uint8_t *)v->voxels)[x + dims[0] * (y + dims[1] * z)] = (uint8_t)(best > 255 ? 255 : best);
      }
  snprintf(v->name, sizeof v->name, "balls");
  v->value_min = 0;
  v->value_max = 255;
}

/* The walk that leaps over cubes of empty cells finds the hits the cell-by-cell walk finds: every
 * pixel's colour and depth bit for bit, through the single kernel's walk (ir_trace_pixel_runs)
 * and the persistent pipeline's steps, over cells of 8 and of 16 voxels, and over the bricks as
 * the multi pipeline walks them (valid by this frame's BVH leaves without the map), on a sparse
 * volume (the balls, where most of a ray is leaps) and a dense one, from outside, from inside and
 * along an axis (the middle column and row of the odd-sized image: direction components of 0),
 * with a translucent surface over an opaque one and a clip plane, and lit by occlusion and
 * shadow rays (which walk too). */
static void test_leaping_walk_draws_the_cell_walks_image(void) {
  ir_volume vols[2];
  balls_volume(&vols[0]);
  CHECK(util_load("builtin:fractal:100", &vols[1]));
  const float views[][3] = {{0, 0, 1}, {45, 35.26439f, 1}, {200, -60, 0.7f}, {33, 12, 0.2f}, {120, 80, 2.5f}};
  enum { PW = 81, PH = 61 };
  for (int vi = 0; vi < 2; vi++) {
    ir_volume *v = &vols[vi];
    for (int cells = 8; cells <= 24; cells += 8) /* 24: the bricks, as the multi pipeline */
      for (size_t k = 0; k < sizeof views / sizeof views[0]; k++)
        for (int look = 0; look < 3; look++) {
          char err[IR_ERR_LEN] = "";
          ir_renderer *r = NULL;
          bool bricks = cells == 24;
          ir_renderer_desc desc = {.device = IR_DEVICE_CPU, .volume = v, .walk_cells = bricks ? 16 : cells};
          ir_frame_desc f = {.width = PW, .height = PH, .isovalue = 127.5f,
                             .camera = ir_camera_orbit(v, views[k][0], views[k][1], views[k][2], IR_AXIS_NONE)};
          if (look == 1) {
            f.surface_count = 2;
            f.surfaces[0] = (ir_surface){100.0f, {0.9f, 0.2f, 0.2f}, 0.4f};
            f.surfaces[1] = (ir_surface){160.0f, {0.2f, 0.9f, 0.2f}, 1.0f};
            f.clip_plane_on = true;
            f.clip_plane[0] = 0.3f, f.clip_plane[1] = 1.0f, f.clip_plane[3] = -0.45f * (float)v->dims[1];
          }
          if (look == 2) { /* occlusion and shadow rays, a light along an axis of the view */
            f.ao_samples = 4;
            f.ao_radius = 24.0f;
            f.shadows = true;
            f.light_on = true;
            f.light[0] = 0.0f, f.light[1] = 90.0f;
          }
          /* One frame makes the renderer's buffers; then the frame's parameters as the CPU
           * renderer makes them, walked with and without the skip distances. */
          if (ir_renderer_create(&desc, &r, err) != IR_OK || ir_render_frame(r, &f, NULL, err) != IR_OK) {
            CHECK_MSG(0, "%s", err);
            ir_renderer_destroy(r);
            continue;
          }
          ir_trace_params p;
          ir_trace_params_fill(r, &f, &p);
          ir_bvh_update_host(&r->layout, r->ranges, &p.iso, r->nodes);
          p.nodes = r->nodes;
          p.root = ir_bvh_root_or_none(&r->nodes[ir_bvh_root(&r->layout)], ir_bvh_root(&r->layout));
          const ir_brick_range *ranges = r->ranges; /* the bricks' */
          if (!bricks) { /* else the multi pipeline's walk: its cells are the bricks, p.ranges NULL */
            ir_trace_params_walk(r, &f, r->ranges, r->cell_ranges, &p);
            ranges = p.ranges;
          }
          CHECK((int)p.cell == (bricks ? 16 : cells) && (p.ranges == NULL) == bricks);
          size_t n = (size_t)p.cells[0] * p.cells[1] * p.cells[2], far = 0, differ = 0;
          uint8_t *map = malloc(n), *tmp = malloc(n);
          ir_skip_map_host(ranges, p.cells, &p.iso, map, tmp);
          for (size_t i = 0; i < n; i++) far += map[i] >= 2;
          if (vi == 0) CHECK_MSG(far > 0, "no cell of the balls far from them");
          ir_trace_params leap = p;
          leap.skip = map;
          p.skip = NULL;
          for (uint32_t px = 0; px < PW * PH; px++) {
            float d0, d1, d2;
            uint32_t c0 = ir_trace_pixel_runs(&p, px, NULL, &d0);
            uint32_t c1 = ir_trace_pixel_runs(&leap, px, NULL, &d1);
            uint32_t c2 = ir_trace_pixel_steps_as(&leap, px, 2, NULL, &d2, ir_trace_mode(&leap));
            differ += c0 != c1 || c0 != c2 || memcmp(&d0, &d1, sizeof d0) != 0 || memcmp(&d0, &d2, sizeof d0) != 0;
          }
          CHECK_MSG(differ == 0, "%s, cells of %d%s, view %zu, look %d: %zu pixels differ", v->name, bricks ? 16 : cells,
                    bricks ? " (the bricks' leaves)" : "", k, look, differ);
          free(map);
          free(tmp);
          ir_renderer_destroy(r);
        }
  }
  ir_volume_free(&vols[0]);
  ir_volume_free(&vols[1]);
}

/* The real datasets of tests/data/real: non-empty images with plausible coverage. */
static void test_real_datasets_render(void) {
  const char *root = getenv("INKRAY_TEST_DATA");
  if (!root || !*root) {
    CHECK_MSG(0, "INKRAY_TEST_DATA is not set (ctest sets it to tests/data/real)");
    return;
  }
  struct {
    const char *file;
    float iso;
    double min_cover, max_cover;
  } sets[] = {
      {"neghip_66x66x66_uint8.raw", 100.0f, 0.03, 0.9},
      {"bolt_70x123x66_uint8.raw", 100.0f, 0.03, 0.9},
      {"headsq_64x64x93_int16.raw", 500.0f, 0.05, 0.9},
      {"HeadMRVolume.mhd", 60.0f, 0.05, 0.9},
      {"carotid_76x49x45_float32.raw", 200.0f, 0.005, 0.9},
      {"frog/frogtissue.mhd", 0.5f, 0.05, 0.95},
  };
  for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", root, sets[i].file);
    ir_volume v;
    if (!util_load(path, &v)) {
      CHECK_MSG(0, "%s did not load", path);
      continue;
    }
    ir_frame_desc f = frame_of(&v, 128, 128, sets[i].iso, 30, 20);
    uint8_t *img = render_cpu(&v, &f, NULL, 0);
    CHECK(img != NULL);
    if (img) {
      double cover = (double)util_coverage(img, 128, 128) / (128.0 * 128.0);
      CHECK_MSG(cover >= sets[i].min_cover && cover <= sets[i].max_cover, "%s: coverage %.3f", sets[i].file, cover);
      printf("  %s iso %g: coverage %.3f\n", sets[i].file, (double)sets[i].iso, cover);
    }
    free(img);
    ir_volume_free(&v);
  }
}

static void test_bad_arguments_are_input_errors(void) {
  char err[IR_ERR_LEN] = "";
  ir_renderer *r = (ir_renderer *)1;
  ir_renderer_desc none = {.device = IR_DEVICE_CPU, .volume = NULL};
  CHECK(ir_renderer_create(&none, &r, err) == IR_ERR_INPUT);
  CHECK(r == NULL);
  CHECK_STR_CONTAINS(err, "volume");
  CHECK(ir_renderer_create(NULL, &r, err) == IR_ERR_INPUT);

  ir_volume v;
  if (!util_load("builtin:sphere:16", &v)) {
    CHECK(0);
    return;
  }
  ir_volume broken = v;
  broken.dims[1] = 0;
  ir_renderer_desc bad = {.device = IR_DEVICE_CPU, .volume = &broken};
  CHECK(ir_renderer_create(&bad, &r, err) == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "16x0x16");

  ir_renderer_desc desc = {.device = IR_DEVICE_CPU, .volume = &v};
  CHECK(ir_renderer_create(&desc, &r, err) == IR_OK);
  uint8_t px[4];
  CHECK(ir_render_read_image(r, px, err) == IR_ERR_INPUT); /* nothing rendered yet */
  ir_frame_desc f = frame_of(&v, 0, 10, 0.0f, 0, 0);
  CHECK(ir_render_frame(r, &f, NULL, err) == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "0x10");
  f.width = 10;
  f.isovalue = NAN;
  CHECK(ir_render_frame(r, &f, NULL, err) == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "isovalue");
  f.isovalue = 0.0f;
  f.method = IR_COMPACT_METHOD_COUNT;
  CHECK(ir_render_frame(r, &f, NULL, err) == IR_ERR_INPUT);
  f.method = IR_COMPACT_INK_COMPACT;
  CHECK(ir_render_frame(r, &f, NULL, err) == IR_OK);
  CHECK(ir_render_device_image(r) == NULL);
  ir_renderer_destroy(r);
  ir_volume_free(&v);
}

static void test_nonfinite_voxels_count_as_empty(void) {
  ir_volume v;
  if (!util_load("builtin:sphere:40", &v)) {
    CHECK(0);
    return;
  }
  float *p = v.voxels;
  /* Poison one octant with NaN and Inf: the sphere there disappears, no error, no NaN colour. */
  for (size_t z = 20; z < 40; z++)
    for (size_t y = 20; y < 40; y++)
      for (size_t x = 20; x < 40; x++) p[(z * 40 + y) * 40 + x] = (x + y) % 2 ? NAN : INFINITY;
  ir_frame_desc f = frame_of(&v, 80, 80, 0.0f, 45, 35);
  uint8_t *img = render_cpu(&v, &f, NULL, 0);
  CHECK(img != NULL);
  if (img) {
    size_t cover = util_coverage(img, 80, 80);
    CHECK(cover > 200);
    for (size_t i = 0; i < 80 * 80; i++) CHECK(img[4 * i + 3] == 0 || img[4 * i + 3] == 255);
  }
  free(img);
  ir_volume_free(&v);
}

/* ---- Up axis ---------------------------------------------------------------------------------- */
static float dot3(const float a[3], const float b[3]) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

/* The orbit turns around the up axis it is given and rises toward it; none keeps +z, bit for bit. */
static void test_orbit_camera_follows_the_up_axis(void) {
  ir_volume v;
  if (!util_load("builtin:sphere:16", &v)) {
    CHECK(0);
    return;
  }
  ir_camera plain = ir_camera_orbit(&v, 30, 20, 1, IR_AXIS_NONE), z = ir_camera_orbit(&v, 30, 20, 1, IR_AXIS_Z);
  CHECK(memcmp(&plain, &z, sizeof plain) == 0);
  CHECK(z.up[0] == 0 && z.up[1] == 0 && z.up[2] == 1);
  for (int a = IR_AXIS_X; a <= IR_AXIS_NEG_Z; a++) {
    ir_camera c = ir_camera_orbit(&v, 30, 89, 1, (ir_axis)a);
    float want[3] = {0, 0, 0};
    want[ir_axis_index((ir_axis)a)] = (float)ir_axis_sign((ir_axis)a);
    CHECK_MSG(memcmp(c.up, want, sizeof want) == 0, "up %s: camera up (%g %g %g)", ir_axis_name((ir_axis)a),
              (double)c.up[0], (double)c.up[1], (double)c.up[2]);
    /* Near the pole the eye sits above the target along the up axis. */
    float to_eye[3] = {c.eye[0] - c.target[0], c.eye[1] - c.target[1], c.eye[2] - c.target[2]};
    float len = sqrtf(dot3(to_eye, to_eye));
    CHECK_MSG(dot3(to_eye, want) / len > 0.999f, "up %s: elevation 89 does not rise toward it", ir_axis_name((ir_axis)a));
  }
  ir_volume_free(&v);
}

/* Seen from the same place, -z up is the +z image turned half a turn (not mirrored). */
static void test_negative_up_turns_the_image_upside_down(void) {
  ir_volume v;
  if (!util_load("builtin:fractal:24", &v)) {
    CHECK(0);
    return;
  }
  enum { W = 64, H = 48 };
  ir_frame_desc up = frame_of(&v, W, H, 127.5f, 0, 0), down = up;
  down.camera = ir_camera_orbit(&v, 0, 0, 1.0f, IR_AXIS_NEG_Z);
  uint8_t *a = render_cpu(&v, &up, NULL, 0), *b = render_cpu(&v, &down, NULL, 0);
  CHECK(a && b);
  if (a && b) {
    size_t differing = 0, same_place = 0;
    for (int y = 0; y < H; y++)
      for (int x = 0; x < W; x++) {
        const uint8_t *p = a + 4 * ((size_t)y * W + x), *q = b + 4 * ((size_t)(H - 1 - y) * W + (W - 1 - x));
        const uint8_t *r = b + 4 * ((size_t)y * W + x);
        differing += abs(p[0] - q[0]) > 8 || abs(p[1] - q[1]) > 8 || abs(p[2] - q[2]) > 8;
        same_place += memcmp(p, r, 4) != 0;
      }
    CHECK_MSG(differing <= W * H / 100, "%zu pixels differ from the half-turned image", differing);
    CHECK_MSG(same_place > W * H / 20, "the -z image is the +z image: up was ignored");
    CHECK(util_coverage(a, W, H) > W * H / 10);
  }
  free(a);
  free(b);
  ir_volume_free(&v);
}

int main(void) {
  RUN(test_orbit_camera_follows_the_up_axis);
  RUN(test_negative_up_turns_the_image_upside_down);
  RUN(test_bvh_brick_ranges_include_the_shared_border);
  RUN(test_bvh_update_reaches_exactly_the_valid_leaves);
  RUN(test_sphere_silhouette_matches_geometry);
  RUN(test_isovalue_outside_the_data_range_gives_an_empty_image);
  RUN(test_isovalue_crossing_a_single_brick);
  RUN(test_camera_inside_the_volume);
  RUN(test_tiny_odd_and_large_image_sizes);
  RUN(test_thread_count_does_not_change_the_image);
  RUN(test_brick_walk_and_bvh_draw_the_same_image);
  RUN(test_steps_draw_the_brick_walks_image);
  RUN(test_skip_map_is_the_capped_distance_to_the_nearest_valid_cell);
  RUN(test_leaping_walk_draws_the_cell_walks_image);
  RUN(test_real_datasets_render);
  RUN(test_bad_arguments_are_input_errors);
  RUN(test_nonfinite_voxels_count_as_empty);
  return check_summary();
}
