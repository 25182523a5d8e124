// SPDX-License-Identifier: MIT
// tags_cxx.cc — sizeclass::tag_scope (include/sizeclass.hpp): objects made
// with new inside the scope count under the tag, nested scopes restore the
// tag before. Prints "ok" or what differs. Run with SIZECLASS_STATS_EXACT=1.
#include <cstdio>
#include <string>
#include <vector>

#include "sizeclass.hpp"

struct particle {
  float x[12];  // 48 B: the 64 B class
};

int main() {
  std::vector<particle *> keep;
  {
    sizeclass::tag_scope fx("effects");
    for (int i = 0; i < 50; i++) keep.push_back(new particle());
    {
      sizeclass::tag_scope ui("ui");
      for (int i = 0; i < 7; i++) keep.push_back(new particle());
    }
    for (int i = 0; i < 5; i++) keep.push_back(new particle());
  }
  keep.shrink_to_fit();
  struct sc_tag_stats ts[8];
  size_t n = sc_stats_tags(ts, 8);
  int bad = n < 3;
  for (size_t i = 0; i < n && i < 8; i++) {
    unsigned long long live64 = ts[i].classes[2].live_blocks;
    if (std::string(ts[i].name) == "effects" && live64 != 55)
      bad++, std::printf("effects %llu\n", live64);
    if (std::string(ts[i].name) == "ui" && live64 != 7) bad++, std::printf("ui %llu\n", live64);
  }
  std::printf(bad ? "bad\n" : "ok\n");
  for (particle *p : keep) delete p;
  return bad != 0;
}
