// count_plan: sizes a counted scan, radix sort or grid by a count the GPU wrote earlier in the step
// (src/scan.rs; CPU twin scan::count_plan): the plan of shaders/shared/counted_plan.wgsl from
// count = plan_src[plan_spec.src_word]. One thread; loop bounds: counted_plan's.

#import layout
#import counted_plan

@group(0) @binding(0) var<uniform> plan_spec: CountPlan;
@group(0) @binding(1) var<storage, read> plan_src: array<u32>;
@group(0) @binding(2) var<storage, read_write> plan_out: array<u32>;

@compute @workgroup_size(1)
fn count_plan() {
    plan_counted(plan_src[plan_spec.src_word]);
}
