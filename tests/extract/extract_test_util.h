/* Helpers of the extract tests: analytic volumes, mesh invariants (manifold, Euler characteristic,
 * degenerate triangles, unused vertices), an independent marching-cubes count, and comparisons of
 * two meshes byte for byte that say where they first differ. */
#ifndef INKRAY_TESTS_EXTRACT_UTIL_H
#define INKRAY_TESTS_EXTRACT_UTIL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extract/extract.h"

/* ---- Volumes ---------------------------------------------------------------------------------- */
/* n^3 float32, value = distance function of a shape, positive inside. */
typedef float (*shape_fn)(double x, double y, double z, int n);

static inline float shape_sphere(double x, double y, double z, int n) {
  double c = (n - 1) / 2.0, r = sqrt((x - c) * (x - c) + (y - c) * (y - c) + (z - c) * (z - c));
  return (float)(0.35 * n - r);
}

/* A torus around the z axis through the centre: major radius 0.28 n, minor 0.1 n. */
static inline float shape_torus(double x, double y, double z, int n) {
  double c = (n - 1) / 2.0, dx = x - c, dy = y - c, dz = z - c;
  double q = sqrt(dx * dx + dy * dy) - 0.28 * n;
  return (float)(0.1 * n - sqrt(q * q + dz * dz));
}

/* Two separate spheres of radius 0.18 n along x. */
static inline float shape_two_spheres(double x, double y, double z, int n) {
  double c = (n - 1) / 2.0, a = 0.27 * n;
  double r1 = sqrt((x - (c - a)) * (x - (c - a)) + (y - c) * (y - c) + (z - c) * (z - c));
  double r2 = sqrt((x - (c + a)) * (x - (c + a)) + (y - c) * (y - c) + (z - c) * (z - c));
  return (float)(0.18 * n - (r1 < r2 ? r1 : r2));
}

static inline float *make_shape(shape_fn f, int n) {
  float *v = (float *)malloc(sizeof(float) * (size_t)n * n * n);
  for (int z = 0; z < n; z++)
    for (int y = 0; y < n; y++)
      for (int x = 0; x < n; x++) v[x + (size_t)n * (y + (size_t)n * z)] = f(x, y, z, n);
  return v;
}

/* A deterministic pseudo-random generator (xorshift), the same on every machine. */
static uint32_t test_rand_state = 2463534242u;
static inline uint32_t test_rand(void) {
  test_rand_state ^= test_rand_state << 13;
  test_rand_state ^= test_rand_state >> 17;
  test_rand_state ^= test_rand_state << 5;
  return test_rand_state;
}

/* dims voxels of uint8 values in 0..levels-1, with a border of zeros one voxel wide when `closed`
 * (so every surface at an isovalue above 0 is closed). */
static inline uint8_t *make_random_u8(const size_t dims[3], int levels, bool closed) {
  size_t n = dims[0] * dims[1] * dims[2];
  uint8_t *v = (uint8_t *)malloc(n);
  for (size_t z = 0; z < dims[2]; z++)
    for (size_t y = 0; y < dims[1]; y++)
      for (size_t x = 0; x < dims[0]; x++) {
        bool border = x == 0 || y == 0 || z == 0 || x + 1 == dims[0] || y + 1 == dims[1] || z + 1 == dims[2];
        v[x + dims[0] * (y + dims[1] * z)] = closed && border ? 0 : (uint8_t)(test_rand() % (uint32_t)levels);
      }
  return v;
}

static inline ir_extract_grid grid_f32(const float *v, size_t nx, size_t ny, size_t nz) {
  ir_extract_grid g;
  memset(&g, 0, sizeof g);
  g.voxels = v;
  g.dims[0] = nx, g.dims[1] = ny, g.dims[2] = nz;
  g.type = IR_VOXEL_FLOAT32;
  return g;
}

/* ---- Mesh invariants ------------------------------------------------------------------------------ */
static inline int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

typedef struct mesh_topology {
  size_t edges;          /* distinct undirected edges */
  size_t edges_not_two;  /* edges not shared by exactly two triangles */
  size_t edges_one;      /* edges of one triangle (border of an open mesh) */
  size_t misoriented;    /* edges whose two triangles run it the same way (inconsistent winding) */
  long long euler;       /* V - E + F */
  size_t degenerate;     /* triangles with a repeated index or zero area */
  size_t unused;         /* vertices no triangle uses */
  size_t bad_index;      /* indices >= vertex_count */
} mesh_topology;

