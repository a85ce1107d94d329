"""A real node for the local API server: containerd, a kubelet, kube-scheduler and
kube-controller-manager, all on this machine, all stopped again by `down`.

Pods run with `hostNetwork: true`. The brokers and the API server listen on 127.0.0.1
only, and a hostNetwork pod shares the host's loopback, so pods reach them at the very
addresses the tests and the operator use, with no CNI bridge, no NAT and no re-advertised
Kafka listeners. A bridge conflist is still configured (containerd reports the network
NotReady without one, and the node would never be Ready); it only comes into play for a
pod without hostNetwork, and `down` removes its bridge if one was made.

What the kubelet changes on the host is recorded before it starts (`HostState`) and put
back by `down`: sysctls it tunes, the CNI bridge, network namespaces and mounts of pods,
iptables rules. See ../shared/notes/node.md for the settings this machine needs.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from devstack import paths
from devstack.procs import Process, StackError, run, tail, wait_for

NODE_NAME = "kafka-retention-dev"
KUBELET_PORT = 36250
KUBELET_HEALTHZ_PORT = 36248
SCHEDULER_PORT = 36259
CONTROLLER_MANAGER_PORT = 36257
CONTAINERD_STREAM_PORT = 36010
# The kubelet refuses a loopback node IP ("nodeIP can't be loopback address"), and the
# API server reaches the kubelet (exec, logs) at the node IP. So the node gets a private
# address of its own on the loopback device: reachable from this machine only, removed by
# `down`. hostNetwork pods report it as their pod IP.
NODE_IP = "10.244.76.1"
CNI_BRIDGE = "kr-cni0"
CNI_SUBNET = "10.244.77.0/24"
NAMESPACE = "k8s.io"  # the containerd namespace the CRI plugin uses
# Which node last changed this host, with the host as it found it. Under /run (a tmpfs),
# so a reboot, which undoes those changes too, forgets it. A session killed without
# `down` leaves the record behind, and the next `start`, from whichever checkout, puts
# the host back first: otherwise it would record the changed host as the one to restore.
HOST_RECORD = Path("/run/kafka-retention/node.json")

# What the kubelet and the CNI bridge plugin write on this kernel; put back by `down`.
SYSCTLS = (
    "vm.overcommit_memory",
    "vm.panic_on_oom",
    "kernel.panic",
    "kernel.panic_on_oops",
    "kernel.keys.root_maxkeys",
    "kernel.keys.root_maxbytes",
    "net.ipv4.ip_forward",
    "net.ipv4.ip_local_reserved_ports",
)


def _say(msg: str) -> None:
    print(f"[node] {msg}", file=sys.stderr, flush=True)


def _sysctl_path(name: str) -> Path:
    return Path("/proc/sys") / name.replace(".", "/")


@dataclass(frozen=True)
class HostState:
    """The parts of the host a node changes, as text that compares equal when unchanged."""

    sysctls: dict[str, str]
    iptables: str
    links: list[str]
    addresses: list[str]
    netns: list[str]
    mounts: list[str]
    cgroups: list[str]

    @classmethod
    def read(cls, under: Path) -> HostState:
        return cls(
            sysctls={
                s: _sysctl_path(s).read_text().strip() for s in SYSCTLS if _sysctl_path(s).exists()
            },
            iptables=_iptables_rules(),
            links=sorted(_links()),
            addresses=sorted(_addresses()),
            netns=sorted(p.name for p in Path("/run/netns").glob("*"))
            if Path("/run/netns").is_dir()
            else [],
            mounts=_mounts_under(under, Path("/run/netns"), Path("/run/containerd")),
            cgroups=_cgroups(),
        )

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.__dict__, indent=1, sort_keys=True))

    @classmethod
    def load(cls, path: Path) -> HostState:
        return cls(**json.loads(path.read_text()))

    def differences(self, other: HostState) -> list[str]:
        """What `other` has that this state did not, in words."""
        diffs = [
            f"sysctl {k} is {other.sysctls.get(k)} (was {v})"
            for k, v in self.sysctls.items()
            if other.sysctls.get(k) != v
        ]
        if other.iptables != self.iptables:
            diffs.append("iptables rules differ:\n" + _diff(self.iptables, other.iptables))
        diffs += [f"network link {x} left behind" for x in set(other.links) - set(self.links)]
        diffs += [f"address {x} left behind" for x in set(other.addresses) - set(self.addresses)]
        diffs += [f"network namespace {x} left behind" for x in set(other.netns) - set(self.netns)]
        diffs += [f"mount {x} left behind" for x in set(other.mounts) - set(self.mounts)]
        diffs += [f"cgroup {x} left behind" for x in set(other.cgroups) - set(self.cgroups)]
        return diffs


def _diff(before: str, after: str) -> str:
    old, new = set(before.splitlines()), set(after.splitlines())
    return "\n".join([f"- {x}" for x in old - new] + [f"+ {x}" for x in new - old])


def _iptables_rules() -> str:
    """Every table's rules without packet counters, which change on their own."""
    out = []
    for tool in ("iptables-save", "ip6tables-save"):
        if shutil.which(tool) is None:
            continue
        done = subprocess.run([tool], capture_output=True, text=True, check=False)
        for line in done.stdout.splitlines():
            if line.startswith("#"):
                continue
            out.append(re.sub(r"\[\d+:\d+\]$", "", line))
    return "\n".join(out)


