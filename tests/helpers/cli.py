"""The project's command line, `kafka-retention`, run as users run it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def kafka_retention(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """One run of the installed `kafka-retention` command (beside this Python)."""
    exe = Path(sys.executable).with_name("kafka-retention")
    return subprocess.run(
        [str(exe), *args], capture_output=True, text=True, check=False, timeout=timeout
    )


def policy_file(path: Path, bootstrap: str, topic: str, rule: str) -> Path:
    """A RetentionPolicy file for `plan -f`: `topic` on the cluster at `bootstrap`, with
    one rule (a line of YAML under spec)."""
    path.write_text(f"""
apiVersion: kafka-retention.io/v1alpha1
kind: RetentionPolicy
metadata: {{name: p}}
spec:
  cluster: {{bootstrapServers: "{bootstrap}"}}
  topics: {{names: [{topic}]}}
  {rule}
""")
    return path
