/* Mesh files: binary little-endian PLY, binary STL and Wavefront OBJ, chosen by extension.
 *
 * A file is written under a temporary name in its folder (mkstemp) and renamed onto the target
 * only once every byte is written and the file is closed, so a failure (disk full, a killed
 * process) never leaves a half-written file under the target name; the temporary file is removed
 * on failure. The records are packed in chunks on all cores and written in order.
 *
 * A device mesh is written the same way from pinned staging buffers: the transfer module
 * (transfer/transfer.h) downloads a chunk of vertices (every attribute's slice of it) or faces
 * at a time and hands it over in order while the next chunks download, and the chunk is packed
 * and written as a host mesh of its own would be (its face indices are the mesh's). STL needs
 * every triangle's corners: its positions are downloaded whole first.
 *
 * PLY: element vertex (float x y z, float nx ny nz, uchar red green blue alpha when the mesh has
 * colours, float value), element face (list uchar int vertex_indices). STL: an 80-byte header, the
 * triangle count, then per triangle its unit geometric normal, three corners and a zero attribute
 * word. OBJ: `v x y z` (followed by r g b in 0..1 when coloured, a common extension), `vn`, and
 * `f a//a b//b c//c` with 1-based indices; OBJ has no place for the values.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "extract/extract_internal.h"
#include "transfer/transfer.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "mesh_io.c writes the host's floats and integers as they are: it needs a little-endian host"
#endif

/* Records are packed in tasks of a few MB, up to CHUNKS_PER_WRITE tasks in parallel before they
 * are written in order: the binary formats 2^16 records a task, OBJ's longer text lines 2^13. */
#define CHUNKS_PER_WRITE 32
static size_t chunk_items(ir_mesh_format f) { return f == IR_MESH_OBJ ? (size_t)1 << 13 : (size_t)1 << 16; }

ir_mesh_format ir_mesh_format_of(const char *path) {
  const char *dot = path ? strrchr(path, '.') : NULL;
  if (!dot || strchr(dot, '/')) return IR_MESH_FORMAT_UNKNOWN;
  if (strcasecmp(dot, ".ply") == 0) return IR_MESH_PLY;
  if (strcasecmp(dot, ".stl") == 0) return IR_MESH_STL;
  if (strcasecmp(dot, ".obj") == 0) return IR_MESH_OBJ;
  return IR_MESH_FORMAT_UNKNOWN;
}

/* The folder of `path` ("." when it has none). */
static bool folder_of(const char *path, char *dir, size_t cap) {
  const char *slash = strrchr(path, '/');
  if (!slash) {
    snprintf(dir, cap, ".");
    return true;
  }
  size_t n = slash == path ? 1 : (size_t)(slash - path);
  if (n >= cap) return false;
  memcpy(dir, path, n);
  dir[n] = '\0';
  return true;
}

ir_status ir_mesh_check_output(const char *path, char err[IR_ERR_LEN]) {
  if (!path || !*path) {
    snprintf(err, IR_ERR_LEN, "mesh file: empty file name");
    return IR_ERR_INPUT;
  }
  if (ir_mesh_format_of(path) == IR_MESH_FORMAT_UNKNOWN) {
    snprintf(err, IR_ERR_LEN, "mesh file '%.300s': unknown format; name a .ply, .stl or .obj file", path);
    return IR_ERR_INPUT;
  }
  struct stat st;
  if (stat(path, &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      snprintf(err, IR_ERR_LEN, "mesh file '%.300s': is a folder; give a file name", path);
      return IR_ERR_INPUT;
    }
    if (access(path, W_OK) != 0) {
      snprintf(err, IR_ERR_LEN, "mesh file '%.300s': cannot write: %s", path, strerror(errno));
      return IR_ERR_INPUT;
    }
  }
  char dir[4096];
  if (!folder_of(path, dir, sizeof dir)) {
    snprintf(err, IR_ERR_LEN, "mesh file: path too long");
    return IR_ERR_INPUT;
  }
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    snprintf(err, IR_ERR_LEN, "mesh file '%.300s': folder %.150s does not exist", path, dir);
    return IR_ERR_INPUT;
  }
  if (access(dir, W_OK | X_OK) != 0) {
    snprintf(err, IR_ERR_LEN, "mesh file '%.300s': cannot write in folder %.150s: %s", path, dir, strerror(errno));
    return IR_ERR_INPUT;
  }
  return IR_OK;
}

