/* SPDX-License-Identifier: MIT */
/* tag_rules.c — tags without code (SIZECLASS_TAGS, docs/tags.md):
 *   SIZECLASS_TAGS='gl=libGL*,libnvidia*,*mesa*;audio=libopenal*;game=main'
 * tags each allocation by the object (shared library, or `main`: the
 * executable) of its caller, the first frame outside the C library,
 * libstdc++, libgcc and this library.
 *
 * The objects' executable ranges are a sorted table built with
 * dl_iterate_phdr, rebuilt when a caller lies in none of them and the
 * loader says objects were loaded or unloaded since (a caller in code made
 * at run time lies in no object: its callers are walked). A malloc called straight from the program
 * tail-jumps to the rules path, whose return address is the program's call: a per- thread cache of
 * the last range (two compares) finds its tag. Callers in the C library, libstdc++ or this library
 * (calloc, strdup, operator new) are walked further with the allocation sites' unwinder (stack.c),
 * which does not allocate. A caller in no rule's object keeps the tag its thread entered by code.
 * Nothing here allocates. */
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "features/stack.h"
#include "features/tags.h"
#include "util/format.h"
#include "util/os.h"
#include "util/settings.h"
#include "util/startup.h"

#define RULES 64
#define PATTERN_MAX 96
/** Old tables a build could not unmap yet (readers were in them). */
#define RETIRED_MAX 8

typedef struct {
  uint8_t tag;
  char pattern[PATTERN_MAX];
} rule_t;

static rule_t rules[RULES];
static unsigned rules_n;

/* One executable range of an object. kind: 0 the program's (tag: its
 * rule's, 0 when none), 1 to walk past (the C library, libstdc++, us). */
typedef struct {
  uintptr_t lo, hi;
  uint8_t tag, skip;
} range_t;

/* The ranges, sorted, of the objects loaded when it was built: the
 * loader's counts of objects added and removed then say when that set
 * changed (a caller in no range is then looked for again, else it lies in
 * no object: code made at run time). */
typedef struct {
  size_t bytes; /* its mapping's size */
  unsigned long long adds, subs;
  unsigned n, cap;
  range_t r[];
} table_t;

static _Atomic(table_t *) table;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
/* Lookups under way: a build unmaps the table it replaced only when
 * none is (else later, from the retired ones). */
static _Atomic unsigned readers;
static table_t *retired[RETIRED_MAX];
static unsigned retired_n;

static sc_tls bool resolving;

/* ---- patterns ------------------------------------------------------------------- */

/** Glob match: '*' any run, '?' any one byte, else the byte itself. */
static bool glob(const char *p, const char *s) {
  const char *star = NULL, *resume = NULL;
  while (*s) {
    if (*p == '*') {
      star = p++;
      resume = s;
    } else if (*p == '?' || *p == *s) {
      p++, s++;
    } else if (star != NULL) {
      p = star + 1;
      s = ++resume;
    } else {
      return false;
    }
  }
  while (*p == '*') p++;
  return *p == 0;
}

static const char *base_name(const char *path) {
  const char *b = strrchr(path, '/');
  return b ? b + 1 : path;
}

static bool starts_with(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* ---- the table ------------------------------------------------------------------ */

/** The loader's counts of objects added and removed (dl_iterate_phdr's
 * callback: the first object has them; 1 stops the walk). */
static int loader_counts(struct dl_phdr_info *info, size_t size, void *ctx) {
  unsigned long long *out = ctx;
  if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
    out[0] = info->dlpi_adds;
    out[1] = info->dlpi_subs;
  }
  return 1;
}

/** Count the executable ranges of an object into *(unsigned *)ctx. */
static int count_ranges(struct dl_phdr_info *info, size_t size, void *ctx) {
  (void)size;
  for (unsigned k = 0; k < info->dlpi_phnum; k++)
    if (info->dlpi_phdr[k].p_type == PT_LOAD && (info->dlpi_phdr[k].p_flags & PF_X) != 0)
      ++*(unsigned *)ctx;
  return 0;
}

