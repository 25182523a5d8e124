/* SPDX-License-Identifier: MIT */
/* report_sites.h — the allocation sites in the statistics report (text and
 * JSON, through the one emitter), and as folded stacks for flame graphs. */
#ifndef SC_REPORT_SITES_H
#define SC_REPORT_SITES_H

#include <stdbool.h>

#include "report/emit.h"
#include "sizeclass.h"

#pragma GCC visibility push(hidden)

/** The report's "site_sampling" and "sites" keys (text: the sites section);
 * null when sites are off. `may_lock`: not in a signal handler (names may
 * then also come from dladdr). st: the report's snapshot, whose exact class
 * figures calibrate sampled estimates. Never allocates. */
void sc__report_sites(sc_emitter_t *e, bool may_lock, const struct sc_stats *st);

/** Every site as one line of folded stacks ("outer;...;inner;[64 B] N",
 * N the estimated allocations) on fd. */
void sc__sites_write_folded(int fd, bool may_lock);

/** Write the folded stacks at exit when SIZECLASS_SITES_FORMAT=folded:
 * from the constructor, and when sc_option_set switches sites on. */
void sc__report_sites_arm(void);

#pragma GCC visibility pop

#endif /* SC_REPORT_SITES_H */
