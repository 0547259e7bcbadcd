# syntax=docker/dockerfile:1
# The plimsoll image: a static binary on a distroless base, run as non-root.
#
#   docker build --build-arg VERSION=$(git describe --tags --always) \
#                --build-arg COMMIT=$(git rev-parse HEAD) -t plimsoll .

FROM golang:1.26 AS build
WORKDIR /src
# Modules first, so that a source change does not fetch them again.
COPY go.mod go.sum ./
RUN go mod download
COPY cmd/ cmd/
COPY rollout/ rollout/
COPY strategies/ strategies/
COPY sync/ sync/
ARG VERSION=dev
ARG COMMIT=unknown
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" \
      -o /out/plimsoll ./cmd/plimsoll

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/plimsoll /plimsoll
# 65532 is distroless's nonroot user; the chart runs it with a read-only
# root filesystem and the Git cache on an emptyDir.
USER 65532:65532
ENTRYPOINT ["/plimsoll"]
CMD ["run"]
