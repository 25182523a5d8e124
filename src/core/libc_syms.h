/* SPDX-License-Identifier: MIT */
/* libc_syms.h — glibc's own functions by name, around the library's
 * definitions of the same names (libc_syms.c). */
#ifndef SC_LIBC_SYMS_H
#define SC_LIBC_SYMS_H

#pragma GCC visibility push(hidden)

/** The address of function `name` as libc.so.6 defines it (its default
 * version), or NULL when no libc.so.6 is loaded or it has no such
 * function. Allocates nothing, calls no dlsym: safe inside malloc. */
void *sc__libc_sym(const char *name);

#pragma GCC visibility pop

#endif /* SC_LIBC_SYMS_H */
