#!/usr/bin/env bash
# Start-up of every command, spawn to exit, each in its cheapest real use: `xlac --version`, `xlac
# --help` and every `SUB --help` (cache's subcommands too), `help`, the read-only cache commands on an
# empty cache, add/log/verify/export/import/prune on a cache of one graph, `dump -- true` (which dumps
# nothing), `hash`/`inspect`/`diff` of a small real module, `completion bash`, `run -- true` (a served
# run's start, with the real CPU plugin) and `parallel-compile` with nothing to compile. From the
# checkout (./xlac), with --installed from an installed xlac (pip's wheel or the tarball), and with
# --baseline from another launcher (e.g. an older checkout's ./xlac, for before and after). Median of N
# runs each, after one untimed run that makes the class caches, as wall seconds and as CPU seconds (user
# + system, which a busy machine inflates less); the anchor is `java -version` of the same Java runtime,
# measured in the same run, so the ratios hold on a busy machine.
#
#   bench/startup.sh [-n N] [--only REGEX] [--installed PATH/TO/xlac] [--baseline PATH/TO/xlac]
#
# --only: just the rows whose label matches REGEX (grep -E), e.g. 'help|version'.
# xlac run and parallel-compile need $XLAC_PJRT_PLUGIN (the pinned environment's CPU plugin, as
# scripts/test sets it); without it their rows are left out. With $XLAC_PYTHON (the pinned Python) too,
# parallel-compile also runs over a cache that a traced JAX command filled (graphs and recorded requests).
# `run -- true` compiles nothing, so it writes no launch plan and takes the JVM path every time: it
# measures xlac run's own start, not the fast start.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
n=11
only=
installed=
baseline=
while (( $# )); do
  case "$1" in
    -n) n=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --installed) installed=$(realpath "$2"); shift 2 ;;
    --baseline) baseline=$(realpath "$2"); shift 2 ;;
    *) echo "usage: bench/startup.sh [-n N] [--only REGEX] [--installed PATH/TO/xlac] [--baseline PATH/TO/xlac]" >&2; exit 2 ;;
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

# refused CMD...: runs CMD, which must refuse its input (exit 2), as `cache why` does on an empty cache.
refused() { if "$@"; then return 1; else (( $? == 2 )); fi; }
# found_nothing CMD...: runs CMD, which must end with exit 1, as `dump -- true` does: the command dumped no graph.
found_nothing() { if "$@"; then return 1; else (( $? == 1 )); fi; }

row() {  # row LABEL "ANCHOR_WALL ANCHOR_CPU" CMD...
  local label=$1 anchor=$2 m
  shift 2
  [[ -z "$only" || "$label" =~ $only ]] || return 0
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
  local cache="$WORK/cache-$name" sub
  row "xlac --version" "$anchor" "$xlac" --version
  row "xlac --help" "$anchor" "$xlac" --help
  for sub in hash inspect diff dump run cache parallel-compile completion; do
    row "xlac $sub --help" "$anchor" "$xlac" "$sub" --help
  done
  for sub in add ls stat prune export import verify log why rm clear config keygen materialize push pull; do
    row "xlac cache $sub --help" "$anchor" "$xlac" cache "$sub" --help
  done
  row "xlac help" "$anchor" "$xlac" help
  row "xlac help cache" "$anchor" "$xlac" help cache
  row "xlac cache stat" "$anchor" "$xlac" cache stat --cache "$cache"
  row "xlac cache ls" "$anchor" "$xlac" cache ls --cache "$cache"
  row "xlac cache verify" "$anchor" "$xlac" cache verify --cache "$cache"
  row "xlac cache config max-size" "$anchor" "$xlac" cache config --cache "$cache" max-size
  row "xlac cache why FP (not there)" "$anchor" refused "$xlac" cache why --cache "$cache" "$fingerprint"
  # A cache holding one graph: the commands that read or write its values (the first, untimed run adds the graph).
  local filled="$WORK/filled-$name"
  row "xlac cache add MODULE" "$anchor" "$xlac" cache add --cache "$filled" "$module1"
  row "xlac cache log FP (1 graph)" "$anchor" "$xlac" cache log --cache "$filled" "$fingerprint"
  row "xlac cache verify (1 graph)" "$anchor" "$xlac" cache verify --cache "$filled"
  row "xlac cache export (1 graph)" "$anchor" "$xlac" cache export --cache "$filled" "$WORK/bundle-$name.tar.zst"
  [[ -f "$WORK/bundle-$name.tar.zst" ]] || "$xlac" cache export --cache "$filled" "$WORK/bundle-$name.tar.zst" >/dev/null
  row "xlac cache import BUNDLE" "$anchor" "$xlac" cache import --cache "$filled" "$WORK/bundle-$name.tar.zst"
  row "xlac cache prune (1 graph)" "$anchor" "$xlac" cache prune --cache "$filled" --max-size 1G
  row "xlac dump -- true (no graph)" "$anchor" found_nothing "$xlac" dump --cache "$filled" -- true
  row "xlac completion bash" "$anchor" "$xlac" completion bash
  row "xlac hash MODULE" "$anchor" "$xlac" hash "$module1"
  row "xlac inspect MODULE" "$anchor" "$xlac" inspect "$module1"
  row "xlac diff MODULE MODULE" "$anchor" "$xlac" diff "$module1" "$module2"
  if [[ -n "${XLAC_PJRT_PLUGIN:-}" ]]; then
    row "xlac run -- true (JVM path)" "$anchor" "$xlac" run --cache "$cache" --plugin "$XLAC_PJRT_PLUGIN" -- true
    row "xlac parallel-compile (none)" "$anchor" "$xlac" parallel-compile --cache "$cache" --plugin "$XLAC_PJRT_PLUGIN"
    if [[ -n "${XLAC_PYTHON:-}" ]]; then
      # A cache that a traced JAX command filled: its graphs and its recorded runtime requests, all compiled.
      local traced="$WORK/traced-$name"
      [[ -d "$traced" ]] || "$xlac" parallel-compile --cache "$traced" --plugin "$XLAC_PJRT_PLUGIN" -- "$XLAC_PYTHON" \
        -c 'import jax, jax.numpy as jnp; print(jax.jit(lambda x: x * 2 + 1)(jnp.ones(4)))' >/dev/null 2>&1
      row "xlac parallel-compile (traced, all compiled)" "$anchor" "$xlac" parallel-compile --cache "$traced" \
        --plugin "$XLAC_PJRT_PLUGIN"
    fi
  fi
}

# Two runs of one small real JAX graph (1 KB, 8 instructions), as the hlo module's tests have them.
module1="$ROOT/hlo/src/test/resources/golden/mlp_run1/module_0002.jit__threefry_seed.before_optimizations.hlo.pb"
fingerprint=hlo1:be30264999e8629bf5c681ec92c783c2531223f65a811c906174b8d28e0fdb8f  # module1's
module2="$ROOT/hlo/src/test/resources/golden/mlp_run2/module_0002.jit__threefry_seed.before_optimizations.hlo.pb"

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
