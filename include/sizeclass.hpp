// SPDX-License-Identifier: MIT
// sizeclass.hpp — C++ helpers for <sizeclass.h>: a scope guard that enters
// a tag (docs/tags.md) and restores the one before when it goes out of scope.
//
//   void mix() {
//     sizeclass::tag_scope audio("audio");  // allocations here count under "audio"
//     ...
//   }
#ifndef SIZECLASS_HPP
#define SIZECLASS_HPP

#include "sizeclass.h"

namespace sizeclass {

class tag_scope {
 public:
  explicit tag_scope(const char *name) : previous_(sc_tag_enter(sc_tag(name))) {}
  explicit tag_scope(sc_tag_t tag) : previous_(sc_tag_enter(tag)) {}
  ~tag_scope() { sc_tag_leave(previous_); }
  tag_scope(const tag_scope &) = delete;
  tag_scope &operator=(const tag_scope &) = delete;

 private:
  sc_tag_t previous_;
};

}  // namespace sizeclass

#endif  // SIZECLASS_HPP
