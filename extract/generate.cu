/* The writing half of a surface on the GPU: one thread per candidate point writes the vertices of
 * its edges, one thread per candidate cell writes its triangles. Both find every number they need
 * in the tables classification left, whatever order the compaction method put the candidates in:
 *
 *   vertex of local edge e of brick B  = vbase[B] + prefix[e / 32] + popc(mask[e / 32] below e)
 *   first triangle of cell c of brick B = tbase[B] + group prefix[c / 32] + nibbles below c
 *
 * (marching.cuh), so the mesh is the same for every method and run, and the CPU reference's. The
 * per-vertex and per-cell math is marching.cuh's, compiled with --fmad=false like the CPU's.
 */
#include "extract/gpu_internal.cuh"

template <int TYPE>
static __device__ __forceinline__ float voxel(const ir_mc_grid &g, const void *__restrict__ voxels, const uint32_t p[3]) {
  return ir_gx_load<TYPE>(voxels, ir_mc_index(&g, p[0], p[1], p[2]));
}

/* The same derivative as the CPU's derivative_at (cpu_extract.c). */
template <int TYPE>
static __device__ float derivative_at(const ir_mc_grid &g, const void *__restrict__ voxels, const uint32_t pt[3],
                                      int k, float f0) {
  uint32_t m[3] = {pt[0], pt[1], pt[2]}, q[3] = {pt[0], pt[1], pt[2]};
  bool has_m = pt[k] > 0, has_p = pt[k] + 1 < g.dims[k];
  m[k] -= has_m ? 1 : 0;
  q[k] += has_p ? 1 : 0;
  float fm = has_m ? voxel<TYPE>(g, voxels, m) : 0.0f;
  float fp = has_p ? voxel<TYPE>(g, voxels, q) : 0.0f;
  return ir_mc_derivative(fm, has_m, f0, fp, has_p, g.spacing[k]);
}

static __device__ float color_voxel(const ir_gx_mesh_out &m, const ir_mc_grid &g, const uint32_t p[3]) {
  size_t i = ir_mc_index(&g, p[0], p[1], p[2]);
  switch (m.color_type) {
  case IR_VOXEL_UINT8: return ir_gx_load<IR_VOXEL_UINT8>(m.color_voxels, i);
  case IR_VOXEL_UINT16: return ir_gx_load<IR_VOXEL_UINT16>(m.color_voxels, i);
  case IR_VOXEL_INT16: return ir_gx_load<IR_VOXEL_INT16>(m.color_voxels, i);
  default: return ir_gx_load<IR_VOXEL_FLOAT32>(m.color_voxels, i);
  }
}

/* IR_EXTRACT_VALUES_LOCAL_RANGE: the CPU's local_range (cpu_extract.c), operation for operation. */
template <int TYPE>
static __device__ float local_range(const ir_mc_grid &g, float iso, const void *__restrict__ voxels, const uint32_t a[3],
                                    int axis) {
  int b = (axis + 1) % 3, c = (axis + 2) % 3;
  float largest = 0.0f;
  for (int ob = -1; ob <= 0; ob++)
    for (int oc = -1; oc <= 0; oc++) {
      if ((ob < 0 && a[b] == 0) || (oc < 0 && a[c] == 0)) continue;
      uint32_t cell[3] = {a[0], a[1], a[2]};
      cell[b] = (uint32_t)((int64_t)a[b] + ob), cell[c] = (uint32_t)((int64_t)a[c] + oc);
      if (cell[0] + 1 >= g.dims[0] || cell[1] + 1 >= g.dims[1] || cell[2] + 1 >= g.dims[2]) continue;
      float lo = iso, hi = iso;
      for (int corner = 0; corner < 8; corner++) {
        const uint32_t q[3] = {cell[0] + (corner & 1), cell[1] + ((corner >> 1) & 1), cell[2] + ((corner >> 2) & 1)};
        float v = voxel<TYPE>(g, voxels, q);
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
      }
      largest = hi - lo > largest ? hi - lo : largest;
    }
  return largest;
}

