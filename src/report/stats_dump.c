/* SPDX-License-Identifier: MIT */
/* stats_dump.c — the report at exit (atexit) and on a signal, armed from
 * the SIZECLASS_STATS* settings (settings.c) when the library loads, and
 * again when sc_option_set() changes one; and the report's last words when
 * the run fails (docs/architecture.md, guarantee 12; docs/stats.md "When"):
 *   - the library's own aborts (core/harden.c calls what this file
 *     registers): reason "abort: <message>", then abort();
 *   - SIGTERM, SIGINT, SIGHUP, when the program left them at their default
 *     action: reason "terminated: SIGTERM", then the default action;
 *   - with SIZECLASS_STATS_ON_CRASH, SIGSEGV, SIGBUS, SIGILL, SIGFPE and
 *     SIGABRT: reason "crash: SIGSEGV" (on an alternate signal stack), then
 *     the default action;
 *   - _exit() and _Exit() (shim.c): reason "_exit".
 * One last report per process: an exit report is not followed by an
 * _exit or termination report, and an abort or crash report only by
 * nothing (an abort's own SIGABRT is not a second report). Clone and vfork
 * children (posix_spawn's), which share or copy our memory without fork's
 * handlers, never report: their pid is not the one this file noted.
 *
 * A report to stderr or stdout goes only where that stream was at startup
 * (util/stream.h): through a close-on-exec copy, made at startup when the
 * report is armed, or the descriptor itself while it still refers to the
 * same file. A stream closed at startup gets no report. At exit, stdio's
 * buffers are flushed first (when no other thread holds them), so that a
 * report on stdout comes after everything the program printed. A bad
 * setting never stops the program: one "sizeclass:" line, and the report
 * falls back to text on stderr.
 *
 * The dump itself allocates nothing, takes no lock and opens its file by
 * path each time, so it works in a signal handler, with other threads
 * running and in a forked child (where %p is the child's pid). A last
 * report is bounded: a kernel timer ends the process by the same signal
 * if it has not finished after WATCHDOG_S seconds, and a fault while an
 * abort's report runs aborts at once. */
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
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util/settings.h"
#include "report/report.h"
#include "util/os.h"
#include "util/path.h"
#include "util/signals.h"
#include "util/stream.h"
#include "util/startup.h"

#define PATH_CAP 4096
/* Seconds a last report may take before its process ends anyway. */
#define WATCHDOG_S 10

/* What to do, decided from the settings. */
static struct {
  bool at_exit;                /* dump when the process exits */
  bool on_crash;               /* SIZECLASS_STATS_ON_CRASH (with at_exit) */
  int signo;                   /* dump on this signal; 0: none */
  enum sc_stats_format format; /* text or JSON */
  int fd;                      /* 1 or 2 when there is no path */
  char path[PATH_CAP];         /* absolute path template ("%p": pid); "" */
} cfg = {.fd = 2};

static bool exit_armed;              /* dump_at_exit is registered */
static int armed_signo;              /* the signal our handler is on; 0: none */
static struct sigaction prev_action; /* what that signal had before */

/* The thread writing a report (kernel id); 0: none. A signal during the
 * exit dump (or another signal dump) is dropped rather than interleaved. */
static _Atomic long dumping;
/* A termination signal that arrived on the thread writing a report: raised
 * again once that report is whole (a second one ends the process at once). */
static _Atomic int term_deferred;

/* The last report written: 0 none, 1 the end of the run (exit, _exit,
 * termination), 2 its failure (abort, crash). A last report is written
 * only over a lower level: an abort in an atexit handler after the exit
 * report gets its report, an abort's SIGABRT or an _exit after exit()
 * no second one. */
static _Atomic int last_level;

/* The pid this file belongs to: noted at load and in fork's child. Another
 * pid means a clone or vfork child running on our memory: it never reports. */
static pid_t my_pid;

/* ---- the destination ---------------------------------------------------------- */

/** True when the report file can be written: we may create it (the test
 * file is removed again) or open the existing one for writing. */
static bool path_writable(const char *path) {
  int fd = sc__os_open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd >= 0) {
    close(fd);
    unlink(path);
    return true;
  }
  if (errno != EEXIST) return false;
  fd = sc__os_open(path, O_WRONLY | O_CLOEXEC, 0);
  if (fd < 0) return false;
  close(fd);
  return true;
}

/** The standard stream (1 or 2) that `path` names or is at startup
 * (/dev/stderr, /dev/fd/2, the file the shell sent stderr to), else 0:
 * that report goes to the stream, which is checked at the report as any
 * stream is (util/stream.h), never opened and truncated as a file of the
 * program's own. */
