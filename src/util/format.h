/* SPDX-License-Identifier: MIT */
/* format.h — the library's one printf: a formatter that writes into the
 * caller's buffer and nothing else. No stdio, no malloc, no locale, no
 * lock, no errno change: async-signal-safe, so the guard pages' fault
 * handler, the misuse reports inside malloc and the settings reader
 * (inside the first malloc) all use it.
 *
 * Conversions: %d %i %u %x %X %o %c %s %p %%, with the length modifiers
 * hh h l ll z j t, the flags - 0 + space #, a width and a precision
 * (digits or *). Output matches glibc's snprintf for all of these
 * (%p of NULL is "(nil)", %s of NULL "(null)"); anything else (%f, %n,
 * an unknown letter) is copied as it stands and takes no argument. */
#ifndef SC_FORMAT_H
#define SC_FORMAT_H

#include <stdarg.h>
#include <stddef.h>

#pragma GCC visibility push(hidden)

/** Format into buf[0..cap): always NUL-terminated when cap > 0, cut
 * (never overflowing) when the text is longer. Returns the length written,
 * at most cap - 1 (0 when cap is 0). */
size_t sc__format(char *buf, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
size_t sc__vformat(char *buf, size_t cap, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/** Each control character of the string s (a value or a name that came
 * from outside: the environment, a thread's name) becomes a '?', so that
 * a line stays one line. */
void sc__text_printable(char *s);

/** A diagnostic line's buffer where one is built for sc__abort_with_report
 * (the text only: no "sizeclass: ", no newline). */
#define SC_DIAG_CAP 320

/** Longest line sc__diag_printf writes, its newline included. */
#define SC_DIAG_LINE_CAP 1400

/** Format one line and write it, with a newline, to stderr as it was at
 * startup (stream.h); a longer line is cut. The format holds the whole
 * line ("sizeclass: ..."), without the newline. */
void sc__diag_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#pragma GCC visibility pop

#endif /* SC_FORMAT_H */
