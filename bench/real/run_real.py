# SPDX-License-Identifier: MIT
"""run_real.py NAME SIZE — run one real-program benchmark under the allocator
named by $BENCH_PRELOAD (a path for LD_PRELOAD; empty = glibc) and print the
RESULT line the runner reads.

Only the real program runs under LD_PRELOAD; this launcher does not. The
time is the program's wall time (spawn to exit); the peak RSS, minor page
faults and system time are the program's own (wait4's rusage), not the
launcher's. wait4's rusage covers the child and every descendant it waited
for (Linux folds a reaped child's usage into its parent's "children"
figures, and wait4 reports both): for g++ the system time and faults are
the sums over the driver, cc1plus and as, the peak RSS the largest of the
three (cc1plus's; checked against cc1plus run alone: the same peak within
0.1 %, and against `g++ -time`'s per-program times). Each workload checks
its results and a mismatch exits non-zero:
  python         bench/real/py_churn.py (CPython's default pymalloc)
  python-malloc  the same with PYTHONMALLOC=malloc (every object via malloc)
  perl           bench/real/perl_churn.pl
  sqlite         Debian's sqlite3 CLI, in-memory: bulk and single-row
                 inserts, indexes, aggregates, updates and deletes; the
                 output is compared with values computed here.
  freeciv        Debian's freeciv-server playing SIZE turns of an AI-only
                 game (bench/real/freeciv_game.py); the score log must end
                 at the last turn and is the checksum.
  cppcheck       Debian's cppcheck (a C++ static analyser) on a generated
                 C++ file of SIZE lines (bench/real/cxx_source.py): it
                 must report exactly the planted out-of-bounds writes,
                 line by line (issue 31: a real C++ program).
  gxx            Debian's g++ (/usr/bin/g++, GCC 12: the driver, cc1plus
                 and as, all three preloaded through the environment)
                 compiling with -O1 -c a generated template-heavy C++ file
                 of SIZE functions (bench/real/gxx_source.py); it must exit
                 0 and the object file must define exactly the SIZE
                 extern "C" functions gxx_system_0.. (nm). BENCH_CORRUPT=k
                 renames function k (mod SIZE) in the source, so the check
                 must fail (tests/test_bench_smoke.c). Issue 31: a real
                 C++ program.
  redis          Debian's redis-server driven by redis-benchmark, SIZE
                 requests of each command (bench/real/redis_kv.py); the
                 metric is microseconds per request (the inverse of the
                 throughput, so lower is better like every other metric),
                 RSS, faults and system time are the server's; an EXTRA
                 line carries req_per_s."""
import os
import subprocess
import sys
import tempfile
import time

import cxx_source
import freeciv_game
import gxx_source
import redis_kv

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"
PERL = "/usr/bin/perl"
SQLITE = "/usr/bin/sqlite3"
CPPCHECK = "/usr/bin/cppcheck"
GXX = "/usr/bin/g++"
NM = "/usr/bin/nm"


