/* inkray [OPTIONS] [VOLUME] with a display: the interactive window.
 *
 * An SDL2 window with an OpenGL 3.3 core context (GLEW). Every frame: input (a person's, or a
 * --script's turned into the same SDL events), one ir_render_frame, the image into a texture
 * (present.c: CUDA-GL interop or a host copy), the texture and the overlay drawn, buffers
 * swapped. Switching the method, pipeline, surfaces, clipping or colouring changes only the next
 * frame's ir_frame_desc (the look, wnd_look in look_edit.c, goes in through app_look_apply):
 * nothing is reloaded. Stage times come from a separate diagnostic frame every
 * half second, so that the FPS shown is that of plain frames.
 *
 * Output: switches and screenshots print one line each on stdout (a screenshot's line carries
 * the camera, settings and look of its frame, so that it can be rendered again); the exit
 * prints the frame count and median frame time. Errors go to stderr; exit 2 for bad options,
 * 1 for failures while running. */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <SDL.h>
#include <cuda_runtime_api.h>

#include "app/app.h"
#include "app/window/window_gl.h"

/* ---- Options ----------------------------------------------------------------------------------- */
typedef struct win_options {
  ir_volume_desc volume;
  ir_device device;
  bool size_fixed; /* --size: the render resolution stays width x height */
  int width, height;
  bool window_given;
  int window_width, window_height; /* --window */
  int vsync;       /* 1 on, 0 off, -1 not given: on, off for --bench-window */
  bool vsync_given;
  bool present_given;
  wnd_present_path present; /* --present */
  bool bench;      /* --bench-window */
  int bench_frames;
  bool bench_frames_given;
  double rate;     /* --rate: time series steps a second while playing */
  const char *script;
  ir_compact_method method;
  ir_pipeline pipeline;
  bool method_given, pipeline_given;
  bool iso_given;
  double iso;
  int threads;
  ir_axis up; /* --up; IR_AXIS_NONE: the volume's header, else +z */
  app_look look; /* --surface, --clip-box, --clip-plane, --color-by, --colormap, ... */
  const char *mesh_dir; /* --mesh-dir: where E writes meshes (default: beside the volume) */
} win_options;

static void print_help(FILE *to) {
  fputs("Usage: inkray [OPTIONS] [VOLUME]   (with a display)\n"
        "\n"
        "Opens a window showing the volume's isosurfaces, ray-cast every frame, with an overlay of\n"
        "frame and stage times, the surfaces, the clipping and the colour bar.\n"
        "\n"
        "Options:\n"
        "  --device gpu|cpu      renderer (default gpu; without a CUDA device, cpu)\n"
        "  --size WxH            fixed render resolution (default: follows the window)\n"
        "  --window WxH          initial window size (default 1280x720, or --size)\n"
        "  --vsync on|off        wait for the display's refresh (default on; off with\n"
        "                        --bench-window); --no-vsync is --vsync off\n"
        "  --present PATH        how frames reach the window: egl-image, pbo or host-copy (default:\n"
        "                        the first that works, in that order; docs/window.md)\n"
        "  --bench-window        measure: the same scene headless and in the window, for each\n"
        "                        pipeline of the P cycle (or --pipeline), printing both FPS and\n"
        "                        their ratio, then exit\n"
        "  --bench-frames N      frames of each measurement (default 2000)\n"
        "  --rate STEPS          time series: steps a second while playing (default 10)\n"
        "  --method NAME         compaction method to start with:",
        to);
  for (int k = 0; k < IR_COMPACT_METHOD_COUNT; k++) fprintf(to, " %s", ir_compact_methods()[k].name);
  fputs("\n"
        "  --pipeline single|persistent|multi|paper  the single kernel (default, the fastest),\n"
        "                        the InK pipelines: one persistent kernel, the multi-kernel\n"
        "                        design, the paper's pipeline as published (--method alone:\n"
        "                        persistent)\n"
        "  --iso V               isovalue of the surface to start with, in data units (default:\n"
        "                        the volume's first suggested one; --surface replaces it)\n"
        "  --threads N           CPU renderer threads (default: all cores)\n"
        "  --up x|y|z|-x|-y|-z   volume axis shown pointing up (default: the file's header, else z)\n"
        "  --script FILE         timed key/mouse/resize/screenshot/quit events (docs/window.md)\n"
        "  --mesh-dir DIR        folder for the meshes E writes (default: the volume's folder; the\n"
        "                        current one for builtin volumes)\n"
        "  --help                this text\n"
        "\n"
        "Controls: left-drag orbit, right/middle-drag pan, wheel zoom, 1..5 method, Tab next method,\n"
        "P pipeline (single, persistent, multi, paper), Up/Down isovalue of the selected surface (Shift:\n"
        "coarse), N add a surface, Delete remove it, Left/Right select one, C colour (Shift+C back),\n"
        "PageUp/PageDown opacity, B clip box (Shift+B next face, Shift+left-drag moves it),\n"
        "L clip plane (Shift+L facing the view, Shift+right-drag moves it), K colour by\n"
        "surface/gradient/volume, M colour map (Shift+M back), R reset view, U flip the view\n"
        "(Shift+U: next up axis), S or F12 screenshot, E the surfaces as a mesh (PLY), F overlay,\n"
        "H key help, Esc or Q quit.\n"
        "A time series (VOLUME a pattern such as data_%04d.raw, a glob, a folder, a .pvd, a 4-D\n"
        "NRRD or NIfTI): Space play/pause, Shift+Right/Shift+Left or . and , one step, Home/End\n"
        "first/last step, ] and [ play twice/half as fast.\n"
        "\n",
        to);
  cli_print_look_options(to);
  cli_print_volume_options(to);
}

__attribute__((format(printf, 1, 2))) static int bad_option(const char *format, ...) {
  va_list args;
  va_start(args, format);
  fputs("inkray: ", stderr);
  vfprintf(stderr, format, args);
  fputs(" (see inkray --help)\n", stderr);
  va_end(args);
  return 2;
}

/* Returns -1 to go on, else the exit status (0 after --help). */
static int parse_options(int argc, char **argv, win_options *o) {
  *o = (win_options){.device = IR_DEVICE_GPU, .method = IR_COMPACT_INK_COMPACT, .pipeline = IR_PIPELINE_DEFAULT,
                     .vsync = -1, .bench_frames = 2000, .rate = 10.0};
  o->volume.level = IR_LEVEL_AUTO; /* multiscale sources: the finest level the device holds */
  app_look_init(&o->look);
  for (int i = 1; i < argc; i++) {
    const char *opt = argv[i];
    char err[IR_ERR_LEN] = {0};
    int volume_option = cli_parse_volume_option(argc, argv, &i, &o->volume, err);
    if (volume_option < 0) return bad_option("%s", err);
    if (volume_option > 0) continue;
    int look_option = cli_parse_look_option(argc, argv, &i, &o->look, err);
    if (look_option < 0) return bad_option("%s", err);
    if (look_option > 0) {
      if (o->look.depth_path) return bad_option("--depth writes a headless run's depth image; use inkray --headless");
      continue;
    }
    if (strcmp(opt, "--help") == 0 || strcmp(opt, "-h") == 0) {
      print_help(stdout);
      return 0;
    }
    if (strcmp(opt, "--no-vsync") == 0) {
      o->vsync = 0;
      continue;
    }
    if (strcmp(opt, "--bench-window") == 0) {
      o->bench = true;
      continue;
    }
    if (opt[0] != '-' || opt[1] == '\0') {
      if (o->volume.source) return bad_option("two volumes given ('%s' and '%s'); the window shows one", o->volume.source, opt);
      o->volume.source = opt;
      continue;
    }
    static const char *const with_value[] = {"--device", "--size", "--window", "--script", "--method",
                                             "--pipeline", "--iso", "--threads", "--up", "--mesh-dir", "--vsync",
                                             "--present", "--bench-frames", "--rate", NULL};
    bool known = false;
    for (int k = 0; with_value[k]; k++) known |= strcmp(opt, with_value[k]) == 0;
    if (!known) return bad_option("unknown option '%s'", opt);
    if (i + 1 >= argc) return bad_option("%s needs a value", opt);
    const char *value = argv[++i];
    long number = 0;
    if (strcmp(opt, "--device") == 0) {
      if (!ir_device_parse(value, &o->device)) return bad_option("--device '%s': use gpu or cpu", value);
    } else if (strcmp(opt, "--size") == 0) {
      if (!cli_parse_size2(value, &o->width, &o->height))
        return bad_option("--size '%s': expected WxH with each from 1 to 16384, e.g. 1280x720", value);
      o->size_fixed = true;
    } else if (strcmp(opt, "--window") == 0) {
      if (!cli_parse_size2(value, &o->window_width, &o->window_height))
        return bad_option("--window '%s': expected WxH with each from 1 to 16384, e.g. 1280x720", value);
      o->window_given = true;
    } else if (strcmp(opt, "--script") == 0) {
      o->script = value;
    } else if (strcmp(opt, "--method") == 0) {
      o->method_given = true;
      if (!ir_compact_method_parse(value, &o->method))
        return bad_option("--method '%s': unknown method; valid: ink-compact, ink-collate, thrust, jumping-jack, redzone", value);
    } else if (strcmp(opt, "--pipeline") == 0) {
      o->pipeline_given = true;
      if (!ir_pipeline_parse(value, &o->pipeline))
        return bad_option("--pipeline '%s': use single, persistent, multi, paper (or plain, the baseline)", value);
    } else if (strcmp(opt, "--iso") == 0) {
      if (!app_parse_isovalue(value, &o->iso)) return bad_option("--iso '%s': expected a number in data units", value);
      o->iso_given = true;
    } else if (strcmp(opt, "--up") == 0) {
      if (!ir_axis_parse(value, &o->up)) return bad_option("--up '%s': use x, y, z, -x, -y or -z", value);
    } else if (strcmp(opt, "--mesh-dir") == 0) {
      char probe[4096];
      snprintf(probe, sizeof probe, "%s/mesh.ply", value);
      if (ir_mesh_check_output(probe, err) != IR_OK) return bad_option("--mesh-dir '%s': %s", value, err);
      o->mesh_dir = value;
    } else if (strcmp(opt, "--vsync") == 0) {
      if (strcmp(value, "on") != 0 && strcmp(value, "off") != 0) return bad_option("--vsync '%s': use on or off", value);
      o->vsync = strcmp(value, "on") == 0;
    } else if (strcmp(opt, "--present") == 0) {
      if (!wnd_present_path_parse(value, &o->present))
        return bad_option("--present '%s': use egl-image, pbo or host-copy", value);
      o->present_given = true;
    } else if (strcmp(opt, "--rate") == 0) {
      if (!cli_parse_float(value, &o->rate) || !(o->rate >= 0.1 && o->rate <= 1000.0))
        return bad_option("--rate '%s': expected time series steps a second, from 0.1 to 1000", value);
    } else if (strcmp(opt, "--bench-frames") == 0) {
      if (!cli_parse_int(value, 10, 1000000, &number))
        return bad_option("--bench-frames '%s': expected a whole number from 10 to 1000000", value);
      o->bench_frames = (int)number;
      o->bench_frames_given = true;
    } else {
      if (!cli_parse_int(value, 1, 4096, &number)) return bad_option("--threads '%s': expected a whole number from 1 to 4096", value);
      o->threads = (int)number;
    }
  }
  if (o->method_given && !o->pipeline_given) o->pipeline = IR_PIPELINE_INK; /* a method asks for compaction */
  if (o->bench && o->script) return bad_option("--bench-window runs its own frames; it takes no --script");
  /* A benchmark measures the renderer and the display path, not the display's refresh. */
  o->vsync_given = o->vsync >= 0;
  if (o->vsync < 0) o->vsync = o->bench ? 0 : 1;
  return -1;
}

