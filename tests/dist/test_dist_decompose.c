/* The brick decomposition, the bands of replicated data and the compositing words, without MPI:
 * every voxel owned by
 * exactly one brick, the loaded boxes holding what sampling and gradients in the owned region
 * need (and staying inside the volume), clip regions tiling the volume, balance along the
 * longest axes, clear errors; depth order of packed words and MIN as the z-test. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist.h"
#include "render/ray_math.cuh"
#include "tests/check.h"

static const size_t shapes[][3] = {{64, 64, 64}, {128, 32, 16}, {17, 90, 33}, {2, 2, 2}, {300, 7, 5}};
static const int rank_counts[] = {1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 27};

static void test_owned_voxels_tile_the_volume_and_clips_tile_its_box(void) {
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (size_t r = 0; r < sizeof rank_counts / sizeof rank_counts[0]; r++) {
      ir_dist_layout L;
      char err[IR_ERR_LEN];
      if (ir_dist_decompose(shapes[s], rank_counts[r], &L, err) != IR_OK) continue;
      const size_t *n = shapes[s];
      unsigned char *owners = calloc(n[0] * n[1] * n[2], 1);
      double clip_volume = 0;
      for (int rank = 0; rank < L.ranks; rank++) {
        ir_dist_brick b;
        ir_dist_brick_of(&L, rank, &b);
        CHECK_EQ_INT(b.rank, rank);
        double v = 1;
        for (int k = 0; k < 3; k++) v *= (double)b.clip_hi[k] - b.clip_lo[k];
        clip_volume += v;
        for (size_t z = b.own_lo[2]; z < b.own_hi[2]; z++)
          for (size_t y = b.own_lo[1]; y < b.own_hi[1]; y++)
            for (size_t x = b.own_lo[0]; x < b.own_hi[0]; x++) owners[(z * n[1] + y) * n[0] + x]++;
      }
      size_t wrong = 0;
      for (size_t i = 0; i < n[0] * n[1] * n[2]; i++) wrong += owners[i] != 1;
      CHECK_MSG(wrong == 0, "%zux%zux%zu on %d ranks: %zu voxels not owned exactly once", n[0], n[1], n[2],
                L.ranks, wrong);
      /* Clip boxes are disjoint and lie in [0, dims], so equal volumes means they tile it. */
      CHECK(fabs(clip_volume - (double)n[0] * (double)n[1] * (double)n[2]) < 1e-6 * clip_volume);
      free(owners);
    }
}

static void test_loaded_boxes_hold_the_shared_voxel_and_the_gradient_ghost(void) {
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (size_t r = 0; r < sizeof rank_counts / sizeof rank_counts[0]; r++) {
      ir_dist_layout L;
      char err[IR_ERR_LEN];
      if (ir_dist_decompose(shapes[s], rank_counts[r], &L, err) != IR_OK) continue;
      for (int rank = 0; rank < L.ranks; rank++) {
        ir_dist_brick b;
        ir_dist_brick_of(&L, rank, &b);
        for (int k = 0; k < 3; k++) {
          size_t n = shapes[s][k];
          bool first = b.cell[k] == 0, last = b.cell[k] == L.parts[k] - 1;
          CHECK(b.load_lo[k] <= b.own_lo[k] && b.own_hi[k] <= b.load_hi[k] && b.load_hi[k] <= n);
          /* Clip region: from the first owned voxel's centre to the next brick's first. */
          CHECK(b.clip_lo[k] == (first ? 0.0f : (float)b.own_lo[k] + 0.5f));
          CHECK(b.clip_hi[k] == (last ? (float)n : (float)b.own_hi[k] + 0.5f));
          /* Samples reach half a voxel outside the clip region (the grid's sample before it)
           * and gradients one more: voxels floor(clip_lo - 2) .. floor(clip_hi + 1) + 1. */
          double need_lo = floor((double)b.clip_lo[k] - 2.0), need_hi = floor((double)b.clip_hi[k] + 1.0) + 1.0;
          if (need_lo < 0) need_lo = 0;
          if (need_hi > (double)n - 1) need_hi = (double)n - 1;
          CHECK_MSG((double)b.load_lo[k] <= need_lo && need_hi < (double)b.load_hi[k],
                    "rank %d axis %d: loads [%zu, %zu), needs [%g, %g]", rank, k, b.load_lo[k], b.load_hi[k],
                    need_lo, need_hi);
          /* The overlap with the next brick: the shared voxel plus the ghosts, no more. */
          if (!last) CHECK_EQ_INT(b.load_hi[k] - b.own_hi[k], (size_t)1 + IR_DIST_GHOST < n - b.own_hi[k] ? 1 + IR_DIST_GHOST : n - b.own_hi[k]);
          if (!first) CHECK_EQ_INT(b.own_lo[k] - b.load_lo[k], b.own_lo[k] < IR_DIST_GHOST ? b.own_lo[k] : IR_DIST_GHOST);
        }
      }
    }
}

