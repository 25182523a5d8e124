/* SPDX-License-Identifier: MIT */
/* snapshot.h — everything the report layer (src/report/) reads, and the
 * only header of the core it includes: the statistics snapshot the core
 * sums (stats.c), and the read-only views of what the features record
 * (declared here, implemented in src/features/: sites.c, timeline.c).
 *
 * The report never sees an arena, a page or a feature's own state: it
 * asks for a copy (struct sc_stats), or reads a record that only grows
 * (the site table, the frame ring) through the functions below. A feature
 * that is off answers with an empty view (no sites, no frames). Every
 * function here is safe in a signal handler and never allocates. The
 * headers this one includes are constants and arithmetic only. */
#ifndef SC_SNAPSHOT_H
#define SC_SNAPSHOT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "core/feature_bits.h"
#include "core/size_class.h"
#include "sizeclass.h"

#pragma GCC visibility push(hidden)

/* ---- the statistics (stats.c) -------------------------------------------------- */

/** Every class's figures, summed over every arena (the totals are left to
 * the caller); false when an unlocked walk had to leave pages out. */
bool sc__stats_classes(struct sc_class_stats out[SC_CLASSES], bool unlocked);
/** Sum every arena's counters into *out. `unlocked` walks the arena list
 * without its lock (signal handlers, exit with threads running). */
void sc__stats_snapshot(struct sc_stats *out, bool unlocked);
/** sc__stats_snapshot without the resident set (left 0): the live
 * snapshot's, which reads /proc/self/status (dearer than the rest of a
 * snapshot) at most every 100 ms through sc__stats_rss. */
void sc__stats_snapshot_no_rss(struct sc_stats *out, bool unlocked);
/** Peak and current resident set, in bytes (0 when unknown). */
void sc__stats_rss(uint64_t *peak, uint64_t *now);
/** Monotonic time the library was loaded (0 before its constructor). */
extern uint64_t sc__stats_start_ns;

/* ---- allocation sites (features/sites.c) ---------------------------------------- */

/** The system allocator's blocks (requests > 1024 B) are sites of this
 * class index (reported as class 0). */
#define SC_SITES_SYSTEM SC_CLASSES
/** Class indices a site can have: the classes and the system allocator. */
#define SC_SITES_CLASSES (SC_CLASSES + 1)
/** Estimates are fixed-point numbers with this many fractional bits. */
#define SC_SITES_Q 12

/* One site: a call stack and the class it allocated from. The counters
 * are estimates in SC_SITES_Q fixed point: each sampled allocation adds
 * its weight (1 / its probability of being sampled; exactly 1 at rate 1). */
typedef struct sc_site_s {
  _Atomic uint64_t allocs_q; /* allocations */
  _Atomic uint64_t live_q;   /* of those, not freed yet (wraps; read as signed) */
  _Atomic uint64_t wasted_q; /* bytes lost to rounding up: block size - request */
  _Atomic uint64_t bytes_q;  /* requested bytes */
  _Atomic uint64_t samples;  /* allocations actually recorded */
  uint64_t hash;             /* of the stack */
  uint16_t cls;              /* class index, or SC_SITES_SYSTEM */
  uint16_t overflow;         /* 1: the samples of stacks that found the table full */
  uint32_t depth;            /* frames in pcs (0: no stack, or an overflow site) */
  uintptr_t pcs[SC_UNWIND_DEPTH];
} sc_site_t;

/** The sampling rate: mean bytes between samples, 1 for every allocation,
 * 0 when sites are off. */
uint64_t sc__sites_rate(void);
/** What each allocation counts beyond its request (0 at rate 1). */
extern int64_t sc__sites_charge;
/** The site table and how many sites it holds (entries below that count
 * are complete; they never move). */
const sc_site_t *sc__sites_table(uint32_t *count);
/** Sampled allocations whose stack found no room in the table (counted in
 * their class's overflow site) and whose stack the unwinder could not walk. */
uint64_t sc__sites_overflowed(void);
/** True when the sites should be written as folded stacks at exit
 * (SIZECLASS_SITES_FORMAT=folded); the path template (may hold %p). */
bool sc__sites_folded(const char **path);
/** True when SIZECLASS_SITES asks for the statistics report at exit (no
 * other destination was set: the report goes to stderr). */
bool sc__sites_report_implied(void);

/* ---- the frame timeline (features/timeline.c) ----------------------------------- */

/* One frame: per class, what changed during it and what was live at its
 * end. Requested bytes exist only with exact statistics. */
typedef struct sc_frame_entry_s {
  uint64_t frame;
  uint64_t allocs[SC_CLASSES], frees[SC_CLASSES], fresh[SC_CLASSES];
  uint64_t live_blocks[SC_CLASSES];
  uint64_t bytes[SC_CLASSES];      /* requested during the frame (exact tier) */
  uint64_t live_bytes[SC_CLASSES]; /* requested by live blocks at its end (exact tier) */
} sc_frame_entry_t;

