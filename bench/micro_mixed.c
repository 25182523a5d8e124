/* SPDX-License-Identifier: MIT */
/* micro_mixed — micro's rounds with blocks of mixed sizes (issue 31's
 * held-out micro: 1000 blocks of mixed sizes freed in random order, as
 * `make bench-instr` runs it). The code is micro.c's; see there. */
#define MICRO_MIXED 1
#include "micro.c"
