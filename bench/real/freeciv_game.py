# SPDX-License-Identifier: MIT
"""freeciv_game.py — a real turn-based strategy game playing an AI-only match
headless, for run_real.py (issue 10's "real game").

Debian's freeciv-server (Freeciv 3.0, C) runs an autogame: only AI players
('hard' level), `timeout -1` (each turn ends as soon as the AIs are done,
no human to wait for), fixed map and game seeds, no savegames, and the
score log on. The server reads its commands from a script; its console
stays open on a pipe (at end of input the server would quit) and `-e`
makes it exit when the game ends at `endturn`. It listens on a free
loopback port and announces nothing (`-A none`, no metaserver).

The check: exit status 0 and a score log whose last turn is the end turn
(the score log records every player's score, cities, techs, units ... each
turn). The game is deterministic for given seeds: the checksum is a hash
of the whole score log, so the report's checksum comparison catches an
allocator under which the game played differently.

The server refuses to run as root: as root it is started through
`setpriv` as nobody (a plain unprivileged exec, so LD_PRELOAD still
applies); `env` puts the preload on the server alone. The library is
preloaded from a copy in the game's scratch directory, which nobody can
read wherever the build tree lives; ld.so ignores a preload it cannot open
(with a message), so such a message fails the run rather than let it
measure glibc."""
import hashlib
import os
import shutil
import socket
import subprocess
import tempfile
import time

SERVER = "/usr/games/freeciv-server"

# Five AI nations on a small map (about 100 land tiles each): the turns
# stay short, the AI's city, unit and path bookkeeping is the work.
SCRIPT = """set gameseed 42
set mapseed 42
set aifill 5
set minplayers 0
set endturn {turns}
set timeout -1
set size 2
set autosaves ""
set scorelog enabled
hard
start
"""


def free_port():
    """A loopback TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def last_turn(log):
    """The largest turn number of the score log's data lines (-1: none)."""
    turns = [int(line.split()[1]) for line in log.splitlines() if line.startswith("data ")]
    return max(turns, default=-1)


def run(turns, env, preload):
    """Play `turns` turns; returns (wall ns, rusage, score log text) or
    raises RuntimeError with the reason."""
    work = tempfile.mkdtemp(prefix="bench-freeciv-")
    try:
        os.chmod(work, 0o777)
        with open(os.path.join(work, "auto.serv"), "w") as f:
            f.write(SCRIPT.format(turns=turns))
        argv = []
        if os.geteuid() == 0:
            argv += ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        if preload:
            preload = shutil.copy(preload, os.path.join(work, os.path.basename(preload)))
            os.chmod(preload, 0o755)
        argv += ["/usr/bin/env"] + (["LD_PRELOAD=" + preload] if preload else [])
        argv += [SERVER, "-A", "none", "-b", "127.0.0.1", "-p", str(free_port()), "-e",
                 "-r", "auto.serv", "-d", "n"]
        env = dict(env, HOME=work)
        with open(os.path.join(work, "console.txt"), "w") as out:
            t0 = time.perf_counter_ns()
            proc = subprocess.Popen(argv, cwd=work, env=env, stdin=subprocess.PIPE, stdout=out,
                                    stderr=subprocess.STDOUT)
            try:
                _, status, ru = os.wait4(proc.pid, 0)
            finally:
                proc.stdin.close()
            dt = time.perf_counter_ns() - t0
        code = os.waitstatus_to_exitcode(status)
        score = os.path.join(work, "freeciv-score.log")
        log = open(score).read() if os.path.exists(score) else ""
        with open(os.path.join(work, "console.txt"), errors="replace") as f:
            console = f.read()
        if "cannot be preloaded" in console:
            raise RuntimeError("the preload did not load:\n%s" % console[:1000])
        if code != 0 or last_turn(log) != turns + 1:
            tail = console[-2000:]
            raise RuntimeError("freeciv-server exit %d, score log ends at turn %d (want %d):\n%s"
                               % (code, last_turn(log), turns + 1, tail))
        return dt, ru, log
    finally:
        shutil.rmtree(work, ignore_errors=True)


def checksum(log):
    """64 bits of the score log's SHA-256."""
    return int(hashlib.sha256(log.encode()).hexdigest()[:16], 16)
