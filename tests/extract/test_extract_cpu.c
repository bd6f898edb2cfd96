/* The CPU reference extraction (label cpu): the case table, the tie rule, closed surfaces of known
 * topology, positions on the analytic surface, counts against an independent count, clipping,
 * non-finite voxels, several surfaces, values and colours, the caller's arrays, and the argument
 * checks. Small volumes: the whole file runs in a second or two. */
#include "tests/check.h"
#include "tests/extract/extract_test_util.h"

#include "extract/extract_internal.h"

static ir_mesh extract_cpu(const ir_extract_grid *g, const ir_extract_desc *d, int threads) {
  ir_extractor *ex = NULL;
  ir_mesh m;
  memset(&m, 0, sizeof m);
  char err[IR_ERR_LEN] = {0};
  ir_extractor_desc xd = {.device = IR_EXTRACT_CPU, .cpu_threads = threads};
  CHECK(ir_extractor_create(&xd, &ex, err) == IR_OK);
  CHECK_MSG(ir_extractor_set_grid(ex, g, err) == IR_OK, "%s", err);
  CHECK_MSG(ir_extract(ex, d, &m, NULL, err) == IR_OK, "%s", err);
  ir_extractor_destroy(ex);
  return m;
}

static ir_extract_desc one_surface(float iso) {
  ir_extract_desc d;
  memset(&d, 0, sizeof d);
  d.surface_count = 1;
  d.isovalues[0] = iso;
  return d;
}

/* ---- Case table ---------------------------------------------------------------------------------- */
static void test_case_table_uses_every_crossed_edge_once_per_loop(void) {
  uint64_t cases[256];
  CHECK(ir_mc_build_cases(cases));
  CHECK_EQ_INT(ir_mc_case_triangles(cases[0]), 0);
  CHECK_EQ_INT(ir_mc_case_triangles(cases[255]), 0);
  for (int c = 0; c < 256; c++) {
    int crossed = 0, used[12] = {0};
    for (int e = 0; e < 12; e++) {
      uint32_t o[3], a = 0, b = 0;
      int axis = ir_mc_edge(e, o);
      for (int k = 0; k < 8; k++) {
        uint32_t q[3];
        ir_mc_corner_offset(k, q);
        uint32_t end[3] = {o[0], o[1], o[2]};
        end[axis]++;
        if (memcmp(q, o, sizeof q) == 0) a = (uint32_t)k;
        if (memcmp(q, end, sizeof q) == 0) b = (uint32_t)k;
      }
      crossed += ((c >> a) & 1) != ((c >> b) & 1);
    }
    int n = ir_mc_case_triangles(cases[c]);
    CHECK(n >= 0 && n <= 5);
    for (int i = 0; i < 3 * n; i++) used[ir_mc_case_edge(cases[c], i)]++;
    int distinct = 0;
    for (int e = 0; e < 12; e++) distinct += used[e] > 0;
    CHECK_MSG(distinct == crossed, "case %d: %d crossed edges, %d used", c, crossed, distinct);
  }
}

/* The ranks the GPU's generation kernels compute from the tables classification packs (nibbles
 * for triangle counts, masks and prefixes for vertices), against running counts. */
static void test_rank_helpers_match_running_counts(void) {
  for (int trial = 0; trial < 200; trial++) {
    uint32_t counts[32], words[4] = {0, 0, 0, 0};
    for (int i = 0; i < 32; i++) {
      counts[i] = test_rand() % 6; /* 0..5 triangles a cell */
      words[i / 8] |= counts[i] << (4 * (i % 8)); /* the layout of classify.cu's pack_nibbles */
    }
    uint32_t running = 0;
    for (uint32_t i = 0; i < 32; i++) {
      CHECK_EQ_INT(ir_mc_nibbles_below(words, i), running);
      running += counts[i];
    }
    uint32_t mask = test_rand(), prefix = test_rand() % 1000, seen = 0;
    for (uint32_t bit = 0; bit < 32; bit++) {
      if ((mask >> bit) & 1u) CHECK_EQ_INT(ir_mc_edge_rank(mask, prefix, bit), prefix + seen);
      seen += (mask >> bit) & 1u;
    }
  }
}

