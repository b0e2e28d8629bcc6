//go:build tools

// Package tools records the upstream etcd server that
// scripts/control-plane.sh builds, so that go mod tidy pins its dependencies.
package tools

import _ "go.etcd.io/etcd/server/v3"
