#!/usr/bin/env bash
# Coverage-guided fuzzing with cargo-fuzz (libFuzzer).
#
#   fuzz/run.sh SECONDS [TARGET...]   run each TARGET (default: every target) for SECONDS;
#                                     fails on the first crash, leak or timeout
#   fuzz/run.sh install               only install cargo-fuzz
#   RUNS=N fuzz/run.sh SECONDS ...    stop each target after N executions (or SECONDS,
#                                     whichever comes first), e.g. RUNS=10000000 for the
#                                     figures in BENCHMARKS.md
#
# cargo-fuzz is installed, pinned, into the user's cache
# (${XDG_CACHE_HOME:-~/.cache}/roundtrip/cargo-fuzz-VERSION), so a fresh clone (every CI run)
# reuses the build of an earlier one instead of compiling it again for minutes. The toolchain is
# stable; cargo-fuzz passes nightly-only flags (-Zsanitizer=address, sancov), which
# RUSTC_BOOTSTRAP=1 lets stable accept. Crashes and their inputs land in
# fuzz/artifacts/TARGET/; the corpus grows in fuzz/corpus/TARGET/ (both gitignored).
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO_FUZZ_VERSION=0.13.2
root="${XDG_CACHE_HOME:-$HOME/.cache}/roundtrip/cargo-fuzz-$CARGO_FUZZ_VERSION"
cargo_fuzz="$root/bin/cargo-fuzz"

install() {
  if [[ -x "$cargo_fuzz" ]] && "$cargo_fuzz" --version | grep -qF " $CARGO_FUZZ_VERSION"; then
    return 0
  fi
  echo "== installing cargo-fuzz $CARGO_FUZZ_VERSION into $root"
  cargo install --root "$root" --locked --version "=$CARGO_FUZZ_VERSION" cargo-fuzz
}

usage() {
  echo "usage: fuzz/run.sh SECONDS [TARGET...] | fuzz/run.sh install" >&2
  exit 2
}

[[ $# -ge 1 ]] || usage
install
[[ "$1" == install ]] && exit 0
seconds="$1"
shift
[[ "$seconds" =~ ^[0-9]+$ && "$seconds" -gt 0 ]] || usage

export RUSTC_BOOTSTRAP=1
cd fuzz
if [[ $# -eq 0 ]]; then
  mapfile -t targets < <("$cargo_fuzz" list)
else
  targets=("$@")
fi

for target in "${targets[@]}"; do
  echo "== fuzz $target for ${seconds}s"
  mkdir -p "corpus/$target"
  # Seeds committed beside the targets start the corpus where the interesting inputs are.
  seeds=()
  [[ -d "seeds/$target" ]] && seeds=("seeds/$target")
  "$cargo_fuzz" run "$target" "corpus/$target" "${seeds[@]}" -- \
    -max_total_time="$seconds" ${RUNS:+-runs="$RUNS"} -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1
done
