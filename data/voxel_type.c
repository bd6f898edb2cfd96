/* Voxel types, byte orders and axes: names, sizes, parsing. */
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

static const char *const axis_names[] = {"none", "x", "y", "z", "-x", "-y", "-z"};

const char *ir_axis_name(ir_axis a) { return (unsigned)a <= IR_AXIS_NEG_Z ? axis_names[a] : "none"; }

bool ir_axis_parse(const char *word, ir_axis *out) {
  if (!word) return false;
  if (word[0] == '+' && word[1] != '-') word++;
  for (int a = IR_AXIS_X; a <= IR_AXIS_NEG_Z; a++) {
    if (strcmp(word, axis_names[a]) == 0) {
      *out = (ir_axis)a;
      return true;
    }
  }
  return false;
}

int ir_axis_index(ir_axis a) {
  if (a >= IR_AXIS_X && a <= IR_AXIS_Z) return (int)a - IR_AXIS_X;
  if (a >= IR_AXIS_NEG_X && a <= IR_AXIS_NEG_Z) return (int)a - IR_AXIS_NEG_X;
  return -1;
}

int ir_axis_sign(ir_axis a) { return a == IR_AXIS_NONE ? 0 : a >= IR_AXIS_NEG_X ? -1 : 1; }
