/* The perspective camera: orbits around a volume and the per-frame basis every ray is built
 * from. The basis is computed here, on the host, once per frame and handed unchanged to the
 * CPU threads and the GPU kernels, so both devices start from the same bits. */
#include <math.h>
#include <string.h>

#include "render/render_internal.h"

#define IR_PI 3.14159265358979323846

static double fov_or_default(float fov_y_degrees) {
  double f = fov_y_degrees > 0.0f && isfinite(fov_y_degrees) ? fov_y_degrees : 45.0;
  return f < 1.0 ? 1.0 : (f > 170.0 ? 170.0 : f);
}

ir_camera ir_camera_orbit(const ir_volume *v, float azimuth_degrees, float elevation_degrees, float distance,
                          ir_axis up) {
  double size[3] = {1, 1, 1};
  if (v)
    for (int k = 0; k < 3; k++) size[k] = (double)v->dims[k] * v->spacing[k];
  double centre[3] = {size[0] / 2, size[1] / 2, size[2] / 2};
  double radius = 0.5 * sqrt(size[0] * size[0] + size[1] * size[1] + size[2] * size[2]);
  double half_fov = 0.5 * fov_or_default(0.0f) * IR_PI / 180.0;
  /* At distance 1 the bounding sphere just fits the vertical field of view. */
  double d = (distance > 0.0f ? distance : 1.0) * radius / sin(half_fov);
  double az = azimuth_degrees * IR_PI / 180.0, el = elevation_degrees * IR_PI / 180.0;
  /* A right-handed frame (e1, e2, u) with u the up axis: azimuth turns in the e1-e2 plane,
   * elevation rises toward u. For +z (the default: the slice axis of most scanned volumes) it
   * is (x, y, z); the other axes rotate the indices, and a negative axis negates e2 as well so
   * that the frame stays right-handed (the image turns upside down, not mirrored). */
  if (up == IR_AXIS_NONE) up = IR_AXIS_Z;
  int a = ir_axis_index(up), sign = ir_axis_sign(up);
  double e1[3] = {0, 0, 0}, e2[3] = {0, 0, 0}, u[3] = {0, 0, 0};
  e1[(a + 1) % 3] = 1.0;
  e2[(a + 2) % 3] = sign;
  u[a] = sign;
  double w1 = d * cos(el) * cos(az), w2 = d * cos(el) * sin(az), wu = d * sin(el);
  ir_camera c;
  memset(&c, 0, sizeof c);
  for (int k = 0; k < 3; k++) {
    c.eye[k] = (float)(centre[k] + w1 * e1[k] + w2 * e2[k] + wu * u[k]);
    c.target[k] = (float)centre[k];
    c.up[k] = (float)u[k];
  }
  c.fov_y_degrees = 45.0f;
  return c;
}

static void normalize3(double v[3]) {
  double len = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
  if (len > 0)
    for (int k = 0; k < 3; k++) v[k] /= len;
}

static void cross3(const double a[3], const double b[3], double out[3]) {
  out[0] = a[1] * b[2] - a[2] * b[1];
  out[1] = a[2] * b[0] - a[0] * b[2];
  out[2] = a[0] * b[1] - a[1] * b[0];
}

/* The camera's unit forward, right and up vectors and tan(fov/2), in world space. */
static double camera_frame(const ir_camera *cam, double f[3], double right[3], double u[3]) {
  double up[3];
  for (int k = 0; k < 3; k++) {
    f[k] = (double)cam->target[k] - cam->eye[k];
    up[k] = cam->up[k];
  }
  normalize3(f);
  if (f[0] == 0 && f[1] == 0 && f[2] == 0) f[1] = 1; /* eye == target: look along +y */
  cross3(f, up, right);
  double rl = sqrt(right[0] * right[0] + right[1] * right[1] + right[2] * right[2]);
  if (!(rl > 1e-6)) {
    /* Up parallel to the view (looking straight down an axis): any perpendicular will do. */
    double alt[3] = {fabs(f[2]) < 0.9 ? 0 : 1, 0, fabs(f[2]) < 0.9 ? 1 : 0};
    cross3(f, alt, right);
  }
  normalize3(right);
  cross3(right, f, u);
  normalize3(u);
  return tan(0.5 * fov_or_default(cam->fov_y_degrees) * IR_PI / 180.0);
}

/* The screen coordinates (sx, sy in -1..1 across the frame) of box lo..hi's eight corners; false
 * when a corner is on or behind the eye's plane (the eye inside the box has one): its projection
 * is unbounded, so every pixel may see the box. */
