/* core_util.h — helpers shared by the core allocator suites (test_core_*.c):
 * keep the optimizer from eliding allocations, fill and check byte patterns,
 * read the footprint, and run a helper program (optionally preloaded, under
 * an address-space limit) with a deadline that turns a hang into a failure. */
#ifndef CORE_UTIL_H
#define CORE_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/** Return p unchanged, but opaque to the optimizer: GCC removes a malloc/free
 * pair whose block never escapes, and we want every call to really happen. */
static inline void *cu_escape(void *p) {
  __asm__ volatile("" : "+r"(p) : : "memory");
  return p;
}

/** A size the compiler cannot see (so malloc(SIZE_MAX) compiles warning-free). */
static inline size_t cu_opaque_size(size_t n) {
  __asm__ volatile("" : "+r"(n));
  return n;
}

/** Byte i of the pattern of `seed`: differs between seeds and positions. */
static inline uint8_t cu_pattern_byte(uint64_t seed, size_t i) {
  uint64_t x = (seed + 1) * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull;
  return (uint8_t)(x >> 56 ^ x >> 29 ^ i);
}

/** Fill n bytes of p with the pattern of seed. */
static inline void cu_fill(void *p, size_t n, uint64_t seed) {
  uint8_t *b = p;
  for (size_t i = 0; i < n; i++) b[i] = cu_pattern_byte(seed, i);
}

/** True when the first n bytes of p still hold the pattern of seed. */
static inline bool cu_check(const void *p, size_t n, uint64_t seed) {
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++)
    if (b[i] != cu_pattern_byte(seed, i)) return false;
  return true;
}

/** A small deterministic PRNG (xorshift64*), one state per thread. */
static inline uint64_t cu_rand(uint64_t *state) {
  uint64_t x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 0x2545F4914F6CDD1Dull;
}

/** Resident set size of this process in bytes (from /proc/self/statm). */
static inline size_t cu_rss_bytes(void) {
  int fd = open("/proc/self/statm", O_RDONLY);
  if (fd < 0) return 0;
  char buf[128];
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  unsigned long size = 0, resident = 0;
  if (sscanf(buf, "%lu %lu", &size, &resident) != 2) return 0;
  return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

/** Virtual size of this process in bytes (from /proc/self/statm). */
static inline size_t cu_vm_bytes(void) {
  int fd = open("/proc/self/statm", O_RDONLY);
  if (fd < 0) return 0;
  char buf[128];
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  unsigned long size = 0;
  if (sscanf(buf, "%lu", &size) != 1) return 0;
  return (size_t)size * (size_t)sysconf(_SC_PAGESIZE);
}

/** The build directory ($SC_BUILD, set by the test runner; "build" otherwise). */
static inline const char *cu_build_dir(void) {
  const char *b = getenv("SC_BUILD");
  return b != NULL && b[0] != 0 ? b : "build";
}

/** Write "<build>/<rel>" into out. */
static inline void cu_build_path(char *out, size_t cap, const char *rel) {
  snprintf(out, cap, "%s/%s", cu_build_dir(), rel);
}

/* How to run a helper program. */
typedef struct {
  bool preload;            /* LD_PRELOAD=$SC_BUILD/libsizeclass.so (else none) */
  size_t rlimit_as;        /* RLIMIT_AS for the child in bytes; 0 = unchanged */
  int timeout_s;           /* kill and report a timeout after this long */
  const char *stdin_path;  /* file for stdin; NULL = /dev/null */
  const char *stdout_path; /* file for stdout; NULL = captured into out */
  const char *const *env;  /* extra NAME=value entries, NULL-terminated */
} cu_run_opts_t;

/* What came of it. */
typedef struct {
  bool timed_out;
  int exit_code; /* exit status, or 128 + signal, or -1 if it never ran */
  char *out;     /* captured stdout (NUL-terminated; free() it) */
  size_t out_len;
  char err[4096]; /* the start of stderr, for failure messages */
} cu_run_t;

/** Seconds since an arbitrary start, monotonic. */
static inline double cu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/** Build the child's environment: ours without LD_PRELOAD, plus opts. */
static inline char **cu_child_env(const cu_run_opts_t *o, char *preload_buf, size_t cap) {
  size_t n = 0, extra = 0;
  while (environ[n] != NULL) n++;
  if (o->env != NULL)
    while (o->env[extra] != NULL) extra++;
  char **env = calloc(n + extra + 2, sizeof(char *));
  if (env == NULL) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0) env[k++] = environ[i];
  for (size_t i = 0; i < extra; i++) env[k++] = (char *)o->env[i];
  if (o->preload) {
    snprintf(preload_buf, cap, "LD_PRELOAD=%s/libsizeclass.so", cu_build_dir());
    env[k++] = preload_buf;
  }
  env[k] = NULL;
  return env;
}

