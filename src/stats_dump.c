/* stats_dump.c — the SIZECLASS_STATS* switches: read once at load, they arm
 * a report at exit (atexit) and on a signal. A bad value never stops the
 * program: one "sizeclass:" line on stderr, and the report falls back to
 * text on stderr. The dump itself allocates nothing, takes no lock and
 * opens its file by path each time, so it works in a signal handler, with
 * other threads running and in a forked child (where %p is the child's
 * pid). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "sites.h"
#include "stats.h"

#define PATH_CAP 4096

/* What to do, decided at load. */
static struct {
  bool at_exit;                /* dump when the process exits */
  int signo;                   /* dump on this signal; 0: none */
  enum sc_stats_format format; /* text or JSON */
  int fd;                      /* 1 or 2 when there is no path */
  char path[PATH_CAP];         /* absolute path template ("%p": pid); "" */
} cfg = {.fd = 2};

/* 1 while a dump runs: a signal during the exit dump (or another signal
 * dump) is dropped rather than interleaved. */
static _Atomic int dumping;

/* ---- messages ---------------------------------------------------------------- */

/* A bounded message buffer (no allocation). */
typedef struct {
  char buf[320];
  size_t len;
} msg_t;

/** Append s, at most `max` bytes of it, control characters made '?'. */
static void msg_add(msg_t *m, const char *s, size_t max) {
  for (size_t i = 0; i < max && s[i] && m->len < sizeof(m->buf) - 1; i++) {
    char ch = s[i];
    if ((unsigned char)ch < 0x20) ch = '?';
    m->buf[m->len++] = ch;
  }
  m->buf[m->len] = 0;
}

/** One "sizeclass: NAME=VALUE: WHAT" line on stderr. */
static void warn_value(const char *name, const char *value, const char *what) {
  msg_t m = {.len = 0};
  msg_add(&m, name, 64);
  msg_add(&m, "=", 1);
  msg_add(&m, value, 160);
  msg_add(&m, ": ", 2);
  msg_add(&m, what, 128);
  sc__warn(m.buf);
}

/* ---- the destination ---------------------------------------------------------- */

/** out = tmpl with %p replaced by pid and %% by %; false if it won't fit. */
bool sc__expand_pid_path(char *out, size_t cap, const char *tmpl, uint64_t pid) {
  size_t n = 0;
  for (const char *t = tmpl; *t; t++) {
    char digits[24];
    size_t k = 0;
    if (t[0] == '%' && t[1] == 'p') {
      uint64_t v = pid; /* every %p gets the whole pid */
      do digits[k++] = (char)('0' + v % 10);
      while ((v /= 10) != 0);
      if (n + k >= cap) return false;
      while (k > 0) out[n++] = digits[--k];
      t++;
      continue;
    }
    if (t[0] == '%' && t[1] == '%') t++;
    if (n + 1 >= cap) return false;
    out[n++] = *t;
  }
  out[n] = 0;
  return true;
}

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
  if (value[0] != '/') {
    if (getcwd(cfg.path, PATH_CAP) == NULL) {
      warn_value("SIZECLASS_STATS", value, "cannot resolve the path; writing text to stderr");
      return false;
    }
    n = strlen(cfg.path);
    if (n + 1 < PATH_CAP && (n == 0 || cfg.path[n - 1] != '/')) cfg.path[n++] = '/';
  }
  if (n + strlen(value) >= PATH_CAP) {
    warn_value("SIZECLASS_STATS", value, "path too long; writing text to stderr");
    cfg.path[0] = 0;
    return false;
  }
  memcpy(cfg.path + n, value, strlen(value) + 1);
  if (!sc__expand_pid_path(probe, sizeof(probe), cfg.path, (uint64_t)getpid()) ||
      !path_writable(probe)) {
    warn_value("SIZECLASS_STATS", value, "cannot write there; writing text to stderr");
    cfg.path[0] = 0;
    return false;
  }
  return true;
}

static bool ends_with_json(const char *s) {
  size_t n = strlen(s);
  return n >= 5 && strcasecmp(s + n - 5, ".json") == 0;
}

/* ---- the dump -------------------------------------------------------------------- */

/** Write one report to the configured destination. */
static void dump(sc_reason_t reason) {
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
      warn_value("SIZECLASS_STATS", cfg.path, "cannot write the report; text to stderr");
      fd = 2;
      format = SC_STATS_TEXT;
    }
  }
  sc__report_write(fd, format, reason, true);
  if (opened) close(fd);
  atomic_store(&dumping, 0);
}

static void dump_at_exit(void) { dump(SC_REASON_EXIT); }

static void dump_on_signal(int sig) {
  (void)sig;
  int saved = errno;
  dump(SC_REASON_SIGNAL);
  errno = saved;
}

/** A dump interrupted by fork() stays in the parent. */
static void fork_child(void) { atomic_store(&dumping, 0); }

/* ---- signals ------------------------------------------------------------------------ */

