/* SPDX-License-Identifier: MIT */
/* cfi.c — the DWARF call-frame rule at a code address (cfi.h).
 *
 * libgcc finds the frame description entry (FDE) that covers an address
 * (_Unwind_Find_FDE: glibc's _dl_find_object, then a binary search of the
 * object's .eh_frame_hdr); this file interprets the FDE's and its common
 * information entry's (CIE) call-frame program up to the address, keeping
 * only what x86-64 frames need to be stepped: where the canonical frame
 * address (CFA) is, whether the return address sits at CFA - 8, and where
 * rbp was saved. Anything else — DWARF expressions, signal frames, a
 * return address kept elsewhere — is answered SC_CFI_COMPLEX, and the
 * caller walks that stack with libgcc.
 *
 * Answers are cached by address in an mmap'd open-addressing table that
 * only grows: an entry is written once, under a spin lock, its value before
 * its key, so readers take no lock. A full table answers without caching. */
#include "features/cfi.h"

#include <stddef.h>
#include <string.h>

#include "core/internal.h"
#include "features/unwinder.h" /* libgcc's FDE lookup, bound at run time */

/* DWARF registers of x86-64. */
enum { REG_RBP = 6, REG_RSP = 7, REG_RA = 16 };

/* ---- reading the tables ------------------------------------------------------------------ */

typedef struct {
  const uint8_t *p, *end;
  bool bad;
} reader_t;

static uint64_t uleb(reader_t *r) {
  uint64_t v = 0;
  unsigned shift = 0;
  while (r->p < r->end) {
    uint8_t b = *r->p++;
    if (shift < 64) v |= (uint64_t)(b & 0x7f) << shift;
    shift += 7;
    if ((b & 0x80) == 0) return v;
  }
  r->bad = true;
  return 0;
}

static int64_t sleb(reader_t *r) {
  int64_t v = 0;
  unsigned shift = 0;
  uint8_t b = 0x80;
  while (r->p < r->end && (b & 0x80)) {
    b = *r->p++;
    if (shift < 64) v |= (int64_t)((uint64_t)(b & 0x7f) << shift);
    shift += 7;
  }
  if (b & 0x80) r->bad = true;
  if (shift < 64 && (b & 0x40)) v = (int64_t)((uint64_t)v | (~(uint64_t)0 << shift));
  return v;
}

static uint64_t fixed(reader_t *r, unsigned bytes) {
  if ((size_t)(r->end - r->p) < bytes) {
    r->bad = true;
    return 0;
  }
  uint64_t v = 0;
  memcpy(&v, r->p, bytes); /* little-endian */
  r->p += bytes;
  return v;
}

/* DW_EH_PE_* pointer encodings. */
enum {
  PE_ABSPTR = 0x00,
  PE_ULEB = 0x01,
  PE_UDATA2 = 0x02,
  PE_UDATA4 = 0x03,
  PE_UDATA8 = 0x04,
  PE_SLEB = 0x09,
  PE_SDATA2 = 0x0a,
  PE_SDATA4 = 0x0b,
  PE_SDATA8 = 0x0c,
  PE_PCREL = 0x10,
  PE_DATAREL = 0x30,
  PE_FUNCREL = 0x40,
  PE_INDIRECT = 0x80,
  PE_OMIT = 0xff,
};

/** A pointer in encoding enc; `value_only`: its value without the
 * application (pc-relative ...) part, as an FDE's address range is. */
