# SPDX-License-Identifier: MIT
"""cli.py — the sizeclass-report command line."""

import argparse
import gc
import os
import re
import sys

from .diff import Budget, diff_json, diff_report, diff_text, read_budget_file
from .page import html_page, read_folded
from .schema import PROG, ReportError, read_source, read_sources, split_source
from .sites import SourceLines
from .text import text_report


def cmd_text(args):
    docs = read_sources(args.report)
    lines = SourceLines(enabled=not args.no_lines)
    for doc in docs:
        sys.stdout.write(text_report(doc, lines if not args.no_lines else None))
    return 0


def default_page_path(arg):
    """REPORT.json -> REPORT.html; REPORT.json@NAME -> REPORT@NAME.html; - -> stdout."""
    path, name = split_source(arg)
    if path == "-":
        return "-"
    stem = re.sub(r"\.json$", "", path)
    if name is not None:
        stem += "@" + re.sub(r"[^\w.-]", "_", name)
    return stem + ".html"


def cmd_html(args):
    docs = read_sources(args.report)
    path, snapshot = split_source(args.report)
    folded_path = args.folded
    if folded_path is None and snapshot is None and path != "-" and \
            os.path.exists(path + ".folded"):
        folded_path = path + ".folded"
    folded = read_folded(folded_path) if folded_path else None
    if not folded and docs[-1].get("sites") is not None:
        folded = None  # an empty folded file: the report's own sites draw the graph
    src = "stdin" if path == "-" else os.path.basename(args.report)
    page = html_page(docs, src, folded, os.path.basename(folded_path) if folded_path else None,
                     SourceLines(enabled=not args.no_lines))
    out = args.output or default_page_path(args.report)
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
    base, new = read_source(args.base), read_source(args.new)
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
    source = ("a JSON report (- for stdin); FILE@NAME: its snapshot NAME (sc_snapshot); a file "
              "of several reports (one per process, or signal dumps): ")
    h.add_argument("report", metavar="REPORT.json", help=source + "one page, a section each")
    h.add_argument("-o", "--output", metavar="FILE",
                   help="where the page goes (default: REPORT.html; - for stdout, the default "
                   "when the report comes from stdin)")
    h.add_argument("--folded", metavar="FILE", help="folded stacks of the same run (default: "
                   "REPORT.json.folded when it exists)")
    lines_help = ("no file:line for the sites (by default addr2line finds them in programs "
                  "built with -g)")
    h.add_argument("--no-lines", action="store_true", help=lines_help)
    t = sub.add_parser("text", help="the library's text report, from the JSON")
    t.add_argument("report", metavar="REPORT.json", help=source + "each in turn")
    t.add_argument("--no-lines", action="store_true", help=lines_help + "; the text is then "
                   "the library's own, byte for byte")
    d = sub.add_parser("diff", help="compare two reports; budgets for CI")
    d.add_argument("base", metavar="BASE.json", help="a JSON report (its last), FILE@NAME a "
                   "snapshot, - stdin")
    d.add_argument("new", metavar="NEW.json", help="the same for the new run")
    d.add_argument("--json", action="store_true", help="the comparison as JSON")
    d.add_argument("--fail-if", action="append", metavar="EXPR",
                   help="exit 1 when EXPR holds, e.g. 'peak_bytes>+10%%', "
                   "'class[64].hit_rate<90%%', 'tag[audio].peak_block_bytes>+5%%', "
                   "'thread[render].live_block_bytes>2MiB', 'budget[tag:audio].peak_share>90%%' "
                   "(repeatable)")
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
