/* SPDX-License-Identifier: MIT */
/* test_core_preload.c — real programs under LD_PRELOAD=$SC_BUILD/libsizeclass.so,
 * each checked for the right output against a run on glibc's malloc: a
 * Python script heavy on objects, sort and gzip on a generated file, a
 * multithreaded C program, a C++ program churning containers across
 * threads, allocation before our constructor, under a low address-space
 * limit, and under valgrind (callgrind and memcheck). Programs that can say
 * so print malloc_usable_size(malloc(40)), 64 when the blocks are ours. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cr_util.h"

/** Path of helper program `name` in the build tree (asserting it exists). */
static void prog_path(char *out, size_t cap, const char *name) {
  char rel[256];
  snprintf(rel, sizeof(rel), "tests/progs/%s", name);
  cu_build_path(out, cap, rel);
  cr_assert_eq(access(out, X_OK), 0, "%s missing: build it with `make test`", out);
}

/** Run argv with opts; assert it finished with exit code `want`. */
static void run_ok(pr_result_t *r, char *const argv[], const pr_opts_t *o, int want) {
  cr_assert(pr_run(r, argv, o), "could not start %s", argv[0]);
  cr_assert(!r->timed_out, "%s%s timed out; stderr: %s", o->preload ? "preloaded " : "", argv[0],
            r->err);
  cr_assert_eq(r->exit_code, want, "%s%s exited %d; stderr: %s", o->preload ? "preloaded " : "",
               argv[0], r->exit_code, r->err);
}

/** Run program `name`, without arguments, preloaded (o's other options
 * apply); it must exit 0. */
static void run_preloaded_ok(pr_result_t *r, const char *name, pr_opts_t o) {
  char path[4096];
  prog_path(path, sizeof(path), name);
  char *argv[] = {path, NULL};
  o.preload = true;
  run_ok(r, argv, &o, 0);
}

/** The text after the first line (the usable40 probe). */
static const char *after_first_line(const char *s) {
  const char *nl = strchr(s, '\n');
  return nl != NULL ? nl + 1 : "";
}

/** Run program `name` with args natively and preloaded; both must succeed
 * with the same output apart from the usable40 probe, which must be 64 under
 * libsizeclass. */
static void compare_native_and_preloaded(const char *name, char *arg1, char *arg2, int timeout_s) {
  char path[4096];
  prog_path(path, sizeof(path), name);
  char *argv[] = {path, arg1, arg2, NULL};
  pr_opts_t native = {.timeout_s = timeout_s};
  pr_opts_t pre = {.preload = true, .timeout_s = timeout_s};
  pr_result_t a, b;
  run_ok(&a, argv, &native, 0);
  run_ok(&b, argv, &pre, 0);
  cr_assert(strncmp(b.out, "usable40=64\n", 12) == 0,
            "%s under LD_PRELOAD does not use our blocks: %.40s", name, b.out);
  cr_assert(strlen(after_first_line(b.out)) > 0, "%s printed no result", name);
  cr_assert_str_eq(after_first_line(b.out), after_first_line(a.out),
                   "%s: preloaded output differs from glibc's", name);
  free(a.out);
  free(b.out);
}

/* ---- scratch directory --------------------------------------------------- */

static char tmpdir[64];

static void make_tmpdir(void) { cr_tmp_make(tmpdir, sizeof(tmpdir), "core"); }

static void remove_tmpdir(void) { cr_tmp_remove(tmpdir); }

static void tmp_path(char *out, size_t cap, const char *name) {
  snprintf(out, cap, "%s/%s", tmpdir, name);
}

/** A deterministic text file of `lines` lines of pseudo-random words. */
static void write_words(const char *path, int lines) {
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  uint64_t rng = 2024;
  for (int i = 0; i < lines; i++) {
    int words = 1 + (int)(cu_rand(&rng) % 6);
    for (int w = 0; w < words; w++) {
      int len = 1 + (int)(cu_rand(&rng) % 12);
      for (int k = 0; k < len; k++) fputc('a' + (int)(cu_rand(&rng) % 26), f);
      fputc(w + 1 < words ? ' ' : '\n', f);
    }
  }
  fclose(f);
}

/* ---- tests ----------------------------------------------------------------- */