/* ---- Sizes -------------------------------------------------------------------------------------- */
static int ply_header(char *buf, size_t cap, size_t vertices, size_t triangles, bool colors) {
  return snprintf(buf, cap,
                  "ply\nformat binary_little_endian 1.0\ncomment inkray isosurface mesh\n"
                  "element vertex %zu\nproperty float x\nproperty float y\nproperty float z\n"
                  "property float nx\nproperty float ny\nproperty float nz\n%s"
                  "property float value\nelement face %zu\nproperty list uchar int vertex_indices\nend_header\n",
                  vertices,
                  colors ? "property uchar red\nproperty uchar green\nproperty uchar blue\nproperty uchar alpha\n" : "",
                  triangles);
}

#define PLY_FACE_BYTES 13u /* count byte + three int32 */
#define STL_FACET_BYTES 50u

static size_t ply_vertex_bytes(bool colors) { return 28u + (colors ? 4u : 0u); }

size_t ir_mesh_file_bytes(ir_mesh_format format, size_t vertex_count, size_t triangle_count, bool colors) {
  char header[1024];
  switch (format) {
  case IR_MESH_PLY:
    return (size_t)ply_header(header, sizeof header, vertex_count, triangle_count, colors) +
           vertex_count * ply_vertex_bytes(colors) + triangle_count * PLY_FACE_BYTES;
  case IR_MESH_STL: return 84u + triangle_count * STL_FACET_BYTES;
  default: return 0;
  }
}

/* ---- Packing records in parallel -------------------------------------------------------------- */
typedef struct pack_job {
  const ir_mesh *m;
  ir_mesh_format format;
  bool faces;         /* packing faces (else vertices) */
  size_t first_chunk; /* of this round */
  size_t task_items;  /* records a task packs (chunk_items at most: the size of a buffer) */
  size_t items;       /* vertices or triangles in total */
  char **buf;         /* per chunk of the round */
  size_t *len;        /* bytes packed per chunk */
} pack_job;

static void put_f32(char **p, float v) {
  memcpy(*p, &v, 4);
  *p += 4;
}

static void pack_ply_vertices(const ir_mesh *m, size_t first, size_t end, char *p) {
  for (size_t i = first; i < end; i++) {
    for (int k = 0; k < 3; k++) put_f32(&p, m->positions[3 * i + k]);
    for (int k = 0; k < 3; k++) put_f32(&p, m->normals[3 * i + k]);
    if (m->colors) memcpy(p, m->colors + 4 * i, 4), p += 4;
    put_f32(&p, m->values[i]);
  }
}

static void pack_ply_faces(const ir_mesh *m, size_t first, size_t end, char *p) {
  for (size_t i = first; i < end; i++) {
    *p++ = 3;
    memcpy(p, m->triangles + 3 * i, 12); /* indices < 2^31: the same bytes as int32 */
    p += 12;
  }
}

static void pack_stl(const ir_mesh *m, size_t first, size_t end, char *p) {
  for (size_t i = first; i < end; i++) {
    const float *v[3];
    for (int k = 0; k < 3; k++) v[k] = m->positions + 3 * (size_t)m->triangles[3 * i + k];
    ir_vec3 a = ir_v3(v[0][0], v[0][1], v[0][2]), b = ir_v3(v[1][0], v[1][1], v[1][2]), c = ir_v3(v[2][0], v[2][1], v[2][2]);
    ir_vec3 n = ir_normalize(ir_cross(ir_sub(b, a), ir_sub(c, a)));
    put_f32(&p, n.x), put_f32(&p, n.y), put_f32(&p, n.z);
    for (int k = 0; k < 3; k++) put_f32(&p, v[k][0]), put_f32(&p, v[k][1]), put_f32(&p, v[k][2]);
    *p++ = 0, *p++ = 0;
  }
}

