/* SPDX-License-Identifier: MIT */
/* tags_budget.c — budgets: under tag "audio" (budget from the environment,
 * SIZECLASS_BUDGET='tag:audio=1MiB'), allocate 256-byte blocks one at a
 * time, printing "at N" to stdout before each (so a test sees where an
 * abort stopped it), and never freeing; print "done" at the end.
 * argv[1]: how many blocks (default 8192: 2 MiB).
 * argv[1] "refill": 15 000 blocks of 64 B under "x", all freed, 15 000
 * under "y", then 15 000 under "x" again (1.9 MB live at the end), with
 * "phase N" lines; for a total budget of 1 MiB.
 * argv[1] "fork": a thread registers tag names and allocates under them
 * without pause while the main thread forks 200 times; each child
 * registers a tag, allocates under it and reads the tag and thread
 * tables (5 s at most: SIGALRM). Prints "ok", or "child N hung".
 * argv[1] "dtor": 11 threads named "worker" run one after another, each
 * leaving a block to a thread-specific destructor that frees it after the
 * library's own exit handler; prints "workers N" (the thread table's
 * count of them, and "unnamed N": rows with no name). Each worker keeps
 * 10 blocks of 100 B (live when its destructor runs).
 * argv[1] "many": the main thread, "bigmain", holds 2 MiB; 300 more
 * threads hold 16 B each while the JSON report is printed to stdout.
 * argv[1] "before": 2 MiB of 256 B blocks made before tags are on, a total
 * budget of 3 MiB set (tags on), the main thread's live bytes printed as
 * "main live N", the 2 MiB freed, the budget lowered to 1 MiB and 1.5 MiB
 * made; prints "phase 2" before the 1.5 MiB and "done" at the end.
 * argv[1] "fork_table": a thread "worker" allocates under a tag and waits
 * while the main thread forks; the child prints its thread table's rows
 * as "NAME exited E mine M" (M: the row's tid is the child's).
 * argv[1] "crowd" TOP: 64 threads each hold blocks under a tag of their
 * own while the main thread takes 40 named snapshots; then runs
 * "TOP --once PID" on itself (published with SIZECLASS_LIVE=1) and prints
 * "top rc N".
 * argv[1] "no_rows": tags switched on (sc_tag) when the address space has
 * no room for the thread's counters (RLIMIT_AS), then a free and a malloc
 * under the tag; prints "ok". */
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sizeclass.h"
#include "sizeclass_pool.h"

static void *volatile keep[65536];

/** argv[1] "names": tag names a report must escape, and bad ones. */
static int names(void) {
  static char huge[10001];
  for (int i = 0; i < 10000; i++) huge[i] = 'x';
  const char *list[] = {"", huge, "q\"uote", "new\nline", "<b>html</b>&amp;", "back\\slash"};
  for (unsigned i = 0; i < sizeof(list) / sizeof(list[0]); i++) {
    sc_tag_t prev = sc_tag_enter(sc_tag(list[i]));
    keep[i] = malloc(32);
    sc_tag_leave(prev);
  }
  /* 300 more names: the 256th and later count as untagged, one warning. */
  for (int i = 0; i < 300; i++) {
    char name[16];
    snprintf(name, sizeof(name), "many%d", i);
    if (sc_tag(name) == 0 && i < 200) {
      printf("tag %d refused\n", i);
      return 1;
    }
  }
  printf("done\n");
  return 0;
}

/** argv[1] "pool": a pool created while "particles" is entered, and one
 * given "effects" by sc_pool_set_tag, count their objects under those
 * tags; prints "ok" or what differs. */
static int pools(void) {
  struct sc_pool_config cfg = {.capacity = 200, .policy = SC_POOL_REJECT};
  sc_tag_t particles = sc_tag("particles"), effects = sc_tag("effects");
  sc_tag_t prev = sc_tag_enter(particles);
  sc_pool *a = sc_pool_create(48, &cfg);
  sc_tag_leave(prev);
  sc_pool *b = sc_pool_create(200, &cfg);
  sc_pool_set_tag(b, effects);
  for (int i = 0; i < 100; i++) keep[i] = sc_pool_acquire(a);
  for (int i = 0; i < 30; i++) keep[100 + i] = sc_pool_acquire(b);
  struct sc_tag_stats ts[8];
  size_t n = sc_stats_tags(ts, 8);
  int bad = 0;
  for (size_t i = 0; i < n && i < 8; i++) {
    if (ts[i].id == particles && (ts[i].allocs != 100 || ts[i].classes[2].live_blocks != 100))
      bad++, printf("particles: %llu allocs\n", (unsigned long long)ts[i].allocs);
    if (ts[i].id == effects && (ts[i].allocs != 30 || ts[i].classes[4].live_blocks != 30))
      bad++, printf("effects: %llu allocs\n", (unsigned long long)ts[i].allocs);
  }
  if (n < 3) bad++;
  printf(bad ? "bad\n" : "ok\n");
  return bad != 0;
}

