/* SPDX-License-Identifier: MIT */
/* guard.c — sampled guard pages (guard.h; docs/hardening.md, "Guard pages").
 *
 * The pool is one PROT_NONE mapping of 2 * slots + 1 OS pages: guard, data
 * of slot 0, guard, data of slot 1, ..., guard. A data page is readable and
 * writable only while its slot holds a live block. Free slots wait in a
 * FIFO ring (oldest freed first), so a freed page stays inaccessible while
 * every other free slot serves once. The ring and the slot records live in
 * a separate mapping, out of reach of the blocks. One lock (held only for a
 * ring push or pop) serializes the ring; the slot records are published
 * with an atomic state, which the fault handler reads without the lock. */
#include "features/guard.h"

#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "core/alloc.h"
#include "util/diag.h"
#include "util/format.h"
#include "util/rng.h"
#include "util/settings.h"
#include "core/snapshot.h"
#include "util/signals.h"
#include "util/startup.h"

/* ---- settings -------------------------------------------------------------- */

/** The OS page: a slot's data page and its guard pages. */
#define GUARD_PAGE ((size_t)4096)
/* The rate (SIZECLASS_GUARD: on is one in 100000) and the number of slots
 * (SIZECLASS_GUARD_SLOTS, default 256) come from the settings table
 * (settings.c). */
/** Alignment of a guarded block (glibc's malloc guarantees 16 bytes). */
#define GUARD_MIN_ALIGN ((size_t)16)
/** Written into the bytes between the request's end and the page's end,
 * checked on free and realloc. */
#define GUARD_SLACK_BYTE 0xcb

enum { SLOT_UNUSED = 0, SLOT_LIVE = 1, SLOT_FREED = 2 };

/* What is known of the block a slot holds or held (the fault report). */
typedef struct {
  _Atomic uint32_t state; /* SLOT_* */
  uint32_t size;          /* requested bytes */
  uintptr_t block;        /* its start */
  int32_t alloc_tid;      /* kernel thread ids */
  int32_t free_tid;
  uint64_t alloc_site; /* sc__guard_sites ids, 0: none */
  uint64_t free_site;
} slot_t;
_Static_assert(sizeof(slot_t) + sizeof(uint32_t) == 44, "guard.h states 44 bytes per slot");

uintptr_t sc__guard_base;
size_t sc__guard_span;
sc_guard_sites_t sc__guard_sites;

static sc_tls sc_rng_t rng;
static uint32_t guard_rate;
static uint32_t nslots;
static slot_t *slots;
static uint32_t *ring; /* free slots, oldest freed at ring[ring_head] */
static uint32_t ring_head, ring_count;
/* Recursive: the forking thread holds it from fork's prepare handler to
 * the parent's and child's, and a prepare handler that runs after ours may
 * still allocate or free on that thread. */
static pthread_mutex_t ring_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static struct sigaction prev_segv, prev_bus;

/* ---- sampling ---------------------------------------------------------------- */

/** The thread's generator (util/rng.h), seeded at its first draw. */
static uint64_t rng_next(void) {
  if (sc_unlikely(rng.s == 0)) sc__rng_seed(&rng, sc__sample_secret);
  return sc__rng_next(&rng);
}

int64_t sc__guard_draw(void) {
  if (guard_rate <= 1) return 1;
  return 1 + (int64_t)(rng_next() % (2ull * guard_rate - 1));
}

/* ---- slots ---------------------------------------------------------------- */

static uint8_t *data_page(uint32_t i) {
  return (uint8_t *)sc__guard_base + (2 * (size_t)i + 1) * GUARD_PAGE;
}

/** The slot whose data page holds a (in the pool), or NULL for a guard page. */
static slot_t *slot_at(uintptr_t a) {
  size_t k = (a - sc__guard_base) / GUARD_PAGE;
  return (k & 1) != 0 ? &slots[(k - 1) / 2] : NULL;
}

/* The calling thread's kernel id, asked once per thread (0: not yet). */
static sc_tls int32_t my_tid;

