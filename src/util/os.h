/* SPDX-License-Identifier: MIT */
/* os.h — every call into the operating system's memory, time and output
 * services (os.c), for every layer: the rest of the library never sees
 * mmap, clock_gettime, write or errno (each call keeps errno as it was). */
#ifndef SC_OS_H
#define SC_OS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

/** mmap `size` bytes aligned to `align`; NULL when the OS refuses. */
void *sc__os_map_aligned(size_t size, size_t align);
void sc__os_unmap(void *p, size_t size);
/** Return a range's physical memory to the OS; keeps it mapped. */
bool sc__os_purge(void *p, size_t size);
/** Map `size` bytes that cannot be touched (PROT_NONE, no swap reserved);
 * NULL when refused. */
void *sc__os_reserve(size_t size);
/** Make a range readable and writable, or untouchable; false on failure. */
bool sc__os_protect(void *p, size_t size, bool accessible);
/** Make a range of whole pages read-only (`writable` false) or readable
 * and writable again; false on failure. */
bool sc__os_protect_ro(void *p, size_t size, bool writable);
/** The system's page size (the auxiliary vector's; no call into libc that
 * could allocate). */
size_t sc__os_page_size(void);
/** CLOCK_MONOTONIC in nanoseconds. */
uint64_t sc__os_now_ns(void);
/** open(2), with the descriptor moved to 3 or above: one of the library's
 * own never takes the place of a standard stream the program closed
 * (where the program's writes to fd 2 would land in it). -1 on failure. */
int sc__os_open(const char *path, int flags, unsigned mode);
/** Write all of buf to fd, retrying on EINTR; never allocates. */
void sc__os_write_all(int fd, const char *buf, size_t len);

/** A last report's bound: send signo to the process in `seconds` (a
 * kernel timer, raw system calls: no allocation, safe in a signal
 * handler). Never disarmed: the process is ending. False when refused. */
bool sc__os_watchdog(int signo, unsigned seconds);

/** Give the calling thread an alternate signal stack of the library's own
 * (mapped, with an inaccessible page below it), unless it has one. */
void sc__os_altstack_ensure(void);
/** Take the calling thread's alternate stack away again, if it is ours
 * (at thread exit). */
void sc__os_altstack_release(void);

/** Register fork handlers, as pthread_atfork does; 0 on success. */
int sc__os_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void));

#pragma GCC visibility pop

#endif /* SC_OS_H */
