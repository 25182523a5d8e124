/* SPDX-License-Identifier: MIT */
/* report.h — the statistics report's face inside the report layer and to
 * the API: the report (report.c, with its sites and timeline sections), the
 * intermediate-class advisor (advisor.c) and the exit/signal dump
 * (stats_dump.c). Everything they read comes from core/snapshot.h. */
#ifndef SC_REPORT_H
#define SC_REPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/snapshot.h"
#include "report/emit.h"
#include "sizeclass.h"

#pragma GCC visibility push(hidden)

/* Why a report is written; printed as the report's "reason" ("request",
 * "exit", "signal", "abort: <why>", "terminated: <why>", "crash: <why>",
 * "_exit", "live"). */
typedef enum {
  SC_REASON_API = 0,
  SC_REASON_EXIT = 1,
  SC_REASON_SIGNAL = 2,     /* SIZECLASS_STATS_SIGNAL */
  SC_REASON_ABORT = 3,      /* the library's own abort; why: its message */
  SC_REASON_TERMINATED = 4, /* SIGTERM, SIGINT, SIGHUP; why: "SIGTERM" */
  SC_REASON_CRASH = 5,      /* SIZECLASS_STATS_ON_CRASH; why: "SIGSEGV" */
  SC_REASON_QUICK_EXIT = 6, /* the program called _exit or _Exit */
  SC_REASON_LIVE = 7,       /* the live snapshot (report/live.c): "live" */
} sc_reason_t;

/** Frames of the timeline the live snapshot keeps (the last ones). */
#define SC_LIVE_FRAMES 32
/** The live form's tags and threads: the ones with the most live bytes. */
#define SC_LIVE_TAG_ROWS 32
/** The live form's named snapshots: the last ones (the last one alone
 * with its tags and threads). */
#define SC_LIVE_NAMED 8

/* ---- report.c -------------------------------------------------------- */
/** Write the whole report to fd; never allocates. */
void sc__report_write(int fd, enum sc_stats_format format, sc_reason_t reason, bool unlocked);
/** The same, with the detail of the reason (NULL: none): "abort: <why>". */
void sc__report_write_why(int fd, enum sc_stats_format format, sc_reason_t reason, const char *why,
                          bool unlocked);
/** The resident set the live snapshot shows (read at most every 100 ms). */
typedef struct sc_live_rss_s {
  uint64_t peak, now;
} sc_live_rss_t;
/** The live snapshot's JSON report into buf[0..cap): its length; *cut when
 * it did not fit (the text is then cut short). Never allocates. */
size_t sc__report_live(char *buf, size_t cap, const sc_live_rss_t *rss, bool *cut);

/* ---- report_timeline.c ------------------------------------------------ */
/** The report's "frame_timeline" key (text: the last frames), null when
 * SIZECLASS_FRAME_HISTORY=0. `exact`: requested bytes were tracked;
 * `last`: only the last frames (0: every kept frame). */
void sc__report_timeline(sc_emitter_t *e, bool exact, unsigned last);

/* ---- live.c ---------------------------------------------------------- */
/** Publish (or stop publishing) the live snapshot as SIZECLASS_LIVE says:
 * at load, and when sc_option_set changes it. */
void sc__live_configure(void);
/** Remove the live snapshot's file now (async-signal-safe: for the paths
 * that end the process without atexit, e.g. a fatal signal's report). */
void sc__live_remove(void);

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
/** Arm (or re-arm) the exit and signal reports from the SIZECLASS_STATS*
 * settings: at load, and when sc_option_set changes one. */
void sc__stats_dump_configure(void);

#pragma GCC visibility pop

#endif /* SC_REPORT_H */
