/* SPDX-License-Identifier: MIT */
/* report_tags.h — the report's tags, threads and budgets (report_tags.c). */
#ifndef SC_REPORT_TAGS_H
#define SC_REPORT_TAGS_H

#include <stdbool.h>

#include "core/snapshot.h"
#include "report/emit.h"

#pragma GCC visibility push(hidden)
/** The tags, threads and budgets tables (JSON null each while tags are
 * off); at most max_rows tags and threads, those with the most live bytes. */
void sc__report_tags(sc_emitter_t *e, bool unlocked, unsigned max_rows);
/** A named snapshot's "tags" and "threads" (JSON null each when tags were
 * off when it was taken), in the shape of the report's own. */
void sc__report_named_tags(sc_emitter_t *e, const sc_named_t *n);
#pragma GCC visibility pop

#endif /* SC_REPORT_TAGS_H */
