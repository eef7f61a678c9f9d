#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
#
# isthmusd under supervision, a real edge on net_null ports (--no-huge):
#   notify     with NOTIFY_SOCKET (our own AF_UNIX datagram listener, as
#              systemd's) and WATCHDOG_USEC: READY=1, STATUS=, WATCHDOG=1
#              again and again, RELOADING=1 then READY=1 on SIGHUP,
#              STOPPING=1 and exit 0 on SIGTERM; stderr is "the journal"
#              (JOURNAL_STREAM names it), so log lines are "<N>message"
#   survive    started by a shell that then exits: still running after the
#              shell is gone (watchdogs keep coming, no STOPPING=1), its
#              log lines timestamped; SIGTERM stops it with exit 0
#   die        the same with --die-with-parent: it stops when the shell goes
# This test is a child subreaper, so the orphaned isthmusd becomes our
# child and its exit code can be read.
#
#   supervision_test.py ISTHMUSD SOURCE_ROOT
import ctypes
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

ISTHMUSD, ROOT = os.path.realpath(sys.argv[1]), sys.argv[2]
PR_SET_CHILD_SUBREAPER = 36
WATCHDOG_USEC = 400000  # WATCHDOG=1 every 0.2 s
TS = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"
fail = []


def config(tmp):
    src = open(os.path.join(ROOT, "conf/isthmusd/example.conf")).read()
    for pat, rep in [(r"(?m)^port = 0 .*$", "port = net_null0"), (r"(?m)^port = 1$", "port = net_null1"),
                     (r"(?m)^# idle_polls = 0 .*$", "idle_polls = 16"), (r"(?m)^mode = on .*$", "mode = off"),
                     (r"(?m)^key_file = .*$", "")]:
        src, n = re.subn(pat, rep, src)
        assert n == 1, pat
    path = os.path.join(tmp, "null.conf")
    open(path, "w").write(src)
    return path


def command(conf, prefix, extra=(), epoch="now+1"):
    return [ISTHMUSD, "--no-huge", "-m", "128", "--no-pci", "--no-telemetry", "--file-prefix=" + prefix,
            "-l", "0,1", "--log-level=lib.*:error", "--vdev", "net_null0", "--vdev", "net_null1", "--",
            "--config", conf, "--epoch", epoch] + list(extra)


class Listener:
    """NOTIFY_SOCKET: a datagram socket bound at a path, as systemd's."""

    def __init__(self, tmp, name):
        self.path = os.path.join(tmp, name)
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.s.bind(self.path)
        self.got = []

    def until(self, want, timeout, forbid=None, proc=None):
        """Messages until one equals @want; None on timeout, on @forbid, or
        once @proc (a Popen) has exited with nothing more to read."""
        end = time.time() + timeout
        while time.time() < end:
            self.s.settimeout(min(max(end - time.time(), 0.01), 0.5))
            try:
                m = self.s.recv(4096).decode()
            except socket.timeout:
                if proc is not None and proc.poll() is not None:
                    break
                continue
            self.got.append(m)
            if m == forbid:
                return None
            if m == want:
                return m
        return None


def reap(pid, timeout):
    """Exit code of child @pid (an orphan reparented to us), or None."""
    end = time.time() + timeout
    while time.time() < end:
        p, st = os.waitpid(pid, os.WNOHANG)
        if p == pid:
            return os.waitstatus_to_exitcode(st)
        time.sleep(0.05)
    return None


def check(cond, what):
    if not cond:
        fail.append(what)
        print("FAIL:", what)
    return cond


def case_notify(tmp, conf):
    lis = Listener(tmp, "notify.sock")
    err = open(os.path.join(tmp, "notify.err"), "w+")
    st = os.fstat(err.fileno())
    env = dict(os.environ, NOTIFY_SOCKET=lis.path, WATCHDOG_USEC=str(WATCHDOG_USEC),
               JOURNAL_STREAM="%d:%d" % (st.st_dev, st.st_ino))
    env.pop("ISTH_TESTBED", None)
    prefix = "isth-sup-n-%d" % os.getpid()
    # round 0 fifteen seconds on (EAL start-up on a loaded host takes
    # seconds): STATUS= says it is waiting for it first
    p = subprocess.Popen(command(conf, prefix, epoch="now+15"), env=env, stdout=subprocess.DEVNULL, stderr=err)
    try:
        if not check(lis.until("READY=1", 120, proc=p) is not None,
                     "notify: no READY=1 (got %s, exit %s)" % (lis.got[-5:], p.poll())):
            return
        # watchdogs keep coming: 10 more at 0.2 s take 2 s (30 s: a loaded host)
        n0 = lis.got.count("WATCHDOG=1")
        for _ in range(10):
            lis.until("WATCHDOG=1", 30)
        check(lis.got.count("WATCHDOG=1") >= n0 + 10, "notify: WATCHDOG=1 stopped coming")
        check(any(m.startswith("STATUS=waiting for round 0 (epoch ") for m in lis.got),
              "notify: no STATUS= before round 0 (got %s)" % sorted(set(lis.got)))
        # then, once round 0 has started, names the round
        end = time.time() + 45
        while not any(m.startswith("STATUS=round ") for m in lis.got) and time.time() < end:
            lis.until("WATCHDOG=1", 30)
        check(any(m.startswith("STATUS=round ") for m in lis.got),
              "notify: no STATUS=round N (got %s)" % sorted(set(lis.got)))
        p.send_signal(signal.SIGHUP)
        check(lis.until("RELOADING=1", 30) is not None, "notify: no RELOADING=1 on SIGHUP")
        check(lis.until("READY=1", 30) is not None, "notify: no READY=1 after the reload")
        p.send_signal(signal.SIGTERM)
        check(lis.until("STOPPING=1", 30) is not None, "notify: no STOPPING=1 on SIGTERM")
        check(p.wait(60) == 0, "notify: exit %s after SIGTERM, want 0" % p.returncode)
        err.seek(0)
        lines = err.read().splitlines()
        check(any(re.fullmatch(r"<6>island \S+ \(0\), job 1, .* epoch \d+ \(in .*", l) for l in lines),
              "notify: stderr is the journal, but no '<6>island ...' start line: %s" % lines[:3])
        check(not any(re.match(TS, l) for l in lines), "notify: timestamps in the journal: %s" % lines[:3])
        if not fail:
            print("ok: notify: READY, %d watchdogs, STATUS, RELOADING/READY, STOPPING, exit 0"
                  % lis.got.count("WATCHDOG=1"))
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        subprocess.run(["rm", "-rf", "/var/run/dpdk/" + prefix])


