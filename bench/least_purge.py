"""`make bench`, the least a RecordPurge can take (#47): a controller of a few lines that
does only what every purge by a resource must do, timed like the operator's purge.

It watches the RecordPurges of one namespace (one the operator does not watch) and, for
each new one, sends DeleteRecords of its spec.partitions from an admin client already
connected, then writes one status (phase and summary). No plan, no plan stored before
the delete, no re-read of guard groups, no results, no per-partition check: everything
the operator does for safety and audit is left out. `kubectl apply` of the same object,
the API server's admission, its watch events out to the controller and back to the
bench's watch, DeleteRecords and one status write stay in, so its time is a floor that
any operator answering this resource pays on this machine; the operator's own share is
what its purge takes above it.
"""

from __future__ import annotations

import threading
from typing import Any

import kubernetes
from bench.common import say
from confluent_kafka import KafkaException
from confluent_kafka import TopicPartition as KTP
from confluent_kafka.admin import AdminClient

from devstack.stack import Stack

GROUP, VERSION, PLURAL = "kafka-retention.io", "v1alpha1", "recordpurges"


class LeastPurger:
    """The controller, on a thread of the bench's process; `use` names the admin client
    of each cluster (by its bootstrap servers) before a purge of it is applied."""

    def __init__(self, stack: Stack, namespace: str) -> None:
        self.namespace = namespace
        api = kubernetes.config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=str(stack.kube.kubeconfig)
        )
        self.custom = kubernetes.client.CustomObjectsApi(api)
        self.admins: dict[str, AdminClient] = {}
        self.stopped = threading.Event()
        self.version = ""
        self._listed()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def use(self, bootstrap: str, admin: AdminClient) -> None:
        self.admins[bootstrap] = admin

    def stop(self) -> None:
        self.stopped.set()

    def _listed(self) -> None:
        """Watched from a list's version, so every object applied after it is seen; one
        listed without a phase (applied while the watch was down) is purged now."""
        listed: Any = self.custom.list_namespaced_custom_object(
            GROUP, VERSION, self.namespace, PLURAL
        )
        self.version = listed["metadata"]["resourceVersion"]
        for obj in listed["items"]:
            if not obj.get("status", {}).get("phase"):
                self._purge(obj)

    def _run(self) -> None:
        while not self.stopped.is_set():
            try:
                self._watch()
            except Exception as exc:  # a version too old (410) among others: listed again
                say(f"  least purger: {exc!r}; listing and watching again")
                self.stopped.wait(1)
                try:
                    self._listed()
                except Exception as again:
                    say(f"  least purger: {again!r}")

    def _watch(self) -> None:
        stream = kubernetes.watch.Watch().stream(  # type: ignore[no-untyped-call]
            self.custom.list_namespaced_custom_object,
            GROUP,
            VERSION,
            self.namespace,
            PLURAL,
            resource_version=self.version,
            allow_watch_bookmarks=True,  # the version moves on while nothing here changes
            timeout_seconds=30,
        )
        for event in stream:
            obj: dict[str, Any] = event["object"]
            self.version = obj["metadata"]["resourceVersion"]
            if event["type"] == "ADDED" and not obj.get("status", {}).get("phase"):
                self._purge(obj)
            if self.stopped.is_set():
                return

    def _purge(self, obj: dict[str, Any]) -> None:
        spec = obj["spec"]
        admin = self.admins[spec["cluster"]["bootstrapServers"]]
        request = [KTP(e["topic"], e["partition"], e["offset"]) for e in spec["partitions"]]
        failed = 0
        for future in admin.delete_records(request, request_timeout=300).values():
            try:
                future.result()
            except KafkaException:
                failed += 1
        status = {
            "phase": "Failed" if failed else "Succeeded",
            "summary": {"partitions": len(request), "failed": failed},
        }
        # The answer is the whole object again: read but not decoded, as a controller
        # that needs nothing from it would do.
        answer: Any = self.custom.patch_namespaced_custom_object_status(
            GROUP,
            VERSION,
            self.namespace,
            PLURAL,
            obj["metadata"]["name"],
            {"status": status},
            _preload_content=False,
        )
        answer.read()
        answer.release_conn()
