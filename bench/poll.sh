#!/usr/bin/env bash
# The cost of one dump-watcher poll (issue #5 §1), against the directory walk alone in the same run.
#   bench/poll.sh [DIRS=4] [FILES=100] [ROUNDS=300]
# A staging tree of DIRS x FILES files (a fifth of them copies of the golden JAX train step), polled
# ROUNDS times with and without the open-file check over a live command tree of four processes.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
XLAC_ROOT="$ROOT"
xlac_mvn -q -pl bench,cli -am package -DskipTests >&2
work="$(mktemp -d /tmp/xlac-bench-poll.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cp="$XLAC_ROOT/bench/target/xlac-bench-0.1.0-SNAPSHOT.jar:$(ls "$XLAC_ROOT"/cli/target/lib/*.jar | tr '\n' ':')"
module=$(ls "$XLAC_ROOT"/hlo/src/test/resources/golden/mlp_run1/*jit_train_step.before_optimizations.hlo.pb)
echo "== machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -XX:+UseSerialGC -cp "$cp" dev.xlac.bench.PollBench \
  "$work" "$module" "${1:-4}" "${2:-100}" "${3:-300}"
