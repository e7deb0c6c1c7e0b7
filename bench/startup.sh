#!/usr/bin/env bash
# Start-up of every kind of command, spawn to exit: `xlac --version`, `xlac cache stat` (an empty
# cache) and `xlac run -- true` (a served run's start, with the real CPU plugin), from the checkout
# (./xlac), with --installed from an installed xlac (pip's wheel or the tarball), and with --baseline
# from another launcher (e.g. an older checkout's ./xlac, for before and after). Median of N runs each,
# after one untimed run that makes the class caches, as wall seconds and as CPU seconds (user +
# system, which a busy machine inflates less); the anchor is `java -version` of the same Java
# runtime, measured in the same run, so the ratios hold on a busy machine.
#
#   bench/startup.sh [-n N] [--installed PATH/TO/xlac] [--baseline PATH/TO/xlac]
#
# xlac run needs $XLAC_PJRT_PLUGIN (the pinned environment's CPU plugin, as scripts/test sets it);
# without it that row is left out. `run -- true` compiles nothing, so it writes no launch plan and
# takes the JVM path every time: it measures xlac run's own start, not the fast start.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
n=11
installed=
baseline=
while (( $# )); do
  case "$1" in
    -n) n=$2; shift 2 ;;
    --installed) installed=$(realpath "$2"); shift 2 ;;
    --baseline) baseline=$(realpath "$2"); shift 2 ;;
    *) echo "usage: bench/startup.sh [-n N] [--installed PATH/TO/xlac] [--baseline PATH/TO/xlac]" >&2; exit 2 ;;
  esac
done
bench_workdir startup
cd "$WORK"

# seconds CMD...: "WALL CPU" of one run of CMD, spawn to exit (CPU: user + system of it and its children).
seconds() {
  local TIMEFORMAT='%R %U %S' t
  t=$( { time "$@" >/dev/null 2>"$WORK/last.err" </dev/null; } 2>&1 ) || { cat "$WORK/last.err" >&2; return 1; }
  awk '{printf "%.4f %.4f", $1, $2 + $3}' <<<"$t"
}
# median_of CMD...: one untimed run, then "WALL CPU", each the median of N.
median_of() {
  local w=() c=() i r
  "$@" >/dev/null 2>&1 </dev/null || true
  for (( i = 0; i < n; i++ )); do r=$(seconds "$@"); w+=("${r% *}"); c+=("${r#* }"); done
  echo "$(median "${w[@]}") $(median "${c[@]}")"
}

row() {  # row LABEL "ANCHOR_WALL ANCHOR_CPU" CMD...
  local label=$1 anchor=$2 m
  shift 2
  m=$(median_of "$@")
  printf '%-32s %7.3f s %7s   %7.3f s %7s\n' "$label" "${m% *}" "$(ratio "${m% *}" "${anchor% *}")" \
    "${m#* }" "$(ratio "${m#* }" "${anchor#* }")"
}

measure() {  # measure NAME XLAC JAVA
  local name=$1 xlac=$2 java=$3 anchor
  anchor=$(median_of "$java" -version)
  printf '%s: %s (load average %s)\n' "$name" "$xlac" "$(cut -d' ' -f1 /proc/loadavg)"
  printf '%-32s %9s %7s   %9s %7s\n' "" "wall" "ratio" "cpu" "ratio"
  printf '%-32s %7.3f s %7s   %7.3f s %7s\n' "java -version (anchor)" "${anchor% *}" 1.00x "${anchor#* }" 1.00x
  row "xlac --version" "$anchor" "$xlac" --version
  row "xlac cache stat" "$anchor" "$xlac" cache stat --cache "$WORK/cache-$name"
  if [[ -n "${XLAC_PJRT_PLUGIN:-}" ]]; then
    row "xlac run -- true (JVM path)" "$anchor" "$xlac" run --cache "$WORK/cache-$name" --plugin "$XLAC_PJRT_PLUGIN" -- true
  fi
}

"$ROOT/xlac" --version >/dev/null  # builds the checkout's CLI first when its sources changed
measure checkout "$ROOT/xlac" "$JAVA_HOME/bin/java"
if [[ -n "$installed" ]]; then
  home="$(dirname "$installed")/../share/xlac"
  [[ -x "$home/java/bin/java" ]] || home="$(dirname "$installed")/.."
  measure installed "$installed" "$home/java/bin/java"
fi
if [[ -n "$baseline" ]]; then
  "$baseline" --version >/dev/null
  measure baseline "$baseline" "$JAVA_HOME/bin/java"
fi
