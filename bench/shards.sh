#!/usr/bin/env bash
# Reproduces the figures of bench/README.md "Distributed compiles: shard balance by simulation" (issue #15).
#   bench/shards.sh [CACHE_DIR] [J=4] [GRAPHS=10000]
# Without CACHE_DIR, a cache is made here: the JAX samples (mlp.py, decoder.py) run under
# `xlac parallel-compile --plugin` (their graphs compiled with the real XLA CPU plugin, their compiles recorded).
# Then dev.xlac.bench.ShardBench simulates the makespan of compiling those graphs over K = 1..64 nodes x J jobs
# under xlac's shard plan, against LPT over all K x J workers and the trivial lower bound, and prints the sizes of
# the cache's objects. Work files go to $XLAC_BENCH_DIR (default: a new directory under /tmp).
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CACHE="${1:-}"
J="${2:-4}"
GRAPHS="${3:-10000}"
bench_workdir shards
echo "== build" >&2
bench_classpath
if [[ -z "$CACHE" ]]; then
  PY="$("$ROOT/scripts/pyenv")"
  PLUGIN="${XLAC_PJRT_PLUGIN:-$("$PY" -c 'import lammps_jax_pjrt_cpu as p; print(p.PLUGIN_PATH)')}"
  CACHE="$WORK/cache"
  echo "== filling $CACHE from samples/jax (mlp.py, decoder.py) with $PLUGIN" >&2
  for sample in "mlp.py --steps 2" "decoder.py --steps 2"; do
    read -r -a args <<<"$sample"
    JAX_PLATFORMS= XLAC_PJRT_PLUGIN= "$ROOT/xlac" parallel-compile --cache "$CACHE" --plugin "$PLUGIN" -- \
      "$PY" "$ROOT/samples/jax/${args[0]}" "${args[@]:1}" >"$WORK/last.log" 2>&1 || { cat "$WORK/last.log" >&2; exit 1; }
    grep -E '^[0-9]+ graphs|^recorded' "$WORK/last.log" >&2 || true
  done
fi
"$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -XX:+UseSerialGC -cp "$CP" dev.xlac.bench.ShardBench \
  "$CACHE" "$J" "$GRAPHS"
