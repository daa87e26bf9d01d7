// loop_probe: measures how many loop iterations one invocation of this adapter really runs
// (CPU twin: pipelines::loop_probe). Mesa lavapipe 22.3.6 silently ends an invocation after 65,535
// loop iterations in total; this kernel loops probe[0] times and writes the count it reached into
// probe[1], so `yarnsim info` and tests/kernels.rs can report the cap of the adapter in use.
// Loop bound: probe[0] iterations (deliberately unbounded: it is the probe; one thread).

@group(0) @binding(0) var<storage, read_write> probe: array<u32>;

@compute @workgroup_size(1)
fn loop_probe() {
    let n = probe[0];
    var count = 0u;
    for (var i = 0u; i < n; i++) {
        count += 1u;
    }
    probe[1] = count;
}
