//go:build tools

// Package tools pins the binaries this module builds; the build tag keeps it out
// of any real compilation while `go mod tidy` still records their dependencies.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