/** Run argv (argv[0] looked up in PATH) as opts say, wait for it (at most
 * timeout_s, then SIGKILL), and fill r. Returns false if it could not start. */
static inline bool cu_run(cu_run_t *r, char *const argv[], const cu_run_opts_t *o) {
  memset(r, 0, sizeof(*r));
  r->exit_code = -1;
  char preload[4200];
  char **env = cu_child_env(o, preload, sizeof(preload));
  if (env == NULL) return false;
  int outp[2], errp[2];
  if (pipe2(outp, O_CLOEXEC) != 0) return false;
  if (pipe2(errp, O_CLOEXEC) != 0) return false;
  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    /* Child: only async-signal-safe calls from here on. */
    int in = open(o->stdin_path != NULL ? o->stdin_path : "/dev/null", O_RDONLY);
    if (in < 0) _exit(126);
    dup2(in, 0);
    if (o->stdout_path != NULL) {
      int out = open(o->stdout_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (out < 0) _exit(126);
      dup2(out, 1);
    } else {
      dup2(outp[1], 1);
    }
    dup2(errp[1], 2);
    if (o->rlimit_as != 0) {
      struct rlimit rl = {o->rlimit_as, o->rlimit_as};
      if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(125);
    }
    execvpe(argv[0], argv, env);
    _exit(127);
  }
  free(env);
  close(outp[1]);
  close(errp[1]);
  size_t cap = 1 << 16, len = 0, elen = 0;
  char *buf = malloc(cap);
  double deadline = cu_now() + (o->timeout_s > 0 ? o->timeout_s : 60);
  struct pollfd fds[2] = {{outp[0], POLLIN, 0}, {errp[0], POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    double left = deadline - cu_now();
    if (left <= 0) {
      r->timed_out = true;
      break;
    }
    int rc = poll(fds, 2, (int)(left * 1000) + 1);
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) continue;
    for (int i = 0; i < 2; i++) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char chunk[8192];
      ssize_t got = read(fds[i].fd, chunk, sizeof(chunk));
      if (got <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        open_fds--;
        continue;
      }
      if (i == 0) {
        if (len + (size_t)got + 1 > cap) {
          while (len + (size_t)got + 1 > cap) cap *= 2;
          buf = realloc(buf, cap);
        }
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
  int status = 0;
  for (;;) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) break;
    if (r->timed_out || cu_now() > deadline) {
      r->timed_out = true;
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    usleep(2000);
  }
  if (WIFEXITED(status))
    r->exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    r->exit_code = 128 + WTERMSIG(status);
  buf[len] = 0;
  r->out = buf;
  r->out_len = len;
  r->err[elen] = 0;
  return true;
}

/** Wait for child pid for at most timeout_s seconds; on timeout kill it and
 * return -2. Otherwise its exit code (128 + signal if killed). */
static inline int cu_wait_child(pid_t pid, int timeout_s) {
  double deadline = cu_now() + timeout_s;
  int status = 0;
  for (;;) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) return -1;
    if (cu_now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -2;
    }
    usleep(1000);
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

/** Read a whole file into a NUL-terminated malloc'd buffer; NULL on error. */
static inline char *cu_read_file(const char *path, size_t *len_out) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  size_t got;
  while ((got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
    len += got;
    if (cap - len - 1 == 0) {
      cap *= 2;
      buf = realloc(buf, cap);
    }
  }
  fclose(f);
  buf[len] = 0;
  if (len_out != NULL) *len_out = len;
  return buf;
}

#endif /* CORE_UTIL_H */
