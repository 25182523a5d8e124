# SPDX-License-Identifier: MIT
# mk/lint.mk — the linters of the scripts (`make lint` runs them after the
# layers and cppcheck; CI runs `make lint`):
#
#   make lint-py   pyflakes (Debian's pyflakes3) over every Python file of
#                  scripts/, bench/ and tests/report/: the *.py files and
#                  those whose first line names python (sizeclass-report,
#                  sc-addr2line)
#   make lint-sh   shellcheck over every shell script of scripts/ (*.sh and
#                  those whose first line names sh or bash, sizeclass-run),
#                  .ci/run and mk/*.sh
# Silent when clean; any finding fails. A finding that is intended is
# silenced where it stands with `# shellcheck disable=SCnnnn # why`.
# Tracked and new (untracked, not ignored) files alike.

.PHONY: lint-py lint-sh lint-scripts lint-deps

lint-deps:
	@scripts/ensure-deps.sh lint

# $(call lint_files,DIRS,SHEBANG-REGEX,SUFFIX): the files under DIRS named
# *SUFFIX or whose first line matches SHEBANG-REGEX.
lint_files = for f in $$(git ls-files -co --exclude-standard $(1)); do \
    [ -f "$$f" ] || continue; \
    case "$$f" in *$(3)) echo "$$f" ;; \
      *) head -n 1 "$$f" | grep -qE '$(2)' && echo "$$f" ;; esac; \
  done; true

lint-py: lint-deps
	@files=$$($(call lint_files,scripts bench tests/report,^#!.*python,.py)); \
	  pyflakes3 $$files

lint-sh: lint-deps
	@files=$$($(call lint_files,scripts mk .ci,^#!.*(/|env )(ba)?sh,.sh)); \
	  shellcheck $$files

lint-scripts: lint-py lint-sh