/* ---- State ------------------------------------------------------------------------------------- */
#define STAGE_SAMPLE_SECONDS 0.5
#define FRAME_HISTORY 8192
/* Weight of the newest frame in the smoothed FPS: about the last 20 frames count. */
#define SMOOTHING 0.05
#define OVERLAY_REFRESH_SECONDS 0.1

typedef struct win_state {
  app_opened opened;     /* the volume or series and its renderer (app/open.c) */
  ir_volume volume;      /* opened.volume's fields (not owned); a series: the step drawn's range */
  ir_renderer *renderer; /* opened.renderer */
  ir_device device;
  char device_note[160];
  SDL_Window *window;
  wnd_gl gl;
  wnd_present present;
  wnd_mesh overlay_mesh;

  wnd_view view;
  ir_axis start_up; /* the up axis R goes back to */
  int method_index; /* row of ir_compact_methods() */
  ir_pipeline pipeline;
  wnd_look look;    /* surfaces, clipping, colour source and map */
  double iso_step;
  ir_volume color_volume; /* --color-by FILE */
  bool have_color_volume;
  float auto_range[IR_COLOR_SOURCE_COUNT][2]; /* colour ranges when --color-range is not given */
  bool auto_range_ready[IR_COLOR_SOURCE_COUNT];
  bool overlay, help, quit;
  int drag_button;  /* SDL_BUTTON_*, 0 when not dragging */
  bool shift_down;  /* Shift held, from key events (a script's drags send them too) */
  bool drag_shift;  /* the drag began with Shift held: it moves a clip face or plane */
  bool drag_ctrl;   /* the drag began with Ctrl held: it moves the light */
  bool drag_clipped; /* the drag moved a clip face or plane: say where it ended */
  bool screenshot_pending;
  char screenshot_path[512];
  int screenshot_count;
  const win_options *options;
  /* Multiscale volumes (OME-Zarr): another level opened behind the frames, swapped in when ready
   * (the coarsest first, then --level auto's; - and = step a level coarser and finer). */
  struct win_level_loader *level_loader;
  struct win_level_loader *level_shown; /* the loader whose volume s->opened's renderer was made
                                           from (it keeps a pointer to it): kept while drawn */
  bool levels_switchable;
  ir_extractor *extractor; /* E: made at the first mesh, on the renderer's device */
  char mesh_note[96];      /* the last mesh, for the overlay */

  long frames;
  double smoothed_frame_ms, smoothed_render_ms;
  long render_samples;
  bool overlay_dirty;      /* input since the overlay was built */
  double overlay_built;    /* when it was */
  unsigned long overlay_version; /* changes with every build (gl_draw uploads it then) */
  bool bench_running;      /* --bench-window measuring: no diagnostic frames */
  /* A time series (opened.series): the step drawn, playback, a skipped step's message. */
  size_t step;
  size_t played;           /* steps shown since play began */
  bool playing, waiting;
  int direction;
  double rate, step_due;
  char step_message[IR_ERR_LEN];
  double message_until;
  wnd_timeline timeline;
  bool drain;              /* show the newest frame (the end of a measurement) */
  double last_stage_time;
  long plain_since_stages; /* plain frames since the last diagnostic one */
  bool have_stages;
  ir_frame_stats stages, last;
  ir_camera camera; /* of the last frame */
  ir_frame_desc desc; /* of the last frame */
  size_t desc_step;   /* the time-series step it drew */
  const ir_renderer *desc_renderer; /* and the renderer that drew it (a new level swaps it) */
  uint32_t ao_frames; /* frames of the still view accumulated (ambient occlusion: a running mean) */
  double still_since; /* when the view last changed */
  bool still_reported; /* the still view's 64 samples per pixel were reported */
  int render_width, render_height;
  int overlay_rect[4], colorbar_rect[4];
  float *history; /* frame times in ms, the last FRAME_HISTORY plain frames */
  long history_count;
} win_state;

static double now_seconds(void) {
  return (double)SDL_GetPerformanceCounter() / (double)SDL_GetPerformanceFrequency();
}

static const char *method_name(const win_state *s) { return ir_compact_methods()[s->method_index].name; }

/* ---- Input ------------------------------------------------------------------------------------- */
static void request_screenshot(win_state *s, const char *path) {
  if (path && *path) {
    snprintf(s->screenshot_path, sizeof s->screenshot_path, "%s", path);
  } else {
    char stamp[32];
    time_t t = time(NULL);
    struct tm local;
    localtime_r(&t, &local);
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &local);
    snprintf(s->screenshot_path, sizeof s->screenshot_path, "inkray-%s-%d.png", stamp, s->screenshot_count + 1);
  }
  s->screenshot_pending = true;
}

/* A method key on a pipeline that does not compact switches to the fastest one that does, so
 * that the key always shows what the method costs. */
static void select_method(win_state *s, int index) {
  s->method_index = (index % IR_COMPACT_METHOD_COUNT + IR_COMPACT_METHOD_COUNT) % IR_COMPACT_METHOD_COUNT;
  printf("inkray: method %s\n", method_name(s));
  if (!ir_pipeline_compacts(s->pipeline)) {
    s->pipeline = IR_PIPELINE_INK;
    printf("inkray: pipeline %s\n", ir_pipeline_name(s->pipeline));
  }
}

static double selected_iso(const win_state *s) { return s->look.look.surfaces[s->look.selected].isovalue; }

/* One line for every change to the surfaces: the selected one and what it is. */
static void print_surface(const win_state *s) {
  const ir_surface *f = &s->look.look.surfaces[s->look.selected];
  char color[16];
  printf("inkray: surface %d/%d iso %.9g colour %s opacity %.3g\n", s->look.selected + 1, s->look.look.surface_count,
         f->isovalue, wnd_color_label(f->color, color), f->opacity);
}

static void step_iso(win_state *s, int direction, bool coarse) {
  double step = s->iso_step * (coarse ? 10.0 : 1.0);
  double iso = selected_iso(s) + direction * step;
  wnd_look_set_iso(&s->look, fmax(s->volume.value_min, fmin(s->volume.value_max, iso)));
  printf("inkray: iso %.9g\n", selected_iso(s));
  print_surface(s);
}

static const char *const FACE_NAMES[6] = {"x0", "x1", "y0", "y1", "z0", "z1"};

static void print_clip(const win_state *s) {
  const app_look *l = &s->look.look;
  const float *b = l->clip_box, *p = l->clip_plane;
  if (l->clip_box_on)
    printf("inkray: clip box on x %.9g,%.9g y %.9g,%.9g z %.9g,%.9g face %s\n", b[0], b[1], b[2], b[3], b[4], b[5],
           FACE_NAMES[s->look.clip_face]);
  else
    printf("inkray: clip box off\n");
  if (l->clip_plane_on)
    printf("inkray: clip plane on n %.9g,%.9g,%.9g d %.9g\n", p[0], p[1], p[2], p[3]);
  else
    printf("inkray: clip plane off\n");
}

/* The range a colour map spans: --color-range, else the source's own (computed once, when
 * first needed: the gradient's takes a pass over the volume). */
/* The volume frames draw, with its voxels on the host: a series' current step. */
static const ir_volume *drawn_volume(const win_state *s) {
  return s->opened.series ? app_player_volume(s->opened.player) : &s->volume;
}

static const float *color_range(win_state *s) {
  const app_look *l = &s->look.look;
  if (l->color_range_given || l->color_by == IR_COLOR_SURFACE) return l->color_range;
  if (!s->auto_range_ready[l->color_by]) {
    ir_color_range_auto(drawn_volume(s), s->have_color_volume ? &s->color_volume : NULL, l->color_by,
                        s->auto_range[l->color_by]);
    s->auto_range_ready[l->color_by] = true;
  }
  return s->auto_range[l->color_by];
}

static void print_color(win_state *s) {
  const app_look *l = &s->look.look;
  const float *range = color_range(s);
  printf("inkray: colour by %s colormap %s range %.9g,%.9g\n", ir_color_source_name(l->color_by),
         ir_colormap_name(l->colormap), range[0], range[1]);
}

/* Keys that edit the look; false when the key is not one of them. */
static bool on_look_key(win_state *s, SDL_Keycode key, bool shift) {
  wnd_look *w = &s->look;
  switch (key) {
  case SDLK_n:
    if (wnd_look_add_surface(w)) print_surface(s);
    else printf("inkray: already %d surfaces, the most a frame draws\n", IR_MAX_SURFACES);
    return true;
  case SDLK_DELETE:
  case SDLK_BACKSPACE:
    if (wnd_look_remove_surface(w)) print_surface(s);
    else printf("inkray: the last surface stays\n");
    return true;
  case SDLK_LEFT:
  case SDLK_RIGHT:
    wnd_look_select(w, key == SDLK_RIGHT ? 1 : -1);
    print_surface(s);
    return true;
  case SDLK_c:
    wnd_look_cycle_color(w, shift ? -1 : 1);
    print_surface(s);
    return true;
  case SDLK_PAGEUP:
  case SDLK_PAGEDOWN:
    wnd_look_step_opacity(w, key == SDLK_PAGEUP ? 1 : -1);
    print_surface(s);
    return true;
  case SDLK_b:
    if (shift) wnd_look_next_face(w);
    else wnd_look_toggle_clip_box(w);
    print_clip(s);
    return true;
  case SDLK_l:
    if (shift) wnd_look_plane_to_view(w, &s->camera, &s->volume);
    else wnd_look_toggle_clip_plane(w, &s->camera, &s->volume);
    print_clip(s);
    return true;
  case SDLK_k:
    wnd_look_cycle_color_by(w, s->have_color_volume);
    print_color(s);
    return true;
  case SDLK_m:
    wnd_look_cycle_colormap(w, shift ? -1 : 1);
    print_color(s);
    return true;
  case SDLK_o: { /* ambient occlusion: off, 4, 8, 16 rays per hit */
    int n = w->look.ao_samples;
    w->look.ao_samples = n == 0 ? 4 : n < 8 ? 8 : n < 16 ? 16 : 0;
    if (w->look.ao_samples) printf("inkray: ambient occlusion %d rays per hit\n", w->look.ao_samples);
    else printf("inkray: ambient occlusion off\n");
    return true;
  }
  case SDLK_d: { /* the sample step: 0.5 (the default), 0.25, 0.125 voxel */
    float step = w->look.sample_step > 0.0f ? w->look.sample_step : IR_SAMPLE_STEP_DEFAULT;
    w->look.sample_step = step > 0.3f ? 0.25f : step > 0.15f ? 0.125f : 0.0f;
    printf("inkray: samples every %g voxels%s\n",
           (double)(w->look.sample_step > 0.0f ? w->look.sample_step : IR_SAMPLE_STEP_DEFAULT),
           w->look.sample_step > 0.0f ? "" : " (the default)");
    return true;
  }
  case SDLK_g:
    w->look.shadows = !w->look.shadows;
    printf("inkray: shadows %s\n", w->look.shadows ? "on" : "off");
    return true;
  default: return false;
  }
}

