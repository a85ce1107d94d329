//go:build tools

// Package tools pins the helm command this module builds; the build tag keeps it out of
// any real compilation while `go mod tidy` still records its dependencies.
package tools

import (
	_ "helm.sh/helm/v4/cmd/helm"
)