def _links() -> list[str]:
    done = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=False)
    return [line.split(":")[1].strip().split("@")[0] for line in done.stdout.splitlines()]


def _addresses() -> list[str]:
    done = subprocess.run(["ip", "-o", "addr", "show"], capture_output=True, text=True, check=False)
    return [" ".join(line.split()[1:4]) for line in done.stdout.splitlines()]


def _cgroups() -> list[str]:
    """Top-level cgroups of each controller: where runc puts a pod's containers when the
    kubelet runs without QoS cgroups."""
    root = Path("/sys/fs/cgroup")
    if not root.is_dir():
        return []
    return sorted(
        f"{ctl.name}/{d.name}"
        for ctl in root.iterdir()
        if ctl.is_dir() and not ctl.is_symlink()
        for d in ctl.iterdir()
        if d.is_dir()
    )


def _mounts_under(*roots: Path) -> list[str]:
    prefixes = tuple(str(r.resolve()) + "/" for r in roots)
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point.startswith(prefixes) or point in {p.rstrip("/") for p in prefixes}:
            found.append(point)
    return found


class Node:
    """containerd + kubelet + kube-scheduler + kube-controller-manager."""

    def __init__(self, dev: Path, kubeconfig: Path, certs: Path) -> None:
        self.root = dev / "node"
        self.kubeconfig = kubeconfig
        self.certs = certs
        self.containerd = Process("containerd", self.root)
        self.kubelet = Process("kubelet", self.root)
        self.scheduler = Process("kube-scheduler", self.root)
        self.controller_manager = Process("kube-controller-manager", self.root)
        self._started_at = 0.0
        self._reserved: list[int] = []

    @property
    def processes(self) -> list[Process]:
        return [self.containerd, self.kubelet, self.scheduler, self.controller_manager]

    @property
    def socket(self) -> Path:
        return self.root / "containerd" / "containerd.sock"

    @property
    def host_state_file(self) -> Path:
        return self.root / "host-before.json"

    def running(self) -> bool:
        return all(p.running() for p in self.processes)

    def anything_running(self) -> bool:
        return any(p.running() for p in self.processes)

    # --- start ---------------------------------------------------------------------------

    def claim_host(self, reserve_ports: Sequence[int] = (), keep_images: bool = False) -> None:
        """Record the host as it is, then reserve the stack's ports, before anything of
        the stack starts. The reservation must come first: a port is in the ephemeral
        range, and the brokers' and the API server's own outgoing connections may take it
        as their source port before the node's daemons bind it (containerd exits when its
        stream port is taken). With keep_images, containerd's store of a stopped node is
        kept."""
        recover_abandoned_node()
        store = self.root / "containerd" / "root"
        kept = self.root.parent / "node-containerd-root"
        shutil.rmtree(kept, ignore_errors=True)
        if keep_images and store.is_dir():
            store.rename(kept)
        elif _parked_store().is_dir():
            _move_store(_parked_store(), kept)
        shutil.rmtree(self.root, ignore_errors=True)
        self.root.mkdir(parents=True)
        if kept.is_dir():
            store.parent.mkdir(parents=True)
            kept.rename(store)
        # Recorded before anything runs, so `down` knows what to put back.
        before = HostState.read(self.root)
        before.save(self.host_state_file)
        HOST_RECORD.parent.mkdir(parents=True, exist_ok=True)
        HOST_RECORD.write_text(json.dumps({"root": str(self.root), "before": before.__dict__}))
        _reserve_ports(reserve_ports)
        self._reserved = list(reserve_ports)

    def start(self, images: list[tuple[Path, str]], pause_image: str) -> None:
        """Start the node, on a host claimed with `claim_host`, and load `images` (OCI
        archive, image name) into containerd. An image already imported from the same
        archive into a kept store is not imported again (a 1.2 GB archive takes about
        25 s to import)."""
        if not self.host_state_file.exists():
            raise StackError("the node starts on a claimed host: call claim_host first")
        self._started_at = time.time()
        self._images_file.write_text(
            json.dumps(
                {
                    "images": [[str(a), n] for a, n in images],
                    "pause": pause_image,
                    "reserve_ports": self._reserved,
                }
            )
        )
        if not any(NODE_IP in a for a in _addresses()):
            run(["ip", "addr", "add", f"{NODE_IP}/32", "dev", "lo"], what="ip addr add")
        self._start_control_plane()
        self._start_containerd(pause_image)
        for archive, name in images:
            self.load_image(archive, name)
        self._start_kubelet()

    @property
    def _images_file(self) -> Path:
        return self.root.parent / "node-images.json"

    def start_again(self) -> None:
        """Start a stopped node with the images of its last start."""
        last = json.loads(self._images_file.read_text())
        self.claim_host(last.get("reserve_ports", []), keep_images=True)
        self.start([(Path(a), n) for a, n in last["images"]], last["pause"])

    def restart_controllers(self) -> None:
        """Restart the scheduler and the controller-manager, as a control-plane restart
        does (kubeadm restarts each of its static pods in turn)."""
        for proc in (self.scheduler, self.controller_manager):
            proc.stop()
        self._start_control_plane()

    def _start_control_plane(self) -> None:
        bin_dir = paths.node_bin()
        common = [
            f"--kubeconfig={self.kubeconfig}",
            f"--authentication-kubeconfig={self.kubeconfig}",
            f"--authorization-kubeconfig={self.kubeconfig}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            "--v=1",
        ]
        self.scheduler.start(
            [
                str(bin_dir / "kube-scheduler"),
                *common,
                f"--secure-port={SCHEDULER_PORT}",
            ]
        )
        self.controller_manager.start(
            [
                str(bin_dir / "kube-controller-manager"),
                *common,
                f"--secure-port={CONTROLLER_MANAGER_PORT}",
                # Published as the kube-root-ca.crt ConfigMap, which service-account token
                # volumes carry as ca.crt: what in-cluster clients trust.
                f"--root-ca-file={self.certs / 'apiserver.crt'}",
                f"--service-account-private-key-file={self.certs / 'service-account.key'}",
                "--use-service-account-credentials=false",
                # No cloud, no node CIDRs: pods share the host's network (module docstring).
                "--allocate-node-cidrs=false",
                "--controllers=*,-nodeipam,-service-lb-controller,-cloud-node-lifecycle",
            ]
        )

    def _containerd_config(self, pause_image: str) -> dict[str, Any]:
        base = self.root / "containerd"
        cri = {
            "sandbox_image": pause_image,
            # This machine's bounding set lacks CAP_SYS_RESOURCE: runc cannot write a
            # negative oom_score_adj, and without this every container start fails.
            "restrict_oom_score_adj": True,
            "stream_server_address": "127.0.0.1",
            "stream_server_port": str(CONTAINERD_STREAM_PORT),
            "enable_selinux": False,
            "containerd": {
                "snapshotter": "overlayfs",
                "default_runtime_name": "runc",
                "runtimes": {
                    "runc": {
                        "runtime_type": "io.containerd.runc.v2",
                        "options": {"SystemdCgroup": False},
                    }
                },
            },
            "cni": {"bin_dir": "/usr/lib/cni", "conf_dir": str(base / "cni")},
        }
        return {
            "version": 2,
            "root": str(base / "root"),
            "state": str(base / "state"),
            "grpc": {"address": str(self.socket)},
            "ttrpc": {"address": str(self.socket) + ".ttrpc"},
            "debug": {"address": ""},
            "metrics": {"address": ""},
            "plugins": {
                "io.containerd.grpc.v1.cri": cri,
                "io.containerd.internal.v1.opt": {"path": str(base / "opt")},
            },
        }

    def _start_containerd(self, pause_image: str) -> None:
        if shutil.which("containerd") is None:
            raise StackError("containerd is not installed; `make setup` installs it")
        base = self.root / "containerd"
        (base / "cni").mkdir(parents=True)
        (base / "cni" / "10-kafka-retention.conflist").write_text(
            json.dumps(
                {
                    "cniVersion": "1.0.0",
                    "name": "kafka-retention",
                    "plugins": [
                        {
                            "type": "bridge",
                            "bridge": CNI_BRIDGE,
                            "isGateway": True,
                            # Pod traffic stays on this machine: no masquerading out.
                            "ipMasq": False,
                            "ipam": {
                                "type": "host-local",
                                "ranges": [[{"subnet": CNI_SUBNET}]],
                                "dataDir": str(base / "cni-ipam"),
                            },
                        },
                        {"type": "loopback"},
                    ],
                }
            )
        )
        config = base / "config.toml"
        config.write_text(_toml(self._containerd_config(pause_image)))
        self.containerd.start(["containerd", "--config", str(config)])

        def up() -> bool:
            if self.containerd.exited_early():
                raise StackError(f"containerd exited while starting; see {self.containerd.log}")
            self.ctr("version")
            return True

        wait_for("containerd", up, 30, log=self.containerd.log)

    def ctr(self, *args: str) -> str:
        try:
            return run(
                ["ctr", "--address", str(self.socket), "--namespace", NAMESPACE, *args],
                what=f"ctr {args[0]}",
            )
        except StackError as e:
            # containerd answers before its CRI plugin has started, and exits when that
            # fails: "connection refused" alone would hide why.
            if self.containerd.exited_early():
                raise StackError(
                    f"{e}\ncontainerd has exited; the end of {self.containerd.log}:\n"
                    f"{tail(self.containerd.log, 5)}"
                ) from e
            raise

    def load_image(self, archive: Path, name: str) -> None:
        """Import an image archive and make sure it answers to `name`, the way the CRI
        names images: a name without a registry is docker.io/library/NAME."""
        started = time.monotonic()
        wanted = name if "/" in name.split(":")[0] else f"docker.io/library/{name}"
        before = set(self.ctr("images", "ls", "--quiet").split())
        # Archives are named by a hash of their inputs: the same name, the same image. The
        # marker keeps the digest the name pointed at after the import: checkouts share
        # the store, and another checkout's archive may have taken the name since.
        marker = self.root / "containerd" / "root" / f"imported-{archive.name}"
        if marker.exists() and wanted in before:
            recorded = marker.read_text().split()
            if recorded[1:] == [self._digest(wanted) or ""]:
                _say(f"image {wanted} already in containerd")
                return
        self.ctr("images", "import", "--base-name", wanted.rsplit(":", 1)[0], str(archive))
        names = set(self.ctr("images", "ls", "--quiet").split())
        if wanted not in names:
            new = sorted(n for n in names - before if not n.startswith("sha256:"))
            if not new:
                raise StackError(f"importing {archive} gave no image to tag as {wanted}")
            self.ctr("images", "tag", "--force", new[0], wanted)
        marker.write_text(f"{wanted} {self._digest(wanted) or ''}\n")
        _say(f"image {wanted} loaded into containerd in {time.monotonic() - started:.0f}s")

    def _digest(self, ref: str) -> str | None:
        """The digest `ref` points at in containerd (`ctr images ls`: REF TYPE DIGEST ...)."""
        for line in self.ctr("images", "ls").splitlines()[1:]:
            cols = line.split()
            if len(cols) > 2 and cols[0] == ref:
                return cols[2]
        return None

    def _kubelet_config(self) -> dict[str, Any]:
        return {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "containerRuntimeEndpoint": f"unix://{self.socket}",
            "address": NODE_IP,
            "port": KUBELET_PORT,
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": KUBELET_HEALTHZ_PORT,
            "readOnlyPort": 0,
            # The API server calls the kubelet for exec and logs without a client
            # certificate; the kubelet answers on the node's own address only (NODE_IP).
            "authentication": {
                "anonymous": {"enabled": True},
                "webhook": {"enabled": False},
            },
            "authorization": {"mode": "AlwaysAllow"},
            "cgroupDriver": "cgroupfs",
            "cgroupsPerQOS": False,
            "enforceNodeAllocatable": [],
            "failSwapOn": False,
            "failCgroupV1": False,
            # The kubelet would otherwise add KUBE-FIREWALL and canary chains to iptables.
            "makeIPTablesUtilChains": False,
            "podLogsDir": str(self.root / "pod-logs"),
            "volumePluginDir": str(self.root / "volume-plugins"),
            "serializeImagePulls": False,
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            # A busy development disk must not evict the operator under test.
            "evictionHard": {
                "memory.available": "100Mi",
                "nodefs.available": "1%",
                "imagefs.available": "1%",
            },
            "maxPods": 60,
            "resolvConf": "/etc/resolv.conf",
            "staticPodPath": "",
        }

    def _start_kubelet(self) -> None:
        config = self.root / "kubelet.yaml"
        config.write_text(yaml.safe_dump(self._kubelet_config()))
        self.kubelet.start(
            [
                str(paths.node_bin() / "kubelet"),
                f"--config={config}",
                f"--kubeconfig={self.kubeconfig}",
                f"--root-dir={self.root / 'kubelet'}",
                f"--cert-dir={self.root / 'kubelet-pki'}",
                f"--hostname-override={NODE_NAME}",
                f"--node-ip={NODE_IP}",
                "--v=1",
            ]
        )

    def wait_ready(self, kubectl: Path, timeout: float = 120) -> None:
        def ready() -> bool:
            if self.kubelet.exited_early():
                raise StackError(f"kubelet exited while starting; see {self.kubelet.log}")
            out = run(
                [
                    str(kubectl),
                    "--kubeconfig",
                    str(self.kubeconfig),
                    "get",
                    "node",
                    NODE_NAME,
                    "-o",
                    "jsonpath={.status.conditions[?(@.type=='Ready')]}",
                ]
            )
            cond = json.loads(out)
            # After a restart the Node object still says Ready: only a heartbeat of the
            # kubelet started now counts.
            beat = datetime.fromisoformat(cond["lastHeartbeatTime"].replace("Z", "+00:00"))
            return bool(cond["status"] == "True" and beat.timestamp() >= self._started_at - 1)

        wait_for(f"node {NODE_NAME} Ready", ready, timeout, interval=1.0, log=self.kubelet.log)

    # --- stop ----------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop every part and put the host back as `start` found it."""
        for proc in (self.scheduler, self.controller_manager, self.kubelet):
            proc.stop()
        self._remove_containers()
        self.containerd.stop()
        self._kill_shims()
        _kill_containers_of(self.root)
        self._restore_host()
        store = self.root / "containerd" / "root"
        if store.is_dir() and not _mounts_under(store):
            _move_store(store, _parked_store())

    def _remove_containers(self) -> None:
        """Kill and delete every task and container, and their sandboxes' network
        namespaces, while containerd still answers."""
        if not self.containerd.running():
            return
        with contextlib.suppress(StackError):
            for line in self.ctr("tasks", "ls", "--quiet").split():
                with contextlib.suppress(StackError):
                    self.ctr("tasks", "kill", "--signal", "SIGKILL", line)
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and self.ctr("tasks", "ls", "--quiet").strip():
                time.sleep(0.3)
            for line in self.ctr("tasks", "ls", "--quiet").split():
                with contextlib.suppress(StackError):
                    self.ctr("tasks", "delete", "--force", line)
            for line in self.ctr("containers", "ls", "--quiet").split():
                with contextlib.suppress(StackError):
                    self.ctr("containers", "delete", line)

    def _kill_shims(self) -> None:
        """containerd-shim processes outlive containerd by design; ours name our socket."""
        done = subprocess.run(
            ["pgrep", "-f", f"containerd-shim.*{self.socket}"],
            capture_output=True,
            text=True,
            check=False,
        )
        for pid in done.stdout.split():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                subprocess.run(["kill", "-9", pid], check=False)

    def _restore_host(self) -> None:
        before = HostState.load(self.host_state_file) if self.host_state_file.exists() else None
        # Mounts first, deepest first: pod volumes, container rootfs, sandbox shm.
        for point in sorted(_mounts_under(self.root), key=len, reverse=True):
            subprocess.run(["umount", "-l", point], capture_output=True, check=False)
        if before is None:
            return
        now = HostState.read(self.root)
        for ns in set(now.netns) - set(before.netns):
            if ns.startswith("cni-"):
                subprocess.run(["umount", f"/run/netns/{ns}"], capture_output=True, check=False)
                Path("/run/netns", ns).unlink(missing_ok=True)
        if any(NODE_IP in a for a in now.addresses) and not any(
            NODE_IP in a for a in before.addresses
        ):
            subprocess.run(["ip", "addr", "del", f"{NODE_IP}/32", "dev", "lo"], check=False)
        if CNI_BRIDGE in now.links and CNI_BRIDGE not in before.links:
            subprocess.run(["ip", "link", "delete", CNI_BRIDGE], capture_output=True, check=False)
        # containerd puts the CRI's containers under a `k8s.io` cgroup of each controller.
        for cgroup in sorted(set(now.cgroups) - set(before.cgroups)):
            _remove_cgroup(Path("/sys/fs/cgroup") / cgroup)
        for name, value in before.sysctls.items():
            path = _sysctl_path(name)
            if path.read_text().strip() != value:
                path.write_text(value + "\n")
        self.host_state_file.unlink()
        with contextlib.suppress(OSError, ValueError):
            if json.loads(HOST_RECORD.read_text())["root"] == str(self.root):
                HOST_RECORD.unlink()

    def leftovers(self, before: HostState) -> list[str]:
        """What the node left on the host compared with `before` (empty when clean)."""
        found = before.differences(HostState.read(self.root))
        found += [f"{p.name} still running" for p in self.processes if p.running()]
        return found


