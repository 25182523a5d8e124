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
/** Usable size of a block: its class size for class blocks, 0 for NULL. */
size_t sc_usable_size(const void *p);
/** True when p lies in a block carved from the size classes. */
bool sc_owns(const void *p);
/** Size class that a request of n bytes maps to (16..1024), 0 if n > 1024. */
size_t sc_class_size(size_t n);

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
#ifdef SC_FRAME_WEAK
#pragma weak sc_frame_mark
#define SC_FRAME_MARK() ((sc_frame_mark != 0) ? sc_frame_mark() : (void)0)
#else
#define SC_FRAME_MARK() sc_frame_mark()
#endif

#ifdef __cplusplus
}
#endif
#endif /* SIZECLASS_H */
