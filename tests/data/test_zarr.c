/* Zarr v2 and v3 arrays, OME-Zarr images and HDF5 datasets: the samples in tests/data/zarr
 * (written by zarr-python, numcodecs and h5py: make_samples.py there) read voxel for voxel
 * against value() below, which is how they were made; every codec, F order, transposes, both
 * byte orders, every dtype, missing chunks, sharding; OME-Zarr levels, axes, spacing, origin,
 * t and c axes, --level auto; broken chunks and metadata refused with one line naming the
 * chunk, before the volume is allocated; the program's info, and a headless CPU picture equal
 * to the raw volume's. */
#include <math.h>
#include <pthread.h>

#include "data/zarr.h"
#include "tests/data/data_test_util.h"

/* The Zarr samples use blosc and zstd: their cases need every library. */
#if defined(INKRAY_HAVE_CJSON) && defined(INKRAY_HAVE_BLOSC) && defined(INKRAY_HAVE_ZSTD)
#define ZARR_SAMPLES_READ 1
#endif

#define NX 14
#define NY 12
#define NZ 10

static const char *sample(const char *name) { return fmt_path("%s/%s", INKRAY_ZARR_SAMPLES, name); }

#if defined(ZARR_SAMPLES_READ) || defined(INKRAY_HAVE_HDF5)
/* make_samples.py's value(x, y, z, t, c), then its per-dtype mapping. */
static double value(size_t x, size_t y, size_t z, size_t t, size_t c) {
  return (double)((x * 37 + y * 101 + z * 211) % 4000 + 100 * t + 50 * c);
}

typedef enum kind { AS_IS, INT8, UINT8, FLOAT } kind;
static double mapped(double v, kind k) {
  if (k == INT8) return fmod(v, 100) - 50;
  if (k == UINT8) return fmod(v, 256);
  if (k == FLOAT) return v / 4.0;
  return v;
}

static ir_status load_desc(const char *name, ir_volume_desc d, ir_volume *v, char err[IR_ERR_LEN]) {
  d.source = name[0] == '/' ? name : sample(name);
  return ir_volume_load(&d, v, err);
}

/* Every voxel of v against value() at step t, channel c, sampled every (fx, fy, fz). */
static size_t count_wrong(const ir_volume *v, kind k, size_t t, size_t c, size_t fx, size_t fy, size_t fz) {
  size_t wrong = 0;
  for (size_t z = 0; z < v->dims[2]; z++)
    for (size_t y = 0; y < v->dims[1]; y++)
      for (size_t x = 0; x < v->dims[0]; x++)
        if (ir_volume_value_at(v, x, y, z) != mapped(value(x * fx, y * fy, z * fz, t, c), k)) wrong++;
  return wrong;
}
#endif

static void test_other_formats_refuse_level_and_channel(void) {
  ir_volume v;
  char err[IR_ERR_LEN] = "";
  ir_volume_desc d = {.source = "builtin:sphere:8", .channel = 1};
  CHECK(ir_volume_load(&d, &v, err) == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "--channel is for");
  d = (ir_volume_desc){.source = "builtin:sphere:8", .level = 2};
  CHECK(ir_volume_load(&d, &v, err) == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "--level is for");
  d = (ir_volume_desc){.source = "builtin:sphere:8", .level = IR_LEVEL_AUTO};
  CHECK_MSG(ir_volume_load(&d, &v, err) == IR_OK, "%s", err);
  ir_volume_free(&v);
}

