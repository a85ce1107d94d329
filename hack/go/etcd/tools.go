//go:build tools

// Package tools pins the etcd server binary this module builds.
package tools

import _ "go.etcd.io/etcd/server/v3"