static int32_t thread_id(void) {
  if (sc_unlikely(my_tid == 0)) my_tid = (int32_t)syscall(SYS_gettid);
  return my_tid;
}

static uint64_t site_here(void) {
  return sc__guard_sites.capture != NULL ? sc__guard_sites.capture() : 0;
}

/** Put slot i at the back of the ring. */
static void ring_push(uint32_t i) {
  pthread_mutex_lock(&ring_lock);
  uint32_t at = ring_head + ring_count;
  ring[at >= nslots ? at - nslots : at] = i;
  ring_count++;
  pthread_mutex_unlock(&ring_lock);
}

/** The slot freed longest ago; false when none is free. */
static bool ring_pop(uint32_t *out) {
  pthread_mutex_lock(&ring_lock);
  bool ok = ring_count != 0;
  if (ok) {
    *out = ring[ring_head];
    ring_head = ring_head + 1 == nslots ? 0 : ring_head + 1;
    ring_count--;
  }
  pthread_mutex_unlock(&ring_lock);
  return ok;
}

void *sc__guard_alloc(size_t n, size_t align) {
  uint32_t i;
  if (!ring_pop(&i)) return NULL; /* every slot holds a live block */
  uint8_t *page = data_page(i);
  if (!sc__os_protect(page, GUARD_PAGE, true)) { /* out of mappings: not guarded */
    ring_push(i);
    return NULL;
  }
  if (align < GUARD_MIN_ALIGN) align = GUARD_MIN_ALIGN;
  uintptr_t end = (uintptr_t)page + GUARD_PAGE;
  uintptr_t start = (end - (n != 0 ? n : 1)) & ~(uintptr_t)(align - 1);
  memset((void *)(start + n), GUARD_SLACK_BYTE, end - start - n);
  slot_t *s = &slots[i];
  s->block = start;
  s->size = (uint32_t)n;
  s->alloc_tid = thread_id();
  s->free_tid = 0;
  s->alloc_site = site_here();
  s->free_site = 0;
  atomic_store_explicit(&s->state, SLOT_LIVE, memory_order_release);
  return (void *)start;
}

/** The slot of live block p; a pointer that is not one aborts with
 * "<call> of 0x…" (or "<freed_call> of 0x…" for a block already freed). */
static slot_t *live_slot(const void *p, const char *call, const char *freed_call) {
  slot_t *s = slot_at((uintptr_t)p);
  if (s == NULL || s->block != (uintptr_t)p) sc__fatal_block(call, p, 0);
  if (atomic_load_explicit(&s->state, memory_order_acquire) != SLOT_LIVE)
    sc__fatal_block(freed_call, p, 0);
  return s;
}

/** Abort when the program wrote past the request of live slot s (into the
 * bytes up to the page's end). */
static void check_slack(const slot_t *s) {
  const uint8_t *p = (const uint8_t *)s->block;
  size_t len = (size_t)(((s->block | (GUARD_PAGE - 1)) + 1) - s->block) - s->size;
  size_t at = sc__diag_first_changed(p + s->size, len, GUARD_SLACK_BYTE);
  if (sc_likely(at == len)) return;
  char line[SC_DIAG_CAP];
  sc__format(line, sizeof(line),
             "overflow past the %zu-byte request in block 0x%" PRIxPTR
             " (guarded): byte %zu changed",
             (size_t)s->size, s->block, s->size + at);
  sc__abort_with_report(line);
}

void sc__guard_free(void *p) {
  slot_t *s = slot_at((uintptr_t)p);
  if (s == NULL || s->block != (uintptr_t)p) sc__fatal_block("invalid free", p, 0);
  uint32_t state = SLOT_LIVE;
  if (!atomic_compare_exchange_strong_explicit(&s->state, &state, SLOT_FREED, memory_order_acq_rel,
                                               memory_order_acquire))
    sc__fatal_block(state == SLOT_FREED ? "double free" : "invalid free", p, 0);
  check_slack(s);
  s->free_tid = thread_id();
  s->free_site = site_here();
  sc__os_protect((void *)(s->block & ~(GUARD_PAGE - 1)), GUARD_PAGE, false);
  ring_push((uint32_t)(s - slots));
}

