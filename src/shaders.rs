//! The WGSL sources and the kernel table: which compute kernels the GPU time step has, and the
//! contract each one keeps (its bindings, in order, with their access; its workgroup size; its CPU
//! twin).
//!
//! Every `shaders/*.wgsl` and `shaders/shared/*.wgsl` is embedded at build time (build.rs writes the
//! table, so no file can be missed) and expanded at run time by [`crate::wgsl::expand`], the same
//! preprocessor build.rs validated it with.
//!
//! **One kernel, one name** (DESIGN §7): a kernel `NAME` is the file `shaders/NAME.wgsl`, its entry
//! point `NAME`, its pipeline label, its CPU twin `fn NAME` (listed in [`Kernel::twin`]), its stats key
//! `NAME_ms` and its bench id. Its bindings are all in group 0, numbered in the order of
//! [`Kernel::bindings`]; the binding's name is the WGSL variable's name *and* the name of the buffer
//! the GPU step binds to it (`crate::gpu_step`), so one name follows a buffer through every kernel. The
//! twin takes the same buffers as parameters, in the same order. `tests/kernels.rs` checks this table
//! against naga's reflection of every kernel (entry point, workgroup size, binding names, numbers and
//! access) and that every compute shader is in the table.

use crate::wgsl::{self, Expanded, WgslError};

include!(concat!(env!("OUT_DIR"), "/shader_sources.rs"));

/// Why a shader could not be had.
#[derive(Debug, thiserror::Error)]
pub enum ShaderError {
    #[error("no shader shaders/{0}.wgsl in this build")]
    Unknown(String),
    #[error("expanding shaders/{name}.wgsl: {source}")]
    Expand {
        name: String,
        #[source]
        source: WgslError,
    },
    #[error("no kernel named {0} in the kernel table")]
    UnknownKernel(String),
}

/// The text of `shaders/shared/NAME.wgsl`.
pub fn shared_source(name: &str) -> Option<&'static str> {
    SHARED_FILES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, s)| *s)
}

/// The text of `shaders/NAME.wgsl` as written (imports not expanded).
pub fn raw_source(name: &str) -> Option<&'static str> {
    SHADER_FILES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, s)| *s)
}

/// Every shader file's stem (`render_tubes`, `integrate_velocity`, …).
pub fn shader_names() -> impl Iterator<Item = &'static str> {
    SHADER_FILES.iter().map(|(n, _)| *n)
}

/// `shaders/NAME.wgsl` with its imports expanded, and its line map.
pub fn expanded(name: &str) -> Result<Expanded, ShaderError> {
    let text = raw_source(name).ok_or_else(|| ShaderError::Unknown(name.into()))?;
    let shared = |n: &str| shared_source(n).map(str::to_string);
    wgsl::expand(&format!("shaders/{name}.wgsl"), text, &shared).map_err(|source| {
        ShaderError::Expand {
            name: name.into(),
            source,
        }
    })
}

/// The expanded text of `shaders/NAME.wgsl`, ready for `create_shader_module`.
pub fn expanded_text(name: &str) -> Result<String, ShaderError> {
    Ok(expanded(name)?.source)
}

/// How a kernel uses a binding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// `var<uniform>` (the [`crate::layout::Params`] block).
    Uniform,
    /// `var<storage, read>`.
    Read,
    /// `var<storage, read_write>`.
    ReadWrite,
}

/// One binding of a kernel: the WGSL variable's name, which is also the GPU step's buffer name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Binding {
    pub name: &'static str,
    pub access: Access,
}

const fn uniform(name: &'static str) -> Binding {
    Binding {
        name,
        access: Access::Uniform,
    }
}
const fn read(name: &'static str) -> Binding {
    Binding {
        name,
        access: Access::Read,
    }
}
const fn read_write(name: &'static str) -> Binding {
    Binding {
        name,
        access: Access::ReadWrite,
    }
}

/// One compute kernel of the GPU time step (see the module doc for what its name fixes).
#[derive(Clone, Copy, Debug)]
pub struct Kernel {
    pub name: &'static str,
    /// Threads per workgroup (`@workgroup_size(N)`, one-dimensional).
    pub workgroup_size: u32,
    /// Group 0, binding `i` is `bindings[i]`.
    pub bindings: &'static [Binding],
    /// The CPU twin, as a path from the crate root.
    pub twin: &'static str,
}

/// Threads per workgroup of the element-wise kernels.
pub const WG: u32 = 256;

