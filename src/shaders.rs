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
    // --- rod: forces (bend_gradient, rod_forces) ---
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
    // --- length projection ---
    // --- end length projection ---
    // --- damping and object contact ---
    // --- end damping and object contact ---
    Kernel {
        name: "integrate_position",
        workgroup_size: WG,
        bindings: &[uniform("params"), read("vel"), read_write("pos")],
        twin: "step::integrate_position",
    },
    // --- rod: material frames and plasticity ---
    // --- end material frames and plasticity ---
    // --- exact contact ---
    // --- end exact contact ---
];

/// The kernel named `name`.
pub fn kernel(name: &str) -> Result<&'static Kernel, ShaderError> {
    KERNELS
        .iter()
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
        for (n, wg) in [(0u32, 256u32), (1, 256), (256, 256), (257, 64), (70_000_000, 256)] {
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
