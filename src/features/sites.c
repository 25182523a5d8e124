/* SPDX-License-Identifier: MIT */
/* sites.c — allocation sites (sites.h): the settings, the per-thread
 * sampler, the site table, and what a sampled allocation and its free do.
 *
 * Sampling. Each thread counts down the bytes it requests; when the count
 * runs out the allocation that ran it out is sampled and a new count is
 * drawn from an exponential distribution of mean `rate`. An allocation of
 * n bytes is then sampled with probability p(n) = 1 - exp(-(n + k) / rate),
 * and every sampled one is counted with weight 1 / p(n): the sums are
 * unbiased estimates of allocations, live blocks and bytes per site
 * (tcmalloc's and jemalloc's method). k, the charge of an allocation beyond
 * its bytes, is rate / 512: with bytes alone a 16 B class would get 64
 * times fewer samples per allocation than the 1024 B class, and its sites
 * would be ranked from a handful of samples (docs/performance.md). At rate 1
 * every allocation is recorded, with weight exactly 1: the counts are exact.
 *
 * Re-entry. The sampler walks the stack with libgcc's unwinder, which does
 * not allocate today; if it (or anything it calls) ever does, that
 * allocation finds the thread's `busy` flag set and is simply not sampled:
 * no recursion, and no lock of ours is held while walking, so no deadlock.
 *
 * Locks. The table's lock guards adding a site (lookups take none); each
 * shard of the address map has its own (sites_map.c). fork takes them all
 * in its prepare handler, and the forking thread, which then holds them,
 * passes through its own later allocations without taking them again. */
#include "features/sites.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "features/budget.h"
#include "features/cfi.h"
#include "features/guard.h"
#include "features/tags.h"
#include "features/unwinder.h"
#include "util/settings.h"
#include "core/size_class.h"
#include "util/format.h"
#include "util/path.h"
#include "util/rng.h"
#include "util/symbolize.h"
#include "util/startup.h"
#include "util/os.h"

/* ---- settings ---------------------------------------------------------------------- */

enum { FORMAT_REPORT = 0, FORMAT_FOLDED = 1 };

#define FOLDED_PATH_CAP 4096

static struct {
  uint64_t rate;   /* mean bytes between samples; 1: every allocation; 0: off */
  double rate_fp;  /* rate as a double, for the draws and the weights */
  uint64_t calls;  /* class allocations: one in this many is sampled (1: all) */
  double log_keep; /* ln(1 - 1 / calls): the draw of a geometric gap */
  int format;      /* FORMAT_* */
  bool implied;    /* SIZECLASS_SITES asked for the exit report */
  char folded[FOLDED_PATH_CAP];
} cfg;

/** The folded-stack file: SIZECLASS_SITES_FOLDED, else next to a report
 * file (its path + ".folded"), else sizeclass-sites.%p.folded; relative
 * paths are made absolute now (the program may chdir later). */
static void read_folded_path(void) {
  const char *v = sc__setting_text(SC_SET_SITES_FOLDED);
  const char *name = "sizeclass-sites.%p.folded";
  const char *suffix = "";
  if (v[0] != 0) {
    name = v;
  } else if (sc__setting(SC_SET_STATS) == SC_STATS_FILE) {
    name = sc__setting_text(SC_SET_STATS); /* next to the report's file */
    suffix = ".folded";
  }
  size_t n = 0;
  if (name[0] != '/') n = sc__path_cwd_prefix(cfg.folded, sizeof(cfg.folded));
  size_t len = strlen(name), slen = strlen(suffix);
  if (n + len + slen >= sizeof(cfg.folded)) {
    sc__setting_warn(SC_SET_SITES_FOLDED, "the path is too long",
                     "writing sizeclass-sites.%p.folded");
    name = "sizeclass-sites.%p.folded";
    len = strlen(name);
    n = 0;
    slen = 0;
  }
  memcpy(cfg.folded + n, name, len);
  memcpy(cfg.folded + n + len, suffix, slen);
  cfg.folded[n + len + slen] = 0;
}

