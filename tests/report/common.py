# SPDX-License-Identifier: MIT
"""common.py — what the Python tests of sizeclass-report share: the source
root, the package on sys.path, the fixtures, and a runner of the command.
Python 3 standard library only."""

import copy
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "report", "fixtures")
TOOL = os.path.join(ROOT, "scripts", "sizeclass-report")
sys.path.insert(0, os.path.join(ROOT, "scripts"))

_BASE = None


def base():
    """A fresh copy of fixtures/base.json: a real report of report_twin (exact
    statistics, sites, 17 frames), from before the tags, threads, budgets and
    snapshots keys."""
    global _BASE
    if _BASE is None:
        with open(os.path.join(FIXTURES, "base.json")) as f:
            _BASE = json.load(f)
    return copy.deepcopy(_BASE)


def fixture(name):
    """A fresh copy of fixtures/NAME. full.json is synthetic: base.json with the
    keys the C side is gaining (COMMON schema): "reason" an abort, three tags
    (one named with markup, quotes and a newline; "audio" over its budget),
    three thread rows (three exited workers folded into one), four budgets
    (tag:audio breached at frame 12) and two named snapshots (level_loaded at
    frame 5, level_unloaded at frame 15, half its live and peak bytes)."""
    with open(os.path.join(FIXTURES, name)) as f:
        return json.load(f)


def run(args, stdin=None, tool=TOOL):
    """sizeclass-report ARGS: (exit status, stdout, stderr)."""
    p = subprocess.run([sys.executable, tool] + list(args), input=stdin, capture_output=True,
                       text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def write(tmp, name, doc):
    """doc (an object, or text) into tmp/name; its path."""
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(doc if isinstance(doc, str) else json.dumps(doc, indent=1))
    return path
