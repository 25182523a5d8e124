/* SPDX-License-Identifier: MIT */
/* stats_dump.c — the report at exit (atexit) and on a signal, armed from
 * the SIZECLASS_STATS* settings (settings.c) when the library loads, and
 * again when sc_option_set() changes one.
 *
 * The report always arrives: a report to stderr or stdout goes through a
 * close-on-exec copy of that descriptor, made when the report is armed, so
 * a program that closes fd 2 at exit (coreutils do) or reuses the number
 * for a file of its own neither loses the report nor gets it in its file;
 * the copy is used only while it still refers to what fd 1 or 2 was. At
 * exit, stdio's buffers are flushed first (when no other thread holds
 * them), so that a report on stdout comes after everything the program
 * printed. A bad setting never stops the program: one "sizeclass:" line,
 * and the report falls back to text on stderr.
 *
 * The dump itself allocates nothing, takes no lock and opens its file by
 * path each time, so it works in a signal handler, with other threads
 * running and in a forked child (where %p is the child's pid). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/settings.h"
#include "report/report.h"
#include "util/os.h"
#include "util/path.h"

#define PATH_CAP 4096
/* The report's copy of fd 1 or 2 sits at or above this number, out of the
 * way of programs that expect their first files at 3, 4, ... */
#define COPY_FD_MIN 100

/* What to do, decided from the settings. */
static struct {
  bool at_exit;                /* dump when the process exits */
  int signo;                   /* dump on this signal; 0: none */
  enum sc_stats_format format; /* text or JSON */
  int fd;                      /* 1 or 2 when there is no path */
  char path[PATH_CAP];         /* absolute path template ("%p": pid); "" */
} cfg = {.fd = 2};

/* The report's own copy of cfg.fd, and what cfg.fd referred to then. */
static struct {
  int fd;     /* -1: none */
  int of;     /* the descriptor copied (1 or 2) */
  bool known; /* dev and ino were read */
  dev_t dev;
  ino_t ino;
} out_copy = {.fd = -1};

static bool exit_armed;              /* dump_at_exit is registered */
static int armed_signo;              /* the signal our handler is on; 0: none */
static struct sigaction prev_action; /* what that signal had before */

/* 1 while a dump runs: a signal during the exit dump (or another signal
 * dump) is dropped rather than interleaved. */
static _Atomic int dumping;

/* ---- the destination ---------------------------------------------------------- */

/** True when the report file can be written: we may create it (the test
 * file is removed again) or open the existing one for writing. */
static bool path_writable(const char *path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd >= 0) {
    close(fd);
    unlink(path);
    return true;
  }
  if (errno != EEXIST) return false;
  fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  close(fd);
  return true;
}

/** Store the path template, made absolute (the program may chdir later);
 * false, with a warning, when it is unusable. */
static bool set_path(const char *value) {
  char probe[PATH_CAP];
  size_t n = 0;
  static const char *const instead = "the report goes to stderr as text";
  if (value[0] != '/') {
    if (getcwd(cfg.path, PATH_CAP) == NULL) {
      sc__setting_warn(SC_SET_STATS, "cannot resolve the path", instead);
      return false;
    }
    n = strlen(cfg.path);
    if (n + 1 < PATH_CAP && (n == 0 || cfg.path[n - 1] != '/')) cfg.path[n++] = '/';
  }
  if (n + strlen(value) >= PATH_CAP) {
    sc__setting_warn(SC_SET_STATS, "the path is too long", instead);
    cfg.path[0] = 0;
    return false;
  }
  memcpy(cfg.path + n, value, strlen(value) + 1);
  if (!sc__expand_pid_path(probe, sizeof(probe), cfg.path, (uint64_t)getpid()) ||
      !path_writable(probe)) {
    sc__setting_warn(SC_SET_STATS, "cannot write there", instead);
    cfg.path[0] = 0;
    return false;
  }
  return true;
}

static bool ends_with_json(const char *s) {
  size_t n = strlen(s);
  return n >= 5 && strcasecmp(s + n - 5, ".json") == 0;
}

/** Keep a close-on-exec copy of fd (1 or 2) for the report, and what it is. */
static void keep_output(int fd) {
  if (out_copy.fd >= 0 && out_copy.of == fd) return;
  if (out_copy.fd >= 0) close(out_copy.fd);
  struct stat st;
  out_copy.of = fd;
  out_copy.known = fstat(fd, &st) == 0;
  out_copy.dev = out_copy.known ? st.st_dev : 0;
  out_copy.ino = out_copy.known ? st.st_ino : 0;
  out_copy.fd = out_copy.known ? fcntl(fd, F_DUPFD_CLOEXEC, COPY_FD_MIN) : -1;
  if (out_copy.known && out_copy.fd < 0) out_copy.fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
}

/** True when fd refers to the file out_copy was made of. */
static bool same_output(int fd) {
  struct stat st;
  return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == out_copy.dev && st.st_ino == out_copy.ino;
}

/** Where a report for fd (1 or 2) goes now: our copy while it is still
 * what fd was, else fd itself if it still is, else nowhere (-1): a
 * program that closed both and reused the numbers must not get the
 * report in its own files. */
static int output_fd(int fd) {
  if (!out_copy.known || out_copy.of != fd) return fd;
  if (same_output(out_copy.fd)) return out_copy.fd;
  if (same_output(fd)) return fd;
  return -1;
}

