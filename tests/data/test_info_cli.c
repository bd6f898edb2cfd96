/* `inkray info` through the built program (env INKRAY_BINARY): every dataset of tests/data/real prints
 * its dims, type, spacing, size, range and suggestions with exit status 0; bad input exits 2
 * with one message naming the file and the reason. */
#include <sys/wait.h>

#include "tests/data/data_test_util.h"

typedef struct run_result {
  int status; /* exit status, or -1 if the program did not exit normally */
  char *out, *err;
} run_result;

static const char *binary(void) {
  const char *path = getenv("INKRAY_BINARY");
  if (!path || access(path, X_OK) != 0) {
    fprintf(stderr, "FAIL: INKRAY_BINARY ('%s') is not an executable inkray program: build the "
                    "inkray target (ctest sets the variable)\n",
            path ? path : "(unset)");
    exit(1);
  }
  return path;
}

static char *slurp(const char *path) {
  size_t n = 0;
  unsigned char *data = check_read_file(path, &n);
  char *text = malloc(n + 1);
  if (data) memcpy(text, data, n);
  text[data ? n : 0] = '\0';
  free(data);
  return text;
}

/* Runs `inkray info ARGS` (ARGS already quoted for the shell). */
static run_result run_info(const char *args) {
  const char *out = scratch_path("stdout.txt"), *err = scratch_path("stderr.txt");
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "'%s' info %s >'%s' 2>'%s'", binary(), args, out, err);
  int raw = system(cmd);
  run_result r = {.status = raw != -1 && WIFEXITED(raw) ? WEXITSTATUS(raw) : -1,
                  .out = slurp(out), .err = slurp(err)};
  return r;
}

static void free_result(run_result *r) {
  free(r->out);
  free(r->err);
}

static void expect_ok(const char *args, const char *const *lines) {
  run_result r = run_info(args);
  CHECK_MSG(r.status == 0, "info %s: exit %d: %s", args, r.status, r.err);
  for (int k = 0; lines[k]; k++) CHECK_STR_CONTAINS(r.out, lines[k]);
  CHECK_STR_CONTAINS(r.out, "histogram");
  CHECK_STR_CONTAINS(r.out, "isovalues ");
  CHECK_STR_CONTAINS(r.out, "non-finite  ");
  free_result(&r);
}

static void expect_exit_2(const char *args, const char *reason, const char *reason2) {
  run_result r = run_info(args);
  CHECK_MSG(r.status == 2, "info %s: exit %d, expected 2", args, r.status);
  CHECK_STR_CONTAINS(r.err, reason);
  if (reason2) CHECK_STR_CONTAINS(r.err, reason2);
  /* One line of message, nothing on stdout. */
  char *nl = strchr(r.err, '\n');
  CHECK_MSG(nl && nl[1] == '\0', "stderr is not one line: %s", r.err);
  CHECK_EQ_INT(strlen(r.out), 0);
  free_result(&r);
}

static const char *quoted(const char *path) { return fmt_path("'%s'", path); }

static void test_help_exits_0(void) {
  run_result r = run_info("--help");
  CHECK_EQ_INT(r.status, 0);
  CHECK_STR_CONTAINS(r.out, "Usage: inkray info");
  CHECK_STR_CONTAINS(r.out, "--dims");
  CHECK_STR_CONTAINS(r.out, "fractal");
  free_result(&r);
}

static void test_every_dataset(void) {
  expect_ok(quoted(data_path("neghip_66x66x66_uint8.raw")),
            (const char *[]){"dims        66 x 66 x 66 (287496 voxels)", "type        uint8",
                             "spacing     1 x 1 x 1", "bytes       287496", "range       0 .. 255",
                             "non-finite  0", NULL});
  expect_ok(quoted(data_path("bolt_70x123x66_uint8.raw")),
            (const char *[]){"dims        70 x 123 x 66", "type        uint8", "bytes       568260", NULL});
  expect_ok(quoted(data_path("headsq_64x64x93_int16.raw")),
            (const char *[]){"dims        64 x 64 x 93", "type        int16", "range       0 .. 3926",
                             "bytes       761856", NULL});
  expect_ok(quoted(data_path("headsq/quarter.nhdr")),
            (const char *[]){"dims        64 x 64 x 93", "type        int16",
                             "spacing     3.2 x 3.2 x 1.5", "range       0 .. 3926", NULL});
  expect_ok(quoted(data_path("HeadMRVolume.mhd")),
            (const char *[]){"dims        48 x 62 x 42", "type        uint8", "spacing     4 x 4 x 4",
                             NULL});
  expect_ok(quoted(data_path("frog/frogtissue.mhd")),
            (const char *[]){"dims        500 x 470 x 136 (31960000 voxels)", "type        uint8",
                             "spacing     1 x 1 x 1.5", "bytes       31960000", ".5", NULL});
  const char *avg152 = shared_file("avg152T1_RL_nifti.nii.gz");
  if (avg152)
    expect_ok(quoted(avg152), (const char *[]){"dims        91 x 109 x 91", "type        uint8",
                                               "spacing     2 x 2 x 2", NULL});
  expect_ok(quoted(data_path("carotid_76x49x45_float32.raw")),
            (const char *[]){"dims        76 x 49 x 45", "type        float32", "bytes       670320",
                             "non-finite  0", NULL});
}