static uint64_t encoded(reader_t *r, uint8_t enc, bool value_only,
                        const struct dwarf_eh_bases *bases) {
  if (enc == PE_OMIT) return 0;
  const uint8_t *at = r->p;
  uint64_t v;
  switch (enc & 0x0f) {
    case PE_ABSPTR:
    case PE_UDATA8:
    case PE_SDATA8:
      v = fixed(r, 8);
      break;
    case PE_ULEB:
      v = uleb(r);
      break;
    case PE_SLEB:
      v = (uint64_t)sleb(r);
      break;
    case PE_UDATA2:
      v = fixed(r, 2);
      break;
    case PE_SDATA2:
      v = (uint64_t)(int64_t)(int16_t)fixed(r, 2);
      break;
    case PE_UDATA4:
      v = fixed(r, 4);
      break;
    case PE_SDATA4:
      v = (uint64_t)(int64_t)(int32_t)fixed(r, 4);
      break;
    default:
      r->bad = true;
      return 0;
  }
  if (value_only || v == 0) return v;
  switch (enc & 0x70) {
    case PE_PCREL:
      v += (uint64_t)(uintptr_t)at;
      break;
    case PE_DATAREL:
      v += (uint64_t)(uintptr_t)bases->dbase;
      break;
    case PE_FUNCREL:
      v += (uint64_t)(uintptr_t)bases->func;
      break;
    case 0:
      break;
    default:
      r->bad = true; /* textrel, aligned: not on x86-64 */
      return 0;
  }
  if (enc & PE_INDIRECT) v = *(const uint64_t *)(uintptr_t)v;
  return v;
}

/** The length field of a CIE or FDE at p: its contents' range in r. */
static bool entry(const uint8_t *p, reader_t *r) {
  uint32_t len32;
  memcpy(&len32, p, 4);
  if (len32 == 0 || len32 == 0xffffffffu) return false; /* end, or 64-bit DWARF */
  r->p = p + 4;
  r->end = p + 4 + len32;
  r->bad = false;
  return true;
}

/* ---- the call-frame program ------------------------------------------------------------------ */

/* The rules tracked while the program runs. */
typedef struct {
  int64_t cfa_off;
  unsigned cfa_reg;
  int rbp_how; /* 0 unchanged, 1 saved at CFA + rbp_off, 2 undefined */
  int64_t rbp_off;
  int ra_how; /* 1 at CFA + ra_off, 2 undefined, 3 anything else */
  int64_t ra_off;
} state_t;

typedef struct {
  uint64_t code_align;
  int64_t data_align;
  uint8_t fde_enc;
  bool signal;
  bool z; /* augmentation "z...": FDEs carry an augmentation length */
  const uint8_t *insns, *insns_end;
  state_t initial;
} cie_t;

#define STACK_DEPTH 8

/** Apply "register reg is saved at CFA + off" (how 1), undefined (2),
 * unchanged (0) or something complex (3). */
static void set_reg(state_t *s, const state_t *initial, uint64_t reg, int how, int64_t off,
                    bool *complex) {
  if (reg == REG_RBP) {
    if (how == 3) *complex = true;
    s->rbp_how = how;
    s->rbp_off = off;
    if (how == -1) {
      s->rbp_how = initial->rbp_how;
      s->rbp_off = initial->rbp_off;
    }
  } else if (reg == REG_RA) {
    s->ra_how = how == -1 ? initial->ra_how : how;
    s->ra_off = how == -1 ? initial->ra_off : off;
  }
}

/** Run the program insns..end from location loc while loc <= pc (stop
 * there if pc != 0; a CIE's initial program runs to its end). False when it
 * uses something not read here. */
