/* Zarr arrays inside the data module: their metadata (v2 .zarray, v3 zarr.json), the OME-Zarr
 * multiscale images made of them, and the chunks' byte codecs. Internal to data/ (the loader
 * is ir_volume_load's); the fuzz target drives the parsers and decoders from memory.
 */
#ifndef INKRAY_DATA_ZARR_H
#define INKRAY_DATA_ZARR_H

#include <pthread.h>

#include "data/volume_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

#define IR_ZARR_MAX_DIMS 8
/* A chunk larger than this is refused before anything is read: every reading thread holds one
 * decoded chunk (and its compressed bytes) at a time. */
#define IR_ZARR_MAX_CHUNK_BYTES ((size_t)1 << 30)
/* Metadata files larger than this are not Zarr metadata. */
#define IR_ZARR_MAX_JSON_BYTES ((size_t)64 << 20)

typedef enum ir_zarr_compressor {
  IR_ZARR_NONE = 0,
  IR_ZARR_BLOSC,
  IR_ZARR_ZSTD,
  IR_ZARR_ZLIB,
  IR_ZARR_GZIP,
} ir_zarr_compressor;
const char *ir_zarr_compressor_name(ir_zarr_compressor c);
/* False for blosc or zstd when inkray was built without c-blosc / libzstd. */
bool ir_zarr_compressor_built(ir_zarr_compressor c);

/* How one chunk's bytes become its elements: bytes->bytes codecs undone (at most one
 * compressor, then an optional crc32c checksum at the end), then the elements in `order`
 * (encoded axis i is chunk axis order[i]: identity for C order, reversed for F order, the
 * v3 transpose codec's otherwise) and byte order. */
typedef struct ir_zarr_codecs {
  int order[IR_ZARR_MAX_DIMS];
  bool big_endian;
  ir_zarr_compressor compressor;
  bool crc32c;
} ir_zarr_codecs;

/* One array: shape, chunk grid, element type, fill value, chunk keys and codecs. */
typedef struct ir_zarr_array {
  int version; /* 2 or 3 */
  int ndim;
  size_t shape[IR_ZARR_MAX_DIMS];
  size_t chunk[IR_ZARR_MAX_DIMS]; /* the chunk grid (v3 with sharding: the shards) */
  ir_sample_type sample;
  size_t elem;
  unsigned char fill[8];          /* one element of the fill value, host order */
  char separator;                 /* '.' or '/' between a key's indices */
  bool key_prefix;                /* v3 default keys: "c" before the indices */
  ir_zarr_codecs codecs;          /* the chunk's (the shard's inner chunks' when sharded) */
  bool sharded;                   /* v3 sharding_indexed: chunks are shards of inner chunks */
  size_t inner[IR_ZARR_MAX_DIMS]; /* the inner chunks' shape */
  bool index_at_start, index_big_endian, index_crc32c;
  char names[IR_ZARR_MAX_DIMS][16]; /* v3 dimension_names (empty when none) */
} ir_zarr_array;

/* Parsers, from memory: v2 .zarray (version 2) or v3 zarr.json of an array (version 3). `path`
 * names the file in messages. IR_ERR_INPUT with one line for anything not read: an unknown
 * codec or data type is named. */
ir_status ir_zarr_parse_array(const char *json, size_t len, int version, const char *path, ir_zarr_array *a,
                              char err[IR_ERR_LEN]);

/* An OME-Zarr multiscales object (.zattrs of 0.4, zarr.json attributes.ome of 0.5) or plain
 * array axes: which array axis is x, y, z, time, channel, and each level's path and transform. */
typedef enum ir_zarr_role { IR_ZARR_X = 0, IR_ZARR_Y, IR_ZARR_Z, IR_ZARR_T, IR_ZARR_C } ir_zarr_role;
typedef struct ir_zarr_multiscale {
  char version[16];
  int ndim;
  ir_zarr_role role[IR_ZARR_MAX_DIMS];
  int level_count;
  char paths[IR_MAX_LEVELS][128];
  double scale[IR_MAX_LEVELS][IR_ZARR_MAX_DIMS];
  double translation[IR_MAX_LEVELS][IR_ZARR_MAX_DIMS];
  char unit[32]; /* the x axis' unit, empty when none */
} ir_zarr_multiscale;
/* `json` is the whole attributes file (.zattrs, or zarr.json whose attributes.ome holds it). */
ir_status ir_zarr_parse_multiscale(const char *json, size_t len, const char *path, ir_zarr_multiscale *m,
                                   char err[IR_ERR_LEN]);

/* Decodes one chunk's stored bytes into exactly `want` bytes (crc32c: the last 4 bytes are the
 * checksum of the others, checked first). `zstd_ctx` from ir_zarr_zstd_context (or NULL). False
 * with the reason (no key: the caller names the chunk). */
bool ir_zarr_decode_bytes(ir_zarr_compressor c, bool crc32c, const unsigned char *src, size_t n, unsigned char *dst,
                          size_t want, void *zstd_ctx, char reason[IR_ERR_LEN]);
void *ir_zarr_zstd_context(void);
void ir_zarr_zstd_context_free(void *ctx);
uint32_t ir_crc32c(const unsigned char *p, size_t n);
/* Checks the 4-byte little-endian crc32c at the end of p[0, n); *payload = n - 4. */
bool ir_zarr_check_crc32c(const unsigned char *p, size_t n, size_t *payload, char reason[IR_ERR_LEN]);

/* A sharding index of `count` inner chunks (16 bytes each: offset and size, then the optional
 * crc32c), checked against a shard of `shard_bytes`: every entry inside the shard or empty
 * (both all ones). offsets/sizes get `count` entries each. */
bool ir_zarr_parse_shard_index(const ir_zarr_array *a, const unsigned char *index, size_t index_bytes, size_t count,
                               size_t shard_bytes, uint64_t *offsets, uint64_t *sizes, char reason[IR_ERR_LEN]);

/* Is `source` a Zarr array or group (a folder with .zarray, .zgroup, .zattrs or zarr.json)? */
bool ir_is_zarr_source(const char *source);
/* Is `source` an HDF5 file, with or without ":/dataset"? */
bool ir_is_hdf5_source(const char *source);
/* Splits "file:/dataset" (or a file alone: *dataset NULL) when the file exists. */
bool ir_hdf5_split(const char *source, char *file, size_t cap, const char **dataset);

#ifdef __cplusplus
}
#endif
#endif
