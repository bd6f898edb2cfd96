/* The compaction method table, the name parser and the argument checks. Runs without a GPU:
 * every check must reject bad input before any CUDA call. */
#include <stdint.h>

#include "compaction/compaction.h"
#include "tests/check.h"

static void test_every_stable_name_parses_to_its_method(void) {
  const char *names[] = {"ink-compact", "ink-collate", "thrust", "jumping-jack", "redzone"};
  CHECK_EQ_INT(sizeof names / sizeof names[0], IR_COMPACT_METHOD_COUNT);
  for (int m = 0; m < IR_COMPACT_METHOD_COUNT; m++) {
    ir_compact_method parsed = IR_COMPACT_METHOD_COUNT;
    CHECK(ir_compact_method_parse(names[m], &parsed));
    CHECK_EQ_INT(parsed, m);
    const ir_compact_method_info *info = ir_compact_method_get((ir_compact_method)m);
    CHECK(info != NULL);
    CHECK(info && strcmp(info->name, names[m]) == 0);
    CHECK(info && info->method == (ir_compact_method)m);
    CHECK(&ir_compact_methods()[m] == info);
  }
}

static void test_unknown_names_are_rejected_and_leave_the_output_alone(void) {
  const char *bad[] = {"", "InK-Compact", "ink_compact", "thrust ", "cub", "redzone2"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ir_compact_method out = IR_COMPACT_REDZONE;
    CHECK(!ir_compact_method_parse(bad[i], &out));
    CHECK_EQ_INT(out, IR_COMPACT_REDZONE);
  }
  ir_compact_method out = IR_COMPACT_THRUST;
  CHECK(!ir_compact_method_parse(NULL, &out));
  CHECK_EQ_INT(out, IR_COMPACT_THRUST);
  CHECK(ir_compact_method_get(IR_COMPACT_METHOD_COUNT) == NULL);
  CHECK(ir_compact_method_get((ir_compact_method)-1) == NULL);
}

static void test_method_properties_match_the_papers(void) {
  CHECK(ir_compact_method_get(IR_COMPACT_INK_COMPACT)->stable);
  CHECK(ir_compact_method_get(IR_COMPACT_INK_COMPACT)->in_kernel);
  CHECK(!ir_compact_method_get(IR_COMPACT_INK_COLLATE)->stable);
  CHECK(ir_compact_method_get(IR_COMPACT_THRUST)->stable);
  CHECK(!ir_compact_method_get(IR_COMPACT_JUMPING_JACK)->stable);
  CHECK(!ir_compact_method_get(IR_COMPACT_REDZONE)->stable);
  CHECK(ir_compact_method_get(IR_COMPACT_REDZONE)->in_place);
  for (int m = 0; m < IR_COMPACT_METHOD_COUNT; m++)
    CHECK(ir_compact_supports_device_n((ir_compact_method)m) == (m != IR_COMPACT_THRUST));
  CHECK(!ir_compact_supports_device_n(IR_COMPACT_METHOD_COUNT));
}

/* Stand-ins for device pointers: never dereferenced, since every call below must fail its checks. */
static uint32_t fake_words[4];
static uint8_t fake_flags[4];

static void test_a_context_of_capacity_zero_needs_no_gpu(void) {
  ir_compact_ctx *ctx = NULL;
  CHECK_EQ_INT(ir_compact_ctx_create(&ctx, 0), cudaSuccess);
  CHECK(ctx != NULL);
  CHECK_EQ_INT(ir_compact_ctx_capacity(ctx), 0);
  CHECK_STR_CONTAINS(ir_compact_last_error(ctx), "no error");
  /* no kernel ever ran on it, so there is no device-side error to read (and no CUDA call) */
  CHECK_EQ_INT(ir_compact_device_error(ctx, 0), cudaSuccess);
  CHECK_EQ_INT(ir_compact_device_error(NULL, 0), cudaErrorInvalidValue);
  CHECK_EQ_INT(ir_compact_ctx_create(NULL, 0), cudaErrorInvalidValue);
  ir_compact_ctx_destroy(ctx);
  ir_compact_ctx_destroy(NULL);
  CHECK_STR_CONTAINS(ir_compact_last_error(NULL), "NULL");
  CHECK_EQ_INT(ir_compact_ctx_capacity(NULL), 0);
}

