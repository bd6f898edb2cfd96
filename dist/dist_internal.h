/* Internals of the dist module shared by its files; not part of the public API. */
#ifndef INKRAY_DIST_INTERNAL_H
#define INKRAY_DIST_INTERNAL_H

#include "dist/dist.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Host clock, milliseconds. */
double ir_dist_now_ms(void);

/* ir_dist_agree (dist.h) that also gives every rank each rank's `mine` (one MPI_Allgather for
 * both): times[r] is rank r's; `scratch` holds 2 * size values. */
int ir_dist_agree_times(ir_dist *d, int status, double mine, double *times, double *scratch);
/* Every rank's part of `buf`, bytes [at[r], at[r + 1]) from rank r, to every rank (MPI_Bcast from
 * each rank in turn, in pieces of at most 256 MiB: MPI counts are ints, and some transports
 * mishandle single messages past 2 GiB). */
ir_status ir_dist_share_parts(ir_dist *d, void *buf, const size_t *at, char err[IR_ERR_LEN]);
/* The sum of each of `n` values over the ranks, on every rank. */
ir_status ir_dist_sum_all(ir_dist *d, const double *in, double *out, int n, char err[IR_ERR_LEN]);
/* Rank 0's `bytes` at `buf` to every rank (MPI_Bcast). */
ir_status ir_dist_broadcast(ir_dist *d, void *buf, size_t bytes, char err[IR_ERR_LEN]);
/* Ranks on this rank's host (MPI_Comm_split_type, shared memory; found once at init), 1 without
 * MPI; and this rank's place among them, 0 .. local size - 1. */
int ir_dist_local_size(const ir_dist *d);
int ir_dist_local_rank(const ir_dist *d);
/* After a failure that may leave a rank unable to meet the others (one that never joined NCCL,
 * a collective aborted at its deadline): ir_dist_agree answers without MPI (at least
 * IR_ERR_RUNTIME), and ir_dist_finalize ends the whole run with MPI_Abort instead of waiting in
 * MPI_Finalize. */
void ir_dist_mark_broken(ir_dist *d);

/* ---- Compositing on the GPUs through NCCL (nccl.cu; nccl_none.c without NCCL) ----------------- */
typedef struct ir_dist_gpu ir_dist_gpu;
bool ir_dist_built_with_nccl(void);
/* The communicator (rank 0's ncclUniqueId broadcast over MPI) and a stream on the current device;
 * keep_depth: rank 0 keeps the composited words (ir_dist_gpu_read_words), else only colours.
 * Collective; every rank gets the same status. */
ir_status ir_dist_gpu_create(ir_dist *d, bool keep_depth, ir_dist_gpu **out, char err[IR_ERR_LEN]);
void ir_dist_gpu_destroy(ir_dist_gpu *g);
/* This rank's frame (device RGBA8 and depth, as the renderer left them; `pixels` of a `width`-wide
 * image) packed into words on its GPU; waits for it. With `window` (x0, y0, x1, y1; opaque
 * frames), only the pixels there (rank 0: the whole frame, into which the others' windows go). */
ir_status ir_dist_gpu_pack(ir_dist_gpu *g, const void *rgba, const float *depth, size_t pixels, int width,
                           const int *window, char err[IR_ERR_LEN]);
/* The packed frames composited onto rank 0's GPU: MIN (order NULL) or "over" in `order` (the
 * ranks front to back). Opaque frames packed by windows pass every rank's, windows[r] (the same
 * on every rank), and only those pixels travel; else NULL. Collective; waits for it, with a
 * deadline. */
ir_status ir_dist_gpu_composite(ir_dist_gpu *g, const int *order, size_t pixels, int width, const int (*windows)[4],
                                char err[IR_ERR_LEN]);
/* Replicated data: the rows of every rank's band (windows[r]: x0, y0, x1, y1; whole rows y0 <= y
 * < y1 travel, the pixels outside the band's columns being background) from its renderer's image
 * (`rgba`, `depth`: with keep_depth, the depth too) straight into the same rows of rank 0's,
 * which then holds the frame: each pixel is finished by one rank, so nothing is packed or
 * reduced, and 4 bytes a pixel travel (8 with the depth). Every renderer's frame must be done.
 * Collective; waits for it, with a deadline. */
ir_status ir_dist_gpu_gather_rows(ir_dist_gpu *g, void *rgba, float *depth, int width, const int (*windows)[4],
                                  char err[IR_ERR_LEN]);
/* Rank 0: the composited frame unpacked to RGBA8 (on the GPU) and copied to host memory. */
ir_status ir_dist_gpu_read_image(ir_dist_gpu *g, uint8_t *rgba, char err[IR_ERR_LEN]);
/* Rank 0: the composited words, copied to host memory (keep_depth only). */
ir_status ir_dist_gpu_read_words(ir_dist_gpu *g, uint64_t *words, char err[IR_ERR_LEN]);

#ifdef __cplusplus
}
#endif
#endif