static void test_bricks_are_balanced_along_the_longest_axes(void) {
  ir_dist_layout L;
  char err[IR_ERR_LEN];
  const size_t cube[3] = {64, 64, 64}, slab[3] = {256, 64, 16}, tall[3] = {32, 32, 512};
  CHECK(ir_dist_decompose(cube, 8, &L, err) == IR_OK);
  CHECK(L.parts[0] == 2 && L.parts[1] == 2 && L.parts[2] == 2);
  CHECK(ir_dist_decompose(cube, 3, &L, err) == IR_OK);
  CHECK(L.parts[0] == 3 && L.parts[1] == 1 && L.parts[2] == 1);
  CHECK(ir_dist_decompose(slab, 4, &L, err) == IR_OK);
  CHECK(L.parts[0] == 4 && L.parts[1] == 1 && L.parts[2] == 1);
  CHECK(ir_dist_decompose(slab, 16, &L, err) == IR_OK);
  CHECK(L.parts[0] == 8 && L.parts[1] == 2 && L.parts[2] == 1);
  CHECK(ir_dist_decompose(tall, 6, &L, err) == IR_OK);
  CHECK(L.parts[2] == 6 || L.parts[2] == 3);
  CHECK_EQ_INT(L.parts[0] * L.parts[1] * L.parts[2], 6);
  /* Owned sizes differ by at most one voxel along each axis. */
  const size_t odd[3] = {100, 37, 61};
  for (int ranks = 1; ranks <= 12; ranks++) {
    if (ir_dist_decompose(odd, ranks, &L, err) != IR_OK) continue;
    CHECK_EQ_INT(L.parts[0] * L.parts[1] * L.parts[2], ranks);
    size_t lo[3] = {SIZE_MAX, SIZE_MAX, SIZE_MAX}, hi[3] = {0, 0, 0};
    for (int rank = 0; rank < ranks; rank++) {
      ir_dist_brick b;
      ir_dist_brick_of(&L, rank, &b);
      for (int k = 0; k < 3; k++) {
        size_t len = b.own_hi[k] - b.own_lo[k];
        lo[k] = len < lo[k] ? len : lo[k];
        hi[k] = len > hi[k] ? len : hi[k];
      }
    }
    for (int k = 0; k < 3; k++) CHECK_MSG(hi[k] - lo[k] <= 1, "%d ranks, axis %d: %zu..%zu", ranks, k, lo[k], hi[k]);
  }
}

static void test_bad_rank_counts_and_thin_bricks_are_input_errors(void) {
  ir_dist_layout L;
  char err[IR_ERR_LEN] = "";
  const size_t small[3] = {4, 4, 4}, cube[3] = {64, 64, 64}, flat[3] = {64, 64, 3};
  CHECK(ir_dist_decompose(cube, 0, &L, err) == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "0 ranks");
  CHECK(ir_dist_decompose(cube, -3, &L, err) == IR_ERR_INPUT);
  CHECK(ir_dist_decompose(cube, IR_DIST_MAX_RANKS + 1, &L, err) == IR_ERR_INPUT);
  CHECK(ir_dist_decompose(small, 3, &L, err) == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "3 ranks on 4x4x4 voxels: 3 bricks along x would own 1 voxel each");
  CHECK(ir_dist_decompose(small, 8, &L, err) == IR_OK); /* 2x2x2 bricks of 2 voxels */
  CHECK(ir_dist_decompose(small, 16, &L, err) == IR_ERR_INPUT);
  CHECK(ir_dist_decompose(cube, 31, &L, err) == IR_OK);    /* a prime: 31 slabs of 2-3 voxels */
  CHECK(ir_dist_decompose(cube, 37, &L, err) == IR_ERR_INPUT); /* 37 slabs would own 1 */
  const size_t line[3] = {64, 2, 2};
  CHECK(ir_dist_decompose(line, 67, &L, err) == IR_ERR_INPUT); /* 67 > 64 along x */
  CHECK(ir_dist_decompose(flat, 4, &L, err) == IR_OK);
  CHECK(L.parts[2] == 1);
}

/* A box's projection in pixels: a square seen face on (its far face inside the near one's
 * outline), one off screen, one around the eye, one larger than the frame. */
static void test_box_pixels_are_the_projections_area_in_the_frame(void) {
  ir_camera cam = {.eye = {0, 0, -2}, .target = {0, 0, 0}, .up = {0, 1, 0}, .fov_y_degrees = 90.0f};
  const double lo[3] = {-0.5, -0.5, 0.0}, hi[3] = {0.5, 0.5, 1.0};
  /* The near face spans x/z = +-0.25 of the half-width: a quarter of the frame's width. */
  CHECK(fabs(ir_camera_box_pixels(&cam, 100, 100, lo, hi) - 625.0) < 1e-6);
  CHECK(fabs(ir_camera_box_pixels(&cam, 200, 100, lo, hi) - 625.0) < 1e-6); /* square pixels */
  const double off_lo[3] = {50, 0, 0}, off_hi[3] = {51, 1, 1};
  CHECK(ir_camera_box_pixels(&cam, 100, 100, off_lo, off_hi) == 0.0);
  const double around_lo[3] = {-5, -5, -5}, around_hi[3] = {5, 5, 5};
  CHECK(ir_camera_box_pixels(&cam, 100, 80, around_lo, around_hi) == 8000.0);
  const double big_lo[3] = {-10, -10, 0}, big_hi[3] = {10, 10, 1};
  CHECK(fabs(ir_camera_box_pixels(&cam, 100, 80, big_lo, big_hi) - 8000.0) < 1e-6);
  /* Half of the frame: a box whose near face covers x >= 0 of it. */
  const double half_lo[3] = {0, -10, 0}, half_hi[3] = {10, 10, 1};
  CHECK(fabs(ir_camera_box_pixels(&cam, 100, 80, half_lo, half_hi) - 4000.0) < 1e-6);
}

