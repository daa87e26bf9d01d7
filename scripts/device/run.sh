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
#   STEPS, SECS      the most steps and seconds per bench row (default 1080, 6: two of the scarf's
#                    540-step frames, as the bench's frames are the scene's)
#   DISPATCH=1       first the dispatch bench (what one dispatch costs, by kind)
#   RUNS=a,b         also time `yarnsim run` of the relaxed scarf on the GPU with these contact
#                    models, RUN_FRAMES frames each (default 2), each cut at RUN_TIMEOUT s (120)
#   OLDRUNS=1        each of RUNS also with yarnsim_old (the baseline pack.sh built with
#                    BASE=<rev>; stats in run_<model>_old.jsonl)
#   NOBENCH=1        no gpu bench rows (with RUNS or DISPATCH alone)
#   UNTIMED=1        also a bench pass with YARNSIM_BENCH_UNTIMED=1 (no per-kernel timestamps)
#   AHEADOFF=1       also a bench pass of the relaxed scarf's exact and ACL rows with
#                    YARNSIM_BENCH_AHEAD=0 (frames wait through their pass-through check, as before
#                    2026-12-07's run-ahead: what the run-ahead takes back)
#   SUBMIT=1         also the relaxed scarf's exact and ACL rows untimed with 1 and with 64 steps per
#                    submission (is wgpu's submit time per dispatch host work, or the driver waiting?)
#   CHUNK=n          YARNSIM_BENCH_CHUNK for the bench (default: the bench's own, 16)
#   NOOLD=1          skip bench_gpu_old (the baseline pack.sh built with BASE=<rev>), if packed
#   BENCH_TIMEOUT=s  seconds per bench run (default 150)
#   RELAX=a,b        also time `yarnsim run SCENE --backend gpu --frames 1` for these scenes
#   SCARF_BCC=file   the relaxed scarf's state (a frame_0000.bcc made anywhere, e.g. on the CPU
#                    here, and carried): the bench's scarf_relaxed starts from it, nothing is relaxed;
#                    default .devbin/scarf_relaxed.bcc where pack.sh made one (SCARF_BCC=gpu relaxes
#                    on the GPU here instead)
#   BENCH_FIRST=1    the benches before the tests (the tests then take what time is left)
#   PARITY=s:n,...   examples/gpu_parity on scenes/s.toml for n steps each (the GPU step against the
#                    CPU path on the hardware), each cut at 120 s
#   PROGRESS_SECS=s  YARNSIM_PROGRESS_SECS for RUNS and RELAX (default 1): their logs get a
#                    progress line every s seconds and a `rerun:` line for every batch rerun whose
#                    failed attempt took s seconds or more (what grew, what it cost)
#   DEADLINE=s       stop starting work s seconds after the start; each test, bench and run is cut
#                    to the time left, so the call ends within it (default 540)
#
# The device tool brings back at most 8 files from $OUT: everything is written to a work folder and
# packed into $OUT/all.tar.gz at the end, beside $OUT/summary.txt (written as the call goes).
# Give the call timeout_s 600: the deadline leaves the last step's kill and the packing inside it.
set -uo pipefail
FINAL=${OUT:-/tmp/out}
OUT=/tmp/yarnsim-out
rm -rf "$OUT" && mkdir -p "$OUT" "$FINAL" && rm -f "$FINAL/summary.txt" "$FINAL/all.tar.gz"
t0=$(date +%s)
DEADLINE=${DEADLINE:-540}
pack() {
  log "end: $(($(date +%s) - t0)) s after the start (deadline $DEADLINE s)"
  tar -C "$OUT" -czf "$FINAL/all.tar.gz" .
}
trap pack EXIT
# The summary goes straight to $FINAL too: a call killed at its limit (a step stuck in the driver,
# past timeout's reach) still brings it back, though not all.tar.gz.
log() { echo "== $*" | tee -a "$OUT/summary.txt" "$FINAL/summary.txt"; }
# Lines of a log into the summary as well.
note() { tee -a "$OUT/summary.txt" "$FINAL/summary.txt"; }
now() { date +%s%N; }
secs() { echo "$((($(now) - $1) / 1000000)) ms"; }
# The seconds a step may take: its own limit, cut to what is left before the deadline, and at least
# 1 (timeout takes 0 as no limit at all, and refuses a negative one).
budget() {
  local left=$((DEADLINE - ($(date +%s) - t0)))
  [ "$left" -ge 1 ] || left=1
  if [ "$left" -lt "$1" ]; then echo "$left"; else echo "$1"; fi
}

