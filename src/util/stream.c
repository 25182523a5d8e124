/* SPDX-License-Identifier: MIT */
/* stream.c — stdout and stderr as they were at startup (stream.h). */
#include "util/stream.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/os.h"
#include "util/startup.h"

/* The report's copy sits at or above this number, out of the way of
 * programs that expect their first files at 3, 4, ... */
#define COPY_FD_MIN 100

typedef struct {
  bool open; /* open at startup */
  dev_t dev;
  ino_t ino;
  _Atomic int copy; /* our close-on-exec copy; -1: none */
} stream_t;

static stream_t streams[3] = {{.copy = -1}, {.copy = -1}, {.copy = -1}};

/* 0: not recorded, 1: being recorded, 2: recorded. */
static _Atomic int recorded;

/** True when fd is open and refers to the file s was at startup. */
static bool same_file(const stream_t *s, int fd) {
  struct stat st;
  int saved = errno;
  bool same = fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == s->dev && st.st_ino == s->ino;
  errno = saved;
  return same;
}

sc_startup void sc__stream_record(void) {
  if (atomic_load_explicit(&recorded, memory_order_acquire) == 2) return;
  int expected = 0;
  if (!atomic_compare_exchange_strong(&recorded, &expected, 1)) {
    while (atomic_load_explicit(&recorded, memory_order_acquire) != 2) {
      /* another thread records: two fstat calls */
    }
    return;
  }
  int saved = errno;
  for (int fd = 1; fd <= 2; fd++) {
    struct stat st;
    streams[fd].open = fstat(fd, &st) == 0;
    streams[fd].dev = streams[fd].open ? st.st_dev : 0;
    streams[fd].ino = streams[fd].open ? st.st_ino : 0;
  }
  errno = saved;
  atomic_store_explicit(&recorded, 2, memory_order_release);
}

bool sc__stream_was_open(int fd) {
  sc__stream_record();
  return (fd == 1 || fd == 2) && streams[fd].open;
}

void sc__stream_keep(int fd) {
  if (!sc__stream_was_open(fd)) return;
  stream_t *s = &streams[fd];
  int copy = atomic_load_explicit(&s->copy, memory_order_acquire);
  if (copy >= 0 && same_file(s, copy)) return;
  if (!same_file(s, fd)) return; /* the number is not our stream any more */
  int saved = errno;
  int made = fcntl(fd, F_DUPFD_CLOEXEC, COPY_FD_MIN);
  if (made < 0) made = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  errno = saved;
  if (made < 0) return;
  /* An old copy that no longer refers to the stream is the program's
   * file now (it closed our number and reused it): left alone. */
  atomic_store_explicit(&s->copy, made, memory_order_release);
}

int sc__stream_fd(int fd) {
  if (!sc__stream_was_open(fd)) return -1;
  const stream_t *s = &streams[fd];
  int copy = atomic_load_explicit(&s->copy, memory_order_acquire);
  if (copy >= 0 && same_file(s, copy)) return copy;
  if (same_file(s, fd)) return fd;
  return -1;
}

void sc__stream_rebind(int fd) {
  if (fd != 1 && fd != 2) return;
  sc__stream_record();
  stream_t *s = &streams[fd];
  int copy = atomic_exchange_explicit(&s->copy, -1, memory_order_acq_rel);
  int saved = errno;
  if (copy >= 0 && same_file(s, copy)) close(copy);
  struct stat st;
  s->open = fstat(fd, &st) == 0;
  s->dev = s->open ? st.st_dev : 0;
  s->ino = s->open ? st.st_ino : 0;
  errno = saved;
}

void sc__stream_write(int fd, const char *buf, size_t len) {
  int to = sc__stream_fd(fd);
  if (to >= 0) sc__os_write_all(to, buf, len);
}
