# syntax=docker/dockerfile:1

# medmmv: the MedMMV clinical-reasoning service (`medmmv serve`).
#   docker build -t medmmv .
#   docker run -p 8787:8787 -v medmmv-data:/data \
#     -e MEDMMV_API_KEYS="$(openssl rand -base64 32)" -e OPENAI_BASE_URL=http://host.docker.internal:8000/v1 \
#     -e MEDMMV_MODEL=Qwen2.5-VL-7B-Instruct medmmv

# --- build stage: production dependencies, with a toolchain in case better-sqlite3 has to compile ---
FROM node:20-slim AS deps
WORKDIR /app
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund \
 && npm cache clean --force

# --- runtime stage: no compilers, no dev dependencies, not root ---
FROM node:20-slim AS runtime
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
# For `docker run --rm -v medmmv-data:/data medmmv demo --out /data/out/demo-result.json`: the
# three bundled cases against the scripted servers in src/scripted (the output goes under /data,
# the only writable directory; serve --demo is loopback-only, so not for a container).
COPY --chown=root:root examples ./examples
# The application files stay owned by root (read-only to the service); only /data is writable.
RUN mkdir -p /data && chown node:node /data
VOLUME ["/data"]
USER node
EXPOSE 8787
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||8787)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
# Node handles SIGTERM itself (graceful shutdown: in-flight cases stay checkpointed and resume on the next start).
ENTRYPOINT ["node", "/app/bin/medmmv.js"]
CMD ["serve"]
