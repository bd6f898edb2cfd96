/* The table of compaction methods: names, properties, parsing. Adding a method adds a row. */
#include <string.h>

#include "compaction/compaction.h"

static const ir_compact_method_info method_table[IR_COMPACT_METHOD_COUNT] = {
    {IR_COMPACT_INK_COMPACT, "ink-compact",
     "InK-Compact: in-kernel, order-preserving (ballot/popc + decoupled look-back)", true, true, false},
    {IR_COMPACT_INK_COLLATE, "ink-collate",
     "InK-Collate: in-kernel, atomic block offset, order kept within a block", true, false, false},
    {IR_COMPACT_THRUST, "thrust", "Thrust copy_if (scan + scatter) with a caching allocator", false,
     true, false},
    {IR_COMPACT_JUMPING_JACK, "jumping-jack",
     "Jumping Jack: MAS jump search, block-based, non-monotonic", false, false, false},
    {IR_COMPACT_REDZONE, "redzone", "Redzone: in-place O(k) removal of listed indices, unstable",
     false, false, true},
};

const ir_compact_method_info *ir_compact_methods(void) { return method_table; }

const ir_compact_method_info *ir_compact_method_get(ir_compact_method m) {
  return (unsigned)m < IR_COMPACT_METHOD_COUNT ? &method_table[m] : NULL;
}

bool ir_compact_method_parse(const char *name, ir_compact_method *out) {
  for (int m = 0; name && m < IR_COMPACT_METHOD_COUNT; m++) {
    if (strcmp(name, method_table[m].name) == 0) {
      *out = (ir_compact_method)m;
      return true;
    }
  }
  return false;
}