/* ---- Closed surfaces ------------------------------------------------------------------------------- */
static void check_closed(shape_fn f, int n, long long euler) {
  float *v = make_shape(f, n);
  ir_extract_grid g = grid_f32(v, (size_t)n, (size_t)n, (size_t)n);
  ir_extract_desc d = one_surface(0.0f);
  ir_mesh m = extract_cpu(&g, &d, 0);
  mesh_topology t = mesh_check(&m);
  CHECK(m.triangle_count > 0);
  CHECK_EQ_INT(t.bad_index, 0);
  CHECK_EQ_INT(t.edges_not_two, 0);
  CHECK_EQ_INT(t.misoriented, 0);
  CHECK_EQ_INT(t.euler, euler);
  CHECK_EQ_INT(t.degenerate, 0);
  CHECK_EQ_INT(t.unused, 0);
  CHECK_EQ_INT(duplicate_positions(&m), 0);
  /* A closed triangle mesh: F = 2 (V - chi). */
  CHECK_EQ_INT((long long)m.triangle_count, 2 * ((long long)m.vertex_count - euler));
  /* Positions within half a voxel of the analytic surface, normals unit and pointing out. */
  double worst = 0, worst_len = 0;
  size_t outward = 0;
  for (size_t i = 0; i < m.vertex_count; i++) {
    const float *p = m.positions + 3 * i, *nn = m.normals + 3 * i;
    worst = fmax(worst, fabs(f(p[0], p[1], p[2], n)));
    double len = sqrt((double)nn[0] * nn[0] + (double)nn[1] * nn[1] + (double)nn[2] * nn[2]);
    worst_len = fmax(worst_len, fabs(len - 1.0));
    /* Outward: the field drops along the normal. */
    double h = 0.25;
    outward += f(p[0] + h * nn[0], p[1] + h * nn[1], p[2] + h * nn[2], n) < f(p[0], p[1], p[2], n);
  }
  CHECK_MSG(worst < 0.5, "a vertex lies %g voxels from the surface", worst);
  CHECK_MSG(worst_len < 1e-5, "a normal is %g off unit length", worst_len);
  CHECK_EQ_INT(outward, m.vertex_count);
  /* Triangles wound counter-clockwise from outside: their right-handed normal agrees with the
   * vertex normals. */
  size_t agree = 0;
  for (size_t i = 0; i < m.triangle_count; i++) {
    const float *a = m.positions + 3 * (size_t)m.triangles[3 * i], *b = m.positions + 3 * (size_t)m.triangles[3 * i + 1],
                *c = m.positions + 3 * (size_t)m.triangles[3 * i + 2], *nn = m.normals + 3 * (size_t)m.triangles[3 * i];
    double u[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, w[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
    double x[3] = {u[1] * w[2] - u[2] * w[1], u[2] * w[0] - u[0] * w[2], u[0] * w[1] - u[1] * w[0]};
    agree += x[0] * nn[0] + x[1] * nn[1] + x[2] * nn[2] > 0;
  }
  CHECK_EQ_INT(agree, m.triangle_count);
  size_t dims[3] = {(size_t)n, (size_t)n, (size_t)n};
  mc_count count = independent_count(v, IR_VOXEL_FLOAT32, dims, 0.0f);
  CHECK_EQ_INT(m.vertex_count, count.vertices);
  CHECK_EQ_INT(m.triangle_count, count.triangles);
  ir_mesh_free(&m);
  free(v);
}

static void test_sphere_is_closed_with_euler_2(void) { check_closed(shape_sphere, 40, 2); }
static void test_torus_is_closed_with_euler_0(void) { check_closed(shape_torus, 48, 0); }
static void test_two_spheres_are_closed_with_euler_4(void) { check_closed(shape_two_spheres, 44, 4); }

/* ---- Ties and ambiguous faces ------------------------------------------------------------------------ */
/* Values 0..2 with isovalue 1: every third voxel ties, and random corners make every ambiguous
 * face occur. The zero border closes every surface, so every edge must be shared by two
 * triangles: the face rule is the same in both cells of a face. */
static void test_ties_give_no_duplicate_vertex_and_no_degenerate_triangle(void) {
  size_t dims[3] = {37, 21, 50}; /* not multiples of the 16-point bricks */
  uint8_t *v = make_random_u8(dims, 3, true);
  ir_extract_grid g = {.voxels = v, .dims = {dims[0], dims[1], dims[2]}, .type = IR_VOXEL_UINT8};
  for (int iso = 1; iso <= 2; iso++) {
    ir_extract_desc d = one_surface((float)iso);
    ir_mesh m = extract_cpu(&g, &d, 0);
    mesh_topology t = mesh_check(&m);
    CHECK(m.triangle_count > 1000);
    CHECK_EQ_INT(t.edges_not_two, 0);
    CHECK_EQ_INT(t.misoriented, 0);
    CHECK_EQ_INT(t.degenerate, 0);
    CHECK_EQ_INT(t.unused, 0);
    CHECK_EQ_INT(duplicate_positions(&m), 0);
    /* Ties: a vertex next to a voxel equal to the isovalue sits IR_MC_TIE_MARGIN from it. */
    size_t at_margin = 0;
    for (size_t i = 0; i < 3 * m.vertex_count; i++) {
      float frac = m.positions[i] - floorf(m.positions[i]);
      at_margin += frac == IR_MC_TIE_MARGIN || frac == 1.0f - IR_MC_TIE_MARGIN;
    }
    CHECK(at_margin > 0);
    mc_count count = independent_count(v, IR_VOXEL_UINT8, dims, (float)iso);
    CHECK_EQ_INT(m.vertex_count, count.vertices);
    CHECK_EQ_INT(m.triangle_count, count.triangles);
    ir_mesh_free(&m);
  }
  free(v);
}

/* The same random volume, open at the borders: counts still match, and the only edges not shared
 * by two triangles are on the grid's faces. */
static void test_open_surface_counts_match_the_independent_count(void) {
  size_t dims[3] = {33, 17, 18};
  uint8_t *v = make_random_u8(dims, 4, false);
  ir_extract_grid g = {.voxels = v, .dims = {dims[0], dims[1], dims[2]}, .type = IR_VOXEL_UINT8};
  ir_extract_desc d = one_surface(1.5f);
  ir_mesh m = extract_cpu(&g, &d, 0);
  mc_count count = independent_count(v, IR_VOXEL_UINT8, dims, 1.5f);
  CHECK_EQ_INT(m.vertex_count, count.vertices);
  CHECK_EQ_INT(m.triangle_count, count.triangles);
  mesh_topology t = mesh_check(&m);
  CHECK_EQ_INT(t.edges_not_two, t.edges_one);
  CHECK_EQ_INT(t.misoriented, 0);
  CHECK_EQ_INT(t.unused, 0);
  ir_mesh_free(&m);
  free(v);
}

static void test_threads_do_not_change_the_mesh(void) {
  float *v = make_shape(shape_torus, 36);
  ir_extract_grid g = grid_f32(v, 36, 36, 36);
  ir_extract_desc d = one_surface(0.5f);
  ir_mesh a = extract_cpu(&g, &d, 1), b = extract_cpu(&g, &d, 3);
  CHECK(mesh_equal(&a, &b, "1 thread against 3"));
  ir_mesh_free(&a);
  ir_mesh_free(&b);
  free(v);
}

/* ---- Grid placement, types ----------------------------------------------------------------------- */
static void test_spacing_and_origin_place_the_vertices(void) {
  float *v = make_shape(shape_sphere, 24);
  ir_extract_grid g = grid_f32(v, 24, 24, 24);
  ir_extract_desc d = one_surface(0.0f);
  ir_mesh unit = extract_cpu(&g, &d, 0);
  g.spacing[0] = 0.5f, g.spacing[1] = 2.0f, g.spacing[2] = 1.25f;
  g.origin[0] = -10.0f, g.origin[1] = 3.0f, g.origin[2] = 100.0f;
  ir_mesh placed = extract_cpu(&g, &d, 0);
  CHECK_EQ_INT(placed.vertex_count, unit.vertex_count);
  double worst = 0;
  for (size_t i = 0; i < unit.vertex_count; i++)
    for (int k = 0; k < 3; k++)
      worst = fmax(worst, fabs(placed.positions[3 * i + k] - (g.origin[k] + unit.positions[3 * i + k] * g.spacing[k])));
  CHECK(worst < 1e-4);
  CHECK(memcmp(placed.triangles, unit.triangles, unit.triangle_count * 12) == 0);
  ir_mesh_free(&unit);
  ir_mesh_free(&placed);
  free(v);
}

static void test_integer_types_give_the_float_mesh(void) {
  size_t dims[3] = {20, 19, 18};
  uint8_t *v8 = make_random_u8(dims, 200, true);
  size_t n = dims[0] * dims[1] * dims[2];
  uint16_t *v16 = malloc(n * 2);
  int16_t *s16 = malloc(n * 2);
  float *f = malloc(n * 4);
  for (size_t i = 0; i < n; i++) v16[i] = v8[i], s16[i] = (int16_t)(v8[i] - 100), f[i] = v8[i];
  ir_extract_grid g = {.voxels = f, .dims = {dims[0], dims[1], dims[2]}, .type = IR_VOXEL_FLOAT32};
  ir_extract_desc d = one_surface(99.5f);
  ir_mesh ref = extract_cpu(&g, &d, 0);
  g.voxels = v8, g.type = IR_VOXEL_UINT8;
  ir_mesh m8 = extract_cpu(&g, &d, 0);
  g.voxels = v16, g.type = IR_VOXEL_UINT16;
  ir_mesh m16 = extract_cpu(&g, &d, 0);
  CHECK(mesh_equal(&ref, &m8, "uint8 against float"));
  CHECK(mesh_equal(&ref, &m16, "uint16 against float"));
  g.voxels = s16, g.type = IR_VOXEL_INT16;
  d.isovalues[0] = -0.5f;
  ir_mesh ms = extract_cpu(&g, &d, 0);
  CHECK_EQ_INT(ms.triangle_count, ref.triangle_count);
  ir_mesh_free(&ref), ir_mesh_free(&m8), ir_mesh_free(&m16), ir_mesh_free(&ms);
  free(v8), free(v16), free(s16), free(f);
}

static void test_isovalue_outside_the_data_gives_an_empty_mesh(void) {
  float *v = make_shape(shape_sphere, 20);
  ir_extract_grid g = grid_f32(v, 20, 20, 20);
  ir_extract_desc d = one_surface(1000.0f);
  ir_mesh m = extract_cpu(&g, &d, 0);
  CHECK_EQ_INT(m.vertex_count, 0);
  CHECK_EQ_INT(m.triangle_count, 0);
  CHECK_EQ_INT(m.surface_count, 1);
  ir_mesh_free(&m);
  /* A grid one point thick has no cells. */
  g.dims[2] = 1;
  d.isovalues[0] = 0.0f;
  m = extract_cpu(&g, &d, 0);
  CHECK_EQ_INT(m.triangle_count, 0);
  ir_mesh_free(&m);
  free(v);
}

/* ---- Clipping, non-finite voxels ------------------------------------------------------------------ */
/* Triangles a cell-by-cell count finds in the kept cells (no clip test inside the count itself). */
static size_t kept_cell_triangles(const ir_mesh *full, const float *v, int n, const ir_mc_rules *r) {
  (void)full;
  uint64_t cases[256];
  CHECK(ir_mc_build_cases(cases));
  size_t count = 0;
  for (int z = 0; z + 1 < n; z++)
    for (int y = 0; y + 1 < n; y++)
      for (int x = 0; x + 1 < n; x++) {
        if (!ir_mc_clip_keeps(r, (uint32_t)x, (uint32_t)y, (uint32_t)z)) continue;
        int c = 0;
        for (int k = 0; k < 8; k++) {
          uint32_t o[3];
          ir_mc_corner_offset(k, o);
          c |= v[(x + o[0]) + (size_t)n * ((y + o[1]) + (size_t)n * (z + o[2]))] >= 0.0f ? 1 << k : 0;
        }
        count += (size_t)ir_mc_case_triangles(cases[c]);
      }
  return count;
}

static void test_clip_box_and_plane_keep_the_cells_inside(void) {
  const int n = 40;
  float *v = make_shape(shape_sphere, n);
  ir_extract_grid g = grid_f32(v, (size_t)n, (size_t)n, (size_t)n);
  g.spacing[0] = g.spacing[1] = 1.0f, g.spacing[2] = 2.0f;
  ir_extract_desc d = one_surface(0.0f);
  ir_mesh full = extract_cpu(&g, &d, 0);
  /* Box: the lower half along x (renderer voxel coordinates), and a plane keeping z_world <= 50. */
  d.clip_box_on = true;
  d.clip_lo[0] = 0, d.clip_hi[0] = 20.0f, d.clip_lo[1] = 0, d.clip_hi[1] = 40.0f, d.clip_lo[2] = 0, d.clip_hi[2] = 40.0f;
  d.clip_plane_on = true;
  d.clip_plane[2] = -1.0f, d.clip_plane[3] = 50.0f;
  ir_mesh m = extract_cpu(&g, &d, 0);
  ir_mc_rules r = {.exact = 1, .box_on = 1, .box_lo = {0, 0, 0}, .box_hi = {20, 40, 40}, .plane_on = 1,
                   .plane = {0, 0, -1, 50}, .spacing = {1, 1, 2}};
  CHECK(m.triangle_count > 0 && m.triangle_count < full.triangle_count);
  CHECK_EQ_INT(m.triangle_count, kept_cell_triangles(&full, v, n, &r));
  mesh_topology t = mesh_check(&m);
  CHECK_EQ_INT(t.unused, 0);
  CHECK_EQ_INT(t.degenerate, 0);
  CHECK_EQ_INT(t.misoriented, 0);
  CHECK(t.edges_one > 0); /* cut open */
  for (size_t i = 0; i < m.vertex_count; i++) {
    /* Grid point p is at renderer voxel coordinate p + 0.5; kept cells' centres lie in the box. */
    CHECK(m.positions[3 * i] + 0.5f <= 21.0f);
    CHECK(m.positions[3 * i + 2] * 1.0f + 0.5f * 2.0f <= 52.0f);
  }
  ir_mesh_free(&m);
  ir_mesh_free(&full);
  free(v);
}

static void test_non_finite_voxels_void_their_cells(void) {
  const int n = 32;
  float *v = make_shape(shape_sphere, n);
  /* A NaN slab through the sphere and an infinity on its surface. */
  for (int y = 0; y < n; y++)
    for (int x = 0; x < n; x++) v[x + n * (y + n * 16)] = NAN;
  v[16 + n * (16 + n * 5)] = INFINITY;
  ir_extract_grid g = grid_f32(v, (size_t)n, (size_t)n, (size_t)n);
  ir_extract_desc d = one_surface(0.0f);
  ir_mesh m = extract_cpu(&g, &d, 0);
  CHECK(m.triangle_count > 0);
  mesh_topology t = mesh_check(&m);
  CHECK_EQ_INT(t.unused, 0);
  CHECK_EQ_INT(t.degenerate, 0);
  CHECK_EQ_INT(t.misoriented, 0);
  for (size_t i = 0; i < 3 * m.vertex_count; i++) CHECK(isfinite(m.positions[i]) && isfinite(m.normals[i]));
  for (size_t i = 0; i < m.vertex_count; i++) {
    float z = m.positions[3 * i + 2];
    CHECK(z <= 15.0f || z >= 17.0f); /* no cell touching the slab */
  }
  ir_mesh_free(&m);
  free(v);
}

/* ---- Several surfaces, values, colours ---------------------------------------------------------------- */
static void test_surfaces_are_appended_in_order(void) {
  float *v = make_shape(shape_sphere, 30);
  ir_extract_grid g = grid_f32(v, 30, 30, 30);
  ir_extract_desc d = one_surface(2.0f);
  ir_mesh a = extract_cpu(&g, &d, 0);
  d.isovalues[0] = -3.0f;
  ir_mesh b = extract_cpu(&g, &d, 0);
  d.surface_count = 2;
  d.isovalues[0] = 2.0f, d.isovalues[1] = -3.0f;
  ir_mesh both = extract_cpu(&g, &d, 0);
  CHECK_EQ_INT(both.surface_count, 2);
  CHECK_EQ_INT(both.vertex_count, a.vertex_count + b.vertex_count);
  CHECK_EQ_INT(both.triangle_count, a.triangle_count + b.triangle_count);
  CHECK_EQ_INT(both.surface_vertex_start[1], a.vertex_count);
  CHECK_EQ_INT(both.surface_triangle_start[1], a.triangle_count);
  CHECK_EQ_INT(both.surface_vertex_start[2], both.vertex_count);
  CHECK(memcmp(both.positions, a.positions, a.vertex_count * 12) == 0);
  CHECK(memcmp(both.positions + 3 * a.vertex_count, b.positions, b.vertex_count * 12) == 0);
  CHECK(memcmp(both.triangles, a.triangles, a.triangle_count * 12) == 0);
  bool shifted = true;
  for (size_t i = 0; i < 3 * b.triangle_count; i++)
    shifted = shifted && both.triangles[3 * a.triangle_count + i] == b.triangles[i] + a.vertex_count;
  CHECK(shifted);
  CHECK(both.values[0] == 2.0f && both.values[both.vertex_count - 1] == -3.0f);
  ir_mesh_free(&a), ir_mesh_free(&b), ir_mesh_free(&both);
  free(v);
}

static void test_values_and_colours(void) {
  const int n = 28;
  float *v = make_shape(shape_sphere, n);
  ir_extract_grid g = grid_f32(v, (size_t)n, (size_t)n, (size_t)n);
  ir_extract_desc d = one_surface(0.0f);
  d.values = IR_EXTRACT_VALUES_GRADIENT;
  d.colors = IR_EXTRACT_COLORS_MAP;
  float grey[6] = {0, 0, 0, 1, 1, 1};
  d.colormap = grey, d.colormap_size = 2;
  d.color_range[0] = 0.0f, d.color_range[1] = 2.0f;
  ir_mesh m = extract_cpu(&g, &d, 0);
  CHECK(m.colors != NULL);
  for (size_t i = 0; i < m.vertex_count; i++) {
    /* A distance field: |gradient| is about 1 near the surface, so mid-grey. */
    CHECK_NEAR(m.values[i], 1.0, 0.1);
    int expect = (int)(m.values[i] / 2.0f * 255.0f + 0.5f);
    CHECK(abs((int)m.colors[4 * i] - expect) <= 1 && m.colors[4 * i + 3] == 255);
  }
  ir_mesh_free(&m);
  /* The colour grid's value at the vertex: here the field itself plus 10, so 10 at the surface. */
  float *c = malloc(sizeof(float) * (size_t)n * n * n);
  for (size_t i = 0; i < (size_t)n * n * n; i++) c[i] = v[i] + 10.0f;
  ir_extractor *ex = NULL;
  char err[IR_ERR_LEN];
  ir_extractor_desc xd = {.device = IR_EXTRACT_CPU};
  CHECK(ir_extractor_create(&xd, &ex, err) == IR_OK);
  CHECK(ir_extractor_set_grid(ex, &g, err) == IR_OK);
  ir_extract_grid cg = grid_f32(c, (size_t)n, (size_t)n, (size_t)n);
  CHECK_MSG(ir_extractor_set_color_grid(ex, &cg, err) == IR_OK, "%s", err);
  d.values = IR_EXTRACT_VALUES_COLOR_GRID;
  d.colors = IR_EXTRACT_COLORS_SURFACE;
  d.surface_rgba[0][0] = 1.0f, d.surface_rgba[0][3] = 0.5f;
  CHECK(ir_extract(ex, &d, &m, NULL, err) == IR_OK);
  for (size_t i = 0; i < m.vertex_count; i++) {
    CHECK_NEAR(m.values[i], 10.0, 0.01);
    CHECK(m.colors[4 * i] == 255 && m.colors[4 * i + 1] == 0 && m.colors[4 * i + 3] == 128);
  }
  ir_mesh_free(&m);
  cg.dims[0] = 5;
  CHECK(ir_extractor_set_color_grid(ex, &cg, err) == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "differ from the grid");
  ir_extractor_destroy(ex);
  free(c);
  free(v);
}

/* scikit-image's vertex values recomputed from each vertex's position alone, in double: the
 * largest max(iso, corners) - min(iso, corners) over the cells around the edge the vertex sits on
 * (the axis whose coordinate is farthest from a whole number). */
static double local_range_from_position(const float *v, int n, const float pos[3], double iso) {
  double t[3], best = -1.0;
  int axis = 0;
  for (int k = 0; k < 3; k++) {
    t[k] = pos[k];
    double frac = t[k] - floor(t[k]), away = frac < 0.5 ? frac : 1.0 - frac;
    if (away > best) best = away, axis = k;
  }
  long at[3];
  for (int k = 0; k < 3; k++) at[k] = (long)(k == axis ? floor(t[k]) : nearbyint(t[k]));
  int b = (axis + 1) % 3, c = (axis + 2) % 3;
  double largest = 0.0;
  for (int ob = -1; ob <= 0; ob++)
    for (int oc = -1; oc <= 0; oc++) {
      long cell[3];
      cell[axis] = at[axis], cell[b] = at[b] + ob, cell[c] = at[c] + oc;
      bool inside = true;
      for (int k = 0; k < 3; k++) inside = inside && cell[k] >= 0 && cell[k] + 1 < n;
      if (!inside) continue;
      double lo = iso, hi = iso;
      for (int corner = 0; corner < 8; corner++) {
        long x = cell[0] + (corner & 1), y = cell[1] + ((corner >> 1) & 1), z = cell[2] + ((corner >> 2) & 1);
        double value = v[(size_t)x + (size_t)n * ((size_t)y + (size_t)n * (size_t)z)];
        lo = value < lo ? value : lo;
        hi = value > hi ? value : hi;
      }
      largest = hi - lo > largest ? hi - lo : largest;
    }
  return largest;
}

/* IR_EXTRACT_VALUES_LOCAL_RANGE equals the range recomputed from the positions, on a torus cut by
 * the grid's faces (cells missing on one side of boundary edges) and with two surfaces. */
static void test_local_range_values(void) {
  int n = 20;
  float *v = make_shape(shape_torus, n);
  for (int k = 0; k < n * n; k++) v[k] = 2.0f; /* the z = 0 plane inside both: edges on the grid's faces cross */
  ir_extract_grid g = grid_f32(v, (size_t)n, (size_t)n, (size_t)n);
  ir_extract_desc d = one_surface(0.0f);
  d.surface_count = 2, d.isovalues[1] = 1.25f;
  d.values = IR_EXTRACT_VALUES_LOCAL_RANGE;
  ir_mesh m = extract_cpu(&g, &d, 0);
  CHECK(m.vertex_count > 100);
  size_t worst = 0;
  double worst_error = 0.0;
  for (int s = 0; s < m.surface_count; s++)
    for (size_t i = m.surface_vertex_start[s]; i < m.surface_vertex_start[s + 1]; i++) {
      double want = local_range_from_position(v, n, m.positions + 3 * i, d.isovalues[s]);
      double error = fabs(m.values[i] - want);
      if (error > worst_error) worst_error = error, worst = i;
      CHECK(m.values[i] > 0.0f);
    }
  CHECK_MSG(worst_error <= 1e-6, "vertex %zu: value %g, recomputed %g", worst, (double)m.values[worst],
            local_range_from_position(v, n, m.positions + 3 * worst, 0.0));
  ir_mesh_free(&m);
  free(v);
}

/* axes_zyx and flip_winding: the same mesh, positions and normals with x and z swapped, each
 * triangle's corners reversed; the other arrays untouched. */
static void test_array_axes_layout(void) {
  int n = 18;
  float *v = make_shape(shape_torus, n);
  ir_extract_grid g = grid_f32(v, (size_t)n, (size_t)n, (size_t)n);
  ir_extract_desc d = one_surface(0.0f);
  d.values = IR_EXTRACT_VALUES_GRADIENT;
  ir_mesh a = extract_cpu(&g, &d, 0);
  d.axes_zyx = true, d.flip_winding = true;
  ir_mesh b = extract_cpu(&g, &d, 0);
  CHECK(a.vertex_count > 100 && a.vertex_count == b.vertex_count && a.triangle_count == b.triangle_count);
  bool same = a.vertex_count == b.vertex_count && a.triangle_count == b.triangle_count;
  for (size_t i = 0; same && i < a.vertex_count; i++)
    for (int k = 0; k < 3; k++)
      same = same && a.positions[3 * i + k] == b.positions[3 * i + 2 - k] && a.normals[3 * i + k] == b.normals[3 * i + 2 - k] &&
             a.values[i] == b.values[i];
  for (size_t t = 0; same && t < a.triangle_count; t++)
    for (int k = 0; k < 3; k++) same = same && a.triangles[3 * t + k] == b.triangles[3 * t + 2 - k];
  CHECK_MSG(same, "axes_zyx / flip_winding changed more than the layout");
  ir_mesh_free(&a);
  ir_mesh_free(&b);
  free(v);
}

/* ---- The caller's arrays (IR_MESH_CALLER) ---------------------------------------------------------------- */
/* An allocate function over malloc: it records what it was asked for and fails when told to. */
typedef struct caller_arrays {
  int calls;
  size_t vertices, triangles;
  bool colors, fail, forget_normals;
  ir_mesh_arrays given;
} caller_arrays;

static ir_status allocate_host(void *user, size_t vertices, size_t triangles, bool colors, ir_mesh_arrays *a,
                               char err[IR_ERR_LEN]) {
  caller_arrays *c = user;
  c->calls++;
  c->vertices = vertices, c->triangles = triangles, c->colors = colors;
  if (c->fail) {
    snprintf(err, IR_ERR_LEN, "no room for %zu vertices", vertices);
    return IR_ERR_RUNTIME;
  }
  a->positions = malloc((vertices ? vertices : 1) * 12);
  a->normals = c->forget_normals ? NULL : malloc((vertices ? vertices : 1) * 12);
  a->values = malloc((vertices ? vertices : 1) * 4);
  a->colors = colors ? malloc((vertices ? vertices : 1) * 4) : NULL;
  a->triangles = malloc((triangles ? triangles : 1) * 12);
  c->given = *a;
  return IR_OK;
}

static void free_given(caller_arrays *c) {
  free(c->given.positions), free(c->given.normals), free(c->given.values), free(c->given.colors);
  free(c->given.triangles);
  memset(&c->given, 0, sizeof c->given);
}

static void test_caller_arrays_hold_the_host_mesh(void) {
  const int n = 30;
  float *v = make_shape(shape_sphere, n);
  ir_extract_grid g = grid_f32(v, (size_t)n, (size_t)n, (size_t)n);
  ir_extract_desc d = one_surface(2.0f);
  /* Three surfaces with colours and local values: every array, every offset. */
  d.surface_count = 3, d.isovalues[1] = -3.0f, d.isovalues[2] = 0.5f;
  d.values = IR_EXTRACT_VALUES_LOCAL_RANGE;
  d.colors = IR_EXTRACT_COLORS_SURFACE;
  for (int s = 0; s < 3; s++) d.surface_rgba[s][s] = 1.0f, d.surface_rgba[s][3] = 1.0f;
  d.axes_zyx = true, d.flip_winding = true;
  ir_mesh host = extract_cpu(&g, &d, 0);
  CHECK(host.triangle_count > 1000);
  caller_arrays c = {0};
  d.output = IR_MESH_CALLER, d.allocate = allocate_host, d.allocate_user = &c;
  ir_mesh mine = extract_cpu(&g, &d, 3);
  CHECK_EQ_INT(c.calls, 1);
  CHECK_EQ_INT(c.vertices, host.vertex_count);
  CHECK_EQ_INT(c.triangles, host.triangle_count);
  CHECK(c.colors);
  CHECK(mine.borrowed && !mine.on_device && mine.positions == c.given.positions && mine.colors == c.given.colors);
  CHECK(mesh_equal(&host, &mine, "caller's arrays against host output"));
  ir_mesh_free(&mine); /* borrowed: the arrays stay */
  CHECK(mine.positions == NULL);
  free_given(&c);
  /* One surface, no colours. */
  d.surface_count = 1, d.colors = IR_EXTRACT_COLORS_NONE;
  ir_mesh_free(&host);
  d.output = IR_MESH_HOST;
  host = extract_cpu(&g, &d, 0);
  d.output = IR_MESH_CALLER;
  c.calls = 0;
  mine = extract_cpu(&g, &d, 0);
  CHECK_EQ_INT(c.calls, 1);
  CHECK(!c.colors && mine.colors == NULL);
  CHECK(mesh_equal(&host, &mine, "one surface into the caller's arrays"));
  free_given(&c);
  /* An empty mesh still asks, with zero counts. */
  d.isovalues[0] = 1e6f;
  c.calls = 0;
  mine = extract_cpu(&g, &d, 0);
  CHECK_EQ_INT(c.calls, 1);
  CHECK(c.vertices == 0 && c.triangles == 0 && mine.vertex_count == 0);
  free_given(&c);
  /* A failing allocator's status and message come back; a missing array is refused. */
  d.isovalues[0] = 2.0f;
  char err[IR_ERR_LEN];
  ir_extractor *ex = NULL;
  ir_extractor_desc xd = {.device = IR_EXTRACT_CPU};
  CHECK(ir_extractor_create(&xd, &ex, err) == IR_OK);
  CHECK(ir_extractor_set_grid(ex, &g, err) == IR_OK);
  c.fail = true;
  CHECK(ir_extract(ex, &d, &mine, NULL, err) == IR_ERR_RUNTIME);
  CHECK_STR_CONTAINS(err, "no room for");
  c.fail = false, c.forget_normals = true;
  CHECK(ir_extract(ex, &d, &mine, NULL, err) == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "no normals array");
  free_given(&c);
  d.allocate = NULL;
  CHECK(ir_extract(ex, &d, &mine, NULL, err) == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "no allocate function");
  ir_extractor_destroy(ex);
  ir_mesh_free(&host);
  free(v);
}

/* ---- Argument checks ------------------------------------------------------------------------------------ */
static void test_bad_arguments_are_refused_with_a_reason(void) {
  char err[IR_ERR_LEN];
  ir_extractor *ex = NULL;
  ir_extractor_desc xd = {.device = IR_EXTRACT_CPU};
  CHECK(ir_extractor_create(&xd, &ex, err) == IR_OK);
  float v[8] = {0, 1, 0, 1, 0, 1, 0, 1};
  ir_extract_desc d = one_surface(0.5f);
  ir_mesh m;
  CHECK(ir_extract(ex, &d, &m, NULL, err) == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "no grid");
  ir_extract_grid g = grid_f32(NULL, 2, 2, 2);
  CHECK(ir_extractor_set_grid(ex, &g, err) == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "no voxels");
  g.voxels = v;
  g.dims[1] = 0;
  CHECK(ir_extractor_set_grid(ex, &g, err) == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "dims");
  g.dims[1] = 2;
  g.spacing[0] = -1.0f;
  CHECK(ir_extractor_set_grid(ex, &g, err) == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "spacing");
  g.spacing[0] = 0.0f;
  g.device_pointer = true;
  CHECK(ir_extractor_set_grid(ex, &g, err) == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "GPU extractor");
  g.device_pointer = false;
  CHECK(ir_extractor_set_grid(ex, &g, err) == IR_OK);
  d.surface_count = 0;
  CHECK(ir_extract(ex, &d, &m, NULL, err) == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "surface_count");
  d.surface_count = 1;
  d.isovalues[0] = NAN;
  CHECK(ir_extract(ex, &d, &m, NULL, err) == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "finite");
  d.isovalues[0] = 0.5f;
  d.clip_box_on = true;
  CHECK(ir_extract(ex, &d, &m, NULL, err) == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "clip box");
  d.clip_box_on = false;
  d.clip_plane_on = true;
  CHECK(ir_extract(ex, &d, &m, NULL, err) == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "non-zero normal");
  d.clip_plane_on = false;
  d.colors = IR_EXTRACT_COLORS_MAP;
  CHECK(ir_extract(ex, &d, &m, NULL, err) == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "colour map");
  d.colors = IR_EXTRACT_COLORS_NONE;
  d.values = IR_EXTRACT_VALUES_COLOR_GRID;
  CHECK(ir_extract(ex, &d, &m, NULL, err) == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "colour grid");
  d.values = IR_EXTRACT_VALUES_ISOVALUE;
  d.output = IR_MESH_DEVICE;
  CHECK(ir_extract(ex, &d, &m, NULL, err) == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "GPU extractor");
  d.output = IR_MESH_HOST;
  d.method = IR_COMPACT_METHOD_COUNT;
  CHECK(ir_extract(ex, &d, &m, NULL, err) == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "compaction method");
  d.method = IR_COMPACT_REDZONE; /* the CPU ignores the method */
  CHECK(ir_extract(ex, &d, &m, NULL, err) == IR_OK);
  CHECK(m.triangle_count > 0);
  ir_mesh_free(&m);
  ir_extractor_destroy(ex);
}

int main(void) {
  RUN(test_case_table_uses_every_crossed_edge_once_per_loop);
  RUN(test_rank_helpers_match_running_counts);
  RUN(test_sphere_is_closed_with_euler_2);
  RUN(test_torus_is_closed_with_euler_0);
  RUN(test_two_spheres_are_closed_with_euler_4);
  RUN(test_ties_give_no_duplicate_vertex_and_no_degenerate_triangle);
  RUN(test_open_surface_counts_match_the_independent_count);
  RUN(test_threads_do_not_change_the_mesh);
  RUN(test_spacing_and_origin_place_the_vertices);
  RUN(test_integer_types_give_the_float_mesh);
  RUN(test_isovalue_outside_the_data_gives_an_empty_mesh);
  RUN(test_clip_box_and_plane_keep_the_cells_inside);
  RUN(test_non_finite_voxels_void_their_cells);
  RUN(test_surfaces_are_appended_in_order);
  RUN(test_values_and_colours);
  RUN(test_local_range_values);
  RUN(test_array_axes_layout);
  RUN(test_caller_arrays_hold_the_host_mesh);
  RUN(test_bad_arguments_are_refused_with_a_reason);
  return check_summary();
}
