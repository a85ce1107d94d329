//go:build tools

// Package tools pins the binaries this module builds: the parts of a node (kubelet) and
// of the control plane beside kube-apiserver (kube-scheduler, kube-controller-manager).
// The build tag keeps it out of any real compilation while `go mod tidy` still records
// their dependencies.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
