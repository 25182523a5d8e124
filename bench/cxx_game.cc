/* SPDX-License-Identifier: MIT */
/* cxx_game — a C++ game world's container churn through new/delete
 * (issue 10: games are mostly C++, and their allocations come from the
 * standard containers).
 *
 * Entities live in a std::map keyed by id. Each has a name (std::string,
 * often longer than the small-string buffer), a std::vector of components
 * grown by push_back, a few tag strings and a std::map of named stats; its
 * death is scheduled in a std::multimap. Every frame:
 *   - spawns 4..20 entities (an explosion every ~40 frames spawns ten times
 *     as many), each living 10..200 frames, a few 200..2000;
 *   - updates every entity: moves it, now and then adds or drops a
 *     component, renames it (the string grows) or changes a stat;
 *   - rebuilds a spatial grid, std::map<cell, std::vector<id>>, from the
 *     positions, and answers a few neighbourhood queries from it;
 *   - builds the frame's event log, std::vector<std::string> of messages
 *     put together with +=, sorts it and drops it;
 *   - destroys the entities whose time is up (delete, erase from the map).
 * Every entity's contents follow from its id; they are checked in full
 * before it is deleted (BENCH_CORRUPT corrupts the name of the k-th entity,
 * and the check must catch it). Everything is freed at the end.
 *
 *   cxx_game --frames N
 *
 * Reports microseconds per frame. */
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "bench.h"

BENCH_GLOBALS

namespace {

struct Component {
  uint32_t kind;
  int32_t x, y;
  uint32_t seq;
  uint64_t data;
};

struct Entity {
  uint32_t id;
  uint32_t renames = 0;
  uint64_t tag;
  std::string name;
  std::vector<Component> comps;
  std::vector<std::string> tags;
  std::map<std::string, int64_t> stats;
};

const char *const kArchetypes[] = {
    "goblin", "skeleton_archer",  "merchant", "town_guard", "fire_elemental",
    "wolf",   "cave_troll_elder", "bat"};
const char *const kTags[] = {"hostile", "flying", "boss_candidate_tier_two", "loot", "quest_giver"};
const char *const kStats[] = {"hp", "mana", "strength", "dexterity", "intelligence_bonus", "armor"};

uint64_t data_of(uint32_t id, uint32_t seq) { return bench_mix((uint64_t)id << 32 | seq); }

/** The name an entity must have after `renames` renames. */
std::string expected_name(uint32_t id, uint32_t renames) {
  std::string s = kArchetypes[bench_mix(id) % 8];
  s += '#';
  s += std::to_string(id);
  s.append(renames, '\'');
  return s;
}

int64_t stat_base(uint32_t id, size_t k) { return (int64_t)(bench_mix(id * 7 + k) % 1000); }

[[noreturn]] void entity_mismatch(const Entity *e, const char *what) {
  bench_mismatch(what, e, sizeof(*e), e->id, e->tag);
}

class World {
 public:
  explicit World(uint64_t seed) : rng_(bench_rng(seed)) {}

  ~World() {
    for (auto &kv : by_id_) destroy(kv.second);
  }

  /** One frame; returns nothing, accumulates into checksum(). */
  void frame() {
    frame_++;
    bool boom = bench_chance(&rng_, 25);
    uint64_t spawns = bench_range(&rng_, 4, 20) * (boom ? 10 : 1);
    for (uint64_t i = 0; i < spawns; i++) spawn();
    update();
    rebuild_grid();
    event_log(boom);
    reap();
  }

  uint64_t touched() const { return touched_; }
  size_t live() const { return by_id_.size(); }

 private:
  void spawn() {
    Entity *e = new Entity;
    e->id = ++next_id_;
    e->tag = bench_mix(e->id);
    e->name = expected_name(e->id, 0);
    bench_after_stamp(&e->name[0]); /* BENCH_CORRUPT: the check must catch it */
    size_t ncomp = (size_t)bench_range(&rng_, 2, 12);
    for (size_t k = 0; k < ncomp; k++) add_component(e);
    size_t ntags = (size_t)bench_range(&rng_, 0, 3);
    for (size_t k = 0; k < ntags; k++) e->tags.emplace_back(kTags[(e->id + k) % 5]);
    size_t nstats = (size_t)bench_range(&rng_, 3, 6);
    for (size_t k = 0; k < nstats; k++) e->stats[kStats[k]] = stat_base(e->id, k);
    uint64_t life =
        bench_chance(&rng_, 950) ? bench_range(&rng_, 10, 200) : bench_range(&rng_, 200, 2000);
    by_id_.emplace(e->id, e);
    deaths_.emplace(frame_ + life, e->id);
  }

  void add_component(Entity *e) {
    uint32_t seq = e->comps.empty() ? 0 : e->comps.back().seq + 1;
    Component c;
    c.kind = seq % 7;
    c.x = (int32_t)bench_range(&rng_, 0, 4095);
    c.y = (int32_t)bench_range(&rng_, 0, 4095);
    c.seq = seq;
    c.data = data_of(e->id, seq);
    e->comps.push_back(c);
  }

