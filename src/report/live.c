/* SPDX-License-Identifier: MIT */
/* live.c — the live snapshot (SIZECLASS_LIVE, docs/live.md): the report's
 * figures in a shared-memory file that sizeclass-top reads while the
 * program runs.
 *
 * The file is /dev/shm/sizeclass.<uid>.<pid>, created with O_CREAT|O_EXCL|
 * O_NOFOLLOW and mode 0600 (a name already taken by anything but a stale
 * file of ours — a symbolic link planted there, another user's file — is
 * refused with one warning, never followed), mapped shared, and removed at
 * exit. Files of our user whose process is gone (a SIGKILLed writer) are
 * removed when a publishing process starts, and by sizeclass-top.
 *
 * The file: a fixed header (sc_live_header_t below) and the JSON report
 * (report.c, live form: every key of the report, the last frames of the
 * timeline, no sites) rendered straight into the mapping. A sequence
 * counter, odd while the payload is written, lets readers take a copy and
 * check that it did not change (a seqlock): a reader never blocks the
 * writer, and retries a bounded number of times.
 *
 * When: after each sc_frame_mark (frame.c calls the listener this file
 * registers: the features never call the report), at most once per
 * MARK_GAP_NS, and every 100 ms from a helper thread of the library's own
 * for programs that mark no frames (or stop marking them: a loading
 * screen). The thread exists only while publishing is on; it sleeps, never
 * touches the allocator's locks beyond what a report takes, blocks every
 * signal, and was chosen over a hook in the allocator's slow paths because
 * those would put a clock read (and a 50 µs report) inside some malloc
 * call of the program at random, and an idle program would never publish.
 *
 * Nothing on the malloc/free paths changes. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "report/report.h"
#include "util/os.h"
#include "util/settings.h"
#include "util/startup.h"

#define LIVE_DIR "/dev/shm"
#define LIVE_PREFIX "sizeclass."
#define LIVE_MAGIC "SCLIVE\r\n" /* 8 bytes */
#define LIVE_VERSION 1
/* Payload capacity: the report is tens of KiB; tmpfs keeps only the pages
 * written. */
#define LIVE_CAPACITY ((size_t)1 << 20)
#define MARK_GAP_NS 10000000ull /* at most one snapshot per 10 ms from marks */
#define TICK_NS 100000000ull    /* the helper thread's period: 100 ms */

/* The file's header: fixed little-endian (the host's) 64-bit fields at
 * fixed offsets; docs/live.md and scripts/sizeclass-top read them. */
typedef struct sc_live_header_s {
  char magic[8];           /* LIVE_MAGIC */
  uint32_t version;        /* LIVE_VERSION */
  uint32_t header_size;    /* sizeof(sc_live_header_t): the payload's offset */
  uint64_t capacity;       /* payload bytes the file holds */
  _Atomic uint64_t seq;    /* odd while the payload is being written */
  uint64_t length;         /* payload bytes written (the JSON report) */
  uint64_t pid, uid;       /* the writer */
  uint64_t start_unix_ns;  /* when the library started, ns since the epoch */
  uint64_t update_unix_ns; /* when the payload was last written */
  uint64_t updates;        /* snapshots written */
  uint64_t flags;          /* LIVE_FLAG_* */
  uint64_t write_ns;       /* how long the last snapshot took to write */
  uint64_t reserved[4];
} sc_live_header_t;

_Static_assert(sizeof(sc_live_header_t) == 128, "the header's layout is the file format");

enum { LIVE_FLAG_CUT = 1 }; /* the report did not fit: the payload is cut short */

/* The publisher. `lock` guards everything below; a snapshot takes it with
 * trylock (a mark never waits for the helper thread, nor the reverse). */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static sc_live_header_t *map;     /* the mapping; NULL: not publishing */
static size_t map_size;           /* header + capacity */
static pid_t owner;               /* the process that made the file */
static char path[64];             /* its name */
static uint64_t last_ns;          /* monotonic time of the last snapshot */
static uint64_t rss_ns;           /* monotonic time the resident set was read */
static sc_live_rss_t rss;         /* what it was */
static _Atomic bool thread_on;    /* the helper thread should keep running */
static _Atomic bool thread_alive; /* a helper thread exists */
static bool exit_armed;           /* live_at_exit is registered */

/* ---- small helpers (no allocation, no stdio) ------------------------------------------ */

