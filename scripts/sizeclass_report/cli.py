# SPDX-License-Identifier: MIT
"""cli.py — the sizeclass-report command line."""

import argparse
import gc
import os
import re
import sys

from .diff import Budget, diff_json, diff_report, diff_text, read_budget_file
from .page import html_page, read_folded
from .schema import PROG, ReportError, read_report, read_reports
from .text import text_report


def cmd_text(args):
    docs = read_reports(args.report)
    for doc in docs:
        sys.stdout.write(text_report(doc))
    return 0


def cmd_html(args):
    doc = read_report(args.report)
    folded_path = args.folded
    if folded_path is None and os.path.exists(args.report + ".folded"):
        folded_path = args.report + ".folded"
    folded = read_folded(folded_path) if folded_path else None
    if not folded and doc.get("sites") is not None:
        folded = None  # an empty folded file: the report's own sites draw the graph
    page = html_page(doc, os.path.basename(args.report), folded,
                     os.path.basename(folded_path) if folded_path else None)
    out = args.output or (re.sub(r"\.json$", "", args.report) + ".html")
    if out == "-":
        sys.stdout.write(page)
        return 0
    tmp = out + ".tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(page)
        os.replace(tmp, out)
    except OSError as e:
        raise ReportError("%s: %s" % (out, e.strerror or e))
    return 0


def cmd_diff(args):
    exprs = []
    for path in args.budget or []:
        exprs += read_budget_file(path)
    exprs += args.fail_if or []
    budgets = [Budget(e) for e in exprs]
    base, new = read_report(args.base), read_report(args.new)
    totals, classes, grown, results = diff_report(base, new, args.base, args.new, budgets)
    render = diff_json if args.json else diff_text
    sys.stdout.write(render(base, new, args.base, args.new, totals, classes, grown, results))
    sys.stdout.flush()
    failed = [line for ok, line, _ in results if not ok]
    for line in failed:
        print("%s: budget exceeded: %s" % (PROG, line.split(None, 1)[1]), file=sys.stderr)
    return 1 if failed else 0


# ---- the command line ---------------------------------------------------------------------------

def main(argv=None):
    # A report is a tree of many small objects and nothing here makes cycles: the
    # cyclic collector would only walk them again and again (a third of the time
    # on a report of 100 000 sites).
    gc.disable()
    p = argparse.ArgumentParser(
        prog=PROG, description="The libsizeclass statistics report (JSON) as a page, as text, "
        "and as a comparison of two runs with budgets.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    h = sub.add_parser("html", help="one self-contained HTML page")
    h.add_argument("report", metavar="REPORT.json")
    h.add_argument("-o", "--output", metavar="FILE",
                   help="where the page goes (default: REPORT.html; - for stdout)")
    h.add_argument("--folded", metavar="FILE", help="folded stacks of the same run (default: "
                   "REPORT.json.folded when it exists)")
    t = sub.add_parser("text", help="the library's text report, from the JSON")
    t.add_argument("report", metavar="REPORT.json")
    d = sub.add_parser("diff", help="compare two reports; budgets for CI")
    d.add_argument("base", metavar="BASE.json")
    d.add_argument("new", metavar="NEW.json")
    d.add_argument("--json", action="store_true", help="the comparison as JSON")
    d.add_argument("--fail-if", action="append", metavar="EXPR",
                   help="exit 1 when EXPR holds, e.g. 'peak_bytes>+10%%' (repeatable)")
    d.add_argument("--budget", action="append", metavar="FILE",
                   help="a file of --fail-if expressions, one a line, # comments")
    args = p.parse_args(argv)
    if args.command is None:
        p.print_usage(sys.stderr)
        return 2
    try:
        return {"html": cmd_html, "text": cmd_text, "diff": cmd_diff}[args.command](args)
    except ReportError as e:
        print("%s: %s" % (PROG, e), file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


def run():
    """The command: its exit status is main's."""
    sys.exit(main())
