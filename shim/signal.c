/* SPDX-License-Identifier: MIT */
/* signal.c — sigaction() and signal(), interposed so that the report's
 * handlers on the termination and crash signals stay out of the program's
 * sight (util/signals.h): on such a signal the program reads SIG_DFL, and
 * the first handler it installs replaces ours. Every other call goes
 * straight to glibc. */
#include <errno.h>
#include <string.h>

#include "util/signals.h"

#define SC_EXPORT __attribute__((visibility("default")))

/* glibc's signal() under a name we do not define. */
extern __sighandler_t bsd_signal(int sig, __sighandler_t handler);

SC_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  if (!sc__sig_hidden(sig)) return sc__sig_action(sig, act, old);
  struct sigaction dfl;
  memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  bool to_default = act != NULL && (act->sa_flags & SA_SIGINFO) == 0 && act->sa_handler == SIG_DFL;
  if (act != NULL && !to_default) {
    /* The program's own handler (or SIG_IGN): ours goes. */
    int rc = sc__sig_action(sig, act, NULL);
    if (rc != 0) return rc;
    sc__sig_hide(sig, false);
  }
  if (old != NULL) *old = dfl; /* what the program left there: the default */
  return 0;
}

SC_EXPORT __sighandler_t signal(int sig, __sighandler_t handler) {
  if (!sc__sig_hidden(sig)) return bsd_signal(sig, handler);
  /* As glibc's signal(): restarting, the signal blocked in its handler. */
  struct sigaction sa, old;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, sig);
  sa.sa_flags = SA_RESTART;
  if (sigaction(sig, &sa, &old) != 0) return SIG_ERR;
  return old.sa_handler;
}
