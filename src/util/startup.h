/* SPDX-License-Identifier: MIT */
/* startup.h — where code that runs once, when the process or a thread
 * starts, is put: reading the settings, deciding the features, arming the
 * report, a thread's first countdown.
 *
 * GCC's own section for such code (constructors, main), which the linker
 * gathers ahead of .text, one run of pages for the whole library. Spread
 * through the files that own it, this code made a plain run touch every
 * page of the library's code, and the kernel maps a file's pages around
 * each one touched: all of them stayed resident (docs/performance.md,
 * "fixed costs"). Gathered, the steady-state paths stay in the pages the
 * link order puts first (the Makefile's LIB_LINK_ORDER). Placement only:
 * calling such a function later is as correct as ever. */
#ifndef SC_UTIL_STARTUP_H
#define SC_UTIL_STARTUP_H

/** Put this function with the library's start-up code. */
#define sc_startup __attribute__((section(".text.startup")))

#endif /* SC_UTIL_STARTUP_H */
