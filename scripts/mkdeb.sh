#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# mkdeb.sh — build the Debian packages libsizeclass$SOMAJOR and
# libsizeclass-dev from a DESTDIR staging tree (`make deb` runs it; no
# debhelper). Environment: BUILD (the build directory, the library already
# built), VERSION and SOMAJOR (the Makefile's: the one source of the
# version), MAKE.
#
# Steps: `make install DESTDIR=stage PREFIX=/usr LIBDIR=/usr/lib/<multiarch>`;
# every staged file is moved into exactly one package (a file left over
# fails the build, so a new installed file must be given a package here);
# binaries stripped, man pages and changelog compressed, modes set; the
# shlibs and symbols control files written and the exported symbols checked
# against packaging/debian/libsizeclass.symbols.in; Depends computed with
# dpkg-shlibdeps; dpkg-deb --root-owner-group builds $BUILD/deb/*.deb.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${BUILD:?BUILD must name the build directory}" "${VERSION:?}" "${SOMAJOR:?}"
MAKE=${MAKE:-make}
src=packaging/debian
out=$BUILD/deb
lib_pkg=libsizeclass$SOMAJOR
dev_pkg=libsizeclass-dev
maintainer='libsizeclass maintainers <maintainers@users.noreply.a-seed-1002179e.example>'

for tool in dpkg-deb dpkg-shlibdeps dpkg-architecture; do
  command -v $tool >/dev/null || { echo "mkdeb: $tool is missing (scripts/ensure-deps.sh deb)" >&2; exit 1; }
done

# The changelog's newest entry must be this version.
top=$(sed -n '1s/^libsizeclass (\([^)]*\)).*/\1/p' $src/changelog)
if [ "$top" != "$VERSION" ]; then
  echo "mkdeb: packaging/debian/changelog starts with $top, the Makefile says $VERSION:" \
    "add an entry for $VERSION" >&2
  exit 1
fi

arch=$(dpkg-architecture -qDEB_HOST_ARCH)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
libdir=/usr/lib/$multiarch

rm -rf "$out"
stage=$out/stage
mkdir -p "$stage"
# The report tool, a Python zipapp, is built for the package with Debian's python3 as
# its interpreter (a zipapp's interpreter line cannot be edited in place).
$MAKE --no-print-directory -s BUILD="$BUILD" install DESTDIR="$(realpath "$stage")" \
  PREFIX=/usr LIBDIR="$libdir" REPORT_TOOL="$out/sizeclass-report.pyz" \
  REPORT_PYTHON=/usr/bin/python3 >/dev/null
rm -f "$out/sizeclass-report.pyz"

# take PKG PATH... — move staged paths (files, links, whole directories)
# into the package's tree.
take() {
  local pkg=$1
  shift
  for p in "$@"; do
    [ -e "$stage$p" ] || [ -L "$stage$p" ] || { echo "mkdeb: $p was not installed" >&2; exit 1; }
    mkdir -p "$out/$pkg$(dirname "$p")"
    mv "$stage$p" "$out/$pkg$p"
  done
}

take "$lib_pkg" "$libdir/libsizeclass.so.$VERSION" "$libdir/libsizeclass.so.$SOMAJOR" \
  /usr/bin/sizeclass-run /usr/bin/sizeclass-report /usr/bin/sizeclass-top /usr/share/man/man1 /usr/share/man/man7
take "$dev_pkg" /usr/include "$libdir/libsizeclass.a" "$libdir/libsizeclass.so" "$libdir/pkgconfig" \
  "$libdir/cmake" /usr/share/man/man3
left=$(find "$stage" -type f -o -type l)
if [ -n "$left" ]; then
  echo "mkdeb: installed but in no package (give them one in scripts/mkdeb.sh):" >&2
  echo "$left" >&2
  exit 1
fi

# Binaries: no debugging sections (Debian ships those in -dbgsym packages).
strip --strip-unneeded --remove-section=.comment --remove-section=.note \
  "$out/$lib_pkg$libdir/libsizeclass.so.$VERSION"
strip --strip-debug --remove-section=.comment --enable-deterministic-archives \
  "$out/$dev_pkg$libdir/libsizeclass.a"

