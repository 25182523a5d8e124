/* SPDX-License-Identifier: MIT */
/* proc_info.h — whose report it is: the process's pid, parent, program,
 * command line and start time, read when a report is written (from
 * /proc/self, with async-signal-safe calls only: no allocation, no lock),
 * so that a forked child or a signal report names itself. */
#ifndef SC_PROC_INFO_H
#define SC_PROC_INFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

/** Bytes of the command line kept; a longer one is cut (at a character
 * boundary) and gets "…" appended. */
#define SC_CMDLINE_MAX 256

typedef struct sc_proc_info_s {
  uint64_t pid, ppid;
  bool have_exe;                    /* exe was read */
  bool have_start;                  /* start_unix_ms was read */
  uint64_t start_unix_ms;           /* when the process started, ms since the epoch (UTC) */
  char exe[1024];                   /* the /proc/self/exe link: the program's path */
  char cmdline[SC_CMDLINE_MAX + 4]; /* argv joined by spaces, cut (see above) */
} sc_proc_info_t;

/** Fill *out for the calling process. Printable UTF-8 only: control
 * characters and bytes that are not UTF-8 become '?'. */
void sc__proc_info(sc_proc_info_t *out);

/** Make buf[0..n) printable UTF-8 in place (each control character or
 * byte that is not UTF-8 becomes '?'), cut at a character boundary to at
 * most max bytes with "…" appended when cut, NUL-terminated; buf holds
 * max + 4 bytes. */
void sc__proc_clean(char *buf, size_t n, size_t max);

/** "YYYY-MM-DD HH:MM:SS.mmm UTC" of ms since the epoch into out (>= 32
 * bytes); its length. */
unsigned sc__proc_format_time(char *out, uint64_t unix_ms);

#pragma GCC visibility pop

#endif /* SC_PROC_INFO_H */