static size_t put_u64(char *out, uint64_t v) {
  char tmp[24];
  size_t n = 0;
  do tmp[n++] = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  for (size_t i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
  return n;
}

/** "/dev/shm/sizeclass.<uid>.<pid>" into out (64 bytes). */
static void live_path(char *out, uint64_t uid, uint64_t pid) {
  static const char head[] = LIVE_DIR "/" LIVE_PREFIX;
  size_t n = sizeof(head) - 1;
  memcpy(out, head, n);
  n += put_u64(out + n, uid);
  out[n++] = '.';
  n += put_u64(out + n, pid);
  out[n] = 0;
}

static uint64_t realtime_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/** A decimal number spanning s[0..n) exactly; false otherwise. */
static bool parse_u64(const char *s, size_t n, uint64_t *out) {
  uint64_t v = 0;
  if (n == 0 || n > 19) return false;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (uint64_t)(s[i] - '0');
  }
  *out = v;
  return true;
}

/* ---- stale files ----------------------------------------------------------------------- */

/** Remove /dev/shm/sizeclass.<our uid>.<pid> files whose process is gone
 * (getdents64: opendir would allocate). Only our user's regular files. */
static void remove_stale(void) {
  int dir = sc__os_open(LIVE_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (dir < 0) return;
  uint64_t uid = getuid();
  char buf[4096] __attribute__((aligned(8)));
  for (;;) {
    long got = syscall(SYS_getdents64, dir, buf, sizeof(buf));
    if (got <= 0) break;
    for (long off = 0; off < got;) {
      struct {
        uint64_t ino;
        int64_t off;
        unsigned short reclen;
        unsigned char type;
        char name[];
      } *d = (void *)(buf + off);
      off += d->reclen;
      size_t plen = sizeof(LIVE_PREFIX) - 1;
      if (strncmp(d->name, LIVE_PREFIX, plen) != 0) continue;
      const char *u = d->name + plen, *dot = strchr(u, '.');
      uint64_t fuid, fpid;
      if (dot == NULL || !parse_u64(u, (size_t)(dot - u), &fuid) ||
          !parse_u64(dot + 1, strlen(dot + 1), &fpid) || fuid != uid || fpid == 0 ||
          fpid > 0x7fffffff || fpid == (uint64_t)getpid())
        continue;
      if (kill((pid_t)fpid, 0) == 0 || errno != ESRCH) continue; /* alive (or not ours to ask) */
      struct stat st;
      if (fstatat(dir, d->name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
          st.st_uid == (uid_t)uid)
        unlinkat(dir, d->name, 0);
    }
  }
  close(dir);
}

/* ---- the file ----------------------------------------------------------------------------- */

/** Create and map the file; false, with one warning, when refused. */
static bool live_open(void) {
  char name[64];
  live_path(name, getuid(), (uint64_t)getpid());
  int fd = -1;
  for (int attempt = 0; attempt < 2 && fd < 0; attempt++) {
    fd = sc__os_open(name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0 || errno != EEXIST || attempt > 0) break;
    /* Our own regular file under our pid is a dead process's (the pid
     * came round again): replace it. Anything else stays, refused. */
    struct stat st;
    if (lstat(name, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != getuid() ||
        unlink(name) != 0) {
      errno = EEXIST;
      break;
    }
  }
  if (fd < 0) {
    sc__setting_warn(SC_SET_LIVE,
                     errno == EEXIST ? "cannot create the snapshot file (something else is at "
                                       "its name in " LIVE_DIR ")"
                                     : "cannot create the snapshot file in " LIVE_DIR,
                     "nothing is published");
    return false;
  }
  size_t size = sizeof(sc_live_header_t) + LIVE_CAPACITY;
  void *m = MAP_FAILED;
  if (fchmod(fd, 0600) == 0 && ftruncate(fd, (off_t)size) == 0)
    m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (m == MAP_FAILED) {
    unlink(name);
    sc__setting_warn(SC_SET_LIVE, "cannot map the snapshot file", "nothing is published");
    return false;
  }
  sc_live_header_t *h = m;
  atomic_store_explicit(&h->seq, 1, memory_order_relaxed); /* nothing written yet */
  h->version = LIVE_VERSION;
  h->header_size = sizeof(sc_live_header_t);
  h->capacity = LIVE_CAPACITY;
  h->pid = (uint64_t)getpid();
  h->uid = getuid();
  uint64_t mono = sc__os_now_ns(), real = realtime_ns();
  uint64_t ran =
      sc__stats_start_ns != 0 && mono > sc__stats_start_ns ? mono - sc__stats_start_ns : 0;
  h->start_unix_ns = real > ran ? real - ran : real;
  memcpy(h->magic, LIVE_MAGIC, 8); /* last: a reader sees the magic on a whole header */
  memcpy(path, name, sizeof(path));
  map = h;
  map_size = size;
  owner = getpid();
  last_ns = rss_ns = 0;
  return true;
}

/** Unmap and remove the file (under the lock, or at exit). */
static void live_close(void) {
  if (map == NULL) return;
  if (getpid() == owner) unlink(path);
  munmap(map, map_size);
  map = NULL;
}

/* ---- one snapshot ---------------------------------------------------------------------- */

/** Write one snapshot now unless one was written less than `gap` ns ago or
 * another thread is writing one. */
static void publish(uint64_t gap) {
  if (pthread_mutex_trylock(&lock) != 0) return;
  uint64_t now = sc__os_now_ns();
  if (map != NULL && getpid() == owner && (last_ns == 0 || now - last_ns >= gap)) {
    sc_live_header_t *h = map;
    uint64_t seq = atomic_load_explicit(&h->seq, memory_order_relaxed);
    if ((seq & 1) == 0) atomic_store_explicit(&h->seq, ++seq, memory_order_relaxed);
    atomic_thread_fence(memory_order_release); /* odd before any payload byte */
    bool cut = false;
    char *payload = (char *)h + sizeof(*h);
    if (rss_ns == 0 || now - rss_ns >= TICK_NS) {
      sc__stats_rss(&rss.peak, &rss.now);
      rss_ns = now;
    }
    h->length = sc__report_live(payload, LIVE_CAPACITY, &rss, &cut);
    h->flags = cut ? LIVE_FLAG_CUT : 0;
    h->update_unix_ns = realtime_ns();
    h->updates++;
    last_ns = sc__os_now_ns();
    h->write_ns = last_ns - now;
    atomic_store_explicit(&h->seq, seq + 1, memory_order_release);
  }
  pthread_mutex_unlock(&lock);
}

/** sc_frame_mark's listener (features/frame.c). */
static void on_mark(void) { publish(MARK_GAP_NS); }

/* ---- the helper thread --------------------------------------------------------------------- */

static void *helper(void *arg) {
  (void)arg;
  remove_stale(); /* here: the program's start does not wait for the scan */
  publish(0);
  while (atomic_load_explicit(&thread_on, memory_order_acquire)) {
    struct timespec ts = {0, (long)TICK_NS};
    nanosleep(&ts, NULL);
    if (atomic_load_explicit(&thread_on, memory_order_acquire)) publish(TICK_NS);
  }
  atomic_store_explicit(&thread_alive, false, memory_order_release);
  return NULL;
}

/** Start the helper thread, every signal blocked in it; false when the
 * system refuses a thread. */
static bool start_helper(void) {
  atomic_store_explicit(&thread_on, true, memory_order_release);
  if (atomic_load_explicit(&thread_alive, memory_order_acquire)) return true;
  pthread_attr_t attr;
  sigset_t all, old;
  pthread_t t;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 256 << 10); /* a report's frames, no more */
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  atomic_store_explicit(&thread_alive, true, memory_order_release);
  int rc = pthread_create(&t, &attr, helper, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    atomic_store_explicit(&thread_alive, false, memory_order_release);
    return false;
  }
  pthread_setname_np(t, "sizeclass-live");
  return true;
}

/* ---- switching it on and off ---------------------------------------------------------------- */

static void live_at_exit(void) {
  atomic_store_explicit(&thread_on, false, memory_order_release);
  atomic_store_explicit(&sc__frame_listener, NULL, memory_order_release);
  /* A snapshot in progress on another thread finishes in microseconds;
   * exit must not hang on it either way. */
  for (int i = 0; i < 1000 && pthread_mutex_trylock(&lock) != 0; i++) {
    struct timespec ts = {0, 10000};
    nanosleep(&ts, NULL);
  }
  if (map != NULL && getpid() == owner) unlink(path);
}

void sc__live_remove(void) {
  if (map != NULL && getpid() == owner) unlink(path);
}

/** A forked child does not publish: the mapping is its parent's file. */
static void live_fork_child(void) {
  pthread_mutex_init(&lock, NULL);
  atomic_store(&thread_on, false);
  atomic_store(&thread_alive, false);
  atomic_store(&sc__frame_listener, NULL);
  if (map != NULL) munmap(map, map_size);
  map = NULL;
}

sc_startup void sc__live_configure(void) {
  bool on = sc__setting(SC_SET_LIVE) != 0;
  pthread_mutex_lock(&lock);
  if (on && map == NULL && live_open()) {
    if (!exit_armed) {
      atexit(live_at_exit);
      sc__os_atfork(NULL, NULL, live_fork_child);
      exit_armed = true;
    }
    if (!start_helper())
      sc__setting_warn(SC_SET_LIVE, "cannot start its thread", "published at frame marks only");
  } else if (!on && map != NULL) {
    atomic_store_explicit(&thread_on, false, memory_order_release);
    live_close();
  }
  atomic_store_explicit(&sc__frame_listener, map != NULL ? on_mark : NULL, memory_order_release);
  pthread_mutex_unlock(&lock);
}

/* Armed at load (its own constructor: the core does not depend on the
 * report). */
__attribute__((constructor)) static void live_on_load(void) { sc__live_configure(); }