static const struct {
  const char *name;
  int signo;
} signals[] = {
    {"HUP", SIGHUP},       {"INT", SIGINT},   {"QUIT", SIGQUIT},   {"USR1", SIGUSR1},
    {"USR2", SIGUSR2},     {"PIPE", SIGPIPE}, {"ALRM", SIGALRM},   {"TERM", SIGTERM},
    {"CHLD", SIGCHLD},     {"CONT", SIGCONT}, {"TSTP", SIGTSTP},   {"TTIN", SIGTTIN},
    {"TTOU", SIGTTOU},     {"URG", SIGURG},   {"XCPU", SIGXCPU},   {"XFSZ", SIGXFSZ},
    {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF}, {"WINCH", SIGWINCH}, {"IO", SIGIO},
    {"PWR", SIGPWR},       {"SYS", SIGSYS},
};

/** Parse a decimal number of at most 3 digits; -1 if s is not one. */
static int small_number(const char *s) {
  int v = 0, n = 0;
  for (; *s; s++, n++) {
    if (*s < '0' || *s > '9' || n == 3) return -1;
    v = v * 10 + (*s - '0');
  }
  return n ? v : -1;
}

/** Signal number of a name ("USR2", "SIGUSR2", "usr2", "RTMIN+3", "12");
 * 0 when unknown or unsuitable (a fault signal, KILL, STOP). */
static int signal_of(const char *value) {
  const char *s = value;
  if (strncasecmp(s, "SIG", 3) == 0) s += 3;
  int n = small_number(s);
  if (n < 0) {
    for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++)
      if (strcasecmp(s, signals[i].name) == 0) n = signals[i].signo;
    if (strncasecmp(s, "RTMIN", 5) == 0 && (s[5] == 0 || s[5] == '+'))
      n = SIGRTMIN + (s[5] ? small_number(s + 6) : 0);
    if (strncasecmp(s, "RTMAX", 5) == 0 && (s[5] == 0 || s[5] == '-'))
      n = SIGRTMAX - (s[5] ? small_number(s + 6) : 0);
  }
  bool rt = n >= SIGRTMIN && n <= SIGRTMAX;
  for (size_t i = 0; !rt && i < sizeof(signals) / sizeof(signals[0]); i++)
    if (signals[i].signo == n) return n;
  return rt ? n : 0;
}

static bool arm_signal(int signo) {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = dump_on_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  return sigaction(signo, &sa, NULL) == 0;
}

/* ---- the switches --------------------------------------------------------------------- */

/** SIZECLASS_STATS: off, stderr, stdout, or a path. */
static void read_destination(const char *v) {
  static const char *const off[] = {"", "0", "off", "no", "false"};
  static const char *const on[] = {"1", "stderr", "on", "yes", "true"};
  for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++)
    if (strcasecmp(v, off[i]) == 0) return;
  cfg.at_exit = true;
  for (size_t i = 0; i < sizeof(on) / sizeof(on[0]); i++)
    if (strcasecmp(v, on[i]) == 0) return;
  if (strcasecmp(v, "stdout") == 0) {
    cfg.fd = 1;
    return;
  }
  if (set_path(v)) cfg.format = ends_with_json(v) ? SC_STATS_JSON : SC_STATS_TEXT;
}

/** SIZECLASS_STATS_FORMAT: text or json; anything else: text on stderr. */
static void read_format(const char *v) {
  if (strcasecmp(v, "text") == 0) {
    cfg.format = SC_STATS_TEXT;
  } else if (strcasecmp(v, "json") == 0) {
    cfg.format = SC_STATS_JSON;
  } else {
    warn_value("SIZECLASS_STATS_FORMAT", v, "not text or json; writing text to stderr");
    cfg.format = SC_STATS_TEXT;
    cfg.path[0] = 0;
    cfg.fd = 2;
  }
}

/** SIZECLASS_STATS_SIGNAL: a signal name; unknown: the exit report instead. */
static void read_signal(const char *v) {
  cfg.signo = signal_of(v);
  if (cfg.signo != 0 && arm_signal(cfg.signo)) return;
  cfg.signo = 0;
  if (cfg.at_exit) {
    warn_value("SIZECLASS_STATS_SIGNAL", v, "not a usable signal; reporting at exit only");
    return;
  }
  warn_value("SIZECLASS_STATS_SIGNAL", v, "not a usable signal; text to stderr at exit");
  cfg.at_exit = true;
  cfg.fd = 2;
  cfg.format = SC_STATS_TEXT;
}

/* Read once at load (its own constructor: the allocator core does not
 * depend on the report). */
__attribute__((constructor)) static void stats_on_load(void) {
  sc__stats_start_ns = sc__os_now_ns();
  /* secure_getenv: a set-user-ID program (libsizeclass in ld.so.preload)
   * must not write its report wherever the caller names. */
  const char *dest = secure_getenv("SIZECLASS_STATS");
  const char *format = secure_getenv("SIZECLASS_STATS_FORMAT");
  const char *sig = secure_getenv("SIZECLASS_STATS_SIGNAL");
  if (dest != NULL) read_destination(dest);
  /* SIZECLASS_SITES alone: the report (with its sites) on stderr at exit. */
  if (!cfg.at_exit && (sig == NULL || sig[0] == 0) && sc__sites_report_implied())
    cfg.at_exit = true;
  if (format != NULL && (cfg.at_exit || sig != NULL)) read_format(format);
  if (sig != NULL && sig[0] != 0) read_signal(sig);
  if (cfg.at_exit) atexit(dump_at_exit);
  if (cfg.at_exit || cfg.signo != 0) pthread_atfork(NULL, NULL, fork_child);
}
