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
/* A lit frame: ao_n occlusion rays of ao_radius voxels (0: 16) per hit, a shadow ray towards
 * the light (shadows), a directional light at light[0] azimuth, light[1] elevation degrees in
 * the camera's frame (light_on; else the headlight). All zero: the unlit frame. */
typedef struct ic_lighting {
  int ao_n, shadows, light_on;
  float ao_radius, light[2];
} ic_lighting;
/* Uploads the volume and builds macrocells of `macro` voxels; 0 on success. */
int ic_create(const ir_volume *v, int macro, ic_caster **out);
/* One frame into d_image (width * height RGBA8, device memory), lit as `lit` says (NULL: unlit);
 * *ms: CUDA events around the launch. */
int ic_render(ic_caster *c, const ir_camera *cam, float iso, const ic_lighting *lit, int width, int height,
              uint32_t *d_image, double *ms);
void ic_destroy(ic_caster *c);

#ifdef __cplusplus
}
#endif
#endif