/* The vertex on the edge leaving grid point a along `axis`: the CPU's write_vertex. */
template <int TYPE>
static __device__ void write_vertex(const ir_mc_grid &g, float iso, const void *__restrict__ voxels,
                                    const ir_gx_mesh_out &m, uint32_t id, const uint32_t a[3], int axis) {
  uint32_t b[3] = {a[0], a[1], a[2]};
  b[axis]++;
  float fa = voxel<TYPE>(g, voxels, a), fb = voxel<TYPE>(g, voxels, b);
  float t = ir_mc_edge_t(fa, fb, iso);
  ir_vec3 ga = ir_v3(derivative_at<TYPE>(g, voxels, a, 0, fa), derivative_at<TYPE>(g, voxels, a, 1, fa),
                     derivative_at<TYPE>(g, voxels, a, 2, fa));
  ir_vec3 gb = ir_v3(derivative_at<TYPE>(g, voxels, b, 0, fb), derivative_at<TYPE>(g, voxels, b, 1, fb),
                     derivative_at<TYPE>(g, voxels, b, 2, fb));
  ir_vec3 grad = ir_mc_lerp3(ga, gb, t);
  ir_vec3 pos = ir_mc_position(&g, a[0], a[1], a[2], axis, t), n = ir_mc_normal(grad);
  size_t i = (size_t)id;
  const int first = m.axes_zyx ? 2 : 0, last = 2 - first; /* where x and z go */
  m.positions[3 * i + first] = pos.x, m.positions[3 * i + 1] = pos.y, m.positions[3 * i + last] = pos.z;
  m.normals[3 * i + first] = n.x, m.normals[3 * i + 1] = n.y, m.normals[3 * i + last] = n.z;
  float value = iso;
  if (m.values_from == IR_EXTRACT_VALUES_GRADIENT) {
    value = sqrtf(ir_dot(grad, grad));
  } else if (m.values_from == IR_EXTRACT_VALUES_COLOR_GRID) {
    float ca = color_voxel(m, g, a), cb = color_voxel(m, g, b);
    value = ca + t * (cb - ca);
  } else if (m.values_from == IR_EXTRACT_VALUES_LOCAL_RANGE) {
    value = local_range<TYPE>(g, iso, voxels, a, axis);
  }
  m.values[i] = value;
  if (m.colors)
    m.colors[i] = m.colors_from == IR_EXTRACT_COLORS_MAP
                      ? ir_mc_map_color(m.colormap, m.colormap_size, value, m.color_range[0], m.color_range[1])
                      : m.surface_rgba;
}

template <int TYPE>
static __global__ void __launch_bounds__(IR_GX_GENERATE_THREADS)
    vertices_kernel(ir_mc_grid g, float iso, const void *__restrict__ voxels, ir_gx_tables t,
                    const uint32_t *__restrict__ points, uint32_t count, ir_gx_mesh_out m) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  uint32_t v = points[i], slot = v / IR_MC_BRICK_POINTS, l = v % IR_MC_BRICK_POINTS;
  uint32_t brick = t.active[slot], o[3];
  ir_gx_brick_origin(g, brick, o);
  uint32_t a[3] = {o[0] + l % IR_MC_BRICK, o[1] + l / IR_MC_BRICK % IR_MC_BRICK, o[2] + l / (IR_MC_BRICK * IR_MC_BRICK)};
  uint32_t base = m.vertex_offset + (uint32_t)t.vbase[brick];
  for (int axis = 0; axis < 3; axis++) {
    uint32_t e = ir_mc_local_edge(axis, l);
    uint2 word = t.edges[(size_t)slot * IR_MC_EDGE_WORDS + e / 32];
    if (!((word.x >> (e % 32)) & 1u)) continue;
    write_vertex<TYPE>(g, iso, voxels, m, base + ir_mc_edge_rank(word.x, word.y, e % 32), a, axis);
  }
}

/* Number (within the surface) of the vertex on the edge leaving grid point p along `axis`, from
 * the edge table of the brick that owns p. */
static __device__ __forceinline__ uint32_t vertex_number(const ir_mc_grid &g, const ir_gx_tables &t, uint32_t own_brick,
                                                         uint32_t own_slot, const uint32_t p[3], int axis) {
  uint32_t brick = ir_mc_brick_index(&g, p[0] / IR_MC_BRICK, p[1] / IR_MC_BRICK, p[2] / IR_MC_BRICK);
  uint32_t slot = brick == own_brick ? own_slot : t.slot_of[brick];
  uint32_t e = ir_mc_local_edge(axis, ir_mc_local_point(p[0] % IR_MC_BRICK, p[1] % IR_MC_BRICK, p[2] % IR_MC_BRICK));
  uint2 word = t.edges[(size_t)slot * IR_MC_EDGE_WORDS + e / 32];
  return (uint32_t)t.vbase[brick] + ir_mc_edge_rank(word.x, word.y, e % 32);
}

