/* SPDX-License-Identifier: MIT */
/* format.c — the one non-allocating printf (format.h). */
#include "util/format.h"

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "util/stream.h"

/* The output: buf[0..cap), len bytes kept so far (at most cap - 1). */
typedef struct {
  char *buf;
  size_t cap;
  size_t len;
} out_t;

static void put(out_t *o, char c) {
  if (o->len + 1 < o->cap) o->buf[o->len++] = c;
}

static void put_n(out_t *o, char c, size_t n) {
  for (size_t i = 0; i < n; i++) put(o, c);
}

static void put_s(out_t *o, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) put(o, s[i]);
}

/* One conversion's flags, width and precision. */
typedef struct {
  bool left;  /* '-' */
  bool zero;  /* '0' */
  bool plus;  /* '+' */
  bool space; /* ' ' */
  bool alt;   /* '#' */
  size_t width;
  int prec; /* -1: none */
} spec_t;

/** Text of length n padded to the width (spaces, on the side the flags say). */
static void put_padded(out_t *o, const spec_t *sp, const char *s, size_t n) {
  size_t pad = sp->width > n ? sp->width - n : 0;
  if (!sp->left) put_n(o, ' ', pad);
  put_s(o, s, n);
  if (sp->left) put_n(o, ' ', pad);
}

/** An integer: magnitude v in base, with sign (or "0x" prefix) text. */
static void put_int(out_t *o, const spec_t *sp, uint64_t v, unsigned base, bool upper,
                    const char *sign) {
  const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  char tmp[24];
  size_t n = 0;
  /* A precision of 0 and a value of 0: no digits at all. */
  if (!(v == 0 && sp->prec == 0)) {
    do tmp[n++] = digits[v % base];
    while ((v /= base) != 0);
  }
  const char *prefix = sign;
  size_t plen = 0;
  while (prefix[plen] != 0) plen++;
  size_t zeros = sp->prec > 0 && (size_t)sp->prec > n ? (size_t)sp->prec - n : 0;
  /* '#' with %o: a leading 0 unless the digits already start with one */
  if (base == 8 && sp->alt && zeros == 0 && (n == 0 || tmp[n - 1] != '0')) zeros = 1;
  size_t body = plen + zeros + n;
  size_t pad = sp->width > body ? sp->width - body : 0;
  /* '0' pads with zeros after the sign, unless '-' or a precision */
  if (sp->zero && !sp->left && sp->prec < 0) {
    zeros += pad;
    pad = 0;
  }
  if (!sp->left) put_n(o, ' ', pad);
  put_s(o, prefix, plen);
  put_n(o, '0', zeros);
  while (n > 0) put(o, tmp[--n]);
  if (sp->left) put_n(o, ' ', pad);
}

/** A size_t-sized number of the format's digits at *f (at most SIZE_MAX/10). */
static size_t read_number(const char **f) {
  size_t n = 0;
  while (**f >= '0' && **f <= '9') {
    if (n < (SIZE_MAX - 9) / 10) n = n * 10 + (size_t)(**f - '0');
    (*f)++;
  }
  return n;
}

/* Length modifiers, narrowest first; from LEN_LONG on, 64 bits. */
enum { LEN_CHAR, LEN_SHORT, LEN_INT, LEN_LONG, LEN_LLONG, LEN_SIZE, LEN_MAX, LEN_PTRDIFF };

/* Every integer type of LEN_LONG and up is 64 bits wide (LP64, the only
 * model the library builds for) and is read as one: va_arg of int64_t. */
_Static_assert(sizeof(long) == 8 && sizeof(long long) == 8 && sizeof(size_t) == 8 &&
                   sizeof(intmax_t) == 8 && sizeof(ptrdiff_t) == 8 && sizeof(void *) == 8,
               "format.c reads every 64-bit integer the same way");

/** The flags, width, precision and length modifier at *fp (just past the
 * '%'), up to the conversion letter; its length modifier. A '*' width or
 * precision sets *star_width or *star_prec: the caller reads it. */
static int parse_spec(const char **fp, spec_t *sp, bool *star_width, bool *star_prec) {
  const char *f = *fp;
  *sp = (spec_t){.prec = -1};
  for (;; f++) {
    if (*f == '-')
      sp->left = true;
    else if (*f == '0')
      sp->zero = true;
    else if (*f == '+')
      sp->plus = true;
    else if (*f == ' ')
      sp->space = true;
    else if (*f == '#')
      sp->alt = true;
    else
      break;
  }
  *star_width = *f == '*';
  if (*star_width)
    f++;
  else
    sp->width = read_number(&f);
  *star_prec = false;
  if (*f == '.') {
    f++;
    *star_prec = *f == '*';
    if (*star_prec) {
      f++;
    } else {
      size_t p = read_number(&f);
      sp->prec = p > INT_MAX ? INT_MAX : (int)p;
    }
  }
  int len = LEN_INT;
  if (f[0] == 'h' && f[1] == 'h')
    len = LEN_CHAR, f += 2;
  else if (f[0] == 'h')
    len = LEN_SHORT, f++;
  else if (f[0] == 'l' && f[1] == 'l')
    len = LEN_LLONG, f += 2;
  else if (f[0] == 'l')
    len = LEN_LONG, f++;
  else if (f[0] == 'z')
    len = LEN_SIZE, f++;
  else if (f[0] == 'j')
    len = LEN_MAX, f++;
  else if (f[0] == 't')
    len = LEN_PTRDIFF, f++;
  *fp = f;
  return len;
}