/// Every compute kernel, in the order the time step runs them (one block per stage group; each
/// block is edited on its own).
pub const KERNELS: &[Kernel] = &[
    // --- rod: forces (bend_gradient, rod_forces; the GPU step dispatches bend_forces, which
    // makes both, and the two stay as the reference it is tested against bit for bit) ---
    Kernel {
        name: "bend_gradient",
        workgroup_size: WG,
        bindings: &[
            uniform("params"),
            read("bends"),
            read("bend_rest"),
            read("frames"),
            read("pos"),
            read_write("bend_grad"),
        ],
        twin: "rod::bend_gradient",
    },
    Kernel {
        name: "rod_forces",
        workgroup_size: WG,
        bindings: &[
            uniform("params"),
            read("point_bends"),
            read("mass"),
            read("bend_grad"),
            read_write("force"),
        ],
        twin: "rod::rod_forces",
    },
    Kernel {
        name: "bend_forces",
        workgroup_size: WG,
        bindings: &[
            uniform("params"),
            read("bends"),
            read("bend_rest"),
            read("frames"),
            read("pos"),
            read("point_bends"),
            read("mass"),
            read_write("force"),
        ],
        twin: "rod::bend_forces",
    },
    // --- end rod forces ---
    Kernel {
        name: "integrate_velocity",
        workgroup_size: WG,
        bindings: &[
            uniform("params"),
            read("inv_mass"),
            read("force"),
            read_write("vel"),
            read_write("counters"),
        ],
        twin: "step::integrate_velocity",
    },
    // In a scene without glued points or ties (crate::gpu_step), in place of integrate_velocity
    // and the length stage's length_setup, with length_setup's `length_level` uniform.
    Kernel {
        name: "integrate_velocity_setup",
        workgroup_size: WG,
        bindings: &[
            uniform("params"),
            uniform("length_level"),
            read("inv_mass"),
            read("force"),
            read_write("vel"),
            read_write("length_disp"),
            read_write("counters"),
        ],
        twin: "step::integrate_velocity_setup",
    },
    Kernel {
        name: "glue_projection",
        workgroup_size: WG,
        bindings: &[
            uniform("params"),
            read("glue_points"),
            read("glue_target"),
            read("pos"),
            read_write("vel"),
        ],
        twin: "step::glue_projection",
    },
    // Stage tie_projection (crate::ties): one dispatch per colour of the ties, each with its
    // colour's `color_range` uniform (first tie, count), after glue_projection.
    Kernel {
        name: "tie_projection",
        workgroup_size: WG,
        bindings: &[
            uniform("params"),
            uniform("color_range"),
            read("ties"),
            read("tie_length"),
            read("inv_mass"),
            read("pos"),
            read_write("vel"),
        ],
        twin: "ties::tie_projection",
    },
    // --- length projection ---
    // Stage length_projection (crate::length; recorded by length::LengthGpu): length_setup; then
    // for it in 0..B (the recorded iterations): length_error, length_check (not of it = 0 when
    // length_setup commits projection 1: length::first_committed, and then iteration 0's
    // length_error and length_assemble are one length_error_assemble, with projection 1's
    // length_reduce of level 0 one length_error_assemble_reduce when that level is below the top
    // one), length_assemble, length_reduce (the levels below the top one), length_top,
    // length_back (back down),
    // length_update; then length_error of it = B; then length_finish, which makes its check. Each
    // dispatch binds its own `length_level` uniform (iteration, level offset, level rows, 0)
    // (length::level_uniform; length_update's has the point count in w, length::update_uniform;
    // length_setup's and iteration 0's length_error's the commitment in w,
    // length::committed_uniform); a kernel of an iteration that is not wanted returns at once
    // (counters.length_iterations).
    Kernel {
        name: "length_setup",
        workgroup_size: WG,
        bindings: &[
            uniform("params"),
            uniform("length_level"),
            read("vel"),
            read_write("length_disp"),
            read_write("counters"),
        ],
        twin: "length::length_setup",
    },
    Kernel {
        name: "length_error",
        workgroup_size: WG,
        bindings: &[
            uniform("params"),
            uniform("length_level"),
            read("edges"),
            read("pos"),
            read("length_disp"),
            read_write("length_dir"),
            read_write("counters"),
        ],
        twin: "length::length_error",
    },
    Kernel {
        name: "length_check",
        workgroup_size: 1,
        bindings: &[
            uniform("params"),
            uniform("length_level"),
            read_write("counters"),
        ],
        twin: "length::length_check",
    },
    Kernel {
        name: "length_assemble",
        workgroup_size: WG,
        bindings: &[
            uniform("params"),
            uniform("length_level"),
            read("yarns"),
            read("edges"),
            read("inv_mass"),
            read("length_dir"),
            read_write("length_sys"),
            read_write("counters"),
        ],
        twin: "length::length_assemble",
    },
    // In place of iteration 0's length_error and projection 1's length_assemble when length_setup
    // commits projection 1 (length::first_committed), with length_setup's `length_level`.
    Kernel {
        name: "length_error_assemble",
        workgroup_size: WG,
        bindings: &[
            uniform("params"),
            uniform("length_level"),
            read("yarns"),
            read("edges"),
            read("inv_mass"),
            read("pos"),
            read("length_disp"),
            read_write("length_dir"),
            read_write("length_sys"),
            read_write("counters"),
        ],
        twin: "length::length_error_assemble",
    },
    // length_reduce's workgroups over level 0 (length::solver_threads).
    Kernel {
        name: "length_error_assemble_reduce",
        workgroup_size: 64,
        bindings: &[
            uniform("params"),
            uniform("length_level"),
            read("yarns"),
            read("edges"),
            read("inv_mass"),
            read("pos"),
            read("length_disp"),
            read_write("length_dir"),
            read_write("length_sys"),
            read_write("counters"),
        ],
        twin: "length::length_error_assemble_reduce",
    },
    // A workgroup of length::SOLVER_GROUP threads per length::SOLVER_BLOCKS blocks of
    // length::BLOCK rows of the level (length::solver_threads), one thread sweeping each block.
    Kernel {
        name: "length_reduce",
        workgroup_size: 64,
        bindings: &[
            uniform("length_level"),
            read_write("length_sys"),
            read_write("counters"),
        ],
        twin: "length::length_reduce",
    },
    Kernel {
        name: "length_back",
        workgroup_size: 64,
        bindings: &[
            uniform("length_level"),
            read_write("length_sys"),
            read_write("counters"),
        ],
        twin: "length::length_back",
    },
    Kernel {
        name: "length_top",
        workgroup_size: 64,
        bindings: &[
            uniform("length_level"),
            read_write("length_sys"),
            read_write("counters"),
        ],
        twin: "length::length_top",
    },
    Kernel {
        name: "length_update",
        workgroup_size: WG,
        bindings: &[
            uniform("length_level"),
            read("yarns"),
            read("edges"),
            read("point_edges"),
            read("inv_mass"),
            read("length_dir"),
            read("length_sys"),
            read_write("length_disp"),
            read_write("counters"),
        ],
        twin: "length::length_update",
    },
    Kernel {
        name: "length_finish",
        workgroup_size: WG,
        bindings: &[
            uniform("params"),
            uniform("length_level"),
            read("edges"),
            read("length_dir"),
            read("length_disp"),
            read_write("vel"),
            read_write("counters"),
        ],
        twin: "length::length_finish",
    },
    // --- end length projection ---
    // --- damping and object contact ---
    // One workgroup per block of this step's damping phase (`params.first_block`,
    // `params.num_blocks`): dispatched over `num_blocks × DAMPING_WG` threads.
    Kernel {
        name: "nonrigid_damping",
        workgroup_size: crate::step::DAMPING_WG,
        bindings: &[
            uniform("params"),
            read("block_start"),
            read("block_points"),
            read("mass"),
            read("inv_mass"),
            read("pos"),
            read_write("vel"),
        ],
        twin: "step::nonrigid_damping",
    },
    // In a scene without free balls (crate::gpu_step, while
    // step::damping_integrate_iterations allows), in place of nonrigid_damping,
    // object_contact and integrate_position.
    Kernel {
        name: "nonrigid_damping_integrate",
        workgroup_size: crate::step::DAMPING_WG,
        bindings: &[
            uniform("params"),
            read("block_start"),
            read("block_points"),
            read("mass"),
            read("inv_mass"),
            read("obstacles"),
            read_write("pos"),
            read_write("vel"),
        ],
        twin: "step::nonrigid_damping_integrate",
    },
    Kernel {
        name: "object_contact",
        workgroup_size: WG,
        bindings: &[
            uniform("params"),
            read("obstacles"),
            read("inv_mass"),
            read("pos"),
            read_write("vel"),
        ],
        twin: "step::object_contact",
    },
    // --- free balls (crate::balls): ball_velocity after integrate_velocity; after object_contact
    // ball_hit_count, the scan of ball_hit_offsets (num_points + 1), ball_yarn_contact,
    // ball_impulse_sum (a workgroup per ball), ball_contact (one thread); ball_position after
    // integrate_position. Only in scenes with balls.
    Kernel {
        name: "ball_velocity",
        workgroup_size: WG,
        bindings: &[
            uniform("params"),
            read_write("balls"),
            read_write("ball_count"),
        ],
        twin: "balls::ball_velocity",
    },
    Kernel {
        name: "ball_hit_count",
        workgroup_size: WG,
        bindings: &[
            uniform("params"),
            read("balls"),
            read("inv_mass"),
            read("pos"),
            read("vel"),
            read_write("ball_count"),
            read_write("ball_hit_offsets"),
        ],
        twin: "balls::ball_hit_count",
    },
    Kernel {
        name: "ball_yarn_contact",
        workgroup_size: WG,
        bindings: &[
            uniform("params"),
            read("balls"),
            read("ball_count"),
            read("mass"),
            read("inv_mass"),
            read("pos"),
            read_write("vel"),
            read("ball_hit_offsets"),
            read_write("ball_hits"),
        ],
        twin: "balls::ball_yarn_contact",
    },
    Kernel {
        name: "ball_impulse_sum",
        workgroup_size: WG,
        bindings: &[
            uniform("params"),
            read("ball_hit_offsets"),
            read("ball_hits"),
            read_write("balls"),
            read_write("counters"),
        ],
        twin: "balls::ball_impulse_sum",
    },
    Kernel {
        name: "ball_contact",
        workgroup_size: 1,
        bindings: &[
            uniform("params"),
            read("obstacles"),
            read_write("balls"),
            read_write("ball_pairs"),
            read_write("counters"),
        ],
        twin: "balls::ball_contact",
    },
    Kernel {
        name: "ball_position",
        workgroup_size: WG,
        bindings: &[uniform("params"), read_write("balls")],
        twin: "balls::ball_position",
    },
    // --- end damping and object contact ---
    Kernel {
        name: "integrate_position",
        workgroup_size: WG,
        bindings: &[uniform("params"), read("vel"), read_write("pos")],
        twin: "step::integrate_position",
    },
    // In a scene without free balls (crate::gpu_step), in place of object_contact and
    // integrate_position.
    Kernel {
        name: "object_contact_integrate",
        workgroup_size: WG,
        bindings: &[
            uniform("params"),
            read("obstacles"),
            read("inv_mass"),
            read_write("pos"),
            read_write("vel"),
        ],
        twin: "step::object_contact_integrate",
    },
    // --- rod: material frames and plasticity ---
    // Stage material_frames: frame_transport, then frame_solve over the rod's tiles
    // (`rod::frame_tiles`: 256 threads each), or, without sweeps or beyond
    // `rod::FRAME_SOLVE_MAX_SWEEPS`, bend_twist, `frame_sweeps` × (theta_sweep of colour 0, 1, 2),
    // each theta_sweep dispatch with its colour's `color_range` uniform (`rod::color_ranges`) over
    // that colour's edge count, and plasticity.
    Kernel {
        name: "frame_transport",
        workgroup_size: WG,
        bindings: &[
            uniform("params"),
            read("edges"),
            read("pos"),
            read_write("frames"),
            read_write("theta_start"),
            read("edge_bends"),
            read("bend_rest"),
            read_write("rest_start"),
        ],
        twin: "rod::frame_transport",
    },
    Kernel {
        name: "bend_twist",
        workgroup_size: WG,
        bindings: &[
            uniform("params"),
            read("bends"),
            read("frames"),
            read("pos"),
            read_write("bend_rest"),
            read_write("bend_kb"),
        ],
        twin: "rod::bend_twist",
    },
    Kernel {
        name: "theta_sweep",
        workgroup_size: WG,
        bindings: &[
            uniform("params"),
            uniform("color_range"),
            read("bends"),
            read("bend_rest"),
            read("bend_kb"),
            read("edge_bends"),
            read("edge_order"),
            read_write("theta_step"),
            read_write("frames"),
        ],
        twin: "rod::theta_sweep",
    },
    Kernel {
        name: "frame_solve",
        workgroup_size: WG,
        bindings: &[
            uniform("params"),
            read("frame_tiles"),
            read("bends"),
            read("pos"),
            read("theta_start"),
            read("rest_start"),
            read_write("frames"),
            read_write("bend_rest"),
            read_write("bend_kb"),
        ],
        twin: "rod::frame_solve",
    },
    Kernel {
        name: "plasticity",
        workgroup_size: WG,
        bindings: &[
            uniform("params"),
            read("bends"),
            read("frames"),
            read("bend_kb"),
            read_write("bend_rest"),
        ],
        twin: "rod::plasticity",
    },
    // --- end material frames and plasticity ---
    // --- exact contact ---
    // Generic blocks (src/scan.rs, src/sort.rs), dispatched several times per use with a
    // per-dispatch uniform (`scan_pass` = one level, `sort_pass` = one digit pass) and the buffer
    // they work on bound to `scan_data` / `sort_in` / `sort_out` (bind-group overrides).
    // Sizes a counted scan or sort from a count written earlier in the step (its plan buffer:
    // level and pass uniforms, indirect arguments).
    Kernel {
        name: "count_plan",
        workgroup_size: 1,
        bindings: &[
            uniform("plan_spec"),
            read("plan_src"),
            read_write("plan_out"),
        ],
        twin: "scan::count_plan",
    },
    Kernel {
        name: "scan_into",
        workgroup_size: WG,
        bindings: &[
            uniform("scan_pass"),
            read("scan_data"),
            read_write("scan_out"),
        ],
        twin: "scan::scan_into",
    },
    Kernel {
        name: "scan_reduce",
        workgroup_size: WG,
        bindings: &[
            uniform("scan_pass"),
            read("scan_data"),
            read_write("scan_partials"),
        ],
        twin: "scan::scan_reduce",
    },
    Kernel {
        name: "scan_add",
        workgroup_size: WG,
        bindings: &[
            uniform("scan_pass"),
            read_write("scan_data"),
            read_write("scan_partials"),
        ],
        twin: "scan::scan_add",
    },
    Kernel {
        name: "sort_histogram",
        workgroup_size: WG,
        bindings: &[
            uniform("sort_pass"),
            read("sort_in"),
            read_write("sort_hist"),
            read_write("scan_partials"),
        ],
        twin: "sort::sort_histogram",
    },
    Kernel {
        name: "sort_scatter",
        workgroup_size: WG,
        bindings: &[
            uniform("sort_pass"),
            read("sort_in"),
            read("sort_hist"),
            read_write("sort_out"),
            read_write("scan_partials"),
        ],
        twin: "sort::sort_scatter",
    },
    // The exact contact path (src/contact/grid.rs, src/contact/exact.rs), in dispatch order with
    // the scans and sorts between them (see `contact::exact_gpu`).
    Kernel {
        name: "aabb_raster",
        workgroup_size: WG,
        bindings: &[
            uniform("params"),
            read("segments"),
            read("pos"),
            read_write("seg_box"),
            read_write("grid_offsets"),
            read_write("counters"),
            read_write("scan_groups"),
        ],
        twin: "contact::grid::aabb_raster",
    },
    Kernel {
        name: "grid_write",
        workgroup_size: WG,
        bindings: &[
            uniform("params"),
            read("seg_box"),
            read("grid_offsets"),
            read_write("grid_entries"),
            read_write("counters"),
        ],
        twin: "contact::grid::grid_write",
    },
    Kernel {
        name: "candidate_count",
        workgroup_size: WG,
        bindings: &[
            uniform("params"),
            read("grid_entries"),
            read("seg_box"),
            read_write("cand_offsets"),
            read_write("counters"),
            read_write("scan_groups"),
        ],
        twin: "contact::grid::candidate_count",
    },
    Kernel {
        name: "candidate_write",
        workgroup_size: WG,
        bindings: &[
            uniform("params"),
            read("grid_entries"),
            read("seg_box"),
            read("cand_offsets"),
            read_write("candidates"),
            read_write("counters"),
        ],
        twin: "contact::grid::candidate_write",
    },
    Kernel {
        name: "quadrature_points",
        workgroup_size: WG,
        bindings: &[
            uniform("params"),
            read("segments"),
            read("pos"),
            read("quad_weights"),
            read("quad_arc"),
            read_write("qpts"),
        ],
        twin: "contact::quadrature_points",
    },
    Kernel {
        name: "exact_contact_forces",
        workgroup_size: WG,
        bindings: &[
            uniform("params"),
            read("segments"),
            read("candidates"),
            read("qpts"),
            read("quad_weights"),
            read("seg_contact"),
            read_write("contact_records"),
            read_write("touch_offsets"),
            read_write("counters"),
        ],
        twin: "contact::exact_contact_forces",
    },
    Kernel {
        name: "contact_slots",
        workgroup_size: WG,
        bindings: &[
            read("segments"),
            read("candidates"),
            read("touch_offsets"),
            read_write("counters"),
            read_write("gather_slots"),
        ],
        twin: "contact::contact_slots",
    },
    Kernel {
        name: "contact_gather",
        workgroup_size: WG,
        bindings: &[
            uniform("params"),
            read("gather_slots"),
            read("contact_records"),
            read_write("counters"),
            read_write("force"),
        ],
        twin: "contact::contact_gather",
    },
    // --- end exact contact ---
    // --- the space-time scheduler (src/sched/) ---
    Kernel {
        name: "aabb_raster_movement",
        workgroup_size: WG,
        bindings: &[
            uniform("sched"),
            read("segments"),
            read("pos"),
            read("prev1"),
            read("prev2"),
            read_write("cells"),
            read_write("mv1"),
            read_write("mv2"),
            read_write("sched_counters"),
        ],
        twin: "sched::aabb_raster_movement",
    },
    Kernel {
        name: "segment_monitor",
        workgroup_size: WG,
        bindings: &[
            uniform("sched"),
            read("mv1"),
            read("mv2"),
            read_write("cells"),
            read("prev_cells"),
            read_write("motion"),
            read_write("sched_counters"),
            read_write("movers"),
        ],
        twin: "sched::segment_monitor",
    },
    Kernel {
        name: "entries_keep",
        workgroup_size: WG,
        bindings: &[
            read("sched"),
            read("cells"),
            read("motion"),
            read("entries"),
            read_write("keep"),
            read_write("scan_groups"),
        ],
        twin: "sched::entries_keep",
    },
    Kernel {
        name: "entries_compact",
        workgroup_size: WG,
        bindings: &[
            read("sched"),
            read("entries"),
            read("keep"),
            read("scan_groups"),
            read_write("entries_out"),
            read_write("sched_p1"),
        ],
        twin: "sched::entries_compact",
    },
    Kernel {
        name: "entries_merge_rank",
        workgroup_size: WG,
        bindings: &[
            read("sched"),
            read("entries"),
            read("fresh"),
            read_write("entries_out"),
        ],
        twin: "sched::entries_merge_rank",
    },
    Kernel {
        name: "release_count",
        workgroup_size: WG,
        bindings: &[
            uniform("sched"),
            read("released"),
            read_write("release_offsets"),
            read_write("scan_groups"),
        ],
        twin: "sched::release_count",
    },
    Kernel {
        name: "release_scan_sizes",
        workgroup_size: WG,
        bindings: &[
            uniform("sched_step"),
            read("released"),
            read_write("release_offsets"),
            read_write("sched_counters"),
            read_write("sched_state"),
            read_write("sched_p1"),
            read_write("sched_p2"),
        ],
        twin: "sched::release_scan_sizes",
    },
    Kernel {
        name: "release_mark",
        workgroup_size: WG,
        bindings: &[
            read("sched"),
            read("released"),
            read("release_offsets"),
            read_write("entries"),
        ],
        twin: "sched::release_mark",
    },
    Kernel {
        name: "segment_windows",
        workgroup_size: WG,
        bindings: &[
            uniform("sched"),
            read("segments"),
            read("pos"),
            read("snaps"),
            read("motion"),
            read_write("windows"),
        ],
        twin: "sched::segment_windows",
    },
    // In the scheduler's GPU step (sched::gpu), in place of segment_windows and
    // quadrature_points: two independent maps over consecutive thread ranges.
    Kernel {
        name: "segment_windows_quadrature",
        workgroup_size: WG,
        bindings: &[
            uniform("sched"),
            uniform("params"),
            read("segments"),
            read("pos"),
            read("snaps"),
            read("motion"),
            read("quad_weights"),
            read("quad_arc"),
            read_write("windows"),
            read_write("qpts"),
        ],
        twin: "sched::segment_windows_quadrature",
    },
    Kernel {
        name: "schedule_process",
        workgroup_size: WG,
        bindings: &[
            read("sched"),
            read("qpts"),
            read("seg_contact"),
            read("windows"),
            read("motion"),
            read("set_lookup"),
            read_write("entries"),
            read_write("sched_counters"),
        ],
        twin: "sched::schedule_process",
    },
    Kernel {
        name: "touching_count",
        workgroup_size: WG,
        bindings: &[read("sched"), read("entries"), read_write("scan_groups")],
        twin: "sched::touching_count",
    },
    Kernel {
        name: "touching_write",
        workgroup_size: WG,
        bindings: &[
            read("sched"),
            read("qpts"),
            read("seg_contact"),
            read("set_lookup"),
            read("entries"),
            read("scan_groups"),
            read_write("touching"),
            read_write("sched_counters"),
        ],
        twin: "sched::touching_write",
    },
    // The scheduler's grid and newcomer_schedule (src/sched/grid.rs, newcomers.rs): the grid is
    // sched_grid_count, a scan of sched_grid_offsets, sched_grid_write and a radix sort of
    // sched_grid (32 key bits); then newcomer_count, newcomer_write (from newcomer_count's group
    // sums, no scan), a radix sort of sched_cand (2 · cand_key_bits bits), newcomer_keep and
    // newcomer_compact (from newcomer_keep's group sums, no scan).
    Kernel {
        name: "sched_grid_count",
        workgroup_size: WG,
        bindings: &[
            uniform("sched"),
            read("cells"),
            read_write("sched_grid_offsets"),
            read_write("scan_groups"),
        ],
        twin: "sched::sched_grid_count",
    },
    Kernel {
        name: "sched_grid_write",
        workgroup_size: WG,
        bindings: &[
            uniform("sched"),
            read("cells"),
            read("sched_grid_offsets"),
            read_write("sched_grid"),
            read_write("sched_counters"),
            uniform("plan_spec"),
            read_write("plan_out"),
        ],
        twin: "sched::sched_grid_write",
    },
    Kernel {
        name: "newcomer_count",
        workgroup_size: WG,
        bindings: &[
            uniform("sched"),
            read("cells"),
            read("prev_cells"),
            read("sched_grid"),
            read_write("newcomer_offsets"),
            read_write("sched_counters"),
            read_write("scan_groups"),
        ],
        twin: "sched::newcomer_count",
    },
    Kernel {
        name: "newcomer_write",
        workgroup_size: WG,
        bindings: &[
            uniform("sched"),
            read("cells"),
            read("prev_cells"),
            read("sched_grid"),
            read("newcomer_offsets"),
            read("scan_groups"),
            read_write("sched_cand"),
            read_write("sched_counters"),
            uniform("plan_spec"),
            read_write("plan_out"),
        ],
        twin: "sched::newcomer_write",
    },
    Kernel {
        name: "newcomer_list_write",
        workgroup_size: WG,
        bindings: &[
            uniform("sched"),
            read("cells"),
            read("prev_cells"),
            read("movers"),
            read_write("sched_cand"),
            read_write("sched_counters"),
        ],
        twin: "sched::newcomer_list_write",
    },
    Kernel {
        name: "newcomer_list_compact",
        workgroup_size: WG,
        bindings: &[
            read("sched"),
            read("segments"),
            read("quad_arc"),
            read("seg_contact"),
            read("entries"),
            read("sched_cand"),
            read_write("fresh"),
            read_write("sched_counters"),
        ],
        twin: "sched::newcomer_list_compact",
    },
    Kernel {
        name: "newcomer_keep",
        workgroup_size: WG,
        bindings: &[
            uniform("sched"),
            read("segments"),
            read("quad_arc"),
            read("seg_contact"),
            read("entries"),
            read("sched_cand"),
            read_write("fresh_offsets"),
            read_write("scan_groups"),
            read_write("sched_counters"),
        ],
        twin: "sched::newcomer_keep",
    },
    Kernel {
        name: "newcomer_compact",
        workgroup_size: WG,
        bindings: &[
            uniform("sched"),
            read("segments"),
            read("quad_arc"),
            read("seg_contact"),
            read("sched_cand"),
            read("fresh_offsets"),
            read("scan_groups"),
            read_write("fresh"),
            read_write("sched_counters"),
        ],
        twin: "sched::newcomer_compact",
    },
    // The scheduler's GPU step (sched::SchedGpu): sched_sizes writes the step's `sched` records
    // (sched_p0/p1/p2) at three points, with a per-dispatch `sched_phase` uniform; the kernels that
    // read a table length computed on the GPU (num_entries, num_fresh) bind `sched` as read-only
    // storage to get them, the others as the uniform of the host's per-step constants
    // (`sched_step`). sched_history ends the step.
    Kernel {
        name: "sched_sizes",
        workgroup_size: 1,
        bindings: &[
            uniform("sched_phase"),
            uniform("sched_step"),
            read("release_offsets"),
            read_write("sched_counters"),
            read_write("sched_state"),
            read_write("sched_p0"),
            read_write("sched_p1"),
            read_write("sched_p2"),
        ],
        twin: "sched::sched_sizes",
    },
    Kernel {
        name: "sched_history",
        workgroup_size: WG,
        bindings: &[
            uniform("sched"),
            read("pos"),
            read("cells"),
            read_write("prev1"),
            read_write("prev2"),
            read_write("snaps"),
            read_write("prev_cells"),
        ],
        twin: "sched::sched_history",
    },
    // --- ACL's per-step force stages (src/acl/): evaluation, springs, the point table (count →
    // scan → write → sort → start) and the gather ---
    // Four sets per workgroup, 16 lanes each: dispatched over 16 · num_sets threads.
    Kernel {
        name: "set_evaluate",
        workgroup_size: 64,
        bindings: &[
            uniform("acl"),
            read("pos"),
            read("cp_pool"),
            read("dbar_pool"),
            read("m_pool"),
            read("watch_pool"),
            read("watch_loc_pool"),
            read_write("sets"),
            read_write("dev_pool"),
            uniform("watch_pool_page"),
        ],
        twin: "acl::evaluate::set_evaluate",
    },
    // Four sets per workgroup, 16 lanes each: dispatched over 16 · num_sets threads.
    Kernel {
        name: "set_force",
        workgroup_size: 64,
        bindings: &[
            uniform("acl"),
            read_write("sets"),
            read("f0_pool"),
            read("k_pool"),
            read("dev_pool"),
            read_write("fout_pool"),
            read_write("acl_counters"),
            uniform("block_page"),
        ],
        twin: "acl::evaluate::set_force",
    },
    Kernel {
        name: "stiction_forces",
        workgroup_size: 64,
        bindings: &[
            uniform("acl"),
            read("pos"),
            read("seg_cp"),
            read("sets"),
            read("cp_pool"),
            read("dbar_pool"),
            read_write("springs"),
            read_write("fout_pool"),
        ],
        twin: "acl::stiction::stiction_forces",
    },
    // The point table: set_point_count (also the set table's live sets per 256 slots, for
    // set_compact) → exclusive scan of point_start (num_points + 1) → set_point_write → set_gather
    // (src/acl/gather.rs).
    Kernel {
        name: "set_point_count",
        workgroup_size: WG,
        bindings: &[
            uniform("acl"),
            read("sets"),
            read("cp_pool"),
            read_write("point_start"),
            read_write("point_count"),
            read_write("point_rank"),
            read_write("scan_groups"),
        ],
        twin: "acl::gather::set_point_count",
    },
    Kernel {
        name: "set_point_write",
        workgroup_size: WG,
        bindings: &[
            uniform("acl"),
            read("sets"),
            read("cp_pool"),
            read("point_start"),
            read("point_rank"),
            read_write("point_records"),
            read_write("acl_counters"),
        ],
        twin: "acl::gather::set_point_write",
    },
    Kernel {
        name: "set_gather",
        workgroup_size: WG,
        bindings: &[
            uniform("acl"),
            read_write("point_start"),
            read_write("point_count"),
            read("point_records"),
            read("fout_pool"),
            read_write("acl_counters"),
            read_write("force"),
        ],
        twin: "acl::gather::set_gather",
    },
    // --- ACL (src/acl/): the set table's and the model pools' compactions ---
    // set_compact (each live set's slot from the group sums set_point_count wrote, no scan);
    // pool_compact_size → one scan of the three thirds of pool_dest → pool_compact_points,
    // pool_compact_vectors, pool_compact_blocks, pool_compact_watch → pool_compact_headers.
    Kernel {
        name: "set_compact",
        workgroup_size: WG,
        bindings: &[
            uniform("rebuild"),
            read("sets"),
            read("springs"),
            read("scan_groups"),
            read_write("sets_out"),
            read_write("springs_out"),
            read_write("acl_sizes"),
            read_write("merge_counters"),
        ],
        twin: "acl::sets::set_compact",
    },
    Kernel {
        name: "pool_compact_size",
        workgroup_size: WG,
        bindings: &[uniform("rebuild"), read("sets"), read_write("pool_dest")],
        twin: "acl::rebuild::pool_compact_size",
    },
    Kernel {
        name: "pool_compact_points",
        workgroup_size: WG,
        bindings: &[
            uniform("rebuild"),
            read("sets"),
            read("pool_dest"),
            read("cp_pool"),
            read("m_pool"),
            read_write("cp_next"),
            read_write("m_next"),
        ],
        twin: "acl::rebuild::pool_compact_points",
    },
    Kernel {
        name: "pool_compact_vectors",
        workgroup_size: WG,
        bindings: &[
            uniform("rebuild"),
            read("sets"),
            read("pool_dest"),
            read("f0_pool"),
            read("dbar_pool"),
            read_write("f0_next"),
            read_write("dbar_next"),
        ],
        twin: "acl::rebuild::pool_compact_vectors",
    },
    Kernel {
        name: "pool_compact_blocks",
        workgroup_size: WG,
        bindings: &[
            uniform("rebuild"),
            read("sets"),
            read("pool_dest"),
            read("k_pool"),
            read_write("k_next"),
            uniform("block_page"),
        ],
        twin: "acl::rebuild::pool_compact_blocks",
    },
    Kernel {
        name: "pool_compact_watch",
        workgroup_size: WG,
        bindings: &[
            uniform("rebuild"),
            read("sets"),
            read("pool_dest"),
            read("watch_pool"),
            read("watch_loc_pool"),
            read_write("watch_next"),
            read_write("watch_loc_next"),
            uniform("watch_pool_page"),
        ],
        twin: "acl::rebuild::pool_compact_watch",
    },
    Kernel {
        name: "pool_compact_headers",
        workgroup_size: WG,
        bindings: &[uniform("rebuild"), read("pool_dest"), read_write("sets")],
        twin: "acl::rebuild::pool_compact_headers",
    },
    // set_rebuild_size (one workgroup of 64 per dirty set) → pool_alloc (host) → set_rebuild.
    Kernel {
        name: "set_rebuild_size",
        workgroup_size: 64,
        bindings: &[
            uniform("rebuild"),
            read("qpts"),
            read("segments"),
            read("seg_contact"),
            read("sets"),
            read("dirty"),
            read_write("plans"),
            read_write("plan_watch"),
            read_write("plan_watch_loc"),
            uniform("scratch_page"),
        ],
        twin: "acl::rebuild::set_rebuild_size",
    },
    // The rebuild's allocation (with the round's releases and garbage) and write pass:
    // pool_alloc_size (the group sums of alloc_groups) → pool_alloc → set_rebuild_points →
    // set_rebuild (one workgroup of 256 per dirty set) → set_rebuild_watch → set_rebuild_springs →
    // set_rebuild_headers.
    Kernel {
        name: "pool_alloc_size",
        workgroup_size: 256,
        bindings: &[
            uniform("rebuild"),
            read("sets"),
            read("dirty"),
            read("plans"),
            read_write("alloc_groups"),
            read_write("acl_sizes"),
        ],
        twin: "acl::rebuild::pool_alloc_size",
    },
    Kernel {
        name: "pool_alloc",
        workgroup_size: 256,
        bindings: &[
            uniform("rebuild"),
            read("sets"),
            read("dirty"),
            read("alloc_groups"),
            read_write("plans"),
            read_write("pool_counters"),
            read_write("released"),
            read_write("acl_sizes"),
        ],
        twin: "acl::rebuild::pool_alloc",
    },
    Kernel {
        name: "set_rebuild_points",
        workgroup_size: 64,
        bindings: &[
            uniform("rebuild"),
            read("pos"),
            read("segments"),
            read("plans"),
            read_write("cp_pool"),
            read_write("dbar_pool"),
            read_write("m_pool"),
        ],
        twin: "acl::rebuild::set_rebuild_points",
    },
    Kernel {
        name: "set_rebuild",
        workgroup_size: 256,
        bindings: &[
            uniform("rebuild"),
            uniform("acl"),
            read("qpts"),
            read("segments"),
            read("seg_contact"),
            read("plans"),
            read_write("rebuild_terms"),
            read_write("k_pool"),
            read_write("f0_pool"),
            uniform("rebuild_pages"),
            read("rebuild_run"),
        ],
        twin: "acl::rebuild::set_rebuild",
    },
    Kernel {
        name: "set_rebuild_runs",
        workgroup_size: 64,
        bindings: &[
            uniform("rebuild"),
            uniform("page_pairs"),
            read("plans"),
            read_write("rebuild_runs"),
        ],
        twin: "acl::rebuild::set_rebuild_runs",
    },
    Kernel {
        name: "set_rebuild_args",
        workgroup_size: 64,
        bindings: &[
            uniform("page_pairs"),
            read_write("rebuild_runs"),
            read_write("rebuild_args"),
        ],
        twin: "acl::rebuild::set_rebuild_args",
    },
    Kernel {
        name: "set_rebuild_watch",
        workgroup_size: 64,
        bindings: &[
            uniform("rebuild"),
            read("plans"),
            read("plan_watch"),
            read("plan_watch_loc"),
            read("f0_pool"),
            read_write("watch_pool"),
            read_write("watch_loc_pool"),
            read_write("fout_pool"),
            uniform("watch_pages"),
            read("watch_run"),
        ],
        twin: "acl::rebuild::set_rebuild_watch",
    },
    Kernel {
        name: "set_rebuild_springs",
        workgroup_size: 64,
        bindings: &[
            uniform("rebuild"),
            read("qpts"),
            read("segments"),
            read("seg_contact"),
            read("dirty"),
            read("plans"),
            read("sets"),
            read_write("springs"),
        ],
        twin: "acl::rebuild::set_rebuild_springs",
    },
    Kernel {
        name: "set_rebuild_headers",
        workgroup_size: 64,
        bindings: &[
            uniform("rebuild"),
            read("pos"),
            read("dirty"),
            read("plans"),
            read("cp_pool"),
            read("rebuild_terms"),
            read_write("sets"),
            uniform("term_page"),
        ],
        twin: "acl::rebuild::set_rebuild_headers",
    },
    // --- ACL: coalescing, the set index and set merging (src/acl/coalesce.rs) ---
    // Recorded by acl::merge_gpu::MergeGpu: coalesce_heads (which first takes the scheduler's
    // touching count), contact_coalesce (which numbers the
    // runs from the former's group sums: no scan between), coalesce_box; then per merge pass: set_bin_count, the scan of bin_offsets,
    // set_bin_write, the stable sort of set_bin_sort by bin, set_bin_index, set_overlap_count, the
    // scan of edge_offsets, set_overlap_write, `rounds` × merge_label (each with its `merge_round`
    // uniform), merge_hull, merge_apply (with merge_round = rounds).
    Kernel {
        name: "coalesce_heads",
        workgroup_size: WG,
        bindings: &[
            uniform("acl_merge"),
            read("touching"),
            read_write("run_offsets"),
            read_write("set_hull"),
            read_write("merge_counters"),
            read_write("scan_groups"),
            // The scheduler's touching count (read; read_write for its atomics), which thread 0
            // moves into merge_counters (acl_counts' scheduled phase).
            read_write("sched_counters"),
        ],
        twin: "acl::coalesce::coalesce_heads",
    },
    Kernel {
        name: "contact_coalesce",
        workgroup_size: WG,
        bindings: &[
            uniform("acl_merge"),
            read("touching"),
            read("run_offsets"),
            read("scan_groups"),
            read_write("sets"),
            read_write("set_hull"),
            read_write("merge_counters"),
        ],
        twin: "acl::coalesce::contact_coalesce",
    },
    Kernel {
        name: "coalesce_box",
        workgroup_size: WG,
        bindings: &[
            uniform("acl_merge"),
            read("set_hull"),
            read_write("sets"),
            read_write("merge_counters"),
            read_write("springs"),
        ],
        twin: "acl::coalesce::coalesce_box",
    },
    Kernel {
        name: "set_bin_count",
        workgroup_size: WG,
        bindings: &[
            uniform("acl_merge"),
            read("sets"),
            read_write("bin_offsets"),
            read_write("merge_counters"),
            read_write("scan_groups"),
        ],
        twin: "acl::coalesce::set_bin_count",
    },
    Kernel {
        name: "set_bin_write",
        workgroup_size: WG,
        bindings: &[
            uniform("acl_merge"),
            read("sets"),
            read("bin_offsets"),
            read_write("set_bin_sort"),
            read_write("merge_counters"),
        ],
        twin: "acl::coalesce::set_bin_write",
    },
    Kernel {
        name: "set_bin_index",
        workgroup_size: WG,
        bindings: &[
            uniform("acl_merge"),
            read("set_bin_sort"),
            read_write("set_bin_start"),
            read_write("set_bin_items"),
            read_write("merge_counters"),
        ],
        twin: "acl::coalesce::set_bin_index",
    },
    Kernel {
        name: "set_overlap_count",
        workgroup_size: WG,
        bindings: &[
            uniform("acl_merge"),
            read("sets"),
            read("set_bin_start"),
            read("set_bin_items"),
            read_write("edge_offsets"),
            read_write("merge_counters"),
            read_write("scan_groups"),
        ],
        twin: "acl::coalesce::set_overlap_count",
    },
    Kernel {
        name: "set_overlap_write",
        workgroup_size: WG,
        bindings: &[
            uniform("acl_merge"),
            read("sets"),
            read("set_bin_start"),
            read("set_bin_items"),
            read("edge_offsets"),
            read_write("edges"),
            read_write("labels"),
            read_write("set_hull"),
            read_write("merge_counters"),
        ],
        twin: "acl::coalesce::set_overlap_write",
    },
    // The first merge pass after a rebuild round, without the set index (MergeCaps::indexed = 0):
    // dirty_overlap_write instead of the index and set_overlap_count → scan → set_overlap_write.
    Kernel {
        name: "dirty_overlap_write",
        workgroup_size: WG,
        bindings: &[
            uniform("rebuild"),
            read("sets"),
            read("dirty"),
            read_write("edges"),
            read_write("labels"),
            read_write("set_hull"),
            read_write("merge_counters"),
        ],
        twin: "acl::coalesce::dirty_overlap_write",
    },
    // The first merge pass after coalescing, without the set index (MergeCaps::indexed = 0):
    // coalesce_overlap_write searches the new sets instead.
    Kernel {
        name: "coalesce_overlap_write",
        workgroup_size: WG,
        bindings: &[
            read("sets"),
            read_write("edges"),
            read_write("labels"),
            read_write("set_hull"),
            read_write("merge_counters"),
        ],
        twin: "acl::coalesce::coalesce_overlap_write",
    },
    // A merge pass after the first, without the set index (MergeCaps::indexed = 0):
    // moved_overlap_write searches the roots the pass before grew instead.
    Kernel {
        name: "moved_overlap_write",
        workgroup_size: WG,
        bindings: &[
            read("sets"),
            read("moved_sets"),
            read_write("edges"),
            read_write("labels"),
            read_write("set_hull"),
            read_write("merge_counters"),
        ],
        twin: "acl::coalesce::moved_overlap_write",
    },
    Kernel {
        name: "merge_label",
        workgroup_size: WG,
        bindings: &[
            uniform("acl_merge"),
            uniform("merge_round"),
            read("edges"),
            read_write("labels"),
            read_write("merge_counters"),
        ],
        twin: "acl::coalesce::merge_label",
    },
    Kernel {
        name: "merge_hull",
        workgroup_size: WG,
        bindings: &[
            uniform("acl_merge"),
            uniform("merge_round"),
            read("labels"),
            read_write("sets"),
            read_write("set_hull"),
            read_write("merge_counters"),
        ],
        twin: "acl::coalesce::merge_hull",
    },
    Kernel {
        name: "merge_apply",
        workgroup_size: WG,
        bindings: &[
            uniform("acl_merge"),
            uniform("merge_round"),
            read("labels"),
            read("set_hull"),
            read_write("sets"),
            read_write("merge_counters"),
            read_write("moved_sets"),
        ],
        twin: "acl::coalesce::merge_apply",
    },
    // The GPU ACL step's counts (acl::gpu): moved between stages at three points of the step (the
    // others are in set_dirty_write and set_compact).
    Kernel {
        name: "acl_counts",
        workgroup_size: 1,
        bindings: &[
            uniform("acl_phase"),
            // The uniforms' counts are written here (no copy between passes).
            read_write("rebuild"),
            read_write("sched_counters"),
            read_write("acl_sizes"),
            read_write("merge_counters"),
            read_write("pool_counters"),
            read_write("acl_counters"),
            read_write("acl"),
        ],
        twin: "acl::counts::acl_counts",
    },
    // A GPU ACL step without coalescing: acl_counts' scheduled phase and the evaluation's
    // count_plan in one dispatch.
    Kernel {
        name: "acl_scheduled_plan",
        workgroup_size: 1,
        bindings: &[
            uniform("plan_spec"),
            read_write("sched_counters"),
            read_write("merge_counters"),
            read_write("plan_out"),
        ],
        twin: "acl::counts::acl_scheduled_plan",
    },
    // A GPU ACL step with coalescing: acl_counts' coalesced phase and the evaluation's count_plan
    // in one dispatch.
    Kernel {
        name: "acl_coalesced_plan",
        workgroup_size: 1,
        bindings: &[
            uniform("plan_spec"),
            read_write("rebuild"),
            read_write("merge_counters"),
            read_write("acl"),
            read_write("plan_out"),
        ],
        twin: "acl::counts::acl_coalesced_plan",
    },
    // The start of the GPU ACL step (acl::gpu): acl_counts' step phase, sched_sizes' start and
    // set_lookup_clear in one dispatch.
    Kernel {
        name: "acl_step_start",
        workgroup_size: WG,
        bindings: &[
            uniform("sched_step"),
            uniform("acl_lookup"),
            read_write("acl_sizes"),
            read_write("merge_counters"),
            read_write("pool_counters"),
            read_write("acl_counters"),
            read_write("sched_counters"),
            read_write("sched_state"),
            read_write("sched_p0"),
            read_write("lookup_offsets"),
        ],
        twin: "acl::counts::acl_step_start",
    },
    // --color updates from a GPU run: the step's rebuilds counted per segment.
    Kernel {
        name: "segment_rebuilds",
        workgroup_size: WG,
        bindings: &[
            uniform("rebuild"),
            read("sets"),
            read_write("acl_sizes"),
            read_write("rebuild_counts"),
        ],
        twin: "acl::outputs::segment_rebuilds",
    },
    // --- end ACL coalescing and merging ---
    // --- ACL: the dirty list ---
    // Each rebuild round: set_dirty_count → exclusive scan of dirty_dest (num_sets + 1) →
    // set_dirty_write (acl_sizes.num_dirty, the round's start and its grids).
    Kernel {
        name: "set_dirty_count",
        workgroup_size: WG,
        bindings: &[
            uniform("rebuild"),
            read("sets"),
            read_write("dirty_dest"),
            read_write("scan_groups"),
        ],
        twin: "acl::sets::set_dirty_count",
    },
    Kernel {
        name: "set_dirty_write",
        workgroup_size: WG,
        bindings: &[
            uniform("plan_spec"),
            read_write("rebuild"),
            read("dirty_dest"),
            read("scan_groups"),
            read_write("dirty"),
            read_write("acl_sizes"),
            read_write("merge_counters"),
            read_write("pool_counters"),
            read_write("plan_out"),
        ],
        twin: "acl::sets::set_dirty_write",
    },
    // --- end ACL dirty list, releases ---
    // --- the contact sets' lookup for the scheduler (src/sched/lookup.rs), recorded by
    // sched::lookup_gpu::LookupGpu: set_lookup_clear, set_lookup_count, the scan of lookup_offsets
    // (segments + 1), set_lookup_write, set_lookup_sort ---
    Kernel {
        name: "set_lookup_clear",
        workgroup_size: WG,
        bindings: &[uniform("acl_lookup"), read_write("lookup_offsets")],
        twin: "sched::lookup::set_lookup_clear",
    },
    Kernel {
        name: "set_lookup_count",
        workgroup_size: WG,
        bindings: &[
            uniform("acl_lookup"),
            read("sets"),
            read_write("lookup_offsets"),
            read_write("acl_sizes"),
        ],
        twin: "sched::lookup::set_lookup_count",
    },
    Kernel {
        name: "set_lookup_write",
        workgroup_size: WG,
        bindings: &[
            uniform("acl_lookup"),
            read("sets"),
            read_write("lookup_offsets"),
            read_write("lookup_items"),
            read_write("acl_sizes"),
        ],
        twin: "sched::lookup::set_lookup_write",
    },
    Kernel {
        name: "set_lookup_sort",
        workgroup_size: WG,
        bindings: &[
            uniform("acl_lookup"),
            read("sets"),
            read("lookup_offsets"),
            read("lookup_items"),
            read_write("set_lookup"),
            read_write("acl_sizes"),
        ],
        twin: "sched::lookup::set_lookup_sort",
    },
    // --- end the contact sets' lookup ---
];

