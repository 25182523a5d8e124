/* SPDX-License-Identifier: MIT */
/* emit.c — the report emitter: text tables and JSON from the same calls,
 * formatted by hand into a fixed buffer flushed with write(2). Nothing
 * here allocates, locks or touches errno-visible state beyond write. */
#include "report/emit.h"

#include <string.h>

#include "util/os.h"

/* Text layout of key/value pairs: label and value widths, pairs a line. */
#define KV_LABEL_WIDTH 18
#define KV_VALUE_WIDTH 10
#define KV_PER_LINE 3

/* ---- the output buffer --------------------------------------------------- */

static void flush(sc_emitter_t *e) {
  if (e->len != 0 && e->mem != NULL) {
    size_t room = e->mem_cap - e->mem_len;
    size_t k = e->len < room ? e->len : room;
    memcpy(e->mem + e->mem_len, e->buf, k);
    e->mem_len += k;
    if (k < e->len) e->mem_full = true;
  } else if (e->len != 0) {
    sc__os_write_all(e->fd, e->buf, e->len);
  }
  e->len = 0;
}

/** put's way when the buffer fills: flush as often as needed. */
static __attribute__((noinline)) void put_slow(sc_emitter_t *e, const char *s, size_t n) {
  while (n > 0) {
    if (e->len == sizeof(e->buf)) flush(e);
    size_t room = sizeof(e->buf) - e->len;
    size_t k = n < room ? n : room;
    memcpy(e->buf + e->len, s, k);
    e->len += k;
    s += k;
    n -= k;
  }
}

/** Append s[0..n) to the output (inlined: the report is made of short
 * pieces, and each call is one of them). */
static inline __attribute__((always_inline)) void put(sc_emitter_t *e, const char *s, size_t n) {
  if (n <= sizeof(e->buf) - e->len) {
    memcpy(e->buf + e->len, s, n);
    e->len += n;
    return;
  }
  put_slow(e, s, n);
}

static void puts_(sc_emitter_t *e, const char *s) { put(e, s, strlen(s)); }

static void pad(sc_emitter_t *e, size_t n) {
  static const char spaces[] = "                                ";
  while (n > 0) {
    size_t k = n < sizeof(spaces) - 1 ? n : sizeof(spaces) - 1;
    put(e, spaces, k);
    n -= k;
  }
}

/* ---- number formatting ------------------------------------------------------ */

/** Decimal digits of v into out; their count. Two digits a step. */
static inline size_t fmt_u64(char *out, uint64_t v) {
  static const char pairs[] =
      "0001020304050607080910111213141516171819202122232425262728293031323334353637383940414243"
      "4445464748495051525354555657585960616263646566676869707172737475767778798081828384858687"
      "888990919293949596979899";
  if (v < 10) { /* most figures of a frame's classes are small */
    out[0] = (char)('0' + v);
    return 1;
  }
  _Static_assert(sizeof(pairs) == 201, "every pair of digits");
  char tmp[24];
  size_t n = sizeof(tmp);
  while (v >= 100) {
    unsigned d = (unsigned)(v % 100) * 2;
    v /= 100;
    tmp[--n] = pairs[d + 1];
    tmp[--n] = pairs[d];
  }
  if (v >= 10) {
    tmp[--n] = pairs[v * 2 + 1];
    tmp[--n] = pairs[v * 2];
  } else {
    tmp[--n] = (char)('0' + v);
  }
  memcpy(out, tmp + n, sizeof(tmp) - n);
  return sizeof(tmp) - n;
}

/** v / 10^decimals with exactly `decimals` digits after the point. */
static size_t fmt_fixed(char *out, uint64_t v, unsigned decimals) {
  uint64_t scale = 1;
  for (unsigned i = 0; i < decimals; i++) scale *= 10;
  size_t n = fmt_u64(out, v / scale);
  out[n++] = '.';
  uint64_t frac = v % scale;
  for (unsigned i = decimals; i-- > 0;) {
    out[n + i] = (char)('0' + frac % 10);
    frac /= 10;
  }
  return n + decimals;
}

/** s after the n bytes of out; the new length (no NUL: lengths travel). */
static size_t append(char *out, size_t n, const char *s) {
  size_t k = strlen(s);
  memcpy(out + n, s, k); /* NOLINT(bugprone-not-null-terminated-result): by design */
  return n + k;
}

