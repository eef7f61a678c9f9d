#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# `meson install` into a DESTDIR of this run, then everything from the
# install tree alone: a C program (hello_island.c) built with the installed
# libisthmus.pc (no -I or -L into the source or build tree) opens a session
# and sends to a loopback "edge"; the soname; the exported symbols (the
# API of isth_island.h and the four name functions, nothing else); every
# installed header compiles on its own; the Python package imports from the
# installed site-packages with the binaries' version; nothing of the tests
# is installed; the dissector and the config examples are there.
#
#   install_test.sh BUILD_DIR SOURCE_DIR PROJECT_VERSION PYTHON|none
set -uo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd) want_ver=$3 py=$4
read -ra cc <<<"${CC:-cc}" # meson's compiler command, e.g. "ccache cc"

# outside the source and build trees, so that a path into them stands out
dest=$(mktemp -d "${TMPDIR:-/tmp}/isthmus-install.XXXXXX") || exit 1
trap 'rm -rf "$dest"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

if ! meson install -C "$build" --no-rebuild --quiet --destdir "$dest" >"$dest.log" 2>&1; then
	cat "$dest.log"; rm -f "$dest.log"
	echo "FAIL: meson install"; exit 1
fi
rm -f "$dest.log"

# where meson put things: the build's own prefix/libdir/includedir/bindir
opt() {
	meson introspect --buildoptions "$build" |
		/usr/bin/python3 -c 'import json,sys; print({o["name"]: o["value"] for o in json.load(sys.stdin)}[sys.argv[1]])' "$1"
}
prefix=$(opt prefix)
abs() { case "$1" in /*) echo "$1" ;; *) echo "$prefix/$1" ;; esac; }
libdir=$dest$(abs "$(opt libdir)")
incdir=$dest$(abs "$(opt includedir)")
bindir=$dest$(abs "$(opt bindir)")
datadir=$dest$(abs "$(opt datadir)")

# --- pkg-config, build, run ---------------------------------------------
# The DESTDIR is the sysroot; pkg-config puts it before every path, also
# before those of libcrypto (Requires.private), whose -I/usr/include then
# becomes a harmless -I$dest/usr/include.
export PKG_CONFIG_SYSROOT_DIR=$dest PKG_CONFIG_PATH=$libdir/pkgconfig
flags=$(pkg-config --cflags --libs libisthmus) || { echo "FAIL: pkg-config libisthmus"; exit 1; }
echo "pkg-config: $flags"
case "$flags" in *"$src"* | *"$build"*) bad "pkg-config flags point into the source or build tree: $flags" ;; esac
case "$flags" in *"-I$incdir/isthmus"*) ;; *) bad "no -I$incdir/isthmus in: $flags" ;; esac
case "$flags" in *"-L$libdir "*) ;; *) bad "no -L$libdir in: $flags" ;; esac
for f in $flags; do
	case "$f" in -[IL]"$dest"/*) ;; -[IL]*) bad "pkg-config path outside the DESTDIR: $f" ;; esac
done
# shellcheck disable=SC2086
if ! "${cc[@]}" -std=c11 -D_DEFAULT_SOURCE -Wall -Wextra -Werror -o "$dest/hello_island" \
	"$src/tests/install/hello_island.c" $flags; then
	bad "hello_island.c does not build against the installed libisthmus"
else
	out=$(LD_LIBRARY_PATH=$libdir "$dest/hello_island" 2>&1)
	rc=$?
	echo "$out"
	[ "$rc" -eq 0 ] || bad "hello_island exited $rc"
	grep -Eq '^hello_island: session 127\.0\.0\.1:[1-9][0-9]* -> edge 127\.0\.0\.1:[1-9][0-9]*, [1-9][0-9]* chunks of fp32, first DATA [1-9][0-9]* bytes$' <<<"$out" ||
		bad "hello_island did not report a session that sent DATA"
	grep -qx 'hello_island: closed' <<<"$out" || bad "hello_island did not close"
	# it ran the installed library, not another one
	ldd_out=$(LD_LIBRARY_PATH=$libdir ldd "$dest/hello_island")
	grep -q "libisthmus.so.* => $libdir/libisthmus.so" <<<"$ldd_out" ||
		bad "hello_island does not load $libdir/libisthmus.so: $ldd_out"
fi

# --- soname: major, or major.minor while the major is 0 -----------------
IFS=. read -r major minor _ <<<"$want_ver"
if [ "$major" = 0 ]; then want_soname=libisthmus.so.$major.$minor; else want_soname=libisthmus.so.$major; fi
so=$libdir/libisthmus.so.$want_ver
[ -f "$so" ] || bad "no $so"
readelf -d "$so" | grep -q "(SONAME).*\[$want_soname\]" ||
	bad "soname of $so is not $want_soname: $(readelf -d "$so" | grep SONAME)"
[ "$(readlink "$libdir/$want_soname")" = "libisthmus.so.$want_ver" ] || bad "no link $want_soname"
[ -f "$dest/hello_island" ] && ! readelf -d "$dest/hello_island" | grep -q "(NEEDED).*\[$want_soname\]" &&
	bad "hello_island does not need $want_soname"

# --- exports: isth_island.h's functions and the four names, nothing else --
exported=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sort)
declared=$(grep -o 'isth_island_[a-z_]*(' "$incdir/isthmus/isth_island.h" | tr -d '(' | sort -u)
want=$(printf '%s\n' "$declared" isth_wire_dtype_name isth_wire_type_name isth_wire_reason_name \
	isth_auth_status_name | sort)
if [ "$exported" != "$want" ]; then
	bad "exported symbols differ from the public API (< exported, > wanted):"
	diff <(echo "$exported") <(echo "$want")
fi
echo "exports: $(echo "$exported" | wc -l) symbols"

# --- every installed header compiles alone, from the install tree -------
for h in "$incdir"/isthmus/*.h; do
	printf '#include <%s>\n' "$(basename "$h")" |
		"${cc[@]}" -std=c11 -Wall -Wextra -Werror -fsyntax-only -I"$incdir/isthmus" -x c - ||
		bad "installed header $(basename "$h") does not compile alone"
done
ls "$incdir/isthmus"

# --- what is installed: no test, the programs, the dissector, examples ---
elfs=$(find "$dest" -type f ! -path "$dest/hello_island" -exec sh -c \
	'for f; do [ "$(head -c4 "$f" | od -An -c | tr -d " ")" = 177ELF ] && basename "$f"; done' sh {} + |
	sed 's/^_isthmus\..*\.so$/_isthmus.so/' | sort)
want_elfs=$(printf '%s\n' isthmusd isthmus-plan isthmus-wan isthmus-island isthmus-inject \
	isthmus-fpga-model isthmus-keys "libisthmus.so.$want_ver" | sort)
[ "$py" != none ] && want_elfs=$(printf '%s\n' "$want_elfs" _isthmus.so | sort)
if [ "$elfs" != "$want_elfs" ]; then
	bad "installed programs and libraries differ (< installed, > wanted):"
	diff <(echo "$elfs") <(echo "$want_elfs")
fi
tests=$(cd "$dest" && find . -path '*test*' ! -path ./hello_island)
[ -z "$tests" ] || bad "test files installed: $tests"
cmp -s "$src/scripts/isthmus.lua" "$libdir/wireshark/plugins/isthmus.lua" ||
	bad "no $libdir/wireshark/plugins/isthmus.lua"
# the folder is Wireshark's own global Lua plugin folder under prefix /usr
rel_libdir=$(opt libdir)
if command -v tshark >/dev/null && [ "${rel_libdir#/}" = "$rel_libdir" ]; then
	global=$(tshark -G folders 2>/dev/null | sed -n 's/^Global Lua Plugins:[[:space:]]*//p')
	[ "$global" = "/usr/$rel_libdir/wireshark/plugins" ] ||
		bad "Wireshark's global Lua plugin folder is '$global', not /usr/$rel_libdir/wireshark/plugins"
fi
[ -f "$datadir/doc/isthmus/examples/isthmusd/example.conf" ] || bad "no example.conf under $datadir/doc/isthmus/examples"

# --- installed binaries and the installed Python package agree ---------
bin_ver=$("$bindir/isthmus-island" --version) || bad "installed isthmus-island --version"
bin_ver=${bin_ver#isthmus-island }
case "$bin_ver" in "$want_ver" | "$want_ver (git "*) ;; *) bad "installed version '$bin_ver' is not $want_ver" ;; esac
if [ "$py" != none ]; then
	init=$(find "$dest" -path '*/isthmus/__init__.py')
	if [ -z "$init" ] || [ "$(echo "$init" | wc -l)" != 1 ]; then
		bad "isthmus/__init__.py installed $(echo "$init" | grep -c .) times"
	fi
	site=$(dirname "$(dirname "$init")")
	# under /usr or /usr/local, where the interpreter looks without PYTHONPATH
	case "$prefix" in /usr | /usr/local)
		"$py" -c 'import site, sys; sys.exit(sys.argv[1] not in site.getsitepackages())' "${site#"$dest"}" ||
			bad "${site#"$dest"} is not a site directory of $py" ;;
	esac
	pyout=$(cd / && PYTHONPATH=$site PYTHONNOUSERSITE=1 "$py" -c \
		'import isthmus, isthmus._isthmus as e; print(isthmus.__file__); print(e.__file__); print(isthmus.__version__)' 2>&1) ||
		bad "import isthmus from $site: $pyout"
	echo "$pyout"
	[ "$(sed -n 1p <<<"$pyout")" = "$site/isthmus/__init__.py" ] || bad "isthmus not imported from $site"
	case "$(sed -n 2p <<<"$pyout")" in "$site/isthmus/_isthmus."*) ;; *) bad "_isthmus not imported from $site" ;; esac
	[ "$(sed -n 3p <<<"$pyout")" = "$bin_ver" ] || bad "isthmus.__version__ '$(sed -n 3p <<<"$pyout")' != binaries' '$bin_ver'"
fi

[ "$fail" = 0 ] && echo "ok: installed tree in $dest"
exit "$fail"