# The loaders only where the image lacks them: unpacked over /, they would replace its own.
if ls .gl/*.deb >/dev/null 2>&1 &&
  ! { ldconfig -p | grep -q 'libvulkan\.so\.1 ' && ldconfig -p | grep -q 'libGLdispatch\.so\.0 '; }; then
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
# Tests that run the CLI find it where cargo built it (CARGO_BIN_EXE_yarnsim), under the target
# folder pack.sh used (CARGO_TARGET_DIR, or target/ of the checkout), and write scratch files in
# its tmp/ (CARGO_TARGET_TMPDIR).
tgt=$(cat .devbin/TARGET 2>/dev/null || echo "$built/target")
mkdir -p "$tgt/release" "$tgt/tmp" && cp "$B/yarnsim" "$tgt/release/yarnsim"
log "build $(cat "$B/HEAD") (baseline $(cat "$B/BASE" 2>/dev/null || echo none)) on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null)"
# The adapters wgpu sees (a CPU adapter alone means the NVIDIA driver was not found).
timeout -k 5 "$(budget 30)" "$B/yarnsim" info 2>&1 | note

tests() {
  [ -n "${NOTESTS:-}" ] && return
  if [ -n "${TESTS:-}" ]; then
    list=${TESTS//,/ }
  else
    list=$(cd "$B" && ls | grep -v -e '^bench_' -e '^example_' -e '^yarnsim' -e '^HEAD$' -e '^BASE$')
  fi
  for t in $list; do
    lim=$(budget "${TEST_TIMEOUT:-120}")
    if [ "$lim" -lt 5 ]; then
      log "test $t: not run (deadline)"
      continue
    fi
    start=$(now)
    timeout -k 5 "$lim" "$B/$t" --test-threads=1 >"$OUT/test_$t.log" 2>&1
    rc=$?
    log "test $t: rc $rc, $(secs "$start"), $(grep -h '^test result' "$OUT/test_$t.log" | tail -1)"
    # Which tests failed, or the one a time limit stopped (its line has no result yet): the summary
    # may be all that comes back.
    if [ "$rc" -ne 0 ]; then
      { grep -E '^test .* FAILED$' "$OUT/test_$t.log" | head -10
        grep -E '^test ' "$OUT/test_$t.log" | tail -1 | grep -vE ' (ok|FAILED|ignored)$'; } | note
    fi
  done
}
[ -z "${BENCH_FIRST:-}" ] && tests

scenes=${SCENES:-swatch2000,scarf_relaxed}
if [[ ",$scenes," == *",scarf_relaxed,"* ]]; then
  mkdir -p /tmp/scarf_relaxed
  if [ -z "${SCARF_BCC:-}" ] && [ -f .devbin/scarf_relaxed.bcc ]; then
    SCARF_BCC=.devbin/scarf_relaxed.bcc
  fi
  if [ -n "${SCARF_BCC:-}" ] && [ "$SCARF_BCC" != gpu ]; then
    cp "$SCARF_BCC" /tmp/scarf_relaxed/frame_0000.bcc
    log "scarf relaxed: carried ($SCARF_BCC)"
  else
    start=$(now)
    timeout -k 5 "$(budget 300)" "$B/yarnsim" run scenes/scarf.toml --backend gpu --frames 0 --quiet \
      --out /tmp/scarf_relaxed >"$OUT/relax_scarf.log" 2>&1
    log "scarf relaxed on the GPU: rc $?, $(secs "$start")"
  fi
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

bench() { # name binary [env...]
  local name=$1 bin=$2 lim
  shift 2
  lim=$(budget "${BENCH_TIMEOUT:-150}")
  [ "$lim" -lt 10 ] && { log "bench $name: not run (deadline)"; return; }
  local start
  start=$(now)
  env YARNSIM_BENCH_SCENES="$scenes" YARNSIM_BENCH_MODELS="${MODELS:-none,exact,acl}" \
    YARNSIM_BENCH_PATHS="${PATHS:-gpu}" YARNSIM_BENCH_STEPS="${STEPS:-1080}" \
    YARNSIM_BENCH_SECONDS="${SECS:-6}" YARNSIM_BENCH_JSON="$OUT/bench_$name.jsonl" \
    ${CHUNK:+YARNSIM_BENCH_CHUNK=$CHUNK} "$@" \
    timeout -k 5 "$lim" "$B/$bin" --bench >"$OUT/bench_$name.log" 2>&1
  log "bench $name: rc $?, $(secs "$start")"
  # Each scene's heading, then its rows (the bench's closing table only comes if it finished).
  grep -E '^[^ |].* \(set up in |^ +(none|exact|acl) +gpu' "$OUT/bench_$name.log" | note
}
if [ -n "${DISPATCH:-}" ] && [ -x "$B/bench_dispatch" ]; then
  start=$(now)
  timeout -k 5 "$(budget 120)" "$B/bench_dispatch" --bench >"$OUT/bench_dispatch.log" 2>&1
  log "bench dispatch: rc $?, $(secs "$start")"
  note <"$OUT/bench_dispatch.log"
fi
[ -z "${NOBENCH:-}" ] && bench new bench_gpu
[ -n "${UNTIMED:-}" ] && bench new_untimed bench_gpu YARNSIM_BENCH_UNTIMED=1
[ -n "${AHEADOFF:-}" ] && bench new_ahead_off bench_gpu YARNSIM_BENCH_AHEAD=0 \
  YARNSIM_BENCH_SCENES=/tmp/scarf_relaxed/scarf_relaxed.toml YARNSIM_BENCH_MODELS=exact,acl
if [ -n "${SUBMIT:-}" ]; then
  for c in 1 64; do
    bench "submit_chunk$c" bench_gpu YARNSIM_BENCH_UNTIMED=1 YARNSIM_BENCH_CHUNK=$c \
      YARNSIM_BENCH_SCENES=/tmp/scarf_relaxed/scarf_relaxed.toml YARNSIM_BENCH_MODELS=exact,acl
  done
fi
[ -z "${NOOLD:-}${NOBENCH:-}" ] && [ -x "$B/bench_gpu_old" ] && bench old bench_gpu_old
RUNS=${RUNS:-}
export YARNSIM_PROGRESS_SECS=${PROGRESS_SECS:-1}
# With OLDRUNS=1 and a yarnsim_old (pack.sh BASE=<rev>), each run also with the baseline's CLI.
clis=yarnsim
[ -n "${OLDRUNS:-}" ] && [ -x "$B/yarnsim_old" ] && clis="yarnsim yarnsim_old"
for m in ${RUNS//,/ }; do
  for cli in $clis; do
    tag=$m${cli#yarnsim}
    lim=$(budget "${RUN_TIMEOUT:-120}")
    [ "$lim" -lt 10 ] && { log "run scarf_relaxed $tag: not run (deadline)"; continue; }
    start=$(now)
    timeout -k 5 "$lim" "$B/$cli" run /tmp/scarf_relaxed/scarf_relaxed.toml --backend gpu \
      --frames "${RUN_FRAMES:-2}" --set "contact.model=$m" --stats "$OUT/run_$tag.jsonl" >"$OUT/run_$tag.log" 2>&1
    log "run scarf_relaxed --backend gpu, $tag: rc $?, $(secs "$start"): $(grep -h 'steps/s' "$OUT/run_$tag.log" | tail -1); $(grep -c '^rerun: ' "$OUT/run_$tag.log") slow reruns"
  done
done
[ -n "${BENCH_FIRST:-}" ] && tests
PARITY=${PARITY:-}
for p in ${PARITY//,/ }; do
  lim=$(budget 120)
  [ "$lim" -lt 10 ] && { log "parity $p: not run (deadline)"; continue; }
  start=$(now)
  timeout -k 5 "$lim" "$B/example_gpu_parity" "scenes/${p%%:*}.toml" "${p#*:}" >"$OUT/parity_${p%%:*}.log" 2>&1
  log "parity ${p%%:*} (${p#*:} steps): rc $?, $(secs "$start")"
  grep -E '^(after|counts|rebuilds)' "$OUT/parity_${p%%:*}.log" | tail -4 | note
done
RELAX=${RELAX:-}
for s in ${RELAX//,/ }; do
  lim=$(budget 300)
  [ "$lim" -lt 10 ] && { log "run $s: not run (deadline)"; continue; }
  start=$(now)
  timeout -k 5 "$lim" "$B/yarnsim" run "scenes/$s.toml" --backend gpu --frames 1 --stats "$OUT/stats_$s.jsonl" \
    >"$OUT/relax_$s.log" 2>&1
  log "run $s --frames 1 on the GPU (relaxation included): rc $?, $(secs "$start"), $(grep -c '^rerun: ' "$OUT/relax_$s.log") slow reruns"
  grep '^rerun: ' "$OUT/relax_$s.log" | head -5 | note
done
true