/* Where E writes: --mesh-dir, else the volume's folder (for a folder volume, the folder it is in;
 * for a builtin one, the current folder), named after the volume, numbered past existing files. */
static void mesh_path(const win_state *s, char *path, size_t cap) {
  const char *source = s->options->volume.source ? s->options->volume.source : IR_DEFAULT_VOLUME;
  char dir[4096] = ".", stem[256];
  bool builtin = strncmp(source, "builtin:", 8) == 0;
  char trimmed[4096];
  snprintf(trimmed, sizeof trimmed, "%s", source);
  for (size_t n = strlen(trimmed); n > 1 && trimmed[n - 1] == '/'; n--) trimmed[n - 1] = '\0';
  const char *slash = strrchr(trimmed, '/');
  if (s->options->mesh_dir) snprintf(dir, sizeof dir, "%s", s->options->mesh_dir);
  else if (!builtin && slash) snprintf(dir, sizeof dir, "%.*s", slash == trimmed ? 1 : (int)(slash - trimmed), trimmed);
  snprintf(stem, sizeof stem, "%s", builtin || !slash ? trimmed : slash + 1);
  for (char *c = stem; *c; c++)
    if (*c == ':') *c = '-';
  char *dot = strchr(stem, '.');
  if (dot && dot != stem) *dot = '\0'; /* head.nii.gz -> head */
  for (int n = 1;; n++) {
    snprintf(path, cap, "%s/%s-mesh-%d.ply", dir, stem, n);
    if (access(path, F_OK) != 0 || n == 9999) break;
  }
}

/* E: the surfaces as the frame draws them (clipping, colours), extracted on the renderer's device. */
static void save_mesh(win_state *s) {
  char err[IR_ERR_LEN] = {0}, path[4400];
  ir_extractor_desc xd = {.device = s->device == IR_DEVICE_GPU ? IR_EXTRACT_GPU : IR_EXTRACT_CPU,
                          .cpu_threads = s->options->threads};
  /* The volume is set at every E: a time series' step changes under the window. */
  if ((!s->extractor && ir_extractor_create(&xd, &s->extractor, err) != IR_OK) ||
      app_mesh_set_volume(s->extractor, drawn_volume(s), s->have_color_volume ? &s->color_volume : NULL, err) != IR_OK) {
    fprintf(stderr, "inkray: mesh: %s\n", err);
    ir_extractor_destroy(s->extractor);
    s->extractor = NULL;
    snprintf(s->mesh_note, sizeof s->mesh_note, "!mesh failed (see the terminal)");
    return;
  }
  ir_extract_desc d;
  if (app_mesh_desc(&s->look.look, drawn_volume(s), 0, NULL, true, color_range(s), &d) == 0) {
    printf("inkray: mesh: every surface is hidden (opacity 0): nothing to extract\n");
    return;
  }
  mesh_path(s, path, sizeof path);
  app_mesh_saved saved;
  if (app_mesh_save(s->extractor, &d, path, &saved, err) != IR_OK) {
    fprintf(stderr, "inkray: mesh: %s\n", err);
    snprintf(s->mesh_note, sizeof s->mesh_note, "!mesh failed (see the terminal)");
    return;
  }
  printf("inkray: mesh %s surfaces=%d vertices=%zu triangles=%zu extract_ms=%.3f write_ms=%.3f device=%s\n", path,
         d.surface_count, saved.vertices, saved.triangles, saved.extract_ms, saved.write_ms, ir_device_name(s->device));
  snprintf(s->mesh_note, sizeof s->mesh_note, "mesh %zu triangles in %.1f ms", saved.triangles, saved.extract_ms);
}

/* ---- Time series playback ------------------------------------------------------------------------ */
/* Frames draw `step` from now on, if it has been read (wait: until it is). A step that cannot be
 * read is skipped: its message goes to stderr and, for a few seconds, to the overlay; frames go
 * on drawing the step before it, and playback moves on. Returns 0 when the step is drawn from
 * now on, -1 when it was skipped, 1 when it is not read yet (playback waits for the disk). */
static int go_to_step(win_state *s, size_t step, int direction, bool wait) {
  app_player *player = s->opened.player;
  app_player_aim(player, step, direction, true);
  app_step_info info;
  memset(&info, 0, sizeof info);
  int r = app_player_show(player, step, wait, &info);
  s->waiting = r == 1;
  if (r == 1) return 1;
  double now = now_seconds();
  s->step = step;
  s->step_due = now + 1.0 / s->rate;
  s->overlay_dirty = true;
  if (r < 0) {
    snprintf(s->step_message, sizeof s->step_message, "%.400s; skipped", info.err);
    s->message_until = now + 4.0;
    fprintf(stderr, "inkray: %s\n", s->step_message);
    return -1;
  }
  /* The step's values (the isovalue keys move within them). */
  const ir_volume *v = app_player_volume(player);
  s->volume.value_min = v->value_min;
  s->volume.value_max = v->value_max;
  s->volume.nonfinite_count = v->nonfinite_count;
  memset(s->auto_range_ready, 0, sizeof s->auto_range_ready); /* the gradient's range is the step's */
  return 0;
}

static size_t step_after(const win_state *s, int direction) {
  size_t n = ir_series_length(s->opened.series);
  return direction > 0 ? (s->step + 1) % n : (s->step + n - 1) % n;
}

static void print_step(const win_state *s, const char *what) {
  size_t n = ir_series_length(s->opened.series);
  printf("inkray: %s step %zu/%zu %s (t %.6g)\n", what, s->step + 1, n, ir_series_step_name(s->opened.series, s->step),
         ir_series_step_time(s->opened.series, s->step));
}

/* Each frame: while playing, the next step once its time has come and it has been read. */
static void playback_update(win_state *s) {
  if (!s->opened.series || !s->playing || now_seconds() < s->step_due) return;
  if (go_to_step(s, step_after(s, s->direction), s->direction, false) == 0) s->played++;
}

/* Keys of a time series; false when the key is not one of them (or there is no series). */
static bool on_series_key(win_state *s, SDL_Keycode key, bool shift) {
  if (!s->opened.series) return false;
  size_t n = ir_series_length(s->opened.series);
  switch (key) {
  case SDLK_SPACE:
    s->playing = !s->playing;
    s->step_due = now_seconds() + 1.0 / s->rate;
    if (s->playing) {
      s->played = 0;
      printf("inkray: play from step %zu/%zu at %.3g steps/s\n", s->step + 1, n, s->rate);
    } else {
      print_step(s, "pause at");
      printf("inkray: %zu steps played\n", s->played); /* skipped ones not counted */
    }
    s->overlay_dirty = true;
    return true;
  case SDLK_RIGHT:
  case SDLK_LEFT:
    if (!shift) return false; /* Left/Right alone select a surface */
    /* fall through */
  case SDLK_PERIOD:
  case SDLK_COMMA: {
    int direction = key == SDLK_RIGHT || key == SDLK_PERIOD ? 1 : -1;
    s->playing = false;
    go_to_step(s, step_after(s, direction), direction, true);
    print_step(s, "at");
    return true;
  }
  case SDLK_HOME:
  case SDLK_END:
    s->playing = false;
    go_to_step(s, key == SDLK_HOME ? 0 : n - 1, key == SDLK_HOME ? 1 : -1, true);
    print_step(s, "at");
    return true;
  case SDLK_RIGHTBRACKET:
  case SDLK_LEFTBRACKET:
    s->rate = key == SDLK_RIGHTBRACKET ? fmin(1000.0, s->rate * 2.0) : fmax(0.1, s->rate / 2.0);
    printf("inkray: rate %.3g steps/s\n", s->rate);
    s->overlay_dirty = true;
    return true;
  default: return false;
  }
}

/* The P key's cycle: the single kernel and the InK pipelines (the plain baseline only through
 * --pipeline). */
static ir_pipeline next_pipeline(ir_pipeline p) {
  static const ir_pipeline cycle[] = {IR_PIPELINE_SINGLE, IR_PIPELINE_PERSISTENT, IR_PIPELINE_MULTI, IR_PIPELINE_PAPER};
  const int n = (int)(sizeof cycle / sizeof cycle[0]);
  for (int i = 0; i < n; i++)
    if (cycle[i] == p) return cycle[(i + 1) % n];
  return cycle[0];
}

static void level_step(win_state *s, int delta); /* multiscale levels, below */

static void on_key(win_state *s, SDL_Keycode key, Uint16 mod) {
  bool shift = (mod & KMOD_SHIFT) != 0;
  if (key >= SDLK_1 && key < SDLK_1 + IR_COMPACT_METHOD_COUNT) {
    select_method(s, (int)(key - SDLK_1));
    return;
  }
  if (key == SDLK_LSHIFT || key == SDLK_RSHIFT) {
    s->shift_down = true;
    return;
  }
  if (on_series_key(s, key, shift)) {
    fflush(stdout);
    return;
  }
  if (on_look_key(s, key, shift)) {
    fflush(stdout);
    return;
  }
  switch (key) {
  case SDLK_ESCAPE:
  case SDLK_q: s->quit = true; break;
  case SDLK_TAB: select_method(s, s->method_index + (shift ? -1 : 1)); break;
  case SDLK_p:
    s->pipeline = next_pipeline(s->pipeline);
    printf("inkray: pipeline %s\n", ir_pipeline_name(s->pipeline));
    break;
  case SDLK_UP: step_iso(s, 1, shift); break;
  case SDLK_DOWN: step_iso(s, -1, shift); break;
  case SDLK_r: s->view = wnd_view_default(s->start_up); break;
  case SDLK_u:
    if (shift)
      wnd_view_next_up(&s->view);
    else
      wnd_view_flip_up(&s->view);
    printf("inkray: up %s\n", ir_axis_name(s->view.up));
    break;
  case SDLK_s:
  case SDLK_F12: request_screenshot(s, NULL); break;
  case SDLK_e: save_mesh(s); break;
  case SDLK_f: s->overlay = !s->overlay; break;
  case SDLK_MINUS: level_step(s, +1); break;
  case SDLK_EQUALS: level_step(s, -1); break;
  case SDLK_h: s->help = !s->help; break;
  default: break;
  }
  fflush(stdout);
}

