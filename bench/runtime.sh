#!/usr/bin/env bash
# Runtime benchmark (issue #12): time to the first training step of samples/jax/decoder.py, one
# process each, median of N alternating rounds, in three set-ups:
#   cold   the real PJRT plugin loaded by JAX directly, no cache
#   xlac   `./xlac run` on a cache that holds every executable (all hits), its start-up included: the
#          launcher and, as for a repeated job, the native fast start from the invocation's launch plan (an
#          untimed run first writes it); the JVM that finishes the run after the command is in "whole process"
#   jax    the real plugin with JAX's own persistent cache, warm (min compile time and size 0)
#   proxy  the served run without xlac's JVM (the environment xlac run sets, by hand): where xlac run's time goes
#   ahead  the same as proxy, loading ahead the list the served runs keep (issue #24): what loading ahead gains
# and the proxy's own time on a miss (key + layout lookup) against the compile, from `xlac run`'s
# --report on an empty cache.
#   bench/runtime.sh [ROUNDS] [DECODER ARGS...]     (default: 5 rounds, --steps 1)
#
# restore mode (issue #24): the same set-ups but cold on samples/jax/restore_and_train.py, a script that works
# about a second on the host before its first compile (a 300 MB tower built and put on the device, a 64 MB data
# shard read), and the fraction of the served runs' load time that loading ahead hid behind that work
# (the proxy's statistics: hidden load time against the load time of every hit).
#   bench/runtime.sh restore [ROUNDS] [SAMPLE ARGS...]   (default: 5 rounds, --steps 1)
#
# miss mode (issue #24): the cost of loading ahead when the program changed under the same command: the cache
# and the list to load ahead are the decoder's; the command's copy of decoder.py is then edited (another
# d_model), so every compile misses and everything loaded ahead is wasted. The proxy alone (no JVM), with and
# without XLAC_PJRT_PRELOAD, alternated.
#   bench/runtime.sh miss [ROUNDS]                      (default: 9 rounds)
#   XLAC_BENCH_XLAC=/path/to/venv/bin/xlac bench/runtime.sh ...   the same with an installed xlac (issue #26)
#
# torch_xla mode (issue #13): the same method on samples/torch_xla/lazy_mark_step.py (torch_xla 2.9 on the
# xla-cpu-pjrt plugin, $XLAC_PJRT_PLUGIN_2), set-ups:
#   cold     the plugin compiling every graph, behind the proxy as a bridge only (no layout: torch_xla 2.9
#            cannot execute on the plugin without it, runtime/README.md "Bridging struct sizes")
#   builtin  torch_xla's own built-in CPU client (PJRT_DEVICE=CPU), no plugin, no cache: for scale
#   xlac     `./xlac run` on a cache that holds every executable (all hits), its JVM start-up included
#   proxy    the served run without xlac's JVM (the environment xlac run sets, by hand)
#   xrwarm   the anchor: torch_xla's own persistent cache, warm (XLA_PERSISTENT_CACHE_PATH, which
#            xr.initialize_cache sets), on its built-in CPU client: on the plugin (behind the bridge) torch_xla 2.9
#            writes its cache but compiles every graph again on the next run (3 of 3), so it is no anchor there
# and the compile seconds saved: the cold runs' compile time (the proxy's statistics) against what the
# served run spends serving (its report's serve_seconds).
#   bench/runtime.sh torch_xla [ROUNDS] [SAMPLE ARGS...]   (default: 5 rounds, --steps 3)
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_workdir runtime
mode=jax
case "${1:-}" in torch_xla | restore | miss) mode=$1; shift ;; esac
rounds_given=${1:-}
rounds="${1:-5}"; shift || true
args=("$@")
[[ ${#args[@]} -gt 0 ]] || { if [[ $mode == torch_xla ]]; then args=(--steps 3); else args=(--steps 1); fi; }
[[ $mode != miss || -n "$rounds_given" ]] || rounds=9
PY="${XLAC_PYTHON:?set XLAC_PYTHON to the python of the pinned environment (scripts/pyenv)}"
XLAC="${XLAC_BENCH_XLAC:-$ROOT/xlac}"
"$XLAC" --version >/dev/null   # build the CLI first, outside the timings

# Runs an `xlac run` with the fast start's trace on (it is not among the variables a plan watches) and says
# which path it took.
fast_start_check() {
  if XLAC_FAST_START_DEBUG=1 "$@" 2>&1 >/dev/null | grep -q "served without a JVM"; then
    echo "fast start: the timed xlac runs start the command without a JVM"
  else
    echo "fast start: NOT used (the timed xlac runs take the JVM path)" >&2
  fi
}
first_step() { "$PY" "$ROOT/bench/first_step.py" "step 1 " "$WORK/last.log" -- "$@"; }
# This build's proxy: where xlac run unpacked it, named by the SHA-256 of the library in the runtime jar (not
# the newest one there: other builds unpack theirs beside it).
proxy_library() {
  local proxy
  proxy="${XDG_CACHE_HOME:-$HOME/.cache}/xlac/runtime/$(unzip -p "$ROOT"/cli/target/lib/xlac-runtime-*.jar \
    "dev/xlac/runtime/native/linux-$(uname -m)/libxlac_pjrt.so" | sha256sum | cut -d' ' -f1)/libxlac_pjrt.so"
  [[ -f "$proxy" ]] || { echo "no proxy library at $proxy" >&2; return 1; }
  echo "$proxy"
}
# The directory of xlac's Python hooks that xlac run puts first on the command's PYTHONPATH.
python_hooks() {
  "$XLAC" run -q --cache "$WORK/hooks-cache" --plugin "$PLUGIN" -- sh -c 'printf %s "${PYTHONPATH%%:*}"'
}
# XLAC_PJRT_PLUGIN_SHA256 from the plugin memo xlac run wrote into the cache.
plugin_sha_env() {
  local memo
  memo=$(cat "$WORK"/cache/runtime/plugins/*.plugin)
  echo "$(sed -n 's/^sha256 //p' <<<"$memo"):$(sed -n 's/^stat //p' <<<"$memo" | tr ' ' :)"
}

if [[ $mode == torch_xla ]]; then
  PLUGIN="${XLAC_PJRT_PLUGIN_2:?set XLAC_PJRT_PLUGIN_2 to the xla-cpu-pjrt plugin (PJRT 0.81) torch_xla 2.9 runs on}"
  sample=("$PY" "$ROOT/samples/torch_xla/lazy_mark_step.py" "${args[@]}")
  # The environment xlac run gives a torch_xla command (ProxyEnvironment), by hand; $1: the layout or "".
  behind_proxy() {
    local layout="$1" stats="$2"; shift 2
    mkdir -p "$stats"
    env PJRT_DEVICE=LIBRARY PJRT_LIBRARY_PATH="$(proxy_library)" XLAC_PJRT_REAL_PLUGIN="$PLUGIN" \
      XLAC_PJRT_PLUGIN_SHA256="$(plugin_sha_env)" ${layout:+XLAC_PJRT_LAYOUT="$layout"} XLAC_PJRT_STATS="$stats" "$@"
  }
  tcold() { rm -rf "$WORK/cold-stats"; behind_proxy "" "$WORK/cold-stats" "$PY" "$ROOT/bench/first_step.py" \
    "step 1 " "$WORK/last.log" -- "${sample[@]}"; }
  builtin() { PJRT_DEVICE=CPU first_step "${sample[@]}"; }
  xrwarm() { PJRT_DEVICE=CPU XLA_PERSISTENT_CACHE_PATH="$WORK/xr-cache" first_step "${sample[@]}"; }
  tserved() { PJRT_DEVICE= first_step "$XLAC" run --cache "$WORK/cache" --plugin "$PLUGIN" -- "${sample[@]}"; }
  # The served run without xlac's JVM: the environment xlac run gives a command (captured once below: the proxy, the
  # Python hooks that register it as torch_xla's device plugin, the layout), a statistics directory of its own, and
  # no list to load ahead.
  tproxy() { local vars; mapfile -d '' vars <"$WORK/run.env"; rm -rf "$WORK/stats"; mkdir -p "$WORK/stats"
    env -i "${vars[@]}" XLAC_PJRT_STATS="$WORK/stats" XLAC_PJRT_PRELOAD= "$PY" "$ROOT/bench/first_step.py" "step 1 " \
      "$WORK/last.log" -- "${sample[@]}"; }
  # Record once, then check that xlac run serves everything.
  PJRT_DEVICE= "$XLAC" run --cache "$WORK/cache" --plugin "$PLUGIN" --record -- "${sample[@]}" >/dev/null 2>&1
  PJRT_DEVICE= "$XLAC" run --cache "$WORK/cache" --plugin "$PLUGIN" --report "$WORK/served.json" -- "${sample[@]}" \
    >/dev/null 2>&1
  grep -q '"misses": 0,' "$WORK/served.json" && grep -q '"fallbacks": 0,' "$WORK/served.json" \
    || { echo "xlac run did not serve every compile:" >&2; cat "$WORK/served.json" >&2; exit 1; }
  tserved >/dev/null
  PJRT_DEVICE= "$XLAC" run -q --cache "$WORK/cache" --plugin "$PLUGIN" -- env -0 >"$WORK/run.env"
  xrwarm >/dev/null  # fills torch_xla's cache
  PJRT_DEVICE= fast_start_check "$XLAC" run --cache "$WORK/cache" --plugin "$PLUGIN" -- "${sample[@]}"
  declare -a c_first c_total c_compile b_first b_total x_first x_total p_first p_total r_first r_total
  for ((i = 0; i < rounds; i++)); do
    read -r f t < <(tcold);   c_first+=("$f"); c_total+=("$t")
    c_compile+=("$(awk -F'\t' '$1 == "miss" {s += $4} END {printf "%.3f", s / 1e9}' "$WORK"/cold-stats/*.tsv)")
    read -r f t < <(builtin); b_first+=("$f"); b_total+=("$t")
    read -r f t < <(tserved); x_first+=("$f"); x_total+=("$t")
    read -r f t < <(tproxy);  p_first+=("$f"); p_total+=("$t")
    read -r f t < <(xrwarm);  r_first+=("$f"); r_total+=("$t")
  done
  grep -hv '^hit' "$WORK"/stats/*.tsv && { echo "the proxy alone did not serve every compile" >&2; exit 1; }
  echo "  torch_xla's persistent cache: $(find "$WORK/xr-cache" -type f | wc -l) entries"
  cf=$(median "${c_first[@]}"); ct=$(median "${c_total[@]}"); cc=$(median "${c_compile[@]}")
  bf=$(median "${b_first[@]}"); bt=$(median "${b_total[@]}")
  xf=$(median "${x_first[@]}"); xt=$(median "${x_total[@]}")
  pf=$(median "${p_first[@]}"); pt=$(median "${p_total[@]}")
  rf=$(median "${r_first[@]}"); rt=$(median "${r_total[@]}")
  echo "torch_xla lazy_mark_step.py ${args[*]}, median of $rounds alternating rounds (seconds to 'step 1' / whole process):"
  echo "  cold (plugin compiles, proxy as bridge only)  $cf / $ct"
  echo "  torch_xla built-in CPU client (no plugin)     $bf / $bt"
  echo "  xlac run (served, JVM included)               $xf / $xt    cold/xlac $(ratio "$cf" "$xf")"
  echo "  proxy alone (no JVM, same env)                $pf / $pt    cold/proxy $(ratio "$cf" "$pf")"
  echo "  built-in CPU client, its persistent cache warm $rf / $rt    xlac/anchor $(ratio "$xf" "$rf") / $(ratio "$xt" "$rt")"
  echo "  per-round first-step: cold ${c_first[*]} | builtin ${b_first[*]} | xlac ${x_first[*]} | proxy ${p_first[*]} | anchor ${r_first[*]}"
  serve=$(sed -n 's/.*"serve_seconds": \([0-9.eE-]*\).*/\1/p' "$WORK/served.json")
  python3 -c "c=float('$cc'); s=float('$serve'); print(f'  served run: {s:.3f} s serving against {c:.3f} s of cold compiling (median per round: ${c_compile[*]}): {100*(c-s)/c:.1f} % of the compile time saved')"
  exit 0
fi

PLUGIN="${XLAC_PJRT_PLUGIN:?set XLAC_PJRT_PLUGIN to the real PJRT plugin}"
case $mode in
  restore)
    "$PY" -c "import sys; sys.path.insert(0, '$ROOT/samples/jax'); import restore_and_train as r; r.write_shard('$WORK/shard.u16', 64, 256, 0)"
    decoder=("$PY" "$ROOT/samples/jax/restore_and_train.py" --shard "$WORK/shard.u16" "${args[@]}") ;;
  miss)  # a copy of the decoder that is edited after the cache is recorded: the same command, another program
    mkdir -p "$WORK/program"
    cp "$ROOT/samples/jax/decoder.py" "$WORK/program/decoder.py"
    decoder=("$PY" "$WORK/program/decoder.py" --steps 1) ;;
  *) decoder=("$PY" "$ROOT/samples/jax/decoder.py" "${args[@]}") ;;
esac
cold() {
  PJRT_NAMES_AND_LIBRARY_PATHS="real:$PLUGIN" JAX_PLATFORMS=real first_step "${decoder[@]}"
}
jaxwarm() {
  PJRT_NAMES_AND_LIBRARY_PATHS="real:$PLUGIN" JAX_PLATFORMS=real JAX_COMPILATION_CACHE_DIR="$WORK/jax-cache" \
    JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0 JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES=0 first_step "${decoder[@]}"
}
# Under xlac the plugin is registered as without it ("real"): xlac run loads the proxy under that name.
served() {
  PJRT_NAMES_AND_LIBRARY_PATHS="real:$PLUGIN" JAX_PLATFORMS=real first_step "$XLAC" run --cache "$WORK/cache" \
    --plugin "$PLUGIN" -- "${decoder[@]}"
}
# The same served run without xlac's JVM: the environment xlac run gives the command, set here by hand
# (the proxy unpacked by xlac run, the plugin's hash from its memo), to split xlac run's time into its
# JVM and the served compiles.
proxyonly() {
  local proxy
  proxy=$(proxy_library)
  mkdir -p "$WORK/stats"
  PJRT_NAMES_AND_LIBRARY_PATHS="real:$PLUGIN" JAX_PLATFORMS=real PYTHONPATH="$HOOKS" \
    XLAC_PJRT_PROXY="$proxy" XLAC_PJRT_REAL_PLUGIN="$PLUGIN" \
    XLAC_PJRT_PLUGIN_SHA256="$(plugin_sha_env)" \
    XLAC_PJRT_LAYOUT="$WORK/cache/runtime/pjrt" XLAC_PJRT_STATS="$WORK/stats" JAX_INCLUDE_FULL_TRACEBACKS_IN_LOCATIONS=0 \
    JAX_HLO_SOURCE_FILE_CANONICALIZATION_REGEX='.*' JAX_COMPILER_DETAILED_LOGGING_MIN_OPS=0 first_step "${decoder[@]}"
}

# Warm both caches once (and check that xlac run serves everything).
PJRT_NAMES_AND_LIBRARY_PATHS="real:$PLUGIN" JAX_PLATFORMS=real \
  "$XLAC" run --cache "$WORK/cache" --plugin "$PLUGIN" --record -- "${decoder[@]}" >/dev/null 2>&1
jaxwarm >/dev/null
PJRT_NAMES_AND_LIBRARY_PATHS="real:$PLUGIN" JAX_PLATFORMS=real \
  "$XLAC" run --cache "$WORK/cache" --plugin "$PLUGIN" --report "$WORK/served.json" -- "${decoder[@]}" \
  >/dev/null 2>&1
grep -q '"misses": 0,' "$WORK/served.json" && grep -q '"fallbacks": 0,' "$WORK/served.json" \
  || { echo "xlac run did not serve every compile:" >&2; cat "$WORK/served.json" >&2; exit 1; }
# The timed xlac runs repeat one invocation, as a user's job does: the first (untimed) writes its launch plan,
# and the check run shows that the next ones start the command without a JVM (runtime/README.md, "The fast start").
served >/dev/null
PJRT_NAMES_AND_LIBRARY_PATHS="real:$PLUGIN" JAX_PLATFORMS=real \
  fast_start_check "$XLAC" run --cache "$WORK/cache" --plugin "$PLUGIN" -- "${decoder[@]}"
HOOKS=$(python_hooks)
# The list of keys the served runs keep for the decoder's command (the only command run on this cache so far).
list_file=$(ls "$WORK"/cache/runtime/pjrt/preload/*.keys)
ahead() { rm -rf "$WORK/stats"; XLAC_PJRT_PRELOAD="$list_file" proxyonly; }  # exported for the call

# The fraction of the hits' load time (DeserializeAndLoad) that loading ahead hid, from one run's statistics: the
# hidden time of the hits served by an executable loaded ahead, against the load time of every hit (those loaded
# ahead: their `preloaded` line; the others: their `hit` line).
hidden_fraction() {
  awk -F'\t' '$1=="preloaded"{load[$2]+=$3} $1=="hit"{hl[$2]+=$4} $1=="preload_hit"{claimed[$2]=1; hidden+=$4}
    END{for (k in hl) total += hl[k]; for (k in claimed) total += load[k];
        if (total > 0) printf "%.3f %.3f %.3f\n", hidden / total, hidden / 1e9, total / 1e9; else print "nan 0 0"}' \
    "$WORK"/stats/*.tsv
}

if [[ $mode == miss ]]; then
  sed -i 's/parser.add_argument("--d-model", type=int, default=64)/parser.add_argument("--d-model", type=int, default=32)/' \
    "$WORK/program/decoder.py"
  grep -q 'd-model", type=int, default=32' "$WORK/program/decoder.py" || { echo "could not edit the program" >&2; exit 1; }
  plain() { rm -rf "$WORK/stats"; XLAC_PJRT_PRELOAD= proxyonly; }
  echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
  declare -a n_first n_total a_first a_total wasted
  for ((i = 0; i < rounds; i++)); do
    read -r f t < <(plain); n_first+=("$f"); n_total+=("$t")
    grep -q '^miss' "$WORK"/stats/*.tsv || { echo "the edited program was served: not a miss run" >&2; exit 1; }
    misses=$(cat "$WORK"/stats/*.tsv | grep -c '^miss' || true); hits=$(cat "$WORK"/stats/*.tsv | grep -c '^hit' || true)
    read -r f t < <(ahead); a_first+=("$f"); a_total+=("$t")
    wasted+=("$(awk -F'\t' '$1=="preloaded"{n++} $1=="preload_hit"{h++} END{print n - h}' "$WORK"/stats/*.tsv)")
  done
  nf=$(median "${n_first[@]}"); nt=$(median "${n_total[@]}")
  af=$(median "${a_first[@]}"); at=$(median "${a_total[@]}")
  echo "decoder.py edited under the same command ($misses compiles missed, $hits were still served), median of $rounds alternating rounds (seconds to 'step 1' / whole process):"
  echo "  proxy alone, no loading ahead        $nf / $nt"
  echo "  proxy alone, loading ahead the list  $af / $at    ahead/plain $(ratio "$af" "$nf") / $(ratio "$at" "$nt")"
  echo "  per-round first-step: plain ${n_first[*]} | ahead ${a_first[*]}"
  echo "  executables loaded ahead and never claimed (per round): ${wasted[*]}"
  echo "  load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
  exit 0
fi

echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -a c_first c_total x_first x_total j_first j_total p_first p_total a_first a_total h_frac
for ((i = 0; i < rounds; i++)); do
  if [[ $mode == restore ]]; then c_first+=(nan); c_total+=(nan); else
    read -r f t < <(cold);  c_first+=("$f"); c_total+=("$t"); fi
  read -r f t < <(served);  x_first+=("$f"); x_total+=("$t")
  read -r f t < <(jaxwarm); j_first+=("$f"); j_total+=("$t")
  rm -rf "$WORK/stats"
  read -r f t < <(proxyonly); p_first+=("$f"); p_total+=("$t")
  grep -hv '^hit' "$WORK"/stats/*.tsv && { echo "the proxy alone did not serve every compile" >&2; exit 1; }
  read -r f t < <(ahead); a_first+=("$f"); a_total+=("$t")
  grep -hvE '^(hit|preload)' "$WORK"/stats/*.tsv && { echo "the proxy loading ahead did not serve every compile" >&2; exit 1; }
  read -r frac _ _ < <(hidden_fraction); h_frac+=("$frac")
done
# Loading ahead in the last round: executables loaded ahead, the hits they served, the load time not waited for.
awk -F'\t' '$1=="preloaded"{n++} $1=="preload_hit"{h++; s+=$4} END{printf "  loading ahead (last round): %d loaded, %d hits, %.3f s of loading not waited for\n", n, h, s/1e9}' \
  "$WORK"/stats/*.tsv
cf=$(median "${c_first[@]}"); ct=$(median "${c_total[@]}")
xf=$(median "${x_first[@]}"); xt=$(median "${x_total[@]}")
jf=$(median "${j_first[@]}"); jt=$(median "${j_total[@]}")
pf=$(median "${p_first[@]}"); pt=$(median "${p_total[@]}")
af=$(median "${a_first[@]}"); at=$(median "${a_total[@]}")
echo "${decoder[1]##*/} ${args[*]}, median of $rounds alternating rounds (seconds to 'step 1' / whole process):"
[[ $mode == restore ]] || echo "  cold (real plugin, no cache)      $cf / $ct"
cold_vs() { [[ $mode == restore ]] || echo "cold/$1 $(ratio "$cf" "$2"), "; }
echo "  xlac run (served, start-up incl.) $xf / $xt    $(cold_vs xlac "$xf")xlac/jax $(ratio "$xf" "$jf") / $(ratio "$xt" "$jt")"
echo "  JAX persistent cache, warm        $jf / $jt    $(cold_vs jax "$jf" | sed 's/, $//')"
echo "  proxy alone (no JVM, same env)    $pf / $pt    proxy/jax $(ratio "$pf" "$jf")"
echo "  proxy alone, loading ahead        $af / $at    ahead/jax $(ratio "$af" "$jf") / $(ratio "$at" "$jt"), ahead/proxy $(ratio "$af" "$pf")"
echo "  load time hidden by loading ahead (proxy alone, per round): ${h_frac[*]}; median $(median "${h_frac[@]}")"
echo "  per-round first-step: cold ${c_first[*]} | xlac ${x_first[*]} | jax ${j_first[*]} | proxy ${p_first[*]} | ahead ${a_first[*]}"
# The bound: JAX's own time in its compile path (bench/compile_path.py: its backend-compile event, which times
# the persistent cache's key, read and deserialization), one untimed run each; to 'step 1' less that is the time
# of a run whose compiles cost nothing at all, the least any cache can reach.
compile_path() { "$1" "$ROOT/bench/compile_path.py" "${@:2}" 2>&1 >/dev/null | sed -n 's/^compile_path //p' | tail -1; }
# The two set-ups again, with compile_path in place of first_step (the functions call first_step).
untimed() { local saved; saved=$(declare -f first_step); first_step() { compile_path "$@"; }; "$@"; eval "$saved"; }
read -r jcp jn < <(untimed jaxwarm)
rm -rf "$WORK/stats"
read -r acp an < <(untimed ahead)
awk -v j="$jf" -v c="$jcp" -v n="$jn" -v a="$acp" -v x="$xf" 'BEGIN{
  printf "  compile path: JAX warm %.3f s for %d compiles, proxy loading ahead %.3f s; JAX warm less its compile path %.3f s = %.2fx of JAX warm (the bound), xlac run %.2fx\n", c, n, a, j - c, (j - c) / j, x / j}'
grep -E '"(preloaded|preload_hits|preload_wasted|preload_hidden_seconds)"' "$WORK/served.json" | tr -d ' ,' \
  | sed 's/^/  xlac run (served.json): /'
sed -n 's/.*"saved_seconds": \([0-9.]*\).*/  compile seconds saved per served run: \1/p' "$WORK/served.json"

# The proxy's overhead on a miss: an empty cache, nothing recorded, every compile a miss.
# xlac run's own start-up, apart from the training command's noise: microseconds from the spawn of `xlac run` to
# its command (`date +%s%N`), 15 alternating rounds, with the served runs' options: the fast start (the plan of
# the runs above holds), and the JVM path (a watched variable that differs every round: no plan holds).
spawn_us() { local s e; s=$(date +%s%N); e=$("$@" 2>/dev/null | head -n1); echo $(( (e - s) / 1000 )); }
declare -a s_fast s_jvm
for ((i = 0; i < 15; i++)); do
  s_fast+=("$(PJRT_NAMES_AND_LIBRARY_PATHS="real:$PLUGIN" JAX_PLATFORMS=real spawn_us "$XLAC" run --cache "$WORK/cache" --plugin "$PLUGIN" -- date +%s%N)")
  s_jvm+=("$(PJRT_NAMES_AND_LIBRARY_PATHS="real:$PLUGIN" JAX_PLATFORMS=real XLAC_BENCH_ROUND=$i spawn_us "$XLAC" run --cache "$WORK/cache" --plugin "$PLUGIN" -- date +%s%N)")
done
echo "  xlac run's start-up, spawn to command (median of 15, ms): fast start $(median "${s_fast[@]}" | awk '{printf "%.1f", $1/1000}'), JVM path $(median "${s_jvm[@]}" | awk '{printf "%.1f", $1/1000}')"
echo "  load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"

"$XLAC" run --cache "$WORK/empty-cache" --plugin "$PLUGIN" --report "$WORK/miss.json" -- "${decoder[@]}" \
  >/dev/null 2>&1
grep -E '"(misses|compile_seconds|miss_lookup_seconds|miss_overhead_percent)"' "$WORK/miss.json" \
  | tr -d ' ,' | sed 's/^/  miss: /'

# What serving still costs against the compiles it replaces: the served run's serve_seconds (key, lookup,
# checksum, DeserializeAndLoad of every hit) against the cold run's compile_seconds (the miss run above).
cold_compile=$(sed -n 's/.*"compile_seconds": \([0-9.]*\).*/\1/p' "$WORK/miss.json")
serve=$(sed -n 's/.*"serve_seconds": \([0-9.eE-]*\).*/\1/p' "$WORK/served.json")
python3 -c "c=float('$cold_compile'); s=float('$serve'); print(f'  served run: {s:.3f} s serving against {c:.3f} s of cold compiling: {100*(c-s)/c:.1f} % of the compile time saved')"
