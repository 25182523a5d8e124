/* SPDX-License-Identifier: MIT */
/* test_format.c — the library's one printf (src/util/format.h): every
 * conversion it knows gives what glibc's snprintf gives, at every buffer
 * size (cut, never overflowing, always NUL-terminated), and
 * sc__diag_printf writes exactly one line to stderr. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/format.h"
#include "util/stream.h"

#define CANARY '\x5a'

/** Format fmt both ways at every buffer size from 0 to past the full
 * length: same text, same (cut) length, nothing written past the cap. */
__attribute__((format(printf, 1, 2))) static void same(const char *fmt, ...) {
  char want[512];
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int full = vsnprintf(want, sizeof(want), fmt, ap);
  va_end(ap);
  cr_assert(full >= 0 && (size_t)full < sizeof(want), "%s: snprintf says %d", fmt, full);
  for (size_t cap = 0; cap <= (size_t)full + 2; cap++) {
    char got[520];
    memset(got, CANARY, sizeof(got));
    va_list aq;
    va_copy(aq, ap2);
    size_t n = sc__vformat(got, cap, fmt, aq);
    va_end(aq);
    size_t expect_n = cap == 0 ? 0 : ((size_t)full < cap - 1 ? (size_t)full : cap - 1);
    cr_expect_eq(n, expect_n, "\"%s\" cap %zu: length %zu, expected %zu", fmt, cap, n, expect_n);
    if (cap > 0) {
      cr_expect(memcmp(got, want, expect_n) == 0 && got[expect_n] == 0,
                "\"%s\" cap %zu: \"%.*s\", expected \"%.*s\"", fmt, cap, (int)expect_n, got,
                (int)expect_n, want);
    }
    for (size_t i = cap; i < sizeof(got); i++)
      cr_assert_eq(got[i], CANARY, "\"%s\" cap %zu: byte %zu written past the cap", fmt, cap, i);
  }
  va_end(ap2);
}

Test(format, plain_text_and_percent) {
  same("%s", "");
  same("plain text, no conversion");
  same("100%% sure, %%%% two");
  same("%c%c%c", 'a', 'b', 'c');
  same("[%5c] [%-5c]", 'x', 'y');
}

Test(format, decimal_signed) {
  same("%d %d %d", 0, 1, -1);
  same("%d %d", INT_MAX, INT_MIN);
  same("%i", -123456);
  same("%ld %ld", LONG_MAX, LONG_MIN);
  same("%lld %lld", LLONG_MAX, LLONG_MIN);
  same("%" PRId64 " %" PRId64, INT64_MAX, INT64_MIN);
  same("%hd %hhd", (short)-32768, (signed char)-128);
  /* an int given for %hd and %hhd is converted to short and char first
   * (clang warns: not checked at compile time) */
  const char *volatile narrowed = "%hd %hhd";
  same(narrowed, 70000, 300);
  same("%jd %td %zd", (intmax_t)-5, (ptrdiff_t)-77, (ssize_t)-9);
}

Test(format, decimal_unsigned) {
  same("%u %u", 0u, UINT_MAX);
  same("%lu %llu", ULONG_MAX, ULLONG_MAX);
  same("%zu %zu", (size_t)0, SIZE_MAX);
  same("%" PRIu64, UINT64_MAX);
  same("%hu %hhu", (unsigned short)65535, (unsigned char)255);
  same("%ju", UINTMAX_MAX);
}

Test(format, hex_octal_pointer) {
  same("%x %X", 0xdeadbeefu, 0xdeadbeefu);
  same("%lx %lX %llx", ULONG_MAX, 0xabcUL, 0x0123456789abcdefULL);
  same("%#x %#X %#x", 255u, 255u, 0u);
  same("0x%" PRIx64, UINT64_MAX);
  same("%o %#o %#o %o", 8u, 8u, 0u, 0u);
  same("%p", (void *)0x7f0012345678);
  same("%p", (void *)NULL);
  same("[%20p] [%-20p]", (void *)0x1234, (void *)0x1234);
  same("[%10p] [%-10p]", (void *)NULL, (void *)NULL);
}

Test(format, width_and_flags) {
  same("[%5d] [%-5d] [%05d]", 42, 42, 42);
  same("[%5d] [%-5d] [%05d]", -42, -42, -42);
  same("[%+d] [%+d] [% d] [% d]", 7, -7, 7, -7);
  same("[%+05d] [% 05d]", 7, 7);
  same("[%08x] [%#08x] [%-#8x]", 0xbeefu, 0xbeefu, 0xbeefu);
  same("[%1d] [%2d]", 12345, 12345); /* a width smaller than the number */
  same("[%*d] [%*d] [%-*d]", 6, 1, -6, 2, 6, 3);
  same("[%020" PRId64 "]", INT64_MIN);
  /* flags gcc warns about (it ignores one of them): not checked at
   * compile time, glibc's rules at run time */
  const char *volatile ignored = "[%-020" PRId64 "]";
  same(ignored, INT64_MIN);
  ignored = "[%-05d]"; /* '-' beats '0' */
  same(ignored, 3);
}

