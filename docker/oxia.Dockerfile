# The Oxia server our tests run (scripts/install-oxia.sh): upstream oxiad at the Oxia v0.15.0
# commit, gRPC API io.oxia.proto.v1, built from the same pinned module (scripts/oxia-wrapper) so
# the compose cluster and the test suite speak the same protocol. Build context: scripts/oxia-wrapper.
FROM golang:1.25-bookworm AS build
WORKDIR /src
COPY go.mod go.sum main.go ./
RUN go build -mod=readonly -buildvcs=false -trimpath -o /out/oxia .

FROM debian:bookworm-slim
COPY --from=build /out/oxia /usr/local/bin/oxia
RUN useradd --system --uid 10002 --home-dir /data oxia && mkdir -p /data && chown oxia /data
USER oxia
WORKDIR /data
EXPOSE 6648
ENTRYPOINT ["oxia"]