static void on_event(win_state *s, const SDL_Event *e) {
  s->overlay_dirty = true;
  switch (e->type) {
  case SDL_QUIT: s->quit = true; break;
  case SDL_KEYDOWN: on_key(s, e->key.keysym.sym, e->key.keysym.mod); break;
  case SDL_KEYUP:
    if (e->key.keysym.sym == SDLK_LSHIFT || e->key.keysym.sym == SDLK_RSHIFT) s->shift_down = false;
    break;
  case SDL_MOUSEBUTTONDOWN:
    if (!s->drag_button) {
      s->drag_button = e->button.button;
      s->drag_shift = s->shift_down || (SDL_GetModState() & KMOD_SHIFT) != 0;
      s->drag_ctrl = (SDL_GetModState() & KMOD_CTRL) != 0;
      s->drag_clipped = false;
    }
    break;
  case SDL_MOUSEBUTTONUP:
    if (s->drag_button == e->button.button) {
      s->drag_button = 0;
      if (s->drag_clipped) print_clip(s);
      if (s->drag_ctrl && s->look.look.light_on)
        printf("inkray: light %.0f,%.0f\n", (double)s->look.look.light[0], (double)s->look.look.light[1]);
      fflush(stdout);
    }
    break;
  case SDL_MOUSEMOTION: {
    float dx = (float)e->motion.xrel, dy = (float)e->motion.yrel;
    int w = 0, h = 0;
    SDL_GetWindowSize(s->window, &w, &h); /* mouse motion is in window units, not pixels */
    bool left = s->drag_button == SDL_BUTTON_LEFT;
    bool other = s->drag_button == SDL_BUTTON_RIGHT || s->drag_button == SDL_BUTTON_MIDDLE;
    /* With Shift a drag moves the clip box's face (left) or the plane (right, middle) when that
     * one is on; otherwise it turns or pans the view as usual. */
    if (left && s->drag_ctrl) { /* the light: half a degree per unit of motion, in the camera's frame */
      app_look *l = &s->look.look;
      if (!l->light_on) l->light[0] = l->light[1] = 0.0f;
      l->light_on = true;
      float az = l->light[0] + 0.5f * dx;
      l->light[0] = az > 180.0f ? az - 360.0f : az < -180.0f ? az + 360.0f : az;
      l->light[1] = fminf(fmaxf(l->light[1] - 0.5f * dy, -90.0f), 90.0f);
    } else if (left && s->drag_shift && s->look.look.clip_box_on) {
      wnd_look_drag_face(&s->look, dx, dy, h);
      s->drag_clipped = true;
    } else if (other && s->drag_shift && s->look.look.clip_plane_on) {
      wnd_look_drag_plane(&s->look, &s->volume, dx, dy, h);
      s->drag_clipped = true;
    } else if (left) {
      wnd_view_orbit(&s->view, dx, dy);
    } else if (other) {
      wnd_view_pan(&s->view, &s->volume, dx, dy, h);
    }
    break;
  }
  case SDL_MOUSEWHEEL: {
    float steps = e->wheel.preciseY != 0.0f ? e->wheel.preciseY : (float)e->wheel.y;
    if (e->wheel.direction == SDL_MOUSEWHEEL_FLIPPED) steps = -steps;
    wnd_view_zoom(&s->view, steps);
    break;
  }
  default: break;
  }
}

/* ---- Script ------------------------------------------------------------------------------------ */
typedef struct win_script {
  wnd_script script;
  int next;
  double start;        /* time of the first frame */
  long dispatch_frame; /* frame count when the last event went out */
  bool resizing;       /* waiting for the window to take the size asked for */
  int want_width, want_height;
  double resize_deadline;
} win_script;

/* SDL names keys "Tab", "Up", "F12", "Escape", "1", "Q"...; checked before the window runs. */
static int check_script_keys(const wnd_script *script, const char *path) {
  for (int k = 0; k < script->count; k++) {
    const wnd_event *ev = &script->events[k];
    if (ev->kind == WND_EVENT_KEY && SDL_GetKeyFromName(ev->key) == SDLK_UNKNOWN) {
      fprintf(stderr, "inkray: %s:%d: unknown key '%s'; use SDL key names such as Tab, Up, F12, Escape, 1, Q\n",
              path, ev->line, ev->key);
      return 2;
    }
    /* Screenshot files are checked now, not when the window gets there. */
    char err[IR_ERR_LEN] = {0};
    if (ev->kind == WND_EVENT_SCREENSHOT && ev->path[0] && !cli_check_output_path("screenshot", ev->path, err)) {
      fprintf(stderr, "inkray: %s:%d: %s\n", path, ev->line, err);
      return 2;
    }
  }
  return 0;
}

/* A full event queue drops the event; the run goes on, but the log says which one was lost. */
static void push(SDL_Event *e, const wnd_event *ev) {
  if (SDL_PushEvent(e) < 0)
    fprintf(stderr, "inkray: script line %d: event not delivered: %s\n", ev->line, SDL_GetError());
}

static void push_key(const win_state *s, const wnd_event *ev) {
  SDL_Event e = {0};
  e.type = SDL_KEYDOWN;
  e.key.windowID = SDL_GetWindowID(s->window);
  e.key.state = SDL_PRESSED;
  e.key.keysym.sym = SDL_GetKeyFromName(ev->key);
  e.key.keysym.scancode = SDL_GetScancodeFromKey(e.key.keysym.sym);
  e.key.keysym.mod = ev->shift ? KMOD_LSHIFT : KMOD_NONE;
  push(&e, ev);
  e.type = SDL_KEYUP;
  e.key.state = SDL_RELEASED;
  push(&e, ev);
}

static void push_drag(const win_state *s, const wnd_event *ev) {
  static const Uint8 buttons[3] = {SDL_BUTTON_LEFT, SDL_BUTTON_RIGHT, SDL_BUTTON_MIDDLE};
  Uint8 button = buttons[ev->button];
  Uint32 id = SDL_GetWindowID(s->window);
  SDL_Event e = {0};
  /* Shift is pressed before the button and released after it, as a person would. */
  SDL_Event shift = {0};
  shift.key = (SDL_KeyboardEvent){.type = SDL_KEYDOWN, .windowID = id, .state = SDL_PRESSED,
                                  .keysym = {.scancode = SDL_SCANCODE_LSHIFT, .sym = SDLK_LSHIFT, .mod = KMOD_LSHIFT}};
  if (ev->shift) push(&shift, ev);
  e.type = SDL_MOUSEBUTTONDOWN;
  e.button = (SDL_MouseButtonEvent){.type = SDL_MOUSEBUTTONDOWN, .windowID = id, .button = button,
                                    .state = SDL_PRESSED, .clicks = 1, .x = ev->x0, .y = ev->y0};
  push(&e, ev);
  e.motion = (SDL_MouseMotionEvent){.type = SDL_MOUSEMOTION, .windowID = id, .state = SDL_BUTTON(button),
                                    .x = ev->x1, .y = ev->y1, .xrel = ev->x1 - ev->x0, .yrel = ev->y1 - ev->y0};
  push(&e, ev);
  e.button = (SDL_MouseButtonEvent){.type = SDL_MOUSEBUTTONUP, .windowID = id, .button = button,
                                    .state = SDL_RELEASED, .clicks = 1, .x = ev->x1, .y = ev->y1};
  push(&e, ev);
  shift.key.type = SDL_KEYUP;
  shift.key.state = SDL_RELEASED;
  shift.key.keysym.mod = KMOD_NONE;
  if (ev->shift) push(&shift, ev);
}

static void push_wheel(const win_state *s, const wnd_event *ev) {
  SDL_Event e = {0};
  e.wheel = (SDL_MouseWheelEvent){.type = SDL_MOUSEWHEEL, .windowID = SDL_GetWindowID(s->window),
                                  .y = (Sint32)lroundf(ev->wheel), .preciseY = ev->wheel,
                                  .direction = SDL_MOUSEWHEEL_NORMAL};
  push(&e, ev);
}

/* Sends at most one event per frame, so that every switch is rendered and seen; a resize holds
 * the events after it until the window has its new size (or 3 s have passed). */
static void script_step(win_script *run, win_state *s) {
  if (run->next >= run->script.count || s->frames == 0 || s->frames <= run->dispatch_frame) return;
  double t = now_seconds();
  if (run->resizing) {
    int w = 0, h = 0;
    SDL_GetWindowSize(s->window, &w, &h);
    if ((w != run->want_width || h != run->want_height) && t < run->resize_deadline) return;
    if (w != run->want_width || h != run->want_height)
      fprintf(stderr, "inkray: script: the window is %dx%d, not the %dx%d asked for; going on\n", w, h,
              run->want_width, run->want_height);
    run->resizing = false;
  }
  const wnd_event *ev = &run->script.events[run->next];
  if (t - run->start < ev->time_s) return;
  run->next++;
  run->dispatch_frame = s->frames;
  switch (ev->kind) {
  case WND_EVENT_KEY: push_key(s, ev); break;
  case WND_EVENT_DRAG: push_drag(s, ev); break;
  case WND_EVENT_WHEEL: push_wheel(s, ev); break;
  case WND_EVENT_RESIZE:
    SDL_SetWindowSize(s->window, ev->width, ev->height);
    run->resizing = true;
    run->want_width = ev->width;
    run->want_height = ev->height;
    run->resize_deadline = t + 3.0;
    break;
  case WND_EVENT_SCREENSHOT: request_screenshot(s, ev->path); break;
  case WND_EVENT_QUIT: {
    SDL_Event e = {.type = SDL_QUIT};
    push(&e, ev);
    break;
  }
  }
}

