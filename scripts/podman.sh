# Podman for this machine, shared by scripts/test-image.sh and scripts/test-otter-grade.sh: sourced as
# root from the kit's folder, after they set `state` (.optlab-podman, git-ignored) and `base`
# (localhost/optlab-base:bookworm) and define `say MESSAGE` and `step NAME COMMAND...`. It installs
# podman, runc and debootstrap where missing, writes $state/containers.conf (runc, ulimits within this
# shell's hard limits) and exports CONTAINERS_CONF (the machine's configuration is left alone), then
# makes the FROM image $base with debootstrap where it is missing (kept between runs).
install_tools() {
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -qq && apt-get install -y -qq podman runc debootstrap; } >"$state/apt.log" 2>&1
}
mkdir -p "$state"
runs() { "$1" --version >/dev/null 2>&1; }
if ! runs podman || ! runs runc || ! runs debootstrap; then
  start=$SECONDS
  if ! command -v apt-get >/dev/null; then
    say "Podman cannot be installed on this machine (no apt-get): install podman, runc and debootstrap"
    exit 1
  fi
  if ! install_tools; then
    say "Podman cannot be installed on this machine (apt-get install podman runc debootstrap failed: $state/apt.log)"
    exit 1
  fi
  say "install podman, runc, debootstrap: $((SECONDS - start)) s"
fi

# Podman's configuration for this run only: the machine's containers.conf is read, then this one.
hard() { local limit; limit=$(ulimit -H "$1"); [ "$limit" = unlimited ] && limit=$2; echo $((limit < $2 ? limit : $2)); }
nofile=$(hard -n 20000)
nproc=$(hard -u 32768)
cat >"$state/containers.conf" <<EOF
# Written by scripts/test-image.sh for this machine; the machine's own configuration is left alone.
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]

[engine]
runtime = "runc"
EOF
export CONTAINERS_CONF=$state/containers.conf

mirror() {  # the Debian archive this machine's apt uses (deb822 URIs or a one-line deb entry)
  local uri
  uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null \
    | sed -n -E 's,^(URIs:|deb)[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+/debian/?)([[:space:]].*)?$,\3,p' | head -n 1)
  echo "${uri:-http://deb.debian.org/debian}"
}
make_base() {
  local root=$state/rootfs
  rm -rf "$root"
  debootstrap --variant=minbase bookworm "$root" "$(mirror)" >"$state/debootstrap.log" 2>&1 \
    || { say "debootstrap failed: $state/debootstrap.log"; return 1; }
  # This machine's CA bundle (it may hold a proxy's CA), where the image's ca-certificates package, which
  # python3.11 pulls in, does not regenerate it.
  local changes=(--change 'CMD ["/bin/bash"]')
  if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
    mkdir -p "$root/etc/ssl"
    cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/host-ca-certificates.crt"
    changes+=(--change 'ENV PIP_CERT=/etc/ssl/host-ca-certificates.crt')
  fi
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  # An index or proxy this machine's pip reaches over the network goes into the base's environment too
  # (a file:// index or local wheels are this machine's disk, not the build's).
  local name key value
  for name in PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_TRUSTED_HOST PIP_PROXY; do
    key=$(echo "${name#PIP_}" | tr '[:upper:]_' '[:lower:]-')
    value=${!name:-$(python3 -m pip config get "global.$key" 2>/dev/null || true)}
    value=$(echo "$value" | tr ' ' '\n' | grep -v -E '^(file:|/)' | paste -sd ' ' || true)
    if [ -n "$value" ]; then changes+=(--change "ENV $name=$value"); fi
  done
  tar -C "$root" -c . | podman import --quiet "${changes[@]}" - "$base" >/dev/null
  rm -rf "$root"
}
if podman image exists "$base"; then
  say "base $base: present"
else
  step "base $base (debootstrap from $(mirror), podman import)" make_base
fi
