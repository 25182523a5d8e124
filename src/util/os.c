/* SPDX-License-Identifier: MIT */
/* os.c — every call into the operating system's memory, time and output
 * services lives here (os.h), so the rest of the library never sees mmap
 * or errno. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util/os.h"
#include "util/startup.h"

/** mmap anonymous memory; NULL (never MAP_FAILED) when refused. */
static void *map_anonymous(size_t size) {
  void *p =
      mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

void *sc__os_map_aligned(size_t size, size_t align) {
  int saved = errno;
  /* First try exactly size bytes: often the kernel hands out aligned runs. */
  uint8_t *p = map_anonymous(size);
  if (p == NULL) goto refused;
  if (((uintptr_t)p & (align - 1)) == 0) goto done;
  munmap(p, size);
  /* Over-allocate and trim both ends to the alignment. */
  p = map_anonymous(size + align);
  if (p == NULL) goto refused;
  uintptr_t start = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
  size_t head = start - (uintptr_t)p;
  size_t tail = align - head;
  if (head != 0) munmap(p, head);
  if (tail != 0) munmap((uint8_t *)start + size, tail);
  p = (uint8_t *)start;
done:
  errno = saved;
  return p;
refused:
  errno = saved;
  return NULL;
}

void sc__os_unmap(void *p, size_t size) {
  int saved = errno;
  munmap(p, size);
  errno = saved;
}

bool sc__os_purge(void *p, size_t size) {
  int saved = errno;
  /* MADV_DONTNEED: RSS drops at once and the range reads back as zeros. */
  bool ok = madvise(p, size, MADV_DONTNEED) == 0;
  errno = saved;
  return ok;
}

void *sc__os_reserve(size_t size) {
  int saved = errno;
  void *p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  errno = saved;
  return p == MAP_FAILED ? NULL : p;
}

bool sc__os_protect(void *p, size_t size, bool accessible) {
  int saved = errno;
  bool ok = mprotect(p, size, accessible ? PROT_READ | PROT_WRITE : PROT_NONE) == 0;
  errno = saved;
  return ok;
}

bool sc__os_protect_ro(void *p, size_t size, bool writable) {
  int saved = errno;
  bool ok = mprotect(p, size, writable ? PROT_READ | PROT_WRITE : PROT_READ) == 0;
  errno = saved;
  return ok;
}

size_t sc__os_page_size(void) {
  unsigned long n = getauxval(AT_PAGESZ);
  return n != 0 ? (size_t)n : 4096;
}

uint64_t sc__os_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void sc__os_write_all(int fd, const char *buf, size_t len) {
  int saved = errno;
  while (len > 0) {
    ssize_t w = write(fd, buf, len);
    if (w < 0) {
      if (errno == EINTR) continue;
      break;
    }
    buf += w;
    len -= (size_t)w;
  }
  errno = saved;
}

bool sc__os_watchdog(int signo, unsigned seconds) {
  int saved = errno;
  struct sigevent ev;
  memset(&ev, 0, sizeof(ev));
  ev.sigev_notify = SIGEV_SIGNAL;
  ev.sigev_signo = signo;
  int id = -1; /* the kernel's timer id (glibc's timer_t wraps it) */
  bool ok = syscall(SYS_timer_create, CLOCK_MONOTONIC, &ev, &id) == 0;
  if (ok) {
    struct itimerspec when;
    memset(&when, 0, sizeof(when));
    when.it_value.tv_sec = seconds;
    ok = syscall(SYS_timer_settime, id, 0, &when, NULL) == 0;
  }
  errno = saved;
  return ok;
}

/* The alternate stack: this much, with one inaccessible page below it (a
 * report needs some 30 KiB; the rest is never touched, so never backed). */
#define ALTSTACK_SIZE ((size_t)256 << 10)
#define ALTSTACK_GUARD ((size_t)4096)

static __thread void *altstack; /* our mapping, guard page first; NULL: none */

void sc__os_altstack_ensure(void) {
  if (altstack != NULL) return;
  int saved = errno;
  stack_t old;
  if (sigaltstack(NULL, &old) != 0 || (old.ss_flags & SS_DISABLE) == 0) goto done; /* has one */
  uint8_t *p = map_anonymous(ALTSTACK_GUARD + ALTSTACK_SIZE);
  if (p == NULL) goto done;
  mprotect(p, ALTSTACK_GUARD, PROT_NONE);
  stack_t st = {.ss_sp = p + ALTSTACK_GUARD, .ss_size = ALTSTACK_SIZE, .ss_flags = 0};
  if (sigaltstack(&st, NULL) != 0) {
    munmap(p, ALTSTACK_GUARD + ALTSTACK_SIZE);
    goto done;
  }
  altstack = p;
done:
  errno = saved;
}

void sc__os_altstack_release(void) {
  if (altstack == NULL) return;
  int saved = errno;
  stack_t cur;
  /* Only while it is still the thread's stack and not in use (a signal
   * handler running on it cannot have called this). */
  if (sigaltstack(NULL, &cur) == 0 && cur.ss_sp == (uint8_t *)altstack + ALTSTACK_GUARD &&
      (cur.ss_flags & SS_ONSTACK) == 0) {
    stack_t off = {.ss_flags = SS_DISABLE};
    if (sigaltstack(&off, NULL) == 0) munmap(altstack, ALTSTACK_GUARD + ALTSTACK_SIZE);
  }
  altstack = NULL;
  errno = saved;
}

/* glibc's registration of fork handlers, and this object's handle (the
 * handlers go when it is unloaded). pthread_atfork is a stub from
 * libc_nonshared.a that makes this one call; the linker puts it after the
 * library's last object, where calling it made a plain run touch a page of
 * code of its own (startup.h). */
extern int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void),
                             void *dso);
