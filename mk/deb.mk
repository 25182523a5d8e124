# SPDX-License-Identifier: MIT
# mk/deb.mk — Debian packages (issue 14).
#   make deb        build/deb/libsizeclass$(SOMAJOR)_$(VERSION)_ARCH.deb (shared library,
#                   sizeclass-run, sizeclass(7), sizeclass-run(1)) and
#                   libsizeclass-dev_$(VERSION)_ARCH.deb (headers, static library,
#                   pkg-config and CMake files, API man pages), from a DESTDIR staging tree
#                   with dpkg-deb (scripts/mkdeb.sh; packaging/debian/ holds the control
#                   templates, changelog, copyright and the symbols file)
#   make test-deb   as root: make deb, lintian (no errors), apt-get install of both, a
#                   program through the installed sizeclass-run --stats, pkg-config and
#                   CMake builds against the installed files, then apt-get purge and a check
#                   that nothing is left (scripts/test-deb.sh). CI runs it.
# Version and soname come from the Makefile's VERSION and SOMAJOR.

.PHONY: deb deb-deps test-deb

deb-deps:
	@scripts/ensure-deps.sh deb

# mkdeb.sh runs make install into its staging tree. Named through
# MKDEB_MAKE: a recipe line that names $$(MAKE) itself would also run under
# `make -n deb`.
MKDEB_MAKE = $(MAKE)
deb: deb-deps lib
	@BUILD=$(BUILD) VERSION=$(VERSION) SOMAJOR=$(SOMAJOR) MAKE="$(MKDEB_MAKE)" scripts/mkdeb.sh

test-deb: deb
	@BUILD=$(BUILD) VERSION=$(VERSION) SOMAJOR=$(SOMAJOR) scripts/test-deb.sh
