/* SPDX-License-Identifier: MIT */
/* internal.h — what the core's files share, in one include: the types
 * (types.h), segments (segment.h), arenas (arena.h), the debug checks and
 * misuse messages (debug.h), and here the process secrets and link
 * encoding (init.c), and the system allocator's route (fallback.c,
 * sys_trim.c). Names: sc_ is public (include/), sc__ is internal but
 * shared between files, static functions carry no prefix. What the core
 * calls in the features is hooks.h; what the report reads is snapshot.h. */
#ifndef SC_INTERNAL_H
#define SC_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/config.h"
#include "core/debug.h"
#include "core/segment.h"
#include "core/types.h"
#include "util/os.h"

/* Everything declared from here on is internal to the library: hidden, so
 * that its variables are read without a detour through the GOT. */
#pragma GCC visibility push(hidden)

/* ---- init.c ---------------------------------------------------------- */
/** Odd secret multiplier of the link keys (sc__encode); set once at init. */
extern uintptr_t sc__secret;
/** Secrets of the checking mode's free keys only (sc__free_key): reading a
 * freed block's key (a use-after-free read) must not reveal a link key. */
extern uintptr_t sc__key_secret;
extern uintptr_t sc__key_mult;
/** Secret mixed into remote-free links (sc__remote_encode). */
extern uintptr_t sc__remote_secret;
/** Secret the features' sampling generators start from (util/rng.h: the
 * guard pages, the allocation sites). Which allocations are sampled is
 * visible to the program, and the seeding mix is reversible, so sampling
 * has a secret of its own that no free-list key is made from. */
extern uintptr_t sc__sample_secret;
/** A fresh secret for a page taking a class (its `key`). */
uintptr_t sc__page_key_new(const sc_page_t *page);
/** SIZECLASS_HARDEN=random: pages hand their blocks out in a random order
 * (sc__page_shuffle); set once at init. */
extern bool sc__random_placement;
/** Make the process-wide state ready; cheap and idempotent. */
void sc__init(void);

/* ---- fallback.c (the system allocator) -------------------------------- */
/** The version glibc gives its allocator's symbols on x86-64: another
 * library's unversioned definitions never match it (dlvsym; dlopen of libc
 * would work too, but it allocates). */
#define SC_GLIBC_BASE_VERSION "GLIBC_2.2.5"
/** Counters of threads without an arena, and with exact statistics the
 * process-wide live and peak bytes (atomics). */
typedef struct sc_fallback_shared_s {
  _Atomic uint64_t allocs, frees, malloc_calls, realloc_calls, aligned_calls;
  _Atomic uint64_t bytes_total, bytes_freed;
  _Atomic uint64_t live_bytes, peak_live_bytes; /* exact statistics only */
} sc_fallback_shared_t;
extern sc_fallback_shared_t sc__fallback_shared;
/** Look up the system allocator's helpers that have no __libc_ alias; run
 * from the constructor (never from inside malloc). */
void sc__sys_bind(void);
/** Have glibc set its malloc up now, on one thread: glibc does that
 * lazily in its first malloc call, unsafely when several threads make
 * their first calls at once (threads can all but avoid glibc's malloc
 * under this library until then). Called once, from sc__init. */
void sc__sys_start(void);
/** Work out again whether the system route may skip its unusual cases
 * (glibc's headers, no feature on): after the features change. */
void sc__sys_refresh(void);
void *sc__sys_malloc(size_t n);
void *sc__sys_calloc(size_t count, size_t size);
void *sc__sys_realloc(void *p, size_t n);
void *sc__sys_memalign(size_t align, size_t n);
void sc__sys_free(void *p);
size_t sc__sys_usable_size(const void *p);
struct mallinfo2;
/** glibc's mallinfo2: its figures for the blocks it holds (ours above
 * 1 KiB, and what it made before the library loaded). */
void sc__sys_mallinfo2(struct mallinfo2 *out);
/** mallinfo2 for the whole heap: glibc's figures and the classes'
 * (mallinfo.c). */
void sc__mallinfo2(struct mallinfo2 *out);
/** Copy every field of a struct mallinfo or mallinfo2 into the other,
 * each cast to `type` on the way (int for mallinfo, whose fields wrap
 * past 2 GiB as glibc's own do; unsigned from it). */
#define SC_MALLINFO_COPY(to, from, type)   \
  do {                                     \
    (to).arena = (type)(from).arena;       \
    (to).ordblks = (type)(from).ordblks;   \
    (to).smblks = (type)(from).smblks;     \
    (to).hblks = (type)(from).hblks;       \
    (to).hblkhd = (type)(from).hblkhd;     \
    (to).usmblks = (type)(from).usmblks;   \
    (to).fsmblks = (type)(from).fsmblks;   \
    (to).uordblks = (type)(from).uordblks; \
    (to).fordblks = (type)(from).fordblks; \
    (to).keepcost = (type)(from).keepcost; \
  } while (0)

/* ---- sys_trim.c (when the system allocator gives memory back) ---------- */
/** Set glibc's thresholds for the paced policy (or leave glibc's own, if
 * the user chose); from the constructor. */
void sc__sys_trim_init(void);
/** Bytes of system blocks a thread frees before it looks whether a trim
 * is due. */
