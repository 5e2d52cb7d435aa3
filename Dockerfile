# servesim in a distroless image, for sweeps on Kubernetes (docs/cluster/):
#
#   docker build -t servesim --build-arg VERSION=$(git describe --tags --always) .
#
# The binary is static (CGO_ENABLED=0), so the image holds it and nothing
# else: no shell, no libc, no package manager; it runs as an unprivileged
# user (distroless "nonroot", uid 65532).

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=devel
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-X main.version=${VERSION}" -o /out/servesim ./cmd/servesim

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/servesim /usr/local/bin/servesim
ENTRYPOINT ["/usr/local/bin/servesim"]