/* The site table: mmap'd when the feature is turned on. */
static sc_site_t *sites;
static _Atomic uint32_t *site_index; /* open addressing: site number + 1, 0 = empty */
#define INDEX_SLOTS ((size_t)SC_SITES_MAX * 2)
static _Atomic uint32_t site_count; /* sites in use, overflow sites included */
static _Atomic uint64_t overflowed; /* samples counted in an overflow site or lost */
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t guard_capture(void); /* below: guard pages' hook */
static double log_of(double x);      /* below: numbers without libm */

sc_startup uint32_t sc__sites_decide(void) {
  /* The settings (settings.c) said no to a bad value already. */
  cfg.rate = sc__setting(SC_SET_SITES);
  if (cfg.rate == 0) return 0;
  cfg.rate_fp = (double)cfg.rate;
  cfg.calls = 1;
  if (cfg.rate > 1) {
    sc__sites_charge = (int64_t)(cfg.rate >> SC_SITES_CHARGE_SHIFT);
    if (sc__sites_charge == 0) sc__sites_charge = 1;
    cfg.calls = (uint64_t)sc__sites_charge;
    if (cfg.calls > 1) cfg.log_keep = log_of(1 - 1 / (double)cfg.calls);
  }
  cfg.format = FORMAT_REPORT;
  if (sc__setting(SC_SET_SITES_FORMAT) == SC_SITES_FORMAT_FOLDED) {
    cfg.format = FORMAT_FOLDED;
    read_folded_path();
  }
  cfg.implied = cfg.format == FORMAT_REPORT && sc__setting(SC_SET_STATS) == SC_STATS_OFF &&
                sc__setting_state(SC_SET_STATS_SIGNAL) != SC_SETTING_GIVEN;
  /* The table and its index, reserved now and touched as sites arrive. */
  sites = sc__os_map_aligned(sizeof(sc_site_t) * SC_SITES_MAX, 4096);
  site_index = sc__os_map_aligned(sizeof(uint32_t) * INDEX_SLOTS, 4096);
  if (sites == NULL || site_index == NULL) {
    sc__warn("SIZECLASS_SITES: no memory for the site table; sites are off");
    cfg.rate = 0;
    return 0;
  }
  /* Guard pages' reports name the sites of a block's allocation and free. */
  sc__guard_sites.capture = guard_capture;
  sc__guard_sites.describe = sc__sites_describe;
  return SC_FEATURE_SITES;
}

/* ---- numbers without libm ------------------------------------------------------------- */

/** Natural logarithm of x > 0: x = m * 2^e with m in [1, 2), and
 * ln m = 2 atanh((m - 1) / (m + 1)) by its series (error below 1e-7). */
static double log_of(double x) {
  uint64_t bits;
  memcpy(&bits, &x, sizeof(bits));
  int e = (int)((bits >> 52) & 0x7ff) - 1023;
  bits = (bits & ((1ull << 52) - 1)) | (1023ull << 52);
  double m;
  memcpy(&m, &bits, sizeof(m));
  double s = (m - 1) / (m + 1), s2 = s * s;
  double series = s * (2 + s2 * (2.0 / 3 + s2 * (2.0 / 5 + s2 * (2.0 / 7 + s2 * (2.0 / 9)))));
  return series + e * 0.69314718055994530942;
}

/** 1 - exp(-x) for x >= 0 (the probability that an allocation of x rates
 * is sampled), accurate for small x too. */
static double sample_probability(double x) {
  if (x < 1e-3) return x * (1 - x / 2 * (1 - x / 3 * (1 - x / 4)));
  if (x > 40) return 1;
  /* exp(-x) = 2^-k * exp(-r), r = x - k ln 2 in [0, ln 2): Taylor series. */
  int k = (int)(x / 0.69314718055994530942);
  double r = x - k * 0.69314718055994530942, term = 1, sum = 1;
  for (int i = 1; i < 16; i++) {
    term *= -r / i;
    sum += term;
  }
  while (k-- > 0) sum *= 0.5;
  return 1 - sum;
}

