#!/usr/bin/env bash
# Regenerates the golden outputs of tests/golden/ from a build: tests/golden/update.sh [BUILD_DIR]
# (default: build). Review the diff (git diff tests/golden) before committing it.
set -euo pipefail
build="${1:-build}"
cmake --build "$build" --target stepsim golden_tests -j2
STEPSIM_GOLDEN_UPDATE=1 "$build/tests/golden/golden_tests"
