/* SPDX-License-Identifier: MIT */
/* harden_race — two threads free one block at the same moment (the owner
 * and another thread), over and over: `harden_race ATTEMPTS`, run under
 * LD_PRELOAD=libsizeclass.so. Each attempt runs in a child process (a
 * caught double free ends it; a new image, `harden_race --child DELAY`, so that its stderr is the
 * pipe the parent reads from the library's start): the owner makes a block, a second thread
 * (with an arena of its own) and the owner meet, and both free the block
 * at once (one of them spins a little first, a sweep over the attempts, so
 * that the two frees meet at some attempt whatever the paths' lengths); the second thread then
 * exits, which hands its free to the owner's remote list. If the child is still alive, it allocates
 * 4096 blocks of the class (the owner drains its remote list on the way), stamps each with its own
 * address and checks every stamp: a block handed out twice shows as a stamp overwritten. Each
 * attempt must end in one of two ways: the child aborts (SIGABRT) after a "sizeclass: double free
 * of" or "sizeclass: corrupted free list" line, or it exits 0 having found no block handed out
 * twice (one free won cleanly). Anything else — a block handed out twice, another signal, another
 * message — is a failure: exit 1 after a line on stderr. The last line on stdout counts each
 * outcome. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SIZE 48
#define BLOCKS 4096

static void *volatile shared;
static atomic_int arrived;
static long delay; /* spins before a thread frees: the owner's when > 0, else the other's */

/** Both threads arrive, then free after their spins. */
static void meet_and_free(void *p, long spins) {
  atomic_fetch_add(&arrived, 1);
  while (atomic_load_explicit(&arrived, memory_order_acquire) < 2) {
  }
  for (volatile long k = 0; k < spins; k++) {
  }
  free(p);
}

static void *opaque(void *p) {
  __asm__ volatile("" : "+r"(p) : : "memory");
  return p;
}

static void *second(void *arg) {
  (void)arg;
  free(opaque(malloc(SIZE))); /* an arena of its own first: the free is then the race */
  meet_and_free(shared, delay < 0 ? -delay : 0);
  return NULL;
}

/** One attempt, in the child: 0 clean, 1 a block was handed out twice. */
static int attempt(void) {
  void *p = opaque(malloc(SIZE));
  shared = p;
  pthread_t t;
  if (pthread_create(&t, NULL, second, NULL) != 0) return 2;
  meet_and_free(opaque(p), delay > 0 ? delay : 0);
  pthread_join(t, NULL);
  static uintptr_t *blocks[BLOCKS];
  for (int i = 0; i < BLOCKS; i++) {
    blocks[i] = opaque(malloc(SIZE));
    blocks[i][0] = (uintptr_t)blocks[i];
  }
  for (int i = 0; i < BLOCKS; i++)
    if (blocks[i][0] != (uintptr_t)blocks[i]) {
      fprintf(stderr, "harden_race: block %p handed out twice\n", (void *)blocks[i]);
      return 1;
    }
  return 0;
}

int main(int argc, char **argv) {
  /* An attempt: a new image whose stderr was the pipe from its start (the
   * library writes its lines only to the stderr it started with). */
  if (argc == 3 && strcmp(argv[1], "--child") == 0) {
    delay = atol(argv[2]);
    return attempt();
  }
  long attempts = argc == 2 ? atol(argv[1]) : 0;
  if (attempts <= 0) {
    fprintf(stderr, "usage: harden_race ATTEMPTS\n");
    return 2;
  }
  long aborted = 0, clean = 0, failed = 0;
  for (long i = 0; i < attempts; i++) {
    int fds[2];
    if (pipe(fds) != 0) return 2;
    fflush(NULL);
    delay = (i * 37) % 301 - 150; /* the two frees meet at some delay: sweep them */
    pid_t pid = fork();
    if (pid < 0) return 2;
    if (pid == 0) {
      close(fds[0]);
      dup2(fds[1], 2);
      char d[32];
      snprintf(d, sizeof(d), "%ld", delay);
      execl("/proc/self/exe", argv[0], "--child", d, (char *)NULL);
      _exit(3);
    }
    close(fds[1]);
    char err[512];
    size_t len = 0;
    ssize_t got;
    while ((got = read(fds[0], err + len, sizeof(err) - 1 - len)) > 0) len += (size_t)got;
    err[len] = '\0';
    close(fds[0]);
    int status;
    if (waitpid(pid, &status, 0) != pid) return 2;
    bool message = strstr(err, "sizeclass: double free of ") == err ||
                   strstr(err, "sizeclass: corrupted free list") == err;
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT && message) {
      aborted++;
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && len == 0) {
      clean++;
    } else {
      failed++;
      fprintf(stderr, "harden_race: attempt %ld: status %#x, stderr: %s\n", i, (unsigned)status,
              err);
    }
  }
  printf("attempts %ld aborted %ld clean %ld failed %ld\n", attempts, aborted, clean, failed);
  return failed != 0 ? 1 : 0;
}