void *sc__guard_realloc(void *p, size_t n) {
  slot_t *s = live_slot(p, "realloc of invalid pointer", "realloc of freed block");
  check_slack(s);
  void *q = sc__malloc_inline(n);
  if (q == NULL) return NULL; /* p stays valid */
  memcpy(q, p, s->size < n ? s->size : n);
  sc__guard_free(p);
  return q;
}

size_t sc__guard_usable(const void *p) {
  const char *call = "malloc_usable_size of invalid pointer";
  return live_slot(p, call, call)->size;
}

bool sc__guard_owns(const void *p) {
  const slot_t *s = slot_at((uintptr_t)p);
  if (s == NULL || atomic_load_explicit(&s->state, memory_order_acquire) != SLOT_LIVE) return false;
  return (uintptr_t)p - s->block < (s->size != 0 ? s->size : 1);
}

void sc__guard_fork(int phase) {
  if (slots == NULL) return;
  if (phase == 0) {
    pthread_mutex_lock(&ring_lock);
  } else if (phase == 1) {
    pthread_mutex_unlock(&ring_lock);
  } else { /* the child: its only thread held the lock; start afresh */
    pthread_mutex_t fresh = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
    ring_lock = fresh;
    my_tid = 0; /* the child's thread has an id of its own */
  }
}

/* ---- the fault handler (async-signal-safe: write(2) and abort only) -------- */

/** "sizeclass:   <what> at <site>" when sites are recorded. */
static void diag_site(const char *what, uint64_t site) {
  if (site == 0 || sc__guard_sites.describe == NULL) return;
  char where[SC_DIAG_CAP];
  size_t n = sc__guard_sites.describe(site, where, sizeof(where));
  where[n < sizeof(where) ? n : sizeof(where) - 1] = 0;
  sc__diag_printf("sizeclass:   %s at %s", what, where);
}

