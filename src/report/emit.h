/* SPDX-License-Identifier: MIT */
/* emit.h — one emitter renders the statistics report as an aligned text
 * table or as JSON. The report describes its sections, key/value pairs and
 * tables once; the emitter decides how each looks, so the two forms show
 * the same numbers by construction. Output goes through a fixed buffer to
 * write(2): no malloc, no stdio, usable from a signal handler. */
#ifndef SC_EMIT_H
#define SC_EMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The type of a value decides its text rendering; JSON prints the plain
 * integer (or string, list, null). */
typedef enum {
  SC_EV_NULL = 0, /* undefined (a ratio of nothing): "-" / null */
  SC_EV_COUNT,    /* 1234 */
  SC_EV_BYTES,    /* 512 B, 62.5 KiB, 3.1 MiB, 1.2 GiB (see fmt_bytes) */
  SC_EV_SIZE,     /* exact bytes: 64 B */
  SC_EV_PERMILLE, /* 62.5% ; JSON: the integer permille */
  SC_EV_TENTHS,   /* fixed point, 1 decimal: 40.3 (also in JSON) */
  SC_EV_NS,       /* duration: 1.234 s ; JSON: nanoseconds */
  SC_EV_STR,      /* a string (JSON: quoted) */
  SC_EV_LABEL,    /* a string shown in text only; JSON omits the key */
  SC_EV_LIST,     /* a list of integers: JSON only ("..." in text) */
  SC_EV_BOOL,     /* yes / no ; JSON: true / false */
  SC_EV_STRS,     /* a list of strings (NULL: null): JSON only ("..." in text) */
} sc_ev_type_t;

typedef struct sc_ev_s {
  sc_ev_type_t type;
  unsigned n; /* entries of list */
  uint64_t u;
  const char *s;
  const uint64_t *list;
  const char *const *strs; /* SC_EV_STRS */
} sc_ev_t;

static inline sc_ev_t sc__ev(sc_ev_type_t type, uint64_t u) {
  return (sc_ev_t){.type = type, .u = u};
}
static inline sc_ev_t sc__ev_str(const char *s) { return (sc_ev_t){.type = SC_EV_STR, .s = s}; }
static inline sc_ev_t sc__ev_label(const char *s) { return (sc_ev_t){.type = SC_EV_LABEL, .s = s}; }
static inline sc_ev_t sc__ev_list(const uint64_t *list, unsigned n) {
  return (sc_ev_t){.type = SC_EV_LIST, .list = list, .n = n};
}
static inline sc_ev_t sc__ev_bool(bool b) { return (sc_ev_t){.type = SC_EV_BOOL, .u = b}; }
static inline sc_ev_t sc__ev_strs(const char *const *strs, unsigned n) {
  return (sc_ev_t){.type = SC_EV_STRS, .strs = strs, .n = n};
}
/** num/den in permille (floor); null when den is 0. */
static inline sc_ev_t sc__ev_ratio(uint64_t num, uint64_t den) {
  if (den == 0) return (sc_ev_t){.type = SC_EV_NULL};
  return sc__ev(SC_EV_PERMILLE, (uint64_t)((unsigned __int128)num * 1000 / den));
}
/** 1 - num/den in permille (1000 - the floored ratio); null when den is 0. */
static inline sc_ev_t sc__ev_ratio_rest(uint64_t num, uint64_t den) {
  sc_ev_t v = sc__ev_ratio(num, den);
  if (v.type == SC_EV_PERMILLE) v.u = v.u >= 1000 ? 0 : 1000 - v.u;
  return v;
}

/* A table column. Column 0 labels the row and appears in every text table
 * of its table; the others appear in the text tables whose bit is set in
 * `groups` (bit g: titles[g]). */
typedef struct sc_em_col_s {
  const char *key;  /* JSON key; NULL: text only */
  const char *head; /* text header (one word); NULL: JSON only */
  uint8_t width;    /* text width, right-aligned */
  uint8_t groups;   /* text tables showing the column (bit mask) */
} sc_em_col_t;

#define SC_EM_MAX_COLS 32
#define SC_EM_MAX_GROUPS 4

typedef struct sc_em_table_s {
  const char *key;       /* JSON array key; NULL: text only */
  const char *total_key; /* JSON key of the last row as an object; NULL: no total row */
  const char *titles[SC_EM_MAX_GROUPS]; /* one per text table; NULL: JSON only */
  unsigned ngroups;
  const sc_em_col_t *cols;
  unsigned ncols;
} sc_em_table_t;

/* Fills vals[0..ncols) for row r. */
typedef void (*sc_em_row_fn)(const void *ctx, unsigned r, sc_ev_t *vals);

enum { SC_EM_TEXT = 0, SC_EM_JSON = 1 };

typedef struct sc_emitter_s {
  int fd;          /* where flushes go; -1 with `mem` */
  char *mem;       /* a memory destination (sc__em_begin_mem); NULL: fd */
  size_t mem_cap;  /* its size */
  size_t mem_len;  /* bytes written there */
  bool mem_full;   /* more did not fit: the text in mem is cut */
  int mode;        /* SC_EM_TEXT or SC_EM_JSON */
  int depth;       /* JSON nesting */
  bool first[8];   /* per JSON depth: nothing written yet */
  unsigned kv_col; /* text: key/value pairs on the current line */
  size_t len;
  char buf[2048];
} sc_emitter_t;

/** Start a report on fd (SC_EM_TEXT or SC_EM_JSON). */
void sc__em_begin(sc_emitter_t *e, int fd, int mode);
/** Start a report written into mem[0..cap) instead of a file (the live
 * snapshot): nothing is written past cap; e->mem_len says how much was
 * written and e->mem_full that the report did not fit. */
void sc__em_begin_mem(sc_emitter_t *e, char *mem, size_t cap, int mode);
/** Finish the report and flush everything to fd (or the memory). */
void sc__em_end(sc_emitter_t *e);
/** Open a named section: JSON "key": { ; text: a blank line and the title
 * (nothing when title is NULL). */
void sc__em_section(sc_emitter_t *e, const char *key, const char *title);
void sc__em_section_end(sc_emitter_t *e);
/** A key/value pair: JSON "key": v ; text "label  v" (three pairs a line).
 * A NULL key is text only, a NULL label JSON only. */
void sc__em_kv(sc_emitter_t *e, const char *key, const char *label, sc_ev_t v);
/** A table of nrows rows (the last one is the total row when the table has
 * a total_key): one JSON array of objects, or one aligned text table per
 * group. */
void sc__em_table(sc_emitter_t *e, const sc_em_table_t *t, unsigned nrows, sc_em_row_fn fn,
                  const void *ctx);
/** JSON only (text: nothing): "key": [ ... ] of objects, each opened with
 * sc__em_item and closed with sc__em_item_end; inside an item, key/value
 * pairs, sections and tables as at the top. */
void sc__em_array(sc_emitter_t *e, const char *key);
void sc__em_array_end(sc_emitter_t *e);
void sc__em_item(sc_emitter_t *e);
void sc__em_item_end(sc_emitter_t *e);
/** Text-only prose: pieces of one line, then the end of the line. */
void sc__em_text(sc_emitter_t *e, const char *s);
void sc__em_text_value(sc_emitter_t *e, sc_ev_t v);
void sc__em_text_end(sc_emitter_t *e);

/** Render v as the text form would into out (>= 32 bytes); its length. */
size_t sc__em_format(char *out, sc_ev_t v);

#endif /* SC_EMIT_H */
