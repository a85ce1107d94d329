"""What the test modules share: one concept a module (records, offsets, commits, topics,
the Kubernetes objects, policies, purges, ...). Test modules import from here and never
from one another; fixtures stay in the conftest.py files."""