/* OBJ text: at most this many bytes per vertex (v, vn and colours: 9 numbers of %.9g) and face. */
#define OBJ_VERTEX_MAX 256u
#define OBJ_FACE_MAX 80u

static size_t pack_obj_vertices(const ir_mesh *m, size_t first, size_t end, char *p) {
  char *start = p;
  for (size_t i = first; i < end; i++) {
    const float *x = m->positions + 3 * i, *n = m->normals + 3 * i;
    p += sprintf(p, "v %.9g %.9g %.9g", (double)x[0], (double)x[1], (double)x[2]);
    if (m->colors) {
      const uint8_t *c = m->colors + 4 * i;
      p += sprintf(p, " %.6g %.6g %.6g", c[0] / 255.0, c[1] / 255.0, c[2] / 255.0);
    }
    p += sprintf(p, "\nvn %.9g %.9g %.9g\n", (double)n[0], (double)n[1], (double)n[2]);
  }
  return (size_t)(p - start);
}

static size_t pack_obj_faces(const ir_mesh *m, size_t first, size_t end, char *p) {
  char *start = p;
  for (size_t i = first; i < end; i++) {
    const uint32_t *t = m->triangles + 3 * i;
    p += sprintf(p, "f %u//%u %u//%u %u//%u\n", t[0] + 1, t[0] + 1, t[1] + 1, t[1] + 1, t[2] + 1, t[2] + 1);
  }
  return (size_t)(p - start);
}

static size_t record_max(ir_mesh_format f, bool faces, bool colors) {
  if (f == IR_MESH_PLY) return faces ? PLY_FACE_BYTES : ply_vertex_bytes(colors);
  if (f == IR_MESH_STL) return STL_FACET_BYTES;
  return faces ? OBJ_FACE_MAX : OBJ_VERTEX_MAX;
}

static void pack_chunk(void *ctx, size_t k) {
  pack_job *job = ctx;
  size_t first = (job->first_chunk + k) * job->task_items, end = first + job->task_items;
  if (end > job->items) end = job->items;
  char *p = job->buf[k];
  if (job->format == IR_MESH_PLY) {
    if (job->faces) pack_ply_faces(job->m, first, end, p);
    else pack_ply_vertices(job->m, first, end, p);
    job->len[k] = (end - first) * record_max(IR_MESH_PLY, job->faces, job->m->colors != NULL);
  } else if (job->format == IR_MESH_STL) {
    pack_stl(job->m, first, end, p);
    job->len[k] = (end - first) * STL_FACET_BYTES;
  } else {
    job->len[k] = job->faces ? pack_obj_faces(job->m, first, end, p) : pack_obj_vertices(job->m, first, end, p);
  }
}

/* Packs `items` records (vertices, or faces) in tasks of `task_items` and writes them in order. */
static bool write_records(FILE *f, const ir_mesh *m, ir_mesh_format format, bool faces, size_t items, size_t task_items,
                          char **bufs, size_t *lens) {
  size_t chunks = (items + task_items - 1) / task_items;
  pack_job job = {.m = m, .format = format, .faces = faces, .items = items, .task_items = task_items, .buf = bufs,
                  .len = lens};
  for (size_t first = 0; first < chunks; first += CHUNKS_PER_WRITE) {
    size_t round = chunks - first < CHUNKS_PER_WRITE ? chunks - first : CHUNKS_PER_WRITE;
    job.first_chunk = first;
    ir_mc_parallel(round, ir_mc_thread_count(0), pack_chunk, &job);
    for (size_t k = 0; k < round; k++)
      if (fwrite(bufs[k], 1, lens[k], f) != lens[k]) return false;
  }
  return true;
}

