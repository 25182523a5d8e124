/* SPDX-License-Identifier: MIT */
/* path.h — file names the user gives the library (the report, folded
 * stacks): "%p" stands for the process's pid, so that every process of a
 * program that forks or runs its children with the same environment writes
 * a file of its own. Never allocates: a dump from a signal handler or a
 * forked child expands them too. */
#ifndef SC_PATH_H
#define SC_PATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

/** out = tmpl with every %p replaced by pid and %% by %; false if it does
 * not fit in cap bytes. */
bool sc__expand_pid_path(char *out, size_t cap, const char *tmpl, uint64_t pid);

/** The start that makes a relative file name absolute (the program may
 * chdir later): the current directory and a '/' into out, NUL-terminated.
 * Its length; 0 when getcwd fails or it does not fit in cap bytes. */
size_t sc__path_cwd_prefix(char *out, size_t cap);

#pragma GCC visibility pop

#endif /* SC_PATH_H */
