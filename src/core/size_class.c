/* SPDX-License-Identifier: MIT */
/* size_class.c — the lookup table behind sc__class_of. */
#include "core/size_class.h"

/* Entry i is the class of requests of (i-1)*16+1 .. i*16 bytes: the smallest
 * power of two >= the request, 16 at least. Entry 0 is malloc(0) -> 16 B. */
const uint8_t sc__class_of_granule[SC_BUCKETS] = {
    0,                                              /* 0 */
    0,                                              /* 1..16 */
    1,                                              /* 17..32 */
    2, 2,                                           /* 33..64 */
    3, 3, 3, 3,                                     /* 65..128 */
    4, 4, 4, 4, 4, 4, 4, 4,                         /* 129..256 */
    5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, /* 257..512 */
    6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, /* 513..1024 */
    6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6,
};

_Static_assert(sizeof(sc__class_of_granule) == SC_BUCKETS, "one entry per bucket");