/** Bytes with a unit: exact below 10 KiB; else KiB, MiB or GiB, floored to
 * 0.1, the unit switching at 1000 of the smaller one (at most 9 chars). */
static size_t fmt_bytes(char *out, uint64_t v) {
  static const char *const units[] = {" KiB", " MiB", " GiB"};
  if (v < 10240) return append(out, fmt_u64(out, v), " B");
  unsigned u = 0;
  uint64_t div = 1024;
  while (u < 2 && v >= 1000 * div) {
    div *= 1024;
    u++;
  }
  uint64_t tenths = (uint64_t)((unsigned __int128)v * 10 / div);
  return append(out, fmt_fixed(out, tenths, 1), units[u]);
}

size_t sc__em_format(char *out, sc_ev_t v) {
  size_t n;
  switch (v.type) {
    case SC_EV_COUNT:
      return fmt_u64(out, v.u);
    case SC_EV_BYTES:
      return fmt_bytes(out, v.u);
    case SC_EV_SIZE:
      return append(out, fmt_u64(out, v.u), " B");
    case SC_EV_PERMILLE:
      return append(out, fmt_fixed(out, v.u, 1), "%");
    case SC_EV_TENTHS:
      return fmt_fixed(out, v.u, 1);
    case SC_EV_NS:
      return append(out, fmt_fixed(out, v.u / 1000000, 3), " s");
    case SC_EV_STR:
    case SC_EV_LABEL:
      if (v.s == NULL) return 0; /* memcpy from NULL is undefined, even of 0 bytes */
      n = strlen(v.s);
      if (n > 31) n = 31;
      memcpy(out, v.s, n);
      return n;
    case SC_EV_LIST:
    case SC_EV_STRS:
      return append(out, 0, "...");
    case SC_EV_BOOL:
      return append(out, 0, v.u ? "yes" : "no");
    case SC_EV_NULL:
      break;
  }
  return append(out, 0, "-");
}

/* ---- JSON ----------------------------------------------------------------- */

static void json_indent(sc_emitter_t *e, int depth) { pad(e, (size_t)depth * 2); }

static void json_string(sc_emitter_t *e, const char *s) {
  put(e, "\"", 1);
  while (s != NULL && *s) {
    size_t run = 0; /* characters that need no escape, written at once */
    while (s[run] != 0 && s[run] != '"' && s[run] != '\\' && (unsigned char)s[run] >= 0x20) run++;
    put(e, s, run);
    s += run;
    if (*s == 0) break;
    unsigned char ch = (unsigned char)*s++;
    if (ch == '"' || ch == '\\') {
      char esc[2] = {'\\', (char)ch};
      put(e, esc, 2);
    } else {
      char esc[6] = {'\\', 'u', '0', '0', "0123456789abcdef"[ch >> 4], "0123456789abcdef"[ch & 15]};
      put(e, esc, 6);
    }
  }
  put(e, "\"", 1);
}

static void json_value(sc_emitter_t *e, sc_ev_t v) {
  char num[32];
  switch (v.type) {
    case SC_EV_NULL:
      puts_(e, "null");
      return;
    case SC_EV_STR:
      json_string(e, v.s);
      return;
    case SC_EV_TENTHS:
      put(e, num, fmt_fixed(num, v.u, 1));
      return;
    case SC_EV_LIST:
      put(e, "[", 1);
      for (unsigned i = 0; i < v.n; i++) {
        if (sizeof(e->buf) - e->len >= 2 + sizeof(num)) { /* straight into the buffer */
          char *at = e->buf + e->len;
          size_t k = 0;
          if (i) at[k++] = ',', at[k++] = ' ';
          e->len += k + fmt_u64(at + k, v.list[i]);
          continue;
        }
        if (i) put(e, ", ", 2);
        put(e, num, fmt_u64(num, v.list[i]));
      }
      put(e, "]", 1);
      return;
    case SC_EV_STRS:
      put(e, "[", 1);
      for (unsigned i = 0; i < v.n; i++) {
        if (i) put(e, ", ", 2);
        if (v.strs[i] != NULL)
          json_string(e, v.strs[i]);
        else
          puts_(e, "null");
      }
      put(e, "]", 1);
      return;
    case SC_EV_BOOL:
      puts_(e, v.u ? "true" : "false");
      return;
    case SC_EV_LABEL:
      return;
    default:
      put(e, num, fmt_u64(num, v.u));
      return;
  }
}