static bool run(const cie_t *cie, const uint8_t *insns, const uint8_t *end, uint64_t loc,
                uint64_t pc, state_t *s, const struct dwarf_eh_bases *bases) {
  reader_t r = {.p = insns, .end = end, .bad = false};
  state_t stack[STACK_DEPTH];
  unsigned depth = 0;
  bool complex = false;
  const state_t *init = &cie->initial;
  while (r.p < r.end && !r.bad && !complex) {
    uint8_t op = *r.p++;
    uint64_t reg, delta = 0;
    switch (op >> 6) {
      case 1: /* advance_loc */
        delta = (op & 0x3f) * cie->code_align;
        break;
      case 2: /* offset */
        set_reg(s, init, op & 0x3f, 1, (int64_t)uleb(&r) * cie->data_align, &complex);
        continue;
      case 3: /* restore */
        set_reg(s, init, op & 0x3f, -1, 0, &complex);
        continue;
      default:
        break;
    }
    if (op >> 6 == 0) switch (op) {
        case 0x00: /* nop */
          continue;
        case 0x01: /* set_loc */
          loc = encoded(&r, cie->fde_enc, false, bases);
          if (pc != 0 && loc > pc) return !r.bad;
          continue;
        case 0x02:
          delta = fixed(&r, 1) * cie->code_align;
          break;
        case 0x03:
          delta = fixed(&r, 2) * cie->code_align;
          break;
        case 0x04:
          delta = fixed(&r, 4) * cie->code_align;
          break;
        case 0x05: /* offset_extended */
          reg = uleb(&r);
          set_reg(s, init, reg, 1, (int64_t)uleb(&r) * cie->data_align, &complex);
          continue;
        case 0x06: /* restore_extended */
          set_reg(s, init, uleb(&r), -1, 0, &complex);
          continue;
        case 0x07: /* undefined */
          set_reg(s, init, uleb(&r), 2, 0, &complex);
          continue;
        case 0x08: /* same_value */
          set_reg(s, init, uleb(&r), 0, 0, &complex);
          continue;
        case 0x09: /* register */
          reg = uleb(&r);
          (void)uleb(&r);
          set_reg(s, init, reg, 3, 0, &complex);
          continue;
        case 0x0a: /* remember_state */
          if (depth == STACK_DEPTH) return false;
          stack[depth++] = *s;
          continue;
        case 0x0b: /* restore_state: the CFA rule too, as GCC's epilogues
                    * ("remember; def_cfa_offset 8; ret; restore") expect */
          if (depth == 0) return false;
          *s = stack[--depth];
          continue;
        case 0x0c: /* def_cfa */
          s->cfa_reg = (unsigned)uleb(&r);
          s->cfa_off = (int64_t)uleb(&r);
          continue;
        case 0x0d: /* def_cfa_register */
          s->cfa_reg = (unsigned)uleb(&r);
          continue;
        case 0x0e: /* def_cfa_offset */
          s->cfa_off = (int64_t)uleb(&r);
          continue;
        case 0x0f: /* def_cfa_expression */
          return false;
        case 0x10: /* expression */
        case 0x16: /* val_expression */
          reg = uleb(&r);
          delta = uleb(&r);
          if ((size_t)(r.end - r.p) < delta) return false;
          r.p += delta;
          set_reg(s, init, reg, 3, 0, &complex);
          continue;
        case 0x11: /* offset_extended_sf */
          reg = uleb(&r);
          set_reg(s, init, reg, 1, sleb(&r) * cie->data_align, &complex);
          continue;
        case 0x12: /* def_cfa_sf */
          s->cfa_reg = (unsigned)uleb(&r);
          s->cfa_off = sleb(&r) * cie->data_align;
          continue;
        case 0x13: /* def_cfa_offset_sf */
          s->cfa_off = sleb(&r) * cie->data_align;
          continue;
        case 0x14: /* val_offset */
          reg = uleb(&r);
          (void)uleb(&r);
          set_reg(s, init, reg, 3, 0, &complex);
          continue;
        case 0x15: /* val_offset_sf */
          reg = uleb(&r);
          (void)sleb(&r);
          set_reg(s, init, reg, 3, 0, &complex);
          continue;
        case 0x2e: /* GNU_args_size */
          (void)uleb(&r);
          continue;
        case 0x2f: /* GNU_negative_offset_extended */
          reg = uleb(&r);
          set_reg(s, init, reg, 1, -(int64_t)uleb(&r) * cie->data_align, &complex);
          continue;
        default:
          return false;
      }
    loc += delta;
    if (pc != 0 && loc > pc) break;
  }
  return !r.bad && !complex;
}

