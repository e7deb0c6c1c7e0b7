#!/usr/bin/env bash
# Diff benchmark: `xlac diff`'s work (read both modules + GraphDiff) on the 400,000-instruction module of the
# hashing benchmark against a variant with one changed constant, against hashing both, in one JVM.
#   bench/diff.sh [WORKDIR]     (default: a temp dir; writes ~100 MB of generated modules)
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_classpath
work="${1:-$(mktemp -d)}"
mkdir -p "$work"
java=("$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -XX:+UseSerialGC -cp "$CP" dev.xlac.bench.DiffBench)
[[ -f "$work/layers_400k_c2.hlo.pb" ]] || "${java[@]}" generate "$work" >&2
"${java[@]}" time "$work/layers_400k_c1.hlo.pb" "$work/layers_400k_c2.hlo.pb" 5
