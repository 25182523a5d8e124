/* SPDX-License-Identifier: MIT */
/* footprint — peak and settled resident memory of a game's level cycle.
 *
 * For each level: load it (long-lived objects, --level-mb MiB, a size mix
 * that differs per level, so a later level must reuse memory an earlier
 * one gave up in other size classes), play a burst (60 frames that each
 * add --burst-mb/20 MiB of effects and retire a random twentieth of the live
 * ones, so ~90 % of --burst-mb is live at the end, then all retired in
 * random order), then
 * settle: --settle-ms of light 60 Hz frames (a few hundred small objects,
 * each living 1..30 frames), sleeping to the next frame tick as a game
 * does; the number of frames is fixed by --settle-ms, so the work and the
 * checksum are the same in every run. The level is unloaded before the next one loads; the last
 * stays. RSS is sampled from /proc/self/statm after every frame.
 *
 *   footprint [--levels 2] [--level-mb 64] [--burst-mb 256] [--settle-ms 3000]
 *             [--large-permille 0] [--trim 0|1] [--seed S]
 *
 * Level objects are 16..1024 B in a per-level band, 3 % of them 1..4 KiB
 * (meshes, tables). Burst objects are 16..1024 B; --large-permille N makes
 * N per mille of them 1..8 KiB (served by glibc under libsizeclass).
 *
 * --trim 1 calls malloc_trim(0) as each settle phase begins (glibc's, or
 * whichever the preloaded allocator exports). Prints one line per level and
 *   footprint: peak_rss_kb=P settled_rss_kb=S live_kb=L trim=T
 * (P: the largest of the samples and getrusage's peak; L: bytes requested
 * by the objects live at the end), then
 *   EXTRA floor_kb=F peak_rss_kb=P
 * the least any allocator with power-of-two classes of 16..1024 B could
 * have been resident with, at the worst moment: the largest, over the
 * samples, of the resident set before the first allocation, plus the pages
 * of bookkeeping arrays in use, plus every live object's block (its
 * power-of-two class for requests of 1024 B or less, the request itself
 * above)
 * then the RESULT line: metric = settled RSS in KiB (RSS at the end of the
 * last settle phase), rss_kb = peak RSS (getrusage). Every block is stamped
 * on creation and checked before its free. Bookkeeping arrays come from
 * mmap, so they weigh the same under every allocator. */
#include <fcntl.h>
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench.h"

BENCH_GLOBALS

/* One live object. */
typedef struct obj_s {
  void *p;
  uint32_t size;
  uint32_t death; /* frame it is retired in (settle objects) */
  uint64_t tag;
} obj_t;

/* A set of live objects in an mmap'd array (so it weighs the same under
 * every allocator and never goes through the one being measured). */
typedef struct set_s {
  obj_t *v;
  size_t n, cap;
  size_t hw; /* most objects held since the last clear (pages touched) */
} set_t;

typedef struct fp_s {
  bench_rng_t rng;
  uint64_t next_tag, allocs;
  unsigned large_permille; /* burst objects above 1 KiB, per mille */
  long peak_kb;
  long base_kb;         /* RSS before the first allocation */
  uint64_t block_bytes; /* blocks of the live objects (class sizes, see floor_kb) */
  long floor_kb;        /* the largest floor seen at a sample */
  set_t level, burst, settle;
} fp_t;

/** The block a request of n bytes needs at least: its power-of-two class
 * (16 B at least) up to 1024 B, the request itself above. */
static uint64_t class_block(size_t n) {
  if (n > 1024) return n;
  uint64_t c = 16;
  while (c < n) c <<= 1;
  return c;
}

/** Bookkeeping pages in use: the high-water mark of a set's array. */
static uint64_t set_pages_bytes(const set_t *s) {
  return (s->hw * sizeof(obj_t) + 4095) & ~4095ull;
}

