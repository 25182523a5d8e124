/* SPDX-License-Identifier: MIT */
/* path.c — file names the user gives the library, with %p for the pid
 * (path.h). */
#include "util/path.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

bool sc__expand_pid_path(char *out, size_t cap, const char *tmpl, uint64_t pid) {
  size_t n = 0;
  for (const char *t = tmpl; *t; t++) {
    char digits[24];
    size_t k = 0;
    if (t[0] == '%' && t[1] == 'p') {
      uint64_t v = pid; /* every %p gets the whole pid */
      do digits[k++] = (char)('0' + v % 10);
      while ((v /= 10) != 0);
      if (n + k >= cap) return false;
      while (k > 0) out[n++] = digits[--k];
      t++;
      continue;
    }
    if (t[0] == '%' && t[1] == '%') t++;
    if (n + 1 >= cap) return false;
    out[n++] = *t;
  }
  out[n] = 0;
  return true;
}

size_t sc__path_cwd_prefix(char *out, size_t cap) {
  int saved = errno;
  bool ok = cap > 1 && getcwd(out, cap - 1) != NULL; /* room for the '/' */
  errno = saved;
  if (!ok) {
    if (cap > 0) out[0] = 0;
    return 0;
  }
  size_t n = strlen(out);
  if (n == 0 || out[n - 1] != '/') out[n++] = '/';
  out[n] = 0;
  return n;
}
