/* SPDX-License-Identifier: MIT */
/* test_live.c — the live snapshot (SIZECLASS_LIVE, docs/live.md) and its
 * reader, scripts/sizeclass-top: the file's mode and creation (a planted
 * symbolic link is refused, never followed), its removal at exit and after
 * a SIGKILLed writer, sc_option_set, the bad value, --json against
 * sc_stats_get at the same frame, 1000 mutated snapshots fed to the reader,
 * the reader's refusals, and the live view in a real terminal (tmux, 80x24):
 * figures move, the layout holds, `q` gives the terminal back.
 *
 * The writer is tests/progs/live_frames under LD_PRELOAD. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "cr_util.h"
#include "sizeclass.h"

#define HEADER 128
#define CAPACITY ((size_t)1 << 20)
#define TOP "scripts/sizeclass-top"

/* The library's own (hidden, linked statically into this suite). */
typedef struct {
  uint64_t peak, now;
} live_rss_t;
size_t sc__report_live(char *buf, size_t cap, const live_rss_t *rss, bool *cut);

static void shm_name(char *out, size_t cap, pid_t pid) {
  snprintf(out, cap, "/dev/shm/sizeclass.%u.%d", (unsigned)getuid(), (int)pid);
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/** Wait up to ms for path to exist (exists) or to be gone (!exists). */
static bool wait_path(const char *path, bool exists, long ms) {
  struct stat st;
  for (long t = 0; t <= ms; t += 20) {
    if ((lstat(path, &st) == 0) == exists) return true;
    sleep_ms(20);
  }
  return false;
}

/* A writer: live_frames MODE SECONDS, preloaded, SIZECLASS_LIVE=live (NULL:
 * unset), its stdout on a pipe (*out), its stderr into err_path. When
 * `plant` is set, the child first makes its own snapshot name a symbolic
 * link to `plant` (the pid is the same after exec). */
static pid_t start_writer(const char *mode, const char *seconds, const char *live, int *out,
                          const char *err_path, const char *plant) {
  char prog[512], preload[600], livevar[64];
  pr_prog_path(prog, sizeof(prog), "live_frames");
  snprintf(preload, sizeof(preload), "LD_PRELOAD=%s/libsizeclass.so", pr_build_dir());
  snprintf(livevar, sizeof(livevar), "SIZECLASS_LIVE=%s", live ? live : "");
  int fds[2];
  cr_assert_eq(pipe(fds), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    if (err_path) pr_redirect(err_path, 2, true);
    if (plant) {
      char name[96];
      shm_name(name, sizeof(name), getpid());
      if (symlink(plant, name) != 0) _exit(97);
    }
    char *env[] = {preload, livevar, "PATH=/usr/bin:/bin", NULL};
    char *argv[] = {prog, (char *)mode, (char *)seconds, NULL};
    execve(prog, argv, env);
    _exit(98);
  }
  close(fds[1]);
  *out = fds[0];
  return pid;
}

/** Read the writer's stdout until `word` arrives (or it closes); into buf. */
static bool read_until(int fd, const char *word, char *buf, size_t cap) {
  size_t n = 0;
  buf[0] = 0;
  while (n + 1 < cap && strstr(buf, word) == NULL) {
    ssize_t k = read(fd, buf + n, cap - 1 - n);
    if (k <= 0) return false;
    n += (size_t)k;
    buf[n] = 0;
  }
  return strstr(buf, word) != NULL;
}

/** Stop a writer (it exits cleanly on SIGTERM) and check its file went. */
static void finish(pid_t pid, int fd) {
  char name[96];
  shm_name(name, sizeof(name), pid);
  kill(pid, SIGTERM);
  cr_expect_eq(pr_wait_child(pid, 30), 0, "the writer ends cleanly on SIGTERM");
  close(fd);
  cr_expect(wait_path(name, false, 1000), "%s left behind", name);
}

/* ---- the file ---------------------------------------------------------------------------- */

Test(live, the_file_is_0600_and_removed_after_a_clean_exit, .timeout = 120) {
  char buf[256], name[96];
  int out;
  pid_t pid = start_writer("run", "2", "1", &out, NULL, NULL);
  cr_assert(read_until(out, "ready", buf, sizeof(buf)), "writer output: %s", buf);
  shm_name(name, sizeof(name), pid);
  cr_assert(wait_path(name, true, 10000), "%s never appeared", name);
  struct stat st;
  cr_assert_eq(lstat(name, &st), 0);
  cr_expect(S_ISREG(st.st_mode), "a regular file");
  cr_expect_eq(st.st_mode & 07777, 0600, "mode %o", st.st_mode & 07777);
  cr_expect_eq(st.st_uid, getuid());
  cr_expect_eq((size_t)st.st_size, HEADER + CAPACITY);
  char head[16];
  int fd = open(name, O_RDONLY);
  cr_assert_geq(fd, 0);
  cr_expect_eq(read(fd, head, 16), 16);
  close(fd);
  cr_expect_eq(memcmp(head, "SCLIVE\r\n", 8), 0, "magic");
  cr_assert_eq(pr_wait_child(pid, 60), 0, "the writer exits cleanly");
  close(out);
  cr_expect(wait_path(name, false, 1000), "%s is still there after a clean exit", name);
}

Test(live, a_planted_symlink_is_refused_never_followed, .timeout = 120) {
  char dir[128], target[256], err[256], buf[256];
  cr_tmp_make(dir, sizeof(dir), "live-plant");
  snprintf(target, sizeof(target), "%s/target", dir);
  snprintf(err, sizeof(err), "%s/err", dir);
  /* Twice: a link to a file the attacker wants overwritten, and a dangling
   * link (O_CREAT alone would create its target). */
  for (int dangling = 0; dangling < 2; dangling++) {
    unlink(target);
    if (!dangling) {
      FILE *f = fopen(target, "w");
      cr_assert_not_null(f);
      fputs("untouched\n", f);
      fclose(f);
      chmod(target, 0644);
    }
    int out;
    pid_t pid = start_writer("hold", "0", "1", &out, err, target);
    bool ready = read_until(out, "ready", buf, sizeof(buf));
    cr_assert_eq(pr_wait_child(pid, 60), 0, "the program runs on: %s", buf);
    close(out);
    cr_assert(ready);
    char name[96];
    shm_name(name, sizeof(name), pid);
    struct stat st;
    cr_expect_eq(lstat(name, &st), 0, "the planted link stays");
    cr_expect(S_ISLNK(st.st_mode), "still a link, not replaced");
    unlink(name);
    if (dangling) {
      cr_expect_neq(stat(target, &st), 0, "the dangling link's target was created");
    } else {
      char *text = cr_slurp(target);
      cr_expect_str_eq(text, "untouched\n", "the link's target was written");
      free(text);
      cr_expect_eq(stat(target, &st), 0);
      cr_expect_eq(st.st_mode & 07777, 0644, "its mode changed");
    }
    char *e = cr_slurp(err);
    cr_expect_not_null(strstr(e,
                              "sizeclass: SIZECLASS_LIVE=\"1\": cannot create the snapshot file "
                              "(something else is at its name in /dev/shm); nothing is "
                              "published\n"),
                       "stderr: %s", e);
    free(e);
  }
  cr_tmp_remove(dir);
}

Test(live, a_sigkilled_writer_leaves_a_stale_file_that_the_next_start_and_top_remove,
     .timeout = 180) {
  char buf[256], name[96];
  /* by_top: 0 the next publisher removes it, 1 the list, 2 a view of
   * the killed process (which says it ended) */
  for (int by_top = 0; by_top < 3; by_top++) {
    int out;
    pid_t pid = start_writer("run", "20", "1", &out, NULL, NULL);
    cr_assert(read_until(out, "ready", buf, sizeof(buf)));
    shm_name(name, sizeof(name), pid);
    cr_assert(wait_path(name, true, 10000));
    kill(pid, SIGKILL);
    cr_assert_eq(pr_wait_child(pid, 30), 128 + SIGKILL);
    close(out);
    cr_assert(wait_path(name, true, 0), "SIGKILL leaves the file (nothing can remove it)");
    if (by_top == 2) {
      int rc;
      char *o = sh_run(&rc, 60, TOP " --once %d 2>&1", (int)pid);
      cr_expect_eq(rc, 1, "%s", o);
      cr_expect_not_null(strstr(o, "no process"), "%s", o);
      free(o);
    } else if (by_top) {
      int rc;
      char *o = sh_run(&rc, 60, TOP);
      cr_expect_eq(rc, 0, "%s", o);
      cr_expect_not_null(strstr(o, "sizeclass-top: removed "), "%s", o);
      cr_expect_not_null(strstr(o, " stale snapshot file"), "%s", o);
      free(o);
    } else {
      int out2;
      pid_t next = start_writer("run", "1", "1", &out2, NULL, NULL);
      cr_assert(read_until(out2, "ready", buf, sizeof(buf)));
      cr_expect_eq(pr_wait_child(next, 60), 0);
      close(out2);
    }
    cr_expect(wait_path(name, false, 2000), "the stale %s stays (%s)", name,
              by_top ? "sizeclass-top" : "the next publisher");
  }
}

Test(live, a_bad_value_warns_once_and_publishes_nothing, .timeout = 60) {
  char dir[128], err[256], buf[256], name[96];
  cr_tmp_make(dir, sizeof(dir), "live-bad");
  snprintf(err, sizeof(err), "%s/err", dir);
  int out;
  pid_t pid = start_writer("hold", "1", "banana", &out, err, NULL);
  cr_assert(read_until(out, "ready", buf, sizeof(buf)));
  shm_name(name, sizeof(name), pid);
  cr_expect(!wait_path(name, true, 500), "a bad value published");
  cr_expect_eq(pr_wait_child(pid, 60), 0);
  close(out);
  char *e = cr_slurp(err);
  cr_expect_str_eq(e,
                   "sizeclass: SIZECLASS_LIVE=\"banana\": expected on/off (1, 0, yes, no, true, "
                   "false); nothing is published\n");
  free(e);
  cr_tmp_remove(dir);
}

/* In this process (the suite links the library): on, a snapshot at a mark,
 * off. */
Test(live, sc_option_set_switches_publishing_on_and_off, .timeout = 60) {
  char name[96];
  shm_name(name, sizeof(name), getpid());
  cr_assert(!wait_path(name, true, 0), "publishing before it was asked");
  cr_assert(sc_option_set("SIZECLASS_LIVE", "1"));
  cr_assert(wait_path(name, true, 0), "on: the file is made at once");
  void *keep = malloc(100);
  sc_frame_mark();
  int fd = open(name, O_RDONLY);
  cr_assert_geq(fd, 0);
  uint64_t h[16];
  bool written = false;
  for (int i = 0; i < 100 && !written; i++) {
    cr_assert_eq(pread(fd, h, sizeof(h), 0), (ssize_t)sizeof(h));
    written = h[9] >= 1 && (h[3] & 1) == 0; /* updates, seq */
    if (!written) sleep_ms(20);
  }
  close(fd);
  cr_expect(written, "no snapshot written (updates %llu, seq %llu)", (unsigned long long)h[9],
            (unsigned long long)h[3]);
  cr_expect_eq(h[5], (uint64_t)getpid(), "the pid field");
  cr_expect_eq(h[6], (uint64_t)getuid(), "the uid field");
  cr_assert(sc_option_set("SIZECLASS_LIVE", "0"));
  cr_expect(wait_path(name, false, 0), "off: the file is removed at once");
  free(keep);
}

/* One snapshot's cost, printed (no timing assertion: the figure goes in
 * the docs); the report fits the file's capacity. */
Test(live, one_snapshot_write_costs_microseconds, .timeout = 60) {
  static char buf[1 << 20];
  void *p[400];
  for (int f = 0; f < 120; f++) {
    for (int i = 0; i < 400; i++) p[i] = malloc(16 + (size_t)(i * 5) % 1000);
    for (int i = 0; i < 400; i++) free(p[i]);
    sc_frame_mark();
  }
  sc_snapshot("bench");
  live_rss_t rss = {1, 1};
  bool cut = true;
  size_t len = 0;
  struct timespec a, b;
  const int runs = 500;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
  for (int i = 0; i < runs; i++) len = sc__report_live(buf, sizeof(buf), &rss, &cut);
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
  double us = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / runs / 1e3;
  fprintf(stderr, "live: one snapshot: %zu bytes, %.1f us of CPU time (mean of %d)\n", len, us,
          runs);
  cr_expect(!cut, "the report fits");
  cr_expect_gt(len, 1000);
  cr_expect_eq(buf[len - 2], '}', "a whole JSON document");
  cr_expect_not_null(memmem(buf, len, "\"reason\": \"live\"", 16));
  cr_expect_not_null(memmem(buf, len, "\"name\": \"bench\"", 15));
}

/* ---- the reader -------------------------------------------------------------------------- */

/* --json's figures are sc_stats_get's at the same frame: the program marks
 * a last frame, prints sc_stats_get, and sleeps without allocating. */
Test(live, json_figures_equal_sc_stats_get_at_the_same_frame, .timeout = 120) {
  char got[2048], want[1024];
  int out;
  pid_t pid = start_writer("hold", "20", "1", &out, NULL, NULL);
  cr_assert(read_until(out, "ready", want, sizeof(want)), "%s", want);
  *strstr(want, "ready") = 0;
  char *frames_line = strstr(want, "frames=");
  cr_assert_not_null(frames_line);
  long frames = atol(frames_line + 7);
  bool same_frame = false;
  int rc = 0;
  for (int attempt = 0; attempt < 30 && !same_frame; attempt++) {
    char *o = sh_run(&rc, 60,
                     TOP
                     " --json %d | python3 -c 'import json,sys\n"
                     "d=json.load(sys.stdin); t=d[\"totals\"]; f=d[\"fallback\"]\n"
                     "print(\"frames=%%d\" %% d[\"frames\"][\"frames\"])\n"
                     "for k in (\"live_blocks\",\"allocs\",\"frees\",\"fresh_carves\","
                     "\"live_block_bytes\"): print(\"%%s=%%d\" %% (k, t[k]))\n"
                     "print(\"fallback_allocs=%%d\" %% f[\"allocs\"])\n"
                     "print(\"fallback_live_blocks=%%d\" %% f[\"live_blocks\"])\n"
                     "for i,c in enumerate(d[\"classes\"]): "
                     "print(\"class%%d_live=%%d\" %% (i, c[\"live_blocks\"]))'",
                     (int)pid);
    snprintf(got, sizeof(got), "%s", o);
    free(o);
    same_frame = rc == 0 && atol(got + 7) == frames;
    if (!same_frame) sleep_ms(100);
  }
  /* --once: 80 columns by default; a wider terminal gets more columns. */
  char *narrow = sh_ok(60, "COLUMNS=80 " TOP " --once %d", (int)pid);
  char *wide = sh_ok(60, "COLUMNS=132 " TOP " --once %d", (int)pid);
  finish(pid, out);
  cr_expect_null(strstr(narrow, "capacity"), "%s", narrow);
  cr_expect_not_null(strstr(wide, "capacity"), "%s", wide);
  for (char *p = narrow; *p;) {
    size_t n = strcspn(p, "\n"), cols = 0;
    for (size_t i = 0; i < n; i++) cols += ((unsigned char)p[i] & 0xc0) != 0x80;
    cr_expect_leq(cols, 80, "%.*s", (int)n, p);
    p += n + (p[n] != 0);
  }
  free(narrow);
  free(wide);
  cr_assert(same_frame, "no snapshot of frame %ld: %s", frames, got);
  cr_expect_str_eq(got, want, "--json and sc_stats_get differ");
}

Test(live, the_reader_explains_what_it_cannot_read, .timeout = 120) {
  char preload[600];
  snprintf(preload, sizeof(preload), "%s/libsizeclass.so", pr_build_dir());
  int rc;
  /* Preloaded, not publishing: what to do. */
  char *o = sh_run(
      &rc, 60, "LD_PRELOAD=%s sleep 3 & p=$!; sleep 0.5; " TOP " $p; echo rc=$?; kill $p", preload);
  cr_expect_not_null(strstr(o,
                            "runs libsizeclass but does not publish: restart it with "
                            "SIZECLASS_LIVE=1"),
                     "%s", o);
  cr_expect_not_null(strstr(o, "rc=1"), "%s", o);
  cr_expect_null(strstr(o, "Traceback"), "%s", o);
  free(o);
  /* Without the library. */
  o = sh_run(&rc, 60, "sleep 3 & p=$!; sleep 0.3; " TOP " $p; echo rc=$?; kill $p");
  cr_expect_not_null(strstr(o, "no libsizeclass in its memory map"), "%s", o);
  free(o);
  /* No such process. */
  o = sh_run(&rc, 60, TOP " 999999999; echo rc=$?");
  cr_expect_str_eq(o, "sizeclass-top: no process 999999999\nrc=1\n");
  free(o);
  /* Another user's process. */
  if (getuid() == 0)
    o = sh_run(&rc, 60,
               "setpriv --reuid=65534 --regid=65534 --clear-groups sleep 3 & p=$!; sleep 0.5; " TOP
               " $p; echo rc=$?; kill $p");
  else
    o = sh_run(&rc, 60, TOP " 1; echo rc=$?");
  cr_expect_not_null(strstr(o, "belongs to another user"), "%s", o);
  cr_expect_not_null(strstr(o, "rc=1"), "%s", o);
  free(o);
}

/* A generator for the mutations (deterministic). */
static uint64_t next_rand(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void put_u64(unsigned char *file, size_t off, uint64_t v) { memcpy(file + off, &v, 8); }

/** Mutant k of the snapshot `orig` (n bytes, payload length len) into path. */
static void write_mutant(const char *path, const unsigned char *orig, size_t n, size_t len,
                         unsigned k, uint64_t *rng) {
  static unsigned char m[HEADER + CAPACITY];
  size_t size = HEADER + len; /* the files are cut after the payload: smaller */
  memcpy(m, orig, size);
  put_u64(m, 16, len); /* the capacity: what the file holds */
  size_t at = next_rand(rng) % size, span = 1 + next_rand(rng) % 512;
  if (at + span > size) span = size - at;
  const char *json_bytes = "{}[]\",:0123456789-.eE \\nul";
  switch (k % 14) {
    case 0: /* truncated anywhere */
      size = next_rand(rng) % size;
      break;
    case 1: /* zeroed range */
      memset(m + at, 0, span);
      break;
    case 2: /* random bytes */
      for (size_t i = 0; i < span; i++) m[at + i] = (unsigned char)next_rand(rng);
      break;
    case 3: /* all zero */
      memset(m, 0, size);
      break;
    case 4: /* bad counts: capacity */
      put_u64(m, 16, next_rand(rng) % 3 == 0 ? UINT64_MAX : next_rand(rng) % (2 * CAPACITY));
      break;
    case 5: /* bad counts: length */
      put_u64(m, 32, next_rand(rng) % 2 ? len + 1 + next_rand(rng) % 100 : next_rand(rng));
      break;
    case 6: /* version, header size, magic */
      m[8 + next_rand(rng) % 8] ^= (unsigned char)(1 + next_rand(rng) % 255);
      if (k % 3 == 0) m[next_rand(rng) % 8] ^= 0x20;
      break;
    case 7: /* a writer forever writing (seq odd), or the cut flag */
      if (k % 2)
        put_u64(m, 24, 2 * (next_rand(rng) % 1000) + 1);
      else
        put_u64(m, 80, 1);
      break;
    case 8: /* JSON: bytes swapped for JSON's own characters */
      for (unsigned i = 0; i < 1 + next_rand(rng) % 8; i++)
        m[HEADER + next_rand(rng) % len] = (unsigned char)json_bytes[next_rand(rng) % 26];
      break;
    case 9: { /* JSON: deep nesting, then whatever follows */
      size_t depth = 1 + next_rand(rng) % (len - 1);
      memset(m + HEADER, '[', depth);
      break;
    }
    case 10: { /* JSON: a number turned negative, huge or a string */
      unsigned char *d = memchr(m + HEADER + at % len, ':', len - at % len);
      if (d != NULL && d + 3 < m + HEADER + len) memcpy(d + 1, k % 2 ? "-9" : "\"x", 2);
      break;
    }
    case 11: { /* JSON: a key renamed (classes, totals, process, frames ...) */
      const char *keys[] = {"\"classes\"",     "\"totals\"",   "\"process\"",
                            "\"frames\"",      "\"fallback\"", "\"frame_timeline\"",
                            "\"live_blocks\"", "\"size\"",     "\"schema\""};
      const char *key = keys[next_rand(rng) % 9];
      unsigned char *d = memmem(m + HEADER, len, key, strlen(key));
      if (d != NULL) d[1] = 'X';
      break;
    }
    case 12: /* invalid UTF-8 */
      m[HEADER + at % len] = 0xff;
      break;
    default: /* the payload cut, the length kept */
      size = HEADER + next_rand(rng) % len;
      break;
  }
  (void)n;
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  cr_assert_geq(fd, 0, "%s", path);
  cr_assert_eq(write(fd, m, size), (ssize_t)size);
  close(fd);
}

Test(live, the_reader_gives_one_clean_line_for_1000_mutated_snapshots, .timeout = 600) {
  char dir[128], path[256], buf[1024], name[96];
  cr_tmp_make(dir, sizeof(dir), "live-fuzz");
  int out;
  pid_t pid = start_writer("hold", "20", "1", &out, NULL, NULL);
  cr_assert(read_until(out, "ready", buf, sizeof(buf)));
  shm_name(name, sizeof(name), pid);
  cr_assert(wait_path(name, true, 5000));
  sleep_ms(300); /* the snapshot of the last mark */
  /* The original: a copy taken between two of the writer's snapshots (a
   * copy that caught one being written reads as changing: take another). */
  size_t n = 0;
  unsigned char *orig = NULL;
  char *o = NULL;
  int rc = -1;
  snprintf(path, sizeof(path), "%s/orig", dir);
  for (int tries = 0; tries < 50; tries++) {
    free(orig);
    free(o);
    orig = (unsigned char *)cu_read_file(name, &n);
    cr_assert_not_null(orig);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_eq(write(fd, orig, n), (ssize_t)n);
    close(fd);
    o = sh_run(&rc, 60, TOP " --check '%s'", path);
    if (rc == 0 && strstr(o, ": ok\n") != NULL) break;
    sleep_ms(20);
  }
  finish(pid, out);
  cr_assert_eq(n, HEADER + CAPACITY);
  uint64_t len;
  memcpy(&len, orig + 32, 8);
  cr_assert(len > 100 && len < CAPACITY, "payload %llu", (unsigned long long)len);
  /* The original reads. */
  cr_assert_not_null(strstr(o, ": ok\n"), "the unmutated snapshot: %s", o);
  free(o);
  uint64_t rng = 0x5eed5eed12345ull;
  for (unsigned k = 0; k < 1000; k++) {
    snprintf(path, sizeof(path), "%s/m%04u", dir, k);
    write_mutant(path, orig, n, (size_t)len, k, &rng);
  }
  free(orig);
  o = sh_run(&rc, 540, TOP " --check '%s'/m*", dir);
  cr_assert_eq(rc, 0, "%.2000s", o);
  unsigned lines = 0, ok = 0, errors = 0;
  for (char *line = o; *line; lines++) {
    char *end = strchr(line, '\n');
    cr_assert_not_null(end);
    *end = 0;
    if (strstr(line, ": ok") != NULL && strstr(line, ": ok") + 4 == end)
      ok++;
    else if (strstr(line, ": error: ") != NULL)
      errors++;
    else
      cr_expect_fail("not one clean line: %s", line);
    line = end + 1;
  }
  cr_expect_eq(lines, 1000, "one line per file");
  cr_expect_eq(ok + errors, 1000);
  cr_expect_gt(errors, 500, "the mutations are caught (%u errors)", errors);
  cr_expect_gt(ok, 0, "some mutations leave a valid view (%u)", ok);
  fprintf(stderr, "live: 1000 mutated snapshots: %u read, %u refused with one line\n", ok, errors);
  free(o);
  /* As a user runs it: one line on stderr, exit 1, for a few of them. */
  o = sh_run(&rc, 120,
             "for f in '%s'/m0000 '%s'/m0003 '%s'/m0004 '%s'/m0007 '%s'/m0009; do " TOP
             " --once --file $f >/dev/null 2>$f.err; echo \"$? $(wc -l < $f.err)\"; "
             "grep -l Traceback $f.err; done",
             dir, dir, dir, dir, dir);
  cr_expect_str_eq(o, "1 1\n1 1\n1 1\n1 1\n1 1\n", "exit status and stderr lines: %s", o);
  free(o);
  cr_tmp_remove(dir);
}

/* A program that served blocks of one class only (the others' hit rates
 * are null) is shown. */
Test(live, a_program_that_used_one_class_is_shown, .timeout = 120) {
  char buf[256];
  int out, rc;
  pid_t pid = start_writer("one", "30", "1", &out, NULL, NULL);
  cr_assert(read_until(out, "ready", buf, sizeof(buf)));
  char name[96];
  shm_name(name, sizeof(name), pid);
  cr_assert(wait_path(name, true, 10000));
  char *o = sh_run(&rc, 60, TOP " --once %d 2>&1", (int)pid);
  cr_expect_eq(rc, 0, "%s", o);
  cr_expect_not_null(strstr(o, " 128 B"), "no 128 B row:\n%s", o);
  free(o);
  finish(pid, out);
}

/* ---- the live view, as a person sees it ------------------------------------------------- */

/** The pane's text now. */
static char *capture(const char *session) {
  int rc;
  char *o = sh_run(&rc, 30, "tmux capture-pane -p -t %s", session);
  cr_assert_eq(rc, 0, "%s", o);
  return o;
}

/** The line of text that starts with `start` (a copy, in line), or NULL. */
static bool line_with(const char *text, const char *start, char *line, size_t cap) {
  for (const char *p = text; *p;) {
    const char *end = strchr(p, '\n');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (strncmp(p, start, strlen(start)) == 0) {
      snprintf(line, cap, "%.*s", (int)n, p);
      return true;
    }
    if (!end) break;
    p = end + 1;
  }
  return false;
}

static void check_layout(const char *screen, pid_t pid) {
  char line[512], want[64];
  unsigned rows = 0;
  for (const char *p = screen; *p; rows++) {
    const char *end = strchr(p, '\n');
    size_t n = end ? (size_t)(end - p) : strlen(p), cols = 0;
    for (size_t i = 0; i < n; i++) cols += ((unsigned char)p[i] & 0xc0) != 0x80; /* UTF-8 */
    cr_expect_leq(cols, 80, "a line over 80 columns: %.*s", (int)n, p);
    if (!end) break;
    p = end + 1;
  }
  cr_expect_leq(rows, 24, "more than 24 rows");
  snprintf(want, sizeof(want), "live_frames  pid %d  up ", (int)pid);
  cr_expect(line_with(screen, want, line, sizeof(line)), "no header line:\n%s", screen);
  cr_expect(line_with(screen, "allocs/s ", line, sizeof(line)) && strstr(line, " fps ") != NULL,
            "no rates line:\n%s", screen);
  cr_expect(line_with(screen, " class     live     peak", line, sizeof(line)),
            "no class header:\n%s", screen);
  static const char *const classes[] = {"  16 B", "  32 B", "  64 B", " 128 B",
                                        " 256 B", " 512 B", "1024 B", " total"};
  for (unsigned i = 0; i < 8; i++)
    cr_expect(line_with(screen, classes[i], line, sizeof(line)), "no %s row:\n%s", classes[i],
              screen);
  cr_expect(line_with(screen, "allocs/frame ", line, sizeof(line)), "no sparkline:\n%s", screen);
  cr_expect_not_null(strstr(screen, "q quit"), "no key line:\n%s", screen);
}

Test(live, the_live_view_in_tmux_moves_holds_80x24_and_q_restores_the_terminal, .timeout = 180) {
  int rc;
  char *o = sh_run(&rc, 10, "command -v tmux");
  cr_assert_eq(rc, 0, "tmux is a test dependency (scripts/ensure-deps.sh)");
  free(o);
  char buf[256], session[64], line_a[512], line_b[512];
  int out;
  pid_t pid = start_writer("run", "15", "1", &out, NULL, NULL);
  cr_assert(read_until(out, "ready", buf, sizeof(buf)));
  snprintf(session, sizeof(session), "sc-top-%d", (int)getpid());
  char cwd[1024], dir[128];
  cr_assert_not_null(getcwd(cwd, sizeof(cwd)));
  cr_tmp_make(dir, sizeof(dir), "live-tmux"); /* the shell's directory: `w` writes there */
  free(sh_ok(30,
             "tmux kill-session -t %s 2>/dev/null; tmux new-session -d -x 80 -y 24 -s %s "
             "\"cd '%s' && env -u TMUX PS1='TOPTEST$ ' TERM=screen bash --norc --noprofile\"",
             session, session, dir));
  sleep_ms(500);
  free(sh_ok(30, "tmux send-keys -t %s 'stty -g > /tmp/%s.before' Enter", session, session));
  sleep_ms(300);
  free(sh_ok(30, "tmux send-keys -t %s '%s/" TOP " %d' Enter", session, cwd, (int)pid));
  sleep_ms(2000);
  char *a = capture(session);
  sleep_ms(1000);
  char *b = capture(session);
  check_layout(a, pid);
  check_layout(b, pid);
  /* The figures moved: the run time and the frame counter. */
  cr_expect(line_with(a, "allocs/s ", line_a, sizeof(line_a)));
  cr_expect(line_with(b, "allocs/s ", line_b, sizeof(line_b)));
  cr_expect_str_neq(line_a, line_b, "the rates line did not change in a second");
  char *fa = strstr(line_a, "frame "), *fb = strstr(line_b, "frame ");
  cr_assert(fa != NULL && fb != NULL, "%s / %s", line_a, line_b);
  cr_expect_gt(atol(fb + 6), atol(fa + 6), "the frame counter did not advance");
  /* w: the snapshot on the screen as a report that sizeclass-report renders. */
  free(sh_ok(30, "tmux send-keys -t %s w", session));
  sleep_ms(800);
  char *w = capture(session), report[300];
  snprintf(report, sizeof(report), "wrote %s/sizeclass-live.%d.1.json", dir, (int)pid);
  cr_expect_not_null(strstr(w, report), "no '%s' line:\n%s", report, w);
  free(w);
  free(sh_ok(60, "scripts/sizeclass-report html '%s/sizeclass-live.%d.1.json' -o '%s/page.html'",
             dir, (int)pid, dir));
  /* q: back to the shell, the terminal as it was. */
  free(sh_ok(30, "tmux send-keys -t %s q", session));
  sleep_ms(800);
  char *alt = sh_ok(30, "tmux display -p -t %s '#{alternate_on}'", session);
  cr_expect_str_eq(alt, "0\n", "still on the alternate screen");
  free(alt);
  free(sh_ok(30, "tmux send-keys -t %s 'stty -g > /tmp/%s.after; echo DONE$((1+1))' Enter", session,
             session));
  sleep_ms(800);
  char *c = capture(session);
  cr_expect_not_null(strstr(c, "DONE2"), "the shell does not answer after q:\n%s", c);
  cr_expect_null(strstr(c, " class     live"), "the view is still on the screen:\n%s", c);
  char *last = strstr(c, "DONE2\n");
  cr_expect(last != NULL && strncmp(last + 6, "TOPTEST$", 8) == 0, "no prompt after q:\n%s", c);
  o = sh_run(&rc, 30, "cmp /tmp/%s.before /tmp/%s.after && echo same", session, session);
  cr_expect_str_eq(o, "same\n", "the terminal settings changed: %s", o);
  free(o);
  free(sh_run(&rc, 30, "tmux kill-session -t %s; rm -f /tmp/%s.before /tmp/%s.after", session,
              session, session));
  free(a);
  free(b);
  free(c);
  finish(pid, out);
  cr_tmp_remove(dir);
}

/* ---- named snapshots ------------------------------------------------------------------------ */

/* sc_snapshot: the last 32 kept, oldest first, each with the figures
 * sc_stats_get gave then; names cut to 63 bytes and escaped; a NULL or
 * empty name refused. The JSON is read by Python's parser. */
Test(live, named_snapshots_keep_the_last_32_with_their_figures_and_escaped_names, .timeout = 60) {
  char dir[128], path[256];
  cr_tmp_make(dir, sizeof(dir), "live-named");
  errno = 0;
  cr_expect(!sc_snapshot(NULL));
  cr_expect_eq(errno, EINVAL);
  errno = 0;
  cr_expect(!sc_snapshot(""));
  cr_expect_eq(errno, EINVAL);
  void *keep[40];
  uint64_t live[40];
  for (int i = 0; i < 40; i++) {
    char name[128];
    keep[i] = malloc(64);
    if (i == 38)
      snprintf(name, sizeof(name), "quote\" back\\ tab\t bell\a %d", i);
    else if (i == 39)
      memset(name, 'x', 100), name[100] = 0;
    else
      snprintf(name, sizeof(name), "snap_%d", i);
    struct sc_stats st;
    sc_stats_get(&st);
    live[i] = st.totals.live_blocks;
    cr_assert(sc_snapshot(name));
  }
  snprintf(path, sizeof(path), "%s/r.json", dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  cr_assert_geq(fd, 0);
  sc_stats_print(fd, SC_STATS_JSON);
  close(fd);
  int rc;
  char *o = sh_run(&rc, 60,
                   "python3 -c 'import json,sys\n"
                   "d=json.load(open(sys.argv[1])); s=d[\"snapshots\"]\n"
                   "print(len(s)); print(s[0][\"name\"]); print(repr(s[-2][\"name\"]))\n"
                   "print(s[-1][\"name\"])\n"
                   "print(\" \".join(str(x[\"totals\"][\"live_blocks\"]) for x in s))\n"
                   "print(sorted(s[0].keys()))' '%s'",
                   path);
  char want[2048];
  int n =
      snprintf(want, sizeof(want), "32\nsnap_8\n'quote\" back\\\\ tab? bell? 38'\n%.63s\n",
               "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
  for (int i = 8; i < 40; i++)
    n += snprintf(want + n, sizeof(want) - (size_t)n, "%llu%s", (unsigned long long)live[i],
                  i < 39 ? " " : "\n");
  snprintf(want + n, sizeof(want) - (size_t)n,
           "['classes', 'exact_statistics', 'fallback', 'frame', 'name', 'tags', 'threads', "
           "'totals', 'wall_ns']\n");
  cr_expect_str_eq(o, want);
  free(o);
  /* The text report: the table, control characters shown as '?'. */
  snprintf(path, sizeof(path), "%s/r.txt", dir);
  fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  sc_stats_print(fd, SC_STATS_TEXT);
  close(fd);
  char *text = cr_slurp(path);
  cr_expect_not_null(strstr(text, "named snapshots (sc_snapshot"), "%s", text);
  cr_expect_not_null(strstr(text, " snap_37  "), "a recent snapshot is not listed:\n%s", text);
  cr_expect_null(strstr(text, "\a"), "a control character reached the text report");
  cr_expect_null(strstr(text, "snap_7 "), "an old snapshot is still listed");
  free(text);
  for (int i = 0; i < 40; i++) free(keep[i]);
  cr_tmp_remove(dir);
}