static bool project_box(const ir_camera *cam, int width, int height, const double lo[3], const double hi[3],
                        double sx[8], double sy[8]) {
  double f[3], right[3], u[3];
  double tan_half = camera_frame(cam, f, right, u), aspect = (double)width / (double)height;
  for (int c = 0; c < 8; c++) {
    double d[3], z = 0, x = 0, y = 0, len = 0;
    for (int k = 0; k < 3; k++) {
      d[k] = ((c >> k & 1) ? hi[k] : lo[k]) - (double)cam->eye[k];
      z += d[k] * f[k], x += d[k] * right[k], y += d[k] * u[k], len += d[k] * d[k];
    }
    if (!(z > 1e-6 * sqrt(len))) return false;
    sx[c] = x / (z * tan_half * aspect), sy[c] = y / (z * tan_half);
  }
  return true;
}

void ir_camera_box_window(const ir_camera *cam, int width, int height, const double lo[3], const double hi[3],
                          int window[4]) {
  double sx[8], sy[8];
  if (!project_box(cam, width, height, lo, hi, sx, sy)) {
    window[0] = window[1] = 0, window[2] = width, window[3] = height;
    return;
  }
  double sx_lo = INFINITY, sx_hi = -INFINITY, sy_lo = INFINITY, sy_hi = -INFINITY;
  for (int c = 0; c < 8; c++)
    sx_lo = fmin(sx_lo, sx[c]), sx_hi = fmax(sx_hi, sx[c]), sy_lo = fmin(sy_lo, sy[c]), sy_hi = fmax(sy_hi, sy[c]);
  /* Pixel px's ray has sx = (px + 0.5) 2 / width - 1, row py's sy = 1 - (py + 0.5) 2 / height:
   * the pixels whose centres fall in the projected range, and one more on each side for the
   * float rounding of the rays (the renderer's camera moves with a brick's origin). */
  double x0 = floor((sx_lo + 1.0) * 0.5 * width - 0.5) - 1.0, x1 = ceil((sx_hi + 1.0) * 0.5 * width - 0.5) + 2.0;
  double y0 = floor((1.0 - sy_hi) * 0.5 * height - 0.5) - 1.0, y1 = ceil((1.0 - sy_lo) * 0.5 * height - 0.5) + 2.0;
  x0 = fmax(x0, 0.0), y0 = fmax(y0, 0.0), x1 = fmin(x1, (double)width), y1 = fmin(y1, (double)height);
  if (!(x1 > x0 && y1 > y0)) { /* off screen: no pixel sees it */
    window[0] = window[1] = window[2] = window[3] = 0;
    return;
  }
  window[0] = (int)x0, window[1] = (int)y0, window[2] = (int)x1, window[3] = (int)y1;
}

/* Twice the signed area of triangle o a b (positive: counter-clockwise). */
static double turn(const double o[2], const double a[2], const double b[2]) {
  return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]);
}

/* Keeps the part of convex polygon p (n vertices, counter-clockwise) where coordinate `axis`
 * is >= bound (side +1) or <= bound (side -1); returns its vertex count (at most n + 1). */
static int clip_polygon(const double (*p)[2], int n, int axis, double bound, double side, double (*out)[2]) {
  int m = 0;
  for (int i = 0; i < n; i++) {
    const double *a = p[i], *b = p[(i + 1) % n];
    double da = side * (a[axis] - bound), db = side * (b[axis] - bound);
    if (da >= 0) out[m][0] = a[0], out[m][1] = a[1], m++;
    if ((da >= 0) != (db >= 0)) {
      double t = da / (da - db);
      out[m][0] = a[0] + t * (b[0] - a[0]), out[m][1] = a[1] + t * (b[1] - a[1]), m++;
    }
  }
  return m;
}

