/* The window's view: orbit angles, distance and pan, turned into an ir_camera. Mouse deltas in
 * pixels come in; how many degrees or world units a pixel is worth is decided here alone. */
#include <math.h>

#include "app/window/window_internal.h"

/* A drag across 900 pixels turns the volume a full circle: fine control, quick enough. */
#define DEGREES_PER_PIXEL 0.4f
/* Stop short of the poles, where the camera's up vector and view direction would coincide. */
#define ELEVATION_LIMIT 89.0f
#define ZOOM_PER_STEP 0.9f
#define DISTANCE_MIN 0.05f
#define DISTANCE_MAX 20.0f

wnd_view wnd_view_default(ir_axis up) {
  return (wnd_view){.azimuth_degrees = WND_VIEW_AZIMUTH,
                    .elevation_degrees = WND_VIEW_ELEVATION,
                    .distance = WND_VIEW_DISTANCE,
                    .up = up};
}

void wnd_view_flip_up(wnd_view *view) {
  ir_axis up = view->up == IR_AXIS_NONE ? IR_AXIS_Z : view->up;
  int index = ir_axis_index(up);
  view->up = (ir_axis)((ir_axis_sign(up) > 0 ? IR_AXIS_NEG_X : IR_AXIS_X) + index);
}

void wnd_view_next_up(wnd_view *view) {
  ir_axis up = view->up == IR_AXIS_NONE ? IR_AXIS_Z : view->up;
  view->up = (ir_axis)(IR_AXIS_X + (ir_axis_index(up) + 1) % 3);
}

void wnd_view_orbit(wnd_view *view, float dx, float dy) {
  view->azimuth_degrees = fmodf(view->azimuth_degrees - dx * DEGREES_PER_PIXEL, 360.0f);
  float elevation = view->elevation_degrees + dy * DEGREES_PER_PIXEL;
  view->elevation_degrees = fmaxf(-ELEVATION_LIMIT, fminf(ELEVATION_LIMIT, elevation));
}

static void sub3(const float a[3], const float b[3], float out[3]) {
  for (int k = 0; k < 3; k++) out[k] = a[k] - b[k];
}

static void cross3(const float a[3], const float b[3], float out[3]) {
  out[0] = a[1] * b[2] - a[2] * b[1];
  out[1] = a[2] * b[0] - a[0] * b[2];
  out[2] = a[0] * b[1] - a[1] * b[0];
}

static float normalize3(float v[3]) {
  float length = sqrtf(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
  if (length > 0)
    for (int k = 0; k < 3; k++) v[k] /= length;
  return length;
}

void wnd_view_pan(wnd_view *view, const ir_volume *volume, float dx, float dy, int viewport_height) {
  if (viewport_height <= 0) return;
  ir_camera camera = wnd_view_camera(view, volume);
  float forward[3], right[3], up[3];
  sub3(camera.target, camera.eye, forward);
  float distance = normalize3(forward);
  cross3(forward, camera.up, right);
  normalize3(right);
  cross3(right, forward, up);
  float fov = camera.fov_y_degrees > 0 ? camera.fov_y_degrees : 45.0f;
  /* World size of one pixel at the target's depth, so that the point under the mouse follows it. */
  float pixel = 2.0f * distance * tanf(fov * 0.5f * 3.14159265f / 180.0f) / (float)viewport_height;
  for (int k = 0; k < 3; k++) view->pan[k] += (-dx * right[k] + dy * up[k]) * pixel;
}

void wnd_view_zoom(wnd_view *view, float steps) {
  float distance = view->distance * powf(ZOOM_PER_STEP, steps);
  view->distance = fmaxf(DISTANCE_MIN, fminf(DISTANCE_MAX, distance));
}

ir_camera wnd_view_camera(const wnd_view *view, const ir_volume *volume) {
  ir_camera camera = ir_camera_orbit(volume, view->azimuth_degrees, view->elevation_degrees, view->distance, view->up);
  for (int k = 0; k < 3; k++) {
    camera.eye[k] += view->pan[k];
    camera.target[k] += view->pan[k];
  }
  return camera;
}
