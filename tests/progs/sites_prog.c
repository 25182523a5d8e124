/* SPDX-License-Identifier: MIT */
/* sites_prog.c — allocation patterns with known call sites, for
 * tests/test_sites.c. Runs under LD_PRELOAD=libsizeclass.so (or, built as
 * sites_static, linked with libsizeclass.a) with SIZECLASS_SITES and
 * SIZECLASS_STATS set by the test. Output through write(2) only (stdio
 * would allocate): "pid N", and what the mode says.
 *
 *   (every mode)          first_site: malloc(3000), kept, from a constructor:
 *                         the process's first allocation
 *   sites_prog exact      known sites (noinline functions), at rate 1 exact:
 *                         site_a  1000 x malloc(40)    class 64, all freed
 *                         site_b   500 x malloc(100)   class 128, 20 left live
 *                         inner_c  300 x malloc(20)    class 32 (called by outer_c), freed
 *                         site_d     7 x malloc(200)   class 256, all left live (a leak)
 *                         site_e     5 x malloc(5000)  the system allocator, 2 freed
 *                         site_f    50 x calloc(1, 24) class 32, freed
 *   sites_prog sampled N  hot_site N x malloc(64) and cold_site N/10 x
 *                         malloc(64), interleaved, freed as they go
 *   sites_prog threads    4 threads, each thread_site: 1000 x malloc(48), freed
 *   sites_prog cross      cross_site: 300 x malloc(40) by the main thread,
 *                         freed by another thread; 100 more kept, then
 *                         realloc'd to 700 B (moved: freed in class 64)
 *   sites_prog fork       parent_site 100 x malloc(40) kept; a child runs
 *                         child_site 200 x malloc(40) and exits (its own
 *                         report: use %p); the parent prints "child 0"
 *   sites_prog signal     raise(SIGUSR1), whose handler's signal_site makes
 *                         10 x malloc(40), kept: a stack through a signal frame
 *   sites_prog frames     marked frames (all of class 64): frame 1 loads 100 x
 *                         malloc(40) and frees them; frames 2..6, 8 and 10
 *                         each allocate and free 50 (reuse_site: all reuse);
 *                         frames 7 and 9 allocate 150 and 200 and free them
 *                         (carve_site: 50 fresh carves each); 10 frames
 *   sites_prog steady F   the frames pattern with sc_frame_expect_steady(true)
 *                         after frame F and (false) after frame 10; prints
 *                         "steady 0|1" (the second call's result)
 *
 * The program defines _Unwind_Backtrace and _Unwind_Find_FDE (exported
 * with -rdynamic, so the library's calls bind to them): it counts the calls
 * ("walks N" at exit) and, with SITES_PROG_UNWIND_ALLOC=1, allocates and
 * frees inside every one — the unwinder allocating, which must not
 * recurse. */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <unwind.h>

/* The library's API, resolved at run time (it is preloaded). */
void sc_frame_mark(void) __attribute__((weak));
bool sc_frame_expect_steady(bool on) __attribute__((weak));

static void *volatile sink;

static void say(const char *s) { (void)!write(1, s, strlen(s)); }

static void say_u64(const char *word, uint64_t v) {
  char buf[24], out[64];
  int n = 0, k = 0;
  do buf[n++] = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  while (*word && k < 32) out[k++] = *word++;
  out[k++] = ' ';
  while (n > 0) out[k++] = buf[--n];
  out[k++] = '\n';
  (void)!write(1, out, (size_t)k);
}

/* ---- the unwinder, interposed ------------------------------------------------------- */

typedef _Unwind_Reason_Code (*backtrace_fn)(_Unwind_Trace_Fn, void *);
typedef const void *(*find_fde_fn)(void *, void *);
static _Atomic unsigned long walks;
static bool alloc_in_walk;

/** What an unwinder that allocates would do: allocate and free (a class
 * block and a system one), from inside the library's stack walk. */
static void unwinder_allocates(void) {
  walks++;
  if (!alloc_in_walk) return;
  void *p = malloc(64);
  sink = p;
  free(p);
  p = malloc(3000);
  sink = p;
  free(p);
}

