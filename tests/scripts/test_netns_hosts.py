#!/usr/bin/env python3
"""Two test hosts on one machine, each with its own loadwatch: each reports its own host.

The hosts are network namespaces on a bridge (tests/lib/netns.py). "gen" opens and closes
CONNECTIONS connections to a server on "sut" and closes first, so the TIME_WAIT sockets are
gen's alone. Each host's loadwatch must report its own TCP stack, as `ss` inside that
namespace counts it, and find the listener's owner only where it runs. Skipped (exit 77)
where namespaces cannot be made.
"""
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from lwtest import BINARY, parse_metrics  # noqa: E402
from netns import run_on_hosts  # noqa: E402

PORT = 8080
LW_PORT = 9797  # each host has its own stack: the same port on every host
CONNECTIONS = 200

SERVER = """
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(512)
print("listening", flush=True)
while True:
    c, _ = s.accept()
    c.recv(16)    # the client's byte, then its FIN: it closes first
    c.recv(16)
    c.close()
"""

CLIENT = """
import socket, sys
for _ in range(int(sys.argv[3])):
    c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
    c.sendall(b"x"); c.close()
"""


def metrics(hosts, host):
    r = hosts.run(host, ["curl", "-sf", "--max-time", "5",
                         "http://127.0.0.1:%d/metrics" % LW_PORT])
    return parse_metrics(r.stdout) if r.returncode == 0 else None


def value(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())))


def ss_count(hosts, host, *filters):
    r = hosts.run(host, ["ss", "-Htan", "state", "time-wait", *filters])
    return len([line for line in r.stdout.splitlines() if line.strip()])


def eventually(predicate, timeout, what):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        last = predicate()
        if last is True:
            return
        time.sleep(0.2)
    raise AssertionError("%s: not within %g s (last: %r)" % (what, timeout, last))


def check(hosts, config, procs, failures):
    sut_addr = hosts.address("sut")
    server = hosts.popen("sut", [sys.executable, "-c", SERVER, sut_addr, str(PORT)],
                         stdout=subprocess.PIPE)
    procs.append(server)
    if server.stdout.readline().strip() != b"listening":
        raise AssertionError("the server on sut did not start")
    for host, extra in (("sut", ["--target=srv=port:%d" % PORT]),
                        ("gen", ["--target=srv=port:%d" % PORT])):
        procs.append(hosts.popen(host, [
            BINARY, "--web.listen-address=127.0.0.1:%d" % LW_PORT,
            "--config.file=" + config.name, *extra],
            stdout=open(os.devnull, "w"), stderr=open(os.devnull, "w")))
    for host in ("sut", "gen"):
        eventually(lambda: metrics(hosts, host) is not None, 15,
                   "loadwatch on %s answers" % host)

    r = hosts.run("gen", [sys.executable, "-c", CLIENT, sut_addr, str(PORT),
                          str(CONNECTIONS)], timeout=60)
    if r.returncode != 0:
        raise AssertionError("client on gen failed: %s" % r.stderr)

    # gen: its own TIME_WAIT toward sut's port, as its own ss counts them.
    def gen_matches():
        truth = ss_count(hosts, "gen", "dport", "= :%d" % PORT)
        got = value(metrics(hosts, "gen") or {}, "loadwatch_tcp_port_connections",
                    port=str(PORT), side="remote", state="time_wait")
        return True if (got == truth == CONNECTIONS) else (got, truth)
    eventually(gen_matches, 15, "gen's TIME_WAIT = ss in gen = %d" % CONNECTIONS)
    print("ok: gen reports its %d TIME_WAIT sockets, as ss in gen" % CONNECTIONS)

    # sut: none of them, as its own ss says; it owns the listener, gen does not.
    sut = metrics(hosts, "sut")
    sut_tw = value(sut, "loadwatch_tcp_port_connections", port=str(PORT), side="local",
                   state="time_wait") or 0
    truth = ss_count(hosts, "sut", "sport", "= :%d" % PORT)
    if sut_tw != truth or truth != 0:
        failures.append("sut's TIME_WAIT on :%d: loadwatch %s, ss %s (want 0)"
                        % (PORT, sut_tw, truth))
    else:
        print("ok: sut reports no TIME_WAIT on :%d, as ss in sut" % PORT)
    up = {h: value(metrics(hosts, h), "loadwatch_target_up", target="srv")
          for h in ("sut", "gen")}
    if up != {"sut": 1.0, "gen": 0.0}:
        failures.append("the listener's owner: target_up %r, want sut 1, gen 0" % up)
    else:
        print("ok: the listener's owner is found on sut only")


def main():
    config = tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False)
    config.write("tcp: {ports: [%d]}\nallow_empty: true\n" % PORT)
    config.close()
    try:
        return run_on_hosts(["sut", "gen"], check, config)
    finally:
        os.unlink(config.name)


if __name__ == "__main__":
    sys.exit(main())