template <int TYPE>
static __global__ void __launch_bounds__(IR_GX_GENERATE_THREADS)
    triangles_kernel(ir_mc_grid g, float iso, const void *__restrict__ voxels, const uint64_t *__restrict__ cases,
                     ir_gx_tables t, const uint32_t *__restrict__ cells, uint32_t count, ir_gx_mesh_out m) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  uint32_t v = cells[i], slot = v / IR_MC_BRICK_POINTS, l = v % IR_MC_BRICK_POINTS;
  uint32_t brick = t.active[slot], o[3];
  ir_gx_brick_origin(g, brick, o);
  uint32_t p[3] = {o[0] + l % IR_MC_BRICK, o[1] + l / IR_MC_BRICK % IR_MC_BRICK, o[2] + l / (IR_MC_BRICK * IR_MC_BRICK)};
  int c = 0;
  for (int k = 0; k < 8; k++) {
    uint32_t d[3], q[3];
    ir_mc_corner_offset(k, d);
    for (int j = 0; j < 3; j++) q[j] = p[j] + d[j];
    c |= ir_mc_inside(voxel<TYPE>(g, voxels, q), iso) ? 1 << k : 0;
  }
  uint64_t entry = __ldg(cases + c);
  size_t group = (size_t)slot * IR_MC_CELL_GROUPS + l / 32;
  uint4 nib = t.cell_nibbles[group];
  const uint32_t words[4] = {nib.x, nib.y, nib.z, nib.w};
  uint32_t first = m.triangle_offset + (uint32_t)t.tbase[brick] + t.cell_prefix[group] + ir_mc_nibbles_below(words, l % 32);
  uint32_t *out = m.triangles + 3 * (size_t)first;
  for (int k = 0; k < 3 * ir_mc_case_triangles(entry); k++) {
    uint32_t off[3], q[3];
    int axis = ir_mc_edge(ir_mc_case_edge(entry, k), off);
    for (int j = 0; j < 3; j++) q[j] = p[j] + off[j];
    /* flip_winding: each triangle's corners in reverse order (c, b, a). */
    int at = m.flip_winding ? k - k % 3 + 2 - k % 3 : k;
    out[at] = m.vertex_offset + vertex_number(g, t, brick, slot, q, axis);
  }
}

cudaError_t ir_gx_launch_vertices(const ir_mc_grid &g, float iso, const void *voxels, const ir_gx_tables &t,
                                  const uint32_t *points, uint32_t count, const ir_gx_mesh_out &m,
                                  cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  unsigned grid = (count + IR_GX_GENERATE_THREADS - 1) / IR_GX_GENERATE_THREADS;
  switch (g.type) {
  case IR_VOXEL_UINT8: vertices_kernel<IR_VOXEL_UINT8><<<grid, IR_GX_GENERATE_THREADS, 0, stream>>>(g, iso, voxels, t, points, count, m); break;
  case IR_VOXEL_UINT16: vertices_kernel<IR_VOXEL_UINT16><<<grid, IR_GX_GENERATE_THREADS, 0, stream>>>(g, iso, voxels, t, points, count, m); break;
  case IR_VOXEL_INT16: vertices_kernel<IR_VOXEL_INT16><<<grid, IR_GX_GENERATE_THREADS, 0, stream>>>(g, iso, voxels, t, points, count, m); break;
  default: vertices_kernel<IR_VOXEL_FLOAT32><<<grid, IR_GX_GENERATE_THREADS, 0, stream>>>(g, iso, voxels, t, points, count, m); break;
  }
  return cudaGetLastError();
}

cudaError_t ir_gx_launch_triangles(const ir_mc_grid &g, float iso, const void *voxels, const uint64_t *cases,
                                   const ir_gx_tables &t, const uint32_t *cells, uint32_t count,
                                   const ir_gx_mesh_out &m, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  unsigned grid = (count + IR_GX_GENERATE_THREADS - 1) / IR_GX_GENERATE_THREADS;
  switch (g.type) {
  case IR_VOXEL_UINT8: triangles_kernel<IR_VOXEL_UINT8><<<grid, IR_GX_GENERATE_THREADS, 0, stream>>>(g, iso, voxels, cases, t, cells, count, m); break;
  case IR_VOXEL_UINT16: triangles_kernel<IR_VOXEL_UINT16><<<grid, IR_GX_GENERATE_THREADS, 0, stream>>>(g, iso, voxels, cases, t, cells, count, m); break;
  case IR_VOXEL_INT16: triangles_kernel<IR_VOXEL_INT16><<<grid, IR_GX_GENERATE_THREADS, 0, stream>>>(g, iso, voxels, cases, t, cells, count, m); break;
  default: triangles_kernel<IR_VOXEL_FLOAT32><<<grid, IR_GX_GENERATE_THREADS, 0, stream>>>(g, iso, voxels, cases, t, cells, count, m); break;
  }
  return cudaGetLastError();
}
