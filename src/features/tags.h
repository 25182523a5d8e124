/* SPDX-License-Identifier: MIT */
/* tags.h — memory by subsystem (tags) and by thread (docs/tags.md).
 *
 * A tag is a number 1..255 (0: untagged) that a thread enters
 * (sc_tag_enter); every block it then allocates carries it in the spare
 * byte of its wide map entry (byte 1: state, tag, request in one word), so
 * that whichever thread frees it finds it. Tags need the exact tier (wide
 * entries): they are on when SIZECLASS_BUDGET is set, or when exact
 * statistics are on and the program registers a tag (sc_tag). Then the
 * exact tier's paths are the tag-aware ones (seam.c).
 *
 * Counters: each arena holds one row of exact counters per tag (the
 * exact tier's own layout, sc_exact_t, plus a few), 2^SC_TAG_ROW_SHIFT
 * bytes each, mapped once and touched only for the tags the arena used.
 * A malloc counts in the row of the thread's tag (a TLS pointer, set at
 * sc_tag_enter); a free by the owner in the row of the block's tag (a
 * shift and an add from the entry's tag byte); a free by another thread
 * in that thread's row of the block's tag (like req_remote), and the
 * drain in the owner's. The class figures are sums over every row.
 *
 * Per row and class the exact tier's `peak` field holds the row's *mark*:
 * headroom = mark - live, and the out-of-line trigger runs when live
 * climbs above the mark. mark = min(peak, live + slack) with slack one
 * 64 KiB page of blocks of the class, reset for every class of the row at
 * each trigger. A free gives the headroom back up to SC_TAG_FREE_CAP
 * (at most `slack`), past which it lowers the mark with live instead: so
 * mark = live + headroom never
 * rises between triggers, the trigger runs at every new peak of a class
 * (peaks are exact), and from any moment on a row's live blocks of a class
 * grow by less than one page of them before its next trigger: whatever a
 * budget check saw of a row (any thread's, at any time), the row is never
 * more than a page per class past it unchecked. The trigger updates the
 * row's block-byte peak and checks the budgets (budget.c). */
#ifndef SC_TAGS_H
#define SC_TAGS_H

#include "core/internal.h"
#include "core/hooks.h"
#include "core/snapshot.h" /* what the report reads of tags */
#include "core/size_class.h"
#include "features/exact.h"

#pragma GCC visibility push(hidden)

/** Tags: 0 (untagged) and 1..255. */
#define SC_TAGS 256
/** log2 of a row's size: rows are found with a shift and an add. */
#define SC_TAG_ROW_SHIFT 13
/** Longest tag name kept (longer ones are cut, with a warning). */
#define SC_TAG_NAME_MAX 63

/* One arena's counters of one tag. */
typedef struct sc_tag_row_s {
  sc_exact_t x;                          /* as the exact tier's; x.peak holds the mark */
  uint64_t peak[SC_CLASSES];             /* highest live blocks (owner view) */
  uint64_t remote_blocks[SC_CLASSES];    /* other arenas' blocks of this tag freed here */
  uint64_t drained_blocks[SC_CLASSES];   /* our blocks of this tag others freed, drained */
  uint64_t peak_block_bytes;             /* highest live block bytes (owner view, at triggers) */
  uint64_t sys_made, sys_allocs;         /* system-route bytes / blocks made here */
  _Atomic uint64_t sys_freed, sys_frees; /* ... of those, freed (by any thread) */
  uint64_t sys_peak;                     /* highest sys_made - sys_freed (at a make) */
  uint8_t pad[(1u << SC_TAG_ROW_SHIFT) - sizeof(sc_exact_t) - 8 * (3 * SC_CLASSES + 6)];
} sc_tag_row_t;
_Static_assert(sizeof(sc_tag_row_t) == (1u << SC_TAG_ROW_SHIFT), "a row is 2^SHIFT bytes");

/* One arena's thread: after its rows (&tag_rows[SC_TAGS]). */
typedef struct sc_tag_thread_s {
  _Atomic uint64_t remote_in[SC_CLASSES]; /* our blocks freed by other threads */
  uint64_t drained[SC_CLASSES];           /* ... of those, drained back */
  uint64_t used[SC_TAGS / 64];            /* rows this arena touched */
  uint64_t peak_block_bytes;              /* highest live block bytes (at triggers) */
  uint64_t sys_peak;                      /* highest system bytes live (at a make) */
  /* Figures of earlier threads of this arena (adopted when nothing of
   * theirs was live): subtracted from the arena's. */
  uint64_t base_allocs, base_sys_allocs;
  int32_t tid;
  uint8_t exited;
  char name[16];
} sc_tag_thread_t;