/** argv[1] "scope": SC_TAG_SCOPE enters a tag until the end of its block. */
static void scoped(int n) {
  SC_TAG_SCOPE("scoped");
  for (int i = 0; i < n; i++) keep[i] = malloc(100);
}

static int scope(void) {
  scoped(40);
  keep[40] = malloc(100); /* after the scope: untagged */
  struct sc_tag_stats ts[8];
  size_t n = sc_stats_tags(ts, 8);
  int found = 0;
  for (size_t i = 0; i < n && i < 8; i++)
    if (strcmp(ts[i].name, "scoped") == 0) found = ts[i].classes[3].live_blocks == 40;
  printf(found ? "ok\n" : "bad\n");
  return !found;
}

/** argv[1] "set": budgets set at run time (sc_budget_set) on this thread
 * and on a class; allocates 2048 untagged blocks of 256 B (512 KiB). */
static int set(void) {
  pthread_setname_np(pthread_self(), "budgeter");
  if (!sc_budget_set("thread:budgeter", 256 << 10) || !sc_budget_set("class:256", 384 << 10) ||
      sc_budget_set("class:48", 1) || sc_budget_set("nothing", 1)) {
    printf("sc_budget_set answered wrong\n");
    return 1;
  }
  for (int i = 0; i < 2048; i++) keep[i] = malloc(256);
  printf("done\n");
  return 0;
}

/** argv[1] "snap": named snapshots hold the tags and threads of their
 * moment. Thread "snapper": 400 blocks of 256 B under "audio" and 10 of
 * 64 B under "ui", sc_snapshot("a"); 300 of the audio blocks freed,
 * sc_snapshot("b"). */
static int snap(void) {
  pthread_setname_np(pthread_self(), "snapper");
  sc_tag_t audio = sc_tag("audio"), ui = sc_tag("ui");
  sc_tag_t prev = sc_tag_enter(ui);
  for (int i = 0; i < 10; i++) keep[1000 + i] = malloc(64);
  sc_tag_enter(audio);
  for (int i = 0; i < 400; i++) keep[i] = malloc(256);
  sc_tag_leave(prev);
  if (!sc_snapshot("a")) return 1;
  for (int i = 100; i < 400; i++) free(keep[i]);
  if (!sc_snapshot("b")) return 1;
  printf("done\n");
  return 0;
}

/** The process's virtual size in KiB (VmSize). */
static long vm_kib(void) {
  char line[256];
  long kib = 0;
  FILE *f = fopen("/proc/self/status", "r");
  while (f != NULL && fgets(line, sizeof(line), f) != NULL)
    if (strncmp(line, "VmSize:", 7) == 0) kib = atol(line + 7);
  if (f != NULL) fclose(f);
  return kib;
}

static int no_rows(void) {
  keep[0] = malloc(64); /* the thread's arena, before tags are on */
  struct rlimit lim = {(rlim_t)(vm_kib() + 512) * 1024, RLIM_INFINITY};
  if (setrlimit(RLIMIT_AS, &lim) != 0) return 2;
  sc_tag_t prev = sc_tag_enter(sc_tag("audio"));
  free(keep[0]);
  for (int i = 0; i < 100; i++) keep[i] = malloc(64);
  for (int i = 0; i < 100; i++) free(keep[i]);
  sc_tag_leave(prev);
  (void)!write(1, "ok\n", 3);
  return 0;
}

static int before(void) {
  for (int i = 0; i < 8192; i++) keep[i] = malloc(256);
  if (!sc_budget_set("total", 3 << 20)) return 2;
  static struct sc_thread_stats ts[8];
  size_t n = sc_stats_threads(ts, 8);
  if (n >= 1) printf("main live %llu\n", (unsigned long long)ts[0].live_block_bytes);
  fflush(stdout);
  for (int i = 0; i < 8192; i++) free(keep[i]);
  if (!sc_budget_set("total", 1 << 20)) return 2;
  (void)!write(1, "phase 2\n", 8);
  for (int i = 0; i < 6144; i++) keep[i] = malloc(256);
  (void)!write(1, "done\n", 5);
  return 0;
}

