/* SPDX-License-Identifier: MIT */
/* proc_run.h — the one process runner of the test suites: run a program
 * (optionally with libsizeclass preloaded, extra environment entries, an
 * address-space limit), capture its stdout and stderr or send them to files,
 * and kill it after a deadline so that a hang is a failure, never a stuck
 * suite. Also pr_wait_child, the same deadline for a child that a test
 * forked itself, and pr_sh for a shell command line. No Criterion
 * dependency: helper programs may include it.
 *
 *   char *argv[] = {path, "arg", NULL};
 *   pr_opts_t o = {.preload = true, .timeout_s = 60};
 *   pr_result_t r;
 *   if (pr_run(&r, argv, &o)) ... r.exit_code, r.out, r.err ...; free(r.out);
 */
#ifndef PROC_RUN_H
#define PROC_RUN_H

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* How to run a program. Zero-initialise and set what you need. */
typedef struct {
  bool preload;            /* LD_PRELOAD=$SC_BUILD/libsizeclass.so (else none) */
  bool drop_sizeclass_env; /* leave our SIZECLASS_* variables out of its environment */
  size_t rlimit_as;        /* RLIMIT_AS for the child in bytes; 0 = unchanged */
  int timeout_s;           /* kill it and report a timeout after this long; 0 = 60 */
  const char *stdin_path;  /* file for stdin; NULL = /dev/null */
  const char *stdout_path; /* file for stdout; NULL = captured into out */
  const char *stderr_path; /* file for stderr; NULL = its start captured into err */
  const char *const *env;  /* extra NAME=value entries, NULL-terminated */
  const char *cwd;         /* directory it starts in; NULL = ours */
} pr_opts_t;

/* What came of it. */
typedef struct {
  bool timed_out; /* killed at the deadline */
  int status;     /* raw wait status (WIFEXITED & co.); -1 if it never ran */
  int exit_code;  /* exit status, or 128 + signal, or -1 if it never ran */
  char *out;      /* captured stdout, NUL-terminated (free() it); "" when sent to a file */
  size_t out_len; /* bytes in out */
  char err[4096]; /* the start of stderr, NUL-terminated, for messages */
} pr_result_t;

/** The build directory ($SC_BUILD, set by the test runner; "build" otherwise). */
static inline const char *pr_build_dir(void) {
  const char *b = getenv("SC_BUILD");
  return b != NULL && b[0] != 0 ? b : "build";
}

/** "<build>/tests/progs/<name>" into out: where the helper programs are. */
static inline void pr_prog_path(char *out, size_t cap, const char *name) {
  snprintf(out, cap, "%s/tests/progs/%s", pr_build_dir(), name);
}

/** Seconds since an arbitrary start, monotonic. */
static inline double pr_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/** Wait for pid until the monotonic clock passes deadline; then SIGKILL it.
 * Stores the wait status; returns false on a timeout or a wait error. */
static inline bool pr_wait_until(pid_t pid, double deadline, int *status) {
  for (;;) {
    pid_t w = waitpid(pid, status, WNOHANG);
    if (w == pid) return true;
    if (w < 0 && errno != EINTR) return false;
    if (pr_now() > deadline) {
      kill(pid, SIGKILL);
      while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
      }
      return false;
    }
    usleep(1000);
  }
}

/** Exit code of a wait status: the exit status, or 128 + signal; -1 otherwise. */
static inline int pr_exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

/** Wait for child pid for at most timeout_s seconds; on timeout kill it and
 * return -2. Otherwise its exit code (128 + signal if killed), -1 on error. */
static inline int pr_wait_child(pid_t pid, int timeout_s) {
  int status = 0;
  double deadline = pr_now() + timeout_s;
  if (!pr_wait_until(pid, deadline, &status)) return pr_now() > deadline ? -2 : -1;
  return pr_exit_code(status);
}

/** The child's environment: ours without LD_PRELOAD (and SIZECLASS_* when
 * asked), then opts->env, then the preload. Free the array, not the strings. */
static inline char **pr_child_env(const pr_opts_t *o, char *preload_buf, size_t cap) {
  size_t n = 0, extra = 0;
  while (environ[n] != NULL) n++;
  if (o->env != NULL)
    while (o->env[extra] != NULL) extra++;
  char **env = calloc(n + extra + 2, sizeof(char *));
  if (env == NULL) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (strncmp(environ[i], "LD_PRELOAD=", 11) == 0) continue;
    if (o->drop_sizeclass_env && strncmp(environ[i], "SIZECLASS_", 10) == 0) continue;
    env[k++] = environ[i];
  }
  for (size_t i = 0; i < extra; i++) env[k++] = (char *)o->env[i];
  if (o->preload) {
    snprintf(preload_buf, cap, "LD_PRELOAD=%s/libsizeclass.so", pr_build_dir());
    env[k++] = preload_buf;
  }
  env[k] = NULL;
  return env;
}

/** In the child: open path onto fd (write: create/truncate); false on error. */
static inline bool pr_redirect(const char *path, int fd, bool write) {
  int f = write ? open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644) : open(path, O_RDONLY);
  if (f < 0) return false;
  return dup2(f, fd) == fd;
}

/** Read what the captured pipes (fds[i] >= 0) deliver until both close or
 * the deadline passes: stdout into r->out (grown), stderr into r->err. */
