/* SPDX-License-Identifier: MIT */
/* core_mt.c — a multithreaded C program for the preload tests: T threads
 * each make M records (malloc, calloc or realloc'd, 1..1500 B of pattern),
 * pass them to the next thread, which checks and frees them. Output is
 * deterministic for given arguments, whatever the allocator:
 *   usable40=<malloc_usable_size(malloc(40))>   (64 under libsizeclass)
 *   records=<n> checksum=<sum> errors=<e>
 * Usage: core_mt [threads] [records per thread]. Exit 1 on any error. */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rec_s {
  struct rec_s *next;
  uint64_t seed;
  size_t n; /* bytes of data */
  unsigned char data[];
} rec_t;

typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  rec_t *head;
  long count;
} queue_t;

static int nthreads = 4;
static long per_thread = 50000;
static queue_t *queues;
static uint64_t checksum_total;
static long errors_total, records_total;
static pthread_mutex_t total_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned char byte_of(uint64_t seed, size_t i) {
  return (unsigned char)((seed * 2654435761u) >> 7 ^ i * 131);
}

static uint64_t next_rand(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/** A record of n data bytes made one of three ways. */
static rec_t *make_record(uint64_t seed, size_t n) {
  rec_t *r;
  switch (seed % 3) {
    case 0:
      r = malloc(sizeof(rec_t) + n);
      break;
    case 1:
      r = calloc(1, sizeof(rec_t) + n);
      break;
    default: /* grow in two steps, across size classes */
      r = malloc(sizeof(rec_t) + n / 2);
      if (r != NULL) r = realloc(r, sizeof(rec_t) + n);
      break;
  }
  if (r == NULL) return NULL;
  r->seed = seed;
  r->n = n;
  for (size_t i = 0; i < n; i++) r->data[i] = byte_of(seed, i);
  return r;
}

static void *worker(void *arg) {
  long id = (long)(intptr_t)arg;
  queue_t *out = &queues[(id + 1) % nthreads];
  queue_t *in = &queues[id];
  uint64_t rng = 88172645463325252ull ^ (uint64_t)id * 0x9E3779B97F4A7C15ull;
  uint64_t sum = 0;
  long errors = 0, got = 0;
  for (long k = 0; k < per_thread; k++) {
    size_t n = 1 + next_rand(&rng) % 1500;
    rec_t *r = make_record(((uint64_t)id << 40) | (uint64_t)k, n);
    if (r == NULL) {
      errors++;
      continue;
    }
    /* Scratch strings that live and die in this thread. */
    char *s = strdup("scratch string for the local heap");
    if (s == NULL || strlen(s) != 33) errors++;
    free(s);
    pthread_mutex_lock(&out->lock);
    r->next = out->head;
    out->head = r;
    out->count++;
    pthread_cond_signal(&out->cond);
    pthread_mutex_unlock(&out->lock);
  }
  /* Take what the previous thread made: check, sum, free. */
  while (got < per_thread) {
    pthread_mutex_lock(&in->lock);
    while (in->head == NULL) pthread_cond_wait(&in->cond, &in->lock);
    rec_t *list = in->head;
    in->head = NULL;
    pthread_mutex_unlock(&in->lock);
    while (list != NULL) {
      rec_t *r = list;
      list = r->next;
      for (size_t i = 0; i < r->n; i++)
        if (r->data[i] != byte_of(r->seed, i)) {
          errors++;
          break;
        }
      sum += r->seed * 31 + r->n;
      got++;
      free(r);
    }
  }
  pthread_mutex_lock(&total_lock);
  checksum_total += sum;
  errors_total += errors;
  records_total += got;
  pthread_mutex_unlock(&total_lock);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1) nthreads = atoi(argv[1]);
  if (argc > 2) per_thread = atol(argv[2]);
  if (nthreads < 1 || per_thread < 1) return 2;
  void *probe = malloc(40);
  printf("usable40=%zu\n", malloc_usable_size(probe));
  free(probe);
  queues = calloc((size_t)nthreads, sizeof(queue_t));
  pthread_t *t = calloc((size_t)nthreads, sizeof(pthread_t));
  for (int i = 0; i < nthreads; i++) {
    pthread_mutex_init(&queues[i].lock, NULL);
    pthread_cond_init(&queues[i].cond, NULL);
  }
  for (int i = 0; i < nthreads; i++)
    if (pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i) != 0) return 3;
  for (int i = 0; i < nthreads; i++) pthread_join(t[i], NULL);
  printf("records=%ld checksum=%llu errors=%ld\n", records_total,
         (unsigned long long)checksum_total, errors_total);
  free(t);
  free(queues);
  return errors_total == 0 ? 0 : 1;
}