double ir_camera_box_pixels(const ir_camera *cam, int width, int height, const double lo[3], const double hi[3]) {
  double sx[8], sy[8];
  if (!project_box(cam, width, height, lo, hi, sx, sy)) return (double)width * (double)height;
  /* The corners in pixels, their convex hull (Andrew's monotone chain) cut to the frame. */
  double pts[8][2], hull[17][2], a[17][2], b[17][2];
  for (int c = 0; c < 8; c++) {
    double x = (sx[c] + 1.0) * 0.5 * width, y = (sy[c] + 1.0) * 0.5 * height;
    int i = c;
    for (; i > 0 && (pts[i - 1][0] > x || (pts[i - 1][0] == x && pts[i - 1][1] > y)); i--)
      pts[i][0] = pts[i - 1][0], pts[i][1] = pts[i - 1][1];
    pts[i][0] = x, pts[i][1] = y;
  }
  int n = 0;
  for (int pass = 0; pass < 2; pass++) {
    int start = n;
    for (int j = 0; j < 8; j++) {
      const double *q = pts[pass == 0 ? j : 7 - j];
      while (n >= start + 2 && turn(hull[n - 2], hull[n - 1], q) <= 0) n--;
      hull[n][0] = q[0], hull[n][1] = q[1], n++;
    }
    n--; /* each chain's last point is the other's first */
  }
  if (n < 3) return 0.0;
  n = clip_polygon((const double(*)[2])hull, n, 0, 0.0, 1.0, a);
  n = clip_polygon((const double(*)[2])a, n, 0, (double)width, -1.0, b);
  n = clip_polygon((const double(*)[2])b, n, 1, 0.0, 1.0, a);
  n = clip_polygon((const double(*)[2])a, n, 1, (double)height, -1.0, b);
  double area = 0.0;
  for (int i = 0; i < n; i++) area += b[i][0] * b[(i + 1) % n][1] - b[(i + 1) % n][0] * b[i][1];
  return 0.5 * fabs(area);
}

void ir_camera_prepare(const ir_camera *cam, const ir_volume *v, int width, int height, ir_cam_basis *out) {
  double f[3], right[3], u[3];
  double tan_half = camera_frame(cam, f, right, u);
  double aspect = (double)width / (double)height;
  out->forward = ir_v3((float)f[0], (float)f[1], (float)f[2]);
  out->right = ir_v3((float)(right[0] * tan_half * aspect), (float)(right[1] * tan_half * aspect),
                     (float)(right[2] * tan_half * aspect));
  out->up = ir_v3((float)(u[0] * tan_half), (float)(u[1] * tan_half), (float)(u[2] * tan_half));
  out->inv_spacing = ir_v3(1.0f / v->spacing[0], 1.0f / v->spacing[1], 1.0f / v->spacing[2]);
  out->eye_voxel = ir_v3((float)((double)cam->eye[0] / v->spacing[0]), (float)((double)cam->eye[1] / v->spacing[1]),
                         (float)((double)cam->eye[2] / v->spacing[2]));
  out->two_over_w = (float)(2.0 / width);
  out->two_over_h = (float)(2.0 / height);
  out->width = width;
  out->height = height;
  out->win_x0 = out->win_y0 = 0;
  out->win_w = width;
  out->win_h = height;
}

_Static_assert(IR_ISO_SET_MAX == IR_MAX_SURFACES, "one isovalue per surface");

/* The frame's visible surfaces (opacity > 0), sorted by isovalue, as the per-ray code reads them;
 * a frame without surfaces draws one opaque surface at its isovalue in the default colour. */
static void ir_trace_surfaces_fill(const ir_frame_desc *f, ir_trace_params *p) {
  ir_surface list[IR_MAX_SURFACES];
  int n = 0;
  if (f->surface_count == 0) {
    list[n++] = (ir_surface){.isovalue = f->isovalue,
                             .color = {IR_SURFACE_R, IR_SURFACE_G, IR_SURFACE_B},
                             .opacity = 1.0f};
  } else {
    for (int i = 0; i < f->surface_count && i < IR_MAX_SURFACES; i++)
      if (f->surfaces[i].opacity > 0.0f) list[n++] = f->surfaces[i];
  }
  for (int i = 1; i < n; i++) /* insertion sort: stable, at most four */
    for (int j = i; j > 0 && list[j].isovalue < list[j - 1].isovalue; j--) {
      ir_surface t = list[j];
      list[j] = list[j - 1];
      list[j - 1] = t;
    }
  p->iso.n = n;
  p->translucent = false;
  for (int i = 0; i < IR_ISO_SET_MAX; i++) {
    bool used = i < n;
    p->iso.v[i] = used ? list[i].isovalue : INFINITY;
    for (int c = 0; c < 3; c++) p->surf_rgb[i][c] = used ? list[i].color[c] : 0.0f;
    p->surf_alpha[i] = used ? fminf(list[i].opacity, 1.0f) : 1.0f;
    if (used && p->surf_alpha[i] < 1.0f) p->translucent = true;
  }
}

