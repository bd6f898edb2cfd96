/* Voxel types and byte orders: names, sizes, parsing. */
#include <string.h>

#include "data/volume.h"

static const struct {
  const char *name;
  size_t size;
} voxel_types[IR_VOXEL_TYPE_COUNT] = {
    [IR_VOXEL_UINT8] = {"uint8", 1},
    [IR_VOXEL_UINT16] = {"uint16", 2},
    [IR_VOXEL_INT16] = {"int16", 2},
    [IR_VOXEL_FLOAT32] = {"float32", 4},
};

const char *ir_voxel_type_name(ir_voxel_type t) {
  return (unsigned)t < IR_VOXEL_TYPE_COUNT ? voxel_types[t].name : "unknown";
}

size_t ir_voxel_type_size(ir_voxel_type t) {
  return (unsigned)t < IR_VOXEL_TYPE_COUNT ? voxel_types[t].size : 0;
}

bool ir_voxel_type_parse(const char *word, ir_voxel_type *out) {
  for (int t = 0; word && t < IR_VOXEL_TYPE_COUNT; t++) {
    if (strcmp(word, voxel_types[t].name) == 0) {
      *out = (ir_voxel_type)t;
      return true;
    }
  }
  return false;
}

bool ir_endian_parse(const char *word, ir_endian *out) {
  if (word && strcmp(word, "little") == 0) {
    *out = IR_ENDIAN_LITTLE;
    return true;
  }
  if (word && strcmp(word, "big") == 0) {
    *out = IR_ENDIAN_BIG;
    return true;
  }
  return false;
}
