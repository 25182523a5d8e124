/* SPDX-License-Identifier: MIT */
/* sites_map.c — the sampled blocks that are still live, by address, so that
 * a free can take its block out of its site's live count (sites.h).
 *
 * An open-addressing hash table with linear probing and backward-shift
 * deletion (no tombstones), split into shards by address hash, each with
 * its own lock and its own table, mmap'd and doubled when three quarters
 * full. At the default rate it holds a handful of blocks; at rate 1 every
 * live block, which is what the shards are for. The filter of sites.h keeps
 * frees of blocks that were never sampled away from here. */
#include <pthread.h>

#include "features/sites.h"

#define SHARD_BITS 6
#define SHARDS (1u << SHARD_BITS)
#define FIRST_SLOTS 256

typedef struct {
  uintptr_t addr; /* 0: empty */
  uint64_t val;
} slot_t;

typedef struct {
  pthread_mutex_t lock;
  slot_t *slots;
  size_t mask; /* slots - 1; slots is 0 until the first block */
  size_t count;
} shard_t;

/* One shard per cache-line pair, so shards' locks do not share lines. */
typedef union {
  shard_t s;
  char pad[128];
} shard_slot_t;

static shard_slot_t shards[SHARDS] = {
    [0 ... SHARDS - 1] = {.s = {.lock = PTHREAD_MUTEX_INITIALIZER}}};

static inline uint64_t mix(uintptr_t addr) { return (uint64_t)addr * 0x9E3779B97F4A7C15ull; }

static inline shard_t *shard_of(uintptr_t addr) {
  return &shards[mix(addr) >> (64 - SHARD_BITS)].s;
}

static inline size_t home(const shard_t *sh, uintptr_t addr) {
  return (size_t)(mix(addr) >> 20) & sh->mask;
}

/** Give shard sh a table of `slots` slots holding its blocks; false if the
 * OS refused. */
static bool resize(shard_t *sh, size_t slots) {
  slot_t *fresh = sc__os_map_aligned(slots * sizeof(slot_t), 4096);
  if (fresh == NULL) return false;
  slot_t *old = sh->slots;
  size_t old_slots = old != NULL ? sh->mask + 1 : 0;
  sh->slots = fresh;
  sh->mask = slots - 1;
  for (size_t i = 0; i < old_slots; i++) {
    if (old[i].addr == 0) continue;
    size_t j = home(sh, old[i].addr);
    while (fresh[j].addr != 0) j = (j + 1) & sh->mask;
    fresh[j] = old[i];
  }
  if (old != NULL) sc__os_unmap(old, old_slots * sizeof(slot_t));
  return true;
}

bool sc__sites_map_put(uintptr_t addr, uint64_t val, uint64_t *old) {
  shard_t *sh = shard_of(addr);
  bool replaced = false;
  sc__sites_lock(&sh->lock);
  size_t slots = sh->slots != NULL ? sh->mask + 1 : 0;
  if ((sh->slots == NULL || (sh->count + 1) * 4 > slots * 3) &&
      !resize(sh, slots ? slots * 2 : FIRST_SLOTS)) {
    /* No room and no memory: the block stays out of the map, and its site
     * keeps it live. Say it was there, so that the filter is left alone. */
    sc__sites_unlock(&sh->lock);
    *old = val;
    return true;
  }
  size_t i = home(sh, addr);
  while (sh->slots[i].addr != 0 && sh->slots[i].addr != addr) i = (i + 1) & sh->mask;
  if (sh->slots[i].addr == addr) {
    *old = sh->slots[i].val;
    replaced = true;
  } else {
    sh->slots[i].addr = addr;
    sh->count++;
  }
  sh->slots[i].val = val;
  sc__sites_unlock(&sh->lock);
  return replaced;
}

bool sc__sites_map_take(uintptr_t addr, uint64_t *val) {
  shard_t *sh = shard_of(addr);
  sc__sites_lock(&sh->lock);
  if (sh->slots == NULL) {
    sc__sites_unlock(&sh->lock);
    return false;
  }
  size_t i = home(sh, addr);
  while (sh->slots[i].addr != 0 && sh->slots[i].addr != addr) i = (i + 1) & sh->mask;
  if (sh->slots[i].addr == 0) {
    sc__sites_unlock(&sh->lock);
    return false;
  }
  *val = sh->slots[i].val;
  /* Backward-shift deletion: pull later entries of the run into the hole
   * when their home slot is not between the hole and them. */
  size_t hole = i;
  for (size_t j = (i + 1) & sh->mask; sh->slots[j].addr != 0; j = (j + 1) & sh->mask) {
    size_t h = home(sh, sh->slots[j].addr);
    bool stays = hole <= j ? (h > hole && h <= j) : (h > hole || h <= j);
    if (stays) continue;
    sh->slots[hole] = sh->slots[j];
    hole = j;
  }
  sh->slots[hole].addr = 0;
  sh->slots[hole].val = 0;
  sh->count--;
  sc__sites_unlock(&sh->lock);
  return true;
}

void sc__sites_map_fork_prepare(void) {
  for (unsigned i = 0; i < SHARDS; i++) pthread_mutex_lock(&shards[i].s.lock);
}

void sc__sites_map_fork_release(bool child) {
  for (unsigned i = 0; i < SHARDS; i++) {
    if (child)
      pthread_mutex_init(&shards[i].s.lock, NULL);
    else
      pthread_mutex_unlock(&shards[i].s.lock);
  }
}