/* ---- Frames ------------------------------------------------------------------------------------ */
static void take_screenshot(win_state *s, int width, int height) {
  s->screenshot_pending = false;
  char err[IR_ERR_LEN] = {0};
  uint8_t *rgba = malloc((size_t)width * (size_t)height * 4);
  if (!rgba) {
    fprintf(stderr, "inkray: screenshot %s: out of memory for %dx%d\n", s->screenshot_path, width, height);
    return;
  }
  /* A screenshot that fails (a read-only folder, say) is reported; the window keeps running. */
  if (!wnd_gl_read_pixels(width, height, rgba, err) || !app_write_png(s->screenshot_path, width, height, rgba, err)) {
    fprintf(stderr, "inkray: screenshot failed: %s\n", err);
    free(rgba);
    return;
  }
  free(rgba);
  s->screenshot_count++;
  const int *r = s->overlay_rect;
  const ir_camera *c = &s->camera;
  printf("inkray: screenshot %s size=%dx%d render=%dx%d iso=%.9g method=%s pipeline=%s device=%s "
         "display=%s overlay=%d,%d,%d,%d fps=%.1f frame_ms=%.3f "
         "eye=%.9g,%.9g,%.9g target=%.9g,%.9g,%.9g up=%.9g,%.9g,%.9g fov=%.9g",
         s->screenshot_path, width, height, s->render_width, s->render_height, selected_iso(s), method_name(s),
         ir_pipeline_name(s->pipeline), ir_device_name(s->device), wnd_present_path_name(s->present.path),
         r[0], r[1], r[2], r[3], s->smoothed_frame_ms > 0 ? 1000.0 / s->smoothed_frame_ms : 0, s->smoothed_frame_ms, c->eye[0], c->eye[1],
         c->eye[2], c->target[0], c->target[1], c->target[2], c->up[0], c->up[1], c->up[2], c->fov_y_degrees);
  /* The look as the frame got it, so that the frame can be drawn again exactly. */
  const ir_frame_desc *d = &s->desc;
  printf(" surfaces=");
  for (int k = 0; k < d->surface_count; k++) {
    const ir_surface *f = &d->surfaces[k];
    printf("%s%.9g,%.9g,%.9g,%.9g,%.9g", k ? ";" : "", f->isovalue, f->color[0], f->color[1], f->color[2], f->opacity);
  }
  printf(" selected=%d clip=%.9g,%.9g,%.9g,%.9g,%.9g,%.9g", s->look.selected + 1, d->clip_lo[0], d->clip_lo[1],
         d->clip_lo[2], d->clip_hi[0], d->clip_hi[1], d->clip_hi[2]);
  if (d->clip_plane_on)
    printf(" plane=%.9g,%.9g,%.9g,%.9g", d->clip_plane[0], d->clip_plane[1], d->clip_plane[2], d->clip_plane[3]);
  else
    printf(" plane=off");
  const int *b = s->colorbar_rect;
  printf(" color_by=%s colormap=%s range=%.9g,%.9g refine=%s sample_step=%.9g colorbar=%d,%d,%d,%d",
         ir_color_source_name(d->color_by), ir_colormap_name(d->colormap), d->color_range[0], d->color_range[1],
         d->texture_refine ? "texture" : "exact", d->sample_step, b[0], b[1], b[2], b[3]);
  /* Occlusion rays, radius and the frames of the running mean shown; shadows; the light. */
  printf(" ao=%d,%.9g,%u shadows=%d", d->ao_samples, d->ao_radius, d->accumulate ? d->sample_frame + 1 : 1, d->shadows);
  if (d->light_on) printf(" light=%.9g,%.9g", d->light[0], d->light[1]);
  else printf(" light=off");
  /* A time series: the step drawn (0-based) and the slider's track. */
  if (s->opened.series) {
    const int *t = s->timeline.slider;
    printf(" step=%zu steps=%zu slider=%d,%d,%d,%d", s->step, ir_series_length(s->opened.series), t[0], t[1], t[2], t[3]);
  }
  printf("\n");
  fflush(stdout);
}

static void build_overlay(win_state *s, int width, int height) {
  s->overlay_mesh.count = 0;
  s->overlay_version++;
  memset(s->overlay_rect, 0, sizeof s->overlay_rect);
  memset(s->colorbar_rect, 0, sizeof s->colorbar_rect);
  if (!s->overlay) return;
  wnd_overlay_info info = {
      .window_width = width,
      .window_height = height,
      .fps = s->smoothed_frame_ms > 0 ? 1000.0 / s->smoothed_frame_ms : 0,
      .frame_ms = s->smoothed_frame_ms,
      .render_ms = s->smoothed_render_ms,
      .device = ir_device_name(s->device),
      .device_note = s->device_note[0] ? s->device_note : NULL,
      .display_path = wnd_present_path_name(s->present.path),
      .method_index = s->method_index,
      .pipeline = s->pipeline,
      .isovalue = selected_iso(s),
      .volume = &s->volume,
      .render_width = s->render_width,
      .render_height = s->render_height,
      .have_stages = s->have_stages,
      .stages = s->stages,
      .last = s->last,
      .look = &s->look,
      .color_range = {s->desc.color_range[0], s->desc.color_range[1]},
      .show_help = s->help,
      .mesh_note = s->mesh_note[0] ? s->mesh_note : NULL,
      .ao_frames = s->ao_frames,
  };
  if (s->opened.series) {
    double now = now_seconds();
    s->timeline = (wnd_timeline){.step = s->step,
                                 .steps = ir_series_length(s->opened.series),
                                 .time = ir_series_step_time(s->opened.series, s->step),
                                 .name = ir_series_step_name(s->opened.series, s->step),
                                 .playing = s->playing,
                                 .rate = s->rate,
                                 .waiting = s->playing && s->waiting,
                                 .message = now < s->message_until ? s->step_message : NULL};
    info.timeline = &s->timeline;
  }
  wnd_overlay_build(&info, &s->overlay_mesh, s->overlay_rect, s->colorbar_rect);
}

static void record_frame_time(win_state *s, double ms) {
  if (s->history_count == 0) s->smoothed_frame_ms = ms;
  s->smoothed_frame_ms += SMOOTHING * (ms - s->smoothed_frame_ms);
  s->history[s->history_count++ % FRAME_HISTORY] = (float)ms;
}

/* The renderer's own frame time: every frame's on the CPU renderer, smoothed; on the GPU the
 * sampled frames' (plain frames are not waited for, so their time is not known). */
static void record_render_time(win_state *s, double render_ms, bool sampled) {
  if (sampled || s->render_samples == 0) s->smoothed_render_ms = render_ms;
  else s->smoothed_render_ms += SMOOTHING * (render_ms - s->smoothed_render_ms);
  s->render_samples++;
}

/* Whether this frame rebuilds the overlay: after input, for a screenshot, and a few times a
 * second for the changing figures (text is read at that pace; rebuilding it every frame would
 * cost more CPU than a fast frame has). */
static bool overlay_due(win_state *s, double now) {
  if (!s->overlay_dirty && now - s->overlay_built < OVERLAY_REFRESH_SECONDS && !s->screenshot_pending) return false;
  s->overlay_dirty = false;
  s->overlay_built = now;
  return true;
}

/* Renders, presents and draws one frame; returns false after printing an error.
 *
 * On the GPU the frame is only queued: the renderer returns without waiting (no stats asked
 * for), the copy into the present ring is queued behind it, and the frame before it is drawn
 * meanwhile (present.c). Every half second a diagnostic frame is waited for instead, timing the
 * renderer and each stage; it is left out of the FPS. */
/* Whether two frames draw the same picture (what accumulation may average): everything but how
 * they are timed and their place in the occlusion sequence. */
static bool same_picture(const ir_frame_desc *a, const ir_frame_desc *b) {
  bool same = a->width == b->width && a->height == b->height && a->isovalue == b->isovalue &&
              a->surface_count == b->surface_count && a->clip_plane_on == b->clip_plane_on &&
              a->color_by == b->color_by && a->colormap == b->colormap && a->texture_refine == b->texture_refine &&
              a->sample_step == b->sample_step &&
              a->ao_samples == b->ao_samples && a->ao_radius == b->ao_radius && a->shadows == b->shadows &&
              a->light_on == b->light_on && a->pipeline == b->pipeline && a->method == b->method;
  same = same && memcmp(&a->camera, &b->camera, sizeof a->camera) == 0 &&
         memcmp(a->surfaces, b->surfaces, sizeof a->surfaces) == 0 &&
         memcmp(a->clip_lo, b->clip_lo, sizeof a->clip_lo) == 0 && memcmp(a->clip_hi, b->clip_hi, sizeof a->clip_hi) == 0 &&
         memcmp(a->clip_plane, b->clip_plane, sizeof a->clip_plane) == 0 &&
         memcmp(a->color_range, b->color_range, sizeof a->color_range) == 0 &&
         memcmp(a->light, b->light, sizeof a->light) == 0;
  return same;
}

