/* The walk's skip distances on the host (skip.cuh): the CPU renderer's, and the reference the
 * GPU's map is tested against. */
#include "render/skip.cuh"

/* One axis's pass over the whole grid: axis 0, 1 or 2. */
static void skip_pass(const uint8_t *in, uint8_t *out, const uint32_t cells[3], int axis) {
  size_t nx = cells[0], ny = cells[1], nz = cells[2];
  size_t stride = axis == 0 ? 1 : axis == 1 ? nx : nx * ny;
  int n = (int)cells[axis];
  for (size_t z = 0; z < nz; z++)
    for (size_t y = 0; y < ny; y++)
      for (size_t x = 0; x < nx; x++) {
        size_t c = x + nx * (y + ny * z);
        int i = (int)(axis == 0 ? x : axis == 1 ? y : z);
        out[c] = ir_skip_pass_at(in, c - (size_t)i * stride, stride, n, i);
      }
}

void ir_skip_map_host(const ir_brick_range *ranges, const uint32_t cells[3], const ir_iso_set *iso, uint8_t *map,
                      uint8_t *tmp) {
  size_t n = (size_t)cells[0] * cells[1] * cells[2];
  /* seed -> tmp, x -> map, y -> tmp, z -> map: the GPU's order (skip_map.cu), no copy at the end */
  for (size_t c = 0; c < n; c++) tmp[c] = ir_skip_seed(ranges[c], iso);
  skip_pass(tmp, map, cells, 0);
  skip_pass(map, tmp, cells, 1);
  skip_pass(tmp, map, cells, 2);
}