#ifdef INKRAY_HAVE_HDF5
static void test_hdf5_datasets_spacing_series_and_choice(void) {
  ir_volume v;
  char err[IR_ERR_LEN] = "";
  CHECK_MSG(load_desc("h5_gzip.h5", (ir_volume_desc){0}, &v, err) == IR_OK, "%s", err);
  CHECK_EQ_INT(count_wrong(&v, AS_IS, 0, 0, 1, 1, 1), 0);
  /* element_size_um (z, y, x) = 2, 0.5, 0.25 */
  CHECK(v.spacing[0] == 0.25f && v.spacing[1] == 0.5f && v.spacing[2] == 2.0f);
  ir_volume_free(&v);
  CHECK_MSG(load_desc(fmt_path("%s:/exchange/data", sample("h5_gzip.h5")), (ir_volume_desc){.region_offset = {1, 2, 3}, .region_size = {5, 6, 7}}, &v, err) == IR_OK, "%s", err);
  size_t wrong = 0;
  for (size_t z = 0; z < 7; z++)
    for (size_t y = 0; y < 6; y++)
      for (size_t x = 0; x < 5; x++) wrong += ir_volume_value_at(&v, x, y, z) != value(x + 1, y + 2, z + 3, 0, 0);
  CHECK_EQ_INT(wrong, 0);
  ir_volume_free(&v);

  CHECK(load_desc("h5_two.h5", (ir_volume_desc){0}, &v, err) == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "/a, /b/c");
  CHECK_MSG(load_desc(fmt_path("%s:/a", sample("h5_two.h5")), (ir_volume_desc){0}, &v, err) == IR_OK, "%s", err);
  CHECK_EQ_INT(count_wrong(&v, FLOAT, 0, 0, 1, 1, 1), 0);
  ir_volume_free(&v);
  CHECK_MSG(load_desc(fmt_path("%s:/b/c", sample("h5_two.h5")), (ir_volume_desc){0}, &v, err) == IR_OK, "%s", err);
  CHECK_EQ_INT(count_wrong(&v, UINT8, 0, 0, 1, 1, 1), 0);
  ir_volume_free(&v);
  CHECK(load_desc(fmt_path("%s:/nothere", sample("h5_two.h5")), (ir_volume_desc){0}, &v, err) == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "no dataset /nothere");

  /* 4-D, big-endian int16: a series of 3 steps. */
  const char *series = sample("h5_series.h5");
  CHECK(ir_series_detect(series));
  ir_series *s = NULL;
  CHECK_MSG(ir_series_open(&(ir_volume_desc){.source = series}, &s, err) == IR_OK, "%s", err);
  if (s) {
    CHECK_EQ_INT(ir_series_length(s), 3);
    CHECK_MSG(ir_series_read(s, 2, NULL, &v, err) == IR_OK, "%s", err);
    CHECK(v.type == IR_VOXEL_INT16);
    CHECK_EQ_INT(count_wrong(&v, AS_IS, 2, 0, 1, 1, 1), 0);
    ir_volume_free(&v);
    ir_series_close(s);
  }
}
#endif

#ifdef ZARR_SAMPLES_READ
static void check_sample(const char *name, kind k) {
  ir_volume v;
  char err[IR_ERR_LEN] = "";
  ir_status st = load_desc(name, (ir_volume_desc){0}, &v, err);
  CHECK_MSG(st == IR_OK, "%s: %s", name, err);
  if (st != IR_OK) return;
  CHECK_MSG(v.dims[0] == NX && v.dims[1] == NY && v.dims[2] == NZ, "%s: dims %zux%zux%zu", name, v.dims[0], v.dims[1],
            v.dims[2]);
  size_t wrong = count_wrong(&v, k, 0, 0, 1, 1, 1);
  CHECK_MSG(wrong == 0, "%s: %zu voxels differ from the values written", name, wrong);
  CHECK(v.spacing[0] == 1 && v.spacing[1] == 1 && v.spacing[2] == 1);
  ir_volume_free(&v);
}

static void test_v2_every_codec_order_and_separator(void) {
  static const char *const names[] = {"v2_blosc_lz4_bitshuffle.zarr", "v2_blosc_lz4hc.zarr", "v2_blosc_zstd.zarr",
                                      "v2_blosc_zlib.zarr", "v2_blosc_blosclz.zarr", "v2_zstd_order_f.zarr",
                                      "v2_zlib_slash.zarr", "v2_gzip_big_endian.zarr"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) check_sample(names[i], AS_IS);
}

