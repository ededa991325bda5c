# The stackgen image: the self-contained binary on a minimal glibc base, run as non-root.
#   npm run build && docker build -t stackgen .
#   docker run -p 3456:3456 -p 3654:3654 stackgen
# The binary needs only glibc (libc, libm, libpthread, libdl, ld-linux). BASE_IMAGE can be any
# image providing those plus a non-root user 65532 (e.g. one built offline with `docker import`).
# The binary is the one of the image's platform (buildx sets TARGETARCH; the classic builder
# takes the default, amd64): `docker buildx build --platform linux/amd64,linux/arm64` makes both.
ARG BASE_IMAGE=gcr.io/distroless/cc-debian12:nonroot
ARG TARGETARCH=amd64

# Bun names its targets x64 and arm64, Docker amd64 and arm64: one stage per platform, picked below.
FROM scratch AS binary-amd64
COPY dist/stackgen-linux-x64 /stackgen
FROM scratch AS binary-arm64
COPY dist/stackgen-linux-arm64 /stackgen
FROM binary-${TARGETARCH} AS binary

FROM ${BASE_IMAGE}

LABEL org.opencontainers.image.title="stackgen" \
      org.opencontainers.image.description="Validate, generate, deploy, update and back up self-hosted container stacks" \
      org.opencontainers.image.licenses="MIT"

# dist/ is built by `npm run build`; the file keeps its 0755 mode.
COPY --from=binary /stackgen /usr/local/bin/stackgen

# Listen on every interface inside the container; publish the ports to choose who can reach them.
ENV HOST=0.0.0.0 \
    PORT=3456 \
    UI_PORT=3654 \
    NO_COLOR=1

USER 65532:65532
WORKDIR /home/nonroot
EXPOSE 3456 3654

# No shell or curl in the image: the binary probes its own /v1/health (honours PORT and HOST).
HEALTHCHECK --interval=30s --timeout=5s --start-period=5s --retries=3 \
  CMD ["/usr/local/bin/stackgen", "healthcheck"]

ENTRYPOINT ["/usr/local/bin/stackgen"]
CMD ["serve"]
