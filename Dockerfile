# Multi-stage build of the KICK manager: a static binary on a distroless,
# non-root base image.
FROM golang:1.27 AS build
ENV GOTOOLCHAIN=go1.27.3 CGO_ENABLED=0
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The version both builds report (--version, logs, traces); `make image`
# passes the same VERSION as `make build` and `make dist`.
ARG VERSION=dev
# Two builds of the manager: kick-manager leaves the Argo CD integration out
# and hands over to kick-manager-argocd (installed next to it) on clusters
# that serve Argo CD.
# grpcnotrace keeps gRPC's x/net/trace (and with it every method) out.
RUN go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -tags noargocd,grpcnotrace -o /out/kick-manager ./cmd/kick-manager && \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -tags grpcnotrace -o /out/kick-manager-argocd ./cmd/kick-manager

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/kick-manager /out/kick-manager-argocd /
USER 65532:65532
ENTRYPOINT ["/kick-manager"]
