/* SPDX-License-Identifier: MIT */
/* sys_record_stub.c — TEMPORARY: replaced by d's sys_record.c at merge.
 * A mutex-protected open hash of system blocks (address -> 32 bits),
 * mmap'd, growing by doubling; deleted slots are tombstones. */
#include <pthread.h>
#include <string.h>

#include "core/sys_record.h"
#include "util/os.h"

typedef struct {
  uintptr_t key; /* 0: empty, 1: deleted */
  uint32_t info;
} slot_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static slot_t *slots;
static size_t cap, used; /* used: live + tombstones */

static size_t hash(uintptr_t k) { return (size_t)((k >> 4) * 0x9e3779b97f4a7c15ull); }

static slot_t *find(uintptr_t k, bool for_insert) {
  if (cap == 0) return NULL;
  slot_t *tomb = NULL;
  for (size_t i = hash(k) & (cap - 1), n = 0; n < cap; i = (i + 1) & (cap - 1), n++) {
    slot_t *s = &slots[i];
    if (s->key == k) return s;
    if (s->key == 1 && tomb == NULL) tomb = s;
    if (s->key == 0) return for_insert ? (tomb ? tomb : s) : NULL;
  }
  return for_insert ? tomb : NULL;
}

static bool grow(void) {
  size_t ncap = cap ? cap * 2 : 4096;
  slot_t *ns = sc__os_map_aligned(ncap * sizeof(slot_t), 4096);
  if (ns == NULL) return false;
  slot_t *old = slots;
  size_t ocap = cap;
  slots = ns;
  cap = ncap;
  used = 0;
  for (size_t i = 0; i < ocap; i++)
    if (old[i].key > 1) {
      slot_t *s = find(old[i].key, true);
      *s = old[i];
      used++;
    }
  if (old != NULL) sc__os_unmap(old, ocap * sizeof(slot_t));
  return true;
}

bool sc__sysrec_insert(const void *p, uint32_t info) {
  uintptr_t k = (uintptr_t)p;
  pthread_mutex_lock(&lock);
  slot_t *s = find(k, false);
  bool ok = s == NULL;
  if (ok) {
    if ((used + 1) * 4 >= cap * 3 && !grow()) {
      pthread_mutex_unlock(&lock);
      return true; /* not recorded: the OS refused memory */
    }
    s = find(k, true);
    if (s->key == 0) used++;
    s->key = k;
    s->info = info;
  }
  pthread_mutex_unlock(&lock);
  return ok;
}

bool sc__sysrec_remove(const void *p, uint32_t *info) {
  pthread_mutex_lock(&lock);
  slot_t *s = find((uintptr_t)p, false);
  if (s != NULL) {
    if (info != NULL) *info = s->info;
    s->key = 1;
  }
  pthread_mutex_unlock(&lock);
  return s != NULL;
}

bool sc__sysrec_lookup(const void *p, uint32_t *info) {
  pthread_mutex_lock(&lock);
  slot_t *s = find((uintptr_t)p, false);
  if (s != NULL && info != NULL) *info = s->info;
  pthread_mutex_unlock(&lock);
  return s != NULL;
}

void sc__sysrec_set_info(const void *p, uint32_t info) {
  pthread_mutex_lock(&lock);
  slot_t *s = find((uintptr_t)p, false);
  if (s != NULL) s->info = info;
  pthread_mutex_unlock(&lock);
}