def _parked_store() -> Path:
    """Where a stopped node's containerd store (its imported images) waits for the next
    start, in the shared cache: a new checkout's stack then finds the operator image
    imported, where importing it again (1.2 GB) took 50 s of a 90 s stack start."""
    return paths.cache_dir() / "node-containerd-root"


def _move_store(source: Path, target: Path) -> None:
    """Move a containerd store; dropped rather than copied when the two are on different
    filesystems (images are imported again, which is slower, not wrong)."""
    shutil.rmtree(target, ignore_errors=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        source.rename(target)
    except OSError:
        shutil.rmtree(source, ignore_errors=True)


def _reserve_ports(ports: Sequence[int]) -> None:
    """Keep the kernel from handing the stack's listening ports out as the source port of
    outgoing connections. They lie in the ephemeral range, and while a broker is down its
    clients reconnect to it thousands of times a second: one connect sooner or later gets
    the very port it dials and connects to itself (TCP simultaneous open). That socket
    then holds the port, and the broker, started again, cannot bind it ("Address already
    in use"; the client meanwhile reports an ApiVersionRequest timeout)."""
    if not ports:
        return
    path = _sysctl_path("net.ipv4.ip_local_reserved_ports")
    current = path.read_text().strip()
    path.write_text(",".join([current, *map(str, ports)] if current else map(str, ports)) + "\n")


def recover_abandoned_node() -> None:
    """Put the host back after a node whose session was killed before `down` ran.

    Its containerd, kubelet and shims died with the session, but the containers' own
    processes did not: runc moves them into cgroups of their own, outside the session's.
    They keep running (a hostNetwork pod keeps its ports), its mounts and node address
    stay, and its sysctls stay changed. Nothing of a node that is still running is
    touched."""
    try:
        record = json.loads(HOST_RECORD.read_text())
        root = Path(record["root"])
        before = HostState(**record["before"])
    except (OSError, ValueError, KeyError, TypeError):
        return
    left = Node(root.parent, Path(), Path())
    if left.anything_running():
        return
    _say(f"the node at {root} was not stopped (its session was killed): cleaning up after it")
    left._kill_shims()
    _kill_containers_of(root)
    left.root.mkdir(parents=True, exist_ok=True)  # its checkout may be gone
    before.save(left.host_state_file)
    left._restore_host()
    HOST_RECORD.unlink(missing_ok=True)


def _kill_containers_of(root: Path) -> None:
    """SIGKILL every process whose root filesystem comes from this node's containerd
    store: containers whose shim is gone, which nothing else would stop."""
    store = str(root.resolve()) + "/containerd/"
    killed = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) in {1, os.getpid()}:
            continue
        try:
            mounts = (proc / "mountinfo").read_text()
        except OSError:
            continue
        if any(line.split()[4] == "/" and store in line for line in mounts.splitlines()):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(proc.name), signal.SIGKILL)
                killed.append(proc)
    if killed:
        _say(f"killed {len(killed)} processes left running in containers of {root}")
    # Their cgroups can be removed only once they are gone.
    if killed:
        wait_for("killed containers gone", lambda: not any(p.exists() for p in killed), 15)


def _remove_cgroup(path: Path) -> None:
    """rmdir a cgroup and its children, deepest first; a cgroup with processes stays."""
    if not path.is_dir():
        return
    for child in sorted((d for d in path.rglob("*") if d.is_dir()), key=lambda d: -len(d.parts)):
        with contextlib.suppress(OSError):
            child.rmdir()
    with contextlib.suppress(OSError):
        path.rmdir()


def _toml(value: dict[str, Any]) -> str:
    """Just enough TOML for containerd's config: nested tables of scalars."""
    lines: list[str] = []

    def scalar(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int):
            return str(v)
        return json.dumps(str(v))

    def table(prefix: str, d: dict[str, Any]) -> None:
        subs = {k: v for k, v in d.items() if isinstance(v, dict)}
        for k, v in d.items():
            if not isinstance(v, dict):
                lines.append(f"{json.dumps(k) if '.' in k else k} = {scalar(v)}")
        for k, v in subs.items():
            key = f'"{k}"' if "." in k else k
            name = f"{prefix}.{key}" if prefix else key
            lines.append(f"\n[{name}]")
            table(name, v)

    table("", value)
    return "\n".join(lines) + "\n"
