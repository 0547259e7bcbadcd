# syntax=docker/dockerfile:1
# The plimsoll image: the static binary, CA certificates and a nonroot
# user on an empty base; no shell, no package manager. What the build
# copies is what .dockerignore lets in (one list, checked by test/image).
#
#   docker build --build-arg VERSION=$(git describe --tags --always) \
#                --build-arg COMMIT=$(git rev-parse HEAD) -t plimsoll .
#
# Without a Docker engine, `make image` (hack/image) builds this same file
# with buildah: it runs the rootfs stage's script on the machine and hands
# its output to the last stage as the build context named rootfs.

FROM golang:1.26 AS rootfs
WORKDIR /src
# Modules first, so that a source change does not fetch them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
RUN VERSION=${VERSION} COMMIT=${COMMIT} hack/image rootfs /rootfs

FROM scratch
ARG VERSION=dev
ARG COMMIT=unknown
ARG SOURCE=https://github.com/plimsoll/plimsoll
COPY --from=rootfs /rootfs/ /
LABEL org.opencontainers.image.title="plimsoll" \
      org.opencontainers.image.description="GitOps daemon with an embedded rollout controller" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}" \
      org.opencontainers.image.source="${SOURCE}"
# 65532 is the nonroot user of /etc/passwd; the chart runs it with a
# read-only root filesystem and the Git cache on an emptyDir.
USER 65532:65532
ENTRYPOINT ["/plimsoll"]
CMD ["run"]
