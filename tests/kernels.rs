//! The kernel table (`src/shaders.rs`) against the shaders themselves, through naga's reflection:
//! every kernel's file has an entry point of its name with the table's workgroup size, and declares
//! exactly the table's bindings (group 0, numbered in order, same names and access). And every
//! compute shader in `shaders/` is in the table.

use yarnsim::shaders::{self, Access};

fn module(name: &str) -> naga::Module {
    let e = shaders::expanded(name).unwrap_or_else(|e| panic!("{e}"));
    naga::front::wgsl::parse_str(&e.source)
        .unwrap_or_else(|err| panic!("{name}: {}", err.emit_to_string(&e.source)))
}

fn reflected_bindings(m: &naga::Module) -> Vec<(u32, u32, String, Access)> {
    let mut out: Vec<_> = m
        .global_variables
        .iter()
        .filter_map(|(_, g)| {
            let b = g.binding.as_ref()?;
            let access = match g.space {
                naga::AddressSpace::Uniform => Access::Uniform,
                naga::AddressSpace::Storage { access } => {
                    if access.contains(naga::StorageAccess::STORE) {
                        Access::ReadWrite
                    } else {
                        Access::Read
                    }
                }
                other => panic!("unexpected address space {other:?}"),
            };
            Some((
                b.group,
                b.binding,
                g.name.clone().unwrap_or_default(),
                access,
            ))
        })
        .collect();
    out.sort_by_key(|b| (b.0, b.1));
    out
}

#[test]
fn table_matches_every_kernel_file() {
    assert!(!shaders::KERNELS.is_empty());
    for k in shaders::all_kernels() {
        let m = module(k.name);
        let ep = m
            .entry_points
            .iter()
            .find(|e| e.name == k.name)
            .unwrap_or_else(|| panic!("shaders/{}.wgsl has no entry point {}", k.name, k.name));
        assert_eq!(ep.stage, naga::ShaderStage::Compute, "{}", k.name);
        assert_eq!(
            ep.workgroup_size,
            [k.workgroup_size, 1, 1],
            "{}: workgroup size",
            k.name
        );
        let want: Vec<_> = k
            .bindings
            .iter()
            .enumerate()
            .map(|(i, b)| (0u32, i as u32, b.name.to_string(), b.access))
            .collect();
        assert_eq!(
            reflected_bindings(&m),
            want,
            "{}: WGSL bindings differ from the kernel table",
            k.name
        );
        // wgpu's default limits (WebGPU's): per shader stage, 8 storage buffers and 12 uniform
        // buffers (the bind group's own limit, 1,000 bindings, is far off).
        let limits = wgpu::Limits::default();
        let storage = k
            .bindings
            .iter()
            .filter(|b| b.access != Access::Uniform)
            .count() as u32;
        let uniforms = k.bindings.len() as u32 - storage;
        assert!(
            storage <= limits.max_storage_buffers_per_shader_stage,
            "{}: {storage} storage buffers (limit {})",
            k.name,
            limits.max_storage_buffers_per_shader_stage
        );
        assert!(
            uniforms <= limits.max_uniform_buffers_per_shader_stage,
            "{}: {uniforms} uniform buffers (limit {})",
            k.name,
            limits.max_uniform_buffers_per_shader_stage
        );
        assert!(
            k.twin.ends_with(&format!("::{}", k.name)),
            "{}: the CPU twin {} must carry the kernel's name",
            k.name,
            k.twin
        );
    }
}

#[test]
fn every_compute_shader_is_in_the_table() {
    for name in shaders::shader_names() {
        let m = module(name);
        let compute = m
            .entry_points
            .iter()
            .any(|e| e.stage == naga::ShaderStage::Compute);
        if compute {
            assert!(
                shaders::all_kernels().any(|k| k.name == name),
                "shaders/{name}.wgsl has a compute entry point but is not in the kernel table"
            );
        }
    }
}

/// The header of every kernel states its per-thread loop bound (lavapipe ends an invocation after
/// 65,535 loop iterations in total), either "no loops" or a stated bound.
/// No kernel binds more than 8 storage buffers (wgpu's default limit per stage) or more than 3
/// uniforms: lavapipe (Mesa 22.3.6) ends the process with "stack smashing detected" when it runs
/// a kernel with four uniform bindings (set_rebuild had them, 2026-12-06), though its limit says
/// 15.
#[test]
fn every_kernel_binds_within_the_portable_counts() {
    for k in shaders::all_kernels() {
        let count = |a: Access| k.bindings.iter().filter(|b| b.access == a).count();
        let storage = count(Access::Read) + count(Access::ReadWrite);
        assert!(storage <= 8, "{}: {storage} storage buffers", k.name);
        assert!(
            count(Access::Uniform) <= 3,
            "{}: {} uniforms",
            k.name,
            count(Access::Uniform)
        );
    }
}