/* The largest brick's projection summed over the views, as ir_dist_decompose_for_views scores it
 * (unit spacing): of each brick's part inside the clip box where there is one. */
static double largest_brick_pixels(const ir_dist_layout *L, const ir_camera *views, int count, int w, int h,
                                   const float *clip_lo, const float *clip_hi) {
  double sum = 0;
  for (int v = 0; v < count; v++) {
    double largest = 0;
    for (int r = 0; r < L->ranks; r++) {
      ir_dist_brick b;
      ir_dist_brick_of(L, r, &b);
      double lo[3] = {b.clip_lo[0], b.clip_lo[1], b.clip_lo[2]}, hi[3] = {b.clip_hi[0], b.clip_hi[1], b.clip_hi[2]};
      bool inside = true;
      for (int k = 0; k < 3 && clip_lo; k++) {
        lo[k] = fmax(lo[k], clip_lo[k]), hi[k] = fmin(hi[k], clip_hi[k]);
        inside = inside && lo[k] < hi[k];
      }
      if (inside) largest = fmax(largest, ir_camera_box_pixels(&views[v], w, h, lo, hi));
    }
    sum += largest;
  }
  return sum;
}

/* A 2048^3 volume of unit spacing and an orbit of 8 views around z at 20 degrees. */
static void cube_and_orbit(ir_volume *v, ir_camera orbit[8]) {
  memset(v, 0, sizeof *v);
  v->dims[0] = v->dims[1] = v->dims[2] = 2048;
  v->spacing[0] = v->spacing[1] = v->spacing[2] = 1.0f;
  for (int i = 0; i < 8; i++) orbit[i] = ir_camera_orbit(v, 45.0f * (float)i, 20.0f, 1.0f, IR_AXIS_NONE);
}

/* No other grid of L's rank count covers 1 % fewer pixels than L over the orbit at 1920x1080 (of
 * the part inside the clip box, where there is one). */
static void check_no_grid_beats(const ir_dist_layout *L, const ir_camera orbit[8], const float *clip_lo,
                                const float *clip_hi) {
  int ranks = L->ranks;
  double taken = largest_brick_pixels(L, orbit, 8, 1920, 1080, clip_lo, clip_hi);
  for (int a = 1; a <= ranks; a++)
    for (int b = 1; a * b <= ranks; b++) {
      if (ranks % (a * b)) continue;
      ir_dist_layout other = *L;
      other.parts[0] = a, other.parts[1] = b, other.parts[2] = ranks / (a * b);
      CHECK_MSG(taken <= largest_brick_pixels(&other, orbit, 8, 1920, 1080, clip_lo, clip_hi) / 0.99,
                "%d ranks%s: %dx%dx%d beats %dx%dx%d", ranks, clip_lo ? ", clipped" : "", a, b, ranks / (a * b),
                L->parts[0], L->parts[1], L->parts[2]);
    }
}

/* Bricks for the views: an orbit around z cuts across z (two slabs, stacked in every view) where
 * the longest-axes rule cuts x (the orbit looks along that cut twice); looking down z, a cut
 * across z would put one brick behind the other, so it is not taken; for 2 to 8 ranks the grid
 * taken covers no more than any other grid, and never more than the longest-axes one. */
