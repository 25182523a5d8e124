/* SPDX-License-Identifier: MIT */
/* guard_chain — linked with libsizeclass.a (the library is in the program,
 * so a constructor of the program's with an early priority runs before the
 * library starts and installs its fault handler). SIZECLASS_GUARD comes
 * from the environment; with GUARD_CHAIN_HANDLER=1 the program installs
 * its own SIGSEGV handler before that. It prints whose handler is on top
 * ("handler: sizeclass", "program" or "default"), then:
 *   guard_chain null      writes through a null pointer;
 *   guard_chain kill      sends itself SIGSEGV with kill();
 *   guard_chain overflow  writes one byte past a guarded 48-byte block.
 * The program's handler prints "program handler: signal N, code C" and
 * exits with status 42. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void program_handler(int sig, siginfo_t *si, void *ctx) {
  (void)ctx;
  char msg[80];
  int n = snprintf(msg, sizeof(msg), "program handler: signal %d, code %d\n", sig, si->si_code);
  if (write(2, msg, (size_t)n) < 0) _exit(43);
  _exit(42);
}

__attribute__((constructor(101))) static void install_early(void) {
  if (getenv("GUARD_CHAIN_HANDLER") == NULL) return;
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = program_handler;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, NULL);
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  struct sigaction cur;
  sigaction(SIGSEGV, NULL, &cur);
  const char *top = cur.sa_sigaction == program_handler ? "program"
                    : cur.sa_handler == SIG_DFL         ? "default"
                                                        : "sizeclass";
  printf("handler: %s\n", top);
  fflush(stdout);
  if (strcmp(argv[1], "null") == 0) {
    volatile int *null = NULL;
    __asm__ volatile("" : "+r"(null));
    *null = 1;
  } else if (strcmp(argv[1], "kill") == 0) {
    kill(getpid(), SIGSEGV);
  } else if (strcmp(argv[1], "overflow") == 0) {
    volatile char *p = malloc(48);
    __asm__ volatile("" : "+r"(p));
    p[48] = 1;
  }
  return 1;
}
