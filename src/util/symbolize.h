/* SPDX-License-Identifier: MIT */
/* symbolize.h — names for code addresses, for reports: the object (program
 * or shared library) an address lies in, its offset there (what addr2line
 * takes), and the function around it. Never allocates: objects are found
 * with glibc's _dl_find_object (or dladdr where a lock may be taken), and
 * their symbol tables are read from their files with open and mmap. Usable
 * in a signal handler when told not to lock. */
#ifndef SC_SYMBOLIZE_H
#define SC_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

/* What is known of one code address. */
typedef struct sc_frame_info_s {
  const char *module; /* path of its object; "" when unknown */
  uintptr_t offset;   /* address - the object's load bias (addr2line's address) */
  const char *name;   /* the function's symbol; NULL when unknown */
  bool allocator;     /* the C library (libc, ld.so, libpthread, libdl, librt) or
                         libstdc++'s operator new: not the program's own frame */
} sc_frame_info_t;

typedef struct sc_symbolizer_s sc_symbolizer_t;

/** A symbolizer (mmap'd); `may_lock`: dladdr may be used (not in a signal
 * handler). NULL when the OS refuses memory. */
sc_symbolizer_t *sc__sym_open(bool may_lock);
/** Describe code address pc. The strings stay valid until sc__sym_close. */
void sc__sym_frame(sc_symbolizer_t *s, uintptr_t pc, sc_frame_info_t *out);
/** Unmap everything the symbolizer mapped. */
void sc__sym_close(sc_symbolizer_t *s);
/** "module+0xoffset" of frame f (what scripts/sc-addr2line takes) into out
 * (cap >= 32 bytes; a longer module path is cut). */
void sc__sym_location(char *out, size_t cap, const sc_frame_info_t *f);

/** The first program frame of a stack described innermost first in
 * info[0..n): the index of the innermost frame outside the C library (and
 * operator new); 0 when every frame is theirs or n is 0. The one rule the
 * sites, their report and the features' messages name a caller by. */
static inline unsigned sc__sym_first_program_frame(const sc_frame_info_t *info, unsigned n) {
  for (unsigned i = 0; i < n; i++)
    if (!info[i].allocator) return i;
  return 0;
}

#pragma GCC visibility pop

#endif /* SC_SYMBOLIZE_H */
