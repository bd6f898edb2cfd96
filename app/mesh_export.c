/* The surfaces a look draws, as a mesh: the extraction description for a look (isovalues, clip box
 * and plane with the renderer's meaning, colours) and the extract-and-write step, shared by
 * `inkray extract`, the window's E key and headless runs' --mesh. */
#include <string.h>
#include <time.h>

#include "app/app.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

int app_mesh_desc(const app_look *look, const ir_volume *v, int iso_count, const double *isovalues, bool surface_colors,
                  const float range[2], ir_extract_desc *d) {
  memset(d, 0, sizeof *d);
  ir_frame_desc f;
  memset(&f, 0, sizeof f);
  app_look_apply(look, v, &f); /* the renderer's clip box in voxel coordinates; palette colours */
  if (f.surface_count > 0) {
    for (int k = 0; k < f.surface_count && d->surface_count < IR_EXTRACT_MAX_SURFACES; k++) {
      if (!(f.surfaces[k].opacity > 0.0f)) continue; /* hidden in the frame: not in the mesh either */
      int s = d->surface_count++;
      d->isovalues[s] = f.surfaces[k].isovalue;
      memcpy(d->surface_rgba[s], f.surfaces[k].color, 3 * sizeof(float));
      d->surface_rgba[s][3] = f.surfaces[k].opacity;
    }
  } else {
    for (int k = 0; k < iso_count && d->surface_count < IR_EXTRACT_MAX_SURFACES; k++) {
      int s = d->surface_count++;
      d->isovalues[s] = (float)isovalues[k];
      ir_surface_default_color(s, d->surface_rgba[s]);
      d->surface_rgba[s][3] = 1.0f;
    }
  }
  d->clip_box_on = look->clip_box_on;
  memcpy(d->clip_lo, f.clip_lo, sizeof d->clip_lo);
  memcpy(d->clip_hi, f.clip_hi, sizeof d->clip_hi);
  d->clip_plane_on = f.clip_plane_on;
  memcpy(d->clip_plane, f.clip_plane, sizeof d->clip_plane);
  if (look->color_by != IR_COLOR_SURFACE) {
    d->values = look->color_by == IR_COLOR_GRADIENT ? IR_EXTRACT_VALUES_GRADIENT : IR_EXTRACT_VALUES_COLOR_GRID;
    d->colors = IR_EXTRACT_COLORS_MAP;
    d->colormap = ir_colormap_table(look->colormap);
    d->colormap_size = IR_COLORMAP_SIZE;
    d->color_range[0] = range[0];
    d->color_range[1] = range[1];
  } else if (surface_colors) {
    d->colors = IR_EXTRACT_COLORS_SURFACE;
  }
  return d->surface_count;
}

ir_status app_mesh_save(ir_extractor *ex, const ir_extract_desc *d, const char *path, app_mesh_saved *out,
                        char err[IR_ERR_LEN]) {
  memset(out, 0, sizeof *out);
  ir_mesh m;
  ir_extract_stats stats;
  /* A GPU mesh stays on the device: the writer downloads it chunk by chunk while it writes. */
  ir_extract_desc desc = *d;
  desc.output = ir_extractor_device(ex) == IR_EXTRACT_GPU ? IR_MESH_DEVICE : IR_MESH_HOST;
  double t0 = now_ms();
  ir_status status = ir_extract(ex, &desc, &m, &stats, err);
  if (status != IR_OK) return status;
  double t1 = now_ms();
  status = ir_mesh_write(&m, path, err);
  out->vertices = m.vertex_count;
  out->triangles = m.triangle_count;
  out->extract_ms = t1 - t0;
  out->write_ms = now_ms() - t1;
  ir_mesh_free(&m);
  return status;
}

ir_status app_mesh_set_volume(ir_extractor *ex, const ir_volume *v, const ir_volume *color_volume, char err[IR_ERR_LEN]) {
  ir_status status = ir_extractor_set_volume(ex, v, err);
  if (status != IR_OK || !color_volume || !color_volume->voxels) return status;
  ir_extract_grid cg = {.voxels = color_volume->voxels, .type = color_volume->type,
                        .dims = {color_volume->dims[0], color_volume->dims[1], color_volume->dims[2]}};
  return ir_extractor_set_color_grid(ex, &cg, err);
}