static void test_bricks_for_views_stack_across_the_orbits_axis(void) {
  ir_volume v;
  ir_camera orbit[8];
  cube_and_orbit(&v, orbit);
  ir_dist_layout L, longest;
  char err[IR_ERR_LEN] = "";
  CHECK(ir_dist_decompose_for_views(v.dims, v.spacing, 2, orbit, 8, 1024, 1024, NULL, NULL, &L, err) == IR_OK);
  CHECK(L.parts[0] == 1 && L.parts[1] == 1 && L.parts[2] == 2);
  CHECK(ir_dist_decompose(v.dims, 2, &longest, err) == IR_OK && longest.parts[0] == 2);
  /* The stacked slabs' largest projection is about 0.62 of the whole volume's (1.23 / 2 in the
   * sum over the orbit), the side-by-side halves' about 0.77. */
  ir_dist_layout one;
  CHECK(ir_dist_decompose(v.dims, 1, &one, err) == IR_OK);
  double whole = largest_brick_pixels(&one, orbit, 8, 1024, 1024, NULL, NULL);
  double slabs = largest_brick_pixels(&L, orbit, 8, 1024, 1024, NULL, NULL) / whole;
  double halves = largest_brick_pixels(&longest, orbit, 8, 1024, 1024, NULL, NULL) / whole;
  CHECK_MSG(slabs < 0.66 && halves > 0.72, "slabs %.3f, halves %.3f of the whole", slabs, halves);
  ir_camera down = ir_camera_orbit(&v, 0.0f, 89.0f, 1.0f, IR_AXIS_NONE);
  CHECK(ir_dist_decompose_for_views(v.dims, v.spacing, 2, &down, 1, 1024, 1024, NULL, NULL, &L, err) == IR_OK);
  CHECK(L.parts[2] == 1);
  for (int ranks = 2; ranks <= 8; ranks++) {
    CHECK(ir_dist_decompose_for_views(v.dims, v.spacing, ranks, orbit, 8, 1920, 1080, NULL, NULL, &L, err) == IR_OK);
    CHECK(L.ranks == ranks && L.parts[0] * L.parts[1] * L.parts[2] == ranks);
    double taken = largest_brick_pixels(&L, orbit, 8, 1920, 1080, NULL, NULL);
    CHECK(ir_dist_decompose(v.dims, ranks, &longest, err) == IR_OK);
    CHECK(taken <= largest_brick_pixels(&longest, orbit, 8, 1920, 1080, NULL, NULL));
    check_no_grid_beats(&L, orbit, NULL, NULL);
  }
  /* Past IR_DIST_VIEW_RANKS_MAX ranks, the longest-axes grid. */
  const size_t huge[3] = {16384, 16384, 16384};
  CHECK(ir_dist_decompose_for_views(huge, v.spacing, 2 * IR_DIST_VIEW_RANKS_MAX, orbit, 8, 64, 64, NULL, NULL, &L, err) == IR_OK);
  CHECK(ir_dist_decompose(huge, 2 * IR_DIST_VIEW_RANKS_MAX, &longest, err) == IR_OK);
  CHECK(memcmp(L.parts, longest.parts, sizeof L.parts) == 0);
  /* Errors are ir_dist_decompose's. */
  CHECK(ir_dist_decompose_for_views(v.dims, v.spacing, 0, orbit, 8, 64, 64, NULL, NULL, &L, err) == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "0 ranks");
}

/* A clip box shares out what it keeps: the orbit around z clipped to the lower half in z would
 * leave one of two slabs across z drawing all of it and the other nothing, so the cut is made
 * along x or y instead; for 2 to 8 ranks the grid taken covers, of the clipped part, no more than
 * any other grid (1 % margin). */
static void test_bricks_for_views_share_out_the_clip_box(void) {
  ir_volume v;
  ir_camera orbit[8];
  cube_and_orbit(&v, orbit);
  const float lo[3] = {0.0f, 0.0f, 0.0f}, hi[3] = {2048.0f, 2048.0f, 1024.0f};
  ir_dist_layout L, unclipped;
  char err[IR_ERR_LEN] = "";
  CHECK(ir_dist_decompose_for_views(v.dims, v.spacing, 2, orbit, 8, 1024, 1024, NULL, NULL, &unclipped, err) == IR_OK);
  CHECK(unclipped.parts[2] == 2);
  CHECK(ir_dist_decompose_for_views(v.dims, v.spacing, 2, orbit, 8, 1024, 1024, lo, hi, &L, err) == IR_OK);
  CHECK_MSG(L.parts[2] == 1, "clipped to z < 1024: %dx%dx%d", L.parts[0], L.parts[1], L.parts[2]);
  /* Scored whole, the slabs win; scored by what they draw, the grid taken covers about 0.71 of
   * the slabs' largest part. */
  double slabs = largest_brick_pixels(&unclipped, orbit, 8, 1024, 1024, lo, hi);
  double taken = largest_brick_pixels(&L, orbit, 8, 1024, 1024, lo, hi);
  printf("  clipped: the grid taken covers %.2f of the slabs' largest part\n", taken / slabs);
  CHECK_MSG(taken < 0.75 * slabs, "taken %.0f against the slabs' %.0f pixels", taken, slabs);
  for (int ranks = 2; ranks <= 8; ranks++) {
    CHECK(ir_dist_decompose_for_views(v.dims, v.spacing, ranks, orbit, 8, 1920, 1080, lo, hi, &L, err) == IR_OK);
    CHECK(L.ranks == ranks && L.parts[0] * L.parts[1] * L.parts[2] == ranks);
    check_no_grid_beats(&L, orbit, lo, hi);
  }
}

