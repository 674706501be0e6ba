"""Test hosts for the fleet tests: network namespaces, each with a veth pair and a real sshd.

Each host is a network namespace with one veth address from 198.18.0.0/15 (the range set
aside for benchmarking networks, RFC 2544), reached from the test over that veth only, and
its own sshd (Debian's openssh-server) with a host key and a client key made here. Processes
started through a host's sshd have that namespace's network: loopback and the veth, nothing
else (no PyPI), which is what a lab host without internet access looks like.

A host may have root without CAP_SYS_ADMIN (sshd under a reduced bounding set, as in a
container). A host may get its own mount namespace with the cgroup v1 memory controller unmounted: it
then really has no memory cgroups (the cgroup_memory capability is absent there), while the
others do. Or one where the `lttng` command is a file that does not run (a file of mode 0644
bound over it): a host without LTTng's tools, for it and for the guests it boots, which see
its root as it does (the lttng capability is absent in both). Everything is removed on exit:
sshd and every process in the namespaces, the namespaces, the veths, the keys and the hosts'
remote directories. Every wait is bounded.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil

SSHD = "/usr/sbin/sshd"
PRIVSEP_DIR = Path("/run/sshd")  # sshd refuses to start without it


@dataclass
class NamespaceHost:
    name: str
    netns: str
    veth: str
    address: str
    remote_dir: Path
    config: Path
    log: Path
    without_memcg: bool = False
    without_caps: bool = False
    without_lttng: bool = False
    sshd: subprocess.Popen[bytes] | None = None

    def start_sshd(self) -> None:
        # Root without CAP_SYS_ADMIN, as in a container: sshd's bounding set (inherited by
        # every session) lacks it (dropped once in the namespace: entering it needs it).
        reduced = ["setpriv", "--bounding-set", "-sys_admin"] if self.without_caps else []
        cmd = ["nsenter", f"--net=/run/netns/{self.netns}", *reduced, SSHD, "-D", "-e", "-f",
               str(self.config)]
        hide = []
        if self.without_memcg:
            hide.append("umount -l /sys/fs/cgroup/memory")
        lttng = shutil.which("lttng")
        if self.without_lttng and lttng:
            not_lttng = self.config.with_name(f"not-lttng-{self.name}")
            not_lttng.write_text("not LTTng: this test host has no LTTng tools\n")
            not_lttng.chmod(0o644)
            hide.append(f"mount --bind {not_lttng} {lttng}")
        if hide:
            # A mount namespace of its own (private: nothing propagates back to this machine)
            # with what the host lacks taken away, then sshd in the network namespace.
            cmd = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                   " && ".join([*hide, 'exec "$@"']), "sh", *cmd]
        self.sshd = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                     stderr=open(self.log, "ab"))  # noqa: SIM115
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.sshd.poll() is not None:
                raise RuntimeError(f"sshd of {self.name} exited: {self.log.read_text()[-2000:]}")
            with contextlib.suppress(OSError), socket.create_connection((self.address, 22), 1):
                return
            time.sleep(0.1)
        raise RuntimeError(f"sshd of {self.name} did not listen within 15 s")

    def stop_sshd(self) -> None:
        if self.sshd is None or self.sshd.poll() is not None:
            return
        self.sshd.terminate()
        try:
            self.sshd.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.sshd.kill()
            self.sshd.wait(timeout=10)

    def kill_sshd(self) -> None:
        """What a host whose sshd dies looks like: the listener and every session gone (the
        controller's open connections with them), the processes they started left running."""
        self.stop_sshd()
        self.kill_processes("sshd")

    def drop_link(self) -> None:
        """The host's network goes away under it: its end of the veth down, so nothing it
        sends reaches the controller (open connections fall silent, new ones time out)."""
        _run("ip", "netns", "exec", self.netns, "ip", "link", "set", f"{self.veth}p", "down")

    def restore_link(self) -> None:
        _run("ip", "netns", "exec", self.netns, "ip", "link", "set", f"{self.veth}p", "up")
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection((self.address, 22), 1):
                return
            time.sleep(0.2)
        raise RuntimeError(f"{self.name} does not answer on port 22 15 s after its link is up")

    def reboot(self) -> None:
        """A restart as a fleet sees it: every process on the host ends at once (a power cut
        saves nothing either), its disk stays, and sshd is back at once. The listener is held
        still (SIGSTOP) while every other process is killed, then let go: a connection made
        meanwhile waits in its backlog and is served, as by a host back before the next
        look. Stopping and restarting sshd instead left its port closed for a second or
        more, and a look that fell in it found the host unreachable, not its run gone (a
        closed port is kill_sshd's case)."""
        assert self.sshd is not None and self.sshd.poll() is None, f"{self.name}: no sshd"
        listener = self.sshd.pid  # sshd itself: nsenter, setpriv and the wrapper exec it
        os.kill(listener, signal.SIGSTOP)
        try:
            for _ in range(50):  # processes forked meanwhile are killed on the next pass
                if not self.kill_processes(spare=listener):
                    break
                time.sleep(0.2)
        finally:
            os.kill(listener, signal.SIGCONT)

    def pids(self) -> list[int]:
        """Every process in this host's network namespace (all started through its sshd)."""
        res = subprocess.run(["ip", "netns", "pids", self.netns], capture_output=True,
                             text=True, check=False, timeout=30)
        return [int(p) for p in res.stdout.split()]

    def kill_processes(self, match: str = "", spare: int | None = None) -> list[int]:
        """SIGKILL the namespace's processes whose command line holds `match` (all for ''),
        but `spare`."""
        killed = []
        for pid in self.pids():
            if pid == spare:
                continue
            try:
                proc = psutil.Process(pid)
                if match in " ".join(proc.cmdline()):
                    proc.kill()
                    killed.append(pid)
            except psutil.Error:
                continue
        if killed:  # a login shell killed mid-rehash holds pyenv's lock for every later one
            _clear_stale_pyenv_lock()
        return killed


@dataclass
class NamespaceFleet:
    root: Path
    hosts: list[NamespaceHost] = field(default_factory=list)
    key: Path = Path()
    known_hosts: Path = Path()

    def inventory(self, path: Path, hosts: list[NamespaceHost] | None = None,
                  relative: bool = False) -> Path:
        """relative: the key and known_hosts copied beside the inventory and named by relative
        paths, as an inventory used from its own directory names them."""
        key, known = self.key, self.known_hosts
        if relative:
            shutil.copy(self.key, path.parent / "key")
            (path.parent / "key").chmod(0o600)
            shutil.copy(self.known_hosts, path.parent / "known_hosts")
            key, known = Path("key"), Path("known_hosts")
        # One bakeoff_remote_dir for every host, as hosts on one NFS share have: each host's
        # files go into its own subdirectory of it (remote_dir), never into another's.
        lines = ["all:", "  vars:", "    ansible_user: root",
                 f"    bakeoff_remote_dir: {self.root / 'remote'}",
                 f"    ansible_ssh_private_key_file: {key}",
                 "    ansible_ssh_common_args: >-",
                 f"      -o UserKnownHostsFile={known} -o StrictHostKeyChecking=yes",
                 "      -o IdentitiesOnly=yes -o ConnectionAttempts=1",
                 "  hosts:"]
        for h in hosts or self.hosts:
            lines += [f"    {h.name}:", f"      ansible_host: {h.address}"]
        path.write_text("\n".join(lines) + "\n")
        return path

    @property
    def host_tmp(self) -> Path:
        """The hosts' TMPDIR (sshd's SetEnv): their own /tmp, as each real host has."""
        return self.root / "host-tmp"

    def payloads_left(self) -> list[str]:
        """Ansible modules' unpacked code still on the hosts while no fleet run is going:
        in their temp directory, or in a fleet run's payload directory (fleet/playbook.yml).
        A module that was killed leaves one unless the run removes it; [] when none."""
        out = [f"in the hosts' temp directory: {p.name}" for p in self.host_tmp.glob("*")]
        for h in self.hosts:
            out += [f"on {h.name}: {p.relative_to(h.remote_dir)}"
                    for p in (h.remote_dir / ".ansible").glob("payload-*")]
        return out

    def leftovers(self) -> list[str]:
        """What would still be here after the fleet is gone; [] when all is removed."""
        out = []
        netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                               check=False, timeout=30).stdout
        links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True,
                               check=False, timeout=30).stdout
        for h in self.hosts:
            if h.netns in netns:
                out.append(f"namespace {h.netns}")
            if f" {h.veth}@" in links or f" {h.veth}:" in links:
                out.append(f"veth {h.veth}")
            if h.sshd is not None and h.sshd.poll() is None:
                out.append(f"sshd of {h.name} (pid {h.sshd.pid})")
            if h.remote_dir.exists():
                out.append(f"remote directory {h.remote_dir}")
        if self.root.exists():
            out.append(f"fleet directory {self.root}")
        return out


