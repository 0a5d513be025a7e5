#!/usr/bin/python3
"""clusterd start --block tells systemd (Type=notify) it is ready only once
it is: READY=1 arrives on $NOTIFY_SOCKET after the head's port is bound and
its node registered, as clusterctl then sees. Also --token-file on a head.
Usage: sd_notify_test.py CLUSTERD CLUSTERCTL"""
import json, os, signal, socket, subprocess, sys, tempfile, time

clusterd, clusterctl = sys.argv[1], sys.argv[2]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


with tempfile.TemporaryDirectory() as tmp:
    notify_path = os.path.join(tmp, "notify")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(notify_path)
    listener.settimeout(60)  # an outer bound: a head starts in about a second
    token_file = os.path.join(tmp, "token")
    with open(token_file, "w") as f:
        f.write("0123456789abcdef0123456789abcdef\n")
    os.chmod(token_file, 0o600)
    port, dashboard = free_port(), free_port()
    env = dict(os.environ, NOTIFY_SOCKET=notify_path)
    head = subprocess.Popen(
        [clusterd, "start", "--head", "--block", "--node-ip-address", "127.0.0.1", "--port", str(port),
         "--dashboard-port", str(dashboard), "--temp-dir", os.path.join(tmp, "run"),
         "--state-dir", os.path.join(tmp, "state"), "--token-file", token_file, "--num-cpus", "1"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        message = listener.recv(4096).decode()
        print("notify:", message.replace("\n", " | "))
        if "READY=1" not in message.split("\n"):
            fail("no READY=1 in " + repr(message))
        # At READY the port answers and the head's own node is registered.
        reply = subprocess.run(
            [clusterctl, "status", "--json", "--address", f"127.0.0.1:{port}",
             "--token", "0123456789abcdef0123456789abcdef"],
            capture_output=True, text=True, timeout=30)
        if reply.returncode != 0:
            fail("clusterctl status right after READY=1: " + reply.stderr)
        nodes = json.loads(reply.stdout).get("nodes", [])
        alive = [n for n in nodes if n.get("state") == "ALIVE"]
        if len(alive) != 1:
            fail(f"expected the head's node ALIVE at READY=1, got {nodes}")
        # The head used the token in --token-file, not one of its own.
        if os.path.exists(os.path.join(tmp, "state", "token")):
            fail("the head made <state-dir>/token although --token-file was given")
        print("ok: READY=1 after the port was bound and the node registered")
    finally:
        head.send_signal(signal.SIGTERM)
        head.wait(timeout=60)

    # A token file others can read is refused, with the reason.
    os.chmod(token_file, 0o644)
    bad = subprocess.run([clusterd, "start", "--address", f"127.0.0.1:{port}", "--token-file", token_file,
                          "--temp-dir", os.path.join(tmp, "run2")], capture_output=True, text=True, timeout=30)
    if bad.returncode == 0 or "chmod 600" not in bad.stderr:
        fail("a world-readable --token-file was not refused: " + bad.stderr)
    print("ok: refused:", bad.stderr.strip())