static inline mesh_topology mesh_check(const ir_mesh *m) {
  mesh_topology t;
  memset(&t, 0, sizeof t);
  size_t n = 3 * m->triangle_count;
  uint64_t *e = (uint64_t *)malloc((n ? n : 1) * sizeof *e);
  bool *used = (bool *)calloc(m->vertex_count ? m->vertex_count : 1, 1);
  for (size_t i = 0; i < m->triangle_count; i++) {
    const uint32_t *tri = m->triangles + 3 * i;
    bool bad = false;
    for (int k = 0; k < 3; k++)
      if (tri[k] >= m->vertex_count) bad = true;
    if (bad) {
      t.bad_index++;
      for (int k = 0; k < 3; k++) e[3 * i + k] = 0;
      continue;
    }
    for (int k = 0; k < 3; k++) {
      uint32_t a = tri[k], b = tri[(k + 1) % 3];
      used[a] = true;
      /* Low 32 bits: the smaller index; bit 63: the direction, so that sorting groups an edge's
       * uses and misoriented pairs show as two equal directions. */
      uint64_t lo = a < b ? a : b, hi = a < b ? b : a;
      e[3 * i + k] = (hi << 31 | lo) << 1 | (a < b ? 0u : 1u);
    }
    const float *p0 = m->positions + 3 * (size_t)tri[0], *p1 = m->positions + 3 * (size_t)tri[1],
                *p2 = m->positions + 3 * (size_t)tri[2];
    double u[3], w[3];
    for (int k = 0; k < 3; k++) u[k] = (double)p1[k] - p0[k], w[k] = (double)p2[k] - p0[k];
    double c[3] = {u[1] * w[2] - u[2] * w[1], u[2] * w[0] - u[0] * w[2], u[0] * w[1] - u[1] * w[0]};
    if (tri[0] == tri[1] || tri[1] == tri[2] || tri[0] == tri[2] || c[0] * c[0] + c[1] * c[1] + c[2] * c[2] == 0.0)
      t.degenerate++;
  }
  qsort(e, n, sizeof *e, cmp_u64);
  for (size_t i = 0; i < n;) {
    size_t j = i, forward = 0;
    while (j < n && e[j] >> 1 == e[i] >> 1) forward += (e[j] & 1u) == 0, j++;
    size_t uses = j - i;
    t.edges++;
    if (uses != 2) t.edges_not_two++;
    if (uses == 1) t.edges_one++;
    if (uses == 2 && forward != 1) t.misoriented++;
    i = j;
  }
  for (size_t v = 0; v < m->vertex_count; v++) t.unused += !used[v];
  t.euler = (long long)m->vertex_count - (long long)t.edges + (long long)m->triangle_count;
  free(e);
  free(used);
  return t;
}

/* Vertices at exactly the same position (after sorting). */
static inline int cmp_pos(const void *a, const void *b) { return memcmp(a, b, 3 * sizeof(float)); }
static inline size_t duplicate_positions(const ir_mesh *m) {
  float *p = (float *)malloc((m->vertex_count ? m->vertex_count : 1) * 3 * sizeof(float));
  memcpy(p, m->positions, m->vertex_count * 3 * sizeof(float));
  qsort(p, m->vertex_count, 3 * sizeof(float), cmp_pos);
  size_t dups = 0;
  for (size_t i = 1; i < m->vertex_count; i++) dups += memcmp(p + 3 * (i - 1), p + 3 * i, 3 * sizeof(float)) == 0;
  free(p);
  return dups;
}

/* ---- Comparing meshes ------------------------------------------------------------------------------- */
/* True when a and b are equal byte for byte; otherwise prints the first difference. */
static inline bool mesh_equal(const ir_mesh *a, const ir_mesh *b, const char *what) {
  if (a->vertex_count != b->vertex_count || a->triangle_count != b->triangle_count) {
    fprintf(stderr, "%s: counts differ: %zu vertices %zu triangles against %zu vertices %zu triangles\n", what,
            a->vertex_count, a->triangle_count, b->vertex_count, b->triangle_count);
    return false;
  }
  for (int s = 0; s <= a->surface_count; s++)
    if (a->surface_vertex_start[s] != b->surface_vertex_start[s] || a->surface_triangle_start[s] != b->surface_triangle_start[s]) {
      fprintf(stderr, "%s: surface %d starts differ\n", what, s);
      return false;
    }
  for (size_t i = 0; i < a->vertex_count; i++) {
    bool same = memcmp(a->positions + 3 * i, b->positions + 3 * i, 12) == 0 &&
                memcmp(a->normals + 3 * i, b->normals + 3 * i, 12) == 0 && memcmp(a->values + i, b->values + i, 4) == 0 &&
                (!a->colors || !b->colors || memcmp(a->colors + 4 * i, b->colors + 4 * i, 4) == 0);
    if (!same) {
      fprintf(stderr, "%s: first differing vertex %zu: pos %.9g %.9g %.9g / %.9g %.9g %.9g, normal %.9g %.9g %.9g / "
              "%.9g %.9g %.9g, value %.9g / %.9g\n", what, i, a->positions[3 * i], a->positions[3 * i + 1],
              a->positions[3 * i + 2], b->positions[3 * i], b->positions[3 * i + 1], b->positions[3 * i + 2],
              a->normals[3 * i], a->normals[3 * i + 1], a->normals[3 * i + 2], b->normals[3 * i], b->normals[3 * i + 1],
              b->normals[3 * i + 2], a->values[i], b->values[i]);
      return false;
    }
  }
  if ((a->colors == NULL) != (b->colors == NULL)) {
    fprintf(stderr, "%s: one mesh has colours, the other not\n", what);
    return false;
  }
  for (size_t i = 0; i < a->triangle_count; i++)
    if (memcmp(a->triangles + 3 * i, b->triangles + 3 * i, 12) != 0) {
      fprintf(stderr, "%s: first differing triangle %zu: %u %u %u / %u %u %u\n", what, i, a->triangles[3 * i],
              a->triangles[3 * i + 1], a->triangles[3 * i + 2], b->triangles[3 * i], b->triangles[3 * i + 1],
              b->triangles[3 * i + 2]);
      return false;
    }
  return true;
}

