/* The transfer module's pure planning functions (no CUDA), for the module and its CPU tests. */
#ifndef INKRAY_TRANSFER_INTERNAL_H
#define INKRAY_TRANSFER_INTERNAL_H

#include <stddef.h>

/* Each part's slice of a staging buffer starts on this boundary (DMA engines move aligned
 * blocks faster, and float and int arrays stay aligned). */
#define IR_XFER_ALIGN 256u

/* Items of a chunk of ir_xfer_download_items: as many as fit with every part's slice aligned;
 * 0 when not even one item fits. `offsets` (parts entries) gets each slice's offset. */
size_t ir_xfer_items_per_chunk(size_t buffer_bytes, const size_t *item_bytes, int parts, size_t *offsets);

/* The size class a cached pinned block of `bytes` is rounded up to: a multiple of 4096 and of an
 * eighth of the largest power of two not above `bytes`, so at most 12.5 % is wasted and blocks of
 * nearly the same size share a class. */
size_t ir_xfer_size_class(size_t bytes);

/* Threads for a whole copy of `chunks` chunks with at most `threads` threads: one for a chunk or
 * two (a thread start costs more than the memcpy it would share), else one per two chunks. */
int ir_xfer_copy_threads(size_t chunks, int threads);

#endif
