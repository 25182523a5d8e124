# SPDX-License-Identifier: MIT
"""cxx_source.py — a generated C++ source file for the static-analyser
benchmark (bench/real/run_real.py "cppcheck"): namespaces of class
templates, classes with std containers, lambdas and loops, about 60 lines
a unit, and in every unit one out-of-bounds write the analyser must report.
The analyser's work is C++ work: its token list, symbol database and value
flow are std::string, std::list, std::vector and std::map nodes.

  source(lines) -> (text, defect_lines): defect_lines are the 1-based
  lines of the planted defects, in order."""

UNIT = """namespace ns{i} {{
template <typename T, int N>
struct Box{i} {{
  T items[N];
  std::vector<T> extra;
  std::map<std::string, T> named;
  T sum() const {{
    T s{{}};
    for (int k = 0; k < N; ++k) s += items[k];
    for (const auto &e : extra) s += e;
    return s;
  }}
  void put(const std::string &key, T v) {{
    named[key] = v;
    extra.push_back(v + {i});
  }}
}};

class Widget{i} {{
 public:
  explicit Widget{i}(int x) : x_(x), name_("widget_{i}") {{}}
  int run(int n) {{
    std::vector<int> v;
    for (int k = 0; k < n; ++k) {{
      if (k % 3 == {m3}) v.push_back(k * x_);
      else v.push_back(k + {i});
    }}
    int acc = 0;
    for (size_t k = 0; k < v.size(); ++k) acc += v[k];
    std::sort(v.begin(), v.end(), [this](int a, int b) {{ return a * x_ < b * x_; }});
    return acc + (int)name_.size();
  }}
  std::string label(int k) const {{
    std::string s = name_;
    s += "_";
    s += std::to_string(k * {i});
    return s;
  }}

 private:
  int x_;
  std::string name_;
  std::map<int, std::string> cache_;
}};

int use{i}(int n) {{
  Box{i}<int, {n}> box{{}};
  Widget{i} w(n + {i});
  box.put(w.label(n), w.run(n));
  int buf[{n}];
  for (int k = 0; k < {n}; ++k) buf[k] = k;
  buf[{n}] = box.sum();
  return buf[0];
}}
}}  // namespace ns{i}

"""
DEFECT_LINE = UNIT.split("\n").index("  buf[{n}] = box.sum();")


def source(lines):
    head = "#include <algorithm>\n#include <map>\n#include <string>\n#include <vector>\n\n"
    text, defects = [head], []
    at = head.count("\n")
    i = 0
    while at < lines:
        unit = UNIT.format(i=i, m3=i % 3, n=4 + i % 13)
        defects.append(at + DEFECT_LINE + 1)
        text.append(unit)
        at += unit.count("\n")
        i += 1
    return "".join(text), defects


if __name__ == "__main__":
    import sys
    t, d = source(int(sys.argv[1]) if len(sys.argv) > 1 else 5000)
    sys.stdout.write(t)