for pkg in "$lib_pkg" "$dev_pkg"; do
  root=$out/$pkg
  # Man pages compressed; a link to a page becomes a link to the compressed page.
  if [ -d "$root/usr/share/man" ]; then
    find "$root/usr/share/man" -type f -name '*.[1-8]' -exec gzip -9n {} +
    find "$root/usr/share/man" -type l -name '*.[1-8]' | while read -r l; do
      ln -s "$(readlink "$l").gz" "$l.gz" && rm "$l"
    done
  fi
  if [ "$pkg" = "$lib_pkg" ]; then
    mkdir -p "$root/usr/share/lintian/overrides"
    sed "s/@SOMAJOR@/$SOMAJOR/g" $src/libsizeclass.lintian-overrides.in \
      > "$root/usr/share/lintian/overrides/$pkg"
  fi
  doc=$root/usr/share/doc/$pkg
  mkdir -p "$doc"
  cp $src/copyright "$doc/copyright"
  gzip -9n -c $src/changelog > "$doc/changelog.gz" # a native package's changelog
  find "$root" -type d -exec chmod 755 {} +
  find "$root" -type f -exec chmod 644 {} +
done
chmod 755 "$out/$lib_pkg/usr/bin/sizeclass-run" "$out/$lib_pkg/usr/bin/sizeclass-report" \
  "$out/$lib_pkg/usr/bin/sizeclass-top"
# sizeclass-top is a Python 3 script: the installed one names Debian's python3.
sed -i '1s|^#!/usr/bin/env python3$|#!/usr/bin/python3|' "$out/$lib_pkg/usr/bin/sizeclass-top"

# The exported symbols must be those of the symbols file.
want=$(sed -n 's/^ \([^@ ]*\)@Base .*/\1/p' $src/libsizeclass.symbols.in | sort)
have=$(nm -D --defined-only "$out/$lib_pkg$libdir/libsizeclass.so.$VERSION" | awk '{print $3}' | sort)
if [ "$want" != "$have" ]; then
  echo "mkdeb: the library's exported symbols differ from packaging/debian/libsizeclass.symbols.in" \
    "(< file, > library):" >&2
  diff <(echo "$want") <(echo "$have") >&2 || true
  exit 1
fi

# Control files. dpkg-shlibdeps reads debian/control, so it runs in a
# scratch source tree that has one.
mkdir -p "$out/$lib_pkg/DEBIAN" "$out/$dev_pkg/DEBIAN" "$out/src/debian"
printf 'Source: libsizeclass\n\nPackage: %s\nArchitecture: any\n\nPackage: %s\nArchitecture: any\n' \
  "$lib_pkg" "$dev_pkg" > "$out/src/debian/control"
shlibs=$(cd "$out/src" && dpkg-shlibdeps -O -e"../$lib_pkg$libdir/libsizeclass.so.$VERSION" 2>/dev/null \
  | sed -n 's/^shlibs:Depends=//p')
[ -n "$shlibs" ] || { echo "mkdeb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
printf 'libsizeclass %s %s (>= %s)\n' "$SOMAJOR" "$lib_pkg" "$VERSION" > "$out/$lib_pkg/DEBIAN/shlibs"
grep -v '^#' $src/libsizeclass.symbols.in | sed "s/@SOMAJOR@/$SOMAJOR/g" \
  > "$out/$lib_pkg/DEBIAN/symbols"
printf 'activate-noawait ldconfig\n' > "$out/$lib_pkg/DEBIAN/triggers"

for pkg in "$lib_pkg" "$dev_pkg"; do
  root=$out/$pkg
  case $pkg in "$lib_pkg") tmpl=libsizeclass.control.in ;; *) tmpl=libsizeclass-dev.control.in ;; esac
  size=$(du -k -s --exclude=DEBIAN "$root" | cut -f1)
  sed -e "s|@VERSION@|$VERSION|g" -e "s|@SOMAJOR@|$SOMAJOR|g" -e "s|@ARCH@|$arch|g" \
    -e "s|@MAINTAINER@|$maintainer|g" -e "s|@INSTALLED_SIZE@|$size|g" \
    -e "s|@SHLIBS_DEPENDS@|$shlibs, python3|g" $src/$tmpl > "$root/DEBIAN/control"
  (cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z \
    | xargs -0 md5sum) > "$root/DEBIAN/md5sums"
  chmod 644 "$root"/DEBIAN/*
  dpkg-deb --root-owner-group -Zxz --build "$root" "$out/${pkg}_${VERSION}_${arch}.deb" >/dev/null
  echo "mkdeb: $out/${pkg}_${VERSION}_${arch}.deb"
done
rm -rf "$stage" "$out/src"
