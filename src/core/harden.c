/* SPDX-License-Identifier: MIT */
/* harden.c — the messages and aborts of misuse detection: every
 * "sizeclass: invalid free / double free / corrupted free list" line the
 * core prints, the reports the fast paths jump to included. They format
 * with the one diagnostic line of diag.h: no stdio, no malloc, safe in any
 * state. */
#include <stdlib.h>

#include "core/internal.h"
#include "util/diag.h"

void sc__warn(const char *msg) {
  sc_diag_t d = {.len = 0};
  sc__diag_str(&d, "sizeclass: ");
  sc__diag_str(&d, msg);
  sc__diag_emit(&d);
}

void sc__fatal_block(const char *what, const void *p, unsigned class_size) {
  sc_diag_t d = {.len = 0};
  sc__diag_str(&d, "sizeclass: ");
  sc__diag_str(&d, what);
  sc__diag_str(&d, " of ");
  sc__diag_hex(&d, (uintptr_t)p);
  if (class_size != 0) {
    sc__diag_str(&d, " (class ");
    sc__diag_uint(&d, class_size);
    sc__diag_str(&d, " B)");
  }
  sc__diag_emit(&d);
  abort();
}

void sc__fatal_list(unsigned class_size, uintptr_t page_base) {
  sc_diag_t d = {.len = 0};
  sc__diag_str(&d, "sizeclass: corrupted free list in class ");
  sc__diag_uint(&d, class_size);
  if (class_size != 0) sc__diag_str(&d, " B");
  if (page_base != 0) {
    sc__diag_str(&d, " (page ");
    sc__diag_hex(&d, page_base);
    sc__diag_str(&d, ")");
  }
  sc__diag_emit(&d);
  abort();
}

/* ---- the fast paths' reports (alloc.h) ------------------------------------ */

void sc__fatal_invalid(const void *p) { sc__fatal_block("invalid free", p, 0); }

void sc__fatal_double(const void *p, const sc_page_t *page) {
  sc__fatal_block("double free", p, page->block_mask + 1);
}

void *sc__fatal_list_of(const sc_page_t *page) { sc__fatal_list_at(page); /* never returns */ }

void sc__fatal_list_at(const sc_page_t *page) {
  sc__fatal_list(page->block_mask + 1, (uintptr_t)page->carve_end - SC_PAGE_SIZE);
}
