/* SPDX-License-Identifier: MIT */
/* stack.h — the call stack of an allocation, without allocating: the
 * program's frames above the library's own, as code addresses. */
#ifndef SC_STACK_H
#define SC_STACK_H

#include <stdbool.h>
#include <stdint.h>

#include "core/config.h" /* SC_UNWIND_DEPTH */

#pragma GCC visibility push(hidden)

/** Fill pcs[0..max) with the calling thread's stack, innermost first,
 * starting at the first frame outside libsizeclass (the program's call of
 * malloc and its callers); their count (0 when the unwinder found none).
 * Each entry is an address inside the call instruction (a return address
 * minus one, or the exact address of a signal frame), ready to symbolize.
 * Uses libgcc's _Unwind_Find_FDE and _Unwind_Backtrace, which do not
 * allocate, through the pointers of unwinder.h: 0 frames until
 * sc__unwinder_bind has bound them. The caller guards against re-entry
 * (an allocation made by the unwinder itself). */
unsigned sc__unwind(uintptr_t *pcs, unsigned max);
/** The same, walked by libgcc's _Unwind_Backtrace alone (what sc__unwind
 * falls back to for frames its cached rules do not cover). */
unsigned sc__unwind_libgcc(uintptr_t *pcs, unsigned max);

/** True when code address pc lies in libsizeclass's own code. */
bool sc__unwind_is_ours(uintptr_t pc);

#pragma GCC visibility pop

#endif /* SC_STACK_H */