static void test_v2_every_dtype_and_byte_order(void) {
  check_sample("v2_dtype_int8.zarr", INT8);
  check_sample("v2_dtype_uint8.zarr", UINT8);
  check_sample("v2_dtype_int16.zarr", AS_IS);
  check_sample("v2_dtype_int32.zarr", AS_IS);
  check_sample("v2_dtype_uint32.zarr", AS_IS);
  check_sample("v2_dtype_int64_be.zarr", AS_IS);
  check_sample("v2_dtype_uint64.zarr", AS_IS);
  check_sample("v2_dtype_float32.zarr", FLOAT);
  check_sample("v2_dtype_float32_be.zarr", FLOAT);
  check_sample("v2_dtype_float64.zarr", FLOAT);
  /* The types follow the other readers' rules: int8 as int16, wide integers as the narrowest
   * that holds them, float64 as float32 with a note. */
  ir_volume v;
  char err[IR_ERR_LEN];
  CHECK(load_desc("v2_dtype_int8.zarr", (ir_volume_desc){0}, &v, err) == IR_OK && v.type == IR_VOXEL_INT16);
  ir_volume_free(&v);
  CHECK(load_desc("v2_dtype_uint64.zarr", (ir_volume_desc){0}, &v, err) == IR_OK && v.type == IR_VOXEL_INT16);
  ir_volume_free(&v);
  CHECK(load_desc("v2_dtype_float64.zarr", (ir_volume_desc){0}, &v, err) == IR_OK && v.type == IR_VOXEL_FLOAT32);
  CHECK_STR_CONTAINS(v.note, "float64");
  ir_volume_free(&v);
}

static void test_v2_missing_chunks_are_the_fill_value(void) {
  ir_volume v;
  char err[IR_ERR_LEN] = "";
  CHECK_MSG(load_desc("v2_missing_chunks.zarr", (ir_volume_desc){0}, &v, err) == IR_OK, "%s", err);
  size_t wrong = 0;
  for (size_t z = 0; z < NZ; z++)
    for (size_t y = 0; y < NY; y++)
      for (size_t x = 0; x < NX; x++) {
        double want = x < 6 && y < 5 && z < 4 ? value(x, y, z, 0, 0) : 9.0;
        wrong += ir_volume_value_at(&v, x, y, z) != want;
      }
  CHECK_MSG(wrong == 0, "%zu voxels wrong", wrong);
  ir_volume_free(&v);
}

static void test_v3_codecs_transpose_crc32c_sharding_and_keys(void) {
  check_sample("v3_blosc.zarr", AS_IS);
  check_sample("v3_zstd_big_endian.zarr", AS_IS);
  check_sample("v3_gzip_transpose.zarr", AS_IS);
  check_sample("v3_crc32c.zarr", AS_IS);
  check_sample("v3_sharded.zarr", AS_IS);
  check_sample("v3_v2_keys_float32.zarr", FLOAT);
}

static void test_region_of_a_sharded_array(void) {
  ir_volume v;
  char err[IR_ERR_LEN] = "";
  ir_volume_desc d = {.region_offset = {3, 4, 5}, .region_size = {9, 7, 4}};
  CHECK_MSG(load_desc("v3_sharded.zarr", d, &v, err) == IR_OK, "%s", err);
  CHECK(v.dims[0] == 9 && v.dims[1] == 7 && v.dims[2] == 4 && v.full_dims[0] == NX && v.origin[2] == 5);
  size_t wrong = 0;
  for (size_t z = 0; z < 4; z++)
    for (size_t y = 0; y < 7; y++)
      for (size_t x = 0; x < 9; x++) wrong += ir_volume_value_at(&v, x, y, z) != value(x + 3, y + 4, z + 5, 0, 0);
  CHECK_MSG(wrong == 0, "%zu voxels wrong", wrong);
  ir_volume_free(&v);
}

/* A sink sees every z slab once, whole slices, with its final voxels, while the load runs. */
typedef struct slab_sink {
  unsigned char *copy;
  size_t bytes, pieces, slice_rows;
  bool whole_slices;
  pthread_mutex_t lock;
} slab_sink;

