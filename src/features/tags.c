/* SPDX-License-Identifier: MIT */
/* tags.c — tags and threads (tags.h): the registry of tag names, the
 * calling thread's tag, each arena's rows, the trigger (peaks, budgets),
 * the hooks of the paths that are not the tag-aware fast paths, and the
 * figures the report and sc_stats_tags / sc_stats_threads read. Nothing
 * here allocates. */
#include "features/tags.h"

#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "core/sys_record.h"
#include "features/budget.h"
#include "sizeclass.h"
#include "util/os.h"

bool sc__tags_on;

/* A row whose headroom is always negative: a thread's tag row until it
 * has an arena with rows (the trigger then finds its real row). */
static sc_tag_row_t dummy_row = {.x.headroom = {[0 ... SC_CLASSES - 1] = INT64_MIN / 2}};

sc_tls sc_tag_tls_t sc__tag_tls = {.row = &dummy_row};

/* ---- the registry ---------------------------------------------------------------- */

static pthread_mutex_t tags_lock = PTHREAD_MUTEX_INITIALIZER;
/* Zero, in .bss (resident only once tags are registered): tag 0's name is
 * a constant (sc__tag_name). */
static char tag_names[SC_TAGS][SC_TAG_NAME_MAX + 1];
static _Atomic unsigned tag_count = 1;
static _Atomic bool warned_full, warned_empty, warned_long, warned_off, warned_unknown;

/** One warning per kind, ever. */
static void warn_once(_Atomic bool *flag, const char *msg) {
  if (!atomic_exchange_explicit(flag, true, memory_order_relaxed)) sc__warn(msg);
}

const char *sc__tag_name(unsigned t) {
  if (t == 0) return "untagged";
  return t < atomic_load_explicit(&tag_count, memory_order_acquire) ? tag_names[t] : NULL;
}

unsigned sc__tag_count(void) { return atomic_load_explicit(&tag_count, memory_order_acquire); }

unsigned sc__tag_register(const char *name) {
  size_t len = strnlen(name, SC_TAG_NAME_MAX);
  pthread_mutex_lock(&tags_lock);
  unsigned n = atomic_load_explicit(&tag_count, memory_order_relaxed), t;
  for (t = 1; t < n; t++)
    if (strncmp(tag_names[t], name, len) == 0 && tag_names[t][len] == 0) break;
  if (t == n) {
    if (n == SC_TAGS) {
      t = 0;
    } else {
      memcpy(tag_names[t], name, len);
      tag_names[t][len] = 0;
      atomic_store_explicit(&tag_count, n + 1, memory_order_release);
    }
  }
  pthread_mutex_unlock(&tags_lock);
  if (t == 0)
    warn_once(&warned_full,
              "sc_tag: 255 tags are registered already: a new tag name counts as "
              "untagged");
  return t;
}

sc_public sc_tag_t sc_tag(const char *name) {
  sc__init();
  if (name == NULL || name[0] == 0) {
    warn_once(&warned_empty, "sc_tag: an empty tag name; its allocations count as untagged");
    return 0;
  }
  if (strnlen(name, SC_TAG_NAME_MAX + 1) > SC_TAG_NAME_MAX)
    warn_once(&warned_long, "sc_tag: a tag name longer than 63 bytes is cut to 63");
  if (!sc__tags_on && !sc__tags_start())
    warn_once(&warned_off,
              "sc_tag: tags are not counted: they need exact statistics "
              "(SIZECLASS_STATS_EXACT=1, SIZECLASS_STATS=..., or SIZECLASS_BUDGET) "
              "without SIZECLASS_CHECK");
  return sc__tag_register(name);
}

/** Mark row t of arena a used (its owner, or a slow path). */
static void row_used(sc_arena_t *a, unsigned t) {
  uint64_t *w = &sc__tag_thread_of(a)->used[t / 64];
  uint64_t bit = (uint64_t)1 << (t % 64);
  if ((__atomic_load_n(w, __ATOMIC_RELAXED) & bit) == 0)
    __atomic_fetch_or(w, bit, __ATOMIC_RELAXED);
}

/** Note the calling thread's id and name in its arena's record. */
static void thread_identity(sc_tag_thread_t *tt) {
  tt->tid = (int32_t)gettid();
  char name[16] = {0};
  prctl(PR_GET_NAME, name, 0, 0, 0);
  memcpy(tt->name, name, sizeof(name));
}

/** True once a thread noted its id in record tt. */
static inline bool tt_identified(const sc_tag_thread_t *tt) { return tt->tid != 0; }

/** Point the calling thread's row at its tag's in its arena. */
static void thread_row_set(void) {
  sc_arena_t *a = sc__thread.arena;
  if (a == NULL || sc__tag_rows_counted(a) == NULL) {
    sc__tag_row = &dummy_row;
    return;
  }
  /* A thread that bound its arena before tags were on: its record. */
  sc_tag_thread_t *tt = sc__tag_thread_of(a);
  if (tt->tid == 0 && !tt->exited && !sc__thread_has_exited()) thread_identity(tt);
  row_used(a, sc__tag_cur);
  sc__tag_row = sc__tag_row_of(a, sc__tag_cur);
}