static void test_packed_words_order_by_depth_and_min_composites(void) {
  const float depths[] = {0.0f, 1e-30f, 0.5f, 1.0f, 1.5f, 100.0f, 3.0e38f};
  for (size_t i = 0; i + 1 < sizeof depths / sizeof depths[0]; i++) {
    /* Colours that would order the other way must not matter. */
    CHECK(ir_dist_pack(depths[i], 0xffffffffu) < ir_dist_pack(depths[i + 1], 0u));
    CHECK(ir_dist_pack(depths[i + 1], 0u) < IR_DIST_BACKGROUND);
  }
  CHECK(ir_dist_pack(INFINITY, 0x12345678u) == IR_DIST_BACKGROUND);
  CHECK(ir_dist_pack(NAN, 0x12345678u) == IR_DIST_BACKGROUND);
  CHECK(ir_dist_pack(-0.0f, 7u) == ir_dist_pack(0.0f, 7u));
  /* Two "ranks": pixel 0 hit by both (the nearer wins), 1 by one, 2 by none. */
  uint8_t a_rgba[12] = {10, 11, 12, 255, 20, 21, 22, 255, 0, 0, 0, 0}, b_rgba[12] = {30, 31, 32, 255, 0, 0, 0, 0, 0, 0, 0, 0};
  float a_depth[3] = {5.0f, 2.0f, INFINITY}, b_depth[3] = {4.0f, INFINITY, INFINITY};
  uint64_t a[3], b[3];
  ir_dist_pack_image(a_rgba, a_depth, 3, a);
  ir_dist_pack_image(b_rgba, b_depth, 3, b);
  for (int i = 0; i < 3; i++) a[i] = b[i] < a[i] ? b[i] : a[i];
  uint8_t out[12];
  ir_dist_unpack_image(a, 3, 0x00332211u, out);
  CHECK(out[0] == 30 && out[1] == 31 && out[2] == 32 && out[3] == 255);
  CHECK(out[4] == 20 && out[5] == 21 && out[6] == 22 && out[7] == 255);
  CHECK(out[8] == 0x11 && out[9] == 0x22 && out[10] == 0x33 && out[11] == 0);
  /* The composited depths: the nearer of the two, the one hit, none (+inf). */
  float depth[3];
  ir_dist_unpack_depth(a, 3, depth);
  CHECK(depth[0] == 4.0f && depth[1] == 2.0f && isinf(depth[2]) && depth[2] > 0.0f);
}

/* Windows: a rank's words of a 2x2 window of a 4x3 frame travel row by row, and MIN-merging them
 * into another rank's whole frame gives what merging the whole frames gives (outside its window
 * a brick's frame is background); an empty window packs and merges nothing. */
static void test_windows_pack_row_by_row_and_merge_as_whole_frames(void) {
  enum { W = 4, H = 3, N = W * H };
  uint8_t a_rgba[4 * N], b_rgba[4 * N];
  float a_depth[N], b_depth[N];
  const int window[4] = {1, 1, 3, 3}; /* x 1..2, y 1..2 */
  for (int i = 0; i < N; i++) {
    int x = i % W, y = i / W;
    bool inside = x >= 1 && x < 3 && y >= 1 && y < 3;
    for (int c = 0; c < 4; c++) a_rgba[4 * i + c] = (uint8_t)(10 * i + c), b_rgba[4 * i + c] = (uint8_t)(100 + i + c);
    a_depth[i] = (i % 3 == 0) ? INFINITY : 2.0f + (float)i;
    b_depth[i] = inside && i != 9 ? 1.0f + (float)(i % 4) * 3.0f : INFINITY; /* background outside */
  }
  uint64_t words[4], whole_a[N], whole_b[N], merged[N];
  ir_dist_pack_window(b_rgba, b_depth, W, window, words);
  const int order[4] = {5, 6, 9, 10}; /* the window's pixels, row by row */
  for (int k = 0; k < 4; k++) {
    uint32_t c;
    memcpy(&c, b_rgba + 4 * order[k], sizeof c);
    CHECK(words[k] == ir_dist_pack(b_depth[order[k]], c));
  }
  ir_dist_pack_image(a_rgba, a_depth, N, whole_a);
  ir_dist_pack_image(b_rgba, b_depth, N, whole_b);
  memcpy(merged, whole_a, sizeof merged);
  ir_dist_min_window(words, W, window, merged);
  int nearer_b = 0;
  for (int i = 0; i < N; i++) {
    uint64_t expect = whole_b[i] < whole_a[i] ? whole_b[i] : whole_a[i];
    CHECK(merged[i] == expect);
    nearer_b += merged[i] == whole_b[i] && whole_b[i] != whole_a[i];
  }
  CHECK(nearer_b > 0); /* the merge did take some of b's pixels */
  const int empty[4] = {2, 1, 2, 3};
  uint64_t untouched = 42;
  ir_dist_pack_window(b_rgba, b_depth, W, empty, &untouched);
  CHECK(untouched == 42);
  memcpy(merged, whole_a, sizeof merged);
  ir_dist_min_window(words, W, empty, merged);
  CHECK(memcmp(merged, whole_a, sizeof merged) == 0);
}