/** False when the timeline is off (SIZECLASS_FRAME_HISTORY=0, known at the
 * first mark); else the frames written so far (*count) and those of them
 * kept (*kept: the last ones, at most SIZECLASS_FRAME_HISTORY). */
bool sc__timeline_frames(uint64_t *count, uint64_t *kept);
/** Copy frame i of the `kept` frames of `count` written (0: the oldest
 * kept) into *out: a consistent copy unless a mark keeps overwriting it. */
void sc__timeline_entry(uint64_t count, uint64_t kept, uint64_t i, sc_frame_entry_t *out);

/* ---- last words (core/harden.c) ------------------------------------------------- */

/* How the process ends where the report's atexit handler cannot see it. */
typedef enum {
  SC_LAST_ABORT = 1, /* the library's own abort; `why` is its message */
  SC_LAST_EXIT = 2,  /* the program called _exit or _Exit; `why` is NULL */
} sc_last_t;
typedef void (*sc_last_words_fn)(sc_last_t what, const char *why);

/** The report registers what to write before the library aborts or the
 * program calls _exit (the core never calls the report itself). */
void sc__last_words_register(sc_last_words_fn fn);

/** Give the calling thread, and from now on every thread when it binds
 * its first arena, an alternate signal stack (arena.c): the crash report
 * runs on it. A thread's stack goes at its exit. */
void sc__altstacks_want(void);

/** The guard pages' fault handler (features/guard.c), when it is
 * installed (NULL otherwise): the crash report chains to it. */
void *sc__guard_fault_handler(void);

/* ---- frame marks (features/frame.c) ----------------------------------------------- */

/** Called by sc_frame_mark after each mark (outside its lock), when a
 * higher layer set it: the live snapshot (report/live.c) registers itself
 * here, so that the features never call the report. NULL: nothing. */
typedef void (*sc_frame_listener_fn)(void);
extern _Atomic(sc_frame_listener_fn) sc__frame_listener;

/* ---- named snapshots (features/named.c, sc_snapshot) ------------------------------ */

/** Named snapshots kept (the last ones) and the bytes of a name kept. */
#define SC_NAMED_MAX 32
#define SC_NAMED_NAME_CAP 64
/** Tags and threads a named snapshot keeps (while tags are on): the ones
 * with the most live bytes (block + system), largest first. */
#define SC_NAMED_TAGS 32
#define SC_NAMED_THREADS 16

/* One named snapshot: every figure of the statistics when it was taken
 * (no per-block data). The name is the caller's bytes, cut to fit and
 * NUL-terminated; the report cleans it when it prints it. */
typedef struct sc_named_s {
  char name[SC_NAMED_NAME_CAP];
  uint64_t frame;   /* frames marked when it was taken */
  uint64_t wall_ns; /* the process's run time then */
  struct sc_stats stats;
  /* Tags on when it was taken: the top ntags tags and nthreads threads
   * (largest first); off: both 0 and the report prints null. */
  bool tags_on;
  uint32_t ntags, nthreads;
  struct sc_tag_stats tags[SC_NAMED_TAGS];
  struct sc_thread_stats threads[SC_NAMED_THREADS];
} sc_named_t;

/** Named snapshots taken so far (the last SC_NAMED_MAX of them are kept). */
uint64_t sc__named_count(void);
/** Snapshot i of the kept ones (0: the oldest kept; count as returned by
 * sc__named_count), read in place: it changes only when SC_NAMED_MAX newer
 * snapshots are taken. */
const sc_named_t *sc__named_entry(uint64_t count, uint64_t i);
/* ---- tags, threads and budgets (features/tags.c, features/budget.c) --------------- */

/** True once tags are on (docs/tags.md). */
bool sc__tags_report_on(void);
/** sc_stats_tags and sc_stats_threads, optionally without the locks (a
 * report from a signal handler); with more threads than cap, the threads'
 * rows kept are those with the most live bytes. */
size_t sc__tags_fill(struct sc_tag_stats *out, size_t cap, bool unlocked);
size_t sc__tags_threads_fill(struct sc_thread_stats *out, size_t cap, bool unlocked);

/* One budget, as the report reads it. */
typedef struct sc_budget_view_s {
  char what[80];
  uint64_t limit, live, peak, first_frame;
  bool breached;
} sc_budget_view_t;
/** Fill out[0..cap) with the budgets; their count. */
size_t sc__budget_list(sc_budget_view_t *out, size_t cap);

#pragma GCC visibility pop

#endif /* SC_SNAPSHOT_H */
