/* SPDX-License-Identifier: MIT */
/* arrives.c — programs that end in every way a run can end, for
 * tests/test_arrives.c (the report arrives, and never lands in the
 * program's own files). Built without libsizeclass; run preloaded.
 *
 *   arrives log PATH          open PATH (it takes the lowest free number:
 *                             fd 1 or 2 when the test closed that stream),
 *                             write "game log\n" into it, malloc and free,
 *                             return 0
 *   arrives usr2_wait         allocate, raise SIGUSR2 (the report signal),
 *                             then sleep 20 s
 *   arrives hello_err         write "the program's own line\n" to stderr,
 *                             malloc and free, return 0
 *   arrives fd2_writer N      a thread writes "program message\n" to fd 2
 *                             (closed at startup by the test: nothing
 *                             while no file takes that number) while the
 *                             main thread raises SIGUSR2 (the report
 *                             signal) N times, then returns 0 while the
 *                             thread still writes (the exit report)
 *   arrives frame_abort       mark frames, then carve fresh blocks
 *                             (SIZECLASS_FRAME_CHECK=abort stops it)
 *   arrives double_free       free a 64-byte block twice
 *   arrives kill SIG          allocate, then send itself SIG (TERM, INT, HUP,
 *                             SEGV, ABRT, ...) and wait for it
 *   arrives own_term          install a SIGTERM handler (it exits 3), then
 *                             as kill TERM
 *   arrives peek              as Python does: read SIGINT's action, and
 *                             only when it is the default install a
 *                             handler (it exits 4); then raise SIGINT.
 *                             Exit 8 when the default was not what it read
 *   arrives peek_hup          signal(SIGHUP, SIG_DFL) must return SIG_DFL
 *                             (else exit 9); then kill itself with SIGHUP
 *   arrives own_segv          install a SIGSEGV handler (it exits 4), then
 *                             fault
 *   arrives segv | bus | ill | fpe | abort | overflow
 *                             crash that way (overflow: the stack)
 *   arrives thread_segv       fault in a second thread that allocated
 *   arrives thread_overflow   run off the stack of a second thread that
 *                             allocated
 *   arrives uaf               write to a freed 100-byte block (with
 *                             SIZECLASS_GUARD=1 a guard page catches it)
 *   arrives _exit | _Exit     allocate, then _exit(5) / _Exit(5)
 *   arrives exit              allocate, then exit(6) (one report only)
 *   arrives vfork             a vfork child that calls _exit(0); the parent
 *                             returns 0
 *   arrives stress N DIR      threads allocate hard while the report
 *                             signal (SIGUSR2) is sent to one of them N
 *                             times; after each, once the report file
 *                             ($ARRIVES_REPORT) is complete, it is moved
 *                             to DIR/r.<i>.json. Exit 0, or 1 when a report
 *                             did not arrive within 20 s (a deadlock) */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SC_FRAME_WEAK
#include "sizeclass.h"

static void *volatile keep[64];

/** Some allocations of several classes, half of them kept. */
static void churn(void) {
  for (int i = 0; i < 200; i++) {
    void *p = malloc((size_t)(16 + (i * 37) % 1000));
    if (i % 4 == 0)
      keep[i % 64] = p;
    else
      free(p);
  }
}

static int signal_of(const char *name) {
  static const struct {
    const char *name;
    int signo;
  } names[] = {{"TERM", SIGTERM}, {"INT", SIGINT},   {"HUP", SIGHUP},
               {"SEGV", SIGSEGV}, {"BUS", SIGBUS},   {"ILL", SIGILL},
               {"FPE", SIGFPE},   {"ABRT", SIGABRT}, {"USR2", SIGUSR2}};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
    if (strcmp(names[i].name, name) == 0) return names[i].signo;
  return 0;
}

static void own_handler(int sig) {
  static const char msg[] = "handled\n";
  ssize_t r = write(1, msg, sizeof(msg) - 1);
  (void)r;
  _exit(sig == SIGTERM ? 3 : 4);
}

static void *volatile null_pointer;