/** "key": the keys are the report's own constants, written as they are
 * (no character of theirs needs an escape). */
static void json_key(sc_emitter_t *e, const char *key) {
  size_t n = strlen(key);
  put(e, "\"", 1);
  put(e, key, n);
  put(e, "\": ", 3);
}

/** Start member `key` of the current JSON object on a new line. */
static void json_member(sc_emitter_t *e, const char *key) {
  if (!e->first[e->depth]) put(e, ",", 1);
  e->first[e->depth] = false;
  put(e, "\n", 1);
  json_indent(e, e->depth);
  json_key(e, key);
}

/** One table row as a one-line JSON object. */
static void json_row(sc_emitter_t *e, const sc_em_table_t *t, const sc_ev_t *vals) {
  bool first = true;
  put(e, "{", 1);
  for (unsigned i = 0; i < t->ncols; i++) {
    if (t->cols[i].key == NULL || vals[i].type == SC_EV_LABEL) continue;
    if (!first) put(e, ", ", 2);
    first = false;
    json_key(e, t->cols[i].key);
    json_value(e, vals[i]);
  }
  put(e, "}", 1);
}

static void json_table(sc_emitter_t *e, const sc_em_table_t *t, unsigned nrows, sc_em_row_fn fn,
                       const void *ctx) {
  sc_ev_t vals[SC_EM_MAX_COLS];
  unsigned rows = t->total_key ? nrows - 1 : nrows;
  json_member(e, t->key);
  put(e, "[", 1);
  for (unsigned r = 0; r < rows; r++) {
    fn(ctx, r, vals);
    put(e, r ? ",\n" : "\n", r ? 2 : 1);
    json_indent(e, e->depth + 1);
    json_row(e, t, vals);
  }
  if (rows) {
    put(e, "\n", 1);
    json_indent(e, e->depth);
  }
  put(e, "]", 1);
  if (t->total_key) {
    fn(ctx, nrows - 1, vals);
    json_member(e, t->total_key);
    json_row(e, t, vals);
  }
}

/** Open a JSON container (after its key, or as an array element). */
static void json_open(sc_emitter_t *e, const char *bracket) {
  put(e, bracket, 1);
  if (e->depth < 7) e->depth++;
  e->first[e->depth] = true;
}

/** Close the container json_open opened. */
static void json_close(sc_emitter_t *e, const char *bracket) {
  bool empty = e->first[e->depth];
  e->depth--;
  if (!empty) {
    put(e, "\n", 1);
    json_indent(e, e->depth);
  }
  put(e, bracket, 1);
}

/* ---- text ------------------------------------------------------------------ */

/** End a line of key/value pairs if one is open. */
static void text_kv_break(sc_emitter_t *e) {
  if (e->kv_col != 0) put(e, "\n", 1);
  e->kv_col = 0;
}

/** s right-aligned in width, after two spaces (or none for the first cell). */
static void text_cell(sc_emitter_t *e, const char *s, size_t n, unsigned width, bool first) {
  if (!first) put(e, "  ", 2);
  if (n < width) pad(e, width - n);
  put(e, s, n);
}

static bool in_group(const sc_em_col_t *c, unsigned i, unsigned g) {
  return c->head != NULL && (i == 0 || ((c->groups >> g) & 1) != 0);
}

static void text_rule(sc_emitter_t *e, const sc_em_table_t *t, unsigned g) {
  size_t w = 0;
  for (unsigned i = 0; i < t->ncols; i++)
    if (in_group(&t->cols[i], i, g)) w += t->cols[i].width + (i ? 2 : 0);
  put(e, "  ", 2);
  while (w-- > 0) put(e, "-", 1);
  put(e, "\n", 1);
}

static void text_table(sc_emitter_t *e, const sc_em_table_t *t, unsigned nrows, sc_em_row_fn fn,
                       const void *ctx) {
  sc_ev_t vals[SC_EM_MAX_COLS];
  char cell[64];
  text_kv_break(e);
  for (unsigned g = 0; g < t->ngroups; g++) {
    if (t->titles[g] == NULL) continue;
    put(e, "\n", 1);
    puts_(e, t->titles[g]);
    put(e, "\n  ", 3);
    for (unsigned i = 0; i < t->ncols; i++)
      if (in_group(&t->cols[i], i, g))
        text_cell(e, t->cols[i].head, strlen(t->cols[i].head), t->cols[i].width, i == 0);
    put(e, "\n", 1);
    if (nrows == 0 || (nrows == 1 && t->total_key)) puts_(e, "  (none)\n");
    for (unsigned r = 0; r < nrows; r++) {
      if (t->total_key && r == nrows - 1) text_rule(e, t, g);
      fn(ctx, r, vals);
      put(e, "  ", 2);
      for (unsigned i = 0; i < t->ncols; i++)
        if (in_group(&t->cols[i], i, g))
          text_cell(e, cell, sc__em_format(cell, vals[i]), t->cols[i].width, i == 0);
      put(e, "\n", 1);
    }
  }
}

