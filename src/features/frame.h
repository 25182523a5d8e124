/* SPDX-License-Identifier: MIT */
/* frame.h — allocator-wide frame statistics (sc_frame_mark). The frame
 * module fills this; the stats report prints it. */
#ifndef SC_FRAME_H
#define SC_FRAME_H

#include <stdint.h>

typedef struct sc_frame_stats_s {
  uint64_t frames;        /* sc_frame_mark() calls */
  uint64_t warmup_frames; /* frames excluded from the steady-state count */
  uint64_t max_allocs;    /* most class allocations in one frame */
  uint64_t total_allocs;  /* class allocations inside marked frames */
  uint64_t total_frees;
  uint64_t total_fresh_carves;
  uint64_t total_bytes;       /* requested bytes inside marked frames */
  uint64_t zero_fresh_frames; /* frames after warm-up with no fresh carve */
  uint64_t last_allocs;       /* the most recent complete frame */
  uint64_t last_frees;
  uint64_t last_fresh_carves;
  uint64_t last_bytes;
} sc_frame_stats_t;

/** Snapshot of the frame statistics so far (all zero if never marked). */
void sc__frame_stats(sc_frame_stats_t *out);

#endif /* SC_FRAME_H */
