# SPDX-License-Identifier: MIT
# install.mk — installation, as users of jemalloc and mimalloc expect (issues 5, 14).
#   make install   [PREFIX=/usr/local] [DESTDIR=] [LIBDIR=$(PREFIX)/lib] ...
#   make uninstall (same variables): removes exactly the files install wrote
# Installs: libsizeclass.so.$(VERSION) (soname libsizeclass.so.$(SOMAJOR)) with the
# libsizeclass.so.$(SOMAJOR) and libsizeclass.so links, libsizeclass.a, the public headers,
# sizeclass.pc for pkg-config, the CMake package ($(LIBDIR)/cmake/sizeclass: config, version
# file and targets sizeclass::sizeclass and sizeclass::static), the sizeclass-run wrapper, the
# sizeclass-report tool (Python 3, standard library only: the report as a page, as text, and
# budgets; the package scripts/sizeclass_report/ as one file, a zipapp built into
# $(BUILD)/sizeclass-report by `make report-tool`), the sizeclass-top live viewer (Python 3, curses) and the man pages of man/ (other names of a page's functions are symbolic links to
# it).
# DESTDIR stages the tree (packaging, `make deb`): paths written into sizeclass.pc and
# sizeclass-run are the final ones, without DESTDIR; the CMake files find everything
# relative to themselves. Directories are created as needed and never removed. After
# installing into a system directory, run ldconfig.
#
# One source of truth for the version: VERSION and SOMAJOR of the Makefile go into the
# file names, sizeclass.pc, the CMake version file, the man pages and the Debian packages.

PREFIX       ?= /usr/local
DESTDIR      ?=
LIBDIR       ?= $(PREFIX)/lib
INCLUDEDIR   ?= $(PREFIX)/include
BINDIR       ?= $(PREFIX)/bin
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
CMAKEDIR     ?= $(LIBDIR)/cmake/sizeclass
MANDIR       ?= $(PREFIX)/share/man

VERSION_MAJOR := $(word 1,$(subst ., ,$(VERSION)))
VERSION_MINOR := $(word 2,$(subst ., ,$(VERSION)))

