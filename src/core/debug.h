/* SPDX-License-Identifier: MIT */
/* debug.h — the invariant checks of SC_DEBUG builds
 * (validate.c) and the messages of misuse and the library's aborts
 * (harden.c). */
#ifndef SC_DEBUG_H
#define SC_DEBUG_H

#include "core/types.h"

#pragma GCC visibility push(hidden)

/* ---- validate.c (SC_DEBUG builds, config.h) ------------------------------- */
#if SC_DEBUG
/** Page's invariants, as its owner sees them (the owner is running):
 * geometry, carve pointer and high-water mark, the free list (links to
 * carved block starts, free in the block map, no cycle), free-list length
 * + used == blocks carved, blocks never carved free in the map. */
void sc__page_validate(const sc_page_t *page);
/** Arena a's invariants (its owner running, or a is nobody's and the
 * caller holds the arena lock): class queues and idle lists linked both
 * ways with the right pages and flags, each class allocating from its
 * pinned head, the owner's slots in step, pages, idle and spare pages
 * counted right, full pages full; with `pages`, every active page too. */
void sc__arena_validate(const sc_arena_t *a, bool pages);
/** "sizeclass: assertion failed: EXPR (FILE:LINE)", then abort(). */
sc_noreturn sc_cold void sc__assert_fail(const char *expr, const char *file, unsigned line);
#define sc_assert(cond) (sc_likely(cond) ? (void)0 : sc__assert_fail(#cond, __FILE__, __LINE__))
#define sc_validate_page(page) sc__page_validate(page)
/* After a purge poll: the step may have returned the page itself (a
 * trapped class head that emptied, under a requested purge). */
#define sc_validate_page_if_active(page) \
  ((page)->state == SC_PAGE_ACTIVE ? sc__page_validate(page) : (void)0)
#define sc_validate_arena(a, pages) sc__arena_validate((a), (pages))
#else
/* Nothing at all: an assertion's condition is not even evaluated (the
 * validators' arguments are plain variables). */
#define sc_assert(cond) ((void)sizeof(!(cond)))
#define sc_validate_page(page) ((void)(page))
#define sc_validate_page_if_active(page) ((void)(page))
#define sc_validate_arena(a, pages) ((void)(a), (void)(pages))
#endif

/* ---- harden.c (the messages of misuse) ------------------------------------ */
/** "sizeclass: <what> of 0x… (class N B)" (no class when class_size is 0),
 * then abort(). */
sc_noreturn sc_cold void sc__fatal_block(const char *what, const void *p, unsigned class_size);
/** "sizeclass: corrupted free list in class N B (page 0x…)" (no page when
 * page_base is 0), then abort(). */
sc_noreturn sc_cold void sc__fatal_list(unsigned class_size, uintptr_t page_base);
/* The misuse reports of the fast paths (alloc.h). They never return, but
 * are not declared noreturn: the fast paths reach them by a tail jump, with
 * no stack frame to set up on the way that every call would pay for. */
sc_cold void sc__fatal_invalid(const void *p);
sc_cold void sc__fatal_double(const void *p, const sc_page_t *page);
sc_cold __attribute__((returns_nonnull)) void *sc__fatal_list_of(const sc_page_t *page);
/* The same, declared noreturn, for callers that go on after a block was
 * taken (nothing of theirs then needs to survive the call). */
sc_noreturn sc_cold void sc__fatal_list_at(const sc_page_t *page);
/** Print "sizeclass: <msg>\n" to stderr without allocating. */
void sc__warn(const char *msg);
/** Every abort of the library's own goes through here: print
 * "sizeclass: <why>" on stderr, let the report write itself first when
 * one was asked for (reason "abort: <why>"; snapshot.h's last words,
 * bounded: a fault or a second abort while it runs stops at once), then
 * abort(). */
sc_noreturn sc_cold void sc__abort_with_report(const char *why);
/** The same, for a caller that printed its lines itself (the guard pages'
 * fault report): the report, then abort(). */
sc_noreturn sc_cold void sc__abort_said(const char *why);
/** The program called _exit or _Exit (shim.c): the report's last words
 * (reason "_exit"), then the caller ends the process. */
void sc__last_words_exit(void);

#pragma GCC visibility pop

#endif /* SC_DEBUG_H */
