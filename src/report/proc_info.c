/* SPDX-License-Identifier: MIT */
/* proc_info.c — whose report it is (proc_info.h). Everything is read from
 * /proc/self with open/read/readlink and clock_gettime, all
 * async-signal-safe, into the caller's buffers. */
#include "report/proc_info.h"

#include <fcntl.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>
#include <unistd.h>

#include "util/os.h"

/** Read up to cap bytes of path into buf; the count, or -1. */
static long read_file(const char *path, char *buf, size_t cap) {
  int fd = sc__os_open(path, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return -1;
  size_t got = 0;
  while (got < cap) {
    ssize_t n = read(fd, buf + got, cap - got);
    if (n <= 0) break;
    got += (size_t)n;
  }
  close(fd);
  return (long)got;
}

/** Length of the UTF-8 character starting at s (n bytes left); 0 when the
 * bytes there are not one. */
static size_t utf8_char(const unsigned char *s, size_t n) {
  size_t len = s[0] < 0x80         ? 1
               : (s[0] >> 5) == 6  ? 2
               : (s[0] >> 4) == 14 ? 3
               : (s[0] >> 3) == 30 ? 4
                                   : 0;
  if (len == 0 || len > n) return 0;
  for (size_t i = 1; i < len; i++)
    if ((s[i] & 0xc0) != 0x80) return 0;
  return len;
}

/** Make buf[0..n) printable UTF-8 in place (each control character or
 * byte that is not UTF-8 becomes '?'), cut at a character boundary to at
 * most max bytes with "…" appended when cut; buf holds max + 4 bytes. In
 * place: every character keeps its length, so the output never overtakes
 * the input. */
void sc__proc_clean(char *buf, size_t n, size_t max) {
  size_t i = 0;
  while (i < n) {
    size_t len = utf8_char((const unsigned char *)buf + i, n - i);
    size_t take = len == 0 ? 1 : len;
    if (i + take > max) {
      memcpy(buf + i, "\xe2\x80\xa6", 3); /* U+2026 … */
      i += 3;
      break;
    }
    if (len == 0 || (len == 1 && ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f))) buf[i] = '?';
    i += take;
  }
  buf[i] = 0;
}

/** The start time (clock ticks after boot) from /proc/self/stat; false
 * when it cannot be read. */
static bool read_start(uint64_t *start_ticks) {
  char buf[512]; /* 52 numbers and a name of at most 16 bytes */
  long n = read_file("/proc/self/stat", buf, sizeof(buf) - 1);
  if (n <= 0) return false;
  buf[n] = 0;
  /* "pid (comm) state ppid ..." : comm may hold spaces and parentheses,
   * so the fields start after the last ')'. */
  char *p = strrchr(buf, ')');
  if (p == NULL) return false;
  p++;
  uint64_t field[20];
  for (unsigned f = 0; f < 20; f++) { /* fields 3 (state) .. 22 (starttime) */
    while (*p == ' ') p++;
    uint64_t v = 0;
    if (f == 0) { /* state: a letter */
      if (*p == 0) return false;
      p++;
    } else {
      if (*p < '0' || *p > '9') {
        if (*p != '-') return false;
        p++; /* a negative field (never one we read) */
      }
      for (; *p >= '0' && *p <= '9'; p++) v = v * 10 + (uint64_t)(*p - '0');
    }
    field[f] = v;
  }
  *start_ticks = field[19];
  return true;
}

static uint64_t clock_ms(clockid_t id) {
  struct timespec ts;
  if (clock_gettime(id, &ts) != 0) return 0;
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void sc__proc_info(sc_proc_info_t *out) {
  out->pid = (uint64_t)getpid();
  out->ppid = (uint64_t)getppid();
  out->have_start = false;
  out->start_unix_ms = 0;
  /* The start is worked out from two clocks read now, which may disagree
   * by a millisecond from one report to the next: the first answer is kept
   * (per process: a forked child starts anew), so that every report of a
   * process names the same start. */
  static uint64_t kept_pid, kept_start; /* read and written with __atomic_* */
  if (__atomic_load_n(&kept_pid, __ATOMIC_ACQUIRE) == out->pid) {
    out->start_unix_ms = __atomic_load_n(&kept_start, __ATOMIC_RELAXED);
    out->have_start = true;
  }
  uint64_t ticks;
  unsigned long hz = getauxval(AT_CLKTCK);
  if (!out->have_start && read_start(&ticks)) {
    uint64_t now = clock_ms(CLOCK_REALTIME), up = clock_ms(CLOCK_BOOTTIME);
    uint64_t started = ticks * 1000u / (hz != 0 ? hz : 100);
    if (now != 0 && up >= started && now > up - started) {
      out->start_unix_ms = now - (up - started);
      out->have_start = true;
      __atomic_store_n(&kept_start, out->start_unix_ms, __ATOMIC_RELAXED);
      __atomic_store_n(&kept_pid, out->pid, __ATOMIC_RELEASE);
    }
  }
  /* Read straight into the caller's buffers (a signal handler's stack is
   * small), then cleaned in place. */
  ssize_t n = readlink("/proc/self/exe", out->exe, sizeof(out->exe) - 4);
  out->have_exe = n > 0;
  sc__proc_clean(out->exe, n > 0 ? (size_t)n : 0, sizeof(out->exe) - 4);
  /* The command line: argv separated by NULs; one byte more than kept
   * tells whether it was cut. */
  long got = read_file("/proc/self/cmdline", out->cmdline, SC_CMDLINE_MAX + 1);
  if (got < 0) got = 0;
  while (got > 0 && out->cmdline[got - 1] == 0) got--; /* the last NUL ends argv */
  for (long i = 0; i < got; i++)
    if (out->cmdline[i] == 0) out->cmdline[i] = ' ';
  sc__proc_clean(out->cmdline, (size_t)got, SC_CMDLINE_MAX);
}

unsigned sc__proc_format_time(char *out, uint64_t unix_ms) {
  /* Days to a civil date (Howard Hinnant's days_from_civil, inverted). */
  uint64_t secs = unix_ms / 1000, ms = unix_ms % 1000;
  int64_t z = (int64_t)(secs / 86400) + 719468;
  uint64_t sod = secs % 86400;
  int64_t era = z / 146097;
  uint64_t doe = (uint64_t)(z - era * 146097);
  uint64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  uint64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  uint64_t mp = (5 * doy + 2) / 153;
  uint64_t d = doy - (153 * mp + 2) / 5 + 1;
  uint64_t m = mp < 10 ? mp + 3 : mp - 9;
  uint64_t y = (uint64_t)((int64_t)yoe + era * 400) + (m <= 2);
  uint64_t parts[] = {y, m, d, sod / 3600, sod / 60 % 60, sod % 60, ms};
  static const unsigned width[] = {4, 2, 2, 2, 2, 2, 3};
  static const char after[] = "-- ::.";
  unsigned n = 0;
  for (unsigned i = 0; i < 7; i++) {
    for (unsigned k = width[i]; k-- > 0;) {
      uint64_t v = parts[i];
      for (unsigned j = 0; j < k; j++) v /= 10;
      out[n++] = (char)('0' + v % 10);
    }
    if (i < 6) out[n++] = after[i];
  }
  memcpy(out + n, " UTC", 5);
  return n + 4;
}
