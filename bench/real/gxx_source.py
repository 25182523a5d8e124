# SPDX-License-Identifier: MIT
"""gxx_source.py — a generated template-heavy C++ translation unit for the
compiler benchmark (bench/real/run_real.py "gxx": g++ -O1 -c). A shared
head defines a few game-engine templates: an inline-storage vector
(SmallVec), a sorted-vector map (FlatMap), a tagged union (OneOf, visited
through a fold expression), an object pool with growth and check policies
(Pool) and an event bus of std::function handlers. Then every function
unit declares its own component types (their fields drawn from a seeded
generator) and an extern "C" system function gxx_system_I made of two of
seven parts (drawn too): the unit's types through SmallVec with std::sort,
FlatMap, Pool, OneOf, Bus, std::map of std::unique_ptr, or a log of
std::string pairs sorted by a lambda. Each unit's types are new, so every
unit instantiates the templates afresh: the compiler's work (and its
allocations: trees, template specialisations, GIMPLE, RTL) grows with the
number of functions, about 0.25 s of cc1plus a function here, after 0.5 s
for the headers.

  source(functions) -> (text, symbols): symbols are the function names
  (gxx_system_0 ...) the object file must define."""
import random

SEED = 31

HEAD = """#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace eng {

template <typename T, std::size_t N>
class SmallVec {
 public:
  void push(const T &v) {
    if (n_ < N) inline_[n_++] = v;
    else spill_.push_back(v);
  }
  std::size_t size() const { return n_ + spill_.size(); }
  T &at(std::size_t i) { return i < n_ ? inline_[i] : spill_[i - n_]; }
  template <typename F>
  void each(F &&f) {
    for (std::size_t i = 0; i < n_; ++i) f(inline_[i]);
    for (auto &v : spill_) f(v);
  }
  template <typename Less>
  void sort(Less less) {
    std::vector<T> all;
    all.reserve(size());
    each([&](T &v) { all.push_back(v); });
    std::sort(all.begin(), all.end(), less);
    n_ = 0;
    spill_.clear();
    for (auto &v : all) push(v);
  }

 private:
  T inline_[N]{};
  std::size_t n_ = 0;
  std::vector<T> spill_;
};

template <typename K, typename V, typename Less = std::less<K>>
class FlatMap {
 public:
  V &operator[](const K &k) {
    auto it = std::lower_bound(items_.begin(), items_.end(), k,
                               [](const std::pair<K, V> &e, const K &key) { return Less()(e.first, key); });
    if (it == items_.end() || Less()(k, it->first)) it = items_.insert(it, std::make_pair(k, V{}));
    return it->second;
  }
  const V *find(const K &k) const {
    for (const auto &e : items_)
      if (!Less()(e.first, k) && !Less()(k, e.first)) return &e.second;
    return nullptr;
  }
  std::size_t size() const { return items_.size(); }
  template <typename F>
  void each(F &&f) const {
    for (const auto &e : items_) f(e.first, e.second);
  }

 private:
  std::vector<std::pair<K, V>> items_;
};

template <typename... Ts>
struct MaxSize;
template <>
struct MaxSize<> {
  static constexpr std::size_t size = 1, align = 1;
};
template <typename T, typename... Ts>
struct MaxSize<T, Ts...> {
  static constexpr std::size_t size = sizeof(T) > MaxSize<Ts...>::size ? sizeof(T) : MaxSize<Ts...>::size;
  static constexpr std::size_t align =
      alignof(T) > MaxSize<Ts...>::align ? alignof(T) : MaxSize<Ts...>::align;
};

template <typename... Ts>
class OneOf {
 public:
  template <typename T>
  explicit OneOf(T v) {
    std::size_t i = 0;
    ((std::is_same<T, Ts>::value ? (tag_ = i, true) : (++i, false)) || ...);
    new (buf_) T(std::move(v));
  }
  OneOf(const OneOf &o) : tag_(o.tag_) { copy_from(o, std::index_sequence_for<Ts...>{}); }
  OneOf &operator=(const OneOf &) = delete;
  ~OneOf() { destroy(std::index_sequence_for<Ts...>{}); }
  template <typename F>
  void visit(F &&f) {
    visit_at(f, std::index_sequence_for<Ts...>{});
  }
  std::size_t tag() const { return tag_; }

 private:
  template <typename F, std::size_t... I>
  void visit_at(F &f, std::index_sequence<I...>) {
    ((tag_ == I ? (f(*reinterpret_cast<Ts *>(buf_)), true) : false) || ...);
  }
  template <std::size_t... I>
  void destroy(std::index_sequence<I...>) {
    ((tag_ == I ? (reinterpret_cast<Ts *>(buf_)->~Ts(), true) : false) || ...);
  }
  template <std::size_t... I>
  void copy_from(const OneOf &o, std::index_sequence<I...>) {
    ((tag_ == I ? (new (buf_) Ts(*reinterpret_cast<const Ts *>(o.buf_)), true) : false) || ...);
  }
  std::size_t tag_ = 0;
  alignas(MaxSize<Ts...>::align) unsigned char buf_[MaxSize<Ts...>::size];
};

struct DoubleGrowth {
  static std::size_t next(std::size_t n) { return n ? 2 * n : 8; }
};
struct StepGrowth {
  static std::size_t next(std::size_t n) { return n + 16; }
};
struct NoCheck {
  template <typename T>
  static bool ok(const T &) { return true; }
};
struct IdCheck {
  template <typename T>
  static bool ok(const T &v) { return v.id >= 0; }
};

template <typename T, typename Growth, typename Check>
class Pool {
 public:
  T *make(T v) {
    if (!Check::ok(v)) return nullptr;
    if (live_.size() == live_.capacity()) live_.reserve(Growth::next(live_.capacity()));
    live_.push_back(std::make_unique<T>(std::move(v)));
    return live_.back().get();
  }
  template <typename Pred>
  std::size_t reap(Pred dead) {
    auto it = std::remove_if(live_.begin(), live_.end(), [&](const std::unique_ptr<T> &p) { return dead(*p); });
    std::size_t n = live_.end() - it;
    live_.erase(it, live_.end());
    return n;
  }
  std::size_t size() const { return live_.size(); }
  template <typename F>
  void each(F &&f) {
    for (auto &p : live_) f(*p);
  }

 private:
  std::vector<std::unique_ptr<T>> live_;
};

template <typename Event>
class Bus {
 public:
  void on(std::function<int(const Event &)> h) { handlers_.push_back(std::move(h)); }
  int emit(const Event &e) {
    int s = 0;
    for (auto &h : handlers_) s += h(e);
    return s;
  }

 private:
  std::vector<std::function<int(const Event &)>> handlers_;
};

}  // namespace eng

"""