void sc__tags_set_cur(unsigned t) {
  sc__tag_cur = (uint8_t)t;
  thread_row_set();
}

sc_public sc_tag_t sc_tag_enter(sc_tag_t tag) {
  sc_tag_t prev = sc__tag_tls.code;
  if (tag >= sc__tag_count()) {
    warn_once(&warned_unknown, "sc_tag_enter: not a tag from sc_tag(); counted as untagged");
    tag = 0;
  }
  sc__tag_tls.code = (uint8_t)tag;
  sc__tag_cur = (uint8_t)tag;
  if (sc__tag_tls.rule_code) sc__tag_tls.rule_len = 0; /* its tag was the code's */
  if (sc__tags_on) thread_row_set();
  return prev;
}

sc_public void sc_tag_leave(sc_tag_t previous) { (void)sc_tag_enter(previous); }

/* ---- rows ------------------------------------------------------------------------------- */

/* Arenas by id, for the system route's records (24 bits of an id: the
 * record's word has 8 for the tag): chunks of BY_ID_CHUNK slots, mapped as
 * ids reach them (an id past them all, or a chunk the OS refused: its
 * system blocks are not counted per thread). */
#define BY_ID_CHUNK 4096
#define BY_ID_CHUNKS 4096
typedef _Atomic(sc_arena_t *) arena_slot_t;
static _Atomic(arena_slot_t *) arenas_by_id[BY_ID_CHUNKS];

/** The slot of arena id `id`, its chunk mapped if `make`; NULL if none. */
static arena_slot_t *by_id_slot(uint64_t id, bool make) {
  if (id + 1 >= (uint64_t)BY_ID_CHUNK * BY_ID_CHUNKS) return NULL; /* id + 1: 24 bits */
  _Atomic(arena_slot_t *) *chunk = &arenas_by_id[id / BY_ID_CHUNK];
  arena_slot_t *slots = atomic_load_explicit(chunk, memory_order_acquire);
  if (slots == NULL && make) {
    size_t size = BY_ID_CHUNK * sizeof(arena_slot_t);
    arena_slot_t *fresh = sc__os_map_aligned(size, 4096);
    if (fresh == NULL) return NULL;
    if (atomic_compare_exchange_strong_explicit(chunk, &slots, fresh, memory_order_acq_rel,
                                                memory_order_acquire))
      slots = fresh;
    else
      sc__os_unmap(fresh, size); /* another thread's came first: slots is it */
  }
  if (slots == NULL) return NULL;
  return &slots[id % BY_ID_CHUNK];
}

/* The sink (tags.h): .bss, resident only where written. */
static sc_tag_row_t sink_rows[SC_TAGS + 1] __attribute__((aligned(4096)));
sc_tag_row_t *const sc__tag_sink = sink_rows;
static _Atomic bool warned_sink;

/** Arena a's rows, mapped once (any thread; a CAS settles a race); when
 * the OS refuses them, the sink (its paths must find rows: a free reads
 * its block's row), false, and one warning. */
static bool rows_map(sc_arena_t *a) {
  if (__atomic_load_n(&a->tag_rows, __ATOMIC_ACQUIRE) != NULL) return true;
  size_t size = (size_t)(SC_TAGS + 1) << SC_TAG_ROW_SHIFT;
  sc_tag_row_t *rows = sc__os_map_aligned(size, 4096);
  if (rows == NULL) {
    sc_tag_row_t *none = NULL;
    __atomic_compare_exchange_n(&a->tag_rows, &none, sink_rows, false, __ATOMIC_RELEASE,
                                __ATOMIC_ACQUIRE);
    warn_once(&warned_sink,
              "tags: the OS refused a thread's tag counters (2 MiB): its blocks are not "
              "counted by tag or thread");
    return false;
  }
  sc_tag_row_t *none = NULL;
  if (!__atomic_compare_exchange_n(&a->tag_rows, &none, rows, false, __ATOMIC_RELEASE,
                                   __ATOMIC_ACQUIRE))
    sc__os_unmap(rows, size);
  arena_slot_t *slot = by_id_slot(a->id, true);
  if (slot != NULL) atomic_store_explicit(slot, a, memory_order_release);
  return true;
}

/** Map arena a's rows (an arena the OS refuses them writes into the
 * sink, with a warning: tags stay on). */
static void rows_map_each(sc_arena_t *a, void *ctx) {
  (void)ctx;
  (void)rows_map(a);
}

/** The install hook of seam.c: it points the exact paths at the tag-aware ones. */
void sc__seam_tags_install(void);