/* ---- the per-thread sampler ------------------------------------------------------- */

sc_tls int64_t sc__sites_left;
int64_t sc__sites_charge;

typedef struct {
  sc_rng_t rng;        /* the thread's generator (util/rng.h) */
  uint8_t ready;       /* rng seeded and the first countdown drawn */
  uint8_t busy;        /* inside the sampler: allocations are not sampled */
  uint8_t fork_locked; /* this thread forks and holds every lock */
} sampler_t;

static sc_tls sampler_t sampler;

/** Bytes until the next sample: exponential with mean rate (at least 1). */
static int64_t draw(sampler_t *s) {
  /* u in (0, 1]: 53 random bits, never 0. */
  double u = (double)((sc__rng_next(&s->rng) >> 11) + 1) * (1.0 / 9007199254740992.0);
  double bytes = -log_of(u) * cfg.rate_fp;
  return bytes < 1 ? 1 : bytes > 9.0e18 ? INT64_MAX : (int64_t)bytes;
}

static void seed(sampler_t *s) {
  sc__rng_seed(&s->rng, sc__sample_secret);
  s->ready = 1;
}

void sc__sites_lock(void *mutex) {
  if (!sampler.fork_locked) pthread_mutex_lock(mutex);
}
void sc__sites_unlock(void *mutex) {
  if (!sampler.fork_locked) pthread_mutex_unlock(mutex);
}

/* ---- the site table -------------------------------------------------------------------- */

static uint64_t hash_stack(const uintptr_t *pcs, unsigned depth, unsigned c) {
  uint64_t h = 0x84222325CBF29CE4ull ^ c;
  for (unsigned i = 0; i < depth; i++) {
    h ^= pcs[i];
    h *= 0x9E3779B97F4A7C15ull;
    h ^= h >> 31;
  }
  return h ^ depth;
}

static bool same_site(const sc_site_t *s, uint64_t h, unsigned c, const uintptr_t *pcs,
                      unsigned depth) {
  if (s->hash != h || s->cls != c || s->depth != depth || s->overflow) return false;
  for (unsigned i = 0; i < depth; i++)
    if (s->pcs[i] != pcs[i]) return false;
  return true;
}

/** Index slot of the site (h, c, pcs) or of the empty slot where it goes. */
static size_t probe(uint64_t h, unsigned c, const uintptr_t *pcs, unsigned depth, uint32_t *id) {
  for (size_t i = h & (INDEX_SLOTS - 1);; i = (i + 1) & (INDEX_SLOTS - 1)) {
    uint32_t v = atomic_load_explicit(&site_index[i], memory_order_acquire);
    if (v == 0 || same_site(&sites[v - 1], h, c, pcs, depth)) {
      *id = v;
      return i;
    }
  }
}

/** The overflow site of class c: it collects the samples of stacks that
 * found no room (depth 0, no frames). */
static uint32_t overflow_site(unsigned c) {
  static _Atomic uint32_t made[SC_SITES_CLASSES + 1]; /* site number + 1 */
  atomic_fetch_add_explicit(&overflowed, 1, memory_order_relaxed);
  uint32_t id = atomic_load_explicit(&made[c], memory_order_acquire);
  if (id != 0) return id - 1;
  sc__sites_lock(&table_lock);
  id = atomic_load_explicit(&made[c], memory_order_relaxed);
  if (id == 0) {
    /* The table keeps SC_SITES_CLASSES entries in reserve for these. */
    uint32_t n = atomic_load_explicit(&site_count, memory_order_relaxed);
    sites[n].cls = (uint16_t)c;
    sites[n].overflow = 1;
    sites[n].depth = 0;
    atomic_store_explicit(&site_count, n + 1, memory_order_release);
    id = n + 1;
    atomic_store_explicit(&made[c], id, memory_order_release);
  }
  sc__sites_unlock(&table_lock);
  return id - 1;
}

