//go:build tools

// Package upstreame2e pins upstream Contour's e2e suites (built by ./install with -tags e2e from
// the module cache, never copied) and the test tools they need. It requires only the contour
// module, so contour's own go.mod decides the versions its tests are built with.
package upstreame2e

import (
	_ "github.com/onsi/ginkgo/v2"
	_ "github.com/projectcontour/contour/test/e2e"
)
