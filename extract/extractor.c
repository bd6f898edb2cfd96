/* The extractor: argument checks, the grid, and dispatch to the CPU reference or the GPU.
 *
 * Every check that needs no device runs here, before anything is allocated or uploaded, so that bad
 * input gets one line naming the field and what is accepted, also on a machine without a GPU.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/volume.h"
#include "extract/extract_internal.h"
#include "transfer/transfer.h"

ir_status ir_extractor_create(const ir_extractor_desc *desc, ir_extractor **out, char err[IR_ERR_LEN]) {
  ir_extractor_desc zero = {0};
  if (!desc) desc = &zero;
  if (!out) {
    snprintf(err, IR_ERR_LEN, "ir_extractor_create: no place for the extractor (out is NULL)");
    return IR_ERR_INPUT;
  }
  *out = NULL;
  if (desc->device != IR_EXTRACT_GPU && desc->device != IR_EXTRACT_CPU) {
    snprintf(err, IR_ERR_LEN, "ir_extractor_create: unknown device %d; use IR_EXTRACT_GPU or IR_EXTRACT_CPU",
             (int)desc->device);
    return IR_ERR_INPUT;
  }
  if (desc->cpu_threads < 0) {
    snprintf(err, IR_ERR_LEN, "ir_extractor_create: cpu_threads %d; use 0 (all cores) or a positive count",
             desc->cpu_threads);
    return IR_ERR_INPUT;
  }
  ir_extractor *ex = calloc(1, sizeof *ex);
  if (!ex) {
    snprintf(err, IR_ERR_LEN, "out of host memory for an extractor");
    return IR_ERR_RUNTIME;
  }
  ex->device = desc->device;
  ex->threads = ir_mc_thread_count(desc->cpu_threads);
  ex->pinned_mesh = desc->pinned_mesh && desc->device == IR_EXTRACT_GPU;
  if (!ir_mc_build_cases(ex->cases)) {
    snprintf(err, IR_ERR_LEN, "internal error: the marching-cubes case table could not be built");
    free(ex);
    return IR_ERR_RUNTIME;
  }
  if (ex->device == IR_EXTRACT_GPU) {
    ir_status status = ir_gpu_extract_create(ex, err);
    if (status != IR_OK) {
      free(ex);
      return status;
    }
  }
  *out = ex;
  return IR_OK;
}

void ir_extractor_destroy(ir_extractor *ex) {
  if (!ex) return;
  if (ex->device == IR_EXTRACT_GPU) ir_gpu_extract_destroy(ex);
  free(ex->ranges);
  free(ex);
}

ir_extract_device ir_extractor_device(const ir_extractor *ex) { return ex->device; }

cudaStream_t ir_extractor_stream(const ir_extractor *ex) {
  return ex && ex->device == IR_EXTRACT_GPU ? ir_gpu_extract_stream(ex) : NULL;
}

/* ---- Grids ---------------------------------------------------------------------------------------- */
static ir_status check_grid(const ir_extractor *ex, const ir_extract_grid *g, const char *what, char err[IR_ERR_LEN]) {
  if (!g->voxels) {
    snprintf(err, IR_ERR_LEN, "%s: no voxels (voxels is NULL)", what);
    return IR_ERR_INPUT;
  }
  if ((unsigned)g->type >= IR_VOXEL_TYPE_COUNT) {
    snprintf(err, IR_ERR_LEN, "%s: unknown voxel type %d; use uint8, uint16, int16 or float32", what, (int)g->type);
    return IR_ERR_INPUT;
  }
  for (int k = 0; k < 3; k++) {
    /* 2^20 per axis, as the volume loaders allow; the GPU's 32-bit point indices need less than
     * 2^32 grid points along each axis anyway. */
    if (g->dims[k] < 1 || g->dims[k] > ((size_t)1 << 20)) {
      snprintf(err, IR_ERR_LEN, "%s: dims %zux%zux%zu: each must be from 1 to 1048576", what, g->dims[0], g->dims[1],
               g->dims[2]);
      return IR_ERR_INPUT;
    }
  }
  bool no_spacing = g->spacing[0] == 0.0f && g->spacing[1] == 0.0f && g->spacing[2] == 0.0f;
  for (int k = 0; k < 3; k++) {
    if (!no_spacing && !(isfinite(g->spacing[k]) && g->spacing[k] > 0.0f)) {
      snprintf(err, IR_ERR_LEN, "%s: spacing %g,%g,%g: each must be a positive finite number (or all 0 for 1,1,1)",
               what, (double)g->spacing[0], (double)g->spacing[1], (double)g->spacing[2]);
      return IR_ERR_INPUT;
    }
    if (!isfinite(g->origin[k])) {
      snprintf(err, IR_ERR_LEN, "%s: origin %g,%g,%g is not finite", what, (double)g->origin[0], (double)g->origin[1],
               (double)g->origin[2]);
      return IR_ERR_INPUT;
    }
  }
  if (g->device_pointer && ex->device != IR_EXTRACT_GPU) {
    snprintf(err, IR_ERR_LEN, "%s: device voxels need a GPU extractor; this one runs on the CPU", what);
    return IR_ERR_INPUT;
  }
  return IR_OK;
}

