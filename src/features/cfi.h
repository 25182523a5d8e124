/* SPDX-License-Identifier: MIT */
/* cfi.h — how to step from a frame to its caller at a given code address,
 * read once from the DWARF call-frame information (.eh_frame) and cached:
 * what lets stack.c walk a stack in a few nanoseconds per frame instead of
 * libgcc's microsecond-per-stack interpretation of the tables. x86-64. */
#ifndef SC_CFI_H
#define SC_CFI_H

#include <stdbool.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

/* The rule at one code address, for the common frames: the canonical frame
 * address (CFA, the caller's stack pointer) is rsp or rbp plus an offset,
 * the return address is at CFA - 8, and rbp is either kept or saved at
 * CFA + rbp_off. */
typedef struct sc_cfi_rule_s {
  int32_t cfa_off;
  int16_t rbp_off;   /* where rbp is saved (rbp_saved) */
  uint8_t cfa_rbp;   /* the CFA is rbp + cfa_off (else rsp + cfa_off) */
  uint8_t rbp_saved; /* rbp is saved at CFA + rbp_off (else unchanged) */
} sc_cfi_rule_t;

enum {
  SC_CFI_OK = 0,      /* *rule is the rule */
  SC_CFI_END = 1,     /* no caller: the return address is undefined, or no
                         unwind table covers the address */
  SC_CFI_COMPLEX = 2, /* a rule this reader does not do (signal frames, DWARF
                         expressions), or libgcc not bound yet
                         (unwinder.h): walk with libgcc instead */
};

/** The rule at code address pc (an address inside a call instruction, or
 * the interrupted instruction); SC_CFI_*. Never allocates; the first
 * question about an address takes a spin lock. */
int sc__cfi_rule(uintptr_t pc, sc_cfi_rule_t *rule);
/** fork child: the cache's lock is free. */
void sc__cfi_fork_child(void);

#pragma GCC visibility pop

#endif /* SC_CFI_H */
