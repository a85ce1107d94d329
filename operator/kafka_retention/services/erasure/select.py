"""Which topics an erasure scans: the named ones and those its pattern matches, within
what the binding grants, each with its partitions and how Kafka cleans it."""

from __future__ import annotations

from dataclasses import dataclass, field

from kafka_retention.core.bindings import Grant
from kafka_retention.core.erasure import ErasureRequest
from kafka_retention.core.erasure_deadlines import Cleaning
from kafka_retention.core.failures import KafkaFailure
from kafka_retention.core.policy_spec import TopicSelector
from kafka_retention.services.ports import ErasureKafka

# The error Kafka answers for a topic it does not have (adapters.kafka.topic_partitions).
UNKNOWN_TOPIC = "UNKNOWN_TOPIC_OR_PARTITION"


@dataclass
class Selection:
    partitions: dict[str, list[int]] = field(default_factory=dict)
    cleaning: dict[str, Cleaning] = field(default_factory=dict)
    # topic -> why it cannot be scanned now (a failure that may pass, a config unreadable)
    problems: dict[str, str] = field(default_factory=dict)
    # topics that do not exist (Kafka says so, not a failure to ask)
    missing: list[str] = field(default_factory=list)


def select_topics(kafka: ErasureKafka, request: ErasureRequest, grant: Grant | None) -> Selection:
    allow, protect = (grant.allow, grant.all_protect) if grant is not None else ((), ())
    selector = TopicSelector(request.names, request.pattern, allow=allow, protect=protect)
    # The topic list is read only for a pattern: names are taken as given (and a
    # missing one is a problem, not a silent skip).
    chosen = selector.select(kafka.topic_names() if request.pattern else [])
    # The grant's own word on each (an empty allow grants nothing; internal topics never):
    # the selector alone would take every topic when allow is empty.
    return cleaning_of(kafka, [t for t in chosen if topic_refusal(grant, t) is None])


def topic_refusal(grant: Grant | None, topic: str) -> str | None:
    """Why the erasure may not scan or write `topic` (None: it may). Without a grant (no
    tenancy, or a cluster named inline under open tenancy) only internal topics are out."""
    if grant is not None:
        return grant.topic_refusal(topic)
    if topic.startswith("__"):
        return f"topic {topic} is internal"
    return None


def cleaning_of(kafka: ErasureKafka, topics: list[str]) -> Selection:
    """The topics' partitions and cleaning, read now (a later run reads them again: the
    kind decides whether a tombstone may be written, so it is never taken from status)."""
    out = Selection()
    if not topics:
        return out
    configs = kafka.topic_configs(topics)
    for topic, parts in kafka.topic_partitions(topics).items():
        config = configs.get(topic)
        if isinstance(parts, KafkaFailure) and parts.code == UNKNOWN_TOPIC:
            out.missing.append(topic)
        elif isinstance(parts, KafkaFailure):
            out.problems[topic] = f"topic {topic}: {parts}"
        elif config is None or isinstance(config, KafkaFailure):
            out.problems[topic] = f"topic {topic}: config unreadable ({config})"
        else:
            out.partitions[topic] = sorted(parts)
            out.cleaning[topic] = Cleaning.from_config(config, topic=topic)
    return out