/// Kernels that are not stages of the time step: tools and probes.
pub const TOOL_KERNELS: &[Kernel] = &[
    Kernel {
        name: "loop_probe",
        workgroup_size: 1,
        bindings: &[read_write("probe")],
        twin: "pipelines::loop_probe",
    },
    // The polar decomposition of shaders/shared/polar.wgsl on a list of inputs, for its tests.
    Kernel {
        name: "polar_test",
        workgroup_size: 64,
        bindings: &[read("polar_in"), read_write("polar_out")],
        twin: "polar::polar_test",
    },
    // ACL's compensated point-pair terms (shaders/shared/acl_pair.wgsl) on a list of inputs.
    Kernel {
        name: "pair_compensated_test",
        workgroup_size: 64,
        bindings: &[read("pair_in"), read_write("pair_out")],
        twin: "contact::pair_compensated_test",
    },
];

/// Every kernel: the time step's and the tools'.
pub fn all_kernels() -> impl Iterator<Item = &'static Kernel> {
    KERNELS.iter().chain(TOOL_KERNELS)
}

/// The kernel named `name`.
pub fn kernel(name: &str) -> Result<&'static Kernel, ShaderError> {
    all_kernels()
        .find(|k| k.name == name)
        .ok_or_else(|| ShaderError::UnknownKernel(name.into()))
}

/// Workgroup counts for `threads` threads of `workgroup_size`: one row while it fits the 65,535
/// workgroups per dimension that every adapter offers, else a 2-D grid of rows of 65,535 (the kernels
/// compute their thread index with `thread_index` of `shaders/shared/layout.wgsl` and skip the tail).
pub fn dispatch_grid(threads: u32, workgroup_size: u32) -> [u32; 3] {
    const ROW: u32 = 65_535;
    let groups = threads.div_ceil(workgroup_size);
    if groups <= ROW {
        [groups, 1, 1]
    } else {
        [ROW, groups.div_ceil(ROW), 1]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_covers_every_thread_within_limits() {
        for (n, wg) in [
            (0u32, 256u32),
            (1, 256),
            (256, 256),
            (257, 64),
            (70_000_000, 256),
        ] {
            let g = dispatch_grid(n, wg);
            assert!(g[0] <= 65_535 && g[1] <= 65_535, "{g:?}");
            assert!(g[0] as u64 * g[1] as u64 * wg as u64 >= n as u64);
        }
        assert_eq!(dispatch_grid(70_000_000, 256)[1], 5);
    }

    #[test]
    fn every_import_expands() {
        for name in shader_names() {
            expanded(name).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}
