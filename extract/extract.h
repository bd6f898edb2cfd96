/* inkray extract module: isosurfaces of a scalar grid as welded triangle meshes (marching cubes).
 *
 * One call turns a grid and up to IR_EXTRACT_MAX_SURFACES isovalues into one mesh: a vertex on
 * every grid edge a surface crosses (welded: the cells around the edge share it), triangles
 * indexing them, per-vertex unit normals from the gradient, a value per vertex and optional RGBA8
 * colours. Two devices give the same mesh, byte for byte:
 *   GPU  the grid's 16^3-cell bricks whose value range holds no isovalue are skipped; the
 *        compaction module (compaction.h) compacts the active bricks, the crossed edges and the
 *        cells that have triangles, by any of its five methods, each in its natural form;
 *   CPU  the reference, on all cores.
 * The mesh is the same for every method and every run (docs/extract.md: numbering, case table).
 *
 * Conventions (docs/extract.md has the details):
 *   - grid: dims[0] x dims[1] x dims[2] voxels, x fastest; voxel (i, j, k) is the grid point at
 *     world position origin + (i, j, k) * spacing; a cell is the cube between 8 grid points;
 *   - inside is value >= isovalue (the renderer's rule); a NaN or infinite voxel is neither: the
 *     cells touching it have no triangles and its edges no vertices;
 *   - a vertex sits on its edge where the linear interpolation of the two voxel values equals
 *     the isovalue, moved at most 1/256 of the edge away from a grid point so that no two
 *     vertices coincide and no triangle has zero area (ties: a voxel equal to the isovalue);
 *   - normals point out of the inside (towards lower values), triangles wind counter-clockwise
 *     seen from outside (their right-handed normal points out too);
 *   - vertices are numbered brick by brick, triangles cell by cell (docs/extract.md), every
 *     index < 2^31, so the uint32 triangle indices read the same as int32 ones.
 *
 * Library functions never print or exit: they return an ir_status and fill `err` with one line.
 */
#ifndef INKRAY_EXTRACT_H
#define INKRAY_EXTRACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compaction/compaction.h"
#include "data/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define IR_EXTRACT_MAX_SURFACES 4

typedef enum ir_extract_device { IR_EXTRACT_GPU = 0, IR_EXTRACT_CPU } ir_extract_device;

/* ---- The grid: a plain array ------------------------------------------------------------------ */
typedef struct ir_extract_grid {
  const void *voxels;     /* dims[0]*dims[1]*dims[2] voxels of `type`, x fastest, host byte order */
  bool device_pointer;    /* voxels is a CUDA device pointer (GPU extractor only): used in place */
  size_t dims[3];
  ir_voxel_type type;
  float spacing[3];       /* world size of a voxel along x, y, z; all zero: 1, 1, 1 */
  float origin[3];        /* world position of voxel (0, 0, 0) */
} ir_extract_grid;

/* ---- The mesh ---------------------------------------------------------------------------------- */
typedef struct ir_mesh {
  size_t vertex_count, triangle_count;
  float *positions;    /* vertex_count x 3: world x, y, z */
  float *normals;      /* vertex_count x 3: unit, pointing out (0,0,0 where the gradient is 0) */
  float *values;       /* vertex_count: see ir_extract_values */
  uint8_t *colors;     /* vertex_count x 4 RGBA8, or NULL when no colours were asked for */
  uint32_t *triangles; /* triangle_count x 3 vertex indices */
  bool on_device;      /* the arrays are device pointers (IR_MESH_DEVICE; IR_MESH_CALLER on the GPU) */
  bool pinned;         /* host arrays from the pinned cache (ir_extractor_desc.pinned_mesh) */
  bool borrowed;       /* the arrays are the caller's (IR_MESH_CALLER): ir_mesh_free leaves them */
  int surface_count;
  /* Surface s owns vertices [surface_vertex_start[s], surface_vertex_start[s + 1]) and the
   * triangles [surface_triangle_start[s], surface_triangle_start[s + 1]). */
  size_t surface_vertex_start[IR_EXTRACT_MAX_SURFACES + 1];
  size_t surface_triangle_start[IR_EXTRACT_MAX_SURFACES + 1];
} ir_mesh;

