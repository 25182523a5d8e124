#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check-layers.py — the library's layers keep to their rule (src/README.md).

    scripts/check-layers.py [--root DIR] [--objects DIR]

Includes (the sources under DIR/src and DIR/shim): a file may include the
headers of its own folder and of the folders below it, named with their
folder ("core/internal.h"; the public headers of include/ by their name):

    util/      util/
    core/      util/, core/
    features/  util/, core/, features/
    report/    util/, report/ and core/snapshot.h: nothing else of the core
               (what core/snapshot.h pulls in is constants only), nothing of
               the features
    api/       anything
    shim/      util/, core/
    mark/      mark/ (the labels that bracket the library's code: any layer
               may read them, they use nothing)

Calls (with --objects: the build's object directory, DIR/src/<folder>/*.o
and DIR/shim/*.o): what an object leaves undefined must be defined in its
own folder or below it (util < core < features < report < api; the shim
maps onto util and core), with two doors upwards:
  - the core references nothing of a higher layer but, weakly, the
    features' table (sc__feature_table, core/hooks.h): a weak reference
    that stays 0 when the core is linked alone; every call of a feature
    goes through that table, at run time;
  - the report reaches the core and the features only through
    core/snapshot.h (and the constants it includes).
Features never call the report.

Prints one line per breach and exits 1; silent and 0 when every rule holds.
"""
import argparse
import os
import re
import subprocess
import sys

ORDER = ["util", "core", "features", "report", "api"]
# Folders whose headers each folder may include.
MAY_INCLUDE = {
    "util": {"util"},
    "core": {"util", "core"},
    "features": {"util", "core", "features"},
    "report": {"util", "report"},  # and SNAPSHOT below
    "api": set(ORDER),
    "shim": {"util", "core"},
    "mark": {"mark"},
}
# The core's face to the report: snapshot.h and what it includes.
SNAPSHOT = {"core/snapshot.h", "core/config.h", "core/feature_bits.h", "core/size_class.h"}
# The core's one door to the features: a weak reference to their table.
FEATURE_TABLE = "sc__feature_table"

INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder_of(rel):
    """'core' for 'src/core/arena.c', 'shim' for 'shim/shim.c'."""
    parts = rel.split("/")
    if parts[0] == "shim":
        return "shim"
    return parts[1] if parts[0] == "src" and len(parts) > 2 else None


def sources(root):
    for top in ("src", "shim"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    path = os.path.join(dirpath, f)
                    yield os.path.relpath(path, root), path


def includes(path):
    with open(path, encoding="utf-8", errors="replace") as fh:
        return INCLUDE_RE.findall(fh.read())


def check_includes(root, errors):
    public = set(os.listdir(os.path.join(root, "include"))) if os.path.isdir(
        os.path.join(root, "include")) else set()
    graph = {}
    for rel, path in sources(root):
        layer = folder_of(rel)
        if layer is None:
            errors.append(f"{rel}: a source outside the layers (src/<layer>/)")
            continue
        incs = includes(path)
        graph[rel] = incs
        for inc in incs:
            if "/" not in inc:
                if inc not in public:
                    errors.append(f'{rel}: #include "{inc}": name the header with its folder')
                continue
            target = inc.split("/")[0]
            if target not in MAY_INCLUDE:
                errors.append(f'{rel}: #include "{inc}": not a header of a layer')
                continue
            ok = (target in MAY_INCLUDE[layer] or target == "mark" or
                  (layer == "report" and inc in SNAPSHOT))
            if not ok:
                errors.append(f'{rel}: #include "{inc}": {layer}/ may not include {target}/'
                              + (" (only core/snapshot.h)" if layer == "report" else ""))
    # What the report sees through the headers it includes: the snapshot's
    # closure must stay constants and declarations of the views.
    def closure(h, seen):
        for inc in graph.get("src/" + h, []):
            if "/" in inc and inc not in seen:
                seen.add(inc)
                closure(inc, seen)
        return seen
    for rel, incs in graph.items():
        if folder_of(rel) != "report":
            continue
        seen = set()
        for inc in incs:
            if "/" in inc:
                seen.add(inc)
                closure(inc, seen)
        for h in sorted(seen):
            if h.split("/")[0] in ("core", "features", "api") and h not in SNAPSHOT:
                errors.append(f"{rel}: reaches {h} through its includes (the report reads "
                              "core/snapshot.h only)")


def nm(path):
    """(defined, undefined) global symbols of an object; undefined maps each
    name to its nm type (U, or w for a weak reference)."""
    out = subprocess.run(["nm", "-P", path], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), {}
    for line in out.splitlines():
        f = line.split()
        if len(f) < 2:
            continue
        if f[1] in ("U", "w", "v"):
            undefined[f[0]] = f[1]
        else:
            defined.add(f[0])
    return defined, undefined


def declared(root, headers):
    """Every sc_/sc__ name that the headers mention."""
    names = set()
    for h in headers:
        with open(os.path.join(root, "src", h), encoding="utf-8") as fh:
            names |= set(re.findall(r"\bsc_{1,2}[a-z0-9_]+\b", fh.read()))
    return names


def check_calls(root, objdir, errors):
    objects = {}
    for layer in ORDER + ["mark"]:
        d = os.path.join(objdir, "src", layer)
        if os.path.isdir(d):
            for f in sorted(os.listdir(d)):
                if f.endswith(".o"):
                    objects[f"{layer}/{f}"] = (layer, nm(os.path.join(d, f)))
    d = os.path.join(objdir, "shim")
    if os.path.isdir(d):
        for f in sorted(os.listdir(d)):
            if f.endswith(".o"):
                objects[f"shim/{f}"] = ("shim", nm(os.path.join(d, f)))
    if not any(layer == "core" for layer, _ in objects.values()):
        errors.append(f"{objdir}: no objects of src/core (build the library first)")
        return
    owner = {}
    for name, (layer, (defined, _)) in objects.items():
        for sym in defined:
            owner.setdefault(sym, (name, layer))
    snapshot = declared(root, SNAPSHOT)
    rank = {layer: i for i, layer in enumerate(ORDER)}
    for name, (layer, (_, undefined)) in objects.items():
        for sym in sorted(undefined):
            if sym not in owner:
                continue  # the C library, libgcc, the program
            where, target = owner[sym]
            if target == layer or layer == "api":
                continue
            if target == "mark":
                continue  # the labels around the library's code
            if layer == "mark":
                errors.append(f"{name}: uses {sym} ({where}): the marks stand alone")
                continue
            if layer == "shim":
                if target not in ("util", "core"):
                    errors.append(f"{name}: calls {sym} ({where}): the shim maps onto the core")
                continue
            if target == "shim":
                errors.append(f"{name}: calls {sym} ({where}): nothing calls the shim")
                continue
            if layer == "report":
                if target != "util" and sym not in snapshot:
                    errors.append(f"{name}: calls {sym} ({where}), which core/snapshot.h does "
                                  "not declare: the report reads snapshots only")
                continue
            if rank[target] < rank[layer]:
                continue  # downwards
            if (layer == "core" and target == "features" and sym == FEATURE_TABLE
                    and undefined[sym] in ("w", "v")):
                continue  # the features' table, weakly (core/hooks.h)
            door = " (only the features' table, weakly: core/hooks.h)" if layer == "core" else ""
            errors.append(f"{name}: calls {sym} ({where}): {layer}/ may not call "
                          f"{target}/{door}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=".")
    ap.add_argument("--objects", help="the build's object directory (build/obj)")
    args = ap.parse_args()
    errors = []
    check_includes(args.root, errors)
    if args.objects:
        check_calls(args.root, args.objects, errors)
    for e in errors:
        print("layers: " + e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