Test(format, precision) {
  same("[%.3d] [%.3d] [%8.3d] [%-8.3d]", 5, -5, 5, -5);
  same("[%.0d] [%.0u] [%.0x] [%5.0d]", 0, 0u, 0u, 0);
  const char *volatile ignored = "[%08.3d]"; /* a precision: the '0' flag is ignored */
  same(ignored, 5);
  same("[%.*d]", 6, 12);
  same("[%.*d]", -1, 12); /* a negative precision is none */
  same("[%#.3o] [%#.0o]", 8u, 0u);
  same("[%.3s] [%.0s] [%.10s]", "abcdef", "abc", "abc");
  same("[%10.3s] [%-10.3s]", "abcdef", "abcdef");
  same("[%.*s]", 2, "xyz");
}

Test(format, strings) {
  same("%s", "hello");
  same("[%10s] [%-10s]", "right", "left");
  same("[%2s]", "longer than the width");
  same("%s|%s|%s", "a", "", "c");
  /* a string with no NUL within the precision */
  char raw[4] = {'a', 'b', 'c', 'd'};
  same("[%.4s] [%.2s]", raw, raw);
}

/* glibc prints "(null)" for a null string; the compiler must not see it. */
static const char *volatile null_string = NULL;

Test(format, null_string) {
  same("%s", null_string);
  same("[%10s] [%-10s]", null_string, null_string);
  same("[%.6s] [%.8s]", null_string, null_string);
  same("[%.3s]", null_string); /* glibc: nothing when "(null)" does not fit */
}

Test(format, long_output_truncates) {
  char big[300];
  memset(big, 'q', sizeof(big) - 1);
  big[sizeof(big) - 1] = 0;
  same("%s and %s", big, "tail");
  same("%200d|%-200u|", -1, 1u);
}

Test(format, mixed_line) {
  same("sizeclass: overflow past the %zu-byte request in block 0x%" PRIx64
       " (class %u B): "
       "byte %zu changed",
       (size_t)24, (uint64_t)0x7f00dead0010, 32u, (size_t)29);
  same("sizeclass: %s=\"%.64s%s\": %s; %s", "SIZECLASS_X", "v", "", "expected on/off", "off");
  same("offset %" PRId64 " of the %zu-byte block", (int64_t)-16, (size_t)48);
}

/* Formats gcc cannot check (not printf's: the formatter copies them). */
static size_t unchecked(char *buf, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  size_t n = sc__vformat(buf, cap, fmt, ap);
  va_end(ap);
  return n;
}

Test(format, unknown_conversions_are_text) {
  char buf[64];
  const char *volatile fmt = "a %q b %";
  size_t n = unchecked(buf, sizeof(buf), fmt, 1);
  cr_expect_str_eq(buf, "a %q b %");
  cr_expect_eq(n, strlen("a %q b %"));
  fmt = "x%5fy %d";
  unchecked(buf, sizeof(buf), fmt, 17);
  cr_expect_str_eq(buf, "x%5fy 17"); /* no argument taken by the unknown one */
}

Test(format, zero_cap_writes_nothing) {
  char buf[4] = {CANARY, CANARY, CANARY, CANARY};
  cr_expect_eq(sc__format(buf, 0, "%s", "abc"), 0);
  cr_expect_eq(buf[0], CANARY);
  cr_expect_eq(sc__format(buf, 1, "%s", "abc"), 0);
  cr_expect_eq(buf[0], 0);
  cr_expect_eq(buf[1], CANARY);
}

/** Run sc__diag_printf with stderr captured into buf; the bytes written. */
static size_t capture_diag(char *buf, size_t cap, const char *text) {
  char path[] = "/tmp/sc-format-XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  unlink(path);
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  sc__stream_rebind(2); /* the library writes only to the stderr it knows */
  sc__diag_printf("sizeclass: %s [%d]", text, -3);
  dup2(saved, 2);
  close(saved);
  sc__stream_rebind(2);
  ssize_t n = pread(fd, buf, cap - 1, 0);
  close(fd);
  cr_assert(n >= 0);
  buf[n] = 0;
  return (size_t)n;
}

Test(format, diag_printf_writes_one_line) {
  char buf[4096];
  size_t n = capture_diag(buf, sizeof(buf), "hello");
  cr_expect_str_eq(buf, "sizeclass: hello [-3]\n");
  cr_expect_eq(n, strlen("sizeclass: hello [-3]\n"));
}

Test(format, diag_printf_cuts_a_long_line) {
  static char big[3000];
  memset(big, 'w', sizeof(big) - 1);
  char buf[4096];
  size_t n = capture_diag(buf, sizeof(buf), big);
  cr_expect_eq(n, SC_DIAG_LINE_CAP - 1, "%zu bytes", n); /* cut, then the newline */
  cr_expect_eq(buf[n - 1], '\n');
  cr_expect_eq(strchr(buf, '\n'), buf + n - 1, "one line");
  cr_expect(strncmp(buf, "sizeclass: www", 14) == 0);
}

Test(format, text_printable_keeps_a_line_one_line) {
  char s[] = "a\nb\tc\x1b[31md\x7f e";
  sc__text_printable(s);
  cr_expect_str_eq(s, "a?b?c?[31md\x7f e");
}
