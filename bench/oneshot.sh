#!/usr/bin/env bash
# Reproduces the one-shot figures in bench/README.md ("One-shot dump + compile", issue #5 §3).
#   bench/oneshot.sh [ROUNDS=3] [-- DECODER ARGS...]
# On samples/jax/decoder.py (default arguments: $DECODER_ARGS, else "--steps 3 --n-layers 4"):
#   (a) sequential: `xlac dump` into a fresh cache, then `xlac parallel-compile` of that cache;
#   (b) one-shot:   `xlac parallel-compile -- python decoder.py ...` into a fresh cache.
# ROUNDS alternating rounds (a, b, a, b, ...); the medians are reported, with trace and compile
# time separately so that "compile time about trace time" can be judged. Goal: b/a <= 0.7.
# The knob for the trace/compile balance is the decoder's own arguments: more --steps lengthen
# the trace only; more --n-layers (or a wider --d-model) make every graph bigger to compile.
# Needs the pinned Python environment (JAX, and the real XLA CPU PJRT plugin). Work files go to
# $XLAC_BENCH_DIR (default: a new directory under /tmp), removed at the end unless XLAC_BENCH_KEEP=1.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ROUNDS="${1:-3}"
shift || true
[[ "${1:-}" == "--" ]] && shift
read -r -a DEFAULT_ARGS <<<"${DECODER_ARGS:---steps 3 --n-layers 4}"
ARGS=("$@")
[[ ${#ARGS[@]} -gt 0 ]] || ARGS=("${DEFAULT_ARGS[@]}")
PY="$("$ROOT/scripts/pyenv")"
PLUGIN="${XLAC_PJRT_PLUGIN:-$("$PY" -c 'import lammps_jax_pjrt_cpu as p; print(p.PLUGIN_PATH)')}"
bench_workdir oneshot
export JAX_PLATFORMS=cpu
XLAC="$ROOT/xlac"
"$XLAC" --version >/dev/null  # builds the CLI if needed, outside the measurements
DECODER=("$PY" "$ROOT/samples/jax/decoder.py" "${ARGS[@]}")

echo "== machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); decoder ${ARGS[*]}; $ROUNDS rounds"
traces=(); compiles=(); seqs=(); ones=(); ratios=(); floors=()
for i in $(seq 1 "$ROUNDS"); do
  t=$(wall "$XLAC" dump --cache "$WORK/seq$i" -- "${DECODER[@]}"); tc=$(cpu)
  graphs=$(grep -oE '[0-9]+ unique graphs?' "$WORK/last.log")
  c=$(wall "$XLAC" parallel-compile --cache "$WORK/seq$i" --plugin "$PLUGIN"); cc=$(cpu)
  compiled=$(grep -E '^[0-9]+ graphs?:' "$WORK/last.log")
  o=$(wall "$XLAC" parallel-compile --cache "$WORK/one$i" --plugin "$PLUGIN" -- "${DECODER[@]}"); oc=$(cpu)
  oneshot=$(grep -E '^[0-9]+ graphs?:' "$WORK/last.log")
  s=$(awk -v a="$t" -v b="$c" 'BEGIN{printf "%.2f", a+b}')
  r=$(awk -v a="$o" -v b="$s" 'BEGIN{printf "%.2f", a/b}')
  printf 'round %d: dump %s s (%s) + compile %s s (%s) = %s s; one-shot %s s (%s): %sx\n' \
    "$i" "$t" "$graphs" "$c" "$compiled" "$s" "$o" "$oneshot" "$r"
  # The one-shot's whole CPU spread over every core is a floor no overlap can go under.
  floor=$(awk -v c="$oc" -v n="$(nproc)" -v s="$s" 'BEGIN{if (c == "nan") print "nan"; else printf "%.2f", c / n / s}')
  printf '         CPU (user + sys): dump %s s, compile %s s, one-shot %s s; floor on %d cores: %s s = %sx\n' \
    "$tc" "$cc" "$oc" "$(nproc)" "$(awk -v c="$oc" -v n="$(nproc)" 'BEGIN{printf "%.2f", c / n}')" "$floor"
  traces+=("$t"); compiles+=("$c"); seqs+=("$s"); ones+=("$o"); ratios+=("$r"); floors+=("$floor")
done
mt=$(median "${traces[@]}"); mc=$(median "${compiles[@]}"); ms=$(median "${seqs[@]}"); mo=$(median "${ones[@]}")
printf '%-44s %s s\n' "trace (xlac dump), median" "$mt"
printf '%-44s %s s  (compile/trace %s)\n' "compile (xlac parallel-compile), median" "$mc" \
  "$(awk -v a="$mc" -v b="$mt" 'BEGIN{printf "%.2f", a/b}')"
printf '%-44s %s s\n' "(a) sequential dump + compile, median" "$ms"
printf '%-44s %s s  (%sx of sequential, median of the per-round ratios %sx; goal <= 0.7x)\n' \
  "(b) one-shot, median" "$mo" "$(awk -v a="$mo" -v b="$ms" 'BEGIN{printf "%.2f", a/b}')" "$(median "${ratios[@]}")"
printf '%-44s %sx  (the one-shot'"'"'s CPU time / cores / (a): no schedule beats it here)\n' "floor, median" "$(median "${floors[@]}")"