static int add_object(struct dl_phdr_info *info, size_t size, void *ctx) {
  (void)size;
  table_t *t = ctx;
  bool main_obj = info->dlpi_name == NULL || info->dlpi_name[0] == 0;
  const char *name = main_obj ? "main" : base_name(info->dlpi_name);
  bool skip = starts_with(name, "libc.so") || starts_with(name, "libc-") ||
              starts_with(name, "libstdc++") || starts_with(name, "libgcc_s") ||
              starts_with(name, "ld-linux") || starts_with(name, "libpthread") ||
              starts_with(name, "libdl") || starts_with(name, "libsizeclass") ||
              starts_with(name, "linux-vdso");
  uint8_t tag = 0;
  for (unsigned i = 0; i < rules_n && !skip; i++)
    if (glob(rules[i].pattern, name)) {
      tag = rules[i].tag;
      break;
    }
  for (unsigned k = 0; k < info->dlpi_phnum && t->n < t->cap; k++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[k];
    if (ph->p_type != PT_LOAD || (ph->p_flags & PF_X) == 0) continue;
    range_t *r = &t->r[t->n++];
    r->lo = info->dlpi_addr + ph->p_vaddr;
    r->hi = r->lo + ph->p_memsz;
    r->tag = tag;
    r->skip = skip || sc__unwind_is_ours(r->lo + (ph->p_memsz / 2));
  }
  return 0;
}

/** Unmap the retired tables if no lookup is under way (table_lock held;
 * a lookup that starts now finds the current table). */
static void retired_release(void) {
  if (atomic_load_explicit(&readers, memory_order_seq_cst) != 0) return;
  for (unsigned i = 0; i < retired_n; i++) sc__os_unmap(retired[i], retired[i]->bytes);
  retired_n = 0;
}

/** Build the table again if the loaded objects changed since it was
 * built (a caller lay in none of its ranges). */
static void table_build(void) {
  pthread_mutex_lock(&table_lock);
  unsigned long long counts[2] = {0, 0};
  dl_iterate_phdr(loader_counts, counts);
  table_t *old = atomic_load_explicit(&table, memory_order_relaxed);
  if (old != NULL && old->adds == counts[0] && old->subs == counts[1]) {
    pthread_mutex_unlock(&table_lock);
    return;
  }
  unsigned n = 0;
  dl_iterate_phdr(count_ranges, &n);
  n += 16; /* objects loaded between the count and the fill */
  size_t bytes = (sizeof(table_t) + n * sizeof(range_t) + 4095) & ~(size_t)4095;
  table_t *t = sc__os_map_aligned(bytes, 4096);
  if (t != NULL) {
    t->bytes = bytes;
    t->cap = n;
    t->adds = counts[0];
    t->subs = counts[1];
    dl_iterate_phdr(add_object, t);
    for (unsigned i = 1; i < t->n; i++) /* insertion sort by lo */
      for (unsigned j = i; j > 0 && t->r[j].lo < t->r[j - 1].lo; j--) {
        range_t x = t->r[j];
        t->r[j] = t->r[j - 1];
        t->r[j - 1] = x;
      }
    atomic_store_explicit(&table, t, memory_order_seq_cst);
    /* Another thread may be reading the old table: unmapped once none
     * is (one more is leaked when RETIRED_MAX are waiting). */
    if (old != NULL && retired_n < RETIRED_MAX) retired[retired_n++] = old;
    retired_release();
  }
  pthread_mutex_unlock(&table_lock);
}

/** The range holding pc in the current table into *out; false if none. */
static bool table_find(uintptr_t pc, range_t *out) {
  atomic_fetch_add_explicit(&readers, 1, memory_order_seq_cst);
  const table_t *t = atomic_load_explicit(&table, memory_order_seq_cst);
  bool found = false;
  unsigned lo = 0, hi = t != NULL ? t->n : 0;
  while (lo < hi) {
    unsigned mid = (lo + hi) / 2;
    if (pc < t->r[mid].lo) {
      hi = mid;
    } else if (pc >= t->r[mid].hi) {
      lo = mid + 1;
    } else {
      *out = t->r[mid];
      found = true;
      break;
    }
  }
  atomic_fetch_sub_explicit(&readers, 1, memory_order_release);
  return found;
}

/** The range of the object holding pc (the table built again if objects
 * were loaded or unloaded since); false when pc lies in no object. */
static bool find(uintptr_t pc, range_t *out) {
  if (table_find(pc, out)) return true;
  table_build();
  return table_find(pc, out);
}

/** The rule's tag of the first caller on the stack outside the objects
 * walked past (0: none, or a caller in no object). */
