/* SPDX-License-Identifier: MIT */
/* sizeclass.h — the public face of libsizeclass.
 *
 * The same allocator that LD_PRELOAD/static linking installs as malloc is
 * callable directly through these functions, with or without interposition.
 * Requests of 1024 B or less are served from power-of-two size classes
 * (16, 32, ..., 1024 B) in thread-local arenas; larger ones go to the system
 * allocator. Every pointer may be freed by any thread with sc_free (or free,
 * when the library is interposed). */
#ifndef SIZECLASS_H
#define SIZECLASS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SC_VERSION_MAJOR 0
#define SC_VERSION_MINOR 1
#define SC_VERSION_PATCH 0

/** Smallest and largest size class, and how many classes there are. */
#define SC_MIN_CLASS_SIZE 16
#define SC_MAX_CLASS_SIZE 1024
#define SC_NUM_CLASSES 7

/** malloc(n): a block of at least n bytes, or NULL with errno = ENOMEM. */
void *sc_malloc(size_t n);
/** free(p): p may come from any thread, from sc_* or the system allocator. */
void sc_free(void *p);
/** calloc(count, size): zeroed; NULL + ENOMEM on overflow. */
void *sc_calloc(size_t count, size_t size);
/** realloc(p, n) with glibc semantics (realloc(p, 0) frees, returns NULL). */
void *sc_realloc(void *p, size_t n);
/** posix_memalign-style aligned allocation; returns 0, EINVAL or ENOMEM. */
int sc_posix_memalign(void **out, size_t alignment, size_t n);
/** Usable size of a block: its class size for class blocks (the request
 * in the checking mode and for guarded blocks), 0 for NULL. */
size_t sc_usable_size(const void *p);
/** True when p lies in a block carved from the size classes (or in a live
 * block of the guard pages). */
bool sc_owns(const void *p);
/** Size class that a request of n bytes maps to (16..1024), 0 if n > 1024. */
size_t sc_class_size(size_t n);
/** Give back to the OS, at once, the memory of every page whose blocks are
 * all free: the calling thread's, and exited threads' (other live threads
 * do so at their next allocator slow path). Also trims the system
 * allocator. Returns the bytes given back (docs/footprint.md). */
size_t sc_trim(void);

/** Mark a frame boundary (call once per game-loop iteration). The allocator
 * then counts, per frame, class allocations, frees, fresh carves (blocks
 * never handed out before) and requested bytes; the SIZECLASS_STATS report
 * shows frames seen, max/mean allocations per frame and the frames after
 * warm-up (SIZECLASS_WARMUP_FRAMES, default 60) with zero fresh carves.
 * Never allocates.
 *
 * A program that should also run without the library (the call is then
 * skipped) defines SC_FRAME_WEAK before including this header and calls
 * SC_FRAME_MARK(): sc_frame_mark is then a weak reference, null unless
 * libsizeclass is preloaded or linked. */
void sc_frame_mark(void);
/** The steady-state check, around a section: with `on`, every frame from
 * now on must reuse memory (carve no block never handed out before); with
 * `off`, frames are no longer checked, whatever SIZECLASS_FRAME_CHECK says.
 * A fresh carve while checking prints "sizeclass: frame N: fresh carve in
 * class C B" on stderr (once per class; SIZECLASS_FRAME_CHECK=abort stops
 * the program instead). Without SIZECLASS_FRAME_CHECK the check runs at each
 * sc_frame_mark and at this call. Returns true when no fresh carve was seen
 * while checking since the previous call. */
bool sc_frame_expect_steady(bool on);
#ifdef SC_FRAME_WEAK
#pragma weak sc_frame_mark
#define SC_FRAME_MARK() ((sc_frame_mark != 0) ? sc_frame_mark() : (void)0)
#else
#define SC_FRAME_MARK() sc_frame_mark()
#endif

/* ---- statistics (docs/stats.md) ---------------------------------------- */

/** Request-size histogram buckets: bucket 0 counts malloc(0), bucket i
 * counts requests of (i-1)*16+1 .. i*16 bytes. */
#define SC_STATS_BUCKETS 65

/** Output forms of sc_stats_print (and of SIZECLASS_STATS_FORMAT). */
enum sc_stats_format { SC_STATS_TEXT = 0, SC_STATS_JSON = 1 };

