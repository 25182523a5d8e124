# SPDX-License-Identifier: MIT
"""redis_kv.py — an in-memory key-value server under load, for run_real.py
(issue 10's "key-value server").

Debian's redis-server (7.0) runs under the allocator being measured on a
free loopback port, without persistence; Debian's redis-benchmark (not
preloaded) drives it with a fixed mix: 20 connections, N requests of each
of SET, GET, INCR, LPUSH, RPUSH, LPOP, RPOP, SADD, HSET, SPOP, ZADD,
ZPOPMIN, LRANGE of 100 elements and MSET (10 keys), random keys out of
100 000, 64 B values. Throughput: all requests over the client's wall
time. Then a check of our own over a plain socket: a list, a hash and a
100 KiB string written and read back exactly, DBSIZE non-zero; then
SHUTDOWN NOSAVE, and the server's peak RSS, minor faults and system time
come from wait4.

Debian links redis-server against jemalloc: with no preload jemalloc's
malloc would win the symbol lookup, and an allocator that looks up the
next malloc_usable_size or malloc_trim with dlsym(RTLD_NEXT) would find
jemalloc's and hand it glibc's blocks (libsizeclass 05a95f7 crashes so at
startup). Every run therefore preloads libc.so.6 after the allocator
under test ("glibc": libc.so.6 alone), which puts glibc first among the
libraries after it; the jemalloc library stays loaded but unused.

The checksum covers only deterministic answers (our check's), not the
benchmark's random keys."""
import hashlib
import os
import shutil
import socket
import subprocess
import tempfile
import time

SERVER = "/usr/bin/redis-server"
CLIENT = "/usr/bin/redis-benchmark"
TESTS = "set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin,lrange_100,mset"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Conn:
    """A minimal RESP (Redis protocol) client over one TCP connection."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.rd = self.sock.makefile("rb")

    def send(self, *args):
        parts = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            parts.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.sock.sendall(b"".join(parts))

    def reply(self):
        line = self.rd.readline()
        if not line:
            raise RuntimeError("redis closed the connection")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError("redis error: %s" % rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self.rd.read(n + 2)[:-2]
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.reply() for _ in range(n)]
        raise RuntimeError("bad reply %r" % line)

    def call(self, *args):
        self.send(*args)
        return self.reply()

    def close(self):
        self.rd.close()
        self.sock.close()


def wait_ready(port, proc, deadline_s=20):
    """Wait until the server answers PING; RuntimeError if it died."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError("redis-server exited with %d at startup" % proc.returncode)
        try:
            c = Conn(port)
            try:
                if c.call("PING") == "PONG":
                    return
            finally:
                c.close()
        except (OSError, RuntimeError):
            time.sleep(0.05)
    raise RuntimeError("redis-server did not answer within %d s" % deadline_s)


def own_check(port):
    """Write known data, read it back; returns the text hashed into the
    checksum. RuntimeError on any difference."""
    c = Conn(port)
    try:
        c.call("DEL", "check:list", "check:hash", "check:str")
        items = [b"item-%d-%s" % (i, b"x" * (i % 50)) for i in range(1000)]
        for i in range(0, len(items), 100):
            c.call("RPUSH", "check:list", *items[i:i + 100])
        fields = []
        for i in range(500):
            fields += [b"f%d" % i, b"v%d" % (i * i)]
        c.call("HSET", "check:hash", *fields)
        big = bytes(range(256)) * 400  # 100 KiB: a block above 1 KiB
        c.call("SET", "check:str", big)
        got_list = c.call("LRANGE", "check:list", 0, -1)
        got_hash = c.call("HGETALL", "check:hash")
        got_str = c.call("GET", "check:str")
        dbsize = c.call("DBSIZE")
        if got_list != items:
            raise RuntimeError("LRANGE returned something else")
        if dict(zip(got_hash[0::2], got_hash[1::2])) != dict(zip(fields[0::2], fields[1::2])):
            raise RuntimeError("HGETALL returned something else")
        if got_str != big:
            raise RuntimeError("GET of the 100 KiB string returned something else")
        if not isinstance(dbsize, int) or dbsize < 4:
            raise RuntimeError("DBSIZE is %r after the benchmark" % (dbsize,))
        return "list %d hash %d str %d" % (len(got_list), len(got_hash), len(got_str))
    finally:
        c.close()


def run(requests, env, preload):
    """Run the mix with `requests` requests per command; returns (client
    wall ns, server rusage, total requests, checksum text)."""
    port = free_port()
    work = tempfile.mkdtemp(prefix="bench-redis-")
    senv = dict(env)
    senv["LD_PRELOAD"] = (preload + " " if preload else "") + "libc.so.6"
    argv = [SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--daemonize", "no", "--dir", work, "--logfile", "", "--loglevel", "warning"]
    errpath = os.path.join(work, "server.err")
    with open(errpath, "w") as err:
        server = subprocess.Popen(argv, env=senv, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=err)
    ru = None
    try:
        wait_ready(port, server)
        with open(errpath, errors="replace") as f:
            if "cannot be preloaded" in f.read():  # ld.so ignored it: this would be glibc
                raise RuntimeError("the preload did not load: %s" % preload)
        cargv = [CLIENT, "-h", "127.0.0.1", "-p", str(port), "-c", "20", "-n", str(requests),
                 "-r", "100000", "-d", "64", "-t", TESTS, "--csv"]
        t0 = time.perf_counter_ns()
        res = subprocess.run(cargv, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                             timeout=600)
        dt = time.perf_counter_ns() - t0
        if res.returncode != 0:
            raise RuntimeError("redis-benchmark exit %d: %s" % (res.returncode, res.stderr[-500:]))
        rows = [l for l in res.stdout.decode().splitlines() if l.startswith('"') and
                not l.startswith('"test"')]
        if len(rows) < len(TESTS.split(",")):
            raise RuntimeError("redis-benchmark ran %d tests, want %d:\n%s"
                               % (len(rows), len(TESTS.split(",")), res.stdout.decode()))
        for r in rows:
            if float(r.split(",")[1].strip('"')) <= 0:
                raise RuntimeError("no throughput in %s" % r)
        text = own_check(port)
        c = Conn(port)
        try:
            c.send("SHUTDOWN", "NOSAVE")
        finally:
            c.close()
        end = time.monotonic() + 20
        while ru is None and time.monotonic() < end:
            pid, status, r = os.wait4(server.pid, os.WNOHANG)
            if pid == server.pid:
                ru = r
                server.returncode = os.waitstatus_to_exitcode(status)
            else:
                time.sleep(0.02)
        if ru is None:
            raise RuntimeError("redis-server did not exit after SHUTDOWN NOSAVE")
        return dt, ru, requests * len(rows), "%s tests %d" % (text, len(rows))
    finally:
        if ru is None:
            server.kill()
            server.wait()
        shutil.rmtree(work, ignore_errors=True)


def checksum(text):
    return int(hashlib.sha256(text.encode()).hexdigest()[:16], 16)
