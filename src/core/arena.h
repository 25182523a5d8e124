/* SPDX-License-Identifier: MIT */
/* arena.h — arenas and threads (arena.c): binding a
 * thread to an arena, refills, the pages' lists, cross-thread frees and
 * drains, the arena registry. */
#ifndef SC_ARENA_H
#define SC_ARENA_H

#include "core/types.h"

#pragma GCC visibility push(hidden)

extern sc_tls sc_thread_t sc__thread;
/** Placeholder page with no room, so current[] is never NULL. */
extern sc_page_t sc__empty_page;
/** Arena of the calling thread, adopting or creating one; NULL if refused. */
sc_arena_t *sc__arena_get(void);
/** The calling thread, which has no arena, used system blocks: see its
 * end all the same (its glibc arena's top: sys_top.c). */
void sc__arena_watch_exit(void);
/** True once the calling thread handed its arena on at its exit (an
 * arena it binds after that is borrowed for a free or two). */
bool sc__thread_has_exited(void);
/** Where the malloc fast path goes when its page has no block (and a
 * thread without an arena gets one): a request of n <= SC_SMALL_MAX bytes
 * served from the class of granule g (sc__bucket_of of n, or of the
 * alignment of an aligned request). */
void *sc__arena_alloc_slow(size_t n, size_t g);
/** A block of class c for arena a (the caller's), taken from its current
 * page or a new one, counted in the page; NULL when the OS refuses. */
void *sc__arena_refill(sc_arena_t *a, unsigned c);
/** A block of class c for arena a (the caller's) aligned to `align`
 * (above 2^SC_COLOUR_SHIFT, at most the class size: config.h's colours),
 * counted in its page (*where): from a page of the class whose colour is
 * a multiple of align, or a new page of colour 0; NULL when the OS
 * refuses. The features' hook sees the page before the take; *fresh says
 * whether the block was carved fresh. */
sc_block_t *sc__arena_take_aligned(sc_arena_t *a, unsigned c, size_t align, sc_page_t **where,
                                   bool *fresh);
/** An aligned request of n bytes (align as above) with no feature on:
 * sc__arena_take_aligned for the calling thread, else the system. */
void *sc__alloc_aligned(size_t n, unsigned c, size_t align);
/** When no segment can be had, the system allocator serves a request of n
 * bytes for class c, aligned to the class size so aligned requests stay
 * aligned (NULL with errno ENOMEM when it cannot). */
void *sc__alloc_from_system(size_t n, unsigned c);
/** Put every block of page, all free and none carved, on its free list in
 * a random order, and count them carved (SIZECLASS_HARDEN=random). */
void sc__page_shuffle(sc_page_t *page);
/** After a free (local or drained) into page left `used` <= 0 as a signed
 * number: the page was full, carries the purge trap, or is now empty. */
void sc__page_after_free(sc_page_t *page);
/** free() of a class block that the fast path did not take: another
 * arena's, ours while a feature sees every free, or not a block at all. */
void sc__free_other(void *p, sc_page_t *page);
/** The same, as sc__free_other_fn. */
void sc__free_other_any(void *p, sc_page_t *page, sc_arena_t *self);
/** A local free found block p's map byte not LIVE (sc__page_put_entry): a
 * sampled block (its feature sees it, then it is freed), or misuse (an
 * abort with a message). */
void sc__page_free_marked(void *p, sc_page_t *page);
/** Free of block p (of seg/page) owned by another arena: push it on the
 * owner's remote list, counted in the freeing thread's arena (remote.c). */
void sc__free_remote(uintptr_t p, sc_segment_t *seg, sc_page_t *page);
/** True when other threads gave blocks back to a (its remote list) or
 * pages (reclaimed): sc__arena_drain has work. Any thread may ask. */
static inline bool sc__arena_has_returns(const sc_arena_t *a) {
  return atomic_load_explicit(&a->remote_free, memory_order_relaxed) != 0 ||
         atomic_load_explicit(&a->reclaimed, memory_order_relaxed) != NULL ||
         atomic_load_explicit(&a->reclaim_stash, memory_order_relaxed) != 0;
}
/** Take owner x's remote list (x is another thread's arena; or what a
 * walk left of it), give back to the OS the memory of every page all of
 * whose blocks it holds, link those pages on x's reclaimed list (x's next
 * drain takes them back), and hand the other blocks back to x's remote
 * list. One walk at a time in the process (0 when one runs). Returns the
 * pages given back. */
size_t sc__remote_reclaim(sc_arena_t *x);
/** A purge step's look at the other live arenas (self: the caller's): the
 * first whose remote list has grown while its thread made no slow-path
 * call for idle_ns is reclaimed (one walk at a time in the process).
 * Returns the pages given back. */
size_t sc__remote_reclaim_idle(sc_arena_t *self, uint64_t now, uint64_t idle_ns);
/** Add d (1 or -1) to x's count of reclaimed pages of page's class (and
 * of coloured ones): a walker before it links the page, x's drain when it
 * takes it back. */
void sc__reclaimed_count(sc_arena_t *x, const sc_page_t *page, int d);
/** Push the chain head..tail (remote links: sc__remote_encode) on owner's
 * remote list with one CAS; returns the head it found there. */
uintptr_t sc__remote_push(sc_arena_t *owner, uintptr_t head, uintptr_t tail);
/** fork: the prepare handler waits for a reclaim walk to end and keeps
 * others from starting (reclaim.c); the parent's and the child's let go. */
void sc__remote_fork_prepare(void);
void sc__remote_fork_parent(void);
void sc__remote_fork_child(void);
/** Hand this thread's batched cross-thread frees to their owner. */
void sc__arena_flush_remote(sc_arena_t *a);
/** Call fn on each arena with the arena list locked. */
void sc__arenas_foreach(void (*fn)(sc_arena_t *, void *), void *ctx);
/** The same if the lock is free right now (true), else nothing (false). */
bool sc__arenas_try_foreach(void (*fn)(sc_arena_t *, void *), void *ctx);
/** Move the blocks other threads freed into a back to their pages; the
 * caller owns a, or holds the arena lock and a is abandoned. */
void sc__arena_drain(sc_arena_t *a);
/** Point current[c] at the head of class c's queue (or the empty page) and
 * keep the owner's fast-path slots in step; the head gets the purge trap
 * while armed. */
void sc__arena_refresh_current(sc_arena_t *a, unsigned c);
/** Point the calling thread's malloc slots of class c at page. */
void sc__thread_set_class(sc_thread_t *t, unsigned c, sc_page_t *page);
/** Arenas created, live (owned by a thread) and adoptions so far. */
void sc__arena_counts(uint64_t *created, uint64_t *live, uint64_t *adopted);
/** sc__arenas_foreach and sc__arena_counts without the lock, for the stats
 * dump (signal handlers, exit with threads running): the arena list only
 * grows at its head and arenas are never unmapped, so the walk is safe;
 * counts may be a moment stale. */
void sc__arenas_foreach_unlocked(void (*fn)(sc_arena_t *, void *), void *ctx);
void sc__arena_counts_unlocked(uint64_t *created, uint64_t *live, uint64_t *adopted);
/** Frees of class blocks by threads without an arena (they have nowhere
 * else to be counted), per class. */
extern _Atomic uint64_t sc__orphan_remote_frees[SC_CLASSES];
/** fork handlers. */
void sc__arena_fork_prepare(void);
void sc__arena_fork_parent(void);
void sc__arena_fork_child(void);

#pragma GCC visibility pop

#endif /* SC_ARENA_H */
