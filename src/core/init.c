/* SPDX-License-Identifier: MIT */
/* init.c — process-wide bootstrap: the secrets, which optional features are
 * on (seam.c), fork handlers, the constructor. Everything here is safe to run from inside the first
 * malloc, whichever library or thread makes it. */
#include <pthread.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/internal.h"
#include "core/hooks.h"
#include "core/snapshot.h"
#include "util/stream.h"
#include "core/sys_record.h"
#include "util/settings.h"
#include "util/startup.h"
#include "util/os.h"

uintptr_t sc__secret;
uintptr_t sc__key_secret;
uintptr_t sc__key_mult;
uintptr_t sc__remote_secret;
uintptr_t sc__sample_secret;
bool sc__random_placement;
static uintptr_t page_secret; /* the seed of the pages' keys */
uint32_t sc__features;        /* feature_bits.h: set by the features' decision (hooks.h) */
uint64_t sc__stats_start_ns;  /* snapshot.h: the library's load time */

/* 0 = not started, 1 = in progress, 2 = ready. */
static _Atomic int init_state;

enum { N_SECRETS = 6 };

/** splitmix64's finalizer: a bijection that mixes every bit into every
 * other. */
static uint64_t mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/** Fill out[] with secrets: the kernel's random bytes (getrandom, no
 * allocation), else AT_RANDOM mixed with time, pid and ASLR. Each is odd, so
 * never zero: an encoded link always differs from a raw pointer, a free key
 * is never 0 (the value a live block's key word is cleared to), and the
 * multipliers are invertible. */
static void make_secrets(uintptr_t out[N_SECRETS]) {
  uintptr_t s[N_SECRETS] = {0};
  if (syscall(SYS_getrandom, s, sizeof(s), GRND_NONBLOCK) != (long)sizeof(s)) {
    uintptr_t r[2] = {0, 0};
    const void *random_bytes = (const void *)getauxval(AT_RANDOM);
    if (random_bytes != NULL) memcpy(r, random_bytes, sizeof(r));
    uint64_t x = r[0] ^ ((uintptr_t)sc__os_now_ns() * 0x9E3779B97F4A7C15ull);
    uint64_t y = r[1] ^ ((uintptr_t)getpid() << 32) ^ (uintptr_t)&init_state;
    for (int i = 0; i < N_SECRETS; i++) s[i] = mix64(x + (uint64_t)i * 0x9E3779B97F4A7C15ull) ^ y;
  }
  for (int i = 0; i < N_SECRETS; i++) out[i] = s[i] | 1;
}

uintptr_t sc__page_key_new(const sc_page_t *page) {
  static _Atomic uint64_t drawn;
  uint64_t n = atomic_fetch_add_explicit(&drawn, 1, memory_order_relaxed);
  return mix64(page_secret + n * 0x9E3779B97F4A7C15ull) ^ mix64((uintptr_t)page ^ page_secret);
}

/** SIZECLASS_HARDEN=random, unless the checking mode is on: its free
 * lists hold only poisoned blocks, which a shuffled fresh page's are not. */
static sc_startup void random_placement_decide(void) {
  if (sc__setting(SC_SET_HARDEN) != SC_HARDEN_RANDOM) return;
  if (sc__features & SC_FEATURE_CHECK) {
    sc__warn("SIZECLASS_HARDEN=random is ignored with the checking mode on");
    return;
  }
  sc__random_placement = true;
}

sc_startup void sc__init(void) {
  if (sc_likely(atomic_load_explicit(&init_state, memory_order_acquire) == 2)) return;
  int expected = 0;
  if (atomic_compare_exchange_strong(&init_state, &expected, 1)) {
    sc__stream_record(); /* what stdout and stderr are at startup (util/stream.h) */
    uintptr_t secrets[N_SECRETS];
    make_secrets(secrets);
    sc__secret = secrets[0];
    sc__key_secret = secrets[1];
    sc__key_mult = secrets[2];
    sc__remote_secret = secrets[3];
    page_secret = secrets[4];
    sc__sample_secret = secrets[5];
    sc__sys_start();
    sc__hooks_start();
    sc__hooks_seal(); /* the fast paths' targets and the table: read-only from here */
    random_placement_decide();
    atomic_store_explicit(&init_state, 2, memory_order_release);
    return;
  }
  while (atomic_load_explicit(&init_state, memory_order_acquire) != 2) {
    /* another thread is initialising: it takes microseconds */
  }
}

static void fork_prepare(void) {
  sc__ops.lifecycle.fork(0);
  sc__arena_fork_prepare();
  sc__hooks_fork(0); /* last: a writer of the page takes no other lock */
}
static void fork_parent(void) {
  sc__hooks_fork(1);
  sc__arena_fork_parent();
  sc__ops.lifecycle.fork(1);
}
static void fork_child(void) {
  sc__hooks_fork(2);
  sc__sysrec_fork_child();
  sc__arena_fork_child();
  sc__ops.lifecycle.fork(2);
}

/* The statistics dump and the frame statistics arm themselves from their
 * own constructors: the allocator core does not depend on them. */
__attribute__((constructor)) static void sc_constructor(void) {
  sc__stats_start_ns = sc__os_now_ns(); /* the report's wall time counts from here */
  sc__init();
  sc__sys_bind();
  sc__sys_trim_init();
  sc__os_atfork(fork_prepare, fork_parent, fork_child);
}

/* The shared library's DT_FINI, named by the Makefile's link (-fini):
 * crti's _fini has nothing to do on this target (the destructors run from
 * .fini_array), but the linker puts it after all of the library's code,
 * where calling it at exit made a plain run touch a page of code of its
 * own (util/startup.h). This one sits with the exit code. */
void sc__fini(void);
__attribute__((used, section(".text.exit"))) void sc__fini(void) {}
