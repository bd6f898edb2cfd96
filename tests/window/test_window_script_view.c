/* The window's plain-C parts, without a display: the --script parser (app/window/script.c) and
 * the view arithmetic (app/window/view.c) that turns mouse input into a camera. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "app/window/window_internal.h"
#include "tests/check.h"

static void test_script_parses_every_event_kind(void) {
  const char *text = "# a comment line\n"
                     "\n"
                     "0     key Tab\n"
                     "0.25  key shift+Up   # a trailing comment\n"
                     "0.5   drag right 10 20 30 45\n"
                     "0.5   wheel -1.5\n"
                     "1     resize 400 300\n"
                     "1.5   screenshot out/shot.png\n"
                     "2     screenshot\n"
                     "2.5   quit";
  wnd_script s;
  char err[IR_ERR_LEN] = {0};
  CHECK_EQ_INT(wnd_script_parse(text, "t.txt", &s, err), IR_OK);
  CHECK_EQ_INT(s.count, 8);
  if (s.count != 8) return;
  CHECK(s.events[0].kind == WND_EVENT_KEY && strcmp(s.events[0].key, "Tab") == 0 && !s.events[0].shift);
  CHECK_EQ_INT(s.events[0].line, 3);
  CHECK(s.events[1].kind == WND_EVENT_KEY && strcmp(s.events[1].key, "Up") == 0 && s.events[1].shift);
  CHECK_NEAR(s.events[1].time_s, 0.25, 1e-12);
  CHECK(s.events[2].kind == WND_EVENT_DRAG && s.events[2].button == WND_BUTTON_RIGHT);
  CHECK(s.events[2].x0 == 10 && s.events[2].y0 == 20 && s.events[2].x1 == 30 && s.events[2].y1 == 45);
  CHECK(s.events[3].kind == WND_EVENT_WHEEL);
  CHECK_NEAR(s.events[3].wheel, -1.5, 1e-6);
  CHECK(s.events[4].kind == WND_EVENT_RESIZE && s.events[4].width == 400 && s.events[4].height == 300);
  CHECK(s.events[5].kind == WND_EVENT_SCREENSHOT);
  CHECK_STR_CONTAINS(s.events[5].path, "out/shot.png");
  CHECK(s.events[6].kind == WND_EVENT_SCREENSHOT && s.events[6].path[0] == '\0');
  CHECK(s.events[7].kind == WND_EVENT_QUIT);
  CHECK_EQ_INT(s.events[7].line, 10);
  wnd_script_free(&s);
}

/* Each bad line is refused with the script's name and the line number. */
static void test_script_errors_name_the_line(void) {
  static const struct {
    const char *text;
    const char *expect;
  } cases[] = {
      {"1 key Tab\n0.5 key Tab\n", "t.txt:2: times may not decrease"},
      {"key Tab\n", "t.txt:1: a line starts with the time"},
      {"-1 key Tab\n", "t.txt:1: a line starts with the time"},
      {"0 key\n", "t.txt:1: key takes one key name"},
      {"0 key shift+\n", "t.txt:1: key: missing"},
      {"0 jump\n", "t.txt:1: unknown event"},
      {"# c\n0 drag up 1 2 3 4\n", "t.txt:2: drag: the button"},
      {"0 drag left 1 2 3\n", "t.txt:1: drag takes"},
      {"0 drag left 1 2 3 x\n", "t.txt:1: drag: coordinates"},
      {"0 wheel many\n", "t.txt:1: wheel takes"},
      {"0 resize 0 300\n", "t.txt:1: resize takes"},
      {"0 resize 300\n", "t.txt:1: resize takes"},
      {"0 screenshot a b\n", "t.txt:1: screenshot takes at most one path"},
      {"0 quit now\n", "t.txt:1: quit takes no arguments"},
      {"0\n", "t.txt:1: an event follows the time"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    wnd_script s;
    char err[IR_ERR_LEN] = {0};
    CHECK_EQ_INT(wnd_script_parse(cases[k].text, "t.txt", &s, err), IR_ERR_INPUT);
    CHECK_STR_CONTAINS(err, cases[k].expect);
    CHECK(s.events == NULL && s.count == 0);
  }
}

static void test_script_load_reports_missing_file(void) {
  wnd_script s;
  char err[IR_ERR_LEN] = {0};
  CHECK_EQ_INT(wnd_script_load("/nonexistent/inkray-script.txt", &s, err), IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "/nonexistent/inkray-script.txt");
}

static void test_script_load_reads_a_file(void) {
  char path[] = "/tmp/inkray-script-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  if (fd < 0) return;
  const char text[] = "0.1 key 3\n0.2 quit\n";
  CHECK(write(fd, text, sizeof text - 1) == (ssize_t)(sizeof text - 1));
  close(fd);
  wnd_script s;
  char err[IR_ERR_LEN] = {0};
  CHECK_EQ_INT(wnd_script_load(path, &s, err), IR_OK);
  CHECK_EQ_INT(s.count, 2);
  wnd_script_free(&s);
  unlink(path);
}

static ir_volume small_volume(void) {
  ir_volume v = {.dims = {64, 32, 16}, .type = IR_VOXEL_UINT8, .spacing = {1, 1, 2}};
  return v;
}

static float distance3(const float a[3], const float b[3]) {
  float d[3] = {a[0] - b[0], a[1] - b[1], a[2] - b[2]};
  return sqrtf(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
}

/* The window's default view is the orbit camera the headless runs and tests use. */
static void test_default_view_is_the_orbit_camera(void) {
  ir_volume v = small_volume();
  wnd_view view = wnd_view_default(IR_AXIS_NONE);
  ir_camera got = wnd_view_camera(&view, &v);
  ir_camera want = ir_camera_orbit(&v, WND_VIEW_AZIMUTH, WND_VIEW_ELEVATION, WND_VIEW_DISTANCE, IR_AXIS_NONE);
  CHECK_NEAR(distance3(got.eye, want.eye), 0, 1e-6);
  CHECK_NEAR(distance3(got.target, want.target), 0, 1e-6);
  CHECK_NEAR(distance3(got.up, want.up), 0, 1e-6);
}

static void test_orbit_turns_and_stops_at_the_poles(void) {
  wnd_view view = wnd_view_default(IR_AXIS_NONE);
  wnd_view_orbit(&view, 100, 0);
  CHECK(fabsf(view.azimuth_degrees - WND_VIEW_AZIMUTH) > 10);
  CHECK_NEAR(view.elevation_degrees, WND_VIEW_ELEVATION, 1e-6);
  wnd_view_orbit(&view, 0, 100000);
  CHECK(view.elevation_degrees < 90 && view.elevation_degrees > 80);
  wnd_view_orbit(&view, 0, -200000);
  CHECK(view.elevation_degrees > -90 && view.elevation_degrees < -80);
}

static void test_zoom_moves_closer_and_is_bounded(void) {
  ir_volume v = small_volume();
  wnd_view view = wnd_view_default(IR_AXIS_NONE);
  ir_camera before = wnd_view_camera(&view, &v);
  wnd_view_zoom(&view, 3);
  ir_camera after = wnd_view_camera(&view, &v);
  CHECK(distance3(after.eye, after.target) < distance3(before.eye, before.target));
  wnd_view_zoom(&view, 1000);
  CHECK(view.distance > 0);
  wnd_view_zoom(&view, -1000);
  CHECK(isfinite(view.distance) && view.distance <= 20.0f);
}

/* A pan moves eye and target together, across the view direction, by about one pixel's world
 * size at the target per pixel dragged. */
static void test_pan_moves_eye_and_target_across_the_view(void) {
  ir_volume v = small_volume();
  wnd_view view = wnd_view_default(IR_AXIS_NONE);
  ir_camera before = wnd_view_camera(&view, &v);
  wnd_view_pan(&view, &v, 50, -20, 400);
  ir_camera after = wnd_view_camera(&view, &v);
  float moved_eye[3], moved_target[3], forward[3];
  for (int k = 0; k < 3; k++) {
    moved_eye[k] = after.eye[k] - before.eye[k];
    moved_target[k] = after.target[k] - before.target[k];
    forward[k] = before.target[k] - before.eye[k];
  }
  float zero[3] = {0, 0, 0};
  CHECK_NEAR(distance3(moved_eye, moved_target), 0, 1e-4);
  float dot = moved_eye[0] * forward[0] + moved_eye[1] * forward[1] + moved_eye[2] * forward[2];
  CHECK_NEAR(dot / (distance3(forward, zero) * distance3(moved_eye, zero)), 0, 1e-4);
  float fov = before.fov_y_degrees > 0 ? before.fov_y_degrees : 45.0f;
  float pixel = 2.0f * distance3(before.eye, before.target) * tanf(fov * 3.14159265f / 360.0f) / 400.0f;
  CHECK_NEAR(distance3(moved_eye, zero), pixel * sqrtf(50.0f * 50.0f + 20.0f * 20.0f), pixel * 0.01);
  wnd_view_pan(&view, &v, 10, 10, 0); /* a zero-height window changes nothing */
  ir_camera same = wnd_view_camera(&view, &v);
  CHECK_NEAR(distance3(same.eye, after.eye), 0, 1e-6);
}

/* U flips the up axis (the view upside down), Shift+U moves to the next axis; the camera
 * follows, and the starting view keeps the up axis it is given. */
static void test_up_axis_flips_and_cycles(void) {
  ir_volume v = small_volume();
  wnd_view view = wnd_view_default(IR_AXIS_NEG_Y);
  ir_camera c = wnd_view_camera(&view, &v);
  CHECK(c.up[0] == 0 && c.up[1] == -1 && c.up[2] == 0);
  view = wnd_view_default(IR_AXIS_NONE);
  wnd_view_flip_up(&view);
  CHECK_EQ_INT(view.up, IR_AXIS_NEG_Z);
  c = wnd_view_camera(&view, &v);
  CHECK(c.up[2] == -1);
  wnd_view_flip_up(&view);
  CHECK_EQ_INT(view.up, IR_AXIS_Z);
  wnd_view_next_up(&view);
  CHECK_EQ_INT(view.up, IR_AXIS_X);
  wnd_view_next_up(&view);
  CHECK_EQ_INT(view.up, IR_AXIS_Y);
  wnd_view_flip_up(&view);
  wnd_view_next_up(&view);
  CHECK_EQ_INT(view.up, IR_AXIS_Z);
}

/* On the CPU renderer the overlay says stage times are GPU-only instead of charting zeros. */
static void test_overlay_stage_title_says_gpu_only_on_the_cpu(void) {
  wnd_overlay_info info = {.device = "cpu", .have_stages = true};
  CHECK_STR_CONTAINS(wnd_overlay_stage_title(&info), "GPU only");
  info.device = "gpu";
  CHECK_STR_CONTAINS(wnd_overlay_stage_title(&info), "sampled");
  info.have_stages = false;
  CHECK_STR_CONTAINS(wnd_overlay_stage_title(&info), "not measured yet");
}

/* ---- Look editing (look_edit.c) and the overlay's look lines ---------------------------------- */
/* The chart lists every stage a frame ran, the multi pipeline's tail kernel too, in the order a
 * frame runs them, and nothing it did not run. */
static void test_overlay_stage_rows_are_the_stages_that_ran(void) {
  wnd_stage_row rows[WND_MAX_STAGE_ROWS];
  ir_frame_stats multi = {.bvh_update_ms = 0.01, .raygen_ms = 0.02, .traverse_ms = 0.3, .intersect_ms = 0.2,
                          .shade_ms = 0.05, .tail_ms = 0.04, .tail_rays = 900, .control_ms = 0.03};
  int n = wnd_overlay_stage_rows(&multi, rows);
  CHECK_EQ_INT(n, 7);
  const char *order[] = {"bvh", "raygen", "trav", "isect", "tail", "shade", "control"};
  for (int k = 0; k < n && k < 7; k++) CHECK_MSG(strcmp(rows[k].name, order[k]) == 0, "%s", rows[k].name);
  CHECK(rows[4].ms == 0.04);
  /* An out-of-kernel compaction method and host round trips add their rows. */
  multi.compact_ms = 0.07;
  multi.host_wait_ms = 0.01;
  n = wnd_overlay_stage_rows(&multi, rows);
  CHECK_EQ_INT(n, 9);
  CHECK_MSG(strcmp(rows[6].name, "compact") == 0, "%s", rows[6].name);
  CHECK_MSG(strcmp(rows[8].name, "host wait") == 0, "%s", rows[8].name);
  /* The single kernel: one row. */
  ir_frame_stats single = {.kernel_ms = 0.16};
  n = wnd_overlay_stage_rows(&single, rows);
  CHECK_EQ_INT(n, 1);
  CHECK_MSG(strcmp(rows[0].name, "kernel") == 0, "%s", rows[0].name);
  /* The walk's skip map, once built: its last rebuild after the kernel. */
  single.skip_ms = 0.02;
  n = wnd_overlay_stage_rows(&single, rows);
  CHECK_EQ_INT(n, 2);
  CHECK_MSG(strcmp(rows[1].name, "skip map") == 0 && rows[1].ms == 0.02, "%s", rows[1].name);
  /* The persistent kernel: its phases and the kernel. */
  ir_frame_stats persistent = {.kernel_ms = 0.3, .raygen_ms = 0.01, .intersect_ms = 0.2, .shade_ms = 0.05, .compact_ms = 0.04};
  n = wnd_overlay_stage_rows(&persistent, rows);
  CHECK_EQ_INT(n, 5);
  CHECK_MSG(strcmp(rows[n - 1].name, "kernel") == 0, "%s", rows[n - 1].name);
  ir_frame_stats none = {0};
  CHECK_EQ_INT(wnd_overlay_stage_rows(&none, rows), 0);
}

/* While a volume loads: the bar's filled part is done / total of its track; nothing filled
 * before the size is known; the text says how much and how fast. */
static void test_progress_bar_fills_with_the_bytes_read(void) {
  wnd_mesh mesh = {0};
  int bar[4], track[4];
  const size_t gib = (size_t)1 << 30;
  wnd_overlay_progress(&mesh, 800, 600, "big.raw", 2 * gib, 8 * gib, 1.0, bar, track);
  CHECK(mesh.count > 0);
  CHECK(track[2] > 100);
  CHECK_NEAR((double)bar[2], 0.25 * track[2], 1.0);
  CHECK(bar[0] == track[0] && bar[1] == track[1]);
  /* In the middle of the window. */
  CHECK(track[0] > 200 && track[0] + track[2] < 600 && track[1] > 200 && track[1] < 400);
  mesh.count = 0;
  wnd_overlay_progress(&mesh, 800, 600, "big.raw", 0, 0, 0.1, bar, track);
  CHECK_EQ_INT(bar[2], 0);
  mesh.count = 0;
  wnd_overlay_progress(&mesh, 800, 600, "big.raw", 9 * gib, 8 * gib, 2.0, bar, track);
  CHECK_EQ_INT(bar[2], track[2]);
  wnd_mesh_free(&mesh);
}

/* A time series: the step (1-based), its time and file, the playback state, a skipped step's
 * message as a warning, and a slider whose marker sits at step / (steps - 1) of its track. */
static void test_overlay_time_line_and_slider(void) {
  wnd_timeline t = {.step = 4, .steps = 9, .time = 0.5, .name = "ball_0004.raw", .playing = true, .rate = 10};
  wnd_lines lines = {0};
  wnd_overlay_timeline_lines(&t, &lines);
  CHECK_EQ_INT(lines.count, 2);
  CHECK_STR_CONTAINS(lines.text[0], "step 5/9");
  CHECK_STR_CONTAINS(lines.text[0], "t 0.5");
  CHECK_STR_CONTAINS(lines.text[0], "ball_0004.raw");
  CHECK_STR_CONTAINS(lines.text[1], "playing 10 steps/s");
  t.playing = false;
  t.message = "step 3 of 9: ball_0002.raw: truncated; skipped";
  lines.count = 0;
  wnd_overlay_timeline_lines(&t, &lines);
  CHECK_EQ_INT(lines.count, 3);
  CHECK_STR_CONTAINS(lines.text[1], "paused");
  CHECK(lines.text[2][0] == '!');
  CHECK_STR_CONTAINS(lines.text[2], "step 3 of 9");

  ir_volume v = small_volume();
  wnd_overlay_info info = {.window_width = 640, .window_height = 480, .device = "cpu", .display_path = "host-copy",
                           .volume = &v, .timeline = &t};
  wnd_mesh mesh = {0};
  int rect[4], cb[4];
  wnd_overlay_build(&info, &mesh, rect, cb);
  CHECK(t.slider[2] > 100 && t.slider[3] > 0);
  CHECK(t.slider[1] + t.slider[3] <= rect[1] + rect[3]);
  /* The filled part ends at half the track (step 4 of 0..8): a quad from the track's start. */
  bool found = false;
  for (size_t i = 0; i + 5 < mesh.count && !found; i += 6) {
    const wnd_vertex *q = &mesh.vertices[i];
    float w = q[1].x - q[0].x;
    found = fabsf(q[0].x - (float)t.slider[0]) < 0.5f && fabsf(w - 0.5f * (float)t.slider[2]) < 1.0f &&
            fabsf(q[0].y - (float)t.slider[1]) < 0.5f;
  }
  CHECK(found);
  wnd_mesh_free(&mesh);
}

static void test_look_starts_with_one_surface_at_the_isovalue(void) {
  app_look given = {0};
  wnd_look w;
  wnd_look_start(&w, &given, 42.5);
  CHECK_EQ_INT(w.look.surface_count, 1);
  CHECK_NEAR(w.look.surfaces[0].isovalue, 42.5, 1e-6);
  CHECK_NEAR(w.look.surfaces[0].opacity, 1, 0);
  float want[3];
  ir_surface_default_color(0, want);
  CHECK(memcmp(w.look.surfaces[0].color, want, sizeof want) == 0);
  CHECK(!w.look.clip_box_on && w.look.clip_box[0] == 0 && w.look.clip_box[5] == 1);
  /* --surface values are kept as given; one given without a colour (red < 0) gets the
   * palette's colour for its place. */
  given.surface_count = 3;
  given.surfaces[0] = (ir_surface){.isovalue = 3, .color = {0.5f, 0.5f, 0.5f}, .opacity = 1};
  given.surfaces[1] = (ir_surface){.isovalue = 7, .color = {0.1f, 0.2f, 0.3f}, .opacity = 0.4f};
  given.surfaces[2] = (ir_surface){.isovalue = 9, .color = {-1, 0, 0}, .opacity = 0.5f};
  wnd_look_start(&w, &given, 42.5);
  CHECK_EQ_INT(w.look.surface_count, 3);
  CHECK_NEAR(w.look.surfaces[1].opacity, 0.4, 1e-6);
  CHECK_NEAR(w.look.surfaces[1].color[2], 0.3, 1e-6);
  ir_surface_default_color(2, want);
  CHECK(memcmp(w.look.surfaces[2].color, want, sizeof want) == 0);
  CHECK_EQ_INT(w.selected, 0);
}

static void test_look_adds_removes_and_selects_surfaces(void) {
  app_look given = {0};
  wnd_look w;
  wnd_look_start(&w, &given, 10);
  wnd_look_set_iso(&w, 20);
  CHECK(wnd_look_add_surface(&w));
  CHECK_EQ_INT(w.look.surface_count, 2);
  CHECK_EQ_INT(w.selected, 1); /* the new one is selected, at the selected one's isovalue */
  CHECK_NEAR(w.look.surfaces[1].isovalue, 20, 0);
  float want[3];
  ir_surface_default_color(1, want);
  CHECK(memcmp(w.look.surfaces[1].color, want, sizeof want) == 0);
  wnd_look_set_iso(&w, 30); /* acts on the selected surface only */
  CHECK_NEAR(w.look.surfaces[0].isovalue, 20, 0);
  CHECK_NEAR(w.look.surfaces[1].isovalue, 30, 0);
  while (w.look.surface_count < IR_MAX_SURFACES) CHECK(wnd_look_add_surface(&w));
  CHECK(!wnd_look_add_surface(&w));
  CHECK_EQ_INT(w.look.surface_count, IR_MAX_SURFACES);
  wnd_look_select(&w, 1); /* wraps to the first */
  CHECK_EQ_INT(w.selected, 0);
  wnd_look_select(&w, -1);
  CHECK_EQ_INT(w.selected, IR_MAX_SURFACES - 1);
  for (int k = 0; k < IR_MAX_SURFACES; k++) w.look.surfaces[k].isovalue = (float)k;
  wnd_look_select(&w, -(IR_MAX_SURFACES - 2)); /* the second surface */
  CHECK_EQ_INT(w.selected, 1);
  CHECK(wnd_look_remove_surface(&w));
  CHECK_EQ_INT(w.look.surface_count, IR_MAX_SURFACES - 1);
  for (int k = 0; k < IR_MAX_SURFACES - 1; k++) /* the ones after it moved up */
    CHECK_NEAR(w.look.surfaces[k].isovalue, k == 0 ? 0 : k + 1, 0);
  CHECK_EQ_INT(w.selected, 1);
  while (w.look.surface_count > 1) CHECK(wnd_look_remove_surface(&w));
  CHECK(!wnd_look_remove_surface(&w));
  CHECK_EQ_INT(w.look.surface_count, 1);
  CHECK_EQ_INT(w.selected, 0);
}

static void test_look_opacity_moves_in_tenths_within_0_and_1(void) {
  app_look given = {0};
  wnd_look w;
  wnd_look_start(&w, &given, 1);
  wnd_look_step_opacity(&w, -3);
  CHECK_NEAR(w.look.surfaces[0].opacity, 0.7, 1e-6);
  for (int k = 0; k < 20; k++) wnd_look_step_opacity(&w, -1);
  CHECK_NEAR(w.look.surfaces[0].opacity, 0, 0);
  wnd_look_step_opacity(&w, 4);
  CHECK_NEAR(w.look.surfaces[0].opacity, 0.4, 1e-6);
  wnd_look_step_opacity(&w, 40);
  CHECK_NEAR(w.look.surfaces[0].opacity, 1, 0);
}

/* C walks ir_color_names() in order (from a colour off the list: the first name), Shift+C back;
 * the overlay names the colour, or shows #rrggbb. */
static void test_look_colour_cycles_through_the_named_colours(void) {
  const char *const *names = ir_color_names();
  int count = 0;
  while (names[count]) count++;
  CHECK(count >= 2);
  if (count < 2) return;
  app_look given = {.surface_count = 1, .surfaces = {{.isovalue = 1, .color = {0.123f, 0.456f, 0.789f}, .opacity = 1}}};
  wnd_look w;
  wnd_look_start(&w, &given, 0);
  char label[16];
  CHECK_STR_CONTAINS(wnd_color_label(w.look.surfaces[0].color, label), "#1f74c9");
  wnd_look_cycle_color(&w, 1);
  CHECK_STR_CONTAINS(wnd_color_label(w.look.surfaces[0].color, label), names[0]);
  wnd_look_cycle_color(&w, 1);
  float want[3];
  CHECK(ir_color_parse(names[1], want));
  CHECK(memcmp(w.look.surfaces[0].color, want, sizeof want) == 0);
  wnd_look_cycle_color(&w, -1);
  wnd_look_cycle_color(&w, -1); /* back past the first: the last */
  CHECK(strcmp(wnd_color_label(w.look.surfaces[0].color, label), names[count - 1]) == 0);
}

/* A Shift+left drag moves the selected face by its share of the window's height, inside the
 * volume and never onto the opposite face. */
static void test_clip_face_drag_stays_inside_and_in_order(void) {
  app_look given = {0};
  wnd_look w;
  wnd_look_start(&w, &given, 0);
  wnd_look_toggle_clip_box(&w);
  CHECK(w.look.clip_box_on);
  CHECK_EQ_INT(w.clip_face, 5); /* z1 first */
  wnd_look_drag_face(&w, 0, 50, 200); /* down by a quarter of the window */
  CHECK_NEAR(w.look.clip_box[5], 0.75, 1e-6);
  wnd_look_drag_face(&w, 20, 0, 200); /* right: up again */
  CHECK_NEAR(w.look.clip_box[5], 0.85, 1e-6);
  wnd_look_drag_face(&w, 0, 1000, 200);
  CHECK_NEAR(w.look.clip_box[5], 0.01, 1e-6); /* stops short of z0 */
  wnd_look_next_face(&w);
  CHECK_EQ_INT(w.clip_face, 0); /* wraps to x0 */
  wnd_look_drag_face(&w, 0, -100, 200);
  CHECK_NEAR(w.look.clip_box[0], 0.5, 1e-6);
  wnd_look_drag_face(&w, 0, -1000, 200);
  CHECK_NEAR(w.look.clip_box[0], 0.99, 1e-6); /* stops short of x1 = 1 */
  wnd_look_drag_face(&w, 0, 1000, 200);
  CHECK_NEAR(w.look.clip_box[0], 0, 0);
  wnd_look_toggle_clip_box(&w);
  CHECK(!w.look.clip_box_on);
}

/* Shift+L: the plane through the volume's centre, its normal the view direction, so the eye's
 * side (the near half) is cut away; a drag moves it along the normal. */
static void test_clip_plane_faces_the_view_and_moves_along_its_normal(void) {
  ir_volume v = small_volume(); /* 64 x 32 x 32 world units */
  wnd_view view = wnd_view_default(IR_AXIS_NONE);
  ir_camera c = wnd_view_camera(&view, &v);
  app_look given = {0};
  wnd_look w;
  wnd_look_start(&w, &given, 0);
  wnd_look_toggle_clip_plane(&w, &c, &v);
  CHECK(w.look.clip_plane_on);
  const float *p = w.look.clip_plane;
  float centre[3] = {32, 16, 16}, dir[3], len = 0;
  for (int k = 0; k < 3; k++) {
    dir[k] = c.target[k] - c.eye[k];
    len += dir[k] * dir[k];
  }
  len = sqrtf(len);
  for (int k = 0; k < 3; k++) CHECK_NEAR(p[k], dir[k] / len, 1e-5);
  CHECK_NEAR(p[0] * centre[0] + p[1] * centre[1] + p[2] * centre[2] + p[3], 0, 1e-4);
  CHECK(p[0] * c.eye[0] + p[1] * c.eye[1] + p[2] * c.eye[2] + p[3] < 0); /* the eye's side is cut */
  float d0 = p[3];
  float diagonal = sqrtf(64.0f * 64.0f + 32.0f * 32.0f + 32.0f * 32.0f);
  wnd_look_drag_plane(&w, &v, 0, -40, 400); /* up a tenth of the window: a tenth of the diagonal deeper */
  CHECK_NEAR(p[3], d0 - 0.1f * diagonal, 1e-3);
  wnd_look_toggle_clip_plane(&w, &c, &v);
  CHECK(!w.look.clip_plane_on);
  wnd_look_toggle_clip_plane(&w, &c, &v); /* back on where it was, not reset */
  CHECK(w.look.clip_plane_on);
  CHECK_NEAR(p[3], d0 - 0.1f * diagonal, 1e-3);
}

static void test_colour_source_and_map_cycle(void) {
  app_look given = {0};
  wnd_look w;
  wnd_look_start(&w, &given, 0);
  wnd_look_cycle_color_by(&w, false);
  CHECK_EQ_INT(w.look.color_by, IR_COLOR_GRADIENT);
  wnd_look_cycle_color_by(&w, false); /* no colour volume: back to the surfaces' colours */
  CHECK_EQ_INT(w.look.color_by, IR_COLOR_SURFACE);
  wnd_look_cycle_color_by(&w, true);
  wnd_look_cycle_color_by(&w, true);
  CHECK_EQ_INT(w.look.color_by, IR_COLOR_VOLUME);
  wnd_look_cycle_color_by(&w, true);
  CHECK_EQ_INT(w.look.color_by, IR_COLOR_SURFACE);
  CHECK_EQ_INT(w.look.colormap, 0);
  wnd_look_cycle_colormap(&w, 1);
  CHECK_EQ_INT(w.look.colormap, 1);
  wnd_look_cycle_colormap(&w, -2);
  CHECK_EQ_INT(w.look.colormap, IR_COLORMAP_COUNT - 1);
}

static void test_overlay_lists_the_surfaces_and_marks_the_selected(void) {
  app_look given = {0};
  wnd_look w;
  wnd_look_start(&w, &given, 12.5);
  wnd_look_add_surface(&w);
  wnd_look_set_iso(&w, 30);
  wnd_look_step_opacity(&w, -6);
  wnd_overlay_info info = {.look = &w};
  wnd_lines lines = {0};
  wnd_overlay_look_lines(&info, &lines);
  CHECK_EQ_INT(lines.count, 2);
  char color[16];
  wnd_color_label(w.look.surfaces[1].color, color);
  CHECK_STR_CONTAINS(lines.text[0], "  1  iso 12.5");
  CHECK(strcmp(lines.text[0] + strlen(lines.text[0]) - 9, "opacity 1") == 0);
  CHECK_STR_CONTAINS(lines.text[1], "> 2  iso 30");
  CHECK_STR_CONTAINS(lines.text[1], color);
  CHECK_STR_CONTAINS(lines.text[1], "opacity 0.4");
  w.look.surfaces[0].opacity = 0.35f; /* --surface takes any opacity, not only tenths */
  w.look.clip_box_on = true;
  w.look.clip_box[5] = 0.5f;
  w.look.clip_plane_on = true;
  w.look.clip_plane[3] = -3;
  w.look.color_by = IR_COLOR_GRADIENT;
  lines = (wnd_lines){0};
  wnd_overlay_look_lines(&info, &lines);
  CHECK_EQ_INT(lines.count, 5);
  CHECK_STR_CONTAINS(lines.text[0], "opacity 0.35");
  CHECK_STR_CONTAINS(lines.text[2], "z 0.00-0.50  drag z1");
  CHECK_STR_CONTAINS(lines.text[3], "clip plane");
  CHECK_STR_CONTAINS(lines.text[4], "colour by gradient");
  CHECK_STR_CONTAINS(lines.text[4], ir_colormap_name(w.look.colormap));
}

/* Colour by a quantity: the overlay grows a colour bar, strip quads in the map's colours over the
 * range, the range's ends written under it; none when colouring by the surfaces' colours. */
static void test_overlay_colour_bar_shows_the_map(void) {
  ir_volume v = small_volume();
  app_look given = {0};
  wnd_look w;
  wnd_look_start(&w, &given, 1);
  wnd_overlay_info info = {.window_width = 640, .window_height = 480, .device = "cpu", .display_path = "host copy",
                           .volume = &v, .look = &w, .color_range = {-2.5f, 7.0f}};
  wnd_mesh plain = {0}, bar = {0};
  int rect_plain[4], rect_bar[4], cb[4] = {1, 1, 1, 1};
  wnd_overlay_build(&info, &plain, rect_plain, cb);
  CHECK(cb[0] == 0 && cb[1] == 0 && cb[2] == 0 && cb[3] == 0);
  w.look.color_by = IR_COLOR_GRADIENT;
  w.look.colormap = IR_COLORMAP_MAGMA;
  wnd_overlay_build(&info, &bar, rect_bar, cb);
  CHECK(cb[2] > 50 && cb[3] > 0);
  CHECK(rect_bar[3] > rect_plain[3]); /* the panel grew by the bar's rows */
  CHECK(cb[0] >= rect_bar[0] && cb[1] + cb[3] <= rect_bar[1] + rect_bar[3]);
  /* Step k's quad starts k steps along the strip, low values on the left. */
  for (int k = 0; k < WND_COLORBAR_STEPS; k += 9) {
    float rgb[3];
    ir_colormap_lookup(IR_COLORMAP_MAGMA, -2.5f + 9.5f * ((float)k + 0.5f) / WND_COLORBAR_STEPS, -2.5f, 7.0f, rgb);
    uint8_t want[3];
    for (int c = 0; c < 3; c++) want[c] = (uint8_t)lroundf(rgb[c] * 255.0f);
    float x = (float)cb[0] + (float)cb[2] * (float)k / WND_COLORBAR_STEPS;
    bool found = false;
    for (size_t i = 0; i < bar.count && !found; i++) {
      const wnd_vertex *vx = &bar.vertices[i];
      found = fabsf(vx->x - x) < 1e-3f && fabsf(vx->y - (float)cb[1]) < 1e-3f && memcmp(vx->rgba, want, 3) == 0;
    }
    CHECK_MSG(found, "colour bar step %d: no quad at x %.2f in %d,%d,%d", k, x, want[0], want[1], want[2]);
  }
  CHECK(bar.count > plain.count + 6 * WND_COLORBAR_STEPS); /* the strip and the "-2.5" and "7" under it */
  wnd_mesh_free(&plain);
  wnd_mesh_free(&bar);
}

static void test_script_drag_with_shift(void) {
  wnd_script s;
  char err[IR_ERR_LEN] = {0};
  CHECK_EQ_INT(wnd_script_parse("0 drag shift+left 1 2 3 4\n0 drag right 1 2 3 4\n", "t.txt", &s, err), IR_OK);
  CHECK_EQ_INT(s.count, 2);
  if (s.count == 2) {
    CHECK(s.events[0].kind == WND_EVENT_DRAG && s.events[0].shift && s.events[0].button == WND_BUTTON_LEFT);
    CHECK(!s.events[1].shift && s.events[1].button == WND_BUTTON_RIGHT);
  }
  wnd_script_free(&s);
  CHECK_EQ_INT(wnd_script_parse("0 drag shift+up 1 2 3 4\n", "t.txt", &s, err), IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "t.txt:1: drag: the button");
}

int main(void) {
  RUN(test_look_starts_with_one_surface_at_the_isovalue);
  RUN(test_look_adds_removes_and_selects_surfaces);
  RUN(test_look_opacity_moves_in_tenths_within_0_and_1);
  RUN(test_look_colour_cycles_through_the_named_colours);
  RUN(test_clip_face_drag_stays_inside_and_in_order);
  RUN(test_clip_plane_faces_the_view_and_moves_along_its_normal);
  RUN(test_colour_source_and_map_cycle);
  RUN(test_overlay_lists_the_surfaces_and_marks_the_selected);
  RUN(test_overlay_colour_bar_shows_the_map);
  RUN(test_script_drag_with_shift);
  RUN(test_overlay_stage_title_says_gpu_only_on_the_cpu);
  RUN(test_overlay_stage_rows_are_the_stages_that_ran);
  RUN(test_progress_bar_fills_with_the_bytes_read);
  RUN(test_overlay_time_line_and_slider);
  RUN(test_up_axis_flips_and_cycles);
  RUN(test_script_parses_every_event_kind);
  RUN(test_script_errors_name_the_line);
  RUN(test_script_load_reports_missing_file);
  RUN(test_script_load_reads_a_file);
  RUN(test_default_view_is_the_orbit_camera);
  RUN(test_orbit_turns_and_stops_at_the_poles);
  RUN(test_zoom_moves_closer_and_is_bounded);
  RUN(test_pan_moves_eye_and_target_across_the_view);
  return check_summary();
}
