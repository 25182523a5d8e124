/* frame.c — frame statistics (placeholder until sc_frame_mark lands). */
#include "frame.h"

#include <string.h>

void sc__frame_stats(sc_frame_stats_t *out) { memset(out, 0, sizeof(*out)); }
