/* SPDX-License-Identifier: MIT */
/* report_twin.c — one process, its report in both forms, for
 * tests/test_report.c: scripts/sizeclass-report text renders the JSON
 * form, and the result must be the library's own text form of the same
 * moment, byte for byte. Runs under LD_PRELOAD=libsizeclass.so with the
 * SIZECLASS_* variables the test chooses; output through write(2) only.
 *
 *   report_twin DIR [frames]
 *
 * The workload (every figure of the report gets something to show):
 *   site_small   16 frames of 30 x malloc(12) (class 16), freed at once;
 *                with `frames`, each frame is closed by sc_frame_mark
 *   site_mid     300 x malloc(40) (class 64), 100 left live; frame 17
 *                carves them after the warm-up
 *   tie_a/tie_b  3 x malloc(24) each (class 32), all left live: the same
 *                live blocks and wasted bytes from two sites (a tie in
 *                both rankings)
 *   site_big     40 x malloc(700) (class 1024), 10 left live
 *   site_sys     3 x malloc(5000) (the system allocator), 1 left live
 *
 * Then the report, through sc_stats_print: once in each form into
 * /dev/null (the report's own first mappings reach the peak RSS), then
 * five attempts, each DIR/N.a.json, DIR/N.txt, DIR/N.b.json written one
 * right after the other. Nothing is allocated between them, so an attempt
 * whose two JSON forms agree (process times and RSS included) brackets a
 * text form of exactly those figures. Prints "done". */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *volatile sink;
static void *keep[256];
static unsigned kept;

static void say(const char *s) { (void)!write(1, s, strlen(s)); }

__attribute__((noinline)) static void site_small(void) {
  void *p[30];
  for (int i = 0; i < 30; i++) sink = p[i] = malloc(12);
  for (int i = 0; i < 30; i++) free(p[i]);
}

__attribute__((noinline)) static void site_mid(void) {
  static void *p[300];
  for (int i = 0; i < 300; i++) p[i] = malloc(40);
  for (int i = 0; i < 200; i++) free(p[i]);
  for (int i = 200; i < 300; i++) keep[kept++ % 256] = p[i];
}

__attribute__((noinline)) static void tie_a(void) {
  for (int i = 0; i < 3; i++) keep[kept++ % 256] = malloc(24);
}

__attribute__((noinline)) static void tie_b(void) {
  for (int i = 0; i < 3; i++) keep[kept++ % 256] = malloc(24);
}

__attribute__((noinline)) static void site_big(void) {
  static void *p[40];
  for (int i = 0; i < 40; i++) p[i] = malloc(700);
  for (int i = 0; i < 30; i++) free(p[i]);
  for (int i = 30; i < 40; i++) keep[kept++ % 256] = p[i];
}

__attribute__((noinline)) static void site_sys(void) {
  void *p[3];
  for (int i = 0; i < 3; i++) sink = p[i] = malloc(5000);
  free(p[0]);
  free(p[1]);
  sink = p[2];
}

static void print_to(void (*print)(int, int), const char *path, int format) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) _exit(5);
  print(fd, format);
  close(fd);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    say("usage: report_twin DIR [frames]\n");
    return 2;
  }
  void (*print)(int, int) = (void (*)(int, int))dlsym(RTLD_DEFAULT, "sc_stats_print");
  void (*mark)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "sc_frame_mark");
  if (print == NULL || mark == NULL) {
    say("report_twin: run it with libsizeclass preloaded\n");
    return 4;
  }
  bool frames = argc > 2 && strcmp(argv[2], "frames") == 0;
  for (int f = 0; f < 16; f++) {
    site_small();
    if (frames) mark();
  }
  site_mid();
  if (frames) mark();
  tie_a();
  tie_b();
  site_big();
  site_sys();
  sink = keep[0];

  print_to(print, "/dev/null", 1); /* SC_STATS_JSON */
  print_to(print, "/dev/null", 0); /* SC_STATS_TEXT */
  char path[4096];
  for (int n = 0; n < 5; n++) {
    snprintf(path, sizeof(path), "%s/%d.a.json", argv[1], n);
    print_to(print, path, 1);
    snprintf(path, sizeof(path), "%s/%d.txt", argv[1], n);
    print_to(print, path, 0);
    snprintf(path, sizeof(path), "%s/%d.b.json", argv[1], n);
    print_to(print, path, 1);
  }
  say("done\n");
  return 0;
}