def _run(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True, timeout=30)


def _free_subnet() -> str:
    """A 198.18.N (benchmarking range, RFC 2544) block no address on this machine uses yet,
    starting from one derived from our PID."""
    used = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True,
                          check=True, timeout=30).stdout
    for step in range(250):
        subnet = f"198.18.{(os.getpid() + step) % 250}"
        if f" {subnet}." not in used:
            return subnet
    raise RuntimeError("no free 198.18.N block for the test hosts")


def _clear_stale_pyenv_lock() -> None:
    """The test hosts log in as this machine's root, whose .bashrc runs `pyenv init`, which
    rehashes under a lock file. A shell killed mid-rehash (the kill tests stop what runs on
    a host, a restart kills everything on it) leaves the lock, and every later ssh command
    then waits 60 s for it: a fleet run crawls for half an hour (seen on this machine: each
    task of a fleet run took 244 s after a host's restart). So it is cleared whenever the
    test kills a host's processes, and every few seconds while the hosts live. The lock's
    holder wrote it after it started: a lock written before every rehash now running
    started is no one's (seen on 2026-11-29: a lock of 15:09:17 while seven rehashes, all
    started after 15:12, waited on it; "no rehash running" never came)."""
    root = Path(os.environ.get("PYENV_ROOT", "~/.pyenv")).expanduser()
    lock, rehash = root / "shims" / ".pyenv-shim", str(root / "libexec" / "pyenv-rehash")
    try:
        written = lock.stat().st_mtime
    except OSError:
        return
    # On the clock processes' starts are counted by (seconds since boot, to the tick):
    # psutil's create_time adds the boot time in whole seconds, up to 1 s off.
    written_since_boot = time.clock_gettime(time.CLOCK_BOOTTIME) - (time.time() - written)
    for pid in psutil.pids():
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:2]
            if rehash.encode() not in argv:
                continue
            stat = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        # Field 22, the start in clock ticks since boot; 50 ms of slack, so a rehash that
        # started with the lock's writing counts as its possible holder.
        if int(stat[19]) / os.sysconf("SC_CLK_TCK") <= written_since_boot + 0.05:
            return
    with contextlib.suppress(OSError):
        if lock.stat().st_mtime == written:  # still that lock, not a new holder's
            lock.unlink()


