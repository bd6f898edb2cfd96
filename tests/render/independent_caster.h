/* The independent caster render_bench measures inkray against (independent_caster.cu). */
#ifndef INKRAY_TESTS_INDEPENDENT_CASTER_H
#define INKRAY_TESTS_INDEPENDENT_CASTER_H

#include <stdint.h>

#include "data/volume.h"
#include "render/render.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ic_caster ic_caster;
/* Uploads the volume and builds macrocells of `macro` voxels; 0 on success. */
int ic_create(const ir_volume *v, int macro, ic_caster **out);
/* One frame into d_image (width * height RGBA8, device memory); *ms: CUDA events around the launch. */
int ic_render(ic_caster *c, const ir_camera *cam, float iso, int width, int height, uint32_t *d_image, double *ms);
void ic_destroy(ic_caster *c);

#ifdef __cplusplus
}
#endif
#endif
