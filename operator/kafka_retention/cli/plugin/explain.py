"""`kubectl kafka-retention explain`: a policy's or a purge's status in words, per topic: the
cut each rule proposed and the guard that limited it.

Pure: `render_policy` and `render_purge` take the object as the API server returns it (and,
for a purge, every partition's entry from its results or plan ConfigMaps), so they are
tested with status fixtures and reused against a real operator's status."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from kafka_retention.cli.plugin import text

# What each rule of status.topics[].cut.rule means, in words.
_RULES = {
    "deleteConsumed": "deleteConsumed (records every listed group has read)",
    "deleteBefore": "deleteBefore (records older than a fixed time)",
    "maxRetention": "maxRetention (records older than the hard cap, read or not)",
    "none": "no rule",
}

# What limited a cut (status.topics[].cut.limits[].guard), as a sentence: `{on}` takes
# "on N partitions", and the operator's own detail follows it.
_GUARDS = {
    "group": "held back{on} by a group's committed offset (records it has not read stay)",
    "noCommit": (
        "held back{on} by a group with no committed offset (it protects the whole partition)"
    ),
    "minRetention": "minRetention{floor} keeps the records younger than it{on}, even once read",
    "minRecords": (
        "minRecords{records} keeps the last records of each partition{on}, even once read"
    ),
    "highWatermark": (
        "the cut stops at the high watermark{on} (nothing past the last readable record)"
    ),
    "peer": "held back{on} by another policy on the same topic (the more conservative cut applies)",
    "binding": "the binding refuses the cut{on} (its KafkaClusterBinding entry does not allow it)",
    "compacted": "topic is compacted: cleanup.policy=compact, DeleteRecords is refused{on}",
    "config": "a topic or broker setting limits the cut{on}",
}

# A failing condition's reason, as the start of a sentence its message completes.
_REASONS = {
    "NotPermitted": "the binding refuses it",
    "BindingUnavailable": "its KafkaClusterBinding is missing or cannot be used",
    "ClusterIdMismatch": "the cluster answered with another id than its binding names",
    "QuotaExceeded": "a quota of its binding is exceeded",
    "InvalidSpec": "the spec is invalid",
    "KafkaUnavailable": "Kafka could not be reached",
    "SecretUnavailable": "the Secret with the client settings cannot be used",
    "ClusterUnresolved": "the Strimzi cluster it names cannot be resolved",
    "PlanFailed": "the plan could not be computed",
    "TooManyPartitions": "it covers more partitions than one run may",
    "StateNotPersisted": "the API server refused to store its state",
    "StoredPlanRejected": "its stored plan is not one its spec allows",
    "Late": "runs are late",
    "PartiallyFailed": "some partitions failed",
    "Failed": "it failed",
    "UnconsumedRecordsDeleted": "records went before a watched group read them",
    "UnreadRecordsAtRisk": "retention will soon reach records a watched group has not read",
    "TombstonesAtRisk": "a group lags enough to miss tombstones",
    "OrphanDirectoriesFound": "orphan partition directories are on the brokers' volumes",
}


def _partitions(n: Any) -> str:
    return text.plural(int(n or 0), "partition")


def guard_sentence(limit: Mapping[str, Any], spec: Mapping[str, Any] | None = None) -> str:
    """One status.topics[].cut.limits entry in words."""
    guard = str(limit.get("guard") or "unknown")
    template = _GUARDS.get(guard, f"limited by {guard}{{on}}")
    floor = ((spec or {}).get("deleteConsumed") or {}).get("minRetention")
    records = (spec or {}).get("minRecords")
    on = f" on {_partitions(limit.get('partitions'))}" if limit.get("partitions") else ""
    words = template.format(
        on=on, floor=f" {floor}" if floor else "", records=f" {records}" if records else ""
    )
    detail = str(limit.get("detail") or "").strip()
    return words + (f": {detail}" if detail else "")


def holder_sentence(held: Mapping[str, Any], own_namespace: str = "") -> str:
    """One status.topics[].heldBackBy entry in words."""
    namespace = held.get("namespace") or ""
    here = namespace and namespace == own_namespace
    place = "in this namespace" if here else f"in namespace {namespace}" if namespace else ""
    on = f"on {_partitions(held.get('partitions'))} " if held.get("partitions") else ""
    if held.get("group"):
        whose = f" of policy {held['policy']}" if held.get("policy") else ""
        return f"held back {on}by group {held['group']}{whose} {place} (its committed offset)"
    if held.get("policy"):
        return f"held back {on}by the rules of policy {held['policy']} {place}".rstrip()
    return f"held back {on}by a policy {place} (its rules)".rstrip()


def condition_sentence(condition: Mapping[str, Any]) -> str:
    reason = str(condition.get("reason") or "")
    head = f"{condition.get('type')}={condition.get('status')} ({reason})"
    message = str(condition.get("message") or "").strip()
    if text.failing(condition) and reason in _REASONS:
        return f"{head}: {_REASONS[reason]}" + (f": {message}" if message else "")
    return f"{head}" + (f": {message}" if message else "")


def _cluster_words(spec: Mapping[str, Any]) -> str:
    cluster = spec.get("cluster") or {}
    if cluster.get("clusterRef"):
        return f"KafkaClusterBinding {cluster['clusterRef']}"
    if (cluster.get("strimzi") or {}).get("kafka"):
        return f"Strimzi Kafka {cluster['strimzi']['kafka']}"
    return f"bootstrap servers {cluster.get('bootstrapServers') or '?'}"


def _policy_rules(spec: Mapping[str, Any]) -> list[str]:
    out = []
    consumed = spec.get("deleteConsumed") or {}
    if consumed.get("groups"):
        rule = f"deleteConsumed once {', '.join(consumed['groups'])} have read them"
        if consumed.get("minRetention"):
            rule += f", keeping records younger than {consumed['minRetention']}"
        out.append(rule)
    if spec.get("deleteBefore"):
        out.append(f"deleteBefore {spec['deleteBefore']}")
    if spec.get("maxRetention"):
        out.append(f"maxRetention {spec['maxRetention']}")
    if spec.get("minRecords"):
        out.append(f"minRecords {spec['minRecords']}: the last records of each partition stay")
    return out


def _conditions_block(status: Mapping[str, Any]) -> list[str]:
    found = text.ordered_conditions(status.get("conditions"))
    if not found:
        return ["Conditions: none yet (the operator has not reported on it)"]
    return ["Conditions (failing first):", *(f"  {condition_sentence(c)}" for c in found)]


def _when(value: Any, now: datetime) -> str:
    return f"{value} ({text.relative(value, now)})" if value else "-"


def render_policy(obj: Mapping[str, Any], now: datetime | None = None) -> str:
    """A RetentionPolicy's last run in words: its rules, its conditions (failing first),
    then per topic the cut the winning rule proposed and every guard and holder that
    limited it."""
    now = now or datetime.now(UTC)
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    namespace = str(meta.get("namespace") or "")
    lines = [f"RetentionPolicy {namespace}/{meta.get('name')}"]
    lines.append(f"  cluster: {_cluster_words(spec)}")
    rules = _policy_rules(spec)
    lines.append(f"  rules: {'; '.join(rules) if rules else 'none that delete (it only watches)'}")
    if spec.get("dryRun"):
        lines.append("  dry run: it plans and reports, and deletes nothing")
    lines.append("")
    lines += _conditions_block(status)
    last = status.get("lastRun") or {}
    lines.append("")
    if last:
        lines.append(
            f"Last run: finished {_when(last.get('completedAt'), now)}; cut "
            f"{text.count(last.get('partitionsCut'))} of "
            f"{_partitions(last.get('partitionsPlanned'))}, deleted "
            f"{text.count(last.get('recordsDeleted'))} records "
            f"({text.size(last.get('bytesReclaimedEstimate'))}); "
            f"{text.count(status.get('recordsDeletedTotal'))} in total"
        )
        if last.get("error"):
            lines.append(f"  what went wrong: {last['error']}")
        for lost in last.get("unconsumedDeleted") or []:
            lines.append(
                f"  deleted before group {lost.get('group')} read them: "
                f"{text.count(lost.get('records'))} records of {lost.get('topic')}"
            )
    else:
        lines.append("Last run: none yet")
    lines.append(f"Next run: {_when(status.get('nextRunAt'), now)}")
    topics = status.get("topics") or []
    lines.append("")
    if not topics:
        lines.append("Topics: none reported yet")
    else:
        lines.append("Topics:")
        for topic in topics:
            lines += _topic_lines(topic, spec, namespace)
    return "\n".join(lines) + "\n"


def _topic_lines(topic: Mapping[str, Any], spec: Mapping[str, Any], namespace: str) -> list[str]:
    name = topic.get("name")
    note = str(topic.get("note") or "")
    cut = topic.get("cut") or {}
    held = topic.get("heldBackBy") or []
    # Who held the cut back is said from heldBackBy, which names them; the peer guards in
    # cut.limits are the same holders, said again.
    found = [
        limit for limit in cut.get("limits") or [] if not (held and limit.get("guard") == "peer")
    ]
    limited = [guard_sentence(limit, spec) for limit in found]
    limited += [holder_sentence(h, namespace) for h in held]
    unplanned = note.startswith(("skipped:", "not cut:")) and not topic.get("partitions")
    if unplanned:
        why = note.split(":", 1)[1].strip()
        if not limited and "compact" in why:
            # An operator from before status.topics[].cut: the note alone says why.
            limited = [_GUARDS["compacted"].format(on="")]
        lines = [f"  {name}: not planned ({why})"]
    else:
        lines = [
            f"  {name} ({_partitions(topic.get('partitions'))}): deleted "
            f"{text.count(topic.get('recordsDeletedLastRun'))} records last run, "
            f"{text.count(topic.get('recordsDeletedTotal'))} in total"
        ]
    rule = str(cut.get("rule") or "none")
    if cut and not unplanned:
        proposal = f"    proposed: {_RULES.get(rule, rule)}"
        if cut.get("proposed"):
            proposal += f": {cut['proposed']}"
        lines.append(proposal)
        moved = cut.get("partitionsCut")
        if moved is not None:
            verb = "would move" if spec.get("dryRun") else "moved"
            lines.append(f"    cut: {verb} the log start on {_partitions(moved)}")
    if limited:
        lines.append("    limited by:")
        lines += [f"      - {sentence}" for sentence in limited]
    elif cut and rule != "none":
        lines.append("    limited by: nothing, the proposed cut applied")
    if note and not unplanned:
        lines.append(f"    note: {note}")
    if topic.get("logStartLag"):
        lines.append(
            f"    {text.count(topic['logStartLag'])} records are read by every group and "
            "still kept (between the log start and the slowest group)"
        )
    return lines


def _purge_asks(spec: Mapping[str, Any]) -> list[str]:
    out = []
    for p in spec.get("partitions") or []:
        offset = p.get("offset")
        where = "the high watermark" if offset == -1 else f"offset {offset}"
        out.append(f"{p.get('topic')}-{p.get('partition')} below {where}")
    for t in spec.get("topics") or []:
        before = t.get("before") or {}
        if before.get("timestamp"):
            rule = f"records before {before['timestamp']}"
        elif before.get("committedBy"):
            rule = f"records {', '.join(before['committedBy'])} have all committed"
        else:
            rule = "every record (to the high watermark)"
        out.append(f"topic {t.get('name')}: {rule}")
    return out


def entry_sentence(entry: Mapping[str, Any]) -> str:
    """One partition of a purge (a result or plan entry) in words."""
    state = str(entry.get("state") or "?")
    where = f"{entry.get('topic')}-{entry.get('partition')}"
    if entry.get("partition") == -1:
        where = f"{entry.get('topic') or 'the rest'} (every partition)"
    parts = [f"{where}: {state}"]
    offset = entry.get("requestedOffset")
    if offset is not None:
        verb = {"DryRun": "would cut", "Planned": "will cut", "Retrying": "will cut"}
        reason = f" ({entry['reason']})" if entry.get("reason") else ""
        parts.append(f"{verb.get(state, 'cut')} below offset {offset}{reason}")
    if entry.get("note"):
        parts.append(str(entry["note"]))
    start, high = entry.get("logStartBefore"), entry.get("highWatermark")
    if start is not None and high is not None:
        parts.append(f"log start {start}, high watermark {high} when planned")
    if state == "DryRun":
        parts.append(
            f"{text.count(entry.get('recordsToDelete'))} records "
            f"({text.size(entry.get('bytesToDeleteEstimate'))}) would go"
        )
    elif entry.get("recordsDeleted") is not None:
        after = entry.get("lowWatermark")
        parts.append(
            f"{text.count(entry.get('recordsDeleted'))} records deleted"
            + (f", log start now {after}" if after is not None else "")
        )
    elif entry.get("recordsToDelete") is not None:
        parts.append(f"{text.count(entry.get('recordsToDelete'))} records to delete")
    if entry.get("error"):
        parts.append(f"error: {entry['error']}")
    return "; ".join(parts)


def render_purge(
    obj: Mapping[str, Any],
    entries: Sequence[Mapping[str, Any]] | None = None,
    limit: int = 200,
    now: datetime | None = None,
) -> str:
    """A RecordPurge in words: what it asks, its phase and conditions (failing first), then
    per partition the cut planned, the reason, what lowered it and what became of it.
    `entries`: every partition (from the results or plan ConfigMaps) when status holds
    them folded per topic; at most `limit` are written out."""
    now = now or datetime.now(UTC)
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    phase = status.get("phase") or "Pending (not picked up yet)"
    lines = [f"RecordPurge {meta.get('namespace')}/{meta.get('name')}: {phase}"]
    if spec.get("dryRun"):
        lines[0] += " (dry run: nothing is deleted)"
    lines.append(f"  cluster: {_cluster_words(spec)}")
    asks = _purge_asks(spec)
    lines.append(f"  asks to delete: {'; '.join(asks) or 'nothing'}")
    if spec.get("protectGroups"):
        lines.append(
            f"  protects: {', '.join(spec['protectGroups'])} (no cut passes their commits)"
        )
    for group in status.get("groups") or []:
        if group.get("type") == "none":
            lines.append(f"  group {group.get('name')} does not exist: it protects every partition")
    if status.get("startedAt"):
        lines.append(f"  started {_when(status['startedAt'], now)}")
    if status.get("completedAt"):
        lines.append(f"  completed {_when(status['completedAt'], now)}")
    lines.append("")
    lines += _conditions_block(status)
    summary = status.get("summary") or {}
    if summary:
        lines.append("")
        words = (
            f"Summary: {_partitions(summary.get('partitions'))}, "
            f"{text.count(summary.get('purged'))} purged, "
            f"{text.count(summary.get('failed'))} failed, "
            f"{text.count(summary.get('recordsDeleted'))} records deleted"
        )
        if summary.get("recordsToDelete") is not None:
            words += (
                f"; the plan would delete {text.count(summary['recordsToDelete'])} records "
                f"({text.size(summary.get('bytesToDeleteEstimate'))})"
            )
        lines.append(words)
    shown = list(entries if entries is not None else status.get("results") or [])
    if shown:
        lines.append("")
        lines.append("Partitions:")
        lines += [f"  {entry_sentence(e)}" for e in shown[:limit]]
        if len(shown) > limit:
            lines.append(f"  ... and {len(shown) - limit:,} more partitions")
    return "\n".join(lines) + "\n"