/** Read the CIE at p; false when it is not one this file reads. */
static bool read_cie(const uint8_t *p, cie_t *cie, const struct dwarf_eh_bases *bases) {
  reader_t r;
  if (!entry(p, &r) || fixed(&r, 4) != 0) return false;
  uint8_t version = (uint8_t)fixed(&r, 1);
  const char *aug = (const char *)r.p;
  size_t aug_len = strnlen(aug, (size_t)(r.end - r.p));
  r.p += aug_len + 1;
  if (aug[0] != 0 && aug[0] != 'z') return false; /* "eh" and other old forms */
  cie->code_align = uleb(&r);
  cie->data_align = sleb(&r);
  uint64_t ra = version == 1 ? fixed(&r, 1) : uleb(&r);
  cie->fde_enc = PE_ABSPTR;
  cie->signal = false;
  cie->z = aug[0] == 'z';
  if (cie->z) {
    uint64_t len = uleb(&r);
    const uint8_t *data_end = r.p + len;
    for (size_t i = 1; i < aug_len && !r.bad; i++) {
      if (aug[i] == 'R') {
        cie->fde_enc = (uint8_t)fixed(&r, 1);
      } else if (aug[i] == 'P') {
        uint8_t enc = (uint8_t)fixed(&r, 1);
        (void)encoded(&r, enc & 0x7f, true, bases); /* the personality: skipped */
      } else if (aug[i] == 'L') {
        (void)fixed(&r, 1);
      } else if (aug[i] == 'S') {
        cie->signal = true;
      } else {
        break; /* unknown: the length lets us skip the rest */
      }
    }
    r.p = data_end;
  }
  if (r.bad || ra != REG_RA || r.p > r.end) return false;
  cie->insns = r.p;
  cie->insns_end = r.end;
  state_t *s = &cie->initial;
  memset(s, 0, sizeof(*s));
  s->ra_how = 3; /* until the CIE says where it is */
  return run(cie, cie->insns, cie->insns_end, 0, 0, s, bases);
}

/** The rule at pc, computed from the tables; SC_CFI_*. */
static int compute(sc_unwind_find_fde_fn find_fde, uintptr_t pc, sc_cfi_rule_t *rule) {
  struct dwarf_eh_bases bases;
  const uint8_t *fde = find_fde((void *)pc, &bases);
  if (fde == NULL) return SC_CFI_END;
  reader_t r;
  if (!entry(fde, &r)) return SC_CFI_COMPLEX;
  const uint8_t *id_at = r.p;
  uint32_t cie_off = (uint32_t)fixed(&r, 4);
  cie_t cie;
  if (!read_cie(id_at - cie_off, &cie, &bases) || cie.signal) return SC_CFI_COMPLEX;
  uint64_t start = encoded(&r, cie.fde_enc, false, &bases);
  uint64_t range = encoded(&r, cie.fde_enc & 0x0f, true, &bases);
  if (r.bad || pc < start || pc - start >= range) return SC_CFI_COMPLEX;
  if (cie.z) { /* skip the FDE's augmentation data (an LSDA pointer) */
    uint64_t len = uleb(&r);
    r.p += len;
  }
  state_t s = cie.initial;
  if (r.bad || r.p > r.end || !run(&cie, r.p, r.end, start, pc, &s, &bases)) return SC_CFI_COMPLEX;
  if (s.ra_how == 2) return SC_CFI_END; /* the outermost frame */
  if (s.ra_how != 1 || s.ra_off != -8 || s.rbp_how == 3) return SC_CFI_COMPLEX;
  if ((s.cfa_reg != REG_RSP && s.cfa_reg != REG_RBP) || s.cfa_off <= 0 || s.cfa_off > INT32_MAX)
    return SC_CFI_COMPLEX;
  if (s.rbp_how == 1 && (s.rbp_off < INT16_MIN || s.rbp_off >= 0)) return SC_CFI_COMPLEX;
  rule->cfa_off = (int32_t)s.cfa_off;
  rule->cfa_rbp = s.cfa_reg == REG_RBP;
  rule->rbp_saved = s.rbp_how == 1;
  rule->rbp_off = (int16_t)(s.rbp_how == 1 ? s.rbp_off : 0);
  return SC_CFI_OK;
}

