/* The look options: which surfaces are drawn and how (several isosurfaces with colour and
 * opacity, a clip box and a clip plane, colour by a second quantity, the refinement), parsed the
 * same way for headless runs and the window, and put into an ir_frame_desc.
 *
 * The parsing itself is in options.c (pure, fuzzed); this file has the help and the frame.
 * What this file does not do: load the colour volume or resolve an automatic colour range (the
 * caller does, once the volumes are loaded), or write the depth image (depth_image.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "app/app.h"

/* Prints the words of `list` (", "-separated) indented, wrapped at about 96 columns. */
static void print_wrapped(FILE *to, const char *list, int indent) {
  int column = indent;
  fprintf(to, "%*s", indent, "");
  for (const char *p = list; *p;) {
    const char *end = strstr(p, ", ");
    int len = end ? (int)(end - p) + 1 : (int)strlen(p);
    if (column > indent && column + len + 1 > 96) {
      fprintf(to, "\n%*s", indent, "");
      column = indent;
    } else if (column > indent) {
      fputc(' ', to);
      column++;
    }
    fprintf(to, "%.*s", len, p);
    column += len;
    p = end ? end + 2 : p + len;
  }
  fputc('\n', to);
}

void cli_print_look_options(FILE *to) {
  char names[512], maps[256];
  app_list_color_names(names, sizeof names);
  app_list_colormaps(maps, sizeof maps);
  fprintf(to,
          "Look options (what is drawn):\n"
          "  --surface ISO[:COLOR[:OPACITY]]  an isosurface; repeat for up to %d, drawn together (they\n"
          "                       replace --iso). OPACITY 0..1 (default 1: opaque). COLOR (default: a\n"
          "                       palette by position) is #rrggbb, #rgb or one of:\n",
          IR_MAX_SURFACES);
  print_wrapped(to, names, 23);
  fprintf(to,
          "  --clip-box X0,X1,Y0,Y1,Z0,Z1  draw only inside this box, in fractions 0..1 of the volume\n"
          "                       along each axis\n"
          "  --clip-plane NX,NY,NZ,D  draw only the world points x with n.x + D >= 0 (world units: the\n"
          "                       volume spans 0..dims*spacing)\n"
          "  --color-by gradient|FILE|channel:N  colour the surfaces by the gradient magnitude, by a\n"
          "                       second volume FILE of the same dims (read with the volume options),\n"
          "                       or by channel N of the same OME-Zarr / Zarr source\n"
          "  --colormap NAME      %s (default viridis)\n"
          "  --color-range LO,HI  values at the colour map's ends (default: the gradient's 0..max, or\n"
          "                       the colour volume's min..max)\n"
          "  --refine exact|texture  refine crossings in float trilinear (default) or with the\n"
          "                       texture unit's 8-bit weights (terraced; for comparison)\n"
          "  --step VOXELS        distance between a ray's samples, %g..%g (default %g): a finer step\n"
          "                       finds surface slivers thinner than a step, at more samples\n"
          "  --ao N[:RADIUS]      ambient occlusion: N rays (1..%d) per shaded hit over the hemisphere\n"
          "                       about the normal, each up to RADIUS voxels (default %g); the open\n"
          "                       fraction scales the ambient and diffuse light\n"
          "  --shadows            a shadow ray per shaded hit toward the light\n"
          "  --light AZ,EL        a directional light in the camera's frame, degrees (AZ -180..180,\n"
          "                       EL -90..90; 0,0 shines from the eye); default: a headlight per pixel\n",
          maps, (double)IR_SAMPLE_STEP_MIN, (double)IR_SAMPLE_STEP_MAX, (double)IR_SAMPLE_STEP_DEFAULT,
          IR_AO_MAX_SAMPLES, (double)IR_AO_RADIUS_DEFAULT);
}

void app_look_apply(const app_look *look, const ir_volume *v, ir_frame_desc *f) {
  f->surface_count = look->surface_count;
  for (int k = 0; k < look->surface_count && k < IR_MAX_SURFACES; k++) {
    f->surfaces[k] = look->surfaces[k];
    if (look->surfaces[k].color[0] < 0.0f) ir_surface_default_color(k, f->surfaces[k].color);
  }
  for (int k = 0; k < 3; k++) {
    f->clip_lo[k] = look->clip_box_on ? look->clip_box[2 * k] * (float)v->dims[k] : 0.0f;
    f->clip_hi[k] = look->clip_box_on ? look->clip_box[2 * k + 1] * (float)v->dims[k] : 0.0f;
  }
  f->clip_plane_on = look->clip_plane_on;
  memcpy(f->clip_plane, look->clip_plane, sizeof f->clip_plane);
  f->color_by = look->color_by;
  f->colormap = look->colormap;
  f->color_range[0] = look->color_range[0];
  f->color_range[1] = look->color_range[1];
  f->texture_refine = look->texture_refine;
  f->sample_step = look->sample_step;
  f->ao_samples = look->ao_samples;
  f->ao_radius = look->ao_radius;
  f->shadows = look->shadows;
  f->light_on = look->light_on;
  f->light[0] = look->light[0];
  f->light[1] = look->light[1];
}

/* A look that hides everything renders an empty picture that looks like a fault: say why, as the
 * out-of-range isovalue warning does. The plane is tested at the corners of what the box keeps
 * (or of the whole volume): n.x + d is linear, so it is negative everywhere inside exactly when
 * it is negative at every corner. */
int app_look_warn_empty(const app_look *look, const ir_volume *v, FILE *to) {
  int warnings = 0;
  if (look->surface_count > 0) {
    int hidden = 0;
    for (int k = 0; k < look->surface_count; k++) hidden += look->surfaces[k].opacity <= 0.0f;
    if (hidden == look->surface_count) {
      fprintf(to, "inkray: warning: every --surface has opacity 0; nothing will be drawn\n");
      warnings++;
    }
  }
  if (look->clip_plane_on) {
    float lo[3], hi[3];
    for (int k = 0; k < 3; k++) {
      float extent = (float)v->dims[k] * (v->spacing[k] > 0.0f ? v->spacing[k] : 1.0f);
      lo[k] = look->clip_box_on ? look->clip_box[2 * k] * extent : 0.0f;
      hi[k] = look->clip_box_on ? look->clip_box[2 * k + 1] * extent : extent;
    }
    bool kept = false;
    for (int c = 0; c < 8 && !kept; c++) {
      float p[3] = {c & 1 ? hi[0] : lo[0], c & 2 ? hi[1] : lo[1], c & 4 ? hi[2] : lo[2]};
      const float *n = look->clip_plane;
      kept = n[0] * p[0] + n[1] * p[1] + n[2] * p[2] + n[3] >= 0.0f;
    }
    if (!kept) {
      fprintf(to, "inkray: warning: --clip-plane %g,%g,%g,%g keeps no part of the volume%s (it spans 0..%g, 0..%g, "
              "0..%g in world units); nothing will be drawn\n",
              look->clip_plane[0], look->clip_plane[1], look->clip_plane[2], look->clip_plane[3],
              look->clip_box_on ? " inside --clip-box" : "", (double)v->dims[0] * v->spacing[0],
              (double)v->dims[1] * v->spacing[1], (double)v->dims[2] * v->spacing[2]);
      warnings++;
    }
  }
  return warnings;
}