/* The pixel a ray with this premultiplied paint gives (render/trace.cuh, ir_paint_pixel). */
static uint32_t paint_pixel(const float paint[4]) {
  const float bg[3] = {(IR_BACKGROUND_RGBA & 0xffu) / 255.0f, (IR_BACKGROUND_RGBA >> 8 & 0xffu) / 255.0f,
                       (IR_BACKGROUND_RGBA >> 16 & 0xffu) / 255.0f};
  if (paint[3] == 0.0f) return IR_BACKGROUND_RGBA;
  float k = 1.0f - paint[3];
  return ir_pack_rgba_alpha(paint[0] + k * bg[0], paint[1] + k * bg[1], paint[2] + k * bg[2], paint[3]);
}

static int channel_gap(uint32_t a, uint32_t b) {
  int worst = 0;
  for (int c = 0; c < 4; c++) {
    int d = abs((int)(a >> (8 * c) & 0xffu) - (int)(b >> (8 * c) & 0xffu));
    worst = d > worst ? d : worst;
  }
  return worst;
}

/* Three bricks' pixels blended with "over" in a given order give the pixel of one ray that
 * gathers the three paints front to back in that order (within the 8-bit read-back), the nearest
 * depth, and the background where no brick drew; with opaque front layers, what MIN gives. */
static void test_over_blends_layers_in_the_given_order(void) {
  srand(7);
  size_t worst = 0;
  for (int trial = 0; trial < 2000; trial++) {
    float paint[3][4], depth[3];
    uint64_t layers[3];
    for (int l = 0; l < 3; l++) {
      float a = (float)(rand() % 1001) / 1000.0f;
      if (rand() % 5 == 0) a = 0.0f; /* a brick that drew nothing here */
      for (int c = 0; c < 3; c++) paint[l][c] = a * (float)(rand() % 1001) / 1000.0f;
      paint[l][3] = a;
      depth[l] = 1.0f + (float)(rand() % 1000);
      layers[l] = a == 0.0f ? IR_DIST_BACKGROUND : ir_dist_pack(depth[l], paint_pixel(paint[l]));
    }
    const int order[3] = {trial % 3, (trial + 1 + trial / 3 % 2) % 3, (trial + 2 - trial / 3 % 2) % 3};
    float sum[4] = {0, 0, 0, 0}, nearest = INFINITY;
    for (int j = 0; j < 3; j++) {
      const float *p = paint[order[j]];
      float behind = 1.0f - sum[3];
      for (int c = 0; c < 4; c++) sum[c] += behind * p[c];
      if (p[3] > 0.0f && depth[order[j]] < nearest) nearest = depth[order[j]];
    }
    uint64_t out;
    ir_dist_over_words(layers, 1, order, 3, 1, &out);
    if (sum[3] == 0.0f) {
      CHECK(out == IR_DIST_BACKGROUND);
      continue;
    }
    float d;
    ir_dist_unpack_depth(&out, 1, &d);
    CHECK(d == nearest);
    size_t gap = (size_t)channel_gap((uint32_t)out, paint_pixel(sum));
    worst = gap > worst ? gap : worst;
  }
  printf("  largest gap to the one-ray blend: %zu/255\n", worst);
  CHECK(worst <= 2);
  /* Opaque layers: the front one, as MIN would keep (depth order and visibility order agree). */
  uint64_t opaque[2] = {ir_dist_pack(9.0f, 0xff102030u), ir_dist_pack(3.0f, 0xff405060u)}, out;
  const int back_first[2] = {1, 0};
  ir_dist_over_words(opaque, 1, back_first, 2, 1, &out);
  CHECK(out == opaque[1]);
}

/* A brute-force check of the visibility order: points stepped along rays from eyes inside and
 * outside the volume go through the bricks' clip boxes in non-decreasing order position. */
static void test_visibility_order_is_front_to_back_along_every_ray(void) {
  static const size_t dims[][3] = {{64, 64, 64}, {90, 33, 17}, {40, 40, 40}};
  static const int counts[] = {2, 3, 4, 6, 8, 12, 27};
  srand(11);
  size_t rays = 0, bad = 0;
  for (size_t s = 0; s < 3; s++)
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
      ir_dist_layout L;
      char err[IR_ERR_LEN];
      if (ir_dist_decompose(dims[s], counts[c], &L, err) != IR_OK) continue;
      int order[32], position[32];
      ir_dist_brick bricks[32];
      for (int r = 0; r < L.ranks; r++) ir_dist_brick_of(&L, r, &bricks[r]);
      for (int e = 0; e < 40; e++) {
        double eye[3];
        for (int k = 0; k < 3; k++) eye[k] = ((double)(rand() % 3001) / 1000.0 - 1.0) * (double)dims[s][k];
        ir_dist_visibility_order(&L, eye, order);
        for (int j = 0; j < L.ranks; j++) position[order[j]] = j;
        for (int ray = 0; ray < 50; ray++, rays++) {
          double dir[3], len = 0;
          for (int k = 0; k < 3; k++) {
            dir[k] = (double)(rand() % 2001) / 1000.0 - 1.0;
            len += dir[k] * dir[k];
          }
          len = sqrt(len) + 1e-9;
          int last = -1;
          for (double t = 0; t < 4.0 * (double)(dims[s][0] + dims[s][1] + dims[s][2]); t += 0.25) {
            double p[3];
            int in = -1;
            for (int k = 0; k < 3; k++) p[k] = eye[k] + t * dir[k] / len;
            for (int r = 0; r < L.ranks && in < 0; r++) {
              bool inside = true;
              for (int k = 0; k < 3; k++) inside = inside && p[k] >= bricks[r].clip_lo[k] && p[k] < bricks[r].clip_hi[k];
              if (inside) in = r;
            }
            if (in < 0) continue;
            if (last >= 0 && position[in] < position[last]) bad++;
            last = in;
          }
        }
      }
    }
  printf("  %zu rays, %zu steps against the order\n", rays, bad);
  CHECK(rays > 1000);
  CHECK_EQ_INT((int)bad, 0);
}

