#!/usr/bin/env bash
# Regenerate the golden XLA dump fixtures in this directory from scratch.
#
#   hlo/src/test/resources/golden/regenerate.sh
#
# Uses the pinned environment from scripts/pyenv (built on first use), runs
# samples/jax/mlp.py and two derived copies of it with XLA dumping enabled and
# copies a small, deterministic selection of the dumped files here. See
# README.md for what each folder holds. Progress goes to stderr.
set -euo pipefail

golden="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
repo_root="$(cd -- "$golden/../../../../.." && pwd -P)"
mlp_src="$repo_root/samples/jax/mlp.py"
[[ -f "$mlp_src" ]] || { echo "regenerate.sh: missing $mlp_src" >&2; exit 1; }

log() { printf 'regenerate.sh: %s\n' "$*" >&2; }

PY="$("$repo_root/scripts/pyenv")"
log "python: $PY"
"$PY" -c 'import jax, jaxlib; print("jax", jax.__version__, "jaxlib", jaxlib.__version__)' >&2

# Only the settings below may influence the dumps.
while IFS= read -r var; do unset "$var"; done < <(compgen -e | grep -E '^(JAX_|XLA_|TF_CPP_)' || true)

work="$(mktemp -d "${TMPDIR:-/tmp}/xlac-golden.XXXXXX")"
trap 'rm -rf -- "$work"' EXIT

# ---------------------------------------------------------------- sources ---
# sources/mlp_renamed.py: every def renamed, 7 comment/blank lines on top.
# sources/mlp_const.py: identical to mlp.py except MAX_GRAD_NORM, a literal
# used exactly once inside the jitted train step.
mkdir -p -- "$golden/sources"
"$PY" - "$mlp_src" "$golden/sources" <<'PYEOF'
import pathlib, re, sys

src = pathlib.Path(sys.argv[1]).read_text()
out = pathlib.Path(sys.argv[2])

renames = {
    "init_params": "make_weights",
    "make_data": "synth_batch",
    "forward": "apply_net",
    "loss_fn": "objective",
    "init_adam": "adam_zeros",
    "train_step": "update_fn",
    "main": "entry",
}
defs = set(re.findall(r"^\s*def (\w+)\(", src, re.M))
if defs != set(renames):
    sys.exit(f"mlp.py defines {sorted(defs)}; update the rename map in regenerate.sh")
# Rename identifiers in the code only; the module docstring stays as it is.
doc_end = src.index('"""', src.index('"""') + 3) + 3
renamed = src[doc_end:]
for old, new in renames.items():
    renamed, n = re.subn(rf"\b{old}\b", new, renamed)
    assert n >= 2, (old, n)  # definition plus at least one use
renamed = src[:doc_end] + renamed
header = (
    "# Golden-fixture variant of samples/jax/mlp.py, written by regenerate.sh.\n"
    "#\n"
    "# Every Python function is renamed (train_step -> update_fn, ...) and these\n"
    "# seven header lines shift all source lines by 7, so the dumped HLO differs\n"
    "# from mlp_run1 only in names and source-line metadata.\n"
    "#\n"
    "\n"
)
assert header.count("\n") == 7
(out / "mlp_renamed.py").write_text(header + renamed)

const, n = re.subn(r"^MAX_GRAD_NORM = 1\.5(?=\s)", "MAX_GRAD_NORM = 2.5", src, flags=re.M)
assert n == 1, "MAX_GRAD_NORM = 1.5 not found in mlp.py"
(out / "mlp_const.py").write_text(const)
PYEOF

# ------------------------------------------------------------------- dumps ---
# Each run stages its script as $work/<run>/mlp.py (the renamed variant as
# mlp_renamed.py) and JAX strips "$work/<run>/" from the HLO source_file
# metadata, so the fixtures do not depend on where this script runs and the
# variants differ only in what they are meant to differ in (mlp_const has
# source_file "mlp.py" like mlp_run1).
canon_regex="$("$PY" -c 'import re, sys; print("^" + re.escape(sys.argv[1] + "/") + "[^/]+/")' "$work")"

