"""tap.py LOG -- COMMAND...: runs COMMAND with its stdin fed line by line from this process's
stdin, appending every line it receives to LOG (stdout and stderr pass through). The tests put
it between toolseal-stdio and a real server to prove what the server did and did not receive.
"""

import subprocess
import sys


def main() -> int:
    log_path, sep, *command = sys.argv[1:]
    assert sep == "--" and command, __doc__
    child = subprocess.Popen(command, stdin=subprocess.PIPE)
    with open(log_path, "ab", buffering=0) as log:
        for line in sys.stdin.buffer:
            log.write(line)
            try:
                child.stdin.write(line)
                child.stdin.flush()
            except BrokenPipeError:
                break
    try:
        child.stdin.close()
    except BrokenPipeError:
        pass
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
