#!/usr/bin/env bash
# Packs what a check on a lent GPU machine runs into .devbin/bins.tar.xz (git-ignored through
# .git/info/exclude): release builds of the CLI, the gpu and dispatch benches, examples/gpu_parity
# and every GPU test binary, stripped.
# That machine has no Rust toolchain, so everything it runs is built here (x86-64, like it).
#
#   scripts/device/pack.sh              # this checkout
#   NOTESTS=1 scripts/device/pack.sh    # the CLI and the benches only (no test binaries)
#   BASE=<rev> scripts/device/pack.sh   # also the gpu bench and the CLI of <rev>, as bench_gpu_old
#                                       # and yarnsim_old (baselines to time in the same call; built
#                                       # in a worktree under /tmp)
#   SCARF=fresh scripts/device/pack.sh  # relax the scarf again (below); SCARF=none: not at all
#
# The bench's relaxed scarf: relaxed here on the CPU (`yarnsim run scenes/scarf.toml --frames 0`,
# its whole relax.time, 8,101 steps: some 4-5 minutes on 2 cores) into .devbin/scarf_relaxed.bcc,
# which run.sh starts from instead of relaxing on the GPU (up to 300 s of the device's 15 minutes).
# Kept between packs (the state of a relaxed scarf, not of a build).
#
# Then run scripts/device/run.sh there (see its header), carrying .devbin and .gl.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
# In a worktree .git is a file: the exclude file is the main checkout's (git's common dir).
exclude=$(git rev-parse --git-path info/exclude)
grep -qx '/.devbin/' "$exclude" 2>/dev/null || echo '/.devbin/' >>"$exclude"
# Where cargo builds (CARGO_TARGET_DIR, if set): the test binaries' CARGO_BIN_EXE_yarnsim and
# CARGO_TARGET_TMPDIR lie under it, and run.sh recreates them there.
tgt=$(realpath -m "${CARGO_TARGET_DIR:-target}")
rm -rf .devbin/bin && mkdir -p .devbin/bin

# The executables cargo reports for a build, as "name path" lines.
executables() {
  python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        print(m["target"]["name"], m["executable"])
'
}

cargo build --release --bin yarnsim
cp "$tgt/release/yarnsim" .devbin/bin/yarnsim
if [ -z "${NOTESTS:-}" ]; then
  # Only the binaries packed below are built (cargo takes globs), not every test of the crate.
  cargo test --release --no-run --message-format=json --test 'gpu_*' --test relax \
    --test checkpoint | executables |
    while read -r name path; do
      case "$name" in gpu_* | relax | checkpoint) cp "$path" ".devbin/bin/$name" ;; esac
    done
fi
cargo build --release --example gpu_parity
cp "$tgt/release/examples/gpu_parity" .devbin/bin/example_gpu_parity
cargo bench --bench gpu --bench dispatch --no-run --message-format=json | executables |
  while read -r name path; do
    case "$name" in gpu | dispatch) cp "$path" ".devbin/bin/bench_$name" ;; esac
  done
if [ -n "${BASE:-}" ]; then
  wt=/tmp/yarnsim-base
  git worktree remove --force "$wt" 2>/dev/null || true
  git worktree add --detach "$wt" "$BASE"
  (cd "$wt" && CARGO_TARGET_DIR="$tgt/base" cargo bench --bench gpu --no-run \
    --message-format=json) | executables |
    while read -r name path; do
      case "$name" in gpu) cp "$path" .devbin/bin/bench_gpu_old ;; esac
    done
  (cd "$wt" && CARGO_TARGET_DIR="$tgt/base" cargo build --release --bin yarnsim)
  cp "$tgt/base/release/yarnsim" .devbin/bin/yarnsim_old
  git worktree remove --force "$wt"
fi
if [ "${SCARF:-}" != none ] && { [ "${SCARF:-}" = fresh ] || [ ! -f .devbin/scarf_relaxed.bcc ]; }; then
  rm -rf /tmp/yarnsim-scarf && mkdir -p /tmp/yarnsim-scarf
  .devbin/bin/yarnsim run scenes/scarf.toml --frames 0 --quiet --out /tmp/yarnsim-scarf
  cp /tmp/yarnsim-scarf/frame_0000.bcc .devbin/scarf_relaxed.bcc
fi
strip .devbin/bin/*
git rev-parse --short HEAD >.devbin/bin/HEAD
# The test binaries look for scenes/ here (CARGO_MANIFEST_DIR): run.sh links it there.
echo "$root" >.devbin/ROOT
echo "$tgt" >.devbin/TARGET
[ -z "${BASE:-}" ] || echo "$BASE" >.devbin/bin/BASE
# xz -9's 64 MiB window spans several binaries, which share most of their code (wgpu, naga, the
# library): 254 MB of them pack into some 20 MB, against some 60 MB with tar -J's default (8 MiB),
# which left the call only just under the 64 MiB it may carry.
tar -C .devbin -cf - bin | xz -9 -T1 >.devbin/bins.tar.xz
rm -rf .devbin/bin
ls -l .devbin/bins.tar.xz
# What the call carries: the tree that travels (tracked and untracked-not-ignored files), .devbin,
# .gl and shared/ (the tool refuses more than 64 MiB).
bytes=$({ git ls-files -z; git ls-files -z -o --exclude-standard; } | xargs -0 stat -c %s -- 2>/dev/null |
  awk '{ s += $1 } END { print s + 0 }')
for d in .devbin .gl shared; do
  [ -e "$d" ] && bytes=$((bytes + $(du -sb "$d" | cut -f1)))
done
echo "the call carries $((bytes / 1048576)) MiB of 64 (tree, .devbin, .gl, shared/)"
[ -d .gl ] || echo "no .gl: fetch the Vulkan loader's packages as /work/.library/device/README.md says"
[ "$bytes" -le $((64 * 1048576)) ] || { echo "over the 64 MiB a call may carry" >&2; exit 1; }
