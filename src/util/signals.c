/* SPDX-License-Identifier: MIT */
/* signals.c — which signals carry a handler the program must not see
 * (signals.h), and the real sigaction. */
#include "util/signals.h"

#include <stdatomic.h>

/* glibc exports its implementation under this name too: the library's own
 * calls reach it without going through shim/signal.c's sigaction. */
extern int __sigaction(int sig, const struct sigaction *act, struct sigaction *old);

static _Atomic bool hidden_sig[_NSIG];

int sc__sig_action(int sig, const struct sigaction *act, struct sigaction *old) {
  return __sigaction(sig, act, old);
}

void sc__sig_hide(int sig, bool hidden) {
  if (sig > 0 && sig < _NSIG) atomic_store_explicit(&hidden_sig[sig], hidden, memory_order_release);
}

bool sc__sig_hidden(int sig) {
  return sig > 0 && sig < _NSIG && atomic_load_explicit(&hidden_sig[sig], memory_order_acquire);
}
