#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the seed corpus of fuzz_alloc (tests/fuzz/corpus/) deterministically.

Each operation is 5 bytes: op, slot, size lo, size hi, extra (see
fuzz_alloc.c). Ops: 0 malloc, 1 calloc, 2 realloc, 3 memalign, 4
posix_memalign, 5 aligned_alloc, 6/7 free, 8 free on the other thread,
9 malloc on the other thread."""
import os
import random

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def op(code, slot, size, extra=0):
    return bytes([code, slot, size & 0xFF, (size >> 8) & 0xFF, extra])


def write(name, ops):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(b"".join(ops))


def main():
    os.makedirs(HERE, exist_ok=True)
    sizes = [0, 1, 15, 16, 17, 31, 32, 33, 64, 100, 128, 255, 256, 511, 512, 1000, 1023, 1024,
             1025, 2048, 4096]
    write("classes", [op(0, i, n) for i, n in enumerate(sizes)] +
          [op(6, i, 0) for i in range(len(sizes))])
    chain = [0, 1, 16, 17, 1024, 1025, 4096, 1025, 1024, 33, 1, 0, 8]
    write("realloc_chain", [op(2, 3, n) for n in chain])
    write("aligned", [op(3 + k % 3, k % 20, sizes[k % len(sizes)], k) for k in range(60)])
    write("remote", [op(0, i, 32 * (i + 1)) for i in range(16)] +
          [op(8, i, 0) for i in range(0, 16, 2)] +
          [op(9, i, 24 * i) for i in range(16, 32)] +
          [op(0, i, 32 * (i + 1)) for i in range(0, 16, 2)] +
          [op(6, i, 0) for i in range(32)])
    write("calloc", [op(1, i, n, i) for i, n in enumerate(sizes)])
    rng = random.Random(6)
    write("mix", [op(rng.randrange(10), rng.randrange(64), rng.choice(sizes + [rng.randrange(4097)]),
                     rng.randrange(256)) for _ in range(400)])


if __name__ == "__main__":
    main()