static void test_builtins_and_options(void) {
  expect_ok("builtin:sphere:32", (const char *[]){"dims        32 x 32 x 32", "type        float32",
                                                  "isovalues   0 ", NULL});
  expect_ok("builtin:fractal:32", (const char *[]){"isovalues   127.5", NULL});
  expect_ok(fmt_path("--spacing 1,2,3 %s", quoted(data_path("HeadMRVolume.mhd"))),
            (const char *[]){"spacing     1 x 2 x 3", NULL});
  expect_ok(fmt_path("--dims 66x70x123 --type uint8 %s", quoted(data_path("bolt_70x123x66_uint8.raw"))),
            (const char *[]){"dims        66 x 70 x 123", NULL});
}

static void test_nonfinite_voxels_reported(void) {
  float values[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  values[2] = 0.0f / 0.0f;
  values[5] = 1.0f / 0.0f;
  write_bytes(scratch_path("holes_2x2x2_float32.raw"), values, sizeof values);
  expect_ok(quoted(scratch_path("holes_2x2x2_float32.raw")),
            (const char *[]){"non-finite  2", "range       1 .. 8", NULL});
}

/* A float volume with no finite voxel has no range and nothing to suggest: info says so instead
 * of "range 0 .. 0" and "a single value". */
static void test_all_nonfinite_volume_says_so(void) {
  float values[8];
  for (int k = 0; k < 8; k++) values[k] = k % 2 ? 1.0f / 0.0f : 0.0f / 0.0f;
  write_bytes(scratch_path("void_2x2x2_float32.raw"), values, sizeof values);
  run_result r = run_info(quoted(scratch_path("void_2x2x2_float32.raw")));
  CHECK_MSG(r.status == 0, "exit %d: %s", r.status, r.err);
  CHECK_STR_CONTAINS(r.out, "range       none: every voxel is NaN or Inf");
  CHECK_STR_CONTAINS(r.out, "non-finite  8");
  CHECK_STR_CONTAINS(r.out, "isovalues   none: no finite values");
  CHECK_MSG(strstr(r.out, "single value") == NULL && strstr(r.out, "0 .. 0") == NULL, "%s", r.out);
  free_result(&r);
  /* A constant volume is still "a single value". */
  float same[8] = {3, 3, 3, 3, 3, 3, 3, 3};
  write_bytes(scratch_path("flat_2x2x2_float32.raw"), same, sizeof same);
  r = run_info(quoted(scratch_path("flat_2x2x2_float32.raw")));
  CHECK_STR_CONTAINS(r.out, "range       3 .. 3");
  CHECK_STR_CONTAINS(r.out, "a single value");
  free_result(&r);
}

/* The up axis from the header, with the field it came from; files without one say so. */
static void test_up_axis_reported(void) {
  write_text(scratch_path("up.nhdr"), "NRRD0004\ntype: uchar\ndimension: 3\nsizes: 2 2 2\nencoding: raw\n"
                                      "space: left-posterior-superior\n"
                                      "space directions: (1,0,0) (0,0,-1) (0,1,0)\ndata file: up.raw\n");
  unsigned char voxels[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  write_bytes(scratch_path("up.raw"), voxels, sizeof voxels);
  run_result r = run_info(quoted(scratch_path("up.nhdr")));
  CHECK_MSG(r.status == 0, "exit %d: %s", r.status, r.err);
  CHECK_STR_CONTAINS(r.out, "up          -y (from the NRRD space directions)");
  free_result(&r);
  r = run_info(quoted(data_path("neghip_66x66x66_uint8.raw")));
  CHECK_STR_CONTAINS(r.out, "up          not in the file");
  free_result(&r);
}

/* Sizes before memory: a 3-byte file named for 64 GiB says so (exit 2, both numbers), and a file
 * that really is larger than the memory available is refused at once with both numbers. */
static void test_sizes_and_memory_checked_before_loading(void) {
  write_bytes(scratch_path("x_4096x4096x4096_uint8.raw"), "abc", 3);
  expect_exit_2(quoted(scratch_path("x_4096x4096x4096_uint8.raw")), "3 bytes, expected 68719476736",
                NULL);
  /* 1 TiB as a sparse file: no disk used, more than any test machine's memory. */
  const char *big = scratch_path("big_1024x1024x1048576_uint8.raw");
  FILE *f = fopen(big, "wb");
  bool sparse = f && ftruncate(fileno(f), (off_t)1 << 40) == 0;
  if (f) fclose(f);
  if (!sparse) {
    printf("  (no 1 TiB sparse file here: the memory case is skipped)\n");
    return;
  }
  expect_exit_2(quoted(big), "needs 1099511627776 bytes (1024.0 GiB) of memory, but only ",
                "are available (MemAvailable)");
  remove(big);
}

/* A big load whose stderr is a file (as in CI) prints whole progress lines, at the rate
 * INKRAY_PROGRESS_INTERVAL_MS asks for, and a closing line. 256 MiB as a sparse file. */
static void test_progress_lines_when_stderr_is_a_log(void) {
  const char *path = scratch_path("p_1024x1024x256_uint8.raw");
  FILE *f = fopen(path, "wb");
  bool sparse = f && ftruncate(fileno(f), (off_t)256 << 20) == 0;
  if (f) fclose(f);
  if (!sparse) {
    printf("  (no sparse file here: the progress case is skipped)\n");
    return;
  }
  setenv("INKRAY_PROGRESS_INTERVAL_MS", "1", 1);
  run_result r = run_info(quoted(path));
  unsetenv("INKRAY_PROGRESS_INTERVAL_MS");
  CHECK_MSG(r.status == 0, "exit %d: %s", r.status, r.err);
  CHECK_STR_CONTAINS(r.err, "loading p_1024x1024x256_uint8.raw: ");
  CHECK_STR_CONTAINS(r.err, "loading p_1024x1024x256_uint8.raw: done, 268435456 of 268435456 bytes");
  CHECK_MSG(strchr(r.err, '\r') == NULL, "carriage returns in a log: %s", r.err);
  free_result(&r);
  remove(path);
}

static void test_bad_input_exits_2(void) {
  expect_exit_2(quoted(data_path("nothere.raw")), "nothere.raw", "no such file");
  expect_exit_2(quoted(test_data_dir()), "DICOM", NULL);
  expect_exit_2(fmt_path("--dims 64x64x64 --type uint8 %s", quoted(data_path("neghip_66x66x66_uint8.raw"))),
                "neghip_66x66x66_uint8.raw: 287496 bytes, expected 262144 for 64x64x64 uint8", NULL);
  expect_exit_2(quoted(data_path("README.md")), "README.md", "--dims");
  expect_exit_2(fmt_path("--type uint8 %s", quoted(data_path("headsq/quarter.nhdr"))),
                "quarter.nhdr", "raw files");
  expect_exit_2("builtin:cube", "builtin:cube", "unknown builtin");
  expect_exit_2("builtin:sphere:16385", "builtin:sphere:16385", "from 2 to 16384");
  expect_exit_2("--frobnicate builtin:sphere", "unknown option '--frobnicate'", NULL);
  expect_exit_2("--dims 0x4x4 x.raw", "--dims", NULL);
  expect_exit_2("", "no volume given", NULL);
  expect_exit_2("builtin:sphere builtin:fractal", "one volume at a time", NULL);
}

int main(void) {
  binary();
  test_data_dir();
  RUN(test_help_exits_0);
  RUN(test_every_dataset);
  RUN(test_builtins_and_options);
  RUN(test_nonfinite_voxels_reported);
  RUN(test_bad_input_exits_2);
  RUN(test_all_nonfinite_volume_says_so);
  RUN(test_up_axis_reported);
  RUN(test_sizes_and_memory_checked_before_loading);
  RUN(test_progress_lines_when_stderr_is_a_log);
  return check_summary();
}
