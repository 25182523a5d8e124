/* SPDX-License-Identifier: MIT */
/* board.c — the merge board: tiles are placed on random empty cells; three
 * or more connected tiles of one level merge into one tile of the next
 * level, which may merge again (a combo). Merging level-7 tiles makes a
 * treasure and clears the cell. A full board sells its lowest tile. */
#include <stdbool.h>
#include <stdlib.h>

#include "game.h"

/** A new tile of `level` at (col, row); exits if memory runs out. */
static tile_t *tile_new(world_t *w, int level, int col, int row) {
  tile_t *t = malloc(sizeof(*t));
  if (t == NULL) abort();
  t->level = level;
  t->col = col;
  t->row = row;
  t->id = w->next_tile_id++;
  t->placed_frame = w->frame;
  w->cell[row][col] = t;
  w->tiles++;
  return t;
}

/** Remove and free the tile at (col, row). */
static void tile_remove(world_t *w, int col, int row) {
  free(w->cell[row][col]);
  w->cell[row][col] = NULL;
  w->tiles--;
}

/** Cells (as row * BOARD_W + col) connected to (col, row) through tiles of
 * the same level, written to group; returns how many. The search queue is a
 * per-call scratch allocation, as a real game's flood fill often is. */
static int connected_group(world_t *w, int col, int row, int *group) {
  int level = w->cell[row][col]->level;
  unsigned char *seen = calloc(BOARD_W * BOARD_H, 1);
  if (seen == NULL) abort();
  int n = 0;
  group[n++] = row * BOARD_W + col;
  seen[row * BOARD_W + col] = 1;
  for (int head = 0; head < n; head++) {
    int c = group[head] % BOARD_W, r = group[head] / BOARD_W;
    static const int dc[4] = {1, -1, 0, 0}, dr[4] = {0, 0, 1, -1};
    for (int d = 0; d < 4; d++) {
      int nc = c + dc[d], nr = r + dr[d];
      if (nc < 0 || nc >= BOARD_W || nr < 0 || nr >= BOARD_H) continue;
      if (seen[nr * BOARD_W + nc] || w->cell[nr][nc] == NULL) continue;
      if (w->cell[nr][nc]->level != level) continue;
      seen[nr * BOARD_W + nc] = 1;
      group[n++] = nr * BOARD_W + nc;
    }
  }
  free(seen);
  return n;
}

/** Merge at (col, row) for as long as the tile there has a group of 3+. */
static void resolve_merges(world_t *w, int col, int row) {
  int *group = malloc(BOARD_W * BOARD_H * sizeof(int));
  if (group == NULL) abort();
  for (int combo = 1; w->cell[row][col] != NULL; combo++) {
    int n = connected_group(w, col, row, group);
    if (n < 3) break;
    int level = w->cell[row][col]->level + 1;
    for (int i = 0; i < n; i++) tile_remove(w, group[i] % BOARD_W, group[i] / BOARD_W);
    w->merges++;
    if (combo > 1) w->combos++;
    w->score += (uint64_t)(level * 10 * n * combo);
    if (level > MAX_LEVEL) {
      w->treasures++;
      w->score += 500;
      world_event(w, (event_t){EV_TREASURE, col, row, level, n, combo});
      break;
    }
    tile_new(w, level, col, row);
    world_event(w, (event_t){EV_MERGE, col, row, level, n, combo});
  }
  free(group);
}

/** Sell the lowest tile (the first in reading order among equals). */
static void sell_lowest(world_t *w) {
  int best_c = 0, best_r = 0, best = MAX_LEVEL + 1;
  for (int r = 0; r < BOARD_H; r++)
    for (int c = 0; c < BOARD_W; c++)
      if (w->cell[r][c] != NULL && w->cell[r][c]->level < best) {
        best = w->cell[r][c]->level;
        best_c = c;
        best_r = r;
      }
  tile_remove(w, best_c, best_r);
  w->sold++;
  w->score += (uint64_t)best;
  world_event(w, (event_t){EV_SOLD, best_c, best_r, best, 1, 0});
}

/** Where the player puts a new tile of `level`: usually next to the most
 * tiles of the same level (ties broken at random), sometimes anywhere. */
static int choose_cell(world_t *w, int level) {
  bool careless = rng_below(&w->rng, 4) == 0;
  int best = -1, best_score = -1, ties = 0;
  for (int r = 0; r < BOARD_H; r++)
    for (int c = 0; c < BOARD_W; c++) {
      if (w->cell[r][c] != NULL) continue;
      int score = 0;
      if (!careless) {
        static const int dc[4] = {1, -1, 0, 0}, dr[4] = {0, 0, 1, -1};
        for (int d = 0; d < 4; d++) {
          int nc = c + dc[d], nr = r + dr[d];
          if (nc >= 0 && nc < BOARD_W && nr >= 0 && nr < BOARD_H && w->cell[nr][nc] != NULL &&
              w->cell[nr][nc]->level == level)
            score++;
        }
      }
      if (score > best_score) {
        best_score = score;
        best = r * BOARD_W + c;
        ties = 1;
      } else if (score == best_score && rng_below(&w->rng, ++ties) == 0) {
        best = r * BOARD_W + c;
      }
    }
  return best;
}

void board_spawn(world_t *w) {
  if (w->tiles == BOARD_W * BOARD_H) sell_lowest(w);
  int level = rng_below(&w->rng, 4) == 0 ? 2 : 1;
  int at = choose_cell(w, level);
  int c = at % BOARD_W, r = at / BOARD_W;
  tile_new(w, level, c, r);
  w->placed++;
  resolve_merges(w, c, r);
}

void board_drag(world_t *w) {
  /* The player drags one tile onto another of the same level: the lowest
   * level that has a pair, a random pair of it. */
  int count[MAX_LEVEL + 2] = {0};
  for (int r = 0; r < BOARD_H; r++)
    for (int c = 0; c < BOARD_W; c++)
      if (w->cell[r][c] != NULL) count[w->cell[r][c]->level]++;
  int level = 1;
  while (level <= MAX_LEVEL && count[level] < 2) level++;
  if (level > MAX_LEVEL) return;
  int from = rng_below(&w->rng, count[level]), to = rng_below(&w->rng, count[level] - 1);
  if (to >= from) to++;
  int fc = 0, fr = 0, tc = 0, tr = 0;
  for (int r = 0, k = 0; r < BOARD_H; r++)
    for (int c = 0; c < BOARD_W; c++) {
      if (w->cell[r][c] == NULL || w->cell[r][c]->level != level) continue;
      if (k == from) fc = c, fr = r;
      if (k == to) tc = c, tr = r;
      k++;
    }
  tile_remove(w, fc, fr);
  tile_remove(w, tc, tr);
  w->merges++;
  w->score += (uint64_t)((level + 1) * 20);
  if (level + 1 > MAX_LEVEL) {
    w->treasures++;
    w->score += 500;
    world_event(w, (event_t){EV_TREASURE, tc, tr, level + 1, 2, 1});
    return;
  }
  tile_new(w, level + 1, tc, tr);
  world_event(w, (event_t){EV_MERGE, tc, tr, level + 1, 2, 1});
  resolve_merges(w, tc, tr);
}

void board_clear(world_t *w) {
  for (int r = 0; r < BOARD_H; r++)
    for (int c = 0; c < BOARD_W; c++)
      if (w->cell[r][c] != NULL) tile_remove(w, c, r);
}
