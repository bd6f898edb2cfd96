/* Names of pipelines and devices for the CLI, the overlay and CSV output. */
#include <string.h>

#include "render/render.h"

static const struct {
  const char *name, *description;
} pipelines[IR_PIPELINE_COUNT] = {
    [IR_PIPELINE_MULTI] = {"multi", "multi-kernel InK pipeline: brick-walk traversal and intersection kernels, "
                                    "rays compacted between them (default)"},
    [IR_PIPELINE_SINGLE] = {"single", "single kernel: every pixel walks the bricks and marches them itself"},
    [IR_PIPELINE_PAPER] = {"paper", "the InK paper's pipeline: BVH traversal with per-ray stacks, leaf "
                                    "intersection, shading, four compaction stages"},
    [IR_PIPELINE_PLAIN] = {"plain", "benchmark baseline: a plain macrocell 3D-DDA caster (GPU)"},
    [IR_PIPELINE_PERSISTENT] = {"persistent", "one persistent kernel: the InK stages as phases over block-resident "
                                              "ray pools, compacted in shared memory by the chosen method"},
};

const char *ir_pipeline_name(ir_pipeline p) {
  return (unsigned)p < IR_PIPELINE_COUNT ? pipelines[p].name : "unknown";
}

const char *ir_pipeline_description(ir_pipeline p) {
  return (unsigned)p < IR_PIPELINE_COUNT ? pipelines[p].description : "";
}

bool ir_pipeline_parse(const char *word, ir_pipeline *out) {
  for (int p = 0; word && p < IR_PIPELINE_COUNT; p++)
    if (strcmp(word, pipelines[p].name) == 0) return (*out = (ir_pipeline)p), true;
  return false;
}

bool ir_pipeline_compacts(ir_pipeline p) {
  return p == IR_PIPELINE_MULTI || p == IR_PIPELINE_PAPER || p == IR_PIPELINE_PERSISTENT;
}

static const char *const secondary_modes[IR_SECONDARY_MODE_COUNT] = {
    [IR_SECONDARY_INLINE] = "inline", [IR_SECONDARY_SPREAD] = "spread", [IR_SECONDARY_POOL] = "pool"};

const char *ir_secondary_name(ir_secondary_mode m) {
  return (unsigned)m < IR_SECONDARY_MODE_COUNT ? secondary_modes[m] : "unknown";
}

bool ir_secondary_parse(const char *word, ir_secondary_mode *out) {
  for (int m = 0; word && m < IR_SECONDARY_MODE_COUNT; m++)
    if (strcmp(word, secondary_modes[m]) == 0) return (*out = (ir_secondary_mode)m), true;
  return false;
}

const char *ir_device_name(ir_device d) { return d == IR_DEVICE_CPU ? "cpu" : "gpu"; }

bool ir_device_parse(const char *word, ir_device *out) {
  if (word && strcmp(word, "gpu") == 0) return (*out = IR_DEVICE_GPU), true;
  if (word && strcmp(word, "cpu") == 0) return (*out = IR_DEVICE_CPU), true;
  return false;
}