Test(core_preload, preload_replaces_malloc) {
  char path[4096];
  prog_path(path, sizeof(path), "core_mt");
  char *argv[] = {path, "1", "10", NULL};
  pr_opts_t native = {.timeout_s = 30}, pre = {.preload = true, .timeout_s = 30};
  pr_result_t a, b;
  run_ok(&a, argv, &native, 0);
  run_ok(&b, argv, &pre, 0);
  cr_assert(strncmp(b.out, "usable40=64\n", 12) == 0, "preloaded: %.30s", b.out);
  cr_assert(strncmp(a.out, "usable40=64\n", 12) != 0,
            "glibc alone also reports 64: the probe cannot tell the allocators apart");
  free(a.out);
  free(b.out);
  /* Any program: the library is mapped into a preloaded grep. */
  char *grep[] = {"grep", "-c", "libsizeclass", "/proc/self/maps", NULL};
  run_ok(&b, grep, &pre, 0);
  cr_assert_gt(atoi(b.out), 0, "libsizeclass.so not mapped in a preloaded process");
  free(b.out);
}

static const char python_script[] =
    "import collections, ctypes, json, zlib\n"
    "libc = ctypes.CDLL(None)\n"
    "libc.malloc.restype = ctypes.c_void_p\n"
    "libc.malloc.argtypes = [ctypes.c_size_t]\n"
    "libc.malloc_usable_size.restype = ctypes.c_size_t\n"
    "libc.malloc_usable_size.argtypes = [ctypes.c_void_p]\n"
    "libc.free.argtypes = [ctypes.c_void_p]\n"
    "p = libc.malloc(40)\n"
    "print('usable40=%d' % libc.malloc_usable_size(p))\n"
    "libc.free(p)\n"
    "class Node:\n"
    "    def __init__(self, k, parent):\n"
    "        self.k, self.parent, self.kids, self.tag = k, parent, [], 'n%d' % k\n"
    "nodes = [Node(0, None)]\n"
    "for i in range(1, 60000):\n"
    "    n = Node(i, nodes[(i * 7919) % len(nodes)])\n"
    "    n.parent.kids.append(n)\n"
    "    nodes.append(n)\n"
    "depth = collections.Counter()\n"
    "for n in nodes:\n"
    "    d, q = 0, n\n"
    "    while q.parent is not None:\n"
    "        q, d = q.parent, d + 1\n"
    "    depth[d] += 1\n"
    "print(len(nodes), sum(len(n.kids) for n in nodes), sorted(depth.items()))\n"
    "table = {'k%d' % i: [i, str(i) * 3, {'x': i % 7, 'y': (i, -i)}] for i in range(80000)}\n"
    "blob = json.dumps(table, sort_keys=True)\n"
    "back = json.loads(blob)\n"
    "back2 = {k: [v[0], v[1], {'x': v[2]['x'], 'y': tuple(v[2]['y'])}] for k, v in back.items()}\n"
    "words = sorted(set(w for w in blob.replace('\"', ' ').replace(',', ' ').split() if "
    "w.isalnum()))\n"
    "print(len(blob), zlib.crc32(blob.encode()), back2 == table, len(words), words[:3])\n"
    "s = ''.join(str(i % 10) for i in range(200000))\n"
    "parts = [s[i:i + 37] for i in range(0, len(s), 37)]\n"
    "print(len(parts), zlib.crc32(''.join(reversed(parts)).encode()))\n"
    "del nodes, table, back, back2, words, parts\n"
    "print('done')\n";

Test(core_preload, python_object_heavy_script, .timeout = 180) {
  char *argv[] = {"python3", "-c", (char *)python_script, NULL};
  /* PYTHONMALLOC=malloc: every Python object goes through malloc. */
  const char *env[] = {"PYTHONMALLOC=malloc", "PYTHONHASHSEED=0", NULL};
  pr_opts_t native = {.timeout_s = 90, .env = env};
  pr_opts_t pre = {.preload = true, .timeout_s = 90, .env = env};
  pr_result_t a, b;
  run_ok(&a, argv, &native, 0);
  run_ok(&b, argv, &pre, 0);
  cr_assert(strncmp(b.out, "usable40=64\n", 12) == 0, "python's malloc is not ours: %.40s", b.out);
  cr_assert(strstr(b.out, "\ndone\n") != NULL, "script did not finish: %s", b.out);
  cr_assert(strstr(b.out, " True ") != NULL, "JSON round trip failed: %s", b.out);
  cr_assert_str_eq(after_first_line(b.out), after_first_line(a.out));
  free(a.out);
  free(b.out);
}

