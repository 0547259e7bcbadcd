// Package image tests the container image and its build. The tests of the
// build's inputs (every package the binary imports is in what the build
// copies; the Dockerfile copies that whole; the chart names the image a
// release builds) run with the unit tests. The tests of a built image run
// with the build tag image, after hack/image has built it (make
// test-image): they need root and buildah, which hack/image installs.
package image