/* Host meshes: frees the arrays (allocated by ir_extract; pinned ones go back to the cache they
 * came from). Device meshes and the caller's arrays (IR_MESH_CALLER): the arrays belong to the
 * extractor or the caller; this only clears the struct.
 * NULL and an empty struct are fine. */
void ir_mesh_free(ir_mesh *m);

/* ---- What to extract ----------------------------------------------------------------------------- */
typedef enum ir_extract_values {
  IR_EXTRACT_VALUES_ISOVALUE = 0, /* the isovalue of the vertex's surface */
  IR_EXTRACT_VALUES_GRADIENT,     /* the gradient magnitude, data units per world unit */
  IR_EXTRACT_VALUES_COLOR_GRID,   /* the colour grid (ir_extractor_set_color_grid) at the vertex */
  IR_EXTRACT_VALUES_LOCAL_RANGE,  /* scikit-image's vertex values: the largest value range,
                                     max(iso, corner max) - min(iso, corner min), of the (up to
                                     four) cells around the vertex's grid edge */
} ir_extract_values;

typedef enum ir_extract_colors {
  IR_EXTRACT_COLORS_NONE = 0,  /* mesh.colors = NULL */
  IR_EXTRACT_COLORS_SURFACE,   /* each surface's surface_rgba */
  IR_EXTRACT_COLORS_MAP,       /* the colour map at the vertex value over color_range, alpha 255 */
} ir_extract_colors;

typedef enum ir_mesh_output {
  IR_MESH_HOST = 0, /* host arrays allocated by ir_extract, the caller's to free (ir_mesh_free) */
  IR_MESH_DEVICE,   /* GPU: device arrays kept by the extractor, valid until its next ir_extract */
  IR_MESH_CALLER,   /* arrays the caller provides once the counts are known (ir_mesh_allocate_fn) */
} ir_mesh_output;

/* Where an IR_MESH_CALLER mesh goes: the caller's arrays, of the sizes ir_mesh_allocate_fn names. */
typedef struct ir_mesh_arrays {
  float *positions;    /* vertex_count x 3 */
  float *normals;      /* vertex_count x 3 */
  float *values;       /* vertex_count */
  uint8_t *colors;     /* vertex_count x 4 when colours were asked for; ignored otherwise */
  uint32_t *triangles; /* triangle_count x 3 */
} ir_mesh_arrays;

/* IR_MESH_CALLER: called once per ir_extract, after the count phase of every surface (the host
 * reads of the counts the extraction needs anyway) and before anything of the mesh is written,
 * with the mesh's totals (zero for an empty mesh: arrays may then be NULL). It fills `arrays`
 * with memory the extractor's device can write: device (or managed) memory on the extractor's
 * CUDA device for the GPU, host memory for the CPU. The GPU writes them on ir_extractor_stream:
 * memory from a stream-ordered allocator must be ready for it when the callback returns (make
 * that stream wait for the allocating one, cudaStreamWaitEvent, or synchronise it). ir_extract
 * returns once the mesh is written; the arrays stay the caller's (ir_mesh_free leaves them).
 * A status other than IR_OK (with `err` filled) stops the extraction and is returned. */
typedef ir_status (*ir_mesh_allocate_fn)(void *user, size_t vertex_count, size_t triangle_count, bool colors,
                                         ir_mesh_arrays *arrays, char err[IR_ERR_LEN]);

