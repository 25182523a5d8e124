/* SPDX-License-Identifier: MIT */
/* budget.h — budgets the running program enforces (docs/tags.md): live
 * block bytes (plus system-route bytes for total, tag and thread) of the
 * whole process, a tag, a class or a named thread against a limit, set by
 * SIZECLASS_BUDGET or sc_budget_set, checked at the tags' trigger (tags.h)
 * and on the system route, never on the fast path. */
#ifndef SC_BUDGET_H
#define SC_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/internal.h"
#include "core/snapshot.h" /* sc__budget_list, for the report */

#pragma GCC visibility push(hidden)
/** True when any budget is set. */
extern bool sc__budgets_set;
static inline bool sc__budgets_any(void) {
  return __atomic_load_n(&sc__budgets_set, __ATOMIC_RELAXED);
}
/** Parse SIZECLASS_BUDGET (one warning per bad entry); true when it set a budget. */
bool sc__budget_decide(void);
/** Check the budgets after arena a's row of tag t grew in class c (SC_CLASSES:
 * the system route) by an allocation of n bytes. */
void sc__budget_check(sc_arena_t *a, unsigned t, unsigned c, size_t n);
/** fork: 0 prepare, 1 parent, 2 child (the budgets' lock). */
void sc__budget_fork(int phase);
/** The limit of tag t's budget, of the thread called name (0: none). */
uint64_t sc__budget_of_tag(unsigned t);
uint64_t sc__budget_of_thread(const char *name);

#pragma GCC visibility pop

#endif /* SC_BUDGET_H */
