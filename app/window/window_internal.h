/* The interactive window's parts, shared between the files of app/window/ (not a public header:
 * app/app.h has the one entry point, app_window_main).
 *
 *   view.c     orbit / pan / zoom state and the camera it gives          (plain C)
 *   look_edit.c what the keys and drags change in the look: surfaces,     (plain C)
 *              clipping, colour source and map
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

#include "app/app.h"
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

/* ---- Look (look_edit.c) ------------------------------------------------------------------------- */
/* What is drawn, as the window's keys and drags edit it: the look options (app_look) plus the
 * selected surface and clip box face. The window always has at least one surface. */
typedef struct wnd_look {
  app_look look;
  int selected;  /* surface the isovalue, colour and opacity keys act on */
  int clip_face; /* box face a Shift+left drag moves: 0..5 = x0, x1, y0, y1, z0, z1 */
} wnd_look;

/* From the options: their surfaces (those given without a colour in the palette's), or one
 * opaque surface at `iso` in the default colour. */
void wnd_look_start(wnd_look *w, const app_look *given, double iso);
/* N: a new opaque surface at the selected one's isovalue in the next default colour, selected;
 * false when there are IR_MAX_SURFACES already. */
bool wnd_look_add_surface(wnd_look *w);
/* Delete: removes the selected surface; false (nothing removed) when it is the last. */
bool wnd_look_remove_surface(wnd_look *w);
void wnd_look_select(wnd_look *w, int step);                         /* Left/Right, wrapping */
void wnd_look_set_iso(wnd_look *w, double iso);                      /* the selected surface's */
void wnd_look_cycle_color(wnd_look *w, int step);                    /* C: next named colour */
void wnd_look_step_opacity(wnd_look *w, int steps);                  /* PageUp/Down: 0.1 each */
void wnd_look_toggle_clip_box(wnd_look *w);
void wnd_look_next_face(wnd_look *w);
/* Moves the selected face by a drag of (dx, dy) pixels: right or up by a window's height moves
 * it across the whole volume. The face stays inside the volume and at least 1 % of it away
 * from its opposite. */
void wnd_look_drag_face(wnd_look *w, float dx, float dy, int viewport_height);
/* The clip plane through the volume's centre facing away from the camera: it cuts away the near
 * half. Turns the plane on. */
void wnd_look_plane_to_view(wnd_look *w, const ir_camera *camera, const ir_volume *v);
/* L: plane on/off; the first time on without --clip-plane, facing the view. */
void wnd_look_toggle_clip_plane(wnd_look *w, const ir_camera *camera, const ir_volume *v);
/* Moves the plane along its normal by a drag of (dx, dy) pixels: right or up by a window's
 * height moves it by the volume's diagonal (cutting deeper). */
void wnd_look_drag_plane(wnd_look *w, const ir_volume *v, float dx, float dy, int viewport_height);
/* K: surface -> gradient -> volume (only with a colour volume) -> surface. */
void wnd_look_cycle_color_by(wnd_look *w, bool have_color_volume);
void wnd_look_cycle_colormap(wnd_look *w, int step);                 /* M, Shift+M */
/* The colour's name when it is one of ir_color_names(), else #rrggbb. */
const char *wnd_color_label(const float rgb[3], char out[16]);

/* ---- Script (script.c) --------------------------------------------------------------------- */
typedef enum wnd_event_kind {
  WND_EVENT_KEY = 0,    /* key [shift+]NAME: press and release, NAME as SDL names keys */
  WND_EVENT_DRAG,       /* drag [shift+]left|right|middle X0 Y0 X1 Y1 */
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
  bool shift;     /* key or drag with Shift held */
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

/* A time series' state as the overlay shows it: a line with the step, its time and file, one
 * with the playback, a skipped step's message, and a slider. */
typedef struct wnd_timeline {
  size_t step, steps;   /* the step drawn (0-based) and how many there are */
  double time;          /* its time (a .pvd timestep, else the index) */
  const char *name;     /* its file */
  bool playing;
  double rate;          /* steps a second while playing */
  bool waiting;         /* the next step is not read yet: playback waits for the disk */
  const char *message;  /* the last skipped step's message, shown for a while; NULL: none */
  int slider[4];        /* out: the slider's track, x, y, width, height (zeros: not drawn) */
} wnd_timeline;

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
  const wnd_look *look;     /* surfaces, clipping, colour source; NULL: none listed */
  float color_range[2];     /* the range the colour map spans (given or automatic) */
  wnd_timeline *timeline;   /* a time series; NULL: one volume */
  bool show_help;
  const char *mesh_note;    /* the last mesh E wrote ("mesh N triangles in T ms"); NULL: none yet */
  uint32_t ao_frames;       /* frames of the still view accumulated so far (ambient occlusion) */
} wnd_overlay_info;

/* Lines of text (the overlay's, for drawing and for tests). */
typedef struct wnd_lines {
  char text[16][96];
  int count;
} wnd_lines;
/* The look's lines: first one per surface ("> 2  iso 127.5  orange  opacity 0.5", '>' marking
 * the selected one; the overlay draws a swatch of its colour before it), then the clip box and
 * plane when on, then the colour source and map when it is not the surfaces' colour. */
void wnd_overlay_look_lines(const wnd_overlay_info *info, wnd_lines *lines);
/* The title over the stage-time chart: "GPU only" on the CPU renderer, which has no stages. */
const char *wnd_overlay_stage_title(const wnd_overlay_info *info);
/* The stage-time chart's rows: every stage the frame ran (its time is not zero), in the order a
 * frame runs them: bvh, raygen, trav, isect, tail, shade, secondary, compact, control, host wait, kernel;
 * then the last rebuild of the walk's skip map (when an isovalue changed). Returns how many. */
#define WND_MAX_STAGE_ROWS 12
typedef struct wnd_stage_row {
  const char *name;
  double ms;
} wnd_stage_row;
int wnd_overlay_stage_rows(const ir_frame_stats *stats, wnd_stage_row rows[WND_MAX_STAGE_ROWS]);

/* Appends the overlay (panels, text, bars) to `mesh` and returns the rectangle it covers,
 * as x, y, width, height in window pixels, and that of the colour bar's strip (all zero when
 * colouring by the surfaces' colours). The strip is WND_COLORBAR_STEPS flat quads of equal
 * width, quad k in the map's colour at the middle of its part of the range. */
#define WND_COLORBAR_STEPS 128
void wnd_overlay_build(const wnd_overlay_info *info, wnd_mesh *mesh, int rect[4], int colorbar[4]);
/* The time line's text lines (wnd_lines; a line starting with '!' is a warning). */
void wnd_overlay_timeline_lines(const wnd_timeline *t, wnd_lines *lines);

/* The window while a volume loads: a panel in the middle with what is read, how much of it and
 * how fast, over a bar whose filled part is done / total of its track (bar: the filled part's
 * x, y, width, height; track: the whole track's). total 0: the size is not known yet. */
void wnd_overlay_progress(wnd_mesh *mesh, int window_width, int window_height, const char *name, size_t done,
                          size_t total, double seconds, int bar[4], int track[4]);

#endif
