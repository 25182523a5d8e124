/* SPDX-License-Identifier: MIT */
/* symbolize.c — code addresses to object, offset and function (symbolize.h).
 *
 * 1. The object: glibc's _dl_find_object (2.35 and later; lock-free and
 *    async-signal-safe) gives its link map: load bias and path. Where it is
 *    missing, dladdr1 does the same when the caller may take the loader's
 *    lock.
 * 2. The function: the object's file is mapped (open + mmap, no malloc),
 *    its full symbol table (.symtab) read, or the dynamic one (.dynsym)
 *    when the file is stripped; its functions are sorted by address once
 *    per object (heapsort over an mmap'd array) and searched by bisection.
 *    dladdr alone would only see exported names, and not static functions
 *    nor programs linked without -rdynamic.
 * Results are cached by address for the report's duration. Names are the
 * symbols as the object has them (C++ names stay mangled: c++filt, or
 * scripts/sc-addr2line, demangle them). */
#include "util/symbolize.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/os.h"

/* glibc >= 2.35; a weak reference, so that an older glibc loads us too. */
extern int _dl_find_object(void *pc, struct dl_find_object *result) __attribute__((weak));

#define MAX_MODULES 64
#define PATH_CAP 1024
#define CACHE_SLOTS 1024

typedef struct {
  uint64_t start, size;
  uint32_t name; /* offset in the string table */
  uint32_t rank; /* 0 global, 1 weak, 2 local: the preferred alias sorts first */
} func_t;

typedef struct {
  uintptr_t start, end; /* the object's mapped range (end 0: unknown, match start only) */
  uintptr_t bias;       /* load bias (l_addr) */
  char path[PATH_CAP];
  const uint8_t *file; /* the file, mapped; NULL when unreadable */
  size_t file_len;
  func_t *funcs; /* sorted by start; mapped */
  size_t nfuncs, funcs_bytes;
  const char *strtab;
  size_t strtab_len;
  bool libc;    /* the C library */
  bool cxx;     /* libstdc++ */
  bool scanned; /* the file was looked at */
} module_t;

typedef struct {
  uintptr_t pc;
  sc_frame_info_t info;
} cache_t;

struct sc_symbolizer_s {
  bool may_lock;
  unsigned nmodules;
  module_t modules[MAX_MODULES];
  cache_t cache[CACHE_SLOTS];
};

sc_symbolizer_t *sc__sym_open(bool may_lock) {
  sc_symbolizer_t *s = sc__os_map_aligned(sizeof(*s), 4096);
  if (s != NULL) s->may_lock = may_lock;
  return s;
}

void sc__sym_close(sc_symbolizer_t *s) {
  if (s == NULL) return;
  for (unsigned i = 0; i < s->nmodules; i++) {
    module_t *m = &s->modules[i];
    if (m->file != NULL) sc__os_unmap((void *)m->file, m->file_len);
    if (m->funcs != NULL) sc__os_unmap(m->funcs, m->funcs_bytes);
  }
  sc__os_unmap(s, sizeof(*s));
}

/* ---- the object's file ----------------------------------------------------------------- */

static bool func_before(const func_t *a, const func_t *b) {
  return a->start != b->start ? a->start < b->start : a->rank < b->rank;
}

/** Heapsort of f[0..n) by start (no allocation, no recursion). */
static void sort_funcs(func_t *f, size_t n) {
  for (size_t k = n; k-- > 0;) {
    for (size_t i = k;;) { /* sift down from k within n */
      size_t c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && func_before(&f[c], &f[c + 1])) c++;
      if (!func_before(&f[i], &f[c])) break;
      func_t t = f[i];
      f[i] = f[c];
      f[c] = t;
      i = c;
    }
  }
  for (size_t end = n; end-- > 1;) {
    func_t t = f[0];
    f[0] = f[end];
    f[end] = t;
    for (size_t i = 0;;) {
      size_t c = 2 * i + 1;
      if (c >= end) break;
      if (c + 1 < end && func_before(&f[c], &f[c + 1])) c++;
      if (!func_before(&f[i], &f[c])) break;
      t = f[i];
      f[i] = f[c];
      f[c] = t;
      i = c;
    }
  }
}