Test(core_preload, sort_on_generated_file, .timeout = 120) {
  make_tmpdir();
  char in[128], out_pre[128], out_native[128];
  tmp_path(in, sizeof(in), "words.txt");
  tmp_path(out_pre, sizeof(out_pre), "sorted-pre.txt");
  tmp_path(out_native, sizeof(out_native), "sorted-native.txt");
  write_words(in, 150000);
  /* A small buffer and two threads: sort merges temporary runs. */
  char *argv[] = {"sort", "-S", "2M", "--parallel=2", "-T", tmpdir, in, NULL};
  const char *env[] = {"LC_ALL=C", NULL};
  pr_opts_t pre = {.preload = true, .timeout_s = 60, .stdout_path = out_pre, .env = env};
  pr_opts_t native = {.timeout_s = 60, .stdout_path = out_native, .env = env};
  pr_result_t r;
  run_ok(&r, argv, &pre, 0);
  free(r.out);
  run_ok(&r, argv, &native, 0);
  free(r.out);
  size_t la = 0, lb = 0, lin = 0;
  char *a = cu_read_file(out_pre, &la);
  char *b = cu_read_file(out_native, &lb);
  char *orig = cu_read_file(in, &lin);
  cr_assert_not_null(a);
  cr_assert_not_null(b);
  cr_assert_eq(la, lin, "sorted output has %zu bytes, input %zu", la, lin);
  cr_assert(la == lb && memcmp(a, b, la) == 0, "preloaded sort output differs from glibc's");
  /* And it is sorted. */
  const char *prev = a;
  for (char *p = strchr(a, '\n'); p != NULL && p[1] != 0; p = strchr(p + 1, '\n')) {
    *p = 0;
    cr_assert(strcmp(prev, p + 1) <= 0, "not sorted at \"%s\"", prev);
    prev = p + 1;
  }
  free(a);
  free(b);
  free(orig);
  remove_tmpdir();
}

Test(core_preload, gzip_round_trip, .timeout = 120) {
  make_tmpdir();
  char in[128], gz_pre[128], gz_native[128], back[128];
  tmp_path(in, sizeof(in), "words.txt");
  tmp_path(gz_pre, sizeof(gz_pre), "pre.gz");
  tmp_path(gz_native, sizeof(gz_native), "native.gz");
  tmp_path(back, sizeof(back), "back.txt");
  write_words(in, 150000);
  char *zip[] = {"gzip", "-c", "-n", "-6", in, NULL};
  char *unzip[] = {"gzip", "-d", "-c", gz_pre, NULL};
  pr_opts_t zpre = {.preload = true, .timeout_s = 60, .stdout_path = gz_pre};
  pr_opts_t znat = {.timeout_s = 60, .stdout_path = gz_native};
  pr_opts_t upre = {.preload = true, .timeout_s = 60, .stdout_path = back};
  pr_result_t r;
  run_ok(&r, zip, &zpre, 0);
  free(r.out);
  run_ok(&r, zip, &znat, 0);
  free(r.out);
  run_ok(&r, unzip, &upre, 0);
  free(r.out);
  size_t lo = 0, lb = 0, lp = 0, ln = 0;
  char *orig = cu_read_file(in, &lo);
  char *round = cu_read_file(back, &lb);
  char *zp = cu_read_file(gz_pre, &lp);
  char *zn = cu_read_file(gz_native, &ln);
  cr_assert(lo > 0 && lo == lb && memcmp(orig, round, lo) == 0, "gzip round trip changed the file");
  cr_assert(lp < lo, "no compression happened");
  cr_assert(lp == ln && memcmp(zp, zn, lp) == 0, "preloaded gzip output differs from glibc's");
  free(orig);
  free(round);
  free(zp);
  free(zn);
  remove_tmpdir();
}

Test(core_preload, multithreaded_c_program, .timeout = 120) {
  compare_native_and_preloaded("core_mt", "4", "50000", 60);
}

Test(core_preload, cxx_containers_across_threads, .timeout = 120) {
  compare_native_and_preloaded("core_cxx", "4", "1500", 60);
}

Test(core_preload, malloc_before_our_constructor, .timeout = 120) {
  /* Several runs: the early threads race through initialisation. */
  for (int i = 0; i < 10; i++) {
    pr_result_t r;
    run_preloaded_ok(&r, "core_ctor", (pr_opts_t){.timeout_s = 30});
    cr_assert_str_eq(r.out, "usable40=64\norder=preinit,ctor,main\nearly=ok threads=ok dl=ok\n");
    free(r.out);
  }
}