# dump NAME SCRIPT STAGED_AS "EXTRA XLA FLAGS" ARGS...
dump() {
  local name="$1" script="$2" staged_as="$3" extra="$4"
  shift 4
  mkdir -p -- "$work/$name"
  local staged="$work/$name/$staged_as"
  cp -- "$script" "$staged"
  log "run $name: $(basename -- "$script") as $staged_as $* ($extra)"
  local t0=$SECONDS
  (
    cd -- "$work/$name"
    XLA_FLAGS="--xla_dump_to=$work/$name/dump $extra" \
    JAX_COMPILER_DETAILED_LOGGING_MIN_OPS=0 \
    JAX_PLATFORMS=cpu \
    JAX_HLO_SOURCE_FILE_CANONICALIZATION_REGEX="$canon_regex" \
      "$PY" "$staged" "$@"
  ) >&2
  log "run $name: done in $((SECONDS - t0)) s"
}

# take DEST DUMP_NAME GLOB...: copy matching dump files (exactly the matches,
# each glob must match at least one file) into $golden/DEST.
take() {
  local dest="$1" from="$work/$2/dump"
  shift 2
  mkdir -p -- "$golden/$dest"
  local pat matched
  for pat in "$@"; do
    matched=0
    for f in "$from"/$pat; do
      [[ -f "$f" ]] || continue
      cp -- "$f" "$golden/$dest/"
      matched=1
    done
    (( matched )) || { echo "regenerate.sh: no $pat in $from" >&2; exit 1; }
  done
}

proto="--xla_dump_hlo_as_proto"
renamed_src="$golden/sources/mlp_renamed.py"
const_src="$golden/sources/mlp_const.py"
dump run1     "$mlp_src"     mlp.py         "$proto" --steps 2
dump run2     "$mlp_src"     mlp.py         "$proto" --steps 2
dump renamed  "$renamed_src" mlp_renamed.py "$proto" --steps 2
dump batch64  "$mlp_src"     mlp.py         "$proto" --steps 2 --batch-size 64
dump const    "$const_src"   mlp.py         "$proto" --steps 2
dump snapshot "$mlp_src"     mlp.py         "$proto --xla_dump_hlo_snapshots" --steps 2
dump gz       "$mlp_src"     mlp.py         "$proto --xla_dump_compress_protos" --steps 2
dump text     "$mlp_src"     mlp.py         "--xla_dump_hlo_as_text" --steps 2

for d in mlp_run1 mlp_run2 mlp_renamed mlp_batch64 mlp_const snapshot gz text; do
  rm -rf -- "${golden:?}/$d"
done

take mlp_run1    run1    '*.before_optimizations.hlo.pb' \
                         '*.jit_train_step.cpu_after_optimizations.hlo.pb' \
                         '*.jit_train_step.cpu_after_optimizations-memory-usage-report.pb'
take mlp_run2    run2    '*.before_optimizations.hlo.pb'
take mlp_renamed renamed '*.before_optimizations.hlo.pb'
take mlp_batch64 batch64 '*.before_optimizations.hlo.pb'
take mlp_const   const   '*.before_optimizations.hlo.pb'
# HloSnapshot files are named module_NNNN.<name>.snapshot.<execution id>.pb;
# jit__argmax runs once, so it has exactly one.
take snapshot    snapshot '*.jit__argmax.snapshot.*.pb'
take gz          gz       '*.jit_train_step.before_optimizations.hlo.pb.gz'
take text        text     '*.jit_train_step.before_optimizations.txt'

# ------------------------------------------------------------------ checks ---
check() { "$@" || { echo "regenerate.sh: check failed: $*" >&2; exit 1; }; }
one() { local n; n="$(compgen -G "$golden/$1" | wc -l)"; [[ "$n" -eq 1 ]]; }
none() { ! compgen -G "$golden/$1" >/dev/null; }
check one  'mlp_run1/*.jit_train_step.before_optimizations.hlo.pb'
check one  'mlp_run2/*.jit_train_step.before_optimizations.hlo.pb'
check one  'mlp_batch64/*.jit_train_step.before_optimizations.hlo.pb'
check one  'mlp_const/*.jit_train_step.before_optimizations.hlo.pb'
check one  'mlp_renamed/*.jit_update_fn.before_optimizations.hlo.pb'
check none 'mlp_renamed/*train_step*'
check one  'snapshot/*'
check one  'gz/*'
check one  'text/*'

log "sizes:"
(cd -- "$golden" && du -sh -- mlp_run1 mlp_run2 mlp_renamed mlp_batch64 mlp_const snapshot gz text sources && du -ch -- */ | tail -n 1) >&2