static bool write_body(FILE *f, const ir_mesh *m, ir_mesh_format format, char **bufs, size_t *lens) {
  if (format == IR_MESH_PLY) {
    char header[1024];
    int n = ply_header(header, sizeof header, m->vertex_count, m->triangle_count, m->colors != NULL);
    return fwrite(header, 1, (size_t)n, f) == (size_t)n &&
           write_records(f, m, format, false, m->vertex_count, chunk_items(format), bufs, lens) &&
           write_records(f, m, format, true, m->triangle_count, chunk_items(format), bufs, lens);
  }
  if (format == IR_MESH_STL) {
    char header[84] = {0};
    snprintf(header, 80, "inkray isosurface mesh, binary STL");
    uint32_t count = (uint32_t)m->triangle_count;
    memcpy(header + 80, &count, 4);
    return fwrite(header, 1, 84, f) == 84 && write_records(f, m, format, true, m->triangle_count, chunk_items(format), bufs, lens);
  }
  return fprintf(f, "# inkray isosurface mesh: %zu vertices, %zu triangles\n", m->vertex_count, m->triangle_count) > 0 &&
         write_records(f, m, format, false, m->vertex_count, chunk_items(format), bufs, lens) &&
         write_records(f, m, format, true, m->triangle_count, chunk_items(format), bufs, lens);
}

/* ---- A device mesh, chunk by chunk ----------------------------------------------------------------- */
typedef struct slice_writer {
  FILE *f;
  ir_mesh_format format;
  bool faces, colors;
  const float *positions; /* STL: all of them, on the host */
  char **bufs;
  size_t *lens;
  size_t buf_count; /* packing buffers allocated (chunk_items records each) */
} slice_writer;

/* A chunk of vertices or faces, downloaded: written as a mesh of that chunk alone would be. */
static int write_slice(void *ctx, const void *const *parts, size_t first, size_t count, char err[IR_ERR_LEN]) {
  slice_writer *w = ctx;
  ir_mesh view;
  memset(&view, 0, sizeof view);
  if (w->faces) {
    view.triangles = (uint32_t *)parts[0];
    view.positions = (float *)w->positions;
  } else {
    int k = 0;
    view.positions = (float *)parts[k++];
    view.normals = (float *)parts[k++];
    if (w->colors) view.colors = (uint8_t *)parts[k++];
    if (w->format == IR_MESH_PLY) view.values = (float *)parts[k++];
  }
  /* A downloaded chunk is smaller than the host path's rounds: cut into a task per core, so that its
   * packing is short beside its write. */
  size_t threads = (size_t)ir_mc_thread_count(0), task = (count + threads - 1) / threads;
  size_t fits = (count + w->buf_count - 1) / w->buf_count; /* no more tasks than buffers */
  task = task < 4096 ? 4096 : task;
  task = task < fits ? fits : task;
  /* Each buffer holds chunk_items records; the buffers were counted for the largest array in
   * tasks of that size, so this many tasks always have one each. */
  task = task > chunk_items(w->format) ? chunk_items(w->format) : task;
  if (write_records(w->f, &view, w->format, w->faces, count, task, w->bufs, w->lens)) return 0;
  snprintf(err, IR_ERR_LEN, "%s", strerror(errno ? errno : EIO));
  return 1;
}

/* Where the chunks of a chunked write come from: the device mesh's download through a staging pool
 * (pool set), or the host mesh's arrays cut into chunks of `host_chunk` items (the same slices,
 * for the tests of the writer's chunking on machines without a GPU). */
typedef struct chunk_source {
  ir_xfer_pool *pool;
  size_t host_chunk;
} chunk_source;