bool sc__tags_start(void) {
  static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
  if (__atomic_load_n(&sc__tags_on, __ATOMIC_ACQUIRE)) return true;
  uint32_t f = sc__features;
  if ((f & SC_FEATURE_EXACT) == 0 || (f & (SC_FEATURE_CHECK | SC_FEATURE_FRAME_CHECK)) != 0)
    return false;
  pthread_mutex_lock(&start_lock);
  if (!sc__tags_on) {
    /* On first (threads binding from now on map their own rows), then
     * every arena's rows, then the paths. */
    __atomic_store_n(&sc__tags_on, true, __ATOMIC_SEQ_CST);
    sc__arenas_foreach(rows_map_each, NULL);
    sc__seam_tags_install();
    thread_row_set();
  }
  pthread_mutex_unlock(&start_lock);
  return true;
}

/* ---- threads ---------------------------------------------------------------------------- */

/* Exited threads whose arena was adopted: folded by name. */
#define EXITED_ROWS 64
typedef struct {
  char name[16];
  uint64_t count, allocs, peak_block_bytes, sys_allocs;
} exited_t;
static exited_t exited[EXITED_ROWS];
static unsigned exited_n;
static pthread_mutex_t exited_lock = PTHREAD_MUTEX_INITIALIZER;

/** Allocations (class and system) of arena a's rows. */
static void arena_allocs(const sc_arena_t *a, uint64_t *allocs, uint64_t *sys_allocs);

/** Fold the ended thread of record tt (allocs, sys: its arena's figures
 * now) into the exited threads' row of its name. */
static void fold_exited(const sc_tag_thread_t *tt, uint64_t allocs, uint64_t sys) {
  pthread_mutex_lock(&exited_lock);
  unsigned i;
  for (i = 0; i < exited_n; i++)
    if (strncmp(exited[i].name, tt->name, sizeof(tt->name)) == 0) break;
  if (i == exited_n && exited_n < EXITED_ROWS) memcpy(exited[exited_n++].name, tt->name, 16);
  if (i == EXITED_ROWS) i = EXITED_ROWS - 1; /* the last row takes the rest */
  exited[i].count++;
  exited[i].allocs += allocs - tt->base_allocs;
  exited[i].sys_allocs += sys - tt->base_sys_allocs;
  if (tt->peak_block_bytes > exited[i].peak_block_bytes)
    exited[i].peak_block_bytes = tt->peak_block_bytes;
  pthread_mutex_unlock(&exited_lock);
}

void sc__tags_bind(sc_arena_t *a) {
  /* An arena borrowed by an ending thread (a free after its exit handler)
   * is no new thread: its record stays the last owner's. */
  if (!rows_map(a) || sc__tag_rows_counted(a) == NULL || sc__thread_has_exited()) {
    thread_row_set();
    return;
  }
  sc_tag_thread_t *tt = sc__tag_thread_of(a);
  if (tt->exited) { /* adopted: the thread before is folded under its name */
    uint64_t allocs, sys;
    arena_allocs(a, &allocs, &sys);
    if (tt_identified(tt)) fold_exited(tt, allocs, sys); /* else no thread's: nothing to fold */
    tt->base_allocs = allocs;
    tt->base_sys_allocs = sys;
    tt->peak_block_bytes = tt->sys_peak = 0;
    tt->exited = 0;
  }
  thread_identity(tt);
  thread_row_set();
}

void sc__tags_thread_exit(sc_arena_t *a) {
  if (sc__tag_rows_counted(a) == NULL || sc__thread_has_exited()) {
    sc__tag_row = &dummy_row;
    return;
  }
  sc_tag_thread_t *tt = sc__tag_thread_of(a);
  char name[16] = {0};
  prctl(PR_GET_NAME, name, 0, 0, 0);
  memcpy(tt->name, name, sizeof(name));
  tt->exited = 1;
  sc__tag_row = &dummy_row;
}

/** In a fork's child: arena a's thread did not come along (the forking
 * thread's arena: its id changed). */
static void fork_child_arena(sc_arena_t *a, void *ctx) {
  (void)ctx;
  if (sc__tag_rows_counted(a) == NULL) return;
  sc_tag_thread_t *tt = sc__tag_thread_of(a);
  if (a == sc__thread.arena)
    thread_identity(tt);
  else if (tt_identified(tt))
    tt->exited = 1;
}

void sc__tags_fork(int phase) {
  /* The forking thread's arena first: binding one takes exited_lock. */
  if (phase == 0) (void)sc__arena_get();
  sc__lock_fork(&tags_lock, phase);
  sc__lock_fork(&exited_lock, phase);
  if (phase == 2) sc__arenas_foreach_unlocked(fork_child_arena, NULL);
}

/* ---- figures ---------------------------------------------------------------------------- */

