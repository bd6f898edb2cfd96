/* Names of pipelines and devices for the CLI, the overlay and CSV output. */
#include <string.h>

#include "render/render.h"

const char *ir_pipeline_name(ir_pipeline p) { return p == IR_PIPELINE_SINGLE ? "single" : "multi"; }

bool ir_pipeline_parse(const char *word, ir_pipeline *out) {
  if (word && strcmp(word, "multi") == 0) return (*out = IR_PIPELINE_MULTI), true;
  if (word && strcmp(word, "single") == 0) return (*out = IR_PIPELINE_SINGLE), true;
  return false;
}

const char *ir_device_name(ir_device d) { return d == IR_DEVICE_CPU ? "cpu" : "gpu"; }

bool ir_device_parse(const char *word, ir_device *out) {
  if (word && strcmp(word, "gpu") == 0) return (*out = IR_DEVICE_GPU), true;
  if (word && strcmp(word, "cpu") == 0) return (*out = IR_DEVICE_CPU), true;
  return false;
}
