/* SPDX-License-Identifier: MIT */
/* check.h — the checking mode (SIZECLASS_CHECK=1; docs/hardening.md).
 *
 * Every class block remembers its requested size (the requested-size
 * arrays, which this feature switches on). The slack between the request
 * and the block's end holds a pattern from hand-out to free, checked on
 * free and on realloc: a write past the request stops the program. A freed
 * block is poisoned after its two list words (link and key), and checked
 * when it is handed out again, key word included: a write into a freed
 * block is reported with its offset. SIZECLASS_CHECK_QUARANTINE=<blocks>
 * keeps that many freed blocks out of reuse (first in, first out); each is
 * checked when it leaves, and those still held when the process exits are
 * checked then. All of it runs on the seam's out-of-line paths (seam.c). */
#ifndef SC_CHECK_H
#define SC_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "core/feature_bits.h"
#include "core/internal.h"

#pragma GCC visibility push(hidden)

/** True when the checking mode is on (decided once, at startup). */
static inline bool sc__check_on(void) { return (sc__features & SC_FEATURE_CHECK) != 0; }

/** Read SIZECLASS_CHECK and SIZECLASS_CHECK_QUARANTINE (mapping the
 * quarantine ring); true when the checking mode is asked for. */
bool sc__check_decide(void);

/** Before the owner takes a block from page: the block it will get, if it
 * was freed before, must be intact (key and poison). */
void sc__check_take(const sc_page_t *page);
/** Block b of page was handed out for n bytes: record n, fill the slack. */
void sc__check_alloc(const sc_page_t *page, void *b, size_t n);
/** free() of class block p of page (`local`: by its owner): a pointer that
 * is not a live block aborts, and so does a changed slack. True when the
 * block went into quarantine (the caller then does nothing more). */
bool sc__check_free(void *p, sc_page_t *page, bool local);
/** Poison block p of page on its way to a free list (`local`: the owner). */
void sc__check_poison(const sc_page_t *page, void *p, bool local);
/** realloc() keeps class block p for n bytes: check the slack of the old
 * request, fill the new one (the caller records n). */
void sc__check_resize(void *p, size_t n);
/** malloc_usable_size() of live class block p: its requested size (the
 * rest is slack, which the program must not write). */
size_t sc__check_usable(const void *p);
/** fork: the quarantine's lock is held across fork (0 prepare, 1 parent,
 * 2 child). */
void sc__check_fork(int phase);

#pragma GCC visibility pop

#endif /* SC_CHECK_H */
