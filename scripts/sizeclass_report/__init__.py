# SPDX-License-Identifier: MIT
"""sizeclass_report — the libsizeclass statistics report (JSON) as a page, as
text, and as a comparison of two runs with budgets. Python 3 standard library
only. One command, `sizeclass-report` (cli.py); its modules, one job each:

  schema  reading a report: parsing, the schema check, snapshots (file@name)
  fmt     numbers as the library writes them (src/report/emit.c)
  sites   allocation sites: the program's frames, file:line (addr2line)
  text    the text report: the one text renderer of the tool
  page    the report as one self-contained HTML page
  diff    two reports compared, and budgets (--fail-if)
  cli     the command line

From a source tree, scripts/sizeclass-report runs it; `make install` installs it
as one file, a zipapp of this package (mk/install.mk)."""
