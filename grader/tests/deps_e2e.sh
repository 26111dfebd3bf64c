#!/usr/bin/env bash
# `./rooflab deps` without root and without network: four of the build's packages (fmt, its library,
# nlohmann-json and CLI11) are packed again as .debs from the files this system has installed (dpkg -L;
# what `apt-get download` would fetch), `./rooflab deps --prefix P --from DEBS` unpacks them into P and
# configures the project with the launcher's prefix settings, and the CMake cache must find each of them in
# P, not in /usr. A prefix not made by `deps` is refused. Not tested here: apt-get download itself (CI may
# have no network) and building with packages that exist only in the prefix (this machine has them all).
#   deps_e2e.sh SOURCE_DIR WORK_DIR
set -euo pipefail
src="$1" work="$2/e2e-deps"
rm -rf "$work"
mkdir -p "$work/debs"
fail() { echo "FAIL: $*"; exit 1; }

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

"$src/rooflab" deps --prefix "$work/prefix" --from "$work/debs" > "$work/deps.log" 2>&1 ||
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

# A prefix that deps did not make is refused before anything is built.
mkdir -p "$work/not-a-prefix"
if ROOFLAB_DEPS_PREFIX="$work/not-a-prefix" "$src/rooflab" list > "$work/bad.log" 2>&1; then fail "a bad prefix was used"; fi
grep -q "was not made by ./rooflab deps" "$work/bad.log" || { cat "$work/bad.log"; fail "the bad prefix's message"; }
echo "deps: 4 packages unpacked without root, found there by CMake"
