"""etcd and kube-apiserver on 127.0.0.1, with token auth, RBAC and a kubeconfig.

The node (kubelet, containerd) and the controllers beside the API server (scheduler,
controller-manager) are in node.py.
"""

from __future__ import annotations

import json
import secrets
import ssl
import time
import urllib.request
from pathlib import Path

import yaml

from devstack import paths
from devstack.procs import Process, StackError, run, wait_for

ETCD_CLIENT_PORT = 32379
ETCD_PEER_PORT = 32380
APISERVER_PORT = 36443
ADMIN_USER = "kafka-retention-admin"


class KubeApi:
    def __init__(self, dev: Path) -> None:
        self.root = dev / "kube"
        self.etcd = Process("etcd", self.root)
        self.apiserver = Process("kube-apiserver", self.root)
        self.kubeconfig = dev / "kubeconfig"

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{APISERVER_PORT}"

    @property
    def kubectl(self) -> Path:
        return paths.kube_bin() / "kubectl"

    def running(self) -> bool:
        return self.etcd.running() and self.apiserver.running()

    def prepare(self) -> None:
        """Fresh etcd data, a service-account key pair and an admin token."""
        certs = self.root / "certs"
        certs.mkdir(parents=True, exist_ok=True)
        sa_key = certs / "service-account.key"
        run(["openssl", "genrsa", "-out", str(sa_key), "2048"], what="openssl genrsa")
        run(
            [
                "openssl",
                "rsa",
                "-in",
                str(sa_key),
                "-pubout",
                "-out",
                str(certs / "service-account.pub"),
            ],
            what="openssl rsa -pubout",
        )
        token = secrets.token_hex(24)
        (self.root / "tokens.csv").write_text(
            f'{token},{ADMIN_USER},{ADMIN_USER},"system:masters"\n'
        )
        (self.root / "token").write_text(token)

    def start(self) -> None:
        self._start_etcd()
        self._start_apiserver()
        self._write_kubeconfig()

    def _start_etcd(self) -> None:
        client = f"http://127.0.0.1:{ETCD_CLIENT_PORT}"
        peer = f"http://127.0.0.1:{ETCD_PEER_PORT}"
        self.etcd.start(
            [
                str(paths.etcd_bin() / "etcd"),
                "--name",
                "dev",
                "--data-dir",
                str(self.root / "etcd"),
                "--listen-client-urls",
                client,
                "--advertise-client-urls",
                client,
                "--listen-peer-urls",
                peer,
                "--initial-advertise-peer-urls",
                peer,
                "--initial-cluster",
                f"dev={peer}",
                # Throwaway data: skipping fsync keeps etcd off the disk's critical path.
                "--unsafe-no-fsync",
                "--log-level",
                "warn",
            ]
        )

        def healthy() -> bool:
            with urllib.request.urlopen(f"{client}/health", timeout=2) as r:  # noqa: S310
                return bool(json.load(r).get("health") == "true")

        wait_for("etcd", healthy, 30, log=self.etcd.log)

    def _start_apiserver(self) -> None:
        certs = self.root / "certs"
        self.apiserver.start(
            [
                str(paths.kube_bin() / "kube-apiserver"),
                f"--etcd-servers=http://127.0.0.1:{ETCD_CLIENT_PORT}",
                f"--cert-dir={certs}",
                f"--secure-port={APISERVER_PORT}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                "--authorization-mode=RBAC",
                "--service-cluster-ip-range=10.0.0.0/24",
                f"--service-account-issuer={self.server}",
                f"--service-account-key-file={certs / 'service-account.pub'}",
                f"--service-account-signing-key-file={certs / 'service-account.key'}",
                f"--token-auth-file={self.root / 'tokens.csv'}",
                # The node registers as itself but answers on 127.0.0.1 only.
                "--kubelet-preferred-address-types=InternalIP",
                "--allow-privileged=true",
                "--v=1",
            ]
        )
        wait_for("kube-apiserver", self._ready, 120, interval=1.0, log=self.apiserver.log)

    def _token(self) -> str:
        return (self.root / "token").read_text().strip()

    def _ready(self) -> bool:
        if self.apiserver.exited_early():
            raise StackError(f"kube-apiserver exited while starting; see {self.apiserver.log}")
        ctx = ssl.create_default_context(cafile=str(self._ca_file()))
        req = urllib.request.Request(  # noqa: S310
            f"{self.server}/readyz", headers={"Authorization": f"Bearer {self._token()}"}
        )
        with urllib.request.urlopen(req, timeout=3, context=ctx) as r:  # noqa: S310
            return bool(r.status == 200)

    def _ca_file(self) -> Path:
        # --cert-dir makes the server write a self-signed serving cert followed by the CA
        # that signed it; that bundle is what clients must trust.
        return self.root / "certs" / "apiserver.crt"

    def _write_kubeconfig(self) -> None:
        import base64

        ca = base64.b64encode(self._ca_file().read_bytes()).decode()
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "local",
                    "cluster": {"server": self.server, "certificate-authority-data": ca},
                }
            ],
            "users": [{"name": ADMIN_USER, "user": {"token": self._token()}}],
            "contexts": [{"name": "local", "context": {"cluster": "local", "user": ADMIN_USER}}],
            "current-context": "local",
        }
        self.kubeconfig.write_text(yaml.safe_dump(config))
        self.kubeconfig.chmod(0o600)

    def restart_apiserver(self, down_for: float = 0) -> None:
        """Stop the API server, leave it down `down_for` seconds, start it again (same
        certificates and etcd data) and wait until it is ready: what an upgrade or a
        control-plane restart looks like to the operator's watches."""
        # It stops listening at once, then waits on its clients' open connections until
        # the stop's SIGKILL (20 s, measured): a restart has nothing to gain from that.
        self.apiserver.stop(timeout=3)
        time.sleep(down_for)
        self._start_apiserver()

    def stop(self) -> None:
        self.apiserver.stop()
        self.etcd.stop()
