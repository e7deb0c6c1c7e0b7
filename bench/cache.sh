#!/usr/bin/env bash
# Reproduces the cache figures in bench/README.md ("Cache").
#   bench/cache.sh [ENTRIES=100000] [BUNDLE_MIB=1024]
# Work files go to $XLAC_BENCH_DIR (default: a new directory under /tmp), removed at the end
# unless XLAC_BENCH_KEEP=1. Needs about 3 GiB of disk for the defaults.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ENTRIES="${1:-100000}"
MIB="${2:-1024}"
bench_workdir cache

echo "== build" >&2
bench_classpath
"$ROOT/xlac" --version >/dev/null  # builds the launcher's jar if needed
JAVA=("$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -cp "$CP")

echo "== machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -r), $("$JAVA_HOME/bin/java" -version 2>&1 | head -1)"
echo "== lookups, list, statistics, prune ($ENTRIES entries)"
"${JAVA[@]}" dev.xlac.bench.CacheBench lookups "$WORK" "$ENTRIES"

# Cold-JVM wall times, in seconds: each round runs `xlac --version` (JVM start-up), `cache ls --json`
# and `cache stat` once, in turn, so all three meet the same load; the median of 7 rounds is reported.
ROUNDS=7
declare -A walls=()
for ((i = 0; i < ROUNDS; i++)); do
  for what in version ls stat; do
    case $what in
      version) cmd=("$ROOT/xlac" --version) ;;
      ls) cmd=("$ROOT/xlac" cache ls --json --cache "$WORK/cache") ;;
      stat) cmd=("$ROOT/xlac" cache stat --cache "$WORK/cache") ;;
    esac
    s=$(date +%s%N); "${cmd[@]}" >/dev/null; e=$(date +%s%N)
    walls[$what]+="$(( (e - s) / 1000000 )) "
  done
done
median_ms() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{v[NR]=$1} END{printf "%.3f", v[int((NR+1)/2)]/1000}'; }
echo "== CLI against the same cache (median of $ROUNDS alternating cold-JVM rounds; load average $(cut -d' ' -f1-3 /proc/loadavg))"
startup=$(median_ms "${walls[version]}")
ls_json=$(median_ms "${walls[ls]}")
stat=$(median_ms "${walls[stat]}")
rows=$("$ROOT/xlac" cache ls --json --cache "$WORK/cache" | grep -c '"fingerprint"')
printf '%-40s %s s  (runs, ms: %s)\n' "xlac --version (JVM start-up)" "$startup" "${walls[version]}"
printf '%-40s %s s  (%s beyond start-up, %s rows; runs, ms: %s)\n' "xlac cache ls --json" "$ls_json" \
  "$(awk -v a="$ls_json" -v b="$startup" 'BEGIN{printf "%.3f s", a-b}')" "$rows" "${walls[ls]}"
printf '%-40s %s s  (%s beyond start-up)\n' "xlac cache stat" "$stat" \
  "$(awk -v a="$stat" -v b="$startup" 'BEGIN{printf "%.3f s", a-b}')"

echo "== export / import ($MIB MiB of incompressible artifacts; load average $(cut -d' ' -f1-3 /proc/loadavg))"
"${JAVA[@]}" dev.xlac.bench.CacheBench bundles "$WORK" "$MIB"
