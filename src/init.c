/* init.c — process-wide bootstrap: the secret, fork handlers, the
 * constructor. Everything here is safe to run from inside the first malloc,
 * whichever library or thread makes it. */
#include <pthread.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "frame.h"
#include "internal.h"

uintptr_t sc__secret;

/* 0 = not started, 1 = in progress, 2 = ready. */
static _Atomic int init_state;

/** A secret from the kernel's AT_RANDOM bytes, mixed with time and pid;
 * never zero so encoded links always differ from raw pointers. */
static uintptr_t make_secret(void) {
  uintptr_t s = 0;
  const void *random_bytes = (const void *)getauxval(AT_RANDOM);
  if (random_bytes != NULL) memcpy(&s, random_bytes, sizeof(s));
  s ^= (uintptr_t)sc__os_now_ns() * 0x9E3779B97F4A7C15ull;
  s ^= (uintptr_t)getpid() << 32;
  s ^= (uintptr_t)&init_state; /* ASLR */
  return s | 1;
}

void sc__init(void) {
  if (sc_likely(atomic_load_explicit(&init_state, memory_order_acquire) == 2)) return;
  int expected = 0;
  if (atomic_compare_exchange_strong(&init_state, &expected, 1)) {
    sc__secret = make_secret();
    atomic_store_explicit(&init_state, 2, memory_order_release);
    return;
  }
  while (atomic_load_explicit(&init_state, memory_order_acquire) != 2) {
    /* another thread is initialising: it takes microseconds */
  }
}

static void fork_prepare(void) { sc__arena_fork_prepare(); }
static void fork_parent(void) { sc__arena_fork_parent(); }
static void fork_child(void) {
  sc__arena_fork_child();
  sc__frame_fork_child();
}

__attribute__((constructor)) static void sc_constructor(void) {
  sc__init();
  sc__sys_bind();
  pthread_atfork(fork_prepare, fork_parent, fork_child);
  sc__stats_on_load();
}
