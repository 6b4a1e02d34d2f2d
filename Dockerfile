# syntax=docker/dockerfile:1
#
# statuswatch container image.
#
#   docker build -t statuswatch:0.1.0 .
#   docker run --rm -p 8080:8080 -e REDIS_URL=redis://host:6379 \
#     -v "$PWD/config/statuswatch.yaml:/etc/statuswatch/statuswatch.yaml:ro" statuswatch:0.1.0
#   docker run --rm -v ...:/etc/statuswatch/statuswatch.yaml:ro statuswatch:0.1.0 check-config --offline
#
# Stages: build (all dependencies, tsc → dist/), deps (production dependencies only), runtime.
# The Node major lives in one ARG so CI can read it (grep '^ARG NODE_MAJOR=' Dockerfile) and bump it.
# For reproducible builds, pin the base image by digest (node:26-slim@sha256:...).

ARG NODE_MAJOR=26

# ---- build: compile TypeScript -------------------------------------------------------------
FROM node:${NODE_MAJOR}-slim AS build
WORKDIR /app
# Manifests first, so the dependency layer is reused while only sources change.
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/bundle.mjs ./scripts/
COPY src ./src
# tsc → dist/, then the Lua scripts (src/redis/scripts/*.lua → dist/redis/scripts/), then the
# bundle (scripts/bundle.mjs: dist/cli.js and dist/thread.js, what the daemon runs). The bench
# (src/bench, tooling) is not in the build context (.dockerignore) nor in tsconfig.build.json.
RUN npm run build

# ---- deps: production dependencies only ----------------------------------------------------
FROM node:${NODE_MAJOR}-slim AS deps
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund \
  && npm cache clean --force

# ---- runtime -------------------------------------------------------------------------------
FROM node:${NODE_MAJOR}-slim AS runtime
ENV NODE_ENV=production
# Where the Helm chart mounts the config; --config overrides it.
ENV STATUSWATCH_CONFIG=/etc/statuswatch/statuswatch.yaml
WORKDIR /app
# Everything is owned by root and only readable by the app user: the process cannot modify its
# own code. In Kubernetes the root filesystem is also read-only (the chart mounts /tmp).
COPY package.json package-lock.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY config ./config
# uid/gid 1000 is the image's `node` user. Numeric, so Kubernetes' runAsNonRoot can verify it.
USER 1000:1000
# Ops server (config server.port): /healthz, /readyz, /metrics and the admin API.
EXPOSE 8080
# Exec form: node is PID 1 and receives SIGTERM directly (no shell, no npm in between). Node
# installs no default SIGTERM handler, so a PID 1 node would ignore it; statuswatch handles
# SIGTERM/SIGINT itself (drains pollers and deliveries, closes Redis, exits). It spawns no child
# processes, so there are no zombies to reap and no init (tini, docker run --init) is needed.
# No HEALTHCHECK: Kubernetes probes /healthz and /readyz (see helm/statuswatch).
# No Node.js flags: the daemon sets its own heap settings (src/runtime/daemon.ts: the upstream
# thread's small young generation, the heap's growth step), so the image runs it exactly as a
# plain `node dist/cli.js run` does (docs/performance.md).
ENTRYPOINT ["node", "dist/cli.js"]
CMD ["run"]
