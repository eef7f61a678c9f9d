#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Install every Debian package isthmus needs. Idempotent: a second run on a
# machine that has everything does nothing (no apt-get update either).
set -euo pipefail

PKGS=(
	build-essential pkg-config meson ninja-build python3 python3-pyelftools
	python3-dev python3-pytest python3-numpy python3-torch python3-sklearn python3-matplotlib
	clang llvm libclang-rt-14-dev clang-format
	dpdk dpdk-dev libdpdk-dev
	libbpf-dev bpftool libxdp-dev
	libglpk-dev glpk-utils
	libcriterion-dev
	libssl-dev libipsec-mb-dev
	libpcap-dev tshark gnuplot-nox
	iproute2 iputils-ping procps ethtool util-linux
	# tests/python/test_auth.py: an independent v2 tag (HKDF, AES-GCM)
	python3-cryptography
	# tests of the metrics endpoint: an independent OpenMetrics/text parser
	python3-prometheus-client
	# scripts/peers.sh (Open MPI peers), system tests under load
	openmpi-bin libopenmpi-dev stress-ng
	# train.py --model lm: the text it learns (fortunes: 2.4 MB of plain
	# English, free, stable across releases) and the Open MPI baseline
	fortunes python3-mpi4py
)

missing=()
for p in "${PKGS[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done

if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "deps.sh: need root to install: ${missing[*]}" >&2
	exit 1
fi

echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# tshark asks whether non-root users may capture; answer for it.
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
if ! apt-get update -qq >/tmp/isthmus-apt-update.log 2>&1; then
	cat /tmp/isthmus-apt-update.log >&2
	echo "deps.sh: apt-get update failed" >&2
	exit 1
fi
if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/tmp/isthmus-apt-install.log 2>&1; then
	tail -50 /tmp/isthmus-apt-install.log >&2
	echo "deps.sh: apt-get install failed (full log: /tmp/isthmus-apt-install.log)" >&2
	exit 1
fi
echo "deps.sh: done" >&2