def sqlite_workload(n):
    """SQL text for n rows and the exact output sqlite3 must print."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    singles = max(10, n // 10)
    sql = [
        "CREATE TABLE t(id INTEGER PRIMARY KEY, grp INTEGER, name TEXT, val INTEGER);",
        "CREATE TABLE u(id INTEGER PRIMARY KEY, note TEXT);",
        "BEGIN;",
        "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < %d) "
        "INSERT INTO t SELECT i, i %% 97, printf('name-%%d-%%s', i, substr('%s', 1, 1 + i %% 26)), "
        "(i * 7919) %% 10007 FROM c;" % (n, letters),
        "COMMIT;",
        "BEGIN;",
    ]
    for i in range(1, singles + 1):
        sql.append("INSERT INTO u VALUES(%d, 'note %d %s');" % (i, i * 31, letters[: 1 + i % 26]))
    sql += [
        "COMMIT;",
        "CREATE INDEX t_name ON t(name);",
        "CREATE INDEX t_grp ON t(grp, val);",
        "SELECT count(*), sum(val), sum(length(name)) FROM t;",
        "SELECT grp, count(*), sum(val) FROM t GROUP BY grp ORDER BY grp LIMIT 3;",
        "SELECT count(*) FROM t WHERE name LIKE 'name-1%';",
        "SELECT count(*), sum(length(note)) FROM u;",
        "SELECT count(*) FROM t JOIN u ON t.id = u.id WHERE t.grp < 10;",
        "UPDATE t SET name = name || '-x' WHERE id % 3 = 0;",
        "DELETE FROM t WHERE id % 5 = 0;",
        "SELECT count(*), sum(length(name)), max(val) FROM t;",
    ]
    rows = [(i, i % 97, "name-%d-%s" % (i, letters[: 1 + i % 26]), (i * 7919) % 10007)
            for i in range(1, n + 1)]
    notes = ["note %d %s" % (i * 31, letters[: 1 + i % 26]) for i in range(1, singles + 1)]
    out = []
    out.append("%d|%d|%d" % (n, sum(r[3] for r in rows), sum(len(r[2]) for r in rows)))
    for g in range(3):
        grp = [r for r in rows if r[1] == g]
        out.append("%d|%d|%d" % (g, len(grp), sum(r[3] for r in grp)))
    out.append("%d" % sum(1 for r in rows if r[2].startswith("name-1")))
    out.append("%d|%d" % (singles, sum(len(s) for s in notes)))
    out.append("%d" % sum(1 for r in rows if r[0] <= singles and r[1] < 10))
    kept = [(r[2] + "-x" if r[0] % 3 == 0 else r[2], r[3]) for r in rows if r[0] % 5 != 0]
    out.append("%d|%d|%d" % (len(kept), sum(len(k[0]) for k in kept), max(k[1] for k in kept)))
    return "\n".join(sql) + "\n", "\n".join(out) + "\n"


def churn_check(want_prefix):
    """A checker for the self-checking scripts: exit 0 and an OK line."""
    return lambda out: out.startswith(want_prefix)


def cppcheck_plan(size, workdir):
    """cppcheck on a generated file in workdir; its findings (stderr, merged
    into the output) must be the planted defects, one line each."""
    text, defects = cxx_source.source(size)
    path = os.path.join(workdir, "gen.cpp")
    with open(path, "w") as f:
        f.write(text)
    want = sorted("%d:arrayIndexOutOfBounds" % n for n in defects)
    argv = [CPPCHECK, "-q", "--template={line}:{id}", path]
    return argv, {}, None, lambda out: sorted(out.splitlines()) == want


def defined_functions(obj):
    """The gxx_system_* text symbols obj defines (nm, not preloaded)."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    out = subprocess.run([NM, "--defined-only", obj], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, check=False).stdout.decode(errors="replace")
    return sorted(f[2] for f in (ln.split() for ln in out.splitlines())
                  if len(f) == 3 and f[1] == "T" and f[2].startswith("gxx_system_"))


def gxx_plan(size, workdir):
    """g++ -O1 -c on a generated file in workdir (its temporary assembly
    too: TMPDIR); the object must define the generated functions."""
    text, symbols = gxx_source.source(size)
    corrupt = int(os.environ.get("BENCH_CORRUPT", "0") or 0)
    if corrupt:
        k = corrupt % size
        text = text.replace('int gxx_system_%d(' % k, 'int gxx_renamed_%d(' % k)
    src = os.path.join(workdir, "gen.cpp")
    obj = os.path.join(workdir, "gen.o")
    with open(src, "w") as f:
        f.write(text)
    want = sorted(symbols)

    def check(_out):
        return (os.path.isfile(obj) and os.path.getsize(obj) > 0 and
                defined_functions(obj) == want)

    return [GXX, "-O1", "-c", src, "-o", obj], {"TMPDIR": workdir}, None, check