/** The section header of type `type` in the mapped ELF file, or NULL. */
static const ElfW(Shdr) * find_section(const module_t *m, uint32_t type) {
  const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)m->file;
  for (unsigned i = 0; i < eh->e_shnum; i++) {
    const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(m->file + eh->e_shoff) + i;
    if (sh->sh_type == type && sh->sh_offset + sh->sh_size <= m->file_len) return sh;
  }
  return NULL;
}

/** True when the mapped file is an ELF object of our class whose section
 * headers lie inside it. */
static bool elf_ok(const module_t *m) {
  const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)m->file;
  return m->file_len >= sizeof(*eh) && memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 &&
         eh->e_ident[EI_CLASS] == ELFCLASS64 && eh->e_shentsize == sizeof(ElfW(Shdr)) &&
         eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(ElfW(Shdr)) <= m->file_len;
}

/** Collect the functions of symbol section sym into m->funcs, sorted. */
static void load_funcs(module_t *m, const ElfW(Shdr) * sym) {
  const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)m->file;
  if (sym->sh_link >= eh->e_shnum || sym->sh_entsize != sizeof(ElfW(Sym))) return;
  const ElfW(Shdr) *str = (const ElfW(Shdr) *)(m->file + eh->e_shoff) + sym->sh_link;
  if (str->sh_offset + str->sh_size > m->file_len) return;
  const ElfW(Sym) *syms = (const ElfW(Sym) *)(m->file + sym->sh_offset);
  size_t n = sym->sh_size / sizeof(ElfW(Sym)), k = 0;
  for (size_t i = 0; i < n; i++)
    k += (ELF64_ST_TYPE(syms[i].st_info) == STT_FUNC ||
          ELF64_ST_TYPE(syms[i].st_info) == STT_GNU_IFUNC) &&
         syms[i].st_size != 0 && syms[i].st_value != 0;
  if (k == 0) return;
  m->funcs_bytes = (k * sizeof(func_t) + 4095) & ~(size_t)4095;
  m->funcs = sc__os_map_aligned(m->funcs_bytes, 4096);
  if (m->funcs == NULL) return;
  for (size_t i = 0; i < n; i++) {
    const ElfW(Sym) *y = &syms[i];
    unsigned type = ELF64_ST_TYPE(y->st_info), bind = ELF64_ST_BIND(y->st_info);
    if ((type != STT_FUNC && type != STT_GNU_IFUNC) || y->st_size == 0 || y->st_value == 0)
      continue;
    if (y->st_name >= str->sh_size) continue;
    func_t *f = &m->funcs[m->nfuncs++];
    f->start = y->st_value;
    f->size = y->st_size;
    f->name = y->st_name;
    f->rank = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
  }
  m->strtab = (const char *)(m->file + str->sh_offset);
  m->strtab_len = str->sh_size;
  sort_funcs(m->funcs, m->nfuncs);
}

/** Map m's file and read its functions (once). The main program's path is
 * empty in its link map: /proc/self/exe is the file. */
static void scan_file(module_t *m) {
  m->scanned = true;
  if (strchr(m->path, '/') == NULL) return; /* the vDSO: no file */
  int fd = sc__os_open(m->path, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return;
  struct stat st;
  if (fstat(fd, &st) == 0 && st.st_size > (off_t)sizeof(ElfW(Ehdr))) {
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p != MAP_FAILED) {
      m->file = p;
      m->file_len = (size_t)st.st_size;
    }
  }
  close(fd);
  if (m->file == NULL) return;
  if (!elf_ok(m)) return;
  const ElfW(Shdr) *sym = find_section(m, SHT_SYMTAB);
  if (sym == NULL) sym = find_section(m, SHT_DYNSYM);
  if (sym != NULL) load_funcs(m, sym);
}

/** The name of the function of m containing file address a, or NULL. */
static const char *func_name(const module_t *m, uint64_t a) {
  size_t lo = 0, hi = m->nfuncs; /* the last start <= a is at lo - 1 */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (m->funcs[mid].start <= a)
      lo = mid + 1;
    else
      hi = mid;
  }
  /* Nested or overlapping symbols: step back a few for one that covers a. */
  for (size_t i = lo, tries = 0; i-- > 0 && tries < 8; tries++) {
    const func_t *f = &m->funcs[i];
    if (a - f->start < f->size) {
      /* The preferred alias at the same address sorts first. */
      while (i > 0 && m->funcs[i - 1].start == f->start) f = &m->funcs[--i];
      return m->strtab + f->name;
    }
  }
  return NULL;
}

