/* SPDX-License-Identifier: MIT */
/* sys_record.h — a record of the system allocator's blocks the library
 * made: 32 bits of information per block (the tags: tag and owner). The
 * API is helper d's (hardening); until the merge the implementation is
 * src/core/sys_record_stub.c. */
#ifndef SC_SYS_RECORD_H
#define SC_SYS_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)
bool sc__sysrec_insert(const void *p, uint32_t info); /* false: p already recorded */
bool sc__sysrec_remove(const void *p,
                       uint32_t *info); /* false: p not recorded; else *info (may be NULL) */
bool sc__sysrec_lookup(const void *p, uint32_t *info);
void sc__sysrec_set_info(const void *p, uint32_t info);
#pragma GCC visibility pop

#endif /* SC_SYS_RECORD_H */