static bool frame(win_state *s, int width, int height, int render_width, int render_height) {
  char err[IR_ERR_LEN] = {0};
  double t0 = now_seconds();
  /* The first diagnostic frame comes second, so that the FPS starts from a plain one; after that
   * every half second, but never more than one frame in five on a slow renderer. */
  bool stage_frame = s->have_stages ? t0 - s->last_stage_time >= STAGE_SAMPLE_SECONDS && s->plain_since_stages >= 4
                                    : s->frames >= 1;
  stage_frame = stage_frame && s->device == IR_DEVICE_GPU && !s->bench_running; /* the CPU renderer has no stages */
  bool cpu = s->device == IR_DEVICE_CPU;
  s->camera = wnd_view_camera(&s->view, &s->volume);
  s->render_width = render_width;
  s->render_height = render_height;
  ir_frame_desc desc = {
      .width = render_width,
      .height = render_height,
      .isovalue = (float)selected_iso(s),
      .camera = s->camera,
      .method = ir_compact_methods()[s->method_index].method,
      .pipeline = s->pipeline,
      .stage_timing = stage_frame,
  };
  app_look_apply(&s->look.look, &s->volume, &desc);
  const float *range = color_range(s);
  desc.color_range[0] = range[0];
  desc.color_range[1] = range[1];
  if (desc.pipeline == IR_PIPELINE_PAPER || desc.pipeline == IR_PIPELINE_PLAIN) { /* they draw none (overlay) */
    desc.ao_samples = 0;
    desc.shadows = desc.light_on = false;
  }
  /* Progressive ambient occlusion: while the picture stays the same, each frame traces new
   * occlusion rays and shows the mean of all so far; any change starts again. */
  bool still = s->frames > 0 && s->desc_step == s->step && s->desc_renderer == s->renderer &&
               same_picture(&desc, &s->desc);
  if (!still) {
    s->ao_frames = 0;
    s->still_since = t0;
    s->still_reported = false;
  }
  desc.accumulate = desc.ao_samples > 0;
  desc.sample_frame = s->ao_frames;
  if (s->ao_frames < IR_ACCUMULATE_MAX) s->ao_frames++;
  if (desc.ao_samples > 0 && !s->still_reported && (uint32_t)desc.ao_samples * s->ao_frames >= 64) {
    printf("inkray: 64 occlusion samples per pixel %.3f s after the view stopped (%u frames)\n", t0 - s->still_since,
           s->ao_frames);
    fflush(stdout);
    s->still_reported = true;
  }
  s->desc = desc;
  s->desc_step = s->step;
  s->desc_renderer = s->renderer;
  ir_frame_stats stats = {0};
  bool timed = cpu || stage_frame;
  if (ir_render_frame(s->renderer, &desc, timed ? &stats : NULL, err) != IR_OK) {
    fprintf(stderr, "inkray: rendering a %dx%d frame failed: %s\n", render_width, render_height, err);
    return false;
  }
  if (timed) {
    s->last = stats;
    record_render_time(s, stats.frame_ms, !cpu);
  }
  if (stage_frame) {
    s->stages = stats;
    s->have_stages = true;
    s->last_stage_time = t0;
    s->plain_since_stages = 0;
  } else {
    s->plain_since_stages++;
  }
  if (!wnd_present_submit(&s->present, s->renderer, render_width, render_height, err)) {
    fprintf(stderr, "inkray: showing the frame failed: %s\n", err);
    return false;
  }
  /* A screenshot shows the frame just rendered, so that its line describes what it shows. */
  const wnd_frame_slot *slot = wnd_present_ready(&s->present, s->screenshot_pending || s->drain, err);
  if (!slot) {
    fprintf(stderr, "inkray: showing the frame failed: %s\n", err);
    return false;
  }
  if (overlay_due(s, t0)) build_overlay(s, width, height);
  if (!wnd_gl_draw(&s->gl, slot->texture, slot->width, slot->height, width, height, s->overlay ? &s->overlay_mesh : NULL,
                   s->overlay_version, err)) {
    fprintf(stderr, "inkray: %s\n", err);
    return false;
  }
  wnd_present_drawn(&s->present);
  if (s->screenshot_pending) take_screenshot(s, width, height);
  SDL_GL_SwapWindow(s->window);
  if (!wnd_gl_check("swapping buffers", err)) {
    fprintf(stderr, "inkray: %s\n", err);
    return false;
  }
  double ms = (now_seconds() - t0) * 1000.0;
  /* Diagnostic frames time each stage separately and would drag the FPS down. */
  if (!stage_frame) record_frame_time(s, ms);
  s->frames++;
  return true;
}

