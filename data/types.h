/* The status codes and voxel types every inkray module shares. A header of its own (volume.h
 * includes it) so that a public header installed without the data module, such as
 * <inkray/extract.h>, can use them: it declares nothing a library has to provide. */
#ifndef INKRAY_DATA_TYPES_H
#define INKRAY_DATA_TYPES_H

/* ---- Status codes shared by every inkray module ---------------------------------------- */
typedef enum ir_status {
  IR_OK = 0,
  IR_ERR_RUNTIME = 1, /* something failed while running (GPU error, out of memory) */
  IR_ERR_INPUT = 2,   /* bad input from the user: wrong file, sizes, flags */
} ir_status;

/* Room for one error message; every function that can fail takes a buffer of this size. */
#define IR_ERR_LEN 512

/* ---- Voxel types --------------------------------------------------------------------- */
typedef enum ir_voxel_type {
  IR_VOXEL_UINT8 = 0,
  IR_VOXEL_UINT16,
  IR_VOXEL_INT16,
  IR_VOXEL_FLOAT32,
  IR_VOXEL_TYPE_COUNT
} ir_voxel_type;

#endif
