#!/usr/bin/env bash
# `./rooflab deps` without root and without network: four of the build's packages (fmt, its library,
# nlohmann-json and CLI11) are packed again as .debs from the files this system has installed (dpkg -L;
# what `apt-get download` would fetch), `./rooflab deps --prefix P --from DEBS` unpacks them into P and
# configures the project with the launcher's prefix settings, and the CMake cache must find each of them in
# P, not in /usr. A prefix not made by `deps` is refused. `deps` runs as a user without root (nobody, when
# the suite runs as root). Also: a prefix where CMake finds none of its packages still ends with the export
# line (no silent exit under pipefail), and the packages `deps` would download are resolved as apt install
# resolves them (as on a system with nothing installed: first alternatives, no Recommends, no GUI gnuplot).
# Not tested here: apt-get download itself (CI may have no network) and building with packages that exist
# only in the prefix (this machine has them all).
#   deps_e2e.sh SOURCE_DIR WORK_DIR
set -euo pipefail
src="$1" work="$2/e2e-deps"
rm -rf "$work"
mkdir -p "$work/debs"
fail() { echo "FAIL: $*"; exit 1; }
# deps as a user without root: nobody, when this runs as root (it owns the work folder then).
as_user() {
  if [[ "$(id -u)" -eq 0 ]]; then
    chown -R nobody "$work"
    runuser -u nobody -- env HOME="$work" "$@"
  else
    "$@"
  fi
}

repack() {  # repack PACKAGE: $work/debs/PACKAGE.deb from the installed files of PACKAGE
  local pkg="$1" root="$work/repack/$1" f
  mkdir -p "$root/DEBIAN"
  while IFS= read -r f; do
    [[ -d "$f" && ! -L "$f" ]] && continue
    [[ -e "$f" || -L "$f" ]] || continue
    cp -P --parents "$f" "$root"
  done < <(dpkg -L "$pkg")
  cat > "$root/DEBIAN/control" <<EOF
Package: $pkg
Version: $(dpkg-query -W -f='${Version}' "$pkg")
Architecture: $(dpkg-query -W -f='${Architecture}' "$pkg")
Maintainer: rooflab test <nobody@example.org>
Description: $pkg, packed again from this system's files for rooflab's deps test
EOF
  dpkg-deb --root-owner-group -Zgzip --build "$root" "$work/debs/$pkg.deb" >/dev/null
}
for p in libfmt-dev nlohmann-json3-dev libcli11-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || fail "$p is not installed here"
  repack "$p"
done
fmt_lib="$(dpkg -S "$(readlink -f /usr/lib/*/libfmt.so)" | cut -d: -f1)"  # libfmt9 on Debian 12
repack "$fmt_lib"

as_user "$src/rooflab" deps --prefix "$work/prefix" --from "$work/debs" > "$work/deps.log" 2>&1 ||
  { cat "$work/deps.log"; fail "rooflab deps exited $?"; }
cat "$work/deps.log"
for p in libfmt-dev nlohmann-json3-dev libcli11-dev "$fmt_lib"; do
  grep -qx "$p" "$work/prefix/rooflab-deps.txt" || fail "$p is not listed in rooflab-deps.txt"
done
[[ -f "$work/prefix/usr/include/fmt/core.h" ]] || fail "fmt's headers were not unpacked"
cache="$work/prefix/check-build/CMakeCache.txt"
for pkg in fmt nlohmann_json CLI11; do
  dir="$(grep -E "^${pkg}_DIR:" "$cache" | cut -d= -f2-)"
  [[ "$dir" == "$work/prefix/"* ]] || fail "CMake found $pkg in '$dir', not in the prefix"
  echo "$pkg: $dir"
done
grep -q "CMake found here: .*fmt" "$work/deps.log" || fail "deps does not say what CMake found in the prefix"
[[ "$(tail -n 1 "$work/deps.log")" == "  export ROOFLAB_DEPS_PREFIX=$work/prefix" ]] ||
  fail "deps does not end with the export line"

# A prefix where CMake finds nothing of its own (a package with no CMake files): the grep for what it found
# finds nothing, which must not end the script in silence; the export line still comes last.
mkdir -p "$work/debs-nocmake"
repack zip && mv "$work/debs/zip.deb" "$work/debs-nocmake/"
set +e
as_user "$src/rooflab" deps --prefix "$work/prefix-nocmake" --from "$work/debs-nocmake" > "$work/nocmake.log" 2>&1
rc=$?
set -e
[[ $rc -eq 0 ]] || { cat "$work/nocmake.log"; fail "deps with a prefix CMake finds nothing in exited $rc"; }
grep -q "CMake found here: (nothing" "$work/nocmake.log" || { cat "$work/nocmake.log"; fail "no word on what CMake found"; }
[[ "$(tail -n 1 "$work/nocmake.log")" == "  export ROOFLAB_DEPS_PREFIX=$work/prefix-nocmake" ]] ||
  { cat "$work/nocmake.log"; fail "the export line is not the last"; }

# What deps would download, resolved as on a system with nothing installed (an empty dpkg status for apt):
# the first alternative of each dependency and no Recommends, as apt install does; no GUI gnuplot or toolkit.
if LC_ALL=C apt-cache policy gnuplot-nox 2>/dev/null | grep -q "Candidate: [0-9]"; then
  : > "$work/empty-status"
  printf 'Dir::State::status "%s";\n' "$work/empty-status" > "$work/apt.conf"
  as_user env APT_CONFIG="$work/apt.conf" "$src/rooflab" deps --prefix "$work/prefix-list" --list > "$work/list.log" 2>&1 ||
    { cat "$work/list.log"; fail "deps --list exited $?"; }
  listed=" $(sed -n 's/^rooflab deps: apt would download [0-9]* packages: //p' "$work/list.log") "
  for p in gnuplot-nox libgnuplot-iostream-dev libfmt-dev cmake; do
    [[ "$listed" == *" $p "* ]] || { cat "$work/list.log"; fail "$p is not in what deps would download"; }
  done
  for p in gnuplot-qt gnuplot-x11 libqt5core5a libqt5gui5 libwxgtk3.2-1 libgtk-3-0 libgtk2.0-0; do
    [[ "$listed" != *" $p "* ]] || fail "deps would download $p (a GUI package apt install would not pull in)"
  done
  echo "deps --list: $(wc -w <<<"$listed") packages from an empty system, no GUI gnuplot or toolkit"
else
  echo "deps --list: not checked (no package lists on this machine: apt-cache knows no gnuplot-nox)"
fi

# A prefix that deps did not make is refused before anything is built.
mkdir -p "$work/not-a-prefix"
if ROOFLAB_DEPS_PREFIX="$work/not-a-prefix" "$src/rooflab" list > "$work/bad.log" 2>&1; then fail "a bad prefix was used"; fi
grep -q "was not made by ./rooflab deps" "$work/bad.log" || { cat "$work/bad.log"; fail "the bad prefix's message"; }
echo "deps: 4 packages unpacked without root (as $(if [[ $(id -u) -eq 0 ]]; then echo nobody; else id -un; fi)), found there by CMake"
