/* SPDX-License-Identifier: MIT */
/* seam.h — the features' decision, for the API (options.c,
 * sc_stats_enable_exact). What the features do for the core is their table
 * (core/hooks.h), filled in seam.c. */
#ifndef SC_FEATURES_SEAM_H
#define SC_FEATURES_SEAM_H

#include <stdbool.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

/** Turn features on before any arena exists; false if one already does. */
bool sc__seam_enable(uint32_t features);
/** sc_option_set changed `setting` (an sc_setting_id_t of settings.h whose
 * `when` is SC_WHEN_START): decide its feature again while that is off and
 * no arena exists; false when it is too late (the setting is then put
 * back). */
bool sc__seam_option(unsigned setting);

#pragma GCC visibility pop

#endif /* SC_FEATURES_SEAM_H */
