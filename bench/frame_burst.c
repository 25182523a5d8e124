/* SPDX-License-Identifier: MIT */
/* frame_burst — the seeds' game loop.
 *
 * Every frame spawns a burst of short-lived things and updates and retires
 * the old ones, as a merge game does on each merge, hit and pickup:
 *   - effects: an emitter (96 B) with a particle array (2..24 x 32 B); most
 *     live 2..12 frames, a few 20..60;
 *   - floating text: a label (48 B) with its string (5..40 B, now and then a
 *     long banner of 100..300 B); 30..60 frames;
 *   - drops: an item (128 B) with a name (16..64 B) and now and then a loot
 *     table (512..1024 B); picked up after 60..600 frames, 2 % kept for the
 *     rest of the run (inventory);
 *   - per-frame events (16..64 B), freed at the end of the frame in order.
 * Every ~30 frames an explosion multiplies the burst. Objects sit in
 * per-kind lists in spawn order (vectors grown with realloc, as an engine's
 * would); each frame walks the lists, reads each live object, and frees the
 * expired ones in list order, sub-block before owner (destructor order).
 * Every block is filled on creation and verified in full before its free.
 *
 *   frame_burst --frames N [--seed S] [--settle-ms MS [--trim 0|1]]
 *
 * Reports ns per allocation (the whole frame loop divided by allocations).
 *
 * --settle-ms MS (footprint, issue 7): after the frame loop, free everything
 * but the inventory (the 2 % of drops kept to the end), call malloc_trim(0)
 * if --trim 1, then play MS ms of light 60 Hz frames (a fixed count, MS * 60
 * / 1000 rounded up: each makes its events and now and then a floating
 * text), sleeping to each frame tick, so an allocator's delayed purge can
 * run. Then it prints
 *   frame_burst: settle_frames=N peak_rss_kb=P settled_rss_kb=S live_kb=L trim=T
 * with S the resident set (/proc/self/statm) at the end of the light frames,
 * P the peak: the largest of getrusage's and the statm samples (at the end
 * of the frame loop and S; getrusage reads the kernel's approximate
 * counters and may lag statm by a few hundred KiB), and L the bytes
 * requested by the blocks alive at the end.
 * The timing figure then covers the frame loop and the freeing that follows
 * it (not the light frames). Without --settle-ms nothing of this runs. */
#include <malloc.h>

#include "bench.h"

BENCH_GLOBALS

/* One live game object: an owner block and an optional sub-block. */
typedef struct obj_s {
  void *owner;
  void *sub;
  uint32_t owner_size;
  uint32_t sub_size;
  uint64_t death_frame;
  uint64_t tag;
} obj_t;

/* A list of live objects of one kind, in spawn order. */
typedef struct list_s {
  obj_t *v;
  size_t n, cap;
} list_t;

typedef struct game_s {
  bench_rng_t rng;
  uint64_t frame;
  uint64_t next_tag;
  uint64_t allocs;
  uint64_t live_blocks, peak_live_blocks;
  uint64_t touched; /* sum of words read by updates, so they are not elided */
  list_t effects, texts, drops;
} game_t;

/** A block of n bytes filled from tag; counted as one allocation. */
static void *spawn_block(game_t *g, size_t n, uint64_t tag) {
  void *p = bench_nonnull(malloc(n), n);
  bench_fill(p, n, tag);
  g->allocs++;
  if (++g->live_blocks > g->peak_live_blocks) g->peak_live_blocks = g->live_blocks;
  return p;
}

/** Verify and free a block made by spawn_block. */
static void retire_block(game_t *g, void *p, size_t n, uint64_t tag) {
  bench_verify(p, n, tag);
  free(p);
  g->live_blocks--;
}

/** Append an object to a list, growing it with realloc. */
static void list_push(list_t *l, obj_t o) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 16;
    l->v = bench_nonnull(realloc(l->v, cap * sizeof(obj_t)), cap * sizeof(obj_t));
    l->cap = cap;
  }
  l->v[l->n++] = o;
}

