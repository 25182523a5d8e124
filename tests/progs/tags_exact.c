/* SPDX-License-Identifier: MIT */
/* tags_exact.c — run preloaded with SIZECLASS_STATS_EXACT=1: three named
 * threads and four tags (nested scopes, remote frees of tagged blocks,
 * realloc across classes and across 1 KiB, a thread that exits) keep
 * their own books of every tagged block; at the end each tag's and each
 * thread's figures (sc_stats_tags, sc_stats_threads) must equal them, and
 * the class table must still add up. Prints "ok" or every mismatch. */
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sizeclass.h"

#define TAGS 5 /* 1..4 used */
#define CLASSES 7
#define THREADS 3

static sc_tag_t tag_id[TAGS];
static const char *tag_nm[TAGS] = {"untagged", "audio", "physics", "ui", "net"};

/* The books: per tag and per thread (0 render, 1 mixer, 2 worker). */
static _Atomic long t_allocs[TAGS], t_live[TAGS][CLASSES], t_class_allocs[TAGS][CLASSES];
static _Atomic long t_sys[TAGS];
static _Atomic long th_allocs[THREADS], th_live_bytes[THREADS];

static int class_of(size_t n) {
  int c = 0;
  while ((16u << c) < n) c++;
  return c;
}

typedef struct {
  void *p;
  size_t n;
  int tag, thread;
} blk_t;

static blk_t balloc(size_t n, int tag, int thread) {
  sc_tag_t prev = sc_tag_enter(tag_id[tag]);
  blk_t b = {malloc(n), n, tag, thread};
  sc_tag_leave(prev);
  if (n <= 1024) {
    int c = class_of(n);
    t_allocs[tag]++;
    t_class_allocs[tag][c]++;
    t_live[tag][c]++;
    th_allocs[thread]++;
    th_live_bytes[thread] += 16 << c;
  } else {
    t_sys[tag] += (long)malloc_usable_size(b.p);
  }
  return b;
}

static void bfree(blk_t *b) {
  if (b->n <= 1024) {
    int c = class_of(b->n);
    t_live[b->tag][c]--;
    th_live_bytes[b->thread] -= 16 << c;
  } else {
    t_sys[b->tag] -= (long)malloc_usable_size(b->p);
  }
  free(b->p);
  b->p = NULL;
}

/** realloc b to n under another tag entered: the block keeps b's tag; the
 * thread that reallocates makes the new block (when it moves). */
static void brealloc(blk_t *b, size_t n, int thread) {
  bool same = b->n <= 1024 && n <= 1024 && class_of(b->n) == class_of(n);
  bool sys_both = b->n > 1024 && n > 1024;
  size_t old_usable = b->n > 1024 ? malloc_usable_size(b->p) : 0;
  sc_tag_t prev = sc_tag_enter(tag_id[4]); /* another tag: must not matter */
  void *q = realloc(b->p, n);
  sc_tag_leave(prev);
  if (same) {
    b->p = q;
    b->n = n;
    return;
  }
  if (sys_both) {
    t_sys[b->tag] += (long)malloc_usable_size(q) - (long)old_usable;
    b->p = q;
    b->n = n;
    return;
  }
  /* Moved: the old block freed, a new one made (b's tag, this thread). */
  if (b->n <= 1024) {
    int c = class_of(b->n);
    t_live[b->tag][c]--;
    th_live_bytes[b->thread] -= 16 << c;
  } else {
    t_sys[b->tag] -= (long)old_usable;
  }
  b->p = q;
  b->n = n;
  b->thread = thread;
  if (n <= 1024) {
    int c = class_of(n);
    t_allocs[b->tag]++;
    t_class_allocs[b->tag][c]++;
    t_live[b->tag][c]++;
    th_allocs[thread]++;
    th_live_bytes[thread] += 16 << c;
  } else {
    t_sys[b->tag] += (long)malloc_usable_size(q);
  }
}

#define HANDOFF 600
static int roomy;              /* of the 16 small growths of a system block: with room after it */
static blk_t handoff[HANDOFF]; /* mixer -> render: freed remotely */
static blk_t worker_kept[64];  /* worker's blocks, freed by main after it exits */
static pthread_barrier_t barrier;
static void *volatile kept[3];

static void *render(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "render");
  static blk_t keep[400];
  for (int i = 0; i < 400; i++) keep[i] = balloc(16 + (size_t)(i * 7) % 900, 3, 0); /* ui */
  for (int i = 0; i < 400; i += 2) bfree(&keep[i]);
  /* Nested scopes: physics, inside it ui, back to physics. */
  sc_tag_t outer = sc_tag_enter(tag_id[2]);
  void *a = malloc(40);
  sc_tag_t inner = sc_tag_enter(tag_id[3]);
  void *b = malloc(300);
  sc_tag_leave(inner);
  void *c = malloc(70);
  sc_tag_leave(outer);
  t_allocs[2] += 2;
  t_class_allocs[2][2]++;
  t_class_allocs[2][3]++;
  t_live[2][2]++;
  t_live[2][3]++;
  t_allocs[3]++;
  t_class_allocs[3][5]++;
  t_live[3][5]++;
  th_allocs[0] += 3;
  th_live_bytes[0] += 64 + 512 + 128;
  kept[0] = a, kept[1] = b, kept[2] = c;                   /* kept live */
  pthread_barrier_wait(&barrier);                          /* the mixer filled the handoff */
  for (int i = 0; i < HANDOFF; i += 3) bfree(&handoff[i]); /* remote frees */
  /* realloc across classes and across 1 KiB, of blocks it did not make */
  brealloc(&handoff[1], 500, 0);  /* class -> class */
  brealloc(&handoff[4], 3000, 0); /* class -> system */
  brealloc(&handoff[7], 20, 0);   /* same class (20 B -> its 32 B class) or not */
  pthread_barrier_wait(&barrier);
  return NULL;
}