#[test]
fn every_kernel_states_its_loop_bound() {
    for k in shaders::all_kernels() {
        let src = shaders::raw_source(k.name).unwrap();
        let header: String = src
            .lines()
            .take_while(|l| l.starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n")
            .to_lowercase();
        assert!(
            header.contains("no loops") || header.contains("loop bound"),
            "shaders/{}.wgsl: the header must state the per-thread loop bound",
            k.name
        );
    }
}

/// The loop cap of the adapter in use, measured and reported (DESIGN §7: lavapipe 22.3.6 ends an
/// invocation after 65,535 iterations). The probe must count exactly when far below any cap, and a
/// cap, where there is one, must be the one every kernel's stated loop bound is designed under.
#[test]
fn loop_cap_of_the_adapter_is_detected_and_reported() {
    let Some(gpu) =
        yarnsim::gpu::testing::gpu_or_skip("loop_cap_of_the_adapter_is_detected_and_reported")
    else {
        return;
    };
    assert_eq!(
        yarnsim::pipelines::measure_loop_cap(&gpu, 1000).unwrap(),
        None
    );
    let cap = yarnsim::pipelines::measure_loop_cap(&gpu, 1_000_000).unwrap();
    eprintln!(
        "loop cap of {}: {}",
        gpu.summary(),
        cap.map_or("none below 1,000,000 iterations".to_string(), |c| format!(
            "{c} iterations"
        ))
    );
    if let Some(c) = cap {
        assert!(
            c >= 65_000,
            "a cap of {c} iterations is below what the kernels are designed for"
        );
    }
}

/// The constants shaders/shared/acl.wgsl gives its kernels have their Rust twins' values: the loop
/// bounds the twins share (`ACL_MAX_POINT_RECORDS`, `ACL_MAX_SET_POINTS`), the threads per set
/// (`ACL_SET_LANES`) and the phases of
/// `acl_counts` (reflected from `set_gather` and `acl_counts`, which import it).
#[test]
fn acl_wgsl_constants_match_rust() {
    use yarnsim::acl::counts::{PHASE_COALESCED, PHASE_SCHEDULED, PHASE_STEP};
    let want = [
        (
            "ACL_MAX_POINT_RECORDS",
            yarnsim::acl::gather::MAX_POINT_RECORDS,
        ),
        ("ACL_MAX_SET_POINTS", yarnsim::acl::evaluate::MAX_SET_POINTS),
        ("ACL_SET_LANES", yarnsim::acl::evaluate::SET_LANES),
        ("ACL_PHASE_STEP", PHASE_STEP),
        ("ACL_PHASE_SCHEDULED", PHASE_SCHEDULED),
        ("ACL_PHASE_COALESCED", PHASE_COALESCED),
    ];
    for kernel in ["set_gather", "acl_counts"] {
        assert_u32_constants(kernel, &want);
    }
}

/// The constants `kernel`'s module declares with the names of `want` are u32 literals of its
/// values.
/// The bound on a rebuilt set's control points that sizes the room of the `K̄` blocks pool's
/// pages (`acl::pages::MAX_BOX_CPS`) is the one the rebuild kernels enforce and size their
/// workgroup arrays with (shaders/shared/acl_rebuild.wgsl).
#[test]
fn the_pages_room_follows_the_rebuild_kernels_bound() {
    let want = [
        ("MAX_BOX_CPS", yarnsim::acl::pages::MAX_BOX_CPS),
        ("MAX_BOX_PAIRS", yarnsim::acl::pages::MAX_BOX_PAIRS),
    ];
    for kernel in ["set_rebuild_size", "set_rebuild"] {
        assert_u32_constants(kernel, &want);
    }
    // The flag a box beyond them gets, and the error bit pool_alloc raises for it.
    assert_u32_constants(
        "set_rebuild_size",
        &[("PLAN_TOO_LARGE", yarnsim::acl::rebuild::PLAN_TOO_LARGE)],
    );
    assert_u32_constants(
        "pool_alloc",
        &[
            ("PLAN_TOO_LARGE", yarnsim::acl::rebuild::PLAN_TOO_LARGE),
            (
                "POOL_BOX_TOO_LARGE",
                yarnsim::acl::rebuild::POOL_BOX_TOO_LARGE,
            ),
        ],
    );
}

fn assert_u32_constants(kernel: &str, want: &[(&str, u32)]) {
    let m = module(kernel);
    for &(name, value) in want {
        let c = m
            .constants
            .iter()
            .find(|(_, c)| c.name.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("{kernel}: no const {name}"))
            .1;
        match m.global_expressions[c.init] {
            naga::Expression::Literal(naga::Literal::U32(v)) => {
                assert_eq!(v, value, "{kernel}: {name}")
            }
            ref e => panic!("{kernel}: const {name} is not a u32 literal: {e:?}"),
        }
    }
}

/// `frame_solve`'s tile layout constants are `rod::frame_tiles`' (the slots per tile, the
/// "no slot" field and the flags it packs).
#[test]
fn frame_solve_constants_match_rust() {
    use yarnsim::rod::{FRAME_FROZEN, FRAME_NO_SLOT, FRAME_OWNED, FRAME_TILE};
    assert_u32_constants(
        "frame_solve",
        &[
            ("FRAME_TILE", FRAME_TILE as u32),
            ("FRAME_NO_SLOT", FRAME_NO_SLOT),
            ("FRAME_OWNED", FRAME_OWNED),
            ("FRAME_FROZEN", FRAME_FROZEN),
        ],
    );
}
