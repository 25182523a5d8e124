/* SPDX-License-Identifier: MIT */
/* frame_check.h — the steady-state check (SIZECLASS_FRAME_CHECK,
 * sc_frame_expect_steady): after the warm-up, a frame that carves a fresh
 * block (one never handed out before) is reported, once per class or by
 * stopping the program. With SIZECLASS_FRAME_CHECK set, every allocation
 * goes through the seam, which catches the carve the moment it happens
 * (and names its site when sites are recorded); sc_frame_expect_steady
 * alone checks at each sc_frame_mark, from the frame's counters. */
#ifndef SC_FRAME_CHECK_H
#define SC_FRAME_CHECK_H

#include "core/feature_bits.h"
#include "core/internal.h"
#include "sizeclass.h"

#pragma GCC visibility push(hidden)

/** True when SIZECLASS_FRAME_CHECK asked for the check (decided at startup). */
static inline bool sc__frame_check_on(void) { return (sc__features & SC_FEATURE_FRAME_CHECK) != 0; }

/** Read SIZECLASS_FRAME_CHECK*; the feature bits to turn on. */
uint32_t sc__frame_check_decide(void);
/** An allocation just carved a fresh block of class c (the seam). */
void sc__frame_check_fresh(unsigned c);
/** sc_frame_mark closed `frame`; cls are the class figures now. */
void sc__frame_check_mark(uint64_t frame, const struct sc_class_stats cls[SC_CLASSES]);

#pragma GCC visibility pop

#endif /* SC_FRAME_CHECK_H */
