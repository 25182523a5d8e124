/* SPDX-License-Identifier: MIT */
/* test_hooks_page.c — the function pointers malloc and free jump through
 * (sc__alloc_noted_fn, sc__free_other_fn) and the feature table (sc__ops)
 * live alone in a page that is read-only once the library has started
 * (core/hooks.h, docs/hardening.md): one arbitrary write cannot redirect
 * the next malloc or free. In this process (linked with libsizeclass.a,
 * started: every feature off) and in tests/progs/hooks_page, after a
 * feature is turned on at run time. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/hooks.h"
#include "cr_util.h"
#include "maps.h"

/* Must hold: the struct starts a page and fills whole pages, so no other
 * variable shares a page with it (an mprotect would take that one too). */
Test(hooks_page, fills_whole_pages) {
  cr_assert_eq((uintptr_t)&sc__hooks_page % 4096, 0, "at %p", (void *)&sc__hooks_page);
  cr_assert_eq(sizeof(sc__hooks_page) % 4096, 0, "%zu bytes", sizeof(sc__hooks_page));
  /* The names the paths use are its members. */
  cr_assert_eq((void *)&sc__alloc_noted_fn, (void *)&sc__hooks_page.alloc_noted_fn);
  cr_assert_eq((void *)&sc__ops, (void *)&sc__hooks_page.ops);
}

/* Must hold: after startup the page's mapping is read-only, and it holds
 * the pointers the fast paths use (set, not zero). */
Test(hooks_page, read_only_after_startup) {
  void *p = malloc(24); /* started, surely */
  free(p);
  char perms[5] = "";
  cr_assert(maps_perms_of(&sc__hooks_page, perms), "no mapping holds %p", (void *)&sc__hooks_page);
  cr_expect_eq(perms[0], 'r', "perms %s", perms);
  cr_expect_eq(perms[1], '-', "the page is writable: perms %s", perms);
  cr_expect(sc__hooks_page.sealed);
  cr_expect_not_null(sc__free_other_fn);
  cr_expect_not_null(sc__alloc_noted_fn);
  cr_expect_not_null(sc__ops.lifecycle.fork);
}

/** Fork a child that stores NULL through slot, the way an attacker's one
 * write would: how it ended (exit code, or 128 + signal). */
static int child_writes(void *volatile *slot) {
  fflush(NULL);
  pid_t pid = fork();
  cr_assert_geq(pid, 0, "fork");
  if (pid == 0) {
    signal(SIGSEGV, SIG_DFL); /* a sanitizer's or the library's handler would exit otherwise */
    *slot = NULL;
    _exit(0); /* the write went through */
  }
  return pr_wait_child(pid, 30);
}

/* Must fail: one write to the free target after startup dies of SIGSEGV
 * (an attacker's redirect of the next free), and so does one to a
 * member of the feature table and to the malloc target. */
Test(hooks_page, write_faults_after_startup) {
  free(malloc(24));
  cr_expect_eq(child_writes((void *volatile *)&sc__free_other_fn), 128 + SIGSEGV,
               "writing sc__free_other_fn did not fault");
  cr_expect_eq(child_writes((void *volatile *)&sc__alloc_noted_fn), 128 + SIGSEGV,
               "writing sc__alloc_noted_fn did not fault");
  cr_expect_eq(child_writes((void *volatile *)&sc__ops.block.keep_freed), 128 + SIGSEGV,
               "writing sc__ops.block.keep_freed did not fault");
  /* The pointers bound after the decision: glibc's malloc_trim (free's
   * paced trim calls it) and malloc_usable_size. */
  cr_expect_not_null(sc__hooks_page.sys_trim_fn, "glibc's malloc_trim was not bound");
  cr_expect_eq(child_writes((void *volatile *)&sc__hooks_page.sys_trim_fn), 128 + SIGSEGV,
               "writing the malloc_trim pointer did not fault");
  cr_expect_eq(child_writes((void *volatile *)&sc__hooks_page.sys_usable_size_fn), 128 + SIGSEGV,
               "writing the malloc_usable_size pointer did not fault");
  cr_expect_eq(child_writes((void *volatile *)&sc__hooks_page.last_words_fn), 128 + SIGSEGV,
               "writing the report's last-words pointer did not fault");
  /* glibc's allocator, the system route's (bound by the library's start):
   * glibc's own functions, neither the first entries nor the library's
   * __libc_* names. */
  free(malloc(5000));
  extern void __libc_free(void *p);
  cr_expect_neq((void *)sc__hooks_page.libc.free_fn, (void *)sc__libc_first_free,
                "glibc's allocator was not bound");
  cr_expect_neq((void *)sc__hooks_page.libc.free_fn, (void *)__libc_free,
                "the system route's free is the library's own");
  cr_expect_neq((void *)sc__hooks_page.libc.malloc_fn, (void *)malloc,
                "the system route's malloc is the library's own");
  cr_expect_eq(child_writes((void *volatile *)&sc__hooks_page.libc.free_fn), 128 + SIGSEGV,
               "writing glibc's free pointer did not fault");
}

/** Run tests/progs/hooks_page `mode` with env: it prints "ok" when the
 * targets changed and the page is read-only again. */
static void run_prog(const char *mode, const char *const *env) {
  char path[512];
  pr_prog_path(path, sizeof(path), "hooks_page");
  char *argv[] = {path, (char *)mode, NULL};
  pr_opts_t o = {.drop_sizeclass_env = true, .env = env, .timeout_s = 60};
  pr_result_t r;
  cr_assert(pr_run(&r, argv, &o), "hooks_page did not run");
  cr_expect_eq(r.exit_code, 0, "%s: exit %d: %s%s", mode, r.exit_code, r.out, r.err);
  cr_expect_str_eq(r.out, "ok\n", "%s: %s%s", mode, r.out, r.err);
  free(r.out);
}

/* Must hold: tags turned on at run time (sc_tag, exact statistics on)
 * rewrite both targets, and leave the page read-only: a write faults. */
Test(hooks_page, read_only_after_tags_at_run_time) {
  const char *env[] = {"SIZECLASS_STATS_EXACT=1", NULL};
  run_prog("tags", env);
}

/* Must hold: the same after sc_stats_enable_exact (the features'
 * decision again, at run time). */
Test(hooks_page, read_only_after_enable_exact) { run_prog("enable", NULL); }
