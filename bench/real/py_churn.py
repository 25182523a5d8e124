# SPDX-License-Identifier: MIT
"""py_churn.py N — object churn in CPython: small class instances, dicts,
lists, tuples and strings created and dropped in random order (like a game
server's entity table). Checks its own results and exits 1 on a mismatch.

The random sequence is a 64-bit LCG of our own, so the work is the same on
every Python version. Run with PYTHONMALLOC=malloc to send every object
through malloc; by default CPython's pymalloc serves objects <= 512 B itself
and the allocator under test sees only the larger blocks."""
import sys

MASK = (1 << 64) - 1


class Entity:
    """A game object: a name, a value, a few child ids and a label."""

    def __init__(self, key, value, nchild, label_len):
        self.name = "e%d" % key
        self.value = value
        self.children = [key * 8 + i for i in range(nchild)]
        self.label = "x" * label_len
        self.pos = (key & 1023, value & 1023)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
    keyspace = max(16, n // 8)
    state = 12345
    live = {}
    running = 0  # sum of values of live entities, kept incrementally
    made = 0
    temp_sum = 0
    for _ in range(n):
        state = (state * 6364136223846793005 + 1442695040888963407) & MASK
        r = state >> 11
        op = r % 10
        key = (r >> 8) % keyspace
        if op < 5:
            e = Entity(key, r & 0xFFFF, r % 8, (r >> 20) % 60)
            old = live.get(key)
            if old is not None:
                running -= old.value
            live[key] = e
            running += e.value
            made += 1
        elif op < 8:
            old = live.pop(key, None)
            if old is not None:
                running -= old.value
        else:
            k = (r >> 24) % 24
            parts = [str(i * 3) for i in range(k)]
            s = ",".join(parts)
            rows = [(i, parts[i]) for i in range(k)]
            if len(s) != sum(len(p) for p in parts) + max(0, k - 1) or len(rows) != k:
                print("py_churn: bad temporary", file=sys.stderr)
                sys.exit(1)
            temp_sum += len(s)
    total = 0
    for key, e in live.items():
        want = [key * 8 + i for i in range(len(e.children))]
        if e.name != "e%d" % key or e.children != want or e.label != "x" * len(e.label):
            print("py_churn: entity %d corrupted" % key, file=sys.stderr)
            sys.exit(1)
        if e.pos != (key & 1023, e.value & 1023):
            print("py_churn: entity %d position corrupted" % key, file=sys.stderr)
            sys.exit(1)
        total += e.value
    if total != running:
        print("py_churn: sum %d != running %d" % (total, running), file=sys.stderr)
        sys.exit(1)
    print("OK live=%d made=%d sum=%d temp=%d" % (len(live), made, total, temp_sum))


main()