/* ---- the interface ----------------------------------------------------------- */

void sc__em_begin_mem(sc_emitter_t *e, char *mem, size_t cap, int mode) {
  sc__em_begin(e, -1, mode);
  e->mem = mem;
  e->mem_cap = cap;
}

void sc__em_begin(sc_emitter_t *e, int fd, int mode) {
  e->fd = fd;
  e->mem = NULL;
  e->mem_cap = e->mem_len = 0;
  e->mem_full = false;
  e->mode = mode;
  e->depth = 0;
  e->kv_col = 0;
  e->len = 0;
  if (mode == SC_EM_JSON) {
    put(e, "{", 1);
    e->depth = 1;
    e->first[1] = true;
  }
}

void sc__em_end(sc_emitter_t *e) {
  if (e->mode == SC_EM_JSON)
    puts_(e, "\n}\n");
  else
    text_kv_break(e);
  flush(e);
}

void sc__em_section(sc_emitter_t *e, const char *key, const char *title) {
  if (e->mode == SC_EM_JSON) {
    json_member(e, key);
    json_open(e, "{");
    return;
  }
  text_kv_break(e);
  if (title == NULL) return;
  put(e, "\n", 1);
  puts_(e, title);
  put(e, "\n", 1);
}

void sc__em_section_end(sc_emitter_t *e) {
  if (e->mode == SC_EM_JSON) {
    json_close(e, "}");
    return;
  }
  text_kv_break(e);
}

void sc__em_kv(sc_emitter_t *e, const char *key, const char *label, sc_ev_t v) {
  if (e->mode == SC_EM_JSON) {
    if (key == NULL || v.type == SC_EV_LABEL) return;
    json_member(e, key);
    json_value(e, v);
    return;
  }
  if (label == NULL) return;
  char cell[64];
  size_t n = sc__em_format(cell, v);
  size_t l = strlen(label);
  put(e, "  ", 2);
  puts_(e, label);
  pad(e, l < KV_LABEL_WIDTH ? KV_LABEL_WIDTH - l : 1);
  text_cell(e, cell, n, KV_VALUE_WIDTH, true);
  if (++e->kv_col == KV_PER_LINE) text_kv_break(e);
}

void sc__em_table(sc_emitter_t *e, const sc_em_table_t *t, unsigned nrows, sc_em_row_fn fn,
                  const void *ctx) {
  if (e->mode == SC_EM_JSON) {
    if (t->key != NULL) json_table(e, t, nrows, fn, ctx);
    return;
  }
  text_table(e, t, nrows, fn, ctx);
}

void sc__em_array(sc_emitter_t *e, const char *key) {
  if (e->mode != SC_EM_JSON) return;
  json_member(e, key);
  json_open(e, "[");
}

void sc__em_array_end(sc_emitter_t *e) {
  if (e->mode == SC_EM_JSON) json_close(e, "]");
}

void sc__em_item(sc_emitter_t *e) {
  if (e->mode != SC_EM_JSON) return;
  if (!e->first[e->depth]) put(e, ",", 1);
  e->first[e->depth] = false;
  put(e, "\n", 1);
  json_indent(e, e->depth);
  json_open(e, "{");
}

void sc__em_item_end(sc_emitter_t *e) {
  if (e->mode == SC_EM_JSON) json_close(e, "}");
}

void sc__em_text(sc_emitter_t *e, const char *s) {
  if (e->mode == SC_EM_TEXT) puts_(e, s);
}

void sc__em_text_value(sc_emitter_t *e, sc_ev_t v) {
  if (e->mode != SC_EM_TEXT) return;
  char cell[64];
  put(e, cell, sc__em_format(cell, v));
}

void sc__em_text_end(sc_emitter_t *e) {
  if (e->mode == SC_EM_TEXT) put(e, "\n", 1);
}