/** True once tags are on (they stay on). */
extern bool sc__tags_on;
/** The calling thread's tag and its row in its arena (a dummy row whose
 * headroom is always negative until the thread has an arena with rows:
 * the trigger then finds the real one). */
typedef struct sc_tag_tls_s {
  sc_tag_row_t *row;
  uint8_t cur;    /* the tag allocations carry now */
  uint8_t code;   /* the tag entered by code (sc_tag_enter) */
  uint8_t pinned; /* realloc: cur is the block's, rules leave it */
  /* SIZECLASS_TAGS: the last caller's range and its rule's tag. */
  uintptr_t rule_lo, rule_len; /* rule_len 0: nothing cached */
  uint8_t rule_tag;            /* the tag its allocations take (the rule's, or code's) */
  uint8_t rule_code;           /* rule_tag is the code's: sc_tag_enter drops the cache */
} sc_tag_tls_t;
extern sc_tls sc_tag_tls_t sc__tag_tls; /* one TLS offset for both */
#define sc__tag_cur (sc__tag_tls.cur)
#define sc__tag_row (sc__tag_tls.row)

/** Tags on from now on (the first sc_tag with exact statistics, or the
 * decision); false when they cannot be (no exact tier, or the checking
 * mode). Installs the tag-aware paths through `install`. */
bool sc__tags_start(void);
/** A thread binds arena a (its rows, its record). */
void sc__tags_bind(sc_arena_t *a);
/** The thread of arena a exits (its name is read now). */
void sc__tags_thread_exit(sc_arena_t *a);
/** May an abandoned arena be adopted? (tags on: only when nothing of it is live) */
bool sc__tags_adoptable(sc_arena_t *a);
/** The trigger: the row of the thread's tag climbed over its mark for
 * the class of page (block b just counted for n bytes); returns b. */
__attribute__((returns_nonnull)) void *sc__tags_trigger(size_t n, size_t g, const sc_page_t *page,
                                                        void *b);
/** A row of arena a climbed over its mark in class c (not the fast path's). */
void sc__tags_row_check(sc_arena_t *a, sc_tag_row_t *row, unsigned c, size_t n);
/** Sum arena a's rows into the class sums (with a->exact). */
void sc__tags_sum(const sc_arena_t *a, sc_exact_sums_t sums[SC_CLASSES]);
/** The system route: block p of n bytes made / freed (features on). */
void sc__tags_sys_alloc(void *p);
void sc__tags_sys_free(uint32_t info, uint64_t bytes);
/** realloc moves block p: the calling thread enters p's tag until
 * sc__tags_realloc_leave(the returned value). */
unsigned sc__tags_realloc_enter(const void *p);
void sc__tags_realloc_leave(unsigned saved);
/** Register tag `name` (len <= SC_TAG_NAME_MAX); 0 when 255 are taken. */
unsigned sc__tag_register(const char *name);
/** The thread's tag is t from now on (its row too). */
void sc__tags_set_cur(unsigned t);
/* SIZECLASS_TAGS (tag_rules.c). */
bool sc__tag_rules_decide(void);
bool sc__tag_rules_on(void);
/** The tag of an allocation whose caller returns to ra outside the
 * thread's cached range: its object's rule's, else the tag entered by code;
 * caches the range (unless the caller is walked past). */
unsigned sc__tag_rules_resolve(uintptr_t ra);
/** fork: 0 prepare, 1 parent, 2 child (the rules' table lock). */
void sc__tag_rules_fork(int phase);
/** fork: 0 prepare, 1 parent, 2 child (the registry's and the exited
 * threads' locks). */
void sc__tags_fork(int phase);
/** The rule's tag of the calling allocation, found by unwinding (0: none). */
unsigned sc__tag_rules_caller(void);
/** The hooks of the paths other than the tag-aware fast paths (seam.c). */
void sc__tags_alloc_any(sc_arena_t *a, const sc_page_t *page, void *b, unsigned c, size_t n);
void sc__tags_free_local(sc_arena_t *a, const sc_page_t *page, uintptr_t p);
void sc__tags_remote_free(sc_arena_t *me, const sc_page_t *page, uintptr_t p);
void sc__tags_drained(sc_arena_t *a, const sc_page_t *page, uintptr_t p);
void sc__tags_resize(sc_arena_t *a, uintptr_t p, size_t n);
/** The name of tag t ("untagged" for 0), NULL when none. */
const char *sc__tag_name(unsigned t);
/** Tags registered (the highest id + 1). */
unsigned sc__tag_count(void);
/** Live block bytes of arena a's rows (owner view) and of all arenas'
 * rows of tag t (exact: remote frees counted), for the budgets. */
