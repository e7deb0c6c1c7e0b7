#!/usr/bin/env bash
# Hashing benchmark: xlac's read + parse + fingerprint against sha256sum of the same files, in the
# same run, with JVM start-up reported separately; and heap (summed-pool peak, live after GC, smallest
# -Xmx that works) against file size.
#   bench/hash.sh [WORKDIR]     (default: a temp dir; writes ~130 MB of generated modules)
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
XLAC_ROOT="$ROOT"
xlac_mvn -q -pl bench,cli -am package -DskipTests >&2
work="${1:-$(mktemp -d)}"
mkdir -p "$work"
cp="$XLAC_ROOT/bench/target/xlac-bench-0.1.0-SNAPSHOT.jar:$(ls "$XLAC_ROOT"/cli/target/lib/*.jar | tr '\n' ':')"
java=("$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -XX:+UseSerialGC -cp "$cp" dev.xlac.bench.HashBench)

[[ -f "$work/constants_64m.hlo.pb" ]] || "${java[@]}" generate "$work" >&2
train_step=$(ls "$XLAC_ROOT"/hlo/src/test/resources/golden/mlp_run1/*jit_train_step.before_optimizations.hlo.pb)
files=("$work/constants_64m.hlo.pb" "$work/layers_400k.hlo.pb" "$train_step")

best_of() {  # best wall time in seconds of N runs of a command
  local n=$1; shift; local best=999
  for _ in $(seq "$n"); do
    local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null; t1=$(date +%s.%N)
    best=$(echo "$t1 - $t0" | bc -l | awk -v b="$best" '{print ($1 < b) ? $1 : b}')
  done
  printf '%.4f' "$best"
}

echo "| file | size MB | sha256sum s | xlac hashing s (in-process, warm) | ratio | peak heap MB (summed pools) | peak/size | live after GC MB | live/size | runs in -Xmx= |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for f in "${files[@]}"; do
  size=$(stat -c %s "$f")
  cat "$f" >/dev/null  # page cache warm for both
  sha=$(best_of 5 sha256sum "$f")
  xl=$("${java[@]}" time "$f" 5 | sed -n 's/.*best=\([0-9.]*\).*/\1/p')
  peak=$("${java[@]}" peak "$f" | sed -n 's/.*peak_heap_bytes=\([0-9]*\).*/\1/p')
  # The hard memory check: the smallest of these heap caps (x file size) that hashes the file. The
  # run that passes also gives the live heap: the most in use right after a full collection (under a
  # tight cap they happen during the work) or after a forced one at the end of the work.
  fits="n/a (JVM baseline)"
  live=$("${java[@]}" peak "$f" | sed -n 's/.*live_after_gc_bytes=\([0-9]*\).*/\1/p')
  if (( size > 1000000 )); then
    fits="no (-Xmx 2x)"
    for cap in 0.25 0.5 0.75 1 1.25 1.5 2; do
      xmx=$(awk -v s="$size" -v c="$cap" 'BEGIN { printf "%d", s * c / 1048576 + 1 }')
      if run=$("$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -XX:+UseSerialGC -Xmx${xmx}m -cp "$cp" \
          dev.xlac.bench.HashBench peak "$f" 2>/dev/null); then
        fits="yes, from ${cap}x (-Xmx${xmx}m)"
        live=$(sed -n 's/.*live_after_gc_bytes=\([0-9]*\).*/\1/p' <<<"$run")
        break
      fi
    done
  fi
  awk -v n="$(basename "$f")" -v s="$size" -v a="$sha" -v b="$xl" -v p="$peak" -v l="$live" -v fits="$fits" 'BEGIN {
    printf "| %s | %.2f | %.4f | %.4f | %.2fx | %.1f | %.2fx | %.1f | %.2fx | %s |\n", n, s/1e6, a, b, b/a, p/1048576, p/s, l/1048576, l/s, fits }'
done

startup=$(best_of 5 "$XLAC_ROOT/xlac" --version)
e2e=$(best_of 3 "$XLAC_ROOT/xlac" hash "$work/constants_64m.hlo.pb")
echo
echo "JVM start-up (./xlac --version, best of 5): ${startup}s; ./xlac hash constants_64m.hlo.pb end to end (best of 3): ${e2e}s"
