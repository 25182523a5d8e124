/* SPDX-License-Identifier: MIT */
/* frame.h — allocator-wide frame statistics (sc_frame_mark). The frame
 * module fills this; the stats report prints it. */
#ifndef SC_FRAME_H
#define SC_FRAME_H

#include <stdint.h>

#include "sizeclass.h"

/** The frame statistics: the same fields as the public report's `frames`
 * (include/sizeclass.h), declared once there: sc_frame_mark() calls,
 * warm-up frames, class allocations, frees, fresh carves and requested
 * bytes inside marked frames, frames after the warm-up with no fresh
 * carve, and the most recent complete frame's figures. */
typedef __typeof__(((struct sc_stats *)0)->frames) sc_frame_stats_t;

/** Snapshot of the frame statistics so far (all zero if never marked). */
void sc__frame_stats(sc_frame_stats_t *out);

#endif /* SC_FRAME_H */
