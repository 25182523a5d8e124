/* frame_latency — how long single malloc and free calls take inside a
 * game's frame loop after a level load (issue 10: the number a frame
 * budget feels is the slow call, not the average).
 *
 * Level load: --load blocks of 16..1024 B (half 16..64, 30 % 65..256,
 * 20 % 257..1024), then 85 % of them freed in random order, as a level's
 * loader leaves its temporary data behind: the heap is mostly free, in a
 * random order. Then --frames frames, each starting --frame-us after the
 * previous one (the program sleeps the rest of the frame, as a game
 * waiting for vsync does; a frame that overruns starts the next at once):
 *   - --pairs malloc/free pairs: new objects (the same size mix) living
 *     1..120 frames, and the objects whose time is up freed;
 *   - a few of the surviving level blocks replaced (freed, a new one made);
 *   - now and then (1 frame in 40) a burst of 2000..6000 blocks (particles,
 *     16..128 B) living 5..30 frames.
 * Every malloc and free of the frames is timed with clock_gettime
 * (CLOCK_MONOTONIC, the vDSO: no system call) into a log-linear histogram
 * (16 steps per power of two, so a bucket is within 6.25 % of its values);
 * a frame's allocator time is the sum of its calls' times. The level load
 * is not timed per call (it is a loading screen); its duration is printed.
 * Blocks are stamped (first and last 8 bytes) and checked before free.
 *
 *   frame_latency [--load N] [--frames F] [--frame-us U] [--pairs P] [--seed S]
 *
 * Prints the per-call percentiles p50, p90, p99, p99.9, p99.99 and the
 * maximum (ns; the timer's own cost, timer_ns, is included in each), and
 * the frames' allocator time: median, p99 and worst frame (us), on a line
 *   EXTRA calls=.. timer_ns=.. p50_ns=.. p90_ns=.. p99_ns=.. p999_ns=..
 *         p9999_ns=.. max_ns=.. frame_p50_us=.. frame_p99_us=.. frame_max_us=..
 *         load_ms=..
 * that the runner keeps for the report's latency table. RESULT's metric:
 * mean ns per timed call. */
#include "bench.h"

BENCH_GLOBALS

/* ---- histogram: values below 16 exactly, above in 16 steps per octave ---- */

#define HIST_SUB 16
#define HIST_BUCKETS (64 * HIST_SUB)

typedef struct hist_s {
  uint64_t n[HIST_BUCKETS];
  uint64_t count, sum, max;
} hist_t;

static inline size_t hist_bucket(uint64_t v) {
  if (v < HIST_SUB) return (size_t)v;
  unsigned msb = 63u - (unsigned)__builtin_clzll(v);
  return (size_t)(msb - 3) * HIST_SUB + (size_t)((v >> (msb - 4)) & (HIST_SUB - 1));
}

/** Largest value that falls in bucket b. */
static uint64_t hist_upper(size_t b) {
  if (b < HIST_SUB) return b;
  unsigned msb = (unsigned)(b / HIST_SUB) + 3;
  uint64_t sub = b % HIST_SUB;
  return ((HIST_SUB + sub + 1) << (msb - 4)) - 1;
}

static inline void hist_add(hist_t *h, uint64_t v) {
  h->n[hist_bucket(v)]++;
  h->count++;
  h->sum += v;
  if (v > h->max) h->max = v;
}

/** The value at quantile q (0..1): the upper end of the bucket that holds
 * it, never above the maximum seen. */
static uint64_t hist_quantile(const hist_t *h, double q) {
  uint64_t want = (uint64_t)(q * (double)h->count + 0.999999), seen = 0;
  if (want == 0) want = 1;
  for (size_t b = 0; b < HIST_BUCKETS; b++) {
    seen += h->n[b];
    if (seen >= want) return hist_upper(b) < h->max ? hist_upper(b) : h->max;
  }
  return h->max;
}

/* ---- the heap being measured -------------------------------------------- */

