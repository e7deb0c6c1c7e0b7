"""Time to the first training step of a command: runs it, watches its stdout for the first line that
starts with PREFIX, and prints 'first_step_seconds total_seconds' (from just before the spawn). The
command's output goes to LOG. Used by bench/runtime.sh.

    python bench/first_step.py PREFIX LOG -- COMMAND...
"""
import subprocess
import sys
import time


def main():
    prefix, log = sys.argv[1], sys.argv[2]
    command = sys.argv[sys.argv.index("--") + 1:]
    first = None
    with open(log, "wb") as out:
        start = time.monotonic()
        p = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=out)
        for line in p.stdout:
            out.write(line)
            if first is None and line.decode(errors="replace").startswith(prefix):
                first = time.monotonic() - start
        rc = p.wait()
        total = time.monotonic() - start
    if rc != 0 or first is None:
        sys.stderr.write(f"command failed (exit {rc}) or printed no '{prefix}' line; see {log}\n")
        sys.exit(1)
    print(f"{first:.3f} {total:.3f}")


if __name__ == "__main__":
    main()