static ir_status take_slab(void *ctx, const ir_volume_piece *p, const void *voxels, char err[IR_ERR_LEN]) {
  (void)err;
  slab_sink *k = ctx;
  pthread_mutex_lock(&k->lock);
  memcpy(k->copy + p->offset, voxels, p->bytes);
  k->bytes += p->bytes;
  k->pieces++;
  k->whole_slices = k->whole_slices && p->row % k->slice_rows == 0 && p->rows % k->slice_rows == 0;
  pthread_mutex_unlock(&k->lock);
  return IR_OK;
}

static void test_whole_slabs_stream_to_a_sink(void) {
  static const char *const names[] = {"v2_blosc_lz4_bitshuffle.zarr", "v3_sharded.zarr", "v2_missing_chunks.zarr"};
  for (size_t i = 0; i < 3; i++) {
    slab_sink k = {.copy = calloc(NX * NY * NZ, 2), .slice_rows = NY, .whole_slices = true};
    pthread_mutex_init(&k.lock, NULL);
    ir_volume_sink sink = {take_slab, &k};
    ir_volume v, head;
    char err[IR_ERR_LEN] = "";
    CHECK_MSG(load_desc(names[i], (ir_volume_desc){.header_only = true}, &head, err) == IR_OK, "%s", err);
    CHECK(head.streamable);
    CHECK_MSG(load_desc(names[i], (ir_volume_desc){.sink = &sink, .io_threads = 3}, &v, err) == IR_OK, "%s", err);
    CHECK(v.streamed);
    CHECK_EQ_INT(k.bytes, v.bytes);
    CHECK(k.whole_slices && k.pieces >= 2);
    CHECK(memcmp(k.copy, v.voxels, v.bytes) == 0);
    ir_volume_free(&v);
    /* A box does not stream. */
    CHECK_MSG(load_desc(names[i], (ir_volume_desc){.sink = &sink, .region_size = {4, 4, 4}}, &v, err) == IR_OK, "%s", err);
    CHECK(!v.streamed);
    ir_volume_free(&v);
    pthread_mutex_destroy(&k.lock);
    free(k.copy);
  }
}

static void test_ome_04_levels_axes_time_and_channels(void) {
  ir_volume v;
  char err[IR_ERR_LEN] = "";
  ir_volume_desc d = {.channel = 1, .time_step = 2};
  CHECK_MSG(load_desc("ome_04_tczyx.zarr", d, &v, err) == IR_OK, "%s", err);
  CHECK(v.dims[0] == NX && v.dims[1] == NY && v.dims[2] == NZ);
  CHECK_EQ_INT(count_wrong(&v, AS_IS, 2, 1, 1, 1, 1), 0);
  /* scale (z, y, x) 2, 0.5, 0.5; translation 10, 20, 30. */
  CHECK(v.spacing[0] == 0.5f && v.spacing[1] == 0.5f && v.spacing[2] == 2.0f);
  CHECK(v.world_origin[0] == 30.0f && v.world_origin[1] == 20.0f && v.world_origin[2] == 10.0f);
  CHECK_EQ_INT(v.level_count, 3);
  CHECK_EQ_INT(v.steps, 3);
  CHECK_EQ_INT(v.channels, 2);
  CHECK_STR_CONTAINS(v.description, "micrometer");
  CHECK(v.level_dims[1][0] == 7 && v.level_dims[1][1] == 6 && v.level_dims[1][2] == 10);
  CHECK(v.level_dims[2][0] == 4 && v.level_dims[2][1] == 3 && v.level_dims[2][2] == 5);
  CHECK(v.level_spacing[2][0] == 2.0f && v.level_spacing[2][2] == 4.0f);
  ir_volume_free(&v);

  d = (ir_volume_desc){.level = 1, .channel = 0, .time_step = 1};
  CHECK_MSG(load_desc("ome_04_tczyx.zarr", d, &v, err) == IR_OK, "%s", err);
  CHECK(v.dims[0] == 7 && v.dims[1] == 6 && v.dims[2] == 10 && v.level == 1);
  CHECK_EQ_INT(count_wrong(&v, AS_IS, 1, 0, 2, 2, 1), 0);
  CHECK(v.spacing[0] == 1.0f && v.spacing[2] == 2.0f);
  ir_volume_free(&v);

  /* Out of range: refused by name. */
  CHECK(load_desc("ome_04_tczyx.zarr", (ir_volume_desc){.channel = 2}, &v, err) == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "2 channels");
  CHECK(load_desc("ome_04_tczyx.zarr", (ir_volume_desc){.level = 3}, &v, err) == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "3 levels");
  CHECK(load_desc("ome_05_zyx.zarr", (ir_volume_desc){.channel = 1}, &v, err) == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "no channel axis");
}

