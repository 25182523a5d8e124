/* options.c — where settings come from: the environment first, then the
 * program's own `sizeclass_options` string (include/sizeclass.h), so that a
 * program can switch features on without an environment, before its first
 * allocation. Nothing here allocates: values are copied into the caller's
 * buffer. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"
#include "options.h"

/* A program may define this (a string of NAME=value words separated by
 * spaces, commas or semicolons); the library reads it when it starts. */
extern const char *const sizeclass_options __attribute__((weak));

/** Length of the value of `name` in the options string, with *value set to
 * its start; -1 when the string does not name it. */
static long find_in_options(const char *opts, const char *name, const char **value) {
  size_t len = strlen(name);
  for (const char *s = opts; *s != 0;) {
    while (*s == ' ' || *s == ',' || *s == ';' || *s == '\t' || *s == '\n') s++;
    const char *word = s;
    while (*s != 0 && *s != ' ' && *s != ',' && *s != ';' && *s != '\t' && *s != '\n') s++;
    if ((size_t)(s - word) > len && strncmp(word, name, len) == 0 && word[len] == '=') {
      *value = word + len + 1;
      return (long)(s - *value);
    }
  }
  return -1;
}

const char *sc__option(const char *name, char *buf, size_t cap) {
  const char *env = secure_getenv(name);
  if (env != NULL) return env;
  const char *opts = &sizeclass_options != NULL ? sizeclass_options : NULL;
  if (opts == NULL || cap == 0) return NULL;
  const char *value = NULL;
  long n = find_in_options(opts, name, &value);
  if (n < 0) return NULL;
  if ((size_t)n >= cap) n = (long)cap - 1;
  memcpy(buf, value, (size_t)n);
  buf[n] = 0;
  return buf;
}

void sc__option_warn(const char *name, const char *value, const char *what) {
  char msg[320];
  size_t n = 0;
  const char *parts[] = {name, "=", value, ": ", what};
  for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
    size_t max = i == 2 ? 160 : sizeof(msg) - 1; /* a value is cut at 160 bytes */
    for (const char *s = parts[i]; *s && max > 0 && n < sizeof(msg) - 1; s++, max--) {
      char ch = *s;
      if ((unsigned char)ch < 0x20) ch = '?';
      msg[n++] = ch;
    }
  }
  msg[n] = 0;
  sc__warn(msg);
}

bool sc__option_on(const char *value) {
  static const char *const off[] = {"", "0", "off", "no", "false"};
  if (value == NULL) return false;
  for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++)
    if (strcasecmp(value, off[i]) == 0) return false;
  return true;
}

bool sc__option_uint(const char *s, uint64_t max, uint64_t *out) {
  uint64_t v = 0;
  if (*s == 0) return false;
  for (; *s != 0; s++) {
    if (*s < '0' || *s > '9') return false;
    v = v * 10 + (uint64_t)(*s - '0');
    if (v > max) return false;
  }
  *out = v;
  return true;
}
