//go:build tools

// Package tools keeps the binaries gateway-conformance/run builds (echo-basic, kwok) in
// go.mod, so `go build` of them uses the pinned versions.
package tools

import (
	_ "sigs.k8s.io/gateway-api/conformance/echo-basic"
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
