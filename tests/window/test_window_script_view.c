/* The window's plain-C parts, without a display: the --script parser (app/window/script.c) and
 * the view arithmetic (app/window/view.c) that turns mouse input into a camera. */
#include <math.h>
#include <stdio.h>
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

int main(void) {
  RUN(test_overlay_stage_title_says_gpu_only_on_the_cpu);
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
