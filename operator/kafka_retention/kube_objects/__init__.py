"""Pure builders of the Kubernetes objects the operator and its Spark runs write."""