INSTALL_HEADERS := $(wildcard include/*.h include/*.hpp)
INSTALL_SO      := libsizeclass.so.$(VERSION)
CMAKE_FILES     := sizeclass-config.cmake sizeclass-config-version.cmake sizeclass-targets.cmake
# Man pages: man/NAME.SECTION; each alias NAME.SECTION:TARGET is a link to its page.
MAN_PAGES       := $(wildcard man/*.[1-8])
MAN_ALIASES     := sc_free.3:sc_malloc.3 sc_calloc.3:sc_malloc.3 sc_realloc.3:sc_malloc.3 \
                   sc_posix_memalign.3:sc_malloc.3 sc_usable_size.3:sc_malloc.3 \
                   sc_owns.3:sc_malloc.3 sc_class_size.3:sc_malloc.3 sc_trim.3:sc_malloc.3 \
                   sc_stats_print.3:sc_stats_get.3 sc_frame_mark.3:sc_stats_get.3 \
                   sc_stats_enable_exact.3:sc_stats_get.3 sc_frame_expect_steady.3:sc_stats_get.3 \
                   sc_option_set.3:sc_stats_get.3 sc_snapshot.3:sc_stats_get.3 \
                   sc_pool_acquire.3:sc_pool_create.3 sc_pool_release.3:sc_pool_create.3 \
                   sc_pool_reset.3:sc_pool_create.3 sc_pool_stats.3:sc_pool_create.3 \
                   sc_pool_hit_rate_permille.3:sc_pool_create.3 \
                   sc_pool_destroy.3:sc_pool_create.3 sc_pool_set_tag.3:sc_pool_create.3 \
                   sc_tag_enter.3:sc_tag.3 sc_tag_leave.3:sc_tag.3 sc_stats_tags.3:sc_tag.3 \
                   sc_stats_threads.3:sc_tag.3 sc_budget_set.3:sc_tag.3
man_path = $(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $(1)))/$(1)
MAN_FILES       := $(foreach m,$(notdir $(MAN_PAGES)) $(foreach a,$(MAN_ALIASES),$(word 1,$(subst :, ,$(a)))),$(call man_path,$(m)))

INSTALLED_FILES := $(DESTDIR)$(LIBDIR)/$(INSTALL_SO) \
                   $(DESTDIR)$(LIBDIR)/libsizeclass.so.$(SOMAJOR) \
                   $(DESTDIR)$(LIBDIR)/libsizeclass.so \
                   $(DESTDIR)$(LIBDIR)/libsizeclass.a \
                   $(addprefix $(DESTDIR)$(INCLUDEDIR)/,$(notdir $(INSTALL_HEADERS))) \
                   $(DESTDIR)$(PKGCONFIGDIR)/sizeclass.pc \
                   $(addprefix $(DESTDIR)$(CMAKEDIR)/,$(CMAKE_FILES)) \
                   $(DESTDIR)$(BINDIR)/sizeclass-run \
                   $(DESTDIR)$(BINDIR)/sizeclass-report \
                   $(DESTDIR)$(BINDIR)/sizeclass-top \
                   $(MAN_FILES)

# The CMake files reach the libraries and headers by relative paths, and the
# version file knows the pointer size the library was built for.
CMAKE_TO_LIBDIR     = $(shell realpath -m --relative-to='$(CMAKEDIR)' '$(LIBDIR)')
CMAKE_TO_INCLUDEDIR = $(shell realpath -m --relative-to='$(CMAKEDIR)' '$(INCLUDEDIR)')
SIZEOF_VOID_P       = $(shell printf '__SIZEOF_POINTER__\n' | $(CC) -E -P -x c - | tail -n 1)
CMAKE_SUBST = -e 's|@VERSION@|$(VERSION)|g' -e 's|@SOMAJOR@|$(SOMAJOR)|g' \
              -e 's|@VERSION_MAJOR@|$(VERSION_MAJOR)|g' -e 's|@VERSION_MINOR@|$(VERSION_MINOR)|g' \
              -e 's|@CMAKE_TO_LIBDIR@|$(CMAKE_TO_LIBDIR)|g' \
              -e 's|@CMAKE_TO_INCLUDEDIR@|$(CMAKE_TO_INCLUDEDIR)|g' \
              -e 's|@SIZEOF_VOID_P@|$(SIZEOF_VOID_P)|g'

.PHONY: install uninstall install-man install-cmake report-tool

# sizeclass-report as one file: the package in a zip archive Python runs (zipapp), its
# entry point sizeclass_report.cli:run; scripts/sizeclass-report runs the same package
# from a source tree.
# REPORT_PYTHON: its interpreter line (make deb: Debian's /usr/bin/python3, into a
# REPORT_TOOL of its own).
REPORT_TOOL   := $(BUILD)/sizeclass-report
REPORT_PYTHON := /usr/bin/env python3
REPORT_SRCS   := $(sort $(wildcard scripts/sizeclass_report/*.py))

report-tool: $(REPORT_TOOL)

# Built in a directory of its own and moved into place at once: test suites
# run `make install` in parallel.
$(REPORT_TOOL): $(REPORT_SRCS)
	@mkdir -p $(BUILD)
	d=$$(mktemp -d $(BUILD)/zipapp.XXXXXX) && mkdir -p $$d/pkg/sizeclass_report && \
	  cp $(REPORT_SRCS) $$d/pkg/sizeclass_report/ && \
	  python3 -m zipapp $$d/pkg -m 'sizeclass_report.cli:run' -p '$(REPORT_PYTHON)' \
	    -o $$d/tool && mv $$d/tool $@ && rm -rf $$d

# The install tests find it built.
test: $(REPORT_TOOL)

install: lib install-man install-cmake $(REPORT_TOOL)
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(PKGCONFIGDIR) \
	  $(DESTDIR)$(BINDIR)
	install -m 755 $(SO) $(DESTDIR)$(LIBDIR)/$(INSTALL_SO)
	ln -sfn $(INSTALL_SO) $(DESTDIR)$(LIBDIR)/libsizeclass.so.$(SOMAJOR)
	ln -sfn libsizeclass.so.$(SOMAJOR) $(DESTDIR)$(LIBDIR)/libsizeclass.so
	install -m 644 $(AR_LIB) $(DESTDIR)$(LIBDIR)/libsizeclass.a
	install -m 644 $(INSTALL_HEADERS) $(DESTDIR)$(INCLUDEDIR)/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
	  -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(VERSION)|' \
	  sizeclass.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/sizeclass.pc
	chmod 644 $(DESTDIR)$(PKGCONFIGDIR)/sizeclass.pc
	sed -e 's|@SC_LIBDIR@|$(LIBDIR)|' -e 's|@SC_SOMAJOR@|$(SOMAJOR)|' \
	  scripts/sizeclass-run > $(DESTDIR)$(BINDIR)/sizeclass-run
	chmod 755 $(DESTDIR)$(BINDIR)/sizeclass-run
	install -m 755 $(REPORT_TOOL) $(DESTDIR)$(BINDIR)/sizeclass-report
	install -m 755 scripts/sizeclass-top $(DESTDIR)$(BINDIR)/sizeclass-top

install-cmake:
	install -d $(DESTDIR)$(CMAKEDIR)
	@set -e; for f in $(CMAKE_FILES); do \
	  echo "sed cmake/$$f.in > $(DESTDIR)$(CMAKEDIR)/$$f"; \
	  sed $(CMAKE_SUBST) cmake/$$f.in > $(DESTDIR)$(CMAKEDIR)/$$f; \
	  chmod 644 $(DESTDIR)$(CMAKEDIR)/$$f; \
	done

install-man:
	@set -e; for page in $(MAN_PAGES); do \
	  name=$${page##*/}; dir=$(DESTDIR)$(MANDIR)/man$${name##*.}; \
	  install -d $$dir; \
	  echo "sed $$page > $$dir/$$name"; \
	  sed -e 's|@VERSION@|$(VERSION)|g' $$page > $$dir/$$name; chmod 644 $$dir/$$name; \
	done; \
	for alias in $(MAN_ALIASES); do \
	  name=$${alias%%:*}; target=$${alias##*:}; dir=$(DESTDIR)$(MANDIR)/man$${name##*.}; \
	  ln -sfn $$target $$dir/$$name; \
	done

uninstall:
	rm -f $(INSTALLED_FILES)