/* Deep enough to run off any stack (the limit stops it first). */
static int overflow(int depth) {
  volatile char pad[4096];
  pad[0] = (char)depth;
  if (depth > (1 << 30)) return pad[0];
  return overflow(depth + 1) + pad[0];
}

static void *overflow_thread(void *arg) {
  (void)arg;
  churn();
  overflow(0);
  return NULL;
}

static void *segv_thread(void *arg) {
  (void)arg;
  churn();
  *(volatile int *)null_pointer = 1;
  return NULL;
}

/* ---- stress ------------------------------------------------------------------ */

enum { WORKERS = 4 };
static _Atomic int stop;

static void *worker(void *arg) {
  uintptr_t seed = (uintptr_t)arg * 2654435761u + 1;
  void *slots[256] = {0};
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    for (int k = 0; k < 1000; k++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      unsigned i = (unsigned)(seed >> 33) % 256;
      free(slots[i]);
      size_t n = (seed >> 20) % 8 == 0 ? 1024 + (seed >> 40) % 4096 : 1 + (seed >> 40) % 1024;
      slots[i] = malloc(n);
      if (slots[i] != NULL) ((char *)slots[i])[0] = (char)k;
    }
  }
  for (int i = 0; i < 256; i++) free(slots[i]);
  return NULL;
}

/* The report file is complete when it ends with the JSON's last line. */
static bool complete(const char *path) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return false;
  struct stat st;
  char tail[3] = {0};
  bool ok = fstat(fd, &st) == 0 && st.st_size >= 3 && pread(fd, tail, 3, st.st_size - 3) == 3 &&
            memcmp(tail, "\n}\n", 3) == 0;
  close(fd);
  return ok;
}

static int stress(int n, const char *dir) {
  const char *report = getenv("ARRIVES_REPORT");
  if (report == NULL) return 2;
  pthread_t t[WORKERS];
  for (int i = 0; i < WORKERS; i++) pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i);
  /* The signal goes to the workers only (they are the ones inside malloc). */
  sigset_t usr2;
  sigemptyset(&usr2);
  sigaddset(&usr2, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &usr2, NULL);
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++) {
    unlink(report);
    pthread_kill(t[i % WORKERS], SIGUSR2);
    struct timespec start, now, nap = {0, 200000};
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (int waited = 0; !complete(report); waited++) {
      clock_gettime(CLOCK_MONOTONIC, &now);
      if (now.tv_sec - start.tv_sec > 20) {
        fprintf(stderr, "arrives: report %d did not arrive\n", i);
        rc = 1;
        break;
      }
      /* A signal that arrives while the last report is still finishing
       * (its file is whole, its handler not yet out) is dropped, as
       * documented: send it again after a while. */
      if (waited % 1000 == 999) pthread_kill(t[i % WORKERS], SIGUSR2);
      nanosleep(&nap, NULL);
    }
    char to[4096];
    snprintf(to, sizeof(to), "%s/r.%d.json", dir, i);
    if (rc == 0 && rename(report, to) != 0) rc = 1;
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < WORKERS; i++) pthread_join(t[i], NULL);
  return rc;
}

/** fd2_writer's thread: the program's own messages on fd 2, until the
 * process ends. */