/** Sample RSS into the peak, and the floor into its own peak; return RSS. */
static long sample(fp_t *f) {
  long kb = bench_rss_kb();
  if (kb > f->peak_kb) f->peak_kb = kb;
  uint64_t book =
      set_pages_bytes(&f->level) + set_pages_bytes(&f->burst) + set_pages_bytes(&f->settle);
  long floor = f->base_kb + (long)((f->block_bytes + book) >> 10);
  if (floor > f->floor_kb) f->floor_kb = floor;
  return kb;
}

static void set_init(set_t *s, size_t cap) {
  s->v =
      mmap(NULL, cap * sizeof(obj_t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (s->v == MAP_FAILED) {
    fprintf(stderr, "footprint: mmap of %zu objects failed\n", cap);
    exit(4);
  }
  s->n = 0;
  s->cap = cap;
}

/** Empty s and give its array's pages back (they weigh the same under
 * every allocator; they should not count in the settled figure). */
static void set_clear(set_t *s) {
  s->n = 0;
  s->hw = 0;
  madvise(s->v, s->cap * sizeof(obj_t), MADV_DONTNEED);
}

static void set_release(set_t *s) {
  munmap(s->v, s->cap * sizeof(obj_t));
  s->v = NULL;
  s->n = s->cap = 0;
}

/** Allocate and stamp an object of n bytes into s. */
static void spawn(fp_t *f, set_t *s, size_t n, uint32_t death) {
  if (s->n == s->cap) {
    fprintf(stderr, "footprint: object set full (%zu)\n", s->cap);
    exit(4);
  }
  obj_t *o = &s->v[s->n++];
  if (s->n > s->hw) s->hw = s->n;
  f->block_bytes += class_block(n);
  o->size = (uint32_t)n;
  o->death = death;
  o->tag = bench_mix(++f->next_tag);
  o->p = bench_nonnull(malloc(n), n);
  bench_stamp(o->p, n, o->tag);
  f->allocs++;
}

/** Check and free object i of s; the last one takes its place. */
static void retire(fp_t *f, set_t *s, size_t i) {
  obj_t *o = &s->v[i];
  f->block_bytes -= class_block(o->size);
  bench_check(o->p, o->size, o->tag);
  free(o->p);
  s->v[i] = s->v[--s->n];
}

/** Retire every object of s in random order. */
static void retire_all(fp_t *f, set_t *s) {
  while (s->n > 0) retire(f, s, (size_t)bench_range(&f->rng, 0, s->n - 1));
}

/** Level objects: level k favours a different band of sizes. */
static size_t level_size(fp_t *f, unsigned k) {
  static const size_t lo[] = {16, 129, 48, 257}, hi[] = {128, 512, 256, 1024};
  unsigned band = k % 4;
  if (bench_chance(&f->rng, 30)) return (size_t)bench_range(&f->rng, 1025, 4096);
  return (size_t)bench_range(&f->rng, lo[band], hi[band]);
}

/** Burst objects: effects and particles, 16..1024 B (3 in 4 at most 128 B),
 * and large_permille of them 1025..8192 B. */
static size_t burst_size(fp_t *f) {
  if (f->large_permille != 0 && bench_chance(&f->rng, f->large_permille))
    return (size_t)bench_range(&f->rng, 1025, 8192);
  if (bench_chance(&f->rng, 750)) return (size_t)bench_range(&f->rng, 16, 128);
  return (size_t)bench_range(&f->rng, 129, 1024);
}

static void load_level(fp_t *f, unsigned k, size_t bytes) {
  size_t made = 0;
  while (made < bytes) {
    size_t n = level_size(f, k);
    spawn(f, &f->level, n, 0);
    made += n;
  }
}

/** The burst: 60 frames that each add bytes/20 and retire a random
 * twentieth of the live effects (live bytes reach ~0.9 * bytes), then
 * everything retired in random order. */
static void play_burst(fp_t *f, size_t bytes) {
  for (int frame = 0; frame < 60; frame++) {
    for (size_t k = f->burst.n / 20; k > 0; k--)
      retire(f, &f->burst, (size_t)bench_range(&f->rng, 0, f->burst.n - 1));
    for (size_t made = 0; made < bytes / 20;) {
      size_t n = burst_size(f);
      spawn(f, &f->burst, n, 0);
      made += n;
    }
    sample(f);
  }
  retire_all(f, &f->burst);
  set_clear(&f->burst);
}

/** Bytes requested by the objects of s. */
static uint64_t set_bytes(const set_t *s) {
  uint64_t b = 0;
  for (size_t i = 0; i < s->n; i++) b += s->v[i].size;
  return b;
}

/** Light frames at 60 Hz for ms milliseconds (a fixed count, ms * 60 / 1000
 * rounded up, so every run does the same work); returns the RSS at the end. */
static long settle(fp_t *f, long ms) {
  const uint64_t tick = 1000000000ull / 60;
  const uint32_t frames = (uint32_t)((ms * 60 + 999) / 1000);
  uint64_t next = bench_now_ns() + tick;
  long kb = sample(f);
  for (uint32_t frame = 0; frame < frames; frame++) {
    for (size_t i = 0; i < f->settle.n;) {
      if (f->settle.v[i].death <= frame)
        retire(f, &f->settle, i);
      else
        i++;
    }
    uint64_t spawns = bench_range(&f->rng, 100, 300);
    for (uint64_t i = 0; i < spawns; i++)
      spawn(f, &f->settle, (size_t)bench_range(&f->rng, 16, 256),
            frame + (uint32_t)bench_range(&f->rng, 1, 30));
    kb = sample(f);
    bench_sleep_until(next);
    next += tick;
  }
  return kb;
}

int main(int argc, char **argv) {
  bench_init();
  unsigned levels = (unsigned)bench_opt(argc, argv, "--levels", 2);
  size_t level_mb = (size_t)bench_opt(argc, argv, "--level-mb", 64);
  size_t burst_mb = (size_t)bench_opt(argc, argv, "--burst-mb", 256);
  long settle_ms = (long)bench_opt(argc, argv, "--settle-ms", 3000);
  int trim = (int)bench_opt(argc, argv, "--trim", 0);
  fp_t f;
  memset(&f, 0, sizeof(f));
  f.large_permille = (unsigned)bench_opt(argc, argv, "--large-permille", 0);
  f.rng = bench_rng((uint64_t)bench_opt(argc, argv, "--seed", 11));
  /* Smallest objects bound the counts: 16 B level objects, 16 B effects. */
  set_init(&f.level, (level_mb << 20) / 16 + 16);
  set_init(&f.burst, (burst_mb << 20) / 16 + 16);
  set_init(&f.settle, 300 * 32);
  f.base_kb = bench_rss_kb();

  long settled = 0;
  uint64_t t0 = bench_now_ns();
  for (unsigned k = 0; k < levels; k++) {
    if (k > 0) {
      retire_all(&f, &f.level);
      set_clear(&f.level);
    }
    load_level(&f, k, level_mb << 20);
    long loaded = sample(&f);
    play_burst(&f, burst_mb << 20);
    long after_burst = sample(&f);
    if (trim) malloc_trim(0);
    settled = settle(&f, settle_ms);
    printf("level %u: loaded %.1f MiB, after burst %.1f MiB, settled %.1f MiB RSS\n", k,
           loaded / 1024.0, after_burst / 1024.0, settled / 1024.0);
  }
  double secs = (double)(bench_now_ns() - t0) / 1e9;
  uint64_t live = set_bytes(&f.level) + set_bytes(&f.settle);
  retire_all(&f, &f.settle);
  retire_all(&f, &f.level);
  set_release(&f.level);
  set_release(&f.burst);
  set_release(&f.settle);
  if (bench_peak_rss_kb() > f.peak_kb) f.peak_kb = bench_peak_rss_kb();
  printf("footprint: peak_rss_kb=%ld settled_rss_kb=%ld live_kb=%llu trim=%d (%.1f s)\n", f.peak_kb,
         settled, (unsigned long long)(live >> 10), trim, secs);
  printf("EXTRA floor_kb=%ld peak_rss_kb=%ld\n", f.floor_kb, f.peak_kb);
  bench_result("footprint", (double)settled, "KiB", f.allocs);
  return 0;
}
