# Multi-stage build of the `broker` and `compactor` binaries for docker-compose.yml.
# Build stage: the workspace as checked in (Cargo.lock pinned). The Rust image is at least the
# highest `rust-version` in Cargo.lock (crc-fast and uuid need 1.89), and the Oxia client's build
# script runs protoc (tonic-build), so protobuf-compiler is installed; tests/e2e/
# test_container_files.py fails when either falls behind the lock.
# Runtime stage: Debian slim with the two binaries, CA certificates (for S3 over TLS) and curl
# (for the /readyz healthchecks).
FROM rust:1.89-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends protobuf-compiler \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p broker -p compactor \
 && install -D target/release/broker /out/broker \
 && install -D target/release/compactor /out/compactor

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /data kafka \
 && mkdir -p /data && chown kafka /data
COPY --from=build /out/broker /out/compactor /usr/local/bin/
USER kafka
WORKDIR /data
ENV RUST_LOG=info
EXPOSE 9092 9644
ENTRYPOINT ["broker"]
