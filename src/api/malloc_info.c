/* SPDX-License-Identifier: MIT */
/* malloc_info.c — glibc's malloc_stats and malloc_info for the whole heap.
 * glibc's own versions describe its heaps only, which under the library
 * hold the blocks above 1 KiB: every class block would be missing. Each
 * prints glibc's part as glibc does, then the classes' (mallinfo2's
 * figures, core/mallinfo.c, class by class). Public calls a program makes,
 * never reached from inside malloc: they use stdio, which allocates. */
#include <errno.h>
#include <stdbool.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/internal.h"
#include "core/libc_syms.h"
#include "core/snapshot.h"

/** One class's figures as mallinfo2 counts them (other threads' counts
 * move while they are read: live never above what the pages hold). */
typedef struct {
  uint64_t size, pages, reserved, blocks, live, live_bytes;
} class_figures_t;

static class_figures_t figures_of(const struct sc_class_stats *k) {
  class_figures_t f = {k->size,        k->pages,           k->reserved_bytes, k->capacity_blocks,
                       k->live_blocks, k->live_block_bytes};
  if (f.live > f.blocks) f.live = f.blocks;
  if (f.live_bytes > f.reserved) f.live_bytes = f.reserved;
  return f;
}

/** Every class's figures and their sum (size 0). */
static void classes_read(class_figures_t out[SC_CLASSES], class_figures_t *total) {
  struct sc_class_stats classes[SC_CLASSES];
  sc__stats_classes(classes, false);
  *total = (class_figures_t){0};
  for (unsigned c = 0; c < SC_CLASSES; c++) {
    out[c] = figures_of(&classes[c]);
    total->pages += out[c].pages;
    total->reserved += out[c].reserved;
    total->blocks += out[c].blocks;
    total->live += out[c].live;
    total->live_bytes += out[c].live_bytes;
  }
}

/** Where glibc's document ends: its last "</malloc>", or NULL. */
static const char *document_end(const char *doc, size_t len) {
  static const char close[] = "</malloc>";
  const char *end = NULL;
  for (const char *at = doc; (at = memmem(at, len - (size_t)(at - doc), close, sizeof close - 1));
       at++)
    end = at;
  return end;
}

/* glibc's document (its heaps, its totals: blocks above 1 KiB) with one
 * more element before its end, <sizeclass>: a <class> per class and their
 * <summary> (not <total>: that name is glibc's), figures in blocks and
 * bytes. Without glibc's, a document of that element alone. 0, or -1 with
 * errno EIO when the stream failed during the call. */
__attribute__((visibility("default"))) sc_cold int malloc_info(int options, FILE *fp) {
  if (options != 0) return EINVAL; /* glibc's answer, as of 2.36 */
  bool failed_before = ferror(fp) != 0;
  int (*glibcs)(int, FILE *) = (int (*)(int, FILE *))sc__libc_sym("malloc_info");
  char *doc = NULL;
  size_t len = 0;
  FILE *m = glibcs != NULL ? open_memstream(&doc, &len) : NULL;
  if (m != NULL) {
    int failed = glibcs(0, m);
    if (fclose(m) != 0 || failed != 0) len = 0;
  }
  const char *end = doc != NULL && len != 0 ? document_end(doc, len) : NULL;
  if (end != NULL)
    fwrite(doc, 1, (size_t)(end - doc), fp);
  else
    fputs("<malloc version=\"1\">\n", fp);
  free(doc);
  class_figures_t k[SC_CLASSES], t;
  classes_read(k, &t);
  fputs("<sizeclass version=\"1\">\n", fp);
  for (unsigned c = 0; c < SC_CLASSES; c++)
    fprintf(fp,
            "  <class size=\"%llu\" pages=\"%llu\" blocks=\"%llu\" live=\"%llu\" free=\"%llu\" "
            "system=\"%llu\" in_use=\"%llu\"/>\n",
            (unsigned long long)k[c].size, (unsigned long long)k[c].pages,
            (unsigned long long)k[c].blocks, (unsigned long long)k[c].live,
            (unsigned long long)(k[c].blocks - k[c].live), (unsigned long long)k[c].reserved,
            (unsigned long long)k[c].live_bytes);
  fprintf(fp,
          "  <summary pages=\"%llu\" blocks=\"%llu\" live=\"%llu\" free=\"%llu\" system=\"%llu\" "
          "in_use=\"%llu\"/>\n</sizeclass>\n</malloc>\n",
          (unsigned long long)t.pages, (unsigned long long)t.blocks, (unsigned long long)t.live,
          (unsigned long long)(t.blocks - t.live), (unsigned long long)t.reserved,
          (unsigned long long)t.live_bytes);
  if (!failed_before && ferror(fp)) {
    errno = EIO;
    return -1;
  }
  return 0;
}

/* glibc's lines (its arenas, to stderr), then the classes': a line per
 * class that has pages, their pages' bytes and their live blocks' bytes,
 * and last the whole heap's total as mallinfo2 counts it (glibc's heaps,
 * its mmapped blocks and the classes), in glibc's shape. */
__attribute__((visibility("default"))) sc_cold void malloc_stats(void) {
  void (*glibcs)(void) = (void (*)(void))sc__libc_sym("malloc_stats");
  flockfile(stderr); /* glibc's lines and ours together */
  if (glibcs != NULL) glibcs();
  class_figures_t k[SC_CLASSES], t;
  classes_read(k, &t);
  struct mallinfo2 all;
  sc__mallinfo2(&all);
  fprintf(stderr, "Size classes (libsizeclass, requests of 1024 B or less):\n");
  for (unsigned c = 0; c < SC_CLASSES; c++) {
    if (k[c].pages == 0) continue;
    fprintf(stderr, "class %4llu B: %6llu pages, %10llu blocks, %10llu in use\n",
            (unsigned long long)k[c].size, (unsigned long long)k[c].pages,
            (unsigned long long)k[c].blocks, (unsigned long long)k[c].live);
  }
  fprintf(stderr, "classes' system bytes = %10llu\nclasses' in use bytes = %10llu\n",
          (unsigned long long)t.reserved, (unsigned long long)t.live_bytes);
  fprintf(stderr,
          "Total (incl. mmap and size classes):\nsystem bytes     = %10llu\n"
          "in use bytes     = %10llu\n",
          (unsigned long long)all.arena + all.hblkhd,
          (unsigned long long)all.uordblks + all.hblkhd);
  funlockfile(stderr);
}