ir_status ir_extractor_set_grid(ir_extractor *ex, const ir_extract_grid *grid, char err[IR_ERR_LEN]) {
  if (!ex || !grid) {
    snprintf(err, IR_ERR_LEN, "ir_extractor_set_grid: %s is NULL", ex ? "grid" : "extractor");
    return IR_ERR_INPUT;
  }
  ir_status status = check_grid(ex, grid, "grid", err);
  if (status != IR_OK) return status;
  ex->have_grid = false;
  ex->color_voxels = NULL;
  ir_mc_grid_of(grid, &ex->grid);
  ex->brick_count = (size_t)ex->grid.bricks[0] * ex->grid.bricks[1] * ex->grid.bricks[2];
  if (ex->device == IR_EXTRACT_GPU) {
    status = ir_gpu_extract_set_grid(ex, grid, err);
    if (status != IR_OK) return status;
  } else {
    free(ex->ranges);
    ex->ranges = malloc(ex->brick_count * sizeof *ex->ranges);
    if (!ex->ranges) {
      snprintf(err, IR_ERR_LEN, "out of host memory for the value ranges of %zu bricks", ex->brick_count);
      return IR_ERR_RUNTIME;
    }
    ex->voxels = grid->voxels;
    ex->all_finite = ir_mc_ranges_host(&ex->grid, grid->voxels, ex->ranges, ex->threads);
  }
  ex->have_grid = true;
  return IR_OK;
}

ir_status ir_extractor_set_volume(ir_extractor *ex, const struct ir_volume *v, char err[IR_ERR_LEN]) {
  if (!v) {
    snprintf(err, IR_ERR_LEN, "ir_extractor_set_volume: volume is NULL");
    return IR_ERR_INPUT;
  }
  ir_extract_grid g = {.voxels = v->voxels, .type = v->type};
  for (int k = 0; k < 3; k++) {
    g.dims[k] = v->dims[k];
    g.spacing[k] = v->spacing[k];
    /* world_origin is voxel (0,0,0) of the file; a region starts origin[] voxels further on. */
    g.origin[k] = v->world_origin[k] + (float)v->origin[k] * v->spacing[k];
  }
  return ir_extractor_set_grid(ex, &g, err);
}