typedef struct blk_s {
  void *p;
  uint32_t n;
  uint32_t death; /* frame it is freed in */
  uint64_t tag;
} blk_t;

/* A growable array of blocks (its own storage is not timed). */
typedef struct vec_s {
  blk_t *v;
  size_t n, cap;
} vec_t;

typedef struct game_s {
  bench_rng_t rng;
  hist_t calls;
  uint64_t frame_ns; /* allocator time of the current frame */
  uint64_t next_tag;
  vec_t level;  /* surviving level blocks */
  vec_t *alive; /* per-frame death buckets, a ring of RING frames */
} game_t;

#define RING 128 /* > the longest life, 120 frames */

static void vec_push(vec_t *v, blk_t b) {
  if (v->n == v->cap) {
    v->cap = v->cap ? v->cap * 2 : 64;
    v->v = bench_nonnull(realloc(v->v, v->cap * sizeof(blk_t)), v->cap * sizeof(blk_t));
  }
  v->v[v->n++] = b;
}

/** A size from the level/object mix. */
static size_t mix_size(bench_rng_t *r) {
  uint64_t k = bench_next(r) % 10;
  if (k < 5) return (size_t)bench_range(r, 16, 64);
  if (k < 8) return (size_t)bench_range(r, 65, 256);
  return (size_t)bench_range(r, 257, 1024);
}

/** malloc, timed when `timed`; the block is stamped (not timed). */
static blk_t make(game_t *g, size_t n, int timed) {
  blk_t b;
  uint64_t t0 = timed ? bench_now_ns() : 0;
  b.p = malloc(n);
  if (timed) {
    uint64_t dt = bench_now_ns() - t0;
    hist_add(&g->calls, dt);
    g->frame_ns += dt;
  }
  bench_nonnull(b.p, n);
  b.n = (uint32_t)n;
  b.death = 0;
  b.tag = bench_mix(++g->next_tag);
  bench_stamp(b.p, n, b.tag);
  return b;
}

/** Check a block, then free it, timed when `timed`. */
static void drop(game_t *g, blk_t b, int timed) {
  bench_check(b.p, b.n, b.tag);
  uint64_t t0 = timed ? bench_now_ns() : 0;
  free(b.p);
  if (timed) {
    uint64_t dt = bench_now_ns() - t0;
    hist_add(&g->calls, dt);
    g->frame_ns += dt;
  }
}

/** Load the level: n blocks, then 85 % of them freed in random order. */
static void load_level(game_t *g, size_t n) {
  blk_t *all = bench_nonnull(malloc(n * sizeof(blk_t) + 1), n * sizeof(blk_t) + 1);
  for (size_t i = 0; i < n; i++) all[i] = make(g, mix_size(&g->rng), 0);
  for (size_t i = n; i > 1; i--) { /* shuffle: the free order */
    size_t k = (size_t)(bench_next(&g->rng) % i);
    blk_t t = all[i - 1];
    all[i - 1] = all[k];
    all[k] = t;
  }
  size_t keep = n - n * 85 / 100;
  for (size_t i = keep; i < n; i++) drop(g, all[i], 0);
  for (size_t i = 0; i < keep; i++) vec_push(&g->level, all[i]);
  free(all);
}

/** A block that dies `life` frames after `frame`. */
static void spawn(game_t *g, uint64_t frame, size_t n, uint32_t life) {
  blk_t b = make(g, n, 1);
  b.death = (uint32_t)(frame + life);
  vec_push(&g->alive[b.death % RING], b);
}