static void test_ome_04_time_axis_is_a_series(void) {
  const char *src = sample("ome_04_tczyx.zarr");
  CHECK(ir_series_detect(src));
  CHECK(!ir_series_detect(sample("ome_05_zyx.zarr")));
  ir_series *s = NULL;
  char err[IR_ERR_LEN] = "";
  CHECK_MSG(ir_series_open(&(ir_volume_desc){.source = src, .channel = 1}, &s, err) == IR_OK, "%s", err);
  if (!s) return;
  CHECK_EQ_INT(ir_series_length(s), 3);
  for (size_t t = 0; t < 3; t++) {
    ir_volume v;
    CHECK_MSG(ir_series_read(s, t, NULL, &v, err) == IR_OK, "%s", err);
    CHECK_EQ_INT(count_wrong(&v, AS_IS, t, 1, 1, 1, 1), 0);
    ir_volume_free(&v);
  }
  ir_series_close(s);
}

static void test_ome_05_sharded_levels_and_auto(void) {
  ir_volume v;
  char err[IR_ERR_LEN] = "";
  CHECK_MSG(load_desc("ome_05_zyx.zarr", (ir_volume_desc){0}, &v, err) == IR_OK, "%s", err);
  CHECK_EQ_INT(count_wrong(&v, AS_IS, 0, 0, 1, 1, 1), 0);
  CHECK(v.spacing[0] == 1.5f && v.spacing[2] == 3.0f);
  CHECK_STR_CONTAINS(v.description, "OME-Zarr 0.5");
  ir_volume_free(&v);
  CHECK_MSG(load_desc("ome_05_zyx.zarr", (ir_volume_desc){.level = 1}, &v, err) == IR_OK, "%s", err);
  CHECK(v.dims[0] == 7 && v.dims[1] == 6 && v.dims[2] == 5);
  CHECK_EQ_INT(count_wrong(&v, AS_IS, 0, 0, 2, 2, 2), 0);
  ir_volume_free(&v);

  /* auto: the finest level within the budget (level 0 takes 3360 bytes, level 1 420). */
  ir_volume_desc d = {.level = IR_LEVEL_AUTO, .level_budget_bytes = 1000};
  CHECK_MSG(load_desc("ome_05_zyx.zarr", d, &v, err) == IR_OK, "%s", err);
  CHECK_EQ_INT(v.level, 1);
  CHECK_STR_CONTAINS(v.note, "level 1 of 2");
  ir_volume_free(&v);
  d.level_budget_bytes = 4000;
  CHECK_MSG(load_desc("ome_05_zyx.zarr", d, &v, err) == IR_OK, "%s", err);
  CHECK_EQ_INT(v.level, 0);
  ir_volume_free(&v);
  /* Nothing fits: the coarsest. */
  d.level_budget_bytes = 10;
  CHECK_MSG(load_desc("ome_05_zyx.zarr", d, &v, err) == IR_OK, "%s", err);
  CHECK_EQ_INT(v.level, 1);
  ir_volume_free(&v);
}

/* Broken chunks: exit 2, one line naming the chunk key and the reason (with memory for the
 * volume and no more, the chunk still speaks; with too little, the memory check does, before any
 * chunk is read). */
