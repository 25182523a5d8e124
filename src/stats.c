/* stats.c — statistics snapshot and report (placeholder until the report
 * lands). */
#include "internal.h"

void sc__stats_on_load(void) {}