/** Counters of one size class, summed over every arena. */
struct sc_class_stats {
  uint64_t size;                  /* block size in bytes (0 in the totals) */
  uint64_t pages;                 /* 64 KiB pages serving the class */
  uint64_t reserved_bytes;        /* pages * 64 KiB */
  uint64_t capacity_blocks;       /* blocks those pages hold */
  uint64_t live_blocks;           /* allocs - frees */
  uint64_t peak_live_blocks;      /* sum of per-arena peaks: an upper bound */
  uint64_t allocs;                /* sum of request_histogram */
  uint64_t frees;                 /* same-thread and cross-thread */
  uint64_t remote_frees;          /* ...of which cross-thread */
  uint64_t reuse_hits;            /* allocs served by a freed block */
  uint64_t fresh_carves;          /* allocs served by a never-used block */
  uint64_t hit_rate_permille;     /* reuse_hits * 1000 / allocs, floor */
  uint64_t live_requested_bytes;  /* bytes asked for by live blocks */
  uint64_t live_block_bytes;      /* live_blocks * size */
  uint64_t peak_requested_bytes;  /* requested bytes when each arena peaked */
  uint64_t peak_block_bytes;      /* peak_live_blocks * size */
  uint64_t total_requested_bytes; /* cumulative */
  uint64_t total_block_bytes;     /* allocs * size */
  uint64_t request_histogram[SC_STATS_BUCKETS];
};

/** Bits of struct sc_stats.tracked: which figures a snapshot measured.
 * Figures that were not tracked read 0 in the struct, null in the JSON and
 * "-" in the text report, which names them. */
#define SC_TRACKED_COUNTS                                     \
  0x1u /* blocks, pages, reuse and fresh carves (the default; \
          unset only when a dump could not read every page) */
#define SC_TRACKED_EXACT                                     \
  0x2u /* requested bytes, the request histogram, peaks, and \
          the system allocator's peak: exact statistics */

/** A snapshot of every statistic the report shows. */
struct sc_stats {
  struct sc_class_stats classes[SC_NUM_CLASSES]; /* 16 B ... 1024 B */
  struct sc_class_stats totals;                  /* sums over the classes */
  struct {
    uint64_t malloc_calls, realloc_calls, aligned_calls; /* calls by kind */
    uint64_t allocs, frees, live_blocks;                 /* blocks */
    uint64_t total_bytes, live_bytes, peak_live_bytes;   /* usable bytes */
  } fallback; /* requests > 1024 B, served by the system allocator */
  struct {
    uint64_t created, live, adopted, threads;
  } arenas;
  struct {
    uint64_t frames, warmup_frames, max_allocs, total_allocs, total_frees;
    uint64_t total_fresh_carves, total_bytes, zero_fresh_frames;
    uint64_t last_allocs, last_frees, last_fresh_carves, last_bytes;
  } frames; /* sc_frame_mark() */
  struct {
    uint64_t purges, bytes_returned, pages_reused_after_purge;
    uint64_t system_trims; /* malloc_trim runs of the paced system policy */
  } purge;                 /* memory given back to the OS */
  struct {
    uint64_t pid, peak_rss_bytes, rss_bytes, wall_ns;
  } process;
  uint64_t tracked; /* SC_TRACKED_* bits */
};

/** Fill *out with a consistent snapshot of the statistics, summed over
 * every arena; never allocates. Without exact statistics the per-request
 * figures are not tracked (see `tracked`). */
void sc_stats_get(struct sc_stats *out);

/** Exact statistics (docs/stats.md): requested bytes per block, the
 * request-size histogram, live/total/peak requested bytes, peaks. They cost
 * time on every allocation, so they are off unless asked for, once, when
 * the process starts: by SIZECLASS_STATS or SIZECLASS_STATS_SIGNAL (a
 * report implies them), by SIZECLASS_STATS_EXACT=1, by a
 * `sizeclass_options` string the program defines (below), or by this call
 * made before the process's first allocation from the size classes.
 * Returns true when they are on (now or already), false when it came too
 * late to switch them on. */
bool sc_stats_enable_exact(void);

/* A program may define
 *     const char *const sizeclass_options = "SIZECLASS_STATS_EXACT=1";
 * (any SIZECLASS_* settings, separated by spaces, commas or semicolons):
 * the library reads it when it starts, before any allocation, and the
 * environment overrides it. It is found when the program links
 * libsizeclass (shared or static); a program that only gets it by
 * LD_PRELOAD must export the symbol (-rdynamic). */