extern void *__dso_handle __attribute__((weak));

sc_startup int sc__os_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void)) {
  return __register_atfork(prepare, parent, child, &__dso_handle != NULL ? __dso_handle : NULL);
}

/** True while fd is still the file `was` (another thread of the program
 * may have put one of its own on that number since: a dup2). */
static bool fd_is(int fd, const struct stat *was) {
  struct stat now;
  return fstat(fd, &now) == 0 && now.st_dev == was->st_dev && now.st_ino == was->st_ino &&
         now.st_rdev == was->st_rdev;
}

int sc__os_open(const char *path, int flags, unsigned mode) {
  int saved = errno;
  /* A standard stream's number that is free is held by /dev/null (read
   * only: the program's writes to it fail as they would have) until the
   * file is open: another thread of the program writing to fd 2 meanwhile
   * never writes into the library's file. Each number is let go only if
   * it still holds what the library put there (a program thread may dup2
   * onto it meanwhile: its file stays). */
  int held[3], n = 0;
  struct stat null_st;
  for (int s = 0; s < 3; s++) {
    if (fcntl(s, F_GETFD) >= 0) continue;
    /* What /dev/null is, by its name: a number can change hands. */
    if (n == 0 && stat("/dev/null", &null_st) != 0) break;
    int h = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (h < 0) break;
    if (h > 2) {
      close(h);
      break;
    }
    held[n++] = h;
  }
  errno = saved;
  int fd = open(path, flags, mode);
  saved = errno;
  if (fd >= 0 && fd <= 2) { /* no /dev/null: moved, at least */
    struct stat mine;
    int high =
        fstat(fd, &mine) == 0 ? fcntl(fd, (flags & O_CLOEXEC) ? F_DUPFD_CLOEXEC : F_DUPFD, 3) : -1;
    if (high >= 0) {
      if (fd_is(fd, &mine)) close(fd);
      fd = high;
    }
  }
  for (int k = 0; k < n; k++)
    if (fd_is(held[k], &null_st)) close(held[k]);
  errno = saved;
  return fd;
}