/* A program linked with another allocator (redis links jemalloc): glibc's
 * blocks must be measured and trimmed by glibc, not by the next
 * malloc_usable_size in the search order (which aborts here). */
Test(core_preload, program_linked_with_another_allocator, .timeout = 60) {
  pr_result_t r;
  run_preloaded_ok(&r, "other_alloc_user", (pr_opts_t){.timeout_s = 30});
  cr_assert_str_eq(r.out, "ok\n");
  free(r.out);
}

/* C++: operator new and delete are the library's own (shim/cxx.c), every
 * form serves our blocks with the right alignment, and what we cannot serve
 * takes the language's way (new_handler, bad_alloc, nullptr for nothrow). */
Test(core_preload, cxx_operators_new_and_delete, .timeout = 60) {
  pr_result_t r;
  run_preloaded_ok(&r, "cxx_new", (pr_opts_t){.timeout_s = 30});
  cr_assert_null(strstr(r.out, "FAILED"), "%s", r.out);
  cr_assert_not_null(strstr(r.out, "operator new is libsizeclass's ok\n"), "%s", r.out);
  cr_assert_not_null(strstr(r.out, "new_handler called, then bad_alloc ok\ndone\n"), "%s", r.out);
  free(r.out);
}

Test(core_preload, low_address_space_limit, .timeout = 120) {
  pr_result_t r;
  /* ulimit -v 96 MiB: well below one big reservation, room for a few segments. */
  run_preloaded_ok(&r, "core_oom", (pr_opts_t){.timeout_s = 60, .rlimit_as = (size_t)96 << 20});
  cr_assert_str_eq(r.out, "usable40=64\nexhausted=yes enomem=yes intact=yes again=yes huge=yes\n");
  free(r.out);
}

/** Run core_mt under valgrind's `tool`, preloaded; compare with a native run. */
static void run_under_valgrind(const char *tool) {
  char path[4096], log_path[128], logopt[160], toolopt[64], cgopt[160];
  prog_path(path, sizeof(path), "core_mt");
  make_tmpdir();
  tmp_path(log_path, sizeof(log_path), "valgrind.log");
  snprintf(logopt, sizeof(logopt), "--log-file=%s", log_path);
  snprintf(toolopt, sizeof(toolopt), "--tool=%s", tool);
  snprintf(cgopt, sizeof(cgopt), "--callgrind-out-file=%s/callgrind.out", tmpdir);
  char *argv[16];
  size_t k = 0;
  argv[k++] = "valgrind";
  argv[k++] = toolopt;
  argv[k++] = logopt;
  if (strcmp(tool, "callgrind") == 0) {
    argv[k++] = cgopt;
  } else {
    /* nouserintercepts: memcheck keeps its hands off our malloc (it still
     * watches glibc's, which serves our large blocks); any error it finds
     * makes the run exit 97. */
    argv[k++] = "--soname-synonyms=somalloc=nouserintercepts";
    argv[k++] = "--error-exitcode=97";
    argv[k++] = "--leak-check=no";
  }
  argv[k++] = path;
  argv[k++] = "2";
  argv[k++] = "3000";
  argv[k] = NULL;
  char *native_argv[] = {path, "2", "3000", NULL};
  pr_opts_t native = {.timeout_s = 30};
  pr_opts_t pre = {.preload = true, .timeout_s = 150};
  pr_result_t a, b;
  run_ok(&a, native_argv, &native, 0);
  cr_assert(pr_run(&b, argv, &pre), "could not start valgrind");
  cr_assert(!b.timed_out, "valgrind --tool=%s timed out", tool);
  char *log = cu_read_file(log_path, NULL);
  cr_assert_eq(b.exit_code, 0, "valgrind --tool=%s exited %d; log:\n%s", tool, b.exit_code,
               log != NULL ? log : b.err);
  cr_assert(strncmp(b.out, "usable40=64\n", 12) == 0,
            "under valgrind --tool=%s the preloaded allocator was not used: %.40s", tool, b.out);
  cr_assert_str_eq(after_first_line(b.out), after_first_line(a.out));
  free(log);
  free(a.out);
  free(b.out);
  remove_tmpdir();
}

Test(core_preload, valgrind_callgrind_runs_preloaded_program, .timeout = 200) {
  run_under_valgrind("callgrind");
}

Test(core_preload, valgrind_memcheck_runs_preloaded_program, .timeout = 200) {
  run_under_valgrind("memcheck");
}
