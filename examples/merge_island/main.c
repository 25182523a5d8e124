/* SPDX-License-Identifier: MIT */
/* main.c — the merge-island game loop: place tiles, resolve merges, react
 * with effects, move everything, mark the frame. Prints a short summary
 * with a checksum of the whole run.
 *
 * Usage: merge_island [frames [seed]]   (default 3600 frames = 60 s at 60
 * fps, seed 20261012). Built without libsizeclass: run it plainly for
 * glibc, or under LD_PRELOAD=build/libsizeclass.so SIZECLASS_STATS=1 to see
 * the per-class and per-frame report (`make run`). */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define SC_FRAME_WEAK /* the frame marks are skipped when the library is absent */
#include "game.h"
#include "sizeclass.h"

sc_tag_t game_tags[TAG_COUNT];

void world_event(world_t *w, event_t ev) {
  if (w->n_events == w->cap_events) {
    size_t cap = w->cap_events ? w->cap_events * 2 : 2;
    sc_tag_t prev = game_tag_enter(TAG_EVENTS);
    event_t *grown = realloc(w->events, cap * sizeof(*grown));
    game_tag_leave(prev);
    if (grown == NULL) abort();
    w->events = grown;
    w->cap_events = cap;
  }
  w->events[w->n_events++] = ev;
}

void world_mix(world_t *w, uint64_t v) {
  for (int i = 0; i < 8; i++) {
    w->checksum ^= (v >> (8 * i)) & 0xff;
    w->checksum *= 1099511628211ull;
  }
}

/* The level load's blocks, all live at once, then all freed. */
static void *loaded[1024];
static size_t n_loaded;

/** Allocate `count` objects of `size` bytes (they stay until unload). */
static void load(size_t size, size_t count) {
  for (size_t i = 0; i < count && n_loaded < sizeof(loaded) / sizeof(loaded[0]); i++)
    if ((loaded[n_loaded] = malloc(size)) != NULL) n_loaded++;
}

/** The level load: the game touches its memory budget once, before the
 * first frame, as games warm their heaps and pools while the loading
 * screen shows: as many objects of each kind as the level may hold at
 * once, allocated together, then freed. Every object of the level fits
 * in that budget (the board's 64 tiles, the particle pool's ceiling,
 * MAX_TEXTS texts with their strings, MAX_DROPS drops, a few scratch
 * arrays and event queues), so the frames that follow only reuse freed
 * blocks, and the steady-state check (SIZECLASS_FRAME_CHECK=abort) holds
 * from the first frame after the warm-up. Nothing here touches the game's
 * state: the run and its checksum are the same with or without it. */
static void level_load(void) {
  load(sizeof(tile_t), BOARD_W * BOARD_H);
  load(sizeof(particle_t), effects_max_particles());
  load(sizeof(text_t), MAX_TEXTS);
  load(8, MAX_TEXTS); /* the texts' strings ("+60", "combo x2 +480") */
  load(sizeof(drop_t), MAX_DROPS);
  load(BOARD_W * BOARD_H, 2);               /* flood-fill scratch (calloc) */
  load(BOARD_W * BOARD_H * sizeof(int), 2); /* merge groups */
  for (size_t cap = 2; cap <= 8; cap *= 2) load(cap * sizeof(event_t), 2); /* event queues */
  while (n_loaded > 0) free(loaded[--n_loaded]);
}

/** One frame of the game. */
static void frame(world_t *w) {
  sc_tag_t prev = game_tag_enter(TAG_BOARD);
  if (w->frame % SPAWN_EVERY == 0) board_spawn(w);
  if (w->frame % DRAG_EVERY == 1 && w->tiles > CROWDED) board_drag(w);
  game_tag_leave(prev);
  effects_react(w);
  free(w->events); /* the event queue lives for one frame */
  w->events = NULL;
  w->n_events = w->cap_events = 0;
  effects_update(w);
  world_mix(w, w->score);
  for (int r = 0; r < BOARD_H; r++)
    for (int c = 0; c < BOARD_W; c++)
      world_mix(w, w->cell[r][c] != NULL ? (uint64_t)w->cell[r][c]->level : 0);
}

static void print_summary(const world_t *w, long frames, uint64_t seed) {
  struct sc_pool_stats ps;
  sc_pool_stats(w->particles, &ps);
  printf("merge_island: %ld frames, seed %" PRIu64 "\n", frames, seed);
  printf("  board     %" PRIu64 " tiles placed, %" PRIu64 " merges (%" PRIu64
         " in combos), %" PRIu64 " treasures, %" PRIu64 " sold, %d on the board\n",
         w->placed, w->merges, w->combos, w->treasures, w->sold, (int)w->tiles);
  printf("  particles %" PRIu64 " burst, %" PRIu64 " refused; pool: created %" PRIu64
         ", hit rate %u permille, peak live %" PRIu64 ", grown %" PRIu64 ", collected %" PRIu64
         ", capacity now %" PRIu64 "\n",
         w->particles_burst, w->particles_refused, ps.created, sc_pool_hit_rate_permille(&ps),
         ps.peak_live, ps.grown, ps.collected, ps.capacity);
  printf("  texts     %" PRIu64 " floated; drops %" PRIu64 " fell, %" PRIu64 " collected\n",
         w->texts_shown, w->drops_fallen, w->drops_collected);
  printf("  score     %" PRIu64 "\n", w->score);
  printf("  checksum  %016" PRIx64 "\n", w->checksum);
  printf("  frames    %s\n", sc_frame_mark != 0
                                 ? "marked in libsizeclass (see the frames section of its report)"
                                 : "not marked (libsizeclass is not loaded)");
  fflush(stdout); /* before the library's exit report, even when piped */
}

int main(int argc, char **argv) {
  long frames = argc > 1 ? strtol(argv[1], NULL, 10) : 3600;
  uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 20261012;
  if (frames <= 0) {
    fprintf(stderr, "usage: %s [frames [seed]]\n", argv[0]);
    return 2;
  }
  static const char *const tag_names[TAG_COUNT] = {"board", "events", "particles", "texts",
                                                   "drops"};
  if (sc_tag != 0)
    for (int i = 0; i < TAG_COUNT; i++) game_tags[i] = sc_tag(tag_names[i]);
  pthread_setname_np(pthread_self(), "game-loop");
  static world_t w; /* zeroed */
  w.rng.s = seed * 0x9E3779B97F4A7C15ull + 1;
  w.checksum = 1469598103934665603ull;
  if (effects_init(&w) != 0) {
    fprintf(stderr, "merge_island: out of memory\n");
    return 1;
  }
  level_load();
  for (w.frame = 0; w.frame < frames; w.frame++) {
    frame(&w);
    SC_FRAME_MARK();
  }
  print_summary(&w, frames, seed);
  board_clear(&w);
  effects_fini(&w);
  return 0;
}
