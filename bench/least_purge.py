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

With `safe`, it also does the least that DESIGN.md's rules and a restart-safe purge ask
of an explicit purge with no guard groups, and nothing more: the topics' cleanup.policy
read (a compact-only topic is refused before trying), every partition's log start and
high watermark read so each cut is a concrete offset within them (-1 resolved: a purge
run again after a restart cannot reach records written since), that plan stored in a
ConfigMap and status pointing at it (phase Purging) before the delete, then the delete
and the final status. No binding, no metrics, no events, no results kept, no checks
of a stored plan: its time is the floor of a purge under the rules, the operator's own
share being what its purge takes above that.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import kubernetes
from bench.common import say
from confluent_kafka import KafkaException
from confluent_kafka import TopicPartition as KTP
from confluent_kafka.admin import AdminClient, ConfigResource, OffsetSpec, ResourceType

from devstack.stack import Stack
from kafka_retention.core.topics import accepts_delete_records

GROUP, VERSION, PLURAL = "kafka-retention.io", "v1alpha1", "recordpurges"


class LeastPurger:
    """The controller, on a thread of the bench's process; `use` names the admin client
    of each cluster (by its bootstrap servers) before a purge of it is applied."""

    def __init__(self, stack: Stack, namespace: str, *, safe: bool = False) -> None:
        self.namespace = namespace
        self.safe = safe
        api = kubernetes.config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=str(stack.kube.kubeconfig)
        )
        self.custom = kubernetes.client.CustomObjectsApi(api)
        self.core = kubernetes.client.CoreV1Api(api)
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
        refused = 0
        if self.safe:
            request, refused = self._planned(admin, request)
            self._status(obj, {"phase": "Purging", "planRef": self._stored(obj, request)})
        failed = refused
        if request:
            for future in admin.delete_records(request, request_timeout=300).values():
                try:
                    future.result()
                except KafkaException:
                    failed += 1
        self._status(
            obj,
            {
                "phase": "Failed" if failed else "Succeeded",
                "summary": {"partitions": len(request) + refused, "failed": failed},
            },
        )

    def _planned(self, admin: AdminClient, asked: list[KTP]) -> tuple[list[KTP], int]:
        """The cuts as concrete offsets within each partition's log start and high
        watermark, and how many partitions were refused (a compact-only topic)."""
        topics = sorted({tp.topic for tp in asked})
        resources = [ConfigResource(ResourceType.TOPIC, t) for t in topics]
        configs = admin.describe_configs(resources, request_timeout=300)
        wanted = [KTP(tp.topic, tp.partition) for tp in asked]
        earliest: OffsetSpec = OffsetSpec.earliest()  # type: ignore[no-untyped-call]
        latest: OffsetSpec = OffsetSpec.latest()  # type: ignore[no-untyped-call]
        bounds = {
            name: admin.list_offsets(dict.fromkeys(wanted, spec), request_timeout=300)
            for name, spec in (("start", earliest), ("end", latest))
        }
        # One answer for every planner (core.topics); an empty policy counts as refused.
        refused_topics = {
            r.name
            for r, f in configs.items()
            if not accepts_delete_records({"cleanup.policy": f.result()["cleanup.policy"].value})
        }
        planned: list[KTP] = []
        for tp in asked:
            if tp.topic in refused_topics:
                continue
            key = KTP(tp.topic, tp.partition)
            start = bounds["start"][key].result().offset
            end = bounds["end"][key].result().offset
            cut = end if tp.offset == -1 else min(tp.offset, end)
            planned.append(KTP(tp.topic, tp.partition, max(cut, start)))
        return planned, len(asked) - len(planned)

    def _stored(self, obj: dict[str, Any], plan: list[KTP]) -> dict[str, str]:
        """The plan in a ConfigMap of the purge's own (JSON lines), before any delete."""
        name = f"{obj['metadata']['name']}-plan"
        lines = "\n".join(
            json.dumps({"topic": tp.topic, "partition": tp.partition, "offset": tp.offset})
            for tp in plan
        )
        owner = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "RecordPurge",
            "name": obj["metadata"]["name"],
            "uid": obj["metadata"]["uid"],
        }
        body = {
            "metadata": {"name": name, "ownerReferences": [owner]},
            "data": {"plan": lines},
        }
        answer: Any = self.core.create_namespaced_config_map(
            self.namespace,
            body,  # type: ignore[arg-type]
            _preload_content=False,
        )
        answer.read()
        answer.release_conn()
        return {"configMap": name}

    def _status(self, obj: dict[str, Any], status: dict[str, Any]) -> None:
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