@contextlib.contextmanager
def _sweeping_stale_pyenv_locks(every_s: float = 5.0) -> Iterator[None]:
    """A lock whose holder was killed by another test session (or another xdist worker's
    hosts) is cleared too, not only those this fleet's kills leave."""
    stop = threading.Event()

    def sweep() -> None:
        while not stop.wait(every_s):
            _clear_stale_pyenv_lock()

    thread = threading.Thread(target=sweep, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=30)


@contextlib.contextmanager
def namespace_fleet(names: list[str], without_memcg: tuple[str, ...] = (),
                    without_caps: tuple[str, ...] = (),
                    without_lttng: tuple[str, ...] = ()) -> Iterator[NamespaceFleet]:
    """Hosts `names`, up and listening, removed again on exit (also when the body fails)."""
    tag = f"{os.getpid() % 100000}"
    root = Path(tempfile.mkdtemp(prefix=f"bakeoff-fleet-hosts-{tag}-", dir="/var/tmp"))
    fleet = NamespaceFleet(root=root, key=root / "client_key", known_hosts=root / "known_hosts")
    _clear_stale_pyenv_lock()
    try:
        # openssh-server's own run-time directory (systemd makes it at boot; a container may
        # not have it). It is the package's, not the test's: it stays.
        PRIVSEP_DIR.mkdir(mode=0o755, exist_ok=True)
        _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(root / "host_key"))
        _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(fleet.key))
        (root / "authorized_keys").write_text((root / "client_key.pub").read_text())
        host_pub = (root / "host_key.pub").read_text().split()[:2]
        fleet.host_tmp.mkdir()
        subnet = _free_subnet()  # two test sessions (or xdist workers) at once do not clash
        known: list[str] = []
        for i, name in enumerate(names):
            host = NamespaceHost(
                name=name, netns=f"bakeoff-{tag}-{name}", veth=f"bk{tag}{i}",
                address=f"{subnet}.{4 * i + 2}", remote_dir=root / "remote" / name,
                config=root / f"sshd-{name}.conf", log=root / f"sshd-{name}.log",
                without_memcg=name in without_memcg, without_caps=name in without_caps,
                without_lttng=name in without_lttng)
            fleet.hosts.append(host)
            _run("ip", "netns", "add", host.netns)
            _run("ip", "link", "add", host.veth, "type", "veth", "peer", "name", f"{host.veth}p")
            _run("ip", "link", "set", f"{host.veth}p", "netns", host.netns)
            _run("ip", "addr", "add", f"{subnet}.{4 * i + 1}/30", "dev", host.veth)
            _run("ip", "link", "set", host.veth, "up")
            for cmd in (["ip", "addr", "add", f"{host.address}/30", "dev", f"{host.veth}p"],
                        ["ip", "link", "set", f"{host.veth}p", "up"],
                        ["ip", "link", "set", "lo", "up"]):
                _run("ip", "netns", "exec", host.netns, *cmd)
            host.remote_dir.mkdir(parents=True)
            host.config.write_text("\n".join([
                "Port 22", f"ListenAddress {host.address}",
                f"HostKey {root / 'host_key'}", f"AuthorizedKeysFile {root / 'authorized_keys'}",
                "PermitRootLogin prohibit-password", "PasswordAuthentication no",
                "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no",
                f"PidFile {root / f'sshd-{name}.pid'}", "Subsystem sftp internal-sftp",
                "LogLevel ERROR", "MaxStartups 50", "MaxSessions 50",
                # The hosts' system temp directory is the fleet's, not this machine's /tmp:
                # what a host's session leaves there is this fleet's (payloads_left), and
                # is removed with it.
                f"SetEnv TMPDIR={fleet.host_tmp}", ""]))
            known.append(f"{host.address} {host_pub[0]} {host_pub[1]}")
            host.start_sshd()
        fleet.known_hosts.write_text("\n".join(known) + "\n")
        with _sweeping_stale_pyenv_locks():
            yield fleet
    finally:
        for host in fleet.hosts:
            host.stop_sshd()
            # Sessions outlive the listening sshd: end every process left in the namespace.
            for _ in range(50):
                if not host.kill_processes():
                    break
                time.sleep(0.2)
            subprocess.run(["ip", "netns", "del", host.netns], capture_output=True, check=False,
                           timeout=30)
            subprocess.run(["ip", "link", "del", host.veth], capture_output=True, check=False,
                           timeout=30)
        _clear_stale_pyenv_lock()  # a rehash killed with the hosts' processes above
        shutil.rmtree(root, ignore_errors=True)