void ir_trace_params_fill(const ir_renderer *r, const ir_frame_desc *f, ir_trace_params *p) {
  ir_camera_prepare(&f->camera, r->volume, f->width, f->height, &p->cam);
  int win[4];
  ir_frame_window(f, win);
  p->cam.win_x0 = win[0];
  p->cam.win_y0 = win[1];
  p->cam.win_w = win[2] - win[0];
  p->cam.win_h = win[3] - win[1];
  /* An empty rectangle traces nothing, whichever side is empty. */
  if (p->cam.win_w == 0 || p->cam.win_h == 0) p->cam.win_w = p->cam.win_h = 0;
  p->vol = r->view;
  p->nodes = NULL;
  const ir_volume *v = r->volume;
  bool clip = false, part = false;
  for (int k = 0; k < 3; k++) {
    clip = clip || f->clip_lo[k] != 0.0f || f->clip_hi[k] != 0.0f;
    part = part || v->full_dims[k] > v->dims[k];
  }
  for (int k = 0; k < 3; k++) {
    float hi = (float)v->dims[k];
    p->box_lo[k] = clip ? fminf(fmaxf(f->clip_lo[k], 0.0f), hi) : 0.0f;
    p->box_hi[k] = clip ? fminf(fmaxf(f->clip_hi[k], 0.0f), hi) : hi;
    /* A box read from a larger volume (ir_volume.origin, full_dims) samples on that volume's grid. */
    p->grid_lo[k] = part ? -(float)v->origin[k] : 0.0f;
    p->grid_hi[k] = part ? (float)v->full_dims[k] - (float)v->origin[k] : hi;
  }
  ir_trace_surfaces_fill(f, p);
  /* The clip plane in this volume's voxel coordinates: world = (voxel + origin) * spacing. */
  p->plane_on = f->clip_plane_on;
  for (int k = 0; k < 4; k++) p->plane[k] = 0.0f;
  if (f->clip_plane_on) {
    p->plane[3] = f->clip_plane[3];
    for (int k = 0; k < 3; k++) {
      p->plane[k] = f->clip_plane[k] * v->spacing[k];
      p->plane[3] += p->plane[k] * (float)v->origin[k];
    }
  }
  p->exact = !f->texture_refine;
  p->step = f->sample_step > 0.0f ? f->sample_step : IR_SAMPLE_STEP_DEFAULT;
  p->color_by = (int)f->color_by;
  p->color = r->color_view;
  p->cmap = ir_colormap_table(f->colormap);
  float lo = f->color_range[0], hi = f->color_range[1];
  if (!(hi > lo)) { /* one value: it reads the map's middle */
    lo -= 0.5f;
    hi = lo + 1.0f;
  }
  p->cmap_lo = lo;
  p->cmap_scale = 1.0f / (hi - lo);
  p->root = IR_BVH_NONE;
  for (int k = 0; k < 3; k++) p->bricks[k] = p->cells[k] = r->layout.dims[0][k];
  p->cell = (float)IR_BRICK_CELLS;
  p->inv_cell = 1.0f / (float)IR_BRICK_CELLS;
  p->ranges = NULL;
  p->skip = NULL;
  p->run_cells = 0;
  p->ao_n = f->ao_samples;
  p->ao_radius = f->ao_radius > 0.0f ? f->ao_radius : IR_AO_RADIUS_DEFAULT;
  p->ao_first = f->sample_frame * (uint32_t)(f->ao_samples > 0 ? f->ao_samples : 0);
  p->shadows = f->shadows;
  p->light_on = f->light_on;
  p->light_dir = ir_v3(0.0f, 0.0f, 0.0f);
  if (f->light_on) {
    /* The camera's frame in world space: right, up, and back towards the eye. sin and cos once
     * per frame, here on the host, so the CPU and the GPU use the same direction. */
    const double deg = 3.14159265358979323846 / 180.0;
    double az = (double)f->light[0] * deg, el = (double)f->light[1] * deg;
    ir_vec3 right = ir_normalize(p->cam.right), up = ir_normalize(p->cam.up), back = ir_scale(p->cam.forward, -1.0f);
    ir_vec3 l = ir_add(ir_add(ir_scale(right, (float)(cos(el) * sin(az))), ir_scale(up, (float)sin(el))),
                       ir_scale(back, (float)(cos(el) * cos(az))));
    p->light_dir = ir_normalize(l);
  }
}

void ir_trace_params_walk(const ir_renderer *r, const ir_frame_desc *f, const ir_brick_range *brick_ranges,
                          const ir_brick_range *cell_ranges, ir_trace_params *p) {
  int size = r->walk_cells ? r->walk_cells : ir_walk_cells_auto(r->volume->dims, (size_t)f->width * (size_t)f->height);
  bool fine = size == IR_WALK_CELLS;
  for (int k = 0; k < 3; k++) p->cells[k] = fine ? r->cells[k] : r->layout.dims[0][k];
  p->cell = (float)size;
  p->inv_cell = 1.0f / (float)size;
  p->ranges = fine ? cell_ranges : brick_ranges;
  p->run_cells = f->run_bricks ? (int)f->run_bricks : IR_WALK_RUN_CELLS;
}