static inline void pr_collect(pr_result_t *r, int fds_in[2], double deadline) {
  size_t cap = 1 << 16, len = 0, elen = 0;
  char *buf = malloc(cap);
  struct pollfd fds[2] = {{fds_in[0], POLLIN, 0}, {fds_in[1], POLLIN, 0}};
  int open_fds = (fds[0].fd >= 0) + (fds[1].fd >= 0);
  while (open_fds > 0) {
    double left = deadline - pr_now();
    if (left <= 0) {
      r->timed_out = true;
      break;
    }
    int rc = poll(fds, 2, (int)(left * 1000) + 1);
    if (rc <= 0) continue; /* EINTR or the deadline: the loop decides */
    for (int i = 0; i < 2; i++) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char chunk[8192];
      ssize_t got = read(fds[i].fd, chunk, sizeof(chunk));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        open_fds--;
        continue;
      }
      if (i == 0) {
        while (len + (size_t)got + 1 > cap) cap *= 2;
        buf = realloc(buf, cap);
        memcpy(buf + len, chunk, (size_t)got);
        len += (size_t)got;
      } else {
        size_t room = sizeof(r->err) - 1 - elen;
        size_t take = (size_t)got < room ? (size_t)got : room;
        memcpy(r->err + elen, chunk, take);
        elen += take;
      }
    }
  }
  for (int i = 0; i < 2; i++)
    if (fds[i].fd >= 0) close(fds[i].fd);
  buf[len] = 0;
  r->out = buf;
  r->out_len = len;
  r->err[elen] = 0;
}

/** Run argv (argv[0] looked up in PATH) as opts say, wait for it (at most
 * timeout_s, then SIGKILL and timed_out), and fill r. Returns false when it
 * could not be started (r->out is then NULL). */
static inline bool pr_run(pr_result_t *r, char *const argv[], const pr_opts_t *o) {
  memset(r, 0, sizeof(*r));
  r->status = -1;
  r->exit_code = -1;
  char preload[4200];
  char **env = pr_child_env(o, preload, sizeof(preload));
  if (env == NULL) return false;
  int outp[2] = {-1, -1}, errp[2] = {-1, -1};
  if ((o->stdout_path == NULL && pipe2(outp, O_CLOEXEC) != 0) ||
      (o->stderr_path == NULL && pipe2(errp, O_CLOEXEC) != 0)) {
    free(env);
    return false;
  }
  pid_t pid = fork();
  if (pid == 0) {
    /* Child: only async-signal-safe calls from here on. */
    if (!pr_redirect(o->stdin_path != NULL ? o->stdin_path : "/dev/null", 0, false)) _exit(126);
    if (o->stdout_path != NULL ? !pr_redirect(o->stdout_path, 1, true) : dup2(outp[1], 1) != 1)
      _exit(126);
    if (o->stderr_path != NULL ? !pr_redirect(o->stderr_path, 2, true) : dup2(errp[1], 2) != 2)
      _exit(126);
    if (o->cwd != NULL && chdir(o->cwd) != 0) _exit(126);
    /* Every signal at its default and none blocked, however the suite was
     * started (nohup ignores SIGHUP, and an ignored signal stays ignored
     * across exec): the programs' signal tests expect the defaults. */
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    for (int sig = 1; sig < NSIG; sig++)
      if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (o->rlimit_as != 0) {
      struct rlimit rl = {o->rlimit_as, o->rlimit_as};
      if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(125);
    }
    execvpe(argv[0], argv, env);
    _exit(127);
  }
  free(env);
  if (outp[1] >= 0) close(outp[1]);
  if (errp[1] >= 0) close(errp[1]);
  int readers[2] = {outp[0], errp[0]};
  if (pid < 0) {
    for (int i = 0; i < 2; i++)
      if (readers[i] >= 0) close(readers[i]);
    return false;
  }
  double deadline = pr_now() + (o->timeout_s > 0 ? o->timeout_s : 60);
  pr_collect(r, readers, deadline);
  int status = 0;
  if (!pr_wait_until(pid, r->timed_out ? 0 : deadline, &status)) r->timed_out = true;
  r->status = status;
  r->exit_code = pr_exit_code(status);
  return true;
}

/** Run a printf-formatted /bin/sh command line with stdout and stderr
 * together, killed after timeout_s. Returns its output (free() it), or NULL
 * when it could not start or timed out; *exit_code gets its exit code. */
static inline char *pr_sh(int *exit_code, int timeout_s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline char *pr_sh(int *exit_code, int timeout_s, const char *fmt, ...) {
  static const char tail[] = ") 2>&1";
  char full[8192] = "(";
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(full + 1, sizeof(full) - sizeof(tail) - 1, fmt, ap);
  va_end(ap);
  *exit_code = -1;
  if (n < 0 || (size_t)n >= sizeof(full) - sizeof(tail) - 1) return NULL;
  memcpy(full + 1 + n, tail, sizeof(tail));
  char *argv[] = {"/bin/sh", "-c", full, NULL};
  pr_opts_t o = {.timeout_s = timeout_s};
  pr_result_t r;
  if (!pr_run(&r, argv, &o)) return NULL;
  *exit_code = r.exit_code;
  if (!r.timed_out) return r.out;
  free(r.out);
  return NULL;
}

#endif /* PROC_RUN_H */