_Unwind_Reason_Code _Unwind_Backtrace(_Unwind_Trace_Fn fn, void *arg) {
  static _Atomic(backtrace_fn) real;
  unwinder_allocates();
  backtrace_fn f = real;
  if (f == NULL) {
    f = (backtrace_fn)dlsym(RTLD_NEXT, "_Unwind_Backtrace");
    real = f;
  }
  return f(fn, arg);
}

const void *_Unwind_Find_FDE(void *pc, void *bases) {
  static _Atomic(find_fde_fn) real;
  unwinder_allocates();
  find_fde_fn f = real;
  if (f == NULL) {
    f = (find_fde_fn)dlsym(RTLD_NEXT, "_Unwind_Find_FDE");
    real = f;
  }
  return f(pc, bases);
}

/* ---- the sites ---------------------------------------------------------------------------- */

#if defined(__clang__) /* clang clones no functions (and knows no noclone) */
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noclone))
#endif

/* Each site stores what it made and returns through a volatile read, so no
 * call is a tail call (the caller's frame stays on the stack). */
static void *held_b[500], *held_d[7], *held_e[5];

NOINLINE static void site_a(void) {
  for (int i = 0; i < 1000; i++) {
    void *p = malloc(40);
    sink = p;
    free(p);
  }
  (void)sink;
}

NOINLINE static void site_b(void) {
  for (int i = 0; i < 500; i++) held_b[i] = malloc(100);
  for (int i = 20; i < 500; i++) free(held_b[i]);
  (void)sink;
}

static void *held_c[300];
NOINLINE static void inner_c(void) {
  for (int i = 0; i < 300; i++) held_c[i] = malloc(20);
  (void)sink;
}
NOINLINE static void outer_c(void) {
  inner_c();
  for (int i = 0; i < 300; i++) free(held_c[i]);
  (void)sink;
}

NOINLINE static void site_d(void) {
  for (int i = 0; i < 7; i++) held_d[i] = malloc(200);
  (void)sink;
}

NOINLINE static void site_e(void) {
  for (int i = 0; i < 5; i++) held_e[i] = malloc(5000);
  free(held_e[0]);
  free(held_e[1]);
  (void)sink;
}

NOINLINE static void site_f(void) {
  for (int i = 0; i < 50; i++) {
    void *p = calloc(1, 24);
    sink = p;
    free(p);
  }
  (void)sink;
}

NOINLINE static void run_exact(void) {
  site_a();
  site_b();
  outer_c();
  site_d();
  site_e();
  site_f();
  (void)sink;
}

/* The process's first allocation, large, before main and before most
 * constructors. */
static void *held_first;
NOINLINE static void first_site(void) {
  held_first = malloc(3000);
  (void)sink;
}
__attribute__((constructor)) static void early(void) { first_site(); }

/* ---- sampling ------------------------------------------------------------------------------- */

NOINLINE static void hot_site(void) {
  void *p = malloc(64);
  sink = p;
  free(p);
  (void)sink;
}

NOINLINE static void cold_site(void) {
  void *p = malloc(64);
  sink = p;
  free(p);
  (void)sink;
}

NOINLINE static void run_sampled(long n) {
  for (long i = 0; i < n; i++) {
    hot_site();
    if (i % 10 == 0) cold_site();
  }
  (void)sink;
}

/* ---- threads and fork ---------------------------------------------------------------------- */

NOINLINE static void thread_site(void) {
  for (int i = 0; i < 1000; i++) {
    void *p = malloc(48);
    sink = p;
    free(p);
  }
  (void)sink;
}

static void *thread_main(void *arg) {
  thread_site();
  return arg;
}

static void run_threads(void) {
  pthread_t t[4];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, thread_main, NULL);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
}

static void *cross_blocks[400];

NOINLINE static void cross_site(void) {
  for (int i = 0; i < 400; i++) cross_blocks[i] = malloc(40);
  (void)sink;
}