def case_parent(tmp, conf, die):
    name = "die" if die else "survive"
    lis = Listener(tmp, name + ".sock")
    out = os.path.join(tmp, name + ".out")
    pidf = os.path.join(tmp, name + ".pid")
    prefix = "isth-sup-%s-%d" % (name, os.getpid())
    env = dict(os.environ, NOTIFY_SOCKET=lis.path, WATCHDOG_USEC=str(WATCHDOG_USEC))
    env.pop("ISTH_TESTBED", None)
    env.pop("ISTH_DIE_WITH_PARENT", None)
    env.pop("JOURNAL_STREAM", None)
    cmd = command(conf, prefix, ["--die-with-parent"] if die else [])
    # The shell exits once isthmusd is ready (past its die-with-parent
    # choice), as an ssh session would after `nohup isthmusd ... &`.
    shell = subprocess.Popen(["setsid", "bash", "-c",
                              '"$@" >"$OUT" 2>&1 & echo $! >"$PIDF"; '
                              'until grep -q "epoch .* (in" "$OUT"; do kill -0 $! || exit 1; sleep 0.05; done',
                              "_"] + cmd, env=dict(env, OUT=out, PIDF=pidf))
    pid = None
    try:
        rc = shell.wait(180)
        pid = int(open(pidf).read())
        if not check(rc == 0, "%s: isthmusd did not start: %s" % (name, open(out).read()[-500:])):
            return
        # the parent is gone (reaped above); isthmusd is now our child
        if die:
            check(lis.until("STOPPING=1", 30) is not None,
                  "die: no STOPPING=1 after the parent exited")
            code = reap(pid, 60)
            check(code == 0, "die: isthmusd did not stop (exit %s) when its parent exited" % code)
            pid = None if code is not None else pid
            if not fail:
                print("ok: die: --die-with-parent: stopped with its parent, exit 0")
            return
        n0 = lis.got.count("WATCHDOG=1")
        for _ in range(10):
            if lis.until("WATCHDOG=1", 30, forbid="STOPPING=1") is None:
                break
        check("STOPPING=1" not in lis.got, "survive: isthmusd stopped when its parent exited")
        check(lis.got.count("WATCHDOG=1") >= n0 + 10, "survive: watchdogs stopped after the parent exited")
        alive = True
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            alive = False
        check(alive and reap(pid, 0) is None, "survive: isthmusd gone after its parent exited")
        os.kill(pid, signal.SIGTERM)
        code = reap(pid, 60)
        check(code == 0, "survive: exit %s after SIGTERM, want 0" % code)
        pid = None if code is not None else pid
        lines = open(out).read().splitlines()
        check(any(re.fullmatch(TS + r" info isthmusd: island \S+ \(0\), job 1, .* \(in .*", l) for l in lines),
              "survive: no timestamped start line: %s" % lines[:3])
        check(any(re.fullmatch(TS + r" info isthmusd: WAN RX: UDP checksums checked .*", l) for l in lines),
              "survive: no timestamped 'WAN RX' line: %s" % lines[:5])
        if not fail:
            print("ok: survive: outlived its parent shell, exit 0 on SIGTERM")
    finally:
        if shell.poll() is None:
            shell.kill()
            shell.wait()
        if pid is not None:
            try:
                os.kill(pid, signal.SIGKILL)
                reap(pid, 10)
            except ProcessLookupError:
                pass
        subprocess.run(["rm", "-rf", "/var/run/dpdk/" + prefix])


def main():
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print("FAIL: prctl(PR_SET_CHILD_SUBREAPER)")
        return 1
    os.chdir(ROOT)  # the config names its schedule relative to the tree
    with tempfile.TemporaryDirectory() as tmp:
        conf = config(tmp)
        case_notify(tmp, conf)
        case_parent(tmp, conf, die=False)
        case_parent(tmp, conf, die=True)
    return 1 if fail else 0


if __name__ == "__main__":
    sys.exit(main())
