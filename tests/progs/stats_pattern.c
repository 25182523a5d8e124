/* SPDX-License-Identifier: MIT */
/* stats_pattern.c — allocation patterns with known statistics, for
 * tests/test_stats.c. Run under LD_PRELOAD=libsizeclass.so with the
 * SIZECLASS_STATS* variables set; it prints nothing through stdio (stdio
 * would allocate), only its pid with write(2).
 *
 *   stats_pattern pattern [TEXT JSON]  the exact pattern (see below); with
 *                                      paths, also print the report there
 *                                      through sc_stats_print
 *   stats_pattern baseline             the same threads, no pattern
 *   stats_pattern small                10 x 40 B, 5 of them freed
 *   stats_pattern fork [DIR]           100 x 40 B, then a child adds 10 x 700 B
 *                                      (DIR: each prints its report there)
 *   stats_pattern busy                 exit while two threads allocate
 *   stats_pattern exit-thread          a second thread calls exit()
 *   stats_pattern signal SIG           phase 1, raise SIG twice, phase 2,
 *                                      raise SIG, while a thread allocates 8 B
 *   stats_pattern frames               10 frames of 5 x 40 B allocated and
 *                                      freed, each closed by sc_frame_mark
 *   (every mode)                       STATS_PATTERN_API=NAME=VALUE in the
 *                                      environment: sc_option_set(NAME,
 *                                      VALUE) first (prints "api 1|0");
 *                                      STATS_PATTERN_ENABLE_EXACT=1:
 *                                      sc_stats_enable_exact() first; a
 *                                      copy of the binary may carry its own
 *                                      sizeclass_options (see below)
 *   stats_pattern enable first|late JSON
 *                                      sc_stats_enable_exact() before any
 *                                      allocation (first) or after 10 (late),
 *                                      prints "enable 0|1", then 10 x 40 B,
 *                                      5 freed, and the report into JSON
 *
 * The pattern: main allocates 1000 x 40 B (class 64) and 300 x 700 B (class
 * 1024); thread B frees the first 250 and 75 of them (remote frees),
 * allocates 200 x 40 B and frees the last 50 of those; thread C (adopting
 * B's arena) allocates and frees one 40 B block; main frees the last 250
 * and 75 of its blocks, then allocates 100 x 40 B and 30 x 700 B again.
 * Main also keeps 20 x 200 B (class 256) live throughout.
 * Fallback: malloc(5000), malloc(3000), calloc(1, 2000), realloc of the
 * 3000 to 6000, aligned_alloc(4096, 8192), free of the 5000. */
#include <dlfcn.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void *a40[1000], *a700[300], *b40[200], *r40[100], *r700[30], *a200[20];
static void *volatile sink;
static atomic_int stop;

static void say(const char *s) { (void)!write(1, s, strlen(s)); }

/* Read by the library when it starts (include/sizeclass.h): empty here;
 * tests/test_stats.c writes a copy of this program whose array holds a
 * settings string in place of the NUL and the marker after it (the
 * program is built with -rdynamic, so that the preloaded library sees
 * it). */
static const char options[256] = "\0@@SC_STATS_PATTERN_OPTIONS@@";
const char *const sizeclass_options = options;

/** STATS_PATTERN_API=NAME=VALUE: the setting through sc_option_set, before
 * the program's first allocation (nothing here allocates). */
static void api_setting(void) {
  if (getenv("STATS_PATTERN_ENABLE_EXACT") != NULL) {
    bool (*enable)(void) = (bool (*)(void))dlsym(RTLD_DEFAULT, "sc_stats_enable_exact");
    say(enable != NULL && enable() ? "api 1\n" : "api 0\n");
    return;
  }
  const char *v = getenv("STATS_PATTERN_API");
  if (v == NULL) return;
  char name[64];
  size_t n = 0;
  while (v[n] != 0 && v[n] != '=' && n + 1 < sizeof(name)) {
    name[n] = v[n];
    n++;
  }
  name[n] = 0;
  bool (*set)(const char *, const char *) =
      (bool (*)(const char *, const char *))dlsym(RTLD_DEFAULT, "sc_option_set");
  say(set != NULL && v[n] == '=' && set(name, v + n + 1) ? "api 1\n" : "api 0\n");
}

static void say_u64(uint64_t v) {
  char buf[24];
  int n = 0;
  do buf[n++] = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  char out[24];
  for (int i = 0; i < n; i++) out[i] = buf[n - 1 - i];
  (void)!write(1, out, (size_t)n);
}

static void alloc_n(void **v, int n, size_t size) {
  for (int i = 0; i < n; i++) v[i] = malloc(size);
}

static void free_range(void **v, int from, int to) {
  for (int i = from; i < to; i++) free(v[i]);
}

static void *thread_b(void *arg) {
  if (arg == NULL) return NULL; /* baseline: the thread only exists */
  free_range(a40, 0, 250);
  free_range(a700, 0, 75);
  alloc_n(b40, 200, 40);
  free_range(b40, 150, 200);
  return NULL;
}

static void *thread_c(void *arg) {
  if (arg == NULL) return NULL;
  sink = malloc(40);
  free(sink);
  return NULL;
}

static void run_thread(void *(*fn)(void *), void *arg) {
  pthread_t t;
  if (pthread_create(&t, NULL, fn, arg) != 0) _exit(3);
  pthread_join(t, NULL);
}