static void *cross_free(void *arg) {
  for (int i = 0; i < 300; i++) free(cross_blocks[i]);
  return arg;
}

/** Sampled blocks freed by another thread and moved by realloc: each free
 * must still take the block out of its site's live count. */
static void run_cross(void) {
  cross_site();
  pthread_t t;
  pthread_create(&t, NULL, cross_free, NULL);
  pthread_join(t, NULL);
  for (int i = 300; i < 400; i++) cross_blocks[i] = realloc(cross_blocks[i], 700);
}

static void *held_parent[100], *held_child[200];

NOINLINE static void parent_site(void) {
  for (int i = 0; i < 100; i++) held_parent[i] = malloc(40);
  (void)sink;
}

NOINLINE static void child_site(void) {
  for (int i = 0; i < 200; i++) held_child[i] = malloc(40);
  (void)sink;
}

static void run_fork(void) {
  parent_site();
  pid_t pid = fork();
  if (pid == 0) {
    child_site();
    exit(0); /* the child's own report at exit */
  }
  int status = 0;
  waitpid(pid, &status, 0);
  say_u64("child", WIFEXITED(status) ? (uint64_t)WEXITSTATUS(status) : 99);
}

/* ---- a signal frame ---------------------------------------------------------------------- */

static void *held_signal[10];

NOINLINE static void signal_site(void) {
  for (int i = 0; i < 10; i++) held_signal[i] = malloc(40);
  (void)sink;
}

static void on_signal(int sig) {
  (void)sig;
  signal_site();
  (void)sink;
}

static void run_signal(void) {
  signal(SIGUSR1, on_signal);
  raise(SIGUSR1);
}

/* ---- frames -----------------------------------------------------------------------------------
 */

static void *frame_blocks[200];

NOINLINE static void reuse_site(int n) {
  for (int i = 0; i < n; i++) frame_blocks[i] = malloc(40);
  for (int i = 0; i < n; i++) free(frame_blocks[i]);
  (void)sink;
}

NOINLINE static void carve_site(int n) {
  for (int i = 0; i < n; i++) frame_blocks[i] = malloc(40);
  for (int i = 0; i < n; i++) free(frame_blocks[i]);
  (void)sink;
}

/** The frame pattern; with steady_from > 0, the check is switched on by
 * the API after that frame and off after the last. */
static void run_frames(int steady_from) {
  for (int f = 1; f <= 10; f++) {
    if (f == 1) reuse_site(100); /* the load */
    if (f == 7) carve_site(150);
    if (f == 9) carve_site(200);
    if (f != 1 && f != 7 && f != 9) reuse_site(50);
    if (sc_frame_mark) sc_frame_mark();
    if (f == steady_from) sc_frame_expect_steady(true);
  }
  if (steady_from > 0) say_u64("steady", sc_frame_expect_steady(false));
}

int main(int argc, char **argv) {
  const char *v = getenv("SITES_PROG_UNWIND_ALLOC");
  alloc_in_walk = v != NULL && v[0] == '1';
  say_u64("pid", (uint64_t)getpid());
  const char *mode = argc > 1 ? argv[1] : "exact";
  if (strcmp(mode, "exact") == 0) {
    run_exact();
  } else if (strcmp(mode, "sampled") == 0) {
    run_sampled(argc > 2 ? atol(argv[2]) : 1000000);
  } else if (strcmp(mode, "threads") == 0) {
    run_threads();
  } else if (strcmp(mode, "cross") == 0) {
    run_cross();
  } else if (strcmp(mode, "fork") == 0) {
    run_fork();
  } else if (strcmp(mode, "signal") == 0) {
    run_signal();
  } else if (strcmp(mode, "frames") == 0) {
    run_frames(0);
  } else if (strcmp(mode, "steady") == 0) {
    if (sc_frame_expect_steady == NULL) return 3;
    run_frames(argc > 2 ? atoi(argv[2]) : 1);
  } else {
    say("unknown mode\n");
    return 2;
  }
  say_u64("walks", walks);
  return 0;
}
