# syntax=docker/dockerfile:1
# Gantry's image: one image for every role (gantry controller run, gantry agent run, gantry server, ...).
#   docker build -t ghcr.io/gantry-dev/gantry:0.1.0 .
# It is the image `npm run image` builds without a container engine (scripts/image/): the same Debian packages,
# Python env, tools, Node.js, user, environment, entrypoint and labels. test/e2e/image.test.ts holds this file to that
# build's versions and configuration; change both together. See docs/image.md.

ARG DEBIAN_SUITE=bookworm
# The version of the repository's `node` package (package-lock.json), which the daemonless build takes Node from.
ARG NODE_VERSION=24.21.0
ARG GO_VERSION=1.26

# Gantry's npm package: `npm pack` builds it (lib/ bundled from src/ with Rolldown, web/dist with Vite; see scripts/package/), and it
# is installed as a user installs it, with its production dependencies, into a prefix the last stage copies to /usr/local.
FROM node:${NODE_VERSION}-${DEBIAN_SUITE}-slim AS package
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
# Install scripts do not run: the native dependencies ship prebuilt binaries (scripts/image/layers.ts says why).
RUN npm pack --pack-destination /tmp \
 && npm install --global --prefix=/opt/app/usr/local --omit=dev --ignore-scripts --no-audit --no-fund --no-update-notifier /tmp/gantry-*.tgz

# helm, kustomize and sops from their Go modules at the versions of scripts/setup/tools.ts, built as
# scripts/setup/go-build.ts builds them: CGO off (static binaries), -trimpath, stripped.
FROM golang:${GO_VERSION}-${DEBIAN_SUITE} AS tools
ARG HELM_VERSION=v4.2.2
ARG KUSTOMIZE_VERSION=v5.8.2
ARG SOPS_VERSION=v3.13.3
ENV CGO_ENABLED=0 GOTOOLCHAIN=local GOBIN=/out
RUN go install -trimpath -ldflags="-s -w" "sigs.k8s.io/kustomize/kustomize/v5@${KUSTOMIZE_VERSION}" \
 && go install -trimpath -ldflags="-s -w" "github.com/getsops/sops/v3/cmd/sops@${SOPS_VERSION}"
# Helm's release Makefile stamps its version (tools.ts: helmStamps).
RUN go install -trimpath \
      -ldflags="-s -w -X helm.sh/helm/v4/internal/version.version=${HELM_VERSION} -X helm.sh/helm/v4/internal/version.gitTreeState=clean" \
      "helm.sh/helm/v4/cmd/helm@${HELM_VERSION}"

FROM debian:${DEBIAN_SUITE}-slim
# scripts/image/root-fs.ts: DEBIAN_PACKAGES.
ARG DEBIAN_PACKAGES="ca-certificates git gpg gpg-agent openssh-client python3 python3-venv"
# The package version (package.json), which the image is tagged with.
ARG GANTRY_VERSION=0.1.0
# With the day's updates, as mmdebstrap installs from bookworm, bookworm-updates and bookworm-security.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get upgrade -y \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${DEBIAN_PACKAGES} \
 && rm -rf /var/lib/apt/lists/*
# The pinned Jinja2 packages in a virtualenv (GANTRY_PYTHON); pip and setuptools go, nothing installs at runtime.
# --no-log-init: lastlog would otherwise grow a sparse file of uid x 292 bytes.
COPY src/template/requirements.txt /tmp/requirements.txt
RUN python3 -m venv /opt/gantry/python \
 && /opt/gantry/python/bin/python3 -m pip --no-input --disable-pip-version-check --no-cache-dir install --requirement=/tmp/requirements.txt \
 && /opt/gantry/python/bin/python3 -m pip --no-input --disable-pip-version-check --no-cache-dir uninstall --yes pip setuptools \
 && rm /tmp/requirements.txt \
 && groupadd --gid 65532 gantry \
 && useradd --no-log-init --uid 65532 --gid 65532 --home-dir /tmp --no-create-home --shell /usr/sbin/nologin gantry
COPY --from=tools /out/helm /out/kustomize /out/sops /usr/local/bin/
COPY --from=package /usr/local/bin/node /usr/local/bin/node
COPY --from=package /opt/app/usr/local/ /usr/local/
# scripts/image/config.ts: Gantry writes nowhere but /tmp, so the root file system can be read-only.
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/tmp \
    GANTRY_CACHE_DIR=/tmp/gantry-cache \
    GANTRY_PYTHON=/opt/gantry/python/bin/python3
LABEL org.opencontainers.image.title="Gantry" \
      org.opencontainers.image.description="GitOps continuous delivery for Kubernetes: Kluctl-compatible engine, controller and fleet control plane" \
      org.opencontainers.image.version="${GANTRY_VERSION}" \
      org.opencontainers.image.source="https://github.com/gantry-dev/gantry" \
      org.opencontainers.image.licenses="Apache-2.0"
USER 65532:65532
ENTRYPOINT ["gantry"]
CMD ["--help"]