/* ---- the cache ---------------------------------------------------------------------------- */

#define CACHE_BITS 16
#define CACHE_SLOTS ((size_t)1 << CACHE_BITS)

typedef struct {
  _Atomic uintptr_t pc; /* 0: empty */
  uint64_t value;       /* status | rule, see pack() */
} slot_t;

static _Atomic(slot_t *) cache;
static _Atomic int cache_lock; /* spin lock of inserts and of the first mapping */
static _Atomic size_t cache_used;

static uint64_t pack(int status, const sc_cfi_rule_t *r) {
  return (uint64_t)status | (uint64_t)r->cfa_rbp << 2 | (uint64_t)r->rbp_saved << 3 |
         (uint64_t)(uint16_t)r->rbp_off << 16 | (uint64_t)(uint32_t)r->cfa_off << 32;
}

static int unpack(uint64_t v, sc_cfi_rule_t *r) {
  r->cfa_rbp = (v >> 2) & 1;
  r->rbp_saved = (v >> 3) & 1;
  r->rbp_off = (int16_t)(uint16_t)(v >> 16);
  r->cfa_off = (int32_t)(uint32_t)(v >> 32);
  return (int)(v & 3);
}

static inline size_t home(uintptr_t pc) {
  return (size_t)((pc * 0x9E3779B97F4A7C15ull) >> (64 - CACHE_BITS));
}

static void lock(void) {
  int expected = 0;
  while (!atomic_compare_exchange_weak_explicit(&cache_lock, &expected, 1, memory_order_acquire,
                                                memory_order_relaxed))
    expected = 0;
}
static void unlock(void) { atomic_store_explicit(&cache_lock, 0, memory_order_release); }

int sc__cfi_rule(uintptr_t pc, sc_cfi_rule_t *rule) {
  slot_t *t = atomic_load_explicit(&cache, memory_order_acquire);
  if (sc_likely(t != NULL)) {
    for (size_t i = home(pc), n = 0; n < 32; i = (i + 1) & (CACHE_SLOTS - 1), n++) {
      uintptr_t k = atomic_load_explicit(&t[i].pc, memory_order_acquire);
      if (k == pc) return unpack(t[i].value, rule);
      if (k == 0) break;
    }
  }
  memset(rule, 0, sizeof(*rule));
  /* Not bound yet (unwinder.c): unknown, and not cached. */
  sc_unwind_find_fde_fn find_fde = sc__unwind_find_fde();
  if (find_fde == NULL) return SC_CFI_COMPLEX;
  int status = compute(find_fde, pc, rule);
  lock();
  t = atomic_load_explicit(&cache, memory_order_relaxed);
  if (t == NULL) {
    t = sc__os_map_aligned(CACHE_SLOTS * sizeof(slot_t), 4096);
    atomic_store_explicit(&cache, t, memory_order_release);
  }
  if (t != NULL && atomic_load_explicit(&cache_used, memory_order_relaxed) < CACHE_SLOTS / 2) {
    for (size_t i = home(pc), n = 0; n < 32; i = (i + 1) & (CACHE_SLOTS - 1), n++) {
      uintptr_t k = atomic_load_explicit(&t[i].pc, memory_order_relaxed);
      if (k == pc) break;
      if (k != 0) continue;
      t[i].value = pack(status, rule);
      atomic_store_explicit(&t[i].pc, pc, memory_order_release);
      atomic_fetch_add_explicit(&cache_used, 1, memory_order_relaxed);
      break;
    }
  }
  unlock();
  return status;
}

void sc__cfi_fork_child(void) { atomic_store_explicit(&cache_lock, 0, memory_order_relaxed); }