static __attribute__((noreturn)) void *fd2_write(void *arg) {
  (void)arg;
  static const char msg[] = "program message\n";
  for (;;) {
    ssize_t w = write(2, msg, sizeof(msg) - 1);
    (void)w;
  }
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "usr2_wait") == 0) {
    churn();
    raise(SIGUSR2);
    sleep(20);
    return 0;
  }
  if (strcmp(mode, "hello_err") == 0) {
    fputs("the program's own line\n", stderr);
    churn();
    return 0;
  }
  if (strcmp(mode, "fd2_writer") == 0 && argc > 2) {
    pthread_t t;
    if (pthread_create(&t, NULL, fd2_write, NULL) != 0) return 2;
    for (int i = 0; i < atoi(argv[2]); i++) {
      churn();
      raise(SIGUSR2);
    }
    return 0; /* the exit report, the thread still writing */
  }
  if (strcmp(mode, "log") == 0 && argc > 2) {
    int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return 2;
    static const char msg[] = "game log\n";
    if (write(fd, msg, sizeof(msg) - 1) != (ssize_t)sizeof(msg) - 1) return 2;
    churn();
    dprintf(fd, "fd %d\n", fd);
    return 0;
  }
  if (strcmp(mode, "frame_abort") == 0) {
    SC_FRAME_MARK();
    SC_FRAME_MARK();
    SC_FRAME_MARK();
    for (int i = 0; i < 100000; i++) keep[i % 64] = malloc(32);
    return 0;
  }
  if (strcmp(mode, "double_free") == 0) {
    churn();
    void *volatile p = malloc(64);
    free(p);
    free(p);
    return 0;
  }
  if ((strcmp(mode, "kill") == 0 && argc > 2) || strcmp(mode, "own_term") == 0) {
    int sig = argc > 2 ? signal_of(argv[2]) : SIGTERM;
    if (sig == 0) return 2;
    if (strcmp(mode, "own_term") == 0) signal(SIGTERM, own_handler);
    churn();
    kill(getpid(), sig);
    for (;;) pause();
  }
  if (strcmp(mode, "peek") == 0) {
    struct sigaction old;
    if (sigaction(SIGINT, NULL, &old) != 0) return 2;
    if ((old.sa_flags & SA_SIGINFO) != 0 || old.sa_handler != SIG_DFL) return 8;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = own_handler;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGINT, &sa, NULL) != 0) return 2;
    churn();
    raise(SIGINT);
    return 0;
  }
  if (strcmp(mode, "peek_hup") == 0) {
    if (signal(SIGHUP, SIG_DFL) != SIG_DFL) return 9;
    churn();
    kill(getpid(), SIGHUP);
    for (;;) pause();
  }
  if (strcmp(mode, "own_segv") == 0) {
    signal(SIGSEGV, own_handler);
    churn();
    *(volatile int *)null_pointer = 1;
    return 0;
  }
  if (strcmp(mode, "segv") == 0) {
    churn();
    *(volatile int *)null_pointer = 1;
    return 0;
  }
  if (strcmp(mode, "bus") == 0) {
    churn();
    char path[] = "/tmp/arrives.bus.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return 2;
    unlink(path);
    volatile char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return 2;
    p[0] = 1; /* the file is empty: SIGBUS */
    return 0;
  }
  if (strcmp(mode, "ill") == 0) {
    churn();
    __builtin_trap();
  }
  if (strcmp(mode, "fpe") == 0) {
    churn();
    volatile int zero = 0;
    return 10 / zero;
  }
  if (strcmp(mode, "abort") == 0) {
    churn();
    abort();
  }
  if (strcmp(mode, "overflow") == 0) {
    churn();
    return overflow(0);
  }
  if (strcmp(mode, "uaf") == 0) {
    /* A guarded block's usable size is its request. */
    char *volatile p = NULL;
    for (int i = 0; i < 64 && p == NULL; i++) {
      p = malloc(100);
      if (malloc_usable_size(p) != 100) p = NULL;
    }
    if (p == NULL) return 2;
    free(p);
    ((volatile char *)p)[0] = 1;
    return 0;
  }
  if (strcmp(mode, "thread_overflow") == 0) {
    pthread_t t;
    pthread_create(&t, NULL, overflow_thread, NULL);
    pthread_join(t, NULL);
    return 0;
  }
  if (strcmp(mode, "thread_segv") == 0) {
    pthread_t t;
    pthread_create(&t, NULL, segv_thread, NULL);
    pthread_join(t, NULL);
    return 0;
  }
  if (strcmp(mode, "_exit") == 0) {
    churn();
    _exit(5);
  }
  if (strcmp(mode, "_Exit") == 0) {
    churn();
    _Exit(5);
  }
  if (strcmp(mode, "exit") == 0) {
    churn();
    exit(6);
  }
  if (strcmp(mode, "vfork") == 0) {
    churn();
    pid_t pid = vfork();
    if (pid == 0) _exit(0);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
  }
  if (strcmp(mode, "stress") == 0 && argc > 3) return stress(atoi(argv[2]), argv[3]);
  fprintf(stderr, "usage: arrives MODE ...\n");
  return 2;
}