/** The site of stack pcs in class c, added if new. */
static uint32_t site_of(const uintptr_t *pcs, unsigned depth, unsigned c) {
  uint64_t h = hash_stack(pcs, depth, c);
  uint32_t id;
  probe(h, c, pcs, depth, &id);
  if (sc_likely(id != 0)) return id - 1;
  sc__sites_lock(&table_lock);
  size_t slot = probe(h, c, pcs, depth, &id); /* again: another thread may have added it */
  uint32_t n = atomic_load_explicit(&site_count, memory_order_relaxed);
  if (id == 0 && n < SC_SITES_MAX - SC_SITES_CLASSES) {
    sc_site_t *s = &sites[n];
    s->hash = h;
    s->cls = (uint16_t)c;
    s->depth = depth;
    memcpy(s->pcs, pcs, depth * sizeof(pcs[0]));
    atomic_store_explicit(&site_count, n + 1, memory_order_release);
    id = n + 1;
    atomic_store_explicit(&site_index[slot], id, memory_order_release);
  }
  sc__sites_unlock(&table_lock);
  return id != 0 ? id - 1 : overflow_site(c);
}

/* The filter's second level (sites.h): sampled live blocks per hashed
 * block address, so that the frees of blocks beside a sampled one leave
 * without taking a lock. */
static _Atomic uint32_t block_filter[(size_t)1 << SC_SITES_BLOCK_FILTER_BITS];

static inline size_t block_index(uintptr_t p) {
  return (size_t)(((p >> 4) * 0x9E3779B97F4A7C15ull) >> (64 - SC_SITES_BLOCK_FILTER_BITS));
}

/* ---- sampled allocations and their frees ------------------------------------------- */

/** Bytes block b (class c) holds beyond the n requested. */
static uint64_t waste_of(const void *b, unsigned c, size_t n) {
  size_t block = c == SC_SITES_SYSTEM ? sc__sys_usable_size(b) : sc__class_size(c);
  return block > n ? block - n : 0;
}

/** Record block b (class c, request n) at the calling thread's stack, with
 * weight w (SC_SITES_Q fixed point). */
static void record(void *b, unsigned c, size_t n, uint64_t w) {
  uintptr_t pcs[SC_UNWIND_DEPTH];
  unsigned depth = sc__unwind(pcs, SC_UNWIND_DEPTH);
  uint32_t id = site_of(pcs, depth, c);
  sc_site_t *s = &sites[id];
  atomic_fetch_add_explicit(&s->samples, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&s->allocs_q, w, memory_order_relaxed);
  atomic_fetch_add_explicit(&s->live_q, w, memory_order_relaxed);
  atomic_fetch_add_explicit(&s->bytes_q, w * n, memory_order_relaxed);
  atomic_fetch_add_explicit(&s->wasted_q, w * waste_of(b, c, n), memory_order_relaxed);
  uint64_t old;
  if (sc__sites_map_put((uintptr_t)b, (uint64_t)id << 40 | w, &old)) {
    /* b was still recorded (its free never reached us): it left then. */
    atomic_fetch_sub_explicit(&sites[old >> 40].live_q, old & ((1ull << 40) - 1),
                              memory_order_relaxed);
    return;
  }
  atomic_fetch_add_explicit(&sc__sites_filter[sc__sites_filter_index((uintptr_t)b)], 1,
                            memory_order_relaxed);
  atomic_fetch_add_explicit(&block_filter[block_index((uintptr_t)b)], 1, memory_order_relaxed);
}

/** The weight of a sampled allocation that counted `bytes` bytes: 1 / the
 * chance that it was sampled, in SC_SITES_Q fixed point. */
static uint64_t weight_of(int64_t bytes) {
  double w = 1 / sample_probability((double)bytes / cfg.rate_fp);
  return (uint64_t)(w * (1 << SC_SITES_Q) + 0.5);
}

