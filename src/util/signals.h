/* SPDX-License-Identifier: MIT */
/* signals.h — the library's own signal handlers stay out of the
 * program's sight. The report puts handlers on SIGTERM, SIGINT, SIGHUP
 * (and, asked, the crash signals) only where the program left the default
 * action; a program that asks what is installed there (Python does, for
 * SIGINT, before it installs its KeyboardInterrupt handler) must still see
 * the default. shim/signal.c interposes sigaction() and signal(): on a
 * hidden signal they answer SIG_DFL, a handler the program installs
 * replaces ours (it is the program's signal from then on), and SIG_DFL
 * keeps ours (the default action, with the report first). */
#ifndef SC_SIGNALS_H
#define SC_SIGNALS_H

#include <signal.h>
#include <stdbool.h>

#pragma GCC visibility push(hidden)

/** glibc's sigaction itself: the library's own calls, never the
 * program's view. */
int sc__sig_action(int sig, const struct sigaction *act, struct sigaction *old);
/** Mark sig as carrying a handler of the library's that the program must
 * not see (or no longer). */
void sc__sig_hide(int sig, bool hidden);
/** True while sig carries such a handler. */
bool sc__sig_hidden(int sig);

#pragma GCC visibility pop

#endif /* SC_SIGNALS_H */