ir_status ir_extractor_set_color_grid(ir_extractor *ex, const ir_extract_grid *grid, char err[IR_ERR_LEN]) {
  if (!ex) {
    snprintf(err, IR_ERR_LEN, "ir_extractor_set_color_grid: extractor is NULL");
    return IR_ERR_INPUT;
  }
  if (grid) {
    ir_status status = check_grid(ex, grid, "colour grid", err);
    if (status != IR_OK) return status;
    if (!ex->have_grid) {
      snprintf(err, IR_ERR_LEN, "colour grid given before the grid; call ir_extractor_set_grid first");
      return IR_ERR_INPUT;
    }
    for (int k = 0; k < 3; k++)
      if (grid->dims[k] != ex->grid.dims[k]) {
        snprintf(err, IR_ERR_LEN, "colour grid: dims %zux%zux%zu differ from the grid's %ux%ux%u", grid->dims[0],
                 grid->dims[1], grid->dims[2], ex->grid.dims[0], ex->grid.dims[1], ex->grid.dims[2]);
        return IR_ERR_INPUT;
      }
  }
  if (ex->device == IR_EXTRACT_GPU) return ir_gpu_extract_set_color_grid(ex, grid, err);
  ex->color_voxels = grid ? grid->voxels : NULL;
  ex->color_type = grid ? (int)grid->type : 0;
  return IR_OK;
}

/* ---- Extraction ------------------------------------------------------------------------------------- */
static ir_status build_job(const ir_extractor *ex, const ir_extract_desc *d, ir_mc_job *job, char err[IR_ERR_LEN]) {
  memset(job, 0, sizeof *job);
  if (d->surface_count < 1 || d->surface_count > IR_EXTRACT_MAX_SURFACES) {
    snprintf(err, IR_ERR_LEN, "surface_count %d: extract from 1 to %d surfaces", d->surface_count,
             IR_EXTRACT_MAX_SURFACES);
    return IR_ERR_INPUT;
  }
  job->surface_count = d->surface_count;
  for (int s = 0; s < d->surface_count; s++) {
    if (!isfinite(d->isovalues[s])) {
      snprintf(err, IR_ERR_LEN, "isovalue %d is %g; give a finite number", s + 1, (double)d->isovalues[s]);
      return IR_ERR_INPUT;
    }
    job->isovalues[s] = d->isovalues[s];
    job->surface_rgba[s] = ir_mc_rgba(d->surface_rgba[s]);
  }
  ir_mc_rules *r = &job->rules;
  r->box_on = d->clip_box_on;
  r->plane_on = d->clip_plane_on;
  for (int k = 0; k < 3; k++) {
    r->box_lo[k] = d->clip_lo[k];
    r->box_hi[k] = d->clip_hi[k];
    r->spacing[k] = ex->grid.spacing[k];
    if (d->clip_box_on && !(isfinite(d->clip_lo[k]) && isfinite(d->clip_hi[k]) && d->clip_lo[k] < d->clip_hi[k])) {
      snprintf(err, IR_ERR_LEN, "clip box %g..%g along axis %d: give finite bounds, the first below the second",
               (double)d->clip_lo[k], (double)d->clip_hi[k], k);
      return IR_ERR_INPUT;
    }
  }
  memcpy(r->plane, d->clip_plane, sizeof r->plane);
  if (d->clip_plane_on) {
    bool finite = isfinite(r->plane[0]) && isfinite(r->plane[1]) && isfinite(r->plane[2]) && isfinite(r->plane[3]);
    if (!finite || (r->plane[0] == 0.0f && r->plane[1] == 0.0f && r->plane[2] == 0.0f)) {
      snprintf(err, IR_ERR_LEN, "clip plane %g,%g,%g,%g: give finite numbers and a non-zero normal",
               (double)r->plane[0], (double)r->plane[1], (double)r->plane[2], (double)r->plane[3]);
      return IR_ERR_INPUT;
    }
  }
  r->exact = r->box_on || r->plane_on || !ex->all_finite;
  if ((unsigned)d->values > IR_EXTRACT_VALUES_LOCAL_RANGE) {
    snprintf(err, IR_ERR_LEN, "values %d: use isovalue, gradient, colour grid or local range", (int)d->values);
    return IR_ERR_INPUT;
  }
  if (d->values == IR_EXTRACT_VALUES_COLOR_GRID && !ex->color_voxels) {
    snprintf(err, IR_ERR_LEN, "values from the colour grid, but no colour grid was given (ir_extractor_set_color_grid)");
    return IR_ERR_INPUT;
  }
  if ((unsigned)d->colors > IR_EXTRACT_COLORS_MAP) {
    snprintf(err, IR_ERR_LEN, "colors %d: use none, surface or map", (int)d->colors);
    return IR_ERR_INPUT;
  }
  if (d->colors == IR_EXTRACT_COLORS_MAP && (!d->colormap || d->colormap_size < 2)) {
    snprintf(err, IR_ERR_LEN, "colours from a colour map, but no map was given (colormap with colormap_size >= 2)");
    return IR_ERR_INPUT;
  }
  if (d->colors == IR_EXTRACT_COLORS_MAP && !(isfinite(d->color_range[0]) && isfinite(d->color_range[1]))) {
    snprintf(err, IR_ERR_LEN, "colour range %g..%g: give two finite numbers", (double)d->color_range[0],
             (double)d->color_range[1]);
    return IR_ERR_INPUT;
  }
  job->values = d->values;
  job->colors = d->colors;
  job->colormap = d->colormap;
  job->colormap_size = d->colormap_size;
  job->color_range[0] = d->color_range[0];
  job->color_range[1] = d->color_range[1];
  if ((unsigned)d->method >= IR_COMPACT_METHOD_COUNT) {
    snprintf(err, IR_ERR_LEN, "compaction method %d: unknown (ir_compact_methods lists them)", (int)d->method);
    return IR_ERR_INPUT;
  }
  job->method = d->method;
  if (d->output != IR_MESH_HOST && d->output != IR_MESH_DEVICE && d->output != IR_MESH_CALLER) {
    snprintf(err, IR_ERR_LEN, "output %d: use IR_MESH_HOST, IR_MESH_DEVICE or IR_MESH_CALLER", (int)d->output);
    return IR_ERR_INPUT;
  }
  if (d->output == IR_MESH_CALLER && !d->allocate) {
    snprintf(err, IR_ERR_LEN, "output into the caller's arrays (IR_MESH_CALLER), but no allocate function was given");
    return IR_ERR_INPUT;
  }
  if (d->output == IR_MESH_DEVICE && ex->device != IR_EXTRACT_GPU) {
    snprintf(err, IR_ERR_LEN, "a mesh in device buffers needs the GPU extractor; this one runs on the CPU");
    return IR_ERR_INPUT;
  }
  job->output = d->output;
  job->allocate = d->allocate;
  job->allocate_user = d->allocate_user;
  job->axes_zyx = d->axes_zyx;
  job->flip_winding = d->flip_winding;
  return IR_OK;
}