sc_noinline void sc__sites_sample(void *b, unsigned c, size_t n) {
  sampler_t *s = &sampler;
  if (s->busy) return; /* an allocation made while sampling: the countdown waits */
  s->busy = 1;
  uint64_t w = (uint64_t)1 << SC_SITES_Q; /* rate 1: every allocation, weight 1 */
  if (cfg.rate != 1) {
    int64_t bytes = (int64_t)n + sc__sites_charge;
    bool take = true;
    if (!s->ready) {
      /* The thread's first countdown starts just before this allocation. */
      seed(s);
      int64_t left = draw(s) - bytes;
      take = left <= 0;
      sc__sites_left = take ? draw(s) : left;
    } else {
      sc__sites_left = draw(s);
    }
    w = take ? weight_of(bytes) : 0;
  }
  if (w != 0) record(b, c, n, w);
  s->busy = 0;
}

int64_t sc__sites_draw_calls(void) {
  sampler_t *s = &sampler;
  if (cfg.calls <= 1) return 1;
  if (!s->ready) seed(s);
  /* Geometric with p = 1 / calls: each allocation is sampled with that
   * chance, whatever came before (u in (0, 1]: never 0). */
  double u = (double)((sc__rng_next(&s->rng) >> 11) + 1) * (1.0 / 9007199254740992.0);
  double gap = 1 + log_of(u) / cfg.log_keep;
  return gap > 9.0e18 ? INT64_MAX : (int64_t)gap;
}

bool sc__sites_sample_class(void *b, unsigned c, size_t n) {
  sampler_t *s = &sampler;
  if (s->busy) return false; /* an allocation made while sampling */
  s->busy = 1;
  record(b, c, n, cfg.calls << SC_SITES_Q); /* sampled with chance 1 / calls */
  s->busy = 0;
  return true;
}

sc_noinline void sc__sites_forget(const void *p) {
  uint64_t val;
  if (atomic_load_explicit(&block_filter[block_index((uintptr_t)p)], memory_order_relaxed) == 0 ||
      !sc__sites_map_take((uintptr_t)p, &val))
    return;
  atomic_fetch_sub_explicit(&sc__sites_filter[sc__sites_filter_index((uintptr_t)p)], 1,
                            memory_order_relaxed);
  atomic_fetch_sub_explicit(&block_filter[block_index((uintptr_t)p)], 1, memory_order_relaxed);
  atomic_fetch_sub_explicit(&sites[val >> 40].live_q, val & ((1ull << 40) - 1),
                            memory_order_relaxed);
}

_Atomic uint32_t sc__sites_filter[(size_t)1 << SC_SITES_FILTER_BITS];

/** Guard pages' hook (guard.h): the site of the calling stack, + 1 (0:
 * none), taken at a guarded allocation and free; no allocation, and no
 * lock that the fault handler's describe would need. */
static uint64_t guard_capture(void) {
  uintptr_t pcs[SC_UNWIND_DEPTH];
  unsigned depth = sc__sites_stack_now(pcs, SC_UNWIND_DEPTH);
  if (depth == 0) return 0;
  sampler.busy = 1; /* adding a site: an allocation now is not sampled */
  uint32_t id = site_of(pcs, depth, SC_SITES_GUARD);
  sampler.busy = 0;
  return (uint64_t)id + 1;
}

uint8_t sc__sites_pause(void) {
  uint8_t was = sampler.busy;
  sampler.busy = 1;
  return was;
}

void sc__sites_resume(uint8_t was) { sampler.busy = was; }

unsigned sc__sites_stack_now(uintptr_t *pcs, unsigned max) {
  if (!sc__sites_on() || sampler.busy) return 0;
  sampler.busy = 1;
  unsigned n = sc__unwind(pcs, max);
  sampler.busy = 0;
  return n;
}

