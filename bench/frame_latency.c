/* SPDX-License-Identifier: MIT */
/* frame_latency — how long single malloc and free calls take inside a
 * game's frame loop after a level load (issues 10 and 22: the number a
 * frame budget feels is the slow call, not the average, and in a game most
 * blocks are freed long after anything touched them: cold).
 *
 * Level load: --load blocks of 16..1024 B (half 16..64, 30 % 65..256,
 * 20 % 257..1024), then 85 % of them freed in random order, as a level's
 * loader leaves its temporary data behind: the heap is mostly free, in a
 * random order, and the survivors are scattered through it. Then --frames
 * frames, each starting --frame-us after the previous one (the program
 * sleeps the rest of the frame, as a game waiting for vsync does; a frame
 * that overruns starts the next at once):
 *   - --pairs replacements: a live block picked at random from the whole
 *     heap (level survivors and everything made since) is freed and a new
 *     one made in its place: the cold frees;
 *   - every --burst-every frames a burst of --burst blocks (particles,
 *     16..128 B) freed --burst-life frames later.
 * Every malloc and free of the frames is timed with clock_gettime
 * (CLOCK_MONOTONIC, the vDSO: no system call) into a log-linear histogram
 * (16 steps per power of two, so a bucket is within 6.25 % of its values);
 * a frame's allocator time is the sum of its calls' times. The level load
 * is not timed per call (it is a loading screen); its duration is printed.
 * Blocks are stamped (first and last 8 bytes) and checked CHECK_AHEAD
 * frames before their free, not just before it: a check right before the
 * free would bring the block into the cache and hide what a cold free
 * costs.
 *
 *   frame_latency [--load N] [--frames F] [--frame-us U] [--pairs P]
 *                 [--burst B] [--burst-every E] [--burst-life L] [--seed S]
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
  uint32_t checked; /* its stamp was checked (it is freed soon) */
  uint64_t tag;
} blk_t;

/* How many frames before its free a block's stamp is checked. */
#define CHECK_AHEAD 16
/* Frames of pending burst frees kept (> --burst-life). */
#define BURST_RING 64

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
  vec_t heap;                  /* the live blocks replacements pick from */
  size_t *picked[CHECK_AHEAD]; /* heap slots to replace, per frame ahead */
  size_t pairs;                /* replacements per frame */
  vec_t bursts[BURST_RING];    /* burst blocks, by the frame they die in */
} game_t;

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
  b.checked = 0;
  b.tag = bench_mix(++g->next_tag);
  bench_stamp(b.p, n, b.tag);
  return b;
}

/** Check a block's stamp, once. */
static void check(blk_t *b) {
  if (b->checked) return;
  bench_check(b->p, b->n, b->tag);
  b->checked = 1;
}

/** Free a block (checked earlier, or now), timed when `timed`. */
static void drop(game_t *g, blk_t b, int timed) {
  check(&b);
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
  for (size_t i = 0; i < keep; i++) vec_push(&g->heap, all[i]);
  free(all);
}

/** Pick frame f's replacements now, CHECK_AHEAD frames early, and check
 * their stamps: by the time they are freed nothing has touched them. A
 * slot picked twice in one frame is replaced twice (the second time, the
 * block made by the first). */
static void pick_ahead(game_t *g, uint64_t f) {
  size_t *s = g->picked[f % CHECK_AHEAD];
  for (size_t i = 0; i < g->pairs; i++) {
    s[i] = (size_t)(bench_next(&g->rng) % g->heap.n);
    check(&g->heap.v[s[i]]);
  }
}

/** One frame's allocator work. */
static void frame(game_t *g, uint64_t f, size_t burst, uint64_t every, uint64_t life) {
  bench_rng_t *r = &g->rng;
  const size_t *s = g->picked[f % CHECK_AHEAD];
  for (size_t i = 0; i < g->pairs; i++) { /* cold frees: blocks nothing touched lately */
    blk_t *b = &g->heap.v[s[i]];
    drop(g, *b, 1);
    *b = make(g, mix_size(r), 1);
    b->checked = 1; /* a slot picked twice this frame: just made, checked at free */
  }
  pick_ahead(g, f + CHECK_AHEAD);
  if (every != 0 && f % every == 0) {
    vec_t *v = &g->bursts[(f + life) % BURST_RING];
    for (size_t i = 0; i < burst; i++) vec_push(v, make(g, (size_t)bench_range(r, 16, 128), 1));
  }
  if (life + CHECK_AHEAD / 2 < BURST_RING) { /* check the bursts dying a few frames from now */
    vec_t *soon = &g->bursts[(f + (life < 4 ? life : 4)) % BURST_RING];
    for (size_t i = 0; i < soon->n; i++) check(&soon->v[i]);
  }
  vec_t *dying = &g->bursts[f % BURST_RING];
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
  size_t burst = (size_t)bench_opt(argc, argv, "--burst", 4000);
  uint64_t every = (uint64_t)bench_opt(argc, argv, "--burst-every", 4);
  uint64_t life = (uint64_t)bench_opt(argc, argv, "--burst-life", 3);
  static game_t g;
  g.pairs = (size_t)bench_opt(argc, argv, "--pairs", 300);
  if (life < 1) life = 1;
  if (life >= BURST_RING) life = BURST_RING - 1;
  g.rng = bench_rng((uint64_t)bench_opt(argc, argv, "--seed", 23));
  for (int i = 0; i < CHECK_AHEAD; i++)
    g.picked[i] =
        bench_nonnull(calloc(g.pairs + 1, sizeof(size_t)), (g.pairs + 1) * sizeof(size_t));
  uint64_t *per_frame = bench_nonnull(calloc(frames + 1, 8), (frames + 1) * 8);

  uint64_t t0 = bench_now_ns();
  load_level(&g, load < 2 ? 2 : load);
  uint64_t load_ns = bench_now_ns() - t0;
  for (uint64_t f = 0; f < CHECK_AHEAD; f++) pick_ahead(&g, f);

  uint64_t next = bench_now_ns();
  for (uint64_t f = 0; f < frames; f++) {
    g.frame_ns = 0;
    frame(&g, f, burst, every, life);
    per_frame[f] = g.frame_ns;
    next += frame_ns;
    uint64_t now = bench_now_ns();
    if (now < next)
      bench_sleep_until(next);
    else
      next = now; /* overran: the next frame starts now, no catching up */
  }

  for (size_t i = 0; i < BURST_RING; i++) { /* the rest, untimed */
    for (size_t k = 0; k < g.bursts[i].n; k++) drop(&g, g.bursts[i].v[k], 0);
    free(g.bursts[i].v);
  }
  for (size_t i = 0; i < g.heap.n; i++) drop(&g, g.heap.v[i], 0);
  free(g.heap.v);
  for (int i = 0; i < CHECK_AHEAD; i++) free(g.picked[i]);

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
