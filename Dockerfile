# Multi-stage build of the KICK manager: a static binary on a distroless,
# non-root base image.
FROM golang:1.27 AS build
ENV GOTOOLCHAIN=go1.27.3 CGO_ENABLED=0
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN go build -trimpath -ldflags "-s -w" -o /out/kick-manager ./cmd/kick-manager

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/kick-manager /kick-manager
USER 65532:65532
ENTRYPOINT ["/kick-manager"]