/** A '*' width (negative: '-' and its magnitude). */
static void star_width(spec_t *sp, int w) {
  if (w < 0) {
    sp->left = true;
    w = w == INT_MIN ? INT_MAX : -w;
  }
  sp->width = (size_t)w;
}

/** A signed integer of length len, read as int or int64_t, narrowed back. */
static int64_t narrow_signed(int64_t v, int len) {
  if (len == LEN_CHAR) return (signed char)v;
  if (len == LEN_SHORT) return (short)v;
  if (len == LEN_INT) return (int)v;
  return v;
}

static uint64_t narrow_unsigned(uint64_t v, int len) {
  if (len == LEN_CHAR) return (unsigned char)v;
  if (len == LEN_SHORT) return (unsigned short)v;
  if (len == LEN_INT) return (unsigned)v;
  return v;
}

size_t sc__vformat(char *buf, size_t cap, const char *fmt, va_list ap) {
  out_t o = {.buf = buf, .cap = cap, .len = 0};
  va_list args;
  va_copy(args, ap);
  for (const char *f = fmt; *f != 0;) {
    if (*f != '%') {
      put(&o, *f++);
      continue;
    }
    const char *at = f++;
    spec_t sp;
    bool sw, spr;
    int len = parse_spec(&f, &sp, &sw, &spr);
    char c = *f;
    if (c == 0 || strchr("diuoxXpcs%", c) == NULL) {
      /* unknown: the text as it stands, up to the letter that ended it,
       * and no argument taken */
      while (at < f) put(&o, *at++);
      if (*f != 0) put(&o, *f++);
      continue;
    }
    f++;
    if (sw) star_width(&sp, va_arg(args, int));
    if (spr) {
      int p = va_arg(args, int);
      sp.prec = p < 0 ? -1 : p;
    }
    bool wide = len >= LEN_LONG;
    switch (c) {
      case 'd':
      case 'i': {
        int64_t v = narrow_signed(wide ? va_arg(args, int64_t) : va_arg(args, int), len);
        uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
        put_int(&o, &sp, mag, 10, false, v < 0 ? "-" : sp.plus ? "+" : sp.space ? " " : "");
        break;
      }
      case 'u':
      case 'o':
      case 'x':
      case 'X': {
        uint64_t v = narrow_unsigned(wide ? va_arg(args, uint64_t) : va_arg(args, unsigned), len);
        const char *prefix = "";
        if (sp.alt && v != 0 && (c == 'x' || c == 'X')) prefix = c == 'x' ? "0x" : "0X";
        put_int(&o, &sp, v, c == 'u' ? 10 : c == 'o' ? 8 : 16, c == 'X', prefix);
        break;
      }
      case 'p': {
        uintptr_t v = (uintptr_t)va_arg(args, void *);
        if (v == 0) {
          put_padded(&o, &sp, "(nil)", 5);
        } else {
          sp.alt = false;
          put_int(&o, &sp, v, 16, false, sp.plus ? "+0x" : sp.space ? " 0x" : "0x");
        }
        break;
      }
      case 'c': {
        char ch = (char)va_arg(args, int);
        put_padded(&o, &sp, &ch, 1);
        break;
      }
      case 's': {
        const char *s = va_arg(args, const char *);
        /* glibc: "(null)", or nothing when the precision cannot hold it */
        if (s == NULL) s = sp.prec >= 0 && sp.prec < 6 ? "" : "(null)";
        size_t n = 0;
        while ((sp.prec < 0 || n < (size_t)sp.prec) && s[n] != 0)
          n++; /* no byte past the precision */
        put_padded(&o, &sp, s, n);
        break;
      }
      default: /* '%' */
        put(&o, '%');
    }
  }
  va_end(args);
  if (cap > 0) buf[o.len] = 0;
  return o.len;
}

size_t sc__format(char *buf, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  size_t n = sc__vformat(buf, cap, fmt, ap);
  va_end(ap);
  return n;
}

void sc__text_printable(char *s) {
  for (; *s != 0; s++)
    if ((unsigned char)*s < 0x20) *s = '?';
}

void sc__diag_printf(const char *fmt, ...) {
  char line[SC_DIAG_LINE_CAP];
  va_list ap;
  va_start(ap, fmt);
  size_t n = sc__vformat(line, sizeof(line) - 1, fmt, ap);
  va_end(ap);
  line[n++] = '\n';
  sc__stream_write(2, line, n);
}
