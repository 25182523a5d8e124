/* purge.h — giving memory back to the OS. The footprint work fills this
 * in; the statistics report prints what sc__purge_stats() says. */
#ifndef SC_PURGE_H
#define SC_PURGE_H

#include <stdint.h>

/* Counters of memory given back to the OS, process-wide. */
typedef struct sc_purge_stats_s {
  uint64_t purges;                   /* purge operations */
  uint64_t bytes_returned;           /* bytes given back, cumulative */
  uint64_t pages_reused_after_purge; /* purged pages handed to a class again */
} sc_purge_stats_t;

/** Snapshot of the purge counters; never blocks, never allocates (the
 * stats dump calls it from signal handlers). */
void sc__purge_stats(sc_purge_stats_t *out);

#endif /* SC_PURGE_H */
