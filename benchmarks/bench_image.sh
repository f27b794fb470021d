#!/usr/bin/env bash
# Benchmark of the grading image beside this machine (prints figures; root, Podman as
# scripts/test-image.sh sets it up): the full reference graded here and in the image at the same time,
# each with its own lease folder, ROUNDS rounds (default 20), then FEW_UID_ROUNDS (default 0) with both
# sides drawing from 12 uids; each round's two scores and seconds. Exit 1 names any round short of 100.
#   benchmarks/bench_image.sh [ROUNDS [FEW_UID_ROUNDS]]
exec "$(dirname "$0")/../scripts/test-image.sh" --side-by-side "${1:-20}" "${2:-0}"
