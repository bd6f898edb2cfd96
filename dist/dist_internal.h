/* Internals of the dist module shared by its files; not part of the public API. */
#ifndef INKRAY_DIST_INTERNAL_H
#define INKRAY_DIST_INTERNAL_H

#include "dist/dist.h"

/* Host clock, milliseconds. */
double ir_dist_now_ms(void);

#endif