typedef struct ir_extract_desc {
  int surface_count;                          /* 1 .. IR_EXTRACT_MAX_SURFACES */
  float isovalues[IR_EXTRACT_MAX_SURFACES];   /* data units; the mesh holds the surfaces in this order */
  /* Clipping, as the renderer means it: a cell is kept when its centre lies in the box and on the
   * kept side of the plane (docs/extract.md). The box is in the renderer's voxel coordinates (the
   * grid spans [0, dims], voxel i's centre at i + 0.5: ir_frame_desc.clip_lo/hi); the plane keeps
   * the points x with n.x + d >= 0 in the renderer's world (the grid spans [0, dims * spacing]:
   * ir_frame_desc.clip_plane). */
  bool clip_box_on;
  float clip_lo[3], clip_hi[3];
  bool clip_plane_on;
  float clip_plane[4];
  ir_extract_values values;
  ir_extract_colors colors;
  float surface_rgba[IR_EXTRACT_MAX_SURFACES][4]; /* IR_EXTRACT_COLORS_SURFACE: RGBA 0..1 */
  const float *colormap;      /* IR_EXTRACT_COLORS_MAP: colormap_size RGB triples, 0..1, low values
                                 first, read with linear interpolation (render.h ir_colormap_table) */
  int colormap_size;          /* >= 2 */
  float color_range[2];       /* values mapped to the colour map's ends */
  ir_compact_method method;   /* GPU: the compaction method (zero: InK-Compact); the CPU ignores it */
  ir_mesh_output output;      /* host arrays (default), device arrays kept by the extractor (GPU), or
                                 the caller's arrays (either device) */
  ir_mesh_allocate_fn allocate; /* IR_MESH_CALLER: provides the arrays, called with allocate_user */
  void *allocate_user;
  /* Layout for callers whose arrays are indexed [z][y][x] (NumPy's C order): positions and
   * normals written as (z, y, x), and each triangle's vertices in reverse order (c, b, a), which
   * the mirror image of the axes needs to keep its side. Both are written so by the kernels that
   * write the mesh: no pass over it afterwards. Default (false): x, y, z and the table's order. */
  bool axes_zyx;
  bool flip_winding;
} ir_extract_desc;

/* What a call did and cost. Times in milliseconds. */
typedef struct ir_extract_stats {
  double total_ms;        /* host clock, the whole call */
  double device_ms;       /* GPU: CUDA events around the device work of all surfaces, the host's
                             read of the counts in between included; CPU: = total_ms */
  double count_ms;        /* GPU: brick test, classification, compaction and scans (events) */
  double generate_ms;     /* GPU: vertex and triangle kernels (events) */
  double download_ms;     /* GPU with host output: the device -> host copies */
  size_t bricks;          /* bricks of the grid (16^3 grid points each) */
  size_t active_bricks;   /* summed over the surfaces */
  size_t cells_with_triangles;
  bool grew;              /* GPU: buffers were (re)allocated in this call */
} ir_extract_stats;

/* ---- Extractor: keeps the grid and all GPU state between calls --------------------------------- */
typedef struct ir_extractor ir_extractor;

typedef struct ir_extractor_desc {
  ir_extract_device device; /* GPU by default */
  int cpu_threads;          /* CPU: 0 = all cores */
  /* GPU: host meshes in pinned (page-locked) memory from a cache the process keeps, which the
   * download writes directly at the link's speed; ir_mesh_free gives the arrays back to it. For
   * callers that extract again and again (the cache then allocates nothing); the default, plain
   * malloc'ed arrays filled through pinned staging buffers, suits one-off extractions. */
  bool pinned_mesh;
} ir_extractor_desc;

ir_status ir_extractor_create(const ir_extractor_desc *desc, ir_extractor **out, char err[IR_ERR_LEN]);
void ir_extractor_destroy(ir_extractor *ex);
ir_extract_device ir_extractor_device(const ir_extractor *ex);

/* The grid to extract from. GPU: host voxels are uploaded now (the caller may free them after);
 * device voxels are used in place and must outlive the extractor or the next call. CPU: the
 * voxels are referenced and must outlive the extractor or the next call. Computes the brick
 * value ranges. */