static bool feed(const chunk_source *src, const void *const *parts, const size_t *item_bytes, int count, size_t items,
                 slice_writer *w, char why[IR_ERR_LEN]) {
  if (src->pool) return ir_xfer_download_items(src->pool, parts, item_bytes, count, items, NULL, write_slice, w, why) == IR_OK;
  for (size_t first = 0; first < items; first += src->host_chunk) {
    const void *slices[IR_XFER_MAX_PARTS];
    for (int k = 0; k < count; k++) slices[k] = (const char *)parts[k] + first * item_bytes[k];
    size_t n = items - first < src->host_chunk ? items - first : src->host_chunk;
    if (write_slice(w, slices, first, n, why) != 0) return false;
  }
  return true;
}

/* The file's header and records, chunk by chunk from `src`; false with `why` (errno's text or the
 * download's error) on failure. */
static bool write_body_chunks(FILE *f, const ir_mesh *m, ir_mesh_format format, char **bufs, size_t *lens,
                              size_t buf_count, const chunk_source *src, char why[IR_ERR_LEN]) {
  slice_writer w = {.f = f, .format = format, .colors = m->colors != NULL, .bufs = bufs, .lens = lens,
                    .buf_count = buf_count};
  float *positions = NULL;
  bool ok = true;
  if (format == IR_MESH_PLY) {
    char header[1024];
    int n = ply_header(header, sizeof header, m->vertex_count, m->triangle_count, m->colors != NULL);
    ok = fwrite(header, 1, (size_t)n, f) == (size_t)n;
  } else if (format == IR_MESH_STL) {
    char header[84] = {0};
    snprintf(header, 80, "inkray isosurface mesh, binary STL");
    uint32_t count = (uint32_t)m->triangle_count;
    memcpy(header + 80, &count, 4);
    ok = fwrite(header, 1, 84, f) == 84;
    w.positions = m->positions;
    if (src->pool) {
      positions = malloc((m->vertex_count ? m->vertex_count : 1) * 12);
      if (!positions) {
        snprintf(why, IR_ERR_LEN, "out of host memory for the mesh's positions");
        return false;
      }
      if (ok && ir_xfer_download(src->pool, positions, m->positions, m->vertex_count * 12, NULL, why) != IR_OK) {
        free(positions);
        return false;
      }
      w.positions = positions;
    }
  } else {
    ok = fprintf(f, "# inkray isosurface mesh: %zu vertices, %zu triangles\n", m->vertex_count, m->triangle_count) > 0;
  }
  if (!ok) snprintf(why, IR_ERR_LEN, "%s", strerror(errno ? errno : EIO));
  if (ok && format != IR_MESH_STL) {
    const void *parts[4];
    size_t bytes[4];
    int count = 0;
    parts[count] = m->positions, bytes[count++] = 12;
    parts[count] = m->normals, bytes[count++] = 12;
    if (m->colors) parts[count] = m->colors, bytes[count++] = 4;
    if (format == IR_MESH_PLY) parts[count] = m->values, bytes[count++] = 4;
    ok = feed(src, parts, bytes, count, m->vertex_count, &w, why);
  }
  if (ok) {
    const void *parts[1] = {m->triangles};
    size_t bytes[1] = {12};
    w.faces = true;
    ok = feed(src, parts, bytes, 1, m->triangle_count, &w, why);
  }
  free(positions);
  return ok;
}

/* The staging pool of the device that holds the mesh. */
static bool device_source(const ir_mesh *m, chunk_source *src, char why[IR_ERR_LEN]) {
  const void *any = m->vertex_count ? (const void *)m->positions : (const void *)m->triangles;
  struct cudaPointerAttributes attr;
  cudaError_t e = cudaPointerGetAttributes(&attr, any);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    snprintf(why, IR_ERR_LEN, "%s", cudaGetErrorString(e));
    return false;
  }
  return ir_xfer_pool_of(attr.device, &src->pool, why) == IR_OK;
}

static ir_status write_mesh(const ir_mesh *m, const char *path, size_t host_chunk, char err[IR_ERR_LEN]);