/** One frame's allocator work. */
static void frame(game_t *g, uint64_t f, size_t pairs) {
  bench_rng_t *r = &g->rng;
  for (size_t i = 0; i < pairs; i++) spawn(g, f, mix_size(r), (uint32_t)bench_range(r, 1, 120));
  if (bench_chance(r, 25)) {
    size_t burst = (size_t)bench_range(r, 2000, 6000);
    for (size_t i = 0; i < burst; i++)
      spawn(g, f, (size_t)bench_range(r, 16, 128), (uint32_t)bench_range(r, 5, 30));
  }
  for (int i = 0; i < 4 && g->level.n > 0; i++) { /* level data replaced */
    size_t k = (size_t)(bench_next(r) % g->level.n);
    drop(g, g->level.v[k], 1);
    g->level.v[k] = make(g, mix_size(r), 1);
  }
  vec_t *dying = &g->alive[f % RING];
  for (size_t i = 0; i < dying->n; i++) drop(g, dying->v[i], 1);
  dying->n = 0;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/** Median cost of reading the clock twice in a row. */
static uint64_t timer_cost(void) {
  uint64_t v[1001];
  for (int i = 0; i < 1001; i++) {
    uint64_t t0 = bench_now_ns();
    v[i] = bench_now_ns() - t0;
  }
  qsort(v, 1001, sizeof(v[0]), cmp_u64);
  return v[500];
}

int main(int argc, char **argv) {
  bench_init();
  size_t load = (size_t)bench_opt(argc, argv, "--load", 1500000);
  uint64_t frames = (uint64_t)bench_opt(argc, argv, "--frames", 1500);
  uint64_t frame_ns = (uint64_t)bench_opt(argc, argv, "--frame-us", 4000) * 1000;
  size_t pairs = (size_t)bench_opt(argc, argv, "--pairs", 300);
  static game_t g;
  g.rng = bench_rng((uint64_t)bench_opt(argc, argv, "--seed", 23));
  g.alive = bench_nonnull(calloc(RING, sizeof(vec_t)), RING * sizeof(vec_t));
  uint64_t *per_frame = bench_nonnull(calloc(frames + 1, 8), (frames + 1) * 8);

  uint64_t t0 = bench_now_ns();
  load_level(&g, load);
  uint64_t load_ns = bench_now_ns() - t0;

  uint64_t next = bench_now_ns();
  for (uint64_t f = 0; f < frames; f++) {
    g.frame_ns = 0;
    frame(&g, f, pairs);
    per_frame[f] = g.frame_ns;
    next += frame_ns;
    uint64_t now = bench_now_ns();
    if (now < next)
      bench_sleep_until(next);
    else
      next = now; /* overran: the next frame starts now, no catching up */
  }

  for (uint64_t f = frames; f < frames + RING; f++) { /* the rest, untimed */
    vec_t *v = &g.alive[f % RING];
    for (size_t i = 0; i < v->n; i++) drop(&g, v->v[i], 0);
    free(v->v);
  }
  for (size_t i = 0; i < g.level.n; i++) drop(&g, g.level.v[i], 0);
  free(g.level.v);
  free(g.alive);

  qsort(per_frame, frames, 8, cmp_u64);
  const hist_t *h = &g.calls;
  uint64_t fp50 = frames ? per_frame[frames / 2] : 0;
  uint64_t fp99 = frames ? per_frame[(frames * 99) / 100] : 0;
  uint64_t fmax = frames ? per_frame[frames - 1] : 0;
  printf(
      "EXTRA calls=%llu timer_ns=%llu p50_ns=%llu p90_ns=%llu p99_ns=%llu p999_ns=%llu "
      "p9999_ns=%llu max_ns=%llu frame_p50_us=%.1f frame_p99_us=%.1f frame_max_us=%.1f "
      "load_ms=%.1f\n",
      (unsigned long long)h->count, (unsigned long long)timer_cost(),
      (unsigned long long)hist_quantile(h, 0.5), (unsigned long long)hist_quantile(h, 0.9),
      (unsigned long long)hist_quantile(h, 0.99), (unsigned long long)hist_quantile(h, 0.999),
      (unsigned long long)hist_quantile(h, 0.9999), (unsigned long long)h->max, (double)fp50 / 1e3,
      (double)fp99 / 1e3, (double)fmax / 1e3, (double)load_ns / 1e6);
  free(per_frame);
  bench_result("frame-latency", h->count ? (double)h->sum / (double)h->count : 0.0, "ns/call",
               h->count);
  return 0;
}