/** Set the SIZECLASS_* setting `name` to `value` (NULL or "": back to its
 * default), parsed as the environment's value would be: a bad value gets
 * the same one-line warning and fallback, and the call returns false with
 * errno EINVAL (an unknown name too). The setting overrides the
 * environment and sizeclass_options. Settings that switch a feature on
 * (SIZECLASS_STATS_EXACT, _SITES*, _GUARD*, _CHECK*, _FRAME_CHECK) take
 * effect only before the first allocation of 1024 bytes or less, and only
 * to switch it on; SIZECLASS_FRAME_HISTORY only before the first
 * sc_frame_mark; SIZECLASS_SYSTEM_TRIM only in the environment: otherwise
 * false with errno EBUSY, and the setting keeps its value. The others
 * (the report's destination, form, signal and pid, the warm-up, the purge
 * delay and step) take effect at once. Not thread-safe: call it while the
 * program sets up. */
bool sc_option_set(const char *name, const char *value);
/** Keep a named snapshot of every figure of the statistics (classes,
 * totals, the system allocator, frames; with tags on, the 32 tags and 16
 * threads with the most live bytes; no per-block data) under `name`:
 * "what did the level load leave behind?". The report lists the last 32
 * under "snapshots" (JSON) and in a short table (text); `sizeclass-report
 * diff report.json@a report.json@b` compares two. The name is cut to 63
 * bytes; its control characters print as '?'. Never allocates; false with
 * errno EINVAL for a NULL or empty name (docs/live.md). */
bool sc_snapshot(const char *name);

/* ---- tags, threads and budgets (docs/tags.md) ---------------------------------- */

/* A tag names a subsystem; a thread that entered it counts every block it
 * allocates under it, until the block is freed (by whichever thread).
 * 0 is untagged; 255 tags at most (the 256th name gets one warning and
 * counts as untagged). Tags are counted with exact statistics on
 * (SIZECLASS_STATS_EXACT=1, a report, or SIZECLASS_BUDGET); without them
 * sc_tag still returns an id and warns once that nothing is counted. */
typedef unsigned sc_tag_t;
sc_tag_t sc_tag(const char *name);   /* register or look up; thread-safe */
sc_tag_t sc_tag_enter(sc_tag_t tag); /* returns the tag entered before */
void sc_tag_leave(sc_tag_t previous);

#if defined(__GNUC__) && !defined(__cplusplus)
__attribute__((unused)) static inline void sc__tag_scope_end(sc_tag_t *prev) {
  sc_tag_leave(*prev);
}
#define SC__TAG_CAT2(a, b) a##b
#define SC__TAG_CAT(a, b) SC__TAG_CAT2(a, b)
/* Enter tag `name` until the end of the enclosing block. */
#define SC_TAG_SCOPE(name)                      \
  sc_tag_t SC__TAG_CAT(sc__tag_prev_, __LINE__) \
      __attribute__((cleanup(sc__tag_scope_end), unused)) = sc_tag_enter(sc_tag(name))
#endif

/* One tag's figures (sc_stats_tags). Peaks are each thread's own peak
 * (its arena's owner view), summed over threads: an upper bound. */
struct sc_tag_class_stats {
  uint64_t size, live_blocks, peak_live_blocks, allocs;
};
struct sc_tag_stats {
  char name[64];
  uint64_t id;
  uint64_t budget; /* bytes; 0: none */
  uint64_t allocs, frees, live_blocks;
  uint64_t live_requested_bytes, peak_requested_bytes;
  uint64_t live_block_bytes, peak_block_bytes;
  uint64_t system_live_bytes, system_peak_bytes; /* requests > 1024 B */
  struct sc_tag_class_stats classes[SC_NUM_CLASSES];
};
/* One thread's figures (sc_stats_threads); exited threads of one name
 * are one row (count). allocs: blocks it made (class and system);
 * frees: of those, freed (by any thread). */
struct sc_thread_stats {
  char name[16];
  int64_t tid;
  bool exited;
  uint64_t count, allocs, frees;
  uint64_t live_block_bytes, peak_block_bytes, system_live_bytes;
  uint64_t budget; /* bytes; 0: none */
};
/* Fill out[0..cap) without allocating; returns how many rows there are
 * (more than cap: call again with more room). 0 while tags are off. */
size_t sc_stats_tags(struct sc_tag_stats *out, size_t cap);
size_t sc_stats_threads(struct sc_thread_stats *out, size_t cap);
/* Set a budget at run time: "total", "tag:NAME", "class:64",
 * "thread:NAME"; bytes of live blocks (0 removes it). False when `what`
 * names nothing or budgets cannot be checked (exact statistics off). */
bool sc_budget_set(const char *what, uint64_t bytes);
/** Write the statistics report to fd as text or JSON (docs/stats.md);
 * never allocates, safe while other threads run. */
void sc_stats_print(int fd, enum sc_stats_format format);

#ifdef __cplusplus
}
#endif
#endif /* SIZECLASS_H */
