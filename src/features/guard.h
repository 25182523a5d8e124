/* SPDX-License-Identifier: MIT */
/* guard.h — sampled guard pages (SIZECLASS_GUARD=<n>; docs/hardening.md).
 *
 * About one class-sized allocation in n, drawn by the thread's countdown
 * (the one all sampled features share: seam.c), is served from a fixed pool of guarded slots
 * instead of the classes: each slot is one OS page between two inaccessible pages, the block
 * right-aligned in it so that the first byte past the request (past its 16-byte rounding; that
 * slack is checked on free) is inaccessible. On free the page is made inaccessible and the slot
 * waits at the back of a FIFO before it serves again, so a late read or write faults. A SIGSEGV or
 * SIGBUS handler reports faults inside the pool and aborts; every other fault goes to the handler
 * the program had, or the default action.
 *
 * The pool is mapped once when the feature is decided; its size is fixed
 * (SIZECLASS_GUARD_SLOTS slots: 2 pages of address space and at most one
 * resident page each, plus 44 bytes of bookkeeping) and exhaustion only
 * means that allocations are not guarded until a slot comes back.
 * Guarded blocks are not in the segment bitmap: the system-route paths of
 * alloc.c ask the seam (the table's foreign owner, core/hooks.h) before they hand a pointer
 * to glibc. */
#ifndef SC_GUARD_H
#define SC_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/internal.h"

#pragma GCC visibility push(hidden)

/** Read SIZECLASS_GUARD and SIZECLASS_GUARD_SLOTS; when guarding is asked
 * for, map the pool and install the fault handler. True when it is on. */
bool sc__guard_decide(void);

/** Start and length of the pool's address range (0 and 0 when off). */
extern uintptr_t sc__guard_base;
extern size_t sc__guard_span;
/** True when p lies in the guard pool (any thread, O(1)). */
static inline bool sc__guard_has(const void *p) {
  return (uintptr_t)p - sc__guard_base < sc__guard_span;
}

/** Class allocations until the calling thread's next guarded one: uniform
 * in 1 .. 2 * rate - 1 (mean rate), so that no allocation pattern can stay
 * in step with it. The seam's countdown counts them down (seam.c). */
int64_t sc__guard_draw(void);

/** A guarded block of n <= SC_SMALL_MAX bytes aligned to `align` (a power
 * of two, 16..1024), or NULL when every slot is taken (the caller then
 * allocates normally). */
void *sc__guard_alloc(size_t n, size_t align);
/** free() of p in the pool: aborts with a message unless p is a live
 * guarded block (double free, interior pointer, overflow into the slack). */
void sc__guard_free(void *p);
/** realloc() of p in the pool (n > 0): a new block (guarded or not) with
 * the contents, then p freed; NULL (p kept) when no memory is left. */
void *sc__guard_realloc(void *p, size_t n);
/** malloc_usable_size() of p in the pool: the requested size. */
size_t sc__guard_usable(const void *p);
/** True when p lies inside a live guarded block. */
bool sc__guard_owns(const void *p);

/** fork: the pool's lock is held across fork (0 prepare, 1 parent, 2 child). */
void sc__guard_fork(int phase);

/* Allocation sites (issue 12) plug in here when they exist: `capture`
 * returns an id of the calling stack (0: none) and must neither allocate
 * nor take a lock a fault could interrupt; `describe` writes one line
 * describing a site into buf (at most cap bytes, no newline) and returns
 * its length — it runs in the fault handler, so it must be
 * async-signal-safe. Both NULL (the default): reports name no sites. The
 * sites feature sets them when it is decided (before any allocation). */
typedef struct {
  uint64_t (*capture)(void);
  size_t (*describe)(uint64_t site, char *buf, size_t cap);
} sc_guard_sites_t;
extern sc_guard_sites_t sc__guard_sites;

#pragma GCC visibility pop

#endif /* SC_GUARD_H */