/* ---- An independent count --------------------------------------------------------------------------
 * Marching cubes counted cell by cell without the case table: vertices are the grid edges whose
 * ends are on different sides (inside: value >= iso); a cell's triangles are its crossed edges
 * minus twice its loops, the loops found by joining crossed edges through each face with a
 * union-find (a face with two crossed edges joins them; a face with four, whose diagonal corners
 * agree, joins the two edges around each outside corner: the face rule of case_table.c). */
typedef struct mc_count {
  size_t vertices, triangles;
} mc_count;

static inline int uf_find(int *parent, int i) {
  while (parent[i] != i) i = parent[i] = parent[parent[i]];
  return i;
}

static inline double count_voxel(const void *v, ir_voxel_type t, size_t i) {
  switch (t) {
  case IR_VOXEL_UINT8: return ((const uint8_t *)v)[i];
  case IR_VOXEL_UINT16: return ((const uint16_t *)v)[i];
  case IR_VOXEL_INT16: return ((const int16_t *)v)[i];
  default: return ((const float *)v)[i];
  }
}

static inline mc_count independent_count(const void *v, ir_voxel_type type, const size_t d[3], float iso) {
  /* Corners and the cube's faces written out here on their own, not taken from the module. */
  static const int corner[8][3] = {{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 1, 0}, {0, 0, 1}, {1, 0, 1}, {1, 1, 1}, {0, 1, 1}};
  static const int face[6][4] = {{0, 1, 2, 3}, {4, 5, 6, 7}, {0, 1, 5, 4}, {3, 2, 6, 7}, {0, 3, 7, 4}, {1, 2, 6, 5}};
  mc_count c = {0, 0};
  for (size_t z = 0; z < d[2]; z++)
    for (size_t y = 0; y < d[1]; y++)
      for (size_t x = 0; x < d[0]; x++) {
        size_t p[3] = {x, y, z};
        double f0 = count_voxel(v, type, x + d[0] * (y + d[1] * z));
        for (int a = 0; a < 3; a++) {
          size_t q[3] = {x, y, z};
          if (++q[a] >= d[a]) continue;
          double f1 = count_voxel(v, type, q[0] + d[0] * (q[1] + d[1] * q[2]));
          c.vertices += isfinite(f0) && isfinite(f1) && ((f0 >= iso) != (f1 >= iso));
        }
        if (x + 1 >= d[0] || y + 1 >= d[1] || z + 1 >= d[2]) continue;
        bool in[8];
        for (int k = 0; k < 8; k++)
          in[k] = count_voxel(v, type, (p[0] + corner[k][0]) + d[0] * ((p[1] + corner[k][1]) + d[1] * (p[2] + corner[k][2]))) >= iso;
        /* Cube edges as corner pairs (12 = 6 faces x 4 / 2 each); id by the sorted pair. */
        int parent[64], crossed[64] = {0};
        for (int i = 0; i < 64; i++) parent[i] = i;
        for (int f = 0; f < 6; f++) {
          int fe[4];
          bool fc[4];
          int n = 0;
          for (int k = 0; k < 4; k++) {
            int a = face[f][k], b = face[f][(k + 1) % 4];
            fe[k] = (a < b ? a : b) * 8 + (a < b ? b : a);
            fc[k] = in[a] != in[b];
            crossed[fe[k]] = fc[k];
            n += fc[k];
          }
          if (n == 2) {
            int first = -1;
            for (int k = 0; k < 4; k++)
              if (fc[k]) {
                if (first < 0) first = fe[k];
                else parent[uf_find(parent, fe[k])] = uf_find(parent, first);
              }
          } else if (n == 4) {
            for (int k = 0; k < 4; k++) /* corner face[f][(k+1)%4] lies between face edges k and k+1 */
              if (!in[face[f][(k + 1) % 4]]) parent[uf_find(parent, fe[k])] = uf_find(parent, fe[(k + 1) % 4]);
          }
        }
        int edges = 0, loops = 0;
        for (int i = 0; i < 64; i++)
          if (crossed[i]) edges++, loops += uf_find(parent, i) == i;
        c.triangles += (size_t)(edges - 2 * loops);
      }
  return c;
}

#endif
