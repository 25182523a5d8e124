/* SPDX-License-Identifier: MIT */
/* rss.h — the one reader of this process's memory size for the tests, the
 * helper programs and the benchmarks: resident and virtual bytes from
 * /proc/self/statm. It allocates nothing and uses no stdio (open, read and
 * a hand-written parser only), so it may run inside an allocator test, in
 * a signal handler or while memory is exhausted. 0 when statm cannot be
 * read. Plain C and libc only: bench/ includes it as "../tests/rss.h". */
#ifndef SC_RSS_H
#define SC_RSS_H

#include <fcntl.h>
#include <stddef.h>
#include <unistd.h>

/** Field `index` (0: total program size, 1: resident) of /proc/self/statm,
 * in pages; 0 when it cannot be read. */
static inline size_t rss_statm_pages(unsigned index) {
  char buf[128];
  int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  const char *s = buf;
  for (unsigned field = 0; field < index; field++) {
    while (*s != 0 && *s != ' ') s++;
    while (*s == ' ') s++;
  }
  size_t pages = 0;
  for (; *s >= '0' && *s <= '9'; s++) pages = pages * 10 + (size_t)(*s - '0');
  return pages;
}

/** Resident set size of this process in bytes. */
static inline size_t rss_resident_bytes(void) {
  return rss_statm_pages(1) * (size_t)sysconf(_SC_PAGESIZE);
}

/** Virtual size (all mappings) of this process in bytes. */
static inline size_t rss_virtual_bytes(void) {
  return rss_statm_pages(0) * (size_t)sysconf(_SC_PAGESIZE);
}

#endif /* SC_RSS_H */
