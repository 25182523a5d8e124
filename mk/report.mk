# SPDX-License-Identifier: MIT
# report.mk — sizeclass-report (issue 20): the JSON report as a page, as text, and budgets.
#   make test-report   install Chromium (scripts/ensure-deps.sh report: Debian's chromium, not
#                      a dependency of make test), run the demo with its JSON report and sites,
#                      render its page, and check it in headless Chromium: layout (no text over
#                      text, nothing beyond 1280 px, the flame graph's zoom), a screenshot that is
#                      not blank, every section in the DOM (scripts/test-report.sh). CI runs it.
#                      The screenshot is $(BUILD)/test-report/report.png; docs/report.png is a
#                      copy. The parts that need no browser are tests/test_report.c (make test).
#   make test-report-tool  the Python tests of the tool alone (tests/report/test_*.py, standard
#                      library unittest; test_report's python_unit_tests runs them in make test)
#                      and pyflakes over its package when it is installed (Debian's pyflakes3).

.PHONY: test-report report-deps test-report-tool

report-deps:
	@scripts/ensure-deps.sh report

test-report: report-deps lib $(DEMO)
	@BUILD=$(BUILD) scripts/test-report.sh

test-report-tool: lib
	@if command -v pyflakes3 >/dev/null; then \
	  pyflakes3 scripts/sizeclass-report scripts/sizeclass_report/*.py tests/report/*.py; fi
	@SC_BUILD=$(abspath $(BUILD)) python3 -m unittest discover -s tests/report -p 'test_*.py'
