// Package bench measures plimsoll's sync against `kubectl apply
// --server-side` on the local control plane and writes bench/results.md.
// It is built only with the bench build tag; run it with `make bench`.
package bench
