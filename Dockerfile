# Multi-stage build of the `broker` and `compactor` binaries for docker-compose.yml.
# Build stage: the workspace as checked in (Cargo.lock pinned); runtime stage: Debian slim with
# only the two binaries and CA certificates (for S3 over TLS).
FROM rust:1.85-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p broker -p compactor \
 && install -D target/release/broker /out/broker \
 && install -D target/release/compactor /out/compactor

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /data kafka \
 && mkdir -p /data && chown kafka /data
COPY --from=build /out/broker /out/compactor /usr/local/bin/
USER kafka
WORKDIR /data
ENV RUST_LOG=info
EXPOSE 9092
ENTRYPOINT ["broker"]