/* ---- the object of an address ------------------------------------------------------------ */

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash != NULL ? slash + 1 : path;
}

static bool starts_with(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

/** Fill a new module from a link map and a mapped range. */
static void module_init(module_t *m, const struct link_map *lm, uintptr_t start, uintptr_t end) {
  m->start = start;
  m->end = end;
  m->bias = lm->l_addr;
  const char *name = lm->l_name != NULL ? lm->l_name : "";
  if (name[0] == 0) {
    ssize_t n = readlink("/proc/self/exe", m->path, sizeof(m->path) - 1);
    m->path[n > 0 ? n : 0] = 0;
  } else {
    size_t n = strlen(name);
    if (n >= sizeof(m->path)) n = sizeof(m->path) - 1;
    memcpy(m->path, name, n);
    m->path[n] = 0;
  }
  const char *b = base_name(m->path);
  m->libc = starts_with(b, "libc.so") || starts_with(b, "ld-linux") ||
            starts_with(b, "libpthread.so") || starts_with(b, "libdl.so") ||
            starts_with(b, "librt.so");
  m->cxx = starts_with(b, "libstdc++.so");
}

/** The module holding pc, found or added; NULL when unknown. */
static module_t *module_of(sc_symbolizer_t *s, uintptr_t pc) {
  for (unsigned i = 0; i < s->nmodules; i++) {
    module_t *m = &s->modules[i];
    if (pc >= m->start && pc < m->end) return m;
  }
  const struct link_map *lm = NULL;
  uintptr_t start = 0, end = 0;
  struct dl_find_object fo;
  if (_dl_find_object != NULL && _dl_find_object((void *)pc, &fo) == 0) {
    lm = fo.dlfo_link_map;
    start = (uintptr_t)fo.dlfo_map_start;
    end = (uintptr_t)fo.dlfo_map_end;
  } else if (s->may_lock) {
    Dl_info info;
    void *extra = NULL;
    if (dladdr1((void *)pc, &info, &extra, RTLD_DL_LINKMAP) != 0 && extra != NULL) {
      lm = extra;
      start = end = pc; /* no range: this address only */
      end++;
    }
  }
  if (lm == NULL || s->nmodules == MAX_MODULES) return NULL;
  module_t *m = &s->modules[s->nmodules++];
  module_init(m, lm, start, end);
  return m;
}

void sc__sym_frame(sc_symbolizer_t *s, uintptr_t pc, sc_frame_info_t *out) {
  cache_t *c = &s->cache[(pc * 0x9E3779B97F4A7C15ull) >> (64 - 10)];
  if (c->pc == pc && pc != 0) {
    *out = c->info;
    return;
  }
  out->module = "";
  out->offset = pc;
  out->name = NULL;
  out->allocator = false;
  module_t *m = module_of(s, pc);
  if (m != NULL) {
    out->module = m->path;
    out->offset = pc - m->bias;
    if (!m->scanned) scan_file(m);
    if (m->funcs != NULL) out->name = func_name(m, out->offset);
    if (out->name == NULL && s->may_lock) {
      /* The file could not be read: the loaded object's exported symbols. */
      Dl_info info;
      const ElfW(Sym) *sym = NULL;
      if (dladdr1((void *)pc, &info, (void **)&sym, RTLD_DL_SYMENT) != 0 &&
          info.dli_sname != NULL && sym != NULL && pc - (uintptr_t)info.dli_saddr < sym->st_size)
        out->name = info.dli_sname;
    }
    out->allocator = m->libc || (m->cxx && out->name != NULL && starts_with(out->name, "_Zn"));
  }
  c->pc = pc;
  c->info = *out;
}

void sc__sym_location(char *out, size_t cap, const sc_frame_info_t *f) {
  static const char hex[] = "0123456789abcdef";
  size_t n = strlen(f->module);
  if (n > cap - 24) n = cap - 24;
  memcpy(out, f->module, n);
  out[n++] = '+';
  out[n++] = '0';
  out[n++] = 'x';
  char digits[16];
  unsigned k = 0;
  uintptr_t v = f->offset;
  do digits[k++] = hex[v & 15];
  while ((v >>= 4) != 0);
  while (k > 0) out[n++] = digits[--k];
  out[n] = 0;
}