uint64_t sc__tags_thread_live(const sc_arena_t *a);
/** Owner-view live blocks of class c that arena a made before tags were
 * on (the exact tier's counters, frozen since; their frees count in row 0). */
int64_t sc__tags_before_live(const sc_arena_t *a, unsigned c);
uint64_t sc__tags_tag_live(unsigned t);
#pragma GCC visibility pop

/** Rows (and thread record) that every arena whose own the OS refused
 * shares: written, never counted (sc__tag_rows_counted). */
extern sc_tag_row_t *const sc__tag_sink;
/** Arena a's rows if they are counted: NULL before they are mapped, or
 * when a writes into the sink. */
static inline const sc_tag_row_t *sc__tag_rows_counted(const sc_arena_t *a) {
  sc_tag_row_t *rows = __atomic_load_n(&a->tag_rows, __ATOMIC_ACQUIRE);
  return rows == sc__tag_sink ? NULL : rows;
}

/** Row of tag t of arena a. */
static inline sc_tag_row_t *sc__tag_row_of(const sc_arena_t *a, unsigned t) {
  return (sc_tag_row_t *)((uintptr_t)a->tag_rows + ((uintptr_t)t << SC_TAG_ROW_SHIFT));
}
static inline sc_tag_thread_t *sc__tag_thread_of(const sc_arena_t *a) {
  return (sc_tag_thread_t *)&a->tag_rows[SC_TAGS];
}

/** Account block b (map entry at e, class c, granule g) handed out by its
 * owner for n bytes in the thread's row: the tag and the request go into
 * the entry beside its state. Returns b (the trigger's tail call). */
static sc_always_inline void *sc__tags_alloc(const sc_page_t *page, void *b, uint8_t *e, size_t g,
                                             unsigned c, size_t n) {
  sc_tag_tls_t *tls = &sc__tag_tls;
  sc_tag_row_t *r = tls->row;
  e[1] = tls->cur;
  *sc__req_slot_at(e) = (uint16_t)n;
  ++r->x.hist[g];
  r->x.req_total[c] += n;
  if (sc_unlikely(--r->x.headroom[c] < 0)) return sc__tags_trigger(n, g, page, b);
  return b;
}

/** The most headroom a free gives back: the blocks of the largest class
 * in one 64 KiB page (so a page or less of any class), one constant for
 * all: the free's cap is a compare with an immediate. */
#define SC_TAG_FREE_CAP ((int64_t)(SC_PAGE_SIZE >> (SC_MIN_SHIFT + SC_CLASSES - 1)))

/** A block of class c left row r: its headroom back, up to
 * SC_TAG_FREE_CAP; past that the mark comes down with live (tags.h's top). */
static sc_always_inline void sc__tags_headroom_back(sc_tag_row_t *r, size_t c) {
  int64_t *h = &r->x.headroom[c];
#if defined(__x86_64__)
  /* A compare and an add on the word in memory, through one addressing
   * mode (GCC would load it, compare, add and store it, or work the
   * address out first: two instructions more per free). */
  (void)h;
  __asm__ goto(
      "cmpq %[cap], %c[at](%[row],%[c],8)\n\t"
      "jge %l[full]\n\t"
      "addq $1, %c[at](%[row],%[c],8)"
      : "+m"(*(int64_t(*)[SC_CLASSES])r->x.headroom) /* what it reads and writes */
      : [cap] "i"(SC_TAG_FREE_CAP), [at] "i"(offsetof(sc_tag_row_t, x.headroom)), [row] "r"(r),
        [c] "r"(c)
      : "cc"
      : full);
  return;
full:
#else
  if (sc_likely(*h < SC_TAG_FREE_CAP)) {
    ++*h;
    return;
  }
#endif
  r->x.peak[c]--;
}

/** Account a free by its owner a of the block whose entry is e (class c). */
static sc_always_inline void sc__tags_free(sc_arena_t *a, const uint8_t *e, unsigned c) {
  sc_tag_row_t *r = sc__tag_row_of(a, e[1]);
  size_t k = c; /* one register for both indexes */
  sc__tags_headroom_back(r, k);
  r->x.req_freed[k] += *(const uint16_t *)(e + 2);
}

/** SIZECLASS_TAGS: before a malloc whose caller returns to ra, the
 * thread's tag becomes its object's rule's (or the tag entered by code). */
static sc_always_inline void sc__tag_rules_apply(uintptr_t ra) {
  sc_tag_tls_t *tls = &sc__tag_tls;
  if (tls->pinned) return;
  unsigned t = ra - tls->rule_lo < tls->rule_len ? tls->rule_tag : sc__tag_rules_resolve(ra);
  if (sc_unlikely(t != tls->cur)) sc__tags_set_cur(t);
}

#endif /* SC_TAGS_H */
