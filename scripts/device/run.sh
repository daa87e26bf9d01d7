#!/usr/bin/env bash
# A check on a lent GPU machine, in one call: run it there from the repository root, carrying
# .devbin (made here by scripts/device/pack.sh) and .gl (the Vulkan loader's packages, fetched once
# here as /work/.library/device/README.md says). Everything it writes goes under $OUT.
#
#   bash scripts/device/run.sh
#
# Knobs (environment):
#   TESTS=a,b        GPU test binaries to run (default: every one packed); NOTESTS=1 runs none
#   TEST_TIMEOUT=s   seconds per test binary (default 120)
#   SCENES=a,b       bench scenes (YARNSIM_BENCH_SCENES; default swatch2000,scarf_relaxed, where
#                    scarf_relaxed is relaxed here first, on the GPU, by `yarnsim run --frames 0`)
#   MODELS=a,b       bench models (default none,exact,acl); PATHS (default gpu)
#   STEPS, SECS      the most steps and seconds per bench row (default 400, 6)
#   UNTIMED=1        also a bench pass with YARNSIM_BENCH_UNTIMED=1 (no per-kernel timestamps)
#   CHUNK=n          YARNSIM_BENCH_CHUNK for the bench (default: the bench's own, 16)
#   NOOLD=1          skip bench_gpu_old (the baseline pack.sh built with BASE=<rev>), if packed
#   BENCH_TIMEOUT=s  seconds per bench run (default 150)
#   RELAX=a,b        also time `yarnsim run SCENE --backend gpu --frames 1` for these scenes
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }
now() { date +%s%N; }
secs() { echo "$((($(now) - $1) / 1000000)) ms"; }

if ls .gl/*.deb >/dev/null 2>&1; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
if [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
# The binaries find scenes/ (and the CLI tests the yarnsim binary) where they were built.
built=$(cat .devbin/ROOT 2>/dev/null || echo /work/main)
if [ ! -e "$built" ]; then
  mkdir -p "$(dirname "$built")" && ln -s "$PWD" "$built"
fi
XDG_RUNTIME_DIR=$(mktemp -d)
export XDG_RUNTIME_DIR CI=true
bins=/tmp/yarnsim-bins
rm -rf "$bins" && mkdir -p "$bins"
tar -C "$bins" -xJf .devbin/bins.tar.xz || { log "no .devbin/bins.tar.xz"; exit 1; }
B=$bins/bin
# Tests that run the CLI find it where cargo built it (CARGO_BIN_EXE_yarnsim).
mkdir -p "$built/target/release" && cp "$B/yarnsim" "$built/target/release/yarnsim"
log "build $(cat "$B/HEAD") (baseline $(cat "$B/BASE" 2>/dev/null || echo none)) on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null)"

if [ -z "${NOTESTS:-}" ]; then
  if [ -n "${TESTS:-}" ]; then
    list=${TESTS//,/ }
  else
    list=$(cd "$B" && ls | grep -v -e '^bench_gpu' -e '^yarnsim$' -e '^HEAD$' -e '^BASE$')
  fi
  for t in $list; do
    start=$(now)
    timeout "${TEST_TIMEOUT:-120}" "$B/$t" --test-threads=1 >"$OUT/test_$t.log" 2>&1
    rc=$?
    log "test $t: rc $rc, $(secs "$start"), $(grep -h '^test result' "$OUT/test_$t.log" | tail -1)"
  done
fi

scenes=${SCENES:-swatch2000,scarf_relaxed}
if [[ ",$scenes," == *",scarf_relaxed,"* ]]; then
  start=$(now)
  timeout 300 "$B/yarnsim" run scenes/scarf.toml --backend gpu --frames 0 --quiet \
    --out /tmp/scarf_relaxed >"$OUT/relax_scarf.log" 2>&1
  log "scarf relaxed on the GPU: rc $?, $(secs "$start")"
  # The relaxed state as a scene: scenes/scarf.toml's obstacle, the cloth from frame 0, no relaxation.
  cat >/tmp/scarf_relaxed/scarf_relaxed.toml <<'TOML'
[simulation]
frames = 90
[[cloth]]
source.bcc = { path = "frame_0000.bcc" }
[relax]
time = 0
[[obstacle]]
type = "plane"
point = [0, 0, 0]
normal = [0, 1, 0]
friction = 0.3
TOML
  scenes=${scenes//scarf_relaxed//tmp/scarf_relaxed/scarf_relaxed.toml}
fi
RELAX=${RELAX:-}
for s in ${RELAX//,/ }; do
  start=$(now)
  timeout 300 "$B/yarnsim" run "scenes/$s.toml" --backend gpu --frames 1 --stats "$OUT/stats_$s.jsonl" \
    >"$OUT/relax_$s.log" 2>&1
  log "run $s --frames 1 on the GPU (relaxation included): rc $?, $(secs "$start")"
done

bench() { # name binary [env...]
  local name=$1 bin=$2
  shift 2
  env YARNSIM_BENCH_SCENES="$scenes" YARNSIM_BENCH_MODELS="${MODELS:-none,exact,acl}" \
    YARNSIM_BENCH_PATHS="${PATHS:-gpu}" YARNSIM_BENCH_STEPS="${STEPS:-400}" \
    YARNSIM_BENCH_SECONDS="${SECS:-6}" YARNSIM_BENCH_JSON="$OUT/bench_$name.jsonl" \
    ${CHUNK:+YARNSIM_BENCH_CHUNK=$CHUNK} "$@" \
    timeout "${BENCH_TIMEOUT:-150}" "$B/$bin" --bench >"$OUT/bench_$name.log" 2>&1
  log "bench $name: rc $?"
  grep -E '^ +(none|exact|acl) +gpu' "$OUT/bench_$name.log" | tee -a "$OUT/summary.txt"
}
bench new bench_gpu
[ -n "${UNTIMED:-}" ] && bench new_untimed bench_gpu YARNSIM_BENCH_UNTIMED=1
[ -z "${NOOLD:-}" ] && [ -x "$B/bench_gpu_old" ] && bench old bench_gpu_old
true
