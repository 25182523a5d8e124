/* SPDX-License-Identifier: MIT */
// cxx_new.cc — C++'s operator new and delete under the preloaded library
// (shim/cxx.c): every form hands out the allocator's blocks, and what the
// allocator cannot serve takes the language's way (the new_handler, then
// std::bad_alloc, or nullptr for the nothrow forms). Prints one line per
// check, "name ok" or "name FAILED ...", then "done".
#include <dlfcn.h>
#include <stdint.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

namespace {

bool (*owns)(const void *);
int handler_calls;

void check(const char *name, bool ok) { std::printf("%s %s\n", name, ok ? "ok" : "FAILED"); }

bool aligned_to(const void *p, std::size_t a) {
  return (reinterpret_cast<uintptr_t>(p) & (a - 1)) == 0;
}

void count_and_give_up() {
  handler_calls++;
  std::set_new_handler(nullptr);  // the next failure throws
}

struct alignas(64) Line {
  char bytes[48];
};

}  // namespace

int main() {
  owns = reinterpret_cast<bool (*)(const void *)>(dlsym(RTLD_DEFAULT, "sc_owns"));
  if (owns == nullptr) {
    std::printf("libsizeclass is not preloaded\n");
    return 2;
  }
  // The operators themselves are the library's (not libstdc++'s, calling
  // malloc): the program's calls bind to them.
  Dl_info where{};
  void *op = dlsym(RTLD_DEFAULT, "_Znwm");
  check("operator new is libsizeclass's",
        op != nullptr && dladdr(op, &where) != 0 && std::strstr(where.dli_fname, "libsizeclass"));
  op = dlsym(RTLD_DEFAULT, "_ZdlPvm");
  check("sized delete is libsizeclass's",
        op != nullptr && dladdr(op, &where) != 0 && std::strstr(where.dli_fname, "libsizeclass"));
  int *one = new int(7);
  check("new", owns(one) && *one == 7);
  delete one;
  int *many = new int[100];
  check("new[]", owns(many));
  delete[] many;
  int *quiet = new (std::nothrow) int(3);
  check("new(nothrow)", owns(quiet));
  delete quiet;
  Line *line = new Line;
  check("new(align 64)", owns(line) && aligned_to(line, 64));
  delete line;
  Line *lines = new Line[4];
  check("new[](align 64)", aligned_to(lines, 64));
  delete[] lines;
  void *page = ::operator new(100, std::align_val_t(4096));
  check("new(align 4096)", aligned_to(page, 4096));
  ::operator delete(page, std::align_val_t(4096));
  std::vector<int> v;
  for (int i = 0; i < 1000; i++) v.push_back(i);  // sized deletes as it grows
  check("vector", v[999] == 999);

  // What the allocator cannot serve: the runtime's way.
  std::size_t huge = static_cast<std::size_t>(1) << 62;
  check("new(nothrow) of 2^62 is nullptr", new (std::nothrow) char[huge] == nullptr);
  bool threw = false;
  try {
    char *p = new char[huge];
    delete[] p;
  } catch (const std::bad_alloc &) {
    threw = true;
  }
  check("new of 2^62 throws bad_alloc", threw);
  std::set_new_handler(count_and_give_up);
  threw = false;
  try {
    char *p = new char[huge];
    delete[] p;
  } catch (const std::bad_alloc &) {
    threw = true;
  }
  check("new_handler called, then bad_alloc", threw && handler_calls == 1);
  std::printf("done\n");
  return 0;
}