/* How a build without MPI still recognises mpirun: the launchers' environment variables. */
static void test_launched_size_comes_from_the_launchers_environment(void) {
  const char *names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"};
  for (int k = 0; k < 4; k++) unsetenv(names[k]);
  CHECK_EQ_INT(ir_dist_launched_size(), 0);
  setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
  CHECK_EQ_INT(ir_dist_launched_size(), 3);
  unsetenv("OMPI_COMM_WORLD_SIZE");
  setenv("PMI_SIZE", "2", 1);
  CHECK_EQ_INT(ir_dist_launched_size(), 2);
  setenv("PMI_SIZE", "nonsense", 1);
  CHECK_EQ_INT(ir_dist_launched_size(), 0);
  unsetenv("PMI_SIZE");
  unsetenv("OMPI_COMM_WORLD_RANK");
  unsetenv("PMI_RANK");
  unsetenv("PMIX_RANK");
  CHECK_EQ_INT(ir_dist_launched_rank(), 0);
  setenv("PMIX_RANK", "5", 1);
  CHECK_EQ_INT(ir_dist_launched_rank(), 5);
  unsetenv("PMIX_RANK");
}

/* ---- Bands of rows (replicated data) ---- */

/* A frame's cost: a fixed part per rank and a density over the rows (fractions 0..1) with a
 * narrow peak, as the fractal's rows are; the time of the band [a, b). */
static double band_cost(double a, double b) {
  const int steps = 4000;
  double sum = 0.0;
  for (int i = 0; i < steps; i++) {
    double y = a + (b - a) * (i + 0.5) / steps;
    sum += 0.2 + 3.0 * exp(-(y - 0.3) * (y - 0.3) / (2 * 0.05 * 0.05)) + (y > 0.7 ? 1.0 : 0.0);
  }
  return 0.05 + sum * (b - a) / steps;
}

static void test_bands_tile_the_rows_and_start_even(void) {
  for (int ranks = 1; ranks <= 9; ranks++) {
    double cuts[10], density[256];
    ir_dist_bands_even(ranks, cuts, density);
    CHECK(ir_dist_band_slots(ranks) <= 256 && ir_dist_band_slots(ranks) >= 16 * ranks);
    for (int y0 = 0; y0 < 3; y0++)
      for (int y1 = y0; y1 < y0 + 40; y1 += 7) {
        int prev = y0, widest = 0, narrowest = 1 << 30;
        for (int r = 0; r < ranks; r++) {
          int rows[2];
          ir_dist_band_rows(cuts, r, y0, y1, rows);
          CHECK_EQ_INT(rows[0], prev);
          CHECK(rows[1] >= rows[0]);
          prev = rows[1];
          widest = rows[1] - rows[0] > widest ? rows[1] - rows[0] : widest;
          narrowest = rows[1] - rows[0] < narrowest ? rows[1] - rows[0] : narrowest;
        }
        CHECK_EQ_INT(prev, y1);
        CHECK(widest - narrowest <= 1); /* even cuts: rows split within one */
      }
  }
}

/* Where the cost is constant within each band, one step balances it exactly; balanced times move
 * nothing. */
static void test_balance_is_exact_for_a_cost_constant_within_bands(void) {
  double cuts[3], density[64], times[2] = {1.5, 0.5}; /* density 3 above the middle, 1 below */
  ir_dist_bands_even(2, cuts, density);
  ir_dist_bands_balance(2, times, cuts, density);
  CHECK(fabs(cuts[1] - 1.0 / 3.0) < 1e-12);
  CHECK(cuts[0] == 0.0 && cuts[2] == 1.0);
  double cuts4[5], even[5], density4[64], times4[4] = {1.0, 1.0, 1.0, 1.0};
  ir_dist_bands_even(4, cuts4, density4);
  ir_dist_bands_even(4, even, density4);
  ir_dist_bands_balance(4, times4, cuts4, density4);
  for (int k = 0; k <= 4; k++) CHECK(fabs(cuts4[k] - even[k]) < 1e-12);
}

/* One balancing step of the simpler rule (each band's mean density, no memory of earlier frames),
 * for comparison: it oscillates where the cost peaks inside a band. */
