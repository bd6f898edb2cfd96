/* The interactive window's parts, shared between the files of app/window/ (not a public header:
 * app/app.h has the one entry point, app_window_main).
 *
 *   view.c     orbit / pan / zoom state and the camera it gives          (plain C)
 *   script.c   the --script file format: parsing only                    (plain C)
 *   overlay.c  the overlay's text, panels and bars as 2D triangles       (plain C + stb_easy_font)
 *   gl_draw.c  OpenGL: shaders, the frame texture, drawing, screenshots  (GL)
 *   present.c  getting the rendered frame into the texture: CUDA-GL interop or a host copy
 *   window.c   options, the SDL window, input, the frame loop
 *
 * view.c and script.c know nothing of SDL or OpenGL, so that tests can build them alone.
 */
#ifndef INKRAY_APP_WINDOW_INTERNAL_H
#define INKRAY_APP_WINDOW_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "render/render.h"

/* ---- View (view.c) ------------------------------------------------------------------------- */
/* Orbit angles, distance and up axis as ir_camera_orbit takes them, plus a pan offset in world
 * units added to both the eye and the target. */
typedef struct wnd_view {
  float azimuth_degrees;
  float elevation_degrees;
  float distance; /* 1 fits the volume in view */
  float pan[3];
  ir_axis up;     /* IR_AXIS_NONE: +z */
} wnd_view;

#define WND_VIEW_AZIMUTH 30.0f
#define WND_VIEW_ELEVATION 20.0f
#define WND_VIEW_DISTANCE 1.0f

/* The starting view, with `up` pointing up (--up, else the volume's header, else +z). */
wnd_view wnd_view_default(ir_axis up);
/* U: the same axis the other way up (the view turned upside down). */
void wnd_view_flip_up(wnd_view *view);
/* Shift+U: the next axis up, x -> y -> z -> x, pointing the positive way. */
void wnd_view_next_up(wnd_view *view);
/* Left-drag by (dx, dy) pixels. */
void wnd_view_orbit(wnd_view *view, float dx, float dy);
/* Right/middle drag: moves the scene with the mouse, in the plane facing the camera. */
void wnd_view_pan(wnd_view *view, const ir_volume *volume, float dx, float dy, int viewport_height);
/* Wheel steps; positive zooms in. */
void wnd_view_zoom(wnd_view *view, float steps);
ir_camera wnd_view_camera(const wnd_view *view, const ir_volume *volume);

/* ---- Script (script.c) --------------------------------------------------------------------- */
typedef enum wnd_event_kind {
  WND_EVENT_KEY = 0,    /* key [shift+]NAME: press and release, NAME as SDL names keys */
  WND_EVENT_DRAG,       /* drag left|right|middle X0 Y0 X1 Y1 */
  WND_EVENT_WHEEL,      /* wheel STEPS */
  WND_EVENT_RESIZE,     /* resize W H */
  WND_EVENT_SCREENSHOT, /* screenshot [PATH] */
  WND_EVENT_QUIT,       /* quit */
} wnd_event_kind;

typedef enum wnd_button { WND_BUTTON_LEFT = 0, WND_BUTTON_RIGHT, WND_BUTTON_MIDDLE } wnd_button;

typedef struct wnd_event {
  double time_s; /* seconds after the first frame */
  int line;      /* line in the script, for messages */
  wnd_event_kind kind;
  char key[32];
  bool shift;
  wnd_button button;
  int x0, y0, x1, y1;
  float wheel;
  int width, height;
  char path[256]; /* empty: the default screenshot name */
} wnd_event;

typedef struct wnd_script {
  wnd_event *events;
  int count;
} wnd_script;

/* Parses a script's text; `name` is used in messages ("NAME:LINE: ..."). */
ir_status wnd_script_parse(const char *text, const char *name, wnd_script *out, char err[IR_ERR_LEN]);
ir_status wnd_script_load(const char *path, wnd_script *out, char err[IR_ERR_LEN]);
void wnd_script_free(wnd_script *script);

/* ---- Overlay geometry (overlay.c) ------------------------------------------------------------ */
typedef struct wnd_vertex {
  float x, y;       /* window pixels, origin top left */
  uint8_t rgba[4];
} wnd_vertex;

/* A growing list of triangles (three vertices each). */
typedef struct wnd_mesh {
  wnd_vertex *vertices;
  size_t count, capacity;
} wnd_mesh;
void wnd_mesh_free(wnd_mesh *mesh);

/* Everything the overlay shows. */
typedef struct wnd_overlay_info {
  int window_width, window_height;
  double fps, frame_ms;     /* smoothed, whole frames as the person sees them */
  double render_ms;         /* the renderer's own frame time, smoothed */
  const char *device;       /* "gpu" | "cpu" */
  const char *device_note;  /* e.g. why the CPU renderer is used; NULL if none */
  const char *display_path; /* "CUDA-GL interop" | "host copy" */
  int method_index;         /* row of ir_compact_methods() */
  ir_pipeline pipeline;
  double isovalue;
  const ir_volume *volume;
  int render_width, render_height;
  bool have_stages;         /* stage times measured at least once */
  ir_frame_stats stages;    /* the last frame measured with stage timing */
  ir_frame_stats last;      /* the last frame */
  bool show_help;
} wnd_overlay_info;
/* The title over the stage-time chart: "GPU only" on the CPU renderer, which has no stages. */
const char *wnd_overlay_stage_title(const wnd_overlay_info *info);

/* Appends the overlay (panels, text, bars) to `mesh` and returns the rectangle it covers,
 * as x, y, width, height in window pixels. */
void wnd_overlay_build(const wnd_overlay_info *info, wnd_mesh *mesh, int rect[4]);

#endif