static pthread_barrier_t table_bar;

static void *table_worker(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "worker");
  sc_tag_t prev = sc_tag_enter(sc_tag("net"));
  keep[0] = malloc(200);
  sc_tag_leave(prev);
  pthread_barrier_wait(&table_bar); /* forked while it lives */
  pthread_barrier_wait(&table_bar);
  return NULL;
}

static int fork_table(void) {
  (void)sc_tag("net");
  free(malloc(32)); /* the main thread's arena */
  pthread_barrier_init(&table_bar, NULL, 2);
  pthread_t t;
  if (pthread_create(&t, NULL, table_worker, NULL) != 0) return 2;
  pthread_barrier_wait(&table_bar);
  pid_t pid = fork();
  if (pid == 0) {
    static struct sc_thread_stats ts[8];
    size_t n = sc_stats_threads(ts, 8);
    for (size_t i = 0; i < n && i < 8; i++)
      printf("%s exited %d mine %d\n", ts[i].name, ts[i].exited ? 1 : 0,
             ts[i].tid == (int64_t)getpid());
    fflush(stdout);
    _exit(0);
  }
  waitpid(pid, NULL, 0);
  pthread_barrier_wait(&table_bar);
  pthread_join(t, NULL);
  return 0;
}

static pthread_barrier_t crowd_bar;

static void *crowd_worker(void *arg) {
  char name[16];
  snprintf(name, sizeof(name), "crowd%d", (int)(intptr_t)arg);
  pthread_setname_np(pthread_self(), name);
  sc_tag_t prev = sc_tag_enter(sc_tag(name));
  void *mine[64];
  for (int i = 0; i < 64; i++) mine[i] = malloc((size_t)(16 << (i % 7)));
  sc_tag_leave(prev);
  pthread_barrier_wait(&crowd_bar);
  pthread_barrier_wait(&crowd_bar);
  for (int i = 0; i < 64; i++) free(mine[i]);
  return NULL;
}

static int crowd(const char *top) {
  enum { THREADS = 64 };
  pthread_barrier_init(&crowd_bar, NULL, THREADS + 1);
  static pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++)
    if (pthread_create(&t[i], NULL, crowd_worker, (void *)(intptr_t)i) != 0) return 2;
  pthread_barrier_wait(&crowd_bar);
  for (int i = 0; i < 40; i++) {
    char name[32];
    snprintf(name, sizeof(name), "snap%d", i);
    if (!sc_snapshot(name)) return 2;
  }
  struct timespec ts = {1, 200000000}; /* the helper thread publishes */
  nanosleep(&ts, NULL);
  char cmd[600];
  snprintf(cmd, sizeof(cmd), "%s --once %d >/dev/null", top, (int)getpid());
  int rc = system(cmd);
  printf("top rc %d\n", WIFEXITED(rc) ? WEXITSTATUS(rc) : -1);
  pthread_barrier_wait(&crowd_bar);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  return 0;
}

static pthread_key_t dtor_key;

static void dtor_free(void *p) { free(p); }

static void *dtor_worker(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "worker");
  for (int i = 0; i < 10; i++) keep[100 + 10 * (int)(intptr_t)arg + i] = malloc(100);
  pthread_setspecific(dtor_key, malloc(48));
  return NULL;
}

static int dtors(void) {
  (void)sc_tag("x");
  free(malloc(16)); /* the library's exit key is made first: it runs first */
  if (pthread_key_create(&dtor_key, dtor_free) != 0) return 2;
  for (int i = 0; i < 11; i++) {
    pthread_t t;
    if (pthread_create(&t, NULL, dtor_worker, (void *)(intptr_t)i) != 0) return 2;
    pthread_join(t, NULL);
  }
  static struct sc_thread_stats ts[64];
  size_t n = sc_stats_threads(ts, 64);
  uint64_t workers = 0, allocs = 0, frees = 0, unnamed = 0;
  for (size_t i = 0; i < n && i < 64; i++) {
    if (strcmp(ts[i].name, "worker") == 0) {
      workers += ts[i].count;
      allocs += ts[i].allocs;
      frees += ts[i].frees;
    }
    if (ts[i].name[0] == 0) unnamed++;
  }
  printf("workers %llu allocs %llu frees %llu unnamed %llu\n", (unsigned long long)workers,
         (unsigned long long)allocs, (unsigned long long)frees, (unsigned long long)unnamed);
  return 0;
}

static pthread_barrier_t many_bar;