ir_status ir_mc_caller_arrays(const ir_mc_job *job, size_t vertices, size_t triangles, ir_mesh *mesh,
                              char err[IR_ERR_LEN]) {
  ir_mesh_arrays a;
  memset(&a, 0, sizeof a);
  err[0] = '\0';
  ir_status status = job->allocate(job->allocate_user, vertices, triangles, job->colors != IR_EXTRACT_COLORS_NONE,
                                   &a, err);
  if (status != IR_OK) {
    if (!err[0]) snprintf(err, IR_ERR_LEN, "the allocate function failed (status %d) without a message", (int)status);
    return status;
  }
  const char *missing = NULL;
  if (vertices && !a.positions) missing = "positions";
  else if (vertices && !a.normals) missing = "normals";
  else if (vertices && !a.values) missing = "values";
  else if (vertices && job->colors != IR_EXTRACT_COLORS_NONE && !a.colors) missing = "colors";
  else if (triangles && !a.triangles) missing = "triangles";
  if (missing) {
    snprintf(err, IR_ERR_LEN, "the allocate function gave no %s array for a mesh of %zu vertices and %zu triangles",
             missing, vertices, triangles);
    return IR_ERR_INPUT;
  }
  mesh->positions = a.positions, mesh->normals = a.normals, mesh->values = a.values, mesh->triangles = a.triangles;
  mesh->colors = job->colors != IR_EXTRACT_COLORS_NONE ? a.colors : NULL;
  mesh->borrowed = true;
  mesh->vertex_count = vertices;
  mesh->triangle_count = triangles;
  return IR_OK;
}