/** Create an object: owner of owner_size, sub-block of sub_size (0: none),
 * dying after `life` frames (0: lives to the end of the run). */
static void spawn(game_t *g, list_t *l, size_t owner_size, size_t sub_size, uint64_t life) {
  obj_t o;
  o.tag = bench_mix(++g->next_tag);
  o.owner_size = (uint32_t)owner_size;
  o.sub_size = (uint32_t)sub_size;
  o.owner = spawn_block(g, owner_size, o.tag);
  o.sub = sub_size ? spawn_block(g, sub_size, ~o.tag) : NULL;
  o.death_frame = life ? g->frame + life : UINT64_MAX;
  list_push(l, o);
}

/** Free an object: sub-block first, then its owner. */
static void destroy(game_t *g, obj_t *o) {
  if (o->sub) retire_block(g, o->sub, o->sub_size, ~o->tag);
  retire_block(g, o->owner, o->owner_size, o->tag);
}

/** Update a list: read every live object, free the expired ones in order,
 * keep the others in spawn order. */
static void update(game_t *g, list_t *l) {
  size_t k = 0;
  for (size_t i = 0; i < l->n; i++) {
    obj_t *o = &l->v[i];
    if (o->death_frame <= g->frame) {
      destroy(g, o);
      continue;
    }
    uint64_t w;
    memcpy(&w, o->owner, 8);
    g->touched += w;
    l->v[k++] = *o;
  }
  l->n = k;
}

/** Particle count: mostly a handful, sometimes a big plume. */
static size_t particles(bench_rng_t *r) {
  return bench_chance(r, 800) ? (size_t)bench_range(r, 2, 6) : (size_t)bench_range(r, 7, 24);
}

/** Spawn one frame's burst; `boom` is an explosion frame. */
static void burst(game_t *g, int boom) {
  bench_rng_t *r = &g->rng;
  uint64_t effects = bench_range(r, 1, 4) * (boom ? 10 : 1);
  uint64_t texts = bench_range(r, 0, 3) * (boom ? 5 : 1);
  uint64_t drops = (bench_chance(r, 400) ? bench_range(r, 1, 2) : 0) + (boom ? 5 : 0);
  for (uint64_t i = 0; i < effects; i++) {
    uint64_t life = bench_chance(r, 900) ? bench_range(r, 2, 12) : bench_range(r, 20, 60);
    spawn(g, &g->effects, 96, particles(r) * 32, life);
  }
  for (uint64_t i = 0; i < texts; i++) {
    size_t len = bench_chance(r, 20) ? bench_range(r, 100, 300) : bench_range(r, 5, 40);
    spawn(g, &g->texts, 48, len + 1, bench_range(r, 30, 60));
  }
  for (uint64_t i = 0; i < drops; i++) {
    uint64_t life = bench_chance(r, 20) ? 0 : bench_range(r, 60, 600);
    size_t sub = bench_chance(r, 50) ? bench_range(r, 512, 1024) : bench_range(r, 16, 64);
    spawn(g, &g->drops, 128, sub, life);
  }
}

/** Per-frame events: made during the frame, freed at its end in order. */
static void events(game_t *g) {
  void *ev[16];
  size_t sz[16];
  uint64_t tag[16];
  size_t n = (size_t)bench_range(&g->rng, 4, 16);
  for (size_t i = 0; i < n; i++) {
    sz[i] = (size_t)bench_range(&g->rng, 16, 64);
    tag[i] = bench_mix(++g->next_tag);
    ev[i] = spawn_block(g, sz[i], tag[i]);
  }
  for (size_t i = 0; i < n; i++) retire_block(g, ev[i], sz[i], tag[i]);
}

/** Free every object that would die (everything but the inventory),
 * keeping the others in spawn order. */
static void retire_mortal(game_t *g) {
  list_t *lists[3] = {&g->effects, &g->texts, &g->drops};
  for (int k = 0; k < 3; k++) {
    list_t *l = lists[k];
    size_t kept = 0;
    for (size_t i = 0; i < l->n; i++) {
      if (l->v[i].death_frame != UINT64_MAX)
        destroy(g, &l->v[i]);
      else
        l->v[kept++] = l->v[i];
    }
    l->n = kept;
  }
}

