/* SPDX-License-Identifier: MIT */
/* tag_rules.c — tags without code (SIZECLASS_TAGS, docs/tags.md):
 *   SIZECLASS_TAGS='gl=libGL*,libnvidia*,*mesa*;audio=libopenal*;game=main'
 * tags each allocation by the object (shared library, or `main`: the
 * executable) of its caller, the first frame outside the C library,
 * libstdc++, libgcc and this library.
 *
 * The objects' executable ranges are a small sorted table built with
 * dl_iterate_phdr, rebuilt when a caller lies in none of them (a library
 * loaded since). A malloc called straight from the program tail-jumps to
 * the rules path, whose return address is the program's call: a per-
 * thread cache of the last range (two compares) finds its tag. Callers in
 * the C library, libstdc++ or this library (calloc, strdup, operator new)
 * are walked further with the allocation sites' unwinder (stack.c), which
 * does not allocate. A caller in no rule's object keeps the tag its thread
 * entered by code. Nothing here allocates. */
#include <link.h>
#include <pthread.h>
#include <string.h>

#include "features/stack.h"
#include "features/tags.h"
#include "util/format.h"
#include "util/settings.h"
#include "util/startup.h"

#define RULES 64
#define PATTERN_MAX 96
#define RANGES 512

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

typedef struct {
  unsigned n;
  range_t r[RANGES];
} table_t;

static _Atomic(table_t *) table;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

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
  for (unsigned k = 0; k < info->dlpi_phnum && t->n < RANGES; k++) {
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

/** Build the table again (a caller lay in none of its ranges). */
static void table_build(void) {
  pthread_mutex_lock(&table_lock);
  table_t *t = sc__os_map_aligned(sizeof(table_t), 4096);
  if (t != NULL) {
    dl_iterate_phdr(add_object, t);
    for (unsigned i = 1; i < t->n; i++) /* insertion sort by lo */
      for (unsigned j = i; j > 0 && t->r[j].lo < t->r[j - 1].lo; j--) {
        range_t x = t->r[j];
        t->r[j] = t->r[j - 1];
        t->r[j - 1] = x;
      }
    /* The old table stays mapped: another thread may be reading it. */
    atomic_store_explicit(&table, t, memory_order_release);
  }
  pthread_mutex_unlock(&table_lock);
}

static const range_t *table_find(uintptr_t pc) {
  table_t *t = atomic_load_explicit(&table, memory_order_acquire);
  if (t == NULL) return NULL;
  unsigned lo = 0, hi = t->n;
  while (lo < hi) {
    unsigned mid = (lo + hi) / 2;
    if (pc < t->r[mid].lo)
      hi = mid;
    else if (pc >= t->r[mid].hi)
      lo = mid + 1;
    else
      return &t->r[mid];
  }
  return NULL;
}

static const range_t *find(uintptr_t pc) {
  const range_t *r = table_find(pc);
  if (r == NULL) {
    table_build();
    r = table_find(pc);
  }
  return r;
}

unsigned sc__tag_rules_resolve(uintptr_t ra) {
  if (resolving) return sc__tag_tls.code; /* the unwinder's own allocation */
  resolving = true;
  unsigned tag = 0;
  const range_t *r = find(ra);
  if (r != NULL && !r->skip) {
    sc_tag_tls_t *tls = &sc__tag_tls;
    tag = r->tag;
    tls->rule_lo = r->lo;
    tls->rule_len = r->hi - r->lo;
    tls->rule_code = tag == 0;
    tls->rule_tag = (uint8_t)(tag != 0 ? tag : tls->code);
  } else {
    uintptr_t pcs[16];
    unsigned n = sc__unwind(pcs, 16);
    for (unsigned i = 0; i < n; i++) {
      r = find(pcs[i]);
      if (r != NULL && r->skip) continue;
      tag = r != NULL ? r->tag : 0;
      break;
    }
  }
  resolving = false;
  return tag != 0 ? tag : sc__tag_tls.code;
}

unsigned sc__tag_rules_caller(void) {
  uintptr_t pcs[16];
  if (resolving) return 0;
  resolving = true;
  unsigned n = sc__unwind(pcs, 16), tag = 0;
  for (unsigned i = 0; i < n; i++) {
    const range_t *r = find(pcs[i]);
    if (r != NULL && r->skip) continue;
    tag = r != NULL ? r->tag : 0;
    break;
  }
  resolving = false;
  return tag;
}

/* ---- the setting ------------------------------------------------------------------ */

static void warn_rule(const char *what, const char *s, size_t len) {
  char line[SC_DIAG_CAP];
  sc__format(line, sizeof(line),
             "SIZECLASS_TAGS: %s \"%.*s\" ignored (expected NAME=PATTERN[,PATTERN...]; rules "
             "split by ';', a pattern globs a library's file name, or main)",
             what, (int)(len < 64 ? len : 64), s);
  sc__text_printable(line);
  sc__warn(line);
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
      if (nl > SC_TAG_NAME_MAX) nl = SC_TAG_NAME_MAX;
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
        if (pl == 0 || pl >= PATTERN_MAX || rules_n == RULES) {
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
  if (!sc__tag_rules_on()) return;
  if (phase == 0)
    pthread_mutex_lock(&table_lock);
  else if (phase == 1)
    pthread_mutex_unlock(&table_lock);
  else
    pthread_mutex_init(&table_lock, NULL);
}