static int compare_floats(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

static void print_summary(const win_state *s) {
  long n = s->history_count < FRAME_HISTORY ? s->history_count : FRAME_HISTORY;
  if (n == 0) return;
  float *sorted = malloc((size_t)n * sizeof *sorted);
  if (!sorted) return;
  memcpy(sorted, s->history, (size_t)n * sizeof *sorted);
  qsort(sorted, (size_t)n, sizeof *sorted, compare_floats);
  double median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  free(sorted);
  printf("inkray: %ld frames, median frame %.3f ms (%.1f FPS) over the last %ld, renderer %s, display %s\n",
         s->frames, median, 1000.0 / median, n, ir_device_name(s->device), wnd_present_path_name(s->present.path));
}

/* ---- Setup ------------------------------------------------------------------------------------- */
/* The GPU renderer unless there is no CUDA device (then the CPU one, with a note). */
static void choose_device(win_state *s, const win_options *o) {
  s->device = o->device;
  if (s->device != IR_DEVICE_GPU) return;
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    snprintf(s->device_note, sizeof s->device_note, "no CUDA device: CPU renderer");
    fprintf(stderr, "inkray: no CUDA device (%s); using the CPU reference renderer\n",
            e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    s->device = IR_DEVICE_CPU;
  }
}

/* ---- Loading, with a progress bar ------------------------------------------------------------ */
/* app_open (the voxels streamed to the GPU while they are read, statistics on the GPU) runs on a
 * thread of its own; the window draws a progress bar from the bytes read meanwhile. The data
 * module prints its progress line on stderr too. */
typedef struct win_loader {
  app_open_desc desc;
  app_opened *opened;
  atomic_size_t done, total;
  atomic_bool finished;
  int rc;
} win_loader;

static void on_load_progress(void *ctx, size_t done, size_t total) {
  win_loader *l = ctx;
  atomic_store(&l->done, done);
  atomic_store(&l->total, total);
}

static void *load_thread(void *arg) {
  win_loader *l = arg;
  l->rc = app_open(&l->desc, l->opened);
  if (l->rc == 0) l->rc = app_open_finish(l->opened);
  atomic_store(&l->finished, true);
  return NULL;
}

static void draw_progress(win_state *s, const char *name, size_t done, size_t total, double seconds) {
  int width = 0, height = 0;
  SDL_GL_GetDrawableSize(s->window, &width, &height);
  s->overlay_mesh.count = 0;
  int bar[4], track[4];
  wnd_overlay_progress(&s->overlay_mesh, width, height, name, done, total, seconds, bar, track);
  char err[IR_ERR_LEN] = {0};
  /* Texture 0: no frame yet, the background only. */
  if (!wnd_gl_draw(&s->gl, 0, 0, 0, width, height, &s->overlay_mesh, ++s->overlay_version, err))
    fprintf(stderr, "inkray: drawing the progress bar: %s\n", err);
  SDL_GL_SwapWindow(s->window);
}

/* ---- Multiscale levels ------------------------------------------------------------------------------
 * A multiscale source opened at --level auto is shown at its coarsest level first (a small read:
 * the first frame comes at once), while app_open reads the level auto picks on a thread of its
 * own, with its own renderer; the main loop swaps the two when that one is ready and closes the
 * coarse one. - and = open the next coarser or finer level the same way. Not for time series
 * (their player owns the slots) or --color-by volumes (read at one level). */
typedef struct win_level_loader {
  app_open_desc desc;
  ir_volume_desc volume;
  app_opened opened;
  pthread_t thread;
  atomic_bool finished;
  int rc;
} win_level_loader;

static void *level_thread(void *arg) {
  win_level_loader *l = arg;
  l->rc = app_open(&l->desc, &l->opened);
  if (l->rc == 0) l->rc = app_open_finish(&l->opened);
  atomic_store(&l->finished, true);
  return NULL;
}

static void level_start(win_state *s, int level) {
  if (s->level_loader) {
    printf("inkray: a level is still loading; wait for it\n");
    return;
  }
  win_level_loader *l = calloc(1, sizeof *l);
  if (!l) return;
  l->volume = s->options->volume;
  l->volume.level = level;
  l->volume.keep_bad_steps = false;
  /* Behind the frames: no progress lines, the window shows the level when it comes. */
  l->desc = (app_open_desc){.volume = &l->volume, .device = s->device, .cpu_threads = s->options->threads, .quiet = true};
  atomic_init(&l->finished, false);
  if (pthread_create(&l->thread, NULL, level_thread, l) != 0) {
    free(l);
    return;
  }
  s->level_loader = l;
}

/* Swaps in a level that finished loading (or reports why it did not). */
static void level_poll(win_state *s, bool wait) {
  win_level_loader *l = s->level_loader;
  if (!l || (!wait && !atomic_load(&l->finished))) return;
  pthread_join(l->thread, NULL);
  s->level_loader = NULL;
  if (l->rc == 0 && !wait && l->opened.volume.level != s->volume.level) {
    /* The renderer may hold a pointer to the volume it was made from: the loader's struct stays
     * while its renderer draws; the closed one's goes with it. */
    app_opened old = s->opened;
    s->opened = l->opened;
    s->volume = s->opened.volume;
    s->renderer = s->opened.renderer;
    for (int k = 0; k < IR_COLOR_SOURCE_COUNT; k++) s->auto_range_ready[k] = false;
    app_opened_close(&old);
    free(s->level_shown);
    s->level_shown = l;
    printf("inkray: level %d of %d (%zux%zux%zu) drawn, %.2f s after the start\n", s->volume.level,
           s->volume.level_count, s->volume.dims[0], s->volume.dims[1], s->volume.dims[2], app_seconds_since_start());
    fflush(stdout);
    return;
  }
  app_opened_close(&l->opened);
  free(l);
}

static void level_step(win_state *s, int delta) {
  if (!s->levels_switchable) {
    printf("inkray: - and = step the levels of a multiscale volume (OME-Zarr), not of a time series or with "
           "--color-by FILE\n");
    return;
  }
  int level = s->volume.level + delta;
  if (level < 0 || level >= s->volume.level_count) return;
  level_start(s, level);
}

/* --level auto on a multiscale volume: the coarsest level is opened first (o->volume.level is
 * set to it); returns the level to load next, or -1. */
static int coarsest_first(win_state *s, win_options *o) {
  /* A benchmark draws one level from the start: a level swapped in mid-run would change what it
   * measures. (Scripts keep the swap: they wait for it, `test_window_xvfb`.) */
  if (o->volume.level != IR_LEVEL_AUTO || o->look.color_by == IR_COLOR_VOLUME || o->bench) return -1;
  const char *src = o->volume.source ? o->volume.source : IR_DEFAULT_VOLUME;
  if (ir_series_detect(src)) return -1;
  ir_volume_desc hd = o->volume;
  hd.source = src;
  hd.header_only = true;
  hd.layout_only = true; /* the level count: no voxel read even where the type needs them */
  hd.level = 0;
  ir_volume head;
  char err[IR_ERR_LEN] = {0};
  if (ir_volume_load(&hd, &head, err) != IR_OK) return -1; /* the load proper says why */
  int count = head.level_count;
  ir_volume_free(&head);
  s->levels_switchable = count > 1;
  if (count <= 1) return -1;
  o->volume.level = count - 1;
  return IR_LEVEL_AUTO;
}

static int load_volume(win_state *s, win_options *o) {
  win_loader *l = calloc(1, sizeof *l);
  if (!l) {
    fprintf(stderr, "inkray: out of memory\n");
    return 1;
  }
  /* A time series' bad steps (missing, mismatched, short) are skipped while playing, not
   * refused at the start as a headless run does. */
  o->volume.keep_bad_steps = true;
  int next_level = coarsest_first(s, o);
  l->desc = (app_open_desc){.volume = &o->volume, .device = s->device, .cpu_threads = o->threads,
                            .on_progress = on_load_progress, .progress_ctx = l};
  l->opened = &s->opened;
  atomic_init(&l->done, 0);
  atomic_init(&l->total, 0);
  atomic_init(&l->finished, false);
  const char *name = o->volume.source ? o->volume.source : IR_DEFAULT_VOLUME;
  pthread_t thread;
  if (pthread_create(&thread, NULL, load_thread, l) != 0) {
    load_thread(l);
  } else {
    double t0 = now_seconds();
    bool quit = false;
    while (!atomic_load(&l->finished)) {
      SDL_Event e;
      while (SDL_PollEvent(&e)) quit |= e.type == SDL_QUIT; /* a read cannot be cut short: quit after it */
      draw_progress(s, name, atomic_load(&l->done), atomic_load(&l->total), now_seconds() - t0);
      SDL_Delay(15);
    }
    pthread_join(thread, NULL);
    s->quit = quit;
  }
  int rc = l->rc;
  free(l);
  if (rc) return rc;
  s->volume = s->opened.volume;
  s->renderer = s->opened.renderer;
  if (next_level == IR_LEVEL_AUTO) {
    printf("inkray: level %d of %d (%zux%zux%zu) first; the finest level that fits the device loads behind the "
           "frames (- and = step levels)\n", s->volume.level, s->volume.level_count, s->volume.dims[0],
           s->volume.dims[1], s->volume.dims[2]);
    o->volume.level = IR_LEVEL_AUTO;
    level_start(s, IR_LEVEL_AUTO);
  }
  char title[300];
  snprintf(title, sizeof title, "inkray - %s", s->volume.name);
  SDL_SetWindowTitle(s->window, title);
  app_open_report(&s->opened);
  if (s->opened.series) {
    s->rate = o->rate;
    s->direction = 1;
    size_t n = ir_series_length(s->opened.series);
    printf("inkray: time series of %zu steps, %s .. %s; Space plays it at %.3g steps/s\n", n,
           ir_series_step_name(s->opened.series, 0), ir_series_step_name(s->opened.series, n - 1), s->rate);
    size_t bad = ir_series_bad_steps(s->opened.series);
    if (bad)
      fprintf(stderr, "inkray: note: %zu of the %zu steps cannot be read (missing, other dims or type, or short); they "
                      "are skipped, each with its message\n", bad, n);
  }
  fflush(stdout);
  return 0;
}

static void choose_isovalue(win_state *s, const win_options *o) {
  if (s->volume.nonfinite_count > 0 && s->volume.nonfinite_count == ir_volume_voxel_count(&s->volume))
    fprintf(stderr, "inkray: note: every voxel of %s is NaN or Inf; nothing will show\n", s->volume.name);
  double range = s->volume.value_max - s->volume.value_min;
  s->iso_step = range > 0 ? range / 100.0 : 1.0;
  double iso = o->iso;
  if (o->iso_given && o->look.surface_count > 0)
    fprintf(stderr, "inkray: note: --iso %g is not used: --surface gives the surfaces\n", o->iso);
  else if (o->iso_given) {
    if (o->iso < s->volume.value_min || o->iso > s->volume.value_max)
      fprintf(stderr, "inkray: note: --iso %g is outside the volume's values [%g, %g]; nothing will show\n",
              o->iso, s->volume.value_min, s->volume.value_max);
  } else if (o->look.surface_count == 0) {
    /* The statistics app_open_finish computed where the volume is (on the GPU there). */
    const ir_volume_stats *stats = &s->opened.stats;
    iso = stats->suggested_count > 0 ? stats->suggested_isovalues[0] : s->volume.value_min + range / 2;
  }
  app_look_warn_empty(&o->look, &s->volume, stderr);
  /* --surface gives the surfaces; else one at --iso or the suggested isovalue. */
  wnd_look_start(&s->look, &o->look, iso);
}

/* --color-by FILE: the second volume, read with the main one's format options; its dims must
 * be the main volume's (checked by the renderer). */
static int load_color_volume(win_state *s, const win_options *o) {
  if (o->look.color_by != IR_COLOR_VOLUME) return 0;
  ir_volume_desc desc = app_look_color_desc(&o->look, &o->volume);
  desc.level = s->volume.level; /* the level the volume was read at: the same dims */
  /* Dims first, from the header alone: a mismatch is refused before any voxel is read. */
  ir_volume_desc header = desc;
  header.header_only = true;
  ir_volume head = {0};
  char err[IR_ERR_LEN] = {0};
  if (ir_volume_load(&header, &head, err) != IR_OK) {
    fprintf(stderr, "inkray: --color-by: %s\n", err);
    return 2;
  }
  const size_t *a = head.dims, *b = s->volume.dims;
  bool same = a[0] == b[0] && a[1] == b[1] && a[2] == b[2];
  if (!same)
    fprintf(stderr, "inkray: --color-by %s is %zux%zux%zu, but the volume %s is %zux%zux%zu: they must match\n",
            desc.source, a[0], a[1], a[2], s->volume.name, b[0], b[1], b[2]);
  ir_volume_free(&head);
  if (!same) return 2;
  int rc = cli_load_volume(&desc, &s->color_volume);
  if (rc) return rc;
  s->have_color_volume = true;
  return 0;
}

static int attach_color_volume(win_state *s) {
  if (!s->have_color_volume) return 0;
  char err[IR_ERR_LEN] = {0};
  ir_status status = ir_renderer_set_color_volume(s->renderer, &s->color_volume, err);
  if (status != IR_OK) {
    fprintf(stderr, "inkray: --color-by: %s\n", err);
    return status == IR_ERR_INPUT ? 2 : 1;
  }
  return 0;
}

/* Before anything is loaded: a display that cannot be opened is one line and exit 1. */
static int init_video(void) {
  /* DISPLAY set, no Wayland and no driver asked for: the window is for that X server. Left to
   * itself SDL would try the other video drivers when the server does not answer and end on an
   * invisible offscreen surface that runs until killed. */
  const char *x = getenv("DISPLAY"), *wayland = getenv("WAYLAND_DISPLAY"), *driver = getenv("SDL_VIDEODRIVER");
  bool x_only = x && *x && !(wayland && *wayland) && !(driver && *driver);
  if (x_only) SDL_SetHint(SDL_HINT_VIDEODRIVER, "x11");
  if (SDL_Init(SDL_INIT_VIDEO) != 0) {
    if (x_only)
      fprintf(stderr, "inkray: cannot open a window: no X server answers at DISPLAY=%s (%s); unset DISPLAY "
                      "or run inkray --headless\n", x, SDL_GetError());
    else
      fprintf(stderr, "inkray: cannot open a window: %s (or run inkray --headless)\n", SDL_GetError());
    return 1;
  }
  return 0;
}

static int open_window(win_state *s, const win_options *o) {
  SDL_GL_SetAttribute(SDL_GL_CONTEXT_MAJOR_VERSION, 3);
  SDL_GL_SetAttribute(SDL_GL_CONTEXT_MINOR_VERSION, 3);
  SDL_GL_SetAttribute(SDL_GL_CONTEXT_PROFILE_MASK, SDL_GL_CONTEXT_PROFILE_CORE);
  SDL_GL_SetAttribute(SDL_GL_DOUBLEBUFFER, 1);
  SDL_GL_SetAttribute(SDL_GL_DEPTH_SIZE, 0);
  int w = o->window_given ? o->window_width : o->size_fixed ? o->width : 1280;
  int h = o->window_given ? o->window_height : o->size_fixed ? o->height : 720;
  char title[300];
  snprintf(title, sizeof title, "inkray - loading %s", o->volume.source ? o->volume.source : IR_DEFAULT_VOLUME);
  s->window = SDL_CreateWindow(title, SDL_WINDOWPOS_CENTERED, SDL_WINDOWPOS_CENTERED, w, h,
                               SDL_WINDOW_OPENGL | SDL_WINDOW_RESIZABLE | SDL_WINDOW_ALLOW_HIGHDPI);
  if (!s->window) {
    fprintf(stderr, "inkray: cannot open a %dx%d OpenGL window: %s\n", w, h, SDL_GetError());
    return 1;
  }
  SDL_GLContext context = SDL_GL_CreateContext(s->window);
  if (!context) {
    fprintf(stderr, "inkray: no OpenGL 3.3 core context: %s (the window needs OpenGL 3.3; try inkray --headless)\n",
            SDL_GetError());
    return 1;
  }
  /* GLEW looks core-profile entry points up only when told to; its probe of the old extension
   * string then leaves a GL_INVALID_ENUM behind, cleared below. */
  glewExperimental = GL_TRUE;
  GLenum glew = glewInit();
  /* GLEW built for GLX loads the GL entry points first and then fails on a context that is not
   * GLX (Wayland, EGL); the entry points are what the window needs. */
  if (glew == GLEW_ERROR_NO_GLX_DISPLAY && glCreateShader && glGenVertexArrays && glBufferSubData)
    glew = GLEW_OK;
  if (glew != GLEW_OK) {
    fprintf(stderr, "inkray: GLEW cannot load OpenGL: %s (under Wayland, try SDL_VIDEODRIVER=x11)\n",
            (const char *)glewGetErrorString(glew));
    return 1;
  }
  while (glGetError() != GL_NO_ERROR) {
  }
  /* Without a display refresh to wait for (an offscreen or virtual display) vsync may be
   * refused; that is only worth a note when it was asked for. */
  if (SDL_GL_SetSwapInterval(o->vsync) != 0 && o->vsync && o->vsync_given)
    fprintf(stderr, "inkray: note: --vsync on is not supported here: %s\n", SDL_GetError());
  char err[IR_ERR_LEN] = {0};
  if (!wnd_gl_setup(&s->gl, err)) {
    fprintf(stderr, "inkray: %s\n", err);
    return 1;
  }
  printf("inkray: OpenGL %s on %s (%s)\n", (const char *)glGetString(GL_VERSION),
         (const char *)glGetString(GL_RENDERER), (const char *)glGetString(GL_VENDOR));
  wnd_present_setup(&s->present, s->device == IR_DEVICE_GPU, o->present_given, o->present);
  printf("inkray: %s renderer, frames shown through %s, vsync %s\n", ir_device_name(s->device),
         wnd_present_path_name(s->present.path), o->vsync ? "on" : "off");
  fflush(stdout);
  return 0;
}

static void close_window(win_state *s) {
  if (s->window && SDL_GL_GetCurrentContext()) {
    wnd_present_shutdown(&s->present);
    wnd_gl_shutdown(&s->gl);
    SDL_GL_DeleteContext(SDL_GL_GetCurrentContext());
  }
  if (s->window) SDL_DestroyWindow(s->window);
  SDL_Quit();
}

/* ---- Main loop --------------------------------------------------------------------------------- */
static int run(win_state *s, const win_options *o, win_script *script) {
  while (!s->quit) {
    if (script) script_step(script, s);
    SDL_Event e;
    while (SDL_PollEvent(&e)) on_event(s, &e);
    if (s->quit) break;
    int width = 0, height = 0;
    SDL_GL_GetDrawableSize(s->window, &width, &height);
    /* A minimised or zero-sized window has nothing to draw into: wait for it to come back. */
    if (width <= 0 || height <= 0 || (SDL_GetWindowFlags(s->window) & SDL_WINDOW_MINIMIZED)) {
      SDL_Delay(20);
      continue;
    }
    int render_width = o->size_fixed ? o->width : width, render_height = o->size_fixed ? o->height : height;
    playback_update(s);
    level_poll(s, false);
    if (!frame(s, width, height, render_width, render_height)) return 1;
    if (s->frames == 1) {
      /* The time a person waits for a picture, from the process's start (as a headless run's
       * "first frame at" line): with a multiscale volume, the coarsest level's. */
      if (s->volume.level_count > 1)
        printf("inkray: first frame (level %d of %d) shown %.2f s after the start\n", s->volume.level,
               s->volume.level_count, app_seconds_since_start());
      else
        printf("inkray: first frame shown %.2f s after the start\n", app_seconds_since_start());
      fflush(stdout);
      if (script) script->start = now_seconds();
    }
  }
  return 0;
}

/* ---- --bench-window -------------------------------------------------------------------------- */
/* The same scene (the window's size and view, the chosen method and look) rendered headless and
 * in the window, one pipeline and display path after the other, in one run:
 *   headless  frames waited for one by one, the renderer's own frame time (CUDA events): its
 *             median is the FPS `inkray --headless` reports; and the same frames queued back
 *             to back (wall clock), what the renderer sustains with nothing else running;
 *   window    the window's frame loop as it runs for a person (render, present ring, overlay,
 *             swap; vsync off unless asked for), wall clock over all frames, the GPU drained at
 *             the end.
 * The ratio is window FPS / headless FPS; the display overhead the difference in frame time. */
typedef struct bench_figures {
  double headless_ms, back_to_back_ms, window_ms;
} bench_figures;

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static bool bench_headless(win_state *s, const ir_frame_desc *desc, int frames, bench_figures *out) {
  char err[IR_ERR_LEN] = {0};
  double *ms = malloc((size_t)frames * sizeof *ms);
  if (!ms) {
    fprintf(stderr, "inkray: --bench-window: out of memory\n");
    return false;
  }
  ir_frame_stats stats;
  bool ok = true;
  for (int k = 0; ok && k < frames / 10 + 2; k++) ok = ir_render_frame(s->renderer, desc, &stats, err) == IR_OK;
  for (int k = 0; ok && k < frames; k++) {
    ok = ir_render_frame(s->renderer, desc, &stats, err) == IR_OK;
    ms[k] = stats.frame_ms;
  }
  double t0 = now_seconds();
  /* Queued without waiting; the last one waits (its stats), so the wall time covers them all. */
  for (int k = 0; ok && k < frames; k++) ok = ir_render_frame(s->renderer, desc, k + 1 < frames ? NULL : &stats, err) == IR_OK;
  double wall = now_seconds() - t0;
  if (!ok) {
    fprintf(stderr, "inkray: --bench-window: rendering failed: %s\n", err);
    free(ms);
    return false;
  }
  qsort(ms, (size_t)frames, sizeof *ms, compare_doubles);
  out->headless_ms = frames % 2 ? ms[frames / 2] : 0.5 * (ms[frames / 2 - 1] + ms[frames / 2]);
  out->back_to_back_ms = wall * 1000.0 / frames;
  free(ms);
  return true;
}

/* Runs `frames` iterations of the window's loop; false after an error or a quit. */
static bool bench_loop(win_state *s, const win_options *o, int frames) {
  for (int k = 0; k < frames; k++) {
    SDL_Event e;
    while (SDL_PollEvent(&e))
      if (e.type == SDL_QUIT) return false;
    int width = 0, height = 0;
    SDL_GL_GetDrawableSize(s->window, &width, &height);
    int rw = o->size_fixed ? o->width : width, rh = o->size_fixed ? o->height : height;
    if (!frame(s, width, height, rw, rh)) return false;
  }
  return true;
}

static bool bench_window(win_state *s, const win_options *o, int frames, bench_figures *out) {
  s->bench_running = true;
  bool ok = bench_loop(s, o, frames / 10 + 3);
  double t0 = now_seconds();
  ok = ok && bench_loop(s, o, frames - 1);
  /* The last frame shows the newest one and everything is drained, so that the wall time
   * covers every frame on the screen. */
  s->drain = true;
  ok = ok && bench_loop(s, o, 1);
  s->drain = false;
  glFinish();
  if (s->device == IR_DEVICE_GPU) cudaDeviceSynchronize();
  out->window_ms = (now_seconds() - t0) * 1000.0 / frames;
  s->bench_running = false;
  return ok;
}

static int run_bench(win_state *s, const win_options *o) {
  /* The pipelines of the P key's cycle, or the one asked for. */
  ir_pipeline pipelines[IR_PIPELINE_COUNT];
  int pipeline_count = 0;
  if (o->pipeline_given) {
    pipelines[pipeline_count++] = o->pipeline;
  } else {
    ir_pipeline p = next_pipeline(IR_PIPELINE_COUNT);
    do {
      pipelines[pipeline_count++] = p;
      p = next_pipeline(p);
    } while (p != pipelines[0] && pipeline_count < IR_PIPELINE_COUNT);
  }
  /* Every display path this context has, best first, or the one asked for. */
  wnd_present_path paths[WND_PRESENT_PATH_COUNT] = {WND_PRESENT_HOST};
  int path_count = 0;
  if (o->present_given || !wnd_present_interop(&s->present)) {
    paths[path_count++] = s->present.path;
  } else {
    for (int k = s->present.path; k >= 0; k--) paths[path_count++] = (wnd_present_path)k;
  }
  /* The CPU renderer takes seconds a frame at this size: a few frames tell enough. */
  int frames = s->device == IR_DEVICE_CPU && !o->bench_frames_given ? 20 : o->bench_frames;
  int width = 0, height = 0;
  SDL_GL_GetDrawableSize(s->window, &width, &height);
  int rw = o->size_fixed ? o->width : width, rh = o->size_fixed ? o->height : height;
  printf("inkray: bench-window %dx%d, %d frames a measurement, vsync %s, method %s\n", rw, rh, frames,
         o->vsync ? "on" : "off", method_name(s));
  fflush(stdout);
  double worst_ratio = INFINITY;
  for (int pi = 0; pi < pipeline_count; pi++) {
    s->pipeline = pipelines[pi];
    for (int di = 0; di < path_count; di++) {
      if (paths[di] != s->present.path) {
        wnd_present_shutdown(&s->present);
        wnd_present_setup(&s->present, s->device == IR_DEVICE_GPU, true, paths[di]);
      }
      /* The headless frames draw the scene the window's next frame would. */
      s->camera = wnd_view_camera(&s->view, &s->volume);
      ir_frame_desc desc = {.width = rw,
                            .height = rh,
                            .isovalue = (float)selected_iso(s),
                            .camera = s->camera,
                            .method = ir_compact_methods()[s->method_index].method,
                            .pipeline = s->pipeline};
      app_look_apply(&s->look.look, &s->volume, &desc);
      const float *range = color_range(s);
      desc.color_range[0] = range[0];
      desc.color_range[1] = range[1];
      bench_figures f;
      if (!bench_headless(s, &desc, frames, &f) || !bench_window(s, o, frames, &f)) return 1;
      double ratio = f.headless_ms / f.window_ms;
      if (s->present.path == paths[0] && ratio < worst_ratio) worst_ratio = ratio;
      printf("inkray: bench-window pipeline=%s method=%s size=%dx%d display=%s headless_fps=%.1f headless_ms=%.4f "
             "back_to_back_ms=%.4f window_fps=%.1f window_ms=%.4f ratio=%.3f overhead_ms=%.4f\n",
             ir_pipeline_name(s->pipeline), method_name(s), rw, rh, wnd_present_path_name(s->present.path),
             1000.0 / f.headless_ms, f.headless_ms, f.back_to_back_ms, 1000.0 / f.window_ms, f.window_ms, ratio,
             f.window_ms - f.headless_ms);
      fflush(stdout);
    }
  }
  printf("inkray: bench-window done: lowest window/headless ratio %.3f on %s (target 0.9)\n", worst_ratio,
         wnd_present_path_name(paths[0]));
  return 0;
}

bool app_window_available(void) { return true; }

int app_window_main(int argc, char **argv) {
  win_options o;
  int rc = parse_options(argc, argv, &o);
  if (rc >= 0) return rc;
  win_script script = {0};
  if (o.script) {
    char err[IR_ERR_LEN] = {0};
    ir_status status = wnd_script_load(o.script, &script.script, err);
    if (status != IR_OK) {
      fprintf(stderr, "inkray: %s\n", err);
      return status == IR_ERR_INPUT ? 2 : 1;
    }
    rc = check_script_keys(&script.script, o.script);
    if (rc) {
      wnd_script_free(&script.script);
      return rc;
    }
  }
  win_state s = {.pipeline = o.pipeline, .overlay = true, .options = &o};
  for (int k = 0; k < IR_COMPACT_METHOD_COUNT; k++)
    if (ir_compact_methods()[k].method == o.method) s.method_index = k;
  s.history = malloc(FRAME_HISTORY * sizeof *s.history);
  if (!s.history) {
    fprintf(stderr, "inkray: out of memory\n");
    wnd_script_free(&script.script);
    return 1;
  }
  rc = init_video();
  if (rc == 0) {
    choose_device(&s, &o);
    /* The window first, so that a big volume's load shows a progress bar in it. */
    rc = open_window(&s, &o);
  }
  if (rc == 0) rc = load_volume(&s, &o);
  if (rc == 0) {
    /* --up wins; else what the file's header says; else +z. */
    s.start_up = app_up_axis(o.up, &s.volume);
    s.view = wnd_view_default(s.start_up);
    if (o.up == IR_AXIS_NONE && s.volume.up_axis != IR_AXIS_NONE)
      printf("inkray: up %s, from the %s (--up changes it, U flips it)\n", ir_axis_name(s.start_up), s.volume.up_source);
    choose_isovalue(&s, &o);
    rc = load_color_volume(&s, &o);
  }
  if (rc == 0) {
    rc = attach_color_volume(&s);
    if (rc == 0 && s.look.look.color_by != IR_COLOR_SURFACE) print_color(&s);
  }
  if (rc == 0 && !s.quit) {
    rc = o.bench ? run_bench(&s, &o) : run(&s, &o, o.script ? &script : NULL);
    if (!o.bench) print_summary(&s);
  }
  level_poll(&s, true); /* a level still loading is waited for and dropped */
  close_window(&s);
  wnd_mesh_free(&s.overlay_mesh);
  ir_extractor_destroy(s.extractor);
  app_opened_close(&s.opened); /* also after a failed open: it frees what was made */
  free(s.level_shown);
  ir_volume_free(&s.color_volume);
  wnd_script_free(&script.script);
  free(s.history);
  return rc;
}
