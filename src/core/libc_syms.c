/* SPDX-License-Identifier: MIT */
/* libc_syms.c — glibc's own functions, found in libc.so.6's dynamic symbol
 * table (libc_syms.h).
 *
 * The library defines glibc's __libc_malloc family itself (a program that
 * calls those names gets the library, as it does for malloc), so its route
 * to glibc's allocator cannot name them: a call by name would come back to
 * the library. dlsym would find glibc's, but it may allocate and must not
 * run inside malloc. So the loaded objects' program headers are walked
 * (dl_iterate_phdr: no allocation), the one whose soname is libc.so.6 is
 * taken, and the name is looked up in its GNU hash table. Nothing here
 * depends on the rest of the library: a test program links this object
 * alone to reach glibc's allocator around a preloaded libsizeclass. */
#include "core/libc_syms.h"

#include <elf.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define LIBC_SONAME "libc.so.6"

/** What the walk needs of one object's dynamic section. */
typedef struct {
  uintptr_t base;           /* where the object is loaded */
  const char *strtab;       /* its dynamic string table */
  const ElfW(Sym) * symtab; /* its dynamic symbols */
  const uint32_t *gnu_hash; /* their GNU hash table */
  const uint16_t *versym;   /* their version indexes (NULL: none) */
  const char *name;         /* the symbol looked for */
  void *found;              /* its address, once found */
} lookup_t;

/** A dynamic-section address of an object loaded at base: the loader
 * rewrites most of them to run-time addresses, not every one (the vDSO's
 * stay offsets). */
static uintptr_t dyn_addr(uintptr_t value, uintptr_t base) {
  return value < base ? value + base : value;
}

/** The GNU hash of a symbol name (the ELF gABI extension's function). */
static uint32_t gnu_hash_of(const char *s) {
  uint32_t h = 5381;
  for (; *s != '\0'; s++) h = h * 33 + (unsigned char)*s;
  return h;
}

/** l->name's defined function in l's tables (the default version when it
 * has several), or NULL. */
static void *hash_lookup(const lookup_t *l) {
  const uint32_t *t = l->gnu_hash;
  uint32_t buckets_n = t[0], first = t[1], bloom_words = t[2];
  if (buckets_n == 0) return NULL;
  const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(t + 4) + bloom_words);
  const uint32_t *chain = buckets + buckets_n;
  uint32_t h = gnu_hash_of(l->name);
  uint32_t i = buckets[h % buckets_n];
  if (i < first) return NULL; /* an empty bucket */
  for (;; i++) {
    uint32_t ch = chain[i - first];
    const ElfW(Sym) *s = &l->symtab[i];
    if ((ch | 1) == (h | 1) && s->st_shndx != SHN_UNDEF && ELF64_ST_TYPE(s->st_info) == STT_FUNC &&
        (l->versym == NULL || (l->versym[i] & 0x8000) == 0) &&
        strcmp(l->strtab + s->st_name, l->name) == 0)
      return (void *)(l->base + s->st_value);
    if (ch & 1) return NULL; /* the bucket's chain ends */
  }
}

/** dl_iterate_phdr's callback: 1 (stop) once libc.so.6 was searched. */
static int visit(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  lookup_t *l = arg;
  const ElfW(Dyn) *dyn = NULL;
  for (ElfW(Half) k = 0; k < info->dlpi_phnum; k++)
    if (info->dlpi_phdr[k].p_type == PT_DYNAMIC)
      dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[k].p_vaddr);
  if (dyn == NULL || info->dlpi_addr == 0) return 0; /* libc is a shared object */
  uintptr_t base = info->dlpi_addr, strtab = 0, symtab = 0, hash = 0, versym = 0, soname = 0;
  bool has_soname = false;
  for (; dyn->d_tag != DT_NULL; dyn++) {
    switch (dyn->d_tag) {
      case DT_STRTAB:
        strtab = dyn_addr(dyn->d_un.d_ptr, base);
        break;
      case DT_SYMTAB:
        symtab = dyn_addr(dyn->d_un.d_ptr, base);
        break;
      case DT_GNU_HASH:
        hash = dyn_addr(dyn->d_un.d_ptr, base);
        break;
      case DT_VERSYM:
        versym = dyn_addr(dyn->d_un.d_ptr, base);
        break;
      case DT_SONAME:
        soname = dyn->d_un.d_val;
        has_soname = true;
        break;
      default:
        break;
    }
  }
  if (!has_soname || strtab == 0 || strcmp((const char *)strtab + soname, LIBC_SONAME) != 0)
    return 0;
  if (symtab != 0 && hash != 0) {
    l->base = base;
    l->strtab = (const char *)strtab;
    l->symtab = (const ElfW(Sym) *)symtab;
    l->gnu_hash = (const uint32_t *)hash;
    l->versym = (const uint16_t *)versym;
    l->found = hash_lookup(l);
  }
  return 1;
}

void *sc__libc_sym(const char *name) {
  lookup_t l = {.name = name};
  dl_iterate_phdr(visit, &l);
  return l.found;
}