/** The fallback part; prints "fallback total live peak" usable sizes. */
static void fallback_pattern(void) {
  void *f1 = malloc(5000), *f2 = malloc(3000), *f3 = calloc(1, 2000);
  uint64_t u1 = malloc_usable_size(f1), u2 = malloc_usable_size(f2);
  uint64_t u3 = malloc_usable_size(f3);
  f2 = realloc(f2, 6000);
  uint64_t u2b = malloc_usable_size(f2);
  void *f4 = aligned_alloc(4096, 8192);
  uint64_t u4 = malloc_usable_size(f4);
  free(f1);
  sink = f3;
  sink = f4;
  sink = f2;
  say("fallback ");
  say_u64(u1 + u2 + u3 + u2b + u4);
  say(" ");
  say_u64(u2b + u3 + u4);
  say(" ");
  say_u64(u1 + u2b + u3 + u4);
  say("\n");
}

/** Print the report through the API into path (no stdio: open/write). */
static void api_print(const char *path, int format) {
  void (*print)(int, int) = (void (*)(int, int))dlsym(RTLD_DEFAULT, "sc_stats_print");
  if (print == NULL) _exit(4);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) _exit(5);
  print(fd, format);
  close(fd);
}

static int pattern(int argc, char **argv, int real) {
  void *on = real ? (void *)1 : NULL;
  if (real) {
    alloc_n(a40, 1000, 40);
    alloc_n(a700, 300, 700);
    alloc_n(a200, 20, 200);
  }
  run_thread(thread_b, on);
  run_thread(thread_c, on);
  if (real) {
    free_range(a40, 750, 1000);
    free_range(a700, 225, 300);
    alloc_n(r40, 100, 40);
    alloc_n(r700, 30, 700);
    fallback_pattern();
  }
  if (argc >= 4) {
    api_print(argv[2], 0);
    api_print(argv[3], 1);
  }
  return 0;
}

static atomic_int busy_started; /* busy threads past their first allocation */

static void *busy(void *arg) {
  uint64_t x = (uintptr_t)arg * 0x9E3779B97F4A7C15ull + 1;
  void *slots[64] = {0};
  slots[0] = malloc(arg == (void *)3 ? 8 : 40); /* the thread has an arena from here on */
  atomic_fetch_add(&busy_started, 1);
  while (!atomic_load(&stop)) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    unsigned i = x % 64;
    free(slots[i]);
    slots[i] = malloc(arg == (void *)3 ? 8 : 1 + (x >> 20) % 1500);
  }
  return NULL;
}

static void nap_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}

static void *exit_now(void *arg) {
  (void)arg;
  alloc_n(r40, 100, 40);
  exit(0);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "small";
  api_setting();
  say("pid ");
  say_u64((uint64_t)getpid());
  say("\n");
  if (strcmp(mode, "pattern") == 0) return pattern(argc, argv, 1);
  if (strcmp(mode, "baseline") == 0) return pattern(argc, argv, 0);
  if (strcmp(mode, "small") == 0) {
    alloc_n(r40, 10, 40);
    free_range(r40, 0, 5);
    return 0;
  }
  if (strcmp(mode, "fork") == 0) {
    /* With a DIR, each process also prints its own report (JSON) into
     * DIR/f.PID.json through sc_stats_print: for sc_stats_enable_exact,
     * which arms no exit report. */
    const char *dir = argc > 2 ? argv[2] : NULL;
    char path[512];
    alloc_n(r40, 100, 40);
    pid_t pid = fork();
    if (pid == 0) {
      say("child ");
      say_u64((uint64_t)getpid());
      say("\n");
      alloc_n(r700, 10, 700);
      if (dir != NULL) {
        snprintf(path, sizeof(path), "%s/f.%d.json", dir, (int)getpid());
        api_print(path, 1);
      }
      exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (dir != NULL) {
      snprintf(path, sizeof(path), "%s/f.%d.json", dir, (int)getpid());
      api_print(path, 1);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 9;
  }
  if (strcmp(mode, "busy") == 0) {
    pthread_t t[2];
    for (uintptr_t i = 0; i < 2; i++) pthread_create(&t[i], NULL, busy, (void *)(i + 1));
    alloc_n(r40, 100, 40);
    /* Both threads allocate (own an arena) before the exit begins, however
     * slowly a loaded machine starts them. */
    while (atomic_load(&busy_started) < 2) nap_ms(1);
    nap_ms(30);
    return 0; /* the threads are still allocating */
  }
  if (strcmp(mode, "exit-thread") == 0) {
    pthread_t t;
    pthread_create(&t, NULL, exit_now, NULL);
    pthread_join(t, NULL);
    return 7; /* not reached: the thread exits the process */
  }
  if (strcmp(mode, "frames") == 0) {
    void (*mark)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "sc_frame_mark");
    if (mark == NULL) return 4;
    for (int f = 0; f < 10; f++) {
      alloc_n(r40, 5, 40);
      free_range(r40, 0, 5);
      mark();
    }
    return 0;
  }
  if (strcmp(mode, "enable") == 0 && argc > 3) {
    bool (*enable)(void) = (bool (*)(void))dlsym(RTLD_DEFAULT, "sc_stats_enable_exact");
    if (enable == NULL) return 4;
    bool late = strcmp(argv[2], "late") == 0;
    if (late) alloc_n(a40, 10, 40);
    say(enable() ? "enable 1\n" : "enable 0\n");
    alloc_n(r40, 10, 40);
    free_range(r40, 0, 5);
    api_print(argv[3], 1);
    return 0;
  }
  if (strcmp(mode, "signal") == 0 && argc > 2) {
    int sig = atoi(argv[2]);
    pthread_t t;
    pthread_create(&t, NULL, busy, (void *)3);
    alloc_n(a40, 1000, 40);
    raise(sig);
    raise(sig);
    alloc_n(a700, 300, 700);
    raise(sig);
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    return 0;
  }
  return 2;
}
