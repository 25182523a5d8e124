# install.mk — installation, as users of jemalloc and mimalloc expect (issue 5).
#   make install   [PREFIX=/usr/local] [DESTDIR=] [LIBDIR=$(PREFIX)/lib] ...
#   make uninstall (same variables): removes exactly the files install wrote
# Installs: libsizeclass.so.$(VERSION) (soname libsizeclass.so.$(SOMAJOR)) with the
# libsizeclass.so.$(SOMAJOR) and libsizeclass.so links, libsizeclass.a, the public headers,
# sizeclass.pc for pkg-config, and the sizeclass-run wrapper. DESTDIR stages the tree
# (packaging): paths written into sizeclass.pc and sizeclass-run are the final ones, without
# DESTDIR. Directories are created as needed and never removed. After installing into a
# system directory, run ldconfig.

PREFIX       ?= /usr/local
DESTDIR      ?=
LIBDIR       ?= $(PREFIX)/lib
INCLUDEDIR   ?= $(PREFIX)/include
BINDIR       ?= $(PREFIX)/bin
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig

INSTALL_HEADERS := $(wildcard include/*.h)
INSTALL_SO      := libsizeclass.so.$(VERSION)
INSTALLED_FILES := $(DESTDIR)$(LIBDIR)/$(INSTALL_SO) \
                   $(DESTDIR)$(LIBDIR)/libsizeclass.so.$(SOMAJOR) \
                   $(DESTDIR)$(LIBDIR)/libsizeclass.so \
                   $(DESTDIR)$(LIBDIR)/libsizeclass.a \
                   $(addprefix $(DESTDIR)$(INCLUDEDIR)/,$(notdir $(INSTALL_HEADERS))) \
                   $(DESTDIR)$(PKGCONFIGDIR)/sizeclass.pc \
                   $(DESTDIR)$(BINDIR)/sizeclass-run

.PHONY: install uninstall

install: lib
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
	sed -e 's|@SC_LIBDIR@|$(LIBDIR)|' scripts/sizeclass-run > $(DESTDIR)$(BINDIR)/sizeclass-run
	chmod 755 $(DESTDIR)$(BINDIR)/sizeclass-run

uninstall:
	rm -f $(INSTALLED_FILES)