static int path_stream(const char *path) {
  static const char *const names[2][3] = {{"/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"},
                                          {"/dev/stderr", "/dev/fd/2", "/proc/self/fd/2"}};
  for (int s = 0; s < 2; s++)
    for (int k = 0; k < 3; k++)
      if (strcmp(path, names[s][k]) == 0) return s + 1;
  struct stat file, stream;
  if (stat(path, &file) != 0 || !S_ISREG(file.st_mode)) return 0;
  for (int s = 2; s >= 1; s--)
    if (fstat(s, &stream) == 0 && stream.st_dev == file.st_dev && stream.st_ino == file.st_ino)
      return s;
  return 0;
}

/** Store the path template, made absolute (the program may chdir later);
 * false, with a warning, when it is unusable. */
static bool set_path(const char *value) {
  char probe[PATH_CAP];
  size_t n = 0;
  static const char *const instead = "the report goes to stderr as text";
  int stream = path_stream(value);
  if (stream != 0) {
    cfg.fd = stream;
    cfg.path[0] = 0;
    return true;
  }
  if (value[0] != '/') {
    n = sc__path_cwd_prefix(cfg.path, PATH_CAP);
    if (n == 0) {
      sc__setting_warn(SC_SET_STATS, "cannot resolve the path", instead);
      return false;
    }
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

static bool in_clone_child(void) { return my_pid != 0 && getpid() != my_pid; }

/** Take the dump: false when another one runs. `wait`: a last report,
 * which waits (bounded) for another thread's dump to finish; a report
 * that interrupted this thread's own dump is dropped. */
static bool dump_begin(bool wait) {
  long me = syscall(SYS_gettid);
  for (int i = 0; i < 2000; i++) {
    long none = 0;
    if (atomic_compare_exchange_strong(&dumping, &none, me)) return true;
    if (!wait || none == me) return false;
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  return false;
}

/** Write one report to the configured destination. */
static void dump(sc_reason_t reason, const char *why) {
  /* A forked child outside SIZECLASS_STATS_PID keeps quiet; so does a
   * clone or vfork child. */
  if (!sc__settings_report_here() || in_clone_child()) return;
  if (!dump_begin(reason != SC_REASON_SIGNAL)) return;
  int fd = cfg.fd;
  enum sc_stats_format format = cfg.format;
  bool opened = false;
  if (cfg.path[0] != 0) {
    char path[PATH_CAP];
    if (sc__expand_pid_path(path, sizeof(path), cfg.path, (uint64_t)getpid()))
      fd = sc__os_open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
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
    int stream = fd;
    fd = sc__stream_fd(stream); /* -1: the stream was closed at startup, or is another file now */
    /* No report on stdout: say so on stderr, when that is still ours. (On
     * stderr itself nothing can be said.) */
    if (fd < 0 && stream == 1)
      sc__setting_warn(SC_SET_STATS,
                       sc__stream_was_open(1) ? "stdout is not what it was at startup"
                                              : "stdout was closed when the process started",
                       "no report");
  }
  if (fd >= 0) sc__report_write_why(fd, format, reason, why, true);
  if (opened) close(fd);
  atomic_store(&dumping, 0);
  int sig = atomic_load(&term_deferred);
  if (sig > 0 && atomic_compare_exchange_strong(&term_deferred, &sig, -sig)) raise(sig);
}

/** A last report, unless one of its level or higher was written. */
static void dump_last(sc_reason_t reason, const char *why) {
  if (in_clone_child()) return; /* it shares our memory: touch nothing */
  sc__live_remove();            /* the process ends: no live snapshot left behind */
  int level = reason == SC_REASON_ABORT || reason == SC_REASON_CRASH ? 2 : 1;
  int was = atomic_load(&last_level);
  do {
    if (was >= level) return;
  } while (!atomic_compare_exchange_weak(&last_level, &was, level));
  dump(reason, why);
}

static void dump_at_exit(void) {
  if (cfg.at_exit) dump_last(SC_REASON_EXIT, NULL);
}

static void dump_on_signal(int sig) {
  (void)sig;
  int saved = errno;
  dump(SC_REASON_SIGNAL, NULL);
  errno = saved;
}

/** A dump interrupted by fork() stays in the parent; the child has a pid
 * of its own. */
static void fork_child(void) {
  atomic_store(&dumping, 0);
  atomic_store(&term_deferred, 0);
  atomic_store(&last_level, 0);
  my_pid = getpid();
}

/** A report that ends the run while another thread writes one (the exit
 * report, say): let that one finish first (bounded), then end. */
static void wait_other_dump(void) {
  long me = syscall(SYS_gettid);
  for (int i = 0; i < 2000; i++) {
    long who = atomic_load(&dumping);
    if (who == 0 || who == me) return;
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
}

/* ---- last words: termination signals, crashes, aborts, _exit ------------------- */

static const struct {
  int signo;
  const char *name;
} sig_names[] = {
    {SIGTERM, "SIGTERM"}, {SIGINT, "SIGINT"}, {SIGHUP, "SIGHUP"}, {SIGSEGV, "SIGSEGV"},
    {SIGBUS, "SIGBUS"},   {SIGILL, "SIGILL"}, {SIGFPE, "SIGFPE"}, {SIGABRT, "SIGABRT"},
};
#define N_TERM 3 /* the first N_TERM of sig_names end a process; the rest crash it */
#define N_SIGS (sizeof(sig_names) / sizeof(sig_names[0]))

/* Per entry of sig_names: our handler is on it, and what it had before. */
static bool sig_armed[N_SIGS];
static struct sigaction sig_prev[N_SIGS];
/* A crash handler installed over the guard pages' handler calls it first. */
static void (*crash_chain[N_SIGS])(int, siginfo_t *, void *);

static unsigned sig_index(int sig) {
  unsigned i = 0;
  while (i < N_SIGS && sig_names[i].signo != sig) i++;
  return i;
}

/** True when handler fn is the action on sig now (the program did not
 * install its own since: if it calls ours, it chains to what it found). */
static bool action_is(int sig, void (*fn)(int, siginfo_t *, void *)) {
  struct sigaction cur;
  return sc__sig_action(sig, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) != 0 &&
         cur.sa_sigaction == fn;
}

/** The default action on sig again, and sig no longer blocked here: a
 * second one (or the watchdog's) ends the process at once. */
static void set_default(int sig, bool unblock) {
  struct sigaction dfl;
  memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sc__sig_action(sig, &dfl, NULL);
  sc__sig_hide(sig, false);
  if (unblock) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
  }
}

static void on_terminate(int sig, siginfo_t *si, void *ctx) {
  (void)si;
  (void)ctx;
  int saved = errno;
  bool ours = action_is(sig, on_terminate);
  /* This thread is writing a report: it finishes it first, then the
   * signal comes again (the watchdog bounds the wait). */
  int none = 0;
  if (ours && atomic_load(&dumping) == syscall(SYS_gettid) &&
      atomic_compare_exchange_strong(&term_deferred, &none, sig)) {
    sc__os_watchdog(sig, WATCHDOG_S);
    errno = saved;
    return;
  }
  set_default(sig, ours);
  if (ours) {
    sc__os_watchdog(sig, WATCHDOG_S);
    dump_last(SC_REASON_TERMINATED, sig_names[sig_index(sig)].name);
    wait_other_dump();
  }
  raise(sig); /* the default action: the process ends as it would have */
  errno = saved;
}

static void on_crash(int sig, siginfo_t *si, void *ctx) {
  int saved = errno;
  unsigned i = sig_index(sig);
  bool ours = action_is(sig, on_crash);
  /* A fault in the guard pages is theirs to report (and abort on). */
  if (ours && i < N_SIGS && crash_chain[i] != NULL && si->si_code > 0) crash_chain[i](sig, si, ctx);
  set_default(sig, ours);
  if (ours) {
    sc__os_watchdog(sig, WATCHDOG_S);
    dump_last(SC_REASON_CRASH, sig_names[i].name);
    wait_other_dump();
  }
  /* A fault happens again when the handler returns, now with the default
   * action; a signal that was sent (abort(), kill) is sent again. */
  if (si->si_code <= 0) raise(sig);
  errno = saved;
}

/** A fault while an abort's report runs: stop at once. */
static void on_report_fault(int sig, siginfo_t *si, void *ctx) {
  (void)si;
  (void)ctx;
  static const char msg[] = "sizeclass: the report faulted; aborting without it\n";
  sc__stream_write(2, msg, sizeof(msg) - 1);
  set_default(sig, false);
  set_default(SIGABRT, true);
  raise(SIGABRT);
}

/** The core's last words (registered at load): the library's own abort,
 * or the program's _exit. */
static void last_words(sc_last_t what, const char *why) {
  if (!in_clone_child()) sc__live_remove(); /* the process ends, reported or not */
  if (!cfg.at_exit) return;
  if (what == SC_LAST_EXIT) {
    dump_last(SC_REASON_QUICK_EXIT, NULL);
    wait_other_dump(); /* another thread's exit report, say: let it finish */
    return;
  }
  /* An abort, perhaps with metadata broken: a fault in the report aborts at
   * once (the faults unblocked: this may run in a fault handler), and a
   * report that takes too long is cut short by the watchdog. */
  struct sigaction sa, abrt;
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = on_report_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  sc__sig_action(SIGSEGV, &sa, NULL);
  sc__sig_action(SIGBUS, &sa, NULL);
  sigset_t faults;
  sigemptyset(&faults);
  sigaddset(&faults, SIGSEGV);
  sigaddset(&faults, SIGBUS);
  pthread_sigmask(SIG_UNBLOCK, &faults, NULL);
  bool abrt_default = sc__sig_action(SIGABRT, NULL, &abrt) == 0 &&
                      (((abrt.sa_flags & SA_SIGINFO) == 0 && abrt.sa_handler == SIG_DFL) ||
                       ((abrt.sa_flags & SA_SIGINFO) != 0 && abrt.sa_sigaction == on_crash));
  /* The program's own SIGABRT handler still runs at abort(): the bound is
   * then SIGKILL. */
  sc__os_watchdog(abrt_default ? SIGABRT : SIGKILL, WATCHDOG_S);
  dump_last(SC_REASON_ABORT, why);
}

/** Put fn on the signals sig_names[from, to) that still have their default
 * action (or, for a crash, the guard pages' handler, which ours calls
 * first); with !on, give back those where ours still is. */
static sc_startup void arm_last(unsigned from, unsigned to, bool on,
                                void (*fn)(int, siginfo_t *, void *)) {
  void *guard = sc__guard_fault_handler();
  for (unsigned i = from; i < to; i++) {
    int sig = sig_names[i].signo;
    if (!on || sig == cfg.signo) { /* SIZECLASS_STATS_SIGNAL may have it */
      if (sig_armed[i] && action_is(sig, fn)) sc__sig_action(sig, &sig_prev[i], NULL);
      if (sig_armed[i]) sc__sig_hide(sig, false);
      sig_armed[i] = false;
      continue;
    }
    struct sigaction cur;
    if (sig_armed[i] || sc__sig_action(sig, NULL, &cur) != 0) continue;
    bool dfl = (cur.sa_flags & SA_SIGINFO) == 0 && cur.sa_handler == SIG_DFL;
    bool guarded =
        guard != NULL && (cur.sa_flags & SA_SIGINFO) != 0 && (void *)cur.sa_sigaction == guard;
    if (!dfl && !guarded) continue; /* the program's handler (or SIG_IGN) stays */
    crash_chain[i] = guarded ? cur.sa_sigaction : NULL;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = fn;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sc__sig_action(sig, &sa, &sig_prev[i]) != 0) continue;
    sig_armed[i] = true;
    /* Over the default action, the program still reads the default
     * (shim/signal.c): a program that installs a handler only where it
     * finds the default (Python's SIGINT) keeps doing so. */
    sc__sig_hide(sig, dfl);
  }
}

/* ---- arming ------------------------------------------------------------------------ */

/** Put our handler on signo (0: none), giving the previous one back its
 * signal; false when the handler cannot be installed. */
static bool arm_signal(int signo) {
  if (signo == armed_signo) return true;
  if (armed_signo != 0) sc__sig_action(armed_signo, &prev_action, NULL);
  armed_signo = 0;
  if (signo == 0) return true;
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = dump_on_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sc__sig_action(signo, &sa, &prev_action) != 0) return false;
  armed_signo = signo;
  return true;
}

/** SIZECLASS_STATS_FORMAT, and the format a path's name implies. */
static sc_startup void read_format(void) {
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

sc_startup void sc__stats_dump_configure(void) {
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
    exit_armed = true;
  }
  /* The copy of stdout or stderr: made now, at startup (or, when
   * sc_option_set arms a report later, only if the descriptor is still
   * what it was at startup). */
  if ((cfg.at_exit || cfg.signo != 0) && cfg.path[0] == 0) sc__stream_keep(cfg.fd);
  /* The last words: on the termination signals the program leaves at their
   * default, and on the crash signals when asked. */
  cfg.on_crash = cfg.at_exit && sc__setting(SC_SET_STATS_ON_CRASH) != 0;
  arm_last(0, N_TERM, cfg.at_exit, on_terminate);
  arm_last(N_TERM, N_SIGS, cfg.on_crash, on_crash);
  if (cfg.on_crash) sc__altstacks_want(); /* a stack overflow's report needs its own */
}

/* Armed once at load (its own constructor: the allocator core does not
 * depend on the report). */
__attribute__((constructor)) static void stats_on_load(void) {
  sc__stream_record(); /* what stdout and stderr are at startup, if sc__init has not yet */
  my_pid = getpid();
  sc__os_atfork(NULL, NULL, fork_child);
  sc__last_words_register(last_words);
  sc__stats_dump_configure();
}
