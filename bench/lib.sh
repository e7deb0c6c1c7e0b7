# Shared by the bench/*.sh scripts: `source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"` after `set -euo pipefail`.
# Sets ROOT (the repository), makes Java 22+ and Maven ready (scripts/env.sh), and defines the helpers below.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/env.sh
source "$ROOT/scripts/env.sh"
xlac_ensure_java
xlac_ensure_maven

# bench_workdir NAME: WORK is $XLAC_BENCH_DIR, else a new /tmp/xlac-bench-NAME.XXXXXX; it is removed at
# exit unless XLAC_BENCH_KEEP=1.
bench_workdir() {
  WORK="${XLAC_BENCH_DIR:-$(mktemp -d "/tmp/xlac-bench-$1.XXXXXX")}"
  mkdir -p "$WORK"
  trap '[[ "${XLAC_BENCH_KEEP:-0}" == 1 ]] || rm -rf "$WORK"' EXIT
}

# bench_classpath: builds the bench module (and what it needs) and sets CP to its class path.
bench_classpath() {
  xlac_mvn -q -DskipTests -pl bench -am package dependency:build-classpath -Dmdep.outputFile=target/classpath.txt >&2
  CP="$ROOT/bench/target/classes:$(cat "$ROOT/bench/target/classpath.txt")"
}

# wall CMD...: prints the wall seconds of CMD (its output goes to $WORK/last.log, and is shown if it
# fails). Also leaves the CPU seconds (user + system) of CMD and every descendant it waited for (worker
# JVMs, a traced script) in $WORK/last.cpu, when /usr/bin/time is there; `cpu` prints them.
wall() {
  local s e timer=()
  [[ -x /usr/bin/time ]] && timer=(/usr/bin/time -f '%U %S' -o "$WORK/last.cpu")
  rm -f "$WORK/last.cpu"
  s=$(date +%s%N); "${timer[@]}" "$@" >"$WORK/last.log" 2>&1 || { cat "$WORK/last.log" >&2; return 1; }; e=$(date +%s%N)
  awk -v n="$((e - s))" 'BEGIN{printf "%.2f", n/1e9}'
}
cpu() { if [[ -f "$WORK/last.cpu" ]]; then awk '{printf "%.2f", $1 + $2}' "$WORK/last.cpu"; else echo nan; fi; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2fx", a/b}'; }
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END{print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
