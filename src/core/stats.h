/* stats.h — the statistics module's face inside the library: the snapshot
 * (stats.c), the intermediate-class advisor (advisor.c), the report
 * (report.c) and the exit/signal dump (stats_dump.c). */
#ifndef SC_STATS_H
#define SC_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/internal.h"
#include "sizeclass.h"

/* Why a report is written; printed as the report's "reason". */
typedef enum { SC_REASON_API = 0, SC_REASON_EXIT = 1, SC_REASON_SIGNAL = 2 } sc_reason_t;

/* ---- stats.c --------------------------------------------------------- */
/** Every class's figures, summed over every arena (the totals are left to
 * the caller); false when an unlocked walk had to leave pages out. */
bool sc__stats_classes(struct sc_class_stats out[SC_CLASSES], bool unlocked);
/** Sum every arena's counters into *out. `unlocked` walks the arena list
 * without its lock (signal handlers, exit with threads running). */
void sc__stats_snapshot(struct sc_stats *out, bool unlocked);
/** Monotonic time the library was loaded (0 before the constructor). */
extern uint64_t sc__stats_start_ns;

/* ---- advisor.c ------------------------------------------------------- */
/* What an intermediate class between size/2 and size would have saved. */
typedef struct sc_advice_s {
  uint64_t size;              /* the class */
  uint64_t wasted_bytes;      /* total block bytes - total requested bytes */
  uint64_t intermediate_size; /* 3/4 of size; 0 when none is possible */
  uint64_t fitting_requests;  /* requests <= intermediate_size */
  uint64_t saved_bytes;       /* fitting_requests * (size - intermediate) */
} sc_advice_t;

/** Advice for every class of st, and the class indices ordered by wasted
 * bytes, most first (ties: smaller class first). */
void sc__advise(const struct sc_stats *st, sc_advice_t advice[SC_CLASSES],
                unsigned order[SC_CLASSES]);

/* ---- stats_dump.c ---------------------------------------------------- */
/** out = tmpl with every %p replaced by pid and %% by %; false if it does
 * not fit in cap bytes. Never allocates. */
bool sc__expand_pid_path(char *out, size_t cap, const char *tmpl, uint64_t pid);
/** Arm (or re-arm) the exit and signal reports from the SIZECLASS_STATS*
 * settings: at load, and when sc_option_set changes one. */
void sc__stats_dump_configure(void);

/* ---- report.c -------------------------------------------------------- */
/** Write the whole report to fd; never allocates. */
void sc__report_write(int fd, enum sc_stats_format format, sc_reason_t reason, bool unlocked);

#endif /* SC_STATS_H */
