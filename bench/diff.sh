#!/usr/bin/env bash
# Diff benchmark: `xlac diff`'s work (read both modules + GraphDiff) on the 400,000-instruction module of the
# hashing benchmark against a variant with one changed constant, against hashing both, in one JVM.
#   bench/diff.sh [WORKDIR]     (default: a temp dir; writes ~100 MB of generated modules)
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
XLAC_ROOT="$ROOT"
xlac_mvn -q -pl bench,cli -am package -DskipTests >&2
work="${1:-$(mktemp -d)}"
mkdir -p "$work"
cp="$XLAC_ROOT/bench/target/xlac-bench-0.1.0-SNAPSHOT.jar:$(ls "$XLAC_ROOT"/cli/target/lib/*.jar | tr '\n' ':')"
java=("$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -XX:+UseSerialGC -cp "$cp" dev.xlac.bench.DiffBench)
[[ -f "$work/layers_400k_c2.hlo.pb" ]] || "${java[@]}" generate "$work" >&2
"${java[@]}" time "$work/layers_400k_c1.hlo.pb" "$work/layers_400k_c2.hlo.pb" 5
