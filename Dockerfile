# medmmv: the MedMMV clinical-reasoning service (`medmmv serve`).
#   docker build -t medmmv .
#   docker run --read-only -p 8787:8787 -v medmmv-data:/data \
#     -e MEDMMV_API_KEYS="$(openssl rand -base64 32)" -e OPENAI_BASE_URL=http://host.docker.internal:8000/v1 \
#     -e MEDMMV_MODEL=Qwen2.5-VL-7B-Instruct medmmv
# (No `# syntax=` line: BuildKit would fetch that frontend image from a registry, which an
# offline or mirrored build cannot. Nothing here needs more than the builder's own frontend.)
# `npm run image:check` builds this image and checks it (docs/testing.md#the-docker-image).

# Node 24, the active LTS (supported to April 2028); Node 20 reached its end of life in April 2026.
ARG NODE_IMAGE=node:24-slim

# --- build stage: production dependencies, with a toolchain in case better-sqlite3 has to compile ---
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund \
 && npm cache clean --force

# --- runtime stage: no compilers, no dev dependencies, not root ---
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8787 \
    MEDMMV_DATA_DIR=/data
WORKDIR /app
COPY --from=deps --chown=root:root /app/node_modules ./node_modules
COPY --chown=root:root package.json package-lock.json ./
COPY --chown=root:root bin ./bin
COPY --chown=root:root src ./src
COPY --chown=root:root prompts ./prompts
COPY --chown=root:root pathways ./pathways
# For `docker run --rm --read-only -v medmmv-data:/data medmmv demo --out /data/out/demo-result.json`:
# the three bundled cases against the scripted servers in src/scripted (the output goes under
# /data, the only writable directory; serve --demo is loopback-only, so not for a container).
COPY --chown=root:root examples ./examples
# The CLI's bundle (bin/cli-bundle.mjs), built here, as root, while node_modules can still be
# written: every command, `serve` included, then starts from plain JavaScript, with no tsx
# and no writes (a read-only root filesystem: `docker run --read-only`, Kubernetes
# readOnlyRootFilesystem). `--version` builds it and proves it starts; the check below fails
# the build if it was not made.
RUN node bin/medmmv.js --version \
 && ls node_modules/.cache/medmmv-cli/*/main.js >/dev/null
# The application files stay owned by root (read-only to the service); only /data is writable,
# by the image's user and by group 0, so a platform that runs the image under an arbitrary uid
# in group 0 (OpenShift's restricted SCC) can write it too (docs/operations.md#docker).
RUN mkdir -p /data \
 && chown node:0 /data \
 && chmod g=u /data
VOLUME ["/data"]
USER node
EXPOSE 8787
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||8787)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
# Node handles SIGTERM itself (graceful shutdown: in-flight cases stay checkpointed and resume on the next start).
ENTRYPOINT ["node", "/app/bin/medmmv.js"]
CMD ["serve"]