/** Flush the program's stdout and stderr, unless another thread is in the
 * middle of using them (never wait for it: exit must not hang). */
static void flush_stdio(void) {
  FILE *streams[] = {stdout, stderr};
  for (size_t i = 0; i < sizeof(streams) / sizeof(streams[0]); i++) {
    if (streams[i] == NULL || ftrylockfile(streams[i]) != 0) continue;
    fflush_unlocked(streams[i]);
    funlockfile(streams[i]);
  }
}

/* ---- the dump -------------------------------------------------------------------- */

/** Write one report to the configured destination. */
static void dump(sc_reason_t reason) {
  /* A forked child outside SIZECLASS_STATS_PID keeps quiet. */
  if (!sc__settings_report_here()) return;
  int expected = 0;
  if (!atomic_compare_exchange_strong(&dumping, &expected, 1)) return;
  int fd = cfg.fd;
  enum sc_stats_format format = cfg.format;
  bool opened = false;
  if (cfg.path[0] != 0) {
    char path[PATH_CAP];
    if (sc__expand_pid_path(path, sizeof(path), cfg.path, (uint64_t)getpid()))
      fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    else
      fd = -1;
    if (fd >= 0) {
      opened = true;
    } else {
      sc__setting_warn(SC_SET_STATS, "cannot write the report", "text to stderr");
      fd = 2;
      format = SC_STATS_TEXT;
    }
  }
  if (!opened) {
    if (reason == SC_REASON_EXIT) flush_stdio(); /* not from a signal handler */
    fd = output_fd(fd);
  }
  if (fd >= 0) sc__report_write(fd, format, reason, true);
  if (opened) close(fd);
  atomic_store(&dumping, 0);
}

static void dump_at_exit(void) {
  if (cfg.at_exit) dump(SC_REASON_EXIT);
}

static void dump_on_signal(int sig) {
  (void)sig;
  int saved = errno;
  dump(SC_REASON_SIGNAL);
  errno = saved;
}

/** A dump interrupted by fork() stays in the parent. */
static void fork_child(void) { atomic_store(&dumping, 0); }

/* ---- arming ------------------------------------------------------------------------ */

/** Put our handler on signo (0: none), giving the previous one back its
 * signal; false when the handler cannot be installed. */
static bool arm_signal(int signo) {
  if (signo == armed_signo) return true;
  if (armed_signo != 0) sigaction(armed_signo, &prev_action, NULL);
  armed_signo = 0;
  if (signo == 0) return true;
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = dump_on_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(signo, &sa, &prev_action) != 0) return false;
  armed_signo = signo;
  return true;
}

/** SIZECLASS_STATS_FORMAT, and the format a path's name implies. */
static void read_format(void) {
  sc_setting_state_t st = sc__setting_state(SC_SET_STATS_FORMAT);
  if (st == SC_SETTING_BAD) { /* the setting warned: text on stderr */
    cfg.format = SC_STATS_TEXT;
    cfg.path[0] = 0;
    cfg.fd = 2;
  } else if (st == SC_SETTING_GIVEN) {
    cfg.format =
        sc__setting(SC_SET_STATS_FORMAT) == SC_STATS_FORMAT_JSON ? SC_STATS_JSON : SC_STATS_TEXT;
  } else if (cfg.path[0] != 0 && ends_with_json(cfg.path)) {
    cfg.format = SC_STATS_JSON;
  }
}

void sc__stats_dump_configure(void) {
  memset(&cfg, 0, sizeof(cfg));
  cfg.fd = 2;
  if (sc__settings_report_here()) {
    uint64_t dest = sc__setting(SC_SET_STATS);
    sc_setting_state_t sig = sc__setting_state(SC_SET_STATS_SIGNAL);
    cfg.at_exit = dest != SC_STATS_OFF;
    if (dest == SC_STATS_STDOUT) cfg.fd = 1;
    if (dest == SC_STATS_FILE) (void)set_path(sc__setting_text(SC_SET_STATS));
    /* SIZECLASS_SITES alone: the report (with its sites) on stderr at exit. */
    if (!cfg.at_exit && sig != SC_SETTING_GIVEN && sc__sites_report_implied()) cfg.at_exit = true;
    read_format();
    /* A bad signal (it warned) arms nothing: no signal, and no report at
     * exit that the other settings did not ask for. */
    if (sig == SC_SETTING_GIVEN) cfg.signo = (int)sc__setting(SC_SET_STATS_SIGNAL);
  }
  if (!arm_signal(cfg.signo)) {
    sc__setting_warn(SC_SET_STATS_SIGNAL, "cannot catch it", "no report on a signal");
    cfg.signo = 0;
  }
  if ((cfg.at_exit || cfg.signo != 0) && !exit_armed) {
    /* Once: dump_at_exit reads cfg.at_exit when the process exits. */
    atexit(dump_at_exit);
    pthread_atfork(NULL, NULL, fork_child);
    exit_armed = true;
  }
  if ((cfg.at_exit || cfg.signo != 0) && cfg.path[0] == 0) keep_output(cfg.fd);
}

/* Armed once at load (its own constructor: the allocator core does not
 * depend on the report). */
__attribute__((constructor)) static void stats_on_load(void) { sc__stats_dump_configure(); }
