/* SPDX-License-Identifier: MIT */
/* settings_prog.c — the helper of tests/test_settings.c: a program whose
 * settings come from any of the three sources, and that treats its stdout
 * and stderr the way real programs do.
 *
 * Its `sizeclass_options` string is an array that the test patches in a
 * copy of the binary (see below). Built twice (mk/settings.mk): preloaded,
 * exporting the symbol (-rdynamic), and linked with libsizeclass.a
 * (settings_prog_linked).
 *
 *   settings_prog [api NAME VALUE]... MODE [ARG]
 * `api` calls sc_option_set(NAME, VALUE) first (VALUE "-": NULL) and prints
 * "set NAME=1" or "set NAME=0 errno=E". MODES:
 *   print          print a line (buffered: stdout is a pipe or a file),
 *                  allocate a little, exit
 *   raise SIG      allocate, raise(SIG) (USR1, USR2, INT, CHLD), print
 *                  "survived", exit
 *   tracked        print "tracked exact" or "tracked counts": whether
 *                  sc_stats_get says exact statistics are on
 *   close-stderr   print a line, fclose(stderr), exit (as coreutils do)
 *   reuse-stderr F close fd 2, open F (it gets fd 2), write "data\n", exit
 *   frames N       call sc_frame_mark N times, allocating, exit
 *   spawn          print "pid P"; a forked child exits on its own, another
 *                  execs this program (print); wait for both, exit
 *   maps WORD      print "maps N": the lines of /proc/self/maps naming
 *                  WORD (test_sites.c: is libgcc_s mapped?)
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sizeclass.h" /* linked: its functions; preloaded: struct sc_stats only */

/* Read by the library when it starts (include/sizeclass.h). The test
 * writes a copy of this program whose array holds the string it wants in
 * place of the marker (test_settings.c: options_prog): a string compiled
 * in, as a real program's is. Nothing in the program can set it earlier:
 * the dynamic loader's first malloc comes before any constructor. */
static const char options[512] = "@@SC_TEST_OPTIONS@@";
const char *const sizeclass_options = options;

/** A function of the library: linked in, or found in the preloaded one. */
static void *lib_fn(const char *name) {
#ifdef SETTINGS_PROG_LINKED
  if (strcmp(name, "sc_option_set") == 0) return (void *)sc_option_set;
  if (strcmp(name, "sc_frame_mark") == 0) return (void *)sc_frame_mark;
  if (strcmp(name, "sc_stats_get") == 0) return (void *)sc_stats_get;
  return NULL;
#else
  return dlsym(RTLD_DEFAULT, name);
#endif
}

/** A few allocations the report can count. */
static void allocate(void) {
  static void *volatile keep[8];
  for (int i = 0; i < 8; i++) keep[i] = malloc(24 + 100 * (size_t)i);
  for (int i = 0; i < 4; i++) free(keep[i]);
}

static int spawn(const char *self) {
  printf("pid %d\n", (int)getpid());
  fflush(stdout);
  pid_t quiet = fork();
  if (quiet == 0) {
    allocate();
    exit(0); /* a forked child: exit handlers run */
  }
  pid_t child = fork();
  if (child == 0) {
    char *argv[] = {(char *)self, "print", NULL};
    execv("/proc/self/exe", argv);
    _exit(127);
  }
  int st1 = 0, st2 = 0;
  waitpid(quiet, &st1, 0);
  waitpid(child, &st2, 0);
  allocate();
  return WIFEXITED(st1) && WIFEXITED(st2) && WEXITSTATUS(st1) == 0 && WEXITSTATUS(st2) == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
  int i = 1;
  while (i + 2 < argc && strcmp(argv[i], "api") == 0) {
    bool (*set)(const char *, const char *) =
        (bool (*)(const char *, const char *))lib_fn("sc_option_set");
    if (set == NULL) return 3;
    errno = 0;
    const char *value = strcmp(argv[i + 2], "-") == 0 ? NULL : argv[i + 2];
    bool ok = set(argv[i + 1], value);
    if (ok)
      printf("set %s=1\n", argv[i + 1]);
    else
      printf("set %s=0 errno=%s\n", argv[i + 1],
             errno == EBUSY    ? "EBUSY"
             : errno == EINVAL ? "EINVAL"
                               : "other");
    i += 3;
  }
  const char *mode = i < argc ? argv[i] : "print";
  const char *arg = i + 1 < argc ? argv[i + 1] : NULL;
  allocate();
  if (strcmp(mode, "print") == 0) {
    printf("hello from the program\n");
    return 0;
  }
  if (strcmp(mode, "raise") == 0 && arg != NULL) {
    int sig = strcmp(arg, "USR1") == 0   ? SIGUSR1
              : strcmp(arg, "INT") == 0  ? SIGINT
              : strcmp(arg, "CHLD") == 0 ? SIGCHLD
                                         : SIGUSR2;
    raise(sig);
    printf("survived\n");
    return 0;
  }
  if (strcmp(mode, "close-stderr") == 0) {
    printf("hello from the program\n");
    fclose(stderr);
    return 0;
  }
  if (strcmp(mode, "close-stdout") == 0) {
    printf("hello from the program\n");
    fclose(stdout);
    return 0;
  }
  if ((strcmp(mode, "reuse-stderr") == 0 || strcmp(mode, "reuse-stdout") == 0) && arg != NULL) {
    int which = mode[6] == 'o' ? 1 : 2; /* reuse-stdout: fd 1 */
    if (which == 1) fflush(stdout);
    close(which);
    int fd = open(arg, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd != which) return 4;
    if (write(fd, "data\n", 5) != 5) return 5;
    return 0;
  }
  if (strcmp(mode, "frames") == 0 && arg != NULL) {
    void (*mark)(void) = (void (*)(void))lib_fn("sc_frame_mark");
    if (mark == NULL) return 3;
    for (long n = strtol(arg, NULL, 10); n > 0; n--) {
      free(malloc(40));
      mark();
    }
    printf("marked %s\n", arg);
    return 0;
  }
  if (strcmp(mode, "tracked") == 0) {
    void (*get)(struct sc_stats *) = (void (*)(struct sc_stats *))lib_fn("sc_stats_get");
    if (get == NULL) return 3;
    static struct sc_stats st;
    get(&st);
    printf("tracked %s\n", (st.tracked & SC_TRACKED_EXACT) != 0 ? "exact" : "counts");
    return 0;
  }
  if (strcmp(mode, "spawn") == 0) return spawn(argv[0]);
  if (strcmp(mode, "maps") == 0 && arg != NULL) {
    FILE *f = fopen("/proc/self/maps", "r");
    if (f == NULL) return 4;
    char line[4096];
    int n = 0;
    while (fgets(line, sizeof(line), f) != NULL) n += strstr(line, arg) != NULL;
    fclose(f);
    printf("maps %d\n", n);
    return 0;
  }
  fprintf(stderr, "settings_prog: unknown mode %s\n", mode);
  return 2;
}
