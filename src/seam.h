/* seam.h — the one place where optional features plug into allocation.
 *
 * Every optional feature (exact statistics today) is decided once, when
 * the process starts (sc__seam_decide, from sc__init): the environment,
 * the program's sizeclass_options string, or sc_stats_enable_exact()
 * before the first class allocation. While any is on, every thread's
 * fast-path slots point at nothing (arena.c: thread_bind), so each malloc
 * and each local free arrives here, out of line; with all of them off the
 * fast paths carry not one instruction of theirs. */
#ifndef SC_SEAM_H
#define SC_SEAM_H

#include "internal.h"

/** Decide which features are on; once, before the first arena exists. */
void sc__seam_decide(void);
/** malloc of n bytes (class c) by arena a's thread while features are on. */
void *sc__seam_alloc(sc_arena_t *a, size_t n, unsigned c);
/** free of block p of page, owned by the calling thread's arena a, while
 * features are on. */
void sc__seam_free_local(sc_arena_t *a, sc_page_t *page, void *p);
/** The features' work on a free of block p of another arena's page, by
 * arena me (NULL: a thread without one), before it goes on the owner's
 * remote list (arena.c calls it while features are on). */
void sc__seam_free_remote(sc_arena_t *me, sc_page_t *page, uintptr_t p);
/** The features' work on block p (NULL: the call failed) that the system
 * allocator made for a request of n bytes, and before the system allocator
 * frees block p (fallback.c calls them while features are on). */
void sc__seam_sys_alloc(void *p, size_t n);
void sc__seam_sys_free(void *p);
/** Turn features on before any arena exists; false if one already does. */
bool sc__seam_enable(uint32_t features);

#endif /* SC_SEAM_H */