void ir_mesh_free(ir_mesh *m) {
  if (!m) return;
  if (m->borrowed) {
    /* the caller's arrays (IR_MESH_CALLER): theirs to free */
  } else if (m->pinned) {
    ir_xfer_host_free(m->positions);
    ir_xfer_host_free(m->normals);
    ir_xfer_host_free(m->values);
    ir_xfer_host_free(m->colors);
    ir_xfer_host_free(m->triangles);
  } else if (!m->on_device) {
    free(m->positions);
    free(m->normals);
    free(m->values);
    free(m->colors);
    free(m->triangles);
  }
  memset(m, 0, sizeof *m);
}

ir_status ir_extract(ir_extractor *ex, const ir_extract_desc *desc, ir_mesh *mesh, ir_extract_stats *stats,
                     char err[IR_ERR_LEN]) {
  double t0 = ir_mc_now_ms();
  if (!ex || !desc || !mesh) {
    snprintf(err, IR_ERR_LEN, "ir_extract: %s is NULL", !ex ? "extractor" : !desc ? "desc" : "mesh");
    return IR_ERR_INPUT;
  }
  memset(mesh, 0, sizeof *mesh);
  if (stats) memset(stats, 0, sizeof *stats);
  if (!ex->have_grid) {
    snprintf(err, IR_ERR_LEN, "ir_extract: no grid; call ir_extractor_set_grid first");
    return IR_ERR_INPUT;
  }
  ir_mc_job job;
  ir_status status = build_job(ex, desc, &job, err);
  if (status != IR_OK) return status;
  mesh->surface_count = job.surface_count;
  mesh->on_device = job.output == IR_MESH_DEVICE || (job.output == IR_MESH_CALLER && ex->device == IR_EXTRACT_GPU);
  if (stats) stats->bricks = ex->brick_count;
  /* A grid one point thick along an axis has no cells, so no surface (the caller still gets its
   * arrays, empty, as from any other empty mesh). */
  if (ex->grid.dims[0] < 2 || ex->grid.dims[1] < 2 || ex->grid.dims[2] < 2) {
    status = job.output == IR_MESH_CALLER ? ir_mc_caller_arrays(&job, 0, 0, mesh, err) : IR_OK;
    if (status != IR_OK) ir_mesh_free(mesh);
    if (stats) stats->total_ms = stats->device_ms = ir_mc_now_ms() - t0;
    return status;
  }
  status = ex->device == IR_EXTRACT_GPU ? ir_gpu_extract(ex, &job, mesh, stats, err)
                                        : ir_cpu_extract(ex, &job, mesh, stats, err);
  if (status != IR_OK) {
    ir_mesh_free(mesh);
    return status;
  }
  if (stats) {
    stats->total_ms = ir_mc_now_ms() - t0;
    if (ex->device == IR_EXTRACT_CPU) stats->device_ms = stats->total_ms;
  }
  return IR_OK;
}

ir_status ir_marching_cubes(const ir_extract_grid *grid, float isovalue, ir_extract_device device, ir_mesh *mesh,
                            char err[IR_ERR_LEN]) {
  ir_extractor *ex = NULL;
  ir_extractor_desc d = {.device = device};
  ir_status status = ir_extractor_create(&d, &ex, err);
  if (status != IR_OK) return status;
  status = ir_extractor_set_grid(ex, grid, err);
  if (status == IR_OK) {
    ir_extract_desc e = {.surface_count = 1, .isovalues = {isovalue}};
    status = ir_extract(ex, &e, mesh, NULL, err);
  }
  ir_extractor_destroy(ex);
  return status;
}
