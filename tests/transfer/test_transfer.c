/* The transfer module's plans (label cpu): how an item download cuts a staging buffer into every
 * part's aligned slice, the size classes of the pinned cache, how many threads a whole copy uses,
 * and big pageable destinations aligned for huge pages. The copies themselves are
 * test_transfer_gpu's. */
#include <stdint.h>

#include "tests/check.h"
#include "transfer/transfer.h"
#include "transfer/transfer_internal.h"

/* Every part's slice of n items lies inside the buffer, aligned, and no two overlap. */
static void check_plan(size_t buffer, const size_t *item_bytes, int parts) {
  size_t offsets[8];
  size_t n = ir_xfer_items_per_chunk(buffer, item_bytes, parts, offsets);
  CHECK_MSG(n > 0, "buffer %zu, %d parts", buffer, parts);
  size_t end = 0;
  for (int k = 0; k < parts; k++) {
    CHECK_MSG(offsets[k] % IR_XFER_ALIGN == 0, "part %d at %zu", k, offsets[k]);
    CHECK_MSG(offsets[k] >= end, "part %d at %zu overlaps the one before (ends at %zu)", k, offsets[k], end);
    end = offsets[k] + n * item_bytes[k];
  }
  CHECK_MSG(end <= buffer, "the slices end at %zu, past the %zu-byte buffer", end, buffer);
  /* As many as fit after setting aside the alignment of every slice (at most IR_XFER_ALIGN each). */
  size_t per_item = 0;
  for (int k = 0; k < parts; k++) per_item += item_bytes[k];
  CHECK_EQ_INT(n, (buffer - (size_t)parts * IR_XFER_ALIGN) / per_item);
}

static void test_item_chunks_fit_the_buffer_aligned(void) {
  const size_t ply_vertex[4] = {12, 12, 4, 4}, face[1] = {12}, odd[3] = {3, 7, 1}, one[1] = {1};
  const size_t buffers[] = {4096, 65536, (size_t)4 << 20, ((size_t)4 << 20) + 4096};
  for (size_t b = 0; b < sizeof buffers / sizeof buffers[0]; b++) {
    check_plan(buffers[b], ply_vertex, 4);
    check_plan(buffers[b], ply_vertex, 3);
    check_plan(buffers[b], face, 1);
    check_plan(buffers[b], odd, 3);
    check_plan(buffers[b], one, 1);
  }
  size_t offsets[4];
  /* 4 MiB of PLY vertices with colours: 32 bytes an item, less the alignment slack. */
  CHECK_EQ_INT(ir_xfer_items_per_chunk((size_t)4 << 20, ply_vertex, 4, offsets), (((size_t)4 << 20) - 4 * 256) / 32);
  CHECK_EQ_INT(offsets[0], 0);
}

static void test_items_that_do_not_fit_give_zero(void) {
  size_t offsets[2];
  const size_t big[2] = {4096, 4096}, none[2] = {0, 0};
  CHECK_EQ_INT(ir_xfer_items_per_chunk(4096, big, 2, offsets), 0);
  CHECK_EQ_INT(ir_xfer_items_per_chunk(256, big, 1, offsets), 0);
  CHECK_EQ_INT(ir_xfer_items_per_chunk(1 << 20, none, 2, offsets), 0);
}

static void test_size_classes_waste_at_most_an_eighth(void) {
  CHECK_EQ_INT(ir_xfer_size_class(1), 4096);
  CHECK_EQ_INT(ir_xfer_size_class(4096), 4096);
  CHECK_EQ_INT(ir_xfer_size_class(4097), 8192);
  for (size_t bytes = 1000; bytes < ((size_t)1 << 34); bytes = bytes * 3 / 2 + 17) {
    size_t c = ir_xfer_size_class(bytes);
    CHECK_MSG(c >= bytes && c % 4096 == 0, "%zu -> %zu", bytes, c);
    CHECK_MSG(bytes <= 32768 || (double)(c - bytes) <= bytes / 8.0, "%zu -> %zu wastes more than 1/8", bytes, c);
    CHECK_MSG(ir_xfer_size_class(c) == c, "class %zu is not its own class", c);
  }
  /* Meshes of nearly the same size share a class, so the cache hands back the same blocks. */
  CHECK_EQ_INT(ir_xfer_size_class(111559656), ir_xfer_size_class(111559656 + 4000));
}

static void test_copy_threads(void) {
  CHECK_EQ_INT(ir_xfer_copy_threads(1, 16), 1);
  CHECK_EQ_INT(ir_xfer_copy_threads(2, 16), 1);
  CHECK_EQ_INT(ir_xfer_copy_threads(8, 16), 4);
  CHECK_EQ_INT(ir_xfer_copy_threads(1000, 16), 16);
  CHECK_EQ_INT(ir_xfer_copy_threads(1000, 1), 1);
}

/* Big destinations come 2 MiB-aligned (huge pages can back them), small ones as malloc gives them;
 * both are written whole and freed with free(). */
static void test_big_host_pages_are_huge_page_aligned(void) {
  const size_t sizes[] = {1, 4096, (size_t)63 << 20, (size_t)64 << 20, ((size_t)96 << 20) + 3};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    unsigned char *p = ir_xfer_host_pages(sizes[k]);
    CHECK_MSG(p != NULL, "%zu bytes", sizes[k]);
    if (!p) continue;
    if (sizes[k] >= ((size_t)64 << 20))
      CHECK_MSG((uintptr_t)p % ((size_t)2 << 20) == 0, "%zu bytes at %p", sizes[k], (void *)p);
    memset(p, 0x5A, sizes[k]);
    CHECK(p[0] == 0x5A && p[sizes[k] - 1] == 0x5A);
    free(p);
  }
}

int main(void) {
  RUN(test_item_chunks_fit_the_buffer_aligned);
  RUN(test_items_that_do_not_fit_give_zero);
  RUN(test_size_classes_waste_at_most_an_eighth);
  RUN(test_copy_threads);
  RUN(test_big_host_pages_are_huge_page_aligned);
  return check_summary();
}