static void test_bad_arguments_give_invalid_value_and_a_readable_error(void) {
  ir_compact_ctx *ctx = NULL;
  CHECK_EQ_INT(ir_compact_ctx_create(&ctx, 0), cudaSuccess);
  if (!ctx) return;
  uint32_t *in = fake_words, *out = fake_words + 1, *count = fake_words + 2;

  CHECK_EQ_INT(ir_compact_flagged(ctx, IR_COMPACT_METHOD_COUNT, in, fake_flags, out, count, 0, 0),
               cudaErrorInvalidValue);
  CHECK_STR_CONTAINS(ir_compact_last_error(ctx), "not a compaction method");
  CHECK_EQ_INT(ir_compact_flagged(ctx, (ir_compact_method)-3, in, fake_flags, out, count, 0, 0),
               cudaErrorInvalidValue);

  CHECK_EQ_INT(ir_compact_flagged(ctx, IR_COMPACT_INK_COMPACT, in, fake_flags, out, NULL, 0, 0),
               cudaErrorInvalidValue);
  CHECK_STR_CONTAINS(ir_compact_last_error(ctx), "d_count is NULL");

  CHECK_EQ_INT(ir_compact_flagged(ctx, IR_COMPACT_INK_COLLATE, in, fake_flags, out, count, 10, 0),
               cudaErrorInvalidValue);
  CHECK_STR_CONTAINS(ir_compact_last_error(ctx), "exceeds the context's capacity");
  CHECK_STR_CONTAINS(ir_compact_last_error(ctx), "ir_compact_ctx_reserve");

  CHECK_EQ_INT(ir_compact_if_not_equal(ctx, IR_COMPACT_THRUST, in, 0, out, count, 7, 0), cudaErrorInvalidValue);
  CHECK_STR_CONTAINS(ir_compact_last_error(ctx), "n = 7");

  CHECK_EQ_INT(ir_compact_remove_indices(ctx, IR_COMPACT_REDZONE, fake_words, 0, fake_words, 1, count, 0),
               cudaErrorInvalidValue);
  CHECK_STR_CONTAINS(ir_compact_last_error(ctx), "k may not exceed n");
  CHECK_EQ_INT(ir_compact_remove_indices(ctx, IR_COMPACT_REDZONE, fake_words, 0, fake_words, 0, NULL, 0),
               cudaErrorInvalidValue);
  CHECK_EQ_INT(ir_compact_remove_indices(ctx, IR_COMPACT_METHOD_COUNT, fake_words, 0, fake_words, 0, count, 0),
               cudaErrorInvalidValue);

  CHECK_EQ_INT(ir_compact_flagged_dn(ctx, IR_COMPACT_REDZONE, in, fake_flags, out, count, NULL, 0, 0),
               cudaErrorInvalidValue);
  CHECK_STR_CONTAINS(ir_compact_last_error(ctx), "d_n is NULL");
  CHECK_EQ_INT(ir_compact_flagged_dn(ctx, IR_COMPACT_THRUST, in, fake_flags, out, count, fake_words, 0, 0),
               cudaErrorNotSupported);
  CHECK_STR_CONTAINS(ir_compact_last_error(ctx), "thrust");
  CHECK_EQ_INT(ir_compact_flagged_dn(ctx, IR_COMPACT_JUMPING_JACK, in, fake_flags, out, count, fake_words, 100, 0),
               cudaErrorInvalidValue);
  CHECK_EQ_INT(ir_compact_remove_indices_dn(ctx, IR_COMPACT_REDZONE, fake_words, fake_words, 0, fake_words, NULL,
                                            0, count, 0),
               cudaErrorInvalidValue);
  CHECK_STR_CONTAINS(ir_compact_last_error(ctx), "d_k is NULL");

  CHECK_EQ_INT(ir_compact_reference_flagged(ctx, IR_COMPACT_REF_COUNT, in, fake_flags, out, count, 0, 0),
               cudaErrorInvalidValue);
  CHECK_EQ_INT(ir_compact_reference_flagged(ctx, IR_COMPACT_REF_CUB, in, fake_flags, out, count, 5, 0),
               cudaErrorInvalidValue);
  CHECK_EQ_INT(ir_compact_producer_run(ctx, IR_PRODUCER_COUNT, in, 0, out, fake_flags, count, 0, 0),
               cudaErrorInvalidValue);
  CHECK_EQ_INT(ir_compact_producer_run(ctx, IR_PRODUCER_INK_COMPACT, in, 0, out, NULL, count, 99, 0),
               cudaErrorInvalidValue);

  /* Counts are 32-bit: a capacity beyond 2^31 is refused before any allocation. */
  CHECK_EQ_INT(ir_compact_ctx_reserve(ctx, ((size_t)1 << 31) + 1), cudaErrorInvalidValue);
  CHECK_STR_CONTAINS(ir_compact_last_error(ctx), "2^31");
  CHECK_EQ_INT(ir_compact_ctx_capacity(ctx), 0);
  ir_compact_ctx_destroy(ctx);
}

static void test_reference_and_producer_names(void) {
  CHECK(strcmp(ir_compact_reference_name(IR_COMPACT_REF_CUB), "cub") == 0);
  CHECK(strcmp(ir_compact_reference_name(IR_COMPACT_REF_INK_SECTIONS), "ink-compact-sections") == 0);
  CHECK(strcmp(ir_compact_producer_name(IR_PRODUCER_SPARSE), "sparse") == 0);
  CHECK(strcmp(ir_compact_producer_name(IR_PRODUCER_INK_COMPACT), "ink-compact") == 0);
  CHECK(strcmp(ir_compact_producer_name(IR_PRODUCER_INK_COMPACT_SECTIONS), "ink-compact-sections") == 0);
  CHECK(strcmp(ir_compact_producer_name(IR_PRODUCER_INK_COMPACT_X4), "ink-compact-x4") == 0);
  CHECK(strcmp(ir_compact_producer_name(IR_PRODUCER_COUNT), "?") == 0);
  CHECK(strcmp(ir_compact_reference_name(IR_COMPACT_REF_COUNT), "?") == 0);
  /* The producer predicate keeps about threshold / 2^32 of the values. */
  int kept = 0;
  for (uint32_t v = 0; v < 100000; v++) kept += ir_compact_producer_keeps(v, 0x80000000u);
  CHECK(kept > 49000 && kept < 51000);
  CHECK(!ir_compact_producer_keeps(123, 0));
}

int main(void) {
  RUN(test_every_stable_name_parses_to_its_method);
  RUN(test_unknown_names_are_rejected_and_leave_the_output_alone);
  RUN(test_method_properties_match_the_papers);
  RUN(test_a_context_of_capacity_zero_needs_no_gpu);
  RUN(test_bad_arguments_give_invalid_value_and_a_readable_error);
  RUN(test_reference_and_producer_names);
  return check_summary();
}
