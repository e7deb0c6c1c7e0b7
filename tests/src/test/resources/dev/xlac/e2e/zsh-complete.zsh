# Completes partial command lines in a real interactive zsh, as a user's Tab does, and prints each completed line.
# Usage: zsh -f zsh-complete.zsh SCRATCH_DIR LINE...  (run in the repository root, so that ./xlac is the launcher)
# The interactive zsh starts bare (-f, ZDOTDIR=SCRATCH_DIR): the completion script alone must set zsh up.
zmodload zsh/zpty || { print -u2 "zsh has no zpty module"; exit 3; }
dir=$1; shift
zpty z "TERM=xterm ZDOTDIR=$dir zsh -f -i" || exit 3
# Ctrl-X Ctrl-D writes the line being edited to a file: what completion put into it, however zle drew it.
zpty -w z "dumpline() { print -r -- \"\$BUFFER\" > $dir/line.\$((++n)) }; zle -N dumpline; bindkey -e; bindkey '^X^D' dumpline"
zpty -w z 'source <(./xlac completion zsh); print "SOURCED""($?)"'  # the quotes keep the echo from matching
read_for() {  # $1: seconds to read what the terminal shows; stops early once it has been quiet for half a second
  local -F end=$(( SECONDS + $1 )) quiet_since=$SECONDS
  local chunk
  while (( SECONDS < end )); do
    if zpty -r -t z chunk; then out+=$chunk; quiet_since=$SECONDS; fi
    (( SECONDS - quiet_since > 0.5 )) && return
    sleep 0.05
  done
}
typeset -F SECONDS
out=""
# The launcher may build the CLI first.
while [[ $out != *SOURCED\(* ]] && (( SECONDS < 600 )); do
  zpty -r -t z chunk && out+=$chunk || sleep 0.1
done
if [[ $out != *'SOURCED(0)'* ]]; then
  print -r -- "sourcing the script failed; the terminal showed: ${(q+)out}"
  zpty -d z
  exit 1
fi
i=0
for line in "$@"; do
  (( ++i ))
  zpty -w -n z "$line"$'\t'
  # Keys typed ahead of a running completion would make zsh cut it short: let it finish and redraw first.
  sleep 1
  read_for 30
  zpty -w -n z $'\C-x\C-d\C-u'
  deadline=$(( SECONDS + 30 ))
  while [[ ! -s $dir/line.$i ]] && (( SECONDS < deadline )); do
    zpty -r -t z chunk && out+=$chunk || sleep 0.1
  done
  if [[ ! -s $dir/line.$i ]]; then
    print -r -- "no line for '$line'; the terminal showed: ${(q+)out}"
    zpty -d z
    exit 1
  fi
  print -r -- "$(<$dir/line.$i)"
done
zpty -d z
