# shellcheck shell=bash
# The part of the launcher that a checkout (./xlac) and an installed xlac (packaging/xlac) share:
# the locale, the JVM's ahead-of-time class caches, the java command line and xlac run's fast start.
# Sourced last; it execs. The caller sets:
#   xlac_java_home  the Java runtime (a checkout's JDK, or the one bundled with an install)
#   xlac_jar        the CLI's jar (its lib/ beside it)
#   xlac_aot_dir    where the class caches live (made on first use; skipped when not writable)
#   xlac_plans      xlac run's launch plans
#   xlac_fast       the native fast start of xlac run (skipped when not there)

# The JVM decodes its arguments and encodes file names with the locale's character set. In the C or
# POSIX locale, or one that is not installed, that is ASCII, and no non-ASCII path would work. Then
# the JVM runs in C.UTF-8, and learns what LC_ALL the user had, so that the commands xlac runs for
# the user (xlac dump -- COMMAND) get the user's own locale back. bash counts the characters of a
# two-byte UTF-8 string in its own locale, set up from the same variables as the JVM's.
xlac_probe=$'\xc3\xa9'
if (( ${#xlac_probe} != 1 )); then
  xlac_user_lc_all_set=${LC_ALL+set}
  xlac_user_lc_all=${LC_ALL-}
  LC_ALL=C.UTF-8
  if (( ${#xlac_probe} == 1 )); then
    export LC_ALL XLAC_LAUNCHER_LC_ALL=C.UTF-8
    if [[ -n "$xlac_user_lc_all_set" ]]; then export XLAC_USER_LC_ALL="$xlac_user_lc_all"; fi
  elif [[ -n "$xlac_user_lc_all_set" ]]; then  # no C.UTF-8 here: leave the locale as it was
    LC_ALL=$xlac_user_lc_all
  else
    unset LC_ALL
  fi
fi

# xlac_small_files LIMIT ARG...: true when every argument but options is a regular file and they hold at most
# LIMIT bytes in all (a directory, a fingerprint or an option's value: false, as the size of the work is unknown).
xlac_small_files() {
  local limit=$1 arg files=() value=0
  shift
  for arg; do
    if (( value )); then value=0; continue; fi
    if [[ "$arg" == --cache ]]; then value=1; continue; fi  # the cache directory, not an input
    if [[ "$arg" == -* ]]; then continue; fi
    [[ -f "$arg" ]] || return 1
    files+=("$arg")
  done
  (( ${#files[@]} )) || return 1
  xlac_sizes_at_most "$limit" "${files[@]}"
}
# xlac_sizes_at_most LIMIT FILE...: true when the files hold at most LIMIT bytes in all (one stat for all of them).
xlac_sizes_at_most() {
  local limit=$1 sizes size total=0
  shift
  sizes=$(stat -L -c %s -- "$@" 2>/dev/null) || return 1
  for size in $sizes; do total=$(( total + size )); done
  (( total <= limit ))
}
# xlac_small_cache LIMIT ARG...: true when the cache the arguments name (--cache DIR, else as the cache's own
# CacheLocation finds it: $XLAC_CACHE_DIR, an absolute $XDG_CACHE_HOME/xlac) holds at most LIMIT bytes of database
# files in at most 256 files; a cache with no database yet is small. Unknown: false, as for the default
# ~/.cache/xlac when it has no database here: Java's home is the passwd entry's, which $HOME need not be.
xlac_small_cache() {
  local limit=$1 arg dir= value=0 files guessed=0 given=0
  shift
  for arg; do
    if (( value )); then dir=$arg; value=0; continue; fi
    case "$arg" in
      --) break ;;
      --cache) value=1; given=1 ;;
      --cache=*) dir=${arg#--cache=}; given=1 ;;
    esac
  done
  if (( given )) && [[ -z "$dir" ]]; then return 1; fi  # --cache= (picocli: the current directory)
  if [[ -z "$dir" && "${XLAC_CACHE_DIR:-}" == *[![:space:]]* ]]; then dir=$XLAC_CACHE_DIR; fi
  if [[ -z "$dir" && "${XDG_CACHE_HOME:-}" == /* ]]; then dir=$XDG_CACHE_HOME/xlac; fi
  if [[ -z "$dir" && -n "${HOME:-}" ]]; then dir=$HOME/.cache/xlac; guessed=1; fi
  [[ -n "$dir" ]] || return 1
  if [[ ! -e "$dir/db" ]]; then return "$guessed"; fi
  [[ -d "$dir/db" && -r "$dir/db" ]] || return 1
  files=("$dir"/db/*)
  [[ -e "${files[0]}" ]] || return 0  # an empty directory: the glob stayed as written
  (( ${#files[@]} <= 256 )) || return 1
  xlac_sizes_at_most "$limit" "${files[@]}"
}
# xlac_names_no_input ARG...: true when no argument before '--' (and no '--') names an existing file or directory
# but the value of an option that takes a path, as in parallel-compile's runs over the cache alone.
xlac_names_no_input() {
  local arg value=0
  for arg; do
    if (( value )); then value=0; continue; fi
    case "$arg" in
      --) return 1 ;;
      --cache | --plugin | --keep-dumps | --shared-dir | --junit | --report) value=1 ;;
      -*) ;;
      *) if [[ -e "$arg" ]]; then return 1; fi ;;
    esac
  done
}

# Every command starts a fresh JVM, so its start is most of a short command's time (bench/README.md,
# "Start-up"). Each runs with an ahead-of-time class cache (JDK 25, -XX:AOTCache): one for xlac run,
# one for every other command, each made once per build by a throwaway run of a training class
# (dev.xlac.cli.run.RunTraining, dev.xlac.cli.CliTraining) and used only while it is newer than the
# jar and was made by this Java runtime. Their log tags are off: a cache the JVM cannot use is simply
# not used. The caches hold classes, not the training's method profiles (-XX:-AOTRecordTraining,
# ignored by a JDK that does not know it): replayed, those made the JIT compile the training's hot
# methods at every start, 0.02-0.1 s of CPU in every command (bench/README.md, "Start-up").
# xlac run stands in front of a training run's start: it also runs with C1 only (it does
# under a second of work, and C2's compiler threads would compete with the training command's
# start-up for the cores). So do the commands that only print what they know or look up a few
# entries (C1 halves their JIT's CPU time), and they compile a method only after 4 times the usual
# number of calls: in their 0.1-0.2 s the compiler thread cost more CPU than it saved (about 0.05 s of
# `SUB --help`'s 0.25, bench/README.md "Start-up"). Those that hash, compile, import or verify keep C2
# for their long loops, unless their files or the cache are small (below). Their cache is made without these
# options: it serves both.
xlac_opts=(-XX:TieredStopAtLevel=1)
xlac_train_opts=(-XX:TieredStopAtLevel=1)
xlac_aot="$xlac_aot_dir/xlac-run.aot"
xlac_training=dev.xlac.cli.run.RunTraining
if [[ "${1:-}" != run || "${2:-}" == --help || "${2:-}" == -h ]]; then  # run's help is help, not a run
  xlac_train_opts=()
  xlac_aot="$xlac_aot_dir/xlac.aot"
  xlac_training=dev.xlac.cli.CliTraining
  xlac_light=0
  case "${1:-} ${2:-}" in
    " "* | -V* | --version* | -h* | --help* | "help "* | "completion "* | "cache stat" | "cache ls" | "cache config" | \
      "cache why" | "cache log" | "cache keygen" | "cache -h" | "cache --help" | "cache " ) xlac_light=1 ;;
    *" -h" | *" --help") xlac_light=1 ;;  # SUB --help
    "cache "*) if [[ "${3:-}" == -h || "${3:-}" == --help ]]; then xlac_light=1; fi ;;
  esac
  # hash, inspect and diff keep C2 for big graphs (bench/hash.sh), but on files of a few MB they end before it
  # pays off: up to 1.7 MB the light settings took less CPU and wall time, at 7 MB less CPU and the same wall
  # time, at 29 MB C2 took less wall time (bench/README.md, "Start-up"). Hence light up to 4 MiB of files in all.
  # parallel-compile's compiles run in worker JVMs of their own; over the cache alone (no PATHs, no command) its
  # JVM only looks up and schedules: light took 0.36 CPU s against 0.57 with nothing to compile, 0.57-0.60
  # against 0.83 with 1000 graphs all cached, the same wall time (bench/compile.sh). PATHs or a command: C2.
  # The cache commands that read every value (verify and export check each one's SHA-256, which C2 does about 14
  # times faster than C1) or every record take the light settings on a cache of up to 4 MiB of database files, and
  # add and import on up to 4 MiB of files and a bundle of up to 1 MiB (compressed: it unpacks to more): there they
  # took 0.16-0.20 s against 0.21-0.26 (bench/README.md, "Start-up").
  case "${1:-}" in
    hash | inspect | diff) if xlac_small_files 4194304 "${@:2}"; then xlac_light=1; fi ;;
    parallel-compile) if xlac_names_no_input "${@:2}"; then xlac_light=1; fi ;;
    cache)
      case "${2:-}" in
        add) if xlac_small_files 4194304 "${@:3}"; then xlac_light=1; fi ;;
        import) if xlac_small_files 1048576 "${@:3}"; then xlac_light=1; fi ;;
        verify | export | prune | rm | clear | materialize)
          if xlac_small_cache 4194304 "${@:3}"; then xlac_light=1; fi ;;
      esac ;;
  esac
  if (( xlac_light )); then xlac_opts+=(-XX:CompileThresholdScaling=4); else xlac_opts=(); fi
fi
# The JVM's own log lines go to stderr, not to its default stdout: results (--json) are on stdout, and
# under xlac run stdout is the training command's.
xlac_opts+=(-Xlog:disable -Xlog:all=warning:stderr -Xlog:aot=off:stderr -Xlog:cds=off:stderr)
xlac_first_line() { xlac_line=; [[ -f "$1" ]] && IFS= read -r xlac_line <"$1"; [[ "$xlac_line" == "$2" ]]; }
xlac_aot_fresh() { [[ -f "$xlac_aot" && ! "$xlac_jar" -nt "$xlac_aot" ]] && xlac_first_line "$xlac_aot.jdk" "$xlac_java_home"; }
xlac_aot_tried() { [[ -f "$xlac_aot.tried" && ! "$xlac_jar" -nt "$xlac_aot.tried" ]] && xlac_first_line "$xlac_aot.tried" "$xlac_java_home"; }
xlac_jvm=(--enable-native-access=ALL-UNNAMED -XX:+UseSerialGC -Djdk.util.jar.enableMultiRelease=false)
if ! xlac_aot_fresh && ! xlac_aot_tried && [[ -d "$xlac_aot_dir" && -w "$xlac_aot_dir" ]]; then
  exec 9>"$xlac_aot_dir/.aot.lock"
  flock 9
  if ! xlac_aot_fresh && ! xlac_aot_tried; then
    rm -f "$xlac_aot" "$xlac_aot.jdk"
    "$xlac_java_home/bin/java" "${xlac_jvm[@]}" "${xlac_train_opts[@]}" -Xlog:aot=off -Xlog:cds=off \
      -XX:+IgnoreUnrecognizedVMOptions -XX:+UnlockDiagnosticVMOptions -XX:-AOTRecordTraining \
      -XX:AOTCacheOutput="$xlac_aot.$$.tmp" \
      -cp "$xlac_jar" "$xlac_training" >/dev/null 2>&1 </dev/null \
      && mv -f "$xlac_aot.$$.tmp" "$xlac_aot" && echo "$xlac_java_home" >"$xlac_aot.jdk"
    rm -f "$xlac_aot.$$.tmp" "$xlac_aot.$$.tmp.config"
    echo "$xlac_java_home" >"$xlac_aot.tried"  # once per build and runtime, whether it worked or not
  fi
  exec 9>&-
fi
if xlac_aot_fresh; then xlac_opts+=(-XX:AOTCache="$xlac_aot"); fi
if [[ "${1:-}" == run ]]; then
  xlac_opts+=(-Dxlac.run.plans="$xlac_plans")  # where xlac run writes its launch plans
fi

# enableMultiRelease=false: zstd-jni's documented switch to its JNI binding; its FFM binding (the
# jar's Java 22+ classes) costs about 0.15-0.3 s of downcall set-up in every fresh JVM that
# stores or reads a graph. Other jars' versioned classes have base classes to fall back on (jackson-core's are
# faster number parsing): LauncherE2ETest checks it.
# shellcheck disable=SC2086
xlac_java=("$xlac_java_home/bin/java" "${xlac_jvm[@]}" "${xlac_opts[@]}" ${XLAC_JAVA_OPTS:-} -cp "$xlac_jar" dev.xlac.cli.Main)
# xlac run: the native fast start (runtime/README.md, "The fast start") runs the command without a JVM
# before it when the launch plan the last identical run wrote still holds, and this java command line,
# unchanged, when not.
if [[ "${1:-}" == run && -x "$xlac_fast" ]]; then
  exec "$xlac_fast" "$xlac_plans" "${#xlac_java[@]}" "${xlac_java[@]}" "$@"
fi
exec "${xlac_java[@]}" "$@"
