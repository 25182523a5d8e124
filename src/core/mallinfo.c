/* SPDX-License-Identifier: MIT */
/* mallinfo.c — glibc's mallinfo2 and mallinfo for the whole heap. A
 * program that watches its memory with them (a budget check, a log line
 * per level) would otherwise see glibc's heaps only: every block of at
 * most 1 KiB would be missing. The classes' figures are added to glibc's
 * as if their pages were one more arena: their bytes in `arena`, their
 * live blocks' bytes in `uordblks`, the rest of their pages in `fordblks`,
 * their free blocks in `ordblks`. Never from inside malloc; takes the
 * arena list's lock, as a statistics snapshot does. */
#include <malloc.h>
#include <string.h>

#include "core/internal.h"
#include "core/snapshot.h"

sc_cold void sc__mallinfo2(struct mallinfo2 *out) {
  sc__sys_mallinfo2(out);
  struct sc_class_stats classes[SC_CLASSES];
  sc__stats_classes(classes, false);
  for (unsigned c = 0; c < SC_CLASSES; c++) {
    const struct sc_class_stats *k = &classes[c];
    /* Counts of other threads move while they are read: never below 0. */
    uint64_t live =
        k->live_block_bytes < k->reserved_bytes ? k->live_block_bytes : k->reserved_bytes;
    uint64_t live_blocks =
        k->live_blocks < k->capacity_blocks ? k->live_blocks : k->capacity_blocks;
    out->arena += k->reserved_bytes;
    out->uordblks += live;
    out->fordblks += k->reserved_bytes - live;
    out->ordblks += k->capacity_blocks - live_blocks;
  }
}
