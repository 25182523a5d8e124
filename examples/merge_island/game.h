/* SPDX-License-Identifier: MIT */
/* game.h — the merge-island demo: a small merge game's loop, allocating the
 * way such games do. Tiles, floating texts and drops are plain malloc/free
 * objects; effect particles come from an sc_pool; a per-frame event queue
 * grows with realloc and is freed at the end of the frame. Everything is
 * integer arithmetic driven by one seeded generator, so a run is the same
 * under any allocator and its checksum proves it. */
#ifndef MERGE_ISLAND_GAME_H
#define MERGE_ISLAND_GAME_H

#include <stddef.h>
#include <stdint.h>

#include "sizeclass_pool.h"

enum {
  BOARD_W = 8,
  BOARD_H = 8,
  CELL_PX = 64,  /* a cell is 64 x 64 "pixels" */
  MAX_LEVEL = 7, /* merging three level-7 tiles makes a treasure */
  FLOOR_Y = BOARD_H * CELL_PX + 96,
  GRAVITY = 1,
  TEXT_LIFE = 45,  /* frames a floating text rises */
  DROP_LIFE = 90,  /* frames a drop lies before it is collected */
  SPAWN_EVERY = 3, /* a new tile every third frame */
  DRAG_EVERY = 2,  /* the player may drag-merge every other frame... */
  CROWDED = 40,    /* ...when more than this many tiles crowd the board */
  /* The level's memory budget, touched once when the level loads
   * (level_load): at most this many texts and drops alive at once. */
  MAX_TEXTS = 96,
  MAX_DROPS = 96,
};

/** The seeded generator (xorshift64*): the only source of randomness. */
typedef struct rng_s {
  uint64_t s;
} rng_t;
static inline uint32_t rng_next(rng_t *r) {
  r->s ^= r->s >> 12;
  r->s ^= r->s << 25;
  r->s ^= r->s >> 27;
  return (uint32_t)((r->s * 0x2545F4914F6CDD1Dull) >> 32);
}
/** Uniform in 0..n-1 (n > 0). */
static inline int rng_below(rng_t *r, int n) { return (int)(rng_next(r) % (uint32_t)n); }

/** A tile on the board (malloc'd when placed or made by a merge). */
typedef struct tile_s {
  int32_t level;
  int32_t col, row;
  uint32_t id;
  int32_t placed_frame;
} tile_t;

/** Something that happened on the board this frame; effects react to it. */
typedef enum { EV_MERGE, EV_TREASURE, EV_SOLD } event_kind_t;
typedef struct event_s {
  event_kind_t kind;
  int32_t col, row;
  int32_t level; /* level reached (merge), level sold (sold) */
  int32_t group; /* tiles merged */
  int32_t combo; /* 1 for a plain merge, 2+ for chained merges */
} event_t;

/** An effect particle (from the pool). */
typedef struct particle_s {
  int32_t x, y, vx, vy; /* 1/16 pixel units */
  int32_t life, color, size, spin;
} particle_t;

/** A floating text: "+120", "combo x3 +480", "Treasure!" (malloc'd node and
 * string). */
typedef struct text_s {
  struct text_s *next;
  int32_t x, y, life;
  char *msg;
} text_t;

/** A drop (coin or gem) that falls, bounces and is collected. */
typedef struct drop_s {
  struct drop_s *next;
  int32_t kind, x, y, vy, life, value;
} drop_t;

typedef struct world_s {
  rng_t rng;
  int32_t frame;
  tile_t *cell[BOARD_H][BOARD_W];
  int32_t tiles;
  uint32_t next_tile_id;
  /* this frame's events: grown with realloc, freed at the end of the frame */
  event_t *events;
  size_t n_events, cap_events;
  /* effects */
  sc_pool *particles;
  particle_t **active; /* live particles, swap-removed when they expire */
  size_t n_active;
  text_t *texts;
  drop_t *drops;
  /* what happened, for the summary */
  uint64_t score, placed, merges, combos, treasures, sold;
  uint64_t particles_burst, particles_refused, texts_shown, drops_fallen, drops_collected;
  uint64_t checksum;
} world_t;

/* board.c */
/** Place a tile on a random empty cell (selling the lowest tile if the board
 * is full) and resolve the merges it causes. */
void board_spawn(world_t *w);
/** The player drags a tile onto another of its level; they merge. */
void board_drag(world_t *w);
/** Free every tile. */
void board_clear(world_t *w);

/* effects.c */
/** Make the pool and the particle table; 0 on success. */
int effects_init(world_t *w);
/** Particles the pool may hold at most (its ceiling). */
size_t effects_max_particles(void);
/** Turn this frame's events into particles, texts and drops. */
void effects_react(world_t *w);
/** Move and age every effect; free or release the expired ones. */
void effects_update(world_t *w);
/** Free every effect and the pool. */
void effects_fini(world_t *w);

/* main.c */
/** Append an event to this frame's queue (realloc growth). */
void world_event(world_t *w, event_t ev);
/** Mix a value into the running checksum (FNV-1a, 64-bit). */
void world_mix(world_t *w, uint64_t v);

/* Tags (docs/tags.md): the subsystems' memory in the report's tags table.
 * Weak references: without libsizeclass the game runs untagged. */
#include "sizeclass.h"
#pragma weak sc_tag
#pragma weak sc_tag_enter
#pragma weak sc_tag_leave
enum { TAG_BOARD, TAG_EVENTS, TAG_PARTICLES, TAG_TEXTS, TAG_DROPS, TAG_COUNT };
extern sc_tag_t game_tags[TAG_COUNT];
/** Enter subsystem tag i; returns the tag to leave back to. */
static inline sc_tag_t game_tag_enter(int i) {
  return sc_tag_enter != 0 ? sc_tag_enter(game_tags[i]) : 0;
}
static inline void game_tag_leave(sc_tag_t prev) {
  if (sc_tag_leave != 0) sc_tag_leave(prev);
}

#endif /* MERGE_ISLAND_GAME_H */