static inline uint64_t load(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
static inline int64_t loadi(const int64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

/** Owner-view live blocks of class c in row r. */
static inline int64_t row_live(const sc_tag_row_t *r, unsigned c) {
  return (int64_t)load(&r->x.peak[c]) - loadi(&r->x.headroom[c]);
}

static inline bool row_is_used(const sc_arena_t *a, unsigned t) {
  return (load(&sc__tag_thread_of(a)->used[t / 64]) >> (t % 64)) & 1;
}

/** Allocations counted in exact counters x (a row's, or an arena's). */
static uint64_t exact_allocs(const sc_exact_t *x) {
  uint64_t n = 0;
  for (unsigned b = 0; b < SC_BUCKETS; b++) n += load(&x->hist[b]);
  for (unsigned c = 0; c < SC_CLASSES; c++)
    for (unsigned b = 0; b < SC_BUCKETS; b++) n += load(&x->hist_aligned[c][b]);
  return n;
}

static void arena_allocs(const sc_arena_t *a, uint64_t *allocs, uint64_t *sys_allocs) {
  *allocs = exact_allocs(&a->exact); /* before tags were on */
  *sys_allocs = 0;
  for (unsigned t = 0; t < SC_TAGS; t++) {
    if (!row_is_used(a, t)) continue;
    const sc_tag_row_t *r = sc__tag_row_of(a, t);
    *allocs += exact_allocs(&r->x);
    *sys_allocs += load(&r->sys_allocs);
  }
}

/** Owner-view live block bytes of arena a's rows, and system bytes. */
int64_t sc__tags_before_live(const sc_arena_t *a, unsigned c) {
  return (int64_t)load(&a->exact.peak[c]) - loadi(&a->exact.headroom[c]);
}

static void arena_live(const sc_arena_t *a, uint64_t *bytes, uint64_t *sys) {
  int64_t b = 0, s = 0;
  /* Blocks made before tags were on (their frees count in row 0). */
  for (unsigned c = 0; c < SC_CLASSES; c++)
    b += sc__tags_before_live(a, c) * (int64_t)sc__class_size(c);
  const uint64_t *used = sc__tag_thread_of(a)->used;
  for (unsigned w = 0; w < SC_TAGS / 64; w++)
    for (uint64_t bits = load(&used[w]); bits != 0; bits &= bits - 1) {
      unsigned t = w * 64 + (unsigned)__builtin_ctzll(bits);
      const sc_tag_row_t *r = sc__tag_row_of(a, t);
      for (unsigned c = 0; c < SC_CLASSES; c++) b += row_live(r, c) * (int64_t)sc__class_size(c);
      s +=
          (int64_t)(load(&r->sys_made) - atomic_load_explicit(&r->sys_freed, memory_order_relaxed));
    }
  *bytes = b > 0 ? (uint64_t)b : 0;
  *sys = s > 0 ? (uint64_t)s : 0;
}

/** Live block bytes of arena a's thread: its rows less its blocks that
 * other threads freed and that are not drained yet. */
static uint64_t thread_live_bytes(const sc_arena_t *a, uint64_t *sys) {
  uint64_t owner;
  arena_live(a, &owner, sys);
  const sc_tag_thread_t *tt = sc__tag_thread_of(a);
  int64_t pending = 0;
  for (unsigned c = 0; c < SC_CLASSES; c++)
    pending += (int64_t)(atomic_load_explicit(&tt->remote_in[c], memory_order_relaxed) -
                         load(&tt->drained[c])) *
               (int64_t)sc__class_size(c);
  return owner > (uint64_t)pending ? owner - (uint64_t)pending : 0;
}

uint64_t sc__tags_thread_live(const sc_arena_t *a) {
  uint64_t sys, b = thread_live_bytes(a, &sys);
  return b + sys;
}

/* A walk summing one tag's figures over the arenas. */
typedef struct {
  unsigned t;
  int64_t live[SC_CLASSES];
  uint64_t peak[SC_CLASSES], allocs[SC_CLASSES];
  uint64_t req_live, req_peak, peak_block_bytes, sys_live, sys_peak;
  uint64_t all;
} tag_sum_t;

/** What arena a counted in its exact tier before tags were on: untagged. */
static void tag_sum_before(const sc_arena_t *a, tag_sum_t *s) {
  const sc_exact_t *x = &a->exact;
  for (unsigned c = 0; c < SC_CLASSES; c++) {
    s->live[c] += sc__tags_before_live(a, c);
    s->peak[c] += load(&x->peak[c]);
    uint64_t n = 0;
    for (unsigned b = 0; b < SC_BUCKETS; b++) {
      n += load(&x->hist_aligned[c][b]);
      if (sc__class_of_granule[b] == c) n += load(&x->hist[b]);
    }
    s->allocs[c] += n;
    s->req_live += load(&x->req_total[c]) - load(&x->req_freed[c]) - load(&x->req_remote[c]);
    s->req_peak += load(&x->req_peak[c]);
  }
}

static void tag_sum_arena(sc_arena_t *a, void *ctx) {
  tag_sum_t *s = ctx;
  if (s->t == 0) tag_sum_before(a, s);
  if (sc__tag_rows_counted(a) == NULL || !row_is_used(a, s->t)) return;
  const sc_tag_row_t *r = sc__tag_row_of(a, s->t);
  for (unsigned c = 0; c < SC_CLASSES; c++) {
    s->live[c] +=
        row_live(r, c) - (int64_t)load(&r->remote_blocks[c]) + (int64_t)load(&r->drained_blocks[c]);
    s->peak[c] += load(&r->peak[c]);
    uint64_t n = 0;
    for (unsigned b = 0; b < SC_BUCKETS; b++) {
      n += load(&r->x.hist_aligned[c][b]);
      if (sc__class_of_granule[b] == c) n += load(&r->x.hist[b]);
    }
    s->allocs[c] += n;
    s->req_live += load(&r->x.req_total[c]) - load(&r->x.req_freed[c]) - load(&r->x.req_remote[c]);
    s->req_peak += load(&r->x.req_peak[c]);
  }
  s->peak_block_bytes += load(&r->peak_block_bytes);
  s->sys_live += load(&r->sys_made) - atomic_load_explicit(&r->sys_freed, memory_order_relaxed);
  s->sys_peak += load(&r->sys_peak);
}

/* Frees of class blocks by threads without an arena, per tag and class. */
static _Atomic uint64_t orphan_frees[SC_TAGS][SC_CLASSES];

static void tag_sum(unsigned t, tag_sum_t *s, bool unlocked) {
  memset(s, 0, sizeof(*s));
  s->t = t;
  if (unlocked)
    sc__arenas_foreach_unlocked(tag_sum_arena, s);
  else
    sc__arenas_foreach(tag_sum_arena, s);
  for (unsigned c = 0; c < SC_CLASSES; c++)
    s->live[c] -= (int64_t)atomic_load_explicit(&orphan_frees[t][c], memory_order_relaxed);
}

uint64_t sc__tags_tag_live(unsigned t) {
  tag_sum_t s;
  tag_sum(t, &s, true);
  int64_t b = 0;
  for (unsigned c = 0; c < SC_CLASSES; c++) b += s.live[c] * (int64_t)sc__class_size(c);
  return (b > 0 ? (uint64_t)b : 0) + s.sys_live;
}

size_t sc__tags_fill(struct sc_tag_stats *out, size_t cap, bool unlocked) {
  unsigned n = sc__tag_count();
  if (!sc__tags_on) return 0;
  for (unsigned t = 0; t < n && t < cap; t++) {
    struct sc_tag_stats *o = &out[t];
    tag_sum_t s;
    tag_sum(t, &s, unlocked);
    memset(o, 0, sizeof(*o));
    const char *name = sc__tag_name(t);
    memcpy(o->name, name, strnlen(name, sizeof(o->name) - 1)); /* o is zeroed */
    o->id = t;
    o->budget = sc__budget_of_tag(t);
    for (unsigned c = 0; c < SC_CLASSES; c++) {
      uint64_t live = s.live[c] > 0 ? (uint64_t)s.live[c] : 0;
      o->classes[c].size = sc__class_size(c);
      o->classes[c].live_blocks = live;
      o->classes[c].peak_live_blocks = s.peak[c];
      o->classes[c].allocs = s.allocs[c];
      o->allocs += s.allocs[c];
      o->live_blocks += live;
      o->live_block_bytes += live * sc__class_size(c);
    }
    o->frees = o->allocs - o->live_blocks;
    o->live_requested_bytes = o->live_blocks ? s.req_live : 0;
    o->peak_requested_bytes = s.req_peak;
    o->peak_block_bytes = s.peak_block_bytes;
    o->system_live_bytes = (int64_t)s.sys_live > 0 ? s.sys_live : 0;
    o->system_peak_bytes = s.sys_peak;
  }
  return n;
}

sc_public size_t sc_stats_tags(struct sc_tag_stats *out, size_t cap) {
  return sc__tags_fill(out, cap, false);
}

/** The name of thread tid now (/proc/self/task/TID/comm: open and read
 * only, safe in a signal handler); false when it cannot be read. */
static bool comm_of(int32_t tid, char name[16]) {
  char path[48] = "/proc/self/task/";
  size_t len = strlen(path);
  char digits[12];
  size_t n = 0;
  uint32_t v = (uint32_t)tid;
  do digits[n++] = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  while (n > 0) path[len++] = digits[--n];
  memcpy(path + len, "/comm", 6);
  int fd = sc__os_open(path, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return false;
  ssize_t r = read(fd, name, 15);
  close(fd);
  if (r <= 0) return false;
  name[r] = 0;
  if (r > 0 && name[r - 1] == '\n') name[r - 1] = 0;
  return true;
}

typedef struct {
  struct sc_thread_stats *out;
  size_t cap, n;
  bool largest; /* out of room: keep the rows with the most live bytes */
} threads_walk_t;

/** The row of out[0..cap) with the fewest live bytes. */
static struct sc_thread_stats *thread_smallest(const threads_walk_t *w) {
  struct sc_thread_stats *min = &w->out[0];
  for (size_t i = 1; i < w->cap; i++)
    if (w->out[i].live_block_bytes + w->out[i].system_live_bytes <
        min->live_block_bytes + min->system_live_bytes)
      min = &w->out[i];
  return min;
}

/** Add a thread's row (or fold it into its name's row of exited threads);
 * the row written, or NULL when out has no room for it. */
static struct sc_thread_stats *thread_add(threads_walk_t *w, const char *name, int64_t tid, bool ex,
                                          uint64_t count, uint64_t allocs, uint64_t frees,
                                          uint64_t live, uint64_t peak, uint64_t sys_live) {
  /* Exited threads of one name are one row. */
  if (ex)
    for (size_t i = 0; i < w->n && i < w->cap; i++) {
      struct sc_thread_stats *o = &w->out[i];
      if (!o->exited || strncmp(o->name, name, sizeof(o->name)) != 0) continue;
      o->count += count;
      o->allocs += allocs;
      o->frees += frees;
      o->live_block_bytes += live;
      if (peak > o->peak_block_bytes) o->peak_block_bytes = peak;
      o->system_live_bytes += sys_live;
      return o;
    }
  struct sc_thread_stats *o = NULL;
  if (w->n < w->cap) {
    o = &w->out[w->n];
  } else if (w->largest && w->cap > 0) {
    struct sc_thread_stats *min = thread_smallest(w);
    if (live + sys_live > min->live_block_bytes + min->system_live_bytes) o = min;
  }
  w->n++;
  if (o != NULL) {
    memset(o, 0, sizeof(*o));
    memcpy(o->name, name, sizeof(o->name) - 1);
    o->tid = tid;
    o->exited = ex;
    o->count = count;
    o->allocs = allocs;
    o->frees = frees;
    o->live_block_bytes = live;
    o->peak_block_bytes = peak;
    o->system_live_bytes = sys_live;
    o->budget = sc__budget_of_thread(name);
  }
  return o;
}

static void thread_walk_arena(sc_arena_t *a, void *ctx) {
  threads_walk_t *w = ctx;
  if (sc__tag_rows_counted(a) == NULL) return;
  const sc_tag_thread_t *tt = sc__tag_thread_of(a);
  if (!tt_identified(tt)) {
    /* Never a thread's own: an arena an ending thread borrowed for a
     * free (sc__tags_bind), or one no thread bound since tags were on. */
    uint64_t allocs, sys_allocs;
    arena_allocs(a, &allocs, &sys_allocs);
    if (allocs == 0 && sys_allocs == 0) return;
  }
  bool ex = tt->exited || !a->bound;
  char name[16];
  memcpy(name, tt->name, sizeof(name));
  name[15] = 0;
  if (!ex) comm_of(tt->tid, name);
  uint64_t allocs, sys_allocs, sys_live;
  arena_allocs(a, &allocs, &sys_allocs);
  uint64_t live = thread_live_bytes(a, &sys_live);
  /* Live blocks, for the frees: by class. */
  uint64_t live_blocks = 0;
  {
    const sc_tag_thread_t *t = tt;
    for (unsigned c = 0; c < SC_CLASSES; c++) {
      int64_t l = sc__tags_before_live(a, c);
      for (unsigned tg = 0; tg < SC_TAGS; tg++)
        if (row_is_used(a, tg)) l += row_live(sc__tag_row_of(a, tg), c);
      l -= (int64_t)(atomic_load_explicit(&t->remote_in[c], memory_order_relaxed) -
                     load(&t->drained[c]));
      if (l > 0) live_blocks += (uint64_t)l;
    }
  }
  uint64_t mine = allocs - tt->base_allocs;
  (void)thread_add(w, name, tt->tid, ex, 1, mine, mine > live_blocks ? mine - live_blocks : 0, live,
                   tt->peak_block_bytes, sys_live);
}

static size_t threads_fill(struct sc_thread_stats *out, size_t cap, bool unlocked, bool largest) {
  threads_walk_t w = {out, cap, 0, largest};
  if (!sc__tags_on) return 0;
  if (unlocked)
    sc__arenas_foreach_unlocked(thread_walk_arena, &w);
  else
    sc__arenas_foreach(thread_walk_arena, &w);
  if (!unlocked) pthread_mutex_lock(&exited_lock);
  for (unsigned i = 0; i < exited_n; i++) {
    (void)thread_add(&w, exited[i].name, 0, true, exited[i].count, exited[i].allocs,
                     exited[i].allocs, 0, exited[i].peak_block_bytes, 0);
  }
  if (!unlocked) pthread_mutex_unlock(&exited_lock);
  return w.n;
}

sc_public size_t sc_stats_threads(struct sc_thread_stats *out, size_t cap) {
  return threads_fill(out, cap, false, false);
}

size_t sc__tags_threads_fill(struct sc_thread_stats *out, size_t cap, bool unlocked) {
  return threads_fill(out, cap, unlocked, true);
}

bool sc__tags_report_on(void) { return sc__tags_on; }

/* ---- the trigger ------------------------------------------------------------------------ */

/** Blocks of class c in one 64 KiB page: the slack of a mark. */
static inline int64_t slack_of(unsigned c) { return (int64_t)(SC_PAGE_SIZE >> (c + SC_MIN_SHIFT)); }

void sc__tags_row_check(sc_arena_t *a, sc_tag_row_t *r, unsigned c, size_t n) {
  (void)c;
  int64_t bytes = 0;
  for (unsigned d = 0; d < SC_CLASSES; d++) {
    int64_t live = (int64_t)r->x.peak[d] - r->x.headroom[d];
    if (live > (int64_t)r->peak[d]) {
      r->peak[d] = (uint64_t)live;
      r->x.req_peak[d] = r->x.req_total[d] - r->x.req_freed[d] - r->x.req_drained[d];
    }
    int64_t mark = live + slack_of(d);
    if (mark > (int64_t)r->peak[d]) mark = (int64_t)r->peak[d];
    if (mark < live) mark = live;
    r->x.peak[d] = (uint64_t)mark;
    r->x.headroom[d] = mark - live;
    if (live > 0) bytes += live * (int64_t)sc__class_size(d);
  }
  if ((uint64_t)bytes > r->peak_block_bytes) {
    r->peak_block_bytes = (uint64_t)bytes;
    /* The thread's peak is looked at when one of its rows peaks (so with
     * several tags at once it may miss some: docs/tags.md). */
    sc_tag_thread_t *tt = sc__tag_thread_of(a);
    uint64_t mine, sys;
    arena_live(a, &mine, &sys);
    if (mine > tt->peak_block_bytes) tt->peak_block_bytes = mine;
  }
  unsigned t = (unsigned)(((uintptr_t)r - (uintptr_t)a->tag_rows) >> SC_TAG_ROW_SHIFT);
  if (sc__budgets_any()) sc__budget_check(a, t, c, n);
}

void *sc__tags_trigger(size_t n, size_t g, const sc_page_t *page, void *b) {
  sc_arena_t *a = page->arena;
  unsigned c = page->class_idx;
  sc_tag_row_t *r = sc__tag_row;
  if (r == &dummy_row) { /* the thread's first: count it in its real row */
    thread_row_set();
    r = sc__tag_row;
    if (r == &dummy_row) return b; /* no rows (the OS refused them) */
    ++r->x.hist[g];
    r->x.req_total[c] += n;
    if (--r->x.headroom[c] >= 0) return b;
  }
  sc__tags_row_check(a, r, c, n);
  return b;
}

/* ---- class sums ------------------------------------------------------------------------- */

void sc__tags_sum(const sc_arena_t *a, sc_exact_sums_t sums[SC_CLASSES]) {
  sc__exact_sum(a, sums); /* what it counted before tags were on */
  if (sc__tag_rows_counted(a) == NULL) return;
  for (unsigned t = 0; t < SC_TAGS; t++) {
    if (!row_is_used(a, t)) continue;
    const sc_tag_row_t *r = sc__tag_row_of(a, t);
    for (unsigned c = 0; c < SC_CLASSES; c++) {
      sc_exact_sums_t *d = &sums[c];
      d->peak += load(&r->peak[c]);
      d->live += (uint64_t)row_live(r, c);
      d->req_total += load(&r->x.req_total[c]);
      d->req_live +=
          load(&r->x.req_total[c]) - load(&r->x.req_freed[c]) - load(&r->x.req_remote[c]);
      d->req_peak += load(&r->x.req_peak[c]);
      for (unsigned b = 0; b < SC_BUCKETS; b++) {
        d->hist[b] += load(&r->x.hist_aligned[c][b]);
        if (sc__class_of_granule[b] == c) d->hist[b] += load(&r->x.hist[b]);
      }
    }
  }
}

/* ---- the hooks of the other paths ------------------------------------------------------ */

/** The wide entry of block p of page, as any thread reads it. */
static inline uint8_t *entry_shared(const sc_page_t *page, uintptr_t p) {
  return page->shared_map + (sc__map_index(p, page->shared_shift) << SC_MAP_WIDE_SHIFT);
}

void sc__tags_remote_free(sc_arena_t *me, const sc_page_t *page, uintptr_t p) {
  const uint8_t *e = entry_shared(page, p);
  unsigned t = e[1], c = page->shared_class;
  sc_arena_t *owner = sc__segment_of(p)->arena;
  if (owner->tag_rows != NULL)
    atomic_fetch_add_explicit(&sc__tag_thread_of(owner)->remote_in[c], 1, memory_order_relaxed);
  if (me == NULL || sc__tag_rows_counted(me) == NULL) {
    atomic_fetch_add_explicit(&orphan_frees[t][c], 1, memory_order_relaxed);
    return;
  }
  sc_tag_row_t *r = sc__tag_row_of(me, t);
  row_used(me, t);
  r->remote_blocks[c]++;
  r->x.req_remote[c] += *(const uint16_t *)(e + 2);
}

void sc__tags_drained(sc_arena_t *a, const sc_page_t *page, uintptr_t p) {
  const uint8_t *e = entry_shared(page, p);
  unsigned t = e[1], c = page->shared_class;
  sc_tag_row_t *r = sc__tag_row_of(a, t);
  row_used(a, t);
  sc__tags_headroom_back(r, c); /* at most a page of headroom (tags.h) */
  r->x.req_drained[c] += *(const uint16_t *)(e + 2);
  r->drained_blocks[c]++;
  sc__tag_thread_of(a)->drained[c]++;
}

void sc__tags_resize(sc_arena_t *a, uintptr_t p, size_t n) {
  const sc_page_t *page = sc__page_of(sc__segment_of(p), p);
  uint8_t *e = entry_shared(page, p);
  unsigned t = e[1];
  row_used(a, t);
  uint16_t *req = sc__req_slot_at(e);
  sc__tag_row_of(a, t)->x.req_freed[page->shared_class] += *req - (uint64_t)n;
  *req = (uint16_t)n;
}

void sc__tags_alloc_any(sc_arena_t *a, const sc_page_t *page, void *b, unsigned c, size_t n) {
  if (sc__tag_row == &dummy_row) thread_row_set();
  sc_tag_row_t *r = sc__tag_row;
  if (r == &dummy_row) return;
  uint8_t *e = page->map + (sc__map_index((uintptr_t)b, page->shift) << SC_MAP_WIDE_SHIFT);
  e[1] = sc__tag_cur;
  *sc__req_slot_at(e) = (uint16_t)n;
  size_t g = sc__bucket_of(n);
  if (sc__class_of_granule[g] == c)
    r->x.hist[g]++;
  else
    r->x.hist_aligned[c][g]++;
  r->x.req_total[c] += n;
  if (--r->x.headroom[c] < 0) sc__tags_row_check(a, r, c, n);
}

void sc__tags_free_local(sc_arena_t *a, const sc_page_t *page, uintptr_t p) {
  const uint8_t *e = page->map + (sc__map_index(p, page->shift) << SC_MAP_WIDE_SHIFT);
  sc__tags_free(a, e, page->class_idx);
}

/* ---- the system route --------------------------------------------------------------------- */

void sc__tags_sys_alloc(void *p) {
  if (p == NULL) return;
  sc_arena_t *a = sc__arena_get();
  if (a == NULL || sc__tag_rows_counted(a) == NULL) return;
  unsigned t = sc__tag_cur;
  if (sc__tag_rules_on() && !sc__tag_tls.pinned) { /* the caller's rule, else the code's tag */
    t = sc__tag_rules_caller();
    if (t == 0) t = sc__tag_tls.code;
  }
  uint64_t u = sc__sys_usable_size(p);
  sc_tag_row_t *r = sc__tag_row_of(a, t);
  row_used(a, t);
  uint32_t info = t | (by_id_slot(a->id, false) != NULL ? (uint32_t)(a->id + 1) << 8 : 0);
  if (!sc__sysrec_insert(p, info)) sc__sysrec_set_info(p, info);
  r->sys_made += u;
  r->sys_allocs++;
  uint64_t live = r->sys_made - atomic_load_explicit(&r->sys_freed, memory_order_relaxed);
  if (live > r->sys_peak && live < (UINT64_MAX >> 1)) r->sys_peak = live;
  if (sc__budgets_any()) sc__budget_check(a, t, SC_CLASSES, u);
}

void sc__tags_sys_free(uint32_t info, uint64_t bytes) {
  unsigned t = info & 0xff, id = info >> 8;
  if (id == 0) return;
  arena_slot_t *slot = by_id_slot(id - 1, false);
  sc_arena_t *owner = slot != NULL ? atomic_load_explicit(slot, memory_order_acquire) : NULL;
  if (owner == NULL || owner->tag_rows == NULL) return;
  sc_tag_row_t *r = sc__tag_row_of(owner, t);
  atomic_fetch_add_explicit(&r->sys_freed, bytes, memory_order_relaxed);
  atomic_fetch_add_explicit(&r->sys_frees, 1, memory_order_relaxed);
}

unsigned sc__tags_realloc_enter(const void *p) {
  unsigned saved = sc__tag_cur, t = saved;
  uintptr_t u = (uintptr_t)p;
  if (sc__segment_owned(u)) {
    const sc_page_t *page = sc__page_of(sc__segment_of(u), u);
    t = entry_shared(page, u)[1];
  } else {
    uint32_t info;
    if (sc__sysrec_lookup(p, &info)) t = info & 0xff;
  }
  if (t != saved) {
    sc__tag_cur = (uint8_t)t;
    thread_row_set();
  }
  sc__tag_tls.pinned = 1;
  sc__tag_tls.rule_len = 0; /* the rules' fast path must not take over */
  return saved;
}

void sc__tags_realloc_leave(unsigned saved) {
  sc__tag_tls.pinned = 0;
  if (saved == sc__tag_cur) return;
  sc__tag_cur = (uint8_t)saved;
  thread_row_set();
}

/* ---- adoption ------------------------------------------------------------------------------ */

bool sc__tags_adoptable(sc_arena_t *a) {
  if (!sc__tags_on || sc__tag_rows_counted(a) == NULL) return true;
  return sc__tags_thread_live(a) == 0;
}
