/* SPDX-License-Identifier: MIT */
/* hooks_page.c — the fast paths' targets and the feature table are
 * read-only (core/hooks.h: sc__hooks_page) after the library writes them
 * at run time. Linked with libsizeclass.a (its internals are reachable).
 * argv[1]:
 *   tags    run with SIZECLASS_STATS_EXACT=1: sc_tag turns tags on at run
 *           time (features/tags.c: sc__tags_start installs the tagged
 *           tier's paths through sc__tiers_install);
 *   enable  sc_stats_enable_exact() before the first malloc (the
 *           features' decision again, at run time).
 * Either way: the targets must have changed (the write happened), the
 * page's mapping must have no 'w', and a forked child that writes
 * sc__free_other_fn must die of SIGSEGV. Prints "ok", or what failed
 * (exit 1). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/hooks.h"
#include "maps.h"
#include "sizeclass.h"

static int failures;

static void fail(const char *what) {
  printf("FAIL %s\n", what);
  failures++;
}

/** A forked child writes the free target: how it ended (wait status). */
static int child_writes(void) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    signal(SIGSEGV, SIG_DFL); /* a handler of the library's would exit otherwise */
    void (**volatile slot)(void *, sc_page_t *, sc_arena_t *) = &sc__free_other_fn;
    *slot = NULL;
    _exit(0); /* the write went through: the page is writable */
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return -1;
  return status;
}

static void check_read_only(void) {
  char perms[5] = "";
  if (!maps_perms_of(&sc__hooks_page, perms))
    fail("no mapping holds the page");
  else if (perms[1] != '-')
    fail("the page's mapping is writable");
  if (!sc__hooks_page.sealed) fail("the page is not marked sealed");
  /* The pointers bound after the decision (the system route's, the
   * unwinder's) lie in the same read-only mapping. */
  if (!maps_perms_of(&sc__hooks_page.sys_trim_fn, perms) || perms[1] != '-')
    fail("glibc's malloc_trim pointer is writable");
  if (!maps_perms_of(&sc__hooks_page.unwind_backtrace_fn, perms) || perms[1] != '-')
    fail("the unwinder's pointers are writable");
  if (sc__hooks_page.sys_trim_fn == NULL) fail("glibc's malloc_trim was not bound");
  int status = child_writes();
  if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGSEGV) fail("a write did not fault");
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  void *(*before_malloc)(size_t, size_t, sc_page_t *) = sc__alloc_noted_fn;
  void (*before_free)(void *, sc_page_t *, sc_arena_t *) = sc__free_other_fn;
  if (strcmp(mode, "tags") == 0) {
    void *p = malloc(40); /* the exact tier's paths before */
    free(p);
    sc_tag_t t = sc_tag("hooks");
    if (t == 0) fail("sc_tag: no tag");
    sc_tag_t prev = sc_tag_enter(t);
    p = malloc(40);
    free(p);
    sc_tag_leave(prev);
  } else if (strcmp(mode, "enable") == 0) {
    if (!sc_stats_enable_exact()) fail("sc_stats_enable_exact refused");
  } else {
    fprintf(stderr, "usage: hooks_page tags|enable\n");
    return 2;
  }
  if (sc__free_other_fn == before_free) fail("the free target did not change");
  if (sc__alloc_noted_fn == before_malloc) fail("the malloc target did not change");
  check_read_only();
  /* The allocator still runs on its new paths. */
  void *q = malloc(100);
  free(q);
  if (failures == 0) printf("ok\n");
  return failures == 0 ? 0 : 1;
}
