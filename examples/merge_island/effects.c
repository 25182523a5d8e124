/* SPDX-License-Identifier: MIT */
/* effects.c — what the player sees react to the board: particle bursts
 * (from an sc_pool, the seeds' object pool), floating texts that rise and
 * fade, and drops that fall, bounce and are collected. Texts and drops are
 * plain malloc/free objects, as most games' are. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "game.h"

/* The particle pool: sized for a typical screen, allowed to grow for combo
 * storms, trimmed back in small steps when the storm has passed. */
enum { POOL_CAPACITY = 256, POOL_MAX = 384, POOL_MAX_FREE = 192, POOL_STEP = 2 };

int effects_init(world_t *w) {
  struct sc_pool_config cfg = {.capacity = POOL_CAPACITY,
                               .max_capacity = POOL_MAX,
                               .policy = SC_POOL_GROW_TO_CAP,
                               .max_free = POOL_MAX_FREE,
                               .collect_per_step = POOL_STEP};
  sc_tag_t prev = game_tag_enter(TAG_PARTICLES); /* the pool counts its objects under it */
  w->particles = sc_pool_create(sizeof(particle_t), &cfg);
  game_tag_leave(prev);
  w->active = malloc(POOL_MAX * sizeof(*w->active));
  return w->particles != NULL && w->active != NULL ? 0 : -1;
}

size_t effects_max_particles(void) { return POOL_MAX; }

/** Centre of a cell in 1/16 pixel units. */
static int32_t cell_x(int col) { return (col * CELL_PX + CELL_PX / 2) * 16; }
static int32_t cell_y(int row) { return (row * CELL_PX + CELL_PX / 2) * 16; }

/** n particles flying out of (col, row); those the pool refuses are
 * counted and skipped, as a game drops effects under load. */
static void burst(world_t *w, int col, int row, int n, int color) {
  for (int i = 0; i < n; i++) {
    particle_t *p = sc_pool_acquire(w->particles);
    if (p == NULL) {
      w->particles_refused++;
      continue;
    }
    p->x = cell_x(col);
    p->y = cell_y(row);
    p->vx = rng_below(&w->rng, 97) - 48;
    p->vy = -rng_below(&w->rng, 64) - 16;
    p->life = 18 + rng_below(&w->rng, 30);
    p->color = color;
    p->size = 2 + rng_below(&w->rng, 6);
    p->spin = rng_below(&w->rng, 360);
    w->active[w->n_active++] = p;
    w->particles_burst++;
  }
}

/** A floating text at (col, row); its string is allocated to fit. */
static void float_text(world_t *w, int col, int row, const char *msg) {
  size_t len = strlen(msg);
  sc_tag_t prev = game_tag_enter(TAG_TEXTS);
  text_t *t = malloc(sizeof(*t));
  if (t == NULL || (t->msg = malloc(len + 1)) == NULL) abort();
  game_tag_leave(prev);
  memcpy(t->msg, msg, len + 1);
  t->x = cell_x(col) / 16;
  t->y = cell_y(row) / 16;
  t->life = TEXT_LIFE;
  t->next = w->texts;
  w->texts = t;
  w->texts_shown++;
}

/** A coin (kind 0) or gem (kind 1) falling from (col, row). */
static void drop(world_t *w, int col, int row, int kind, int value) {
  sc_tag_t prev = game_tag_enter(TAG_DROPS);
  drop_t *d = malloc(sizeof(*d));
  game_tag_leave(prev);
  if (d == NULL) abort();
  d->kind = kind;
  d->x = cell_x(col) / 16 + rng_below(&w->rng, 33) - 16;
  d->y = cell_y(row) / 16;
  d->vy = -rng_below(&w->rng, 6);
  d->life = DROP_LIFE;
  d->value = value;
  d->next = w->drops;
  w->drops = d;
  w->drops_fallen++;
}

void effects_react(world_t *w) {
  char msg[48];
  for (size_t i = 0; i < w->n_events; i++) {
    const event_t *e = &w->events[i];
    int points = e->level * 10 * e->group * (e->combo > 1 ? e->combo : 1);
    switch (e->kind) {
      case EV_MERGE:
        burst(w, e->col, e->row, 6 + 3 * e->level + 2 * e->group, e->level);
        if (e->combo > 1)
          snprintf(msg, sizeof(msg), "combo x%d +%d", (int)e->combo, points);
        else
          snprintf(msg, sizeof(msg), "+%d", points);
        float_text(w, e->col, e->row, msg);
        if (e->level >= 4) drop(w, e->col, e->row, 0, 5 * e->level);
        break;
      case EV_TREASURE:
        burst(w, e->col, e->row, 64, 9);
        float_text(w, e->col, e->row, "Treasure! +500");
        for (int k = 0; k < 3; k++) drop(w, e->col, e->row, 1, 50);
        break;
      case EV_SOLD:
        burst(w, e->col, e->row, 4, 0);
        snprintf(msg, sizeof(msg), "sold L%d +%d", (int)e->level, (int)e->level);
        float_text(w, e->col, e->row, msg);
        break;
    }
  }
}

/** Particles: move, fall, age; expired ones go back to the pool. */
static void update_particles(world_t *w) {
  for (size_t i = 0; i < w->n_active;) {
    particle_t *p = w->active[i];
    p->x += p->vx;
    p->y += p->vy;
    p->vy += GRAVITY * 4;
    p->spin = (p->spin + 7) % 360;
    if (--p->life > 0) {
      world_mix(w, (uint64_t)(uint32_t)(p->x ^ (p->y << 8)));
      i++;
      continue;
    }
    if (!sc_pool_release(w->particles, p)) abort(); /* a live particle must release */
    w->active[i] = w->active[--w->n_active];
  }
}

/** Texts rise and fade; drops fall, bounce on the floor and are collected. */
static void update_texts_and_drops(world_t *w) {
  for (text_t **link = &w->texts; *link != NULL;) {
    text_t *t = *link;
    t->y -= 2;
    if (--t->life > 0) {
      world_mix(w, (uint64_t)t->y * 31 + (uint64_t)strlen(t->msg));
      link = &t->next;
      continue;
    }
    *link = t->next;
    free(t->msg);
    free(t);
  }
  for (drop_t **link = &w->drops; *link != NULL;) {
    drop_t *d = *link;
    d->vy += GRAVITY;
    d->y += d->vy;
    if (d->y >= FLOOR_Y) {
      d->y = FLOOR_Y;
      d->vy = -d->vy / 2;
    }
    if (--d->life > 0) {
      world_mix(w, (uint64_t)(d->y * 7 + d->x));
      link = &d->next;
      continue;
    }
    *link = d->next;
    w->score += (uint64_t)d->value;
    w->drops_collected++;
    free(d);
  }
}

void effects_update(world_t *w) {
  update_particles(w);
  update_texts_and_drops(w);
}

void effects_fini(world_t *w) {
  while (w->texts != NULL) {
    text_t *t = w->texts;
    w->texts = t->next;
    free(t->msg);
    free(t);
  }
  while (w->drops != NULL) {
    drop_t *d = w->drops;
    w->drops = d->next;
    free(d);
  }
  sc_pool_destroy(w->particles); /* frees the live particles too */
  free(w->active);
  w->n_active = 0;
}