static void balance_by_band_means(int ranks, const double *times, double *cuts) {
  double total = 0.0, out[8];
  for (int r = 0; r < ranks; r++) total += times[r];
  double before = 0.0;
  int j = 0;
  for (int k = 1; k < ranks; k++) {
    double want = total * k / ranks;
    while (j < ranks - 1 && before + times[j] < want) before += times[j++];
    out[k] = cuts[j] + (cuts[j + 1] - cuts[j]) * (want - before) / times[j];
  }
  for (int k = 1; k < ranks; k++) cuts[k] = out[k];
}

/* On a peaked cost with a fixed part the bands settle within a few frames: the slowest rank
 * within 3 % of the mean after 10 steps from bands up to 1.75x apart (the simpler rule is still
 * 1.3x off with 3 ranks); every band keeps its minimum width. */
static void test_balance_settles_on_a_peaked_cost(void) {
  const int counts[] = {2, 3, 4, 7};
  for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
    int ranks = counts[c];
    double cuts[8], means[8], density[128], times[7];
    ir_dist_bands_even(ranks, cuts, density);
    memcpy(means, cuts, sizeof cuts);
    double first_spread = 0.0, spread = 0.0, means_spread = 0.0;
    for (int step = 0; step <= 10; step++) {
      double most = 0.0, sum = 0.0, most_m = 0.0, sum_m = 0.0;
      for (int r = 0; r < ranks; r++) {
        times[r] = band_cost(means[r], means[r + 1]);
        most_m = times[r] > most_m ? times[r] : most_m;
        sum_m += times[r];
      }
      means_spread = most_m / (sum_m / ranks);
      balance_by_band_means(ranks, times, means);
      for (int r = 0; r < ranks; r++) {
        times[r] = band_cost(cuts[r], cuts[r + 1]);
        most = times[r] > most ? times[r] : most;
        sum += times[r];
      }
      spread = most / (sum / ranks);
      if (step == 0) first_spread = spread;
      if (step == 10) break;
      ir_dist_bands_balance(ranks, times, cuts, density);
      CHECK(cuts[0] == 0.0 && cuts[ranks] == 1.0);
      for (int r = 0; r < ranks; r++) CHECK(cuts[r + 1] - cuts[r] >= IR_DIST_BAND_MIN / ranks - 1e-12);
    }
    printf("  %d ranks: slowest / mean %.3f with even bands, %.3f after 10 frames (band means alone: %.3f)\n", ranks,
           first_spread, spread, means_spread);
    CHECK(spread < 1.03);
    if (ranks == 3) CHECK(means_spread > 1.2);
  }
}

/* Times that say nothing (not finite, negative, all zero) change nothing; a rank whose band costs
 * nothing at all keeps the minimum width. */
static void test_balance_ignores_times_that_say_nothing(void) {
  double cuts[4], density[64], before[4];
  ir_dist_bands_even(3, cuts, density);
  double first[3] = {1.0, 3.0, 2.0};
  ir_dist_bands_balance(3, first, cuts, density);
  memcpy(before, cuts, sizeof cuts);
  double bad[][3] = {{1.0, NAN, 1.0}, {1.0, INFINITY, 1.0}, {1.0, -1.0, 1.0}, {0.0, 0.0, 0.0}};
  for (int k = 0; k < 4; k++) {
    ir_dist_bands_balance(3, bad[k], cuts, density);
    for (int j = 0; j < 4; j++) CHECK(cuts[j] == before[j]);
  }
  double idle[3] = {0.0, 2.0, 0.0};
  for (int k = 0; k < 5; k++) ir_dist_bands_balance(3, idle, cuts, density);
  for (int r = 0; r < 3; r++) CHECK(cuts[r + 1] - cuts[r] >= IR_DIST_BAND_MIN / 3 - 1e-12);
}

int main(void) {
  RUN(test_owned_voxels_tile_the_volume_and_clips_tile_its_box);
  RUN(test_loaded_boxes_hold_the_shared_voxel_and_the_gradient_ghost);
  RUN(test_bricks_are_balanced_along_the_longest_axes);
  RUN(test_bad_rank_counts_and_thin_bricks_are_input_errors);
  RUN(test_box_pixels_are_the_projections_area_in_the_frame);
  RUN(test_bricks_for_views_stack_across_the_orbits_axis);
  RUN(test_bricks_for_views_share_out_the_clip_box);
  RUN(test_packed_words_order_by_depth_and_min_composites);
  RUN(test_windows_pack_row_by_row_and_merge_as_whole_frames);
  RUN(test_over_blends_layers_in_the_given_order);
  RUN(test_visibility_order_is_front_to_back_along_every_ray);
  RUN(test_launched_size_comes_from_the_launchers_environment);
  RUN(test_bands_tile_the_rows_and_start_even);
  RUN(test_balance_is_exact_for_a_cost_constant_within_bands);
  RUN(test_balance_settles_on_a_peaked_cost);
  RUN(test_balance_ignores_times_that_say_nothing);
  return check_summary();
}