#define SC_SYS_TRIM_DEBT ((uint64_t)16 << 20)
/** A thread has freed SC_SYS_TRIM_DEBT bytes of system blocks since it
 * last looked: trim glibc's heaps if the paced policy is in force and that
 * much of them has stayed free for the purge delay (sys_trim.c). */
void sc__sys_trim_poll(void);
/** A purge step of a, the calling thread's arena (purge.c; `now` from
 * sc__os_now_ns): under the paced policy, one look every 25 ms among all
 * the arenas' steps, as a thread's look after freeing SC_SYS_TRIM_DEBT
 * bytes, and the shrink of the thread's own glibc heap after a trim (two
 * loads and compares otherwise). */
void sc__sys_trim_tick(sc_arena_t *a, uint64_t now);
/** glibc's trim threshold under the paced policy: glibc never trims a
 * heap on its own below it (effectively never). */
#define SC_SYS_TRIM_THRESHOLD (1 << 30)
/** glibc's mallopt, under a name the library does not define (glibc's: not
 * hidden like the rest of this header). */
extern int __libc_mallopt(int param, int value) __attribute__((visibility("default")));
/** A thread without an arena freed `bytes` of system blocks (one shared,
 * atomic count of them). */
void sc__sys_trim_freed_shared(uint64_t bytes);
/** glibc's malloc_trim, when found (the constructor looks); 0 otherwise. */
int sc__sys_trim(size_t pad);
/** The program's trim (malloc_trim, sc_trim): glibc's malloc_trim, and
 * under the paced policy every thread that used system blocks shrinks its
 * own glibc arena's top, this one at once, the others at their next purge
 * step. */
int sc__sys_trim_now(size_t pad);
/** The paced policy stops (the program's mallopt). */
void sc__sys_trim_stop(void);
/** True when the paced policy is in force; paced trims so far. */
bool sc__sys_trim_paced(void);
uint64_t sc__sys_trim_count(void);

/* ---- sys_top.c (glibc's thread arenas' tops, glibc's trim threshold) ---- */
/** Fork handlers around the threshold; once the paced policy is on. */
void sc__sys_top_init(void);
/** True when the program set a glibc threshold with mallopt. */
bool sc__sys_top_chosen(void);
/** A trim (paced, or the program's): every thread shrinks its glibc
 * arena's top at its next sc__sys_top_follow. */
void sc__sys_top_trimmed(void);
/** The calling thread bound arena a: the trims before now are not its to
 * follow (unless it used system blocks before it had an arena). */
void sc__sys_top_bind(sc_arena_t *a);
/** The calling thread (a: its arena, or NULL) follows the trims it has not:
 * it shrinks its glibc arena's top if it used system blocks since it last
 * did (a load and a compare otherwise). */
void sc__sys_top_follow(sc_arena_t *a);
/** The calling thread ends: its glibc arena's top goes back if
 * SC_SYS_TRIM_DEBT or more of it is free and the thread used system
 * blocks since it last shrank it. */
void sc__sys_top_thread_exit(sc_arena_t *a);
/** mallopt: glibc's; a program's own trim or mmap threshold or top pad
 * stops the paced policy first. */
int sc__mallopt(int param, int value);

/* Free-list link encoding: the word stored in the block at `slot` is its
 * target xor a key made of the page's own secret and the slot's address,
 * (slot ^ page->key) * sc__secret: one link read through a use-after-free
 * (its target guessed) gives the product for that slot only, which says
 * nothing of another slot's or page's key without the two secrets
 * (docs/hardening.md). The list end is encoded like any link. */
static inline uintptr_t sc__link_key(const void *slot, const sc_page_t *page) {
  return ((uintptr_t)slot ^ page->key) * sc__secret;
}
static inline uintptr_t sc__encode(const sc_block_t *next, const void *slot,
                                   const sc_page_t *page) {
#if SC_HARDEN
  return (uintptr_t)next ^ sc__link_key(slot, page);
#else
  (void)slot, (void)page;
  return (uintptr_t)next;
#endif
}
static inline sc_block_t *sc__decode(uintptr_t word, const void *slot, const sc_page_t *page) {
#if SC_HARDEN
  return (sc_block_t *)(word ^ sc__link_key(slot, page));
#else
  (void)slot, (void)page;
  return (sc_block_t *)word;
#endif
}
/* The links of a remote-free list (arena.c): the freeing thread must not
 * read the owner's line, so the key is made of process secrets and the
 * slot alone. */
static inline uintptr_t sc__remote_encode(uintptr_t next, const void *slot) {
#if SC_HARDEN
  return next ^ (((uintptr_t)slot ^ sc__remote_secret) * sc__secret);
#else
  (void)slot;
  return next;
#endif
}
static inline uintptr_t sc__remote_decode(uintptr_t word, const void *slot) {
  return sc__remote_encode(word, slot); /* an xor: its own inverse */
}
/** Key the checking mode stores in a free block: unique per block so
 * copies don't match, and one read tells nothing of another block's key;
 * never 0 (a live block's key word). */
static inline uintptr_t sc__free_key(const void *b) {
  return (((uintptr_t)b ^ sc__key_secret) * sc__key_mult) | 1;
}

#pragma GCC visibility pop

#endif /* SC_INTERNAL_H */