# (C++ type, an expression of it from the int k, an int from field f).
FIELDS = [
    ("int", "k * {c}", "{f}"),
    ("float", "k * {c}.5f", "(int){f}"),
    ("double", "k / {c}.25", "(int){f}"),
    ("std::int64_t", "(std::int64_t)k << {s}", "(int)({f} >> {s})"),
    ("std::uint16_t", "(std::uint16_t)(k + {c})", "(int){f}"),
    ("std::string", "\"u{i}_\" + std::to_string(k * {c})", "(int){f}.size()"),
    ("std::vector<int>", "std::vector<int>((std::size_t)(k % {c} + 1), k)", "(int){f}.size()"),
]

UNIT = """namespace u{i} {{
struct Comp{i}A {{
  int id = 0;
{fields_a}
  bool operator<(const Comp{i}A &o) const {{ return id < o.id; }}
}};
struct Comp{i}B {{
  int id = 0;
  std::string name;
{fields_b}
}};
struct Hit{i} {{
  int who;
  {hit_t} amount;
}};
using Any{i} = eng::OneOf<Comp{i}A, Comp{i}B, Hit{i}>;

static Comp{i}A make_a(int k) {{
  Comp{i}A a;
  a.id = k;
{init_a}
  return a;
}}
static Comp{i}B make_b(int k) {{
  Comp{i}B b;
  b.id = k;
  b.name = "b{i}_" + std::to_string(k);
{init_b}
  return b;
}}
static int score(const Comp{i}A &a) {{ return a.id{sum_a}; }}
static int score(const Comp{i}B &b) {{ return b.id + (int)b.name.size(){sum_b}; }}
}}  // namespace u{i}

extern "C" int gxx_system_{i}(int n) {{
  using namespace u{i};
  int total = 0;
{body}
  return total;
}}

"""