/* ---- what the report reads ---------------------------------------------------------- */

uint64_t sc__sites_rate(void) { return sc__sites_on() ? cfg.rate : 0; }

const sc_site_t *sc__sites_table(uint32_t *count) {
  *count = sites != NULL ? atomic_load_explicit(&site_count, memory_order_acquire) : 0;
  return sites;
}

uint64_t sc__sites_overflowed(void) {
  return atomic_load_explicit(&overflowed, memory_order_relaxed);
}

sc_startup bool sc__sites_folded(const char **path) {
  sc__init(); /* the features are decided (a constructor may ask first) */
  *path = cfg.folded;
  return sc__sites_on() && cfg.format == FORMAT_FOLDED;
}

sc_startup bool sc__sites_report_implied(void) {
  sc__init();
  return sc__sites_on() && cfg.implied;
}

/* ---- one line naming a site, for guard pages' reports ------------------------------------ */

/** Frames named on the line, and the room for a location. */
#define DESCRIBE_NAMES 4
#define DESCRIBE_LOC_CAP 1100

size_t sc__sites_describe(uint64_t site, char *buf, size_t cap) {
  uint32_t count;
  const sc_site_t *sites = sc__sites_table(&count);
  size_t n = 0;
  if (cap == 0 || site == 0 || site > count || sites == NULL) return 0;
  const sc_site_t *s = &sites[site - 1];
  sc_symbolizer_t *sym = sc__sym_open(false); /* a fault handler: no loader lock */
  if (sym == NULL) return 0;
  sc_frame_info_t info[SC_UNWIND_DEPTH];
  for (unsigned i = 0; i < s->depth; i++) sc__sym_frame(sym, s->pcs[i], &info[i]);
  unsigned first = sc__sym_first_program_frame(info, s->depth), shown = 0;
  for (unsigned i = first; i < s->depth && shown < DESCRIBE_NAMES; i++, shown++) {
    if (shown > 0 && info[i].allocator) break; /* the C library's start-up */
    n += sc__format(buf + n, cap - n, "%s%s", shown > 0 ? " < " : "",
                    info[i].name != NULL ? info[i].name : "??");
  }
  if (s->depth > first) {
    char loc[DESCRIBE_LOC_CAP];
    sc__sym_location(loc, sizeof(loc), &info[first]);
    n += sc__format(buf + n, cap - n, " (%s)", loc);
  }
  sc__sym_close(sym);
  return n;
}

/* ---- fork ------------------------------------------------------------------------------ */

static void fork_prepare(void) {
  if (!sc__sites_on()) return;
  pthread_mutex_lock(&table_lock);
  sc__sites_map_fork_prepare();
  sampler.fork_locked = 1;
}

static void fork_release(bool child) {
  if (!sc__sites_on()) return;
  sampler.fork_locked = 0;
  sc__sites_map_fork_release(child);
  if (child) {
    pthread_mutex_init(&table_lock, NULL);
    sc__cfi_fork_child();
  } else {
    pthread_mutex_unlock(&table_lock);
  }
}

static void fork_parent(void) { fork_release(false); }
static void fork_child(void) { fork_release(true); }

/* Registered from a constructor, not from inside the first malloc:
 * pthread_atfork allocates. Always: sc_option_set may switch sites on
 * after this (before the first allocation), and the handlers do nothing
 * while they are off. The earliest priority: linked statically, the
 * library decides its features before the program's own constructors run,
 * so that their first allocations are recorded even when they are large
 * (a class allocation decides them itself). */
__attribute__((constructor(101))) static void sites_on_load(void) {
  sc__init();
  sc__os_atfork(fork_prepare, fork_parent, fork_child);
  /* The features that walk stacks are decided: bind libgcc's unwinder now,
   * outside any allocation (unwinder.c); otherwise libgcc_s stays unmapped. */
  if (sc__sites_on() || sc__tag_rules_on() || sc__budgets_any()) (void)sc__unwinder_bind();
}
