/* SPDX-License-Identifier: MIT */
/* harden.c — the messages and aborts of misuse detection: every
 * "sizeclass: invalid free / double free / corrupted free list" line the
 * core prints, the reports the fast paths jump to included. They format
 * with the library's one printf (util/format.h): no stdio, no malloc,
 * safe in any state.
 *
 * Every abort of the library's own (these, the features' checks, the
 * steady-state check) goes through sc__abort_with_report: the line, then
 * the report's last words when the report registered them (it writes the
 * report a run asked for, reason "abort: <message>"), then abort(). The
 * core never calls the report: the report layer registers a function
 * pointer (snapshot.h). */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/hooks.h"
#include "core/internal.h"
#include "core/snapshot.h"
#include "util/format.h"
#include "util/stream.h"
#include "util/startup.h"

/* The thread writing an abort's report (its kernel id); 0: none. */
static _Atomic long reporter;

/* The report's function lives in the hooks' page (core/hooks.h): an abort
 * for a double free calls it, so it must not be writable either. */
sc_startup void sc__last_words_register(sc_last_words_fn fn) {
  sc__hooks_write_begin();
  __atomic_store_n(&sc__hooks_page.last_words_fn, (sc_any_fn_t)fn, __ATOMIC_RELEASE);
  sc__hooks_write_end();
}

/** The registered last words, or NULL. */
static sc_last_words_fn last_words(void) {
  return (sc_last_words_fn)__atomic_load_n(&sc__hooks_page.last_words_fn, __ATOMIC_ACQUIRE);
}

void sc__warn(const char *msg) { sc__diag_printf("sizeclass: %s", msg); }

/** "sizeclass: <why>" on stderr, whatever its length (a steady-state
 * message names a function and its module: longer than sc__diag_printf's
 * line). */
static void say(const char *why) {
  char buf[1600];
  size_t n = sc__format(buf, sizeof(buf) - 1, "sizeclass: %s", why);
  buf[n++] = '\n';
  sc__stream_write(2, buf, n);
}

void sc__abort_with_report(const char *why) {
  say(why);
  sc__abort_said(why);
}

void sc__abort_said(const char *why) {
  long me = syscall(SYS_gettid), none = 0;
  if (atomic_compare_exchange_strong(&reporter, &none, me)) {
    sc_last_words_fn fn = last_words();
    if (fn != NULL) fn(SC_LAST_ABORT, why);
  } else if (none != me) {
    /* Another thread is writing the report and aborts when it is done:
     * wait for that (it is bounded: the report gives up after a while),
     * then abort anyway. The reporting thread itself (an abort inside its
     * own report) aborts at once. */
    for (int i = 0; i < 15000; i++) {
      struct timespec ms = {0, 1000000};
      nanosleep(&ms, NULL);
    }
  }
  abort();
}

void sc__last_words_exit(void) {
  sc_last_words_fn fn = last_words();
  if (fn != NULL) fn(SC_LAST_EXIT, NULL);
}

void sc__fatal_block(const char *what, const void *p, unsigned class_size) {
  char line[SC_DIAG_CAP];
  size_t n = sc__format(line, sizeof(line), "%s of 0x%" PRIxPTR, what, (uintptr_t)p);
  if (class_size != 0) sc__format(line + n, sizeof(line) - n, " (class %u B)", class_size);
  sc__abort_with_report(line);
}

void sc__fatal_list(unsigned class_size, uintptr_t page_base) {
  char line[SC_DIAG_CAP];
  size_t n = sc__format(line, sizeof(line), "corrupted free list in class %u%s", class_size,
                        class_size != 0 ? " B" : "");
  if (page_base != 0) sc__format(line + n, sizeof(line) - n, " (page 0x%" PRIxPTR ")", page_base);
  sc__abort_with_report(line);
}

/* ---- the fast paths' reports (alloc.h) ------------------------------------ */

void sc__fatal_invalid(const void *p) { sc__fatal_block("invalid free", p, 0); }

void sc__fatal_double(const void *p, const sc_page_t *page) {
  sc__fatal_block("double free", p, (unsigned)sc__page_block_size(page));
}

void *sc__fatal_list_of(const sc_page_t *page) { sc__fatal_list_at(page); /* never returns */ }

void sc__fatal_list_at(const sc_page_t *page) {
  sc__fatal_list((unsigned)sc__page_block_size(page), sc__page_base(page));
}
