/* options.h — reading the library's settings (SIZECLASS_* variables). */
#ifndef SC_OPTIONS_H
#define SC_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** The value of setting `name` (e.g. "SIZECLASS_STATS"): the environment's
 * (secure_getenv: ignored in set-user-ID programs), else the one in the
 * program's `sizeclass_options` string, copied into buf (cut to cap - 1
 * bytes); NULL when neither sets it. Never allocates. */
const char *sc__option(const char *name, char *buf, size_t cap);

/** One "sizeclass: NAME=VALUE: WHAT" line on stderr, for a setting that
 * cannot be used (control characters of the value shown as '?'). */
void sc__option_warn(const char *name, const char *value, const char *what);

/** True when a switch's value asks for something: set, and not empty, 0,
 * off, no or false (any case). */
bool sc__option_on(const char *value);

/** Parse a decimal number in 0..max (digits only) into *out; false, and
 * *out untouched, if s is not one. */
bool sc__option_uint(const char *s, uint64_t max, uint64_t *out);

#endif /* SC_OPTIONS_H */
