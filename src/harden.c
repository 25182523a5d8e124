/* harden.c — the messages and aborts of misuse detection. They format with
 * a tiny local writer: no stdio, no malloc, safe in any state. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* A bounded line buffer for building one message without allocating. */
typedef struct {
  char buf[160];
  size_t len;
} line_t;

static void line_str(line_t *l, const char *s) {
  while (*s && l->len < sizeof(l->buf) - 1) l->buf[l->len++] = *s++;
}
static void line_uint(line_t *l, uint64_t v) {
  char tmp[24];
  int n = 0;
  do tmp[n++] = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  while (n > 0 && l->len < sizeof(l->buf) - 1) l->buf[l->len++] = tmp[--n];
}
static void line_hex(line_t *l, uint64_t v) {
  char tmp[16];
  int n = 0;
  do tmp[n++] = "0123456789abcdef"[v & 15];
  while ((v >>= 4) != 0);
  line_str(l, "0x");
  while (n > 0 && l->len < sizeof(l->buf) - 1) l->buf[l->len++] = tmp[--n];
}
static void line_emit(line_t *l) {
  l->buf[l->len++] = '\n';
  sc__os_write_all(2, l->buf, l->len);
}

void sc__warn(const char *msg) {
  line_t l = {.len = 0};
  line_str(&l, "sizeclass: ");
  line_str(&l, msg);
  line_emit(&l);
}

void sc__fatal_block(const char *what, const void *p, unsigned class_size) {
  line_t l = {.len = 0};
  line_str(&l, "sizeclass: ");
  line_str(&l, what);
  line_str(&l, " of ");
  line_hex(&l, (uintptr_t)p);
  if (class_size != 0) {
    line_str(&l, " (class ");
    line_uint(&l, class_size);
    line_str(&l, " B)");
  }
  line_emit(&l);
  abort();
}

void sc__fatal_list(unsigned class_size) {
  line_t l = {.len = 0};
  line_str(&l, "sizeclass: corrupted free list in class ");
  line_uint(&l, class_size);
  line_emit(&l);
  abort();
}