# The systems' parts: each unit's function uses a seeded choice of them,
# each instantiating its templates with the unit's own types.
FEATURES = {
    "smallvec": """  {{
    eng::SmallVec<Comp{i}A, {inline_n}> small;
    for (int k = 0; k < n; ++k) small.push(make_a(k * {c} % (n + 1)));
    small.sort([](const Comp{i}A &x, const Comp{i}A &y) {{ return {sort_expr}; }});
    small.each([&](Comp{i}A &a) {{ total += score(a); }});
  }}""",
    "flatmap": """  {{
    eng::FlatMap<std::string, Comp{i}B> byname;
    for (int k = 0; k < n; ++k) {{
      Comp{i}B b = make_b(k);
      byname[b.name] = b;
    }}
    byname.each([&](const std::string &key, const Comp{i}B &b) {{ total += (int)key.size() + score(b); }});
    if (const Comp{i}B *hit = byname.find("b{i}_1")) total += hit->id;
  }}""",
    "pool": """  {{
    eng::Pool<Comp{i}A, eng::{growth}, eng::{check}> pool;
    for (int k = 0; k < n; ++k) pool.make(make_a(k));
    total += (int)pool.reap([](const Comp{i}A &a) {{ return a.id % {m} == 0; }});
    pool.each([&](Comp{i}A &a) {{ total += score(a); }});
  }}""",
    "owned": """  {{
    std::map<int, std::unique_ptr<Comp{i}B>> owned;
    for (int k = 0; k < n; ++k) owned[k % {m}] = std::make_unique<Comp{i}B>(make_b(k));
    for (auto &kv : owned) total += score(*kv.second);
  }}""",
    "oneof": """  {{
    std::vector<Any{i}> anys;
    for (int k = 0; k < n; ++k) {{
      anys.push_back(Any{i}(Hit{i}{{k, ({hit_t})(k + {c})}}));
      if (k % 3 == {r}) anys.push_back(Any{i}(make_b(k + 1)));
    }}
    for (auto &x : anys) x.visit([&](auto &v) {{ total += score_any(v); }});
  }}""",
    "bus": """  {{
    eng::Bus<Hit{i}> bus;
    bus.on([](const Hit{i} &h) {{ return h.who + (int)h.amount; }});
    bus.on([&total](const Hit{i} &h) {{ total += h.who % {c}; return 1; }});
    for (int k = 0; k < n; ++k) total += bus.emit(Hit{i}{{k, ({hit_t})k}});
  }}""",
    "log": """  {{
    std::vector<std::pair<std::string, int>> log;
    for (int k = 0; k < n; ++k) log.emplace_back("a{i}_" + std::to_string(k), score(make_a(k)));
    std::sort(log.begin(), log.end(), [](const auto &x, const auto &y) {{ return x.second > y.second || (x.second == y.second && x.first < y.first); }});
    total += (int)log.size();
  }}""",
}
FEATURE_COUNT = 2

# score_any: the visitor's overload set, defined generically once per unit
# (a template in the unit's namespace, found by argument-dependent lookup).
SCORE_ANY = """namespace u{i} {{
static int score(const Hit{i} &h) {{ return h.who + (int)h.amount; }}
template <typename T>
int score_any(const T &v) {{ return score(v); }}
}}  // namespace u{i}
"""


def _fields(rng, i, obj, prefix, count):
    """count fields of a unit's type: declarations, initialisations of obj's
    fields and the terms of the score that reads them back."""
    decl, init, total = [], [], []
    for j in range(count):
        t, make, read = rng.choice(FIELDS)
        name = "%s%d" % (prefix, j)
        c, s = rng.randint(2, 97), rng.randint(1, 12)
        decl.append("  %s %s{};" % (t, name))
        init.append("  %s.%s = %s;" % (obj, name, make.format(c=c, s=s, i=i)))
        total.append(" + " + read.format(f="%s.%s" % (obj, name), s=s))
    return decl, init, total


def unit(rng, i):
    """The text of function unit i (its types, helpers and gxx_system_i)."""
    da, ia, sa = _fields(rng, i, "a", "fa", rng.randint(2, 5))
    db, ib, sb = _fields(rng, i, "b", "fb", rng.randint(1, 4))
    sort_expr = rng.choice(["x.id > y.id", "x < y", "(x.id ^ %d) < (y.id ^ %d)" % (i, i)])
    params = dict(
        i=i,
        fields_a="\n".join(da),
        fields_b="\n".join(db),
        init_a="\n".join(ia),
        init_b="\n".join(ib),
        sum_a="".join(sa),
        sum_b="".join(sb),
        hit_t=rng.choice(["int", "float", "double", "std::int64_t"]),
        inline_n=rng.choice([4, 8, 16, 32]),
        growth=rng.choice(["DoubleGrowth", "StepGrowth"]),
        check=rng.choice(["NoCheck", "IdCheck"]),
        c=rng.randint(2, 97),
        m=rng.randint(3, 17),
        r=rng.randint(0, 2),
        sort_expr=sort_expr)
    names = rng.sample(sorted(FEATURES), FEATURE_COUNT)
    params["body"] = "\n".join(FEATURES[f].format(**params) for f in names)
    text = UNIT.format(**params)
    # The visitor's helpers go after the unit's namespace, before the
    # function that uses them.
    head, sep, tail = text.partition('extern "C"')
    return head + SCORE_ANY.format(i=i) + "\n" + sep + tail


def source(functions, seed=SEED):
    rng = random.Random(seed)
    parts = [HEAD]
    for i in range(functions):
        parts.append(unit(rng, i))
    return "".join(parts), ["gxx_system_%d" % i for i in range(functions)]


if __name__ == "__main__":
    import sys
    t, _ = source(int(sys.argv[1]) if len(sys.argv) > 1 else 80)
    sys.stdout.write(t)