/** True when the fault was a write (x86-64: the page-fault error code). */
static const char *access_kind(const void *ctx) {
#if defined(__x86_64__)
  const ucontext_t *uc = ctx;
  return (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0 ? "write" : "read";
#else
  (void)ctx;
  return "access";
#endif
}

/** The slot whose block a fault at a (in the pool) concerns, and the kind:
 * an inaccessible data page held a freed block (use-after-free); a guard
 * page follows the block that overflowed into it (blocks end at their
 * page's end) or, for the first slot, precedes it. */
static const slot_t *blame(uintptr_t a, const char **kind) {
  size_t k = (a - sc__guard_base) / GUARD_PAGE;
  if ((k & 1) != 0) {
    *kind = "use-after-free";
    return &slots[(k - 1) / 2];
  }
  *kind = "heap-buffer-overflow";
  const slot_t *left = k >= 2 ? &slots[k / 2 - 1] : NULL;
  const slot_t *right = k / 2 < nslots ? &slots[k / 2] : NULL;
  if (left != NULL && atomic_load_explicit(&left->state, memory_order_acquire) != SLOT_UNUSED)
    return left;
  return right;
}

/** Report a fault at a inside the pool and stop the program. */
static sc_noreturn void report_fault(uintptr_t a, const void *ctx) {
  const char *kind;
  const slot_t *s = blame(a, &kind);
  char why[SC_DIAG_CAP];
  uint32_t state = s != NULL ? atomic_load_explicit(&s->state, memory_order_acquire) : SLOT_UNUSED;
  if (state == SLOT_UNUSED) {
    sc__format(why, sizeof(why), "wild %s at 0x%" PRIxPTR " in the guard pages (no block there)",
               access_kind(ctx), a);
    sc__abort_with_report(why);
  }
  char freed[48] = "";
  if (state == SLOT_FREED)
    sc__format(freed, sizeof(freed), ", freed by thread %u", (uint32_t)s->free_tid);
  sc__format(why, sizeof(why),
             "%s: %s at 0x%" PRIxPTR ", offset %" PRId64 " of the %zu-byte block 0x%" PRIxPTR
             " (allocated by thread %u%s)",
             kind, access_kind(ctx), a, (int64_t)(a - s->block), (size_t)s->size, s->block,
             (uint32_t)s->alloc_tid, freed);
  /* The line and its sites first, then the report (reason "abort: <line>"). */
  sc__warn(why);
  diag_site("allocated", s->alloc_site);
  if (state == SLOT_FREED) diag_site("freed", s->free_site);
  sc__abort_said(why);
}

/** Hand a fault that is not ours to the handler the program had; with
 * none (or SIG_IGN, which cannot ignore a fault), restore the default
 * action: the faulting instruction runs again and it applies, and a signal
 * that another process sent is raised again. */
static void chain(int sig, siginfo_t *si, void *ctx) {
  const struct sigaction *prev = sig == SIGBUS ? &prev_bus : &prev_segv;
  if ((prev->sa_flags & SA_SIGINFO) != 0 && prev->sa_sigaction != NULL) {
    prev->sa_sigaction(sig, si, ctx);
    return;
  }
  if (prev->sa_handler != SIG_DFL && prev->sa_handler != SIG_IGN) {
    prev->sa_handler(sig);
    return;
  }
  if (prev->sa_handler == SIG_IGN && si->si_code <= 0) return; /* sent, and ignored */
  struct sigaction dfl;
  memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sc__sig_action(sig, &dfl, NULL);
  if (si->si_code <= 0) raise(sig); /* delivered when the handler returns */
}

static void on_fault(int sig, siginfo_t *si, void *ctx) {
  uintptr_t a = (uintptr_t)si->si_addr;
  if (si->si_code > 0 && sc__guard_has((const void *)a)) report_fault(a, ctx);
  chain(sig, si, ctx);
}

static bool handler_installed;

sc_startup void *sc__guard_fault_handler(void) {
  return handler_installed ? (void *)on_fault : NULL;
}

static void install_handler(void) {
  handler_installed = true;
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sc__sig_action(SIGSEGV, &sa, &prev_segv);
  sc__sig_action(SIGBUS, &sa, &prev_bus);
}

/* ---- the decision ---------------------------------------------------------- */

sc_startup bool sc__guard_decide(void) {
  /* The settings (settings.c) said no to a bad value already. */
  uint32_t rate = (uint32_t)sc__setting(SC_SET_GUARD);
  if (rate == 0) return false;
  if (sysconf(_SC_PAGESIZE) != (long)GUARD_PAGE) {
    sc__warn("SIZECLASS_GUARD: the OS page is not 4 KiB; guard pages are off");
    return false;
  }
  uint32_t n = (uint32_t)sc__setting(SC_SET_GUARD_SLOTS);
  size_t span = (2 * (size_t)n + 1) * GUARD_PAGE;
  size_t meta = (n * (sizeof(slot_t) + sizeof(uint32_t)) + GUARD_PAGE - 1) & ~(GUARD_PAGE - 1);
  uint8_t *pool = sc__os_reserve(span);
  uint8_t *records = pool != NULL ? sc__os_map_aligned(meta, GUARD_PAGE) : NULL;
  if (records == NULL) {
    if (pool != NULL) sc__os_unmap(pool, span);
    sc__warn("SIZECLASS_GUARD: no memory for the guard pages; they are off");
    return false;
  }
  slots = (slot_t *)records;
  ring = (uint32_t *)(records + n * sizeof(slot_t));
  for (uint32_t i = 0; i < n; i++) ring[i] = i;
  ring_head = 0;
  ring_count = n;
  nslots = n;
  guard_rate = rate;
  sc__guard_base = (uintptr_t)pool;
  sc__guard_span = span;
  install_handler();
  return true;
}