ir_status ir_mesh_write(const ir_mesh *m, const char *path, char err[IR_ERR_LEN]) {
  return write_mesh(m, path, 0, err);
}

ir_status ir_mesh_write_chunked(const ir_mesh *m, const char *path, size_t items_per_chunk, char err[IR_ERR_LEN]) {
  if (m && m->on_device) {
    snprintf(err, IR_ERR_LEN, "ir_mesh_write_chunked writes host meshes");
    return IR_ERR_INPUT;
  }
  return write_mesh(m, path, items_per_chunk ? items_per_chunk : 1, err);
}

static ir_status write_mesh(const ir_mesh *m, const char *path, size_t host_chunk, char err[IR_ERR_LEN]) {
  if (!m) {
    snprintf(err, IR_ERR_LEN, "mesh file '%.300s': no mesh", path ? path : "");
    return IR_ERR_INPUT;
  }
  ir_status status = ir_mesh_check_output(path, err);
  if (status != IR_OK) return status;
  ir_mesh_format format = ir_mesh_format_of(path);
  if (format == IR_MESH_STL && m->triangle_count > UINT32_MAX) {
    snprintf(err, IR_ERR_LEN, "mesh file '%.300s': %zu triangles; binary STL holds at most 2^32 - 1", path,
             m->triangle_count);
    return IR_ERR_INPUT;
  }
  char dir[4096], tmp[4096 + 256];
  folder_of(path, dir, sizeof dir);
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  snprintf(tmp, sizeof tmp, "%s/.%.200s.XXXXXX", dir, base);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    snprintf(err, IR_ERR_LEN, "mesh file '%.300s': cannot create a file in %.150s: %s", path, dir, strerror(errno));
    return IR_ERR_INPUT;
  }
  /* mkstemp makes the file private (0600); a mesh gets the permissions of any new file. */
  mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  FILE *f = fdopen(fd, "wb");
  char *bufs[CHUNKS_PER_WRITE] = {0};
  size_t lens[CHUNKS_PER_WRITE];
  bool ok = f != NULL;
  size_t chunk_bytes = chunk_items(format) * (record_max(format, false, true) > record_max(format, true, true)
                                                  ? record_max(format, false, true)
                                                  : record_max(format, true, true));
  size_t chunks = (m->vertex_count > m->triangle_count ? m->vertex_count : m->triangle_count) / chunk_items(format) + 1;
  if (chunks > CHUNKS_PER_WRITE) chunks = CHUNKS_PER_WRITE;
  for (size_t k = 0; ok && k < CHUNKS_PER_WRITE && k < chunks; k++) ok = (bufs[k] = malloc(chunk_bytes)) != NULL;
  int saved = 0;
  char why[IR_ERR_LEN] = {0};
  bool device = m->on_device && (m->vertex_count || m->triangle_count);
  if (!ok) {
    saved = errno ? errno : ENOMEM;
  } else if (device || host_chunk) {
    chunk_source src = {.host_chunk = host_chunk};
    ok = (!device || device_source(m, &src, why)) && write_body_chunks(f, m, format, bufs, lens, chunks, &src, why);
  } else {
    ok = write_body(f, m, format, bufs, lens);
    if (!ok) saved = errno ? errno : EIO;
  }
  for (size_t k = 0; k < CHUNKS_PER_WRITE; k++) free(bufs[k]);
  if (f) {
    if (fclose(f) != 0 && ok) ok = false, saved = errno;
  } else {
    close(fd);
  }
  if (ok && rename(tmp, path) != 0) ok = false, saved = errno;
  if (!ok) {
    unlink(tmp);
    snprintf(err, IR_ERR_LEN, "mesh file '%.250s': writing failed: %.150s (nothing was left under that name)", path,
             why[0] ? why : strerror(saved));
    return IR_ERR_RUNTIME;
  }
  return IR_OK;
}
