/* SPDX-License-Identifier: MIT */
/* feature_bits.h — which optional features are on in this process: one
 * word, decided once when the process starts (sc__init → the features'
 * decision) and read by the core's slow paths, the features and the
 * report alike. The hooks behind the bits are hooks.h. */
#ifndef SC_FEATURE_BITS_H
#define SC_FEATURE_BITS_H

#include <stdint.h>

#pragma GCC visibility push(hidden)

/** Optional features on in this process (SC_FEATURE_* bits), fixed when
 * the process starts (sc__init); 0: the fast paths do everything. */
extern uint32_t sc__features;

enum {
  SC_FEATURE_EXACT = 1u << 0,       /* exact per-request statistics (exact.h) */
  SC_FEATURE_GUARD = 1u << 1,       /* sampled guard pages (guard.h) */
  SC_FEATURE_CHECK = 1u << 2,       /* checking mode: slack and freed-block patterns (check.h) */
  SC_FEATURE_SITES = 1u << 3,       /* allocation sites, SIZECLASS_SITES (sites.h) */
  SC_FEATURE_FRAME_CHECK = 1u << 4, /* steady-state check, SIZECLASS_FRAME_CHECK (frame_check.h) */
};
/** Features that must see every local free of a class block: with them
 * on, a thread's `self` is SC_NOT_AN_ARENA and each free leaves through
 * sc__free_other_fn. The sites see only the frees of sampled blocks, which
 * their map byte sends out of the fast path. */
#define SC_FEATURES_SEE_FREES (SC_FEATURE_EXACT | SC_FEATURE_CHECK)
/** Features that must see every malloc: with them on, a thread's
 * countdown is never above zero. */
#define SC_FEATURES_EVERY_MALLOC (SC_FEATURE_EXACT | SC_FEATURE_CHECK | SC_FEATURE_FRAME_CHECK)
/** Features that see a sample of mallocs, drawn by the countdown. */
#define SC_FEATURES_SAMPLED (SC_FEATURE_SITES | SC_FEATURE_GUARD)
/** Features that may hold freed class blocks still live in the block map
 * (the checking mode's quarantine): realloc asks the hooks about a block. */
#define SC_FEATURES_HOLD_FREED SC_FEATURE_CHECK

#pragma GCC visibility pop

#endif /* SC_FEATURE_BITS_H */
