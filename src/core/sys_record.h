/* SPDX-License-Identifier: MIT */
/* sys_record.h — the exact record of the blocks the system route (glibc)
 * handed to the program: every block above SC_SMALL_MAX, and any other
 * system block the library passes on (the OOM fallback's small ones,
 * aligned requests). free, realloc and malloc_usable_size of a pointer
 * outside the segments ask it first: a pointer it does not know never
 * reaches glibc's free (fallback.c). Each record carries a 32-bit `info`
 * word the caller chooses (0 by default).
 *
 * Lock-free, allocation-free, any thread: a radix map keyed by address,
 * one tag byte per 1 KiB window (a block above 1 KiB is the only one to
 * start in its window while it lives; the byte holds its offset there),
 * its nodes mapped from the OS when first needed and installed with a
 * compare-and-swap; a small locked overflow table holds the rare second
 * start in one window (small system blocks), addresses that are not
 * 16-byte aligned and addresses above the map's 2^47. */
#ifndef SC_SYS_RECORD_H
#define SC_SYS_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

/** Record p with info. False: p is already recorded (then nothing
 * changes); also false, with nothing recorded, if the OS refuses the
 * memory for a node (the caller treats p as it would a recorded one). */
bool sc__sysrec_insert(const void *p, uint32_t info);
/** Forget p: false when p is not recorded; else *info (info may be NULL)
 * gets its word. (No lock: two threads removing one p at the very same
 * moment may both succeed.) */
bool sc__sysrec_remove(const void *p, uint32_t *info);
/** True when p is recorded; *info (info may be NULL) gets its word. */
bool sc__sysrec_lookup(const void *p, uint32_t *info);
/** p is recorded: change its info word (nothing when it is not). */
void sc__sysrec_set_info(const void *p, uint32_t info);
/** fork child: the overflow table's lock is free again. */
void sc__sysrec_fork_child(void);

#pragma GCC visibility pop

#endif /* SC_SYS_RECORD_H */
