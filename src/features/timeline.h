/* SPDX-License-Identifier: MIT */
/* timeline.h — the frame timeline: per class, the figures of each of the
 * last SIZECLASS_FRAME_HISTORY frames (default 600), kept in an mmap'd ring
 * by sc_frame_mark (frame.c), and the frame in progress. */
#ifndef SC_TIMELINE_H
#define SC_TIMELINE_H

#include <stdbool.h>

#include "core/internal.h"
#include "core/snapshot.h" /* the frame record and what the report reads */
#include "sizeclass.h"

#pragma GCC visibility push(hidden)

/** The frame in progress: 1 + the frames sc_frame_mark has closed. */
extern _Atomic uint64_t sc__frame_now;

/** sc_frame_mark closed frame `frame`; cls are the class figures summed
 * over every arena now. Keeps the frame's per-class figures and runs the
 * steady-state check's end-of-frame part. Called under the mark lock. */
void sc__timeline_mark(uint64_t frame, const struct sc_class_stats cls[SC_CLASSES]);

/** True once the first mark has made the ring (SIZECLASS_FRAME_HISTORY
 * can no longer change). */
bool sc__timeline_started(void);

#pragma GCC visibility pop

#endif /* SC_TIMELINE_H */
