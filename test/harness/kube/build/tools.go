//go:build tools

// Package tools pins the control-plane commands that the harness builds: the Kubernetes
// commands with `go build k8s.io/kubernetes/cmd/<name>`, and etcd with
// `go build go.etcd.io/etcd/server/v3` at the version Kubernetes itself requires.
package tools

import (
	_ "go.etcd.io/etcd/server/v3/etcdmain"
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	_ "k8s.io/kubernetes/cmd/kube-scheduler/app"
)
