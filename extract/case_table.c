/* The marching-cubes case table, built from one rule instead of typed in.
 *
 * For each of the 256 cases (bit k: corner k inside, value >= isovalue) the surface meets every
 * face of the cell in segments between the face's crossed edges. A face with two crossed edges has
 * one segment. A face with four (its diagonal corners agree: the ambiguous face of Lorensen &
 * Cline) takes the rule of this table: the two inside corners are joined across the face, each
 * outside corner is cut off by its own segment. Because a face's segments depend on that face's
 * four corners alone, the two cells sharing a face always cut it the same way: the mesh has no
 * holes (the 1987 table, used with complementary symmetry, decides the face differently in the two
 * cells and leaves some). The segments, directed so that the inside lies on the same side, chain
 * into closed loops around the cell. Each loop is cut into triangles, wound counter-clockwise seen
 * from outside, by the first triangulation (in a fixed search order) none of whose diagonals joins
 * two edges of one face of the cell: such a diagonal would lie in the face, where the neighbour's
 * triangles can lay the same segment, and the mesh would fold onto itself there (an edge of four
 * triangles). Loops are taken in order of their lowest edge.
 *
 * The result keeps Bourke's corner and edge numbering (marching.cuh); the cases without an
 * ambiguous face triangulate the same loops as the classic table, at most 5 triangles a case.
 */
#include <string.h>

#include "extract/extract_internal.h"

/* Each face's corners in counter-clockwise order seen from outside the cell. */
static const int face_corners[6][4] = {
    {0, 4, 7, 3}, /* x = 0 */
    {1, 2, 6, 5}, /* x = 1 */
    {0, 1, 5, 4}, /* y = 0 */
    {3, 7, 6, 2}, /* y = 1 */
    {0, 3, 2, 1}, /* z = 0 */
    {4, 5, 6, 7}, /* z = 1 */
};

/* The cell edge between two corners (they share an edge). */
static int edge_between(int a, int b) {
  for (int e = 0; e < 12; e++) {
    uint32_t o[3], ca[3], cb[3];
    int axis = ir_mc_edge(e, o);
    ir_mc_corner_offset(a, ca);
    ir_mc_corner_offset(b, cb);
    uint32_t hi[3] = {o[0], o[1], o[2]};
    hi[axis] += 1;
    bool ab = memcmp(ca, o, sizeof o) == 0 && memcmp(cb, hi, sizeof hi) == 0;
    bool ba = memcmp(cb, o, sizeof o) == 0 && memcmp(ca, hi, sizeof hi) == 0;
    if (ab || ba) return e;
  }
  return -1;
}

/* Whether two cell edges lie on a common face of the cell. */
static bool share_face(int e1, int e2) {
  uint32_t o1[3], o2[3];
  int a1 = ir_mc_edge(e1, o1), a2 = ir_mc_edge(e2, o2);
  if (a1 == a2) {
    int b = (a1 + 1) % 3, c = (a1 + 2) % 3;
    return o1[b] == o2[b] || o1[c] == o2[c];
  }
  int third = 3 - a1 - a2;
  return o1[third] == o2[third];
}

/* Triangulates the part loop[i..j] of a loop whose side (i, j) is given: the triangle on that side
 * takes an apex m between them, tried in order, and the two parts either side follow. A new side
 * that is a diagonal (not a side of the loop) must not join two edges of one face. Appends the
 * triangles to tri[] (3 entries each) and returns false when no such triangulation exists. */
static bool triangulate(const int *loop, int i, int j, int *tri, int *count) {
  if (j - i < 2) return true;
  int saved = *count;
  for (int m = i + 1; m < j; m++) {
    if ((m - i >= 2 && share_face(loop[i], loop[m])) || (j - m >= 2 && share_face(loop[m], loop[j]))) continue;
    tri[3 * *count] = loop[i], tri[3 * *count + 1] = loop[m], tri[3 * *count + 2] = loop[j];
    (*count)++;
    if (triangulate(loop, i, m, tri, count) && triangulate(loop, m, j, tri, count)) return true;
    *count = saved;
  }
  return false;
}

/* The entry of case c; false when a loop has no triangulation (never, for the 256 cases: the
 * tests check it). */
static bool build_case(int c, uint64_t *out) {
  bool inside[8];
  for (int k = 0; k < 8; k++) inside[k] = (c >> k) & 1;
  int next[12];
  for (int e = 0; e < 12; e++) next[e] = -1;
  for (int f = 0; f < 6; f++) {
    const int *fc = face_corners[f];
    int crossed[4], n = 0;
    for (int k = 0; k < 4; k++)
      if (inside[fc[k]] != inside[fc[(k + 1) % 4]]) crossed[n++] = k;
    /* Segments as pairs of face-edge positions (face edge k runs from fc[k] to fc[k + 1]). */
    int seg[2][2], segs = 0;
    if (n == 2) {
      seg[0][0] = crossed[0], seg[0][1] = crossed[1], segs = 1;
    } else if (n == 4) {
      for (int k = 0; k < 4; k++)
        if (!inside[fc[(k + 1) % 4]]) seg[segs][0] = k, seg[segs][1] = (k + 1) % 4, segs++; /* cut off */
    }
    for (int s = 0; s < segs; s++) {
      int k1 = seg[s][0], k2 = seg[s][1];
      int e1 = edge_between(fc[k1], fc[(k1 + 1) % 4]), e2 = edge_between(fc[k2], fc[(k2 + 1) % 4]);
      /* Directed so that, walking the loop, the inside stays on the same side on every face. */
      if (inside[fc[k1]]) next[e2] = e1;
      else next[e1] = e2;
    }
  }
  uint64_t entry = 0;
  int triangles = 0, slot = 0;
  bool used[12] = {false};
  for (int start = 0; start < 12; start++) {
    if (next[start] < 0 || used[start]) continue;
    int loop[12], len = 0;
    for (int e = start; !used[e]; e = next[e]) used[e] = true, loop[len++] = e;
    int tri[3 * 10], count = 0;
    if (!triangulate(loop, 0, len - 1, tri, &count)) return false;
    for (int i = 0; i < 3 * count; i++) entry |= (uint64_t)tri[i] << (4 + 4 * slot++);
    triangles += count;
  }
  *out = entry | (uint64_t)triangles;
  return true;
}

bool ir_mc_build_cases(uint64_t cases[256]) {
  bool ok = true;
  for (int c = 0; c < 256; c++) ok = build_case(c, &cases[c]) && ok;
  return ok;
}