/** Bytes requested by the blocks of the live objects. */
static uint64_t live_bytes(const game_t *g) {
  const list_t *lists[3] = {&g->effects, &g->texts, &g->drops};
  uint64_t b = 0;
  for (int k = 0; k < 3; k++)
    for (size_t i = 0; i < lists[k]->n; i++)
      b += lists[k]->v[i].owner_size + lists[k]->v[i].sub_size;
  return b;
}

/** Light frames at 60 Hz for ms milliseconds: each frame makes its events
 * and, one frame in ten, a floating text; returns the frames played. */
static uint64_t settle(game_t *g, long ms) {
  const uint64_t tick = 1000000000ull / 60;
  const uint64_t frames = (uint64_t)((ms * 60 + 999) / 1000);
  uint64_t next = bench_now_ns() + tick;
  for (uint64_t i = 0; i < frames; i++, g->frame++) {
    if (bench_chance(&g->rng, 100))
      spawn(g, &g->texts, 48, (size_t)bench_range(&g->rng, 5, 40) + 1,
            bench_range(&g->rng, 30, 60));
    events(g);
    update(g, &g->texts);
    bench_sleep_until(next);
    next += tick;
  }
  return frames;
}

/** Free everything still alive and the lists themselves. */
static void shutdown_game(game_t *g) {
  list_t *lists[3] = {&g->effects, &g->texts, &g->drops};
  for (int k = 0; k < 3; k++) {
    for (size_t i = 0; i < lists[k]->n; i++) destroy(g, &lists[k]->v[i]);
    free(lists[k]->v);
  }
}

int main(int argc, char **argv) {
  bench_init();
  uint64_t frames = (uint64_t)bench_opt(argc, argv, "--frames", 20000);
  long settle_ms = (long)bench_opt(argc, argv, "--settle-ms", 0);
  int trim = (int)bench_opt(argc, argv, "--trim", 0);
  game_t g = {0};
  g.rng = bench_rng((uint64_t)bench_opt(argc, argv, "--seed", 7));

  uint64_t t0 = bench_now_ns();
  for (g.frame = 0; g.frame < frames; g.frame++) {
    int boom = bench_chance(&g.rng, 33);
    burst(&g, boom);
    events(&g);
    update(&g, &g.effects);
    update(&g, &g.texts);
    update(&g, &g.drops);
  }
  uint64_t loop_allocs = g.allocs;
  long loop_kb = settle_ms > 0 ? bench_rss_kb() : 0;
  if (settle_ms <= 0) {
    shutdown_game(&g);
  } else {
    retire_mortal(&g);
  }
  uint64_t dt = bench_now_ns() - t0;
  if (settle_ms > 0) {
    if (trim) malloc_trim(0);
    uint64_t played = settle(&g, settle_ms);
    long settled = bench_rss_kb();
    uint64_t live = live_bytes(&g);
    shutdown_game(&g);
    long peak = bench_peak_rss_kb();
    if (loop_kb > peak) peak = loop_kb;
    if (settled > peak) peak = settled;
    printf(
        "frame_burst: settle_frames=%llu peak_rss_kb=%ld settled_rss_kb=%ld live_kb=%llu "
        "trim=%d\n",
        (unsigned long long)played, peak, settled, (unsigned long long)(live >> 10), trim);
  }

  if (g.live_blocks != 0) {
    fprintf(stderr, "frame_burst: %llu blocks unaccounted for\n",
            (unsigned long long)g.live_blocks);
    return 3;
  }
  printf("frames %llu, allocations %llu (%.1f per frame), peak live blocks %llu, touched %llx\n",
         (unsigned long long)frames, (unsigned long long)g.allocs,
         frames ? (double)g.allocs / (double)frames : 0.0, (unsigned long long)g.peak_live_blocks,
         (unsigned long long)g.touched);
  bench_result("frame-burst", loop_allocs ? (double)dt / (double)loop_allocs : 0.0, "ns/alloc",
               g.allocs);
  return 0;
}