static void *mixer(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "mixer");
  for (int i = 0; i < HANDOFF; i++) handoff[i] = balloc(8 + (size_t)(i * 13) % 1000, 1, 1);
  static blk_t big[8];
  for (int i = 0; i < 8; i++) big[i] = balloc(2000 + (size_t)i * 512, 1, 1); /* system route */
  brealloc(&big[0], 5000, 1);                                                /* system -> system */
  brealloc(&big[1], 100, 1);                                                 /* system -> class */
  /* Grown 64 B at a time: the system route's room keeps most steps in
   * place, with the tag's bytes as they were; then trimmed a little. */
  for (int k = 0; k < 16; k++) {
    brealloc(&big[3], big[3].n + 64, 1);
    roomy += malloc_usable_size(big[3].p) >= big[3].n + big[3].n / 8;
  }
  brealloc(&big[3], big[3].n - 100, 1);
  bfree(&big[2]);
  pthread_barrier_wait(&barrier);
  pthread_barrier_wait(&barrier);
  return NULL;
}

static void *worker(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "worker");
  blk_t tmp[100];
  for (int i = 0; i < 100; i++) tmp[i] = balloc(16 + (size_t)i * 5, 4, 2); /* net */
  for (int i = 0; i < 100; i++) {
    if (i < 64)
      worker_kept[i] = tmp[i];
    else
      bfree(&tmp[i]);
  }
  return NULL;
}

static int failures;
static void expect(const char *what, const char *who, long got, long want) {
  if (got == want) return;
  printf("MISMATCH %s %s: got %ld want %ld\n", who, what, got, want);
  failures++;
}

int main(void) {
  for (int t = 1; t < TAGS; t++) tag_id[t] = sc_tag(tag_nm[t]);
  pthread_barrier_init(&barrier, NULL, 2);
  pthread_t th[3];
  pthread_create(&th[2], NULL, worker, NULL);
  pthread_join(th[2], NULL); /* exits with 64 net blocks live */
  pthread_create(&th[0], NULL, render, NULL);
  pthread_create(&th[1], NULL, mixer, NULL);
  pthread_join(th[0], NULL);
  pthread_join(th[1], NULL);
  for (int i = 0; i < 32; i++) bfree(&worker_kept[i]); /* remote frees of an exited thread's */

  struct sc_tag_stats ts[16];
  size_t n = sc_stats_tags(ts, 16);
  if (n < TAGS) {
    printf("MISMATCH only %zu tags\n", n);
    return 1;
  }
  for (int t = 1; t < TAGS; t++) {
    struct sc_tag_stats *s = NULL;
    for (size_t i = 0; i < n; i++)
      if (ts[i].id == tag_id[t]) s = &ts[i];
    if (s == NULL || strcmp(s->name, tag_nm[t]) != 0) {
      printf("MISMATCH tag %s missing\n", tag_nm[t]);
      failures++;
      continue;
    }
    long live = 0, bytes = 0;
    for (int c = 0; c < CLASSES; c++) {
      live += t_live[t][c];
      bytes += t_live[t][c] * (16 << c);
      char what[64];
      snprintf(what, sizeof what, "class %d live_blocks", 16 << c);
      expect(what, tag_nm[t], (long)s->classes[c].live_blocks, t_live[t][c]);
      snprintf(what, sizeof what, "class %d allocs", 16 << c);
      expect(what, tag_nm[t], (long)s->classes[c].allocs, t_class_allocs[t][c]);
    }
    expect("allocs", tag_nm[t], (long)s->allocs, t_allocs[t]);
    expect("frees", tag_nm[t], (long)s->frees, t_allocs[t] - live);
    expect("live_blocks", tag_nm[t], (long)s->live_blocks, live);
    expect("live_block_bytes", tag_nm[t], (long)s->live_block_bytes, bytes);
    expect("system_live_bytes", tag_nm[t], (long)s->system_live_bytes, t_sys[t]);
  }
  struct sc_thread_stats th_s[32];
  size_t m = sc_stats_threads(th_s, 32);
  const char *names[THREADS] = {"render", "mixer", "worker"};
  for (int k = 0; k < THREADS; k++) {
    struct sc_thread_stats *s = NULL;
    for (size_t i = 0; i < m && i < 32; i++)
      if (strcmp(th_s[i].name, names[k]) == 0) s = &th_s[i];
    if (s == NULL) {
      printf("MISMATCH thread %s missing\n", names[k]);
      failures++;
      continue;
    }
    expect("allocs", names[k], (long)s->allocs, th_allocs[k]);
    expect("live_block_bytes", names[k], (long)s->live_block_bytes, th_live_bytes[k]);
    expect("exited", names[k], s->exited, 1);
  }
  /* The class table still adds up: allocs - frees = live, per class. */
  struct sc_stats st;
  sc_stats_get(&st);
  for (int c = 0; c < CLASSES; c++) {
    const struct sc_class_stats *k = &st.classes[c];
    expect("class allocs - frees", "classes", (long)(k->allocs - k->frees), (long)k->live_blocks);
    long tagged = 0;
    for (size_t i = 0; i < n; i++) tagged += (long)ts[i].classes[c].live_blocks;
    expect("class live = sum over tags", "classes", (long)k->live_blocks, tagged);
  }
  /* The first growth asks glibc for an eighth more; the pieces that fit
   * it keep the block (and, between the two, less room is left). */
  expect("growths with an eighth of room", "system", roomy >= 2, 1);
  if (failures == 0) printf("ok\n");
  return failures != 0;
}