static unsigned caller_tag(void) {
  uintptr_t pcs[16];
  unsigned n = sc__unwind(pcs, 16);
  for (unsigned i = 0; i < n; i++) {
    range_t r;
    bool found = find(pcs[i], &r);
    if (found && r.skip) continue;
    return found ? r.tag : 0;
  }
  return 0;
}

unsigned sc__tag_rules_resolve(uintptr_t ra) {
  if (resolving) return sc__tag_tls.code; /* the unwinder's own allocation */
  resolving = true;
  unsigned tag = 0;
  range_t r;
  if (find(ra, &r) && !r.skip) {
    sc_tag_tls_t *tls = &sc__tag_tls;
    tag = r.tag;
    tls->rule_lo = r.lo;
    tls->rule_len = r.hi - r.lo;
    tls->rule_code = tag == 0;
    tls->rule_tag = (uint8_t)(tag != 0 ? tag : tls->code);
  } else {
    tag = caller_tag();
  }
  resolving = false;
  return tag != 0 ? tag : sc__tag_tls.code;
}

unsigned sc__tag_rules_caller(void) {
  if (resolving) return 0;
  resolving = true;
  unsigned tag = caller_tag();
  resolving = false;
  return tag;
}

/* ---- the setting ------------------------------------------------------------------ */

/** One warning about rule s (len bytes): what, the rule, then the rest. */
static void warn_rule_with(const char *what, const char *s, size_t len, const char *rest) {
  char line[SC_DIAG_CAP];
  sc__format(line, sizeof(line), "SIZECLASS_TAGS: %s \"%.*s\" %s", what, (int)(len < 64 ? len : 64),
             s, rest);
  sc__text_printable(line);
  sc__warn(line);
}

static void warn_rule(const char *what, const char *s, size_t len) {
  warn_rule_with(what, s, len,
                 "ignored (expected NAME=PATTERN[,PATTERN...]; rules split by ';', a pattern "
                 "globs a library's file name, or main)");
}

sc_startup bool sc__tag_rules_decide(void) {
  if (sc__setting_state(SC_SET_TAGS) != SC_SETTING_GIVEN) return false;
  const char *s = sc__setting_text(SC_SET_TAGS);
  while (*s) {
    const char *end = strchr(s, ';');
    size_t len = end ? (size_t)(end - s) : strlen(s);
    while (len > 0 && *s == ' ') s++, len--;
    const char *eq = memchr(s, '=', len);
    if (len == 0) {
      /* an empty rule */
    } else if (eq == NULL || eq == s || eq + 1 == s + len) {
      warn_rule("bad rule", s, len);
    } else {
      char name[SC_TAG_NAME_MAX + 1];
      size_t nl = (size_t)(eq - s);
      while (nl > 0 && s[nl - 1] == ' ') nl--;
      if (nl > SC_TAG_NAME_MAX) {
        warn_rule_with("the tag name of", s, len, "is cut to 63 bytes");
        nl = SC_TAG_NAME_MAX;
      }
      memcpy(name, s, nl);
      name[nl] = 0;
      unsigned tag = sc__tag_register(name);
      const char *p = eq + 1, *stop = s + len;
      while (p < stop && tag != 0) {
        const char *comma = memchr(p, ',', (size_t)(stop - p));
        const char *pe = comma ? comma : stop;
        while (p < pe && *p == ' ') p++;
        size_t pl = (size_t)(pe - p);
        while (pl > 0 && p[pl - 1] == ' ') pl--;
        if (rules_n == RULES) {
          warn_rule_with("a pattern of", s, len, "is left out: 64 patterns at most");
        } else if (pl == 0 || pl >= PATTERN_MAX) {
          warn_rule("bad pattern in", s, len);
        } else {
          rules[rules_n].tag = (uint8_t)tag;
          memcpy(rules[rules_n].pattern, p, pl);
          rules[rules_n].pattern[pl] = 0;
          rules_n++;
        }
        p = pe + 1;
      }
    }
    s += len;
    if (*s == ';') s++;
  }
  return rules_n != 0;
}

bool sc__tag_rules_on(void) { return rules_n != 0; }

void sc__tag_rules_fork(int phase) {
  if (sc__tag_rules_on()) sc__lock_fork(&table_lock, phase);
}