  void update() {
    for (auto &kv : by_id_) {
      Entity *e = kv.second;
      Component &pos = e->comps.front();
      pos.x = (pos.x + (int32_t)(e->tag % 7) - 3) & 4095;
      pos.y = (pos.y + (int32_t)(e->tag >> 8 & 7) - 3) & 4095;
      uint64_t k = bench_next(&rng_) % 1000;
      if (k < 30) {
        add_component(e);
      } else if (k < 50 && e->comps.size() > 2) {
        e->comps.pop_back();
      } else if (k < 58) {
        e->name += '\'';
        e->renames++;
      } else if (k < 90) {
        e->stats["hp"] += 1;
      }
      touched_ += e->comps.back().data;
    }
  }

  void rebuild_grid() {
    std::map<int32_t, std::vector<uint32_t>> grid;
    for (auto &kv : by_id_) {
      const Component &pos = kv.second->comps.front();
      grid[(pos.y >> 8) * 16 + (pos.x >> 8)].push_back(kv.first);
    }
    for (int q = 0; q < 8; q++) { /* neighbourhood queries */
      int32_t cell = (int32_t)bench_range(&rng_, 0, 255);
      std::vector<uint32_t> near;
      for (int32_t d = -1; d <= 1; d++) {
        auto it = grid.find(cell + d);
        if (it != grid.end()) near.insert(near.end(), it->second.begin(), it->second.end());
      }
      std::sort(near.begin(), near.end());
      for (uint32_t id : near) touched_ += id;
    }
  }

  void event_log(bool boom) {
    std::vector<std::string> log;
    size_t n = (size_t)bench_range(&rng_, 4, 24) * (boom ? 4 : 1);
    for (size_t i = 0; i < n; i++) {
      auto it = by_id_.lower_bound((uint32_t)bench_range(&rng_, 1, next_id_));
      if (it == by_id_.end()) continue;
      std::string msg = it->second->name;
      msg += bench_chance(&rng_, 500) ? " takes " : " deals ";
      msg += std::to_string(bench_range(&rng_, 1, 250));
      msg += " damage";
      if (bench_chance(&rng_, 100)) msg += " (critical hit, knocked back and set on fire)";
      log.push_back(std::move(msg));
    }
    std::sort(log.begin(), log.end());
    for (const std::string &m : log) touched_ += m.size();
  }

  void reap() {
    auto end = deaths_.upper_bound(frame_);
    for (auto it = deaths_.begin(); it != end; ++it) {
      auto e = by_id_.find(it->second);
      destroy(e->second);
      by_id_.erase(e);
    }
    deaths_.erase(deaths_.begin(), end);
  }

  /** Check everything the entity holds against what its id says; delete it. */
  static void destroy(Entity *e) {
    if (e->name != expected_name(e->id, e->renames)) entity_mismatch(e, "name");
    if (e->comps.empty() || e->comps.front().seq != 0) entity_mismatch(e, "components");
    for (size_t k = 0; k < e->comps.size(); k++)
      if (e->comps[k].seq != k || e->comps[k].data != data_of(e->id, (uint32_t)k))
        entity_mismatch(e, "component");
    for (size_t k = 0; k < e->tags.size(); k++)
      if (e->tags[k] != kTags[(e->id + k) % 5]) entity_mismatch(e, "tag");
    size_t k = 0;
    for (const char *s : kStats) {
      auto it = e->stats.find(s);
      if (it == e->stats.end()) break;
      if (k > 0 && it->second != stat_base(e->id, k)) entity_mismatch(e, "stat");
      k++;
    }
    if (k != e->stats.size()) entity_mismatch(e, "stats");
    bench_checksum += e->tag;
    delete e;
  }

  bench_rng_t rng_;
  uint64_t frame_ = 0;
  uint32_t next_id_ = 0;
  uint64_t touched_ = 0;
  std::map<uint32_t, Entity *> by_id_;
  std::multimap<uint64_t, uint32_t> deaths_;
};

}  // namespace

int main(int argc, char **argv) {
  bench_init();
  uint64_t frames = (uint64_t)bench_opt(argc, argv, "--frames", 5000);
  uint64_t t0 = bench_now_ns(), touched;
  size_t live;
  {
    World w(29);
    for (uint64_t f = 0; f < frames; f++) w.frame();
    touched = w.touched();
    live = w.live();
  }
  uint64_t dt = bench_now_ns() - t0;
  printf("frames %llu, live at the end %zu, touched %llx\n", (unsigned long long)frames, live,
         (unsigned long long)touched);
  bench_result("cxx-game", frames ? (double)dt / 1e3 / (double)frames : 0.0, "us/frame", frames);
  return 0;
}
