/* seam.h — the one place where optional features plug into allocation.
 *
 * Every optional feature (exact statistics, guard pages, the checking
 * mode) is decided once, when the process starts (sc__seam_decide, from
 * sc__init): the environment, the program's sizeclass_options string, or
 * sc_stats_enable_exact() before the first class allocation. While any is
 * on, every thread's malloc slots point at nothing (arena.c: thread_bind),
 * so each class malloc arrives here, out of line, and so does each local
 * free unless the features on leave frees alone (SC_FEATURES_SEE_FREES);
 * with all of them off the fast paths carry not one instruction of theirs.
 * Blocks a feature makes outside the segments (the guard pool) reach it
 * through the *_foreign hooks, which alloc.c asks while features are on
 * before it hands a pointer to the system allocator. */
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
/** aligned_alloc & co. of n bytes served from class c (align <= its size)
 * while features are on. */
void *sc__seam_memalign(size_t n, unsigned c, size_t align);
/** Before the owner takes a block from page on a slow path (arena.c:
 * refill) while features are on. */
void sc__seam_before_take(const sc_page_t *page);
/** free() of block p of another arena's page, while features are on,
 * before anything else: true when a feature kept it (quarantine). */
bool sc__seam_free_held(void *p, sc_page_t *page);
/** realloc() keeps class block p for n bytes (by arena a's thread; NULL:
 * one without an arena) while features are on. */
void sc__seam_resize(sc_arena_t *a, void *p, size_t n);
/** malloc_usable_size() of class block p, whose class size is `size`,
 * while features are on. */
size_t sc__seam_usable(const void *p, size_t size);
/** A pointer outside the segments, while features are on: true when it
 * belongs to a feature (the guard pool), which then did the call. */
bool sc__seam_free_foreign(void *p);
bool sc__seam_realloc_foreign(void *p, size_t n, void **out);
bool sc__seam_usable_foreign(const void *p, size_t *out);
bool sc__seam_owns_foreign(const void *p);
/** fork handlers of the features: 0 prepare, 1 parent, 2 child. */
void sc__seam_fork(int phase);
/** Turn features on before any arena exists; false if one already does. */
bool sc__seam_enable(uint32_t features);
/** sc_option_set changed `setting` (an sc_setting_id_t of settings.h whose
 * `when` is SC_WHEN_START): decide its feature again while that is off and
 * no arena exists; false when it is too late (the setting is then put
 * back). */
bool sc__seam_option(unsigned setting);

#endif /* SC_SEAM_H */