def plan(name, size, workdir=None):
    """(argv, extra environment, stdin text or None, output checker)."""
    if name == "cppcheck":
        return cppcheck_plan(size, workdir)
    if name == "gxx":
        return gxx_plan(size, workdir)
    if name == "python":
        return [PYTHON, os.path.join(HERE, "py_churn.py"), str(size)], {}, None, churn_check("OK ")
    if name == "python-malloc":
        return ([PYTHON, os.path.join(HERE, "py_churn.py"), str(size)],
                {"PYTHONMALLOC": "malloc"}, None, churn_check("OK "))
    if name == "perl":
        return [PERL, os.path.join(HERE, "perl_churn.pl"), str(size)], {}, None, churn_check("OK ")
    if name == "sqlite":
        sql, want = sqlite_workload(size)
        return [SQLITE, ":memory:"], {}, sql, lambda out: out == want
    sys.exit("run_real.py: unknown benchmark '%s' (python, python-malloc, perl, sqlite, cppcheck, "
             "gxx, freeciv, redis)" % name)


def result(name, metric, unit, ops, checksum, ru):
    """The RESULT line of bench.h: rusage figures are the measured program's."""
    print("RESULT bench=%s metric=%.3f unit=%s ops=%d checksum=%016x rss_kb=%d minflt=%d "
          "stime_ms=%.1f" % (name, metric, unit, ops, checksum & 0xFFFFFFFFFFFFFFFF,
                             ru.ru_maxrss, ru.ru_minflt, ru.ru_stime * 1e3))


def run_program(name, size, env, preload):
    """The single-process workloads of plan(): spawn, wait4, check."""
    with tempfile.TemporaryDirectory() as workdir:
        run_planned(name, size, env, preload, workdir)


def run_planned(name, size, env, preload, workdir):
    """run_program's work, with a scratch directory for the program's files."""
    argv, extra, stdin_text, check = plan(name, size, workdir)
    env = dict(env)
    env.update(extra)
    if preload:
        env["LD_PRELOAD"] = preload
    # cppcheck reports its findings on stderr: they are its output (g++'s
    # diagnostics too: none when it compiles cleanly).
    err = subprocess.STDOUT if name in ("cppcheck", "gxx") else None
    with tempfile.TemporaryFile() as fin, tempfile.TemporaryFile() as fout:
        if stdin_text is not None:
            fin.write(stdin_text.encode())
            fin.seek(0)
        t0 = time.perf_counter_ns()
        proc = subprocess.Popen(argv, stdin=fin, stdout=fout, stderr=err, env=env)
        _, status, ru = os.wait4(proc.pid, 0)
        dt = time.perf_counter_ns() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        fout.seek(0)
        out = fout.read().decode(errors="replace")
    if proc.returncode != 0:
        sys.stderr.write(out[-2000:])
        sys.exit("run_real.py: %s exited with status %d" % (name, proc.returncode))
    if not check(out):
        sys.stderr.write(out[-2000:])
        sys.exit("run_real.py: %s printed a wrong result" % name)
    result(name, dt / 1e6, "ms", 1, sum(out.encode()), ru)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: run_real.py NAME SIZE")
    name, size = sys.argv[1], int(sys.argv[2])
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    preload = os.environ.get("BENCH_PRELOAD", "")
    try:
        if name == "freeciv":
            dt, ru, log = freeciv_game.run(size, env, preload)
            result(name, dt / 1e6, "ms", size, freeciv_game.checksum(log), ru)
        elif name == "redis":
            dt, ru, requests, text = redis_kv.run(size, env, preload)
            print("EXTRA req_per_s=%.0f requests=%d" % (requests / (dt / 1e9), requests))
            result(name, dt / 1e3 / requests, "us/req", requests, redis_kv.checksum(text), ru)
        else:
            run_program(name, size, env, preload)
    except (RuntimeError, OSError) as e:
        sys.exit("run_real.py: %s: %s" % (name, e))


main()