static void test_broken_chunks_name_the_key(void) {
  static const struct {
    const char *name, *key, *reason;
  } cases[] = {
      {"bad_blosc_header.zarr", "chunk 0.0.0", "blosc"},
      {"bad_zstd_truncated.zarr", "chunk 1.1.1", "zstd"},
      {"bad_chunk_shape.zarr", "chunk 0.0.0", "expected 504"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ir_volume v;
    char err[IR_ERR_LEN] = "";
    ir_status st = load_desc(cases[i].name, (ir_volume_desc){0}, &v, err);
    CHECK_MSG(st == IR_ERR_INPUT, "%s: status %d", cases[i].name, (int)st);
    CHECK_STR_CONTAINS(err, cases[i].key);
    CHECK_STR_CONTAINS(err, cases[i].reason);
    CHECK_INFO_REFUSES(sample(cases[i].name), cases[i].key);
  }
  ir_volume v;
  char err[IR_ERR_LEN] = "";
  ir_status st = load_desc("bad_chunk_shape.zarr", (ir_volume_desc){.available_bytes_override = 4000}, &v, err);
  CHECK(st == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "chunk 0.0.0");
  st = load_desc("bad_chunk_shape.zarr", (ir_volume_desc){.available_bytes_override = 16}, &v, err);
  CHECK(st == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "needs 3360 bytes");
}

/* A copy of a sample in the scratch folder, for damaging. */
static const char *copy_sample(const char *name) {
  const char *dst = scratch_path(name);
  int rc = system(fmt_path("rm -rf '%s' && cp -r '%s' '%s'", dst, sample(name), dst));
  CHECK(rc == 0);
  return strdup(dst);
}

static void flip_byte(const char *path, long at) {
  size_t n = 0;
  unsigned char *data = check_read_file(path, &n);
  CHECK(data && n > 0);
  if (!data) return;
  size_t i = at < 0 ? n + (size_t)at : (size_t)at;
  data[i] ^= 0x5a;
  write_bytes(path, data, n);
  free(data);
}

static void test_checksums_and_unknown_codecs_are_refused(void) {
  ir_volume v;
  char err[IR_ERR_LEN] = "";
  const char *crc = copy_sample("v3_crc32c.zarr");
  flip_byte(fmt_path("%s/c/1/0/1", crc), 10);
  CHECK(load_desc(crc, (ir_volume_desc){0}, &v, err) == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "chunk c/1/0/1");
  CHECK_STR_CONTAINS(err, "crc32c");
  const char *shard = copy_sample("v3_sharded.zarr");
  flip_byte(fmt_path("%s/c/1/1/1", shard), -6);
  CHECK(load_desc(shard, (ir_volume_desc){0}, &v, err) == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "shard c/1/1/1");
  CHECK_STR_CONTAINS(err, "index");

  const char *meta = copy_sample("v2_zlib_slash.zarr");
  char *text = slurp_text(fmt_path("%s/.zarray", meta));
  char *id = strstr(text, "\"zlib\"");
  CHECK(id != NULL);
  if (id) {
    memcpy(id, "\"lzma\"", 6);
    write_text(fmt_path("%s/.zarray", meta), text);
    CHECK(load_desc(meta, (ir_volume_desc){0}, &v, err) == IR_ERR_INPUT);
    CHECK_STR_CONTAINS(err, "codec 'lzma' is not read");
  }
  free(text);
  free((void *)crc);
  free((void *)shard);
  free((void *)meta);
}



/* The program: info lists the levels, --level picks one; a headless CPU picture of a Zarr
 * array equals the picture of the same voxels as a raw file. */
/* A 32-bit integer array's voxel type depends on its values, so a header load reads them (a
 * damaged chunk speaks); layout_only gives the dims and levels without reading any. */
static void test_layout_only_reads_no_chunk(void) {
  const char *copy = copy_sample("v2_dtype_uint32.zarr");
  write_bytes(fmt_path("%s/0.0.0", copy), "not a chunk", 11);
  ir_volume head;
  char err[IR_ERR_LEN] = "";
  CHECK(load_desc(copy, (ir_volume_desc){.header_only = true}, &head, err) == IR_ERR_INPUT);
  CHECK_STR_CONTAINS(err, "0.0.0");
  CHECK_MSG(load_desc(copy, (ir_volume_desc){.header_only = true, .layout_only = true}, &head, err) == IR_OK, "%s", err);
  CHECK(head.dims[0] == NX && head.dims[1] == NY && head.dims[2] == NZ && head.voxels == NULL);
  ir_volume_free(&head);
  free((void *)copy);
}

static void test_program_info_levels_and_same_picture(void) {
  info_run r = run_inkray_info(fmt_path("--level 1 '%s'", sample("ome_05_zyx.zarr")));
  CHECK_MSG(r.status == 0, "exit %d: %s", r.status, r.err);
  CHECK_STR_CONTAINS(r.out, "dims        7 x 6 x 5");
  CHECK_STR_CONTAINS(r.out, "level 0     14 x 12 x 10, spacing 1.5 x 1.5 x 3\n");
  CHECK_STR_CONTAINS(r.out, "level 1     7 x 6 x 5, spacing 3 x 3 x 6 (shown)");
  info_run_free(&r);
  CHECK_INFO_REFUSES(fmt_path("--level 5 '%s'", sample("ome_05_zyx.zarr")), "2 levels");

  /* The raw file from the samples' formula, not from a reader: a fault the Zarr reader made on
   * every sample would show. */
  static uint16_t voxels[NX * NY * NZ];
  for (size_t z = 0; z < NZ; z++)
    for (size_t y = 0; y < NY; y++)
      for (size_t x = 0; x < NX; x++) voxels[(z * NY + y) * NX + x] = (uint16_t)value(x, y, z, 0, 0);
  const char *raw = scratch_path("same_14x12x10_uint16.raw");
  write_bytes(raw, voxels, sizeof voxels);
  const char *look = "--headless --device cpu --frames 1 --warmup 0 --size 48x40 --iso 1500 --quiet";
  const char *png_raw = kept_path("same_raw.png"), *png_zarr = kept_path("same_zarr.png");
  info_run a = run_inkray(fmt_path("%s --png '%s' '%s'", look, png_raw, raw));
  CHECK_MSG(a.status == 0, "raw: %s", a.err);
  info_run b = run_inkray(fmt_path("%s --png '%s' '%s'", look, png_zarr, sample("v2_blosc_lz4_bitshuffle.zarr")));
  CHECK_MSG(b.status == 0, "zarr: %s", b.err);
  size_t na = 0, nb = 0;
  unsigned char *ia = check_read_file(png_raw, &na), *ib = check_read_file(png_zarr, &nb);
  CHECK(ia && ib && na == nb && na > 0 && memcmp(ia, ib, na) == 0);
  free(ia);
  free(ib);
  info_run_free(&a);
  info_run_free(&b);
}

#endif

#ifndef INKRAY_HAVE_CJSON
static void test_refused_without_cjson(void) {
  CHECK_INFO_REFUSES(sample("v2_zlib_slash.zarr"), "without Zarr support (install libcjson-dev");
}
#endif

int main(void) {
#ifdef ZARR_SAMPLES_READ
  RUN(test_v2_every_codec_order_and_separator);
  RUN(test_v2_every_dtype_and_byte_order);
  RUN(test_v2_missing_chunks_are_the_fill_value);
  RUN(test_v3_codecs_transpose_crc32c_sharding_and_keys);
  RUN(test_region_of_a_sharded_array);
  RUN(test_whole_slabs_stream_to_a_sink);
  RUN(test_ome_04_levels_axes_time_and_channels);
  RUN(test_ome_04_time_axis_is_a_series);
  RUN(test_ome_05_sharded_levels_and_auto);
  RUN(test_broken_chunks_name_the_key);
  RUN(test_checksums_and_unknown_codecs_are_refused);
  RUN(test_layout_only_reads_no_chunk);
  RUN(test_program_info_levels_and_same_picture);
#elif defined(INKRAY_HAVE_CJSON)
  SKIP(test_zarr, "inkray was built without c-blosc or libzstd, which the samples use");
#else
  RUN(test_refused_without_cjson);
#endif
  RUN(test_other_formats_refuse_level_and_channel);
#ifdef INKRAY_HAVE_HDF5
  RUN(test_hdf5_datasets_spacing_series_and_choice);
#else
  SKIP(test_hdf5, "inkray was built without libhdf5 (libhdf5-dev)");
#endif
  return check_summary();
}