static void *many_worker(void *arg) {
  (void)arg;
  void *p = malloc(16);
  pthread_barrier_wait(&many_bar);
  pthread_barrier_wait(&many_bar);
  free(p);
  return NULL;
}

static int many(void) {
  enum { THREADS = 300 };
  (void)sc_tag("x");
  for (int i = 0; i < 8192; i++) keep[i] = malloc(256);
  pthread_barrier_init(&many_bar, NULL, THREADS + 1);
  static pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++)
    if (pthread_create(&t[i], NULL, many_worker, NULL) != 0) return 2;
  pthread_setname_np(pthread_self(), "bigmain"); /* not the workers' name */
  pthread_barrier_wait(&many_bar);
  sc_stats_print(1, SC_STATS_JSON);
  pthread_barrier_wait(&many_bar);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  return 0;
}

static atomic_bool fork_stop;

/** fork's other thread: the registry's and the threads' locks, taken and
 * given back all the time. */
static void *registrar(void *arg) {
  (void)arg;
  for (unsigned i = 0; !atomic_load(&fork_stop); i++) {
    char name[16];
    snprintf(name, sizeof(name), "reg%u", i % 200);
    sc_tag_t prev = sc_tag_enter(sc_tag(name));
    free(malloc(48));
    sc_tag_leave(prev);
    static struct sc_thread_stats ts[8];
    (void)sc_stats_threads(ts, 8);
  }
  return NULL;
}

static int forks(void) {
  pthread_t t;
  if (pthread_create(&t, NULL, registrar, NULL) != 0) return 2;
  int bad = 0;
  for (int i = 0; i < 200 && !bad; i++) {
    pid_t pid = fork();
    if (pid < 0) return 2;
    if (pid == 0) {
      alarm(5);
      sc_tag_t prev = sc_tag_enter(sc_tag("child"));
      free(malloc(48));
      sc_tag_leave(prev);
      static struct sc_tag_stats tags[16];
      static struct sc_thread_stats threads[8];
      (void)sc_stats_tags(tags, 16);
      (void)sc_stats_threads(threads, 8);
      _exit(0);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
      printf("child %d hung\n", i);
      bad = 1;
    }
  }
  atomic_store(&fork_stop, true);
  pthread_join(t, NULL);
  if (!bad) printf("ok\n");
  return bad;
}

static int refill(void) {
  sc_tag_t x = sc_tag("x"), y = sc_tag("y");
  sc_tag_t prev = sc_tag_enter(x);
  for (int i = 0; i < 15000; i++) keep[i] = malloc(64);
  for (int i = 0; i < 15000; i++) free(keep[i]);
  (void)!write(1, "phase 2\n", 8); /* no stdio: its buffer is a block too */
  sc_tag_enter(y);
  for (int i = 0; i < 15000; i++) keep[20000 + i] = malloc(64);
  (void)!write(1, "phase 3\n", 8);
  sc_tag_enter(x);
  for (int i = 0; i < 15000; i++) keep[40000 + i] = malloc(64);
  sc_tag_leave(prev);
  printf("done\n");
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "set") == 0) return set();
  if (argc > 1 && strcmp(argv[1], "refill") == 0) return refill();
  if (argc > 1 && strcmp(argv[1], "no_rows") == 0) return no_rows();
  if (argc > 1 && strcmp(argv[1], "fork") == 0) return forks();
  if (argc > 1 && strcmp(argv[1], "dtor") == 0) return dtors();
  if (argc > 1 && strcmp(argv[1], "many") == 0) return many();
  if (argc > 1 && strcmp(argv[1], "before") == 0) return before();
  if (argc > 1 && strcmp(argv[1], "fork_table") == 0) return fork_table();
  if (argc > 2 && strcmp(argv[1], "crowd") == 0) return crowd(argv[2]);
  if (argc > 1 && strcmp(argv[1], "snap") == 0) return snap();
  if (argc > 1 && argv[1][0] == 's') return scope();
  if (argc > 1 && argv[1][0] == 'p') return pools();
  if (argc > 1 && argv[1][0] == 'n') return names();
  int n = argc > 1 ? atoi(argv[1]) : 8192;
  if (n > 65536) n = 65536;
  sc_tag_t audio = sc_tag("audio");
  for (int i = 0; i < n; i++) {
    if (argc > 2) {
      printf("at %d\n", i);
      fflush(stdout);
    }
    sc_tag_t prev = sc_tag_enter(audio);
    keep[i] = malloc(256);
    sc_tag_leave(prev);
  }
  printf("done\n");
  return 0;
}