ir_status ir_extractor_set_grid(ir_extractor *ex, const ir_extract_grid *grid, char err[IR_ERR_LEN]);
/* The same from a loaded volume (data/volume.h): its voxels, spacing and world origin (moved to
 * the region's first voxel when only a region was read). */
struct ir_volume;
ir_status ir_extractor_set_volume(ir_extractor *ex, const struct ir_volume *v, char err[IR_ERR_LEN]);
/* The grid IR_EXTRACT_VALUES_COLOR_GRID reads (same dims as the grid; its spacing and origin are
 * ignored); NULL removes it. Same lifetime rules as ir_extractor_set_grid. */
ir_status ir_extractor_set_color_grid(ir_extractor *ex, const ir_extract_grid *grid, char err[IR_ERR_LEN]);

/* Extracts the mesh. Host output: the arrays are allocated here and belong to the caller
 * (ir_mesh_free). Device output (GPU): the arrays live in the extractor, valid until its next
 * ir_extract or its destruction; device buffers grow when a mesh needs more and are kept, so
 * repeated calls allocate nothing. A mesh that would not fit in GPU memory is refused
 * (IR_ERR_RUNTIME, saying how much it needs) before anything is allocated for it; an empty
 * mesh (no isovalue inside the data's range) is a valid result with zero counts. Caller output:
 * the mesh is written straight into the arrays desc->allocate provides (no copy); with several
 * surfaces the count phase of all but the last runs twice (the totals come first, the surfaces'
 * tables are kept for one at a time). Returns once the mesh is complete. `stats` may be NULL. */
ir_status ir_extract(ir_extractor *ex, const ir_extract_desc *desc, ir_mesh *mesh, ir_extract_stats *stats,
                     char err[IR_ERR_LEN]);

/* The CUDA stream the GPU extractor works on (NULL for the CPU), for callers that go on with the
 * device mesh on the GPU. */
cudaStream_t ir_extractor_stream(const ir_extractor *ex);

/* One-shot: one isovalue, no clipping, values = isovalue, no colours, host arrays; creates and
 * destroys an extractor (for bindings and small programs). */
ir_status ir_marching_cubes(const ir_extract_grid *grid, float isovalue, ir_extract_device device, ir_mesh *mesh,
                            char err[IR_ERR_LEN]);

/* ---- Mesh files ------------------------------------------------------------------------------------ */
typedef enum ir_mesh_format {
  IR_MESH_FORMAT_UNKNOWN = 0,
  IR_MESH_PLY, /* binary little-endian PLY: positions, normals, colours (if any), value; faces */
  IR_MESH_STL, /* binary STL: one facet per triangle with its geometric normal */
  IR_MESH_OBJ, /* Wavefront OBJ (text): v (with r g b when coloured), vn, f v//vn */
} ir_mesh_format;

/* The format named by the file's extension (.ply, .stl, .obj, any case). */
ir_mesh_format ir_mesh_format_of(const char *path);
/* Checks, before any work, that `path` names a known format and can be written: not a folder,
 * its folder exists and is writable. IR_ERR_INPUT with one line otherwise. */
ir_status ir_mesh_check_output(const char *path, char err[IR_ERR_LEN]);
/* Bytes the file of a mesh with these counts takes (PLY and STL; 0 for OBJ, whose size depends on
 * the numbers' text). */
size_t ir_mesh_file_bytes(ir_mesh_format format, size_t vertex_count, size_t triangle_count, bool colors);
/* Writes a mesh. The file is written under a temporary name in the same folder and renamed
 * into place once complete, so nothing half-written is ever left under `path`. An empty mesh
 * writes a valid empty file. A device mesh (IR_MESH_DEVICE, complete) is downloaded a chunk at a
 * time through pinned staging buffers while the chunks before are written: the same bytes as its
 * host copy would write, without a host copy of the mesh (STL: of its positions only). */
ir_status ir_mesh_write(const ir_mesh *m, const char *path, char err[IR_ERR_LEN]);

#ifdef __cplusplus
}
#endif
#endif
